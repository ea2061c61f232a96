//! The rate-limiting layer: retries wait for the limiter, success forgets.

use std::time::Duration;

use kube_workqueue::{ItemExponentialFailureRateLimiter, RateLimitingQueue, default_controller_rate_limiter};
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn retries_back_off_exponentially_until_forgotten() {
    let q = RateLimitingQueue::new(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(100), Duration::from_secs(60)).unwrap(),
    );
    q.add("web");
    let mut waits = Vec::new();
    let mut item = q.get().await.unwrap();
    for _ in 0..4 {
        // The reconcile fails: retry it, release it, and time the wait for the retry.
        let before = Instant::now();
        q.add_rate_limited(*item.key());
        drop(item);
        item = q.get().await.unwrap();
        waits.push(before.elapsed());
    }
    assert_eq!(waits, [100, 200, 400, 800].map(Duration::from_millis), "each failure doubles the wait");
    assert_eq!(q.num_requeues(&"web"), 4);
    q.forget(&"web");
    assert_eq!(q.num_requeues(&"web"), 0);
}

#[tokio::test(start_paused = true)]
async fn forget_does_not_remove_or_release_the_key() {
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    q.add("web");
    q.forget(&"web");
    assert_eq!(q.len(), 1, "forget only clears the failure count");
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_after_shutdown_is_refused_without_counting() {
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    q.shut_down();
    assert!(!q.add_rate_limited("web"));
    assert_eq!(q.num_requeues(&"web"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_failing_key_does_not_delay_others() {
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    for _ in 0..15 {
        q.add_rate_limited("bad"); // 15 failures: its next retry is 80 s away at most
    }
    q.add("good");
    let start = Instant::now();
    let item = q.get().await.unwrap();
    assert_eq!(*item, "good");
    assert_eq!(start.elapsed(), Duration::ZERO);
}
