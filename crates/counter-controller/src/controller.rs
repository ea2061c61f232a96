//! The controller: Informer → Workqueue → Worker → Reconcile, assembled by hand.
//!
//! Reads top to bottom: constants, the type, its constructor, `run`, the worker, `sync` (decide,
//! then execute), and the Deployment builder.
//!
//! * Two informers: ConfigMaps (the desired state), and Deployments labelled
//!   `managed-by=counter-controller` (the actual state). Handlers only enqueue a ConfigMap key;
//!   a Deployment event enqueues its owner's key, so hand-made drift is corrected at once.
//! * One rate-limited queue (client-go's default controller limiter), `workers` workers.
//! * `sync` reads both caches — never GET from the API server — and writes only when needed.
//! * The caches hold only what the decision reads ([`cached`](crate::cached)), and a
//!   Deployment update that changed nothing the decision reads (a status write as pods become
//!   ready) enqueues nothing.
//! * Who may work — alone, the leader only, or each replica on its shard of the keys — is the
//!   [`kube_coordination`] part's: this controller gives it its informers, its queue and
//!   [`Controller::sync`], and every write goes through the client's fence.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{EventType, Reporter};
use kube::{Client, Resource, ResourceExt};
pub use kube_coordination::Coordination;
use kube_coordination::{Conflict, Coordinator, ReadVersion, Reconcile, Settings, Watched};
use kube_informer::{
    Config as InformerConfig, Deleted, EventHandler, Expect, Expectations, Informer, Lister, ObjectKey,
};
use kube_workqueue::prometheus::PrometheusMetrics;
use kube_workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use prometheus_client::registry::Registry;
use serde_json::json;

use crate::annotation::ANNOTATION;
use crate::cached::{CachedConfigMap, CachedDeployment, slim_configmap, slim_deployment};
use crate::decision::{Action, MANAGED_BY, decide};
use kube_manager::client::Agent;
use kube_manager::events::EventRecorder;
use kube_manager::{Options, Scope};

/// The name this controller reports in Events, field managers and queue metrics.
pub const CONTROLLER_NAME: &str = "counter-controller";
/// Who its requests say they are, and what a namespace-sharded replica lists and watches.
pub const AGENT: Agent = Agent {
    name: CONTROLLER_NAME,
    version: env!("CARGO_PKG_VERSION"),
    watched: &["configmaps", "deployments"],
};
/// The image of the Deployments it creates.
pub const IMAGE: &str = "nginx:1.27";

/// A reconcile that did not converge; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The annotation is not a count.
    #[error("ConfigMap {key}: {source}")]
    InvalidAnnotation {
        /// The ConfigMap.
        key: ObjectKey,
        /// The value and what is wrong with it.
        source: crate::annotation::InvalidCount,
    },
    /// A Deployment with the ConfigMap's name exists and is not managed by this controller.
    #[error("Deployment {key} already exists and is not managed by {CONTROLLER_NAME}; leaving it alone")]
    ResourceExists {
        /// The Deployment.
        key: ObjectKey,
    },
    /// The API server refused a write because the Deployment had changed since it was read (a
    /// precondition): requeued once the cache holds the newer version, not a failure.
    #[error("{0}")]
    Conflict(Box<Conflict>),
    /// An API call failed.
    #[error("{action} Deployment {key}: {source}")]
    Api {
        /// What was being done: `create`, `scale`, `delete`.
        action: &'static str,
        /// The Deployment.
        key: ObjectKey,
        /// The API error.
        source: kube::Error,
    },
}

impl Error {
    /// Whether the write was withheld by the leader-election fence (this replica stopped leading):
    /// not a failure of the reconcile, and not retried here — the new leader does it.
    #[must_use]
    pub fn is_fenced(&self) -> bool {
        matches!(self, Self::Api { source, .. } if kube_lease_election::is_fenced(source))
    }
}

/// The counter-controller.
pub struct Controller {
    client: Client,
    configmaps: Informer<CachedConfigMap>,
    deployments: Informer<CachedDeployment>,
    cm_lister: Lister<CachedConfigMap>,
    deploy_lister: Lister<CachedDeployment>,
    queue: RateLimitingQueue<ObjectKey>,
    expected: Expectations,
    data_changed: DataChanged,
    events: EventRecorder,
    /// Runs the informers and the workers, alone, elected or sharded.
    coordinator: Arc<Coordinator>,
    options: Options,
}

