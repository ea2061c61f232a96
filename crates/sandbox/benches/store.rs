//! Sandbox throughput, the baseline for the controller's convergence benchmark:
//!
//! * creates per second through a real `kube::Client` (serialization, routing, store), and
//!   straight into the store (the store's own cost);
//! * watch events per second delivered to 1 and to 10 open watches.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use sandbox::{Sandbox, SandboxConfig};
use serde_json::json;

const N: usize = 500;

fn cm(i: usize) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": format!("cm-{i}") }, "data": { "app": "x" } }))
        .unwrap()
}

/// Times N creates into a fresh sandbox, through a `kube::Client` or straight into the store.
async fn time_creates(through_client: bool) -> Duration {
    let sb = Sandbox::with_config(SandboxConfig::default());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let def = sandbox::resource::find("", "v1", "configmaps").unwrap();
    let start = Instant::now();
    for i in 0..N {
        if through_client {
            black_box(api.create(&PostParams::default(), &cm(i)).await.unwrap());
        } else {
            black_box(sb.store().create(def, "default", serde_json::to_value(cm(i)).unwrap(), None).unwrap());
        }
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut group = c.benchmark_group("sandbox");
    group.throughput(Throughput::Elements(N as u64));
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(10);

    for through_client in [true, false] {
        let name = if through_client { "create/kube_client" } else { "create/store" };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += time_creates(through_client).await;
                    }
                    total
                })
            });
        });
    }

    for watchers in [1usize, 10] {
        group.throughput(Throughput::Elements((N * watchers) as u64));
        group.bench_with_input(BenchmarkId::new("watch_events", watchers), &watchers, |b, &watchers| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let sb = Sandbox::with_config(SandboxConfig::default());
                        let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
                        let rv = sb.store().resource_version().to_string();
                        let mut streams = Vec::new();
                        for _ in 0..watchers {
                            streams.push(api.watch(&WatchParams::default(), &rv).await.unwrap().boxed());
                        }
                        let start = Instant::now();
                        let readers: Vec<_> = streams
                            .into_iter()
                            .map(|mut s| {
                                tokio::spawn(async move {
                                    let mut n = 0;
                                    while n < N {
                                        if let Some(Ok(WatchEvent::Added(_))) = s.next().await {
                                            n += 1;
                                        }
                                    }
                                })
                            })
                            .collect();
                        let def = sandbox::resource::find("", "v1", "configmaps").unwrap();
                        for i in 0..N {
                            sb.store()
                                .create(def, "default", serde_json::to_value(cm(i)).unwrap(), None)
                                .unwrap();
                            if i % 64 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                        for r in readers {
                            r.await.unwrap();
                        }
                        total += start.elapsed();
                    }
                    total
                })
            });
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
