//! What webhooks and admission policies match: the rules (operations, API groups, versions,
//! resources and their subresource wildcards, scope), a policy's `matchResources` and the
//! `matchConditions` both carry, with their v1 defaults. Upstream keeps these in
//! `pkg/apis/admissionregistration/validation/validation.go` (`validateRuleWithOperations`,
//! `validateMatchResources`, `validateMatchConditions`); [`super::webhook_configuration`] and
//! [`super::admission_policy`] call them under their own field paths.
//!
//! A match condition's expression is CEL: it must compile ([`cel_errors`]), as every expression
//! of a policy must (type checking is not done).

use serde_json::{Value, json};

use crate::field_errors::{duplicate, go_string_slice, invalid_str, not_supported, required, too_many};
use crate::object_meta::set_default;
use crate::status::FieldError;

/// The failure policies (`supportedFailurePolicies`, sorted as Go lists a set).
pub(crate) const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
/// The match policies (`supportedMatchPolicies`).
pub(crate) const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
/// The operations a rule may name (`supportedOperations`).
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
/// The scopes a rule may name (`validScopes`).
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
/// The most match conditions a webhook or a policy may hold.
const MAX_MATCH_CONDITIONS: usize = 64;

/// The strings of a JSON array (what is not a string is left out: the shape was checked first).
pub(crate) fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Whether a field is given: present and not null (a Go pointer that is set).
pub(crate) fn given(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null())
}

/// Go's `%#v` of a slice of a named string type of the internal API
/// (`[]admissionregistration.OperationType{"*", "CREATE"}`).
pub(crate) fn go_named_slice(type_name: &str, items: &[&str]) -> String {
    let shown = go_string_slice(items);
    format!("[]admissionregistration.{type_name}{}", shown.strip_prefix("[]string").unwrap_or(&shown))
}

/// `field.Invalid` whose value Go prints with `%#v` (a slice).
fn invalid_shown(path: String, shown: &str, detail: &str) -> FieldError {
    (path, format!("Invalid value: {shown}: {detail}"))
}

/// `SetDefaults_Rule`: a rule applies to every scope unless it names one.
pub(crate) fn default_rule(rule: &mut Value) {
    if let Some(r) = rule.as_object_mut() {
        set_default(r, "scope", json!("*"));
    }
}

/// The defaults of the rules in `list` (an array of rules, or absent).
pub(crate) fn default_rules(list: Option<&mut Value>) {
    for rule in list.and_then(Value::as_array_mut).into_iter().flatten() {
        default_rule(rule);
    }
}

/// `SetDefaults_MatchResources` and its rules' defaults: `Equivalent` matching, selectors that
/// match everything.
pub(crate) fn default_match_resources(mr: &mut Value) {
    let Some(m) = mr.as_object_mut() else { return };
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    default_rules(m.get_mut("resourceRules"));
    default_rules(m.get_mut("excludeResourceRules"));
}

