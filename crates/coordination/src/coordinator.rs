//! The [`Coordinator`]: runs a controller's informers, waits for their caches, then runs its
//! workers as the [`Coordination`] says — and stops them all cleanly.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::ObjectKey;
use kube_lease_election::Leadership;
use kube_lease_election::shard::{Ownership, ShardHandle};
use kube_workqueue::RateLimitingQueue;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::conditional::Conflict;
use crate::conflicts::Conflicts;
use crate::freshness::{Noted, Primary, Triggers};
use crate::metrics::{ControllerMetrics, FreshnessMetrics, Outcome, ShardMetrics, WriteMetrics};
use crate::source::Source;

/// How replicas share the work.
pub enum Coordination {
    /// This replica works on every key.
    Alone,
    /// Only the leader works (see the `kube-lease-election` crate); followers keep their caches warm.
    Elected(watch::Receiver<Leadership>),
    /// Each replica works on the keys the ring of shard Leases gives it.
    Sharded(ShardHandle),
}

impl From<Option<watch::Receiver<Leadership>>> for Coordination {
    /// Leader-elected when there is a leadership to follow, else alone: what a controller built
    /// with or without `--leader-elect` runs as.
    ///
    /// ```
    /// use kube_coordination::Coordination;
    /// use kube_lease_election::Leadership;
    ///
    /// assert!(matches!(Coordination::from(None), Coordination::Alone));
    /// let (_tx, leadership) = tokio::sync::watch::channel(Leadership::Candidate);
    /// assert!(matches!(Coordination::from(Some(leadership)), Coordination::Elected(_)));
    /// ```
    fn from(leadership: Option<watch::Receiver<Leadership>>) -> Self {
        leadership.map_or(Self::Alone, Self::Elected)
    }
}

/// A controller's reconcile, as the coordinator's workers call it.
pub trait Reconcile: Send + Sync + 'static {
    /// Why a reconcile did not converge.
    type Error: std::fmt::Display + Send;

    /// Brings `key` to its desired state. An error retries the key with backoff.
    fn reconcile(&self, key: &ObjectKey) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Whether `error` is a write the leader-election fence withheld (this replica stopped
    /// leading or owning the key): the key is requeued, not counted as failed.
    fn is_fenced(_error: &Self::Error) -> bool {
        false
    }

    /// The [`Conflict`] when `error` is a conditional write the API server refused because the
    /// object had changed since it was read ([`conditional`](crate::conditional)): counted,
    /// and the key requeued once the cache holds a newer version — not a failure, no backoff.
    fn conflict(_error: &Self::Error) -> Option<&Conflict> {
        None
    }

    /// Called once every cache has synced, before the first reconcile (a startup line).
    fn started(&self) {}
}

/// What a [`Coordinator`] needs to know of its controller.
#[derive(Clone)]
pub struct Settings {
    /// The controller's name, for metrics (`controller_runtime_*{controller}`).
    pub name: String,
    /// Concurrent reconciles.
    pub workers: usize,
    /// This replica's identity (the shard it is).
    pub identity: String,
    /// Prefix of the shard metrics (`counter_controller`).
    pub metrics_prefix: String,
    /// With sharding by namespace: a client and the list path of the primary kind, to ask whether
    /// the API server filters lists and watches by `shardSelector` (KEP-5866).
    pub shard_probe: Option<(kube::Client, String)>,
}

impl Settings {
    /// `name` with `workers` workers, this replica being `identity`; shard metrics prefixed with
    /// `name` (dashes as underscores).
    #[must_use]
    pub fn new(name: &str, workers: usize, identity: &str) -> Self {
        Self {
            name: name.to_owned(),
            workers: workers.max(1),
            identity: identity.to_owned(),
            metrics_prefix: name.replace('-', "_"),
            shard_probe: None,
        }
    }

    /// Asks the API server at `path` (the primary kind's list) whether it filters by shard.
    #[must_use]
    pub fn shard_probe(mut self, client: kube::Client, path: String) -> Self {
        self.shard_probe = Some((client, path));
        self
    }
}

/// Runs a controller's informers and workers, alone, leader-elected or sharded.
pub struct Coordinator {
    pub(crate) queue: RateLimitingQueue<ObjectKey>,
    /// The first is the primary kind: its keys are what the shard metrics count.
    pub(crate) sources: Vec<Arc<dyn Source>>,
    pub(crate) settings: Settings,
    /// With sharding, what this replica may work on (read by workers and by the caches'
    /// filters); `None` without sharding (everything).
    pub(crate) ownership: Arc<parking_lot::RwLock<Option<Ownership>>>,
    /// With sharding, the ownership whose keys the caches hold (read by their filters): the
    /// current one, or across a lapse of this replica's Lease the last one it had.
    pub(crate) cached: Arc<parking_lot::RwLock<Option<Ownership>>>,
    /// Held shared by every reconcile, exclusively to change `ownership`: a change of the member
    /// set waits for the reconciles in flight.
    pub(crate) reconciling: tokio::sync::RwLock<()>,
    /// When the workable keys were last counted for the shard metrics.
    workable_counted: parking_lot::Mutex<Option<Instant>>,
    metrics: ControllerMetrics,
    pub(crate) shard_metrics: ShardMetrics,
    write_metrics: WriteMetrics,
    conflicts: Arc<Conflicts>,
    /// The secondary events each key's primary cache must catch up with ([`freshness`](crate::freshness)).
    triggers: Arc<Triggers>,
    freshness_metrics: FreshnessMetrics,
}

