//! Keys remembered as present without their objects: what an informer keeps of the objects its
//! keep predicate ([`Informer::set_keep`](crate::Informer::set_keep)) rejects.
//!
//! A controller that watches every object of a kind but acts on few of them (an annotation the API
//! server cannot select on) still has to tell "exists, not mine" from "gone": only the second may
//! lead to deleting what it made. Caching the object to know that costs its whole decoded form;
//! this keeps a 64-bit hash of its `namespace/name` key instead — about 9 bytes in a hash table
//! (8 for the hash, 1 of the table's control byte), under 16 with the table's spare capacity.
//!
//! The hash is keyed with random keys drawn per informer (SipHash, `std`'s [`RandomState`]), so
//! nobody can pick names that collide. Two of `n` keys collide with probability about
//! `n² / 2⁶⁵`: 7·10⁻¹¹ at 50,000 keys.
//!
//! ## Warning
//!
//! A collision has two effects. An absent key whose hash a present one holds looks present: a
//! reader that deletes only on absence leaves in place something it should have deleted. And
//! when one of two colliding uncached keys goes (deleted, or cached), the hash goes with it and
//! the other looks absent until the next relist rebuilds the set: a reader that deletes on
//! absence may then delete what that still existing object stands for. The set cannot count
//! per hash instead: the watcher reports an added and a modified object alike, so an insert
//! cannot tell a new key from one already remembered without keeping the names.

use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use crate::key::ObjectKey;

/// What the informer knows of a key (see [`Lister::presence`](crate::Lister::presence)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence<T> {
    /// The object is cached: its keep predicate accepted it.
    Cached(T),
    /// The object exists but is not cached: the keep predicate rejected it, and only the fact
    /// that its key is present is kept.
    Uncached,
    /// No such object, as far as the informer knows.
    Absent,
}

impl<T> Presence<T> {
    /// The cached object, if there is one.
    #[must_use]
    pub fn cached(self) -> Option<T> {
        match self {
            Self::Cached(obj) => Some(obj),
            Self::Uncached | Self::Absent => None,
        }
    }

    /// Whether the object exists (cached or not).
    #[must_use]
    pub fn exists(&self) -> bool {
        !matches!(self, Self::Absent)
    }

    /// The same answer, borrowing what a cached `Arc` (or other pointer) points to.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use kube_informer::Presence;
    ///
    /// let p = Presence::Cached(Arc::new(3));
    /// assert_eq!(p.as_deref(), Presence::Cached(&3));
    /// assert_eq!(Presence::<Arc<i32>>::Uncached.as_deref(), Presence::Uncached);
    /// ```
    #[must_use]
    pub fn as_deref(&self) -> Presence<&T::Target>
    where
        T: std::ops::Deref,
    {
        match self {
            Self::Cached(obj) => Presence::Cached(&**obj),
            Self::Uncached => Presence::Uncached,
            Self::Absent => Presence::Absent,
        }
    }
}

/// A hasher for values that already are uniform 64-bit hashes: it passes them through.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; this keeps the hasher total all the same.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A set of key hashes.
pub(crate) type HashedKeys = HashSet<u64, BuildHasherDefault<PassThrough>>;

/// The keys an informer remembers as present, hashed with its own random keys.
pub(crate) struct PresentKeys {
    hasher: RandomState,
    keys: HashedKeys,
}

impl Default for PresentKeys {
    fn default() -> Self {
        Self { hasher: RandomState::new(), keys: HashedKeys::default() }
    }
}

impl PresentKeys {
    /// The hash `key` is remembered by.
    pub(crate) fn hash(&self, key: &ObjectKey) -> u64 {
        self.hasher.hash_one((key.namespace(), key.name()))
    }

    /// An empty set hashing as this one does (a relist's new set).
    pub(crate) fn empty_like(&self) -> Self {
        Self { hasher: self.hasher.clone(), keys: HashedKeys::default() }
    }

    pub(crate) fn insert(&mut self, key: &ObjectKey) -> bool {
        let h = self.hash(key);
        self.keys.insert(h)
    }

    pub(crate) fn remove(&mut self, key: &ObjectKey) -> bool {
        let h = self.hash(key);
        self.keys.remove(&h)
    }

    pub(crate) fn contains(&self, key: &ObjectKey) -> bool {
        self.keys.contains(&self.hash(key))
    }

    pub(crate) fn contains_hash(&self, h: u64) -> bool {
        self.keys.contains(&h)
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The remembered hashes.
    pub(crate) fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.keys.iter().copied()
    }

    /// Heap bytes the set holds (its table: a hash and a control byte per slot).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        // hashbrown keeps at most 7/8 of a power-of-two number of slots full.
        let slots = (self.keys.capacity() * 8 / 7).next_power_of_two();
        slots * (std::mem::size_of::<u64>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_keys_by_hash_and_forgets_them() {
        let mut p = PresentKeys::default();
        let (a, b) = (ObjectKey::new("default", "a"), ObjectKey::new("default", "b"));
        assert!(p.insert(&a) && !p.insert(&a));
        assert!(p.contains(&a) && !p.contains(&b));
        // The namespace and the name are hashed apart: "a/bc" is not "ab/c".
        assert_ne!(p.hash(&ObjectKey::new("a", "bc")), p.hash(&ObjectKey::new("ab", "c")));
        let q = p.empty_like();
        assert_eq!(q.hash(&a), p.hash(&a), "a relist's set hashes as the one it replaces");
        assert!(p.remove(&a) && !p.remove(&a) && p.len() == 0);
    }

    #[test]
    fn costs_under_sixteen_bytes_a_key() {
        let mut p = PresentKeys::default();
        for i in 0..50_000 {
            p.insert(&ObjectKey::new("default", &format!("cm-{i:05}")));
        }
        assert_eq!(p.len(), 50_000);
        assert!(p.heap_bytes() / p.len() < 16, "{} bytes a key", p.heap_bytes() / p.len());
    }
}
