//! RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding): stored and served, never
//! evaluated — the sandbox enforces no RBAC. A binding's `roleRef` cannot change.

use serde_json::Value;

use crate::status::FieldError;

const GROUP: &str = "rbac.authorization.k8s.io";

/// RoleBinding (`ValidateRoleBinding`): `roleRef` names a Role or ClusterRole of RBAC's group,
/// by name; and it cannot change (delete and re-create instead).
pub fn validate_binding(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    validate_role_ref(new, old, &["Role", "ClusterRole"])
}

/// ClusterRoleBinding (`ValidateClusterRoleBinding`): as a RoleBinding, but only a ClusterRole.
pub fn validate_cluster_binding(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    validate_role_ref(new, old, &["ClusterRole"])
}

fn validate_role_ref(new: &Value, old: Option<&Value>, kinds: &[&str]) -> Vec<FieldError> {
    let field = |name: &str| new.pointer(&format!("/roleRef/{name}")).and_then(Value::as_str).unwrap_or("");
    let unsupported = |value: &str, allowed: &[&str]| {
        let allowed: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
        format!("Unsupported value: {value:?}: supported values: {}", allowed.join(", "))
    };
    let mut errors = Vec::new();
    if field("apiGroup") != GROUP {
        errors.push(("roleRef.apiGroup".to_owned(), unsupported(field("apiGroup"), &[GROUP])));
    }
    if !kinds.contains(&field("kind")) {
        errors.push(("roleRef.kind".to_owned(), unsupported(field("kind"), kinds)));
    }
    if field("name").is_empty() {
        errors.push(("roleRef.name".to_owned(), "Required value".to_owned()));
    }
    if let Some(old) = old
        && old.get("roleRef") != new.get("roleRef")
    {
        errors.push(("roleRef".into(), "Invalid value: cannot change roleRef".into()));
    }
    errors
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
}

/// A Role's or ClusterRole's rules are a list Go writes even when it is nil: `rules: null`.
pub fn default_role(role: &mut Value) {
    if let Some(r) = role.as_object_mut() {
        r.entry("rules").or_insert(Value::Null);
    }
}

/// A Role's or ClusterRole's rules (`ValidatePolicyRule`): each names at least one verb. An
/// update reports each refusal twice, as upstream's strategy validates the role and then the
/// update, which validates the role again.
pub fn validate_role(role: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let errors: Vec<FieldError> = role
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, r)| r.get("verbs").and_then(Value::as_array).is_none_or(Vec::is_empty))
        .map(|(i, _)| {
            (format!("rules[{i}].verbs"), "Required value: verbs must contain at least one value".into())
        })
        .collect();
    if old.is_some() { errors.iter().chain(&errors).cloned().collect() } else { errors }
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