impl Coordinator {
    /// A coordinator of `sources` feeding `queue`. The reconcile metrics go into `registry` under
    /// controller-runtime's names, the shard metrics under the settings' prefix.
    #[must_use]
    pub fn new(
        queue: RateLimitingQueue<ObjectKey>,
        sources: Vec<Arc<dyn Source>>,
        settings: Settings,
        registry: &mut Registry,
    ) -> Arc<Self> {
        let conflicts = Conflicts::new(queue.clone());
        for s in &sources {
            s.on_version(conflicts.hook());
        }
        let triggers = Arc::<Triggers>::default();
        if let Some((primary, secondaries)) = sources.split_first() {
            for s in secondaries {
                let (primary, triggers) = (Arc::clone(primary), Arc::clone(&triggers));
                s.on_work_event(Arc::new(move |key, version| {
                    let noted = Noted::of(version);
                    if !noted.seen_by(primary.seen_version()) {
                        triggers.note(key, noted);
                    }
                }));
            }
        }
        Arc::new(Self {
            triggers,
            freshness_metrics: FreshnessMetrics::register(registry, &settings.metrics_prefix),
            metrics: ControllerMetrics::register(registry, &settings.name, settings.workers),
            shard_metrics: ShardMetrics::register(registry, &settings.metrics_prefix),
            write_metrics: WriteMetrics::register(registry, &settings.metrics_prefix),
            conflicts,
            queue,
            sources,
            settings,
            ownership: Arc::default(),
            cached: Arc::default(),
            reconciling: tokio::sync::RwLock::new(()),
            workable_counted: parking_lot::Mutex::new(None),
        })
    }

