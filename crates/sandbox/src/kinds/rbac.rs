//! RBAC kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding): stored and served, never
//! evaluated — the sandbox enforces no RBAC. A binding's `roleRef` cannot change.

use serde_json::Value;

use crate::resource::FieldError;

/// RoleBinding and ClusterRoleBinding: `roleRef` cannot change (delete and re-create instead).
pub fn validate_binding(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    match old {
        Some(old) if old.get("roleRef") != new.get("roleRef") => {
            vec![("roleRef".into(), "Invalid value: cannot change roleRef".into())]
        }
        _ => Vec::new(),
    }
}

/// A Role's or ClusterRole's rules are a list Go writes even when it is nil: `rules: null`.
pub fn default_role(role: &mut Value) {
    if let Some(r) = role.as_object_mut() {
        r.entry("rules").or_insert(Value::Null);
    }
}

/// A Role's or ClusterRole's rules (`ValidatePolicyRule`): each names at least one verb.
pub fn validate_role(role: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    role.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, r)| r.get("verbs").and_then(Value::as_array).is_none_or(Vec::is_empty))
        .map(|(i, _)| {
            (format!("rules[{i}].verbs"), "Required value: verbs must contain at least one value".into())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
