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
//! * With leader election ([`Coordination::Elected`]) the informers always run, so a follower's
//!   caches stay warm; workers run only while this replica leads, and every write goes through the
//!   client's fence, so a replica that stopped leading sends none.
//! * With sharding ([`Coordination::Sharded`]) every replica works, each on the keys the ring gives
//!   it: a worker reconciles a key only while [`Ownership::may_work`] says so, holding the
//!   ownership for the whole reconcile, so a change of the member set waits for in-flight
//!   reconciles before this replica reports it drained.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use election::Leadership;
use election::selector::{SelectorCell, shard_selector};
use election::shard::{Ownership, ShardHandle};
use informer::{Config as InformerConfig, Deleted, EventHandler, Informer, Lister, ObjectKey};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::{EventType, Reporter};
use kube::{Client, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use workqueue::prometheus::PrometheusMetrics;
use workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

use crate::annotation::ANNOTATION;
use crate::cached::{CachedConfigMap, CachedDeployment, slim_configmap, slim_deployment};
use crate::decision::{Action, MANAGED_BY, decide};
use crate::events::{EventConfig, EventRecorder};
use crate::metrics::{ControllerMetrics, Outcome, ShardMetrics};

/// The name this controller reports in Events, field managers and queue metrics.
pub const CONTROLLER_NAME: &str = "counter-controller";
/// The image of the Deployments it creates.
pub const IMAGE: &str = "nginx:1.27";
/// How long a create waits to be seen by the Deployment informer before it may be tried again
/// (client-go's `ExpectationsTimeout`).
pub const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Which namespaces the controller watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One namespace.
    Namespace(String),
    /// Every namespace.
    All,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Namespace(ns) => f.write_str(ns),
            Self::All => f.write_str("*"),
        }
    }
}

/// Controller settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Namespaces to watch.
    pub scope: Scope,
    /// Concurrent reconciles.
    pub workers: usize,
    /// Informer resync period; zero disables it.
    pub resync: Duration,
    /// This replica's identity, reported as the Events' `reportingInstance`.
    pub identity: String,
    /// Which Events, and their budgets.
    pub events: EventConfig,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            scope: Scope::Namespace("default".into()),
            workers: 2,
            resync: Duration::from_secs(30),
            identity: election::hostname(),
            events: EventConfig::default(),
        }
    }
}

/// How replicas share the work.
pub enum Coordination {
    /// This replica works on every key.
    Alone,
    /// Only the leader works (see the `election` crate).
    Elected(watch::Receiver<Leadership>),
    /// Each replica works on the keys the ring of shard Leases gives it.
    Sharded(ShardHandle),
}

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
        matches!(self, Self::Api { source, .. } if election::is_fenced(source))
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
    metrics: ControllerMetrics,
    /// With sharding, what this replica may work on (read by workers and by the informers'
    /// filters); `None` without sharding (everything).
    ownership: Arc<parking_lot::RwLock<Option<Ownership>>>,
    /// Held shared by every reconcile, exclusively to change `ownership`: a change of the member
    /// set waits for the reconciles in flight.
    reconciling: tokio::sync::RwLock<()>,
    shard_metrics: ShardMetrics,
    options: Options,
}

/// Writes of ours the Deployment cache has not shown yet (client-go's "expectations"). Until the
/// watch delivers a create, the cache still says "missing", and until it delivers a delete, it
/// still shows the Deployment: a second reconcile in that window must wait rather than create
/// again (and misread its own Deployment's AlreadyExists as someone else's) or delete again (a
/// 404 for nothing).
#[derive(Clone, Default)]
struct Expectations(Arc<parking_lot::Mutex<HashMap<ObjectKey, (Expect, Instant)>>>);

/// What a key waits for the cache to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Created,
    Deleted,
}

impl Expectations {
    fn expect(&self, key: &ObjectKey, what: Expect) {
        self.0.lock().insert(key.clone(), (what, Instant::now()));
    }

