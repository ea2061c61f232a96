//! The controller end to end with a real `kube::Client` on the sandbox: the seed's five tests by
//! name, then the safety rows, drift, restarts, idempotence, conflicts, failures and shutdown,
//! and ConfigMaps without the annotation (not cached, only known to exist): gaining and losing
//! it, deleted, gone at a relist, deleted while the controller was down.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use counter_controller::Controller;
use counter_controller::controller::Error;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_informer::ObjectKey;
use kube_manager::{Options, Scope};
use kube_sandbox::{FaultKind, FaultRule, Rollout, Sandbox, SandboxConfig, StoreConfig};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const ANNOTATION: &str = "counter.example.com/desired";

/// A sandbox without the garbage collector, so every delete seen is the controller's.
fn sandbox() -> Sandbox {
    Sandbox::with_config(SandboxConfig {
        rollout: Rollout::Instant,
        store: StoreConfig { garbage_collection: false, ..StoreConfig::default() },
        ..SandboxConfig::default()
    })
}

struct Running {
    controller: Arc<Controller>,
    registry: Registry,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<bool>,
}

impl Running {
    async fn stop(self) -> bool {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.task).await.expect("controller stopped").unwrap()
    }

    fn metrics(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).unwrap();
        text
    }
}

fn controller(sb: &Sandbox, resync: Duration) -> (Arc<Controller>, Registry) {
    let mut registry = Registry::default();
    let options =
        Options { scope: Scope::Namespace("default".into()), workers: 2, resync, ..Options::default() };
    (Controller::new(sb.client(), options, &mut registry), registry)
}

fn start(sb: &Sandbox) -> Running {
    start_with(sb, Duration::ZERO)
}

fn start_with(sb: &Sandbox, resync: Duration) -> Running {
    let (controller, registry) = controller(sb, resync);
    let stop = CancellationToken::new();
    let task = tokio::spawn(Arc::clone(&controller).run(stop.clone().cancelled_owned()));
    Running { controller, registry, stop, task }
}

fn cm(name: &str, desired: Option<&str>) -> ConfigMap {
    let mut v = json!({ "metadata": { "name": name }, "data": { "app": name } });
    if let Some(d) = desired {
        v["metadata"]["annotations"] = json!({ ANNOTATION: d });
    }
    serde_json::from_value(v).unwrap()
}

/// Deletes of Deployments that took effect. A delete carries the resourceVersion the controller
/// read as precondition, so one that crosses the simulated Deployment controller's status write is
/// refused (409) and retried: only the one that succeeded counts.
fn deployments_deleted(sb: &Sandbox) -> usize {
    let all = sb.requests().all();
    all.iter().filter(|r| r.verb == "delete" && r.resource == "deployments" && r.code < 300).count()
}

/// Waits for the controller's one effective delete of a Deployment: its record is written as the
/// answer leaves, which the test's own read of the Deployment can overtake.
async fn deleted_once(sb: &Sandbox) {
    eventually("the delete is recorded", || async { deployments_deleted(sb) > 0 }).await;
    assert_eq!(deployments_deleted(sb), 1, "the controller deleted it once (no garbage collector here)");
}

fn apis(sb: &Sandbox) -> (Api<ConfigMap>, Api<Deployment>) {
    (Api::default_namespaced(sb.client()), Api::default_namespaced(sb.client()))
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn replicas(deploys: &Api<Deployment>, name: &str) -> Option<i32> {
    deploys.get_opt(name).await.unwrap().and_then(|d| d.spec.replicas)
}

async fn wait_replicas(deploys: &Api<Deployment>, name: &str, want: Option<i32>) {
    eventually(&format!("deployment {name} replicas {want:?}"), || async {
        replicas(deploys, name).await == want
    })
    .await;
}

async fn events(sb: &Sandbox) -> Vec<(String, String, String)> {
    let api: Api<Event> = Api::default_namespaced(sb.client());
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

fn ours(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app": name, "managed-by": "counter-controller" } },
        "spec": { "replicas": replicas, "selector": { "matchLabels": { "app": name } },
                  "template": { "metadata": { "labels": { "app": name } }, "spec": { "containers": [{ "name": "nginx", "image": "nginx:1.27" }] } } },
    }))
    .unwrap()
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

