//! Storage: the objects (frozen, see `frozen.rs`), the one revision counter, the indexes (uids,
//! owners, rolling Deployments), each resource's change history and the broadcast that feeds
//! open watches — what etcd and the watch cache are upstream. Only [`State::commit`] writes; the
//! rules that decide what to commit are the store's verbs around it. A committed change of a CRD
//! lets the CRD controllers react at once (`crd.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard, RwLock};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use super::frozen::{Dictionaries, Frozen, Recent};
use super::{ListQuery, Snapshot, StoreConfig};
use crate::object_meta::{meta_mut, meta_str, owner_uids};
use crate::registry::Registry;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// Where an object lives: storage, namespace (`""` when cluster-scoped), name.
pub type Key = (&'static str, String, String);

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Removed.
    Deleted,
}

/// One committed change, as watches see it.
#[derive(Debug)]
pub struct Change {
    /// The resourceVersion the change got.
    pub rv: u64,
    /// Storage of the object.
    pub storage: &'static str,
    /// What happened.
    pub kind: ChangeType,
    /// The object after the change (for deletes: its last state, with the delete's version).
    pub object: Arc<Value>,
    /// The object before the change, for selector transitions.
    pub old: Option<Arc<Value>>,
}

/// Changes kept per resource however old they are (upstream's watch cache's lower bound).
pub const HISTORY_FLOOR: usize = 100;

/// A change as the history keeps it: the objects frozen (shared with the object map while they
/// are current), thawed into a [`Change`] only for a watch that resumes from it.
#[derive(Debug, Clone)]
pub struct Retained {
    /// The resourceVersion the change got.
    pub(crate) rv: u64,
    /// Where the object lives.
    pub(crate) key: Key,
    /// What happened.
    pub(crate) kind: ChangeType,
    /// The object after the change (for deletes: its last state, with the delete's version).
    pub(crate) object: Arc<Frozen>,
    /// The object before the change.
    pub(crate) old: Option<Arc<Frozen>>,
}

impl Retained {
    /// The change as watches see it, parsed; the object before it only `with_old` (a watch
    /// without selectors never looks at it).
    #[must_use]
    pub(crate) fn thaw(&self, with_old: bool) -> Change {
        Change {
            rv: self.rv,
            storage: self.key.0,
            kind: self.kind,
            object: Arc::new(self.object.thaw()),
            old: self.old.as_ref().filter(|_| with_old).map(|o| Arc::new(o.thaw())),
        }
    }
}

/// A change as a follower ([`Store::follow`](super::Store::follow)) gets it: frozen, so a
/// follower that falls behind holds what the history would, with the parsed objects borrowed
/// while the store still keeps them parsed (the object written lately, the watch feed) — a
/// follower keeping up parses nothing.
#[derive(Debug, Clone)]
pub struct Followed {
    /// The change.
    pub(crate) retained: Retained,
    object: Weak<Value>,
    old: Option<Weak<Value>>,
}

impl Followed {
    /// The object after the change, parsed.
    #[must_use]
    pub(crate) fn object(&self) -> Arc<Value> {
        self.object.upgrade().unwrap_or_else(|| Arc::new(self.retained.object.thaw()))
    }

    /// The fields `T` names of the object after the change: from the parsed object while the
    /// store keeps it, else read from its JSON without building the rest — a follower that
    /// looks at a few fields of a large object it fell behind on.
    ///
    /// # Errors
    ///
    /// When the object's fields do not have the shapes `T` wants.
    pub(crate) fn object_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        glance(&self.object, &self.retained.object)
    }

    /// [`object_as`](Self::object_as) of the object before the change, if there was one.
    ///
    /// # Errors
    ///
    /// As [`object_as`](Self::object_as).
    pub(crate) fn old_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        let frozen = self.retained.old.as_ref()?;
        Some(glance(self.old.as_ref().unwrap_or(&Weak::new()), frozen))
    }
}

fn glance<T: DeserializeOwned>(parsed: &Weak<Value>, frozen: &Frozen) -> Result<T, serde_json::Error> {
    match parsed.upgrade() {
        Some(obj) => T::deserialize(&*obj),
        None => serde_json::from_slice(&frozen.json()),
    }
}

/// One resource's retained changes.
#[derive(Default)]
pub(super) struct History {
    pub(super) changes: VecDeque<(Instant, Retained)>,
    /// Changes at or below this version are no longer kept.
    pub(super) compacted: u64,
}

