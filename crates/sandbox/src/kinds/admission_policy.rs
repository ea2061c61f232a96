//! admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding: their v1 defaults and upstream's rules
//! (`validateValidatingAdmissionPolicySpec`, `validateValidatingAdmissionPolicyStatus`,
//! `validateValidatingAdmissionPolicyBindingSpec`): the rules a real server checks before
//! storing them. Admission evaluates them (`admission/validating_policy`). What they match is
//! in [`super::admission_match`].
//!
//! Expressions are CEL: each must compile (type checking is not done), besides the rules around
//! them (given, not blank, a variable's name an identifier, lengths, keys).

use serde_json::{Value, json};

use super::admission_match::{
    FAILURE_POLICIES, cel_errors, default_match_resources, go_named_slice, match_conditions_errors,
    match_resources_errors, same, strs,
};
use crate::field_errors::{duplicate, forbidden, invalid_str, not_supported, required};
use crate::go_print::go_quote;
use crate::metadata::{dns1035_errors, subdomain_errors};
use crate::object_meta::{meta_str, object_at, set_default};
use crate::status::FieldError;

/// The reasons a validation may give (`supportedValidationPolicyReason`).
const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
/// The actions a binding may take (`validValidationActions`).
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
/// What a binding does when its parameters are missing, in upstream's order.
const NOT_FOUND_ACTIONS: &[&str] = &["Deny", "Allow"];
/// The most audit annotations a policy may have.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// The longest an audit annotation's value expression may be, trimmed.
const MAX_VALUE_EXPRESSION: usize = 5 * 1024;
/// `SetDefaults_ValidatingAdmissionPolicySpec` and `SetDefaults_MatchResources`: a policy fails
/// closed; its constraints match equivalent versions, every namespace and object, every scope.
pub fn default_policy(policy: &mut Value) {
    if !policy.is_object() {
        return;
    }
    // The spec is a struct in Go: it is always there to default.
    let spec = object_at(policy, "spec");
    set_default(spec, "failurePolicy", json!("Fail"));
    if let Some(mc) = spec.get_mut("matchConstraints").filter(|v| v.is_object()) {
        default_match_resources(mc);
    }
}

/// `SetDefaults_MatchResources` of a binding's `matchResources`, when it has one.
pub fn default_binding(binding: &mut Value) {
    if let Some(mr) = binding.pointer_mut("/spec/matchResources").filter(|v| v.is_object()) {
        default_match_resources(mr);
    }
}

/// The status strategy's `PrepareForUpdate` (`ResetObjectMetaForStatus`): a `/status` write
/// keeps the stored spec, and the stored labels, annotations, finalizers and owners.
pub fn prepare_status_update(policy: &mut Value, old: &Value) {
    let meta = crate::object_meta::meta_mut(policy);
    for key in ["labels", "annotations", "finalizers", "ownerReferences"] {
        match old.pointer(&format!("/metadata/{key}")) {
            Some(v) => meta.insert(key.into(), v.clone()),
            None => meta.remove(key),
        };
    }
}

/// A policy's rules: the spec's (`ValidateValidatingAdmissionPolicy`, and on update the same
/// with unchanged match conditions skipped), then the status's (what a `/status` write changes;
/// on other writes it is the stored status, already valid).
#[must_use]
pub fn validate_policy(policy: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    // An update that keeps the parameters' kind and the match conditions does not check the
    // conditions again.
    let ignore_conditions = old.is_some_and(|o| {
        same(spec.get("paramKind"), o.pointer("/spec/paramKind"))
            && same(spec.get("matchConditions"), o.pointer("/spec/matchConditions"))
    });
    let mut errs = policy_spec_errors(spec, meta_str(policy, "name"), ignore_conditions);
    if let Some(status) = policy.get("status").filter(|s| s.is_object()) {
        errs.extend(status_errors(status));
    }
    errs
}

