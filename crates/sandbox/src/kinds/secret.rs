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

/// Keys valid, values at most 1 MiB in total, what the `type` requires of the data; `type` fixed
/// at creation; once `immutable: true`, the data stays and so does the flag.
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
    errs.extend(bad_keys(data, "data"));
    if decoded_size(data) > MAX_SIZE {
        errs.push(too_long("data"));
    }
    errs.extend(type_errors(secret, data));
    errs
}

/// A data value, base64-decoded (`None` when absent or not base64).
fn decoded(data: Option<&serde_json::Map<String, Value>>, key: &str) -> Option<Vec<u8>> {
    let text = data?.get(key)?.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Why a docker config is not a JSON object, as Go's `json.Unmarshal` into a map says it.
fn docker_config_error(bytes: &[u8]) -> Option<String> {
    if let Some(why) = crate::gojson::syntax_error(bytes) {
        return Some(why);
    }
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let found = match value {
        Value::Object(_) | Value::Null => return None,
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
    };
    Some(format!("json: cannot unmarshal {found} into Go value of type map[string]interface {{}}"))
}

/// `ValidateSecret`'s rules for the well-known types, in upstream's order: a service account
/// token names its account, a docker config is there and is a JSON object, basic auth has a
/// username or a password, SSH auth a private key, TLS a certificate and a key.
fn type_errors(secret: &Value, data: Option<&serde_json::Map<String, Value>>) -> Vec<FieldError> {
    let required = |key: &str| (format!("data[{key}]"), "Required value".to_owned());
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let mut errs = Vec::new();
    match secret.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let account = secret
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if account.is_empty() {
                errs.push((
                    "metadata.annotations[kubernetes.io/service-account.name]".to_owned(),
                    "Required value".to_owned(),
                ));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind == "kubernetes.io/dockercfg" { ".dockercfg" } else { ".dockerconfigjson" };
            if !has(key) {
                errs.push(required(key));
            } else if let Some(why) = decoded(data, key).and_then(|b| docker_config_error(&b)) {
                errs.push((
                    format!("data[{key}]"),
                    format!("Invalid value: \"<secret contents redacted>\": {why}"),
                ));
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if decoded(data, "ssh-privatekey").is_none_or(|b| b.is_empty()) => {
            errs.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errs.push(required(key));
                }
            }
        }
        _ => {}
    }
    errs
}
