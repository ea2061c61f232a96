//! The scale run (`CONVERGENCE_MODE=scale`): a cluster where most ConfigMaps are not the
//! controller's. `TOTAL` ConfigMaps (default 50,000) shaped as in a real namespace — about 1 KiB
//! of data each, every fiftieth 16 KiB, two labels — of which `ANNOTATED` (default 5,000, spread
//! evenly) carry `counter.example.com/desired=3`, already in the sandbox when the controller
//! binary starts in its own process; timed until every annotated one has its Deployment at 3.
//!
//! Printed per run: start → first Deployment write, start → all converged, the peak RSS while
//! the first list was read (VmHWM when the first Deployment appears: the writes start only once
//! the caches have synced), the peak over the whole run, the RSS settled 3 s after convergence,
//! and the exercise's `data:` log lines (one per annotated ConfigMap). Next to them, measured
//! in the same run on the same workload from a process of their own (`writer.rs`):
//! * a bare **paginated list** of every ConfigMap (pages of 500, as the watcher's, each decoded
//!   into k8s-openapi's `ConfigMap` and dropped), and a bare **streaming list**;
//! * the **raw writer**'s `ANNOTATED` creates at the controller's concurrency.
//!
//! The goals, as ratios to those: first write ≤ list + 0.5 s; all converged ≤ list +
//! 1.25 × raw creates; peak during the list ≤ settled + 10 MiB. A run with only the annotated
//! ConfigMaps (`ANNOTATED` of `ANNOTATED`) gives what each unannotated one costs: the difference
//! of the settled RSS over their number.
//!
//! Twice: the workload in one namespace (`--namespace=default`), then spread over 100 namespaces
//! (`--all-namespaces`); `SCALE_NAMESPACES=1,100` chooses. `SCALE_WORKERS=16` (default: 16, as
//! in the table). `SCALE_BEFORE=path` also runs an older build of the binary (an A/B:
//! "before" rows). `SCALE_OURS_ONLY=0` skips the annotated-only runs. The rollout plays the
//! cluster's Deployment controller at its client's rate (`CONVERGENCE_POD_READY_MS`, default
//! 100; `CONVERGENCE_STATUS_QPS`, default 20 here). `CONVERGENCE_WRAP` runs the binary under a
//! profiler, as in `process.rs`.

use std::process::Command;
use std::time::{Duration, Instant};

use kube_sandbox::builtin_resource;
use kube_sandbox::{Rollout, Sandbox, SandboxConfig};
use serde_json::{Value, json};

use crate::process::{ANNOTATION, BIN, name, serve, spawn_controller, status_mib, vm_hwm_mib};

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// What the sandbox holds before the controller starts.
#[derive(Clone, Copy)]
struct Workload {
    total: usize,
    annotated: usize,
    namespaces: usize,
}

impl Workload {
    /// One in `total / annotated`, evenly spread, `annotated` of them.
    fn is_annotated(&self, i: usize) -> bool {
        let every = (self.total / self.annotated.max(1)).max(1);
        self.annotated > 0 && i.is_multiple_of(every) && i / every < self.annotated
    }

    fn namespace(&self, i: usize) -> String {
        if self.namespaces <= 1 { "default".to_owned() } else { format!("shop-{:03}", i % self.namespaces) }
    }

