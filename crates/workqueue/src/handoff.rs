//! How a parked [`get`](crate::Queue::get) is woken: off the adding thread, when the adder is a
//! task on a multi-thread runtime.
//!
//! Tokio puts a task woken by a running task in that worker thread's LIFO slot, the one place no
//! other worker thread steals from: the woken task runs only once the waker's task yields. A
//! producer that adds keys in a loop without awaiting (an informer's handler working through a
//! listed page, a benchmark) would then hold its lone worker behind it, idle beside an idle
//! thread, until the loop ends. Waking from a blocking-pool thread instead puts the worker in the
//! runtime's shared queue, where any idle worker thread picks it up at once.
//!
//! The hop costs a blocking-pool dispatch per wake-up of a *parked* get, that is, once per stretch
//! in which the workers had caught up; a key added while workers are busy wakes no one.

use std::task::Waker;

use tokio::runtime::{Handle, RuntimeFlavor};

/// Wakes `waker`, through a blocking-pool thread when called from a task on a multi-thread
/// runtime, directly otherwise (a plain thread, `block_on`, a current-thread runtime: there, a
/// wake-up already lands where it can run).
pub(crate) fn wake(waker: Waker) {
    if tokio::task::try_id().is_some()
        && let Ok(handle) = Handle::try_current()
        && handle.runtime_flavor() == RuntimeFlavor::MultiThread
    {
        let hop = WakeOnDrop(Some(waker));
        // Detached: the wake-up is the whole task. A runtime shutting down drops it unrun, and
        // the guard still wakes.
        drop(handle.spawn_blocking(move || drop(hop)));
    } else {
        waker.wake();
    }
}

/// Wakes its waker when dropped, whether or not the blocking task that holds it ever runs.
struct WakeOnDrop(Option<Waker>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        if let Some(w) = self.0.take() {
            w.wake();
        }
    }
}
