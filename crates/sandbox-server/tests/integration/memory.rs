//! The sandbox's memory per stored object, against the budget in `memory-budget.toml`: the
//! `kube-sandbox` process, ConfigMaps of about 1 KiB of data created through its API, the growth
//! of its resident memory over their number. Memory is no wall clock: steady enough to guard.

use std::path::Path;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::common::{Server, temp_dir};

/// `key = number` from the budget file (a comment or another key is passed over).
fn budget(file: &Path, key: &str) -> u64 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .filter_map(|l| l.split('#').next()?.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{} has no `{key} = <number>`", file.display()))
}

/// `VmRSS` of process `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    // `VmRSS:     12345 kB`
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/<pid>/status");
    let kib: u64 = line["VmRSS:".len()..].trim().trim_end_matches("kB").trim().parse().unwrap();
    kib * 1024
}

/// A ConfigMap as an application's: two labels and about 1 KiB of settings.
fn configmap(i: usize) -> ConfigMap {
    let name = format!("app-{i:05}");
    let line = format!("{name}.setting: value-of-the-setting-for-{name}\n");
    let settings: String = line.repeat(1024 / line.len() + 1).chars().take(1024).collect();
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop" } },
        "data": { "settings.yaml": settings },
    }))
    .unwrap()
}

/// Creates ConfigMaps `from..to`, 16 at a time.
async fn create(cms: &Api<ConfigMap>, from: usize, to: usize) {
    let tasks: Vec<_> = (0..16)
        .map(|lane| {
            let cms = cms.clone();
            tokio::spawn(async move {
                for i in (from + lane..to).step_by(16) {
                    cms.create(&PostParams::default(), &configmap(i)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_stored_configmap_stays_within_its_budget() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("memory-budget.toml");
    let (n, limit) = (budget(&file, "configmaps") as usize, budget(&file, "bytes_per_configmap"));
    let dir = temp_dir("memory");
    let server = Server::start(&dir, &["--no-simulation"]);
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client().await);
    // A few hundred first, so the growth measured is the objects', not the first requests' (TLS,
    // the connection pool, the allocator's first pages).
    let warm = 300;
    create(&cms, 0, warm).await;
    let before = rss(server.child.id());
    create(&cms, warm, warm + n).await;
    let after = rss(server.child.id());
    let per = after.saturating_sub(before) / n as u64;
    eprintln!(
        "kube-sandbox: {per} bytes of resident memory per stored ConfigMap ({n} of ~1 KiB; budget {limit})"
    );
    assert!(
        per <= limit,
        "the sandbox's memory per stored ConfigMap grew to {per} bytes ({n} ConfigMaps of ~1 KiB: {:.1} → {:.1} MiB), over its budget of {limit} bytes in {}; find what grew, or raise the budget there if the growth is wanted",
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        file.display()
    );
    drop(server);
}
