//! The controller's memory, against the budget in `benches/memory-budget.toml`: the binary in its
//! own process converging a few thousand realistic ConfigMaps on the sandbox, its peak resident
//! memory (VmHWM) read once every Deployment exists. Memory is no wall clock: steady enough to
//! guard, so a change that grows it fails here instead of going unnoticed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::common::{BIN, KillOnDrop, serve_sandbox_with, temp_dir};

/// `key = number` from the budget file (comments and other keys passed over).
fn budget(file: &Path, key: &str) -> f64 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let value =
        text.lines().filter_map(|l| l.split('#').next()?.split_once('=')).find(|(k, _)| k.trim() == key);
    value
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{} has no `{key} = <number>`", file.display()))
}

/// A ConfigMap as an application's, annotated: labels and about 1 KiB of settings.
fn configmap(i: usize) -> serde_json::Value {
    let name = format!("shop-{i:05}");
    let line = format!("{name}.setting: value-of-the-setting-for-{name}\n");
    let settings: String = line.repeat(1024 / line.len() + 1).chars().take(1024).collect();
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": name, "namespace": "default",
            "labels": { "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop", "team": "payments" },
            "annotations": { "counter.example.com/desired": "2" },
        },
        "data": { "app": name, "settings.yaml": settings },
    })
}

/// `VmHWM` of process `pid`, in MiB.
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
    kib.expect("VmHWM in /proc/<pid>/status") / 1024.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_peak_memory_stays_within_its_budget() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/memory-budget.toml");
    let (n, limit) = (budget(&file, "configmaps") as usize, budget(&file, "peak_rss_mib"));
    let dir = temp_dir("memory");
    let sb = serve_sandbox_with(&dir, kube_sandbox::SandboxConfig::bare()).await;
    let cms = kube_sandbox::builtin_resource("", "v1", "configmaps").unwrap();
    for i in 0..n {
        sb.sandbox.store().create(cms, "default", configmap(i), None).unwrap();
    }
    let log = dir.join("controller.log");
    let mut controller = KillOnDrop(
        Command::new(BIN)
            .args(["run", "--namespace=default", "--log-format=json"])
            .env("KUBECONFIG", &sb.kubeconfig)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("the binary starts"),
    );
    let pid = controller.0.id();

    // Until every Deployment exists: waiting on progress, failing only when there is none.
    let deployments: Api<Deployment> = Api::namespaced(sb.sandbox.client(), "default");
    let (mut seen, mut moved) = (0, Instant::now());
    while seen < n {
        if let Some(status) = controller.0.try_wait().unwrap() {
            panic!("the controller exited ({status}): {}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        let now = deployments.list_metadata(&ListParams::default()).await.unwrap().items.len();
        if now > seen {
            (seen, moved) = (now, Instant::now());
        }
        assert!(moved.elapsed() < Duration::from_secs(120), "no Deployment created for 120 s: {seen} of {n}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let peak = peak_rss_mib(pid);
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let status = controller.0.wait().unwrap();
    eprintln!("counter-controller: peak RSS {peak:.1} MiB converging {n} ConfigMaps (budget {limit} MiB)");
    assert!(status.success(), "SIGTERM: {status}");
    assert!(
        peak <= limit,
        "the controller's peak RSS was {peak:.1} MiB converging {n} ConfigMaps, over its budget of {limit} MiB in {}; find what grew, or raise the budget there if the growth is wanted",
        file.display()
    );
}
