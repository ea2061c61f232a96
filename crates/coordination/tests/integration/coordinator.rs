//! The coordinator on the sandbox, with a reconcile that only records what it was given: alone it
//! works on every cached key; elected it works only while leading; a fenced write is requeued,
//! not counted as an error; and the part stands alone — no controller crate among its
//! dependencies.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube_coordination::{Coordination, Coordinator, Reconcile, Settings, Watched};
use kube_informer::{Config, EnqueueKey, Informer, ObjectKey};
use kube_lease_election::Leadership;
use kube_sandbox::{Sandbox, SandboxConfig};
use kube_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::sync::{Notify, watch};

/// Records every key it reconciles; with `fence_first`, a key's first reconcile fails as a
/// write the fence withheld.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    fence_first: bool,
    progress: Notify,
}

#[derive(Debug)]
struct Withheld;

impl std::fmt::Display for Withheld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("write withheld by the fence")
    }
}

impl Reconcile for Recorder {
    type Error = Withheld;

    async fn reconcile(&self, key: &ObjectKey) -> Result<(), Withheld> {
        let first = {
            let mut seen = self.seen.lock();
            let first = !seen.contains(&key.to_string());
            seen.push(key.to_string());
            first
        };
        self.progress.notify_waiters();
        if self.fence_first && first { Err(Withheld) } else { Ok(()) }
    }

    fn is_fenced(_: &Withheld) -> bool {
        true
    }
}

impl Recorder {
    fn keys(&self) -> BTreeSet<String> {
        self.seen.lock().iter().cloned().collect()
    }

    /// Waits until `done` holds, failing when nothing has been reconciled for a long while.
    async fn until(&self, what: &str, done: impl Fn(&Self) -> bool) {
        loop {
            let progressed = self.progress.notified();
            if done(self) {
                return;
            }
            let seen = self.seen.lock().len();
            if tokio::time::timeout(Duration::from_secs(60), progressed).await.is_err()
                && self.seen.lock().len() == seen
            {
                panic!("no progress towards {what} for 60 s; reconciled {:?}", self.keys());
            }
        }
    }
}

async fn with_configmaps(names: &[&str]) -> Sandbox {
    let sandbox = Sandbox::with_config(SandboxConfig::bare());
    for name in names {
        sandbox
            .seed(serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name, "namespace": "default" } }))
            .unwrap();
    }
    sandbox
}

fn coordinator(sandbox: &Sandbox, registry: &mut Registry) -> Arc<Coordinator> {
    let informer = Informer::new(Api::<ConfigMap>::default_namespaced(sandbox.client()), Config::default());
    let queue = RateLimitingQueue::new(default_controller_rate_limiter());
    let q = queue.clone();
    informer.add_handler(Arc::new(EnqueueKey::new(move |k| {
        q.add(k);
    })));
    Coordinator::new(
        queue,
        vec![Watched::source(informer, "ConfigMap", ObjectKey::of)],
        Settings::new("recorder", 2, "test"),
        registry,
    )
}

