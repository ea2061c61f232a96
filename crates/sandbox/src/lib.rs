//! An embedded Kubernetes API server with real semantics, behind a real `kube::Client`.
//!
//! Tests of a controller want the API server's behaviour — resourceVersions, 409 Conflicts,
//! watches that resume or expire, selectors, finalizers, garbage collection — without a cluster.
//! The sandbox keeps objects in memory and answers the Kubernetes REST API; [`Sandbox::client`]
//! gives a `kube::Client` whose requests go straight to it (a `tower::Service`, no sockets), so
//! every test runs real serialization, real watch streams and real error statuses. It serves
//! every built-in resource of a v1.32 cluster's discovery — the kinds a controller owns with
//! upstream's defaults and validation — and **CustomResourceDefinitions**: your own kinds, with
//! their structural schema enforced (validation, pruning, defaults), status and scale
//! subresources, several versions, printer columns, discovery and OpenAPI.
//!
//! ## Test your controller
//!
//! A kube-derive type, its CRD installed through the sandbox's client, a typed `Api` of it, and
//! a reconcile exercised against real API semantics — in a plain `#[tokio::test]`:
//!
//! ```
//! use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
//! use kube::api::{Api, Patch, PatchParams, PostParams};
//! use kube::{CustomResource, CustomResourceExt};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
//! pub struct WidgetSpec {
//!     size: u8,
//! }
//!
//! #[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
//! pub struct WidgetStatus {
//!     size: u8,
//! }
//!
//! /// The reconcile under test: it reports the size it saw in the status.
//! async fn reconcile(widgets: &Api<Widget>, name: &str) -> Result<(), kube::Error> {
//!     let widget = widgets.get(name).await?;
//!     let status = serde_json::json!({ "status": { "size": widget.spec.size } });
//!     widgets.patch_status(name, &PatchParams::default(), &Patch::Merge(status)).await?;
//!     Ok(())
//! }
//!
//! // #[tokio::test]
//! # #[tokio::main(flavor = "current_thread")]
//! async fn reconcile_reports_the_size() -> Result<(), kube::Error> {
//!     let sandbox = kube_sandbox::Sandbox::new();
//!     let crds: Api<CustomResourceDefinition> = Api::all(sandbox.client());
//!     crds.create(&PostParams::default(), &Widget::crd()).await?;
//!
//!     let widgets: Api<Widget> = Api::default_namespaced(sandbox.client());
//!     widgets.create(&PostParams::default(), &Widget::new("w", WidgetSpec { size: 3 })).await?;
//!     reconcile(&widgets, "w").await?;
//!     assert_eq!(widgets.get("w").await?.status.map(|s| s.size), Some(3));
//!
//!     // The schema kube-derive wrote (`size` is a u8) is enforced as a real API server does.
//!     let too_big = serde_json::json!({ "spec": { "size": 300 } });
//!     let refused = widgets.patch("w", &PatchParams::default(), &Patch::Merge(too_big)).await;
//!     assert!(matches!(refused, Err(kube::Error::Api(s)) if s.code == 422));
//!     assert_eq!(sandbox.requests().count("patch", "widgets"), 2);
//!     Ok(())
//! }
//! # fn main() -> Result<(), kube::Error> { reconcile_reports_the_size() }
//! ```
//!
//! kube-runtime's own `Controller` runs against it too (`tests/integration/kube_runtime.rs`), and over HTTPS
//! ([`Sandbox::serve`]) kubectl or any client can `kubectl apply` CRDs and their objects.
//!
//! ## Warning
//!
//! * **Passing here is not passing on a cluster.** The sandbox enforces RBAC only when asked
//!   ([`Authorization::Rbac`]), type-checks CEL expressions only for the fields they select, and
//!   runs no containers (a [`Simulation`] runs pods by their status): a CRD whose rule compares
//!   a string with an int is accepted here and refused there.
//! * **It is not a security boundary.** Over HTTPS one bearer token may do everything; serve it
//!   on a loopback address.
//! * **It needs a Tokio runtime.** [`Sandbox::new`] starts the controllers' task, and
//!   panics outside a runtime. Nothing is persisted: the objects live in memory, shared by the
//!   sandbox's clones.
//! * **Watch history is bounded, as upstream's.** Each resource keeps the changes of the last
//!   75 s (at least 100 of them; [`StoreConfig::history_window`]); a watch resumed from an older
//!   version gets 410 Gone and the client must relist, as against a real API server.
//!   [`Faults`] can force a 410 when a test wants one.
//!
//! ## What the crate offers
//!
//! | item | for |
//! |---|---|
//! | [`Sandbox`], [`SandboxConfig`] | the API server and its settings ([`Rollout`], [`StreamingLists`], [`StoreConfig`]) |
//! | [`Sandbox::client`], [`SandboxService`] | a `kube::Client` in-process, or the server as a `tower::Service` |
//! | [`Sandbox::serve`], [`HttpServer`], [`new_token`], [`write_kubeconfig`] | the same over HTTPS, for kubectl and other processes |
//! | [`Simulation`], [`Cluster`], [`Clock`], [`Controllers`], [`NodeShape`] | the simulated cluster, its handle and the clock a test moves |
//! | [`Faults`], [`FaultRule`], [`FaultKind`], [`Abandoned`] | failures injected into requests |
//! | [`Requests`], [`RequestRecord`] | what the clients asked, to assert on |
//! | [`Store`], [`builtin_resource`], [`Change`] | the objects directly, below the HTTP layer (seeding, benchmarks) |
//! | [`ApiError`] | the Status a refused request gets |
//!
//! Everything else is the crate's own. Its modules form layers, listed here from the top: each
//! uses only those below it
//! (`tests/integration/module_graph.rs` fails on an import cycle, and prints the layers).
//!
//! | module | what it is |
//! |---|---|
//! | `cluster` | the controllers beside the API: those every sandbox runs (garbage collector, namespace, protection, quota), and a simulated cluster — nodes, scheduler, kubelets, workload controllers, on a clock a test controls |
//! | `rest` | the HTTP (REST) layer, upstream's `endpoints`: routing, negotiation, watch streams, discovery, OpenAPI, tables, protobuf, HTTPS |
//! | `actions` | what is answered rather than stored: binding, eviction, tokens, logs, reviews |
//! | `metrics` | resource metrics (`metrics.k8s.io`): what each running container uses |
//! | `pod_log` | `pods/log`: its options, the run read, the lines sent |
//! | `store` | the verbs' rules over the storage: objects, revision counter, history, watch fan-out |
//! | `auth` | who a request is and what it may do: tokens, impersonation, RBAC |
//! | `admission` | the admission plugins, a chain in upstream's order the store runs on every write |
//! | `post_start` | the objects a new API server makes for itself (system namespaces, priority classes, RBAC's bootstrap policy) |
//! | `registry` | the resources served now: the built-in kinds and those established CRDs define |
//! | `catalog` | the built-in resources, one file per API group, one declaration each, and their table |
//! | `field_validation` | `fieldValidation`: unknown and duplicate fields refused, warned about or dropped |
//! | `managed_fields` | `managedFields`: who set which field, on every write |
//! | `resource` | what a served resource is: its strategy, how it answers, its subresources |
//! | `kinds` | a strategy per kind: defaults, validation, generation and status rules; custom resources' schema-driven one |
//! | `quota` | ResourceQuota: what an object counts, admission's and the quota controller's decisions |
//! | `schema` | structural schemas: the checks on a CRD's schema, validation, pruning, defaulting |
//! | `selector` | label and field selectors, and the `LabelSelector` objects of specs |
//! | `metadata` | metadata rules every kind shares: name shapes, label, annotation and finalizer names |
//! | `patch` | merge, JSON and strategic merge patch; the field paths apply and managedFields use |
//! | `shard` | KEP-5866 sharded list and watch (`shardSelector`, `shardInfo`) |
//! | `faults` | fault injection: of requests, watches and the wire; of the container runtime |
//! | `object_meta` | reading and stamping an object's metadata: its fields, uids, timestamps |
//! | `jsonpath` | the JSONPath of printer columns |
//! | `go_print` | Go's printing of values (`%v`, `%q`, `%#v`), so messages are upstream's byte for byte |
//! | `gojson` | Go's `encoding/json` errors for a body that is not JSON |
//! | `container_runtime` | the simulated container runtime: containers' processes, logs, execs, forwarded ports |
//! | `host_exec` | a runtime that runs execs as processes on this machine, for the command-line sandbox's opt-in |
//! | `shell` | the built-in shell containers run: a POSIX subset, busybox's commands, in-memory files |
//! | `process` | a process's command, streams and terminal |
//! | `terminal` | what a terminal does to a tty session's bytes |
//! | `clock` | the sandbox's clock, which a test pauses and advances |
//! | `quantity` | resource quantities (`500m`, `1Gi`) |
//! | `status` | `metav1.Status` errors, and field errors |
//! | `record` | the request log |
//! | `user` | who makes a request: a user's name, uid, groups and extras |
//! | `webhook_client` | how the sandbox reaches a webhook (admission's and conversion's): its endpoint from a `clientConfig`, HTTPS with the `caBundle`, kept-alive connections |
//! | `invocation` | the request a write belongs to, as strategies and admission see it: its user, dry run, authorizer, and the warnings and audit annotations admission leaves on it |
//! | `access` | what a request asks an authorizer (its attributes), read from its method and path |
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kube::Error> {
//! let sandbox = kube_sandbox::Sandbox::new();
//! let cms: Api<ConfigMap> = Api::default_namespaced(sandbox.client());
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("web".into());
//! let created = cms.create(&PostParams::default(), &cm).await?;
//! assert!(created.metadata.uid.is_some());
//! assert_eq!(sandbox.requests().count("create", "configmaps"), 1);
//! # Ok(())
//! # }
//! ```

// The README's examples run as doc tests, so what it shows a new user keeps compiling.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod access;
mod actions;
mod admission;
mod auth;
mod catalog;
mod clock;
mod cluster;
mod container_runtime;
mod faults;
mod field_errors;
mod field_validation;
mod go_order;
mod go_print;
mod gojson;
mod host_exec;
mod invocation;
mod jsonpath;
mod kinds;
mod label_rules;
mod managed_fields;
mod metadata;
mod metrics;
mod names;
mod netaddr;
mod object_meta;
mod patch;
mod pod_log;
mod post_start;
mod process;
mod quantity;
mod quota;
mod record;
mod registry;
mod resource;
mod resource_name;
mod rest;
mod schema;
mod selector;
mod shard;
mod shell;
mod status;
mod store;
mod terminal;
mod token_issuer;
mod user;
mod webhook_client;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};

