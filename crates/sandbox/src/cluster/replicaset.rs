//! The ReplicaSet and ReplicationController controllers: as many active pods from the template
//! as `spec.replicas` asks, and a status counting them.
//!
//! Missing pods are created (at most 500 a round, upstream's burst), each named
//! `<owner>-<5 random>` and controlled by its owner; surplus pods are deleted in upstream's
//! order — unscheduled before scheduled, pending before running, not ready before ready, most
//! restarts first, newest first. The status counts the active pods, those fully labelled, ready
//! and available (ready for `minReadySeconds`); a create the API refuses (a quota, say) is a
//! `FailedCreate` Event and a `ReplicaFailure` condition.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::api::{Api, controller_ref, phase, pod_active, pod_available, pod_ready, set_condition};
use super::controller_ref::{Claim, claim};
use super::{Controller, Queue, Timers, log_failure};
use crate::object_meta::{is_deleting, meta_str};
use crate::resource::ResourceDef;

/// Most pods created for one owner in one round (upstream's `BurstReplicas`).
const BURST: usize = 500;

/// The owner's selector as a `LabelSelector` (a ReplicationController's is a plain map).
pub(crate) fn selector_of(def: &ResourceDef, owner: &Value) -> Value {
    let given = owner.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    if def.group.is_empty() { json!({ "matchLabels": given }) } else { given }
}

fn labels(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// A pod of the template, controlled by `owner` (of `def`), to be named by the API server.
pub(crate) fn pod_from_template(def: &ResourceDef, owner: &Value, template: &Value, prefix: &str) -> Value {
    let mut meta = json!({
        "generateName": format!("{prefix}-"),
        "namespace": meta_str(owner, "namespace"),
        "ownerReferences": [controller_ref(def, owner)],
    });
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(v) = template.pointer(&format!("/metadata/{field}")).filter(|v| !v.is_null()) {
            meta[field] = v.clone();
        }
    }
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})) })
}

/// The component name an owner kind's Events carry.
fn component(def: &ResourceDef) -> &'static str {
    if def.group.is_empty() { "replication-controller" } else { "replicaset-controller" }
}

/// Creates up to `count` pods for `owner`; the error message of the first refused create.
pub(crate) fn create_pods(
    api: &Api<'_>,
    def: &ResourceDef,
    owner: &Value,
    template: &Value,
    count: usize,
    source: &str,
) -> Option<String> {
    let name = meta_str(owner, "name");
    for _ in 0..count.min(BURST) {
        let pod = pod_from_template(def, owner, template, name);
        match api.create(api.defs.pods, meta_str(owner, "namespace"), pod, "kube-controller-manager") {
            Ok(created) => {
                let msg = format!("Created pod: {}", meta_str(&created, "name"));
                api.event(def, owner, false, "SuccessfulCreate", &msg, source);
            }
            Err(e) => {
                let msg = format!("Error creating: {}", e.message);
                api.event(def, owner, true, "FailedCreate", &msg, source);
                return Some(msg);
            }
        }
    }
    None
}

/// The pods to delete first (upstream's `ActivePods` ranking), `count` of them.
pub(crate) fn to_delete(mut pods: Vec<Arc<Value>>, count: usize) -> Vec<Arc<Value>> {
    let rank = |p: &Value| {
        let assigned = p.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let phase_rank = match phase(p) {
            "Pending" => 0,
            "Unknown" => 1,
            _ => 2,
        };
        let restarts: i64 = p
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c["restartCount"].as_i64())
            .sum();
        let created = meta_str(p, "creationTimestamp").to_owned();
        (assigned, phase_rank, pod_ready(p), std::cmp::Reverse(restarts), std::cmp::Reverse(created))
    };
    pods.sort_by_cached_key(|p| rank(p));
    pods.truncate(count);
    pods
}

/// Syncs each queued ReplicaSet (or ReplicationController, by `def`).
pub(crate) fn sync(api: &Api<'_>, def: &ResourceDef, queue: &Queue, timers: &mut Timers) {
    let now = api.clock.now();
    let who = if def.group.is_empty() { Controller::ReplicationController } else { Controller::ReplicaSet };
    for (ns, name) in queue {
        let Some(owner) = api.get(def, ns, name) else { continue };
        let selector = selector_of(def, &owner);
        let how = Claim {
            def,
            child: api.defs.pods,
            selector: &selector,
            considers: &|p| pod_active(p),
            member: &|_| true,
            finalizer: None,
        };
        let pods: Vec<Arc<Value>> = claim(api, &owner, &how);
        let want = usize::try_from(owner.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1))
            .unwrap_or(0);
        let template = owner.pointer("/spec/template").cloned().unwrap_or_default();
        let mut failure = None;
        if !is_deleting(&owner) {
            if pods.len() < want {
                failure = create_pods(api, def, &owner, &template, want - pods.len(), component(def));
            } else if pods.len() > want {
                for pod in to_delete(pods.clone(), pods.len() - want) {
                    match api.delete(api.defs.pods, &pod, None) {
                        Ok(()) => api.event(
                            def,
                            &owner,
                            false,
                            "SuccessfulDelete",
                            &format!("Deleted pod: {}", meta_str(&pod, "name")),
                            component(def),
                        ),
                        Err(e) => log_failure(who, meta_str(&pod, "name"), &e),
                    }
                }
            }
        }
        let min_ready = owner.pointer("/spec/minReadySeconds").and_then(Value::as_i64).unwrap_or(0);
        let template_labels =
            template.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
        let count =
            |f: &dyn Fn(&Value) -> bool| i64::try_from(pods.iter().filter(|p| f(p)).count()).unwrap_or(0);
        let ready = count(&|p| pod_ready(p));
        let available = count(&|p| pod_available(p, min_ready, now));
        if available < ready {
            timers.at(now.saturating_add(jiff::SignedDuration::from_secs(1)).unwrap_or(now), who, ns, name);
        }
        let mut status = json!({ "replicas": pods.len() });
        let fully = count(&|p| {
            let l = labels(p);
            template_labels.iter().all(|(k, v)| l.get(k) == Some(v))
        });
        for (field, n) in
            [("fullyLabeledReplicas", fully), ("readyReplicas", ready), ("availableReplicas", available)]
        {
            if n > 0 {
                status[field] = json!(n);
            }
        }
        if let Some(g) = owner.pointer("/metadata/generation") {
            status["observedGeneration"] = g.clone();
        }
        let mut conditions: Vec<Value> =
            owner.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        // Upstream's `calculateStatus`: the condition is put on by the first failure and kept
        // as it was (its message that failure's) while creates keep failing; a round that
        // fails nothing takes it off.
        let failing = conditions.iter().any(|c| c["type"] == "ReplicaFailure");
        match &failure {
            Some(msg) if !failing => set_condition(
                &mut conditions,
                "ReplicaFailure",
                true,
                "FailedCreate",
                msg,
                &api.clock.rfc3339(),
                false,
            ),
            Some(_) => {}
            None => conditions.retain(|c| c["type"] != "ReplicaFailure"),
        }
        // A refused create is tried again (upstream requeues the key rate-limited), a second of
        // the clock on.
        if failure.is_some() {
            timers.at(now.saturating_add(jiff::SignedDuration::from_secs(1)).unwrap_or(now), who, ns, name);
        }
        if !conditions.is_empty() {
            status["conditions"] = json!(conditions);
        }
        if let Err(e) = api.write_status(def, &owner, status, "kube-controller-manager") {
            log_failure(who, name, &e);
        }
    }
}