// ---- The seed's five tests ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_reconcile_create_deployment() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    cms.create(&PostParams::default(), &cm("web", Some("3"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(3)).await;
    assert!(run.stop().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_reconcile_scale_to_match() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    deploys.create(&PostParams::default(), &ours("web", 2)).await.unwrap();
    cms.create(&PostParams::default(), &cm("web", Some("5"))).await.unwrap();
    let run = start(&sb);
    wait_replicas(&deploys, "web", Some(5)).await;
    eventually("a Scaled event", || async {
        events(&sb).await.iter().any(|(t, r, m)| t == "Normal" && r == "Scaled" && m.contains("from 2 to 5"))
    })
    .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_reconcile_no_annotation_ignored() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    cms.create(&PostParams::default(), &cm("web", None)).await.unwrap();
    let run = start(&sb);
    eventually("the key was processed", || async {
        sb.requests().count("list", "deployments") > 0 && run.controller.queue().is_empty()
    })
    .await;
    run.controller.sync(&key("web")).await.unwrap();
    assert!(deploys.get_opt("web").await.unwrap().is_none());
    assert_eq!(sb.requests().count("create", "deployments"), 0);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_reconcile_delete_follows() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    cms.create(&PostParams::default(), &cm("web", Some("3"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(3)).await;
    cms.delete("web", &DeleteParams::default()).await.unwrap();
    wait_replicas(&deploys, "web", None).await;
    deleted_once(&sb).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_reconcile_invalid_annotation() {
    let sb = sandbox();
    let (cms, _) = apis(&sb);
    cms.create(&PostParams::default(), &cm("web", Some("not-a-number"))).await.unwrap();
    let run = start(&sb);
    eventually("the invalid key is retried", || async {
        run.controller.queue().num_requeues(&key("web")) >= 2
    })
    .await;
    let err = run.controller.sync(&key("web")).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidAnnotation { source, .. } if source.value == "not-a-number"),
        "{err}"
    );
    assert!(err.to_string().contains("\"not-a-number\""), "{err}");
    eventually("an InvalidAnnotation warning", || async {
        events(&sb)
            .await
            .iter()
            .any(|(t, r, m)| t == "Warning" && r == "InvalidAnnotation" && m.contains("not-a-number"))
    })
    .await;
    assert_eq!(sb.requests().count("create", "deployments"), 0);
    run.stop().await;
}

// ---- Beyond the seed ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_we_do_not_own_is_never_touched() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let mut theirs = ours("web", 1);
    theirs.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    deploys.create(&PostParams::default(), &theirs).await.unwrap();
    cms.create(&PostParams::default(), &cm("web", Some("4"))).await.unwrap();
    let run = start(&sb);
    eventually("a ResourceExists warning", || async {
        events(&sb).await.iter().any(|(t, r, m)| {
            t == "Warning" && r == "ResourceExists" && m.contains("not managed by counter-controller")
        })
    })
    .await;
    cms.delete("web", &DeleteParams::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(replicas(&deploys, "web").await, Some(1), "never scaled, never deleted");
    let writes: Vec<_> = sb
        .requests()
        .all()
        .into_iter()
        .filter(|r| r.resource == "deployments" && r.is_write() && r.verb != "create")
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_created_deployment_carries_labels_selector_image_and_owner() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    let made = cms.create(&PostParams::default(), &cm("web", Some("2"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(2)).await;
    let d = deploys.get("web").await.unwrap();
    let labels = d.metadata.labels.unwrap();
    assert_eq!((labels["app"].as_str(), labels["managed-by"].as_str()), ("web", "counter-controller"));
    assert_eq!(d.spec.selector.match_labels.unwrap()["app"], "web");
    let pod = d.spec.template.spec.unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some("nginx:1.27"));
    let owner = &d.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("ConfigMap", "web", Some(true))
    );
    assert_eq!(Some(&owner.uid), made.metadata.uid.as_ref());
    eventually("a Created event", || async {
        events(&sb).await.iter().any(|(t, r, _)| t == "Normal" && r == "Created")
    })
    .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_annotation_is_an_error_with_retry_and_no_write() {
    let sb = sandbox();
    let (cms, _) = apis(&sb);
    let bad = ["-1", "3.5", "abc", "", "99999999999", " ", "1e3"];
    for (i, v) in bad.iter().enumerate() {
        cms.create(&PostParams::default(), &cm(&format!("bad-{i}"), Some(v))).await.unwrap();
    }
    let run = start(&sb);
    for i in 0..bad.len() {
        let k = key(&format!("bad-{i}"));
        eventually(&format!("{k} retried"), || async { run.controller.queue().num_requeues(&k) >= 1 }).await;
        assert!(matches!(run.controller.sync(&k).await, Err(Error::InvalidAnnotation { .. })));
    }
    assert_eq!(sb.requests().all().iter().filter(|r| r.resource == "deployments" && r.is_write()).count(), 0);
    assert!(run.metrics().contains("workqueue_retries_total{name=\"counter-controller\"}"));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_undone_without_waiting_for_resync() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start_with(&sb, Duration::ZERO); // no resync at all: only the Deployment watch can trigger
    cms.create(&PostParams::default(), &cm("web", Some("3"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(3)).await;
    deploys
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 7 } })))
        .await
        .unwrap();
    wait_replicas(&deploys, "web", Some(3)).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configmap_deleted_while_down_loses_its_deployment_after_restart() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    cms.create(&PostParams::default(), &cm("web", Some("2"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(2)).await;
    assert!(run.stop().await);
    cms.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(deploys.get_opt("web").await.unwrap().is_some(), "nobody deleted it yet");
    let run = start(&sb);
    wait_replicas(&deploys, "web", None).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steady_state_makes_no_reads_and_no_writes() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start_with(&sb, Duration::from_millis(100));
    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("web-{i}"), Some("2"))).await.unwrap();
    }
    for i in 0..5 {
        wait_replicas(&deploys, &format!("web-{i}"), Some(2)).await;
    }
    // Let the rollouts finish and their status events settle.
    eventually("rollouts done", || async {
        deploys
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|d| d.status.as_ref().and_then(|s| s.ready_replicas) == Some(2))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    sb.requests().clear();
    // Several resyncs replay every key to the workers; a second direct reconcile too.
    tokio::time::sleep(Duration::from_millis(600)).await;
    run.controller.sync(&key("web-0")).await.unwrap();
    run.controller.sync(&key("web-0")).await.unwrap();
    let seen: Vec<_> =
        sb.requests().all().into_iter().filter(|r| r.verb != "watch" && r.resource != "events").collect();
    assert!(seen.is_empty(), "steady state must neither read nor write: {seen:?}");
    run.stop().await;
}

