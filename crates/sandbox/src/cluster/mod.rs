//! A simulated cluster beside the API: nodes, a scheduler, a kubelet per node, the workload
//! controllers and the namespace bootstrap of kube-controller-manager.
//!
//! Served kinds are half of what an operator's test needs; the other half is the cluster acting on
//! them. With a [`Simulation`] in its [`SandboxConfig`](crate::SandboxConfig), the sandbox creates
//! nodes, binds pending pods to them, runs the bound pods (Pending → Running → Ready, a Job's pods
//! to Succeeded), and plays the controllers that turn Deployments into ReplicaSets into Pods, Jobs
//! into Pods and Services into Endpoints. Every component acts as a real one does — it follows the
//! store's changes (a watch) and writes through the API's verbs with the object's
//! `resourceVersion` as precondition, validated and recorded in `managedFields` under the
//! component's name — so what a controller under test sees is what a cluster would show it.
//!
//! | module | plays |
//! |---|---|
//! | `nodes` | the nodes, their kubelets' leases, and the node lifecycle controller |
//! | `scheduler` | kube-scheduler: filters, a least-allocated pick, `Unschedulable` |
//! | `kubelet` | the kubelets: pod start, readiness, completion, graceful termination |
//! | `replicaset` | the ReplicaSet and ReplicationController controllers |
//! | `deployment` | the Deployment controller: ReplicaSets per template, rolling updates |
//! | `statefulset` | the StatefulSet controller: ordinals, claims, partitioned updates |
//! | `daemonset` | the DaemonSet controller: a pod per eligible node |
//! | `history` | the ControllerRevisions of StatefulSets and DaemonSets |
//! | `controller_ref` | the ControllerRef manager: owners adopt matching orphan pods, release the rest |
//! | `job` | the Job controller and the TTL-after-finished controller |
//! | `cronjob` | the CronJob controller, on the simulation's clock |
//! | `endpoints` | the Endpoints and EndpointSlice controllers |
//! | `disruption` | the disruption controller: PodDisruptionBudgets' status |
//! | `autoscaler` | the horizontal pod autoscaler, on resource metrics |
//! | `bootstrap` | the service account and root CA publisher controllers |
//!
//! Everything runs on the sandbox's [`Clock`], which a test pauses and advances. Each part can be
//! switched off ([`Controllers`]), and the whole left out for a bare API server.
//!
//! Some controllers run with every sandbox, simulated cluster or not, and cannot be switched off
//! (`core_controllers`):
//!
//! | module | plays |
//! |---|---|
//! | `garbage_collector` | the garbage collector, for dependents written with a missing owner |
//! | `namespace` | the namespace controller: a Terminating namespace emptied, then finalized |
//! | `protection` | the PVC and PV protection controllers |
//! | `quota` | the resource quota controller: quotas' `status.used` |
//! | `role_aggregation` | the ClusterRole aggregation controller: `admin`, `edit`, `view` and any aggregated role |
//! | `deployment` | without the simulated Deployment controller, its status-only mode |
//!
//! ## Warning
//!
//! * Containers run on the sandbox's simulated runtime (`crate::container_runtime`): a command
//!   the built-in shell has runs as a process; an image's own program does not run.
//! * Timestamps the API server itself writes (`creationTimestamp`, `deletionTimestamp`) follow
//!   the wall clock, not [`Clock`]: only what the simulation writes follows a paused clock.

mod api;
mod autoscaler;
mod bootstrap;
mod controller_ref;

pub(crate) mod core_controllers;
mod cronjob;
mod daemonset;
pub(crate) mod deployment;
mod disruption;
mod endpoints;
mod garbage_collector;
mod history;
mod job;
mod kubelet;
mod namespace;
mod nodes;
mod policy_status;
mod prober;
mod protection;
mod quota;
mod replicaset;
mod role_aggregation;
mod scheduler;
mod statefulset;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;
use tokio::runtime::RuntimeFlavor;
use tokio::sync::mpsc::error::TryRecvError;

pub use crate::clock::Clock;

use crate::object_meta::meta_str;
use crate::status::ApiError;
use crate::store::{ChangeType, Followed, Store};
use api::{Api, Defs};

/// A part of the simulation, named as kube-controller-manager's `--controllers` names its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Controller {
    /// kube-scheduler: binds pending pods to nodes that fit them.
    Scheduler,
    /// The kubelets: run the pods bound to their node and renew their node's lease.
    Kubelet,
    /// Taints nodes that are not ready and evicts their pods once tolerations run out.
    NodeLifecycle,
    /// Deletes the pods of nodes that no longer exist.
    PodGc,
    /// ReplicaSets → Pods.
    ReplicaSet,
    /// ReplicationControllers → Pods.
    ReplicationController,
    /// Deployments → ReplicaSets, with rolling updates.
    Deployment,
    /// StatefulSets → Pods and claims, in order.
    StatefulSet,
    /// DaemonSets → a Pod per node.
    DaemonSet,
    /// CronJobs → Jobs, on schedule.
    CronJob,
    /// Jobs → Pods.
    Job,
    /// Deletes finished Jobs once their `ttlSecondsAfterFinished` has passed.
    TtlAfterFinished,
    /// PodDisruptionBudgets' status.
    Disruption,
    /// Services → Endpoints.
    Endpoint,
    /// Services → EndpointSlices.
    EndpointSlice,
    /// The `default` ServiceAccount in every namespace.
    ServiceAccount,
    /// The `kube-root-ca.crt` ConfigMap in every namespace.
    RootCaCertPublisher,
    /// HorizontalPodAutoscalers → their targets' replicas, from resource metrics.
    HorizontalPodAutoscaler,
}