impl Controller {
    /// Assembles the parts and registers the handlers. Nothing runs until [`run`](Self::run).
    /// The queue's metrics go into `registry` under client-go's `workqueue_*` names, the
    /// reconciles' under controller-runtime's `controller_runtime_*`.
    ///
    /// ## Warning
    /// With leader election, `client` must carry the election's fence
    /// ([`client::build_for`](kube_manager::client::build_for)): the fence is what stops a replica that lost the
    /// Lease from writing.
    #[must_use]
    pub fn new(client: Client, options: Options, registry: &mut Registry) -> Arc<Self> {
        let (cm_api, deploy_api) = match &options.scope {
            Scope::Namespace(ns) => {
                (Api::namespaced(client.clone(), ns), Api::namespaced(client.clone(), ns))
            }
            Scope::All => (Api::all(client.clone()), Api::all(client.clone())),
        };
        let configmaps =
            Informer::new(cm_api, InformerConfig::default().resync(options.resync).prefer_streaming_lists());
        configmaps.set_transform(Arc::new(slim_configmap));
        // Only annotated ConfigMaps are cached; of the others (in a real cluster, most) only the
        // fact that they exist is kept, so the memory follows what the controller manages.
        configmaps.set_keep(Arc::new(|cm: &CachedConfigMap| cm.desired.is_some()));
        let deployments = Informer::new(
            deploy_api,
            InformerConfig::default()
                .resync(Duration::ZERO)
                .labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1)),
        );
        deployments.set_transform(Arc::new(slim_deployment));
        let metrics = Arc::new(PrometheusMetrics::register(registry));
        let queue = RateLimitingQueue::with_config(
            default_controller_rate_limiter(),
            QueueConfig::named(CONTROLLER_NAME).metrics(metrics),
        );

        let data_changed = DataChanged::default();
        configmaps.add_handler(Arc::new(EnqueueConfigMap {
            queue: queue.clone(),
            data_changed: data_changed.clone(),
            configmaps: configmaps.lister(),
            deployments: deployments.lister(),
        }));
        let expected = Expectations::default();
        deployments.add_handler(Arc::new(EnqueueOwner { queue: queue.clone(), expected: expected.clone() }));

        let reporter =
            Reporter { controller: CONTROLLER_NAME.into(), instance: Some(options.identity.clone()) };
        let list_path = match &options.scope {
            Scope::All => "/api/v1/configmaps".to_owned(),
            Scope::Namespace(ns) => format!("/api/v1/namespaces/{ns}/configmaps"),
        };
        let coordinator = Coordinator::new(
            queue.clone(),
            // ConfigMaps first: their keys are the work keys.
            vec![
                Watched::source(configmaps.clone(), "ConfigMap", ObjectKey::of),
                Watched::source(deployments.clone(), "Deployment", owner_key),
            ],
            Settings::new(CONTROLLER_NAME, options.workers, &options.identity)
                .shard_probe(client.clone(), list_path),
            registry,
        );
        Arc::new(Self {
            cm_lister: configmaps.lister(),
            deploy_lister: deployments.lister(),
            events: EventRecorder::new(client.clone(), reporter, options.events.clone(), registry),
            client,
            configmaps,
            deployments,
            queue,
            expected,
            data_changed,
            coordinator,
            options,
        })
    }

    /// Whether both informer caches have synced (readiness).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.configmaps.has_synced() && self.deployments.has_synced()
    }

    /// The work queue (for tests and metrics).
    #[must_use]
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }

    /// The Deployment cache, as reconciles read it (for tests and debugging).
    #[must_use]
    pub fn deployment_cache(&self) -> &Lister<CachedDeployment> {
        &self.deploy_lister
    }

    /// The ConfigMap cache, as reconciles read it: annotated ConfigMaps cached, the others only
    /// known to exist ([`Lister::presence`]) (for tests and debugging).
    #[must_use]
    pub fn configmap_cache(&self) -> &Lister<CachedConfigMap> {
        &self.cm_lister
    }

    /// Runs until `shutdown` resolves: informers, the cache-sync gate, then the workers.
    ///
    /// On shutdown, workers stop taking keys, in-flight reconciles finish, and `run` returns.
    /// Returns `false` if shutdown came before the caches synced.
    pub async fn run(self: Arc<Self>, shutdown: impl Future) -> bool {
        self.run_coordinated(Coordination::Alone, shutdown).await
    }

    /// As [`run`](Self::run), with the work shared as `how` says (see [`kube_coordination`]).
    pub async fn run_coordinated(self: Arc<Self>, how: Coordination, shutdown: impl Future) -> bool {
        let synced = self.coordinator.run(Arc::clone(&self), how, shutdown).await;
        self.events.close().await;
        synced
    }

    /// Reconciles one ConfigMap key: reads the caches, decides, executes.
    ///
    /// # Errors
    ///
    /// An invalid annotation, a Deployment that is not ours, or a failed API call.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let presence = self.cm_lister.presence(key);
        let deployment = self.deploy_lister.get(key);
        // The tutorial's exercise, when the value is new to this reconcile (not on every retry or
        // Deployment status change).
        let cm = presence.clone().cached();
        if self.data_changed.take(key)
            && let Some(app) = cm.as_ref().and_then(|c| app_of(c)).filter(|a| !a.is_empty())
        {
            tracing::info!("ConfigMap {key} data: {app}");
        }
        let action = decide(presence.as_deref(), deployment.as_deref(), key.name());
        tracing::debug!(%key, ?action, "decided");
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), key.namespace());
        let api_err = |action| move |source| Error::Api { action, key: key.clone(), source };
        // A refused precondition is a conflict, anything else an API error.
        let write_err = |action, read: ReadVersion| {
            move |source| match read.conflict(&source) {
                Some(c) => Error::Conflict(Box::new(c)),
                None => Error::Api { action, key: key.clone(), source },
            }
        };
        match action {
            Action::Nothing(_) => Ok(()),
            Action::Invalid(source) => {
                let cm = cm.expect("an annotation was read from it");
                self.event(&cm.object_ref(&()), EventType::Warning, "InvalidAnnotation", source.to_string());
                Err(Error::InvalidAnnotation { key: key.clone(), source })
            }
            Action::NotOurs => {
                let cm = cm.expect("the ConfigMap exists");
                self.resource_exists(&cm, key)
            }
            Action::Create { .. } if self.expected.pending(key, Expect::Created) => {
                tracing::debug!(%key, "waiting for the informer to see the Deployment just created");
                Ok(())
            }
            Action::Create { replicas } => {
                let cm = cm.expect("the ConfigMap exists");
                // A Deployment event may have overtaken the ConfigMap's own (its delete, as the
                // garbage collector follows it): create only for a ConfigMap still there.
                let uid = cm.metadata.uid.as_deref().unwrap_or_default();
                let primary = self
                    .coordinator
                    .confirm_primary(key, uid)
                    .await
                    .map_err(api_err("read ConfigMap for"))?;
                if !primary.may_act() {
                    tracing::debug!(%key, "not creating: the ConfigMap is gone, replaced or being deleted; its event follows");
                    return Ok(());
                }
                let params =
                    PostParams { field_manager: Some(CONTROLLER_NAME.into()), ..PostParams::default() };
                match deployments.create(&params, &new_deployment(cm.as_ref(), replicas)).await {
                    Ok(d) => {
                        self.expected.expect(key, Expect::Created);
                        self.event(
                            &cm.object_ref(&()),
                            EventType::Normal,
                            "Created",
                            format!("Created Deployment {key} with {replicas} replicas"),
                        );
                        tracing::info!(%key, replicas, uid = d.metadata.uid.as_deref().unwrap_or(""), "created Deployment");
                        Ok(())
                    }
                    // The label-filtered cache cannot see Deployments that are not ours.
                    Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                        self.resource_exists(&cm, key)
                    }
                    Err(e) => Err(api_err("create")(e)),
                }
            }
            Action::Scale { from, to } => {
                let d = deployment.expect("the Deployment exists");
                let read = ReadVersion::of(d.as_ref());
                let params =
                    PatchParams { field_manager: Some(CONTROLLER_NAME.into()), ..PatchParams::default() };
                deployments
                    .patch(key.name(), &params, &Patch::<()>::Json(scale_patch(&read, to)))
                    .await
                    .map_err(write_err("scale", read))?;
                if let Some(cm) = &cm {
                    self.event(
                        &cm.object_ref(&()),
                        EventType::Normal,
                        "Scaled",
                        format!("Scaled Deployment {key} from {from} to {to} replicas"),
                    );
                }
                tracing::info!(%key, from, to, "scaled Deployment");
                Ok(())
            }
            Action::Delete if self.expected.pending(key, Expect::Deleted) => {
                tracing::debug!(%key, "waiting for the informer to see the Deployment just deleted");
                Ok(())
            }
            Action::Delete => {
                let d = deployment.expect("the Deployment exists");
                let read = ReadVersion::of(d.as_ref());
                match deployments.delete(key.name(), &read.delete_params(DeleteParams::background())).await {
                    Ok(_) => self.expected.expect(key, Expect::Deleted),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(write_err("delete", read)(e)),
                }
                self.event(
                    &d.object_ref(&()),
                    EventType::Normal,
                    "Deleted",
                    format!("Deleted Deployment {key}: its ConfigMap is gone"),
                );
                tracing::info!(%key, "deleted Deployment: its ConfigMap is gone");
                Ok(())
            }
        }
    }

    fn resource_exists(&self, cm: &CachedConfigMap, key: &ObjectKey) -> Result<(), Error> {
        let err = Error::ResourceExists { key: key.clone() };
        self.event(&cm.object_ref(&()), EventType::Warning, "ResourceExists", err.to_string());
        Err(err)
    }

    /// Queues an Event; publishing happens off the reconcile path and never fails it.
    fn event(
        &self,
        regarding: &k8s_openapi::api::core::v1::ObjectReference,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        self.events.publish(regarding, type_, reason, note);
    }
}

