//! Storage: v1 PersistentVolumeClaims and PersistentVolumes, storage.k8s.io/v1 StorageClasses —
//! upstream's defaults (`SetDefaults_PersistentVolumeClaim`, `_PersistentVolume`,
//! `SetDefaults_StorageClass`) and the validation a user meets first, in upstream's words.

use serde_json::{Value, json};

use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

/// A claim's defaults: `Filesystem` volumes, phase `Pending`; and the strategy's
/// `EnsureDataSourceConsistency` (`AnyVolumeDataSource`): each of `dataSource` and
/// `dataSourceRef` given alone fills the other (a reference into another namespace aside).
pub fn default_claim(pvc: &mut Value) {
    if !pvc.is_object() {
        return;
    }
    let spec = object_at(pvc, "spec");
    set_default(spec, "volumeMode", json!("Filesystem"));
    let given = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let pick = |r: &Value| {
        let mut out = serde_json::Map::new();
        for k in ["apiGroup", "kind", "name"] {
            if let Some(v) = r.get(k) {
                out.insert(k.into(), v.clone());
            }
        }
        Value::Object(out)
    };
    if given(spec.get("dataSource")) && !given(spec.get("dataSourceRef")) {
        let r = pick(&spec["dataSource"]);
        spec.insert("dataSourceRef".into(), r);
    }
    if given(spec.get("dataSourceRef"))
        && !given(spec.get("dataSource"))
        && spec["dataSourceRef"].get("namespace").and_then(Value::as_str).is_none_or(str::is_empty)
    {
        let r = pick(&spec["dataSourceRef"]);
        spec.insert("dataSource".into(), r);
    }
    set_default(object_at(pvc, "status"), "phase", json!("Pending"));
}

/// The `storage` quantity of a map, parsed.
fn quantity(v: Option<&Value>) -> Option<crate::quantity::Quantity> {
    v.and_then(Value::as_str).and_then(|s| crate::quantity::Quantity::parse(s).ok())
}

/// `ValidatePositiveQuantityValue` then `ValidateResourceQuantityValue` of a size.
fn positive_size_errors(field: &str, v: &Value) -> Vec<FieldError> {
    match quantity(Some(v)) {
        Some(q) if q.is_negative() || q.is_zero() => vec![(
            field.to_owned(),
            format!(
                "Invalid value: {}: must be greater than zero",
                crate::go_print::go_quote(&q.to_string())
            ),
        )],
        _ => crate::kinds::node::quantity_value_errors(field, "storage", v),
    }
}

/// `validateDataSource` / `validateDataSourceRef`: a name and a kind, a claim when in the core
/// group, a DNS-subdomain group otherwise.
fn data_source_errors(r: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    if get("name").is_empty() {
        errs.push((format!("{at}.name"), "Required value".into()));
    }
    if get("kind").is_empty() {
        errs.push((format!("{at}.kind"), "Required value".into()));
    }
    let group = get("apiGroup");
    if group.is_empty() && get("kind") != "PersistentVolumeClaim" {
        errs.push((
            at.to_owned(),
            format!(
                "Invalid value: {}: must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                crate::go_print::go_quote(get("kind"))
            ),
        ));
    }
    if !group.is_empty() {
        errs.extend(crate::names::subdomain_field(&format!("{at}.apiGroup"), group));
    }
    errs
}

/// `ValidatePersistentVolumeClaimSpec`, in upstream's order.
fn claim_spec_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.get("accessModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(("spec.accessModes".into(), "Required value: at least 1 access mode is required".into()));
    }
    errs.extend(crate::label_rules::label_selector_errors(spec.get("selector"), "spec.selector"));
    errs.extend(super::pv_source::access_mode_errors(spec));
    match spec.pointer("/resources/requests/storage") {
        None => errs.push(("spec.resources[storage]".into(), "Required value".into())),
        Some(v) => errs.extend(positive_size_errors("spec.resources[storage]", v)),
    }
    if let Some(c) = spec.get("storageClassName").and_then(Value::as_str).filter(|c| !c.is_empty()) {
        errs.extend(crate::names::subdomain_field("spec.storageClassName", c));
    }
    if let Some(m) = spec.get("volumeMode").and_then(Value::as_str)
        && !matches!(m, "Block" | "Filesystem")
    {
        errs.push(crate::field_errors::not_supported("spec.volumeMode", m, &["Block", "Filesystem"]));
    }
    let ds = spec.get("dataSource").filter(|d| !d.is_null());
    let dsr = spec.get("dataSourceRef").filter(|d| !d.is_null());
    if let Some(d) = ds {
        errs.extend(data_source_errors(d, "spec.dataSource"));
    }
    if let Some(d) = dsr {
        errs.extend(data_source_errors(d, "spec.dataSourceRef"));
    }
    if let (Some(d), Some(r)) = (ds, dsr) {
        let namespaced = r.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let same = ["apiGroup", "kind", "name"].iter().all(|k| {
            d.get(*k).and_then(Value::as_str).unwrap_or("") == r.get(*k).and_then(Value::as_str).unwrap_or("")
        });
        if namespaced {
            errs.push((
                "spec".into(),
                "Invalid value: spec.dataSource: may not be specified when dataSourceRef.namespace is specified".into(),
            ));
        } else if !same {
            errs.push(("spec".into(), "Invalid value: spec.dataSource: must match dataSourceRef".into()));
        }
    }
    errs
}

const STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// A claim's rules: `ValidatePersistentVolumeClaim` on create; `ValidatePersistentVolumeClaimUpdate`
/// on an update (its spec fixed but for a bound claim's size and a first `volumeName`, the
/// storage-class annotation fixed); `ValidatePersistentVolumeClaimStatusUpdate` on a `/status`
/// write (the only write that changes the status).
pub fn validate_claim(pvc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if let Some(old) = old
        && pvc.get("status") != old.get("status")
    {
        return claim_status_errors(pvc);
    }
    let spec = pvc.get("spec").cloned().unwrap_or_default();
    let mut errs = claim_spec_errors(&spec);
    let Some(old) = old else { return errs };
    let old_spec = old.get("spec").cloned().unwrap_or_default();
    let annotation =
        |o: &Value| o.pointer("/metadata/annotations").and_then(|a| a.get(STORAGE_CLASS_ANNOTATION)).cloned();
    let (old_ann, new_ann) = (annotation(old), annotation(pvc));
    let new_class = spec.get("storageClassName").filter(|c| !c.is_null());
    let upgrade = old_ann.is_some()
        && old_spec.get("storageClassName").is_none_or(Value::is_null)
        && new_class.is_some()
        && new_class == old_ann.as_ref()
        && (new_ann.is_none() || new_ann == old_ann);
    if !upgrade && new_ann != old_ann {
        let shown = new_ann.as_ref().and_then(Value::as_str).unwrap_or("");
        errs.push((
            format!("metadata.annotations.{STORAGE_CLASS_ANNOTATION}"),
            format!("Invalid value: {}: field is immutable", crate::go_print::go_quote(shown)),
        ));
    }
    let bound = pvc.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    let rest = |s: &Value, is_old: bool| {
        let mut s = s.clone();
        if let Some(m) = s.as_object_mut() {
            m.remove("volumeAttributesClassName");
            if is_old && old_spec.get("volumeName").is_none_or(|v| v.is_null() || v == "") {
                m.remove("volumeName");
            }
            if !is_old && old_spec.get("volumeName").is_none_or(|v| v.is_null() || v == "") {
                m.remove("volumeName");
            }
            if upgrade {
                m.remove("storageClassName");
            }
            if bound
                && let Some(r) =
                    m.get_mut("resources").and_then(|r| r.get_mut("requests")).and_then(Value::as_object_mut)
            {
                r.remove("storage");
            }
        }
        s
    };
    if rest(&spec, false) != rest(&old_spec, true) {
        errs.push((
            "spec".into(),
            "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims".into(),
        ));
    }
    let size = |s: &Value, p: &str| quantity(s.pointer(p)).map(crate::quantity::Quantity::to_f64);
    if let (Some(new_size), Some(old_size)) =
        (size(&spec, "/resources/requests/storage"), size(&old_spec, "/resources/requests/storage"))
        && new_size < old_size
        && size(old, "/status/capacity/storage").is_some_and(|status| new_size <= status)
    {
        errs.push((
            "spec.resources.requests.storage".into(),
            "Forbidden: field can be reduced to the size recorded in status but not lower".into(),
        ));
    }
    errs
}

const RESIZE_STATUSES: [&str; 5] = [
    "ControllerResizeInProgress",
    "ControllerResizeInfeasible",
    "NodeResizeInProgress",
    "NodeResizeInfeasible",
    "NodeResizePending",
];

