//! The basic queue: a FIFO of keys plus the *dirty* and *processing* sets.
//!
//! Every other layer is built on this one. Its state, all under one lock:
//!
//! * `queue` — keys waiting to be handed out, in order; each is dirty and not processing;
//! * per key, two flags: *dirty* (needs processing) and *processing* (held by a worker).
//!
//! | operation | effect |
//! |---|---|
//! | [`add`](Queue::add) | already dirty: merged, nothing changes. Otherwise marked dirty; pushed on the FIFO unless a worker holds it, in which case it waits for the worker to finish |
//! | [`get`](Queue::get) | pops the head, marks it processing and not dirty, returns an [`Item`] guard |
//! | dropping the [`Item`] | clears processing; if the key became dirty meanwhile, it is pushed again |
//!
//! Each key's state lives in one *slot* of a slab (the key and both flags); a hash table finds a
//! key's slot on `add`, and the FIFO and the [`Item`] carry the slot's number, so a get or a
//! release goes straight to the slot: no hashing and no key comparison after the add. The add
//! hashes the key once, outside the lock.
//!
//! What the lock covers is kept short, because a producer (an informer's handlers) and the
//! workers take it for every key, from different threads:
//!
//! * **A release does not touch the table.** A finished key's slot is *retired*: marked in a
//!   bitmap and left in the table with its key. Removing it there and then costs a cache miss
//!   into a table as large as the backlog, under the lock, once per key. Retired slots are
//!   *swept* out instead in one sequential pass over the table once they are at least as many
//!   as the live ones (and at least 1,024), which costs O(1) per key; the swept keys are
//!   dropped after the lock is released. A key added again before the sweep finds its retired
//!   slot and is queued in it, as a new add.
//! * **Parked workers wait in the queue's own list**, under the same lock: an add that queues a
//!   key wakes the oldest parked `get`, and an add when no worker is parked costs nothing more.
//!   A `get` dropped after its wake-up, before it took a key, passes the wake-up on, so no key is
//!   left queued with every worker asleep. From a task on a multi-thread runtime, a *lone*
//!   wake-up (no other get woken, none left parked) goes through a blocking-pool thread (the
//!   `handoff` module), so that the woken worker runs beside a producer that keeps adding instead
//!   of waiting behind it.
//! * **A std mutex**: contended, it spins briefly and then sleeps on a futex; parking_lot's
//!   yields the thread to the OS between spins, which measured slower here.
//!
//! When nothing is queued or held, the slab and the table give their memory back, so a burst of
//! keys does not stay resident.

use std::collections::VecDeque;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hashbrown::HashTable;
use tokio::sync::Notify;

use crate::handoff::Wake;
use crate::metrics::{MetricsProvider, QueueMetrics};

/// What a queue can hold: cheap to clone, hashable, shareable between tasks.
///
/// Blanket-implemented; `String`, `u64` and small structs of `Arc<str>` all qualify. Keys are compared
/// by value, so two equal keys are the same piece of work.
pub trait Key: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> Key for T {}

/// How often the unfinished-work gauges are refreshed (client-go's `defaultUnfinishedWorkUpdatePeriod`).
pub const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Optional settings shared by every queue layer.
///
/// Metrics are kept only when the queue has a name *and* a provider, as in client-go: the name
/// becomes the `name` label of every metric.
///
/// ```
/// use std::sync::Arc;
/// use kube_workqueue::{Queue, QueueConfig};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let registry = &mut prometheus_client::registry::Registry::default();
/// let provider = Arc::new(kube_workqueue::prometheus::PrometheusMetrics::register(registry));
/// let queue: Queue<String> = Queue::with_config(QueueConfig::named("configmaps").metrics(provider));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// The queue's name: the `name` label of its metrics.
    pub name: Option<String>,
    /// Where the metrics go; `None` keeps none.
    pub metrics: Option<Arc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// A config with a name and no metrics provider yet.
    #[must_use]
    pub fn named(name: impl Into<String>) -> Self {
        Self { name: Some(name.into()), metrics: None }
    }

    /// Sets the metrics provider.
    #[must_use]
    pub fn metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// A key and the two flags client-go keeps in its `dirty` and `processing` sets. A slot holds a
