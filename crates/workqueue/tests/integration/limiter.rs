//! Rate limiter arithmetic, against client-go's constants.

use std::time::Duration;

use kube_workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, LimiterError,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter,
};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn exponential_schedule_matches_client_go() {
    let l = ItemExponentialFailureRateLimiter::new(MS(5), Duration::from_secs(1000)).unwrap();
    let expected_ms: [u64; 18] = [
        5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240, 20480, 40960, 81920, 163_840, 327_680,
        655_360,
    ];
    for (i, ms) in expected_ms.iter().enumerate() {
        assert_eq!(l.when(&"k"), MS(*ms), "retry {}", i + 1);
    }
    for _ in 0..5 {
        assert_eq!(l.when(&"k"), Duration::from_secs(1000), "19th retry on: the cap");
    }
    assert_eq!(l.num_requeues(&"k"), 23);
    l.forget(&"k");
    assert_eq!(l.num_requeues(&"k"), 0);
    assert_eq!(l.when(&"k"), MS(5));
}

#[test]
fn exponential_never_overflows() {
    let l = ItemExponentialFailureRateLimiter::<&str>::new(Duration::from_secs(1), Duration::from_secs(3600))
        .unwrap();
    for retries in [63, 64, 1000, 1_000_000, u32::MAX - 1, u32::MAX] {
        assert_eq!(l.delay_for(retries), Duration::from_secs(3600), "{retries} retries");
    }
    // A cap of Duration::MAX still saturates instead of wrapping.
    let unbounded = ItemExponentialFailureRateLimiter::<&str>::new(MS(1), Duration::MAX).unwrap();
    assert_eq!(unbounded.delay_for(u32::MAX), Duration::MAX);
    assert_eq!(unbounded.delay_for(10), MS(1024));
}

#[test]
fn exponential_counts_are_per_key() {
    let l = default_item_based_rate_limiter();
    assert_eq!(l.when(&"a"), MS(1));
    assert_eq!(l.when(&"a"), MS(2));
    assert_eq!(l.when(&"b"), MS(1));
    assert_eq!(l.num_requeues(&"a"), 2);
    assert_eq!(l.num_requeues(&"b"), 1);
    assert_eq!(l.num_requeues(&"c"), 0);
}

#[test]
fn exponential_rejects_base_over_cap() {
    let err = ItemExponentialFailureRateLimiter::<u8>::new(Duration::from_secs(2), Duration::from_secs(1))
        .unwrap_err();
    assert_eq!(
        err,
        LimiterError::BaseExceedsCap { base: Duration::from_secs(2), cap: Duration::from_secs(1) }
    );
    assert!(err.to_string().contains("2s") && err.to_string().contains("1s"), "{err}");
    // Equal is fine, and zero is fine (every delay is zero).
    assert!(ItemExponentialFailureRateLimiter::<u8>::new(MS(5), MS(5)).is_ok());
    let zero = ItemExponentialFailureRateLimiter::new(Duration::ZERO, Duration::ZERO).unwrap();
    assert_eq!(zero.when(&1u8), Duration::ZERO);
    let zero_base =
        ItemExponentialFailureRateLimiter::<u8>::new(Duration::ZERO, Duration::from_secs(1)).unwrap();
    assert_eq!(zero_base.delay_for(u32::MAX), Duration::ZERO, "0 × 2^n stays 0, even when 2^n overflows");
}

#[test]
fn fast_then_slow() {
    let l = ItemFastSlowRateLimiter::new(MS(5), Duration::from_secs(3), 3);
    let got: Vec<_> = (0..5).map(|_| l.when(&"k")).collect();
    assert_eq!(got, [MS(5), MS(5), MS(5), Duration::from_secs(3), Duration::from_secs(3)]);
    assert_eq!(l.num_requeues(&"k"), 5);
    l.forget(&"k");
    assert_eq!(l.when(&"k"), MS(5));
}

