//! v1 Secret (`pkg/apis/core/validation/validation.go`: `ValidateSecret`, `ValidateSecretUpdate`;
//! `stringData` is folded into `data` by the v1 conversion, `pkg/apis/core/v1/conversion.go`, so
//! it is never stored or returned).

use base64::Engine;
use serde_json::Value;

use super::{MAX_SIZE, bad_keys, decoded_size, immutable_errors, too_long};
use crate::status::FieldError;

/// Folds `stringData` into `data` (base64; a `stringData` key wins over the same `data` key) and
/// removes it, and defaults `type` to `Opaque`.
pub fn default(secret: &mut Value) {
    let Some(obj) = secret.as_object_mut() else { return };
    if let Some(Value::Object(strings)) = obj.remove("stringData") {
        let data = obj.entry("data").or_insert_with(|| Value::Object(Default::default()));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in strings {
                let text = v.as_str().unwrap_or_default();
                data.insert(k, Value::String(base64::engine::general_purpose::STANDARD.encode(text)));
            }
        }
    }
    obj.entry("type").or_insert_with(|| Value::String("Opaque".into()));
}

/// Keys valid, values at most 1 MiB in total, `type` fixed at creation; once `immutable: true`,
/// the data stays and so does the flag.
#[must_use]
pub fn validate(secret: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(old) = old {
        errs.extend(immutable_errors(secret, old, &["data"]));
        if secret.get("type") != old.get("type") {
            let t = secret.get("type").and_then(Value::as_str).unwrap_or("");
            errs.push(("type".into(), format!("Invalid value: {t:?}: field is immutable")));
        }
    }
    let data = secret.get("data").and_then(Value::as_object);
    // `ValidateSecret`: the keys each well-known type requires, in upstream's order.
    let required: &[&str] = match secret.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        _ => &[],
    };
    for key in required {
        if data.is_none_or(|d| !d.contains_key(*key)) {
            errs.push((format!("data[{key}]"), "Required value".into()));
        }
    }
    errs.extend(bad_keys(data, "data"));
    if decoded_size(data) > MAX_SIZE {
        errs.push(too_long("data"));
    }
    errs
}