impl Reconcile for Controller {
    type Error = Error;

    fn reconcile(&self, key: &ObjectKey) -> impl Future<Output = Result<(), Error>> + Send {
        self.sync(key)
    }

    fn is_fenced(error: &Error) -> bool {
        error.is_fenced()
    }

    fn conflict(error: &Error) -> Option<&Conflict> {
        match error {
            Error::Conflict(c) => Some(c),
            _ => None,
        }
    }

    fn started(&self) {
        tracing::info!(
            "{CONTROLLER_NAME} started: watching ConfigMaps in namespace={} for annotation {ANNOTATION}",
            self.options.scope
        );
    }
}

/// Keys whose `data.app` is new since their last reconcile, so the exercise's log line is written
/// once per value, not once per reconcile. Entries leave when reconciled.
#[derive(Clone, Default)]
struct DataChanged(Arc<parking_lot::Mutex<HashSet<ObjectKey>>>);

impl DataChanged {
    fn mark(&self, key: ObjectKey) {
        self.0.lock().insert(key);
    }

    fn take(&self, key: &ObjectKey) -> bool {
        self.0.lock().remove(key)
    }
}

fn app_of(cm: &CachedConfigMap) -> Option<&String> {
    cm.app.as_ref()
}

/// ConfigMap events enqueue the key, noting when `data.app` changed.
struct EnqueueConfigMap {
    queue: RateLimitingQueue<ObjectKey>,
    data_changed: DataChanged,
    configmaps: Lister<CachedConfigMap>,
    deployments: Lister<CachedDeployment>,
}

