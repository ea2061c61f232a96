//! The kubelets: each node's runs the pods bound to it — by their status, there being no
//! containers.
//!
//! A bound pod starts (`Running`, its `podIP` from the node's pod network, `hostIP`,
//! `startTime`, init containers completed, each container running with an image id and a
//! container id) and turns Ready once [`Simulation::ready_after`] has passed on the clock.
//! A pod that does not restart (`restartPolicy: Never` or `OnFailure`, a Job's) exits 0 after
//! [`Simulation::run_to_completion`] and Succeeds; [`Cluster::exit_pod`](super::Cluster::exit_pod)
//! makes its containers exit with a code (Failed, or restarted with `restartCount` up under
//! `Always`/`OnFailure`). A deleted pod is stopped and then removed with a zero grace period,
//! as the kubelet's final delete. Each kubelet renews its node's lease every 10 s and reports its
//! node Ready or, when a test says so, NotReady.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::api::{Api, phase};
use super::nodes::{self, is_ready};
use super::{Controller, Queue, Simulation, Timers, log_failure};
use crate::object_meta::{is_deleting, meta_str};

/// How often a kubelet renews its node's lease (a quarter of the 40 s lease).
const LEASE_RENEWAL: SignedDuration = SignedDuration::from_secs(10);

/// What a kubelet knows of its node for its pods: the address it reports and its pod network.
struct NodeInfo {
    ip: String,
    cidr: String,
}

impl NodeInfo {
    fn of(node: &Value) -> Self {
        let cidr = node.pointer("/spec/podCIDR").and_then(Value::as_str).unwrap_or("10.244.0.0/24");
        Self { ip: node_ip(node), cidr: cidr.to_owned() }
    }
}

/// What the kubelets remember between rounds.
#[derive(Default)]
pub(crate) struct Kubelets {
    /// Each node as its kubelet knows it, kept as the node changes (a pod's every round would
    /// otherwise read its node again).
    nodes: HashMap<String, NodeInfo>,
    not_ready: BTreeSet<String>,
    exits: HashMap<(String, String), i32>,
    next_ip: HashMap<String, u32>,
    renewed: HashMap<String, Timestamp>,
    stopping: HashMap<(String, String), Timestamp>,
}

impl Kubelets {
    pub(crate) fn set_node_ready(&mut self, node: &str, ready: bool) {
        if ready {
            self.not_ready.remove(node);
        } else {
            self.not_ready.insert(node.to_owned());
        }
    }

    /// A node changed (or went): what its kubelet knows of it follows.
    pub(crate) fn observe_node(&mut self, node: &Value, gone: bool) {
        let name = meta_str(node, "name");
        if gone {
            self.nodes.remove(name);
        } else {
            self.nodes.insert(name.to_owned(), NodeInfo::of(node));
        }
    }

    /// The node as its kubelet knows it, read once when it has not seen it change yet.
    fn node(&mut self, api: &Api<'_>, name: &str) -> Option<&NodeInfo> {
        if !self.nodes.contains_key(name) {
            let node = api.get(api.defs.nodes, "", name)?;
            self.nodes.insert(name.to_owned(), NodeInfo::of(&node));
        }
        self.nodes.get(name)
    }

    pub(crate) fn order_exit(&mut self, ns: &str, name: &str, code: i32) {
        self.exits.insert((ns.to_owned(), name.to_owned()), code);
    }

    /// Nodes (queued with no namespace) and pods (queued by namespace and name).
    pub(crate) fn sync(&mut self, api: &Api<'_>, sim: &Simulation, queue: &Queue, timers: &mut Timers) {
        for (ns, name) in queue {
            if ns.is_empty() {
                self.sync_node(api, name, timers);
            } else if let Some(pod) = api.get(api.defs.pods, ns, name) {
                self.sync_pod(api, sim, &pod, timers);
            } else {
                self.stopping.remove(&(ns.clone(), name.clone()));
            }
        }
    }