/// `validateValidatingAdmissionPolicySpec`, in its order.
fn policy_spec_errors(spec: &Value, name: &str, ignore_conditions: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errs.push(required("spec.failurePolicy", "")),
        Some(p) if !FAILURE_POLICIES.contains(&p) => {
            errs.push(not_supported("spec.failurePolicy", p, FAILURE_POLICIES));
        }
        Some(_) => {}
    }
    if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
        errs.extend(param_kind_errors(kind, "spec.paramKind"));
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errs.push(required("spec.matchConstraints", "")),
        Some(mc) => {
            errs.extend(match_resources_errors(mc, "spec.matchConstraints"));
            // The rules give the expressions the type of what they see.
            if strs_len(mc.get("resourceRules")) == 0 {
                errs.push(required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
    if !ignore_conditions {
        errs.extend(match_conditions_errors(spec.get("matchConditions"), "spec.matchConditions"));
    }
    let list = |k: &str| spec.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (i, v) in list("variables").iter().enumerate() {
        errs.extend(variable_errors(v, &format!("spec.variables[{i}]")));
    }
    let (validations, annotations) = (list("validations"), list("auditAnnotations"));
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        errs.push(required("spec.validations", why));
        errs.push(required("spec.auditAnnotations", why));
        return errs;
    }
    for (i, v) in validations.iter().enumerate() {
        errs.extend(validation_errors(v, &format!("spec.validations[{i}]")));
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push((
            "spec.auditAnnotations".into(),
            format!(
                "Invalid value: {}: must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations",
                go_audit_annotations(annotations)
            ),
        ));
    }
    let mut keys: Vec<&str> = Vec::new();
    for (i, a) in annotations.iter().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        errs.extend(audit_annotation_errors(a, name, &at));
        let key = a.get("key").and_then(Value::as_str).unwrap_or("");
        if keys.contains(&key) {
            errs.push(duplicate(format!("{at}.key"), key));
        }
        keys.push(key);
    }
    errs
}

/// The length of a JSON array (0 when it is not one).
fn strs_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_array).map_or(0, Vec::len)
}

/// `validateParamKind`: an API version of a group (a DNS-1123 subdomain) and a version (a
/// DNS-1035 label), and a kind that is a DNS-1035 label once lower-cased.
fn param_kind_errors(kind: &Value, at: &str) -> Vec<FieldError> {
    let text = |k: &str| kind.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    let api_version = text("apiVersion");
    let version_at = format!("{at}.apiVersion");
    if api_version.is_empty() {
        errs.push(required(version_at, ""));
    } else {
        // `parseGroupVersion`: `/` alone is no group and no version.
        let parsed = match api_version.matches('/').count() {
            _ if api_version == "/" => Some(("", "")),
            0 => Some(("", api_version)),
            1 => api_version.split_once('/'),
            _ => None,
        };
        match parsed {
            None => {
                let why = format!("unexpected GroupVersion string: {api_version}");
                errs.push(invalid_str(version_at, api_version, &why));
            }
            Some((group, version)) => {
                let group_errs = subdomain_errors(group);
                if !group.is_empty() && !group_errs.is_empty() {
                    errs.push(invalid_str(version_at.clone(), group, &group_errs.join(",")));
                }
                let version_errs = dns1035_errors(version);
                if version.is_empty() {
                    errs.push(invalid_str(version_at, api_version, "version must be specified"));
                } else if !version_errs.is_empty() {
                    errs.push(invalid_str(version_at, version, &version_errs.join(",")));
                }
            }
        }
    }
    let kind_name = text("kind");
    if kind_name.is_empty() {
        errs.push(required(format!("{at}.kind"), ""));
    } else {
        let why = dns1035_errors(&kind_name.to_lowercase());
        if !why.is_empty() {
            errs.push(invalid_str(
                format!("{at}.kind"),
                kind_name,
                &format!("may have mixed case, but should otherwise match: {}", why.join(",")),
            ));
        }
    }
    errs
}

/// Whether `name` is a CEL identifier: `[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !crate::schema::cel::RESERVED.contains(&name)
}

