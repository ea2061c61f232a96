//! Many producers and workers on a multi-threaded runtime: no key is ever held by two workers,
//! and every key is processed after its last add.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kube_workqueue::Queue;
use parking_lot::Mutex;

const KEYS: u64 = 200;
const PRODUCERS: u64 = 8;
const ADDS_PER_PRODUCER: u64 = 20_000;
const WORKERS: usize = 8;

#[derive(Default)]
struct KeyRecord {
    busy: AtomicBool,
    /// Version of the latest add (set before the add) and of the latest processing start.
    added: AtomicU64,
    processed_from: AtomicU64,
    times: AtomicU64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_key_is_processed_concurrently_and_no_add_is_lost() {
    exclusive_and_complete(KEYS, ADDS_PER_PRODUCER).await;
}

/// Enough distinct keys that finished ones are retired, swept out of the table in batches and
/// revived by re-adds while other workers hold and release keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thousands_of_keys_retired_swept_and_revived_stay_exclusive_and_complete() {
    exclusive_and_complete(20_000, 20_000).await;
}

/// `PRODUCERS` producers add `adds_per_producer` keys each (every one of `keys` at least once);
/// `WORKERS` workers check that no key is held twice and that each key's last run saw its last add.
async fn exclusive_and_complete(keys: u64, adds_per_producer: u64) {
    let q: Queue<u64> = Queue::new();
    let records: Arc<Vec<KeyRecord>> = Arc::new((0..keys).map(|_| KeyRecord::default()).collect());
    let version = Arc::new(AtomicU64::new(1));
    let violations = Arc::new(Mutex::new(Vec::new()));

    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (q, records, violations) = (q.clone(), records.clone(), violations.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    let r = &records[*item.key() as usize];
                    if r.busy.swap(true, Ordering::SeqCst) {
                        violations.lock().push(*item.key());
                    }
                    // What this processing run "sees": every add made before it started.
                    r.processed_from.fetch_max(r.added.load(Ordering::SeqCst), Ordering::SeqCst);
                    r.times.fetch_add(1, Ordering::Relaxed);
                    if r.times.load(Ordering::Relaxed) % 7 == 0 {
                        tokio::task::yield_now().await;
                    }
                    r.busy.store(false, Ordering::SeqCst);
                    drop(item);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (q, records, version) = (q.clone(), records.clone(), version.clone());
            tokio::spawn(async move {
                for i in 0..adds_per_producer {
                    let key = (p * 7919 + i * 31) % keys;
                    let v = version.fetch_add(1, Ordering::SeqCst);
                    records[key as usize].added.fetch_max(v, Ordering::SeqCst);
                    assert!(q.add(key));
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    tokio::time::timeout(std::time::Duration::from_secs(60), q.shut_down_with_drain())
        .await
        .expect("drained");
    for w in workers {
        w.await.unwrap();
    }

    assert!(violations.lock().is_empty(), "keys held by two workers at once: {:?}", violations.lock());
    let mut total = 0;
    let mut stale = HashMap::new();
    for (key, r) in records.iter().enumerate() {
        let times = r.times.load(Ordering::SeqCst);
        total += times;
        // Every key's last processing started after its last add: no change was missed.
        if r.processed_from.load(Ordering::SeqCst) != r.added.load(Ordering::SeqCst) {
            stale.insert(key, (r.added.load(Ordering::SeqCst), r.processed_from.load(Ordering::SeqCst)));
        }
        assert!(times >= 1, "key {key} never processed");
    }
    assert!(stale.is_empty(), "keys whose last add was never processed: {stale:?}");
    assert!(total <= PRODUCERS * adds_per_producer, "never more runs than adds ({total})");
    assert_eq!(q.processing(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn distinct_keys_are_each_processed_exactly_once() {
    let q: Queue<u64> = Queue::new();
    let seen = Arc::new(Mutex::new(HashMap::<u64, u32>::new()));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (q, seen) = (q.clone(), seen.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    *seen.lock().entry(*item.key()).or_default() += 1;
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                for i in 0..5_000 {
                    q.add(p * 1_000_000 + i);
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    q.shut_down_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
    let seen = seen.lock();
    assert_eq!(seen.len(), (PRODUCERS * 5_000) as usize);
    assert!(seen.values().all(|&n| n == 1), "a distinct key added once is processed once");
}

/// Regression: a worker that found the queue empty, and then saw the shutdown flag, used to return
/// `None` even though keys had been added in between, leaving them queued with nobody to take them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_added_right_before_shutdown_are_not_stranded() {
    for round in 0..300 {
        let q: Queue<u64> = Queue::new();
        let worker = tokio::spawn({
            let q = q.clone();
            async move { while q.get().await.is_some() {} }
        });
        for i in 0..2_000u64 {
            q.add(i % 16);
        }
        let drained =
            tokio::time::timeout(std::time::Duration::from_secs(10), q.shut_down_with_drain()).await;
        assert!(drained.is_ok(), "round {round}: drain never finished: {q:?}");
        worker.await.unwrap();
        assert!(q.is_empty(), "round {round}: keys stranded: {q:?}");
    }
}

/// One worker loops on `get`; the others, each round, park a `get`, leave it unpolled for a
/// moment and then drop it, as a worker that turned to something else would. Each round's first
/// key goes to the looping worker (the oldest waiter), which then parks again behind the others;
/// the second key's wake-up goes to a parked `get` that is dropped without running, and must be
/// passed on, from one dropped `get` to the next, until it reaches the looping worker. If a
/// dropped `get` kept it, the key would stay queued with that worker parked and the round would
/// never complete. The wait is for progress, before any shutdown (which would wake everyone and
/// hide the loss).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wake_up_given_to_dropped_gets_reaches_a_worker() {
    const ROUNDS: u64 = 200;
    const LEAVERS: u64 = WORKERS as u64 - 1;
    let q: Queue<u64> = Queue::new();
    let processed = Arc::new(AtomicU64::new(0));
    let parked = Arc::new(AtomicU64::new(0));
    let progress = Arc::new(tokio::sync::Notify::new());
    let (next_round, rounds) = tokio::sync::watch::channel(0u64);
    let worker = tokio::spawn({
        let (q, processed, progress) = (q.clone(), processed.clone(), progress.clone());
        async move {
            while let Some(item) = q.get().await {
                drop(item);
                processed.fetch_add(1, Ordering::SeqCst);
                progress.notify_one();
            }
        }
    });
    let leavers: Vec<_> = (0..LEAVERS)
        .map(|_| {
            let (q, parked) = (q.clone(), parked.clone());
            let mut rounds = rounds.clone();
            tokio::spawn(async move {
                while rounds.changed().await.is_ok() {
                    let mut get = std::pin::pin!(q.get());
                    assert!(futures::poll!(get.as_mut()).is_pending(), "a round starts empty");
                    parked.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_micros(200)).await;
                } // each round's `get` dropped unpolled, woken or not
            })
        })
        .collect();
    let wait_for = |n: u64| {
        let (processed, progress) = (processed.clone(), progress.clone());
        async move {
            loop {
                let notified = progress.notified();
                if processed.load(Ordering::SeqCst) >= n {
                    return;
                }
                // A guard against a hang only: a lost wake-up stalls a round for good.
                tokio::time::timeout(std::time::Duration::from_secs(60), notified)
                    .await
                    .unwrap_or_else(|_| panic!("stalled before {n} keys were processed"));
            }
        }
    };
    for r in 0..ROUNDS {
        next_round.send_replace(r);
        while parked.load(Ordering::SeqCst) < (r + 1) * LEAVERS {
            tokio::task::yield_now().await;
        }
        assert!(q.add(2 * r));
        wait_for(2 * r + 1).await;
        for _ in 0..16 {
            tokio::task::yield_now().await; // the worker parks again, behind the others
        }
        assert!(q.add(2 * r + 1));
        wait_for(2 * r + 2).await;
    }
    q.shut_down();
    drop(next_round);
    worker.await.unwrap();
    for l in leavers {
        l.await.unwrap();
    }
    assert_eq!(processed.load(Ordering::SeqCst), 2 * ROUNDS);
}
