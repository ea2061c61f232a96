//! A Pod's own annotations (`ValidatePodSpecificAnnotations`): the mirror pod's node, the
//! tolerations annotation, the deletion cost, the deprecated seccomp and AppArmor annotations;
//! and, on create, that those annotations agree with the fields that replaced them
//! (`validateSeccompAnnotationsAndFields`, `validateAppArmorAnnotationsAndFieldsMatchOnCreate`).

use serde_json::Value;

use super::security::containers;
use super::volumes::local_descending_path;
use crate::field_errors::{forbidden, invalid_str};
use crate::status::FieldError;

const MIRROR: &str = "kubernetes.io/config.mirror";
const TOLERATIONS: &str = "scheduler.alpha.kubernetes.io/tolerations";
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_CONTAINER: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The annotations, sorted by key (upstream walks a Go map).
fn annotations(pod: &Value) -> Vec<(&String, &str)> {
    let mut all: Vec<(&String, &str)> = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
        .collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    all
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
}

/// `ValidatePodSpecificAnnotations`.
pub(crate) fn validate(pod: &Value) -> Vec<FieldError> {
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let path = "metadata.annotations";
    let mut errs = Vec::new();
    if let Some(v) = annotation(pod, MIRROR)
        && spec.get("nodeName").and_then(Value::as_str).is_none_or(str::is_empty)
    {
        errs.push(invalid_str(
            format!("{path}[{MIRROR}]"),
            v,
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    if let Some(t) = annotation(pod, TOLERATIONS).filter(|t| !t.is_empty()) {
        errs.extend(tolerations(t, path));
    }
    if let Some(cost) = annotation(pod, DELETION_COST)
        && !deletion_cost_ok(cost)
    {
        errs.push(invalid_str(format!("{path}[{DELETION_COST}]"), cost, "must be a 32bit integer"));
    }
    if let Some(p) = annotation(pod, SECCOMP_POD) {
        errs.extend(seccomp(p, &format!("{path}.{SECCOMP_POD}")));
    }
    for (k, p) in annotations(pod) {
        if k.starts_with(SECCOMP_CONTAINER) {
            errs.extend(seccomp(p, &format!("{path}.{k}")));
        }
    }
    let names: Vec<&str> = containers(&spec, "spec")
        .iter()
        .map(|(c, _)| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    for (k, p) in annotations(pod) {
        let Some(container) = k.strip_prefix(APPARMOR_CONTAINER) else { continue };
        if !names.contains(&container) {
            errs.push(invalid_str(format!("{path}[{k}]"), container, "container not found"));
        }
        if !(p.is_empty() || p == "runtime/default" || p == "unconfined" || p.starts_with("localhost/")) {
            errs.push(invalid_str(
                format!("{path}[{k}]"),
                p,
                &format!("invalid AppArmor profile name: {p:?}"),
            ));
        }
    }
    errs
}

/// `ValidateTolerationsInPodAnnotations`: the annotation is JSON of tolerations, each valid.
fn tolerations(text: &str, path: &str) -> Vec<FieldError> {
    if let Some(why) = crate::gojson::syntax_error(text.as_bytes()) {
        return vec![invalid_str(path, TOLERATIONS, &why)];
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(list)) => super::scheduling::tolerations(&list, &format!("{path}.{TOLERATIONS}")),
        Ok(Value::Null) => Vec::new(),
        Ok(other) => {
            let kind = match other {
                Value::Object(_) => "object",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            vec![invalid_str(
                path,
                TOLERATIONS,
                &format!("json: cannot unmarshal {kind} into Go value of type []v1.Toleration"),
            )]
        }
        Err(e) => vec![invalid_str(path, TOLERATIONS, &e.to_string())],
    }
}

/// Whether the deletion cost is a 32-bit integer as upstream parses it (no `+`, no leading zero).
fn deletion_cost_ok(s: &str) -> bool {
    let first_ok = match s.as_bytes().first() {
        Some(b'-') => true,
        Some(b'0') => s == "0",
        Some(c) => c.is_ascii_digit(),
        None => false,
    };
    first_ok && s.parse::<i32>().is_ok()
}

/// `ValidateSeccompProfile` of an annotation's value.
fn seccomp(p: &str, path: &str) -> Vec<FieldError> {
    if matches!(p, "runtime/default" | "docker/default" | "unconfined") {
        return Vec::new();
    }
    if let Some(local) = p.strip_prefix("localhost/") {
        return local_descending_path(local, path);
    }
    vec![invalid_str(path, p, "must be a valid seccomp profile")]
}

/// `validateSeccompAnnotationsAndFieldsMatch`: the field's type (and local profile) as the
/// annotation's value says.
fn seccomp_match(annotation: &str, field: &Value, path: &str) -> Option<FieldError> {
    let type_error = || forbidden(format!("{path}.type"), "seccomp type in annotation and field must match");
    match field.get("type").and_then(Value::as_str).unwrap_or("") {
        "Unconfined" if annotation != "unconfined" => Some(type_error()),
        "RuntimeDefault" if annotation != "runtime/default" && annotation != "docker/default" => {
            Some(type_error())
        }
        "Localhost" => match annotation.strip_prefix("localhost/") {
            None => Some(type_error()),
            Some(local) if field.get("localhostProfile").and_then(Value::as_str) != Some(local) => {
                Some(forbidden(
                    format!("{path}.localhostProfile"),
                    "seccomp profile in annotation and field must match",
                ))
            }
            Some(_) => None,
        },
        _ => None,
    }
}

/// What a Pod's create checks after its spec (`ValidatePodCreate`): the seccomp, then the
/// AppArmor annotations agree with the fields.
pub(crate) fn match_fields(pod: &Value) -> Vec<FieldError> {
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    if let Some(field) = spec.pointer("/securityContext/seccompProfile").filter(|f| f.is_object())
        && let Some(a) = annotation(pod, SECCOMP_POD)
    {
        errs.extend(seccomp_match(a, field, "spec.securityContext.seccompProfile"));
    }
    for (c, path) in containers(&spec, "spec") {
        let Some(field) = c.pointer("/securityContext/seccompProfile").filter(|f| f.is_object()) else {
            continue;
        };
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if let Some(a) = annotation(pod, &format!("{SECCOMP_CONTAINER}{name}")) {
            errs.extend(seccomp_match(a, field, &format!("{path}.securityContext.seccompProfile")));
        }
    }
    if spec.pointer("/os/name").and_then(Value::as_str) == Some("windows") {
        return errs;
    }
    let pod_profile = spec.pointer("/securityContext/appArmorProfile").filter(|p| p.is_object());
    for (c, path) in containers(&spec, "spec") {
        let Some(profile) =
            c.pointer("/securityContext/appArmorProfile").filter(|p| p.is_object()).or(pod_profile)
        else {
            continue;
        };
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(a) = annotation(pod, &format!("{APPARMOR_CONTAINER}{name}")) else { continue };
        let ap = format!("{path}.securityContext.appArmorProfile");
        let type_error =
            || forbidden(format!("{ap}.type"), "apparmor type in annotation and field must match");
        match profile.get("type").and_then(Value::as_str).unwrap_or("") {
            "Unconfined" if a != "unconfined" => errs.push(type_error()),
            "RuntimeDefault" if a != "runtime/default" => errs.push(type_error()),
            "Localhost" => match a.strip_prefix("localhost/") {
                None => errs.push(type_error()),
                Some(local) if profile.get("localhostProfile").and_then(Value::as_str) != Some(local) => errs
                    .push(forbidden(
                        format!("{ap}.localhostProfile"),
                        "apparmor profile in annotation and field must match",
                    )),
                Some(_) => {}
            },
            _ => {}
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deletion_costs_are_int32s_as_upstream_parses_them() {
        assert!(deletion_cost_ok("0") && deletion_cost_ok("-5") && deletion_cost_ok("2147483647"));
        assert!(!deletion_cost_ok("007") && !deletion_cost_ok("+1") && !deletion_cost_ok("2147483648"));
    }

    #[test]
    fn the_tolerations_annotation_is_json_of_tolerations() {
        let pod = |v: &str| json!({ "metadata": { "annotations": { TOLERATIONS: v } }, "spec": {} });
        assert!(validate(&pod("[{\"operator\":\"Exists\"}]")).is_empty());
        assert_eq!(
            validate(&pod("[{\"operator\":\"Equal\"}]"))[0].0,
            format!("metadata.annotations.{TOLERATIONS}[0].operator")
        );
        assert_eq!(validate(&pod("x"))[0].0, "metadata.annotations");
    }
}
