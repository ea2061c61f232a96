//! Deletion: finalizers, preconditions, propagation (background, foreground, orphan), the
//! dependents a delete cascades to, and the namespace's finalize. What acts later — the garbage
//! collector's dangling dependents, the namespace controller, the PVC/PV protection controllers —
//! is in [`crate::cluster`]'s controllers, which write through these verbs.

use std::sync::Arc;

use serde_json::{Value, json};

use super::storage::{ChangeType, Key, State, key_of};
use super::{DeleteOptions, ListQuery, Propagation, Store};
use crate::admission::WebhookCalls;
use crate::object_meta::{finalizers, is_deleting, meta_mut, meta_str, now_rfc3339, owner_uids};
use crate::resource::{Deletion, GcPolicy, ResourceDef};
use crate::status::ApiError;

/// The entries of an object's `metadata.ownerReferences`.
fn owner_refs(obj: &Value) -> impl Iterator<Item = &Value> {
    obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).into_iter().flatten()
}

fn ref_str<'a>(r: &'a Value, field: &str) -> &'a str {
    r.get(field).and_then(Value::as_str).unwrap_or("")
}

/// An owner as the garbage collector sees it from a dependent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OwnerState {
    /// No object has the reference's uid and name.
    Missing,
    /// Being deleted in the foreground: it waits for its dependents to go.
    WaitingForDependents,
    /// There, and staying for its dependents.
    Solid,
}

impl State {
    /// Removes an object for good, then lets its dependents, its foreground-deleting owners and
    /// its terminating namespace react.
    pub(super) fn remove(&mut self, key: &Key) {
        let Some(old) = self.object(key) else { return };
        let obj = self.commit(key.clone(), ChangeType::Deleted, (*old).clone(), Some(Arc::clone(&old)));
        let uid = meta_str(&obj, "uid").to_owned();
        if self.config.garbage_collection {
            self.collect_dependents(&uid);
        }
        // An owner waiting in foreground deletion may now be free to go.
        for owner in owner_uids(&obj) {
            if let Some(owner_key) = self.uids.get(&owner).cloned() {
                self.finish_foreground(&owner_key);
            }
        }
        // The last instance of a terminating CRD lets the CRD go.
        if self.crd_terminating(key.0) {
            self.finish_crd(key.0);
        }
    }

    /// The dependents of an owner gone for good (background cascading).
    pub(super) fn collect_dependents(&mut self, owner_uid: &str) {
        let Some(deps) = self.dependents.get(owner_uid).cloned() else { return };
        for dep in deps {
            self.collect_dependent(&dep, Propagation::Background, owner_uid);
        }
    }