impl EventHandler<CachedConfigMap> for EnqueueConfigMap {
    fn on_add(&self, obj: &Arc<CachedConfigMap>, _initial: bool) {
        let key = ObjectKey::of(obj.as_ref());
        if app_of(obj).is_some() {
            self.data_changed.mark(key.clone());
        }
        self.queue.add(key);
    }
    fn on_update(&self, old: &Arc<CachedConfigMap>, new: &Arc<CachedConfigMap>) {
        let key = ObjectKey::of(new.as_ref());
        if app_of(old) != app_of(new) {
            self.data_changed.mark(key.clone());
        }
        self.queue.add(key);
    }
    fn on_delete(&self, obj: &Deleted<CachedConfigMap>) {
        self.queue.add(obj.key().clone());
    }
    /// A relist found unannotated ConfigMaps gone, which the cache cannot name: the keys that
    /// need a delete are those of our Deployments (the informer holds only those) whose
    /// ConfigMap is now absent — neither cached nor known to exist
    /// ([`Presence`](kube_informer::Presence)); annotated ones the relist has reported each on its own.
    fn on_uncached_deleted(&self, count: usize) {
        let owners: Vec<ObjectKey> = self
            .deployments
            .list()
            .iter()
            .map(|d| owner_key(d))
            .filter(|k| !self.configmaps.presence(k).exists())
            .collect();
        tracing::debug!(count, deployments = owners.len(), "unannotated ConfigMaps gone at a relist");
        for key in owners {
            self.queue.add(key);
        }
    }
}