/// key while one of them is set, and after both are cleared until the next sweep (a *retired*
/// slot); a free slot holds none.
struct Slot<T> {
    key: Option<T>,
    dirty: bool,
    processing: bool,
}

/// A table entry: the slot, and 32 bits of the key's hash, from which the table's own hash is
/// rebuilt when it grows, without reading the slot.
#[derive(Clone, Copy)]
struct Entry {
    slot: u32,
    tag: u32,
}

/// The table's hash of a key, rebuilt from its entry's tag.
fn table_hash(tag: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(tag)
}

/// Above this many slots, an idle queue frees its slab and table.
const KEEP_SLOTS: usize = 4096;

/// Retired slots are swept out of the table once there are at least this many, and at least as
/// many as live ones (so a sweep costs O(1) per retired key).
const SWEEP_MIN: usize = 1024;

/// A parked [`get`](Queue::get), waiting for a key.
struct Waiter {
    id: u64,
    waker: Waker,
}

struct State<T> {
    /// Slots of the keys waiting, in order.
    fifo: VecDeque<u32>,
    /// Slot numbers, found by the key's hash: every slot that holds a key, retired ones included.
    table: HashTable<Entry>,
    slots: Vec<Slot<T>>,
    /// Slots whose key is gone, for reuse.
    free: Vec<u32>,
    /// One bit per slot: retired (finished, still in the table until the next sweep).
    retired_bits: Vec<u64>,
    retired: usize,
    processing: usize,
    /// Parked `get`s, oldest first. Each add that queues a key wakes (and removes) the oldest.
    waiters: VecDeque<Waiter>,
    /// Gets taken off `waiters` to be woken that have not run since.
    woken: usize,
    next_waiter: u64,
    shutting_down: bool,
    drain: bool,
    metrics: Option<QueueMetrics<T>>,
}

impl<T: Key> State<T> {
    /// Queues slot `i`; returns the parked `get` to wake, if any (woken after the lock is released).
    fn push(&mut self, i: u32) -> Option<Wake> {
        self.fifo.push_back(i);
        self.wake_one()
    }

    /// Takes the oldest parked `get` off the list, to be woken.
    fn wake_one(&mut self) -> Option<Wake> {
        let w = self.waiters.pop_front()?;
        // No other get woken and none left to wake: a wake-up left in the adder thread's LIFO
        // slot would not be pushed out of it by a later one (see `handoff`).
        let alone = self.woken == 0 && self.waiters.is_empty();
        self.woken += 1;
        Some(Wake { waker: w.waker, alone })
    }

    fn set_retired(&mut self, i: u32, on: bool) {
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if on {
            self.retired_bits[word] |= bit;
            self.retired += 1;
        } else {
            self.retired_bits[word] &= !bit;
            self.retired -= 1;
        }
    }

    fn is_retired(&self, i: u32) -> bool {
        self.retired_bits[(i / 64) as usize] & (1u64 << (i % 64)) != 0
    }

    /// Keys queued or held.
    fn live(&self) -> usize {
        self.table.len() - self.retired
    }

    /// Removes every retired slot from the table in one pass over it, frees the slots, and
    /// returns their keys (to be dropped after the lock is released).
    fn sweep(&mut self) -> Vec<T> {
        let State { table, slots, free, retired_bits, .. } = self;
        let bits: &[u64] = retired_bits;
        table.retain(|e| bits[(e.slot / 64) as usize] & (1u64 << (e.slot % 64)) == 0);
        // A sweep scans the table's whole capacity: keep it in proportion to what is left, so a
        // shrinking queue does not pay for its peak.
        if table.len() < table.capacity() / 4 {
            table.shrink_to(table.len() * 2, |e| table_hash(e.tag));
        }
        let mut keys = Vec::with_capacity(self.retired);
        for (w, word) in retired_bits.iter_mut().enumerate() {
            let mut b = std::mem::take(word);
            while b != 0 {
                let i = u32::try_from(w * 64).expect("slot numbers fit in u32") + b.trailing_zeros();
                b &= b - 1;
                keys.extend(slots[i as usize].key.take());
                free.push(i);
            }
        }
        self.retired = 0;
        keys
    }

    /// An idle queue after a burst: every structure is replaced by an empty one, and the old ones
    /// are returned to be dropped after the lock is released.
    fn release_memory(&mut self) -> Garbage<T> {
        self.retired = 0;
        self.free = Vec::new();
        self.retired_bits = Vec::new();
        self.table = HashTable::new();
        Garbage::Slab(std::mem::take(&mut self.slots), std::mem::take(&mut self.fifo))
    }
}