/// Freezes the controller's view of Deployments: its watch is cut, and both the new watch and the
/// relist that would follow fail. First waits until that view holds `name` at `replicas` (on a busy
/// machine the watch may still be behind the API).
async fn freeze_deployment_watch(sb: &Sandbox, run: &Running, name: &str, replicas: i32) {
    let key: kube_informer::ObjectKey = format!("default/{name}").parse().unwrap();
    eventually("the controller's cache shows the Deployment", || async {
        run.controller.deployment_cache().get(&key).is_some_and(|d| d.spec.replicas == Some(replicas))
    })
    .await;
    sb.faults().add_rule(FaultRule::new(Some("watch"), Some("deployments"), 1.0, FaultKind::InternalError));
    sb.faults().add_rule(FaultRule::new(Some("list"), Some("deployments"), 1.0, FaultKind::InternalError));
    sb.faults().cut_watches();
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// How many Deployment patches the sandbox answered with `code`.
fn deployment_patches(sb: &Sandbox, code: u16) -> usize {
    sb.requests()
        .all()
        .iter()
        .filter(|r| r.resource == "deployments" && r.verb == "patch" && r.code == code)
        .count()
}

/// A metric's value in the scrape, 0 when absent.
fn scraped(text: &str, series: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok()).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_decided_over_a_stale_cache_is_refused_then_decided_again_from_the_newer_version() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    cms.create(&PostParams::default(), &cm("web", Some("2"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(2)).await;

    // The Deployment changes behind the controller's back (as the cluster's Deployment
    // controller's status writes do): the cached resourceVersion is stale.
    freeze_deployment_watch(&sb, &run, "web", 2).await;
    deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { "touched": "yes" } } })),
        )
        .await
        .unwrap();
    cms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "annotations": { ANNOTATION: "4" } } })),
    )
    .await
    .unwrap();
    eventually("the scale refused: it was conditional on the version the cache held", || async {
        deployment_patches(&sb, 409) > 0
    })
    .await;
    // Refused, and waiting for the newer version: no retry while the cache cannot have it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = || deployment_patches(&sb, 409);
    assert_eq!(refused(), 1, "one refused write, not a retry loop over a stale cache");
    assert_eq!(replicas(&deploys, "web").await, Some(2));
    let text = run.metrics();
    assert_eq!(
        scraped(&text, "counter_controller_write_conflicts_total{resource=\"deployments\"}"),
        1.0,
        "{text}"
    );
    assert_eq!(
        scraped(&text, "controller_runtime_reconcile_errors_total{controller=\"counter-controller\"}"),
        0.0
    );
    // The cache catches up: decided again from the newer version, and scaled.
    sb.faults().clear();
    wait_replicas(&deploys, "web", Some(4)).await;
    // A status write racing the retry is refused too, and counted; nothing is a failure.
    let text = run.metrics();
    let counted = scraped(&text, "counter_controller_write_conflicts_total{resource=\"deployments\"}");
    assert_eq!(counted as usize, refused(), "{text}");
    assert_eq!(
        scraped(&text, "controller_runtime_reconcile_errors_total{controller=\"counter-controller\"}"),
        0.0
    );
    let warnings = events(&sb).await.into_iter().filter(|(t, _, _)| t == "Warning").count();
    assert_eq!(warnings, 0, "a conflict is not reported as a failure");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_that_stopped_being_ours_after_the_cache_read_is_not_scaled() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    cms.create(&PostParams::default(), &cm("web", Some("2"))).await.unwrap();
    wait_replicas(&deploys, "web", Some(2)).await;

    // Someone takes the Deployment over (removes our label) while the cache still says ours.
    freeze_deployment_watch(&sb, &run, "web", 2).await;
    deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "managed-by": null } } })),
        )
        .await
        .unwrap();
    let patched = || deployment_patches(&sb, 200);
    let before = patched();
    cms.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "annotations": { ANNOTATION: "4" } } })),
    )
    .await
    .unwrap();
    eventually("the scale refused by the server (the Deployment changed since it was read)", || async {
        deployment_patches(&sb, 409) > 0
    })
    .await;
    sb.faults().clear();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(replicas(&deploys, "web").await, Some(2), "never scaled once it was not ours");
    assert_eq!(patched(), before, "no scale went through");
    run.stop().await;
}