    /// Reports the node's readiness as ordered and renews its lease when due.
    fn sync_node(&mut self, api: &Api<'_>, name: &str, timers: &mut Timers) {
        let Some(node) = api.get(api.defs.nodes, "", name) else {
            self.renewed.remove(name);
            return;
        };
        let now = api.clock.now();
        let ready = !self.not_ready.contains(name);
        if is_ready(&node) != ready {
            let stamp = api.clock.rfc3339();
            let mut status = node["status"].clone();
            status["conditions"] = nodes::conditions(ready, &stamp, &stamp);
            if let Err(e) = api.write_status(api.defs.nodes, &node, status, "kubelet") {
                log_failure(Controller::Kubelet, name, &e);
            }
        }
        if !ready {
            // A stopped kubelet renews nothing.
            return;
        }
        let due = self.renewed.get(name).map_or(now, |t| t.saturating_add(LEASE_RENEWAL).unwrap_or(now));
        if due <= now {
            match nodes::renew_lease(api, name) {
                Ok(()) => {
                    self.renewed.insert(name.to_owned(), now);
                }
                Err(e) => log_failure(Controller::Kubelet, name, &e),
            }
            timers.at(now.saturating_add(LEASE_RENEWAL).unwrap_or(now), Controller::Kubelet, "", name);
        } else {
            timers.at(due, Controller::Kubelet, "", name);
        }
    }

    fn sync_pod(&mut self, api: &Api<'_>, sim: &Simulation, pod: &Value, timers: &mut Timers) {
        let (ns, name) = (meta_str(pod, "namespace").to_owned(), meta_str(pod, "name").to_owned());
        let node_name = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        let Some(node) = self.node(api, node_name) else { return };
        let (node_ip, cidr) = (node.ip.clone(), node.cidr.clone());
        if self.not_ready.contains(node_name) {
            return;
        }
        let now = api.clock.now();
        let key = (ns.clone(), name.clone());
        if is_deleting(pod) {
            let seen = *self.stopping.entry(key).or_insert(now);
            let grace =
                pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0);
            let stop = SignedDuration::try_from(sim.stop_after)
                .unwrap_or(SignedDuration::MAX)
                .min(SignedDuration::from_secs(grace.max(0)));
            let at = seen.saturating_add(stop).unwrap_or(now);
            if at <= now {
                if let Err(e) = api.delete(api.defs.pods, pod, Some(0)) {
                    log_failure(Controller::Kubelet, &name, &e);
                }
            } else {
                timers.at(at, Controller::Kubelet, &ns, &name);
            }
            return;
        }
        if matches!(phase(pod), "Succeeded" | "Failed") {
            return;
        }
        let restart = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always");
        let started = pod
            .pointer("/status/startTime")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok());
        // Init containers run first: the pod shows `Init:0/N` for a round, then its containers
        // start.
        let initializing = has_init(pod) && !condition_is(pod, "Initialized", "True");
        if started.is_none() && initializing {
            let ip = self.pod_ip(node_name, &cidr);
            self.write(api, pod, init(pod, &node_ip, &ip, &api.clock.rfc3339()));
            return;
        }
        let started = if initializing { None } else { started };
        let Some(started) = started else {
            let ip = pod
                .pointer("/status/podIP")
                .and_then(Value::as_str)
                .map_or_else(|| self.pod_ip(node_name, &cidr), str::to_owned);
            let status = start(pod, &node_ip, &ip, &api.clock.rfc3339(), sim.ready_after().is_zero());
            self.write(api, pod, status);
            if !sim.ready_after().is_zero() {
                timers.at(after(now, sim.ready_after()), Controller::Kubelet, &ns, &name);
            }
            if restart != "Always" {
                timers.at(after(now, sim.run_to_completion), Controller::Kubelet, &ns, &name);
            }
            return;
        };
        let stamp = api.clock.rfc3339();
        if let Some(code) = self.exits.remove(&key) {
            let restarts = restart == "Always" || (restart == "OnFailure" && code != 0);
            let status = exit(pod, code, restarts, &stamp, sim.ready_after().is_zero());
            self.write(api, pod, status);
            if restarts && !sim.ready_after().is_zero() {
                timers.at(after(now, sim.ready_after()), Controller::Kubelet, &ns, &name);
            }
            return;
        }
        let containers_started = latest_start(pod).unwrap_or(started);
        if restart != "Always" {
            let done = after(started, sim.run_to_completion);
            if done <= now {
                self.write(api, pod, exit(pod, 0, false, &stamp, false));
                return;
            }
            timers.at(done, Controller::Kubelet, &ns, &name);
        }
        if !super::api::pod_ready(pod) {
            let ready_at = after(containers_started, sim.ready_after());
            if ready_at <= now {
                self.write(api, pod, readiness(pod, true, &stamp));
            } else {
                timers.at(ready_at, Controller::Kubelet, &ns, &name);
            }
        }
    }

    fn write(&self, api: &Api<'_>, pod: &Value, status: Value) {
        if let Err(e) = api.write_status(api.defs.pods, pod, status, "kubelet") {
            log_failure(Controller::Kubelet, meta_str(pod, "name"), &e);
        }
    }

    /// The next address of the node's pod network (`cidr`).
    fn pod_ip(&mut self, node: &str, cidr: &str) -> String {
        let prefix =
            cidr.split('/').next().unwrap_or("10.244.0.0").rsplit_once('.').map_or("10.244.0", |(p, _)| p);
        let n = self.next_ip.entry(node.to_owned()).or_insert(0);
        *n = *n % 253 + 1;
        format!("{prefix}.{}", *n + 1)
    }
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    t.saturating_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)).unwrap_or(Timestamp::MAX)
}