impl Controller {
    /// Every part, in the order the simulation runs them.
    pub const ALL: [Self; 18] = [
        Self::ServiceAccount,
        Self::RootCaCertPublisher,
        Self::CronJob,
        Self::Deployment,
        Self::StatefulSet,
        Self::DaemonSet,
        Self::ReplicaSet,
        Self::ReplicationController,
        Self::Job,
        Self::TtlAfterFinished,
        Self::Scheduler,
        Self::Kubelet,
        Self::NodeLifecycle,
        Self::PodGc,
        Self::Disruption,
        Self::Endpoint,
        Self::EndpointSlice,
        Self::HorizontalPodAutoscaler,
    ];

    /// The name kube-controller-manager's `--controllers` flag uses (and `scheduler`,
    /// `kubelet` for the two that are not controllers there).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Scheduler => "scheduler",
            Self::Kubelet => "kubelet",
            Self::NodeLifecycle => "node-lifecycle-controller",
            Self::PodGc => "pod-garbage-collector-controller",
            Self::ReplicaSet => "replicaset-controller",
            Self::ReplicationController => "replicationcontroller-controller",
            Self::Deployment => "deployment-controller",
            Self::StatefulSet => "statefulset-controller",
            Self::DaemonSet => "daemonset-controller",
            Self::CronJob => "cronjob-controller",
            Self::Job => "job-controller",
            Self::TtlAfterFinished => "ttl-after-finished-controller",
            Self::Disruption => "disruption-controller",
            Self::Endpoint => "endpoints-controller",
            Self::EndpointSlice => "endpointslice-controller",
            Self::ServiceAccount => "serviceaccount-controller",
            Self::RootCaCertPublisher => "root-ca-certificate-publisher-controller",
            Self::HorizontalPodAutoscaler => "horizontal-pod-autoscaler-controller",
        }
    }
}

impl fmt::Display for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The parts of the simulation that run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controllers(BTreeSet<Controller>);

impl Default for Controllers {
    fn default() -> Self {
        Self::all()
    }
}

impl Controllers {
    /// Every part.
    #[must_use]
    pub fn all() -> Self {
        Self(Controller::ALL.into_iter().collect())
    }

    /// None: nodes exist, nothing acts.
    #[must_use]
    pub fn none() -> Self {
        Self(BTreeSet::new())
    }

    /// These, less `c`.
    #[must_use]
    pub fn without(mut self, c: Controller) -> Self {
        self.0.remove(&c);
        self
    }

    /// These and `c`.
    #[must_use]
    pub fn with(mut self, c: Controller) -> Self {
        self.0.insert(c);
        self
    }

    /// Whether `c` runs.
    #[must_use]
    pub fn runs(&self, c: Controller) -> bool {
        self.0.contains(&c)
    }
}

/// An unknown name in a `--controllers` list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown controller {name:?} in {list:?}: known are * and {known}")]
pub struct UnknownController {
    /// The name not known.
    pub name: String,
    /// The whole list given.
    pub list: String,
    /// The names known.
    pub known: String,
}

impl FromStr for Controllers {
    type Err = UnknownController;

    /// kube-controller-manager's `--controllers` syntax: a comma-separated list where `*` is
    /// every part, `name` adds one and `-name` takes one away (`*,-scheduler`).
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let mut out = Self::none();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "*" {
                out = Self::all();
                continue;
            }
            let (off, name) = item.strip_prefix('-').map_or((false, item), |n| (true, n));
            let c = Controller::ALL.into_iter().find(|c| c.name() == name || short(*c) == name).ok_or_else(
                || UnknownController {
                    name: name.to_owned(),
                    list: list.to_owned(),
                    known: Controller::ALL.map(short).join(", "),
                },
            )?;
            out = if off { out.without(c) } else { out.with(c) };
        }
        Ok(out)
    }
}

/// The name without kube-controller-manager's `-controller` suffix (`replicaset`).
fn short(c: Controller) -> &'static str {
    match c {
        Controller::Scheduler => "scheduler",
        Controller::Kubelet => "kubelet",
        Controller::NodeLifecycle => "nodelifecycle",
        Controller::PodGc => "podgc",
        Controller::ReplicaSet => "replicaset",
        Controller::ReplicationController => "replicationcontroller",
        Controller::Deployment => "deployment",
        Controller::StatefulSet => "statefulset",
        Controller::DaemonSet => "daemonset",
        Controller::CronJob => "cronjob",
        Controller::Job => "job",
        Controller::TtlAfterFinished => "ttl-after-finished",
        Controller::Disruption => "disruption",
        Controller::Endpoint => "endpoint",
        Controller::EndpointSlice => "endpointslice",
        Controller::ServiceAccount => "serviceaccount",
        Controller::RootCaCertPublisher => "root-ca-cert-publisher",
        Controller::HorizontalPodAutoscaler => "horizontalpodautoscaling",
    }
}