#[tokio::test(start_paused = true)]
async fn bucket_starts_full_then_paces_at_qps() {
    let l = BucketRateLimiter::new(10.0, 100).unwrap();
    for i in 0..100 {
        assert_eq!(RateLimiter::<u32>::when(&l, &i), Duration::ZERO, "token {i} of the burst");
    }
    // Reservations pile up 100 ms apart into the future.
    for n in 1..=5u64 {
        assert_eq!(RateLimiter::<u32>::when(&l, &0), MS(100 * n));
    }
    assert_eq!(RateLimiter::<u32>::num_requeues(&l, &0), 0);
    // After the debt (5 tokens = 500 ms) is repaid plus one token's time, a token is free again.
    tokio::time::advance(MS(600)).await;
    assert_eq!(RateLimiter::<u32>::when(&l, &0), Duration::ZERO);
    assert_eq!(RateLimiter::<u32>::when(&l, &0), MS(100));
}

#[tokio::test(start_paused = true)]
async fn bucket_refill_is_capped_at_burst() {
    let l = BucketRateLimiter::new(100.0, 3).unwrap();
    tokio::time::advance(Duration::from_secs(3600)).await;
    for _ in 0..3 {
        assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<u8>::when(&l, &0), MS(10));
}

#[test]
fn bucket_rejects_bad_settings() {
    for qps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let err = BucketRateLimiter::new(qps, 10).unwrap_err();
        assert!(matches!(err, LimiterError::InvalidQps { .. }), "{qps}: {err}");
        assert!(err.to_string().contains("qps"), "{err}");
    }
    assert_eq!(BucketRateLimiter::new(10.0, 0).unwrap_err(), LimiterError::ZeroBurst);
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_is_max_of_backoff_and_bucket() {
    let l = default_controller_rate_limiter::<u32>();
    assert_eq!(l.when(&1), MS(5));
    assert_eq!(l.when(&1), MS(10));
    // 98 more distinct keys use up the burst of 100; each is at its first failure (5 ms).
    for k in 2..100 {
        assert_eq!(l.when(&k), MS(5));
    }
    // The bucket is now empty: a new key waits for the bucket (100 ms), not its own 5 ms.
    assert_eq!(l.when(&500), MS(100));
    assert_eq!(l.num_requeues(&1), 2);
    l.forget(&1);
    assert_eq!(l.num_requeues(&1), 0);
}

#[test]
fn max_of_asks_every_limiter() {
    let a = std::sync::Arc::new(ItemFastSlowRateLimiter::new(MS(1), MS(1), 0));
    let b =
        std::sync::Arc::new(ItemExponentialFailureRateLimiter::new(MS(2), Duration::from_secs(1)).unwrap());
    let l = MaxOfRateLimiter::new(vec![Box::new(a.clone()), Box::new(b.clone())]);
    assert_eq!(l.when(&"k"), MS(2));
    assert_eq!(l.when(&"k"), MS(4));
    assert_eq!(a.num_requeues(&"k"), 2, "every limiter saw both retries");
    assert_eq!(b.num_requeues(&"k"), 2);
    l.forget(&"k");
    assert_eq!((a.num_requeues(&"k"), b.num_requeues(&"k")), (0, 0));
    let empty = MaxOfRateLimiter::<&str>::new(Vec::new());
    assert_eq!(empty.when(&"k"), Duration::ZERO);
}

#[test]
fn with_max_wait_caps_the_delay() {
    let inner = ItemExponentialFailureRateLimiter::new(MS(400), Duration::from_secs(10)).unwrap();
    let l = WithMaxWaitRateLimiter::new(inner, Duration::from_secs(1));
    assert_eq!(l.when(&"k"), MS(400));
    assert_eq!(l.when(&"k"), MS(800));
    assert_eq!(l.when(&"k"), Duration::from_secs(1));
    assert_eq!(l.num_requeues(&"k"), 3);
}