fn node_ip(node: &Value) -> String {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
        .and_then(|x| x["address"].as_str())
        .unwrap_or("172.18.0.2")
        .to_owned()
}

/// The most recent time a container (re)started.
fn latest_start(pod: &Value) -> Option<Timestamp> {
    pod.pointer("/status/containerStatuses")?
        .as_array()?
        .iter()
        .filter_map(|c| c.pointer("/state/running/startedAt")?.as_str()?.parse().ok())
        .max()
}

/// A stable hex digest of `text`, for image and container ids: four rounds of the sandbox's
/// FNV-1a (the one shard selectors hash with), 64 hex digits as a sha256 shows.
fn digest(text: &str) -> String {
    (0..4u8)
        .map(|round| format!("{:016x}", crate::shard::fnv1a64(format!("{text}{round}").as_bytes())))
        .collect()
}

fn image_id(image: &str) -> String {
    let name = image.split('@').next().unwrap_or(image);
    let name = name.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')).map_or(name, |(n, _)| n);
    let full = if name.contains('/') { name.to_owned() } else { format!("docker.io/library/{name}") };
    format!("{full}@sha256:{}", digest(image))
}

/// A pod condition, keeping its transition time when its status does not change.
fn condition(
    old: &[Value],
    kind: &str,
    status: bool,
    reason: Option<&str>,
    message: Option<&str>,
    now: &str,
) -> Value {
    let status = if status { "True" } else { "False" };
    let since = old
        .iter()
        .find(|c| c["type"] == kind && c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut c = json!({ "type": kind, "status": status, "lastProbeTime": null, "lastTransitionTime": since });
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

/// The five conditions of a pod on a node, in the kubelet's order.
fn conditions(pod: &Value, ready: bool, done: bool, now: &str) -> Value {
    let old: Vec<Value> =
        pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let specs = containers(pod);
    let unready: Vec<&str> = specs.iter().filter_map(|c| c["name"].as_str()).collect();
    let (reason, message) = if done {
        (Some("PodCompleted"), None)
    } else if ready {
        (None, None)
    } else {
        (Some("ContainersNotReady"), Some(format!("containers with unready status: [{}]", unready.join(" "))))
    };
    let scheduled = old
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
        .unwrap_or_else(|| condition(&old, "PodScheduled", true, None, None, now));
    json!([
        condition(&old, "PodReadyToStartContainers", !done, None, None, now),
        condition(&old, "Initialized", true, done.then_some("PodCompleted"), None, now),
        condition(&old, "Ready", ready, reason, message.as_deref(), now),
        condition(&old, "ContainersReady", ready, reason, message.as_deref(), now),
        scheduled,
    ])
}

fn containers(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn container_id(pod: &Value, name: &str, restarts: i64) -> String {
    format!("containerd://{}", digest(&format!("{}/{name}/{restarts}", meta_str(pod, "uid"))))
}

/// A container's status: running since `since`, or terminated with `exit`.
fn container_status(pod: &Value, c: &Value, ready: bool, restarts: i64, state: Value, last: Value) -> Value {
    let name = c["name"].as_str().unwrap_or("");
    let image = c["image"].as_str().unwrap_or("");
    json!({
        "containerID": container_id(pod, name, restarts),
        "image": image,
        "imageID": image_id(image),
        "lastState": last,
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "started": state.get("running").is_some(),
        "state": state,
    })
}

/// The status of a pod its kubelet has just started.
fn start(pod: &Value, host_ip: &str, pod_ip: &str, now: &str, ready: bool) -> Value {
    let mut status = pod.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    let init: Vec<Value> = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let sidecar = c["restartPolicy"] == "Always";
            let name = c["name"].as_str().unwrap_or("");
            let state = if sidecar {
                json!({ "running": { "startedAt": now } })
            } else {
                json!({ "terminated": { "containerID": container_id(pod, name, 0), "exitCode": 0, "finishedAt": now, "reason": "Completed", "startedAt": now } })
            };
            // A completed init container counts as ready, as the kubelet reports it.
            container_status(pod, c, true, 0, state, json!({}))
        })
        .collect();
    let running: Vec<Value> = containers(pod)
        .iter()
        .map(|c| container_status(pod, c, ready, 0, json!({ "running": { "startedAt": now } }), json!({})))
        .collect();
    status.insert("phase".into(), json!("Running"));
    status.insert("conditions".into(), conditions(pod, ready, false, now));
    status.insert("hostIP".into(), json!(host_ip));
    status.insert("hostIPs".into(), json!([{ "ip": host_ip }]));
    status.insert("podIP".into(), json!(pod_ip));
    status.insert("podIPs".into(), json!([{ "ip": pod_ip }]));
    status.entry("startTime").or_insert_with(|| json!(now));
    if !init.is_empty() {
        status.insert("initContainerStatuses".into(), json!(init));
    }
    status.insert("containerStatuses".into(), json!(running));
    Value::Object(status)
}

/// Whether the pod has init containers that run to completion (not only sidecars).
fn has_init(pod: &Value) -> bool {
    pod.pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|c| c["restartPolicy"] != "Always"))
}