    /// The cache shows the Deployment: a create is settled (a delete is not, until it is gone).
    fn seen(&self, key: &ObjectKey) {
        let mut m = self.0.lock();
        if m.get(key).is_some_and(|(e, _)| *e == Expect::Created) {
            m.remove(key);
        }
    }

    /// The cache shows the Deployment gone.
    fn gone(&self, key: &ObjectKey) {
        self.0.lock().remove(key);
    }

    fn pending(&self, key: &ObjectKey, what: Expect) -> bool {
        self.0.lock().get(key).is_some_and(|(e, at)| *e == what && at.elapsed() < EXPECTATION_TIMEOUT)
    }
}

impl Controller {
    /// Assembles the parts and registers the handlers. Nothing runs until [`run`](Self::run).
    /// The queue's metrics go into `registry` under client-go's `workqueue_*` names, the
    /// reconciles' under controller-runtime's `controller_runtime_*`.
    ///
    /// ## Warning
    /// With leader election, `client` must carry the election's fence
    /// ([`client::build`](crate::client::build)): the fence is what stops a replica that lost the
    /// Lease from writing.
    #[must_use]
    pub fn new(client: Client, options: Options, registry: &mut Registry) -> Arc<Self> {
        let (cm_api, deploy_api) = match &options.scope {
            Scope::Namespace(ns) => {
                (Api::namespaced(client.clone(), ns), Api::namespaced(client.clone(), ns))
            }
            Scope::All => (Api::all(client.clone()), Api::all(client.clone())),
        };
        let configmaps = Informer::new(cm_api, InformerConfig::default().resync(options.resync));
        configmaps.set_transform(Arc::new(slim_configmap));
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
        }));
        let expected = Expectations::default();
        deployments.add_handler(Arc::new(EnqueueOwner { queue: queue.clone(), expected: expected.clone() }));

        let reporter =
            Reporter { controller: CONTROLLER_NAME.into(), instance: Some(options.identity.clone()) };
        let controller_metrics =
            ControllerMetrics::register(registry, CONTROLLER_NAME, options.workers.max(1));
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
            metrics: controller_metrics,
            ownership: Arc::default(),
            reconciling: tokio::sync::RwLock::new(()),
            shard_metrics: ShardMetrics::register(registry),
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

    /// Runs until `shutdown` resolves: informers, the cache-sync gate, then the workers.
    ///
    /// On shutdown, workers stop taking keys, in-flight reconciles finish, and `run` returns.
    /// Returns `false` if shutdown came before the caches synced.
    pub async fn run(self: Arc<Self>, shutdown: impl Future) -> bool {
        self.run_elected(None, shutdown).await
    }

    /// As [`run`](Self::run), but the workers run only while `leadership` says this replica
    /// leads: they start on each acquisition (after enqueueing every cached key, since the
    /// previous leader may have left work undone) and stop when leadership is lost, while the
    /// informers keep running. `None` means always leading.
    pub async fn run_elected(
        self: Arc<Self>,
        leadership: Option<watch::Receiver<Leadership>>,
        shutdown: impl Future,
    ) -> bool {
        let how = leadership.map_or(Coordination::Alone, Coordination::Elected);
        self.run_coordinated(how, shutdown).await
    }

    /// As [`run`](Self::run), with the work shared as `how` says.
    pub async fn run_coordinated(self: Arc<Self>, how: Coordination, shutdown: impl Future) -> bool {
        // `shutdown` may resolve at any step; a token can be awaited at every one of them.
        let requested = CancellationToken::new();
        let trigger = {
            let requested = requested.clone();
            async move {
                shutdown.await;
                requested.cancel();
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            synced = self.run_until(requested, how) => synced,
            () = trigger => unreachable!("the trigger never completes"),
        }
    }

    async fn run_until(self: Arc<Self>, requested: CancellationToken, how: Coordination) -> bool {
        if let Coordination::Sharded(handle) = &how {
            // Before the informers start: until this replica knows its keys, it caches none.
            let first = handle.ownership.borrow().clone();
            if let Some(cell) = &handle.selector {
                self.ask_server_to_filter(cell, &first).await;
            }
            *self.ownership.write() = Some(first);
            self.filter_caches();
        }
        let stop = CancellationToken::new();
        let informers = [
            tokio::spawn({
                let (i, s) = (self.configmaps.clone(), stop.clone());
                async move { i.run(s.cancelled_owned()).await }
            }),
            tokio::spawn({
                let (i, s) = (self.deployments.clone(), stop.clone());
                async move { i.run(s.cancelled_owned()).await }
            }),
        ];
        let synced = self.configmaps.wait_for_cache_sync(requested.cancelled()).await
            && self.deployments.wait_for_cache_sync(requested.cancelled()).await;
        if synced {
            tracing::info!(
                "{CONTROLLER_NAME} started: watching ConfigMaps in namespace={} for annotation {ANNOTATION}",
                self.options.scope
            );
            match how {
                Coordination::Alone => {
                    self.work_until(requested.cancelled()).await;
                    tracing::info!("shutting down: finished in-flight reconciles");
                }
                Coordination::Elected(rx) => Arc::clone(&self).lead_when_elected(rx, &requested).await,
                Coordination::Sharded(handle) => {
                    let follow = Arc::clone(&self).follow_ownership(handle);
                    tokio::select! {
                        () = self.work_until(requested.cancelled()) => {}
                        () = follow => self.work_until(requested.cancelled()).await,
                    }
                    tracing::info!("shutting down: finished in-flight reconciles");
                }
            }
        }
        stop.cancel();
        self.queue.shut_down();
        for i in informers {
            let _ = i.await;
        }
        self.events.close().await;
        synced
    }

    /// Runs the workers until `stop` resolves, then waits for in-flight reconciles.
    async fn work_until(self: &Arc<Self>, stop: impl Future) {
        let term = CancellationToken::new();
        let workers: Vec<_> = (0..self.options.workers.max(1))
            .map(|_| tokio::spawn(Arc::clone(self).worker(term.clone())))
            .collect();
        stop.await;
        term.cancel();
        for w in workers {
            let _ = w.await;
        }
    }

    /// Each term of leadership: enqueue every cached key, run the workers until the term ends
    /// (lost or shutdown). Never returns before shutdown, except when the elector is gone.
    async fn lead_when_elected(
        self: Arc<Self>,
        mut rx: watch::Receiver<Leadership>,
        requested: &CancellationToken,
    ) {
        tracing::info!("waiting to lead before reconciling; the informers keep the caches warm");
        loop {
            tokio::select! {
                r = rx.wait_for(Leadership::is_leading) => if r.is_err() { return },
                () = requested.cancelled() => return,
            }
            let keys = self.enqueue_all();
            tracing::info!(keys, workers = self.options.workers, "leading: reconciling");
            let mut shutdown = false;
            self.work_until(async {
                tokio::select! {
                    _ = rx.wait_for(|l| !l.is_leading()) => {}
                    () = requested.cancelled() => shutdown = true,
                }
            })
            .await;
            if shutdown {
                tracing::info!("shutting down: finished in-flight reconciles");
                return;
            }
            tracing::warn!(
                "stopped leading: workers stopped, no more writes; the informers keep the caches warm"
            );
        }
    }

    /// Installs each new [`Ownership`]: waits for the reconciles in flight under the old one (they
    /// hold it), then reports the member set drained and enqueues the keys it may now work on.
    async fn follow_ownership(self: Arc<Self>, handle: ShardHandle) {
        let ShardHandle { mut ownership, drained, selector, .. } = handle;
        let me = self.options.identity.clone();
        loop {
            let next = ownership.borrow_and_update().clone();
            let fingerprint = next.current().fingerprint();
            let members = next.current().members().len();
            let settled = next.is_settled();
            // Compared with the ownership the caches were last filtered with (at start, the one
            // before the first published), so the first real change relists them.
            let previous = {
                let _drained = self.reconciling.write().await;
                self.ownership.write().replace(next.clone())
            };
            let changed = previous.as_ref().is_none_or(|p| p.current() != next.current());
            if let Some(cell) = &selector {
                // Before the relist, so that its list and watch carry the new share.
                cell.set(next.cached_ranges().map(|r| shard_selector(&r)));
            }
            if changed {
                // The caches hold only keys this replica owns (or owned at the last settled set):
                // read again with the new filter, and only then report drained, so that by the
                // time a key may come here its objects are cached.
                tokio::join!(self.configmaps.relist(), self.deployments.relist());
            } else {
                // Settled on the same set: the filter only narrowed (to the current share).
                self.configmaps.refilter();
                self.deployments.refilter();
            }
            self.shard_metrics.cached(self.cm_lister.len(), self.deploy_lister.len());
            drained.send_replace(fingerprint);
            // What the change means for the cached keys: how many are workable here, and moved.
            let (mut mine, mut moved) = (0, 0);
            for key in self.cm_lister.keys() {
                let k = key.to_string();
                mine += usize::from(next.may_work(&k));
                moved += usize::from(previous.as_ref().is_some_and(|p| p.owns(&k) != next.owns(&k)));
            }
            self.shard_metrics.observed(&me, members, mine, moved, changed);
            let keys = self.enqueue_all();
            tracing::info!(members, settled, workable = mine, moved, keys, "shard ownership changed");
            if ownership.changed().await.is_err() {
                return;
            }
        }
    }

    /// Sharding by namespace: asks whether the API server filters lists and watches by
    /// `shardSelector` (KEP-5866), and sets the selector for `first`. The caches are filtered here
    /// either way; a server that filters only sends less.
    async fn ask_server_to_filter(&self, cell: &SelectorCell, first: &Ownership) {
        let path = match &self.options.scope {
            Scope::All => "/api/v1/configmaps".to_owned(),
            Scope::Namespace(ns) => format!("/api/v1/namespaces/{ns}/configmaps"),
        };
        let filters = match election::selector::server_filters(&self.client, &path).await {
            Ok(true) => {
                tracing::info!(
                    "the API server filters lists and watches to this replica's share (shardSelector)"
                );
                true
            }
            Ok(false) => {
                tracing::info!(
                    "the API server does not filter by shardSelector (KEP-5866, Kubernetes 1.36+); this replica filters what it receives"
                );
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether the API server filters by shardSelector; sending it anyway");
                false
            }
        };
        self.shard_metrics.server_filters(filters);
        cell.set(first.cached_ranges().map(|r| shard_selector(&r)));
    }

    /// Makes both caches keep only the keys this replica owns now or at the last settled member set
    /// (sharding; before it knows the ring, none).
    fn filter_caches(&self) {
        let view = Arc::clone(&self.ownership);
        let metrics = self.shard_metrics.clone();
        let keep = move |key: &ObjectKey, kind: &str| {
            let k = key.to_string();
            let kept = view.read().as_ref().is_none_or(|o| o.owns(&k) || o.owned_when_settled(&k));
            if !kept {
                metrics.turned_away(kind);
            }
            kept
        };
        let keep = Arc::new(keep);
        let k = Arc::clone(&keep);
        self.configmaps.set_filter(Arc::new(move |cm: &CachedConfigMap| k(&ObjectKey::of(cm), "ConfigMap")));
        self.deployments.set_filter(Arc::new(move |d: &CachedDeployment| keep(&owner_key(d), "Deployment")));
    }

    /// Enqueues every ConfigMap and every managed Deployment's owner; returns how many keys.
    fn enqueue_all(&self) -> usize {
        let mut n = 0;
        for cm in self.cm_lister.list() {
            n += usize::from(self.queue.add(ObjectKey::of(cm.as_ref())));
        }
        for d in self.deploy_lister.list() {
            n += usize::from(self.queue.add(owner_key(&d)));
        }
        n
    }

    /// Takes keys until told to stop: reconcile, then `forget` on success or `add_rate_limited`
    /// on error. The key is released (done) when `item` drops.
    async fn worker(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let item = tokio::select! {
                biased;
                () = stop.cancelled() => return,
                item = self.queue.get() => match item {
                    Some(item) => item,
                    None => return,
                },
            };
            let key = item.key().clone();
            // Held for the whole reconcile: a change of the member set waits for it.
            let reconciling = self.reconciling.read().await;
            let (sharded, workable) = match self.ownership.read().as_ref() {
                Some(o) => (true, o.may_work(&key.to_string())),
                None => (false, true),
            };
            if !workable {
                // Another replica's (or not yet ours): dropped; a change of ownership re-enqueues.
                self.queue.forget(&key);
                continue;
            }
            self.metrics.started();
            let start = Instant::now();
            let result = self.sync(&key).await;
            if sharded {
                self.shard_metrics.cached(self.cm_lister.len(), self.deploy_lister.len());
            }
            drop(reconciling);
            let outcome = match result {
                Ok(()) => {
                    self.queue.forget(&key);
                    Outcome::Success
                }
                Err(e) if e.is_fenced() => {
                    // Not ours to do now; requeued so it is not lost if leadership comes back.
                    tracing::debug!(%key, "{e}");
                    self.queue.add_rate_limited(key);
                    Outcome::Requeue
                }
                Err(e) => {
                    tracing::warn!(%key, retries = self.queue.num_requeues(&key), "reconcile failed: {e}");
                    self.queue.add_rate_limited(key);
                    Outcome::Error
                }
            };
            self.metrics.finished(outcome, start.elapsed());
        }
    }

    /// Reconciles one ConfigMap key: reads the caches, decides, executes.
    ///
    /// # Errors
    ///
    /// An invalid annotation, a Deployment that is not ours, or a failed API call.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let cm = self.cm_lister.get(key);
        let deployment = self.deploy_lister.get(key);
        // The tutorial's exercise, when the value is new to this reconcile (not on every retry or
        // Deployment status change).
        if self.data_changed.take(key)
            && let Some(app) = cm.as_ref().and_then(|c| app_of(c)).filter(|a| !a.is_empty())
        {
            tracing::info!("ConfigMap {key} data: {app}");
        }
        let action = decide(cm.as_deref(), deployment.as_deref(), key.name());
        tracing::debug!(%key, ?action, "decided");
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), key.namespace());
        let api_err = |action| move |source| Error::Api { action, key: key.clone(), source };
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
                let params =
                    PatchParams { field_manager: Some(CONTROLLER_NAME.into()), ..PatchParams::default() };
                deployments
                    .patch(key.name(), &params, &Patch::<()>::Json(scale_patch(&d, to)))
                    .await
                    .map_err(api_err("scale"))?;
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
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: d.metadata.uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                match deployments.delete(key.name(), &params).await {
                    Ok(_) => self.expected.expect(key, Expect::Deleted),
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(api_err("delete")(e)),
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

/// The scale write: a JSON patch that sets `spec.replicas` only if the Deployment is still the
/// one decided on and still ours — same uid, still labelled `managed-by=counter-controller`, same
/// owner references — checked by the API server in the same write (`test` operations).
///
/// Unlike a `resourceVersion` precondition, it does not fail when the cluster's Deployment
/// controller has written the status meanwhile (every pod becoming ready does), so scaling does not
/// fight it with 409 Conflicts and retries; a Deployment that stopped being ours still fails the
/// patch (422), and the next reconcile sees why.
#[must_use]
pub fn scale_patch(d: &CachedDeployment, to: i32) -> json_patch::Patch {
    let mut ops = vec![
        json!({ "op": "test", "path": "/metadata/uid", "value": d.metadata.uid }),
        json!({ "op": "test", "path": format!("/metadata/labels/{}", MANAGED_BY.0), "value": MANAGED_BY.1 }),
    ];
    if let Some(refs) = d.metadata.owner_references.as_ref().filter(|r| !r.is_empty()) {
        ops.push(json!({ "op": "test", "path": "/metadata/ownerReferences", "value": refs }));
    }
    ops.push(json!({ "op": "replace", "path": "/spec/replicas", "value": to }));
    serde_json::from_value(serde_json::Value::Array(ops)).expect("a well-formed JSON patch")
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
