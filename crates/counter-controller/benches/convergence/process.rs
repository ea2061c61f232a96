//! The whole-process scale run: the `counter-controller` binary in its own process (so its memory
//! is its own) against a sandbox served over HTTPS from this process (so its request record is
//! readable), with N ConfigMaps shaped like real ones (labels, a last-applied annotation,
//! `managedFields`, a settings file in `data`) and the sandbox's paced rollout playing the
//! Deployment controller (status writes for every pod that becomes ready).
//!
//! Phases, each timed until the sandbox shows the result:
//! 1. **create**: the ConfigMaps exist (annotated 3) before the controller starts; until N
//!    Deployments have 3 replicas;
//! 2. **scale**: every annotation is set to 5 through the API by a bulk client (16 at a time); until
//!    N Deployments have 5; the *lag* is the time from the last annotation to the last write;
//!    Then a **churn** (not in the table): five rounds of new values back to back, one in five
//!    invalid; the controller's requests until converged and 2 s more, and the Event share;
//! 3. **delete**: every ConfigMap is deleted the same way; until no Deployment is left;
//! 4. **exit**: SIGTERM, until the process has exited.
//!
//! Per phase: the controller's requests by kind (Deployment writes, Event writes, 409s), and when
//! its last Event write arrived relative to convergence; the CPU of this process (sandbox and
//! clients) and of the controller, and how busy that kept the machine's cores (near 100 %, the
//! phase was bound by the CPU the processes share, not by anyone's latency); the sandbox's mean
//! time answering a Deployment write (the rest of a worker's cycle is the writer's own). At the
//! end: peak RSS (VmHWM), log lines.
//!
//! Two baselines, each on a fresh sandbox in the same run, through a `kube::Client` over the same
//! HTTPS path at the controller's concurrency, from a writer process of its own as the controller
//! is (`writer.rs`: its CPU is its own, apart from the sandbox's, as the controller's is):
//! * **raw**: the same N creates, N replica patches and N deletes, and nothing else;
//! * **oracle**: the user's changes go through the API exactly as in the controller's run, and each
//!   Deployment write is issued the moment its key's change is acknowledged — the controller
//!   replaced by something that needs no watch, cache or queue. The phases of the controller's run
//!   carry the user's own writes (and, for deletes, the orphaning updates they cause), which the
//!   raw writer does not, so on a server bound by its CPU the oracle is the fair yardstick for
//!   what the controller itself adds, and its lag is the floor for the controller's.
//!
//! `CONVERGENCE_PROCESS_N=5000` (default) and `CONVERGENCE_WORKERS=2,16` (default);
//! `CONVERGENCE_LATENCY_MS=2` delays every request by that much, for every client alike (a real
//! API server's per-request time; 0, the default, is the in-memory sandbox's own speed);
//! `CONVERGENCE_POD_READY_MS=100` (default) is the rollout's pace — how often every rolling
//! Deployment gets a status write (and the controller a watch event to decode and drop) — and
//! `CONVERGENCE_STATUS_QPS=20` holds those writes to the rate a cluster's Deployment controller
//! is held to (kube-controller-manager's client: 20 a second, burst 30); unset, they are not held.
//! `CONVERGENCE_WRAP="heaptrack -o /tmp/cc"` runs the controller under a profiler (the figures
//! are then the profiler's, not the controller's); `CONVERGENCE_BIN=path` runs another build of
//! the binary (an A/B against an older commit).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube_sandbox::builtin_resource;
use kube_sandbox::{RequestRecord, Rollout, Sandbox, SandboxConfig};
use serde_json::{Value, json};

pub const ANNOTATION: &str = "counter.example.com/desired";
pub const BIN: &str = env!("CARGO_BIN_EXE_counter-controller");
/// Concurrency of the bulk client making the changes.
pub const BULK: usize = 16;

pub fn name(i: usize) -> String {
    format!("shop-{i:05}")
}

