//! The two controllers of this workspace side by side: how long each takes to converge N objects
//! (`CONVERGENCE_N`, default 1000) through create, scale and delete, and its peak resident memory.
//!
//! * **counter-controller**: N ConfigMaps annotated `counter.example.com/desired=1` → until N
//!   Deployments labelled `managed-by=counter-controller` have `replicas: 1` (*create*); every
//!   annotation set to 2 → until all have 2 (*scale*); the ConfigMaps deleted → until no managed
//!   Deployment remains (*delete*).
//! * **sample-controller**: its CRD applied (from `deploy/crd.yaml`), N Foos (`deploymentName:
//!   foo-i`, `replicas: 1`) → until N Deployments have `replicas: 1` *and* every Foo's
//!   `status.availableReplicas` is 1 (*create*: a Foo's job includes its status); every Foo patched
//!   to `replicas: 2` → until all Deployments have 2 (*scale*); the Foos deleted → until no
//!   Deployment remains, the garbage collector following their ownerReferences (*delete*).
//!
//! Why the figures compare: each controller is its release binary (`target/release/*`, built with
//! `cargo build --release -p counter-controller -p sample-controller -p kube-sandbox-server`) in
//! its own process, run as an operator would (`run --kubeconfig F --workers 16`), against a fresh
//! sandbox that is itself the release `kube-sandbox --pod-ready 50ms` in another process; both
//! run on the same machine in the same run, one after the other. The user's writes come from this
//! process's client 16 at a time, and convergence is seen the same way for both: a list every
//! 100 ms, so every figure is an upper bound within 100 ms. Each phase's clock starts before its
//! first write and so includes the writes (their duration is printed too); *create* starts once the
//! controller's caches have synced (`/readyz`), its start-up is printed apart. Peak RSS is the
//! controller's `VmHWM` at the end, read before SIGTERM; total is from spawning the controller to
//! the end of *delete*.
//!
//! `cargo bench -p sample-controller --bench convergence`; `CONVERGENCE_N=200` for a quick run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use sample_controller::{Foo, FooSpec};
use serde_json::json;

/// `--workers` of both controllers.
const WORKERS: usize = 16;
/// The bench client's writes in flight.
const CONCURRENCY: usize = 16;
/// How often the sandbox is listed to see convergence.
const POLL: Duration = Duration::from_millis(100);
/// Give up on a phase (or a start-up) after this long.
const LIMIT: Duration = Duration::from_secs(600);
/// The sandbox's time for one simulated pod to become ready.
const POD_READY: &str = "50ms";
/// The counter-controller's interface, as its users see it (this crate does not depend on it):
/// the annotation it reads and the label of the Deployments it manages.
const ANNOTATION: &str = "counter.example.com/desired";
const MANAGED_BY: (&str, &str) = ("managed-by", "counter-controller");

/// A child process, killed when dropped (a panicking bench leaves nothing behind).
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    /// SIGTERM, then waits for the exit.
    async fn terminate(mut self) {
        Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status().unwrap();
        // Reaped here, the drop's kill is a no-op.
        let _ = tokio::task::spawn_blocking(move || self.0.wait()).await;
    }

    /// `VmHWM` (peak resident set) in MiB.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0.id())).unwrap();
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .expect("VmHWM in /proc/<pid>/status");
        kib / 1024.0
    }
}

/// A release binary of this workspace; fails with the build command when it is missing.
fn release_bin(name: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"), PathBuf::from)
        .join("release");
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: cargo build --release -p counter-controller -p sample-controller -p kube-sandbox-server",
        bin.display()
    );
    // A source of either binary newer than the release build means it predates the sources.
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if let Some(newer) = ["crates", "examples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(workspace.join(d)).into_iter().flatten().flatten())
        .find_map(|krate| newer_than(&krate.path().join("src"), built))
    {
        eprintln!(
            "warning: {} is older than {}: cargo build --release -p counter-controller -p sample-controller -p kube-sandbox-server",
            bin.display(),
            newer.display()
        );
    }
    bin.canonicalize().unwrap()
}

/// A file under `dir` modified after `t`.
fn newer_than(dir: &Path, t: std::time::SystemTime) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let (path, meta) = (e.path(), e.metadata().ok()?);
        if meta.is_dir() { newer_than(&path, t) } else { (meta.modified().ok()? > t).then_some(path) }
    })
}

/// A fresh sandbox in its own process; returns it and its kubeconfig once it prints
/// `export KUBECONFIG=...`.
async fn start_sandbox(sandbox_bin: &Path, dir: &Path) -> (Proc, PathBuf) {
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(sandbox_bin)
        .args(["--listen", "127.0.0.1:0", "--pod-ready", POD_READY])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("sandbox.log")).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proc = Proc(child);
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Reads until the kubeconfig line, then drains the rest so the sandbox never blocks on it.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(path) = line.strip_prefix("export KUBECONFIG=")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(PathBuf::from(path));
            }
        }
    });
    let path = tokio::time::timeout(Duration::from_secs(30), rx)
        .await
        .expect("the sandbox printed no `export KUBECONFIG=` within 30s")
        .expect("the sandbox exited before it was ready");
    (proc, path)
}

