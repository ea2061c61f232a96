//! The DaemonSet controller: one pod on every node the template's selector, affinity and
//! tolerations admit — pinned there by node affinity on `metadata.name`, as upstream pins it —
//! none elsewhere, rolled to a new template `maxUnavailable` nodes at a time (`OnDelete`:
//! replaced only when deleted), with its templates kept as ControllerRevisions.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::api::{Api, phase, pod_active, pod_available, pod_ready};
use super::controller_ref::{Claim, claim};
use super::replicaset::pod_from_template;
use super::scheduler::node_admits;
use super::{Controller, Queue, Timers, history, log_failure};
use crate::object_meta::{is_deleting, meta_str};

const SOURCE: &str = "daemonset-controller";

/// The tolerations every daemon pod gets (`AddOrUpdateDaemonPodTolerations`).
fn daemon_tolerations(template: &Value) -> Vec<Value> {
    let mut list: Vec<Value> =
        template.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut add = |key: &str, effect: &str| {
        if !list.iter().any(|t| t["key"] == key && t["effect"] == effect) {
            list.push(json!({ "key": key, "operator": "Exists", "effect": effect }));
        }
    };
    add("node.kubernetes.io/not-ready", "NoExecute");
    add("node.kubernetes.io/unreachable", "NoExecute");
    add("node.kubernetes.io/disk-pressure", "NoSchedule");
    add("node.kubernetes.io/memory-pressure", "NoSchedule");
    add("node.kubernetes.io/pid-pressure", "NoSchedule");
    add("node.kubernetes.io/unschedulable", "NoSchedule");
    if template.pointer("/spec/hostNetwork") == Some(&Value::Bool(true)) {
        add("node.kubernetes.io/network-unavailable", "NoSchedule");
    }
    list
}

