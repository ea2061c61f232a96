//! The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` has as its
//! rules those of every ClusterRole its selectors pick — selector by selector, the picked roles
//! by name, each distinct rule once — rewritten whenever any ClusterRole changes. This is how
//! `admin`, `edit` and `view` grow when a CRD's installer labels a role
//! `rbac.authorization.k8s.io/aggregate-to-view: "true"`.

use serde_json::{Value, json};

use super::api::Api;
use crate::object_meta::meta_str;
use crate::selector::selector_matches;

/// Where ClusterRoles are stored.
pub(crate) const STORAGE: &str = "clusterroles.rbac.authorization.k8s.io";

/// The field manager of its writes.
const MANAGER: &str = "clusterrole-aggregation-controller";

/// Whether any ClusterRole changed since the last pass.
pub(crate) struct RoleAggregation {
    dirty: bool,
}

impl Default for RoleAggregation {
    /// Dirty: the bootstrap roles were written before the controller followed the store.
    fn default() -> Self {
        Self { dirty: true }
    }
}

impl RoleAggregation {
    /// A ClusterRole was written or deleted.
    pub(crate) fn observe(&mut self) {
        self.dirty = true;
    }

    /// One pass: every aggregated ClusterRole whose rules are not what its selectors pick is
    /// updated; a write that finds the role changed since it was read waits for the next pass.
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        if !std::mem::take(&mut self.dirty) {
            return;
        }
        let Some(def) = api.store.find_storage(STORAGE) else { return };
        let mut roles = api.list(&def, None);
        roles.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
        for role in &roles {
            let Some(selectors) =
                role.pointer("/aggregationRule/clusterRoleSelectors").and_then(Value::as_array)
            else {
                continue;
            };
            let rules = aggregated(role, selectors, &roles);
            let current = role.get("rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            if current == rules.as_slice() {
                continue;
            }
            let mut updated = (**role).clone();
            updated["rules"] = json!(rules);
            if let Err(e) = api.update(&def, updated, MANAGER) {
                self.dirty = true;
                super::log_failure("clusterrole-aggregation-controller", meta_str(role, "name"), &e);
            }
        }
    }
}

/// The rules of the roles (other than `role`) that `selectors` pick, each distinct one once.
fn aggregated(role: &Value, selectors: &[Value], roles: &[std::sync::Arc<Value>]) -> Vec<Value> {
    let empty = serde_json::Map::new();
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors {
        for picked in roles {
            let labels = picked.pointer("/metadata/labels").and_then(Value::as_object).unwrap_or(&empty);
            if meta_str(picked, "name") == meta_str(role, "name") || !selector_matches(selector, labels) {
                continue;
            }
            for rule in picked.get("rules").and_then(Value::as_array).into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}