pub use auth::new_token;
pub use auth::{Attributes, Authorization, UserInfo};
pub use clock::Clock;
pub use cluster::{Cluster, Controller, Controllers, NodeShape, Simulation, UnknownController};
pub use container_runtime::{
    Container, ContainerLog, ContainerRun, ContainerRuntime, DefaultRuntime, ExecFn, ExecFuture, Exit,
    LogLine,
};
pub use faults::{Abandoned, ContainerFault, ContainerFaultRule, FaultKind, FaultRule, Faults, Probe};
pub use host_exec::HostExec;
pub use metrics::{USAGE_ANNOTATION, Usage, UsageError, parse_usage};
pub use process::{Output, Process, Stdin, TerminalSize, Written};
pub use record::{RequestRecord, Requests};
pub use resource::ResourceDef;
pub use rest::protobuf;
pub use rest::server::{HttpServer, kubeconfig, write_kubeconfig};
pub use status::ApiError;
pub use store::{Change, ChangeType, ListQuery, Store, StoreConfig};

/// The built-in resource `plural` of `group`/`version` (`""` for the core group), for the
/// [`Store`]'s verbs; `None` for one the sandbox does not serve. A custom resource is found with
/// [`Store::find`] once its CRD is established.
///
/// ```
/// let cms = kube_sandbox::builtin_resource("", "v1", "configmaps").unwrap();
/// assert_eq!(cms.kind, "ConfigMap");
/// assert!(kube_sandbox::builtin_resource("", "v1", "widgets").is_none());
/// ```
#[must_use]
pub fn builtin_resource(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
    catalog::find(group, version, plural)
}

