//! The nodes: created at start as a kind cluster's workers are, kept by the node lifecycle
//! controller (NotReady nodes tainted, their pods turned unready and evicted once their
//! toleration of the taint runs out) and the pod garbage collector (pods of deleted nodes go).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::api::Api;
use super::{Controller, Queue, Simulation, Timers, log_failure};
use crate::object_meta::meta_str;
use crate::status::ApiError;
use crate::store::ChangeType;

/// The taint of a node whose kubelet reports NotReady.
pub(crate) const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// How long a pod tolerates a NoExecute taint when it says nothing (the
/// DefaultTolerationSeconds admission's 300 s).
const DEFAULT_TOLERATION: i64 = 300;

/// The name of the `i`-th simulated node (from 1).
pub(crate) fn node_name(i: usize) -> String {
    format!("sandbox-node-{i}")
}

/// Node `i`'s pod network, `10.244.<i>.0/24` as kind's (the third octet spills into the second
/// beyond 256 nodes).
pub(crate) fn pod_cidr(i: usize) -> String {
    format!("10.{}.{}.0/24", 244 + (i / 256) % 12, i % 256)
}

/// A Ready node as a kubelet registers it.
fn node(i: usize, sim: &Simulation, now: &str) -> Value {
    let name = node_name(i);
    let shape = &sim.node_shape;
    let resources = json!({
        "cpu": shape.cpu, "memory": shape.memory, "pods": shape.pods.to_string(),
        "ephemeral-storage": "100Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
    });
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": { "podCIDR": pod_cidr(i), "podCIDRs": [pod_cidr(i)], "providerID": format!("sandbox://{name}") },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": conditions(true, now, now),
            "addresses": [
                { "type": "InternalIP", "address": host_ip(i) },
                { "type": "Hostname", "address": name },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            "nodeInfo": {
                "machineID": format!("{i:032x}"), "systemUUID": format!("{i:032x}"), "bootID": crate::object_meta::new_uid(),
                "kernelVersion": "6.1.0-sandbox", "osImage": "counter-controller sandbox",
                "containerRuntimeVersion": "sandbox://1.0", "kubeletVersion": "v1.32.0",
                "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
            },
        },
    })
}

/// Node `i`'s address.
pub(crate) fn host_ip(i: usize) -> String {
    format!("172.18.{}.{}", i / 250, i % 250 + 2)
}