#[test]
fn the_scale_patch_is_conditional_on_the_uid_and_version_read_then_sets_replicas() {
    let d: counter_controller::cached::CachedDeployment = serde_json::from_value(json!({
        "metadata": { "name": "web", "namespace": "default", "uid": "d-uid", "resourceVersion": "41",
                      "labels": { "managed-by": "counter-controller" } },
        "spec": { "replicas": 2, "selector": {}, "template": {} },
    }))
    .unwrap();
    let read = kube_coordination::ReadVersion::of(&d);
    let ops = serde_json::to_value(counter_controller::controller::scale_patch(&read, 5)).unwrap();
    assert_eq!(
        ops,
        json!([
            { "op": "test", "path": "/metadata/uid", "value": "d-uid" },
            { "op": "replace", "path": "/metadata/resourceVersion", "value": "41" },
            { "op": "replace", "path": "/spec/replicas", "value": 5 },
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_percent_failing_writes_still_converge_and_count_retries() {
    let sb = sandbox();
    sb.faults().seed(7);
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    sb.faults().add_rule(FaultRule::new(Some("write"), Some("deployments"), 0.1, FaultKind::InternalError));
    sb.faults().add_rule(FaultRule::new(
        Some("write"),
        Some("deployments"),
        0.11,
        FaultKind::TooManyRequests { retry_after_seconds: 0 },
    ));
    for i in 0..20 {
        cms.create(&PostParams::default(), &cm(&format!("web-{i}"), Some("3"))).await.unwrap();
    }
    for i in 0..20 {
        wait_replicas(&deploys, &format!("web-{i}"), Some(3)).await;
    }
    let failed = sb
        .requests()
        .all()
        .iter()
        .filter(|r| r.resource == "deployments" && r.is_write() && r.code >= 429)
        .count();
    assert!(failed > 0, "some writes failed");
    let text = run.metrics();
    let retries: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("workqueue_retries_total{name=\"counter-controller\"} "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(
        retries >= failed as f64,
        "every failed write was retried through the queue: {retries} retries for {failed} failures"
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_in_flight_reconciles() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    eventually("caches synced", || async { sb.requests().count("watch", "deployments") > 0 }).await;
    sb.faults().set_latency(Duration::from_millis(400));
    tokio::spawn({
        let cms = cms.clone();
        async move { cms.create(&PostParams::default(), &cm("web", Some("1"))).await.unwrap() }
    });
    eventually("a reconcile in flight", || async { run.controller.queue().processing() > 0 }).await;
    let controller = Arc::clone(&run.controller);
    assert!(run.stop().await, "run returned cleanly");
    assert_eq!(controller.queue().processing(), 0, "nothing left half-done");
    sb.faults().set_latency(Duration::ZERO);
    assert_eq!(replicas(&deploys, "web").await, Some(1), "the in-flight create finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_before_the_cache_sees_our_create_does_not_create_again() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    eventually("caches synced", || async { sb.requests().count("watch", "deployments") > 0 }).await;
    // The Deployment informer goes blind: it will not see the create for a while.
    sb.faults().add_rule(FaultRule::new(Some("watch"), Some("deployments"), 1.0, FaultKind::InternalError));
    sb.faults().cut_watches();
    tokio::time::sleep(Duration::from_millis(100)).await;
    cms.create(&PostParams::default(), &cm("web", Some("2"))).await.unwrap();
    eventually("created", || async { deploys.get_opt("web").await.unwrap().is_some() }).await;
    // The ConfigMap changes again while the cache still says "no Deployment".
    cms.patch("web", &PatchParams::default(), &Patch::Merge(json!({ "data": { "app": "v2" } })))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    sb.faults().clear();
    wait_replicas(&deploys, "web", Some(2)).await;
    let creates: Vec<u16> = sb
        .requests()
        .all()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "deployments")
        .map(|r| r.code)
        .collect();
    assert_eq!(creates, [201], "one create, no AlreadyExists from our own Deployment");
    assert!(
        !events(&sb).await.iter().any(|(_, r, _)| r == "ResourceExists"),
        "no false ResourceExists warning"
    );
    run.stop().await;
}

// ---- A Deployment event that overtakes its ConfigMap's ----

/// Creates of Deployments that took effect (the test creates none: all are the controller's).
fn deployments_created(sb: &Sandbox) -> usize {
    sb.requests()
        .all()
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "deployments" && r.code < 300)
        .count()
}

/// The consistent reads of a ConfigMap the controller's cache could not vouch for, by outcome.
fn primary_reads(run: &Running, outcome: &str) -> f64 {
    scraped(&run.metrics(), &format!("counter_controller_primary_reads_total{{outcome=\"{outcome}\"}}"))
}

/// Starts the controller, creates `web` with 2 replicas, and waits until the controller's cache
/// holds its Deployment and the request log its create.
async fn web_created_and_cached(sb: &Sandbox, cms: &Api<ConfigMap>, deploys: &Api<Deployment>) -> Running {
    let run = start(sb);
    cms.create(&PostParams::default(), &cm("web", Some("2"))).await.unwrap();
    wait_replicas(deploys, "web", Some(2)).await;
    eventually("the controller's cache holds the Deployment", || async {
        run.controller.deployment_cache().get(&key("web")).is_some()
    })
    .await;
    // The request log takes a write once its answer is made, which a busy machine can let the
    // watch event overtake.
    eventually("the create is recorded", || async { deployments_created(sb) >= 1 }).await;
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_the_garbage_collector_deleted_before_its_configmaps_delete_arrived_is_not_created_again()
 {
    // The garbage collector on: it deletes the Deployment once its owner is gone.
    let sb = Sandbox::with_config(SandboxConfig { rollout: Rollout::Instant, ..SandboxConfig::default() });
    let (cms, deploys) = apis(&sb);
    let run = web_created_and_cached(&sb, &cms, &deploys).await;
    assert_eq!(deployments_created(&sb), 1);

    // The ConfigMap watch lags: the Deployment's delete, which follows the ConfigMap's, arrives
    // first, and the reconcile it starts still finds the ConfigMap cached.
    sb.faults().pause_watch_events("configmaps");
    cms.delete("web", &DeleteParams::default()).await.unwrap();
    eventually(
        "the reconcile after the Deployment's delete (a create, or a read of the ConfigMap)",
        || async { deployments_created(&sb) > 1 || primary_reads(&run, "stale") > 0.0 },
    )
    .await;
    assert_eq!(presence(&run, "web"), "cached", "the ConfigMap's delete has not reached the cache");
    sb.faults().resume_watch_events("configmaps");
    eventually("the ConfigMap's delete reached the cache", || async { presence(&run, "web") == "absent" })
        .await;
    eventually("nothing left to do", || async {
        run.controller.queue().is_empty() && run.controller.queue().processing() == 0
    })
    .await;

    assert_eq!(deployments_created(&sb), 1, "no Deployment created for a ConfigMap already gone");
    assert_eq!(primary_reads(&run, "stale"), 1.0, "{}", run.metrics());
    assert_eq!(replicas(&deploys, "web").await, None);
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_deleted_by_hand_is_created_again_once_a_read_confirms_its_configmap() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = web_created_and_cached(&sb, &cms, &deploys).await;
    let gets =
        || sb.requests().all().iter().filter(|r| r.verb == "get" && r.resource == "configmaps").count();
    assert_eq!(gets(), 0, "a create the ConfigMap's own event asked for reads nothing");
    // Newer than anything the ConfigMap cache has seen: it cannot vouch for the ConfigMap.
    deploys.delete("web", &DeleteParams::default()).await.unwrap();
    wait_replicas(&deploys, "web", Some(2)).await;
    eventually("the second create is recorded", || async { deployments_created(&sb) == 2 }).await;
    assert_eq!(primary_reads(&run, "confirmed"), 1.0, "{}", run.metrics());
    assert_eq!(primary_reads(&run, "stale"), 0.0);
    assert_eq!(gets(), 1);
    set_annotation(&cms, "web", Some("3")).await;
    wait_replicas(&deploys, "web", Some(3)).await;
    assert_eq!(gets(), 1, "a scale reads nothing");
    run.stop().await;
}

// ---- ConfigMaps without the annotation: not cached, only known to exist ----

fn presence(run: &Running, name: &str) -> &'static str {
    match run.controller.configmap_cache().presence(&key(name)) {
        kube_informer::Presence::Cached(_) => "cached",
        kube_informer::Presence::Uncached => "uncached",
        kube_informer::Presence::Absent => "absent",
    }
}

async fn set_annotation(cms: &Api<ConfigMap>, name: &str, value: Option<&str>) {
    let patch = json!({ "metadata": { "annotations": { ANNOTATION: value } } });
    cms.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

/// A ConfigMap `name` whose Deployment (ours, at `replicas`) was made while it was annotated, and
/// which has since lost the annotation; returns once the controller's cache knows it uncached.
async fn unannotated_with_our_deployment(run: &Running, sb: &Sandbox, name: &str, replicas: i32) {
    let (cms, deploys) = apis(sb);
    cms.create(&PostParams::default(), &cm(name, Some(&replicas.to_string()))).await.unwrap();
    wait_replicas(&deploys, name, Some(replicas)).await;
    set_annotation(&cms, name, None).await;
    eventually("the cache forgot the object", || async { presence(run, name) == "uncached" }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unannotated_configmap_is_not_cached_and_gaining_the_annotation_acts_at_once() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    cms.create(&PostParams::default(), &cm("plain", None)).await.unwrap();
    let run = start(&sb);
    eventually("synced", || async { run.controller.has_synced() }).await;
    assert_eq!((presence(&run, "plain"), presence(&run, "other")), ("uncached", "absent"));
    assert_eq!(run.controller.configmap_cache().len(), 0, "nothing cached but what is annotated");
    set_annotation(&cms, "plain", Some("2")).await;
    wait_replicas(&deploys, "plain", Some(2)).await;
    assert_eq!(presence(&run, "plain"), "cached");
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_annotation_leaves_the_deployment_and_a_real_delete_removes_it() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    unannotated_with_our_deployment(&run, &sb, "web", 2).await;
    // No annotation: nothing, however often it is reconciled.
    run.controller.sync(&key("web")).await.unwrap();
    eventually("the queue drained", || async { run.controller.queue().is_empty() }).await;
    assert_eq!(replicas(&deploys, "web").await, Some(2));
    assert_eq!(sb.requests().count("delete", "deployments"), 0);
    // Really deleted (a watch DELETED of an object the cache did not hold): its Deployment goes.
    cms.delete("web", &DeleteParams::default()).await.unwrap();
    wait_replicas(&deploys, "web", None).await;
    deleted_once(&sb).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unannotated_configmap_gone_at_a_relist_loses_its_deployment_and_the_others_stay() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    unannotated_with_our_deployment(&run, &sb, "gone", 2).await;
    unannotated_with_our_deployment(&run, &sb, "stays", 3).await;
    // The ConfigMap watch breaks, stays down while "gone" is deleted, and comes back expired
    // (410): only the relist can tell, and it cannot name the key.
    let watching = |code: u16| {
        sb.requests().all().iter().any(|r| r.verb == "watch" && r.resource == "configmaps" && r.code == code)
    };
    eventually("the ConfigMaps are watched", || async { watching(200) }).await;
    sb.faults().add_rule(FaultRule::new(Some("watch"), Some("configmaps"), 1.0, FaultKind::InternalError));
    sb.faults().cut_watches();
    eventually("the informer tried to watch again", || async { watching(500) }).await;
    cms.delete("gone", &DeleteParams::default()).await.unwrap();
    sb.faults().expire_next_watch();
    sb.faults().clear_rules();
    wait_replicas(&deploys, "gone", None).await;
    eventually("the queue drained", || async { run.controller.queue().is_empty() }).await;
    assert_eq!(replicas(&deploys, "stays").await, Some(3), "no annotation is not gone");
    deleted_once(&sb).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unannotated_configmap_deleted_while_down_loses_its_deployment_and_the_others_stay() {
    let sb = sandbox();
    let (cms, deploys) = apis(&sb);
    let run = start(&sb);
    unannotated_with_our_deployment(&run, &sb, "gone", 2).await;
    unannotated_with_our_deployment(&run, &sb, "stays", 3).await;
    assert!(run.stop().await);
    cms.delete("gone", &DeleteParams::default()).await.unwrap();
    let run = start(&sb);
    wait_replicas(&deploys, "gone", None).await;
    eventually("the queue drained", || async { run.controller.queue().is_empty() }).await;
    run.controller.sync(&key("stays")).await.unwrap();
    assert_eq!(replicas(&deploys, "stays").await, Some(3));
    deleted_once(&sb).await;
    run.stop().await;
}
