//! Where a pod may run: its node selector, affinity (`validateAffinity` and what it calls),
//! readiness and scheduling gates, topology spread constraints, tolerations, node name, active
//! deadline, priority and runtime class names, preemption policy and overhead — in upstream's
//! words (`ValidatePodSpec`'s checks of them).

use std::collections::HashSet;

use serde_json::Value;

use super::volumes::{dns_label, dns_subdomain};
use crate::field_errors::{
    duplicate, forbidden, inclusive_range, invalid, invalid_bare, invalid_str, not_supported, required,
};
use crate::label_rules::{label_map_errors, label_name_errors, label_selector_errors};
use crate::metadata::{label_value_errors, qualified_name_errors};
use crate::status::FieldError;

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    array(v).iter().map(|s| s.as_str().unwrap_or("")).collect()
}

/// `ValidateLabels` of `spec.nodeSelector`.
pub(crate) fn node_selector(spec: &Value, at: &str) -> Vec<FieldError> {
    label_map_errors(spec.get("nodeSelector"), &format!("{at}.nodeSelector"))
}

/// `validateAffinity`: node affinity, pod affinity, pod anti-affinity.
pub(crate) fn affinity(spec: &Value, at: &str) -> Vec<FieldError> {
    let Some(a) = spec.get("affinity").filter(|a| !a.is_null()) else { return Vec::new() };
    let path = format!("{at}.affinity");
    let mut errs = Vec::new();
    if let Some(na) = a.get("nodeAffinity").filter(|a| !a.is_null()) {
        let np = format!("{path}.nodeAffinity");
        if let Some(req) = na.get("requiredDuringSchedulingIgnoredDuringExecution").filter(|r| !r.is_null()) {
            errs.extend(node_selector_terms(
                req,
                &format!("{np}.requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let pp = format!("{np}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in array(na.get("preferredDuringSchedulingIgnoredDuringExecution")).iter().enumerate() {
            errs.extend(weight(term, &format!("{pp}[{i}]")));
            let pref = term.get("preference").cloned().unwrap_or_default();
            errs.extend(node_selector_term(&pref, &format!("{pp}[{i}].preference"), true));
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = a.get(kind).filter(|a| !a.is_null()) else { continue };
        let kp = format!("{path}.{kind}");
        let rp = format!("{kp}.requiredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in array(pa.get("requiredDuringSchedulingIgnoredDuringExecution")).iter().enumerate() {
            errs.extend(pod_affinity_term(term, &format!("{rp}[{i}]")));
        }
        let wp = format!("{kp}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in array(pa.get("preferredDuringSchedulingIgnoredDuringExecution")).iter().enumerate() {
            errs.extend(weight(term, &format!("{wp}[{i}]")));
            let t = term.get("podAffinityTerm").cloned().unwrap_or_default();
            errs.extend(pod_affinity_term(&t, &format!("{wp}[{i}].podAffinityTerm")));
        }
    }
    errs
}

/// A preferred term's weight, 1 to 100.
fn weight(term: &Value, path: &str) -> Vec<FieldError> {
    let w = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    if (1..=100).contains(&w) {
        Vec::new()
    } else {
        vec![invalid_bare(format!("{path}.weight"), w, "must be in the range 1-100")]
    }
}

/// `ValidateNodeSelector`: at least one term, each valid.
pub(crate) fn node_selector_terms(selector: &Value, path: &str) -> Vec<FieldError> {
    let terms = array(selector.get("nodeSelectorTerms"));
    let tp = format!("{path}.nodeSelectorTerms");
    if terms.is_empty() {
        return vec![required(tp, "must have at least one node selector term")];
    }
    terms.iter().enumerate().flat_map(|(i, t)| node_selector_term(t, &format!("{tp}[{i}]"), false)).collect()
}

/// `ValidateNodeSelectorTerm`: its expressions, then its field expressions. v1.32 does not check
/// the expressions' values (`preferred` kept for the day it does).
fn node_selector_term(term: &Value, path: &str, _preferred: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, req) in array(term.get("matchExpressions")).iter().enumerate() {
        let rp = format!("{path}.matchExpressions[{j}]");
        let values = strings(req.get("values"));
        match str_at(req, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(required(
                        format!("{rp}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(forbidden(
                        format!("{rp}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            "Gt" | "Lt" => {
                if values.len() != 1 {
                    errs.push(required(
                        format!("{rp}.values"),
                        "must be specified single value when `operator` is 'Lt' or 'Gt'",
                    ));
                }
            }
            other => errs.push(invalid_str(format!("{rp}.operator"), other, "not a valid selector operator")),
        }
        errs.extend(label_name_errors(str_at(req, "key"), &format!("{rp}.key")));
    }
    for (j, req) in array(term.get("matchFields")).iter().enumerate() {
        let rp = format!("{path}.matchFields[{j}]");
        let values = strings(req.get("values"));
        match str_at(req, "operator") {
            "In" | "NotIn" => {
                if values.len() != 1 {
                    errs.push(required(
                        format!("{rp}.values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    ));
                }
            }
            other => errs.push(invalid_str(format!("{rp}.operator"), other, "not a valid selector operator")),
        }
        let key = str_at(req, "key");
        if key == "metadata.name" {
            for (i, v) in values.iter().enumerate() {
                errs.extend(dns_subdomain(v, &format!("{rp}.values[{i}]")));
            }
        } else {
            errs.push(invalid_str(format!("{rp}.key"), key, "not a valid field selector key"));
        }
    }
    errs
}

/// `validatePodAffinityTerm`: its selectors, namespaces, label keys and topology key.
fn pod_affinity_term(term: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = label_selector_errors(term.get("labelSelector"), &format!("{path}.labelSelector"));
    errs.extend(label_selector_errors(term.get("namespaceSelector"), &format!("{path}.namespaceSelector")));
    for ns in strings(term.get("namespaces")) {
        errs.extend(dns_label(ns, &format!("{path}.namespace")));
    }
    errs.extend(match_label_keys(term, path));
    let key = str_at(term, "topologyKey");
    if key.is_empty() {
        errs.push(required(format!("{path}.topologyKey"), "can not be empty"));
    }
    errs.extend(label_name_errors(key, &format!("{path}.topologyKey")));
    errs
}

/// `validateMatchLabelKeysAndMismatchLabelKeys`: each list needs a selector and holds label
/// keys; no key in both lists, nor a match key the selector's labels already name.
fn match_label_keys(term: &Value, path: &str) -> Vec<FieldError> {
    let selector = term.get("labelSelector").filter(|s| !s.is_null());
    let matching = strings(term.get("matchLabelKeys"));
    let mismatching = strings(term.get("mismatchLabelKeys"));
    let mut errs = Vec::new();
    for (list, keys) in [("matchLabelKeys", &matching), ("mismatchLabelKeys", &mismatching)] {
        if keys.is_empty() {
            continue;
        }
        if selector.is_none() {
            errs.push(forbidden(
                format!("{path}.{list}"),
                "must not be specified when labelSelector is not set",
            ));
            continue;
        }
        for (i, k) in keys.iter().enumerate() {
            errs.extend(label_name_errors(k, &format!("{path}.{list}[{i}]")));
        }
    }
    let Some(selector) = selector else { return errs };
    let mismatch: HashSet<&str> = mismatching.iter().copied().collect();
    for (i, k) in matching.iter().enumerate() {
        if mismatch.contains(k) {
            errs.push(invalid_str(
                format!("{path}.matchLabelKeys[{i}]"),
                k,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    let in_selector: HashSet<&str> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .collect();
    for (i, k) in matching.iter().enumerate() {
        if in_selector.contains(k) {
            errs.push(invalid_str(
                format!("{path}[{i}]"),
                k,
                "exists in both matchLabelKeys and labelSelector",
            ));
        }
    }
    errs
}

/// `validateReadinessGates`: condition types are qualified names.
pub(crate) fn readiness_gates(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, g) in array(spec.get("readinessGates")).iter().enumerate() {
        let t = str_at(g, "conditionType");
        let path = format!("{at}.readinessGates[{i}].conditionType");
        errs.extend(qualified_name_errors(t).iter().map(|why| invalid_str(&path, t, why)));
    }
    errs
}

/// `validateSchedulingGates`: qualified names, no two alike.
pub(crate) fn scheduling_gates(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (i, g) in array(spec.get("schedulingGates")).iter().enumerate() {
        let name = str_at(g, "name");
        let path = format!("{at}.schedulingGates[{i}]");
        errs.extend(qualified_name_errors(name).iter().map(|why| invalid_str(&path, name, why)));
        if !seen.insert(name) {
            errs.push(duplicate(&path, name));
        }
    }
    errs
}

/// `validateTopologySpreadConstraints`.
pub(crate) fn topology_spread(spec: &Value, at: &str) -> Vec<FieldError> {
    let constraints = array(spec.get("topologySpreadConstraints"));
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let path = format!("{at}.topologySpreadConstraints[{i}]");
        let skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if skew <= 0 {
            errs.push(invalid_bare(format!("{path}.maxSkew"), skew, "must be greater than zero"));
        }
        let key = str_at(c, "topologyKey");
        if key.is_empty() {
            errs.push(required(format!("{path}.topologyKey"), "can not be empty"));
        }
        let when = str_at(c, "whenUnsatisfiable");
        if !["DoNotSchedule", "ScheduleAnyway"].contains(&when) {
            errs.push(not_supported(
                format!("{path}.whenUnsatisfiable"),
                when,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..]
            .iter()
            .any(|o| str_at(o, "topologyKey") == key && str_at(o, "whenUnsatisfiable") == when)
        {
            errs.push(duplicate(
                format!("{path}.{{topologyKey, whenUnsatisfiable}}"),
                &format!("{{{key}, {when}}}"),
            ));
        }
        if let Some(min) = c.get("minDomains").and_then(Value::as_i64) {
            if min <= 0 {
                errs.push(invalid_bare(format!("{path}.minDomains"), min, "must be greater than zero"));
            }
            if when != "DoNotSchedule" {
                errs.push(invalid_bare(
                    format!("{path}.minDomains"),
                    min,
                    &format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"),
                ));
            }
        }
        for policy in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(p) = c.get(policy).and_then(Value::as_str)
                && !["Honor", "Ignore"].contains(&p)
            {
                errs.push(not_supported(format!("{path}.{policy}"), p, &["Honor", "Ignore"]));
            }
        }
        let selector = c.get("labelSelector").filter(|s| !s.is_null());
        let keys = strings(c.get("matchLabelKeys"));
        if !keys.is_empty() {
            let mp = format!("{path}.matchLabelKeys");
            let mut in_selector: HashSet<&str> = HashSet::new();
            match selector {
                Some(s) => {
                    in_selector.extend(
                        s.get("matchLabels")
                            .and_then(Value::as_object)
                            .into_iter()
                            .flatten()
                            .map(|(k, _)| k.as_str()),
                    );
                    in_selector.extend(array(s.get("matchExpressions")).iter().map(|e| str_at(e, "key")));
                }
                None => errs.push(forbidden(&mp, "must not be specified when labelSelector is not set")),
            }
            for (j, k) in keys.iter().enumerate() {
                errs.extend(label_name_errors(k, &format!("{mp}[{j}]")));
                if in_selector.contains(k) {
                    errs.push(invalid_str(
                        format!("{mp}[{j}]"),
                        k,
                        "exists in both matchLabelKeys and labelSelector",
                    ));
                }
            }
        }
        errs.extend(label_selector_errors(selector, &format!("{path}.labelSelector")));
    }
    errs
}

/// `ValidateTolerations`, under `path` (`spec.tolerations`, or the tolerations annotation's).
pub(crate) fn tolerations(list: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let ip = format!("{path}[{i}]");
        let key = str_at(t, "key");
        if !key.is_empty() {
            errs.extend(label_name_errors(key, &format!("{ip}.key")));
        }
        let operator = str_at(t, "operator");
        if key.is_empty() && operator != "Exists" {
            errs.push(invalid_str(
                format!("{ip}.operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = str_at(t, "effect");
        if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute" {
            errs.push(invalid_str(
                format!("{ip}.effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = str_at(t, "value");
        match operator {
            "Equal" | "" => {
                let why = label_value_errors(value);
                if !why.is_empty() {
                    errs.push(invalid_str(format!("{ip}.operator"), value, &why.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(invalid_str(
                        format!("{ip}.operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(not_supported(format!("{ip}.operator"), other, &["Equal", "Exists"])),
        }
        const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            errs.push(not_supported(format!("{ip}.effect"), effect, &EFFECTS));
        }
    }
    errs
}

/// `ValidatePodSpec`'s checks after the topology spread constraints, but the host names and
/// aliases (the `dns` module's): the node name, the active deadline, the tolerations.
pub(crate) fn node_name_and_deadline(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(n) = spec.get("nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        errs.extend(dns_subdomain(n, &format!("{at}.nodeName")));
    }
    if let Some(d) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&d)
    {
        errs.push(invalid_bare(
            format!("{at}.activeDeadlineSeconds"),
            d,
            &inclusive_range(1, i64::from(i32::MAX)),
        ));
    }
    errs
}

/// `ValidatePodSpec`'s tolerations.
pub(crate) fn spec_tolerations(spec: &Value, at: &str) -> Vec<FieldError> {
    tolerations(array(spec.get("tolerations")), &format!("{at}.tolerations"))
}

/// `ValidatePodSpec`'s class names and preemption policy (a Pod's meet admission first; a
/// template's are checked here only).
pub(crate) fn classes(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(n) = spec.get("priorityClassName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        errs.extend(dns_subdomain(n, &format!("{at}.priorityClassName")));
    }
    if let Some(n) = spec.get("runtimeClassName").and_then(Value::as_str) {
        errs.extend(dns_subdomain(n, &format!("{at}.runtimeClassName")));
    }
    match spec.get("preemptionPolicy").and_then(Value::as_str) {
        Some("") => errs.push(required(format!("{at}.preemptionPolicy"), "")),
        Some(p) if !["PreemptLowerPriority", "Never"].contains(&p) => {
            errs.push(not_supported(format!("{at}.preemptionPolicy"), p, &["PreemptLowerPriority", "Never"]));
        }
        _ => {}
    }
    errs
}

/// `validateOverhead`: the overhead checked as a container's limits (names standard container
/// resources, quantities not negative), under `overhead.limits`.
pub(crate) fn overhead(spec: &Value, at: &str) -> Vec<FieldError> {
    let Some(map) = spec.get("overhead").and_then(Value::as_object) else { return Vec::new() };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let mut errs = Vec::new();
    for name in keys {
        let path = format!("{at}.overhead.limits[{name}]");
        errs.extend(crate::resource_name::container_resource_errors(name, &path));
        let q = &map[name];
        let text = q.as_str().map(str::to_owned).or_else(|| q.as_number().map(ToString::to_string));
        if let Some(q) = text.and_then(|t| crate::quantity::Quantity::parse(&t).ok())
            && q.is_negative()
        {
            errs.push(invalid(&path, &Value::String(q.to_string()), "must be greater than or equal to 0"));
        }
    }
    errs
}

/// What only a Pod's create refuses (`ValidatePodCreate`): a node name while scheduling gates
/// remain.
pub(crate) fn gated_node_name(spec: &Value) -> Vec<FieldError> {
    if !str_at(spec, "nodeName").is_empty() && !array(spec.get("schedulingGates")).is_empty() {
        vec![forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tolerations_are_checked_as_upstream_words_them() {
        let list =
            [json!({ "operator": "Exists" }), json!({ "key": "k", "operator": "Exists", "value": "v" })];
        let errs = tolerations(&list, "spec.tolerations");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0, "spec.tolerations[1].operator");
        let errs = tolerations(&[json!({ "key": "k", "effect": "Sometimes" })], "t");
        assert_eq!(
            errs[0].1,
            "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
        );
    }

    #[test]
    fn spread_constraints_name_their_duplicates() {
        let c = json!({ "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule" });
        let errs = topology_spread(&json!({ "topologySpreadConstraints": [c, c] }), "spec");
        assert_eq!(
            errs,
            [duplicate(
                "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
                "{zone, DoNotSchedule}"
            )]
        );
    }

    #[test]
    fn overhead_names_are_container_resources() {
        let errs = overhead(&json!({ "overhead": { "cpu": "1", "pods": "1" } }), "spec");
        assert_eq!(
            errs,
            [invalid_bare(
                "spec.overhead.limits[pods]",
                "pods",
                "must be a standard resource for containers"
            )]
        );
    }
}