/// A controller's `run` in its own process, and its operations endpoint.
async fn start_controller(bin: &Path, kubeconfig: &Path, dir: &Path) -> (Proc, Duration) {
    let metrics = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let name = bin.file_name().unwrap().to_string_lossy();
    let start = Instant::now();
    let child = Command::new(bin)
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--workers", &WORKERS.to_string(), "--log-format=json"])
        .arg(format!("--metrics-addr={metrics}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("{name}.log"))).unwrap())
        .spawn()
        .unwrap();
    let proc = Proc(child);
    loop {
        if ready(metrics) {
            return (proc, start.elapsed());
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{name} not ready after 60s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `/readyz` answers 200 (the informers' caches have synced).
fn ready(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else { return false };
    let mut text = String::new();
    write!(s, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").is_ok()
        && s.read_to_string(&mut text).is_ok()
        && text.starts_with("HTTP/1.1 200")
}

/// Runs `write(i)` for `0..n`, [`CONCURRENCY`] at a time; returns how long they took.
async fn write_all<F, Fut>(n: usize, write: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let start = Instant::now();
    futures::stream::iter((0..n).map(write)).buffer_unordered(CONCURRENCY).collect::<()>().await;
    start.elapsed()
}

/// Lists every [`POLL`] until `done`; returns when it first held.
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) -> Instant {
    let start = Instant::now();
    loop {
        if done().await {
            return Instant::now();
        }
        assert!(start.elapsed() < LIMIT, "{what}: not converged after {LIMIT:?}");
        tokio::time::sleep(POLL).await;
    }
}

/// How many Deployments `deploys` lists with `replicas`, and how many in all.
async fn replicas(deploys: &Api<Deployment>, lp: &ListParams, replicas: i32) -> (usize, usize) {
    let list = deploys.list(lp).await.unwrap();
    (list.items.iter().filter(|d| d.spec.replicas == Some(replicas)).count(), list.items.len())
}

/// One controller's figures.
struct Run {
    name: &'static str,
    startup: Duration,
    /// create, scale, delete.
    phases: [Duration; 3],
    /// The bench client's writes of each phase.
    writes: [Duration; 3],
    peak_rss_mib: f64,
    total: Duration,
}

/// The counter-controller: ConfigMaps annotated with a count → Deployments with that many replicas.
async fn counter(bin: &Path, sandbox_bin: &Path, n: usize, dir: &Path) -> Run {
    let (sandbox, kubeconfig) = start_sandbox(sandbox_bin, dir).await;
    let client: Client =
        kube_manager::client::client(sample_controller::controller::AGENT, Some(&kubeconfig)).await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deploys: Api<Deployment> = Api::default_namespaced(client);
    let managed = ListParams::default().labels(&format!("{}={}", MANAGED_BY.0, MANAGED_BY.1));
    let name = |i: usize| format!("cm-{i}");

    let spawned = Instant::now();
    let (controller, startup) = start_controller(bin, &kubeconfig, dir).await;

    let t0 = Instant::now();
    let w0 = write_all(n, |i| {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": { "name": name(i), "annotations": { ANNOTATION: "1" } },
            "data": { "key": "value" },
        }))
        .unwrap();
        let cms = cms.clone();
        async move {
            cms.create(&PostParams::default(), &cm).await.unwrap();
        }
    })
    .await;
    let t1 = until("counter create", async || replicas(&deploys, &managed, 1).await == (n, n)).await;

    let w1 = write_all(n, |i| {
        let (cms, name) = (cms.clone(), name(i));
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: "2" } } });
        async move {
            cms.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
        }
    })
    .await;
    let t2 = until("counter scale", async || replicas(&deploys, &managed, 2).await == (n, n)).await;

    let w2 = write_all(n, |i| {
        let (cms, name) = (cms.clone(), name(i));
        async move {
            cms.delete(&name, &DeleteParams::default()).await.unwrap();
        }
    })
    .await;
    let t3 = until("counter delete", async || replicas(&deploys, &managed, 0).await.1 == 0).await;

    let peak_rss_mib = controller.peak_rss_mib();
    let total = t3 - spawned;
    controller.terminate().await;
    sandbox.terminate().await;
    Run {
        name: "counter-controller",
        startup,
        phases: [t1 - t0, t2 - t1, t3 - t2],
        writes: [w0, w1, w2],
        peak_rss_mib,
        total,
    }
}