    /// About 1 KiB of settings, every fiftieth 16 KiB; two labels; `data.app` for the exercise.
    fn configmap(&self, i: usize) -> Value {
        let name = name(i);
        let size = if i % 50 == 49 { 16 * 1024 } else { 1024 };
        let line = format!("{name}.setting: value-of-the-setting-for-{name}\n");
        let settings: String = line.repeat(size / line.len() + 1).chars().take(size).collect();
        let mut cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": name, "namespace": self.namespace(i),
                "labels": { "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop" },
            },
            "data": { "app": name, "settings.yaml": settings },
        });
        if self.is_annotated(i) {
            cm["metadata"]["annotations"] = json!({ ANNOTATION: "3" });
        }
        cm
    }

    fn sandbox(&self) -> Sandbox {
        let pod_ready = env_usize("CONVERGENCE_POD_READY_MS", 100) as u64;
        let status_qps = env_usize("CONVERGENCE_STATUS_QPS", 20) as u32;
        let sb = Sandbox::with_config(SandboxConfig {
            rollout: Rollout::Paced(Duration::from_millis(pod_ready)),
            status_writes_per_second: Some(status_qps),
            ..SandboxConfig::bare()
        });
        let namespaces = builtin_resource("", "v1", "namespaces").unwrap();
        for n in 0..self.namespaces {
            if self.namespaces > 1 {
                let ns = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": self.namespace(n) } });
                sb.store().create(namespaces, "", ns, None).unwrap();
            }
        }
        let cms = builtin_resource("", "v1", "configmaps").unwrap();
        for i in 0..self.total {
            sb.store().create(cms, &self.namespace(i), self.configmap(i), None).unwrap();
        }
        sb
    }
}

/// The same-run yardsticks.
struct Baselines {
    list: Duration,
    stream: Duration,
    raw_creates: Duration,
}

async fn baselines(w: Workload, workers: usize) -> Baselines {
    let sb = w.sandbox();
    let (server, _dir, kubeconfig) = serve(&sb, "scale-raw").await;
    let writer = crate::writer::Writer::spawn_scale(&kubeconfig, workers).await;
    let timed = async |phase: &str| {
        let t = Instant::now();
        writer.run(phase).await;
        t.elapsed()
    };
    let list = timed("list").await;
    let stream = timed("stream").await;
    let raw_creates = timed("create").await;
    writer.finish().await;
    server.shutdown();
    Baselines { list, stream, raw_creates }
}

/// One controller run.
struct Run {
    first_write: Duration,
    converged: Duration,
    /// MiB: VmHWM when the first Deployment appeared (the first list's peak), VmHWM at the end,
    /// VmRSS settled.
    rss_list: f64,
    rss_peak: f64,
    rss_settled: f64,
    /// ConfigMap list requests: the pages, none when streamed (with `--all-namespaces`, one more:
    /// the start-up check that it may list them, `limit=1`).
    lists: usize,
    data_lines: usize,
}

async fn run_controller(bin: &str, w: Workload, workers: usize) -> Run {
    let sb = w.sandbox();
    let (server, dir, kubeconfig) = serve(&sb, "scale").await;
    let log = dir.join("controller.log");
    let limit = Duration::from_secs(600);
    let mut view = crate::feed::Deployments::follow(&sb);
    let scope =
        if w.namespaces > 1 { "--all-namespaces".to_owned() } else { "--namespace=default".to_owned() };
    let t0 = Instant::now();
    let mut child = spawn_controller(bin, &scope, workers, &kubeconfig, &log);
    let pid = child.id();
    view.until(limit, |v| v.len() > 0).await;
    let rss_list = vm_hwm_mib(pid);
    let done = view.until(limit, crate::feed::Deployments::all(w.annotated, 3)).await;
    let rss_peak = vm_hwm_mib(pid);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_settled = status_mib(pid, "VmRSS");
    Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    let _ = tokio::task::spawn_blocking(move || child.wait()).await;
    let requests = sb.requests().all();
    let first = requests
        .iter()
        .filter(|r| r.resource == "deployments" && r.verb == "create")
        .map(|r| r.at)
        .min()
        .unwrap_or(done);
    let lists = requests.iter().filter(|r| r.resource == "configmaps" && r.verb == "list").count();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let data_lines = text.lines().filter(|l| l.contains(" data: ")).count();
    server.shutdown();
    Run {
        first_write: first.saturating_duration_since(t0),
        converged: done.saturating_duration_since(t0),
        rss_list,
        rss_peak,
        rss_settled,
        lists,
        data_lines,
    }
}