fn condition_is(pod: &Value, kind: &str, status: &str) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == kind && c["status"] == status))
}

/// The status of a pod whose init containers run: Pending, `Initialized` false, the first init
/// container running and the rest (and the containers) waiting.
fn init(pod: &Value, host_ip: &str, pod_ip: &str, now: &str) -> Value {
    let mut status = pod.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    let waiting = |reason: &str| json!({ "waiting": { "reason": reason } });
    let inits: Vec<Value> =
        pod.pointer("/spec/initContainers").and_then(Value::as_array).cloned().unwrap_or_default();
    let names: Vec<&str> = inits.iter().filter_map(|c| c["name"].as_str()).collect();
    let init_statuses: Vec<Value> = inits
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let state =
                if i == 0 { json!({ "running": { "startedAt": now } }) } else { waiting("PodInitializing") };
            let mut st = container_status(pod, c, false, 0, state, json!({}));
            if i > 0 {
                st.as_object_mut().map(|o| o.remove("containerID"));
            }
            st
        })
        .collect();
    let main: Vec<Value> = containers(pod)
        .iter()
        .map(|c| {
            let mut st = container_status(pod, c, false, 0, waiting("PodInitializing"), json!({}));
            st.as_object_mut().map(|o| o.remove("containerID"));
            st
        })
        .collect();
    let old: Vec<Value> =
        pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let pending = format!("containers with incomplete status: [{}]", names.join(" "));
    let main_names: Vec<String> =
        containers(pod).iter().filter_map(|c| c["name"].as_str().map(str::to_owned)).collect();
    let not_ready = format!("containers with unready status: [{}]", main_names.join(" "));
    let scheduled = old
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
        .unwrap_or_else(|| condition(&old, "PodScheduled", true, None, None, now));
    status.insert("phase".into(), json!("Pending"));
    status.insert(
        "conditions".into(),
        json!([
            condition(&old, "PodReadyToStartContainers", true, None, None, now),
            condition(&old, "Initialized", false, Some("ContainersNotInitialized"), Some(&pending), now),
            condition(&old, "Ready", false, Some("ContainersNotReady"), Some(&not_ready), now),
            condition(&old, "ContainersReady", false, Some("ContainersNotReady"), Some(&not_ready), now),
            scheduled,
        ]),
    );
    status.insert("hostIP".into(), json!(host_ip));
    status.insert("hostIPs".into(), json!([{ "ip": host_ip }]));
    status.insert("podIP".into(), json!(pod_ip));
    status.insert("podIPs".into(), json!([{ "ip": pod_ip }]));
    status.insert("startTime".into(), json!(now));
    status.insert("initContainerStatuses".into(), json!(init_statuses));
    status.insert("containerStatuses".into(), json!(main));
    Value::Object(status)
}