/// What each simulated node offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeShape {
    /// `status.capacity.cpu` (and allocatable), a quantity.
    pub cpu: String,
    /// `status.capacity.memory`, a quantity.
    pub memory: String,
    /// How many pods fit.
    pub pods: u32,
}

impl Default for NodeShape {
    /// A kind node on a laptop: 8 CPUs, 16 GiB, 110 pods.
    fn default() -> Self {
        Self { cpu: "8".into(), memory: "16Gi".into(), pods: 110 }
    }
}

/// Settings of the simulated cluster.
///
/// ```
/// use std::time::Duration;
/// use kube_sandbox::{Controller, Controllers, Simulation};
/// let sim = Simulation {
///     nodes: 5,
///     pod_ready_after: Some(Duration::ZERO),
///     controllers: Controllers::all().without(Controller::Scheduler),
///     ..Simulation::default()
/// };
/// assert!(!sim.controllers.runs(Controller::Scheduler));
/// ```
#[derive(Debug, Clone)]
pub struct Simulation {
    /// Nodes created at start (`sandbox-node-1`…), Ready.
    pub nodes: usize,
    /// What each node offers.
    pub node_shape: NodeShape,
    /// How long a running pod takes to turn Ready (its containers' readiness). `None`: as the
    /// sandbox's [`rollout`](crate::SandboxConfig::rollout) paces pods — `Paced(d)` after `d`,
    /// `Instant` at once.
    pub pod_ready_after: Option<Duration>,
    /// How long a container running its image's entrypoint (one whose command the runtime does
    /// not run) in a pod that does not restart (a Job's) runs before it exits 0.
    pub run_to_completion: Duration,
    /// How long a kubelet takes to stop a deleted pod's containers before it removes the pod
    /// (never more than the pod's grace period).
    pub stop_after: Duration,
    /// Images the simulated registry does not have, as written in a container's `image`, `*`
    /// matching any run of characters (`*:non-existent`): a container of one never starts, its
    /// status waiting `ErrImagePull`, then `ImagePullBackOff`, with a kubelet's events, until
    /// the pod's image is changed to one there is. Every other image is there.
    pub missing_images: Vec<String>,
    /// The parts that run.
    pub controllers: Controllers,
    /// The clock the simulation runs on.
    pub clock: Clock,
}

impl Default for Simulation {
    fn default() -> Self {
        Self {
            nodes: 3,
            node_shape: NodeShape::default(),
            pod_ready_after: None,
            run_to_completion: Duration::from_secs(1),
            stop_after: Duration::ZERO,
            missing_images: Vec::new(),
            controllers: Controllers::all(),
            clock: Clock::default(),
        }
    }
}

impl Simulation {
    /// A simulation for tests: three nodes, pods ready as soon as they run, Job pods done in a
    /// second of [`Clock`] time.
    #[must_use]
    pub fn instant() -> Self {
        Self { pod_ready_after: Some(Duration::ZERO), ..Self::default() }
    }

    /// How long a running pod takes to turn Ready.
    #[must_use]
    pub fn ready_after(&self) -> Duration {
        self.pod_ready_after.unwrap_or_default()
    }

    /// Whether the simulated registry has `image` (see [`Simulation::missing_images`]).
    ///
    /// ```
    /// use kube_sandbox::Simulation;
    /// let sim = Simulation { missing_images: vec!["*:non-existent".into()], ..Simulation::default() };
    /// assert!(!sim.pulls("foo:non-existent"));
    /// assert!(sim.pulls("nginx:1.27"));
    /// ```
    #[must_use]
    pub fn pulls(&self, image: &str) -> bool {
        !self.missing_images.iter().any(|pattern| glob(pattern, image))
    }
}

/// Whether `text` matches `pattern`, `*` in it matching any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(text) = text.strip_prefix(head) else { return false };
            (0..=text.len()).filter(|i| text.is_char_boundary(*i)).any(|i| glob(rest, &text[i..]))
        }
    }
}

/// What a test says to the simulated cluster, beyond the API.
#[derive(Default)]
struct Orders {
    /// Pods whose containers are to exit with this code.
    exits: BTreeMap<(String, String), i32>,
    /// Containers whose process exited, in the order they did.
    container_exits: Vec<kubelet::ProcessExit>,
    /// Probes that finished, in the order they did.
    probe_results: Vec<prober::ProbeResult>,
    /// Nodes whose kubelet reports NotReady (`false`) or was told to report Ready again.
    node_ready: BTreeMap<String, bool>,
}

