//! The objects a new API server makes for itself before it serves anyone (its post-start hooks
//! and bootstrap controllers): the system namespaces, the system priority classes, the
//! `kubernetes` Service, and RBAC's bootstrap roles and bindings (`cluster-admin` bound to
//! `system:masters`, which clients look for, and the rest of upstream's policy). The store creates them, in this order, when it is made.

mod rbac_policy;

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
    // The API server's own Service (its bootstrap controller), then RBAC's bootstrap policy.
    let service = json!({
        "metadata": { "name": "kubernetes", "labels": { "component": "apiserver", "provider": "kubernetes" } },
        "spec": { "type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                  "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443 }],
                  "sessionAffinity": "None" },
    });
    all.push((def("", "services"), "default", service));
    let (roles, bindings) = rbac_policy::objects();
    all.extend(roles.into_iter().map(|r| (def("rbac.authorization.k8s.io", "clusterroles"), "", r)));
    all.extend(
        bindings.into_iter().map(|b| (def("rbac.authorization.k8s.io", "clusterrolebindings"), "", b)),
    );
    all
}