/// How fast pods become ready: each simulated pod once started (with a [`Simulation`]), or one
/// pod of each rolling Deployment's simulated status (without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollout {
    /// A simulated pod turns ready this long after it starts; without a cluster, one more pod
    /// of each rolling Deployment every interval. Either way `kubectl get deploy -w` shows
    /// READY climbing.
    Paced(Duration),
    /// Pods ready as soon as they run; without a cluster, status matches spec on the next tick
    /// (10 ms). For tests.
    Instant,
}

/// Settings of a [`Sandbox`].
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Store settings: history window and garbage collection.
    pub store: StoreConfig,
    /// Rollout pace.
    pub rollout: Rollout,
    /// At most this many rollout status writes a second, as the cluster's Deployment controller
    /// is held to by its client's rate limiter (kube-controller-manager's `--kube-api-qps`, 20
    /// by default, with a burst of one and a half seconds' worth, its `--kube-api-burst` 30).
    /// `None` (the default): every rolling Deployment is written on every tick.
    pub status_writes_per_second: Option<u32>,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Serve KEP-5866's sharded list and watch (`shardSelector`); `false` answers as a server
    /// without it does: the parameter is ignored and everything is sent, with no `shardInfo`.
    pub sharded_list_watch: bool,
    /// How a watch with `sendInitialEvents=true` (a streaming list, Kubernetes 1.27+) is
    /// answered: served, as today's API servers do, or as servers without it do.
    pub streaming_lists: StreamingLists,
    /// A simulated cluster beside the API — nodes, scheduler, kubelets, workload controllers,
    /// namespace bootstrap (see [`Simulation`]); three nodes and every part by default. `None`
    /// ([`bare`](Self::bare)): an API server alone, whose only simulation is the Deployments'
    /// status ([`rollout`](Self::rollout)).
    pub simulation: Option<cluster::Simulation>,
    /// What the simulated containers write to their logs (`pods/log`): [`DefaultRuntime`]
    /// unless a test installs its own [`ContainerRuntime`].
    pub container_runtime: Arc<dyn ContainerRuntime>,
    /// How requests are authorized: every one allowed (the default), or RBAC as a cluster's
    /// API server enforces it.
    pub authorization: Authorization,
}