/// The simulated cluster of a sandbox: its clock, and what a test may do that the API cannot
/// (stop a node's kubelet, make a container exit).
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_sandbox::{Sandbox, SandboxConfig, Simulation};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kube::Error> {
/// let sandbox = Sandbox::with_config(SandboxConfig::with_cluster(Simulation::instant()));
/// let pods: kube::Api<Pod> = kube::Api::default_namespaced(sandbox.client());
/// let pod = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "once" },
///     "spec": { "restartPolicy": "Never", "containers": [{ "name": "main", "image": "busybox" }] },
/// }))
/// .unwrap();
/// pods.create(&Default::default(), &pod).await?;
/// let phase = |p: Pod| p.status.and_then(|s| s.phase).unwrap_or_default();
/// // Scheduled, started by its node's kubelet: Running. Then its container exits 0.
/// while phase(pods.get("once").await?) != "Running" {
///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
/// }
/// sandbox.cluster().unwrap().exit_pod("default", "once", 0);
/// while phase(pods.get("once").await?) != "Succeeded" {
///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Simulation,
    orders: Mutex<Orders>,
    woken: tokio::sync::Notify,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster").field("settings", &self.inner.settings).finish_non_exhaustive()
    }
}

impl Cluster {
    pub(crate) fn new(settings: Simulation) -> Self {
        Self {
            inner: Arc::new(Inner { settings, orders: Mutex::default(), woken: tokio::sync::Notify::new() }),
        }
    }

    /// The clock the simulation runs on: pause it, advance it.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.inner.settings.clock
    }

    /// The settings it runs with.
    #[must_use]
    pub fn settings(&self) -> &Simulation {
        &self.inner.settings
    }

    /// Makes the containers of pod `ns/name` exit with `code` (non-zero: the pod fails, or its
    /// containers restart under `restartPolicy: Always`/`OnFailure`).
    pub fn exit_pod(&self, ns: &str, name: &str, code: i32) {
        self.inner.orders.lock().exits.insert((ns.to_owned(), name.to_owned()), code);
        self.inner.woken.notify_one();
    }

    /// Makes node `name`'s kubelet report the node NotReady (`false`) or Ready again (`true`).
    /// A NotReady node is tainted `node.kubernetes.io/not-ready`; its pods turn unready and are
    /// evicted when their toleration of the taint runs out (300 s by default).
    pub fn set_node_ready(&self, name: &str, ready: bool) {
        self.inner.orders.lock().node_ready.insert(name.to_owned(), ready);
        self.inner.woken.notify_one();
    }

    /// A container's process exited with `code`: its kubelet ends the container's run.
    pub(crate) fn container_exited(&self, exit: kubelet::ProcessExit) {
        self.inner.orders.lock().container_exits.push(exit);
        self.inner.woken.notify_one();
    }

    /// A probe finished: its kubelet counts it.
    pub(crate) fn probe_finished(&self, result: prober::ProbeResult) {
        self.inner.orders.lock().probe_results.push(result);
        self.inner.woken.notify_one();
    }

    fn take_probe_results(&self) -> Vec<prober::ProbeResult> {
        std::mem::take(&mut self.inner.orders.lock().probe_results)
    }

    fn take_exits(&self) -> BTreeMap<(String, String), i32> {
        std::mem::take(&mut self.inner.orders.lock().exits)
    }

    fn take_container_exits(&self) -> Vec<kubelet::ProcessExit> {
        std::mem::take(&mut self.inner.orders.lock().container_exits)
    }

    fn take_node_orders(&self) -> BTreeMap<String, bool> {
        std::mem::take(&mut self.inner.orders.lock().node_ready)
    }
}

/// How many queued pods and nodes make the kubelets run on a thread of their own beside the
/// round's other parts: below it a thread costs more than it gives.
const KUBELET_BESIDE: usize = 64;

/// Keys to look at again: `(namespace, name)`, each once.
pub(crate) type Queue = BTreeSet<(String, String)>;

/// What is due when: each part asks to be woken for an object at a time on the clock.
#[derive(Default)]
pub(crate) struct Timers(BTreeMap<jiff::Timestamp, Vec<(Controller, String, String)>>);

impl Timers {
    pub(crate) fn at(&mut self, when: jiff::Timestamp, c: Controller, ns: &str, name: &str) {
        self.0.entry(when).or_default().push((c, ns.to_owned(), name.to_owned()));
    }

    /// Takes on what `other` is to wake.
    fn extend(&mut self, other: Self) {
        for (when, mut items) in other.0 {
            self.0.entry(when).or_default().append(&mut items);
        }
    }

    fn next(&self) -> Option<jiff::Timestamp> {
        self.0.keys().next().copied()
    }

    fn due(&mut self, now: jiff::Timestamp) -> Vec<(Controller, String, String)> {
        let later = self.0.split_off(&now.checked_add(jiff::SignedDuration::from_nanos(1)).unwrap_or(now));
        let due = std::mem::replace(&mut self.0, later);
        due.into_values().flatten().collect()
    }
}

