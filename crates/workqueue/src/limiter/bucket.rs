//! A global token bucket: paces all retries together, whatever the key.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::{LimiterError, RateLimiter};

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// A token bucket that refills at `qps` tokens per second and holds at most `burst`.
///
/// Each [`when`](RateLimiter::when) takes one token **now** and returns how long until that token
/// would have been available: zero while the bucket has tokens, then `1/qps` apart, piling up into
/// the future when retries arrive faster than `qps` (the reservation semantics of Go's
/// `rate.Limiter`). The bucket starts full. It keeps no per-key state, so `num_requeues` is always
/// 0 and `forget` does nothing.
///
/// Time is read from Tokio's clock, so paused-time tests drive it.
///
/// ```
/// use std::time::Duration;
/// use kube_workqueue::{BucketRateLimiter, RateLimiter};
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), kube_workqueue::LimiterError> {
/// let bucket = BucketRateLimiter::new(10.0, 2)?;
/// assert_eq!(bucket.when(&"a"), Duration::ZERO);
/// assert_eq!(bucket.when(&"b"), Duration::ZERO);
/// assert_eq!(bucket.when(&"c"), Duration::from_millis(100));
/// assert_eq!(bucket.when(&"d"), Duration::from_millis(200));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct BucketRateLimiter {
    qps: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

impl BucketRateLimiter {
    /// A full bucket of `burst` tokens refilling at `qps` per second.
    ///
    /// Reads the Tokio clock, so it must be called where Tokio's time is available (inside a
    /// runtime, or outside with the real clock).
    ///
    /// # Errors
    ///
    /// [`LimiterError::InvalidQps`] when `qps` is not a positive finite number;
    /// [`LimiterError::ZeroBurst`] when `burst` is 0.
    pub fn new(qps: f64, burst: u32) -> Result<Self, LimiterError> {
        if !(qps.is_finite() && qps > 0.0) {
            return Err(LimiterError::InvalidQps { qps });
        }
        if burst == 0 {
            return Err(LimiterError::ZeroBurst);
        }
        let burst = f64::from(burst);
        Ok(Self { qps, burst, bucket: Mutex::new(Bucket { tokens: burst, last: Instant::now() }) })
    }

    /// Takes one token at `now`; returns the wait until it is really available.
    fn reserve(&self, now: Instant) -> Duration {
        let mut b = self.bucket.lock();
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        b.last = b.last.max(now);
        b.tokens -= 1.0;
        if b.tokens >= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(-b.tokens / self.qps).unwrap_or(Duration::MAX)
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _key: &T) -> Duration {
        self.reserve(Instant::now())
    }

    fn forget(&self, _key: &T) {}

    fn num_requeues(&self, _key: &T) -> u32 {
        0
    }
}
