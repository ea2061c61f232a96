//! Event handlers: what an informer calls when its cache changes.
//!
//! Handlers run on the informer's task, one notification at a time and in order. They should only
//! name work (enqueue a key) and return: a slow handler delays every later notification.

use std::sync::Arc;

use crate::key::ObjectKey;

/// What `on_delete` receives.
#[derive(Debug, Clone)]
pub enum Deleted<K> {
    /// The watch saw the delete: the object's last state.
    Known(Arc<K>),
    /// The object vanished while the watch was broken and was only found missing at the relist
    /// (client-go's `DeletedFinalStateUnknown`): `last` is the last state the cache had, which may
    /// be stale.
    FinalStateUnknown {
        /// The object's key.
        key: ObjectKey,
        /// The last cached state.
        last: Arc<K>,
    },
}

impl<K: kube::Resource> Deleted<K> {
    /// The key of the deleted object, whichever way it was noticed.
    #[must_use]
    pub fn key(&self) -> ObjectKey {
        match self {
            Self::Known(obj) => ObjectKey::of(obj.as_ref()),
            Self::FinalStateUnknown { key, .. } => key.clone(),
        }
    }

    /// The last known state.
    #[must_use]
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Known(obj) | Self::FinalStateUnknown { last: obj, .. } => obj,
        }
    }
}

/// Reacts to cache changes (client-go's `ResourceEventHandler`).
pub trait EventHandler<K>: Send + Sync {
    /// A new object. `initial` is true for objects of the first list, and for the replay a
    /// handler registered after start receives.
    fn on_add(&self, obj: &Arc<K>, initial: bool);
    /// A changed object; on a resync `old` and `new` are the same object.
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>);
    /// A removed object.
    fn on_delete(&self, obj: &Deleted<K>);
    /// A relist found `count` objects gone that the informer did not cache (its keep predicate
    /// rejected them, see [`Informer::set_keep`](crate::Informer::set_keep)) and remembered only
    /// by a hash of their keys, so it cannot name them. A handler that acts on deletions finds
    /// them another way: typically by reconciling every key it has made something for, and
    /// asking [`Lister::presence`](crate::Lister::presence) which are gone.
    ///
    /// Deletions the watch sees are [`on_delete`](Self::on_delete)s, cached or not.
    fn on_uncached_deleted(&self, count: usize) {
        let _ = count;
    }
}

/// An [`EventHandler`] that sends the object's key to one function for every notification:
/// the usual controller handler, which only enqueues.
///
/// ```
/// use kube_informer::{EnqueueKey, ObjectKey};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// let handler = EnqueueKey::new(|key: ObjectKey| println!("enqueue {key}"));
/// # let _: &dyn kube_informer::EventHandler<ConfigMap> = &handler;
/// ```
pub struct EnqueueKey<F> {
    f: F,
}

impl<F: Fn(ObjectKey) + Send + Sync> EnqueueKey<F> {
    /// Calls `f` with the key of every added, updated or deleted object.
    pub fn new(f: F) -> Self {
        Self { f }
    }
}

impl<K: kube::Resource, F: Fn(ObjectKey) + Send + Sync> EventHandler<K> for EnqueueKey<F> {
    fn on_add(&self, obj: &Arc<K>, _initial: bool) {
        (self.f)(ObjectKey::of(obj.as_ref()));
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        (self.f)(ObjectKey::of(new.as_ref()));
    }
    fn on_delete(&self, obj: &Deleted<K>) {
        (self.f)(obj.key());
    }
}
