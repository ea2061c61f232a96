//! RBAC's bootstrap policy: the ClusterRoles and ClusterRoleBindings a new API server writes
//! for itself (upstream's `bootstrappolicy`, its `rbac/bootstrap-roles` post-start hook) —
//! `cluster-admin` bound to `system:masters`, the aggregated `admin`, `edit` and `view` and the
//! `system:aggregate-to-*` roles that fill them, and the `system:` roles every user or every
//! client is bound to (discovery, public information, self reviews).
//!
//! The roles are data (`rbac_policy.json`, from upstream's recorded policy); this module
//! makes objects of them.

use serde_json::{Value, json};

/// The label and annotation every bootstrap object carries.
fn metadata(name: &str, labels: Option<&Value>) -> Value {
    let mut meta = json!({
        "name": name,
        "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" },
        "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" },
    });
    if let Some(Value::Object(extra)) = labels {
        for (k, v) in extra {
            meta["labels"][k] = v.clone();
        }
    }
    meta
}

/// The bootstrap ClusterRoles, then the ClusterRoleBindings, as objects to create.
pub(crate) fn objects() -> (Vec<Value>, Vec<Value>) {
    let policy: Value =
        serde_json::from_str(include_str!("rbac_policy.json")).expect("the bootstrap policy is JSON");
    let list = |k: &str| policy[k].as_array().cloned().unwrap_or_default();
    let roles = list("clusterRoles")
        .into_iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap_or_default();
            let mut role = json!({ "metadata": metadata(name, r.get("labels")), "rules": r["rules"] });
            if let Some(selectors) = r.get("aggregationRule") {
                role["aggregationRule"] = json!({ "clusterRoleSelectors": selectors });
            }
            role
        })
        .collect();
    let bindings = list("clusterRoleBindings")
        .into_iter()
        .map(|b| {
            let subjects: Vec<Value> = b["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| match s["kind"].as_str() {
                    Some("ServiceAccount") => json!({ "kind": "ServiceAccount", "name": s["name"], "namespace": s["namespace"] }),
                    _ => json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": s["kind"], "name": s["name"] }),
                })
                .collect();
            json!({
                "metadata": metadata(b["name"].as_str().unwrap_or_default(), None),
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": b["role"] },
                "subjects": subjects,
            })
        })
        .collect();
    (roles, bindings)
}