/// Everything the store holds, behind its one lock.
pub(super) struct State {
    /// The store's identity ([`super::Store::id`]), for caches keyed on its writes.
    pub(super) id: u64,
    /// The objects, frozen (see `frozen.rs`).
    pub(super) objects: BTreeMap<Key, Arc<Frozen>>,
    /// The objects written last, parsed.
    pub(super) recent: Recent,
    /// What each resource's objects are compressed against.
    pub(super) dictionaries: Dictionaries,
    pub(super) rv: u64,
    /// Per storage.
    pub(super) history: HashMap<&'static str, History>,
    /// No watch resumes from at or below this version (a scratch copy has no history at all).
    pub(super) floor: u64,
    pub(super) config: StoreConfig,
    /// Where webhooks' Services listen: `config.webhook_services` and those routed since,
    /// shared with the CRDs' conversions.
    pub(super) services: crate::webhook_client::Services,
    /// uid → where the object lives.
    pub(super) uids: HashMap<String, Key>,
    /// owner uid → objects naming it in `ownerReferences`.
    pub(super) dependents: HashMap<String, BTreeSet<Key>>,
    /// Namespaces holding ResourceQuotas, with how many.
    pub(super) quota_namespaces: HashMap<String, usize>,
    /// The cluster IPs and node ports Services hold.
    pub(super) allocations: super::allocations::Allocations,
    pub(super) snapshots: HashMap<u64, Snapshot>,
    pub(super) next_snapshot: u64,
    pub(super) tx: broadcast::Sender<Arc<Change>>,
    /// The changes the broadcast holds, held here too, so that the broadcast never lets go of
    /// a change's last reference while the lock is held (see [`Locked`]).
    pub(super) sent: VecDeque<Arc<Change>>,
    /// How many changes the broadcast holds (its capacity, as it rounds it).
    pub(super) sent_cap: usize,
    /// What commits let go of, freed by [`Locked`] once the lock is released.
    pub(super) garbage: Garbage,
    /// In-process followers that must see every change (the simulated cluster): unlike a
    /// watch, they are never cut off for falling behind.
    pub(super) followers: Vec<mpsc::UnboundedSender<Followed>>,
    /// The served resources; CRDs change it as they are established and deleted.
    pub(super) registry: Arc<RwLock<Registry>>,
}

/// What the state let go of under its lock: parsed objects, whose freeing is a walk of every
/// map and string in them, kept to be freed after the lock is released.
#[derive(Default)]
pub(super) struct Garbage {
    pub(super) objects: Vec<Arc<Value>>,
    pub(super) changes: Vec<Arc<Change>>,
}

/// The locked state. Dropped, it releases the lock first and then frees what the state let go
/// of meanwhile ([`Garbage`]): writers wait for the lock, not for another writer's frees.
pub(super) struct Locked<'a> {
    guard: Option<MutexGuard<'a, State>>,
}

impl<'a> Locked<'a> {
    pub(super) fn new(mutex: &'a Mutex<State>) -> Self {
        Self { guard: Some(mutex.lock()) }
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.guard.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.guard.as_mut().expect("held until dropped")
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let garbage = self.guard.as_mut().map(|st| std::mem::take(&mut st.garbage));
        self.guard = None;
        if let Some(garbage) = garbage.filter(|g| !g.objects.is_empty() || !g.changes.is_empty()) {
            garbage.free();
        }
    }
}

impl Garbage {
    /// Frees it on the process's garbage thread, or here if that thread could not be started.
    ///
    /// Freeing a parsed object walks all of it; a writer (a request, or the simulated cluster's
    /// one thread) hands that to a thread of its own, which a core left idle runs.
    fn free(self) {
        static FREER: OnceLock<Option<std::sync::mpsc::Sender<Garbage>>> = OnceLock::new();
        let freer = FREER.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Garbage>();
            let spawned = std::thread::Builder::new()
                .name("sandbox-free".into())
                .spawn(move || rx.into_iter().for_each(drop));
            spawned.is_ok().then_some(tx)
        });
        if let Some(Err(std::sync::mpsc::SendError(garbage))) = freer.as_ref().map(|tx| tx.send(self)) {
            drop(garbage);
        }
    }
}

pub(super) fn key_of(def: &ResourceDef, ns: &str, name: &str) -> Key {
    (def.storage, if def.namespaced { ns.to_owned() } else { String::new() }, name.to_owned())
}

impl State {
    /// The version of the last write to `storage` (0 for none).
    pub(super) fn last_write(&self, storage: &str) -> u64 {
        self.history.get(storage).and_then(|h| h.changes.back()).map_or(0, |(_, c)| c.rv)
    }

