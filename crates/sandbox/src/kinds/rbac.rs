//! RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding): stored and served, never
//! evaluated — the sandbox enforces no RBAC. A binding's `roleRef` cannot change.

use serde_json::Value;

use crate::go_print::go_quote;
use crate::status::FieldError;

const GROUP: &str = "rbac.authorization.k8s.io";

/// A RoleBinding's rules (`ValidateRoleBinding`, and `ValidateRoleBindingUpdate` after it on
/// an update): its role reference and subjects (a ServiceAccount's namespace may be left out).
pub fn validate_binding(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    binding_errors(new, old, &["Role", "ClusterRole"], true)
}

/// A ClusterRoleBinding's rules (`ValidateClusterRoleBinding`, `ValidateClusterRoleBindingUpdate`):
/// a ClusterRole's reference, subjects whose ServiceAccounts name their namespace.
pub fn validate_cluster_binding(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    binding_errors(new, old, &["ClusterRole"], false)
}

fn binding_errors(new: &Value, old: Option<&Value>, kinds: &[&str], namespaced: bool) -> Vec<FieldError> {
    let mut errors = validate_role_ref(new, kinds);
    for (i, s) in new.get("subjects").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errors.extend(subject_errors(s, namespaced, &format!("subjects[{i}]")));
    }
    if let Some(old) = old
        && old.get("roleRef") != new.get("roleRef")
    {
        let field =
            |name: &str| new.pointer(&format!("/roleRef/{name}")).and_then(Value::as_str).unwrap_or("");
        errors.push((
            "roleRef".into(),
            format!(
                "Invalid value: rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}: cannot change roleRef",
                go_quote(field("apiGroup")),
                go_quote(field("kind")),
                go_quote(field("name"))
            ),
        ));
    }
    errors
}

/// The role reference: RBAC's group, one of `kinds`, a path-segment name.
fn validate_role_ref(new: &Value, kinds: &[&str]) -> Vec<FieldError> {
    let field = |name: &str| new.pointer(&format!("/roleRef/{name}")).and_then(Value::as_str).unwrap_or("");
    let mut errors = Vec::new();
    if field("apiGroup") != GROUP {
        errors.push(crate::field_errors::not_supported("roleRef.apiGroup", field("apiGroup"), &[GROUP]));
    }
    if !kinds.contains(&field("kind")) {
        errors.push(crate::field_errors::not_supported("roleRef.kind", field("kind"), kinds));
    }
    if field("name").is_empty() {
        errors.push(("roleRef.name".to_owned(), "Required value".to_owned()));
    } else {
        errors.extend(crate::names::path_segment_field("roleRef.name", field("name")));
    }
    errors
}

