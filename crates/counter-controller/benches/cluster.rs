//! The simulated cluster at scale: the `kube-sandbox` binary (built beside this bench: `cargo build
//! --release -p kube-sandbox-server`) in its own process (its memory is its own) with `CLUSTER_NODES` simulated nodes (1,000 by default), and
//! `CLUSTER_PODS` pods (100,000) created over HTTPS by a `kube::Client`, `CLUSTER_CONCURRENCY`
//! (32) at a time. Printed: pods created per second; the time until every pod is Running and
//! Ready (bound by the scheduler, started and made ready by its node's kubelet), from the first
//! create and after the last; peak RSS (VmHWM) with bytes per pod beside the pods' own JSON.
//!
//! The baseline, in the same run: a fresh sandbox process with the same nodes and as many plain
//! ConfigMaps, each carrying as many bytes of data (letters and digits, different in each) as a
//! ready pod's JSON has — the same creates through the same client, with nothing to schedule or
//! run. Ratios are pods over ConfigMaps.
//!
//! Pods are shaped as a Deployment's: labels, a container with requests, ports and a probe,
//! the defaults the API server fills in; readiness is immediate (`--pod-ready 0s`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::ObjectList;
use kube::{Client, Config};
use serde_json::json;

/// The `kube-sandbox` binary of this bench's own profile (`target/release/`, beside `deps/`
/// where the bench runs from); the command that builds it when it is missing.
fn sandbox_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench's own path");
    let bin =
        exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<bench>").join("kube-sandbox");
    assert!(bin.exists(), "{} is missing: cargo build --release -p kube-sandbox-server", bin.display());
    bin
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A sandbox process and a client of it.
struct Server {
    child: Child,
    client: Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(dir: &Path, nodes: usize) -> Self {
        let kubeconfig = dir.join(format!("k-{nodes}-{}", std::process::id()));
        let _ = std::fs::remove_file(&kubeconfig);
        let child = Command::new(sandbox_bin())
            .args(["--listen", "127.0.0.1:0", "--pod-ready", "0s", "--log-format", "json"])
            .args(["--nodes", &nodes.to_string(), "--kubeconfig-out"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the kube-sandbox binary starts");
        while !kubeconfig.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let kc = Kubeconfig::read_from(&kubeconfig).expect("the sandbox's kubeconfig");
        let config =
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.expect("a client config");
        let client = Client::try_from(config).expect("a client");
        let all: Api<Node> = Api::all(client.clone());
        while all.list_metadata(&ListParams::default()).await.map(|l| l.items.len()).unwrap_or(0) < nodes {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self { child, client }
    }

    /// Peak resident memory (VmHWM), in bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    }
}

fn pod(i: usize) -> Pod {
    let app = format!("app-{}", i % 100);
    serde_json::from_value(json!({
        "metadata": { "generateName": format!("{app}-"), "labels": { "app": app, "tier": "web", "pod-template-hash": "5d8c7f9b6" } },
        "spec": { "containers": [{
            "name": "web", "image": "registry.example.com/team/web:1.27.3",
            "ports": [{ "name": "http", "containerPort": 8080 }],
            "resources": { "requests": { "cpu": "10m", "memory": "16Mi" }, "limits": { "memory": "64Mi" } },
            "readinessProbe": { "httpGet": { "path": "/healthz", "port": "http" }, "periodSeconds": 5 },
            "env": [{ "name": "MODE", "value": "production" }],
        }] },
    }))
    .expect("a pod")
}

/// What the readiness watch (and its relist) reads of a pod: its name, version and conditions.
/// The watch is the bench's instrument, not the workload, and the client shares the sandbox's two
/// cores: decoding every event into a whole `Pod` took the client 7.4 CPU-seconds for 20,000 pods
/// where this takes 6.1.
#[derive(Clone, Debug, serde::Deserialize)]
struct Readiness {
    metadata: ReadinessMeta,
    #[serde(default)]
    status: Option<ReadinessStatus>,
}

#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadinessMeta {
    name: String,
    resource_version: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
struct ReadinessStatus {
    #[serde(default)]
    conditions: Option<Vec<Condition>>,
}

#[derive(Clone, Debug, serde::Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

impl Readiness {
    fn ready(&self) -> bool {
        let conditions = self.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True")
    }
}

/// Where the pods are created, watched and listed.
const PODS: &str = "/api/v1/namespaces/default/pods";

/// The ready pods by a paginated list, and the version it was read at.
async fn ready_pods(client: &Client) -> (std::collections::HashSet<String>, String) {
    let mut names = std::collections::HashSet::new();
    let mut params = ListParams::default().limit(5000);
    loop {
        let request = kube::core::Request::new(PODS).list(&params).expect("a list request");
        let page: ObjectList<Readiness> = client.request(request).await.unwrap();
        names.extend(page.items.into_iter().filter(Readiness::ready).map(|p| p.metadata.name));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return (names, page.metadata.resource_version.unwrap_or_default()),
        }
    }
}

struct Figures {
    created_per_s: f64,
    create: Duration,
    all_ready: Duration,
    peak_rss: u64,
    object_bytes: u64,
}

/// Creates `n` objects with `make`, `concurrency` at a time; how long it took.
async fn create_all<F, Fut>(n: usize, concurrency: usize, make: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    futures::stream::iter(0..n).map(make).buffer_unordered(concurrency).collect::<()>().await;
    start.elapsed()
}

async fn run_pods(dir: &Path, nodes: usize, n: usize, concurrency: usize) -> Figures {
    let server = Server::start(dir, nodes).await;
    let pods: Api<Pod> = Api::namespaced(server.client.clone(), "default");
    let rv = pods.list_metadata(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    // Every pod's readiness, as a watch from before the first create sees it.
    let start = Instant::now();
    let client = server.client.clone();
    let ready_task = tokio::spawn(async move {
        let mut ready = std::collections::HashSet::new();
        let mut from = rv;
        // A watch lasts at most 290 s, the next resuming where it ended; one that fell behind
        // the server's history (410) is followed by a list, as an informer relists.
        while ready.len() < n {
            let params = WatchParams::default().timeout(290);
            let request = kube::core::Request::new(PODS).watch(&params, &from).expect("a watch request");
            let mut stream = client.request_events::<Readiness>(request).await.unwrap().boxed();
            let mut expired = false;
            while let Ok(Some(event)) = stream.try_next().await {
                match event {
                    WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                        if p.ready() {
                            ready.insert(p.metadata.name);
                        }
                        from = p.metadata.resource_version;
                    }
                    WatchEvent::Bookmark(b) => from = b.metadata.resource_version,
                    WatchEvent::Error(_) => {
                        expired = true;
                        break;
                    }
                    WatchEvent::Deleted(_) => {}
                }
                if ready.len() == n {
                    break;
                }
            }
            if expired {
                let (names, rv) = ready_pods(&client).await;
                ready = names;
                from = rv;
            }
        }
        (ready.len(), start.elapsed())
    });
    let create = create_all(n, concurrency, |i| {
        let pods = pods.clone();
        async move {
            pods.create(&PostParams::default(), &pod(i)).await.expect("a pod created");
        }
    })
    .await;
    let (ready, all_ready) = ready_task.await.unwrap();
    assert_eq!(ready, n, "every pod Running and Ready");
    let sample = pods.list(&ListParams::default().labels("app").limit(1)).await.unwrap().items.remove(0);
    let object_bytes = serde_json::to_vec(&sample).unwrap().len() as u64;
    #[allow(clippy::cast_precision_loss)]
    let created_per_s = n as f64 / create.as_secs_f64();
    Figures { created_per_s, create, all_ready, peak_rss: server.peak_rss(), object_bytes }
}

async fn run_config_maps(dir: &Path, nodes: usize, n: usize, concurrency: usize, bytes: u64) -> Figures {
    let server = Server::start(dir, nodes).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client.clone());
    let filler_len = usize::try_from(bytes).unwrap_or(0).saturating_sub(200);
    let create = create_all(n, concurrency, |i| {
        let cms = cms.clone();
        let filler = filler(i, filler_len);
        async move {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": { "generateName": "settings-", "labels": { "app": format!("app-{}", i % 100) } },
                "data": { "settings": filler },
            }))
            .unwrap();
            cms.create(&PostParams::default(), &cm).await.expect("a config map created");
        }
    })
    .await;
    // One of those created (not the namespace's own kube-root-ca.crt).
    let sample = cms.list(&ListParams::default().labels("app").limit(1)).await.unwrap().items;
    let object_bytes = sample.iter().map(|c| serde_json::to_vec(c).unwrap().len() as u64).next().unwrap_or(0);
    #[allow(clippy::cast_precision_loss)]
    let created_per_s = n as f64 / create.as_secs_f64();
    Figures { created_per_s, create, all_ready: create, peak_rss: server.peak_rss(), object_bytes }
}