/// What a release frees, dropped once the lock is released.
enum Garbage<T> {
    None,
    Keys(Vec<T>),
    Slab(Vec<Slot<T>>, VecDeque<u32>),
}

impl<T> Garbage<T> {
    fn free(self) {
        match self {
            Garbage::None => {}
            Garbage::Keys(keys) => drop(keys),
            Garbage::Slab(slots, fifo) => drop((slots, fifo)),
        }
    }
}

pub(crate) struct Shared<T> {
    /// A std mutex: under contention between the producer's and the workers' threads it spins
    /// briefly and then sleeps on a futex, where parking_lot's yields the thread to the OS
    /// scheduler between spins (measurably slower on a loaded machine).
    state: Mutex<State<T>>,
    hasher: foldhash::fast::RandomState,
    /// Everyone when the last held key is released during a drain, or when a drain is cancelled.
    idle: Notify,
    /// Everyone once, when shutdown starts (the delaying layer's loop listens to it).
    shutdown: Arc<Notify>,
}

impl<T> Shared<T> {
    /// The state. Poisoning is ignored (only a metrics hook can panic under the lock), so the
    /// queue stays usable, as it did under parking_lot's mutex, which has none.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The basic work queue: fair, stingy, with re-add-while-processing.
///
/// Cloning gives another handle to the same queue, so producers and workers can each hold one.
///
/// ```
/// use kube_workqueue::Queue;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = Queue::new();
/// queue.add("default/a");
/// queue.add("default/b");
/// queue.add("default/a"); // merged: already waiting
/// assert_eq!(queue.len(), 2);
///
/// let first = queue.get().await.unwrap();
/// assert_eq!(*first, "default/a");
/// queue.add("default/a"); // held by a worker: deferred, not handed out twice
/// assert_eq!(queue.len(), 1);
/// drop(first); // done: "default/a" goes back in line
/// assert_eq!(queue.len(), 2);
/// # }
/// ```
pub struct Queue<T: Key> {
    shared: Arc<Shared<T>>,
}

impl<T: Key> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self { shared: Arc::clone(&self.shared) }
    }
}

impl<T: Key> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("Queue")
            .field("len", &st.fifo.len())
            .field("processing", &st.processing)
            .field("shutting_down", &st.shutting_down)
            .finish()
    }
}