    pub(super) fn namespace_state(&self, ns: &str) -> Option<Arc<Value>> {
        self.object(&("namespaces.", String::new(), ns.to_owned()))
    }

    /// The object at `key`: as it was written when that was lately, else thawed.
    pub(super) fn object(&self, key: &Key) -> Option<Arc<Value>> {
        self.read(key).map(Read::value)
    }

    /// The object at `key`, to be thawed (if need be) after the lock is let go.
    pub(super) fn read(&self, key: &Key) -> Option<Read> {
        let frozen = self.objects.get(key)?;
        Some(self.recent.get(key).map_or_else(|| Read::Frozen(Arc::clone(frozen)), Read::Parsed))
    }

    /// The object at `key` with the frozen form it was read from: a write worked out from it
    /// after the lock is let go is committed only while that form is still the one stored
    /// ([`is_current`](Self::is_current)) — etcd's compare-and-swap on the revision read.
    pub(super) fn read_pinned(&self, key: &Key) -> Option<(Arc<Frozen>, Read)> {
        let frozen = self.objects.get(key)?;
        Some((Arc::clone(frozen), self.read(key)?))
    }

    /// Whether `frozen` (from [`read_pinned`](Self::read_pinned)) is still what `key` holds.
    pub(super) fn is_current(&self, key: &Key, frozen: &Arc<Frozen>) -> bool {
        self.objects.get(key).is_some_and(|now| Arc::ptr_eq(now, frozen))
    }

    /// Records a change: next version, object map, indexes, history, broadcast.
    pub(super) fn commit(
        &mut self,
        key: Key,
        kind: ChangeType,
        mut obj: Value,
        old: Option<Arc<Value>>,
    ) -> Arc<Value> {
        self.rv += 1;
        meta_mut(&mut obj).insert("resourceVersion".into(), Value::String(self.rv.to_string()));
        let obj = Arc::new(obj);
        if let Some(old) = &old {
            self.unindex(&key, old);
        }
        let frozen = self.dictionaries.freeze(key.0, &obj);
        let was = if kind == ChangeType::Deleted {
            self.recent.forget(&key, &mut self.garbage.objects);
            self.objects.remove(&key)
        } else {
            self.index(&key, &obj);
            self.recent.put(&key, self.rv, &obj, &mut self.garbage.objects);
            self.objects.insert(key.clone(), Arc::clone(&frozen))
        };
        let storage = key.0;
        let retained = Retained { rv: self.rv, key, kind, object: frozen, old: was };
        let change = Arc::new(Change { rv: self.rv, storage, kind, object: Arc::clone(&obj), old });
        if !self.followers.is_empty() {
            let followed = Followed {
                retained: retained.clone(),
                object: Arc::downgrade(&change.object),
                old: change.old.as_ref().map(Arc::downgrade),
            };
            self.followers.retain(|f| f.send(followed.clone()).is_ok());
        }
        let now = Instant::now();
        let h = self.history.entry(storage).or_default();
        h.changes.push_back((now, retained));
        while let Some((at, c)) = h.changes.front() {
            let full = h.changes.len() > self.config.history_limit;
            let stale =
                h.changes.len() > HISTORY_FLOOR && now.duration_since(*at) > self.config.history_window;
            if !(full || stale) {
                break;
            }
            h.compacted = c.rv;
            h.changes.pop_front();
        }
        self.sent.push_back(Arc::clone(&change));
        if self.sent.len() > self.sent_cap {
            self.garbage.changes.extend(self.sent.pop_front());
        }
        let _ = self.tx.send(change);
        if storage == super::crd::CRD_STORAGE {
            let gone = (kind == ChangeType::Deleted).then(|| Arc::clone(&obj));
            self.crd_changed(meta_str(&obj, "name"), gone.as_deref());
        }
        obj
    }

    pub(super) fn index(&mut self, key: &Key, obj: &Value) {
        let uid = meta_str(obj, "uid");
        if !uid.is_empty() {
            self.uids.insert(uid.to_owned(), key.clone());
        }
        for owner in owner_uids(obj) {
            self.dependents.entry(owner).or_default().insert(key.clone());
        }
        if key.0 == super::quota::QUOTA_STORAGE {
            *self.quota_namespaces.entry(key.1.clone()).or_default() += 1;
        }
        if key.0 == super::allocations::SERVICE_STORAGE {
            self.allocations.add(&key.1, obj);
        }
    }

