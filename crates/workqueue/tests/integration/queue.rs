//! The basic queue's rules, one test per row of client-go's semantics table.

use std::time::Duration;

use kube_workqueue::Queue;

use crate::take;

#[tokio::test]
async fn fair_keys_come_out_in_first_add_order() {
    let q = Queue::new();
    for k in ["c", "a", "b", "a", "c"] {
        assert!(q.add(k));
    }
    assert_eq!(q.len(), 3);
    let mut order = Vec::new();
    while let Some(item) = q.try_get() {
        order.push(*item.key());
    }
    assert_eq!(order, ["c", "a", "b"]);
}

#[tokio::test]
async fn stingy_many_adds_before_processing_collapse_into_one() {
    let q = Queue::new();
    for _ in 0..100 {
        q.add("web");
    }
    assert_eq!(q.len(), 1);
    let item = take(&q).await;
    assert!(q.try_get().is_none(), "a single add remains after the merge");
    drop(item);
    assert!(q.is_empty(), "nothing was re-added, so nothing comes back");
}

#[tokio::test]
async fn a_held_key_is_never_handed_out_twice() {
    let q = Queue::new();
    q.add("web");
    let held = take(&q).await;
    q.add("web");
    q.add("web");
    assert_eq!(q.len(), 0, "re-added while held: deferred, not queued");
    assert!(q.try_get().is_none());
    assert_eq!(q.processing(), 1);
    drop(held);
    assert_eq!(q.len(), 1, "released: the re-add is queued once");
    let again = take(&q).await;
    assert_eq!(*again, "web");
    drop(again);
    assert!(q.is_empty());
    assert_eq!(q.processing(), 0);
}

#[tokio::test]
async fn a_key_not_re_added_is_processed_once() {
    let q = Queue::new();
    q.add(1u32);
    take(&q).await.done();
    assert!(q.try_get().is_none());
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let q: Queue<u32> = Queue::new();
    let waiter = tokio::spawn({
        let q = q.clone();
        async move { *take(&q).await }
    });
    tokio::task::yield_now().await;
    q.add(7);
    assert_eq!(waiter.await.unwrap(), 7);
}

#[tokio::test]
async fn dropping_a_pending_get_takes_no_key() {
    let q: Queue<u32> = Queue::new();
    let pending = tokio::time::timeout(Duration::from_millis(10), q.get()).await;
    assert!(pending.is_err());
    q.add(1);
    assert_eq!(*take(&q).await, 1);
}

#[tokio::test(start_paused = true)]
async fn a_woken_get_dropped_before_it_runs_passes_the_wake_up_on() {
    let q: Queue<u32> = Queue::new();
    let mut first = Box::pin(q.get());
    assert!(futures::poll!(first.as_mut()).is_pending(), "parked first: the oldest waiter");
    let second = tokio::spawn({
        let q = q.clone();
        async move { *q.get().await.expect("a key") }
    });
    tokio::task::yield_now().await; // `second` parks behind `first`
    assert!(q.add(7), "wakes the oldest waiter, `first`");
    drop(first); // which never runs: its wake-up must reach `second`
    // Paused time: if `second` is never woken, the runtime idles and the hour passes at once.
    let got = tokio::time::timeout(Duration::from_secs(3600), second).await.expect("the wake-up was lost");
    assert_eq!(got.unwrap(), 7);
}

#[tokio::test(start_paused = true)]
async fn a_parked_get_polled_again_is_not_counted_twice() {
    let q: Queue<u32> = Queue::new();
    let mut get = Box::pin(q.get());
    for _ in 0..3 {
        assert!(futures::poll!(get.as_mut()).is_pending());
    }
    let other = tokio::spawn({
        let q = q.clone();
        async move { *q.get().await.expect("a key") }
    });
    tokio::task::yield_now().await;
    // Two adds, two parked gets: each gets one, whatever the repeated polls left behind.
    q.add(1);
    q.add(2);
    let mine = *get.await.expect("a key");
    let theirs = tokio::time::timeout(Duration::from_secs(3600), other).await.expect("woken").unwrap();
    assert_eq!((mine, theirs), (1, 2));
}