/// The status once the pod's containers are ready (or not).
fn readiness(pod: &Value, ready: bool, now: &str) -> Value {
    let mut status = pod["status"].clone();
    status["conditions"] = conditions(pod, ready, false, now);
    for c in status["containerStatuses"].as_array_mut().into_iter().flatten() {
        c["ready"] = json!(ready);
    }
    status
}

/// The status after the containers exit with `code`: restarted, or the pod finished.
fn exit(pod: &Value, code: i32, restarts: bool, now: &str, ready_at_once: bool) -> Value {
    let mut status = pod["status"].clone();
    let specs = containers(pod);
    let mut list: Vec<Value> = status["containerStatuses"].as_array().cloned().unwrap_or_default();
    for (c, spec) in list.iter_mut().zip(&specs) {
        let count = c["restartCount"].as_i64().unwrap_or(0);
        let since = c.pointer("/state/running/startedAt").cloned().unwrap_or_else(|| json!(now));
        let name = spec["name"].as_str().unwrap_or("");
        let terminated = json!({ "terminated": {
            "containerID": container_id(pod, name, count), "exitCode": code, "finishedAt": now,
            "reason": if code == 0 { "Completed" } else { "Error" }, "startedAt": since,
        } });
        *c = if restarts {
            container_status(
                pod,
                spec,
                ready_at_once,
                count + 1,
                json!({ "running": { "startedAt": now } }),
                terminated,
            )
        } else {
            container_status(pod, spec, false, count, terminated, json!({}))
        };
    }
    status["containerStatuses"] = json!(list);
    if restarts {
        status["conditions"] = conditions(pod, ready_at_once, false, now);
    } else {
        status["phase"] = json!(if code == 0 { "Succeeded" } else { "Failed" });
        status["conditions"] = conditions(pod, false, true, now);
    }
    status
}