/// The four pressure/readiness conditions a kubelet reports.
pub(crate) fn conditions(ready: bool, now: &str, since: &str) -> Value {
    let ok = |kind: &str, reason: &str, message: &str| json!({ "type": kind, "status": "False", "lastHeartbeatTime": now, "lastTransitionTime": now, "reason": reason, "message": message });
    let readiness = if ready {
        json!({ "type": "Ready", "status": "True", "lastHeartbeatTime": now, "lastTransitionTime": since, "reason": "KubeletReady", "message": "kubelet is posting ready status" })
    } else {
        json!({ "type": "Ready", "status": "False", "lastHeartbeatTime": now, "lastTransitionTime": since, "reason": "KubeletNotReady", "message": "container runtime is down: stopped by the test" })
    };
    json!([
        ok("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ok("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ok("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        readiness,
    ])
}

/// Registers the simulation's nodes and their leases.
pub(crate) fn create(api: &Api<'_>, sim: &Simulation) -> Result<(), ApiError> {
    let now = api.clock.rfc3339();
    for i in 1..=sim.nodes {
        let obj = node(i, sim, &now);
        let status = obj["status"].clone();
        let created = match api.create(api.defs.nodes, "", obj, "kubelet") {
            Ok(created) => created,
            Err(e) if e.code == 409 => continue,
            Err(e) => return Err(e),
        };
        // The registration's status is the kubelet's first status update.
        api.write_status(api.defs.nodes, &created, status, "kubelet")?;
        renew_lease(api, &node_name(i))?;
    }
    Ok(())
}

/// Renews (or takes) the node's lease in `kube-node-lease`, as its kubelet does every 10 s.
pub(crate) fn renew_lease(api: &Api<'_>, node: &str) -> Result<(), ApiError> {
    let now = api.clock.now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    match api.get(api.defs.leases, "kube-node-lease", node) {
        Some(lease) => {
            let mut lease = (*lease).clone();
            lease["spec"]["renewTime"] = json!(now);
            api.update(api.defs.leases, lease, "kubelet").map(drop)
        }
        None => {
            let Some(owner) = api.get(api.defs.nodes, "", node) else { return Ok(()) };
            let lease = json!({
                "metadata": {
                    "name": node, "namespace": "kube-node-lease",
                    "ownerReferences": [{ "apiVersion": "v1", "kind": "Node", "name": node, "uid": meta_str(&owner, "uid") }],
                },
                "spec": { "holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now },
            });
            api.create(api.defs.leases, "kube-node-lease", lease, "kubelet").map(drop)
        }
    }
}

/// Whether the node's `Ready` condition is true.
pub(crate) fn is_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// The node lifecycle controller's memory: since when each node has been NotReady.
#[derive(Default)]
pub(crate) struct Nodes {
    not_ready_since: BTreeMap<String, jiff::Timestamp>,
}

impl Nodes {
    pub(crate) fn observe(&mut self, node: &Value, kind: ChangeType) {
        if kind == ChangeType::Deleted || is_ready(node) {
            self.not_ready_since.remove(meta_str(node, "name"));
        }
    }

    /// For each queued node: taints it while NotReady (`NoSchedule` and `NoExecute`,
    /// untainted when Ready again), marks its pods not ready, and evicts each pod whose
    /// toleration of the taint has run out — at once for a pod that does not tolerate it.
    pub(crate) fn lifecycle(&mut self, api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
        let now = api.clock.now();
        for (_, name) in queue {
            let Some(node) = api.get(api.defs.nodes, "", name) else { continue };
            let ready = is_ready(&node);
            if let Err(e) = taint(api, &node, !ready) {
                log_failure(Controller::NodeLifecycle, name, &e);
            }
            if ready {
                continue;
            }
            let since = *self.not_ready_since.entry(name.clone()).or_insert(now);
            for pod in api.list(api.defs.pods, None) {
                if pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(name.as_str())
                    || !super::api::pod_active(&pod)
                {
                    continue;
                }
                mark_not_ready(api, &pod);
                let Some(tolerated) = tolerated_for(&pod) else {
                    evict(api, &pod);
                    continue;
                };
                let until = since
                    .checked_add(jiff::SignedDuration::from_secs(tolerated))
                    .unwrap_or(jiff::Timestamp::MAX);
                if until <= now {
                    evict(api, &pod);
                } else {
                    timers.at(until, Controller::NodeLifecycle, "", name);
                }
            }
        }
    }
}

/// How long the pod tolerates the not-ready `NoExecute` taint: `None` when it does not, its
/// `tolerationSeconds` (or forever) when it does.
fn tolerated_for(pod: &Value) -> Option<i64> {
    let tolerations = pod.pointer("/spec/tolerations").and_then(Value::as_array);
    let matching = tolerations.into_iter().flatten().filter(|t| {
        let key_ok = match t["operator"].as_str() {
            Some("Exists") => t["key"].as_str().is_none_or(|k| k.is_empty() || k == NOT_READY_TAINT),
            _ => t["key"] == NOT_READY_TAINT,
        };
        key_ok && t["effect"].as_str().is_none_or(|e| e.is_empty() || e == "NoExecute")
    });
    let mut found = false;
    let mut shortest = i64::MAX;
    for t in matching {
        found = true;
        shortest = shortest.min(t["tolerationSeconds"].as_i64().unwrap_or(i64::MAX));
    }
    if !found && tolerations.is_none() {
        // A pod written around admission still gets the default.
        return Some(DEFAULT_TOLERATION);
    }
    found.then_some(shortest)
}

/// Adds or removes the not-ready taints.
fn taint(api: &Api<'_>, node: &Value, tainted: bool) -> Result<(), ApiError> {
    let mut taints: Vec<Value> =
        node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    let had = taints.iter().any(|t| t["key"] == NOT_READY_TAINT);
    if had == tainted {
        return Ok(());
    }
    taints.retain(|t| t["key"] != NOT_READY_TAINT);
    if tainted {
        taints.push(json!({ "key": NOT_READY_TAINT, "effect": "NoSchedule" }));
        taints
            .push(json!({ "key": NOT_READY_TAINT, "effect": "NoExecute", "timeAdded": api.clock.rfc3339() }));
    }
    let mut node = node.clone();
    if taints.is_empty() {
        if let Some(spec) = node["spec"].as_object_mut() {
            spec.remove("taints");
        }
    } else {
        node["spec"]["taints"] = json!(taints);
    }
    api.update(api.defs.nodes, node, "kube-controller-manager").map(drop)
}

/// `MarkPodsNotReady`: the pod's `Ready` condition false while its node is not ready.
fn mark_not_ready(api: &Api<'_>, pod: &Value) {
    let Some(conditions) = pod.pointer("/status/conditions").and_then(Value::as_array) else { return };
    if !conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True") {
        return;
    }
    let mut status = pod["status"].clone();
    for c in status["conditions"].as_array_mut().into_iter().flatten() {
        if c["type"] == "Ready" {
            c["status"] = json!("False");
            c["lastTransitionTime"] = json!(api.clock.rfc3339());
        }
    }
    if let Err(e) = api.write_status(api.defs.pods, pod, status, "kube-controller-manager") {
        log_failure(Controller::NodeLifecycle, meta_str(pod, "name"), &e);
    }
}

/// The taint eviction controller's delete, with its Event.
fn evict(api: &Api<'_>, pod: &Value) {
    let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
    match api.delete(api.defs.pods, pod, None) {
        Ok(()) => api.event(
            api.defs.pods,
            pod,
            false,
            "TaintManagerEviction",
            &format!("Marking for deletion Pod {ns}/{name}"),
            "taint-eviction-controller",
        ),
        Err(e) => log_failure(Controller::NodeLifecycle, name, &e),
    }
}

/// The pod garbage collector: the pods of each queued node that no longer exists are deleted
/// at once (grace period 0), as orphans of their node.
pub(crate) fn pod_gc(api: &Api<'_>, queue: &Queue) {
    for (_, node) in queue {
        if api.get(api.defs.nodes, "", node).is_some() {
            continue;
        }
        for pod in api.list(api.defs.pods, None) {
            if pod.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node.as_str())
                && let Err(e) = api.delete(api.defs.pods, &pod, Some(0))
            {
                log_failure(Controller::PodGc, meta_str(&pod, "name"), &e);
            }
        }
    }
}