/// `validateVariable`: a name that is a CEL identifier, an expression given.
fn variable_errors(v: &Value, at: &str) -> Vec<FieldError> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    let name = text("name");
    if name.trim().is_empty() {
        errs.push(required(format!("{at}.name"), "name is not specified"));
    } else if !is_cel_identifier(name) {
        errs.push(invalid_str(format!("{at}.name"), name, "name is not a valid CEL identifier"));
    }
    if text("expression").trim().is_empty() {
        errs.push(required(format!("{at}.expression"), "expression is not specified"));
    } else {
        errs.extend(cel_errors(text("expression"), format!("{at}.expression")));
    }
    errs
}

/// `validateValidation`: an expression given, a message expression and a message not blank when
/// given, a message on one line, a known reason.
fn validation_errors(v: &Value, at: &str) -> Vec<FieldError> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if text("expression").trim().is_empty() {
        errs.push(required(format!("{at}.expression"), "expression is not specified"));
    } else {
        errs.extend(cel_errors(text("expression"), format!("{at}.expression")));
    }
    let message_expression = text("messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(invalid_str(
            format!("{at}.messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.is_empty() {
        errs.extend(cel_errors(message_expression, format!("{at}.messageExpression")));
    }
    let message = text("message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.push(invalid_str(format!("{at}.message"), message, "message must be non-empty if specified"));
    } else if message.trim().contains(['\n', '\r']) {
        errs.push(invalid_str(format!("{at}.message"), message, "message must not contain line breaks"));
    }
    if let Some(reason) = v.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        errs.push(not_supported(format!("{at}.reason"), reason, REASONS));
    }
    errs
}

/// `validateAuditAnnotation`: `<policy name>/<key>` a qualified name, a value expression given
/// and within 5 KiB once trimmed.
fn audit_annotation_errors(a: &Value, policy_name: &str, at: &str) -> Vec<FieldError> {
    let text = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("");
    let key = text("key");
    let mut errs = if policy_name.is_empty() {
        vec![invalid_str(format!("{at}.key"), key, "requires metadata.name be non-empty")]
    } else {
        crate::names::qualified_field(&format!("{at}.key"), &format!("{policy_name}/{key}"))
    };
    let value = text("valueExpression").trim();
    if value.is_empty() {
        errs.push(required(format!("{at}.valueExpression"), "valueExpression is not specified"));
    } else if value.len() > MAX_VALUE_EXPRESSION {
        errs.push(required(
            format!("{at}.valueExpression"),
            &format!("must not exceed {MAX_VALUE_EXPRESSION} bytes in length"),
        ));
    } else {
        errs.extend(cel_errors(text("valueExpression"), format!("{at}.valueExpression")));
    }
    errs
}

/// Go's `%#v` of the internal `[]AuditAnnotation`.
fn go_audit_annotations(list: &[Value]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|a| {
            let text = |k: &str| go_quote(a.get(k).and_then(Value::as_str).unwrap_or(""));
            format!(
                "admissionregistration.AuditAnnotation{{Key:{}, ValueExpression:{}}}",
                text("key"),
                text("valueExpression")
            )
        })
        .collect();
    format!("[]admissionregistration.AuditAnnotation{{{}}}", items.join(", "))
}

/// `validateValidatingAdmissionPolicyStatus`: the type checker's warnings (a warning and a
/// JSONPath field reference each), then the conditions.
fn status_errors(status: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let warnings = status.pointer("/typeChecking/expressionWarnings").and_then(Value::as_array);
    for (i, w) in warnings.into_iter().flatten().enumerate() {
        let at = format!("status.typeChecking.expressionWarnings[{i}]");
        let text = |k: &str| w.get(k).and_then(Value::as_str).unwrap_or("");
        if text("warning").is_empty() {
            errs.push(required(format!("{at}.warning"), ""));
        }
        let field_ref = text("fieldRef").trim();
        if field_ref.is_empty() {
            errs.push(required(format!("{at}.fieldRef"), ""));
        } else if let Err(why) = crate::jsonpath::JsonPath::parse(field_ref) {
            errs.push(invalid_str(format!("{at}.fieldRef"), field_ref, &format!("invalid JSONPath: {why}")));
        }
    }
    errs.extend(crate::label_rules::conditions_errors(status.get("conditions"), "status.conditions"));
    errs
}

