//! Combinators: the largest of several limiters, and a cap on another limiter.

use std::fmt;
use std::time::Duration;

use super::RateLimiter;

/// Asks every limiter (so each records the retry) and waits for the longest answer.
///
/// `num_requeues` is the largest count any limiter reports; `forget` forgets in all of them.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter};
/// let limiter = MaxOfRateLimiter::new(vec![
///     Box::new(ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1))?),
///     Box::new(ItemFastSlowRateLimiter::new(Duration::from_millis(3), Duration::from_secs(1), 1)),
/// ]);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(3)); // max(1ms, 3ms)
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(1)); // max(2ms, 1s)
/// # Ok::<(), kube_workqueue::LimiterError>(())
/// ```
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`. With none, every delay is zero.
    #[must_use]
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter").field("limiters", &self.limiters.len()).finish()
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, key: &T) -> Duration {
        // Every limiter must see the retry, so no short-circuiting.
        self.limiters.iter().map(|l| l.when(key)).fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, key: &T) {
        for l in &self.limiters {
            l.forget(key);
        }
    }

    fn num_requeues(&self, key: &T) -> u32 {
        self.limiters.iter().map(|l| l.num_requeues(key)).max().unwrap_or(0)
    }
}

/// Another limiter's delay, but never more than `max_delay`.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{ItemExponentialFailureRateLimiter, RateLimiter, WithMaxWaitRateLimiter};
/// let inner = ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::from_secs(1000))?;
/// let limiter = WithMaxWaitRateLimiter::new(inner, Duration::from_secs(3));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(2));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(3)); // 4 s, capped
/// # Ok::<(), kube_workqueue::LimiterError>(())
/// ```
#[derive(Debug)]
pub struct WithMaxWaitRateLimiter<L> {
    inner: L,
    max_delay: Duration,
}

impl<L> WithMaxWaitRateLimiter<L> {
    /// Caps `inner`'s delays at `max_delay`.
    #[must_use]
    pub fn new(inner: L, max_delay: Duration) -> Self {
        Self { inner, max_delay }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<L> {
    fn when(&self, key: &T) -> Duration {
        self.inner.when(key).min(self.max_delay)
    }

    fn forget(&self, key: &T) {
        self.inner.forget(key);
    }

    fn num_requeues(&self, key: &T) -> u32 {
        self.inner.num_requeues(key)
    }
}