/// `len` letters and digits, different for each object: a ConfigMap's data that compresses no
/// better than a pod's JSON does (a repeated letter would compress to nothing and flatter the
/// baseline).
fn filler(seed: usize, len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64: cheap, and enough to leave no repetition for LZ4 to find.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(ALPHABET[usize::try_from(x % 36).unwrap_or(0)])
        })
        .collect()
}

#[allow(clippy::cast_precision_loss)]
fn main() {
    let nodes = env_or("CLUSTER_NODES", 1000);
    let n = env_or("CLUSTER_PODS", 100_000);
    let concurrency = env_or("CLUSTER_CONCURRENCY", 32);
    let dir: PathBuf = std::env::temp_dir();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        println!(
            "simulated cluster: {nodes} nodes, {n} objects, {concurrency} creates at a time, over HTTPS"
        );
        let pods = run_pods(&dir, nodes, n, concurrency).await;
        let maps = run_config_maps(&dir, nodes, n, concurrency, pods.object_bytes).await;
        let per = |f: &Figures| f.peak_rss as f64 / n as f64;
        println!("{:<34} {:>14} {:>14} {:>8}", "", "pods", "configmaps", "ratio");
        println!(
            "{:<34} {:>14.0} {:>14.0} {:>8.2}",
            "created per second",
            pods.created_per_s,
            maps.created_per_s,
            pods.created_per_s / maps.created_per_s
        );
        println!(
            "{:<34} {:>14.1} {:>14.1} {:>8.2}",
            "creating all (s)",
            pods.create.as_secs_f64(),
            maps.create.as_secs_f64(),
            pods.create.as_secs_f64() / maps.create.as_secs_f64()
        );
        println!(
            "{:<34} {:>14.1} {:>14} {:>8.2}",
            "all Running and Ready (s)",
            pods.all_ready.as_secs_f64(),
            "-",
            pods.all_ready.as_secs_f64() / pods.create.as_secs_f64()
        );
        println!(
            "{:<34} {:>14.0} {:>14.0} {:>8.2}",
            "peak RSS (MiB)",
            pods.peak_rss as f64 / 1048576.0,
            maps.peak_rss as f64 / 1048576.0,
            pods.peak_rss as f64 / maps.peak_rss as f64
        );
        println!(
            "{:<34} {:>14.0} {:>14.0} {:>8.2}",
            "RSS per object (bytes)",
            per(&pods),
            per(&maps),
            per(&pods) / per(&maps)
        );
        println!(
            "{:<34} {:>14} {:>14} {:>8.2}",
            "object JSON (bytes)",
            pods.object_bytes,
            maps.object_bytes,
            pods.object_bytes as f64 / maps.object_bytes as f64
        );
        println!(
            "{:<34} {:>14.2} {:>14.2}",
            "RSS per object / its JSON",
            per(&pods) / pods.object_bytes as f64,
            per(&maps) / maps.object_bytes as f64
        );
        println!("(the 'all Running and Ready' ratio is against the pods' own creation time; goal ≤ 2)");
    });
}