/// A ConfigMap as `kubectl apply` leaves it on a real API server.
fn realistic_configmap(i: usize) -> Value {
    let name = name(i);
    let settings = format!(
        "server:\n  port: 8080\n  workers: 4\nfeatures:\n  checkout: true\n  recommendations: false\nbackend: http://{name}-backend.default.svc:9000\nlog_level: info\ncache_ttl_seconds: 300\n"
    );
    let labels =
        json!({ "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop", "team": "payments" });
    let applied = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": name, "namespace": "default", "labels": labels, "annotations": { ANNOTATION: "3" } },
        "data": { "app": name, "settings.yaml": settings },
    });
    let fields = json!({
        "f:data": { ".": {}, "f:app": {}, "f:settings.yaml": {} },
        "f:metadata": {
            "f:annotations": { ".": {}, "f:counter.example.com/desired": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {} },
            "f:labels": { ".": {}, "f:app.kubernetes.io/name": {}, "f:app.kubernetes.io/part-of": {}, "f:team": {} },
        },
    });
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": name, "namespace": "default", "labels": labels,
            "annotations": { ANNOTATION: "3", "kubectl.kubernetes.io/last-applied-configuration": applied.to_string() },
            "managedFields": [{ "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
                                "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields }],
        },
        "data": { "app": name, "settings.yaml": settings },
    })
}

pub fn sandbox_with(n: usize) -> Sandbox {
    // One pod per 100 ms (`CONVERGENCE_POD_READY_MS`): every rolling Deployment gets a status
    // write per tick, as from the cluster's Deployment controller.
    let pod_ready =
        std::env::var("CONVERGENCE_POD_READY_MS").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(100);
    // `CONVERGENCE_STATUS_QPS=20` holds those writes to kube-controller-manager's client rate.
    let status_qps = std::env::var("CONVERGENCE_STATUS_QPS").ok().and_then(|v| v.parse::<u32>().ok());
    let sb = Sandbox::with_config(SandboxConfig {
        rollout: Rollout::Paced(Duration::from_millis(pod_ready)),
        status_writes_per_second: status_qps,
        ..SandboxConfig::bare()
    });
    let cms = builtin_resource("", "v1", "configmaps").unwrap();
    for i in 0..n {
        sb.store().create(cms, "default", realistic_configmap(i), None).unwrap();
    }
    // A real API server takes milliseconds per request (etcd's commit, the network); the in-memory
    // sandbox takes microseconds, so a client's own CPU weighs far more against it. This models
    // the former, for every client alike.
    let latency =
        std::env::var("CONVERGENCE_LATENCY_MS").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    sb.faults().set_latency(Duration::from_millis(latency));
    sb
}

/// User + system CPU seconds of process `pid` ("self" for this one) so far.
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

/// Runs `f(0..n)`, `concurrency` at a time; how long it took.
pub async fn each<F, Fut>(n: usize, concurrency: usize, f: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    futures::stream::iter(0..n).for_each_concurrent(concurrency, f).await;
    start.elapsed()
}

/// Sets ConfigMap `i`'s desired count to `value(i)` for every `i < n`, through the API, [`BULK`]
/// at a time, as a user's `kubectl annotate` run by a fast client.
pub async fn annotate(cms: &Api<ConfigMap>, n: usize, value: impl Fn(usize) -> String) {
    annotate_then(cms, n, value, |_| ()).await;
}

/// As [`annotate`], calling `done(i)` as each change is acknowledged.
async fn annotate_then(
    cms: &Api<ConfigMap>,
    n: usize,
    value: impl Fn(usize) -> String,
    done: impl Fn(usize),
) {
    let done = &done;
    each(n, BULK, |i| {
        let api = cms.clone();
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: value(i) } } });
        async move {
            api.patch(&name(i), &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
            done(i);
        }
    })
    .await;
}

/// Deletes every ConfigMap `i < n` through the API, [`BULK`] at a time, orphaning dependents (so
/// the Deployments are left to be deleted by whoever owns them, not the sandbox's garbage
/// collector, which in a cluster is the slower backstop); calls `done(i)` as each is acknowledged.
async fn delete_then(cms: &Api<ConfigMap>, n: usize, done: impl Fn(usize)) {
    let done = &done;
    each(n, BULK, |i| {
        let api = cms.clone();
        async move {
            let orphan = DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
                ..DeleteParams::default()
            };
            api.delete(&name(i), &orphan).await.unwrap();
            done(i);
        }
    })
    .await;
}

