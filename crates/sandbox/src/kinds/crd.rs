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