/// Deployment events enqueue the ConfigMap that owns the Deployment, and settle expectations.
struct EnqueueOwner {
    queue: RateLimitingQueue<ObjectKey>,
    expected: Expectations,
}

/// The key of the ConfigMap that owns `d` (its controller reference), or `d`'s own key.
fn owner_key(d: &CachedDeployment) -> ObjectKey {
    let ns = d.metadata.namespace.as_deref().unwrap_or("");
    let owner = d
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.kind == "ConfigMap");
    let name = owner.map_or_else(|| d.name_any(), |r| r.name.clone());
    ObjectKey::new(ns, &name)
}

impl EnqueueOwner {
    fn enqueue(&self, d: &CachedDeployment) {
        self.expected.seen(&ObjectKey::of(d));
        self.queue.add(owner_key(d));
    }
}

impl EventHandler<CachedDeployment> for EnqueueOwner {
    fn on_add(&self, obj: &Arc<CachedDeployment>, _initial: bool) {
        self.enqueue(obj);
    }
    fn on_update(&self, old: &Arc<CachedDeployment>, new: &Arc<CachedDeployment>) {
        // A status write (each simulated or real pod becoming ready), a resync, or a relist that
        // found it unchanged: nothing the decision reads changed.
        if decision_inputs_differ(old, new) {
            self.enqueue(new);
        }
    }
    fn on_delete(&self, obj: &Deleted<CachedDeployment>) {
        self.expected.gone(&obj.key());
        self.queue.add(owner_key(obj.object()));
    }
}

/// The scale write: a JSON patch that sets `spec.replicas` only on the version of the
/// Deployment the decision was made from (its uid tested, its `resourceVersion` carried, as
/// [`ReadVersion::replace`] builds it). Any change since — a status write as pods become
/// ready, another writer's scale, our labels or owner reference gone — is a 409 Conflict, and the
/// key is decided again once the cache holds the new version; a late patch delivered after a
/// newer write of the same Deployment can never apply.
#[must_use]
pub fn scale_patch(read: &ReadVersion, to: i32) -> json_patch::Patch {
    read.replace("/spec/replicas", to)
}

/// Whether anything [`decide`] reads of a Deployment differs between `old` and `new`.
fn decision_inputs_differ(old: &CachedDeployment, new: &CachedDeployment) -> bool {
    let (o, n) = (&old.metadata, &new.metadata);
    o.uid != n.uid
        || old.is_managed() != new.is_managed()
        || o.owner_references != n.owner_references
        || o.deletion_timestamp != n.deletion_timestamp
        || old.spec.replicas != new.spec.replicas
}

/// The Deployment for a ConfigMap: labels `app=<name>` and `managed-by=counter-controller`,
/// selector `app=<name>`, one `nginx:1.27` container, `replicas`, and a controller
/// ownerReference to the ConfigMap so the cluster's garbage collector is a backstop.
#[must_use]
pub fn new_deployment<K: Resource<DynamicType = ()>>(cm: &K, replicas: i32) -> Deployment {
    let name = cm.name_any();
    let owner = cm.controller_owner_ref(&()).map(|mut r| {
        r.block_owner_deletion = Some(true);
        r
    });
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": cm.namespace(),
            "labels": { "app": name, MANAGED_BY.0: MANAGED_BY.1 },
            "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
        },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name, MANAGED_BY.0: MANAGED_BY.1 } },
                "spec": { "containers": [{ "name": "nginx", "image": IMAGE }] },
            },
        },
    }))
    .expect("a well-formed Deployment")
}