/// A `kB` field of `/proc/<pid>/status` (`VmHWM`, `RssAnon`, `RssFile`), in MiB.
pub fn status_mib(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.split(':').next() == Some(field))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// `sb` over HTTPS on a free port, and a kubeconfig for it in a fresh directory
/// `cc-<label>-<pid>` under the temp dir: (the server, the directory, the kubeconfig).
pub async fn serve(sb: &Sandbox, label: &str) -> (kube_sandbox::HttpServer, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("cc-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = sb.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    kube_sandbox::write_kubeconfig(&kubeconfig, &server).unwrap();
    (server, dir, kubeconfig)
}

/// Starts `bin run <scope> --log-format=json --workers=<workers>` against `kubeconfig` in its
/// own process, its log to `log`, under `CONVERGENCE_WRAP` when set (a profiler:
/// `heaptrack -o FILE`; the memory figures are then the profiler's).
pub fn spawn_controller(
    bin: &str,
    scope: &str,
    workers: usize,
    kubeconfig: &Path,
    log: &Path,
) -> std::process::Child {
    let wrap: Vec<String> =
        std::env::var("CONVERGENCE_WRAP").unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    let mut cmd = match wrap.split_first() {
        Some((tool, args)) => {
            let mut c = Command::new(tool);
            c.args(args).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(["run", scope, "--log-format=json", &format!("--workers={workers}")])
        .env("KUBECONFIG", kubeconfig)
        .env("HOSTNAME", "bench")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Peak resident memory of process `pid` so far, in MiB.
pub fn vm_hwm_mib(pid: u32) -> f64 {
    status_mib(pid, "VmHWM")
}

#[derive(Default, Debug, Clone)]
struct Counts {
    deployment_writes: usize,
    /// The sandbox's time answering them, summed.
    deployment_write_time: Duration,
    event_writes: usize,
    /// Lists, and the sandbox's time answering them, summed.
    lists: usize,
    list_time: Duration,
    conflicts: usize,
    other: usize,
    last_event_at: Option<Instant>,
    last_deployment_write_at: Option<Instant>,
    first_deployment_write_at: Option<Instant>,
}

impl Counts {
    fn total(&self) -> usize {
        self.deployment_writes + self.event_writes + self.other
    }

    /// The sandbox's mean time answering a Deployment write, in microseconds.
    fn server_us(&self) -> f64 {
        self.deployment_write_time.as_secs_f64() * 1e6 / self.deployment_writes.max(1) as f64
    }
}

/// The requests in `log` from a User-Agent containing `ua` that arrived in `[from, to)`, counted.
fn count(log: &[RequestRecord], ua: &str, from: Instant, to: Instant) -> Counts {
    let mut c = Counts::default();
    for r in log.iter().filter(|r| r.user_agent.contains(ua) && r.at >= from && r.at < to) {
        if r.verb == "watch" {
            continue;
        }
        if r.code == 409 {
            c.conflicts += 1;
        }
        match (r.resource.as_str(), r.is_write()) {
            ("events", true) => {
                c.event_writes += 1;
                c.last_event_at = Some(r.at);
            }
            ("deployments", true) => {
                c.deployment_writes += 1;
                c.deployment_write_time += r.took;
                c.last_deployment_write_at = Some(r.at);
                c.first_deployment_write_at.get_or_insert(r.at);
            }
            _ => c.other += 1,
        }
        if r.verb == "list" {
            c.lists += 1;
            c.list_time += r.took;
        }
    }
    c
}

/// Per key, from the user's change of a ConfigMap (its request's arrival) to the first
/// Deployment write for it after: the latency of one change, as its owner sees it.
#[derive(Default, Clone, Copy)]
struct Reaction {
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Reaction {
    /// Over the requests in `log` that arrived in `[from, to)`; zero when no ConfigMap was
    /// changed.
    fn of(log: &[RequestRecord], from: Instant, to: Instant) -> Self {
        let mut changed: HashMap<&str, Instant> = HashMap::new();
        let mut took = Vec::new();
        for r in log.iter().filter(|r| r.at >= from && r.at < to && r.is_write()) {
            match r.resource.as_str() {
                "configmaps" if r.code < 400 => {
                    changed.entry(&r.name).or_insert(r.at);
                }
                "deployments" => {
                    if let Some(at) = changed.remove(r.name.as_str()) {
                        took.push(r.at - at);
                    }
                }
                _ => {}
            }
        }
        took.sort();
        let at =
            |q: f64| took.get(((took.len() as f64 * q) as usize).min(took.len().saturating_sub(1))).copied();
        Self {
            p50: at(0.5).unwrap_or_default(),
            p99: at(0.99).unwrap_or_default(),
            max: took.last().copied().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for Reaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(f, "{:.1}/{:.1}/{:.0} ms", ms(self.p50), ms(self.p99), ms(self.max))
    }
}

struct Phase {
    name: &'static str,
    took: Duration,
    /// CPU seconds of this process (the sandbox and the bulk client) during the phase.
    api_cpu: f64,
    /// CPU seconds of the controller process during the phase.
    controller_cpu: f64,
    counts: Counts,
    reaction: Reaction,
    converged_at: Instant,
}

/// The share of the machine's cores that were busy while `took` passed and `cpu` seconds of CPU
/// were spent: near 1, the phase was bound by the CPU, not by anyone's latency.
fn busy(cpu: f64, took: Duration) -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) as f64;
    cpu / (cores * took.as_secs_f64())
}

struct ControllerRun {
    phases: Vec<Phase>,
    lag: Duration,
    exit: Duration,
    peak_rss_mib: f64,
    /// Resident memory before SIGTERM, anonymous (heap, stacks) and file-backed (the binary), MiB.
    rss_now: (f64, f64),
    log_lines: usize,
    /// From the start of the process to its first Deployment write.
    startup: Duration,
    /// The churn with invalid values: until converged, and the requests until 2 s later.
    churn: (Duration, Counts),
    /// CPU seconds of the controller process and of this one (the sandbox) during the phases.
    cpu: (f64, f64),
}

async fn run_controller(n: usize, workers: usize) -> ControllerRun {
    let sb = sandbox_with(n);
    let (server, dir, kubeconfig) = serve(&sb, &format!("convergence-{workers}")).await;
    let log = dir.join("controller.log");
    let limit = Duration::from_secs(600);

    let mut view = crate::feed::Deployments::follow(&sb);
    let sandbox_cpu = cpu_seconds("self");
    let t0 = Instant::now();
    let bin = std::env::var("CONVERGENCE_BIN").unwrap_or_else(|_| BIN.to_owned());
    let mut child = spawn_controller(&bin, "--namespace=default", workers, &kubeconfig, &log);
    let pid = child.id();
    let controller_cpu = || cpu_seconds(&pid.to_string());
    let mut phases = Vec::new();
    let t1 = view.until(limit, crate::feed::Deployments::all(n, 3)).await;
    let (cpu1, ccpu1) = (cpu_seconds("self"), controller_cpu());
    phases.push(Phase {
        name: "create",
        took: t1 - t0,
        api_cpu: cpu1 - sandbox_cpu,
        controller_cpu: ccpu1,
        counts: Counts::default(),
        reaction: Reaction::default(),
        converged_at: t1,
    });

    // The bulk changes come through the API, as from `kubectl annotate` / `kubectl delete` run
    // by a fast client (16 at a time), so they take the API server's time as the controller does.
    let user = kube_manager::client::client(counter_controller::AGENT, Some(&kubeconfig)).await.unwrap();
    let user_cms: Api<ConfigMap> = Api::default_namespaced(user);
    annotate(&user_cms, n, |_| "5".into()).await;
    let last_change = Instant::now();
    let t2 = view.until(limit, crate::feed::Deployments::all(n, 5)).await;
    let (cpu2, ccpu2) = (cpu_seconds("self"), controller_cpu());
    phases.push(Phase {
        name: "scale",
        took: t2 - t1,
        api_cpu: cpu2 - cpu1,
        controller_cpu: ccpu2 - ccpu1,
        counts: Counts::default(),
        reaction: Reaction::default(),
        converged_at: t2,
    });

    // Churn with invalid values: five rounds back to back; in each, one ConfigMap in five gets an
    // invalid value (retried with backoff, a Warning Event each time — aggregated and budgeted)
    // and the others a new count. Counted until converged and 2 s more.
    const INVALID: [&str; 5] = ["abc", "-1", "3.5", "", "99999999999"];
    let churn_start = Instant::now();
    let mut expected: HashMap<String, i64> = (0..n).map(|i| (name(i), 5)).collect();
    for round in 0..5_i64 {
        annotate(&user_cms, n, |i| {
            let invalid = (i as i64 + round) % 5 == 0;
            if invalid { INVALID[round as usize].to_owned() } else { (6 + round).to_string() }
        })
        .await;
        // The final count is known only where the last value is valid (the controller may never
        // have seen a valid value that was overwritten quickly by an invalid one).
        for i in 0..n {
            if (i as i64 + round) % 5 == 0 {
                expected.remove(&name(i));
            } else {
                expected.insert(name(i), 6 + round);
            }
        }
    }
    let tc = view.until(limit, |d| expected.iter().all(|(k, v)| d.get(k) == Some(*v))).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let t2 = Instant::now();
    let (cpu2, ccpu2) = (cpu_seconds("self"), controller_cpu());

    delete_then(&user_cms, n, |_| ()).await;
    let t3 = view.until(limit, |d| d.len() == 0).await;
    phases.push(Phase {
        name: "delete",
        took: t3 - t2,
        api_cpu: cpu_seconds("self") - cpu2,
        controller_cpu: controller_cpu() - ccpu2,
        counts: Counts::default(),
        reaction: Reaction::default(),
        converged_at: t3,
    });

    // Let trailing Events land before counting, then stop the process.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let peak_rss_mib = vm_hwm_mib(pid);
    let rss_now = (status_mib(pid, "RssAnon"), status_mib(pid, "RssFile"));
    let cpu = (controller_cpu(), cpu_seconds("self") - sandbox_cpu);
    let term = Instant::now();
    Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    let _ = tokio::task::spawn_blocking(move || child.wait()).await;
    let exit = term.elapsed();

    // One copy of the request log, read after the run.
    let requests = sb.requests().all();
    let churn = (tc - churn_start, count(&requests, "(bench_", churn_start, t2));
    let bounds = [(t0, t1), (t1, churn_start), (t2, term)];
    for (p, (from, to)) in phases.iter_mut().zip(bounds) {
        p.counts = count(&requests, "(bench_", from, to);
        p.reaction = Reaction::of(&requests, from, to);
    }
    let lag = phases[1]
        .counts
        .last_deployment_write_at
        .map_or(Duration::ZERO, |t| t.saturating_duration_since(last_change));
    let log_lines = std::fs::read_to_string(&log).map(|s| s.lines().count()).unwrap_or(0);
    let startup = phases[0].counts.first_deployment_write_at.map_or(Duration::ZERO, |t| t - t0);
    server.shutdown();
    ControllerRun { phases, lag, exit, peak_rss_mib, rss_now, log_lines, startup, churn, cpu }
}

/// What triggers a baseline's writes.
#[derive(Clone, Copy, PartialEq)]
enum Baseline {
    /// The N writes of each phase alone, back to back, `workers` at a time.
    Raw,
    /// The user's changes go through the API as in the controller's run (16 at a time, from this
    /// process), and each Deployment write is issued, `workers` at a time, the moment the change
    /// for its key is acknowledged: the controller replaced by an oracle that needs no watch, no
    /// cache and no queue. What the controller adds over this is its own cost.
    Oracle,
}

/// One baseline phase: how long, the CPU of this process (the sandbox and the user's client) and
/// of the writer's during it, and for [`Baseline::Oracle`] the time from the user's last change
/// to the last write.
struct BaselinePhase {
    took: Duration,
    api_cpu: f64,
    writer_cpu: f64,
    lag: Duration,
    /// The requests during the phase (of every client).
    counts: Counts,
    reaction: Reaction,
}

/// The same Deployment writes as the controller makes, from a writer process of its own (see
/// `writer.rs`) through a client over HTTPS, `workers` at a time, triggered as `baseline` says.
///
/// The writer runs in its own process for the same reason the controller does: in this one it
/// would share the sandbox's threads, and a request and its answer would never wait for another
/// process to be scheduled — a head start the controller does not get.
async fn run_baseline(n: usize, workers: usize, baseline: Baseline) -> Vec<BaselinePhase> {
    let sb = sandbox_with(n);
    let (server, _dir, kubeconfig) = serve(&sb, &format!("convergence-raw-{workers}")).await;
    let user_cms: Api<ConfigMap> = Api::default_namespaced(
        kube_manager::client::client(counter_controller::AGENT, Some(&kubeconfig)).await.unwrap(),
    );
    let writer = crate::writer::Writer::spawn(&kubeconfig, n, workers).await;
    let mut out = Vec::new();
    let phase = |from: Instant, (cpu, wcpu): (f64, f64), lag: Duration| {
        let (to, api_cpu, writer_cpu) = (Instant::now(), cpu_seconds("self") - cpu, writer.cpu() - wcpu);
        let log = sb.requests().all();
        BaselinePhase {
            took: to - from,
            api_cpu,
            writer_cpu,
            lag,
            counts: count(&log, "", from, to),
            reaction: Reaction::of(&log, from, to),
        }
    };

    // create: the ConfigMaps exist before, in every run.
    let (from, cpu) = (Instant::now(), (cpu_seconds("self"), writer.cpu()));
    writer.run("create").await;
    out.push(phase(from, cpu, Duration::ZERO));

    let (from, cpu) = (Instant::now(), (cpu_seconds("self"), writer.cpu()));
    let lag = match baseline {
        Baseline::Raw => writer.run("scale").await,
        Baseline::Oracle => {
            writer.each("scale", |done| annotate_then(&user_cms, n, |_| "5".into(), done)).await
        }
    };
    out.push(phase(from, cpu, lag));

    let (from, cpu) = (Instant::now(), (cpu_seconds("self"), writer.cpu()));
    let lag = match baseline {
        Baseline::Raw => writer.run("delete").await,
        Baseline::Oracle => writer.each("delete", |done| delete_then(&user_cms, n, done)).await,
    };
    out.push(phase(from, cpu, lag));
    writer.finish().await;
    server.shutdown();
    out
}

/// Prints the run's table.
pub fn main() {
    let n: usize = std::env::var("CONVERGENCE_PROCESS_N").ok().and_then(|v| v.parse().ok()).unwrap_or(5000);
    let workers: Vec<usize> = std::env::var("CONVERGENCE_WORKERS")
        .unwrap_or_else(|_| "2,16".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let latency = std::env::var("CONVERGENCE_LATENCY_MS").unwrap_or_else(|_| "0".into());
    println!(
        "whole-process convergence: the controller binary vs two baselines, N = {n}, request latency {latency} ms, same run"
    );
    println!(
        "  raw: the Deployment writes alone; oracle: the same user traffic, each write issued as its change lands"
    );
    // The first sandbox of this process grows its heap from nothing (page faults, `sysmalloc`);
    // later ones reuse what the earlier ones freed. Measured first, the controller's create
    // phase was 0.3 s slower than measured after a baseline, and so was the raw writer's: a
    // run nobody measures warms the heap for all of them.
    if let Some(&w) = workers.first() {
        rt.block_on(run_baseline(n, w, Baseline::Raw));
        std::thread::sleep(Duration::from_secs(2));
    }
    for w in workers {
        // Each run's sandbox (its objects and 75 s of history) is torn down by tasks that outlive
        // the run; a pause keeps that out of the next run's figures.
        let settle = || std::thread::sleep(Duration::from_secs(2));
        let c = rt.block_on(run_controller(n, w));
        settle();
        let raw = rt.block_on(run_baseline(n, w, Baseline::Raw));
        settle();
        let oracle = rt.block_on(run_baseline(n, w, Baseline::Oracle));
        settle();
        println!("\n--workers {w}");
        println!(
            "{:<7} {:>10} {:>8} {:>6} {:>8} {:>6} {:>20} {:>20} {:>17} {:>19}   {:>8} {:>8} {:>6} {:>8} {:>9}",
            "phase",
            "controller",
            "raw",
            "ratio",
            "oracle",
            "ratio",
            "API CPU c/raw/oracle",
            "writer CPU c/raw/or",
            "busy c/raw/oracle",
            "server µs c/raw/or",
            "deploy w",
            "event w",
            "409s",
            "events %",
            "events +s"
        );
        for ((p, r), o) in c.phases.iter().zip(&raw).zip(&oracle) {
            let total = p.counts.total().max(1);
            let trailing = p
                .counts
                .last_event_at
                .map_or(0.0, |t| t.saturating_duration_since(p.converged_at).as_secs_f64());
            let t = p.took.as_secs_f64();
            println!(
                "{:<7} {:>9.2}s {:>7.2}s {:>6.2} {:>7.2}s {:>6.2} {:>6.2}/{:.2}/{:<6.2} {:>9.2}/{:.2}/{:<5.2} {:>7.0}%/{:.0}%/{:<3.0}% {:>9.0}/{:.0}/{:<4.0}   {:>8} {:>8} {:>6} {:>7.1}% {:>8.2}s",
                p.name,
                t,
                r.took.as_secs_f64(),
                t / r.took.as_secs_f64(),
                o.took.as_secs_f64(),
                t / o.took.as_secs_f64(),
                p.api_cpu,
                r.api_cpu,
                o.api_cpu,
                p.controller_cpu,
                r.writer_cpu,
                o.writer_cpu,
                100.0 * busy(p.api_cpu + p.controller_cpu, p.took),
                100.0 * busy(r.api_cpu + r.writer_cpu, r.took),
                100.0 * busy(o.api_cpu + o.writer_cpu, o.took),
                p.counts.server_us(),
                r.counts.server_us(),
                o.counts.server_us(),
                p.counts.deployment_writes,
                p.counts.event_writes,
                p.counts.conflicts,
                100.0 * p.counts.event_writes as f64 / total as f64,
                trailing,
            );
        }
        for (p, o) in c.phases.iter().zip(&oracle).skip(1) {
            println!(
                "{}: a change's reaction (the user's request → its Deployment write), p50/p99/max: controller {}, oracle {}",
                p.name, p.reaction, o.reaction
            );
        }
        println!(
            "lag from the last annotation to the last Deployment write: controller {:.3}s, oracle {:.3}s",
            c.lag.as_secs_f64(),
            oracle[1].lag.as_secs_f64()
        );
        let (took, ch) = &c.churn;
        println!(
            "churn (5 rounds, 1 in 5 values invalid): converged {:.2}s; deploy w {}, event w {}, 409s {}, other {}; events {:.1}% of the controller's requests",
            took.as_secs_f64(),
            ch.deployment_writes,
            ch.event_writes,
            ch.conflicts,
            ch.other,
            100.0 * ch.event_writes as f64 / ch.total().max(1) as f64
        );
        println!(
            "start to first Deployment write: {:.3}s ({} lists answered in {:.3}s); exit after SIGTERM: {:.3}s; peak RSS {:.1} MiB (at the end: {:.1} anonymous + {:.1} file-backed); {} log lines; CPU: controller {:.1}s, sandbox process {:.1}s",
            c.startup.as_secs_f64(),
            c.phases[0].counts.lists,
            c.phases[0].counts.list_time.as_secs_f64(),
            c.exit.as_secs_f64(),
            c.peak_rss_mib,
            c.rss_now.0,
            c.rss_now.1,
            c.log_lines,
            c.cpu.0,
            c.cpu.1
        );
    }
}