/// A binding's rules (`validateValidatingAdmissionPolicyBindingSpec`), alike on create and
/// update.
#[must_use]
pub fn validate_binding(binding: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = binding.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let policy = spec.get("policyName").and_then(Value::as_str).unwrap_or("");
    if policy.is_empty() {
        errs.push(required("spec.policyName", ""));
    } else {
        errs.extend(crate::names::subdomain_field("spec.policyName", policy));
    }
    if let Some(param_ref) = spec.get("paramRef").filter(|p| !p.is_null()) {
        errs.extend(param_ref_errors(param_ref, "spec.paramRef"));
    }
    if let Some(mr) = spec.get("matchResources").filter(|m| !m.is_null()) {
        // Upstream's path is spelled so.
        errs.extend(match_resources_errors(mr, "spec.matchResouces"));
    }
    errs.extend(actions_errors(&strs(spec.get("validationActions")), "spec.validationActions"));
    errs
}

/// `validateParamRef`: a name (a path segment) or a selector, not both; a known action for
/// parameters not found.
fn param_ref_errors(param_ref: &Value, at: &str) -> Vec<FieldError> {
    let name = param_ref.get("name").and_then(Value::as_str).unwrap_or("");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    let mut errs = Vec::new();
    let both = "name and selector are mutually exclusive";
    if !name.is_empty() {
        errs.extend(crate::names::path_segment_field(&format!("{at}.name"), name));
        if selector.is_some() {
            errs.push(forbidden(format!("{at}.name"), both));
        }
    }
    if selector.is_some() {
        errs.extend(crate::label_rules::label_selector_errors(selector, &format!("{at}.selector")));
        if !name.is_empty() {
            errs.push(forbidden(format!("{at}.selector"), both));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(required(at, "one of name or selector must be specified"));
    }
    match param_ref.get("parameterNotFoundAction").and_then(Value::as_str) {
        None | Some("") => errs.push(required(format!("{at}.parameterNotFoundAction"), "")),
        Some(a) if !NOT_FOUND_ACTIONS.contains(&a) => {
            errs.push(not_supported(format!("{at}.parameterNotFoundAction"), a, NOT_FOUND_ACTIONS));
        }
        Some(_) => {}
    }
    errs
}

/// `validateValidationActions`: known, each once, not both `Deny` and `Warn`, at least one.
fn actions_errors(actions: &[&str], at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        if !ACTIONS.contains(a) {
            errs.push(not_supported(format!("{at}[{i}]"), a, ACTIONS));
        }
        if seen.contains(a) {
            errs.push(duplicate(format!("{at}[{i}]"), a));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errs.push((
            at.to_owned(),
            format!(
                "Invalid value: {}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
                go_named_slice("ValidationAction", actions)
            ),
        ));
    }
    if seen.is_empty() {
        errs.push(required(at, "at least one validation action is required"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Value {
        json!({ "metadata": { "name": "p" }, "spec": {
            "matchConstraints": { "resourceRules": [{ "operations": ["CREATE"], "apiGroups": ["apps"],
                "apiVersions": ["v1"], "resources": ["deployments"] }] },
            "validations": [{ "expression": "true" }] } })
    }

    #[test]
    fn a_defaulted_policy_is_valid() {
        let mut p = policy();
        default_policy(&mut p);
        assert_eq!(p["spec"]["matchConstraints"]["resourceRules"][0]["scope"], "*");
        assert_eq!(validate_policy(&p, None), []);
    }

    #[test]
    fn param_kinds() {
        let e = |v: &str| param_kind_errors(&json!({ "apiVersion": v, "kind": "K" }), "k");
        assert_eq!(e("example.com/v1"), []);
        assert_eq!(e("v1"), []);
        assert_eq!(e("/")[0].1, "Invalid value: \"/\": version must be specified");
        assert_eq!(e("a/b/c").len(), 1);
    }

    #[test]
    fn identifiers() {
        assert!(is_cel_identifier("_x1"));
        assert!(!is_cel_identifier("in"));
        assert!(!is_cel_identifier("a-b"));
    }
}