    /// The garbage collector's attempt on a dependent of `going`, an owner that is gone or going
    /// (`attemptToDeleteItem`): a dependent with an owner that stays is kept, losing its
    /// references to the owners that are gone or waiting for their dependents; one without is
    /// deleted with `propagation`.
    fn collect_dependent(&mut self, dep: &Key, propagation: Propagation, going: &str) {
        let Some(obj) = self.object(dep) else { return };
        let owners: Vec<(&str, OwnerState)> = owner_refs(&obj)
            .map(|r| {
                let uid = ref_str(r, "uid");
                // The owner the cascade is for is not looked up again (nor read, once per
                // dependent).
                let state = if uid == going { OwnerState::Missing } else { self.owner_state(&dep.1, r) };
                (uid, state)
            })
            .collect();
        if !owners.iter().any(|(_, state)| *state == OwnerState::Solid) {
            self.delete_key(dep, propagation);
            return;
        }
        let going: Vec<&str> =
            owners.iter().filter(|(_, state)| *state != OwnerState::Solid).map(|(uid, _)| *uid).collect();
        if going.is_empty() {
            return;
        }
        let mut kept = (*obj).clone();
        if let Some(refs) = kept.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
            refs.retain(|r| !going.contains(&ref_str(r, "uid")));
        }
        self.commit(dep.clone(), ChangeType::Modified, kept, Some(Arc::clone(&obj)));
    }

    /// Where the owner an owner reference names stands, as the garbage collector classifies it.
    fn owner_state(&self, dependent_ns: &str, r: &Value) -> OwnerState {
        if !self.owner_exists(dependent_ns, r) {
            return OwnerState::Missing;
        }
        let owner = self.uids.get(ref_str(r, "uid")).and_then(|k| self.object(k));
        let waiting = owner
            .is_some_and(|o| is_deleting(&o) && finalizers(&o).iter().any(|f| f == "foregroundDeletion"));
        if waiting { OwnerState::WaitingForDependents } else { OwnerState::Solid }
    }

    /// Whether the owner an owner reference names exists, as the garbage collector checks it
    /// (`garbagecollector.go`, `isDangling`): the object of that name (in the dependent's
    /// namespace, unless the owner is cluster-scoped) has the reference's uid.
    pub(super) fn owner_exists(&self, dependent_ns: &str, r: &Value) -> bool {
        let (uid, name) = (ref_str(r, "uid"), ref_str(r, "name"));
        self.uids.get(uid).is_some_and(|k| k.2 == name && (k.1.is_empty() || k.1 == dependent_ns))
    }

    /// The delete verb's effect on one object.
    pub(super) fn delete_key(&mut self, key: &Key, propagation: Propagation) -> Option<Arc<Value>> {
        let old = self.object(key)?;
        if key.0 == super::crd::CRD_STORAGE && !is_deleting(&old) {
            // A CRD always goes through its finalizer: its instances first.
            let marked = self.mark_crd_deleted(key, &old);
            return Some(self.object(key).unwrap_or(marked));
        }
        let uid = meta_str(&old, "uid").to_owned();
        let has_dependents = self.dependents.get(&uid).is_some_and(|d| !d.is_empty());
        if propagation == Propagation::Orphan && has_dependents {
            for dep in self.dependents.get(&uid).cloned().unwrap_or_default() {
                let Some(d) = self.object(&dep) else { continue };
                let mut d2 = (*d).clone();
                if let Some(refs) = d2.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(&uid));
                }
                self.commit(dep, ChangeType::Modified, d2, Some(d));
            }
        }
        let foreground = propagation == Propagation::Foreground && has_dependents;
        if finalizers(&old).is_empty() && !foreground {
            self.remove(key);
            return self.object(key).or(Some(old));
        }
        // Finalizers (or dependents to delete first): mark it and let the holders finish.
        let mut marked = (*old).clone();
        mark_deleting(&mut marked);
        let meta = meta_mut(&mut marked);
        if foreground {
            let mut f = finalizers(&old);
            if !f.iter().any(|x| x == "foregroundDeletion") {
                f.push("foregroundDeletion".into());
            }
            meta.insert("finalizers".into(), json!(f));
        }
        let marked = self.commit(key.clone(), ChangeType::Modified, marked, Some(old));
        if foreground {
            for dep in self.dependents.get(&uid).cloned().unwrap_or_default() {
                self.collect_dependent(&dep, Propagation::Foreground, &uid);
            }
            self.finish_foreground(key);
        }
        Some(self.object(key).unwrap_or(marked))
    }

    /// A pod's graceful deletion (the pod strategy's `CheckGracefulDelete`, then
    /// `rest.BeforeDelete`): a pod bound to a node and not finished is given its grace period
    /// (the request's, else its `terminationGracePeriodSeconds`) — marked with
    /// `deletionTimestamp` (now plus the period) and `deletionGracePeriodSeconds`, left for its
    /// kubelet to stop and then remove. A second delete may only shorten the period. `None` when
    /// the object goes (or is finalized) now.
    pub(super) fn delete_gracefully(
        &mut self,
        def: &ResourceDef,
        key: &Key,
        old: &Arc<Value>,
        requested: Option<i64>,
    ) -> Option<Arc<Value>> {
        if def.deletion() != Deletion::Graceful {
            return None;
        }
        let spec_period = old.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64);
        let unbound = old.pointer("/spec/nodeName").and_then(Value::as_str).is_none_or(str::is_empty);
        let finished =
            matches!(old.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"));
        // A negative period is read as one second, as the API server does.
        let period = if unbound || finished { 0 } else { requested.or(spec_period).unwrap_or(30).max(0) };
        let current = old.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
        if period == 0 {
            // Upstream's store writes the marks (`deletionTimestamp`, a grace period of 0) before
            // it removes the pod: a watch sees that update, then the deletion of the marked pod.
            if current != Some(0) {
                let mut marked = (**old).clone();
                if is_deleting(old) {
                    // Shortened to nothing: the deadline moves back by the period it had.
                    let deadline = old.pointer("/metadata/deletionTimestamp").and_then(Value::as_str);
                    let since = deadline.and_then(|t| t.parse::<jiff::Timestamp>().ok()).and_then(|t| {
                        t.checked_sub(jiff::SignedDuration::from_secs(current.unwrap_or(0))).ok()
                    });
                    let meta = meta_mut(&mut marked);
                    if let Some(t) = since {
                        meta.insert("deletionTimestamp".into(), json!(crate::object_meta::rfc3339(t)));
                    }
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                } else {
                    mark_deleting(&mut marked);
                }
                self.commit(key.clone(), ChangeType::Modified, marked, Some(Arc::clone(old)));
            }
            return None;
        }
        if is_deleting(old) && current.is_some_and(|c| period >= c) {
            return Some(Arc::clone(old));
        }
        let mut marked = (**old).clone();
        let until = crate::object_meta::rfc3339(
            jiff::Timestamp::now()
                .checked_add(jiff::SignedDuration::from_secs(period))
                .unwrap_or(jiff::Timestamp::MAX),
        );
        let meta = meta_mut(&mut marked);
        meta.insert("deletionTimestamp".into(), json!(until));
        meta.insert("deletionGracePeriodSeconds".into(), json!(period));
        if !is_deleting(old) {
            bump_generation(meta);
        }
        Some(self.commit(key.clone(), ChangeType::Modified, marked, Some(Arc::clone(old))))
    }

    /// Drops the `foregroundDeletion` finalizer once no dependents remain.
    pub(super) fn finish_foreground(&mut self, key: &Key) {
        let Some(obj) = self.object(key) else { return };
        let f = finalizers(&obj);
        if !is_deleting(&obj) || !f.iter().any(|x| x == "foregroundDeletion") {
            return;
        }
        if self.dependents.get(meta_str(&obj, "uid")).is_some_and(|d| !d.is_empty()) {
            return;
        }
        let rest: Vec<String> = f.into_iter().filter(|x| x != "foregroundDeletion").collect();
        if rest.is_empty() {
            self.remove(key);
        } else {
            let mut o = (*obj).clone();
            meta_mut(&mut o).insert("finalizers".into(), json!(rest));
            self.commit(key.clone(), ChangeType::Modified, o, Some(obj));
        }
    }
}