/// The simulation's state: each part's queue and caches.
pub(crate) struct World {
    cluster: Cluster,
    /// The CA certificate the root CA publisher spreads.
    ca: String,
    defs: Defs,
    queues: BTreeMap<Controller, Queue>,
    timers: Timers,
    scheduler: scheduler::Scheduler,
    kubelet: kubelet::Kubelets,
    nodes: nodes::Nodes,
    autoscalers: autoscaler::Autoscalers,
    /// The container runtime, for what containers use (the autoscaler reads it as metrics).
    containers: crate::container_runtime::Containers,
    /// The generation of the runtime's faults the kubelets last looked at their pods for.
    faults_seen: u64,
    /// The pods without a controller, for the owners that may adopt them.
    orphans: api::Orphans,
    /// Pods (and, marked `true`, ReplicaSets) that have just become orphans: the owners whose
    /// selectors match them look.
    new_orphans: BTreeSet<(bool, String, String)>,
}

impl World {
    fn new(cluster: Cluster, ca: String, containers: crate::container_runtime::Containers) -> Self {
        let kubelet = kubelet::Kubelets::new(kubelet::Runtime {
            containers: containers.clone(),
            cluster: cluster.clone(),
        });
        Self {
            cluster,
            ca,
            defs: Defs::get(),
            queues: BTreeMap::new(),
            timers: Timers::default(),
            scheduler: scheduler::Scheduler::default(),
            kubelet,
            nodes: nodes::Nodes::default(),
            autoscalers: autoscaler::Autoscalers::default(),
            faults_seen: containers.faults.generation(),
            containers,
            orphans: api::Orphans::default(),
            new_orphans: BTreeSet::new(),
        }
    }

    fn runs(&self, c: Controller) -> bool {
        self.cluster.inner.settings.controllers.runs(c)
    }

    fn enqueue(&mut self, c: Controller, ns: &str, name: &str) {
        if self.runs(c) {
            self.queues.entry(c).or_default().insert((ns.to_owned(), name.to_owned()));
        }
    }

    fn take(&mut self, c: Controller) -> Queue {
        self.queues.remove(&c).unwrap_or_default()
    }

    /// Looks at every object, as informers do after their first list.
    fn resync(&mut self, store: &Store) {
        let d = &self.defs;
        let kinds = [
            d.namespaces,
            d.nodes,
            d.pods,
            d.replicasets,
            d.controllers,
            d.deployments,
            d.jobs,
            d.services,
            d.autoscalers,
        ];
        for def in kinds {
            for obj in store.snapshot(def, None).1 {
                self.observe(def.storage, &obj, None, ChangeType::Added);
            }
        }
    }

