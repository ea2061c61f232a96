//! What a controller's queue does, as fast as it can: one producer adds `namespace/name` String
//! keys, W workers `get → forget → done` them, all in one process — next to a tokio mpsc baseline
//! doing the same hand-off in the same run.
//!
//! ```text
//! cargo run --release -p kube-workqueue --example throughput -- --workers 2 --keys 1000000 --rounds 1 --dups 1
//! ```
//!
//! * `--keys K`: distinct keys (`ns-<i % 100>/cm-<i>`), built before the clock starts;
//! * `--rounds R`: the producer adds every key R times, in order;
//! * `--dups D`: each add is repeated D times in a row (merged by the queue);
//! * `--workers W`: concurrent workers (tokio tasks on a runtime with one thread per core); the
//!   producer is a task too, as a controller's informer is;
//! * `--mpsc 0`: leaves out the channel run, so that the whole process, timed from outside, is
//!   the queue's run (and the keys' building).
//!
//! One summary line per implementation: keys processed, wall time, and items/s, where items are
//! the producer's adds (K × R × D), the unit client-go's benchmark reports. The queue is the
//! real one a controller uses: rate-limiting (client-go's default limiter) over delaying over the
//! basic queue, without metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kube_workqueue::{RateLimitingQueue, default_controller_rate_limiter};

struct Args {
    workers: usize,
    keys: usize,
    rounds: usize,
    dups: usize,
    mpsc: bool,
}

fn parse() -> Args {
    let mut a = Args { workers: 2, keys: 1_000_000, rounds: 1, dups: 1, mpsc: true };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        let n: usize = value.parse().unwrap_or_else(|_| panic!("{flag} {value:?} is not a whole number"));
        match flag.as_str() {
            "--workers" => a.workers = n.max(1),
            "--keys" => a.keys = n.max(1),
            "--rounds" => a.rounds = n.max(1),
            "--dups" => a.dups = n.max(1),
            "--mpsc" => a.mpsc = n != 0,
            other => panic!("unknown flag {other} (use --workers, --keys, --rounds, --dups, --mpsc)"),
        }
    }
    a
}

/// The keys, one allocation each (as Go's `fmt.Sprintf` makes them; `format!` would reallocate
/// each key once as it grows), in a vector the producer shares without copying.
fn keys(n: usize) -> Arc<Vec<String>> {
    use std::fmt::Write;
    let keys = (0..n)
        .map(|i| {
            let mut k = String::with_capacity(24);
            write!(k, "ns-{}/cm-{i:07}", i % 100).expect("a String takes any write");
            k
        })
        .collect();
    Arc::new(keys)
}

async fn run_queue(a: &Args, keys: &Arc<Vec<String>>) -> (u64, Duration) {
    let q: RateLimitingQueue<String> = RateLimitingQueue::new(default_controller_rate_limiter());
    let processed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..a.workers)
        .map(|_| {
            let (q, processed) = (q.clone(), Arc::clone(&processed));
            tokio::spawn(async move {
                let mut n = 0;
                while let Some(item) = q.get().await {
                    q.forget(item.key());
                    n += 1;
                    drop(item);
                }
                processed.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    // The producer is a task, as an informer's event handler is.
    let producer = tokio::spawn({
        let (q, keys, rounds, dups) = (q.clone(), Arc::clone(keys), a.rounds, a.dups);
        async move {
            for _ in 0..rounds {
                for k in keys.iter() {
                    for _ in 0..dups {
                        q.add(k.clone());
                    }
                }
                tokio::task::yield_now().await;
            }
        }
    });
    producer.await.unwrap();
    q.shut_down_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
    (processed.load(Ordering::Relaxed), start.elapsed())
}

async fn run_channel(a: &Args, keys: &Arc<Vec<String>>) -> (u64, Duration) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let processed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..a.workers)
        .map(|_| {
            let (rx, processed) = (Arc::clone(&rx), Arc::clone(&processed));
            tokio::spawn(async move {
                let mut n = 0;
                loop {
                    let got = rx.lock().await.recv().await;
                    let Some(key) = got else { break };
                    std::hint::black_box(&key);
                    n += 1;
                }
                processed.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let producer = tokio::spawn({
        let (keys, rounds, dups) = (Arc::clone(keys), a.rounds, a.dups);
        async move {
            for _ in 0..rounds {
                for k in keys.iter() {
                    for _ in 0..dups {
                        tx.send(k.clone()).unwrap();
                    }
                }
                tokio::task::yield_now().await;
            }
        }
    });
    producer.await.unwrap();
    for w in workers {
        w.await.unwrap();
    }
    (processed.load(Ordering::Relaxed), start.elapsed())
}

#[tokio::main]
async fn main() {
    let a = parse();
    let keys = keys(a.keys);
    let adds = (a.keys * a.rounds * a.dups) as f64;
    println!("workers {} keys {} rounds {} dups {} ({} adds)", a.workers, a.keys, a.rounds, a.dups, adds);
    let (qn, qt) = run_queue(&a, &keys).await;
    let rate = |t: Duration| adds / t.as_secs_f64() / 1e6;
    println!("workqueue:    processed {qn:>9} wall {:>8.3}s  {:>6.3} M items/s", qt.as_secs_f64(), rate(qt));
    if !a.mpsc {
        return;
    }
    let (cn, ct) = run_channel(&a, &keys).await;
    println!("tokio mpsc:   processed {cn:>9} wall {:>8.3}s  {:>6.3} M items/s", ct.as_secs_f64(), rate(ct));
    println!("ratio workqueue/mpsc: {:.2}", ct.as_secs_f64() / qt.as_secs_f64());
}
