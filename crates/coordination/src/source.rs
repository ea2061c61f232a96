//! An informer as the coordinator drives it: run it, wait for its cache, relist or refilter it
//! when the share of keys changes, keep only the objects of keys this replica may work on, and
//! tell which work key each cached object stands for (a ConfigMap its own; an owned Deployment
//! its owner's).

use std::sync::Arc;

use futures::future::BoxFuture;
use kube_informer::{Deleted, EventHandler, Informer, ObjectKey, Watchable};
use tokio_util::sync::CancellationToken;

use crate::conflicts::VersionHook;
use crate::freshness::Identity;

/// Which work keys a replica keeps in its caches (sharding); the coordinator sets it.
pub type KeepKey = Arc<dyn Fn(&ObjectKey, &'static str) -> bool + Send + Sync>;

/// Called with the work key of every object an informer reports and the event's
/// `resourceVersion` (`None` for a tombstone, whose deletion's version is unknown).
pub type WorkHook = Arc<dyn Fn(ObjectKey, Option<&str>) + Send + Sync>;

/// One informer of a controller, type-erased for the [`Coordinator`](crate::Coordinator).
pub trait Source: Send + Sync + 'static {
    /// The kind it caches, for logs and metrics (`ConfigMap`).
    fn kind(&self) -> &'static str;
    /// Runs the informer until `stop` is cancelled.
    fn run(&self, stop: CancellationToken) -> BoxFuture<'static, ()>;
    /// Waits until the cache has synced; `false` if `cancel` came first.
    fn wait_for_cache_sync(&self, cancel: CancellationToken) -> BoxFuture<'static, bool>;
    /// Lists again from the API server (with the current filter and selector).
    fn relist(&self) -> BoxFuture<'static, ()>;
    /// Applies the current filter to what is cached, without a list.
    fn refilter(&self);
    /// Keeps only objects whose work key `keep` accepts.
    fn set_filter(&self, keep: KeepKey);
    /// Calls `hook` with every version of an object the informer sees from now on (what a
    /// refused conditional write waits for).
    fn on_version(&self, hook: VersionHook);
    /// The `resourceVersion` of the cached object `object` (its own key, not its work key);
    /// `None` when it is not cached.
    fn version(&self, object: &ObjectKey) -> Option<String>;
    /// Calls `hook` with the work key and version of every add, update and delete the informer
    /// reports from now on, before any handler added earlier (what
    /// [`freshness`](crate::freshness) notes of a secondary kind).
    fn on_work_event(&self, hook: WorkHook);
    /// The newest version the cache has applied ([`Informer::seen_version`]).
    fn seen_version(&self) -> Option<u64>;
    /// The identity of the cached object `object`; `None` when it is not cached.
    fn identity(&self, object: &ObjectKey) -> Option<Identity>;
    /// The identity of `object` as the API server holds it now (a consistent read); `None` when
    /// it does not exist.
    fn read_identity(&self, object: &ObjectKey) -> BoxFuture<'static, Result<Option<Identity>, kube::Error>>;
    /// The work key of every cached object.
    fn keys(&self) -> Vec<ObjectKey>;
    /// How many objects are cached.
    fn len(&self) -> usize;
    /// Whether nothing is cached.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An [`Informer`] with the function from its objects to work keys.
pub struct Watched<K> {
    informer: Informer<K>,
    kind: &'static str,
    key_of: fn(&K) -> ObjectKey,
}

impl<K: Watchable> Watched<K> {
    /// `informer`, caching objects of `kind`, each standing for the work key `key_of` gives.
    pub fn source(informer: Informer<K>, kind: &'static str, key_of: fn(&K) -> ObjectKey) -> Arc<dyn Source> {
        Arc::new(Self { informer, kind, key_of })
    }
}

impl<K: Watchable> Source for Watched<K> {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn run(&self, stop: CancellationToken) -> BoxFuture<'static, ()> {
        let informer = self.informer.clone();
        Box::pin(async move { informer.run(stop.cancelled_owned()).await })
    }

    fn wait_for_cache_sync(&self, cancel: CancellationToken) -> BoxFuture<'static, bool> {
        let informer = self.informer.clone();
        Box::pin(async move { informer.wait_for_cache_sync(cancel.cancelled_owned()).await })
    }

    fn relist(&self) -> BoxFuture<'static, ()> {
        let informer = self.informer.clone();
        Box::pin(async move { informer.relist().await })
    }

    fn refilter(&self) {
        self.informer.refilter();
    }

    fn set_filter(&self, keep: KeepKey) {
        let (key_of, kind) = (self.key_of, self.kind);
        self.informer.set_filter(Arc::new(move |obj: &K| keep(&key_of(obj), kind)));
    }

    fn on_version(&self, hook: VersionHook) {
        self.informer.add_handler(Arc::new(Versions { kind: self.kind, hook }));
    }

    fn version(&self, object: &ObjectKey) -> Option<String> {
        self.informer.lister().get(object).and_then(|o| o.meta().resource_version.clone())
    }

    fn on_work_event(&self, hook: WorkHook) {
        // Before the controller's own handlers: the note must exist before the key is enqueued.
        self.informer.add_handler_first(Arc::new(WorkEvents { key_of: self.key_of, hook }));
    }

    fn seen_version(&self) -> Option<u64> {
        self.informer.seen_version()
    }

    fn identity(&self, object: &ObjectKey) -> Option<Identity> {
        self.informer.lister().get(object).map(|o| Identity::of(o.meta()))
    }

    fn read_identity(&self, object: &ObjectKey) -> BoxFuture<'static, Result<Option<Identity>, kube::Error>> {
        let (informer, object) = (self.informer.clone(), object.clone());
        Box::pin(async move { Ok(informer.read_live(&object).await?.map(|o| Identity::of(o.meta()))) })
    }

    fn keys(&self) -> Vec<ObjectKey> {
        self.informer.lister().list().iter().map(|o| (self.key_of)(o)).collect()
    }

    fn len(&self) -> usize {
        self.informer.lister().len()
    }
}