impl<T: Key> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Key> Queue<T> {
    /// A queue without metrics. Needs no runtime.
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue with the given name and metrics provider.
    ///
    /// # Panics
    ///
    /// With metrics enabled (a name and a provider), this starts the task that refreshes the
    /// unfinished-work gauges, and so must be called inside a Tokio runtime, like `tokio::spawn`.
    #[must_use]
    pub fn with_config(config: QueueConfig) -> Self {
        let metrics = match (config.name, config.metrics) {
            (Some(name), Some(provider)) => Some(QueueMetrics::new(provider.as_ref(), &name)),
            _ => None,
        };
        let with_metrics = metrics.is_some();
        let queue = Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    fifo: VecDeque::new(),
                    table: HashTable::new(),
                    slots: Vec::new(),
                    free: Vec::new(),
                    retired_bits: Vec::new(),
                    retired: 0,
                    processing: 0,
                    waiters: VecDeque::new(),
                    woken: 0,
                    next_waiter: 0,
                    shutting_down: false,
                    drain: false,
                    metrics,
                }),
                hasher: foldhash::fast::RandomState::default(),
                idle: Notify::new(),
                shutdown: Arc::new(Notify::new()),
            }),
        };
        if with_metrics {
            tokio::spawn(update_unfinished_work(Arc::downgrade(&queue.shared)));
        }
        queue
    }

    /// Marks `key` as needing processing.
    ///
    /// Returns `false` if the queue is shutting down: the key is refused (client-go drops it
    /// silently; here the caller can tell). Otherwise returns `true`, whether the key was queued,
    /// merged with a waiting copy, or deferred because a worker holds it.
    pub fn add(&self, key: T) -> bool {
        let hash = self.shared.hasher.hash_one(&key);
        // Folded to 32 bits (truncation intended): the table rebuilds its hash from these.
        let tag = (hash ^ (hash >> 32)) as u32;
        let th = table_hash(tag);
        // A key that is not kept (merged) drops with the arguments, after the guard.
        let mut guard = self.shared.lock();
        let st = &mut *guard;
        if st.shutting_down {
            return false;
        }
        let found = {
            let slots = &st.slots;
            st.table.find(th, |e| e.tag == tag && slots[e.slot as usize].key.as_ref() == Some(&key)).copied()
        };
        let wake = if let Some(Entry { slot: i, .. }) = found {
            let s = &mut st.slots[i as usize];
            if s.dirty {
                return true;
            }
            s.dirty = true;
            let held = s.processing;
            if let Some(m) = st.metrics.as_mut() {
                m.add(&key);
            }
            if held {
                // Held by a worker: it goes back in line when the worker releases it.
                return true;
            }
            // Retired: finished earlier and not yet swept; it comes back to life in place.
            debug_assert!(st.is_retired(i), "a slot neither dirty nor held is retired");
            st.set_retired(i, false);
            st.push(i)
        } else {
            if let Some(m) = st.metrics.as_mut() {
                m.add(&key);
            }
            let slot = Slot { key: Some(key), dirty: true, processing: false };
            let i = match st.free.pop() {
                Some(i) => {
                    st.slots[i as usize] = slot;
                    i
                }
                None => {
                    let i = u32::try_from(st.slots.len()).expect("fewer than 2^32 keys at once");
                    st.slots.push(slot);
                    if i % 64 == 0 {
                        st.retired_bits.push(0);
                    }
                    i
                }
            };
            st.table.insert_unique(th, Entry { slot: i, tag }, |e| table_hash(e.tag));
            st.push(i)
        };
        drop(guard);
        if let Some(w) = wake {
            w.run();
        }
        true
    }

    /// Waits for the next key and hands it out, held, as an [`Item`].
    ///
    /// Returns `None` once the queue is shutting down **and** empty: while shutting down, keys
    /// already queued are still handed out, so workers finish the backlog before they stop.
    ///
    /// Cancel-safe: if the future is dropped, no key is taken (and a wake-up it was given passes
    /// to another waiting `get`).
    pub async fn get(&self) -> Option<Item<'_, T>> {
        Get { queue: self, waiter: None }.await
    }

    /// Takes the next key if one is queued, without waiting.
    pub fn try_get(&self) -> Option<Item<'_, T>> {
        let mut st = self.shared.lock();
        match self.pop(&mut st) {
            Pop::Key(slot, key) => Some(Item { slot, key: Some(key), queue: self }),
            Pop::Empty | Pop::Closed => None,
        }
    }

    /// Pops the head; emptiness and shutdown are read under the same lock, so a key added just
    /// before the shutdown is never mistaken for "closed and empty".
    fn pop(&self, st: &mut State<T>) -> Pop<T> {
        let Some(i) = st.fifo.pop_front() else {
            return if st.shutting_down { Pop::Closed } else { Pop::Empty };
        };
        let s = &mut st.slots[i as usize];
        s.dirty = false;
        s.processing = true;
        let key = s.key.clone().expect("a queued slot holds its key");
        st.processing += 1;
        if let Some(m) = st.metrics.as_mut() {
            m.get(&key);
        }
        Pop::Key(i, key)
    }

    /// Releases a held key (called by [`Item`]'s `Drop`); a key added meanwhile goes back in line.
    fn done(&self, i: u32, key: T) {
        let mut guard = self.shared.lock();
        let st = &mut *guard;
        let s = &mut st.slots[i as usize];
        debug_assert!(s.processing, "only a held key is released");
        s.processing = false;
        let wake = if s.dirty {
            st.push(i)
        } else {
            // Stays in the table until the next sweep: no table lookup on this path.
            st.set_retired(i, true);
            None
        };
        st.processing -= 1;
        if let Some(m) = st.metrics.as_mut() {
            m.done(&key);
        }
        let live = st.live();
        let garbage = if live == 0 && st.slots.len() > KEEP_SLOTS {
            st.release_memory()
        } else if st.retired >= SWEEP_MIN && st.retired >= live {
            Garbage::Keys(st.sweep())
        } else {
            Garbage::None
        };
        let idle = st.processing == 0 && st.drain;
        drop(guard);
        garbage.free();
        drop(key);
        if let Some(w) = wake {
            w.run();
        } else if idle {
            self.shared.idle.notify_waiters();
        }
    }

    /// How many keys wait to be handed out.
    ///
    /// Keys re-added while a worker holds them are not counted until the worker releases them.
    /// For information only: by the time you act on it, it may have changed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shared.lock().fifo.len()
    }

    /// Whether no key waits to be handed out.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many keys workers hold right now.
    #[must_use]
    pub fn processing(&self) -> usize {
        self.shared.lock().processing
    }

    /// Starts shutting down: later adds are refused, workers drain what is queued, then
    /// [`get`](Self::get) returns `None`. Does not wait for anything. Cancels a
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) in progress, as in client-go.
    pub fn shut_down(&self) {
        self.begin_shutdown(false);
    }

    /// Shuts down, then waits until **every key accepted before the shutdown has been processed**:
    /// the FIFO is empty and no worker holds a key.
    ///
    /// Keys re-added while a worker held them count too: the release pushes them again and the wait
    /// goes on until they are processed. Delayed keys that had not fired are dropped, not waited
    /// for. A later [`shut_down`](Self::shut_down) ends the wait early.
    ///
    /// ## Warning
    ///
    /// This waits for workers: it returns only if they keep calling [`get`](Self::get) until it
    /// returns `None`. (client-go's version checks only that no key is held, so it can return with
    /// keys still queued; this one waits for those too, as client-go's documentation promises.)
    pub async fn shut_down_with_drain(&self) {
        self.begin_shutdown(true);
        loop {
            let idle = self.shared.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            {
                let st = self.shared.lock();
                if !st.drain || (st.processing == 0 && st.fifo.is_empty()) {
                    return;
                }
            }
            idle.await;
        }
    }

    fn begin_shutdown(&self, drain: bool) {
        let waiters = {
            let mut st = self.shared.lock();
            st.drain = drain;
            st.shutting_down = true;
            st.woken += st.waiters.len();
            std::mem::take(&mut st.waiters)
        };
        for w in waiters {
            w.waker.wake();
        }
        self.shared.idle.notify_waiters();
        self.shared.shutdown.notify_waiters();
    }

    /// Whether shutdown has started.
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.shared.lock().shutting_down
    }

    /// Resolves once shutdown has started.
    pub(crate) fn shutdown_notify(&self) -> Arc<Notify> {
        Arc::clone(&self.shared.shutdown)
    }

    /// Counts one retry in the `retries` metric (the delaying layer calls it on every `add_after`).
    pub(crate) fn record_retry(&self) {
        if let Some(m) = self.shared.lock().metrics.as_mut() {
            m.retry();
        }
    }
}