/// `ValidateRoleBindingSubject`: a name (a DNS subdomain for a ServiceAccount), the group its
/// kind needs, a namespace for a ServiceAccount of a cluster binding, a known kind.
fn subject_errors(s: &Value, namespaced: bool, at: &str) -> Vec<FieldError> {
    let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if get("name").is_empty() {
        errs.push((format!("{at}.name"), "Required value".into()));
    }
    match get("kind") {
        "ServiceAccount" => {
            if !get("name").is_empty() {
                errs.extend(crate::names::subdomain_field(&format!("{at}.name"), get("name")));
            }
            if !get("apiGroup").is_empty() {
                errs.push(crate::field_errors::not_supported(
                    format!("{at}.apiGroup"),
                    get("apiGroup"),
                    &[""],
                ));
            }
            if !namespaced && get("namespace").is_empty() {
                errs.push((format!("{at}.namespace"), "Required value".into()));
            }
        }
        "User" | "Group" => {
            if get("apiGroup") != GROUP {
                errs.push(crate::field_errors::not_supported(
                    format!("{at}.apiGroup"),
                    get("apiGroup"),
                    &[GROUP],
                ));
            }
        }
        other => errs.push(crate::field_errors::not_supported(
            format!("{at}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// A binding's `roleRef.apiGroup` defaults to RBAC's group (`SetDefaults_RoleBinding`; Go's
/// `roleRef` is a struct, there even when the body has none).
pub fn default_binding(binding: &mut Value) {
    let Some(b) = binding.as_object_mut() else { return };
    let role_ref = b.entry("roleRef").or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(r) = role_ref.as_object_mut()
        && r.get("apiGroup").and_then(Value::as_str).is_none_or(str::is_empty)
    {
        r.insert("apiGroup".into(), Value::String(GROUP.into()));
    }
    // `SetDefaults_Subject`: a user's and a group's group is RBAC's.
    for s in b
        .get_mut("subjects")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
        if matches!(kind, "User" | "Group")
            && s.get("apiGroup").and_then(Value::as_str).is_none_or(str::is_empty)
        {
            s.insert("apiGroup".into(), Value::String(GROUP.into()));
        }
    }
}

/// A Role's or ClusterRole's rules are a list Go writes even when it is nil: `rules: null`.
pub fn default_role(role: &mut Value) {
    if let Some(r) = role.as_object_mut() {
        r.entry("rules").or_insert(Value::Null);
    }
}

/// A Role's and a ClusterRole's rules (`ValidateRole`, `ValidateClusterRole`; an update
/// validates twice, as the strategy runs the create rules before the update's, which repeat
/// them): each rule has verbs and either resources (with groups) or, for a ClusterRole,
/// non-resource URLs; an aggregation rule has valid selectors.
pub fn validate_role(role: &Value, old: Option<&Value>) -> Vec<FieldError> {
    role_errors(role, old, true)
}

/// A ClusterRole's rules: a Role's, non-resource URLs allowed, and its aggregation rule.
pub fn validate_cluster_role(role: &Value, old: Option<&Value>) -> Vec<FieldError> {
    role_errors(role, old, false)
}

fn role_errors(role: &Value, old: Option<&Value>, namespaced: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, r) in role.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errors.extend(policy_rule_errors(r, namespaced, &format!("rules[{i}]")));
    }
    if !namespaced && let Some(agg) = role.get("aggregationRule").filter(|a| !a.is_null()) {
        let selectors =
            agg.get("clusterRoleSelectors").and_then(Value::as_array).cloned().unwrap_or_default();
        if selectors.is_empty() {
            errors.push((
                "aggregationRule.clusterRoleSelectors".into(),
                "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
                    .into(),
            ));
        }
        for (i, sel) in selectors.iter().enumerate() {
            errors.extend(crate::label_rules::label_selector_errors(
                Some(sel),
                &format!("aggregationRule.clusterRoleSelectors[{i}]"),
            ));
        }
    }
    if old.is_some() { errors.iter().chain(&errors).cloned().collect() } else { errors }
}

/// `ValidatePolicyRule`.
fn policy_rule_errors(r: &Value, namespaced: bool, at: &str) -> Vec<FieldError> {
    let list = |k: &str| r.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut errs = Vec::new();
    if list("verbs").is_empty() {
        errs.push((format!("{at}.verbs"), "Required value: verbs must contain at least one value".into()));
    }
    let urls = list("nonResourceURLs");
    if !urls.is_empty() {
        let shown: Vec<String> = urls.iter().map(|u| u.as_str().unwrap_or("").to_owned()).collect();
        let shown = crate::netaddr::go_strings(Some(&shown));
        if namespaced {
            errs.push((
                format!("{at}.nonResourceURLs"),
                format!("Invalid value: {shown}: namespaced rules cannot apply to non-resource URLs"),
            ));
        }
        if !list("apiGroups").is_empty() || !list("resources").is_empty() || !list("resourceNames").is_empty()
        {
            errs.push((
                format!("{at}.nonResourceURLs"),
                format!("Invalid value: {shown}: rules cannot apply to both regular resources and non-resource URLs"),
            ));
        }
        return errs;
    }
    if list("apiGroups").is_empty() {
        errs.push((
            format!("{at}.apiGroups"),
            "Required value: resource rules must supply at least one api group".into(),
        ));
    }
    if list("resources").is_empty() {
        errs.push((
            format!("{at}.resources"),
            "Required value: resource rules must supply at least one resource".into(),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_binding_names_its_role_and_a_cluster_binding_only_a_cluster_role() {
        let mut none = json!({ "metadata": { "name": "b" } });
        default_binding(&mut none);
        let fields: Vec<String> = validate_binding(&none, None).into_iter().map(|e| e.0).collect();
        assert_eq!(fields, ["roleRef.kind", "roleRef.name"]);
        assert_eq!(validate_binding(&json!({}), None)[0].0, "roleRef.apiGroup");
        let mut role = json!({ "roleRef": { "kind": "Role", "name": "r" } });
        default_binding(&mut role);
        assert_eq!(role["roleRef"]["apiGroup"], GROUP);
        assert!(validate_binding(&role, None).is_empty());
        let refused = validate_cluster_binding(&role, None);
        assert_eq!(
            refused,
            [(
                "roleRef.kind".to_owned(),
                r#"Unsupported value: "Role": supported values: "ClusterRole""#.to_owned()
            )]
        );
    }

    #[test]
    fn a_rule_without_verbs_is_refused_and_twice_on_update() {
        let role = json!({ "rules": [{ "apiGroups": [""], "resources": ["pods"] }] });
        assert_eq!(validate_role(&role, None).len(), 1);
        assert_eq!(validate_role(&role, Some(&role)).len(), 2);
    }

    #[test]
    fn role_ref_is_immutable() {
        let a =
            json!({ "roleRef": { "kind": "Role", "name": "a", "apiGroup": "rbac.authorization.k8s.io" } });
        let mut b = a.clone();
        b["roleRef"]["name"] = json!("b");
        assert!(validate_binding(&a, Some(&a)).is_empty());
        assert_eq!(validate_binding(&b, Some(&a))[0].0, "roleRef");
    }
}
