//! The informer's cache and its read side, the [`Lister`].
//!
//! Objects are shared as `Arc<K>`: a reconcile reads the cache without copying, and must never
//! mutate what it reads (clone first). A namespace index makes `list_namespace` proportional to
//! the namespace, not the cache.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::key::ObjectKey;
use crate::presence::{Presence, PresentKeys};

pub(crate) struct CacheState<K> {
    pub(crate) objects: HashMap<ObjectKey, Arc<K>>,
    /// namespace → keys in it (the "namespace" index).
    by_namespace: BTreeMap<Arc<str>, BTreeSet<ObjectKey>>,
    /// Keys of objects that exist but the keep predicate did not cache. Under the same lock as
    /// the objects, so a key moves between the two at once.
    pub(crate) present: PresentKeys,
}

impl<K> Default for CacheState<K> {
    fn default() -> Self {
        Self { objects: HashMap::new(), by_namespace: BTreeMap::new(), present: PresentKeys::default() }
    }
}

impl<K> CacheState<K> {
    /// Stores `obj` under `key`; returns what was there.
    pub(crate) fn insert(&mut self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        self.by_namespace.entry(key.namespace().into()).or_default().insert(key.clone());
        self.objects.insert(key, obj)
    }

    /// Removes `key`; returns what was there.
    pub(crate) fn remove(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        if let Some(set) = self.by_namespace.get_mut(key.namespace()) {
            set.remove(key);
            if set.is_empty() {
                self.by_namespace.remove(key.namespace());
            }
        }
        self.objects.remove(key)
    }
}

/// Read access to an informer's cache (client-go's lister).
///
/// Cheap to clone. Reads never call the API server.
pub struct Lister<K> {
    pub(crate) state: Arc<RwLock<CacheState<K>>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self { state: Arc::clone(&self.state) }
    }
}

impl<K> Lister<K> {
    /// The cached object with this key.
    #[must_use]
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.state.read().objects.get(key).cloned()
    }

    /// Every cached object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        self.state.read().objects.values().cloned().collect()
    }

    /// The cached objects of one namespace, by name (uses the namespace index).
    #[must_use]
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        let st = self.state.read();
        st.by_namespace
            .get(namespace)
            .map(|keys| keys.iter().filter_map(|k| st.objects.get(k).cloned()).collect())
            .unwrap_or_default()
    }

    /// What the informer knows of `key`: its cached object, only that it exists (an object the
    /// keep predicate rejected, see [`Informer::set_keep`](crate::Informer::set_keep)), or that
    /// it is absent. [`get`](Self::get) answers `None` for the first two alike.
    #[must_use]
    pub fn presence(&self, key: &ObjectKey) -> Presence<Arc<K>> {
        let st = self.state.read();
        if let Some(obj) = st.objects.get(key) {
            Presence::Cached(Arc::clone(obj))
        } else if st.present.contains(key) {
            Presence::Uncached
        } else {
            Presence::Absent
        }
    }

    /// How many objects exist uncached, remembered only by their keys' hashes.
    #[must_use]
    pub fn uncached_len(&self) -> usize {
        self.state.read().present.len()
    }

    /// Every cached key.
    #[must_use]
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.state.read().objects.keys().cloned().collect()
    }

    /// How many objects are cached.
    #[must_use]
    pub fn len(&self) -> usize {
        self.state.read().objects.len()
    }

    /// Whether the cache is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