/// The future of [`Queue::get`]: takes a key when one is queued, else parks in the queue's list
/// of waiters (under the queue's own lock: one lock per attempt, none of its own).
struct Get<'q, T: Key> {
    queue: &'q Queue<T>,
    /// This get's number in the waiter list, once it has parked.
    waiter: Option<u64>,
}

impl<'q, T: Key> Future for Get<'q, T> {
    type Output = Option<Item<'q, T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let queue = this.queue;
        let mut guard = queue.shared.lock();
        let st = &mut *guard;
        if let Some(id) = this.waiter
            && !st.waiters.iter().any(|w| w.id == id)
        {
            // Taken off the list by a wake-up, and running now.
            st.woken = st.woken.saturating_sub(1);
            this.waiter = None;
        }
        let got = match queue.pop(st) {
            Pop::Key(slot, key) => Some(Item { slot, key: Some(key), queue }),
            Pop::Closed => None,
            Pop::Empty => {
                let parked = this.waiter.and_then(|id| st.waiters.iter_mut().find(|w| w.id == id));
                match parked {
                    Some(w) => {
                        if !w.waker.will_wake(cx.waker()) {
                            w.waker.clone_from(cx.waker());
                        }
                    }
                    None => {
                        // First time, or woken and beaten to the key: (re)park at the back.
                        let id = st.next_waiter;
                        st.next_waiter += 1;
                        st.waiters.push_back(Waiter { id, waker: cx.waker().clone() });
                        this.waiter = Some(id);
                    }
                }
                return Poll::Pending;
            }
        };
        if let Some(id) = this.waiter.take() {
            // Polled while still parked (not by our wake-up): leave the list.
            if let Some(pos) = st.waiters.iter().position(|w| w.id == id) {
                st.waiters.remove(pos);
            }
        }
        Poll::Ready(got)
    }
}

