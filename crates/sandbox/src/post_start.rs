//! The objects a new API server makes for itself before it serves anyone (its post-start hooks
//! and bootstrap controllers): the system namespaces, the system priority classes, the
//! `kubernetes` Service, and RBAC's `cluster-admin` role bound to `system:masters`, which
//! clients look for. The store creates them, in this order, when it is made.

use serde_json::{Value, json};

use crate::catalog::find;
use crate::resource::ResourceDef;

/// A built-in resource, by group and plural (v1).
fn def(group: &str, plural: &str) -> &'static ResourceDef {
    find(group, "v1", plural).expect("a built-in resource")
}

/// Each object with its resource and namespace, in the order they are created.
pub(crate) fn objects() -> Vec<(&'static ResourceDef, &'static str, Value)> {
    let mut all = Vec::new();
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        all.push((def("", "namespaces"), "", json!({ "metadata": { "name": name } })));
    }
    // As the API server's post-start hook makes them.
    for class in crate::kinds::priority::system_classes() {
        all.push((def("scheduling.k8s.io", "priorityclasses"), "", class));
    }
    // The API server's own Service (its bootstrap controller) and RBAC's superuser role, bound
    // to `system:masters` (its bootstrap policy).
    let service = json!({
        "metadata": { "name": "kubernetes", "labels": { "component": "apiserver", "provider": "kubernetes" } },
        "spec": { "type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                  "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443 }],
                  "sessionAffinity": "None" },
    });
    all.push((def("", "services"), "default", service));
    let bootstrap = json!({
        "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" },
        "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" },
    });
    let mut role = json!({ "metadata": bootstrap.clone(), "rules": [
        { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
        { "nonResourceURLs": ["*"], "verbs": ["*"] },
    ] });
    role["metadata"]["name"] = json!("cluster-admin");
    all.push((def("rbac.authorization.k8s.io", "clusterroles"), "", role));
    let mut binding = json!({ "metadata": bootstrap,
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters" }] });
    binding["metadata"]["name"] = json!("cluster-admin");
    all.push((def("rbac.authorization.k8s.io", "clusterrolebindings"), "", binding));
    all
}
