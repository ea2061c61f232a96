//! apiextensions.k8s.io/v1 CustomResourceDefinition: defaults, validation and the status its
//! controllers maintain.
//!
//! SCAFFOLD: the bodies below are placeholders being replaced by the real implementation.

use serde_json::Value;

use crate::resource::FieldError;

/// Fills in the API server's defaults.
pub fn default(crd: &mut Value) {
    let _ = crd;
}

/// Validates `new` (and, on update, against `old`).
#[must_use]
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let _ = (new, old);
    Vec::new()
}

/// TEMPORARY in the registry worktree: replaced by the real one at merge.
pub fn version_priority_sort(versions: &mut Vec<String>) {
    versions.sort();
}
/// TEMPORARY.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// TEMPORARY.
pub fn names_status(crd: &Value, _others: &[&Value]) -> Value {
    let mut s = crd.get("status").cloned().unwrap_or(serde_json::json!({}));
    s["acceptedNames"] = crd.pointer("/spec/names").cloned().unwrap_or_default();
    s
}
/// TEMPORARY.
pub fn terminating(_crd: &mut Value) {}
/// TEMPORARY.
pub fn instances_removed(_crd: &mut Value) {}
/// TEMPORARY.
pub fn prepare_create(_crd: &mut Value) {}
