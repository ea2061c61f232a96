//! The PVC and PV protection controllers: a claim being deleted loses its
//! `kubernetes.io/pvc-protection` finalizer once no pod that has not finished uses it, a volume
//! its `kubernetes.io/pv-protection` once no claim is bound to it; the update that removes the
//! last finalizer lets the object go.
//!
//! The finalizers are put on by the StorageObjectInUseProtection admission plugin (in the store);
//! the claims and volumes that still hold one while being deleted are seen through the store's
//! changes, and looked at again on every pass (a pod that finishes frees its claims).

use std::collections::BTreeSet;

use serde_json::Value;

use super::api::Api;
use crate::admission::protection_finalizer;
use crate::object_meta::{finalizers, is_deleting};
use crate::store::Key;

/// Where claims are stored.
const CLAIMS: &str = "persistentvolumeclaims.";

/// Claims and volumes being deleted that still hold their protection finalizer.
#[derive(Default)]
pub(crate) struct Protection {
    held: BTreeSet<Key>,
}

impl Protection {
    /// A claim or volume changed (`None`: it is gone).
    pub(crate) fn observe(&mut self, key: &Key, obj: Option<&Value>) {
        let Some(finalizer) = protection_finalizer(key.0) else { return };
        if obj.is_some_and(|o| is_deleting(o) && finalizers(o).iter().any(|f| f == finalizer)) {
            self.held.insert(key.clone());
        } else {
            self.held.remove(key);
        }
    }

    /// One pass: each held claim or volume no longer in use loses its finalizer, by an update
    /// conditional on the version read (a stale one is looked at again on the next pass).
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        for key in &self.held {
            let (def, component) = if key.0 == CLAIMS {
                (api.defs.claims, "pvc-protection-controller")
            } else {
                (api.defs.volumes, "pv-protection-controller")
            };
            let Some(obj) = api.get(def, &key.1, &key.2) else { continue };
            if in_use(api, key, &obj) {
                continue;
            }
            let Some(finalizer) = protection_finalizer(key.0) else { continue };
            let mut released = (*obj).clone();
            if let Some(list) = released.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
                list.retain(|f| f.as_str() != Some(finalizer));
            }
            if let Err(e) = api.update(def, released, "kube-controller-manager") {
                super::log_failure(component, &key.2, &e);
            }
        }
    }
}

/// A claim is in use while a pod that has not finished names it; a volume while it is bound.
fn in_use(api: &Api<'_>, key: &Key, obj: &Value) -> bool {
    if key.0 != CLAIMS {
        return obj.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    }
    api.list(api.defs.pods, Some(&key.1)).iter().any(|p| {
        !matches!(super::api::phase(p), "Succeeded" | "Failed")
            && p.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten().any(|v| {
                v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) == Some(&key.2)
            })
    })
}