    pub(super) fn unindex(&mut self, key: &Key, obj: &Value) {
        self.uids.remove(meta_str(obj, "uid"));
        for owner in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
        if key.0 == super::quota::QUOTA_STORAGE
            && let Some(n) = self.quota_namespaces.get_mut(&key.1)
        {
            *n -= 1;
            if *n == 0 {
                self.quota_namespaces.remove(&key.1);
            }
        }
        if key.0 == super::allocations::SERVICE_STORAGE {
            self.allocations.remove(&key.1, obj);
        }
    }

    pub(super) fn get(&self, def: &ResourceDef, ns: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.object(&key_of(def, ns, name)).ok_or_else(|| ApiError::not_found(def.group, def.plural, name))
    }

    /// The keys of every object in namespace `ns`, across storages.
    pub(super) fn namespace_objects<'a>(&'a self, ns: &'a str) -> impl Iterator<Item = &'a Key> + 'a {
        self.registry.read().storages().into_iter().flat_map(move |s| {
            self.objects
                .range((s, ns.to_owned(), String::new())..)
                .take_while(move |((st, n, _), _)| *st == s && n == ns)
                .map(|(k, _)| k)
        })
    }

    /// The objects of `def` (in `ns`, or all namespaces) that `q` selects as they were at version
    /// `at`, in key order: the current ones with the resource's retained changes after `at`
    /// undone, newest first — etcd's read at an older revision. `None` when the history no
    /// longer reaches back to `at`.
    pub(super) fn list_items_at(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        q: &ListQuery,
        at: u64,
    ) -> Option<Vec<Arc<Frozen>>> {
        let history = self.history.get(def.storage);
        if at < history.map_or(0, |h| h.compacted).max(self.floor) {
            return None;
        }
        let mut objects: BTreeMap<Key, Arc<Frozen>> =
            self.in_range(def, ns).map(|(k, o)| (k.clone(), Arc::clone(o))).collect();
        for (_, c) in history.into_iter().flat_map(|h| h.changes.iter().rev()).take_while(|(_, c)| c.rv > at)
        {
            if ns.is_some_and(|ns| ns != c.key.1) {
                continue;
            }
            match (c.kind, &c.old) {
                (ChangeType::Added, _) => {
                    objects.remove(&c.key);
                }
                (_, Some(old)) => {
                    objects.insert(c.key.clone(), Arc::clone(old));
                }
                (ChangeType::Deleted, None) => {
                    objects.insert(c.key.clone(), Arc::clone(&c.object));
                }
                (ChangeType::Modified, None) => {}
            }
        }
        Some(objects.into_values().filter(|o| selected(q, o)).collect())
    }

    /// The objects of `def` (in `ns`, or all namespaces) that `q` selects, in key order, frozen:
    /// only those a selector must look into are thawed, and only to look.
    pub(super) fn list_frozen(&self, def: &ResourceDef, ns: Option<&str>, q: &ListQuery) -> Vec<Arc<Frozen>> {
        self.in_range(def, ns).filter(|(_, o)| selected(q, o)).map(|(_, o)| Arc::clone(o)).collect()
    }

    /// [`list_frozen`](Self::list_frozen), thawed: for the store's own looks at a few objects.
    pub(super) fn list_items(&self, def: &ResourceDef, ns: Option<&str>, q: &ListQuery) -> Vec<Arc<Value>> {
        self.in_range(def, ns).filter_map(|(k, _)| self.object(k)).filter(|o| q.matches(o)).collect()
    }

    pub(super) fn in_range<'a>(
        &'a self,
        def: &ResourceDef,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Key, &'a Arc<Frozen>)> + 'a {
        let storage = def.storage;
        let start: Key = (storage, ns.unwrap_or("").to_owned(), String::new());
        self.objects
            .range(start..)
            .take_while(move |((s, n, _), _)| *s == storage && ns.is_none_or(|ns| n == ns))
    }
}

/// An object read from the store: parsed already, or still frozen.
pub(super) enum Read {
    Parsed(Arc<Value>),
    Frozen(Arc<Frozen>),
}

impl Read {
    /// The object, parsed.
    pub(super) fn value(self) -> Arc<Value> {
        match self {
            Self::Parsed(v) => v,
            Self::Frozen(f) => Arc::new(f.thaw()),
        }
    }
}

/// Whether `q` selects the frozen object (thawed only when `q` has a selector).
pub(super) fn selected(q: &ListQuery, obj: &Frozen) -> bool {
    q.selects_all() || q.matches(&obj.thaw())
}
