//! What a refused conditional write ([`Conflict`]) does: the key goes back to the queue once the
//! cache holds a newer version of the object than the one the write was conditional on — at
//! once if it already does, else at the watch event that brings it. Retrying before that would
//! decide from the same stale version and be refused again; retrying with backoff would wait
//! for nothing.
//!
//! Each source reports every version its informer sees (`Source::on_version`); with nothing
//! waiting, that costs one atomic load per event (no key is built).

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kube_informer::ObjectKey;
use kube_workqueue::RateLimitingQueue;
use parking_lot::Mutex;

use crate::conditional::Conflict;
use crate::source::Source;

/// Called with each object a source's informer sees: its kind, namespace, name and
/// `resourceVersion` (`None` once deleted).
pub type VersionHook = Arc<dyn Fn(&'static str, &str, &str, Option<&str>) + Send + Sync>;

/// An object: its kind and key.
type Slot = (Cow<'static, str>, ObjectKey);
/// A work key, and the version of the object its write was refused for.
type Waiter = (ObjectKey, Option<String>);

/// Work keys waiting for a newer version of an object.
pub(crate) struct Conflicts {
    queue: RateLimitingQueue<ObjectKey>,
    waiting: Mutex<HashMap<Slot, Waiter>>,
    len: AtomicUsize,
}

impl Conflicts {
    pub(crate) fn new(queue: RateLimitingQueue<ObjectKey>) -> Arc<Self> {
        Arc::new(Self { queue, waiting: Mutex::default(), len: AtomicUsize::new(0) })
    }

    /// The hook each source calls with the versions it sees.
    pub(crate) fn hook(self: &Arc<Self>) -> VersionHook {
        let me = Arc::clone(self);
        Arc::new(move |kind, namespace, name, version| me.seen(kind, namespace, name, version))
    }

    /// Requeues `key` once `source` (the cache of the conflicted object's kind, if any) holds a
    /// version other than the refused one.
    pub(crate) fn requeue_when_newer(
        &self,
        key: ObjectKey,
        conflict: &Conflict,
        source: Option<&dyn Source>,
    ) {
        let read = &conflict.read;
        let Some(source) = source else {
            // No cache of that kind to wait on: try again after the usual backoff.
            self.queue.add_rate_limited(key);
            return;
        };
        // Waiting first, then looking: an event between the two is seen by one or the other.
        let slot = (read.kind.clone(), read.key.clone());
        if self.waiting.lock().insert(slot.clone(), (key, read.resource_version.clone())).is_none() {
            self.len.fetch_add(1, Ordering::AcqRel);
        }
        let now = source.version(&read.key);
        self.fire_if_newer(slot, now.as_deref());
    }

    fn seen(&self, kind: &'static str, namespace: &str, name: &str, version: Option<&str>) {
        if self.len.load(Ordering::Acquire) == 0 {
            return;
        }
        self.fire_if_newer((Cow::Borrowed(kind), ObjectKey::new(namespace, name)), version);
    }

    /// Requeues the key waiting on `slot` if `version` is not the one its write was refused for.
    fn fire_if_newer(&self, slot: Slot, version: Option<&str>) {
        let key = match self.waiting.lock().entry(slot) {
            Entry::Occupied(w) if w.get().1.as_deref() != version => w.remove().0,
            _ => return,
        };
        self.len.fetch_sub(1, Ordering::AcqRel);
        self.queue.add(key);
    }

    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditional::ReadVersion;

    /// A cache of one object, as a source.
    struct OneObject(Mutex<Option<String>>);

    impl Source for OneObject {
        fn kind(&self) -> &'static str {
            "Deployment"
        }
        fn run(&self, _: tokio_util::sync::CancellationToken) -> futures::future::BoxFuture<'static, ()> {
            Box::pin(async {})
        }
        fn wait_for_cache_sync(
            &self,
            _: tokio_util::sync::CancellationToken,
        ) -> futures::future::BoxFuture<'static, bool> {
            Box::pin(async { true })
        }
        fn relist(&self) -> futures::future::BoxFuture<'static, ()> {
            Box::pin(async {})
        }
        fn refilter(&self) {}
        fn set_filter(&self, _: crate::source::KeepKey) {}
        fn on_version(&self, _: VersionHook) {}
        fn version(&self, _: &ObjectKey) -> Option<String> {
            self.0.lock().clone()
        }
        fn on_work_event(&self, _: crate::source::WorkHook) {}
        fn seen_version(&self) -> Option<u64> {
            None
        }
        fn identity(&self, _: &ObjectKey) -> Option<crate::freshness::Identity> {
            None
        }
        fn read_identity(
            &self,
            _: &ObjectKey,
        ) -> futures::future::BoxFuture<'static, Result<Option<crate::freshness::Identity>, kube::Error>>
        {
            Box::pin(async { Ok(None) })
        }
        fn keys(&self) -> Vec<ObjectKey> {
            Vec::new()
        }
        fn len(&self) -> usize {
            1
        }
    }

    fn conflict(rv: &str) -> Conflict {
        Conflict {
            read: ReadVersion {
                kind: "Deployment".into(),
                resource: "deployments".into(),
                key: ObjectKey::new("ns", "web"),
                uid: Some("u".into()),
                resource_version: Some(rv.into()),
            },
        }
    }

    #[tokio::test]
    async fn the_key_waits_for_a_newer_version_then_goes_back_once() {
        let queue = RateLimitingQueue::new(kube_workqueue::default_controller_rate_limiter());
        let conflicts = Conflicts::new(queue.clone());
        let hook = conflicts.hook();
        let cache = OneObject(Mutex::new(Some("7".into())));
        let key = ObjectKey::new("ns", "owner");
        conflicts.requeue_when_newer(key.clone(), &conflict("7"), Some(&cache));
        assert_eq!((queue.len(), conflicts.waiting()), (0, 1), "the cache has nothing newer yet");
        hook("Deployment", "ns", "web", Some("7"));
        hook("ConfigMap", "ns", "web", Some("8"));
        assert_eq!(queue.len(), 0, "the same version, or another kind's object, wakes nothing");
        hook("Deployment", "ns", "web", Some("8"));
        assert_eq!((queue.len(), conflicts.waiting()), (1, 0));
        hook("Deployment", "ns", "web", Some("9"));
        assert_eq!(queue.len(), 1, "woken once");
        // The cache already newer (the event came before the 409): at once.
        let item = queue.get().await.unwrap();
        assert_eq!(item.key(), &key);
        drop(item);
        conflicts.requeue_when_newer(key.clone(), &conflict("6"), Some(&cache));
        assert_eq!((queue.len(), conflicts.waiting()), (1, 0));
        // Deleted meanwhile: a newer state too.
        let _ = queue.get().await.unwrap();
        let gone = OneObject(Mutex::new(None));
        conflicts.requeue_when_newer(key, &conflict("7"), Some(&gone));
        assert_eq!((queue.len(), conflicts.waiting()), (1, 0));
    }
}
