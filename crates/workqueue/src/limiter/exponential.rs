//! Per-key exponential backoff: each failure of a key doubles its next delay, up to a cap.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use super::{LimiterError, RateLimiter};

/// Delay = `base × 2^n`, where `n` is how many times the key was retried before this call; never
/// more than `cap`.
///
/// With base 5 ms and cap 1000 s: 5 ms, 10 ms, 20 ms, … 655.36 s, then 1000 s from the 19th retry
/// on. The arithmetic is done in floating point and saturates, so a key that has failed millions of
/// times still gets `cap`, never an overflow.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
/// let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000))?;
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.when(&"b"), Duration::from_millis(5)); // per key
/// assert_eq!(limiter.num_requeues(&"a"), 2);
/// # Ok::<(), kube_workqueue::LimiterError>(())
/// ```
#[derive(Debug)]
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<T, u32, foldhash::fast::RandomState>>,
    /// How many keys have failures: `forget` of a key that never failed (every success of a
    /// healthy controller) skips the lock and the hash when it is zero.
    failing: AtomicUsize,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and capped at `cap`.
    ///
    /// # Errors
    ///
    /// [`LimiterError::BaseExceedsCap`] when `base > cap`.
    pub fn new(base: Duration, cap: Duration) -> Result<Self, LimiterError> {
        if base > cap {
            return Err(LimiterError::BaseExceedsCap { base, cap });
        }
        Ok(Self { base, cap, failures: Mutex::new(HashMap::default()), failing: AtomicUsize::new(0) })
    }

    /// The delay for a key that has already been retried `retries` times.
    #[must_use]
    pub fn delay_for(&self, retries: u32) -> Duration {
        // i32::MAX as an exponent is already infinite; clamp so the cast cannot wrap.
        if self.base.is_zero() {
            return Duration::ZERO; // and not 0 × ∞ = NaN below
        }
        let exp = i32::try_from(retries).unwrap_or(i32::MAX);
        let nanos = self.base.as_nanos() as f64 * 2f64.powi(exp);
        if nanos >= u64::MAX as f64 {
            return self.cap;
        }
        Duration::from_nanos(nanos as u64).min(self.cap)
    }
}

impl<T: Eq + Hash + Clone + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, key: &T) -> Duration {
        let mut failures = self.failures.lock();
        let count = failures.entry(key.clone()).or_insert(0);
        let retries = *count;
        *count = count.saturating_add(1);
        self.failing.store(failures.len(), Ordering::Release);
        self.delay_for(retries)
    }

    fn forget(&self, key: &T) {
        if self.failing.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut failures = self.failures.lock();
        if failures.remove(key).is_some() {
            self.failing.store(failures.len(), Ordering::Release);
        }
    }

    fn num_requeues(&self, key: &T) -> u32 {
        if self.failing.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}
