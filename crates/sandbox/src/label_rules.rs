//! Label maps and label selectors in specs, as apimachinery's `metav1validation` checks them:
//! `ValidateLabels` (a selector map's keys qualified names, values label values, both reported
//! at the map's path) and `ValidateLabelSelector` (`matchLabels`, then each requirement's
//! operator, key and values).

use serde_json::Value;

use crate::go_print::go_quote;
use crate::status::FieldError;

/// `ValidateLabelName`: the key a qualified name, reported at `field`.
#[must_use]
pub fn label_name_errors(field: &str, key: &str) -> Vec<FieldError> {
    crate::names::qualified_field(field, key)
}

/// `ValidateLabels`: each key a qualified name and each value a label value, reported at the
/// map's own path, in key order.
#[must_use]
pub fn labels_errors(field: &str, labels: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels.and_then(Value::as_object).into_iter().flatten() {
        errs.extend(label_name_errors(field, k));
        let v = v.as_str().unwrap_or("");
        errs.extend(crate::names::invalid(field, v, crate::metadata::label_value_errors(v)));
    }
    errs
}

/// `ValidateLabelSelectorRequirement`: a known operator with values as it needs, a qualified
/// key, label values.
#[must_use]
pub fn requirement_errors(field: &str, req: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = req.get("values").and_then(Value::as_array).cloned().unwrap_or_default();
    let op = req.get("operator").and_then(Value::as_str).unwrap_or("");
    match op {
        "In" | "NotIn" if values.is_empty() => errs.push((
            format!("{field}.values"),
            "Required value: must be specified when `operator` is 'In' or 'NotIn'".to_owned(),
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push((
            format!("{field}.values"),
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_owned(),
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        other => errs.push((
            format!("{field}.operator"),
            format!("Invalid value: {}: not a valid selector operator", go_quote(other)),
        )),
    }
    errs.extend(label_name_errors(
        &format!("{field}.key"),
        req.get("key").and_then(Value::as_str).unwrap_or(""),
    ));
    for (i, v) in values.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        errs.extend(crate::names::invalid(
            &format!("{field}.values[{i}]"),
            v,
            crate::metadata::label_value_errors(v),
        ));
    }
    errs
}

/// `ValidateLabelSelector` of a selector at `field` (nothing for none).
#[must_use]
pub fn selector_errors(field: &str, selector: Option<&Value>) -> Vec<FieldError> {
    let Some(s) = selector.filter(|s| !s.is_null()) else { return Vec::new() };
    let mut errs = labels_errors(&format!("{field}.matchLabels"), s.get("matchLabels"));
    for (i, req) in s.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errs.extend(requirement_errors(&format!("{field}.matchExpressions[{i}]"), req));
    }
    errs
}

/// `ValidateNodeSelector`: at least one term; each term's expressions
/// (`ValidateNodeSelectorRequirement`: values as the operator needs, a qualified key) and field
/// requirements (`ValidateNodeFieldSelectorRequirement`: one value with `In`/`NotIn`, the key
/// `metadata.name` with node names).
#[must_use]
pub fn node_selector_errors(field: &str, selector: &Value) -> Vec<FieldError> {
    let terms = selector.get("nodeSelectorTerms").and_then(Value::as_array).cloned().unwrap_or_default();
    let at = format!("{field}.nodeSelectorTerms");
    if terms.is_empty() {
        return vec![(at, "Required value: must have at least one node selector term".into())];
    }
    let mut errs = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        for (j, req) in
            term.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let at = format!("{at}[{i}].matchExpressions[{j}]");
            let n = req.get("values").and_then(Value::as_array).map_or(0, Vec::len);
            match req.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" | "NotIn" if n == 0 => errs.push((
                    format!("{at}.values"),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
                )),
                "Exists" | "DoesNotExist" if n > 0 => errs.push((
                    format!("{at}.values"),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
                )),
                "Gt" | "Lt" if n != 1 => errs.push((
                    format!("{at}.values"),
                    "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'".into(),
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
                other => errs.push((
                    format!("{at}.operator"),
                    format!("Invalid value: {}: not a valid selector operator", go_quote(other)),
                )),
            }
            errs.extend(label_name_errors(
                &format!("{at}.key"),
                req.get("key").and_then(Value::as_str).unwrap_or(""),
            ));
        }
        for (j, req) in term.get("matchFields").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("{at}[{i}].matchFields[{j}]");
            let values = req.get("values").and_then(Value::as_array).cloned().unwrap_or_default();
            match req.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" | "NotIn" => {
                    if values.len() != 1 {
                        errs.push((
                            format!("{at}.values"),
                            "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector".into(),
                        ));
                    }
                }
                other => errs.push((
                    format!("{at}.operator"),
                    format!("Invalid value: {}: not a valid selector operator", go_quote(other)),
                )),
            }
            let key = req.get("key").and_then(Value::as_str).unwrap_or("");
            if key == "metadata.name" {
                for (k, v) in values.iter().enumerate() {
                    errs.extend(crate::names::subdomain_field(
                        &format!("{at}.values[{k}]"),
                        v.as_str().unwrap_or(""),
                    ));
                }
            } else {
                errs.push((
                    format!("{at}.key"),
                    format!("Invalid value: {}: not a valid field selector key", go_quote(key)),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn selectors_report_in_upstream_order() {
        let s = json!({ "matchLabels": { "a": "bad value" }, "matchExpressions": [{ "key": "k", "operator": "Near" }] });
        let fields: Vec<String> = selector_errors("s", Some(&s)).into_iter().map(|e| e.0).collect();
        assert_eq!(fields, ["s.matchLabels", "s.matchExpressions[0].operator"]);
    }
}
