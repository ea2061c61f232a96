//! certificates.k8s.io/v1 CertificateSigningRequests: what the strategy fills in (the requester,
//! here the sandbox's administrator, as [`crate::user`] says every client is) and the
//! fields a request must carry.

use serde_json::{Value, json};

use crate::status::FieldError;

/// The requester's identity (`PrepareForCreate` sets it from the request's user).
pub fn default(csr: &mut Value) {
    let Some(spec) = csr.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if spec.get("username").is_none_or(Value::is_null) {
        let user = crate::user::admin_user();
        spec.insert("username".into(), user["username"].clone());
        spec.insert("groups".into(), user["groups"].clone());
    }
}

/// A request carries its PEM request, a signer and its usages.
pub fn validate(csr: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = csr.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut errs = Vec::new();
    if spec.get("request").and_then(Value::as_str).is_none_or(str::is_empty) {
        errs.push((
            "spec.request".into(),
            "Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST".into(),
        ));
    }
    if spec.get("signerName").and_then(Value::as_str).is_none_or(str::is_empty) {
        errs.push(("spec.signerName".into(), "Required value".into()));
    }
    if spec.get("usages").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(("spec.usages".into(), "Required value".into()));
    }
    errs
}
