//! Convergence of N ConfigMaps on an in-process sandbox: this controller (cache reads) against a baseline
//! that does what the seed's reconcile does (GET the ConfigMap and the Deployment from the API
//! server on every reconcile), measured in the same run.
//!
//! For N = 1,000 and 10,000 (override with `CONVERGENCE_SIZES=100,1000`), each variant runs in its
//! own child process (so peak memory is its own): N annotated ConfigMaps are seeded, the
//! controller starts, and the bench times
//!
//! 1. **create**: until all N Deployments exist with 3 replicas;
//! 2. **scale**: every annotation is changed to 5, until all N Deployments have 5 replicas;
//!
//! and counts API requests per ConfigMap by verb (watches and Events excluded) and the child's
//! peak resident memory (which includes the in-process sandbox holding the objects).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use counter_controller::Controller;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_informer::{Config as InformerConfig, EnqueueKey, Informer, ObjectKey};
use kube_manager::{Options, Scope};
use kube_sandbox::builtin_resource;
use kube_sandbox::{Rollout, Sandbox, SandboxConfig};
use kube_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ANNOTATION: &str = "counter.example.com/desired";

fn configmap(i: usize) -> Value {
    json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": format!("cm-{i:05}"), "namespace": "default", "annotations": { ANNOTATION: "3" } } })
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The seed's reconcile, ported as written: GET the ConfigMap, GET the Deployment, write.
async fn seed_reconcile(client: &kube::Client, key: &ObjectKey) -> Result<(), kube::Error> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), key.namespace());
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), key.namespace());
    let Some(cm) = cms.get_opt(key.name()).await? else {
        return deploys.delete(key.name(), &Default::default()).await.map(drop).or_else(|e| match e {
            kube::Error::Api(s) if s.code == 404 => Ok(()),
            e => Err(e),
        });
    };
    let Some(raw) = cm.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION)) else { return Ok(()) };
    let Ok(desired) = raw.trim().parse::<i32>() else { return Ok(()) };
    match deploys.get_opt(key.name()).await? {
        None => {
            deploys
                .create(&PostParams::default(), &counter_controller::controller::new_deployment(&cm, desired))
                .await?;
        }
        Some(d) if d.spec.replicas == Some(desired) => {}
        Some(mut d) => {
            d.spec.replicas = Some(desired);
            deploys.replace(key.name(), &PostParams::default(), &d).await?;
        }
    }
    Ok(())
}

/// The seed's controller: a ConfigMap informer, the queue, 2 workers, `seed_reconcile`.
async fn run_seed_controller(client: kube::Client, stop: CancellationToken) {
    let informer =
        Informer::new(Api::<ConfigMap>::namespaced(client.clone(), "default"), InformerConfig::default());
    let queue = RateLimitingQueue::new(default_controller_rate_limiter());
    let q = queue.clone();
    informer.add_handler(Arc::new(EnqueueKey::new(move |k| {
        q.add(k);
    })));
    let i = informer.clone();
    let s = stop.clone();
    tokio::spawn(async move { i.run(s.cancelled_owned()).await });
    informer.wait_for_cache_sync(stop.cancelled()).await;
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (queue, client, stop) = (queue.clone(), client.clone(), stop.clone());
            tokio::spawn(async move {
                loop {
                    let item = tokio::select! {
                        () = stop.cancelled() => return,
                        item = queue.get() => match item { Some(i) => i, None => return },
                    };
                    match seed_reconcile(&client, item.key()).await {
                        Ok(()) => queue.forget(item.key()),
                        Err(_) => {
                            queue.add_rate_limited(item.key().clone());
                        }
                    }
                }
            })
        })
        .collect();
    stop.cancelled().await;
    queue.shut_down();
    for w in workers {
        let _ = w.await;
    }
}

