//! Per-key two-speed retries: a few quick attempts, then slow ones.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;

use super::RateLimiter;

/// Retries a key after `fast` for its first `max_fast_attempts` retries, after `slow` from then on.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{ItemFastSlowRateLimiter, RateLimiter};
/// let limiter = ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 2);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// ```
#[derive(Debug)]
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    attempts: Mutex<HashMap<T, u32>>,
}

impl<T> ItemFastSlowRateLimiter<T> {
    /// A limiter with the two delays and the number of fast attempts.
    #[must_use]
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self { fast, slow, max_fast_attempts, attempts: Mutex::new(HashMap::new()) }
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, key: &T) -> Duration {
        let mut attempts = self.attempts.lock();
        let count = attempts.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        if *count <= self.max_fast_attempts { self.fast } else { self.slow }
    }

    fn forget(&self, key: &T) {
        self.attempts.lock().remove(key);
    }

    fn num_requeues(&self, key: &T) -> u32 {
        self.attempts.lock().get(key).copied().unwrap_or(0)
    }
}
