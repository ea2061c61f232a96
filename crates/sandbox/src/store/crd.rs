//! The CustomResourceDefinition controllers, as upstream's apiextensions-apiserver runs them
//! (`pkg/controller/status/naming_controller.go`, `establish`, `finalizer/crd_finalizer.go`), played
//! at once inside the change that wakes them rather than a moment later:
//!
//! * **naming and establishing**: a created or changed CRD gets its `acceptedNames` and its
//!   `NamesAccepted` and `Established` conditions (names another CRD of the group holds are a
//!   conflict); once established, its served versions are in the [`Registry`](crate::registry::Registry);
//! * **finalizing**: a deleted CRD is marked with the cleanup finalizer and `Terminating`; every
//!   custom resource of it is deleted (those with finalizers of their own are waited for); then
//!   the finalizer goes, the CRD goes, and its paths are 404.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Propagation;
use super::storage::{ChangeType, Key, State};
use crate::kinds::crd;
use crate::object_meta::{finalizers, is_deleting, meta_mut};
use crate::registry::crd_resources;

/// The storage of CustomResourceDefinitions.
pub(crate) const CRD_STORAGE: &str = "customresourcedefinitions.apiextensions.k8s.io";

fn crd_key(name: &str) -> Key {
    (CRD_STORAGE, String::new(), name.to_owned())
}

/// What the controllers compare to decide whether the status changed: everything but the
/// conditions' transition times.
fn without_times(status: Option<&Value>) -> Value {
    let mut s = status.cloned().unwrap_or(Value::Null);
    if let Some(conds) = s.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conds.iter_mut().filter_map(Value::as_object_mut) {
            c.remove("lastTransitionTime");
        }
    }
    s
}

impl State {
    /// The controllers' reaction to a committed change of the CRD `name` (`gone` when the change
    /// removed it, with its last state).
    pub(super) fn crd_changed(&mut self, name: &str, gone: Option<&Value>) {
        let key = crd_key(name);
        let Some(current) = self.object(&key) else {
            self.registry.write().remove(name);
            // Names it held may now be free for a CRD of the same group that wanted them.
            let group = gone.and_then(|g| g.pointer("/spec/group")).and_then(Value::as_str).unwrap_or("");
            for other in self
                .crds()
                .into_iter()
                .filter(|c| c.pointer("/spec/group").and_then(Value::as_str) == Some(group))
            {
                let other_name = crate::object_meta::meta_str(&other, "name").to_owned();
                self.crd_changed(&other_name, None);
            }
            return;
        };
        if is_deleting(&current) {
            self.finalize_crd(name);
            return;
        }
        let others: Vec<Arc<Value>> =
            self.crds().into_iter().filter(|c| crate::object_meta::meta_str(c, "name") != name).collect();
        let others: Vec<&Value> = others.iter().map(AsRef::as_ref).collect();
        let status = crd::names_status(&current, &others);
        if without_times(current.get("status")) != without_times(Some(&status)) {
            let mut updated = (*current).clone();
            updated["status"] = status;
            // Committing wakes this again, with the status settled: then it registers.
            self.commit(key, ChangeType::Modified, updated, Some(current));
            return;
        }
        let defs = crd_resources(&current, &self.services);
        let mut registry = self.registry.write();
        if defs.is_empty() {
            registry.remove(name);
        } else {
            registry.define(name, defs);
        }
    }

    fn crds(&self) -> Vec<Arc<Value>> {
        self.objects
            .range(crd_key("")..)
            .take_while(|((s, _, _), _)| *s == CRD_STORAGE)
            .filter_map(|(k, _)| self.object(k))
            .collect()
    }

    /// The keys of every custom resource stored for the CRD `name`.
    fn instances(&self, name: &str) -> Vec<Key> {
        self.objects
            .range((name_storage(name), String::new(), String::new())..)
            .take_while(|((s, _, _), _)| *s == name)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Whether `storage` is that of a CRD being deleted.
    pub(super) fn crd_terminating(&self, storage: &str) -> bool {
        storage != CRD_STORAGE && self.object(&crd_key(storage)).is_some_and(|c| is_deleting(&c))
    }

    /// Marks a CRD for deletion as upstream's CRD storage does on the first delete: the
    /// deletion timestamp, the cleanup finalizer and the `Terminating` condition, in one write.
    pub(super) fn mark_crd_deleted(&mut self, key: &Key, old: &Arc<Value>) -> Arc<Value> {
        let mut marked = (**old).clone();
        crd::terminating(&mut marked);
        meta_mut(&mut marked).insert("deletionGracePeriodSeconds".into(), json!(0));
        self.commit(key.clone(), ChangeType::Modified, marked, Some(Arc::clone(old)))
    }

    /// The finalizing controller: deletes every instance, then lets the CRD go.
    fn finalize_crd(&mut self, name: &str) {
        let instances = self.instances(name);
        let key = crd_key(name);
        if let Some(current) = self.object(&key)
            && !instances.is_empty()
            && crd::find_condition(&current, crd::condition::TERMINATING)
                .and_then(|c| c.get("reason"))
                .is_some_and(|r| r != "InstanceDeletionInProgress")
        {
            let mut started = (*current).clone();
            crd::cleanup_started(&mut started);
            // Committing wakes this again, now in progress: then the instances go.
            self.commit(key, ChangeType::Modified, started, Some(current));
            return;
        }
        for k in instances {
            self.delete_key(&k, Propagation::Background);
        }
        self.finish_crd(name);
    }

    /// Once no instance of a terminating CRD remains: drops the cleanup finalizer, and the CRD
    /// with it when no other finalizer holds it.
    pub(super) fn finish_crd(&mut self, name: &str) {
        let key = crd_key(name);
        let Some(current) = self.object(&key) else { return };
        let held = finalizers(&current);
        if !is_deleting(&current)
            || !held.iter().any(|f| f == crd::CLEANUP_FINALIZER)
            || !self.instances(name).is_empty()
        {
            return;
        }
        let mut done = (*current).clone();
        crd::cleanup_finished(&mut done);
        let released = finalizers(&done).is_empty();
        self.commit(key.clone(), ChangeType::Modified, done, Some(current));
        if released {
            self.remove(&key);
        }
    }
}

/// The storage name of a CRD's instances (the CRD's own name).
fn name_storage(name: &str) -> &'static str {
    crate::registry::intern(name)
}