    /// Runs until `shutdown` resolves: informers, the cache-sync gate, then the workers as `how`
    /// says. On shutdown, workers stop taking keys, in-flight reconciles finish, the queue shuts
    /// down and the informers stop. Returns `false` if shutdown came before the caches synced.
    pub async fn run<R: Reconcile>(
        self: &Arc<Self>,
        reconciler: Arc<R>,
        how: Coordination,
        shutdown: impl Future,
    ) -> bool {
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
            synced = Arc::clone(self).run_until(reconciler, requested, how) => synced,
            () = trigger => unreachable!("the trigger never completes"),
        }
    }

    async fn run_until<R: Reconcile>(
        self: Arc<Self>,
        reconciler: Arc<R>,
        requested: CancellationToken,
        how: Coordination,
    ) -> bool {
        if let Coordination::Sharded(handle) = &how {
            // Before the informers start: until this replica knows its keys, it caches none.
            self.start_sharded(handle).await;
        }
        let stop = CancellationToken::new();
        let informers: Vec<_> = self.sources.iter().map(|s| tokio::spawn(s.run(stop.clone()))).collect();
        let mut synced = true;
        for s in &self.sources {
            synced = synced && s.wait_for_cache_sync(requested.clone()).await;
        }
        if synced {
            reconciler.started();
            match how {
                Coordination::Alone => {
                    self.work_until(&reconciler, requested.cancelled()).await;
                    tracing::info!("shutting down: finished in-flight reconciles");
                }
                Coordination::Elected(rx) => self.lead_when_elected(&reconciler, rx, &requested).await,
                Coordination::Sharded(handle) => {
                    let follow = Arc::clone(&self).follow_ownership(handle);
                    tokio::select! {
                        () = self.work_until(&reconciler, requested.cancelled()) => {}
                        () = follow => self.work_until(&reconciler, requested.cancelled()).await,
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
        synced
    }

    /// Runs the workers until `stop` resolves, then waits for in-flight reconciles.
    pub(crate) async fn work_until<R: Reconcile>(self: &Arc<Self>, reconciler: &Arc<R>, stop: impl Future) {
        let term = CancellationToken::new();
        let workers: Vec<_> = (0..self.settings.workers)
            .map(|_| tokio::spawn(Arc::clone(self).worker(Arc::clone(reconciler), term.clone())))
            .collect();
        stop.await;
        term.cancel();
        for w in workers {
            let _ = w.await;
        }
    }

    /// Whether a reconcile of `key` may act on the primary object it read from the cache, whose
    /// uid is `uid`, as the reason to create (see [`freshness`](crate::freshness)): yes when the
    /// primary cache has caught up with every event that enqueued `key` and still holds that
    /// object; otherwise a consistent read decides. Call it after deciding, before the write.
    ///
    /// ```no_run
    /// # async fn f(coordinator: &kube_coordination::Coordinator, key: &kube_informer::ObjectKey) -> Result<(), kube::Error> {
    /// if !coordinator.confirm_primary(key, "uid-of-the-cached-owner").await?.may_act() {
    ///     return Ok(()); // the owner's own event is on its way and enqueues the key again
    /// }
    /// // create what the owner asks for
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The consistent read failed.
    pub async fn confirm_primary(&self, key: &ObjectKey, uid: &str) -> Result<Primary, kube::Error> {
        let Some(primary) = self.sources.first() else { return Ok(Primary::CaughtUp) };
        // The version first, the cache second: the cache read is then at least that new.
        let seen = primary.seen_version();
        if self.triggers.get(key).is_none_or(|noted| noted.seen_by(seen)) {
            let held = primary.identity(key).is_some_and(|id| id.is_live(uid));
            return Ok(if held { Primary::CaughtUp } else { Primary::Stale });
        }
        let live = primary.read_identity(key).await?;
        let found = if live.is_some_and(|id| id.is_live(uid)) { Primary::Confirmed } else { Primary::Stale };
        let outcome = if found == Primary::Confirmed { "confirmed" } else { "stale" };
        tracing::debug!(%key, outcome, "the {} cache had not caught up with the event that enqueued the key; read it", primary.kind());
        self.freshness_metrics.read(outcome);
        Ok(found)
    }

    /// Enqueues the work key of every cached object; returns how many keys were new to the queue.
    pub(crate) fn enqueue_all(&self) -> usize {
        self.sources.iter().flat_map(|s| s.keys()).map(|k| usize::from(self.queue.add(k))).sum()
    }

    /// Records how many objects each cache holds (sharding) and, at most once a second, how many
    /// of the primary kind's keys this replica may work on — keys created since the last change
    /// of the member set count too.
    pub(crate) fn record_cached(&self) {
        for s in &self.sources {
            self.shard_metrics.cached(s.kind(), s.len());
        }
        {
            let mut last = self.workable_counted.lock();
            if last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                return;
            }
            *last = Some(Instant::now());
        }
        let Some(ownership) = self.ownership.read().clone() else { return };
        let keys = self.sources.first().map(|s| s.keys()).unwrap_or_default();
        let workable = keys.iter().filter(|k| ownership.may_work(&k.to_string())).count();
        self.shard_metrics.workable(&self.settings.identity, workable);
    }

    /// Takes keys until told to stop: reconcile, then `forget` on success or `add_rate_limited`
    /// on error. The key is released (done) when `item` drops.
    async fn worker<R: Reconcile>(self: Arc<Self>, reconciler: Arc<R>, stop: CancellationToken) {
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
            let noted = self.triggers.get(&key);
            let result = reconciler.reconcile(&key).await;
            if sharded {
                self.record_cached();
            }
            drop(reconciling);
            let outcome = match result {
                Ok(()) => {
                    self.triggers.settle(&key, noted);
                    self.queue.forget(&key);
                    Outcome::Success
                }
                Err(e) => self.failed(key, &e, R::conflict(&e), R::is_fenced(&e)),
            };
            self.metrics.finished(outcome, start.elapsed());
        }
    }

    /// What a reconcile of `key` that returned `e` leaves behind. A refused conditional write
    /// (`conflict`) waits for the newer version; a fenced write is requeued; only the rest are
    /// errors, retried with backoff.
    fn failed(
        &self,
        key: ObjectKey,
        e: &impl std::fmt::Display,
        conflict: Option<&Conflict>,
        fenced: bool,
    ) -> Outcome {
        if let Some(conflict) = conflict {
            // Not a failure: the decision was made from a version that is gone.
            tracing::debug!(%key, "{conflict}");
            self.write_metrics.conflict(&conflict.read.resource);
            self.queue.forget(&key);
            let source = self.sources.iter().find(|s| s.kind() == conflict.read.kind);
            self.conflicts.requeue_when_newer(key, conflict, source.map(AsRef::as_ref));
            Outcome::Requeue
        } else if fenced {
            // Not ours to do now; requeued so it is not lost if leadership comes back.
            tracing::debug!(%key, "{e}");
            self.queue.add_rate_limited(key);
            Outcome::Requeue
        } else {
            tracing::warn!(%key, retries = self.queue.num_requeues(&key), "reconcile failed: {e}");
            self.queue.add_rate_limited(key);
            Outcome::Error
        }
    }
}