impl Store {
    /// DELETE: finalizers, preconditions and propagation. Returns the object as upstream's
    /// store answers it — as last stored, or marked with the finalizer that orphans its
    /// dependents or deletes them first — and whether it is answered as still there (finalizers,
    /// a Terminating namespace, that marking).
    ///
    /// # Errors
    ///
    /// 404 when it does not exist; 409 when a precondition fails.
    pub(crate) fn delete(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<(Value, bool), ApiError> {
        let key = key_of(def, ns, name);
        let (mut st, old, converted) = loop {
            let st = self.lock();
            let old = st.get(def, ns, name)?;
            check_preconditions(def, name, &old, opts)?;
            let calls = st.delete_webhooks(def, ns, &old);
            if calls.is_none() && def.conversion_webhook().is_none() {
                break (st, old, None);
            }
            // Webhooks judge the delete, and a conversion webhook converts the object, with the
            // lock let go; what they judged is what is deleted, else they judge it again.
            drop(st);
            let old_view = judged(def, &old, calls)?;
            let st = self.lock();
            let now = st.get(def, ns, name)?;
            if meta_str(&now, "resourceVersion") == meta_str(&old, "resourceVersion") {
                break (st, now, Some(old_view));
            }
        };
        // Admission's validating phase (`deleteValidation`), after the preconditions.
        st.admit_delete(def, ns, &*viewed(def, &old, converted.as_ref())?)?;
        // The answer is presented with the lock let go (a conversion webhook may be called).
        if def.deletion() == Deletion::Terminating {
            let marked = self.delete_namespace(&mut st, &key, &old);
            let lingers = st.objects.contains_key(&key);
            drop(st);
            return Ok((def.present(&marked)?, lingers));
        }
        let propagation = propagation_of(def, opts.propagation, &old);
        if let Some(marked) = st.delete_gracefully(def, &key, &old, opts.grace_period) {
            drop(st);
            return Ok((def.present(&marked)?, true));
        }
        let result = st.delete_key(&key, propagation).unwrap_or(old);
        // A CRD is answered as upstream's storage answers it, marked with its finalizer, even
        // when its finalizer ran at once.
        let lingers = st.objects.contains_key(&key) || def.deletion() == Deletion::Finalized;
        drop(st);
        let mut answer = def.present(&result)?;
        // Orphaning and foreground deletion are, upstream, a finalizer the store adds by an
        // update and the garbage collector removes later: the answer is the object so marked,
        // also where the sandbox has already finished (or the object stays for other finalizers).
        let finalizer = match propagation {
            Propagation::Orphan => Some("orphan"),
            Propagation::Foreground => Some("foregroundDeletion"),
            Propagation::Background => None,
        };
        if let Some(f) = finalizer {
            mark_deleting(&mut answer);
            let mut list = finalizers(&answer);
            list.retain(|x| x != "orphan" && x != "foregroundDeletion");
            list.push(f.to_owned());
            meta_mut(&mut answer).insert("finalizers".into(), json!(list));
            return Ok((answer, true));
        }
        Ok((answer, lingers))
    }

    pub(super) fn delete_namespace(&self, st: &mut State, key: &Key, old: &Arc<Value>) -> Arc<Value> {
        let mut marked = (**old).clone();
        if !is_deleting(old) {
            meta_mut(&mut marked).insert("deletionTimestamp".into(), json!(now_rfc3339()));
            marked["status"] = json!({ "phase": "Terminating" });
        }
        // As upstream, the namespace only turns Terminating here; the namespace controller
        // deletes its contents a moment later and then finalizes it
        // ([`finalize_namespace`](Self::finalize_namespace)), so a client deleting the namespace
        // and then its objects finds them still there.
        if is_deleting(old) {
            Arc::clone(old)
        } else {
            st.commit(key.clone(), ChangeType::Modified, marked, Some(Arc::clone(old)))
        }
    }

    /// The namespace's `finalize`, as the namespace controller calls it once it has deleted
    /// the contents of a Terminating namespace: the namespace goes if it holds nothing (the
    /// sandbox keeps no step between an emptied `spec.finalizers` and the removal). Returns
    /// whether the namespace is gone (or was never there).
    pub(crate) fn finalize_namespace(&self, name: &str) -> bool {
        let mut st = self.lock();
        let Some(obj) = st.namespace_state(name) else { return true };
        if !is_deleting(&obj) || st.namespace_objects(name).next().is_some() {
            return false;
        }
        st.remove(&("namespaces.", String::new(), name.to_owned()));
        true
    }

    /// Whether the owner an owner reference names exists, for a dependent in `dependent_ns` (the
    /// garbage collector's look-up of an owner, by its uid).
    #[must_use]
    pub(crate) fn owner_exists(&self, dependent_ns: &str, owner_ref: &Value) -> bool {
        self.lock().owner_exists(dependent_ns, owner_ref)
    }

    /// Whether the store collects dependents ([`StoreConfig::garbage_collection`](super::StoreConfig)).
    #[must_use]
    pub(crate) fn collects_garbage(&self) -> bool {
        self.lock().config.garbage_collection
    }

    /// DELETECOLLECTION: deletes every object a list with the same selectors would return.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    pub(crate) fn delete_collection(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        q: &ListQuery,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let items = st.list_items(def, ns, q);
        let mut deleted = Vec::new();
        for mut o in items {
            let ns = meta_str(&o, "namespace").to_owned();
            let ns = ns.as_str();
            // Each item is admitted as a delete of its own (webhooks with the lock let go); the
            // first refusal stops the collection there, as upstream's `DeleteCollection` stops at
            // its first error.
            let calls = st.delete_webhooks(def, ns, &o);
            let mut converted = None;
            if calls.is_some() || def.conversion_webhook().is_some() {
                drop(st);
                converted = Some(judged(def, &o, calls)?);
                st = self.lock();
                match st.get(def, ns, meta_str(&o, "name")) {
                    Ok(now) => o = now,
                    Err(_) => continue,
                }
            }
            st.admit_delete(def, ns, &*viewed(def, &o, converted.as_ref())?)?;
            let key = key_of(def, ns, meta_str(&o, "name"));
            if let Some(d) = st.delete_gracefully(def, &key, &o, opts.grace_period) {
                deleted.push((*d).clone());
            } else if let Some(d) = st.delete_key(&key, propagation_of(def, opts.propagation, &o)) {
                deleted.push((*d).clone());
            }
        }
        let rv = st.rv.to_string();
        drop(st);
        let items = def.present_all(deleted)?;
        Ok(
            json!({ "kind": format!("{}List", def.kind), "apiVersion": def.api_version(), "metadata": { "resourceVersion": rv }, "items": items }),
        )
    }
}