/// The node a daemon pod is for: its node if bound, else the one its affinity names.
fn node_of(pod: &Value) -> String {
    if let Some(n) = pod.pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        return n.to_owned();
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Syncs each queued DaemonSet (a queue entry with no name: every DaemonSet, after a node change).
pub(crate) fn sync(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    let def = api.defs.daemonsets;
    let mut sets: BTreeMap<(String, String), Arc<Value>> = BTreeMap::new();
    for (ns, name) in queue {
        if name.is_empty() {
            for ds in api.list(def, None) {
                sets.insert((meta_str(&ds, "namespace").to_owned(), meta_str(&ds, "name").to_owned()), ds);
            }
        } else if let Some(ds) = api.get(def, ns, name) {
            sets.insert((ns.clone(), name.clone()), ds);
        }
    }
    let nodes = api.list(api.defs.nodes, None);
    for ((_, name), ds) in sets {
        if is_deleting(&ds) {
            continue;
        }
        if let Err(e) = sync_one(api, &ds, &nodes, timers) {
            log_failure(Controller::DaemonSet, &name, &e);
        }
    }
}

fn sync_one(
    api: &Api<'_>,
    ds: &Value,
    nodes: &[Arc<Value>],
    timers: &mut Timers,
) -> Result<(), crate::ApiError> {
    let def = api.defs.daemonsets;
    let now = api.clock.now();
    let keep =
        usize::try_from(ds.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64).unwrap_or(10))
            .unwrap_or(10);
    let (_, hash, _) = history::current(api, def, ds, keep)?;
    let mut template = ds.pointer("/spec/template").cloned().unwrap_or_default();
    template["spec"]["tolerations"] = json!(daemon_tolerations(&template));
    let generation = ds.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let labels = crate::object_meta::meta_mut(&mut template).entry("labels").or_insert_with(|| json!({}));
    labels["controller-revision-hash"] = json!(hash);
    labels["pod-template-generation"] = json!(generation.to_string());

    let selector = ds.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    let how = Claim {
        def,
        child: api.defs.pods,
        selector: &selector,
        considers: &|_| true,
        member: &|_| true,
        finalizer: None,
    };
    let pods = claim(api, ds, &how);
    // A daemon pod that failed is killed, and its node gets a new one (upstream's
    // `podsShouldBeOnNode`; without its back-off, as a daemon pod restarts `Always` and fails
    // only when something sets it so).
    for p in pods.iter().filter(|p| phase(p) == "Failed" && !is_deleting(p)) {
        let msg = format!(
            "Found failed daemon pod {}/{} on node {}, will try to kill it",
            meta_str(p, "namespace"),
            meta_str(p, "name"),
            node_of(p)
        );
        api.event(def, ds, true, "FailedDaemonPod", &msg, SOURCE);
        api.delete(api.defs.pods, p, None)?;
    }
    let mut by_node: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
    for p in pods.iter().filter(|p| pod_active(p)) {
        by_node.entry(node_of(p)).or_default().push(Arc::clone(p));
    }
    let min_ready = ds.pointer("/spec/minReadySeconds").and_then(Value::as_i64).unwrap_or(0);
    let current = |p: &Value| {
        p.pointer("/metadata/labels/controller-revision-hash").and_then(Value::as_str) == Some(hash.as_str())
    };
    let (mut desired, mut scheduled, mut misscheduled, mut ready, mut available, mut updated) =
        (0, 0, 0, 0, 0, 0);
    let mut old_pods = Vec::new();
    let mut unavailable_now = 0;
    for node in nodes {
        let name = meta_str(node, "name");
        let wanted = node_admits(&template, node);
        let here = by_node.remove(name).unwrap_or_default();
        if !wanted {
            misscheduled += usize::from(!here.is_empty());
            for p in &here {
                api.delete(api.defs.pods, p, None)?;
            }
            continue;
        }
        desired += 1;
        let Some((first, extra)) = here.split_first() else {
            // A node still without its pod is unavailable: a rolling update replaces no other
            // while it is (upstream's rollingUpdate counts it so).
            unavailable_now += 1;
            create(api, ds, &template, name)?;
            continue;
        };
        for p in extra {
            api.delete(api.defs.pods, p, None)?;
        }
        scheduled += 1;
        ready += usize::from(pod_ready(first));
        let is_available = pod_available(first, min_ready, now);
        available += usize::from(is_available);
        unavailable_now += usize::from(!is_available);
        if current(first) {
            updated += 1;
        } else {
            old_pods.push((Arc::clone(first), is_available));
        }
        if pod_ready(first) && !is_available {
            timers.at(
                now.saturating_add(jiff::SignedDuration::from_secs(1)).unwrap_or(now),
                Controller::DaemonSet,
                meta_str(ds, "namespace"),
                meta_str(ds, "name"),
            );
        }
    }
    // Pods of nodes that are gone.
    for p in by_node.into_values().flatten() {
        api.delete(api.defs.pods, &p, None)?;
    }
    if ds.pointer("/spec/updateStrategy/type").and_then(Value::as_str) != Some("OnDelete") {
        let max_unavailable = match ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable") {
            Some(Value::String(s)) => {
                (s.trim_end_matches('%').parse::<usize>().unwrap_or(0) * desired).div_ceil(100).max(1)
            }
            Some(v) => usize::try_from(v.as_i64().unwrap_or(1)).unwrap_or(1).max(1),
            None => 1,
        };
        // Unavailable old pods go first; available ones while the budget lasts.
        old_pods.sort_by_key(|(_, available)| *available);
        let mut budget = max_unavailable.saturating_sub(unavailable_now);
        for (p, was_available) in old_pods {
            if was_available {
                if budget == 0 {
                    break;
                }
                budget -= 1;
            }
            api.delete(api.defs.pods, &p, None)?;
        }
    }
    // Upstream's `storeDaemonSetStatus`: the counts and the observed generation set on the
    // status as it is (conditions a client put there stay).
    let mut status = ds.get("status").filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
    for (field, n) in [
        ("currentNumberScheduled", scheduled),
        ("desiredNumberScheduled", desired),
        ("numberMisscheduled", misscheduled),
        ("numberReady", ready),
    ] {
        status[field] = json!(n);
    }
    status["observedGeneration"] = json!(generation);
    for (field, n) in [
        ("numberAvailable", available),
        ("updatedNumberScheduled", updated),
        ("numberUnavailable", desired.saturating_sub(available)),
    ] {
        if n > 0 {
            status[field] = json!(n);
        } else if let Some(s) = status.as_object_mut() {
            s.remove(field);
        }
    }
    api.write_status(def, ds, status, "kube-controller-manager")
}

fn create(api: &Api<'_>, ds: &Value, template: &Value, node: &str) -> Result<(), crate::ApiError> {
    let mut pod = pod_from_template(api.defs.daemonsets, ds, template, meta_str(ds, "name"));
    pod["spec"]["affinity"]["nodeAffinity"] = json!({
        "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
            { "matchFields": [{ "key": "metadata.name", "operator": "In", "values": [node] }] }
        ] }
    });
    match api.create(api.defs.pods, meta_str(ds, "namespace"), pod, "kube-controller-manager") {
        Ok(made) => {
            api.event(
                api.defs.daemonsets,
                ds,
                false,
                "SuccessfulCreate",
                &format!("Created pod: {}", meta_str(&made, "name")),
                SOURCE,
            );
            Ok(())
        }
        Err(e) => {
            api.event(
                api.defs.daemonsets,
                ds,
                true,
                "FailedCreate",
                &format!("Error creating: {}", e.message),
                SOURCE,
            );
            Err(e)
        }
    }
}