    /// A change seen on the watch: who must look at what.
    fn observe(&mut self, storage: &str, obj: &Value, old: Option<&Value>, kind: ChangeType) {
        let (ns, name) = (meta_str(obj, "namespace"), meta_str(obj, "name"));
        match storage {
            "namespaces." => {
                self.enqueue(Controller::ServiceAccount, "", name);
                self.enqueue(Controller::RootCaCertPublisher, "", name);
            }
            "serviceaccounts." if name == "default" => self.enqueue(Controller::ServiceAccount, "", ns),
            "configmaps." if name == bootstrap::ROOT_CA => {
                self.enqueue(Controller::RootCaCertPublisher, "", ns)
            }
            "nodes." => {
                self.scheduler.observe_node(obj, kind);
                self.nodes.observe(obj, kind);
                self.kubelet.observe_node(obj, kind == ChangeType::Deleted);
                self.enqueue(Controller::NodeLifecycle, "", name);
                self.enqueue(Controller::DaemonSet, "", "");
                self.enqueue(Controller::Kubelet, "", name);
                if kind == ChangeType::Deleted {
                    self.enqueue(Controller::PodGc, "", name);
                }
            }
            "pods." => {
                let glance = |o: &Value| PodGlance::deserialize(o).unwrap_or_default();
                let demand = || {
                    (
                        crate::quota::pod_requests(obj.get("spec").unwrap_or(&Value::Null)),
                        scheduler::host_ports(obj),
                    )
                };
                self.observe_pod(ns, name, &glance(obj), old.map(glance).as_ref(), kind, demand);
            }
            "replicasets.apps" => {
                self.enqueue(Controller::ReplicaSet, ns, name);
                let owner = controller(obj);
                if let Some(("Deployment", d)) = owner {
                    self.enqueue(Controller::Deployment, ns, d);
                }
                let orphan = kind != ChangeType::Deleted && owner.is_none();
                if self.orphans.observe(self.defs.replicasets.storage, ns, name, orphan) {
                    self.new_orphans.insert((true, ns.to_owned(), name.to_owned()));
                }
            }
            "replicationcontrollers." => self.enqueue(Controller::ReplicationController, ns, name),
            "deployments.apps" => self.enqueue(Controller::Deployment, ns, name),
            "jobs.batch" => {
                self.enqueue(Controller::Job, ns, name);
                self.enqueue(Controller::TtlAfterFinished, ns, name);
                if let Some(("CronJob", c)) = controller(obj) {
                    self.enqueue(Controller::CronJob, ns, c);
                }
            }
            "statefulsets.apps" => self.enqueue(Controller::StatefulSet, ns, name),
            "daemonsets.apps" => self.enqueue(Controller::DaemonSet, ns, name),
            "cronjobs.batch" => self.enqueue(Controller::CronJob, ns, name),
            "poddisruptionbudgets.policy" => self.enqueue(Controller::Disruption, ns, name),
            "horizontalpodautoscalers.autoscaling" => self.observe_autoscaler(ns, name, kind),
            "services." | "endpoints." | "endpointslices.discovery.k8s.io" => {
                let service = if storage == "endpointslices.discovery.k8s.io" {
                    obj.pointer("/metadata/labels/kubernetes.io~1service-name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                } else {
                    name
                };
                if !service.is_empty() {
                    self.enqueue(Controller::Endpoint, ns, service);
                    self.enqueue(Controller::EndpointSlice, ns, service);
                }
            }
            _ => {}
        }
    }

    /// An autoscaler changed. As upstream's queue (a fixed 15 s rate limit), a new one is first
    /// looked at a sync period later, and a change (its own status writes included) waits for
    /// the next periodic look; a deleted one is forgotten.
    fn observe_autoscaler(&mut self, ns: &str, name: &str, kind: ChangeType) {
        let c = Controller::HorizontalPodAutoscaler;
        match kind {
            ChangeType::Deleted => self.enqueue(c, ns, name),
            ChangeType::Added if self.runs(c) => {
                let now = self.cluster.inner.settings.clock.now();
                self.timers.at(now + autoscaler::SYNC_PERIOD, c, ns, name);
            }
            _ => {}
        }
    }

    /// A pod changed: who must look at it, and at what it was owned by.
    fn observe_pod(
        &mut self,
        ns: &str,
        name: &str,
        pod: &PodGlance,
        old: Option<&PodGlance>,
        kind: ChangeType,
        demand: impl FnOnce() -> (crate::quota::ResourceList, Vec<scheduler::HostPort>),
    ) {
        let node = pod.spec.node_name.as_deref().unwrap_or("");
        let key = (ns.to_owned(), name.to_owned());
        self.scheduler.observe_pod(key, node, pod.finished(), kind, demand);
        if node.is_empty() {
            if kind != ChangeType::Deleted {
                self.enqueue(Controller::Scheduler, ns, name);
            }
        } else {
            self.enqueue(Controller::Kubelet, ns, name);
        }
        let orphan = kind != ChangeType::Deleted && pod.controller().is_none();
        if self.orphans.observe(self.defs.pods.storage, ns, name, orphan) {
            self.new_orphans.insert((false, ns.to_owned(), name.to_owned()));
        }
        for (owner, owner_name) in [Some(pod), old].into_iter().flatten().filter_map(PodGlance::controller) {
            let c = match owner {
                "ReplicaSet" => Controller::ReplicaSet,
                "ReplicationController" => Controller::ReplicationController,
                "Job" => Controller::Job,
                "StatefulSet" => Controller::StatefulSet,
                "DaemonSet" => Controller::DaemonSet,
                _ => continue,
            };
            self.enqueue(c, ns, owner_name);
        }
        self.enqueue(Controller::Endpoint, ns, "");
        self.enqueue(Controller::EndpointSlice, ns, "");
        self.enqueue(Controller::Disruption, ns, "");
    }

    /// One round: everything queued and due is looked at, once.
    fn step(&mut self, store: &Store) {
        let clock = self.cluster.inner.settings.clock.clone();
        let now = clock.now();
        for (c, ns, name) in self.timers.due(now) {
            self.enqueue(c, &ns, &name);
        }
        for (node, ready) in self.cluster.take_node_orders() {
            self.kubelet.set_node_ready(&node, ready);
            self.enqueue(Controller::Kubelet, "", &node);
        }
        for ((ns, name), code) in self.cluster.take_exits() {
            self.kubelet.order_exit(&ns, &name, code);
            self.enqueue(Controller::Kubelet, &ns, &name);
        }
        for exit in self.cluster.take_container_exits() {
            self.enqueue(Controller::Kubelet, &exit.namespace, &exit.pod);
            self.kubelet.process_exited(exit);
        }
        for result in self.cluster.take_probe_results() {
            self.enqueue(Controller::Kubelet, &result.namespace, &result.pod);
            self.kubelet.probe_finished(result);
        }
        // The runtime's faults changed: every kubelet looks at its pods again.
        let faults = self.containers.faults.generation();
        if faults != self.faults_seen {
            self.faults_seen = faults;
            for pod in store.snapshot(self.defs.pods, None).1 {
                if pod.pointer("/spec/nodeName").is_some() {
                    self.enqueue(Controller::Kubelet, meta_str(&pod, "namespace"), meta_str(&pod, "name"));
                }
            }
        }
        self.seek_owners(store);
        let defs = self.defs;
        // Held aside for the round: the parts read it while the world is theirs to change.
        let orphans = std::mem::take(&mut self.orphans);
        let api = Api { store, clock: &clock, defs: &defs, orphans: &orphans };
        // The handle, not the settings, is cloned each round (an `Arc`).
        let cluster = self.cluster.clone();
        let settings = &cluster.inner.settings;
        // A long kubelet queue beside other work runs on a thread of its own, as the kubelets
        // of a cluster run beside its scheduler: each part looks only at what was queued before
        // the round began (nothing is queued during one), and the store orders their writes (a
        // write from a stale read is refused, and the change that overtook it queues it again).
        let beside = self.queue_len(Controller::Kubelet) >= KUBELET_BESIDE
            && self.queues.iter().any(|(c, q)| *c != Controller::Kubelet && !q.is_empty());
        let beside = beside.then(|| (self.take(Controller::Kubelet), std::mem::take(&mut self.kubelet)));
        std::thread::scope(|scope| {
            let api = &api;
            let beside = beside.map(|(queue, mut kubelet)| {
                scope.spawn(move || {
                    let mut again = Timers::default();
                    kubelet.sync(api, settings, &queue, &mut again);
                    (kubelet, again)
                })
            });
            self.run_parts(api, settings);
            if let Some(thread) = beside {
                let (kubelet, again) = thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                self.kubelet = kubelet;
                self.timers.extend(again);
            }
        });
        self.orphans = orphans;
        if self.scheduler.retry_due() {
            for (ns, name) in self.scheduler.unschedulable() {
                self.enqueue(Controller::Scheduler, &ns, &name);
            }
        }
    }

    /// Queues the owners whose selectors match a pod (a ReplicaSet) that has just become an
    /// orphan, as upstream's controllers look for the owners of an object without a controller
    /// reference (`getPodReplicaSets`, `getDeploymentsForReplicaSet` and their kin).
    fn seek_owners(&mut self, store: &Store) {
        let d = self.defs;
        let owners = [
            (d.replicasets, Controller::ReplicaSet),
            (d.controllers, Controller::ReplicationController),
            (d.jobs, Controller::Job),
            (d.statefulsets, Controller::StatefulSet),
            (d.daemonsets, Controller::DaemonSet),
        ];
        let deployments = [(d.deployments, Controller::Deployment)];
        for (replica_set, ns, name) in std::mem::take(&mut self.new_orphans) {
            let (of, owners): (_, &[_]) =
                if replica_set { (d.replicasets, &deployments) } else { (d.pods, &owners) };
            let Some(orphan) = store.stored(of, &ns, &name) else { continue };
            let labels =
                orphan.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
            for &(def, c) in owners {
                if !self.runs(c) {
                    continue;
                }
                for owner in store.snapshot(def, Some(&ns)).1 {
                    let selector = replicaset::selector_of(def, &owner);
                    if crate::selector::selector_matches(&selector, &labels) {
                        self.enqueue(c, &ns, meta_str(&owner, "name"));
                    }
                }
            }
        }
    }

    fn queue_len(&self, c: Controller) -> usize {
        self.queues.get(&c).map_or(0, BTreeSet::len)
    }

    /// Each part that runs looks at what is queued for it, in [`Controller::ALL`]'s order.
    fn run_parts(&mut self, api: &Api<'_>, settings: &Simulation) {
        for c in Controller::ALL {
            if !self.runs(c) {
                continue;
            }
            let queue = self.take(c);
            if queue.is_empty() {
                continue;
            }
            let mut again = Timers::default();
            match c {
                Controller::ServiceAccount => bootstrap::service_accounts(api, &queue),
                Controller::RootCaCertPublisher => bootstrap::root_ca(api, &queue, &self.ca),
                Controller::Deployment => deployment::sync(api, &queue, &mut again),
                Controller::StatefulSet => statefulset::sync(api, &queue, &mut again),
                Controller::DaemonSet => daemonset::sync(api, &queue, &mut again),
                Controller::CronJob => cronjob::sync(api, &queue, &mut again),
                Controller::ReplicaSet => replicaset::sync(api, api.defs.replicasets, &queue, &mut again),
                Controller::ReplicationController => {
                    replicaset::sync(api, api.defs.controllers, &queue, &mut again);
                }
                Controller::Job => job::sync(api, &queue, &mut again),
                Controller::TtlAfterFinished => job::ttl(api, &queue, &mut again),
                Controller::Scheduler => self.scheduler.schedule(api, &queue),
                Controller::Kubelet => self.kubelet.sync(api, settings, &queue, &mut again),
                Controller::NodeLifecycle => self.nodes.lifecycle(api, &queue, &mut again),
                Controller::PodGc => nodes::pod_gc(api, &queue),
                Controller::Disruption => disruption::sync(api, &queue, &mut again),
                Controller::Endpoint => endpoints::endpoints(api, &queue),
                Controller::EndpointSlice => endpoints::slices(api, &queue),
                Controller::HorizontalPodAutoscaler => {
                    autoscaler::sync(api, &mut self.autoscalers, &self.containers, &queue, &mut again);
                }
            }
            self.timers.extend(again);
        }
    }
}

/// The kind and name of the controller that owns `obj` (its owner reference with `controller:
/// true`; [`PodGlance::controller`] reads the same from a glance).
fn controller(obj: &Value) -> Option<(&str, &str)> {
    let owner = obj
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?;
    Some((owner.get("kind")?.as_str()?, owner.get("name")?.as_str()?))
}

/// Creates the nodes, then runs the simulation until the sandbox is dropped: each round takes
/// what the watch brought (in one batch), what fell due on the clock and what a test ordered.
pub(crate) async fn run(shared: Weak<crate::SandboxState>, cluster: Cluster) {
    let (mut feed, mut world) = {
        let Some(strong) = shared.upgrade() else { return };
        let store = &strong.store;
        let feed = store.follow();
        let ca = crate::rest::server::authority(&strong).map(|a| a.pem.clone()).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the sandbox's CA could not be made");
            String::new()
        });
        let mut world = World::new(cluster.clone(), ca, strong.containers.clone());
        let defs = world.defs;
        let clock = cluster.clock().clone();
        let api = Api { store, clock: &clock, defs: &defs, orphans: &api::NO_ORPHANS };
        if let Err(e) = nodes::create(&api, &cluster.inner.settings) {
            tracing::error!(error = %e, "the simulated nodes could not be created");
        }
        world.resync(store);
        (feed, world)
    };
    let faults = std::sync::Arc::clone(&world.containers.faults);
    loop {
        let next = world.timers.next();
        let clock = cluster.clock().clone();
        let wait = next.map(|t| {
            let d = t.duration_since(clock.now());
            Duration::try_from(d).unwrap_or(Duration::ZERO).min(Duration::from_secs(1))
        });
        tokio::select! {
            got = feed.recv() => match got {
                Some(change) => world.take_change(&change),
                None => return,
            },
            () = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(1))) => {}
            () = clock.moved() => {}
            () = cluster.inner.woken.notified() => {}
            () = faults.changed.notified() => {}
        }
        let Some(strong) = shared.upgrade() else { return };
        // What else has come is taken in the same round: one look per object, however many
        // changes it had.
        loop {
            match feed.try_recv() {
                Ok(change) => world.take_change(&change),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        // A round is CPU work: on a multi-threaded runtime the worker it runs on hands its other
        // tasks (the API's requests) to another worker meanwhile, so the API keeps every worker.
        if tokio::runtime::Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
            tokio::task::block_in_place(|| world.step(&strong.store));
        } else if strong.store.may_call_webhooks() || strong.store.may_convert_by_webhook() {
            // A webhook its reads and writes call may be served by this runtime's one thread:
            // the round runs on a thread of its own meanwhile.
            world = match tokio::task::spawn_blocking(move || {
                world.step(&strong.store);
                world
            })
            .await
            {
                Ok(world) => world,
                Err(_) => return,
            };
        } else {
            world.step(&strong.store);
        }
    }
}

