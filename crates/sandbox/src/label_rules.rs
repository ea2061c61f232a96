//! The rules apimachinery holds for label maps, annotation maps, label selectors and
//! `metav1.Condition` lists (`ValidateLabels`, `ValidateAnnotations`, `ValidateLabelSelector`,
//! `ValidateConditions`), and the non-negative counter check (`ValidateNonnegativeField`), for
//! any kind that carries them under any field path.

use serde_json::Value;

use crate::metadata::{label_value_errors, qualified_name_errors, regex_error};
use crate::status::FieldError;

/// `Invalid value: "<v>": <why>` as `field.Invalid` words it for a string.
fn invalid(v: &str, why: &str) -> String {
    format!("Invalid value: {}: {why}", crate::go_print::go_quote(v))
}

/// `ValidateLabelName`: the key is a qualified name, each reason under `field`.
pub(crate) fn label_name_errors(key: &str, field: &str) -> Vec<FieldError> {
    qualified_name_errors(key).into_iter().map(|why| (field.to_owned(), invalid(key, &why))).collect()
}

/// `ValidateLabels`: each key a qualified name and each value a label value, both reported at
/// the map's own path.
pub(crate) fn label_map_errors(labels: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels.and_then(Value::as_object).into_iter().flatten() {
        errs.extend(label_name_errors(k, field));
        let v = v.as_str().unwrap_or("");
        errs.extend(label_value_errors(v).into_iter().map(|why| (field.to_owned(), invalid(v, &why))));
    }
    errs
}

/// The most bytes a map of annotations may hold, keys and values together.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// `ValidateAnnotations`: each key a qualified name once lower-cased, and the whole map within
/// 256 KiB.
pub(crate) fn annotation_map_errors(annotations: Option<&Value>, field: &str) -> Vec<FieldError> {
    let map = annotations.and_then(Value::as_object);
    let mut errs = Vec::new();
    let mut size = 0;
    for (k, v) in map.into_iter().flatten() {
        size += k.len() + v.as_str().map_or(0, str::len);
        errs.extend(
            qualified_name_errors(&k.to_lowercase())
                .into_iter()
                .map(|why| (field.to_owned(), invalid(k, &why))),
        );
    }
    if size > ANNOTATIONS_LIMIT {
        errs.push((field.to_owned(), format!("Too long: may not be more than {ANNOTATIONS_LIMIT} bytes")));
    }
    errs
}

/// `ValidateLabelSelector` with the default options: `matchLabels` as labels, each
/// `matchExpressions` requirement with an operator that fits its values, a qualified key and
/// label values. Empty for a missing selector.
pub(crate) fn label_selector_errors(selector: Option<&Value>, field: &str) -> Vec<FieldError> {
    let Some(sel) = selector.filter(|s| !s.is_null()) else { return Vec::new() };
    let mut errs = label_map_errors(sel.get("matchLabels"), &format!("{field}.matchLabels"));
    let requirements = sel.get("matchExpressions").and_then(Value::as_array);
    for (i, req) in requirements.into_iter().flatten().enumerate() {
        errs.extend(label_requirement_errors(req, &format!("{field}.matchExpressions[{i}]"), false));
    }
    errs
}

/// A requirement's string values.
fn requirement_values(req: &Value) -> Vec<&str> {
    req.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// The operator rules both kinds of requirement share: `In` and `NotIn` want values, `Exists` and
/// `DoesNotExist` none, and another operator is refused unless `unknown_allowed` (a review's
/// selector attributes, which may come from a newer client).
fn operator_errors(req: &Value, at: &str, unknown_allowed: bool) -> Vec<FieldError> {
    let has_values = !requirement_values(req).is_empty();
    match req.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" | "NotIn" if !has_values => vec![(
            format!("{at}.values"),
            "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
        )],
        "Exists" | "DoesNotExist" if has_values => vec![(
            format!("{at}.values"),
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
        )],
        "In" | "NotIn" | "Exists" | "DoesNotExist" => Vec::new(),
        _ if unknown_allowed => Vec::new(),
        other => vec![(format!("{at}.operator"), invalid(other, "not a valid selector operator"))],
    }
}

