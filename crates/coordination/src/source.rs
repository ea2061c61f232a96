//! An informer as the coordinator drives it: run it, wait for its cache, relist or refilter it
//! when the share of keys changes, keep only the objects of keys this replica may work on, and
//! tell which work key each cached object stands for (a ConfigMap its own; an owned Deployment
//! its owner's).

use std::sync::Arc;

use futures::future::BoxFuture;
use informer::{Deleted, EventHandler, Informer, ObjectKey, Watchable};
use tokio_util::sync::CancellationToken;

use crate::conflicts::VersionHook;

/// Which work keys a replica keeps in its caches (sharding); the coordinator sets it.
pub type KeepKey = Arc<dyn Fn(&ObjectKey, &'static str) -> bool + Send + Sync>;

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

    fn keys(&self) -> Vec<ObjectKey> {
        self.informer.lister().list().iter().map(|o| (self.key_of)(o)).collect()
    }

    fn len(&self) -> usize {
        self.informer.lister().len()
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
