//! The delaying layer, on paused Tokio time.

use std::time::Duration;

use kube_workqueue::DelayingQueue;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_key_arrives_after_its_delay() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("web", Duration::from_millis(250));
    assert_eq!(q.len(), 0);
    assert_eq!(q.waiting(), 1);
    let item = q.get().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(250));
    assert_eq!(*item, "web");
    assert_eq!(q.waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let q = DelayingQueue::new();
    q.add_after("web", Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_earliest_deadline_wins() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("web", Duration::from_secs(10));
    q.add_after("web", Duration::from_secs(1));
    q.add_after("web", Duration::from_secs(5)); // later than the current deadline: ignored
    assert_eq!(q.waiting(), 1);
    let item = q.get().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    drop(item);
    // The superseded 10 s entry does not fire a second time.
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn keys_fire_in_deadline_order() {
    let q = DelayingQueue::new();
    q.add_after("c", Duration::from_millis(30));
    q.add_after("a", Duration::from_millis(10));
    q.add_after("b", Duration::from_millis(20));
    let mut order = Vec::new();
    for _ in 0..3 {
        order.push(*q.get().await.unwrap());
    }
    assert_eq!(order, ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_key_merges_with_a_queued_copy() {
    let q = DelayingQueue::new();
    q.add("web");
    q.add_after("web", Duration::from_millis(5));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(q.len(), 1, "fired while still queued: merged");
}

#[tokio::test(start_paused = true)]
async fn a_huge_delay_is_clamped_not_a_panic() {
    let q = DelayingQueue::new();
    assert!(q.add_after("forever", Duration::MAX));
    assert!(q.add_after("forever", Duration::from_secs(u64::MAX)));
    assert_eq!(q.waiting(), 1);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(q.len(), 0);
    // A shorter delay still takes over.
    q.add_after("forever", Duration::from_secs(1));
    let _item = q.get().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_waiting_keys_and_refuses_new_ones() {
    let q = DelayingQueue::new();
    q.add_after("later", Duration::from_secs(1));
    q.shut_down();
    assert!(!q.add_after("refused", Duration::from_secs(1)));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(q.get().await.is_none(), "waiting keys are dropped at shutdown");
    assert_eq!(q.waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_loop_stops_when_every_handle_is_dropped() {
    let q = DelayingQueue::<u32>::new();
    q.add_after(1, Duration::from_secs(60));
    drop(q);
    // Nothing to assert but that the runtime is not kept busy: the loop task ends.
    tokio::time::sleep(Duration::from_secs(120)).await;
}