/// Reports each event's work key and version to a [`WorkHook`].
struct WorkEvents<K> {
    key_of: fn(&K) -> ObjectKey,
    hook: WorkHook,
}

impl<K: Watchable> EventHandler<K> for WorkEvents<K> {
    fn on_add(&self, obj: &Arc<K>, _initial: bool) {
        (self.hook)((self.key_of)(obj), obj.meta().resource_version.as_deref());
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        (self.hook)((self.key_of)(new), new.meta().resource_version.as_deref());
    }
    fn on_delete(&self, obj: &Deleted<K>) {
        // A watched delete carries the deletion's version; a tombstone only the last one cached.
        let version = match obj {
            Deleted::Known(o) => o.meta().resource_version.as_deref(),
            Deleted::FinalStateUnknown { .. } => None,
        };
        (self.hook)((self.key_of)(obj.object()), version);
    }
}

/// Reports each version an informer sees to a [`VersionHook`].
struct Versions {
    kind: &'static str,
    hook: VersionHook,
}

impl Versions {
    fn report<K: Watchable>(&self, obj: &K, deleted: bool) {
        let m = obj.meta();
        let version = if deleted { None } else { m.resource_version.as_deref() };
        (self.hook)(
            self.kind,
            m.namespace.as_deref().unwrap_or(""),
            m.name.as_deref().unwrap_or(""),
            version,
        );
    }
}

impl<K: Watchable> EventHandler<K> for Versions {
    fn on_add(&self, obj: &Arc<K>, _initial: bool) {
        self.report(obj.as_ref(), false);
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        self.report(new.as_ref(), false);
    }
    fn on_delete(&self, obj: &Deleted<K>) {
        self.report(obj.object().as_ref(), true);
    }
}
