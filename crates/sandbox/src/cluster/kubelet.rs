//! The kubelets: each node's runs the pods bound to it — by their status, there being no
//! containers.
//!
//! A bound pod is admitted first, as the kubelet's predicate admit handler admits it: one whose
//! containers ask for a host port (protocol, address, port) that a pod the node already runs
//! holds is rejected — `Failed`, reason `NodePorts`, `Pod was rejected: Predicate NodePorts
//! failed: …` and a Warning Event — and never starts; its controller replaces it.
//!
//! A bound pod starts (`Running`, its `podIP` from the node's pod network, `hostIP`,
//! `startTime`, init containers completed, each container running with an image id and a
//! container id) and turns Ready once [`Simulation::ready_after`] has passed on the clock. A
//! container whose image the simulated registry has not got ([`Simulation::missing_images`])
//! does not start: it waits in `ErrImagePull`, then `ImagePullBackOff`, the pod `Pending`, with
//! the kubelet's `Pulling`, `Failed` and `BackOff` events, until the pod's image is changed to
//! one there is.
//!
//! A container whose command the runtime runs (`sh -c …`, `sleep 30`) runs it as a process
//! from its start, and exits when the process does, with its code. Any other container runs
//! its image's entrypoint, which is not simulated: it runs until stopped, or, in a pod that does
//! not restart (`restartPolicy: Never` or `OnFailure`, a Job's), exits 0 after
//! [`Simulation::run_to_completion`]. [`Cluster::exit_pod`](super::Cluster::exit_pod) makes a
//! pod's running containers exit with a code. An exited container restarts under `Always` (and
//! under `OnFailure` when it failed), the kubelet's way: at once the first time, then after a
//! back-off (`CrashLoopBackOff`) of 10 s doubling to 5 min, forgotten after 10 min without one.
//! The pod's phase follows its containers: `Succeeded` when all exited 0 and none restarts,
//! `Failed` when one failed and none restarts.
//!
//! Probes run as the kubelet's prober runs them (`prober`): a container with a startup probe is
//! not `started` until it succeeds, one with a readiness probe is ready while it succeeds (one
//! without is ready [`Simulation::ready_after`] after it starts), and a failed liveness or
//! startup probe kills the container (exit code 137) with the `Killing` event. Each failed
//! probe is an `Unhealthy` event, counted again while its message stays the same. The runtime's
//! faults ([`ContainerFault`](crate::ContainerFault)) crash containers and fail probes. A deleted pod's processes are stopped at once;
//! the pod is removed after its grace period, with a zero grace period, as the kubelet's final
//! delete. Each kubelet renews its node's lease every 10 s and reports its
//! node Ready or, when a test says so, NotReady.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::api::{Api, phase};
use super::nodes::{self, is_ready};
use super::prober::{self, Outcome, ProbeResult, Prober};
use super::scheduler::{HostPort, NODE_PORTS_MISFIT, host_ports, ports_conflict};
use super::{Cluster, Controller, Queue, Simulation, Timers, log_failure};
use crate::container_runtime::Containers;
use crate::faults::{Probe, Target};
use crate::go_print::go_quote;
use crate::object_meta::{is_deleting, meta_str};

/// How often a kubelet renews its node's lease (a quarter of the 40 s lease).
const LEASE_RENEWAL: SignedDuration = SignedDuration::from_secs(10);

/// The pod conditions the kubelet owns (upstream's `PodConditionsByKubelet`): its status
/// replaces them, and keeps the others.
const KUBELET_CONDITIONS: [&str; 5] =
    ["PodScheduled", "Ready", "Initialized", "ContainersReady", "PodReadyToStartContainers"];

/// The exit code of a container the kubelet killed: 128 + SIGKILL, as for a process that did
/// not stop on SIGTERM.
const KILLED: i32 = 137;

/// The first back-off before an exited container restarts again, and its ceiling: the
/// kubelet's `backOffPeriod` and `MaxContainerBackOff`.
const BACK_OFF_FIRST: SignedDuration = SignedDuration::from_secs(10);
const BACK_OFF_MAX: SignedDuration = SignedDuration::from_secs(300);

/// What the kubelets run containers with: the sandbox's container runtime, which starts and
/// stops their processes, and the cluster, to which a process reports its exit.
pub(crate) struct Runtime {
    pub(crate) containers: Containers,
    pub(crate) cluster: Cluster,
}

/// A container's process exited: which run of which container, with what code.
#[derive(Debug, Clone)]
pub(crate) struct ProcessExit {
    pub(crate) namespace: String,
    pub(crate) pod: String,
    pub(crate) container: String,
    /// The run's `containerID`: an exit of a run the kubelet already ended is ignored.
    pub(crate) id: String,
    pub(crate) code: i32,
}

