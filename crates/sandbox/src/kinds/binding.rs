//! v1 Binding (`pods/<name>/binding`, and the `bindings` collection): `ValidatePodBinding`. The
//! pod registry returns its errors as a plain aggregate rather than a 422, so the API server
//! answers them as an unclassified 500 carrying their text. Binding the pod is
//! [`crate::actions`]'.

use serde_json::Value;

use crate::field_errors::{not_supported, required};
use crate::status::ApiError;

/// The binding refused as `BindingREST.Create` refuses it: a target other than a node, or none.
///
/// # Errors
///
/// A 500 whose message is the errors' text, joined as an aggregate joins them.
pub fn check(binding: &Value) -> Result<(), ApiError> {
    let target = |f: &str| binding.pointer(&format!("/target/{f}")).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    let kind = target("kind");
    if !kind.is_empty() && kind != "Node" {
        errs.push(not_supported("target.kind", kind, &["Node", "<empty>"]));
    }
    if target("name").is_empty() {
        errs.push(required("target.name", ""));
    }
    let texts: Vec<String> = errs.iter().map(|(field, message)| format!("{field}: {message}")).collect();
    match texts.len() {
        0 => Ok(()),
        1 => Err(ApiError::bare(500, texts.concat())),
        _ => Err(ApiError::bare(500, format!("[{}]", texts.join(", ")))),
    }
}
