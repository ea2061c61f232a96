//! v1 ConfigMap (`pkg/apis/core/validation/validation.go`: `ValidateConfigMap`,
//! `ValidateConfigMapUpdate`; the strategy in `pkg/registry/core/configmap/strategy.go` allows
//! no create on update).

use serde_json::Value;

use super::{MAX_SIZE, bad_keys, decoded_size, immutable_errors, too_long};
use crate::status::FieldError;

/// Keys valid in `data` and `binaryData` and never in both, the values' total at most 1 MiB;
/// once `immutable: true`, the data stays and so does the flag.
#[must_use]
pub fn validate(cm: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = old.map(|o| immutable_errors(cm, o, &["data", "binaryData"])).unwrap_or_default();
    let data = cm.get("data").and_then(Value::as_object);
    let binary = cm.get("binaryData").and_then(Value::as_object);
    errs.extend(bad_keys(data, "data"));
    let mut both: Vec<&String> =
        data.iter().flat_map(|d| d.keys()).filter(|k| binary.is_some_and(|b| b.contains_key(*k))).collect();
    both.sort();
    for k in both {
        errs.push((
            format!("data[{k}]"),
            format!("Invalid value: {k:?}: duplicate of key present in binaryData"),
        ));
    }
    errs.extend(bad_keys(binary, "binaryData"));
    let text: usize = data.iter().flat_map(|d| d.values()).filter_map(Value::as_str).map(str::len).sum();
    // binaryData travels as base64; its size is the decoded bytes'.
    if text + decoded_size(binary) > MAX_SIZE {
        errs.push(too_long("[]"));
    }
    errs
}