/// The sample-controller: Foos → Deployments, and each Foo's status.
async fn sample(bin: &Path, sandbox_bin: &Path, n: usize, dir: &Path) -> Run {
    let (sandbox, kubeconfig) = start_sandbox(sandbox_bin, dir).await;
    let client: Client =
        kube_manager::client::client(sample_controller::controller::AGENT, Some(&kubeconfig)).await.unwrap();

    // The CRD first: the controller refuses to start on a cluster that does not serve Foos.
    let yaml =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/crd.yaml")).unwrap();
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&yaml).unwrap();
    Api::<CustomResourceDefinition>::all(client.clone()).create(&PostParams::default(), &crd).await.unwrap();
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    until("the Foo CRD served", async || foos.list(&ListParams::default().limit(1)).await.is_ok()).await;
    let deploys: Api<Deployment> = Api::default_namespaced(client);
    let all = ListParams::default();
    let name = |i: usize| format!("foo-{i}");

    let spawned = Instant::now();
    let (controller, startup) = start_controller(bin, &kubeconfig, dir).await;

    let t0 = Instant::now();
    let w0 = write_all(n, |i| {
        let object = Foo::new(&name(i), FooSpec { deployment_name: name(i), replicas: 1 });
        let foos = foos.clone();
        async move {
            foos.create(&PostParams::default(), &object).await.unwrap();
        }
    })
    .await;
    let t1 = until("sample create", async || {
        replicas(&deploys, &all, 1).await == (n, n) && {
            let list = foos.list(&all).await.unwrap();
            list.items.len() == n
                && list.items.iter().all(|f| f.status.as_ref().is_some_and(|s| s.available_replicas == 1))
        }
    })
    .await;

    let w1 = write_all(n, |i| {
        let (foos, name) = (foos.clone(), name(i));
        let patch = json!({ "spec": { "replicas": 2 } });
        async move {
            foos.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
        }
    })
    .await;
    let t2 = until("sample scale", async || replicas(&deploys, &all, 2).await == (n, n)).await;

    let w2 = write_all(n, |i| {
        let (foos, name) = (foos.clone(), name(i));
        async move {
            foos.delete(&name, &DeleteParams::default()).await.unwrap();
        }
    })
    .await;
    let t3 = until("sample delete", async || replicas(&deploys, &all, 0).await.1 == 0).await;

    let peak_rss_mib = controller.peak_rss_mib();
    let total = t3 - spawned;
    controller.terminate().await;
    sandbox.terminate().await;
    Run {
        name: "sample-controller",
        startup,
        phases: [t1 - t0, t2 - t1, t3 - t2],
        writes: [w0, w1, w2],
        peak_rss_mib,
        total,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list`
    }
    let n: usize =
        std::env::var("CONVERGENCE_N").map_or(1000, |v| v.parse().expect("CONVERGENCE_N: a count"));
    let counter_bin = release_bin("counter-controller");
    let sample_bin = release_bin("sample-controller");
    let sandbox_bin = release_bin("kube-sandbox");
    let dir = std::env::temp_dir().join(format!("sample-convergence-{}", std::process::id()));
    let (counter_dir, sample_dir) = (dir.join("counter"), dir.join("sample"));
    std::fs::create_dir_all(&counter_dir).unwrap();
    std::fs::create_dir_all(&sample_dir).unwrap();
    println!("binaries: {} and {}", counter_bin.display(), sample_bin.display());
    println!("logs: {}", dir.display());

    let runs = [
        counter(&counter_bin, &sandbox_bin, n, &counter_dir).await,
        sample(&sample_bin, &sandbox_bin, n, &sample_dir).await,
    ];

    println!();
    println!(
        "objects: {n} (writes {CONCURRENCY} at a time, a list every {} ms, --workers {WORKERS}, \
         sandbox --pod-ready {POD_READY})",
        POLL.as_millis()
    );
    println!(
        "{:<18} | {:>8} | {:>8} | {:>8} | {:>12} | {:>7}",
        "controller", "create s", "scale s", "delete s", "peak RSS MiB", "total s"
    );
    println!("{:-<18}-+-{:->8}-+-{:->8}-+-{:->8}-+-{:->12}-+-{:->7}", "", "", "", "", "", "");
    let cells = |r: &Run| {
        let [c, s, d] = r.phases.map(|p| p.as_secs_f64());
        [c, s, d, r.peak_rss_mib, r.total.as_secs_f64()]
    };
    for r in &runs {
        let [c, s, d, m, t] = cells(r);
        println!("{:<18} | {c:>8.2} | {s:>8.2} | {d:>8.2} | {m:>12.1} | {t:>7.2}", r.name);
    }
    let (a, b) = (cells(&runs[0]), cells(&runs[1]));
    let [c, s, d, m, t] = std::array::from_fn(|i| b[i] / a[i]);
    println!("{:<18} | {c:>8.2} | {s:>8.2} | {d:>8.2} | {m:>12.2} | {t:>7.2}", "sample/counter");
    println!();
    for r in &runs {
        let [c, s, d] = r.writes.map(|w| w.as_secs_f64());
        println!(
            "{}: start-up to ready {:.2}s; the client's writes took {c:.2}s (create), {s:.2}s (scale), \
             {d:.2}s (delete)",
            r.name,
            r.startup.as_secs_f64()
        );
    }
}