/// How the sandbox answers streaming lists (`sendInitialEvents`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamingLists {
    /// The initial state as ADDED events, then a BOOKMARK annotated `k8s.io/initial-events-end`;
    /// the request must also carry `allowWatchBookmarks=true` and
    /// `resourceVersionMatch=NotOlderThan`, or it is 422 Invalid, as upstream validates it.
    #[default]
    Served,
    /// 422 Invalid, as a server that does not accept the parameters: before 1.27 it forbids
    /// `resourceVersionMatch` on a watch, and later ones with the WatchList feature off forbid
    /// `sendInitialEvents`.
    Rejected,
    /// The parameter is ignored, as by a server that does not know it: the watch starts as any
    /// other (every object as ADDED for a version of `"0"` or none), with no end bookmark.
    Ignored,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            store: StoreConfig::default(),
            rollout: Rollout::Paced(Duration::from_millis(300)),
            status_writes_per_second: None,
            bookmark_interval: Duration::from_secs(1),
            sharded_list_watch: true,
            streaming_lists: StreamingLists::Served,
            simulation: Some(cluster::Simulation::default()),
            container_runtime: Arc::new(DefaultRuntime),
            authorization: Authorization::AlwaysAllow,
        }
    }
}

impl SandboxConfig {
    /// The default settings with a simulated cluster: `sim`'s nodes, scheduler, kubelets and
    /// controllers.
    ///
    /// ```
    /// use kube_sandbox::Simulation;
    /// let config = kube_sandbox::SandboxConfig::with_cluster(Simulation { nodes: 5, ..Simulation::instant() });
    /// assert_eq!(config.simulation.map(|s| s.nodes), Some(5));
    /// ```
    #[must_use]
    pub fn with_cluster(sim: cluster::Simulation) -> Self {
        Self { simulation: Some(sim), ..Self::default() }
    }

    /// The default settings without a simulated cluster: no nodes, no scheduler, no kubelets,
    /// no controllers but those every sandbox runs (garbage collector, namespace, PVC/PV
    /// protection, quota), and the Deployments' status simulated at the [`rollout`](Self::rollout) pace — for a test that
    /// wants the API alone.
    ///
    /// ```
    /// assert!(kube_sandbox::SandboxConfig::bare().simulation.is_none());
    /// ```
    #[must_use]
    pub fn bare() -> Self {
        Self { simulation: None, ..Self::default() }
    }
}

