//! The simulated components' door to the API: reads from the store as an informer's cache
//! would (shared, no copies), writes through the store's verbs as a client would — validated,
//! with the object's `resourceVersion` as precondition and the component named as field manager —
//! and Events as `client-go`'s recorder writes them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::catalog;
use crate::clock::Clock;
use crate::object_meta::{meta_str, new_uid};
use crate::resource::{ResourceDef, Subresource};
use crate::status::ApiError;
use crate::store::{DeleteOptions, Propagation, Store};

/// The resources the simulation reads and writes.
#[derive(Clone, Copy)]
pub(crate) struct Defs {
    pub pods: &'static ResourceDef,
    pub nodes: &'static ResourceDef,
    pub leases: &'static ResourceDef,
    pub events: &'static ResourceDef,
    pub namespaces: &'static ResourceDef,
    pub replicasets: &'static ResourceDef,
    pub controllers: &'static ResourceDef,
    pub deployments: &'static ResourceDef,
    pub daemonsets: &'static ResourceDef,
    pub statefulsets: &'static ResourceDef,
    pub cronjobs: &'static ResourceDef,
    pub claims: &'static ResourceDef,
    pub volumes: &'static ResourceDef,
    pub quotas: &'static ResourceDef,
    pub budgets: &'static ResourceDef,
    pub jobs: &'static ResourceDef,
    pub services: &'static ResourceDef,
    pub endpoints: &'static ResourceDef,
    pub slices: &'static ResourceDef,
    pub service_accounts: &'static ResourceDef,
    pub config_maps: &'static ResourceDef,
    pub autoscalers: &'static ResourceDef,
}

impl Defs {
    pub(crate) fn get() -> Self {
        let find = |g: &str, v: &str, p: &str| catalog::find(g, v, p).expect("a built-in resource");
        Self {
            pods: find("", "v1", "pods"),
            nodes: find("", "v1", "nodes"),
            leases: find("coordination.k8s.io", "v1", "leases"),
            events: find("", "v1", "events"),
            namespaces: find("", "v1", "namespaces"),
            replicasets: find("apps", "v1", "replicasets"),
            controllers: find("", "v1", "replicationcontrollers"),
            deployments: find("apps", "v1", "deployments"),
            daemonsets: find("apps", "v1", "daemonsets"),
            statefulsets: find("apps", "v1", "statefulsets"),
            cronjobs: find("batch", "v1", "cronjobs"),
            claims: find("", "v1", "persistentvolumeclaims"),
            volumes: find("", "v1", "persistentvolumes"),
            quotas: find("", "v1", "resourcequotas"),
            budgets: find("policy", "v1", "poddisruptionbudgets"),
            jobs: find("batch", "v1", "jobs"),
            services: find("", "v1", "services"),
            endpoints: find("", "v1", "endpoints"),
            slices: find("discovery.k8s.io", "v1", "endpointslices"),
            service_accounts: find("", "v1", "serviceaccounts"),
            config_maps: find("", "v1", "configmaps"),
            autoscalers: find("autoscaling", "v2", "horizontalpodautoscalers"),
        }
    }
}

/// The objects no controller owns (pods, ReplicaSets), by their storage and namespace.
#[derive(Debug, Default)]
pub(crate) struct Orphans(BTreeMap<&'static str, BTreeMap<String, BTreeSet<String>>>);

/// No orphans: for a part that never adopts.
pub(crate) static NO_ORPHANS: Orphans = Orphans(BTreeMap::new());

impl Orphans {
    /// Records whether the object `ns/name` of `storage` is an orphan now (`false` also when it
    /// is gone); `true` when it has just become one.
    pub fn observe(&mut self, storage: &'static str, ns: &str, name: &str, orphan: bool) -> bool {
        if orphan {
            return self
                .0
                .entry(storage)
                .or_default()
                .entry(ns.to_owned())
                .or_default()
                .insert(name.to_owned());
        }
        if let Some(names) = self.0.get_mut(storage).and_then(|by_ns| by_ns.get_mut(ns)) {
            names.remove(name);
        }
        false
    }

    /// The orphans of `storage` in `ns`.
    pub fn names(&self, storage: &'static str, ns: &str) -> impl Iterator<Item = &str> {
        self.0.get(storage).and_then(|by_ns| by_ns.get(ns)).into_iter().flatten().map(String::as_str)
    }
}

/// A simulated component's client.
pub(crate) struct Api<'a> {
    pub store: &'a Store,
    pub clock: &'a Clock,
    pub defs: &'a Defs,
    /// The pods and ReplicaSets without a controller (an informer's index).
    pub orphans: &'a Orphans,
}

