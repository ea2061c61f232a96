//! v1 ResourceQuota (`pkg/apis/core/validation/validation.go`: `ValidateResourceQuota`,
//! `ValidateResourceQuotaUpdate`, `ValidateResourceQuotaStatusUpdate`). What a quota counts and
//! charges is the quota controller's and admission's, in [`crate::quota`].

use serde_json::Value;

use crate::go_print::go_quote;
use crate::quantity::Quantity;
use crate::resource_name::{is_integer, is_quota_resource, quota_resource_errors};
use crate::status::FieldError;

/// The scopes a quota may name (`IsStandardResourceQuotaScope`).
const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Scopes no quota may name together.
const CONFLICTING: [[&str; 2]; 2] = [["BestEffort", "NotBestEffort"], ["Terminating", "NotTerminating"]];

/// The spec's rules (names, amounts, scopes, scope selector); on update, the scopes unchanged and
/// the status's names and amounts (a main update keeps the stored status, a status update the
/// stored spec, so both are checked whichever was sent).
#[must_use]
pub fn validate(quota: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = quota.get("spec");
    let mut errs = resource_list_errors(spec.and_then(|s| s.get("hard")), "spec.hard");
    let hard: Vec<&String> = spec
        .and_then(|s| s.get("hard"))
        .and_then(Value::as_object)
        .map(|h| h.keys().collect())
        .unwrap_or_default();
    errs.extend(scopes_errors(quota, &hard));
    if let Some(selector) = spec.and_then(|s| s.get("scopeSelector")).filter(|s| !s.is_null()) {
        errs.extend(scope_selector_errors(quota, selector, &hard));
    }
    let Some(old) = old else { return errs };
    let scope_set = |q: &Value| {
        let mut s: Vec<String> = scopes(q).into_iter().map(str::to_owned).collect();
        s.sort();
        s.dedup();
        s
    };
    if scope_set(quota) != scope_set(old) {
        errs.push((
            "spec.scopes".to_owned(),
            format!("Invalid value: {}: field is immutable", go_scopes(&scopes(quota))),
        ));
    }
    let status = quota.get("status");
    errs.extend(resource_list_errors(status.and_then(|s| s.get("hard")), "status.hard"));
    errs.extend(resource_list_errors(status.and_then(|s| s.get("used")), "status.used"));
    errs
}

/// Each name one a quota may limit (`ValidateResourceQuotaResourceName`) and each amount
/// valid for it (`ValidateResourceQuantityValue`): not negative, whole for counted resources.
fn resource_list_errors(list: Option<&Value>, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, amount) in list.and_then(Value::as_object).into_iter().flatten() {
        let field = format!("{at}[{name}]");
        errs.extend(quota_resource_errors(name, &field));
        let Some(q) = amount.as_str().and_then(|t| Quantity::parse(t).ok()) else { continue };
        if q.is_negative() {
            errs.push((
                field.clone(),
                format!("Invalid value: {}: must be greater than or equal to 0", go_quote(&q.to_string())),
            ));
        }
        if is_integer(name) && q.milli_value() % 1000 != 0 {
            errs.push((field, format!("Invalid value: {q}: must be an integer")));
        }
    }
    errs
}

/// `spec.scopes` as strings.
fn scopes(quota: &Value) -> Vec<&str> {
    quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The scopes as Go's `%#v` prints a `[]core.ResourceQuotaScope`.
fn go_scopes(scopes: &[&str]) -> String {
    if scopes.is_empty() {
        return "[]core.ResourceQuotaScope(nil)".to_owned();
    }
    let items: Vec<String> = scopes.iter().map(|s| go_quote(s)).collect();
    format!("[]core.ResourceQuotaScope{{{}}}", items.join(", "))
}

/// `IsResourceQuotaScopeValidForResource`: the pod scopes limit pod counts and compute
/// resources, `BestEffort` pod counts only.
fn scope_fits(scope: &str, resource: &str) -> bool {
    const COMPUTE: [&str; 6] =
        ["cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"];
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// How many pairs of scopes that conflict are among `named`.
fn conflicts(named: &[&str]) -> usize {
    CONFLICTING.iter().filter(|pair| pair.iter().all(|s| named.contains(s))).count()
}

/// The hard limits' names in order (`sets.List`).
fn sorted<'a>(hard: &[&'a String]) -> Vec<&'a String> {
    let mut names = hard.to_vec();
    names.sort();
    names
}

/// `validateResourceQuotaScopes`: known scopes, each fitting every standard resource limited,
/// no conflicting pair.
fn scopes_errors(quota: &Value, hard: &[&String]) -> Vec<FieldError> {
    let named = scopes(quota);
    if named.is_empty() {
        return Vec::new();
    }
    let shown = go_scopes(&named);
    let invalid = |why: &str| ("spec.scopes".to_owned(), format!("Invalid value: {shown}: {why}"));
    let mut errs = Vec::new();
    for scope in &named {
        if !SCOPES.contains(scope) {
            errs.push(invalid("unsupported scope"));
        }
        for k in sorted(hard) {
            if is_quota_resource(k) && !scope_fits(scope, k) {
                errs.push(invalid("unsupported scope applied to resource"));
            }
        }
    }
    for _ in 0..conflicts(&named) {
        errs.push(invalid("conflicting scopes"));
    }
    errs
}