/// A container's restart back-off, as the kubelet's `flowcontrol.Backoff` keeps it.
#[derive(Debug, Clone, Copy)]
struct BackOff {
    period: SignedDuration,
    updated: Timestamp,
}

impl BackOff {
    /// Forgotten after twice the ceiling without a restart.
    fn expired(&self, now: Timestamp) -> bool {
        now.duration_since(self.updated) > BACK_OFF_MAX * 2
    }
}

/// A container whose running run a status write changes: the run it stops (its id), the run
/// it starts (its id and `restartCount`).
struct RunChange {
    container: String,
    stopped: Option<String>,
    started: Option<(String, i64)>,
}

/// What becomes of a container whose run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// It stays terminated: its pod does not restart it.
    Stays,
    /// It starts again now.
    Restarts,
    /// It waits out this back-off (`CrashLoopBackOff`), then starts again.
    BacksOff(SignedDuration),
}

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
    /// The container runtime (none only in the stand-in left while the kubelets run on a
    /// thread of their own).
    runtime: Option<Runtime>,
    /// Container processes that exited, by pod, not yet looked at.
    process_exits: HashMap<(String, String), Vec<ProcessExit>>,
    /// The probes of running containers.
    prober: Prober,
    /// Probes that finished, by pod, not yet looked at.
    probe_results: HashMap<(String, String), Vec<ProbeResult>>,
    /// The Events recorded about containers, by pod, container, reason and message: the same
    /// event again is counted on the first, as the recorder does.
    events: HashMap<(String, String, String, String, String), String>,
    /// Each container's restart back-off, by namespace, pod and container.
    back_off: HashMap<(String, String, String), BackOff>,
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
    pub(crate) fn new(runtime: Runtime) -> Self {
        Self { runtime: Some(runtime), ..Self::default() }
    }

    pub(crate) fn process_exited(&mut self, exit: ProcessExit) {
        self.process_exits.entry((exit.namespace.clone(), exit.pod.clone())).or_default().push(exit);
    }

    pub(crate) fn probe_finished(&mut self, result: ProbeResult) {
        self.probe_results.entry((result.namespace.clone(), result.pod.clone())).or_default().push(result);
    }

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
                self.forget(ns, name);
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
            if !self.stopping.contains_key(&key)
                && let Some(rt) = &self.runtime
            {
                rt.containers.stop_pod(&ns, &name);
            }
            let seen = *self.stopping.entry(key).or_insert(now);
            let grace =
                pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0);
            let stop = SignedDuration::try_from(sim.stop_after)
                .unwrap_or(SignedDuration::MAX)
                .min(SignedDuration::from_secs(grace.max(0)));
            let at = seen.saturating_add(stop).unwrap_or(now);
            if at <= now {
                // A pod a finalizer holds shows how it ended (the kubelet's terminal phase for
                // a deleted pod), which its owner may be waiting on.
                if !crate::object_meta::finalizers(pod).is_empty()
                    && let Some(status) = terminal_status(pod, &api.clock.rfc3339())
                {
                    self.store_status(api, pod, status);
                    return;
                }
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
        if started.is_none() && !admits(api, pod, node_name) {
            self.reject(api, pod, "NodePorts", NODE_PORTS_MISFIT);
            return;
        }
        // Init containers run first: the pod shows `Init:0/N` for a round, then its containers
        // start.
        let initializing = has_init(pod) && !condition_is(pod, "Initialized", "True");
        if started.is_none() && initializing {
            let ip = self.pod_ip(node_name, &cidr);
            self.write(api, pod, init(pod, &node_ip, &ip, &api.clock.rfc3339()), sim, timers);
            return;
        }
        if initializing || started.is_none() {
            let ip = pod
                .pointer("/status/podIP")
                .and_then(Value::as_str)
                .map_or_else(|| self.pod_ip(node_name, &cidr), str::to_owned);
            let status = start(pod, &node_ip, &ip, &api.clock.rfc3339(), sim);
            for c in containers_of(pod).iter().filter(|c| !sim.pulls(c["image"].as_str().unwrap_or(""))) {
                self.pull_failed(api, pod, c);
            }
            self.write(api, pod, status, sim, timers);
            return;
        }
        let stamp = api.clock.rfc3339();
        if let Some(status) = self.pulls(api, pod, sim, &stamp) {
            self.write(api, pod, status, sim, timers);
            return;
        }
        let statuses = container_statuses(pod);
        // The runs that ended: as a test ordered, as their process exited, or an entrypoint's
        // run time in a pod that does not restart.
        let mut ended: Vec<(String, i32)> = Vec::new();
        if let Some(code) = self.exits.remove(&key) {
            ended.extend(statuses.iter().filter(|s| running(s)).map(|s| (status_name(s).to_owned(), code)));
        }
        for exit in self.process_exits.remove(&key).unwrap_or_default() {
            let current = statuses.iter().find(|s| status_name(s) == exit.container);
            if current.is_some_and(|s| running(s) && s["containerID"] == exit.id.as_str())
                && !ended.iter().any(|(n, _)| *n == exit.container)
            {
                ended.push((exit.container, exit.code));
            }
        }
        if restart != "Always" {
            for s in statuses.iter().filter(|s| running(s)) {
                let container = status_name(s);
                if ended.iter().any(|(n, _)| n == container) || self.runs_program(pod, container) {
                    continue;
                }
                let since = s
                    .pointer("/state/running/startedAt")
                    .and_then(Value::as_str)
                    .and_then(|t| t.parse().ok());
                let done = after(since.unwrap_or(now), sim.run_to_completion);
                if done <= now {
                    ended.push((container.to_owned(), 0));
                } else {
                    timers.at(done, Controller::Kubelet, &ns, &name);
                }
            }
        }
        // Runs a fault crashes, and runs a failed liveness or startup probe kills.
        for (container, code) in self.crashes(pod, statuses, now, timers) {
            if !ended.iter().any(|(n, _)| *n == container) {
                ended.push((container, code));
            }
        }
        for (container, probe) in self.probe(api, pod, statuses, now, timers) {
            if ended.iter().any(|(n, _)| *n == container) {
                continue;
            }
            let mut message = format!("Container {container} failed {} probe", probe.name().to_lowercase());
            if restart != "Never" {
                message.push_str(", will be restarted");
            }
            self.container_event(api, pod, &container, false, "Killing", &message);
            ended.push((container, KILLED));
        }
        // The runs that end now, and the containers whose back-off is over.
        let mut then: Vec<(String, i32, Then)> = Vec::new();
        for (container, code) in ended {
            let restarts = restart == "Always" || (restart == "OnFailure" && code != 0);
            let what = if !restarts {
                Then::Stays
            } else if let Some(period) = self.backing_off(&ns, &name, &container, now, now) {
                timers.at(now.saturating_add(period).unwrap_or(now), Controller::Kubelet, &ns, &name);
                Then::BacksOff(period)
            } else {
                self.next_back_off(&ns, &name, &container, now);
                Then::Restarts
            };
            then.push((container, code, what));
        }
        let mut restarting: Vec<String> = Vec::new();
        for s in
            statuses.iter().filter(|s| s.pointer("/state/waiting/reason") == Some(&json!("CrashLoopBackOff")))
        {
            let container = status_name(s);
            let finished = s
                .pointer("/lastState/terminated/finishedAt")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<Timestamp>().ok())
                .unwrap_or(now);
            match self.backing_off(&ns, &name, container, finished, now) {
                Some(period) => {
                    timers.at(
                        finished.saturating_add(period).unwrap_or(now),
                        Controller::Kubelet,
                        &ns,
                        &name,
                    );
                }
                None => {
                    self.next_back_off(&ns, &name, container, now);
                    restarting.push(container.to_owned());
                }
            }
        }
        if !then.is_empty() || !restarting.is_empty() {
            let status = runs_end(pod, &then, &restarting, restart, &stamp);
            self.write(api, pod, status, sim, timers);
            return;
        }
        // Readiness and startup, as the probes and the time since each container started say.
        let mut status = pod["status"].clone();
        let wake = self.gate(pod, &mut status, now, sim);
        if status != pod["status"] {
            self.write(api, pod, status, sim, timers);
        } else if let Some(at) = wake {
            timers.at(at, Controller::Kubelet, &ns, &name);
        }
    }

    /// Sets each container's `started` and `ready` in `status` as the prober and, for a
    /// container without a readiness probe, the time since it started say; the pod's
    /// conditions follow. When a container turns ready later, the time it does.
    fn gate(&self, pod: &Value, status: &mut Value, now: Timestamp, sim: &Simulation) -> Option<Timestamp> {
        let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
        let specs = containers_of(pod);
        let mut wake: Option<Timestamp> = None;
        let mut changed = false;
        let done = matches!(status["phase"].as_str(), Some("Succeeded" | "Failed"));
        let list = status.get_mut("containerStatuses").and_then(Value::as_array_mut)?;
        for s in list.iter_mut() {
            let Some(since) = s.pointer("/state/running/startedAt").and_then(Value::as_str) else { continue };
            let since: Timestamp = since.parse().unwrap_or(now);
            let container = status_name(s).to_owned();
            let spec = specs.iter().find(|c| c["name"] == container.as_str()).unwrap_or(&Value::Null);
            let id = s["containerID"].as_str().unwrap_or("");
            let verdict = self.prober.verdict((ns, name, &container), spec, id);
            let ready = verdict.started
                && verdict.ready.unwrap_or_else(|| {
                    let at = after(since, sim.ready_after());
                    if at > now {
                        wake = Some(wake.map_or(at, |w| w.min(at)));
                    }
                    at <= now
                });
            if s["started"] != verdict.started || s["ready"] != ready {
                s["started"] = json!(verdict.started);
                s["ready"] = json!(ready);
                changed = true;
            }
        }
        if changed {
            let conditions = conditions(pod, list, done, &crate::clock::seconds(now));
            status["conditions"] = conditions;
        }
        wake
    }

    /// The running containers a fault crashes now; a timer for those it crashes later.
    fn crashes(
        &self,
        pod: &Value,
        statuses: &[Value],
        now: Timestamp,
        timers: &mut Timers,
    ) -> Vec<(String, i32)> {
        let Some(rt) = self.runtime.as_ref().filter(|rt| !rt.containers.faults.is_empty()) else {
            return Vec::new();
        };
        let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
        let labels = crate::faults::labels_of(pod);
        let mut crashed = Vec::new();
        for s in statuses.iter().filter(|s| running(s)) {
            let container = status_name(s);
            let at = Target { namespace: ns, pod: name, container, labels: &labels };
            let Some((lasts, code)) = rt.containers.faults.crash_after(&at) else { continue };
            let since =
                s.pointer("/state/running/startedAt").and_then(Value::as_str).and_then(|t| t.parse().ok());
            let due = after(since.unwrap_or(now), lasts);
            if due <= now {
                crashed.push((container.to_owned(), code));
            } else {
                timers.at(due, Controller::Kubelet, ns, name);
            }
        }
        crashed
    }

    /// Runs the probes due in the pod's running containers, after counting those that
    /// finished (a failure is an `Unhealthy` event); the containers a failed liveness or
    /// startup probe kills.
    fn probe(
        &mut self,
        api: &Api<'_>,
        pod: &Value,
        statuses: &[Value],
        now: Timestamp,
        timers: &mut Timers,
    ) -> Vec<(String, Probe)> {
        let Some(rt) = &self.runtime else { return Vec::new() };
        let (containers, cluster) = (rt.containers.clone(), rt.cluster.clone());
        let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
        for result in self.probe_results.remove(&(ns.to_owned(), name.to_owned())).unwrap_or_default() {
            if let Some((Some(output), _)) = self.prober.record(&result) {
                let message = format!("{} probe failed: {output}", result.probe.name());
                self.container_event(api, pod, &result.container, true, "Unhealthy", &message);
            }
        }
        let runs: Vec<(&str, &str)> = statuses
            .iter()
            .filter(|s| running(s))
            .map(|s| (status_name(s), s["containerID"].as_str().unwrap_or("")))
            .collect();
        self.prober.retain(ns, name, &runs);
        let specs = containers_of(pod);
        let mut kills = Vec::new();
        for s in statuses.iter().filter(|s| running(s)) {
            let container = status_name(s);
            let Some(spec) = specs.iter().find(|c| c["name"] == container) else { continue };
            let id = s["containerID"].as_str().unwrap_or("");
            let since =
                s.pointer("/state/running/startedAt").and_then(Value::as_str).and_then(|t| t.parse().ok());
            let (verdict, due, next) =
                self.prober.look((ns, name, container), spec, id, since.unwrap_or(now), now);
            if let Some(probe) = verdict.kill {
                kills.push((container.to_owned(), probe));
                continue;
            }
            if let Some(next) = next {
                timers.at(next, Controller::Kubelet, ns, name);
            }
            if due.is_empty() {
                continue;
            }
            let c = crate::pod_log::container(pod, container);
            for d in due {
                let failed = containers
                    .faults
                    .probe_fails(&c.fault_target(), d.probe)
                    .then(|| prober::failed_by_fault(&d.handler, &c.pod_ip));
                let c = c.clone();
                let result = ProbeResult {
                    namespace: ns.to_owned(),
                    pod: name.to_owned(),
                    container: container.to_owned(),
                    id: id.to_owned(),
                    probe: d.probe,
                    outcome: Outcome::Success,
                };
                let (runtime, cluster) = (containers.clone(), cluster.clone());
                containers.spawn(async move {
                    let outcome = match failed {
                        Some(failed) => failed,
                        None => prober::run(runtime, c, d.handler, d.timeout).await,
                    };
                    cluster.probe_finished(ProbeResult { outcome, ..result });
                });
            }
        }
        kills
    }

    /// Records an Event about a container of `pod`, or counts it again when the last one of the
    /// same reason and message was recorded.
    fn container_event(
        &mut self,
        api: &Api<'_>,
        pod: &Value,
        container: &str,
        warning: bool,
        reason: &str,
        message: &str,
    ) {
        let key = (
            meta_str(pod, "namespace").to_owned(),
            meta_str(pod, "name").to_owned(),
            container.to_owned(),
            reason.to_owned(),
            message.to_owned(),
        );
        if let Some(event) = self.events.get(&key)
            && api.event_again(&key.0, event)
        {
            return;
        }
        if let Some(event) = api.container_event(pod, container, warning, reason, message) {
            self.events.insert(key, event);
        }
    }

    /// The events of a pull of container `c`'s image that failed, as the kubelet's image
    /// manager and runtime record them.
    fn pull_failed(&mut self, api: &Api<'_>, pod: &Value, c: &Value) {
        let (name, image) = (c["name"].as_str().unwrap_or(""), c["image"].as_str().unwrap_or(""));
        self.container_event(api, pod, name, false, "Pulling", &format!("Pulling image {}", go_quote(image)));
        self.container_event(api, pod, name, true, "Failed", &pull_error(image));
        self.container_event(api, pod, name, true, "Failed", "Error: ErrImagePull");
    }

    /// The status once the containers waiting on their image move on: one whose image (the
    /// pod's may have been changed) can now be pulled starts; one whose pull just failed backs
    /// off (`ImagePullBackOff`). `None` when none moves.
    fn pulls(&mut self, api: &Api<'_>, pod: &Value, sim: &Simulation, now: &str) -> Option<Value> {
        let waits = |s: &Value| pull_wait(s).is_some();
        // Every sync of every pod comes here: nothing is copied unless a container waits.
        if !container_statuses(pod).iter().any(waits) {
            return None;
        }
        let mut status = pod["status"].clone();
        let mut changed = false;
        let list = status.get_mut("containerStatuses").and_then(Value::as_array_mut)?;
        for s in list.iter_mut() {
            let Some(reason) = pull_wait(s) else { continue };
            let Some(spec) = containers_of(pod).iter().find(|c| c["name"] == status_name(s)) else {
                continue;
            };
            let image = spec["image"].as_str().unwrap_or("");
            if sim.pulls(image) {
                *s = container_status(
                    pod,
                    spec,
                    false,
                    0,
                    json!({ "running": { "startedAt": now } }),
                    json!({}),
                );
            } else if reason == "ErrImagePull" {
                let back_off = format!("Back-off pulling image {}", go_quote(image));
                self.container_event(api, pod, status_name(s), false, "BackOff", &back_off);
                self.container_event(api, pod, status_name(s), true, "Failed", "Error: ImagePullBackOff");
                *s = waiting_on_image(spec, "ImagePullBackOff", &back_off);
            } else {
                continue;
            }
            changed = true;
        }
        if !changed {
            return None;
        }
        let restart = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always");
        let phase = phase_of(container_statuses_of(&status), restart);
        status["phase"] = json!(phase);
        status["conditions"] = conditions(pod, container_statuses_of(&status), false, now);
        Some(status)
    }

    /// Forgets a pod that is gone: its processes stop, its back-offs go.
    fn forget(&mut self, ns: &str, name: &str) {
        let key = (ns.to_owned(), name.to_owned());
        self.stopping.remove(&key);
        self.process_exits.remove(&key);
        self.probe_results.remove(&key);
        self.prober.forget(ns, name);
        self.events.retain(|(n, p, ..), _| n != ns || p != name);
        self.back_off.retain(|(n, p, _), _| n != ns || p != name);
        if let Some(rt) = &self.runtime {
            rt.containers.stop_pod(ns, name);
        }
    }

    /// Whether container `name` of `pod` runs its command as a process.
    fn runs_program(&self, pod: &Value, name: &str) -> bool {
        self.runtime
            .as_ref()
            .is_some_and(|rt| rt.containers.runs_program(&crate::pod_log::container(pod, name)))
    }

    /// The kubelet's `IsInBackOffSince`: the back-off the container still waits out for a run
    /// that finished at `finished`, if any.
    fn backing_off(
        &self,
        ns: &str,
        pod: &str,
        c: &str,
        finished: Timestamp,
        now: Timestamp,
    ) -> Option<SignedDuration> {
        let b = self.back_off.get(&(ns.to_owned(), pod.to_owned(), c.to_owned()))?;
        (!b.expired(now) && now.duration_since(finished) < b.period).then_some(b.period)
    }

    /// The kubelet's `Next`: the container restarts now, and its next back-off doubles (or
    /// starts again at 10 s once forgotten).
    fn next_back_off(&mut self, ns: &str, pod: &str, c: &str, now: Timestamp) {
        let entry = self.back_off.entry((ns.to_owned(), pod.to_owned(), c.to_owned()));
        let b = entry.or_insert(BackOff { period: SignedDuration::ZERO, updated: now });
        b.period = if b.period.is_zero() || b.expired(now) {
            BACK_OFF_FIRST
        } else {
            (b.period * 2).min(BACK_OFF_MAX)
        };
        b.updated = now;
    }

    /// Writes the pod's new status, its containers' readiness gated as the probes say; once
    /// stored, the runs it starts and ends start and stop their processes.
    fn write(&self, api: &Api<'_>, pod: &Value, mut status: Value, sim: &Simulation, timers: &mut Timers) {
        if let Some(at) = self.gate(pod, &mut status, api.clock.now(), sim) {
            timers.at(at, Controller::Kubelet, meta_str(pod, "namespace"), meta_str(pod, "name"));
        }
        let Some(rt) = &self.runtime else {
            self.store_status(api, pod, status);
            return;
        };
        let before = container_statuses(pod);
        let changes: Vec<RunChange> = container_statuses_of(&status)
            .iter()
            .filter_map(|s| {
                let name = status_name(s);
                let was = before
                    .iter()
                    .find(|b| status_name(b) == name)
                    .filter(|b| running(b))
                    .and_then(|b| b["containerID"].as_str());
                let now = running(s).then(|| s["containerID"].as_str()).flatten();
                (was != now).then(|| RunChange {
                    container: name.to_owned(),
                    stopped: was.map(str::to_owned),
                    started: now.map(|id| (id.to_owned(), s["restartCount"].as_i64().unwrap_or(0))),
                })
            })
            .collect();
        let pod_ip = status["podIP"].as_str().unwrap_or("").to_owned();
        // The containers started see the pod as it now is (its addresses, for variables
        // given from them).
        let mut now_pod = (!changes.is_empty()).then(|| pod.clone());
        if let Some(p) = &mut now_pod {
            p["status"] = status.clone();
        }
        if !self.store_status(api, pod, status) || changes.is_empty() {
            return;
        }
        let started_pod = now_pod.as_ref().unwrap_or(pod);
        let (ns, pod_name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
        for RunChange { container, stopped, started } in changes {
            if let Some(id) = stopped {
                rt.containers.stop(ns, pod_name, &container, &id);
            }
            let Some((id, restart)) = started else { continue };
            let c = crate::container_runtime::Container {
                pod_ip: pod_ip.clone(),
                id: id.clone(),
                restart,
                ..crate::pod_log::container(started_pod, &container)
            };
            let cluster = rt.cluster.clone();
            let exit =
                ProcessExit { namespace: ns.to_owned(), pod: pod_name.to_owned(), container, id, code: 0 };
            rt.containers.start(&c, move |code| cluster.container_exited(ProcessExit { code, ..exit }));
        }
    }

    /// Refuses a pod its admission failed (upstream's `rejectPod`): a Warning Event of the
    /// failed predicate, and the pod `Failed` with it as reason, no container ever started.
    fn reject(&self, api: &Api<'_>, pod: &Value, predicate: &str, why: &str) {
        let message = format!("Predicate {predicate} failed: {why}");
        api.kubelet_event(pod, None, true, predicate, &message);
        let mut status = json!({
            "phase": "Failed",
            "reason": predicate,
            "message": format!("Pod was rejected: {message}"),
            "startTime": api.clock.rfc3339(),
        });
        if let Some(qos) = pod.pointer("/status/qosClass") {
            status["qosClass"] = qos.clone();
        }
        // Conditions the kubelet does not own (a `DisruptionTarget`, say) are kept.
        let kept: Vec<Value> = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| !KUBELET_CONDITIONS.contains(&c["type"].as_str().unwrap_or("")))
            .cloned()
            .collect();
        if !kept.is_empty() {
            status["conditions"] = json!(kept);
        }
        self.store_status(api, pod, status);
    }

    /// Stores the pod's status as the kubelet; whether it was.
    fn store_status(&self, api: &Api<'_>, pod: &Value, status: Value) -> bool {
        match api.write_status(api.defs.pods, pod, status, "kubelet") {
            Ok(_) => true,
            Err(e) => {
                log_failure(Controller::Kubelet, meta_str(pod, "name"), &e);
                false
            }
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

/// The kubelet's admission of a pod it has not started (upstream's predicate admit handler, as
/// far as a simulated node can fail it): its host ports must be free of the pods the node's
/// kubelet already admitted — started, not finished, not yet gone.
fn admits(api: &Api<'_>, pod: &Value, node: &str) -> bool {
    let want = host_ports(pod);
    if want.is_empty() {
        return true;
    }
    let uid = meta_str(pod, "uid");
    let used: Vec<HostPort> = api
        .list(api.defs.pods, None)
        .iter()
        .filter(|p| {
            p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node)
                && meta_str(p, "uid") != uid
                && p.pointer("/status/startTime").is_some()
                && !matches!(phase(p), "Succeeded" | "Failed")
        })
        .flat_map(|p| host_ports(p))
        .collect();
    !want.iter().any(|w| ports_conflict(w, &used))
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

/// The five conditions of a pod on a node, in the kubelet's order, for its containers'
/// `statuses`: Ready when all are; `done` when the pod has finished.
fn conditions(pod: &Value, statuses: &[Value], done: bool, now: &str) -> Value {
    let old: Vec<Value> =
        pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let unready: Vec<&str> = statuses.iter().filter(|s| s["ready"] != true).map(status_name).collect();
    let ready = unready.is_empty() && !done;
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

/// The pod's containers' statuses, as its status has them.
fn container_statuses(pod: &Value) -> &[Value] {
    pod.get("status").map_or(&[], container_statuses_of)
}

fn container_statuses_of(status: &Value) -> &[Value] {
    status["containerStatuses"].as_array().map_or(&[], Vec::as_slice)
}

fn status_name(s: &Value) -> &str {
    s["name"].as_str().unwrap_or("")
}

fn running(s: &Value) -> bool {
    s.pointer("/state/running").is_some()
}

/// The kubelet's `getPhase` over a pod's containers: waiting to start is Pending; one running,
/// Running; all stopped, by the restart policy and how they exited. A container waiting to
/// restart counts as stopped, not succeeded.
fn phase_of(statuses: &[Value], policy: &str) -> &'static str {
    let (mut run, mut stopped, mut succeeded, mut waiting) = (0, 0, 0, 0);
    for s in statuses {
        if running(s) {
            run += 1;
        } else if let Some(t) = s.pointer("/state/terminated") {
            stopped += 1;
            if t["exitCode"] == 0 {
                succeeded += 1;
            }
        } else if s.pointer("/lastState/terminated").is_some() {
            stopped += 1;
        } else {
            waiting += 1;
        }
    }
    match (policy, run, stopped) {
        _ if waiting > 0 => "Pending",
        (_, r, _) if r > 0 => "Running",
        (_, _, 0) => "Pending",
        ("Always", ..) => "Running",
        ("OnFailure", ..) if stopped != succeeded => "Running",
        ("Never", ..) if stopped != succeeded => "Failed",
        _ => "Succeeded",
    }
}

/// A Go `time.Duration`'s text for whole seconds: `10s`, `1m20s`, `5m0s`.
fn go_duration(d: SignedDuration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{}s", s / 60, s % 60),
        s => format!("{}h{}m{}s", s / 3600, s % 3600 / 60, s % 60),
    }
}

fn containers(pod: &Value) -> Vec<Value> {
    containers_of(pod).to_vec()
}

/// The pod's containers' specs.
fn containers_of(pod: &Value) -> &[Value] {
    pod.pointer("/spec/containers").and_then(Value::as_array).map_or(&[], Vec::as_slice)
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

/// The status of a deleted pod whose containers were stopped, if it is not terminal yet: each
/// running container killed (exit code 137, `Error`), not ready; the pod `Failed` — or
/// `Succeeded` when every container had already exited 0 — and its readiness false.
fn terminal_status(pod: &Value, now: &str) -> Option<Value> {
    if matches!(phase(pod), "Succeeded" | "Failed") {
        return None;
    }
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut all_zero = true;
    for list in ["initContainerStatuses", "containerStatuses"] {
        let Some(Value::Array(statuses)) = status.get_mut(list) else { continue };
        for s in statuses {
            if let Some(run) = s.pointer("/state/running").cloned() {
                s["state"] = json!({ "terminated": { "exitCode": KILLED, "reason": "Error",
                    "startedAt": run["startedAt"].clone(), "finishedAt": now,
                    "containerID": s["containerID"].clone() } });
                s["ready"] = json!(false);
                s["started"] = json!(false);
            }
            all_zero &= list == "initContainerStatuses"
                || s.pointer("/state/terminated/exitCode").and_then(Value::as_i64) == Some(0);
        }
    }
    let ran = status.get("containerStatuses").and_then(Value::as_array).is_some_and(|l| !l.is_empty());
    status["phase"] = json!(if ran && all_zero { "Succeeded" } else { "Failed" });
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        for c in conditions.iter_mut().filter(|c| c["type"] == "Ready" || c["type"] == "ContainersReady") {
            if c["status"] != "False" {
                c["status"] = json!("False");
                c["reason"] = json!("PodCompleted");
                c["lastTransitionTime"] = json!(now);
            }
        }
    }
    Some(status)
}

/// Why a container's status waits on its image (`ErrImagePull`, `ImagePullBackOff`), if it does.
fn pull_wait(s: &Value) -> Option<&str> {
    s.pointer("/state/waiting/reason")
        .and_then(Value::as_str)
        .filter(|r| matches!(*r, "ErrImagePull" | "ImagePullBackOff"))
}

/// A container's status while it waits on its image (`ErrImagePull`, `ImagePullBackOff`): not
/// started, no container id.
fn waiting_on_image(c: &Value, reason: &str, message: &str) -> Value {
    json!({
        "image": c["image"],
        "imageID": "",
        "lastState": {},
        "name": c["name"],
        "ready": false,
        "restartCount": 0,
        "started": false,
        "state": { "waiting": { "reason": reason, "message": message } },
    })
}

/// Why the pull of `image` failed, as the kubelet words it with containerd's error: the image
/// not found at its full reference.
fn pull_error(image: &str) -> String {
    let reference = full_reference(image);
    format!(
        "Failed to pull image {}: rpc error: code = NotFound desc = failed to pull and unpack image {}: failed to resolve reference {}: {reference}: not found",
        go_quote(image),
        go_quote(&reference),
        go_quote(&reference)
    )
}

/// An image reference as containerd resolves it: on `docker.io` (under `library/` for a
/// one-part name) unless it names a registry, with `:latest` unless it has a tag or digest.
fn full_reference(image: &str) -> String {
    let (first, rest) = image.split_once('/').unwrap_or(("", image));
    let named_registry = first.contains(['.', ':']) || first == "localhost";
    let mut reference = match (first, named_registry) {
        ("", _) => format!("docker.io/library/{rest}"),
        (_, true) => image.to_owned(),
        (_, false) => format!("docker.io/{image}"),
    };
    let last = reference.rsplit('/').next().unwrap_or("");
    if !last.contains([':', '@']) {
        reference.push_str(":latest");
    }
    reference
}

/// The status of a pod its kubelet has just started: each container running, or waiting on
/// its image when the simulated registry has not got it.
fn start(pod: &Value, host_ip: &str, pod_ip: &str, now: &str, sim: &Simulation) -> Value {
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
        .map(|c| {
            let image = c["image"].as_str().unwrap_or("");
            if sim.pulls(image) {
                container_status(pod, c, false, 0, json!({ "running": { "startedAt": now } }), json!({}))
            } else {
                waiting_on_image(c, "ErrImagePull", &pull_error(image))
            }
        })
        .collect();
    let restart = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always");
    status.insert("phase".into(), json!(phase_of(&running, restart)));
    status.insert("conditions".into(), conditions(pod, &running, false, now));
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

/// The status after runs of the pod's containers end (`ended`: each with its exit code and what
/// becomes of it) and containers whose back-off is over start again (`restarting`); the pod's
/// phase follows.
fn runs_end(
    pod: &Value,
    ended: &[(String, i32, Then)],
    restarting: &[String],
    policy: &str,
    now: &str,
) -> Value {
    let mut status = pod["status"].clone();
    let specs = containers(pod);
    let mut list = container_statuses(pod).to_vec();
    for (c, spec) in list.iter_mut().zip(&specs) {
        let name = status_name(c).to_owned();
        let count = c["restartCount"].as_i64().unwrap_or(0);
        let run_again = || json!({ "running": { "startedAt": now } });
        if let Some((_, code, then)) = ended.iter().find(|(n, ..)| *n == name) {
            let since = c.pointer("/state/running/startedAt").cloned().unwrap_or_else(|| json!(now));
            let terminated = json!({ "terminated": {
                "containerID": container_id(pod, &name, count), "exitCode": code, "finishedAt": now,
                "reason": if *code == 0 { "Completed" } else { "Error" }, "startedAt": since,
            } });
            *c = match then {
                Then::Stays => container_status(pod, spec, false, count, terminated, json!({})),
                Then::Restarts => container_status(pod, spec, false, count + 1, run_again(), terminated),
                Then::BacksOff(period) => {
                    let waiting = json!({ "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": format!(
                            "back-off {} restarting failed container={name} pod={}_{}({})",
                            go_duration(*period), meta_str(pod, "name"), meta_str(pod, "namespace"), meta_str(pod, "uid"),
                        ),
                    } });
                    container_status(pod, spec, false, count, waiting, terminated)
                }
            };
        } else if restarting.contains(&name) {
            let last = c["lastState"].clone();
            *c = container_status(pod, spec, false, count + 1, run_again(), last);
        }
    }
    let phase = phase_of(&list, policy);
    let done = matches!(phase, "Succeeded" | "Failed");
    status["phase"] = json!(phase);
    status["conditions"] = conditions(pod, &list, done, now);
    status["containerStatuses"] = json!(list);
    status
}
