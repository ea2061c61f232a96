//! A pod template as every workload holds one (`ValidatePodTemplateSpec`): its labels and
//! annotations, the annotations only pods read, its pod spec, and no ephemeral containers.

use serde_json::Value;

use crate::kinds::pod;
use crate::label_rules::{annotation_map_errors, label_map_errors};
use crate::status::FieldError;

/// The annotation that ranks a ReplicaSet's pods for scale-down.
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// `GetDeletionCostFromPodAnnotations`' rule: a 32-bit decimal integer with no sign but `-`
/// and no leading zero.
fn deletion_cost_ok(v: &str) -> bool {
    let first_ok = match v.as_bytes().first() {
        Some(b'-') | Some(b'1'..=b'9') => true,
        Some(b'0') => v == "0",
        _ => false,
    };
    first_ok && v.parse::<i32>().is_ok()
}

/// `ValidatePodSpecificAnnotations`' rules a template meets: the deletion cost an integer.
fn pod_annotation_errors(annotations: Option<&Value>, at: &str) -> Vec<FieldError> {
    match annotations.and_then(|a| a.get(DELETION_COST)) {
        Some(v) if !deletion_cost_ok(v.as_str().unwrap_or("")) => vec![(
            format!("{at}[{DELETION_COST}]"),
            format!(
                "Invalid value: {}: must be a 32bit integer",
                crate::go_print::go_quote(v.as_str().unwrap_or(""))
            ),
        )],
        _ => Vec::new(),
    }
}

/// The template's metadata rules (`ValidatePodTemplateSpec` before the pod spec): its labels
/// and annotations at `<at>.labels` and `<at>.annotations`.
pub(crate) fn meta_errors(template: &Value, at: &str) -> Vec<FieldError> {
    let meta = template.get("metadata");
    let annotations = meta.and_then(|m| m.get("annotations"));
    let mut errs = label_map_errors(meta.and_then(|m| m.get("labels")), &format!("{at}.labels"));
    errs.extend(annotation_map_errors(annotations, &format!("{at}.annotations")));
    errs.extend(pod_annotation_errors(annotations, &format!("{at}.annotations")));
    errs
}

/// `ValidatePodTemplateSpec`: the metadata, the pod spec with the restart policies the kind
/// allows, then no ephemeral containers.
pub(crate) fn errors(template: &Value, at: &str, restart_policies: &[&str]) -> Vec<FieldError> {
    let mut errs = meta_errors(template, at);
    let spec = template.get("spec").cloned().unwrap_or_default();
    errs.extend(pod::validate_spec(&spec, &format!("{at}.spec"), restart_policies));
    if spec.get("ephemeralContainers").and_then(Value::as_array).is_some_and(|e| !e.is_empty()) {
        errs.push((
            format!("{at}.spec.ephemeralContainers"),
            "Forbidden: ephemeral containers not allowed in pod template".into(),
        ));
    }
    errs
}