#[tokio::test]
async fn a_finished_key_added_again_is_queued_behind_keys_added_before_it() {
    let q = Queue::new();
    q.add("a");
    take(&q).await.done(); // "a" finished
    q.add("b");
    q.add("a");
    q.add("a"); // merged
    assert_eq!(q.len(), 2);
    assert_eq!(*take(&q).await, "b");
    assert_eq!(*take(&q).await, "a");
    assert!(q.try_get().is_none());
}

#[tokio::test]
async fn add_after_shutdown_is_refused_and_reported() {
    let q = Queue::new();
    q.add("before");
    q.shut_down();
    assert!(q.is_shutting_down());
    assert!(!q.add("after"), "add reports the refusal");
    // The key accepted before shutdown is still handed out, then get ends.
    assert_eq!(*take(&q).await, "before");
    assert!(q.get().await.is_none());
}

#[tokio::test]
async fn shutdown_wakes_every_waiting_worker() {
    let q: Queue<u32> = Queue::new();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.is_none() })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shut_down();
    for w in workers {
        assert!(tokio::time::timeout(Duration::from_secs(5), w).await.unwrap().unwrap());
    }
}

#[tokio::test]
async fn a_key_re_added_while_held_is_still_processed_during_shutdown() {
    let q = Queue::new();
    q.add("web");
    let held = take(&q).await;
    q.add("web");
    q.shut_down();
    drop(held);
    assert_eq!(*take(&q).await, "web", "the re-add made before shutdown is not lost");
    assert!(q.get().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_with_drain_waits_for_busy_workers_and_the_backlog() {
    let q = Queue::new();
    for k in 0..20u32 {
        q.add(k);
    }
    let processed = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (q, processed) = (q.clone(), processed.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    processed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    drop(item);
                }
            })
        })
        .collect();
    // Let the workers take their first keys, so the drain starts with work in flight.
    while q.processing() == 0 {
        tokio::task::yield_now().await;
    }
    tokio::time::timeout(Duration::from_secs(10), q.shut_down_with_drain()).await.expect("drain finished");
    assert_eq!(processed.load(std::sync::atomic::Ordering::SeqCst), 20, "every accepted key was processed");
    assert_eq!(q.processing(), 0);
    assert!(q.is_empty());
    for w in workers {
        w.await.unwrap();
    }
}

#[tokio::test]
async fn shut_down_ends_a_drain_that_waits() {
    let q = Queue::new();
    q.add("stuck");
    let held = take(&q).await;
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    tokio::task::yield_now().await;
    assert!(!drain.is_finished(), "a held key keeps the drain waiting");
    q.shut_down();
    tokio::time::timeout(Duration::from_secs(5), drain).await.expect("drain cancelled").unwrap();
    drop(held);
}

#[tokio::test]
async fn drain_of_an_idle_queue_returns_at_once() {
    let q: Queue<u8> = Queue::new();
    tokio::time::timeout(Duration::from_secs(1), q.shut_down_with_drain()).await.unwrap();
}

/// A producer task that adds in a loop without ever yielding does not hold a parked worker
/// behind it: the worker is woken where the runtime's other thread can run it, and takes keys
/// while the loop goes on (tokio would otherwise keep it in the producer thread's LIFO slot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_worker_runs_beside_a_producer_that_never_yields() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    let q: Queue<u64> = Queue::new();
    let taken = Arc::new(AtomicU64::new(0));
    let worker = tokio::spawn({
        let (q, taken) = (q.clone(), Arc::clone(&taken));
        async move {
            while let Some(item) = q.get().await {
                taken.fetch_add(1, Ordering::SeqCst);
                drop(item);
            }
        }
    });
    // Let the worker find the queue empty and park.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let producer = tokio::spawn({
        let (q, taken) = (q.clone(), Arc::clone(&taken));
        async move {
            // A guard against a hang, not a timing: without the fix the worker waits for the loop to end.
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut added = 0;
            // Never awaits: adds (up to a bound), then spins, until the worker has taken a key.
            while taken.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                if added < 10_000 {
                    q.add(added);
                    added += 1;
                }
                std::hint::spin_loop();
            }
            taken.load(Ordering::SeqCst)
        }
    });
    assert!(producer.await.unwrap() > 0, "the worker took nothing while the producer ran");
    q.shut_down();
    worker.await.unwrap();
}
