//! A map that keeps at most `capacity` entries, evicting the least recently used — the bound on
//! the recorder's memory, as client-go's event caches are LRUs of 4096.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A bounded map with least-recently-used eviction.
#[derive(Debug)]
pub struct Lru<K, V> {
    entries: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
    next: u64,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map holding at most `capacity` entries (at least one).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self { entries: HashMap::new(), order: BTreeMap::new(), next: 0, capacity: capacity.max(1) }
    }

    fn touch(&mut self, key: &K) {
        if let Some((_, stamp)) = self.entries.get_mut(key) {
            self.order.remove(stamp);
            *stamp = self.next;
            self.order.insert(self.next, key.clone());
            self.next += 1;
        }
    }

    /// The value for `key`, marked as used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.touch(key);
        self.entries.get_mut(key).map(|(v, _)| v)
    }

    /// The value for `key`, inserted by `make` (evicting the least recently used) if absent.
    pub fn get_or_insert_with(&mut self, key: &K, make: impl FnOnce() -> V) -> &mut V {
        if self.entries.contains_key(key) {
            self.touch(key);
        } else {
            if self.entries.len() >= self.capacity
                && let Some((_, oldest)) = self.order.pop_first()
            {
                self.entries.remove(&oldest);
            }
            self.entries.insert(key.clone(), (make(), self.next));
            self.order.insert(self.next, key.clone());
            self.next += 1;
        }
        &mut self.entries.get_mut(key).expect("just ensured").0
    }

    /// Inserts or replaces `key`'s value.
    pub fn insert(&mut self, key: K, value: V) {
        let mut value = Some(value);
        let slot = self.get_or_insert_with(&key, || value.take().expect("taken once"));
        if let Some(v) = value {
            *slot = v;
        }
    }

    /// Removes `key`; its value, if it was there.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (v, stamp) = self.entries.remove(key)?;
        self.order.remove(&stamp);
        Some(v)
    }

    /// How many entries it holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut m = Lru::new(2);
        m.insert("a", 1);
        m.insert("b", 2);
        assert_eq!(m.get_mut(&"a"), Some(&mut 1)); // "b" is now the oldest
        m.insert("c", 3);
        assert_eq!(m.len(), 2);
        assert!(m.get_mut(&"b").is_none());
        m.insert("a", 10);
        assert_eq!(m.get_mut(&"a"), Some(&mut 10));
        assert_eq!(*m.get_or_insert_with(&"d", || 4), 4);
        assert!(m.get_mut(&"c").is_none());
        assert_eq!(m.remove(&"d"), Some(4));
        assert_eq!(m.len(), 1);
    }
}