/// The state of one sandbox — its store, fault settings, request log, serving settings and
/// simulated cluster — that every handle ([`Sandbox`], [`SandboxService`]) holds behind an `Arc`.
pub(crate) struct SandboxState {
    /// The objects.
    pub store: Store,
    /// Fault injection settings.
    pub faults: Faults,
    /// The request log.
    pub requests: Requests,
    bookmark_interval: Duration,
    sharded_list_watch: bool,
    streaming_lists: StreamingLists,
    /// The CA that signs serving certificates, made on first use.
    authority: std::sync::OnceLock<Result<rest::server::Authority, String>>,
    /// The simulated cluster, when there is one.
    cluster: Option<cluster::Cluster>,
    /// The container runtime and the log lines tests scripted.
    pub(crate) containers: container_runtime::Containers,
    /// Authentication and authorization: the mode, the tokens issued.
    pub(crate) auth: auth::Auth,
}

/// An in-memory Kubernetes API server.
///
/// Cheap to clone; clones share the same objects. The controllers' task stops when the last clone
/// is dropped.
///
/// ```
/// use k8s_openapi::api::core::v1::Namespace;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), kube::Error> {
/// // The API alone, as a new API server makes it: its own namespaces are there.
/// let sandbox = kube_sandbox::Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
/// let namespaces: kube::Api<Namespace> = kube::Api::all(sandbox.client());
/// let default = namespaces.get("default").await?;
/// assert_eq!(default.status.and_then(|s| s.phase).as_deref(), Some("Active"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Sandbox {
    shared: Arc<SandboxState>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("objects", &self.shared.store.len()).finish_non_exhaustive()
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// A sandbox with the default settings: namespaces `default`, `kube-system`, `kube-public`
    /// and `kube-node-lease`, garbage collection on, and a simulated cluster of three nodes
    /// whose pods turn ready 300 ms after they start.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (it starts the controllers' task).
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(SandboxConfig::default())
    }

    /// A sandbox with the given settings.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[must_use]
    pub fn with_config(config: SandboxConfig) -> Self {
        let cluster = config.simulation.map(|mut sim| {
            sim.pod_ready_after.get_or_insert(match config.rollout {
                Rollout::Paced(d) => d,
                Rollout::Instant => Duration::ZERO,
            });
            cluster::Cluster::new(sim)
        });
        // Containers live on the simulation's clock, as its kubelets stamp the statuses.
        let clock = cluster.as_ref().map(|c| c.clock().clone()).unwrap_or_default();
        let faults = Faults::default();
        let container_faults = faults.containers();
        let shared = Arc::new(SandboxState {
            store: Store::new(config.store),
            faults,
            requests: Requests::default(),
            bookmark_interval: config.bookmark_interval,
            sharded_list_watch: config.sharded_list_watch,
            streaming_lists: config.streaming_lists,
            authority: std::sync::OnceLock::new(),
            cluster,
            containers: container_runtime::Containers::new(
                config.container_runtime,
                clock.clone(),
                container_faults,
            ),
            auth: auth::Auth::new(config.authorization),
        });
        // The Deployment controller, when simulated, writes real status; its status-only mode is
        // for a sandbox without it.
        let status_only = shared
            .cluster
            .as_ref()
            .is_none_or(|c| !c.settings().controllers.runs(cluster::Controller::Deployment));
        let deployments = status_only
            .then(|| cluster::deployment::StatusOnly::new(config.rollout, config.status_writes_per_second));
        // Followed here, before anything is written, so the controllers see every change.
        let feed = shared.store.follow();
        let core = cluster::core_controllers::CoreControllers::new(&shared.store, deployments);
        tokio::spawn(cluster::core_controllers::run(
            Arc::downgrade(&shared),
            feed,
            core,
            config.rollout,
            clock,
        ));
        if let Some(c) = &shared.cluster {
            tokio::spawn(cluster::run(Arc::downgrade(&shared), c.clone()));
        }
        Self { shared }
    }

    /// A sandbox already holding `objects` (each with `apiVersion`, `kind` and metadata).
    ///
    /// # Errors
    ///
    /// The first object the API would refuse, with its Status.
    pub fn seeded(
        config: SandboxConfig,
        objects: impl IntoIterator<Item = serde_json::Value>,
    ) -> Result<Self, ApiError> {
        let sandbox = Self::with_config(config);
        for obj in objects {
            sandbox.seed(obj)?;
        }
        Ok(sandbox)
    }

    /// Creates one object directly in the store (not recorded as a request).
    ///
    /// # Errors
    ///
    /// The Status the API would answer.
    pub fn seed(&self, obj: serde_json::Value) -> Result<serde_json::Value, ApiError> {
        let api_version = obj.get("apiVersion").and_then(serde_json::Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(serde_json::Value::as_str).unwrap_or("");
        let def = self.shared.store.registry().find_kind(api_version, kind).ok_or_else(|| {
            ApiError::bad_request(format!("the sandbox does not serve {api_version} {kind}"))
        })?;
        let ns = object_meta::meta_str(&obj, "namespace");
        let ns = if ns.is_empty() { "default" } else { ns }.to_owned();
        self.shared.store.create(&def, &ns, obj, None)
    }

    /// A `kube::Client` talking to this sandbox in-process, with default namespace `default`.
    #[must_use]
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), "default")
    }

    /// The sandbox as a `tower::Service`, for `kube::Client::new` or an HTTP server.
    #[must_use]
    pub fn service(&self) -> SandboxService {
        SandboxService { shared: Arc::clone(&self.shared), user: None }
    }

    /// A `kube::Client` talking to this sandbox in-process as `user`, as though its token were
    /// `user`'s: under [`Authorization::Rbac`] it may do what `user`'s bindings allow.
    ///
    /// ```
    /// use kube_sandbox::{Authorization, Sandbox, SandboxConfig, UserInfo};
    /// use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube::Error> {
    /// let sandbox = Sandbox::with_config(SandboxConfig { authorization: Authorization::Rbac, ..SandboxConfig::bare() });
    /// let client = sandbox.client_as(UserInfo::service_account("default", "builder"));
    /// let reviews: kube::Api<SelfSubjectReview> = kube::Api::all(client);
    /// let me = reviews.create(&Default::default(), &Default::default()).await?;
    /// let name = me.status.and_then(|s| s.user_info).and_then(|u| u.username);
    /// assert_eq!(name.as_deref(), Some("system:serviceaccount:default:builder"));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn client_as(&self, user: UserInfo) -> kube::Client {
        kube::Client::new(SandboxService { shared: Arc::clone(&self.shared), user: Some(user) }, "default")
    }

    /// A bearer token that authenticates `user` to this sandbox's HTTPS servers (for a
    /// kubeconfig of that user: [`kubeconfig()`]).
    #[must_use]
    pub fn issue_token(&self, user: UserInfo) -> String {
        self.shared.auth.issue(user)
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// The request log.
    #[must_use]
    pub fn requests(&self) -> &Requests {
        &self.shared.requests
    }

    /// Fault injection settings.
    #[must_use]
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The log of container `container` of pod `namespace`/`pod`, for a test to script what it
    /// writes: each [`ContainerLog::write_line`] is a line of its log after its start line, in
    /// `kubectl logs` and in a `follow` under way.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube_sandbox::{Sandbox, SandboxConfig, Simulation};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), kube::Error> {
    /// let sandbox = Sandbox::with_config(SandboxConfig::with_cluster(Simulation::instant()));
    /// let pods: kube::Api<Pod> = kube::Api::default_namespaced(sandbox.client());
    /// let pod = serde_json::from_value(serde_json::json!({
    ///     "metadata": { "name": "web" },
    ///     "spec": { "containers": [{ "name": "nginx", "image": "nginx:1.27" }] },
    /// }))
    /// .unwrap();
    /// pods.create(&Default::default(), &pod).await?;
    /// sandbox.container_log("default", "web", "nginx").write_line("ready for connections");
    /// let log = loop {
    ///     match pods.logs("web", &Default::default()).await {
    ///         Ok(log) if !log.is_empty() => break log,
    ///         _ => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
    ///     }
    /// };
    /// assert!(log.starts_with("container \"nginx\" started at "), "{log}");
    /// assert!(log.ends_with("\nready for connections\n"), "{log}");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// ## Warning
    ///
    /// A line counts for the run of the container its pod's status shows when it is written,
    /// and for a pod created before it: one written before the pod was created is never shown.
    #[must_use]
    pub fn container_log(&self, namespace: &str, pod: &str, container: &str) -> ContainerLog {
        let key = (namespace.to_owned(), pod.to_owned(), container.to_owned());
        let shared = Arc::downgrade(&self.shared);
        let (ns, name, c) = key.clone();
        let pods = catalog::find("", "v1", "pods").expect("pods are built in");
        let current_run = move || {
            let Some(shared) = shared.upgrade() else { return 0 };
            shared
                .store
                .get(pods, &ns, &name, resource::Subresource::Main)
                .map_or(0, |p| pod_log::current_run(&p, &c))
        };
        ContainerLog::new(self.shared.containers.clone(), key, Arc::new(current_run))
    }

    /// Scripts what an exec in one container runs: `exec` gets the container and the process
    /// (its command, stdin, stdout, stderr) and comes to its exit code. It replaces the runtime's
    /// and the built-in shell's answer for that container, for every exec after this call.
    ///
    /// ```
    /// use kube_sandbox::Sandbox;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sandbox = Sandbox::new();
    /// sandbox.container_exec("default", "db", "postgres", |_container, mut process| {
    ///     Box::pin(async move {
    ///         if process.command.first().map(String::as_str) == Some("pg_isready") {
    ///             process.stdout.write("/var/run/postgresql:5432 - accepting connections\n").await;
    ///             return 0;
    ///         }
    ///         let input = process.stdin.read_to_end().await;
    ///         process.stdout.write(input).await;
    ///         1
    ///     })
    /// });
    /// # }
    /// ```
    pub fn container_exec<F>(&self, namespace: &str, pod: &str, container: &str, exec: F)
    where
        F: Fn(&Container, Process) -> ExecFuture + Send + Sync + 'static,
    {
        let key = (namespace.to_owned(), pod.to_owned(), container.to_owned());
        self.shared.containers.script_exec(key, Arc::new(exec));
    }

    /// Sets what a container uses, as `metrics.k8s.io` reports it (`kubectl top`, the
    /// HorizontalPodAutoscaler) while it runs: it wins over the pod's
    /// `usage.sandbox.counter.example.com/<container>` annotation and the container's requests.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sandbox = kube_sandbox::Sandbox::new();
    /// let busy = kube_sandbox::parse_usage("test", "cpu=900m,memory=128Mi").unwrap();
    /// sandbox.set_container_usage("default", "web", "nginx", busy);
    /// # }
    /// ```
    pub fn set_container_usage(&self, namespace: &str, pod: &str, container: &str, usage: Usage) {
        let key = (namespace.to_owned(), pod.to_owned(), container.to_owned());
        self.shared.containers.set_usage(key, usage);
    }

    /// Forwards `port` of a pod to a local address: a port-forward to it (`kubectl
    /// port-forward`, kube's `Api::portforward`) connects there. Without one, a port a container
    /// declares echoes what it is sent, and any other port refuses the connection.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sandbox = kube_sandbox::Sandbox::new();
    /// sandbox.forward_port("default", "web", 80, "127.0.0.1:8080".parse().unwrap());
    /// # }
    /// ```
    pub fn forward_port(&self, namespace: &str, pod: &str, port: u16, to: std::net::SocketAddr) {
        self.shared.containers.forward_port(namespace, pod, port, to);
    }

    /// Serves the webhooks (admission webhooks, CRDs' conversion webhooks) whose configurations
    /// name the Service `namespace/name`
    /// at a local address (a webhook server the test started after the sandbox), as
    /// [`StoreConfig::webhook_services`] does from the start: the next call to one goes there,
    /// its certificate checked for `<name>.<namespace>.svc`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sandbox = kube_sandbox::Sandbox::new();
    /// sandbox.webhook_service("webhooks", "guard", "127.0.0.1:9443".parse().unwrap());
    /// # }
    /// ```
    pub fn webhook_service(&self, namespace: &str, name: &str, at: std::net::SocketAddr) {
        self.shared.store.route_webhook_service(namespace, name, at);
    }

    /// The simulated cluster (its clock, what a test may order it), when the sandbox has one.
    #[must_use]
    pub fn cluster(&self) -> Option<&cluster::Cluster> {
        self.shared.cluster.as_ref()
    }
}

/// The sandbox as a `tower::Service<http::Request<B>>`.
#[derive(Clone)]
pub struct SandboxService {
    shared: Arc<SandboxState>,
    /// Who its requests are; the administrator when `None`.
    user: Option<UserInfo>,
}

impl<B> tower::Service<Request<B>> for SandboxService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<rest::BoxError>,
{
    type Response = Response<rest::ResponseBody>;
    type Error = rest::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, rest::BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), rest::BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        if let Some(user) = &self.user {
            req.extensions_mut().insert(auth::Authenticated(user.clone()));
        }
        Box::pin(async move {
            let response = rest::handle(shared, req).await;
            if response.extensions().get::<rest::Disconnect>().is_some() {
                return Err("connection dropped by the sandbox (injected fault)".into());
            }
            Ok(response)
        })
    }
}
