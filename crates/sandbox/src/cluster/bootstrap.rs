//! What kube-controller-manager puts in every namespace: the `default` ServiceAccount (the
//! service account controller) and the `kube-root-ca.crt` ConfigMap holding the cluster's CA
//! (the root CA certificate publisher) — put back when deleted, the ConfigMap's data restored
//! when changed.

use serde_json::{Value, json};

use super::api::Api;
use super::{Controller, Queue, log_failure};
use crate::object_meta::is_deleting;

/// The ConfigMap the root CA publisher keeps in every namespace.
pub(crate) const ROOT_CA: &str = "kube-root-ca.crt";
const ROOT_CA_ANNOTATION: &str = "kubernetes.io/description";
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Whether the namespace exists and is not being deleted.
fn active(api: &Api<'_>, ns: &str) -> bool {
    api.get(api.defs.namespaces, "", ns).is_some_and(|n| !is_deleting(&n))
}

/// The `default` ServiceAccount of each queued namespace.
pub(crate) fn service_accounts(api: &Api<'_>, queue: &Queue) {
    for (_, ns) in queue {
        if !active(api, ns) || api.get(api.defs.service_accounts, ns, "default").is_some() {
            continue;
        }
        let sa = json!({ "metadata": { "name": "default", "namespace": ns } });
        if let Err(e) = api.create(api.defs.service_accounts, ns, sa, "kube-controller-manager")
            && e.code != 409
        {
            log_failure(Controller::ServiceAccount, ns, &e);
        }
    }
}

/// The `kube-root-ca.crt` ConfigMap of each queued namespace, holding `ca`.
pub(crate) fn root_ca(api: &Api<'_>, queue: &Queue, ca: &str) {
    for (_, ns) in queue {
        if !active(api, ns) {
            continue;
        }
        let data = json!({ "ca.crt": ca });
        let result = match api.get(api.defs.config_maps, ns, ROOT_CA) {
            Some(cm) if cm.get("data") == Some(&data) && annotated(&cm) => continue,
            Some(cm) => {
                let mut copy = (*cm).clone();
                copy["data"] = data;
                let meta = crate::object_meta::meta_mut(&mut copy);
                let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                annotations[ROOT_CA_ANNOTATION] = json!(ROOT_CA_DESCRIPTION);
                api.update(api.defs.config_maps, copy, "kube-controller-manager").map(drop)
            }
            None => {
                let cm = json!({
                    "metadata": { "name": ROOT_CA, "namespace": ns, "annotations": { ROOT_CA_ANNOTATION: ROOT_CA_DESCRIPTION } },
                    "data": data,
                });
                api.create(api.defs.config_maps, ns, cm, "kube-controller-manager").map(drop)
            }
        };
        if let Err(e) = result {
            log_failure(Controller::RootCaCertPublisher, ns, &e);
        }
    }
}

fn annotated(cm: &Value) -> bool {
    cm.pointer("/metadata/annotations").and_then(|a| a.get(ROOT_CA_ANNOTATION)).is_some()
}