/// `validateRuleWithOperations`: the operations, then the rule itself (subresources allowed).
pub(crate) fn rule_with_operations_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ops = strs(rule.get("operations"));
    let ops_at = format!("{at}.operations");
    if ops.is_empty() {
        errs.push(required(ops_at.clone(), ""));
    }
    if ops.len() > 1 && ops.contains(&"*") {
        errs.push(invalid_shown(
            ops_at.clone(),
            &go_named_slice("OperationType", &ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(not_supported(format!("{ops_at}[{i}]"), op, OPERATIONS));
        }
    }
    errs.extend(rule_errors(rule, at));
    errs
}

/// `validateRule`: groups and versions given, `*` alone, the resources, a known scope.
fn rule_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let items = strs(rule.get(key));
        if items.is_empty() {
            errs.push(required(format!("{at}.{key}"), ""));
        }
        if items.len() > 1 && items.contains(&"*") {
            errs.push(invalid_shown(
                format!("{at}.{key}"),
                &go_string_slice(&items),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    // A group may be empty (the core group), a version may not.
    for (i, v) in strs(rule.get("apiVersions")).iter().enumerate() {
        if v.is_empty() {
            errs.push(required(format!("{at}.apiVersions[{i}]"), ""));
        }
    }
    errs.extend(resources_errors(&strs(rule.get("resources")), &format!("{at}.resources")));
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !SCOPES.contains(&scope)
    {
        errs.push(not_supported(format!("{at}.scope"), scope, SCOPES));
    }
    errs
}

/// `validateResources`: `x/*` and `*/y` cover what they name, `*/*` stands alone, `*` excludes
/// plain resources.
fn resources_errors(resources: &[&str], at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if resources.is_empty() {
        errs.push(required(at, ""));
    }
    // Resources named with `x/*`, subresources named with `*/y`.
    let mut all_subresources_of: Vec<&str> = Vec::new();
    let mut in_every_resource: Vec<&str> = Vec::new();
    let (mut double_wildcard, mut single_wildcard, mut plain) = (false, false, false);
    for (i, item) in resources.iter().enumerate() {
        if item.is_empty() {
            errs.push(required(format!("{at}[{i}]"), ""));
            continue;
        }
        double_wildcard |= *item == "*/*";
        single_wildcard |= *item == "*";
        let Some((res, sub)) = item.split_once('/') else {
            // As upstream: the last resource without a subresource decides.
            plain = *item != "*";
            continue;
        };
        if all_subresources_of.contains(&res) {
            errs.push(invalid_str(
                format!("{at}[{i}]"),
                item,
                &format!("if '{res}/*' is present, must not specify {item}"),
            ));
        }
        if in_every_resource.contains(&sub) {
            errs.push(invalid_str(
                format!("{at}[{i}]"),
                item,
                &format!("if '*/{sub}' is present, must not specify {item}"),
            ));
        }
        if sub == "*" {
            all_subresources_of.push(res);
        }
        if res == "*" {
            in_every_resource.push(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errs.push(invalid_shown(
            at.to_owned(),
            &go_string_slice(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain {
        errs.push(invalid_shown(
            at.to_owned(),
            &go_string_slice(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

/// `validateMatchResources`: the defaulted policy and selectors, then each rule and excluded rule.
pub(crate) fn match_resources_errors(mr: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match mr.get("matchPolicy").and_then(Value::as_str) {
        None => errs.push(required(format!("{at}.matchPolicy"), "")),
        Some(p) if !MATCH_POLICIES.contains(&p) => {
            errs.push(not_supported(format!("{at}.matchPolicy"), p, MATCH_POLICIES));
        }
        Some(_) => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if given(mr.get(key)) {
            errs.extend(crate::label_rules::label_selector_errors(mr.get(key), &format!("{at}.{key}")));
        } else {
            errs.push(required(format!("{at}.{key}"), ""));
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        let rules = mr.get(key).and_then(Value::as_array);
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            errs.extend(named_rule_errors(rule, &format!("{at}.{key}[{i}]")));
        }
    }
    errs
}

/// `validateNamedRuleWithOperations`: resource names that are path segments, each once; then
/// the rule.
fn named_rule_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, name) in strs(rule.get("resourceNames")).into_iter().enumerate() {
        let path = format!("{at}.resourceNames[{i}]");
        errs.extend(crate::names::path_segment_field(&path, name));
        if seen.contains(&name) {
            errs.push(duplicate(path, name));
        } else {
            seen.push(name);
        }
    }
    errs.extend(rule_with_operations_errors(rule, at));
    errs
}

/// `validateMatchConditions`: at most 64, each with an expression and a qualified name, names
/// unique.
pub(crate) fn match_conditions_errors(conditions: Option<&Value>, at: &str) -> Vec<FieldError> {
    let list = conditions.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut errs = Vec::new();
    if list.len() > MAX_MATCH_CONDITIONS {
        errs.push(too_many(at, list.len(), MAX_MATCH_CONDITIONS));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        if text("expression").trim().is_empty() {
            errs.push(required(format!("{at}[{i}].expression"), ""));
        } else {
            errs.extend(cel_errors(text("expression"), format!("{at}[{i}].expression")));
        }
        let name = text("name");
        let name_at = format!("{at}[{i}].name");
        if name.is_empty() {
            errs.push(required(name_at, ""));
            continue;
        }
        errs.extend(crate::names::qualified_field(&name_at, name));
        if seen.contains(&name) {
            errs.push(duplicate(name_at, name));
        } else {
            seen.push(name);
        }
    }
    errs
}

/// The error of a CEL expression (given, not blank) that does not compile, as upstream's
/// `convertCELErrorToValidationError` words it: `Invalid value: "<expression>": compilation
/// failed: ERROR: <input>:1:4: Syntax error: …`.
pub(crate) fn cel_errors(expression: &str, at: String) -> Option<FieldError> {
    crate::schema::cel::compile(expression)
        .err()
        .map(|e| invalid_str(at, expression, &format!("compilation failed: {e}")))
}

/// Whether two optional JSON values are the same, an absent field counting as `null`.
pub(crate) fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.unwrap_or(&Value::Null) == b.unwrap_or(&Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subresource_wildcards() {
        assert!(resources_errors(&["pods", "pods/status"], "r").is_empty());
        assert_eq!(resources_errors(&["pods/*", "pods/log"], "r")[0].0, "r[1]");
        assert_eq!(resources_errors(&["*/scale", "deployments/scale"], "r").len(), 1);
        assert_eq!(resources_errors(&["*", "pods"], "r").len(), 1);
        assert!(resources_errors(&["*", "*/status"], "r").is_empty());
    }

    #[test]
    fn operation_lists_print_their_type() {
        let e = rule_with_operations_errors(
            &json!({"operations": ["*", "CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}),
            "r",
        );
        assert_eq!(
            e[0].1,
            "Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations"
        );
    }
}
