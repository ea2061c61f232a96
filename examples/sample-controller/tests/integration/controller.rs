//! The sample-controller against the in-process sandbox, as upstream's `controller_test.go`
//! tests its controller against the fake clientset — but with a real API server's semantics:
//! the CRD's schema, the status subresource, simulated rollouts, garbage collection, Leases.
//!
//! Every wait polls for progress with a generous limit; nothing sleeps a fixed time and then
//! asserts.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use kube_coordination::Membership;
use kube_lease_election::ElectionConfig;
use kube_sandbox::Sandbox;
use sample_controller::controller::{ERR_RESOURCE_EXISTS, SUCCESS_SYNCED};
use sample_controller::{Controller, Foo, FooSpec, Options};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{client_as, eventually, sandbox_with_crd};

/// A guard against a hang, not a timing: each wait here follows one event, with nothing partial
/// to watch move; two minutes is far beyond what a busy machine needs.
/// The controller running alone on `sb`, until the token is cancelled.
struct Running {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<bool>,
}

impl Running {
    fn start(client: Client) -> Self {
        let mut registry = prometheus_client::registry::Registry::default();
        let options = Options { identity: "test".into(), ..Options::default() };
        let controller = Controller::new(client, options, &mut registry);
        let stop = CancellationToken::new();
        let task = tokio::spawn(controller.run(stop.clone().cancelled_owned()));
        Self { stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        assert!(self.task.await.unwrap(), "the caches had synced");
    }
}

fn new_foo(name: &str, deployment: &str, replicas: i32) -> Foo {
    Foo::new(name, FooSpec { deployment_name: deployment.into(), replicas })
}

async fn deployment_with(deploys: &Api<Deployment>, name: &str, replicas: i32) -> Deployment {
    eventually(&format!("deploy/{name} with {replicas} replicas"), || async {
        deploys.get_opt(name).await.unwrap().filter(|d| d.spec.replicas == Some(replicas))
    })
    .await
}

async fn available(foos: &Api<Foo>, name: &str, want: i32) {
    eventually(&format!("foo/{name} status.availableReplicas={want}"), || async {
        let f = foos.get(name).await.unwrap();
        (f.status.map(|s| s.available_replicas) == Some(want)).then_some(())
    })
    .await;
}

/// Waits for an Event about `regarding` with this reason, returning its note.
async fn event(client: &Client, regarding: &str, reason: &str) -> String {
    let events: Api<Event> = Api::default_namespaced(client.clone());
    eventually(&format!("an Event {reason} about {regarding}"), || async {
        events.list(&Default::default()).await.unwrap().items.into_iter().find_map(|e| {
            let about = e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding);
            (about && e.reason.as_deref() == Some(reason)).then(|| e.note.unwrap_or_default())
        })
    })
    .await
}

#[tokio::test]
async fn creates_a_deployment_for_a_new_foo() {
    let sb = sandbox_with_crd().await;
    let client = sb.client();
    let running = Running::start(client.clone());
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    let created = foos.create(&PostParams::default(), &new_foo("test", "test-deploy", 1)).await.unwrap();

    let d = deployment_with(&Api::default_namespaced(client.clone()), "test-deploy", 1).await;
    let labels = d.labels();
    assert_eq!(labels.get("app").map(String::as_str), Some("nginx"));
    assert_eq!(labels.get("controller").map(String::as_str), Some("test"));
    let owner = &d.owner_references()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Foo", "test"));
    assert_eq!((owner.controller, Some(&owner.uid)), (Some(true), created.metadata.uid.as_ref()));
    let pod = d.spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some("nginx:latest"));

    assert_eq!(event(&client, "test", SUCCESS_SYNCED).await, "Foo synced successfully");

    // Deleted by hand while its Foo exists: created again.
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    deploys.delete("test-deploy", &DeleteParams::default()).await.unwrap();
    eventually("the Deployment is created again", || async {
        deploys.get_opt("test-deploy").await.unwrap().filter(|again| again.uid() != d.uid())
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn updates_the_deployment_s_replicas_and_the_status_follows_its_available_replicas() {
    let sb = sandbox_with_crd().await;
    let client = sb.client();
    let running = Running::start(client.clone());
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    foos.create(&PostParams::default(), &new_foo("test", "test-deploy", 1)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 1).await;
    available(&foos, "test", 1).await;

    let scale = json!({ "spec": { "replicas": 3 } });
    foos.patch("test", &PatchParams::default(), &Patch::Merge(&scale)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 3).await;
    available(&foos, "test", 3).await;
    // The status is written through /status, and only when it changed: 0 → 1 → 3 (two or three
    // writes, as the rollout reports), not one per sync.
    let status_writes =
        sb.requests().all().iter().filter(|r| r.resource == "foos" && r.subresource == "status").count();
    assert!((1..=4).contains(&status_writes), "{status_writes} status writes");

    // Drift is corrected: the Deployment's replicas are the Foo's.
    let drift = json!({ "spec": { "replicas": 5 } });
    deploys.patch("test-deploy", &PatchParams::default(), &Patch::Merge(&drift)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 3).await;
    running.stop().await;
}

#[tokio::test]
async fn a_deployment_not_controlled_by_the_foo_is_left_alone_with_a_warning() {
    let sb = sandbox_with_crd().await;
    let client = sb.client();
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let theirs: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "taken" },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": "theirs" } },
            "template": { "metadata": { "labels": { "app": "theirs" } },
                          "spec": { "containers": [{ "name": "c", "image": "busybox" }] } },
        },
    }))
    .unwrap();
    deploys.create(&PostParams::default(), &theirs).await.unwrap();
    let running = Running::start(client.clone());
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    foos.create(&PostParams::default(), &new_foo("test", "taken", 1)).await.unwrap();

    let note = event(&client, "test", ERR_RESOURCE_EXISTS).await;
    assert_eq!(note, r#"Resource "taken" already exists and is not managed by Foo"#);
    let d = deploys.get("taken").await.unwrap();
    assert_eq!(d.spec.replicas, Some(2));
    assert!(d.metadata.owner_references.unwrap_or_default().is_empty());
    let touched: Vec<_> = sb
        .requests()
        .all()
        .into_iter()
        .filter(|r| r.is_write() && r.resource == "deployments" && r.name == "taken")
        .collect();
    assert_eq!(touched.len(), 1, "only the test's own create: {touched:?}");
    // No status, no Synced: the sync failed (and is retried with backoff).
    assert!(foos.get("test").await.unwrap().status.is_none());
    running.stop().await;
}