async fn child(variant: &str, n: usize) -> Value {
    let sb = Sandbox::with_config(SandboxConfig { rollout: Rollout::Instant, ..SandboxConfig::bare() });
    let cm_def = builtin_resource("", "v1", "configmaps").unwrap();
    for i in 0..n {
        sb.store().create(cm_def, "default", configmap(i), None).unwrap();
    }
    let stop = CancellationToken::new();
    let mut view = crate::feed::Deployments::follow(&sb);
    let start = Instant::now();
    let task = if variant == "cache" {
        let mut registry = prometheus_client::registry::Registry::default();
        let options = Options {
            scope: Scope::Namespace("default".into()),
            workers: 2,
            resync: Duration::from_secs(30),
            ..Options::default()
        };
        let controller = Controller::new(sb.client(), options, &mut registry);
        tokio::spawn({
            let s = stop.clone();
            async move {
                controller.run(s.cancelled_owned()).await;
            }
        })
    } else {
        tokio::spawn(run_seed_controller(sb.client(), stop.clone()))
    };
    view.until(Duration::from_secs(600), crate::feed::Deployments::all(n, 3)).await;
    let create = start.elapsed();

    let start = Instant::now();
    for i in 0..n {
        let name = format!("cm-{i:05}");
        sb.store()
            .merge(cm_def, "default", &name, &json!({ "metadata": { "annotations": { ANNOTATION: "5" } } }))
            .unwrap();
    }
    view.until(Duration::from_secs(600), crate::feed::Deployments::all(n, 5)).await;
    let scale = start.elapsed();
    stop.cancel();
    let _ = task.await;

    let mut verbs = std::collections::BTreeMap::<String, usize>::new();
    for r in sb.requests().all() {
        if r.verb != "watch" && r.resource != "events" {
            let failed = if r.code >= 300 { format!(" ({})", r.code) } else { String::new() };
            *verbs.entry(format!("{} {}{failed}", r.verb, r.resource)).or_default() += 1;
        }
    }
    let events = sb.requests().all().iter().filter(|r| r.resource == "events").count();
    json!({ "variant": variant, "n": n, "create_s": create.as_secs_f64(), "scale_s": scale.as_secs_f64(),
            "verbs": verbs, "events": events, "peak_rss_mib": peak_rss_kib() as f64 / 1024.0 })
}

/// Runs the seed comparison (or, with `--child`, one variant of it).
pub fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        let (variant, n) = (args[pos + 1].clone(), args[pos + 2].parse().unwrap());
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        println!("{}", rt.block_on(child(&variant, n)));
        return;
    }
    let sizes: Vec<usize> = std::env::var("CONVERGENCE_SIZES")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let exe = std::env::current_exe().unwrap();
    println!(
        "convergence on the sandbox: this controller (cache reads) vs the seed's reconcile (API GETs), same run"
    );
    for n in sizes {
        let mut results = Vec::new();
        for variant in ["seed", "cache"] {
            let out = Command::new(&exe)
                .env("CONVERGENCE_MODE", "seed")
                .args(["--child", variant, &n.to_string()])
                .output()
                .expect("child runs");
            let line = String::from_utf8_lossy(&out.stdout);
            let v: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| {
                panic!("child {variant} {n}: {e}: {line} {}", String::from_utf8_lossy(&out.stderr))
            });
            results.push(v);
        }
        println!("\nN = {n}");
        println!(
            "{:<8} {:>10} {:>10} {:>12}   requests per ConfigMap (watch and events excluded)",
            "variant", "create s", "scale s", "peak RSS MiB"
        );
        for v in &results {
            let per: Vec<String> = v["verbs"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, c)| format!("{k}={:.2}", c.as_f64().unwrap_or(0.0) / n as f64))
                .collect();
            println!(
                "{:<8} {:>10.2} {:>10.2} {:>12.1} {:>10.2}   {}",
                v["variant"].as_str().unwrap(),
                v["create_s"].as_f64().unwrap(),
                v["scale_s"].as_f64().unwrap(),
                v["peak_rss_mib"].as_f64().unwrap(),
                v["events"].as_f64().unwrap_or(0.0) / n as f64,
                per.join(" ")
            );
        }
        let (s, c) = (&results[0], &results[1]);
        let total = |v: &Value| {
            v["verbs"].as_object().unwrap().values().map(|x| x.as_f64().unwrap_or(0.0)).sum::<f64>()
        };
        println!(
            "ratios cache/seed: create time {:.2}, scale time {:.2}, API requests {:.2}, peak RSS {:.2}",
            c["create_s"].as_f64().unwrap() / s["create_s"].as_f64().unwrap(),
            c["scale_s"].as_f64().unwrap() / s["scale_s"].as_f64().unwrap(),
            total(c) / total(s),
            c["peak_rss_mib"].as_f64().unwrap() / s["peak_rss_mib"].as_f64().unwrap(),
        );
    }
}