/// `ValidatePersistentVolumeClaimStatusUpdate` (`RecoverVolumeExpansionFailure` on): capacities
/// not negative; resize statuses and allocated resources only for `storage`.
fn claim_status_errors(pvc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if pvc.pointer("/spec/accessModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(("Spec.accessModes".into(), "Required value".into()));
    }
    for (k, v) in pvc.pointer("/status/capacity").and_then(Value::as_object).into_iter().flatten() {
        errs.extend(super::pv_source::basic_resource_errors(&format!("status.capacity[{k}]"), v));
    }
    let at = "status.allocatedResourceStatus";
    for (k, v) in
        pvc.pointer("/status/allocatedResourceStatuses").and_then(Value::as_object).into_iter().flatten()
    {
        let bad = crate::names::qualified_field(at, k);
        if !bad.is_empty() {
            errs.extend(bad);
        } else if k != "storage" {
            errs.push(crate::field_errors::not_supported(at, k, &["storage"]));
        } else if !RESIZE_STATUSES.contains(&v.as_str().unwrap_or("")) {
            let list: Vec<String> = RESIZE_STATUSES.iter().map(|s| format!("{s:?}")).collect();
            errs.push((at.into(), format!("Unsupported value: {k}: supported values: {}", list.join(", "))));
        }
    }
    let at = "status.allocatedResources";
    for (k, v) in pvc.pointer("/status/allocatedResources").and_then(Value::as_object).into_iter().flatten() {
        let bad = crate::names::qualified_field(at, k);
        if !bad.is_empty() {
            errs.extend(bad);
        } else if k != "storage" {
            errs.push(crate::field_errors::not_supported(at, k, &["storage"]));
        } else {
            errs.extend(super::pv_source::basic_resource_errors(&format!("{at}[{k}]"), v));
        }
    }
    errs
}

/// A volume's defaults: `Retain`ed, `Filesystem`, phase `Pending`.
pub fn default_volume(pv: &mut Value) {
    if !pv.is_object() {
        return;
    }
    let spec = object_at(pv, "spec");
    set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    set_default(spec, "volumeMode", json!("Filesystem"));
    if let Some(h) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_default(h, "type", json!(""));
    }
    if let Some(d) = spec.get_mut("azureDisk").and_then(Value::as_object_mut) {
        set_default(d, "kind", json!("Shared"));
        set_default(d, "cachingMode", json!("ReadWrite"));
    }
    set_default(object_at(pv, "status"), "phase", json!("Pending"));
}

/// A PersistentVolume's rules: `ValidatePersistentVolume` (the spec, see
/// [`super::pv_source`], and the mount-options annotation) on create; on an update the same
/// (twice, as the strategy and `ValidatePersistentVolumeUpdate` each run it), then the source,
/// the volume mode and a set node affinity fixed. A `/status` write (the only write that changes
/// the status) is held to the metadata rules alone.
pub fn validate_volume(pv: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if let Some(old) = old
        && pv.get("status") != old.get("status")
    {
        return Vec::new();
    }
    let name = crate::object_meta::meta_str(pv, "name");
    let mut errs = super::pv_source::volume_errors(pv, name);
    let Some(old) = old else { return errs };
    errs.extend(super::pv_source::volume_errors(pv, name));
    let (spec, old_spec) =
        (pv.get("spec").cloned().unwrap_or_default(), old.get("spec").cloned().unwrap_or_default());
    if super::pv_source::source_of(&spec, Some(&old_spec)) != super::pv_source::source_of(&old_spec, None) {
        errs.push((
            "spec.persistentvolumesource".into(),
            "Forbidden: spec.persistentvolumesource is immutable after creation".into(),
        ));
    }
    if spec.get("volumeMode") != old_spec.get("volumeMode") {
        let shown = spec.get("volumeMode").map_or_else(|| "\"null\"".to_owned(), crate::go_print::bad_value);
        errs.push(("volumeMode".into(), format!("Invalid value: {shown}: field is immutable")));
    }
    errs
}

/// A class's defaults: volumes deleted with their claims, bound at once.
pub fn default_storage_class(sc: &mut Value) {
    if let Some(o) = sc.as_object_mut() {
        set_default(o, "reclaimPolicy", json!("Delete"));
        set_default(o, "volumeBindingMode", json!("Immediate"));
    }
}

/// A StorageClass's rules: `ValidateStorageClass`, and on an update `ValidateStorageClassUpdate`
/// after it (parameters, provisioner, reclaim policy and binding mode fixed).
pub fn validate_storage_class(sc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match sc.get("provisioner").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(("provisioner".into(), "Required value".into())),
        p => errs.extend(crate::names::qualified_field("provisioner", &p.to_lowercase())),
    }
    errs.extend(parameter_errors(sc.get("parameters")));
    if let Some(p) = sc.get("reclaimPolicy").and_then(Value::as_str)
        && !matches!(p, "Delete" | "Retain")
    {
        errs.push(crate::field_errors::not_supported("reclaimPolicy", p, &["Delete", "Retain"]));
    }
    match sc.get("volumeBindingMode").and_then(Value::as_str) {
        None => errs.push(("volumeBindingMode".into(), "Required value".into())),
        Some(m) if !matches!(m, "Immediate" | "WaitForFirstConsumer") => {
            errs.push(crate::field_errors::not_supported(
                "volumeBindingMode",
                m,
                &["Immediate", "WaitForFirstConsumer"],
            ));
        }
        Some(_) => {}
    }
    errs.extend(allowed_topology_errors(sc.get("allowedTopologies")));
    if let Some(old) = old {
        for field in ["parameters", "provisioner", "reclaimPolicy"] {
            let norm = |o: &Value| o.get(field).filter(|v| !v.is_null() && *v != &json!({})).cloned();
            if norm(sc) != norm(old) {
                errs.push((field.into(), format!("Forbidden: updates to {field} are forbidden.")));
            }
        }
        if sc.get("volumeBindingMode") != old.get("volumeBindingMode") {
            let shown =
                sc.get("volumeBindingMode").map_or_else(|| "\"null\"".to_owned(), crate::go_print::bad_value);
            errs.push(("volumeBindingMode".into(), format!("Invalid value: {shown}: field is immutable")));
        }
    }
    errs
}

