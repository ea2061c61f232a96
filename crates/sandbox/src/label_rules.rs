//! The label rules specs share, as apimachinery's `apis/meta/v1/validation` words them: a map
//! of labels (`ValidateLabels`: each key a qualified name, each value a label value, both
//! errors on the map's own path), a label key (`ValidateLabelName`), and a `LabelSelector`
//! (`ValidateLabelSelector` and `ValidateLabelSelectorRequirement`).

use serde_json::Value;

use crate::field_errors::{forbidden, invalid_str, required};
use crate::metadata::{label_value_errors, qualified_name_errors};
use crate::status::FieldError;

/// `ValidateLabelName`: `key` is a qualified name, else one cause per reason at `path`.
pub(crate) fn label_name(key: &str, path: &str) -> Vec<FieldError> {
    qualified_name_errors(key).iter().map(|why| invalid_str(path, key, why)).collect()
}

/// `ValidateLabels` of a JSON map, in key order (upstream walks a Go map).
pub(crate) fn labels(map: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(map) = map.and_then(Value::as_object) else { return Vec::new() };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let mut errs = Vec::new();
    for k in keys {
        errs.extend(label_name(k, path));
        let v = map[k].as_str().unwrap_or("");
        errs.extend(label_value_errors(v).iter().map(|why| invalid_str(path, v, why)));
    }
    errs
}

/// `ValidateLabelSelector` (label values checked, as upstream's default options do): nothing
/// for a selector that is absent.
pub(crate) fn label_selector(selector: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(selector) = selector.filter(|s| s.is_object()) else { return Vec::new() };
    let mut errs = labels(selector.get("matchLabels"), &format!("{path}.matchLabels"));
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, e) in exprs.into_iter().flatten().enumerate() {
        errs.extend(selector_requirement(e, &format!("{path}.matchExpressions[{i}]")));
    }
    errs
}

/// `ValidateLabelSelectorRequirement`: the operator and its values, the key, each value.
fn selector_requirement(req: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    let operator = req.get("operator").and_then(Value::as_str).unwrap_or("");
    match operator {
        "In" | "NotIn" if values.is_empty() => errs
            .push(required(format!("{path}.values"), "must be specified when `operator` is 'In' or 'NotIn'")),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(forbidden(
            format!("{path}.values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other => errs.push(invalid_str(format!("{path}.operator"), other, "not a valid selector operator")),
    }
    errs.extend(label_name(req.get("key").and_then(Value::as_str).unwrap_or(""), &format!("{path}.key")));
    for (i, v) in values.iter().enumerate() {
        errs.extend(
            label_value_errors(v).iter().map(|why| invalid_str(format!("{path}.values[{i}]"), v, why)),
        );
    }
    errs
}
