//! The sample-controller is built from the parts and the `kube-manager` crate, never from another
//! controller: no dependency of any kind (normal, dev, build), direct or through a crate of the
//! workspace, reaches `counter-controller`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Each workspace crate's dependencies on other workspace crates (by path), of every kind.
fn workspace_edges() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut edges = BTreeMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let deps = p["dependencies"].as_array().expect("dependencies");
        let local =
            deps.iter().filter(|d| d["path"].is_string()).map(|d| d["name"].as_str().unwrap().to_owned());
        edges.insert(p["name"].as_str().unwrap().to_owned(), local.collect());
    }
    edges
}

/// Every workspace crate `from` depends on, directly or not.
fn reachable(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_owned()];
    while let Some(c) = todo.pop() {
        for d in edges.get(&c).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn needs_no_other_controller() {
    let edges = workspace_edges();
    assert!(edges.contains_key("counter-controller"), "the workspace has the counter: {edges:?}");
    let deps = reachable(&edges, "sample-controller");
    assert!(deps.contains("kube-manager"), "built on the kube-manager crate: {deps:?}");
    assert!(!deps.contains("counter-controller"), "sample-controller reaches counter-controller: {deps:?}");
    // And no part reaches a controller: the arrows point one way.
    for part in [
        "kube-workqueue",
        "kube-informer",
        "kube-lease-election",
        "kube-coordination",
        "kube-sandbox",
        "kube-manager",
    ] {
        let from_part = reachable(&edges, part);
        for controller in ["counter-controller", "sample-controller"] {
            assert!(!from_part.contains(controller), "{part} depends on {controller}: {from_part:?}");
        }
    }
}
