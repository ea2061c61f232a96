//! add → get → done throughput of the work queue against a plain tokio mpsc channel, measured in
//! the same run.
//!
//! Each iteration: W workers start, one producer adds N keys, the queue is drained, the workers
//! exit. The channel baseline does the same with an unbounded mpsc channel whose receiver the W
//! workers share behind a `tokio::sync::Mutex` (the usual way to fan one channel out to several
//! consumers). The channel neither deduplicates nor tracks what is being processed, so it is the
//! floor any queue with those guarantees pays for.
//!
//! Key patterns: `distinct` (N different keys) and `duplicates` (N adds over 16 keys, which the
//! queue merges and the channel delivers one by one).
//!
//! At the end a table prints each case's throughput and its ratio to the channel's.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use kube_workqueue::Queue;

const N: u64 = 10_000;
const DUPLICATE_KEYS: u64 = 16;
const WORKERS: [usize; 3] = [1, 2, 8];

/// Nanoseconds per add, per (case, impl), from every measured iteration batch.
static SAMPLES: Mutex<BTreeMap<(String, &'static str), Vec<f64>>> = Mutex::new(BTreeMap::new());

fn key(pattern: &str, i: u64) -> u64 {
    if pattern == "distinct" { i } else { i % DUPLICATE_KEYS }
}

async fn run_queue(workers: usize, pattern: &'static str) {
    let q: Queue<u64> = Queue::new();
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    black_box(item.key());
                }
            })
        })
        .collect();
    for i in 0..N {
        q.add(key(pattern, i));
    }
    q.shut_down_with_drain().await;
    for h in handles {
        h.await.unwrap();
    }
}

async fn run_channel(workers: usize, pattern: &'static str) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let rx = rx.clone();
            tokio::spawn(async move {
                loop {
                    let next = rx.lock().await.recv().await;
                    match next {
                        Some(k) => {
                            black_box(k);
                        }
                        None => break,
                    }
                }
            })
        })
        .collect();
    for i in 0..N {
        tx.send(key(pattern, i)).unwrap();
    }
    drop(tx);
    for h in handles {
        h.await.unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut group = c.benchmark_group("add_get_done");
    group.throughput(Throughput::Elements(N));
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    for pattern in ["distinct", "duplicates"] {
        for workers in WORKERS {
            let case = format!("{pattern}/{workers}w");
            for imp in ["workqueue", "mpsc"] {
                group.bench_with_input(BenchmarkId::new(imp, &case), &workers, |b, &workers| {
                    b.iter_custom(|iters| {
                        let start = Instant::now();
                        for _ in 0..iters {
                            rt.block_on(async {
                                if imp == "workqueue" {
                                    run_queue(workers, pattern).await;
                                } else {
                                    run_channel(workers, pattern).await;
                                }
                            });
                        }
                        let elapsed = start.elapsed();
                        let per_add = elapsed.as_nanos() as f64 / (iters * N) as f64;
                        SAMPLES.lock().unwrap().entry((case.clone(), imp)).or_default().push(per_add);
                        elapsed
                    });
                });
            }
        }
    }
    group.finish();
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn print_ratios() {
    let mut samples = SAMPLES.lock().unwrap();
    if samples.is_empty() {
        return;
    }
    println!("\nthroughput (median, million adds/s) and ratio to the mpsc channel, same run:");
    println!("{:<18} {:>10} {:>10} {:>8}", "case", "workqueue", "mpsc", "ratio");
    let cases: Vec<String> = samples.keys().map(|(c, _)| c.clone()).collect();
    let mut done = Vec::new();
    for case in cases {
        if done.contains(&case) {
            continue;
        }
        done.push(case.clone());
        let (Some(q), Some(ch)) = (
            samples.get_mut(&(case.clone(), "workqueue")).map(|v| median(v)),
            samples.get_mut(&(case.clone(), "mpsc")).map(|v| median(v)),
        ) else {
            continue;
        };
        let (q_rate, ch_rate) = (1e3 / q, 1e3 / ch);
        println!("{case:<18} {q_rate:>10.2} {ch_rate:>10.2} {:>7.2}x", q_rate / ch_rate);
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    print_ratios();
}