impl World {
    fn take_change(&mut self, change: &Followed) {
        let c = &change.retained;
        if c.key.0 != "pods." {
            self.observe(c.key.0, &change.object(), None, c.kind);
            return;
        }
        // A pod is glanced at, not parsed: the simulation falls behind its writes by more than
        // the store keeps parsed, and most pod changes need only a few fields looked at. Its
        // earlier state is looked at for the controller it had, which must count again.
        let glance = |got: Result<PodGlance, serde_json::Error>| {
            got.unwrap_or_else(|e| {
                tracing::error!(pod = %c.key.2, error = %e, "a stored pod could not be read");
                PodGlance::default()
            })
        };
        let pod = glance(change.object_as());
        let old = change.old_as().map(glance);
        let demand = || {
            let obj = change.object();
            (crate::quota::pod_requests(obj.get("spec").unwrap_or(&Value::Null)), scheduler::host_ports(&obj))
        };
        self.observe_pod(&c.key.1, &c.key.2, &pod, old.as_ref(), c.kind, demand);
    }
}

/// What the simulation's watch reads of a changed pod: its node, its phase and its controller.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PodGlance {
    metadata: GlanceMetadata,
    spec: GlanceSpec,
    status: GlanceStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GlanceMetadata {
    owner_references: Option<Vec<GlanceOwner>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GlanceOwner {
    kind: String,
    name: String,
    controller: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GlanceSpec {
    node_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GlanceStatus {
    phase: Option<String>,
}

impl PodGlance {
    fn finished(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// The kind and name of the controller that owns it.
    fn controller(&self) -> Option<(&str, &str)> {
        let owners = self.metadata.owner_references.as_deref()?;
        owners.iter().find(|o| o.controller == Some(true)).map(|o| (o.kind.as_str(), o.name.as_str()))
    }
}

/// Builds the error a part logs when a write it wanted failed for another reason than a stale
/// read (which the next round retries quietly).
pub(crate) fn log_failure(component: impl fmt::Display, what: &str, e: &ApiError) {
    if e.code != 409 && e.code != 404 {
        tracing::warn!(component = %component, object = what, code = e.code, error = %e.message, "simulated write refused");
    }
}
