//! The ControllerRef manager (upstream's `pkg/controller/controller_ref_manager.go`): which
//! objects an owner claims when it syncs — the pods of a ReplicaSet, ReplicationController,
//! Job, StatefulSet or DaemonSet, the ReplicaSets of a Deployment. It keeps those its controller
//! reference names that still match its selector, releases the ones that stopped matching (its
//! reference taken off them) and adopts matching ones no controller owns (its reference put on
//! them). It never releases or adopts while the owner is being deleted, never adopts an object
//! that is being deleted or lives in another namespace, and reads the owner again before
//! adopting (the same uid, not being deleted), as upstream's `RecheckDeletionTimestamp` does.
//!
//! Orphans come from an index the simulation keeps as it watches pods and ReplicaSets (the
//! API's [`Orphans`](super::api::Orphans): those without a controller, by namespace), as an
//! informer's indexer would, so an owner's sync reads the few orphans of its namespace, not
//! every pod or set in it.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::api::{Api, controller_ref, controller_uid};
use super::log_failure;
use crate::object_meta::{is_deleting, meta_mut, meta_str};
use crate::resource::ResourceDef;
use crate::selector::selector_matches;

/// How an owner's claim decides, beyond its selector.
pub(crate) struct Claim<'a> {
    /// The owner's kind.
    pub def: &'a ResourceDef,
    /// The kind it owns: pods, or a Deployment's ReplicaSets.
    pub child: &'a ResourceDef,
    /// Its selector, as a `LabelSelector`.
    pub selector: &'a Value,
    /// Which pods it looks at at all (a ReplicaSet only at active ones, as upstream filters them
    /// before claiming); others are left as they are.
    pub considers: &'a dyn Fn(&Value) -> bool,
    /// What a pod must be, besides matching, to be its (a StatefulSet's: named for one of its
    /// ordinals).
    pub member: &'a dyn Fn(&Value) -> bool,
    /// A finalizer the owner puts on its pods, taken off one it lets go (a Job's tracking
    /// finalizer: the Job no longer counts the pod).
    pub finalizer: Option<&'a str>,
}

fn labels(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// What `owner` holds after claiming: its own that still match, and the orphans it adopted.
pub(crate) fn claim(api: &Api<'_>, owner: &Value, how: &Claim<'_>) -> Vec<Arc<Value>> {
    let deleting = is_deleting(owner);
    // A missing selector selects nothing, as `LabelSelectorAsSelector(nil)`.
    let matches =
        |p: &Value| !how.selector.is_null() && selector_matches(how.selector, &labels(p)) && (how.member)(p);
    let mut claimed = Vec::new();
    for pod in api.owned(how.child, owner) {
        if !(how.considers)(&pod) {
            continue;
        }
        if matches(&pod) {
            claimed.push(pod);
        } else if !deleting {
            release(api, how, owner, &pod);
        }
    }
    if deleting {
        return claimed;
    }
    let ns = meta_str(owner, "namespace");
    let orphans = api.orphans.names(how.child.storage, ns).filter_map(|name| api.get(how.child, ns, name));
    let mut rechecked = None;
    for pod in orphans {
        if controller_uid(&pod).is_some() || is_deleting(&pod) || !(how.considers)(&pod) || !matches(&pod) {
            continue;
        }
        // The owner read again before its first adoption: one deleted or replaced meanwhile
        // adopts nothing.
        let fresh = *rechecked.get_or_insert_with(|| {
            api.get(how.def, ns, meta_str(owner, "name"))
                .is_some_and(|o| meta_str(&o, "uid") == meta_str(owner, "uid") && !is_deleting(&o))
        });
        if !fresh {
            break;
        }
        if let Some(adopted) = adopt(api, how, owner, &pod) {
            claimed.push(adopted);
        }
    }
    claimed
}

/// Puts the owner's controller reference on an orphan; the object as written.
fn adopt(api: &Api<'_>, how: &Claim<'_>, owner: &Value, pod: &Value) -> Option<Arc<Value>> {
    let mut copy = pod.clone();
    let refs = meta_mut(&mut copy).entry("ownerReferences").or_insert_with(|| json!([]));
    if let Value::Array(refs) = refs {
        refs.retain(|r| r["uid"].as_str() != Some(meta_str(owner, "uid")));
        refs.push(controller_ref(how.def, owner));
    }
    match api.update(how.child, copy, "kube-controller-manager") {
        Ok(written) => Some(Arc::new(written)),
        Err(e) => {
            log_failure(how.def.kind, meta_str(pod, "name"), &e);
            None
        }
    }
}

/// Takes the owner's reference (and its finalizer) off a pod that no longer matches.
fn release(api: &Api<'_>, how: &Claim<'_>, owner: &Value, pod: &Value) {
    let mut copy = pod.clone();
    let meta = meta_mut(&mut copy);
    if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
        refs.retain(|r| r["uid"].as_str() != Some(meta_str(owner, "uid")));
    }
    if let (Some(Value::Array(finalizers)), Some(mine)) = (meta.get_mut("finalizers"), how.finalizer) {
        finalizers.retain(|f| f != mine);
    }
    if let Err(e) = api.update(how.child, copy, "kube-controller-manager") {
        log_failure(how.def.kind, meta_str(pod, "name"), &e);
    }
}
