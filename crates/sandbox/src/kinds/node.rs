//! v1 Nodes: what the API server fills in for a registered node (`SetDefaults_NodeStatus`:
//! allocatable is the capacity when the kubelet reports none), and its taints' rules.

use serde_json::Value;

use crate::go_print::go_quote;
use crate::status::FieldError;

/// A Node's rules (`ValidateNode` on create; `ValidateNode` then `ValidateNodeUpdate` on an
/// update; `ValidateNodeUpdate` alone on a `/status` write, the only write that changes the
/// status).
pub fn validate(node: &Value, old: Option<&Value>) -> Vec<FieldError> {
    match old {
        None => validate_node(node),
        Some(old) if node.get("status") != old.get("status") => validate_node_update(node, old),
        Some(old) => {
            let mut errs = validate_node(node);
            errs.extend(validate_node_update(node, old));
            errs
        }
    }
}

/// The node's pod CIDRs as the internal type holds them: v1's `podCIDR` stands for them when
/// `podCIDRs` is empty.
fn pod_cidrs(node: &Value) -> Vec<String> {
    let list: Vec<String> = node
        .pointer("/spec/podCIDRs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c.as_str().unwrap_or("").to_owned())
        .collect();
    if !list.is_empty() {
        return list;
    }
    match node.pointer("/spec/podCIDR").and_then(Value::as_str) {
        Some(c) if !c.is_empty() => vec![c.to_owned()],
        _ => Vec::new(),
    }
}

/// `ValidateNode`: the node-specific annotations, the taints, the resources, the pod CIDRs
/// (CIDRs, one per family, no duplicates).
fn validate_node(node: &Value) -> Vec<FieldError> {
    let mut errs = annotation_errors(node);
    errs.extend(taint_errors(node.pointer("/spec/taints"), "metadata.taints"));
    errs.extend(resource_errors(node));
    let cidrs = pod_cidrs(node);
    for (i, c) in cidrs.iter().enumerate() {
        errs.extend(crate::netaddr::cidr_errors(&format!("spec.podCIDRs[{i}]"), c));
    }
    if cidrs.len() > 1 {
        let nets: Vec<_> = cidrs.iter().map(|c| crate::netaddr::network(c)).collect();
        if nets.iter().all(Option::is_some) {
            let v4 = nets.iter().flatten().filter(|n| n.2).count();
            if cidrs.len() > 2 || v4 != 1 {
                errs.push((
                    "spec.podCIDRs".into(),
                    format!(
                        "Invalid value: {}: may specify no more than one CIDR for each IP family",
                        crate::netaddr::go_strings(Some(&cidrs))
                    ),
                ));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (i, c) in cidrs.iter().enumerate() {
            if !seen.insert(c) {
                errs.push((format!("spec.podCIDRs[{i}]"), format!("Duplicate value: {}", go_quote(c))));
            }
        }
    }
    errs
}

/// `ValidateNodeUpdate`: the node-specific annotations, the resources, unique addresses, pod
/// CIDRs and provider ID fixed once set, the taints, the external ID fixed.
fn validate_node_update(node: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = annotation_errors(node);
    errs.extend(resource_errors(node));
    let mut seen = Vec::new();
    for (i, a) in
        node.pointer("/status/addresses").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let key = (
            a.get("type").and_then(Value::as_str).unwrap_or("").to_owned(),
            a.get("address").and_then(Value::as_str).unwrap_or("").to_owned(),
        );
        if seen.contains(&key) {
            errs.push((
                format!("status.addresses[{i}]"),
                format!(
                    "Duplicate value: core.NodeAddress{{Type:{}, Address:{}}}",
                    go_quote(&key.0),
                    go_quote(&key.1)
                ),
            ));
        }
        seen.push(key);
    }
    let forbidden_cidr = || {
        (
            "spec.podCIDRs".to_owned(),
            "Forbidden: node updates may not change podCIDR except from \"\" to valid".to_owned(),
        )
    };
    let (new_cidrs, old_cidrs) = (pod_cidrs(node), pod_cidrs(old));
    if !old_cidrs.is_empty() {
        if old_cidrs.len() == new_cidrs.len() {
            errs.extend(old_cidrs.iter().zip(&new_cidrs).filter(|(o, n)| o != n).map(|_| forbidden_cidr()));
        } else {
            errs.push(forbidden_cidr());
        }
    }
    let provider = |n: &Value| n.pointer("/spec/providerID").and_then(Value::as_str).unwrap_or("").to_owned();
    if !provider(old).is_empty() && provider(old) != provider(node) {
        errs.push((
            "spec.providerID".into(),
            "Forbidden: node updates may not change providerID except from \"\" to valid".into(),
        ));
    }
    errs.extend(taint_errors(node.pointer("/spec/taints"), "metadata.taints"));
    let external = |n: &Value| n.pointer("/spec/externalID").and_then(Value::as_str).unwrap_or("").to_owned();
    if external(node) != external(old) {
        errs.push(("spec.externalID".into(), "Forbidden: may not be updated".into()));
    }
    errs
}

const TAINTS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/taints";
const AVOID_PODS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// Go's `encoding/json` words for the common ways a document is not JSON: nothing at all, or
/// a first character that cannot open a value.
fn go_json_error(text: &str, err: &serde_json::Error) -> String {
    let trimmed = text.trim_start();
    match trimmed.chars().next() {
        None => "unexpected end of JSON input".to_owned(),
        Some(c) if !matches!(c, '{' | '[' | '"' | '-' | '0'..='9' | 't' | 'f' | 'n') => {
            format!("invalid character '{c}' looking for beginning of value")
        }
        Some(_) if err.is_eof() => "unexpected end of JSON input".to_owned(),
        Some(_) => err.to_string(),
    }
}

/// `ValidateNodeSpecificAnnotations`: the taints annotation holds valid taints, the
/// avoid-pods annotation valid entries.
fn annotation_errors(node: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let annotations = node.pointer("/metadata/annotations");
    let get = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_str).filter(|v| !v.is_empty());
    if let Some(taints) = get(TAINTS_ANNOTATION) {
        match serde_json::from_str::<Value>(taints) {
            Err(e) => errs.push((
                "metadata.annotations".into(),
                format!("Invalid value: {}: {}", go_quote(TAINTS_ANNOTATION), go_json_error(taints, &e)),
            )),
            Ok(list) => {
                errs.extend(taint_errors(Some(&list), &format!("metadata.annotations.{TAINTS_ANNOTATION}")))
            }
        }
    }
    if let Some(avoid) = get(AVOID_PODS_ANNOTATION) {
        match serde_json::from_str::<Value>(avoid) {
            Err(e) => errs.push((
                "metadata.annotations.AvoidPods".into(),
                format!("Invalid value: {}: {}", go_quote(AVOID_PODS_ANNOTATION), go_json_error(avoid, &e)),
            )),
            Ok(doc) => {
                let at = format!("metadata.annotations.{AVOID_PODS_ANNOTATION}");
                for (i, entry) in
                    doc.get("preferAvoidPods").and_then(Value::as_array).into_iter().flatten().enumerate()
                {
                    let sig = format!("{at}[{i}].PodSignature");
                    match entry.pointer("/podSignature/podController").filter(|c| !c.is_null()) {
                        None => errs.push((sig, "Required value".into())),
                        Some(c) if c.get("controller") != Some(&Value::Bool(true)) => {
                            let shown = c
                                .get("controller")
                                .and_then(Value::as_bool)
                                .map_or("<nil>".to_owned(), |b| b.to_string());
                            errs.push((
                                format!("{sig}.PodController.Controller"),
                                format!("Invalid value: {shown}: must point to a controller"),
                            ));
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    errs
}

/// `validateNodeTaints`: each key qualified, each value a label value, a known effect, no two
/// with the same key and effect.
fn taint_errors(taints: Option<&Value>, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, t) in taints.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let key = t.get("key").and_then(Value::as_str).unwrap_or("");
        errs.extend(crate::names::qualified_field(&format!("{at}[{i}].key"), key));
        let value = t.get("value").and_then(Value::as_str).unwrap_or("");
        let bad = crate::metadata::label_value_errors(value);
        if !bad.is_empty() {
            errs.push((
                format!("{at}[{i}].value"),
                format!("Invalid value: {}: {}", go_quote(value), bad.join(";")),
            ));
        }
        let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
        match effect {
            "NoSchedule" | "PreferNoSchedule" | "NoExecute" => {}
            "" => errs.push((format!("{at}[{i}].effect"), "Required value".into())),
            e => errs.push(crate::field_errors::not_supported(
                format!("{at}[{i}].effect"),
                e,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            )),
        }
        let pair = (key.to_owned(), effect.to_owned());
        if seen.contains(&pair) {
            let added = if t.get("timeAdded").is_some_and(|a| !a.is_null()) { "(*v1.Time)" } else { "<nil>" };
            errs.push((
                format!("{at}[{i}]"),
                format!(
                    "Duplicate value: core.Taint{{Key:{}, Value:{}, Effect:{}, TimeAdded:{added}}}: taints must be unique by key and effect pair",
                    go_quote(key),
                    go_quote(value),
                    go_quote(effect)
                ),
            ));
            continue;
        }
        seen.push(pair);
    }
    errs
}

/// `ValidateNodeResources`: each capacity and allocatable quantity non-negative, and whole for
/// integer resources.
fn resource_errors(node: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for list in ["capacity", "allocatable"] {
        for (k, v) in
            node.pointer(&format!("/status/{list}")).and_then(Value::as_object).into_iter().flatten()
        {
            errs.extend(quantity_value_errors(&format!("status.{list}.{k}"), k, v));
        }
    }
    errs
}

/// `ValidateResourceQuantityValue` of a quantity as JSON (one that does not parse is the
/// decoder's to refuse).
pub(crate) fn quantity_value_errors(field: &str, name: &str, v: &Value) -> Vec<FieldError> {
    match v.as_str().and_then(|s| crate::quantity::Quantity::parse(s).ok()) {
        Some(q) => crate::resource_name::quantity_value_errors(name, q, field),
        None => Vec::new(),
    }
}

/// A node's defaults.
pub fn default(node: &mut Value) {
    let Some(status) = node.get_mut("status").and_then(Value::as_object_mut) else { return };
    if status.get("allocatable").is_none_or(Value::is_null)
        && let Some(capacity) = status.get("capacity").cloned()
    {
        status.insert("allocatable".into(), capacity);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn allocatable_defaults_to_capacity() {
        let mut node = json!({ "status": { "capacity": { "cpu": "4" } } });
        super::default(&mut node);
        assert_eq!(node["status"]["allocatable"], json!({ "cpu": "4" }));
    }
}