impl<T: Key> Drop for Get<'_, T> {
    fn drop(&mut self) {
        let Some(id) = self.waiter else { return };
        let wake = {
            let mut st = self.queue.shared.lock();
            if let Some(pos) = st.waiters.iter().position(|w| w.id == id) {
                st.waiters.remove(pos);
                None
            } else {
                st.woken = st.woken.saturating_sub(1);
                if st.fifo.is_empty() {
                    None
                } else {
                    // Woken for a key it will never take: pass the wake-up on.
                    st.wake_one()
                }
            }
        };
        if let Some(w) = wake {
            w.run();
        }
    }
}

/// Refreshes the unfinished-work gauges every [`UNFINISHED_WORK_UPDATE_PERIOD`] until the queue
/// shuts down or every handle is gone.
async fn update_unfinished_work<T: Key>(shared: Weak<Shared<T>>) {
    let mut tick = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        let mut st = shared.lock();
        if st.shutting_down {
            return;
        }
        if let Some(m) = st.metrics.as_mut() {
            m.update_unfinished_work(tokio::time::Instant::now());
        }
    }
}

/// What one attempt to take a key found.
enum Pop<T> {
    Key(u32, T),
    Empty,
    Closed,
}

/// A key held by one worker. Dropping it releases the key ("done").
///
/// While an `Item` for a key exists, no other worker can get that key. If the key was added again
/// meanwhile, releasing it puts it back in line, so the newer change is processed too.
///
/// ## Warning
///
/// `std::mem::forget` on an `Item` (or leaking it in a cycle) holds its key forever: it is never
/// handed out again. Keep the item in the worker's scope and let it drop.
///
/// An item borrows its queue (no reference count to touch per key); a worker keeps it in the scope
/// where it called [`get`](Queue::get).
pub struct Item<'q, T: Key> {
    slot: u32,
    /// `Some` until the drop hands it back to the queue.
    key: Option<T>,
    queue: &'q Queue<T>,
}

impl<T: Key> Item<'_, T> {
    /// The key this worker holds.
    #[must_use]
    pub fn key(&self) -> &T {
        self.key.as_ref().expect("held until dropped")
    }

    /// Releases the key now; the same as dropping the item, spelled out.
    pub fn done(self) {}
}

impl<T: Key> std::ops::Deref for Item<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.key()
    }
}

impl<T: Key + fmt::Debug> fmt::Debug for Item<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Item").field(self.key()).finish()
    }
}

impl<T: Key> Drop for Item<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.queue.done(self.slot, key);
        }
    }
}

