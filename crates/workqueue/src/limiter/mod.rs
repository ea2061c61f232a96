//! Rate limiters: how long a key waits before it is retried.
//!
//! A [`RateLimiter`] answers [`when`](RateLimiter::when) (and records that the key is being
//! retried), [`num_requeues`](RateLimiter::num_requeues) and [`forget`](RateLimiter::forget).
//!
//! | limiter | delay |
//! |---|---|
//! | [`ItemExponentialFailureRateLimiter`] | per key: `base × 2^failures`, capped |
//! | [`ItemFastSlowRateLimiter`] | per key: `fast` for the first attempts, then `slow` |
//! | [`BucketRateLimiter`] | global token bucket: `qps` with `burst` |
//! | [`MaxOfRateLimiter`] | the largest of several |
//! | [`WithMaxWaitRateLimiter`] | another limiter's delay, capped |
//!
//! [`default_controller_rate_limiter`] is what controllers use unless they have a reason not to.

mod bucket;
mod exponential;
mod fast_slow;
mod max_of;

use std::sync::Arc;
use std::time::Duration;

pub use bucket::BucketRateLimiter;
pub use exponential::ItemExponentialFailureRateLimiter;
pub use fast_slow::ItemFastSlowRateLimiter;
pub use max_of::{MaxOfRateLimiter, WithMaxWaitRateLimiter};

/// Decides how long a key waits before it is retried.
///
/// `when` has side effects: it counts a failure, or takes a token. Call it once per retry.
pub trait RateLimiter<T>: Send + Sync {
    /// The delay before `key` is retried; records the retry.
    fn when(&self, key: &T) -> Duration;
    /// Clears what is known about `key` (its failure count); call it after a success.
    fn forget(&self, key: &T);
    /// How many times `key` has been retried since it was last forgotten.
    fn num_requeues(&self, key: &T) -> u32;
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<L> {
    fn when(&self, key: &T) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &T) {
        (**self).forget(key);
    }
    fn num_requeues(&self, key: &T) -> u32 {
        (**self).num_requeues(key)
    }
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, key: &T) -> Duration {
        (**self).when(key)
    }
    fn forget(&self, key: &T) {
        (**self).forget(key);
    }
    fn num_requeues(&self, key: &T) -> u32 {
        (**self).num_requeues(key)
    }
}

/// A limiter configured with values that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimiterError {
    /// The exponential limiter's base delay is larger than its cap.
    #[error("exponential rate limiter: base delay {base:?} is larger than the cap {cap:?}")]
    BaseExceedsCap {
        /// The base delay given.
        base: Duration,
        /// The cap given.
        cap: Duration,
    },
    /// The token bucket's rate is zero, negative or not a number.
    #[error("token bucket rate limiter: qps must be a positive number, got {qps}")]
    InvalidQps {
        /// The rate given.
        qps: f64,
    },
    /// The token bucket's burst is zero: no token could ever be taken.
    #[error("token bucket rate limiter: burst must be at least 1, got 0")]
    ZeroBurst,
}

/// client-go's `DefaultTypedControllerRateLimiter`: the larger of a per-key exponential backoff
/// (5 ms doubling to 1000 s) and a global token bucket (10 per second, burst 100).
///
/// The bucket only paces retries overall; the per-key backoff is what slows a key that keeps failing.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{RateLimiter, default_controller_rate_limiter};
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = default_controller_rate_limiter::<&str>();
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// limiter.forget(&"a");
/// assert_eq!(limiter.num_requeues(&"a"), 0);
/// # }
/// ```
#[must_use]
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
{
    let exponential =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000))
            .expect("5ms <= 1000s");
    let bucket = BucketRateLimiter::new(10.0, 100).expect("10 qps, burst 100 are valid");
    MaxOfRateLimiter::new(vec![Box::new(exponential), Box::new(bucket)])
}

/// client-go's `DefaultTypedItemBasedRateLimiter`: per-key exponential backoff, 1 ms doubling to
/// 1000 s, with no global pacing.
#[must_use]
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailureRateLimiter<T>
where
    T: Clone + Eq + std::hash::Hash + Send + Sync,
{
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
        .expect("1ms <= 1000s")
}