impl Api<'_> {
    /// One object from the cache.
    pub fn get(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.store.stored(def, ns, name)
    }

    /// Every object of `def` (in `ns`, or everywhere).
    pub fn list(&self, def: &ResourceDef, ns: Option<&str>) -> Vec<Arc<Value>> {
        self.store.snapshot(def, ns).1
    }

    /// The objects of `def` that `owner` controls (its controller reference names it).
    pub fn owned(&self, def: &ResourceDef, owner: &Value) -> Vec<Arc<Value>> {
        let uid = meta_str(owner, "uid");
        let mut out = self.store.dependents(def, uid);
        out.retain(|o| controller_uid(o) == Some(uid));
        out
    }

    /// CREATE as `manager`.
    pub fn create(&self, def: &ResourceDef, ns: &str, obj: Value, manager: &str) -> Result<Value, ApiError> {
        self.store.create(def, ns, obj, Some(manager))
    }

    /// PUT of the object itself, `obj` carrying the resourceVersion it was read at.
    pub fn update(&self, def: &ResourceDef, obj: Value, manager: &str) -> Result<Value, ApiError> {
        let (ns, name) = (meta_str(&obj, "namespace").to_owned(), meta_str(&obj, "name").to_owned());
        self.store.update(def, &ns, &name, obj, Subresource::Main, Some(manager))
    }

    /// PUT of `/status`: `status` replaces the status of `current`, conditional on its
    /// resourceVersion. Nothing is written when it is already so.
    pub fn write_status(
        &self,
        def: &ResourceDef,
        current: &Value,
        status: Value,
        manager: &str,
    ) -> Result<(), ApiError> {
        if current.get("status") == Some(&status) {
            return Ok(());
        }
        let mut obj = current.clone();
        obj["status"] = status;
        self.update_status(def, obj, manager)
    }

    /// PUT of `/status` with the whole object (a status write may also set annotations, as the
    /// Deployment controller sets the revision with the status).
    pub fn update_status(&self, def: &ResourceDef, obj: Value, manager: &str) -> Result<(), ApiError> {
        let (ns, name) = (meta_str(&obj, "namespace").to_owned(), meta_str(&obj, "name").to_owned());
        self.store.update_status_unanswered(def, &ns, &name, obj, Some(manager))
    }

    /// DELETE conditional on the uid (the object read is the object deleted), with a grace
    /// period for pods.
    pub fn delete(&self, def: &ResourceDef, obj: &Value, grace: Option<i64>) -> Result<(), ApiError> {
        let opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            uid: Some(meta_str(obj, "uid").to_owned()),
            resource_version: None,
            grace_period: grace,
        };
        self.store.delete(def, meta_str(obj, "namespace"), meta_str(obj, "name"), &opts).map(drop)
    }

    /// Records a core/v1 Event about `about` (of `def`), as `component` would.
    pub fn event(
        &self,
        def: &ResourceDef,
        about: &Value,
        warning: bool,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        let event = self.event_of(def, about, warning, reason, message, component);
        self.store_event(event, component);
    }

    /// Records an Event about container `container` of `pod`, as its node's kubelet does; the
    /// stored Event's name.
    pub fn container_event(
        &self,
        pod: &Value,
        container: &str,
        warning: bool,
        reason: &str,
        message: &str,
    ) -> Option<String> {
        self.kubelet_event(pod, Some(container), warning, reason, message)
    }

    /// Records an Event about `pod` (one of its containers, or the pod as a whole), as its
    /// node's kubelet does; the stored Event's name.
    pub fn kubelet_event(
        &self,
        pod: &Value,
        container: Option<&str>,
        warning: bool,
        reason: &str,
        message: &str,
    ) -> Option<String> {
        let mut event = self.event_of(self.defs.pods, pod, warning, reason, message, "kubelet");
        let node = pod.pointer("/spec/nodeName").cloned().unwrap_or_default();
        if let Some(container) = container {
            event["involvedObject"]["fieldPath"] = json!(format!("spec.containers{{{container}}}"));
        }
        event["source"]["host"] = node.clone();
        event["reportingInstance"] = node;
        self.store_event(event, "kubelet")
    }

    /// Counts one more occurrence of Event `ns/name`, as the event recorder does for the same
    /// event again (its `count` and `lastTimestamp`); whether it could.
    pub fn event_again(&self, ns: &str, name: &str) -> bool {
        let Some(event) = self.get(self.defs.events, ns, name) else { return false };
        let mut event = (*event).clone();
        event["count"] = json!(event["count"].as_i64().unwrap_or(1) + 1);
        event["lastTimestamp"] = json!(self.clock.rfc3339());
        let component = event.pointer("/source/component").and_then(Value::as_str).unwrap_or("").to_owned();
        self.update(self.defs.events, event, &component).is_ok()
    }

    fn event_of(
        &self,
        def: &ResourceDef,
        about: &Value,
        warning: bool,
        reason: &str,
        message: &str,
        component: &str,
    ) -> Value {
        let ns = meta_str(about, "namespace");
        let ns = if ns.is_empty() { "default" } else { ns };
        let now = self.clock.rfc3339();
        let suffix: String = new_uid().chars().filter(char::is_ascii_hexdigit).take(16).collect();
        json!({
            "metadata": { "name": format!("{}.{suffix}", meta_str(about, "name")), "namespace": ns },
            "involvedObject": {
                "kind": def.kind, "apiVersion": def.api_version(), "namespace": meta_str(about, "namespace"),
                "name": meta_str(about, "name"), "uid": meta_str(about, "uid"),
                "resourceVersion": meta_str(about, "resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "source": { "component": component },
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": if warning { "Warning" } else { "Normal" },
            "reportingComponent": component,
            "reportingInstance": "",
        })
    }

    /// Stores an Event; its name, or `None` when it could not be written — then it is dropped,
    /// as the recorder drops it.
    fn store_event(&self, event: Value, component: &str) -> Option<String> {
        let ns = meta_str(&event, "namespace").to_owned();
        let name = meta_str(&event, "name").to_owned();
        self.store.create_stored(self.defs.events, &ns, event, Some(component)).ok().map(|_| name)
    }
}

/// Syncs each queued object of `def` that exists and is not being deleted with `sync_one`; a
/// failure is logged as `who`'s (the object's next change, or its timer, brings it back).
pub(crate) fn sync_each(
    api: &Api<'_>,
    def: &ResourceDef,
    queue: &super::Queue,
    who: super::Controller,
    mut sync_one: impl FnMut(&Value) -> Result<(), ApiError>,
) {
    for (ns, name) in queue {
        let Some(obj) = api.get(def, ns, name) else { continue };
        if crate::object_meta::is_deleting(&obj) {
            continue;
        }
        if let Err(e) = sync_one(&obj) {
            super::log_failure(who, name, &e);
        }
    }
}

/// The uid of the object's controller (its `ownerReferences` entry with `controller: true`).
pub(crate) fn controller_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?
        .get("uid")?
        .as_str()
}

