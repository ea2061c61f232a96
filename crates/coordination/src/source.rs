//! An informer as the coordinator drives it: run it, wait for its cache, relist or refilter it
//! when the share of keys changes, keep only the objects of keys this replica may work on, and
//! tell which work key each cached object stands for (a ConfigMap its own; an owned Deployment
//! its owner's).

use std::sync::Arc;

use futures::future::BoxFuture;
use informer::{Informer, ObjectKey, Watchable};
use tokio_util::sync::CancellationToken;

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

    fn keys(&self) -> Vec<ObjectKey> {
        self.informer.lister().list().iter().map(|o| (self.key_of)(o)).collect()
    }

    fn len(&self) -> usize {
        self.informer.lister().len()
    }
}