/// `validateParameters`: at most 512, no empty key, 256 KiB of keys and values in all.
fn parameter_errors(params: Option<&Value>) -> Vec<FieldError> {
    let Some(params) = params.and_then(Value::as_object) else { return Vec::new() };
    if params.len() > 512 {
        return vec![("parameters".into(), "Too long: may not be more than 512 bytes".into())];
    }
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in params {
        if k.is_empty() {
            errs.push(("parameters".into(), "Invalid value: \"\": field can not be empty.".into()));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > 256 * 1024 {
        errs.push(("parameters".into(), "Too long: may not be more than 262144 bytes".into()));
    }
    errs
}

/// `validateAllowedTopologies`: each term's expressions (`ValidateTopologySelectorTerm`:
/// values given and unique, qualified keys, each key once), no two terms alike.
fn allowed_topology_errors(terms: Option<&Value>) -> Vec<FieldError> {
    let terms = terms.and_then(Value::as_array).cloned().unwrap_or_default();
    let mut errs = Vec::new();
    // Upstream compares each term with as many empty ones as there are terms, then with the
    // terms before it.
    let mut seen: Vec<std::collections::BTreeMap<String, std::collections::BTreeSet<String>>> =
        vec![std::collections::BTreeMap::new(); terms.len()];
    for (i, term) in terms.iter().enumerate() {
        let mut exprs = std::collections::BTreeMap::new();
        for (j, req) in
            term.get("matchLabelExpressions").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let at = format!("allowedTopologies[{i}].matchLabelExpressions[{j}]");
            let values = req.get("values").and_then(Value::as_array).cloned().unwrap_or_default();
            if values.is_empty() {
                errs.push((format!("{at}.values"), "Required value".into()));
            }
            let mut set = std::collections::BTreeSet::new();
            for (k, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("").to_owned();
                if set.contains(&v) {
                    errs.push((
                        format!("{at}.values[{k}]"),
                        format!("Duplicate value: {}", crate::go_print::go_quote(&v)),
                    ));
                }
                set.insert(v);
            }
            let key = req.get("key").and_then(Value::as_str).unwrap_or("");
            errs.extend(crate::names::qualified_field(&format!("{at}.key"), key));
            if exprs.contains_key(key) {
                errs.push((
                    format!("{at}.key"),
                    format!("Duplicate value: {}", crate::go_print::go_quote(key)),
                ));
            }
            exprs.insert(key.to_owned(), set);
        }
        for t in &seen {
            if *t == exprs {
                errs.push((
                    format!("allowedTopologies[{i}].matchLabelExpressions"),
                    "Duplicate value: \"\"".into(),
                ));
            }
        }
        seen.push(exprs);
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_asks_and_then_only_grows() {
        let mut pvc = json!({ "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } }, "storageClassName": "standard" } });
        default_claim(&mut pvc);
        assert_eq!(
            (pvc["spec"]["volumeMode"].clone(), pvc["status"]["phase"].clone()),
            (json!("Filesystem"), json!("Pending"))
        );
        assert!(validate_claim(&pvc, None).is_empty());
        // Only a bound claim's size may change.
        pvc["status"]["phase"] = json!("Bound");
        let mut grown = pvc.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(validate_claim(&grown, Some(&pvc)).is_empty());
        grown["spec"]["storageClassName"] = json!("fast");
        assert_eq!(validate_claim(&grown, Some(&pvc))[0].0, "spec");
        assert_eq!(validate_claim(&json!({ "spec": {} }), None).len(), 2);
    }

    #[test]
    fn a_class_keeps_its_provisioner() {
        let mut sc = json!({ "provisioner": "rancher.io/local-path" });
        default_storage_class(&mut sc);
        assert_eq!(sc["reclaimPolicy"], "Delete");
        let mut other = sc.clone();
        other["provisioner"] = json!("x");
        assert_eq!(
            validate_storage_class(&other, Some(&sc))[0].1,
            "Forbidden: updates to provisioner are forbidden."
        );
    }
}