/// There is no way to release a key the worker does not hold:
///
/// ```compile_fail
/// let queue: kube_workqueue::Queue<&str> = kube_workqueue::Queue::new();
/// queue.done(&"default/web"); // no such method: release happens through `Item`
/// ```
///
/// and no way to release one twice:
///
/// ```compile_fail
/// # async fn f(queue: kube_workqueue::Queue<&'static str>) {
/// let item = queue.get().await.unwrap();
/// item.done();
/// item.done(); // use of moved value
/// # }
/// ```
#[cfg(doctest)]
struct DoneIsOnlyOnItem;

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(q: &Queue<String>) -> (usize, usize) {
        let st = q.shared.lock();
        (st.slots.len(), st.table.capacity())
    }

    /// `(retired, table entries, slots)`.
    fn counts(q: &Queue<String>) -> (usize, usize, usize) {
        let st = q.shared.lock();
        (st.retired, st.table.len(), st.slots.len())
    }

    /// Adds `key`, takes it and releases it: it is finished.
    fn run(q: &Queue<String>, key: &str) {
        q.add(key.into());
        let item = q.try_get().unwrap();
        assert_eq!(*item, key);
    }

    #[test]
    fn a_released_slot_is_reused_and_never_confused_with_its_old_key() {
        let q: Queue<String> = Queue::new();
        let _held = {
            q.add("default/held".into()); // keeps the queue from going idle
            q.try_get().unwrap()
        };
        run(&q, "default/a"); // retired: still in the table
        assert_eq!(counts(&q), (1, 2, 2));
        for i in 1..SWEEP_MIN {
            run(&q, &format!("default/x{i}"));
        }
        // The 1024th retirement swept them all: only the held key is left in the table.
        assert_eq!(counts(&q), (0, 1, SWEEP_MIN + 1));
        q.add("default/b".into()); // takes a freed slot, maybe "a"'s
        q.add("default/a".into()); // another one: "a" is not found in "b"'s
        assert_eq!(counts(&q), (0, 3, SWEEP_MIN + 1), "freed slots are reused");
        let b = q.try_get().unwrap();
        assert_eq!(*b, "default/b");
        q.add("default/b".into()); // re-added while held
        let a = q.try_get().unwrap();
        assert_eq!(*a, "default/a");
        assert!(q.try_get().is_none(), "b waits for its worker");
        drop(b);
        assert_eq!(*q.try_get().unwrap(), "default/b");
        drop(a);
    }

    #[test]
    fn a_retired_key_added_again_comes_back_in_its_own_slot() {
        let q: Queue<String> = Queue::new();
        run(&q, "default/a");
        assert_eq!(counts(&q), (1, 1, 1));
        q.add("default/b".into());
        q.add("default/a".into()); // revived in place, behind "b"
        assert_eq!(counts(&q), (0, 2, 2));
        let b = q.try_get().unwrap();
        q.add("default/a".into()); // merged: it waits already
        assert_eq!(q.len(), 1);
        let a = q.try_get().unwrap();
        assert_eq!((b.key().as_str(), a.key().as_str()), ("default/b", "default/a"));
    }

    #[test]
    fn a_key_held_across_a_sweep_keeps_its_slot_and_its_re_add() {
        let q: Queue<String> = Queue::new();
        q.add("default/held".into());
        let held = q.try_get().unwrap();
        q.add("default/held".into()); // dirty while held
        for i in 0..SWEEP_MIN {
            run(&q, &format!("default/x{i}"));
        }
        assert_eq!(counts(&q).0, 0, "swept");
        assert!(q.try_get().is_none(), "the held key is not handed out twice");
        drop(held);
        assert_eq!(*q.try_get().unwrap(), "default/held", "its re-add survived the sweep");
    }

    #[test]
    fn only_a_wake_up_with_no_other_woken_or_parked_get_is_lone() {
        let q: Queue<String> = Queue::new();
        let mut cx = Context::from_waker(Waker::noop());
        let (mut a, mut b) = (Box::pin(q.get()), Box::pin(q.get()));
        assert!(a.as_mut().poll(&mut cx).is_pending());
        assert!(b.as_mut().poll(&mut cx).is_pending());
        {
            let mut st = q.shared.lock();
            let first = st.wake_one().unwrap();
            let second = st.wake_one().unwrap();
            assert!(!first.alone, "another get is still parked");
            assert!(!second.alone, "another get was woken before it");
            assert_eq!(st.woken, 2);
        }
        assert!(a.as_mut().poll(&mut cx).is_pending(), "nothing queued: woken, it parks again");
        assert_eq!(q.shared.lock().woken, 1, "a woken get that runs is no longer counted");
        drop(b);
        assert_eq!(q.shared.lock().woken, 0, "nor is one dropped");
        let lone = q.shared.lock().wake_one().unwrap();
        assert!(lone.alone, "the only parked get, with none woken");
        drop(a);
        assert_eq!(q.shared.lock().woken, 0);
    }

    #[test]
    fn an_idle_queue_gives_back_the_memory_of_a_burst() {
        let q: Queue<String> = Queue::new();
        for i in 0..10_000 {
            q.add(format!("ns-{}/cm-{i}", i % 7));
        }
        assert_eq!(slots(&q).0, 10_000);
        let mut held = Vec::new();
        while let Some(item) = q.try_get() {
            held.push(item);
        }
        let last = held.pop().unwrap();
        drop(held);
        assert_eq!(slots(&q).0, 10_000, "a held key keeps the slab");
        drop(last);
        assert_eq!(slots(&q), (0, 0), "nothing queued or held: slab and table freed");
        // A small queue keeps its slots for reuse.
        q.add("default/a".into());
        drop(q.try_get());
        assert_eq!(slots(&q).0, 1);
    }
}