/// How a delete treats an object's dependents, as upstream's `shouldOrphanDependents` and
/// `shouldDeleteDependents` decide it: not at all for a kind that supports neither; else the
/// request's policy; else the `orphan` or `foregroundDeletion` finalizer the object already
/// carries; else its kind's [`GcPolicy`].
fn propagation_of(def: &ResourceDef, requested: Option<Propagation>, obj: &Value) -> Propagation {
    let default = match def.gc_policy() {
        GcPolicy::Unsupported => return Propagation::Background,
        GcPolicy::OrphanDependents => Propagation::Orphan,
        GcPolicy::DeleteDependents => Propagation::Background,
    };
    if let Some(p) = requested {
        return p;
    }
    for f in finalizers(obj) {
        match f.as_str() {
            "orphan" => return Propagation::Orphan,
            "foregroundDeletion" => return Propagation::Foreground,
            _ => {}
        }
    }
    default
}

/// Marks an object as being deleted, as upstream's `markAsDeleting` does when the store updates it
/// rather than removing it: `deletionTimestamp` now (unless it is already set), a grace period of
/// 0, and `generation` bumped the first time.
fn mark_deleting(obj: &mut Value) {
    let deleting = is_deleting(obj);
    let meta = meta_mut(obj);
    if !deleting {
        bump_generation(meta);
        meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
    }
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
}

