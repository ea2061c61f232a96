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
//! Only a *lone* wake-up takes the hop: one after which no other get is woken and none is left
//! parked. When two or more workers were parked, the adder wakes them directly, one key after
//! another, and each wake-up pushes the previous one out of the LIFO slot into the thread's run
//! queue, where the idle thread steals it: no hop needed, and none taken.
//!
//! Wake-ups are delivered in batches: while one blocking task is scheduled, later wake-ups join
//! its list instead of scheduling another, so the several workers that park each time they catch
//! up are woken by one hop, not one each. A key added while workers are busy wakes no one.
//!
//! The price: a wake-up of a parked worker takes a thread hop (microseconds) instead of landing
//! in the LIFO slot, and a program that keeps every blocking-pool thread busy delays it until one
//! is free. An add from a blocking task also hops, though it would not need to (a task id is all
//! that is checked).

use std::task::Waker;

use parking_lot::Mutex;
use tokio::runtime::{Handle, RuntimeFlavor};

/// Wake-ups waiting for the blocking task that delivers them, and whether one is scheduled.
static PENDING: Mutex<Pending> = Mutex::new(Pending { wakers: Vec::new(), scheduled: false });

struct Pending {
    wakers: Vec<Waker>,
    scheduled: bool,
}

/// A parked get to wake: `alone` when no other get is woken with it or after it.
pub(crate) struct Wake {
    pub(crate) waker: Waker,
    pub(crate) alone: bool,
}

impl Wake {
    /// Wakes the get: a lone one through [`wake`], others directly.
    pub(crate) fn run(self) {
        if self.alone {
            wake(self.waker);
        } else {
            self.waker.wake();
        }
    }
}

/// Wakes `waker`, through a blocking-pool thread when called from a task on a multi-thread
/// runtime, directly otherwise (a plain thread, `block_on`, a current-thread runtime: there, a
/// wake-up already lands where it can run).
pub(crate) fn wake(waker: Waker) {
    if tokio::task::try_id().is_none() {
        return waker.wake();
    }
    let Ok(handle) = Handle::try_current() else { return waker.wake() };
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return waker.wake();
    }
    {
        let mut pending = PENDING.lock();
        pending.wakers.push(waker);
        if pending.scheduled {
            return; // the scheduled task takes it along
        }
        pending.scheduled = true;
    }
    let deliver = Deliver;
    // Detached: the wake-ups are the whole task. A runtime shutting down drops it unrun, and
    // `Deliver`'s drop wakes them all the same.
    drop(handle.spawn_blocking(move || drop(deliver)));
}

/// Wakes every pending waker when dropped (run or not), until none is left, then lets the next
/// wake-up schedule a new task.
struct Deliver;

impl Drop for Deliver {
    fn drop(&mut self) {
        loop {
            let batch = {
                let mut pending = PENDING.lock();
                if pending.wakers.is_empty() {
                    pending.scheduled = false;
                    return;
                }
                std::mem::take(&mut pending.wakers)
            };
            for w in batch {
                w.wake();
            }
        }
    }
}
