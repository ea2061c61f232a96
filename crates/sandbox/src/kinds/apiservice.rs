//! apiregistration.k8s.io/v1 APIService: what kube-aggregator's registry does to one before it is
//! stored (`pkg/apis/apiregistration/v1/defaults.go`, `pkg/registry/apiservice/strategy.go`,
//! `pkg/apis/apiregistration/validation/validation.go`, Kubernetes v1.32).
//!
//! The sandbox aggregates nothing: an APIService is stored and served as upstream would accept
//! it, and a local one (no `spec.service`) is marked available at once, as upstream's create does.
//! The name is held to a path segment by the generic rule (the name function's first half,
//! [`crate::metadata::check_path_segment`]); the second half — the name is `<version>.<group>` —
//! needs the spec: [`name_errors`] reports it ahead of the other metadata rules, on create and on
//! update alike (upstream's update validates the whole object again).

use serde_json::{Value, json};

use crate::field_errors::{invalid_bare, invalid_str, not_supported, required};
use crate::status::FieldError;

/// `key` of `v` as a string, `""` when unset or not one.
fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The service reference, when the APIService has one (a remote, aggregated API).
fn service(api: &Value) -> Option<&Value> {
    api.pointer("/spec/service").filter(|s| !s.is_null())
}

/// `SetDefaults_ServiceReference`: a service's port is 443 unless set.
pub fn default(api: &mut Value) {
    if let Some(s) = api.pointer_mut("/spec/service").and_then(Value::as_object_mut)
        && s.get("port").is_none_or(Value::is_null)
    {
        s.insert("port".into(), json!(443));
    }
}

/// The strategy's `PrepareForCreate`: the status sent is dropped, and a local APIService is
/// available from the start (`NewLocalAvailableAPIServiceCondition`).
pub fn prepare_create(api: &mut Value) {
    let local = service(api).is_none();
    let Some(map) = api.as_object_mut() else { return };
    let mut status = json!({});
    if local {
        status["conditions"] = json!([{
            "type": "Available",
            "status": "True",
            "lastTransitionTime": crate::object_meta::now_rfc3339(),
            "reason": "Local",
            "message": "Local APIServices are always available",
        }]);
    }
    map.insert("status".into(), status);
}

/// The status strategy's `PrepareForUpdate`: a `/status` write keeps the stored spec (done by the
/// store) and the stored labels, annotations, finalizers and owner references.
pub fn prepare_status_update(api: &mut Value, old: &Value) {
    let kept: Vec<(&str, Option<Value>)> = ["labels", "annotations", "finalizers", "ownerReferences"]
        .into_iter()
        .map(|k| (k, old.get("metadata").and_then(|m| m.get(k)).cloned()))
        .collect();
    let meta = crate::object_meta::meta_mut(api);
    for (k, v) in kept {
        match v {
            Some(v) => meta.insert(k.into(), v),
            None => meta.remove(k),
        };
    }
}