/// A first mark of deletion changes what the object's controllers must do: a `generation` it
/// keeps (above 0) goes up by one.
fn bump_generation(meta: &mut serde_json::Map<String, Value>) {
    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
        meta.insert("generation".into(), json!(g + 1));
    }
}

/// The stored object `old` in the request's version, judged by the validating webhooks of
/// `calls`: what a delete does with the lock let go (a conversion webhook may convert it).
fn judged(def: &ResourceDef, old: &Value, calls: Option<WebhookCalls>) -> Result<Value, ApiError> {
    let old_view = def.view(old)?.into_owned();
    if let Some(calls) = calls {
        calls.validate(None, Some(&old_view))?;
    }
    Ok(old_view)
}

/// The stored object `old` in the request's version: `converted` when it was converted with the
/// lock let go (by a conversion webhook), else converted now.
fn viewed<'a>(
    def: &ResourceDef,
    old: &'a Value,
    converted: Option<&'a Value>,
) -> Result<std::borrow::Cow<'a, Value>, ApiError> {
    match converted {
        Some(v) => Ok(std::borrow::Cow::Borrowed(v)),
        None => def.view(old),
    }
}

/// `rest.BeforeDelete`'s preconditions (uid, then resourceVersion), the object named by its kind.
fn check_preconditions(
    def: &ResourceDef,
    name: &str,
    old: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    if let Some(uid) = opts.uid.as_deref().filter(|u| *u != meta_str(old, "uid")) {
        return Err(ApiError::conflict(
            def.internal_group(),
            def.kind,
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta_str(old, "uid")
            ),
        ));
    }
    if let Some(rv) = opts.resource_version.as_deref().filter(|rv| *rv != meta_str(old, "resourceVersion")) {
        return Err(ApiError::conflict(
            def.internal_group(),
            def.kind,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta_str(old, "resourceVersion")
            ),
        ));
    }
    Ok(())
}