/// The controller reference an object of `def` puts on what it makes.
pub(crate) fn controller_ref(def: &ResourceDef, owner: &Value) -> Value {
    json!({
        "apiVersion": def.api_version(), "kind": def.kind, "name": meta_str(owner, "name"),
        "uid": meta_str(owner, "uid"), "controller": true, "blockOwnerDeletion": true,
    })
}

/// A condition as the workload controllers write them, keeping the transition time when the
/// status does not change.
pub(crate) fn set_condition(
    conditions: &mut Vec<Value>,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &str,
    with_update_time: bool,
) {
    let status = if status { "True" } else { "False" };
    let old = conditions.iter().position(|c| c["type"] == kind);
    let since = old
        .map(|i| &conditions[i])
        .filter(|c| c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut cond = json!({ "type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message });
    if with_update_time {
        cond["lastUpdateTime"] = json!(now);
        if let Some(prev) = old.map(|i| &conditions[i])
            && prev["status"] == status
            && prev["reason"] == reason
            && prev["message"] == message
        {
            cond["lastUpdateTime"] = prev["lastUpdateTime"].clone();
        }
    }
    match old {
        Some(i) => conditions[i] = cond,
        None => conditions.push(cond),
    }
}

/// Whether the pod is active: not finished and not being deleted (`controller.IsPodActive`).
pub(crate) fn pod_active(pod: &Value) -> bool {
    !crate::object_meta::is_deleting(pod) && !matches!(phase(pod), "Succeeded" | "Failed")
}

/// `status.phase`, or `""`.
pub(crate) fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("")
}

/// Whether the pod's `Ready` condition is true.
pub(crate) fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// Whether the pod has been ready for `min_ready` seconds at `now` (`IsPodAvailable`).
pub(crate) fn pod_available(pod: &Value, min_ready: i64, now: jiff::Timestamp) -> bool {
    if !pod_ready(pod) {
        return false;
    }
    if min_ready <= 0 {
        return true;
    }
    let since = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    since.is_some_and(|t| now.duration_since(t).as_secs() >= min_ready)
}