fn metric(registry: &Registry, line_start: &str) -> Option<f64> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines().find(|l| l.starts_with(line_start)).and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alone_it_reconciles_every_key_and_stops_when_told() {
    let sandbox = with_configmaps(&["a", "b", "c"]).await;
    let mut registry = Registry::default();
    let coordinator = coordinator(&sandbox, &mut registry);
    let recorder = Arc::new(Recorder::default());
    let stop = Arc::new(Notify::new());
    let run = tokio::spawn({
        let (c, r, stop) = (Arc::clone(&coordinator), Arc::clone(&recorder), Arc::clone(&stop));
        async move { c.run(r, Coordination::Alone, stop.notified_owned()).await }
    });
    recorder.until("every key", |r| r.keys().len() == 3).await;
    assert_eq!(recorder.keys(), ["default/a", "default/b", "default/c"].map(String::from).into());
    stop.notify_one();
    assert!(run.await.unwrap(), "the caches synced before shutdown");
    assert_eq!(
        metric(&registry, r#"controller_runtime_reconcile_total{controller="recorder",result="success"}"#),
        Some(3.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elected_it_works_only_while_leading_and_requeues_fenced_writes() {
    let sandbox = with_configmaps(&["a", "b"]).await;
    let mut registry = Registry::default();
    let coordinator = coordinator(&sandbox, &mut registry);
    let recorder = Arc::new(Recorder { fence_first: true, ..Recorder::default() });
    let (leadership, rx) = watch::channel(Leadership::Following { holder: "other".into() });
    let stop = Arc::new(Notify::new());
    let run = tokio::spawn({
        let (c, r, stop) = (Arc::clone(&coordinator), Arc::clone(&recorder), Arc::clone(&stop));
        async move { c.run(r, Coordination::Elected(rx), stop.notified_owned()).await }
    });
    // A follower's caches fill, but nothing is reconciled: wait for the sync gate to pass (a new
    // ConfigMap is cached) and see that no key was worked on.
    let cms: Api<ConfigMap> = Api::default_namespaced(sandbox.client());
    let lister_probe = Informer::new(cms.clone(), Config::default());
    let probe = tokio::spawn({
        let p = lister_probe.clone();
        async move { p.run(std::future::pending::<()>()).await }
    });
    assert!(lister_probe.wait_for_cache_sync(std::future::pending::<()>()).await);
    tokio::task::yield_now().await;
    assert!(recorder.keys().is_empty(), "a follower reconciled {:?}", recorder.keys());

    // Leading: every cached key, at once; a fenced write is requeued (and retried), not an error.
    leadership.send_replace(Leadership::Leading);
    recorder.until("both keys retried after their fenced writes", |r| r.seen.lock().len() >= 4).await;
    let requeued = r#"controller_runtime_reconcile_total{controller="recorder",result="requeue"}"#;
    let succeeded = r#"controller_runtime_reconcile_total{controller="recorder",result="success"}"#;
    // A worker records the outcome just after the reconcile returns (a minute means stuck).
    for _ in 0..6000 {
        if metric(&registry, succeeded) >= Some(2.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(metric(&registry, succeeded), Some(2.0));
    assert_eq!(metric(&registry, requeued), Some(2.0));
    assert_eq!(
        metric(&registry, r#"controller_runtime_reconcile_errors_total{controller="recorder"}"#),
        Some(0.0)
    );

    // Following again: the workers stop; a new ConfigMap is cached but not reconciled until the
    // next term, which starts with every cached key.
    leadership.send_replace(Leadership::Following { holder: "other".into() });
    let before = recorder.seen.lock().len();
    sandbox
        .seed(serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "late", "namespace": "default" } }))
        .unwrap();
    leadership.send_replace(Leadership::Leading);
    recorder.until("the late key in the next term", |r| r.keys().contains("default/late")).await;
    assert!(recorder.seen.lock().len() > before);
    stop.notify_one();
    assert!(run.await.unwrap());
    probe.abort();
}

#[test]
fn the_part_depends_on_no_controller() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    for controller in ["counter-controller", "counter_controller", "sample-controller", "sample_controller"] {
        assert!(!manifest.contains(controller), "the coordination part depends on {controller}");
    }
}

/// A late write built by `ReadVersion` is refused after an A-B-A of the field it changes (3 → 5
/// → 3 by someone else, then the late "3 → 5" arrives): the condition is the version read, not
/// the field's value, so a value that came back does not make the stale decision current.
#[tokio::test]
async fn a_late_conditional_write_is_refused_after_an_a_b_a() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
    use kube_coordination::ReadVersion;
    use serde_json::json;

    let sb = Sandbox::with_config(SandboxConfig::bare());
    let deploys: Api<Deployment> = Api::default_namespaced(sb.client());
    let d: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "web" },
        "spec": { "replicas": 3, "selector": { "matchLabels": { "app": "web" } },
                  "template": { "metadata": { "labels": { "app": "web" } },
                                "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } },
    }))
    .unwrap();
    let read = ReadVersion::of(&deploys.create(&PostParams::default(), &d).await.unwrap());
    for replicas in [5, 3] {
        let patch = json!({ "spec": { "replicas": replicas } });
        deploys.patch("web", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    }
    let refused = |r: Result<Deployment, kube::Error>| {
        let e = r.unwrap_err();
        assert!(read.conflict(&e).is_some(), "{e}");
    };
    let scale = read.json_patch([json!({ "op": "replace", "path": "/spec/replicas", "value": 5 })]);
    refused(deploys.patch("web", &PatchParams::default(), &Patch::<()>::Json(scale)).await);
    let merge = read.merge_patch(json!({ "spec": { "replicas": 5 } }));
    refused(deploys.patch("web", &PatchParams::default(), &Patch::Merge(merge)).await);
    let status = read.merge_patch(json!({ "status": { "replicas": 5 } }));
    refused(deploys.patch_status("web", &PatchParams::default(), &Patch::Merge(status)).await);
    let e = deploys.delete("web", &read.delete_params(DeleteParams::background())).await.unwrap_err();
    assert!(read.conflict(&e).is_some(), "{e}");
    assert_eq!(deploys.get("web").await.unwrap().spec.replicas, Some(3), "nothing applied");
    // The version as it is now goes through.
    let now = ReadVersion::of(&deploys.get("web").await.unwrap());
    let scale = now.json_patch([json!({ "op": "replace", "path": "/spec/replicas", "value": 5 })]);
    deploys.patch("web", &PatchParams::default(), &Patch::<()>::Json(scale)).await.unwrap();
}
