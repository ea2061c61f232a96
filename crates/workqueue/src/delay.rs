//! The delaying layer: `add_after(key, delay)` puts a key in line once its delay has passed.
//!
//! Waiting keys sit in a min-heap ordered by deadline, with a map from key to its current deadline
//! so that a key waits at most once: adding a key that already waits keeps the **earlier** of the
//! two deadlines. One background task sleeps until the head deadline and then calls
//! [`Queue::add`] for every key that is due. When the queue shuts down, keys still waiting are
//! dropped (as in client-go: the queue is going away).
//!
//! Heap entries made stale by an earlier deadline are left in the heap and skipped when popped
//! (each entry carries a sequence number that must match the map's), which keeps every update
//! O(log n) without a decrease-key operation.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::queue::{Key, Queue, QueueConfig};

/// The longest delay honoured; longer ones are clamped to it (about 30 years) so that a huge
/// `Duration` can never overflow a deadline.
pub const MAX_DELAY: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

struct Entry<T> {
    at: Instant,
    seq: u64,
    key: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

struct Waiting<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    /// The live deadline of each waiting key: `(deadline, seq of its heap entry)`.
    deadlines: HashMap<T, (Instant, u64)>,
    next_seq: u64,
}

impl<T: Key> Waiting<T> {
    /// Records `key` to fire at `at` unless it already waits for an earlier time. Returns whether
    /// the head of the heap changed (the loop must re-arm its timer).
    fn insert(&mut self, key: T, at: Instant) -> bool {
        if let Some(&(current, _)) = self.deadlines.get(&key)
            && current <= at
        {
            return false;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.deadlines.insert(key.clone(), (at, seq));
        let earliest = self.heap.peek().is_none_or(|Reverse(head)| at < head.at);
        self.heap.push(Reverse(Entry { at, seq, key }));
        earliest
    }

    /// Removes and returns every key due at `now`, and the next live deadline.
    fn pop_due(&mut self, now: Instant) -> (Vec<T>, Option<Instant>) {
        let mut due = Vec::new();
        while let Some(Reverse(head)) = self.heap.peek() {
            let live = self.deadlines.get(&head.key).is_some_and(|&(_, seq)| seq == head.seq);
            if live && head.at > now {
                return (due, Some(head.at));
            }
            let Reverse(entry) = self.heap.pop().expect("peeked");
            if live {
                self.deadlines.remove(&entry.key);
                due.push(entry.key);
            }
        }
        (due, None)
    }

    fn clear(&mut self) {
        self.heap.clear();
        self.deadlines.clear();
    }
}

struct Inner<T: Key> {
    queue: Queue<T>,
    waiting: Mutex<Waiting<T>>,
    /// Wakes the loop: a new earliest deadline, or the last handle went away.
    wake: Arc<Notify>,
}

impl<T: Key> Drop for Inner<T> {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

/// A [`Queue`] that can also add keys after a delay.
///
/// Dereferences to [`Queue`] for `add`, `get`, `len` and shutdown, as the Go type embeds its
/// inner queue.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::DelayingQueue;
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = DelayingQueue::new();
/// queue.add_after("default/web", Duration::from_secs(10));
/// queue.add_after("default/web", Duration::from_secs(2)); // earlier deadline wins
/// let started = tokio::time::Instant::now();
/// let item = queue.get().await.unwrap();
/// assert_eq!(started.elapsed(), Duration::from_secs(2));
/// # drop(item);
/// # }
/// ```
pub struct DelayingQueue<T: Key> {
    inner: Arc<Inner<T>>,
}

impl<T: Key> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<T: Key> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.inner.queue)
            .field("waiting", &self.waiting())
            .finish()
    }
}

impl<T: Key> Deref for DelayingQueue<T> {
    type Target = Queue<T>;
    fn deref(&self) -> &Queue<T> {
        &self.inner.queue
    }
}

impl<T: Key> DelayingQueue<T> {
    /// A delaying queue without metrics.
    ///
    /// # Panics
    ///
    /// Starts the background task that fires delayed keys, so it must be called inside a Tokio
    /// runtime, like `tokio::spawn`.
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A delaying queue with a name and metrics provider.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, as [`new`](Self::new).
    #[must_use]
    pub fn with_config(config: QueueConfig) -> Self {
        let queue = Queue::with_config(config);
        let wake = Arc::new(Notify::new());
        let inner = Arc::new(Inner {
            waiting: Mutex::new(Waiting { heap: BinaryHeap::new(), deadlines: HashMap::new(), next_seq: 0 }),
            queue,
            wake: Arc::clone(&wake),
        });
        tokio::spawn(waiting_loop(Arc::downgrade(&inner), wake, inner.queue.shutdown_notify()));
        Self { inner }
    }

    /// Adds `key` once `delay` has passed.
    ///
    /// * A zero delay adds at once.
    /// * If `key` already waits, the earlier of its two deadlines is kept: it is never queued twice
    ///   by this layer, and a retry is never pushed later by a newer, longer delay.
    /// * Delays beyond [`MAX_DELAY`] are clamped to it.
    /// * Counts one retry in the metrics, whatever the delay (client-go does the same).
    ///
    /// Returns `false`, and does nothing, if the queue is shutting down.
    pub fn add_after(&self, key: T, delay: Duration) -> bool {
        if self.inner.queue.is_shutting_down() {
            return false;
        }
        self.inner.queue.record_retry();
        if delay.is_zero() {
            return self.inner.queue.add(key);
        }
        let at = Instant::now() + delay.min(MAX_DELAY);
        if self.inner.waiting.lock().insert(key, at) {
            self.inner.wake.notify_one();
        }
        true
    }

    /// How many keys are waiting for their delay to pass.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.inner.waiting.lock().deadlines.len()
    }
}

impl<T: Key> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Moves due keys into the queue; sleeps until the next deadline, a new earlier one, shutdown, or
/// the last handle being dropped.
async fn waiting_loop<T: Key>(inner: Weak<Inner<T>>, wake: Arc<Notify>, shutdown: Arc<Notify>) {
    loop {
        // Created before the state is read so that a shutdown in between is not missed.
        let shut = shutdown.notified();
        let next = {
            let Some(inner) = inner.upgrade() else { return };
            if inner.queue.is_shutting_down() {
                inner.waiting.lock().clear();
                return;
            }
            let (due, next) = inner.waiting.lock().pop_due(Instant::now());
            for key in due {
                inner.queue.add(key);
            }
            next
        };
        match next {
            Some(at) => tokio::select! {
                () = tokio::time::sleep_until(at) => {}
                () = wake.notified() => {}
                () = shut => {}
            },
            None => tokio::select! {
                () = wake.notified() => {}
                () = shut => {}
            },
        }
    }
}