/// A `[]string` as Go's `%#v` prints it.
fn go_strings(values: Option<&Vec<Value>>) -> String {
    match values {
        None => "[]string(nil)".to_owned(),
        Some(v) => {
            let items: Vec<String> = v.iter().map(|s| go_quote(s.as_str().unwrap_or(""))).collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    }
}

/// The scope selector as Go's `%#v` prints a `core.ScopeSelector`.
fn go_scope_selector(requirements: &[Value]) -> String {
    let text = |r: &Value, f: &str| go_quote(r.get(f).and_then(Value::as_str).unwrap_or(""));
    let items: Vec<String> = requirements
        .iter()
        .map(|r| {
            format!(
                "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                text(r, "scopeName"),
                text(r, "operator"),
                go_strings(r.get("values").and_then(Value::as_array))
            )
        })
        .collect();
    let list = if items.is_empty() {
        "[]core.ScopedResourceSelectorRequirement(nil)".to_owned()
    } else {
        format!("[]core.ScopedResourceSelectorRequirement{{{}}}", items.join(", "))
    };
    format!("core.ScopeSelector{{MatchExpressions:{list}}}")
}

/// `validateScopedResourceSelectorRequirement`: each requirement a known scope fitting every
/// standard resource limited, `Exists` for the pod scopes, values for `In` and `NotIn` and none
/// for `Exists` and `DoesNotExist`, a known operator; no conflicting pair.
fn scope_selector_errors(quota: &Value, selector: &Value, hard: &[&String]) -> Vec<FieldError> {
    const AT: &str = "spec.scopeSelector.matchExpressions";
    let requirements: &[Value] =
        selector.get("matchExpressions").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let mut errs = Vec::new();
    let mut named = Vec::new();
    for r in requirements {
        let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
        let (scope, operator) = (text("scopeName"), text("operator"));
        if !SCOPES.contains(&scope) {
            errs.push((
                format!("{AT}.scopeName"),
                format!("Invalid value: {}: unsupported scope", go_quote(scope)),
            ));
        }
        for k in sorted(hard) {
            if is_quota_resource(k) && !scope_fits(scope, k) {
                errs.push((
                    AT.to_owned(),
                    format!(
                        "Invalid value: {}: unsupported scope applied to resource",
                        go_scope_selector(requirements)
                    ),
                ));
            }
        }
        if matches!(
            scope,
            "BestEffort" | "NotBestEffort" | "Terminating" | "NotTerminating" | "CrossNamespacePodAffinity"
        ) && operator != "Exists"
        {
            errs.push((
                format!("{AT}.operator"),
                format!(
                    "Invalid value: {}: must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                    go_quote(operator)
                ),
            ));
        }
        let values = r.get("values").and_then(Value::as_array);
        match operator {
            "In" | "NotIn" => {
                if values.is_none_or(Vec::is_empty) {
                    errs.push((
                        format!("{AT}.values"),
                        "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector".to_owned(),
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if values.is_some_and(|v| !v.is_empty()) {
                    errs.push((
                        format!("{AT}.values"),
                        format!(
                            "Invalid value: {}: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                            go_strings(values)
                        ),
                    ));
                }
            }
            _ => errs.push((
                format!("{AT}.operator"),
                format!("Invalid value: {}: not a valid selector operator", go_quote(operator)),
            )),
        }
        named.push(scope);
    }
    for _ in 0..conflicts(&named) {
        errs.push((
            AT.to_owned(),
            format!("Invalid value: {}: conflicting scopes", go_scopes(&scopes(quota))),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_negative_or_fractional_count_is_refused() {
        let q = json!({ "spec": { "hard": { "pods": "-1", "requests.cpu": "500m", "secrets": "1500m" } } });
        assert_eq!(
            validate(&q, None),
            [
                (
                    "spec.hard[pods]".to_owned(),
                    "Invalid value: \"-1\": must be greater than or equal to 0".to_owned()
                ),
                ("spec.hard[secrets]".to_owned(), "Invalid value: 1500m: must be an integer".to_owned()),
            ]
        );
    }

    #[test]
    fn scopes_are_known_fitting_and_not_conflicting() {
        let q = json!({ "spec": { "hard": { "pods": "1" }, "scopes": ["Terminating", "NotTerminating"] } });
        assert_eq!(
            validate(&q, None)[0].1,
            "Invalid value: []core.ResourceQuotaScope{\"Terminating\", \"NotTerminating\"}: conflicting scopes"
        );
    }
}