/// `ValidateLabelSelectorRequirement` of the requirement at `at`: its operator, a qualified key
/// and label values.
pub(crate) fn label_requirement_errors(req: &Value, at: &str, unknown_allowed: bool) -> Vec<FieldError> {
    let mut errs = operator_errors(req, at, unknown_allowed);
    errs.extend(label_name_errors(
        req.get("key").and_then(Value::as_str).unwrap_or(""),
        &format!("{at}.key"),
    ));
    for (j, v) in requirement_values(req).iter().enumerate() {
        errs.extend(
            label_value_errors(v).into_iter().map(|why| (format!("{at}.values[{j}]"), invalid(v, &why))),
        );
    }
    errs
}

/// `ValidateFieldSelectorRequirement` of the requirement at `at`: a key, then its operator.
pub(crate) fn field_requirement_errors(req: &Value, at: &str, unknown_allowed: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if req.get("key").and_then(Value::as_str).unwrap_or("").is_empty() {
        errs.push((format!("{at}.key"), "Required value: must be specified".into()));
    }
    errs.extend(operator_errors(req, at, unknown_allowed));
    errs
}

/// `ValidateNonnegativeField` for an integer at `field`, when the value is given.
pub(crate) fn nonnegative(value: Option<&Value>, field: &str) -> Vec<FieldError> {
    match value.and_then(Value::as_i64) {
        Some(n) if n < 0 => {
            vec![(field.to_owned(), format!("Invalid value: {n}: must be greater than or equal to 0"))]
        }
        _ => Vec::new(),
    }
}

/// `ValidateNonnegativeField` for each of `fields` of `obj`, under `at`.
pub(crate) fn nonnegative_fields(obj: &Value, at: &str, fields: &[&str]) -> Vec<FieldError> {
    fields.iter().flat_map(|f| nonnegative(obj.get(*f), &format!("{at}.{f}"))).collect()
}

/// `Invalid value: <n>: cannot be greater than <what>` when `obj[field]` exceeds `obj[than]`
/// (absent counts read as Go's zero).
pub(crate) fn not_greater(obj: &Value, at: &str, field: &str, than: &str, what: &str) -> Vec<FieldError> {
    let n = |f: &str| obj.get(f).and_then(Value::as_i64).unwrap_or(0);
    if n(field) > n(than) {
        vec![(format!("{at}.{field}"), format!("Invalid value: {}: cannot be greater than {what}", n(field)))]
    } else {
        Vec::new()
    }
}

/// A condition's reason: a letter, then letters, digits and `_,:`, ending in a letter, digit
/// or `_` (`isValidConditionReason`).
fn reason_shaped(r: &str) -> bool {
    let mut chars = r.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && r.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':'))
        && r.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
}

/// `ValidateConditions`: a `metav1.Condition` list's types unique, each condition valid
/// (`ValidateCondition`): a qualified type, a known status, a non-negative observed generation,
/// a transition time, a reason of the right shape within 1024 bytes, a message within 32 KiB.
pub(crate) fn conditions_errors(conditions: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{field}[{i}]");
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let ty = s("type");
        if seen.contains(&ty) {
            errs.push((format!("{at}.type"), format!("Duplicate value: {}", crate::go_print::go_quote(ty))));
        } else {
            seen.push(ty);
        }
        errs.extend(label_name_errors(ty, &format!("{at}.type")));
        let status = s("status");
        if !matches!(status, "True" | "False" | "Unknown") {
            errs.push((
                format!("{at}.status"),
                format!(
                    "Unsupported value: {}: supported values: \"False\", \"True\", \"Unknown\"",
                    crate::go_print::go_quote(status)
                ),
            ));
        }
        if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64).filter(|g| *g < 0) {
            errs.push((
                format!("{at}.observedGeneration"),
                format!("Invalid value: {g}: must be greater than or equal to zero"),
            ));
        }
        if s("lastTransitionTime").is_empty() {
            errs.push((format!("{at}.lastTransitionTime"), "Required value: must be set".into()));
        }
        let reason = s("reason");
        if reason.is_empty() {
            errs.push((format!("{at}.reason"), "Required value: must be set".into()));
        } else {
            if !reason_shaped(reason) {
                errs.push((
                    format!("{at}.reason"),
                    invalid(
                        reason,
                        &regex_error(
                            "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                            "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?",
                            &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
                        ),
                    ),
                ));
            }
            if reason.len() > 1024 {
                errs.push((format!("{at}.reason"), "Too long: may not be more than 1024 bytes".into()));
            }
        }
        if s("message").len() > 32 * 1024 {
            errs.push((format!("{at}.message"), "Too long: may not be more than 32768 bytes".into()));
        }
    }
    errs
}