fn row(label: &str, r: &Run, b: &Baselines) {
    let s = |d: Duration| d.as_secs_f64();
    let floor = s(b.list) + 1.25 * s(b.raw_creates);
    println!(
        "  {label:<28} {:>7.2}s {:>+7.2}s {:>8.2}s {:>6.2} {:>9.1} {:>8.1} {:>8.1} {:>+8.1} {:>6} {:>6}",
        s(r.first_write),
        s(r.first_write) - s(b.list),
        s(r.converged),
        s(r.converged) / floor,
        r.rss_list,
        r.rss_peak,
        r.rss_settled,
        r.rss_list - r.rss_settled,
        r.lists,
        r.data_lines,
    );
}

/// Prints the scale table.
pub fn main() {
    let total = env_usize("TOTAL", 50_000);
    let annotated = env_usize("ANNOTATED", 5_000).min(total);
    let workers = env_usize("SCALE_WORKERS", 16);
    let spreads: Vec<usize> = std::env::var("SCALE_NAMESPACES")
        .unwrap_or_else(|_| "1,100".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let before = std::env::var("SCALE_BEFORE").ok().filter(|p| !p.is_empty());
    let ours_only = std::env::var("SCALE_OURS_ONLY").map_or(true, |v| v != "0");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!(
        "scale: {total} ConfigMaps (~1 KiB of data, every 50th 16 KiB, two labels), {annotated} annotated; --workers {workers}; same run"
    );
    for namespaces in spreads {
        let w = Workload { total, annotated, namespaces };
        let mine = Workload { total: annotated, annotated, namespaces };
        let pause = || std::thread::sleep(Duration::from_secs(2));
        // Warms this process's heap for all the runs after it (see process.rs).
        let b = rt.block_on(baselines(w, workers));
        pause();
        let mut runs: Vec<(String, Run)> = Vec::new();
        let mut bins = vec![("ours".to_owned(), BIN.to_owned())];
        if let Some(path) = &before {
            bins.push(("before".to_owned(), path.clone()));
        }
        for (who, bin) in &bins {
            runs.push((who.clone(), rt.block_on(run_controller(bin, w, workers))));
            pause();
            if ours_only {
                runs.push((
                    format!("{who}, annotated only"),
                    rt.block_on(run_controller(bin, mine, workers)),
                ));
                pause();
            }
        }
        let s = |d: Duration| d.as_secs_f64();
        println!(
            "\n{}: baselines — paginated list {:.2}s, streaming list {:.2}s, raw writer's {annotated} creates {:.2}s",
            if namespaces > 1 {
                format!("--all-namespaces, {namespaces} namespaces")
            } else {
                "one namespace".to_owned()
            },
            s(b.list),
            s(b.stream),
            s(b.raw_creates)
        );
        println!(
            "  {:<28} {:>8} {:>8} {:>9} {:>6} {:>9} {:>8} {:>8} {:>8} {:>6} {:>6}",
            "controller",
            "1st write",
            "- list",
            "converged",
            "/floor",
            "RSS list",
            "peak",
            "settled",
            "list-set",
            "lists",
            "data"
        );
        for (label, r) in &runs {
            row(label, r, &b);
        }
        println!(
            "  (1st write - list ≤ 0.5 s; /floor = converged / (list + 1.25 × raw creates) ≤ 1; list-set = RSS list − settled ≤ 10 MiB; MiB;\n   lists: ConfigMap list requests, 0 when streamed, +1 with --all-namespaces for the start-up check)"
        );
        if ours_only && total > annotated {
            for pair in runs.chunks(2) {
                if let [(label, all), (_, only)] = pair {
                    let per =
                        (all.rss_settled - only.rss_settled) * 1024.0 * 1024.0 / (total - annotated) as f64;
                    println!(
                        "  {label}: settled RSS {:.1} MiB with {} unannotated, {:.1} without: {per:.0} bytes each",
                        all.rss_settled,
                        total - annotated,
                        only.rss_settled
                    );
                }
            }
        }
    }
}
