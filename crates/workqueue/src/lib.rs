//! client-go's `util/workqueue`, in Rust.
//!
//! A controller's event handlers only *name* work (a key such as `namespace/name`); workers pull the
//! keys and do the work. The queue between them is what makes that safe:
//!
//! * **fair** — keys are handed out in the order they were first added (FIFO);
//! * **stingy** — a key is never held by two workers at once, and any number of adds before a worker
//!   takes it collapse into one;
//! * **re-add while processing** — a key added while a worker holds it is processed once more after the
//!   worker releases it, so no change is missed.
//!
//! The layers mirror client-go, one module each:
//!
//! | layer | type | adds |
//! |---|---|---|
//! | [`queue`] | [`Queue`] | `add`, `get`, `len`, `shut_down`, `shut_down_with_drain` |
//! | [`delay`] | [`DelayingQueue`] | `add_after` (earliest deadline wins) |
//! | [`rate_limiting`] | [`RateLimitingQueue`] | `add_rate_limited`, `forget`, `num_requeues` |
//! | [`limiter`] | [`RateLimiter`] and its implementations | per-key exponential, fast/slow, token bucket, max-of |
//! | [`metrics`] | [`MetricsProvider`] | the seven `workqueue_*` metrics; [`prometheus`] exports them |
//!
//! # The one difference from client-go: `done` cannot be forgotten
//!
//! In Go, a worker must pair every `Get` with a `Done`; forgetting it (an early `return`, a panic) leaves
//! the key "processing" forever and it is never handed out again. Here [`Queue::get`] returns an
//! [`Item`] guard, and releasing the key is what dropping the guard does. There is no `done(key)`
//! method, so a key can be neither left held nor released twice (the Go bug where an extra `Done`
//! pushes a duplicate, kubernetes#79934).
//!
//! # Example: the canonical worker loop
//!
//! ```
//! use kube_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//! queue.add("default/web".to_string());
//! queue.shut_down(); // workers still drain what is queued
//!
//! while let Some(item) = queue.get().await {
//!     let result: Result<(), &str> = Ok(()); // reconcile(item.key())
//!     match result {
//!         Ok(()) => queue.forget(item.key()),
//!         Err(_) => {
//!             queue.add_rate_limited(item.key().clone());
//!         }
//!     }
//!     // `item` is dropped here: the key is done.
//! }
//! # }
//! ```
//!
//! ## Warning
//!
//! * **Forget on success.** [`RateLimitingQueue::forget`] is what resets a key's backoff; a
//!   worker that never calls it makes the key's next failure wait as long as if every earlier
//!   failure had been in a row (up to 1000 s with the default limiter).
//! * **Let the [`Item`] drop.** The key stays held while its item lives: a worker stuck on an
//!   await, or an item passed to `std::mem::forget`, keeps the key from ever being handed out
//!   again, and later adds of it wait behind it.
//! * **After shutdown, adds are refused.** [`Queue::add`] and the layers above it return `false`
//!   once [`Queue::shut_down`] has been called; keys already queued are still handed out.
//! * **Metrics need a runtime.** A queue with a name and a metrics provider starts a task that
//!   refreshes the unfinished-work gauges, so it must be made inside a Tokio runtime.

// The README's examples run as doc tests, so what it shows a new user keeps compiling.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod delay;
mod handoff;
pub mod limiter;
pub mod metrics;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod queue;
pub mod rate_limiting;

pub use delay::DelayingQueue;
pub use limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, LimiterError,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter,
};
pub use metrics::MetricsProvider;
pub use queue::{Item, Key, Queue, QueueConfig};
pub use rate_limiting::RateLimitingQueue;