/// The number a field holds, 0 when unset (Go's zero value).
fn int_at(spec: &Value, key: &str) -> i64 {
    spec.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// How many bytes `caBundle` (base64 in JSON) holds.
fn ca_bundle_len(spec: &Value) -> usize {
    use base64::Engine;
    let text = str_at(spec, "caBundle");
    base64::engine::general_purpose::STANDARD.decode(text).map_or(text.len(), |b| b.len())
}

/// The name function's second half: the name is `<version>.<group>`. Upstream's name function
/// runs first in `ValidateObjectMeta`, so this comes before the other metadata rules (a name
/// that is no path segment was refused by the generic rule, and upstream stops there).
#[must_use]
pub fn name_errors(api: &Value) -> Vec<FieldError> {
    let spec = api.get("spec").unwrap_or(&Value::Null);
    let (group, version) = (str_at(spec, "group"), str_at(spec, "version"));
    let name = crate::object_meta::meta_str(api, "name");
    let wanted = format!("{version}.{group}");
    if crate::metadata::check_path_segment(name).is_some() || name == wanted {
        return Vec::new();
    }
    let why = format!("must be `spec.version+\".\"+spec.group`: {}", crate::go_print::go_quote(&wanted));
    vec![invalid_str("metadata.name", name, &why)]
}

/// `ValidateAPIService` (after the metadata and [`name_errors`]) and `ValidateAPIServiceStatus`, in upstream's
/// order. A status write keeps the stored spec and a main update the stored status, so checking
/// both on every write refuses what each of upstream's two strategies refuses.
#[must_use]
pub fn validate(api: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = api.get("spec").unwrap_or(&Value::Null);
    let (group, version) = (str_at(spec, "group"), str_at(spec, "version"));
    if group.is_empty() && version != "v1" {
        errs.push(required("spec.group", "only v1 may have an empty group and it better be legacy kube"));
    }
    if !group.is_empty() {
        errs.extend(crate::names::subdomain_field("spec.group", group));
    }
    errs.extend(crate::names::invalid("spec.version", version, crate::metadata::dns1035_errors(version)));
    let group_min = int_at(spec, "groupPriorityMinimum");
    if !(1..=20000).contains(&group_min) {
        errs.push(invalid_bare(
            "spec.groupPriorityMinimum",
            group_min,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int_at(spec, "versionPriority");
    if !(1..=1000).contains(&version_priority) {
        errs.push(invalid_bare(
            "spec.versionPriority",
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool).unwrap_or(false);
    let ca_bundle = ca_bundle_len(spec);
    match service(api) {
        None => {
            if ca_bundle != 0 {
                let size = format!("{ca_bundle} bytes");
                errs.push(invalid_str("spec.caBundle", &size, "local APIServices may not have a caBundle"));
            }
            if insecure {
                errs.push(invalid_bare(
                    "spec.insecureSkipTLSVerify",
                    true,
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
        }
        Some(svc) => {
            if str_at(svc, "namespace").is_empty() {
                errs.push(required("spec.service.namespace", ""));
            }
            if str_at(svc, "name").is_empty() {
                errs.push(required("spec.service.name", ""));
            }
            let port = int_at(svc, "port");
            if !(1..=65535).contains(&port) {
                let why = format!("port is not valid: {}", crate::field_errors::inclusive_range(1, 65535));
                errs.push(invalid_bare("spec.service.port", port, &why));
            }
            if insecure && ca_bundle > 0 {
                errs.push(invalid_bare(
                    "spec.insecureSkipTLSVerify",
                    true,
                    "may not be true if caBundle is present",
                ));
            }
        }
    }
    let conditions =
        api.pointer("/status/conditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for (i, c) in conditions.iter().enumerate() {
        let state = str_at(c, "status");
        if !matches!(state, "True" | "False" | "Unknown") {
            errs.push(not_supported(
                format!("status.conditions[{i}].status"),
                state,
                &["True", "False", "Unknown"],
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Value {
        json!({
            "metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                     "versionPriority": 15, "service": {"namespace": "default", "name": "api"}},
        })
    }

    #[test]
    fn a_service_port_defaults_to_443_and_a_local_one_is_available() {
        let mut a = api();
        default(&mut a);
        assert_eq!(a.pointer("/spec/service/port"), Some(&json!(443)));
        assert!(validate(&a, None).is_empty());
        let mut local = api();
        local["spec"]["service"] = Value::Null;
        prepare_create(&mut local);
        assert_eq!(local.pointer("/status/conditions/0/reason"), Some(&json!("Local")));
    }

    #[test]
    fn a_status_write_keeps_the_stored_labels() {
        let old = json!({"metadata": {"name": "v1.example.com", "labels": {"a": "b"}}});
        let mut new = json!({"metadata": {"name": "v1.example.com", "annotations": {"x": "y"}}});
        prepare_status_update(&mut new, &old);
        assert_eq!(new["metadata"], json!({"name": "v1.example.com", "labels": {"a": "b"}}));
    }

    #[test]
    fn the_name_is_version_dot_group() {
        let mut a = api();
        default(&mut a);
        a["metadata"]["name"] = json!("v2.example.com");
        let errs = name_errors(&a);
        assert_eq!(errs[0].0, "metadata.name");
        assert!(errs[0].1.ends_with(": \"v1.example.com\""), "{}", errs[0].1);
    }
}