#[tokio::test]
async fn the_schema_refuses_an_invalid_foo() {
    let sb = sandbox_with_crd().await;
    let foos: Api<Foo> = Api::default_namespaced(sb.client());
    let refused = |r: Result<Foo, kube::Error>| match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let (code, message) = refused(foos.create(&PostParams::default(), &new_foo("neg", "d", -1)).await);
    assert_eq!(code, 422, "{message}");
    assert!(message.contains("spec.replicas"), "{message}");
    let (code, message) = refused(foos.create(&PostParams::default(), &new_foo("empty", "", 1)).await);
    assert_eq!(code, 422, "{message}");
    assert!(message.contains("spec.deploymentName"), "{message}");
    let missing = json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                          "metadata": { "name": "missing" }, "spec": { "replicas": 1 } });
    let dynamic: Api<kube::core::DynamicObject> =
        Api::default_namespaced_with(sb.client(), &kube::discovery::ApiResource::erase::<Foo>(&()));
    let r = dynamic.create(&PostParams::default(), &serde_json::from_value(missing).unwrap()).await;
    match r {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{}", s.message);
            assert!(s.message.contains("spec.deploymentName: Required value"), "{}", s.message);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn deleting_the_foo_garbage_collects_its_deployment() {
    let sb = sandbox_with_crd().await;
    let client = sb.client();
    let running = Running::start(client.clone());
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    foos.create(&PostParams::default(), &new_foo("test", "test-deploy", 2)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 2).await;

    foos.delete("test", &DeleteParams::default()).await.unwrap();
    eventually("the Deployment is garbage-collected", || async {
        deploys.get_opt("test-deploy").await.unwrap().is_none().then_some(())
    })
    .await;
    // The garbage collector did it, not the controller.
    let deletes = sb.requests().count("delete", "deployments");
    assert_eq!(deletes, 0);
    running.stop().await;
}

/// One replica with leader election (lease 3 s, renew 2 s, retry 0.5 s), as `run --leader-elect`
/// assembles it: an unfenced client for the Lease, a fenced one for the controller.
fn replica(sb: &Sandbox, name: &str) -> Running {
    member(sb, name, false)
}

/// One replica of `run --leader-elect` (or, `sharded`, of `run --sharding`), with short
/// durations (lease 3 s, renew 2 s, retry 0.5 s).
fn member(sb: &Sandbox, name: &str, sharded: bool) -> Running {
    let mut registry = prometheus_client::registry::Registry::default();
    let mut config = ElectionConfig::new("default", "sample-controller", name);
    config.lease_duration = Duration::from_secs(3);
    config.renew_deadline = Duration::from_secs(2);
    config.retry_period = Duration::from_millis(500);
    let lease_client = client_as(sb, &format!("{name}/lease"), None);
    let membership = if sharded {
        Membership::sharded(
            lease_client,
            "sample-controller",
            kube_lease_election::ring::Keying::Name,
            config,
        )
        .unwrap()
    } else {
        Membership::elected(lease_client, config, &mut registry).unwrap()
    };
    let client = client_as(sb, name, membership.fence());
    let options = Options { identity: name.into(), ..Options::default() };
    let controller = Controller::new(client, options, &mut registry);
    let stop = CancellationToken::new();
    let shutdown = stop.clone().cancelled_owned();
    let task = tokio::spawn(membership.run(|how| controller.run_coordinated(how, shutdown)));
    Running { stop, task }
}

async fn holder(sb: &Sandbox) -> Option<String> {
    let leases: Api<Lease> = Api::default_namespaced(sb.client());
    leases.get_opt("sample-controller").await.unwrap()?.spec?.holder_identity
}

/// Writes by `agent` other than its Lease's.
fn writes_by(sb: &Sandbox, agent: &str) -> Vec<kube_sandbox::RequestRecord> {
    sb.requests().all().into_iter().filter(|r| r.is_write() && r.user_agent == agent).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_replicas_only_the_leader_writes_and_the_follower_takes_over() {
    let sb = sandbox_with_crd().await;
    let a = replica(&sb, "replica-a");
    eventually("replica-a leads", || async { (holder(&sb).await? == "replica-a").then_some(()) }).await;
    let b = replica(&sb, "replica-b");

    let foos: Api<Foo> = Api::default_namespaced(sb.client());
    let deploys: Api<Deployment> = Api::default_namespaced(sb.client());
    foos.create(&PostParams::default(), &new_foo("test", "test-deploy", 1)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 1).await;
    let scale = json!({ "spec": { "replicas": 2 } });
    foos.patch("test", &PatchParams::default(), &Patch::Merge(&scale)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 2).await;
    available(&foos, "test", 2).await;
    // Let the follower see it all (its informers run), then count: it wrote nothing.
    event(&sb.client(), "test", SUCCESS_SYNCED).await;
    let by_a = writes_by(&sb, "replica-a");
    assert!(by_a.iter().any(|r| r.resource == "deployments"), "the leader created and scaled: {by_a:?}");
    assert!(by_a.iter().any(|r| r.resource == "foos" && r.subresource == "status"), "{by_a:?}");
    assert_eq!(writes_by(&sb, "replica-b"), [], "the follower wrote");
    assert!(
        sb.requests().all().iter().any(|r| r.user_agent == "replica-b" && r.verb == "watch"),
        "the follower's informers run"
    );

    // A clean stop releases the Lease: the follower takes over and reconciles.
    a.stop().await;
    eventually("replica-b leads", || async { (holder(&sb).await? == "replica-b").then_some(()) }).await;
    let scale = json!({ "spec": { "replicas": 3 } });
    foos.patch("test", &PatchParams::default(), &Patch::Merge(&scale)).await.unwrap();
    deployment_with(&deploys, "test-deploy", 3).await;
    available(&foos, "test", 3).await;
    assert!(writes_by(&sb, "replica-b").iter().any(|r| r.resource == "deployments"));
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_replicas_share_the_foos_and_each_deployment_is_created_once() {
    let sb = sandbox_with_crd().await;
    let (a, b) = (member(&sb, "shard-a", true), member(&sb, "shard-b", true));
    // Settled: both shard Leases say they drained for the same member set (each member's own
    // set holds itself, so the same set is the set of both).
    let leases: Api<Lease> = Api::default_namespaced(sb.client());
    eventually("both members drained for the same set", || async {
        let drained: Vec<String> = leases
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter_map(|l| l.annotations().get(kube_lease_election::shard::DRAINED_ANNOTATION).cloned())
            .filter(|d| d.bytes().any(|c| c != b'0'))
            .collect();
        (drained.len() == 2 && drained[0] == drained[1]).then_some(())
    })
    .await;
    let foos: Api<Foo> = Api::default_namespaced(sb.client());
    let deploys: Api<Deployment> = Api::default_namespaced(sb.client());
    const N: usize = 20;
    for i in 0..N {
        foos.create(&PostParams::default(), &new_foo(&format!("foo-{i}"), &format!("deploy-{i}"), 2))
            .await
            .unwrap();
    }
    for i in 0..N {
        deployment_with(&deploys, &format!("deploy-{i}"), 2).await;
    }
    // Every Deployment was created by one replica, once (a create answered 409 stored nothing);
    // and both replicas had keys of their own.
    let creates: Vec<_> = sb
        .requests()
        .all()
        .into_iter()
        .filter(|r| r.verb == "create" && r.resource == "deployments" && r.code == 201)
        .collect();
    let mut names: Vec<&str> = creates.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!((names.len(), creates.len()), (N, N), "{creates:?}");
    for shard in ["shard-a", "shard-b"] {
        assert!(creates.iter().any(|r| r.user_agent == shard), "{shard} created none: {creates:?}");
    }
    a.stop().await;
    b.stop().await;
}
