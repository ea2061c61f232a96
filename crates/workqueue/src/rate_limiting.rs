//! The rate-limiting layer: retries go through a [`RateLimiter`] before they are queued.
//!
//! `add_rate_limited(key)` is `add_after(key, limiter.when(key))`; `forget` and `num_requeues`
//! pass through to the limiter. `forget` only clears the limiter's memory of the key: it does not
//! remove the key from the queue and does not release it (dropping the [`Item`](crate::Item)
//! does that).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::delay::DelayingQueue;
use crate::limiter::RateLimiter;
use crate::queue::{Key, QueueConfig};

/// A [`DelayingQueue`] whose retries are paced by a [`RateLimiter`].
///
/// Dereferences to [`DelayingQueue`] (and through it to [`Queue`](crate::Queue)).
///
/// ## Warning
///
/// Call [`forget`](Self::forget) when a key succeeds. Otherwise its failure count lives on, and the
/// next failure, maybe days later, waits as if the key had never stopped failing.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// queue.add_rate_limited("default/web");
/// queue.add_rate_limited("default/web");
/// assert_eq!(queue.num_requeues(&"default/web"), 2);
/// let item = queue.get().await.unwrap(); // after 5 ms: the earlier deadline won
/// queue.forget(item.key());
/// assert_eq!(queue.num_requeues(&"default/web"), 0);
/// # }
/// ```
pub struct RateLimitingQueue<T: Key> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T: Key> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone(), limiter: Arc::clone(&self.limiter) }
    }
}

impl<T: Key> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue").field("queue", &self.queue).finish_non_exhaustive()
    }
}

impl<T: Key> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;
    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T: Key> RateLimitingQueue<T> {
    /// A rate-limited queue without metrics.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (it starts the delaying layer's task).
    #[must_use]
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A rate-limited queue with a name and metrics provider.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[must_use]
    pub fn with_config(limiter: impl RateLimiter<T> + 'static, config: QueueConfig) -> Self {
        Self { queue: DelayingQueue::with_config(config), limiter: Arc::new(limiter) }
    }

    /// Adds `key` after the delay the limiter gives it (and so counts a retry for it).
    ///
    /// Returns `false`, without asking the limiter, if the queue is shutting down.
    pub fn add_rate_limited(&self, key: T) -> bool {
        if self.is_shutting_down() {
            return false;
        }
        let delay = self.limiter.when(&key);
        self.queue.add_after(key, delay)
    }

    /// Clears the limiter's failure count for `key`. Call it when the key succeeded.
    pub fn forget(&self, key: &T) {
        self.limiter.forget(key);
    }

    /// How many times `key` has been rate-limited since it was last forgotten.
    #[must_use]
    pub fn num_requeues(&self, key: &T) -> u32 {
        self.limiter.num_requeues(key)
    }
}
