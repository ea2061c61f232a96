//! Upstream's `[sig-apps]` conformance tests (`test/e2e/apps/*.go`) emulated against the sandbox's
//! simulated cluster: each test does what upstream's does, step by step, and asserts what it
//! asserts. Where a test needs the cluster to act as kube-controller-manager or the kubelet do,
//! the sandbox is made to.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, ResourceQuota};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::conditions;
use kube::{Client, Resource, ResourceExt};
use kube_sandbox::Simulation;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::cluster::{cluster, controller_of, eventually, of, pods_of, wait_for};

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// Upstream's `newRC`: `replicas` pods labelled `name: <name>`, no grace period.
fn rc(name: &str, replicas: i32, image: &str) -> ReplicationController {
    of(json!({ "metadata": { "name": name }, "spec": { "replicas": replicas,
        "template": { "metadata": { "labels": { "name": name } },
            "spec": { "terminationGracePeriodSeconds": 0, "containers": [{ "name": name, "image": image }] } } } }))
}

const WEBSERVER: &str = "registry.k8s.io/e2e-test-images/httpd:2.4.38-4";
const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";

// --- ReplicationController (rc.go) ------------------------------------------------------------

#[tokio::test]
async fn rc_adopts_a_matching_orphan_pod_on_creation() {
    // Upstream's "ReplicationController should adopt matching pods on creation".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let orphan: Pod =
        of(json!({ "metadata": { "name": "pod-adoption", "labels": { "name": "pod-adoption" } },
        "spec": { "containers": [{ "name": "pod-adoption", "image": WEBSERVER }] } }));
    pods.create(&PostParams::default(), &orphan).await.unwrap();
    wait_for(&pods, "pod-adoption", conditions::is_pod_running()).await;

    let rcs: Api<ReplicationController> = Api::default_namespaced(client.clone());
    let mut spec = rc("pod-adoption", 1, WEBSERVER);
    spec.spec.as_mut().unwrap().selector = Some([("name".to_owned(), "pod-adoption".to_owned())].into());
    let created = rcs.create(&PostParams::default(), &spec).await.unwrap();
    let uid = created.metadata.uid.unwrap();
    // Adopted (or deleted and replaced, which upstream also accepts).
    let adopted = eventually(|| async {
        match pods.get_opt("pod-adoption").await.unwrap() {
            None => Some(false),
            Some(p) => (controller_of(&p).as_deref() == Some(uid.as_str())).then_some(true),
        }
    })
    .await;
    assert!(adopted, "kube-controller-manager adopts the orphan; it is not deleted");
    let status = wait_for(&rcs, "pod-adoption", |r: Option<&ReplicationController>| {
        r.and_then(|r| r.status.as_ref()).is_some_and(|s| s.replicas == 1 && s.ready_replicas == Some(1))
    })
    .await;
    assert_eq!(status.status.unwrap().replicas, 1);
    assert_eq!(pods_of(&client, "name=pod-adoption").await.len(), 1, "no pod made beside the adopted one");
}

#[tokio::test]
async fn rc_releases_a_pod_whose_labels_stop_matching() {
    // Upstream's "ReplicationController should release no longer matching pods".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let rcs: Api<ReplicationController> = Api::default_namespaced(client.clone());
    let mut spec = rc("pod-release", 1, WEBSERVER);
    spec.spec.as_mut().unwrap().selector = Some([("name".to_owned(), "pod-release".to_owned())].into());
    let created = rcs.create(&PostParams::default(), &spec).await.unwrap();
    let uid = created.metadata.uid.unwrap();
    let first = eventually(|| async {
        let mine = pods_of(&client, "name=pod-release").await;
        (mine.len() == 1).then(|| mine[0].clone())
    })
    .await;
    let name = first.metadata.name.clone().unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    // A get and an update, again on a conflict.
    eventually(|| async {
        let mut pod = pods.get(&name).await.unwrap();
        pod.metadata.labels = Some([("name".to_owned(), "not-matching-name".to_owned())].into());
        match pods.replace(&name, &PostParams::default(), &pod).await {
            Ok(_) => Some(()),
            Err(kube::Error::Api(e)) if e.code == 409 => None,
            Err(e) => panic!("{e}"),
        }
    })
    .await;
    eventually(|| async {
        let p = pods.get(&name).await.unwrap();
        (controller_of(&p).as_deref() != Some(uid.as_str())).then_some(())
    })
    .await;
    // The controller makes another in its place.
    eventually(|| async {
        let mine = pods_of(&client, "name=pod-release").await;
        (mine.len() == 1 && mine[0].metadata.name.as_deref() != Some(name.as_str())).then_some(())
    })
    .await;
}

#[tokio::test]
async fn rc_surfaces_a_replica_failure_while_a_quota_refuses_its_pods() {
    // Upstream's "ReplicationController should surface a failure condition on a common issue like
    // exceeded quota": a quota of two pods, a controller wanting three, then scaled to two.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let quotas: Api<ResourceQuota> = Api::default_namespaced(client.clone());
    let quota: ResourceQuota =
        of(json!({ "metadata": { "name": "condition-test" }, "spec": { "hard": { "pods": "2" } } }));
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    wait_for(&quotas, "condition-test", |q: Option<&ResourceQuota>| {
        q.and_then(|q| q.status.as_ref())
            .and_then(|s| s.hard.as_ref())
            .and_then(|h| h.get("pods"))
            .is_some_and(|p| p.0 == "2")
    })
    .await;

    let rcs: Api<ReplicationController> = Api::default_namespaced(client.clone());
    let created = rcs.create(&PostParams::default(), &rc("condition-test", 3, WEBSERVER)).await.unwrap();
    let failure = |r: &ReplicationController| {
        r.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "ReplicaFailure"))
            .cloned()
    };
    let observed = |r: &ReplicationController, generation: Option<i64>| {
        r.status.as_ref().and_then(|s| s.observed_generation) >= generation
    };
    let generation = created.metadata.generation;
    let cond = eventually(|| async {
        let r = rcs.get("condition-test").await.unwrap();
        if !observed(&r, generation) {
            return None;
        }
        failure(&r)
    })
    .await;
    assert_eq!(cond.status, "True");
    assert_eq!(cond.reason.as_deref(), Some("FailedCreate"));
    assert!(cond.message.as_deref().unwrap_or("").contains("exceeded quota"), "{cond:?}");

    // Scaled down to fit (an update retried on conflict), the condition goes.
    let scaled = eventually(|| async {
        let mut r = rcs.get("condition-test").await.unwrap();
        r.spec.as_mut().unwrap().replicas = Some(2);
        rcs.replace("condition-test", &PostParams::default(), &r).await.ok()
    })
    .await;
    let generation = scaled.metadata.generation;
    eventually(|| async {
        let r = rcs.get("condition-test").await.unwrap();
        (observed(&r, generation) && failure(&r).is_none()).then_some(())
    })
    .await;
}

// --- Deployment (deployment.go) ---------------------------------------------------------------

/// Upstream's `e2edeployment.NewDeployment`: pods labelled `podLabels`, one container, no grace
/// period.
fn e2e_deployment(
    name: &str,
    replicas: i32,
    label: &str,
    container: &str,
    image: &str,
    strategy: &str,
) -> Deployment {
    e2e_deployment_labelled(name, replicas, &json!({ "name": label }), container, image, strategy)
}

/// Upstream's `e2edeployment.NewDeployment` with its pod labels: the Deployment labelled as its
/// pods.
fn e2e_deployment_labelled(
    name: &str,
    replicas: i32,
    labels: &serde_json::Value,
    container: &str,
    image: &str,
    strategy: &str,
) -> Deployment {
    of(json!({ "metadata": { "name": name, "labels": labels }, "spec": { "replicas": replicas,
        "selector": { "matchLabels": labels }, "strategy": { "type": strategy },
        "template": { "metadata": { "labels": labels },
            "spec": { "terminationGracePeriodSeconds": 0, "containers": [{ "name": container, "image": image }] } } } }))
}

/// Upstream's `newRS`: a ReplicaSet labelled and selecting `labels`.
fn e2e_replica_set(
    name: &str,
    replicas: i32,
    labels: serde_json::Value,
    container: &str,
    image: &str,
) -> ReplicaSet {
    of(json!({ "metadata": { "name": name, "labels": labels.clone() }, "spec": { "replicas": replicas,
        "selector": { "matchLabels": labels.clone() },
        "template": { "metadata": { "labels": labels },
            "spec": { "terminationGracePeriodSeconds": 0, "containers": [{ "name": container, "image": image }] } } } }))
}

/// The ReplicaSets `d` controls.
async fn sets_of(client: &Client, d: &Deployment) -> Vec<ReplicaSet> {
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let uid = d.metadata.uid.clone();
    sets.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|rs| controller_of(rs) == uid)
        .collect()
}

/// Upstream's `WaitForDeploymentComplete`: every replica updated and available, none old, the
/// newest generation observed.
fn complete(d: Option<&Deployment>) -> bool {
    let Some(d) = d else { return false };
    let want = d.spec.replicas.unwrap_or(1);
    d.status.as_ref().is_some_and(|s| {
        s.replicas == Some(want)
            && s.updated_replicas == Some(want)
            && s.available_replicas == Some(want)
            && s.observed_generation >= d.metadata.generation
    })
}

#[tokio::test]
async fn a_rolling_update_deployment_adopts_a_set_and_takes_the_revision_after_its() {
    // Upstream's "Deployment RollingUpdateDeployment should delete old pods and create new
    // ones": a ReplicaSet at revision 3546343826724305832 adopted, the Deployment's own at the
    // next, one old set left.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let labels = json!({ "name": "sample-pod", "pod": "httpd" });
    let mut rs = e2e_replica_set("test-rolling-update-controller", 1, labels, "httpd", WEBSERVER);
    let revision = ("deployment.kubernetes.io/revision".to_owned(), "3546343826724305832".to_owned());
    rs.metadata.annotations = Some([revision].into());
    sets.create(&PostParams::default(), &rs).await.unwrap();
    eventually(|| async {
        let pods = pods_of(&client, "name=sample-pod").await;
        (pods.len() == 1 && phase(&pods[0]) == "Running").then_some(())
    })
    .await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let d = e2e_deployment(
        "test-rolling-update-deployment",
        1,
        "sample-pod",
        "agnhost",
        AGNHOST,
        "RollingUpdate",
    );
    let d = deployments.create(&PostParams::default(), &d).await.unwrap();
    wait_for(&deployments, "test-rolling-update-deployment", |d: Option<&Deployment>| {
        complete(d)
            && d.and_then(|d| d.metadata.annotations.as_ref()).is_some_and(|a| {
                a.get("deployment.kubernetes.io/revision").map(String::as_str) == Some("3546343826724305833")
            })
    })
    .await;
    let image = |rs: &ReplicaSet| {
        rs.spec.template.as_ref().and_then(|t| t.spec.as_ref()).and_then(|p| p.containers[0].image.clone())
    };
    let mine = sets_of(&client, &d).await;
    let old: Vec<&ReplicaSet> = mine.iter().filter(|rs| image(rs).as_deref() != Some(AGNHOST)).collect();
    assert_eq!(old.len(), 1, "the adopted set is the one old set");
    assert_eq!(old[0].metadata.name.as_deref(), Some("test-rolling-update-controller"));
}

#[tokio::test]
async fn a_deployments_status_takes_conditions_by_update_and_patch() {
    // Upstream's "Deployment should validate Deployment Status endpoints".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let rv = list_rv(&Api::<Deployment>::all(client.clone()), "e2e=testing").await;
    let mut watch = Watch::start(&deployments, "e2e=testing", &rv).await;
    let name = "test-deployment-x2k9q";
    let labels = json!({ "name": "httpd", "e2e": "testing" });
    let d = e2e_deployment_labelled(name, 1, &labels, "httpd", WEBSERVER, "RollingUpdate");
    deployments.create(&PostParams::default(), &d).await.unwrap();
    wait_for(&deployments, name, complete).await;
    assert!(deployments.get_status(name).await.unwrap().status.is_some());
    let updated = add_status_condition(&deployments, name).await;
    assert!(has_condition(&updated, "StatusUpdate", true));
    watch.until(|_, d| has_condition(d, "StatusUpdate", true)).await;
    let patch = json!({ "status": { "conditions": [{ "type": "StatusPatched", "status": "True" }] } });
    deployments.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    watch.until(|_, d| has_condition(d, "StatusPatched", false)).await;
}

#[tokio::test]
async fn a_replica_sets_status_takes_conditions_by_update_and_patch() {
    // Upstream's "ReplicaSet should validate Replicaset Status endpoints".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let selector = "name=sample-pod,pod=agnhost";
    let rv = list_rv(&Api::<ReplicaSet>::all(client.clone()), selector).await;
    let mut watch = Watch::start(&sets, selector, &rv).await;
    let rs =
        e2e_replica_set("test-rs", 1, json!({ "name": "sample-pod", "pod": "agnhost" }), "agnhost", AGNHOST);
    sets.create(&PostParams::default(), &rs).await.unwrap();
    eventually(|| async {
        let pods = pods_of(&client, "name=sample-pod").await;
        (pods.len() == 1 && phase(&pods[0]) == "Running").then_some(())
    })
    .await;
    assert!(sets.get_status("test-rs").await.unwrap().status.is_some());
    let updated = add_status_condition(&sets, "test-rs").await;
    assert!(has_condition(&updated, "StatusUpdate", true));
    watch.until(|_, rs| has_condition(rs, "StatusUpdate", true)).await;
    let patch = json!({ "status": { "conditions": [{ "type": "StatusPatched", "status": "True" }] } });
    sets.patch_status("test-rs", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    watch.until(|_, rs| has_condition(rs, "StatusPatched", false)).await;
}

#[tokio::test]
async fn a_recreate_deployment_never_runs_new_pods_beside_old_ones() {
    // Upstream's "Deployment RecreateDeployment should delete old pods and create new ones".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let d = e2e_deployment("test-recreate-deployment", 1, "sample-pod-3", "agnhost", AGNHOST, "Recreate");
    deployments.create(&PostParams::default(), &d).await.unwrap();
    let done = wait_for(&deployments, "test-recreate-deployment", |d: Option<&Deployment>| {
        complete(d)
            && d.and_then(|d| d.metadata.annotations.as_ref())
                .is_some_and(|a| a.get("deployment.kubernetes.io/revision").map(String::as_str) == Some("1"))
    })
    .await;
    assert_eq!(done.spec.template.spec.unwrap().containers[0].image.as_deref(), Some(AGNHOST));

    // A new template: the old pods go before any new one counts.
    let updated = eventually(|| async {
        let mut d = deployments.get("test-recreate-deployment").await.unwrap();
        let c = &mut d.spec.template.spec.as_mut().unwrap().containers[0];
        c.name = "httpd".into();
        c.image = Some(WEBSERVER.into());
        deployments.replace("test-recreate-deployment", &PostParams::default(), &d).await.ok()
    })
    .await;
    let rv = updated.metadata.resource_version.clone().unwrap();
    let wp = WatchParams::default().fields("metadata.name=test-recreate-deployment");
    let mut stream = deployments.watch(&wp, &rv).await.unwrap().boxed();
    loop {
        let d = match stream.try_next().await.unwrap().expect("the watch ended") {
            WatchEvent::Added(d) | WatchEvent::Modified(d) => d,
            WatchEvent::Deleted(_) => panic!("deleted"),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("{e:?}"),
        };
        let s = d.status.clone().unwrap_or_default();
        let updated_replicas = s.updated_replicas.unwrap_or(0);
        assert!(
            !(updated_replicas > 0 && s.replicas.unwrap_or(0) != updated_replicas),
            "the deployment runs new pods alongside old pods: {s:?}"
        );
        let want = d.spec.replicas.unwrap_or(1);
        if s.replicas == Some(want)
            && updated_replicas == want
            && s.observed_generation >= d.metadata.generation
        {
            break;
        }
    }
}

#[tokio::test]
async fn a_deployment_with_no_revision_history_deletes_the_set_it_adopted() {
    // Upstream's "Deployment deployment should delete old replica sets": a ReplicaSet of
    // `name=cleanup-pod` pods, then a Deployment of that selector keeping no history.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let labels = json!({ "name": "cleanup-pod", "pod": "httpd" });
    sets.create(
        &PostParams::default(),
        &e2e_replica_set("test-cleanup-controller", 1, labels, "httpd", WEBSERVER),
    )
    .await
    .unwrap();
    eventually(|| async {
        let pods = pods_of(&client, "name=cleanup-pod").await;
        (pods.len() == 1 && phase(&pods[0]) == "Running").then_some(())
    })
    .await;

    // Every pod created from here on: only the Deployment's one, of its own template (the old
    // set makes none when the Deployment adds the template hash to its selector).
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let rv = pods.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut stream = pods.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let added: Arc<Mutex<Vec<Pod>>> = Arc::default();
    let collect = {
        let added = added.clone();
        tokio::spawn(async move {
            while let Some(Ok(event)) = stream.next().await {
                if let WatchEvent::Added(p) = event {
                    added.lock().unwrap().push(p);
                }
            }
        })
    };
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let mut d =
        e2e_deployment("test-cleanup-deployment", 1, "cleanup-pod", "agnhost", AGNHOST, "RollingUpdate");
    d.spec.revision_history_limit = Some(0);
    d.spec.strategy = None;
    let d = deployments.create(&PostParams::default(), &d).await.unwrap();
    // No old set left: only the new one is the Deployment's.
    eventually(|| async {
        let mine = sets_of(&client, &d).await;
        (mine.len() == 1
            && mine[0].spec.template.as_ref().and_then(|t| t.spec.as_ref()).unwrap().containers[0].name
                == "agnhost")
            .then_some(())
    })
    .await;
    assert!(sets.get_opt("test-cleanup-controller").await.unwrap().is_none(), "the adopted set is deleted");
    wait_for(&deployments, "test-cleanup-deployment", complete).await;
    collect.abort();
    let added = added.lock().unwrap().clone();
    assert_eq!(
        added.len(),
        1,
        "one pod created: {:?}",
        added.iter().map(|p| &p.metadata.name).collect::<Vec<_>>()
    );
    assert_eq!(added[0].spec.as_ref().unwrap().containers[0].name, "agnhost");
}

// --- CronJob (cronjob.go) ---------------------------------------------------------------------

#[tokio::test]
async fn a_suspended_cron_job_schedules_no_jobs() {
    // Upstream's "CronJob should not schedule jobs when suspended": every minute, suspended; no
    // Job for five minutes. Beside it, in a namespace of its own, a cron job of the same schedule
    // not suspended shows the controller has seen each minute go by.
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let client = sb.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(&PostParams::default(), &of(json!({ "metadata": { "name": "control" } })))
        .await
        .unwrap();
    let cron_job = |name: &str, suspend: bool| -> CronJob {
        of(json!({ "metadata": { "name": name }, "spec": { "schedule": "*/1 * * * ?", "suspend": suspend,
            "concurrencyPolicy": "Allow", "jobTemplate": { "spec": { "template": { "spec": {
                "restartPolicy": "OnFailure", "containers": [{ "name": "c", "image": "busybox",
                    "command": ["sleep", "300"] }] } } } } } }))
    };
    let crons: Api<CronJob> = Api::default_namespaced(client.clone());
    crons.create(&PostParams::default(), &cron_job("suspended", true)).await.unwrap();
    let control: Api<CronJob> = Api::namespaced(client.clone(), "control");
    control.create(&PostParams::default(), &cron_job("control", false)).await.unwrap();
    let control_jobs: Api<Job> = Api::namespaced(client.clone(), "control");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    for minute in 1..=5 {
        sim.clock().advance(Duration::from_secs(60));
        eventually(|| async {
            let n = control_jobs.list(&ListParams::default()).await.unwrap().items.len();
            (n >= minute).then_some(())
        })
        .await;
        assert!(
            jobs.list(&ListParams::default()).await.unwrap().items.is_empty(),
            "a job at minute {minute}"
        );
    }
    let status = crons.get("suspended").await.unwrap().status.unwrap_or_default();
    assert!(status.active.unwrap_or_default().is_empty());
    assert!(status.last_schedule_time.is_none());
    crons.delete("suspended", &Default::default()).await.unwrap();
}

// --- Job (job.go) -----------------------------------------------------------------------------

#[tokio::test]
async fn an_indexed_job_gives_each_pod_its_completion_index_and_hostname() {
    // Upstream's "Job should create pods for an Indexed job with completion indexes and specified
    // hostname": parallelism 2, completions 4, each pod succeeding.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job: Job = of(json!({ "metadata": { "name": "indexed-job" }, "spec": {
        "parallelism": 2, "completions": 4, "backoffLimit": 6, "completionMode": "Indexed",
        "template": { "spec": { "restartPolicy": "Never", "containers": [{ "name": "c", "image": "busybox",
            "command": ["/bin/sh", "-c", "exit 0"] }] } } } }));
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let done = wait_for(&jobs, "indexed-job", conditions::is_job_completed()).await;
    let status = done.status.unwrap();
    assert_eq!(status.succeeded, Some(4));
    let complete = status.conditions.unwrap().into_iter().find(|c| c.type_ == "Complete").unwrap();
    assert_eq!(complete.reason.as_deref(), Some("CompletionsReached"));
    assert_eq!(status.completed_indexes.as_deref(), Some("0-3"));

    let mut indexes = Vec::new();
    for pod in pods_of(&client, "batch.kubernetes.io/job-name=indexed-job").await {
        if phase(&pod) != "Succeeded" {
            continue;
        }
        let ix: i64 = pod.annotations()["batch.kubernetes.io/job-completion-index"].parse().unwrap();
        assert_eq!(
            pod.spec.as_ref().unwrap().hostname.as_deref(),
            Some(format!("indexed-job-{ix}").as_str())
        );
        // The index is also in each container's environment, from the pod's label of it.
        let env = pod.spec.as_ref().unwrap().containers[0].env.clone().unwrap_or_default();
        let var = env.iter().find(|e| e.name == "JOB_COMPLETION_INDEX").expect("JOB_COMPLETION_INDEX");
        let field = var.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).unwrap();
        assert_eq!(field.field_path, "metadata.labels['batch.kubernetes.io/job-completion-index']");
        indexes.push(ix);
    }
    indexes.sort_unstable();
    indexes.dedup();
    assert_eq!(indexes, [0, 1, 2, 3]);
}

// --- StatefulSet (statefulset.go) -------------------------------------------------------------

/// Upstream's `e2estatefulset.NewStatefulSet` with no claims: `replicas` webserver pods labelled
/// `foo: bar, baz: blah`, governed by the headless service `test`.
fn e2e_stateful_set(name: &str, replicas: i32) -> StatefulSet {
    let labels = json!({ "foo": "bar", "baz": "blah" });
    of(json!({ "metadata": { "name": name, "labels": labels.clone() }, "spec": { "replicas": replicas,
        "serviceName": "test", "selector": { "matchLabels": labels.clone() },
        "template": { "metadata": { "labels": labels },
            "spec": { "containers": [{ "name": "webserver", "image": WEBSERVER }] } } } }))
}

#[tokio::test]
async fn a_stateful_pod_rejected_for_a_host_port_is_recreated_until_it_runs() {
    // Upstream's "StatefulSet Should recreate evicted statefulset": a pod holds host port 21017
    // on a node; the set's pod, bound to that node and asking for the same port, is rejected by
    // the node's kubelet (Failed), deleted and made again by the controller, and runs once the
    // first pod is gone.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let node = "sandbox-node-1";
    let conflicting = json!({ "hostPort": 21017, "containerPort": 21017, "name": "conflict" });
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let holder: Pod = of(json!({ "metadata": { "name": "test-pod" }, "spec": { "nodeName": node,
        "containers": [{ "name": "webserver", "image": WEBSERVER, "ports": [conflicting.clone()] }] } }));
    pods.create(&PostParams::default(), &holder).await.unwrap();
    wait_for(&pods, "test-pod", conditions::is_pod_running()).await;

    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let mut ss = e2e_stateful_set("ss", 1);
    let template = ss.spec.template.spec.as_mut().unwrap();
    template.node_name = Some(node.into());
    template.containers[0].ports = Some(vec![of(conflicting)]);
    sets.create(&PostParams::default(), &ss).await.unwrap();

    // The set's pod, watched until the controller deletes one it has seen.
    let by_name = ListParams::default().fields("metadata.name=ss-0");
    let listed = pods.list(&by_name).await.unwrap();
    let mut initial = listed.items.first().and_then(|p| p.metadata.uid.clone());
    let mut rejections = listed.items.iter().filter(|p| phase(p) == "Failed").cloned().collect::<Vec<_>>();
    let rv = listed.metadata.resource_version.unwrap();
    let wp = WatchParams::default().fields("metadata.name=ss-0");
    let mut stream = pods.watch(&wp, &rv).await.unwrap().boxed();
    loop {
        match stream.try_next().await.unwrap().expect("the watch ended") {
            WatchEvent::Deleted(_) if initial.is_some() => break,
            WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                if phase(&p) == "Failed" {
                    rejections.push(p.clone());
                }
                initial = p.metadata.uid;
            }
            _ => {}
        }
    }
    drop(stream);
    // The kubelet's rejection, as upstream's words it.
    let rejected = rejections.first().expect("the pod deleted was rejected first");
    let status = rejected.status.as_ref().unwrap();
    assert_eq!(status.reason.as_deref(), Some("NodePorts"));
    assert_eq!(
        status.message.as_deref(),
        Some(
            "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
        )
    );
    assert!(status.container_statuses.as_ref().is_none_or(Vec::is_empty), "no container started");

    pods.delete("test-pod", &DeleteParams::default().grace_period(0)).await.unwrap();
    let running = eventually(|| async {
        let p = pods.get_opt("ss-0").await.unwrap()?;
        (phase(&p) == "Running" && p.metadata.uid != initial).then_some(p)
    })
    .await;
    assert_eq!(running.spec.unwrap().node_name.as_deref(), Some(node));
}

// --- ControllerRevision (controller_revision.go) ----------------------------------------------

/// Upstream's `newDaemonSetWithLabel`: an `app` container serving 9376, the DaemonSet, its
/// selector and its pods labelled `label`.
fn e2e_daemon_set(name: &str, label: serde_json::Value) -> DaemonSet {
    of(json!({ "metadata": { "name": name, "labels": label.clone() }, "spec": {
        "selector": { "matchLabels": label.clone() },
        "template": { "metadata": { "labels": label },
            "spec": { "containers": [{ "name": "app", "image": AGNHOST, "ports": [{ "containerPort": 9376 }] }] } } } }))
}

/// Upstream's `checkRunningOnAllNodes` and `CheckDaemonStatus`: a running pod of the set on
/// every node, and a status that says so.
async fn daemon_pods_on_every_node(client: &Client, name: &str, selector: &str) {
    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let node_count = nodes.list(&ListParams::default()).await.unwrap().items.len();
    eventually(|| async {
        let pods = pods_of(client, selector).await;
        let mut on: Vec<String> = pods
            .iter()
            .filter(|p| phase(p) == "Running" && p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.spec.as_ref()?.node_name.clone())
            .collect();
        on.sort();
        on.dedup();
        let s = sets.get(name).await.unwrap().status?;
        let n = i32::try_from(node_count).unwrap();
        (on.len() == node_count
            && s.desired_number_scheduled == n
            && s.current_number_scheduled == n
            && s.number_ready == n)
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn controller_revisions_of_a_daemon_set_are_listed_patched_made_and_deleted() {
    // Upstream's "ControllerRevision should manage the lifecycle of a ControllerRevision".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let ds_name = "e2e-x7k2p-daemon-set";
    let selector = format!("daemonset-name={ds_name}");
    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &e2e_daemon_set(ds_name, json!({ "daemonset-name": ds_name })))
        .await
        .unwrap();
    daemon_pods_on_every_node(&client, ds_name, &selector).await;
    let by_label = ListParams::default().labels(&selector);
    let all_sets: Api<DaemonSet> = Api::all(client.clone());
    assert_eq!(all_sets.list(&by_label).await.unwrap().items.len(), 1);
    let ds = sets.get(ds_name).await.unwrap();

    let all_revisions: Api<ControllerRevision> = Api::all(client.clone());
    let revs = all_revisions.list(&by_label).await.unwrap().items;
    assert_eq!(revs.len(), 1, "{revs:?}");
    let owner = &revs[0].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), Some(&owner.uid)), ("DaemonSet", ds.metadata.uid.as_ref()));
    let revisions: Api<ControllerRevision> = Api::default_namespaced(client.clone());
    let initial = revisions.get(revs[0].metadata.name.as_deref().unwrap()).await.unwrap();
    let initial_name = initial.metadata.name.clone().unwrap();

    let patch = json!({ "metadata": { "labels": { initial_name.clone(): "patched" } } });
    let patched =
        revisions.patch(&initial_name, &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    assert_eq!(patched.labels().get(&initial_name).map(String::as_str), Some("patched"));

    // A revision made by hand for the set, of the data it has now, one above.
    let new_hash = "5d4b8c7f9";
    let mut labels = ds.spec.template.metadata.as_ref().unwrap().labels.clone().unwrap();
    labels.insert("controller-revision-hash".into(), new_hash.into());
    let mut made: ControllerRevision = of(json!({ "metadata": { "name": format!("{ds_name}-{new_hash}"),
        "labels": labels, "ownerReferences": [ds.controller_owner_ref(&()).unwrap()] },
        "revision": initial.revision.unwrap() + 1 }));
    made.metadata.annotations = ds.metadata.annotations.clone();
    made.data = initial.data.clone();
    revisions.create(&PostParams::default(), &made).await.unwrap();
    let count = |n: usize| {
        let revisions = revisions.clone();
        let by_label = by_label.clone();
        async move {
            eventually(|| async {
                (revisions.list(&by_label).await.unwrap().items.len() == n).then_some(())
            })
            .await;
        }
    };
    count(2).await;

    revisions.delete(&initial_name, &DeleteParams::default()).await.unwrap();
    count(1).await;
    let current = revisions.list(&ListParams::default()).await.unwrap().items.remove(0);
    let current_name = current.metadata.name.clone().unwrap();
    let updated = eventually(|| async {
        let mut r = revisions.get(&current_name).await.unwrap();
        r.metadata.labels.get_or_insert_default().insert(current_name.clone(), "updated".into());
        revisions.replace(&current_name, &PostParams::default(), &r).await.ok()
    })
    .await;
    assert_eq!(updated.labels().get(&current_name).map(String::as_str), Some("updated"));

    // A new template: the set makes another revision.
    let patch = json!({ "spec": { "template": { "spec": { "terminationGracePeriodSeconds": 1 } } },
                        "updateStrategy": { "type": "RollingUpdate" } });
    sets.patch(ds_name, &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    count(2).await;

    let by_updated = ListParams::default().labels(&format!("{current_name}=updated"));
    revisions.delete_collection(&DeleteParams::default(), &by_updated).await.unwrap();
    count(1).await;
    let list = revisions.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(list[0].revision, Some(3), "{list:?}");
}

// --- Status subresources and lifecycles -------------------------------------------------------

/// A watch read event by event, as upstream's `watchtools.Until` and `watchUntilWithoutRetry`
/// read one.
struct Watch<K> {
    stream: futures::stream::BoxStream<'static, kube::Result<WatchEvent<K>>>,
}

impl<K: Clone + DeserializeOwned + Debug + Send + 'static> Watch<K> {
    async fn start(api: &Api<K>, selector: &str, rv: &str) -> Self {
        let wp = WatchParams::default().labels(selector);
        Self { stream: api.watch(&wp, rv).await.unwrap().boxed() }
    }

    /// The next event for which `pred` holds (objects of Added and Modified events alike).
    async fn until(&mut self, mut pred: impl FnMut(&str, &K) -> bool) -> (String, K) {
        loop {
            let (kind, obj) = match self.stream.try_next().await.unwrap().expect("the watch ended") {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("{e:?}"),
            };
            if pred(kind, &obj) {
                return (kind.to_owned(), obj);
            }
        }
    }
}

/// The resourceVersion of a list of `api` by `selector`, to watch from.
async fn list_rv<K: Clone + DeserializeOwned + Debug>(api: &Api<K>, selector: &str) -> String {
    api.list(&ListParams::default().labels(selector)).await.unwrap().metadata.resource_version.unwrap()
}

/// A condition of the type upstream's status tests add by an update of `/status`.
fn e2e_condition() -> serde_json::Value {
    json!({ "type": "StatusUpdate", "status": "True", "reason": "E2E", "message": "Set from e2e test" })
}

fn has_condition(obj: &impl serde::Serialize, kind: &str, by_e2e: bool) -> bool {
    let v = serde_json::to_value(obj).unwrap();
    v.pointer("/status/conditions").and_then(|c| c.as_array()).is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == kind && (!by_e2e || (c["reason"] == "E2E" && c["message"] == "Set from e2e test"))
        })
    })
}

/// Adds upstream's `StatusUpdate` condition through `/status` (get, append, update, again on a
/// conflict); the object as updated.
async fn add_status_condition<K>(api: &Api<K>, name: &str) -> K
where
    K: Clone + DeserializeOwned + Debug + serde::Serialize,
{
    eventually(|| async {
        let mut v = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
        let conditions =
            v["status"].as_object_mut().unwrap().entry("conditions").or_insert_with(|| json!([]));
        conditions.as_array_mut().unwrap().push(e2e_condition());
        let obj: K = serde_json::from_value(v).unwrap();
        match api.replace_status(name, &PostParams::default(), &obj).await {
            Ok(updated) => Some(updated),
            Err(kube::Error::Api(e)) if e.code == 409 => None,
            Err(e) => panic!("{e}"),
        }
    })
    .await
}

#[tokio::test]
async fn a_daemon_sets_status_takes_conditions_by_update_and_patch() {
    // Upstream's "Daemon set should verify changes to a daemon set status".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let ds_name = "daemon-set";
    let selector = format!("daemonset-name={ds_name}");
    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    let rv = list_rv(&Api::<DaemonSet>::all(client.clone()), &selector).await;
    let mut watch = Watch::start(&sets, &selector, &rv).await;
    sets.create(&PostParams::default(), &e2e_daemon_set(ds_name, json!({ "daemonset-name": ds_name })))
        .await
        .unwrap();
    daemon_pods_on_every_node(&client, ds_name, &selector).await;
    let status = sets.get_status(ds_name).await.unwrap();
    assert_eq!(status.metadata.name.as_deref(), Some(ds_name));

    let updated = add_status_condition(&sets, ds_name).await;
    assert!(has_condition(&updated, "StatusUpdate", true));
    watch.until(|_, ds| has_condition(ds, "StatusUpdate", true)).await;

    let patch = json!({ "status": { "conditions": [{ "type": "StatusPatched", "status": "True" }] } });
    sets.patch_status(ds_name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    watch.until(|_, ds| has_condition(ds, "StatusPatched", false)).await;
    // The controller's own status writes keep what a client put there (upstream's
    // `storeDaemonSetStatus` sets its counts on the status as it is): a pod deleted and made
    // again changes the counts twice.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let victim = pods_of(&client, &selector).await.remove(0);
    pods.delete(&victim.name_any(), &DeleteParams::default()).await.unwrap();
    eventually(|| async {
        let pods = pods_of(&client, &selector).await;
        pods.iter().all(|p| p.metadata.uid != victim.metadata.uid).then_some(())
    })
    .await;
    daemon_pods_on_every_node(&client, ds_name, &selector).await;
    let ds = sets.get(ds_name).await.unwrap();
    assert!(has_condition(&ds, "StatusPatched", false), "{:?}", ds.status);
}

#[tokio::test]
async fn a_stateful_sets_status_takes_conditions_by_update_and_patch() {
    // Upstream's "StatefulSet should validate Statefulset Status endpoints".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let rv = list_rv(&Api::<StatefulSet>::all(client.clone()), "e2e=testing").await;
    let mut watch = Watch::start(&sets, "e2e=testing", &rv).await;
    sets.create(&PostParams::default(), &e2e_stateful_set("ss", 1)).await.unwrap();
    wait_for(&sets, "ss", |s: Option<&StatefulSet>| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|st| st.ready_replicas == Some(1) && st.replicas == 1)
    })
    .await;
    let patch = json!({ "metadata": { "labels": { "e2e": "testing" } } });
    let ss = sets.patch("ss", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    assert_eq!(ss.labels().get("e2e").map(String::as_str), Some("testing"));
    let status = sets.get_status("ss").await.unwrap();
    assert_eq!(status.status.unwrap().replicas, 1);

    let updated = add_status_condition(&sets, "ss").await;
    assert!(has_condition(&updated, "StatusUpdate", true));
    watch.until(|_, s| has_condition(s, "StatusUpdate", true)).await;

    let patch = json!({ "status": { "conditions": [{ "type": "StatusPatched", "status": "True" }] } });
    let patched = sets.patch_status("ss", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert!(has_condition(&patched, "StatusPatched", false));
    watch.until(|_, s| has_condition(s, "StatusPatched", false)).await;
}

#[tokio::test]
async fn a_replica_set_is_scaled_by_update_and_patched_to_a_new_template() {
    // Upstream's "ReplicaSet Replace and Patch tests": one pod, scaled to two by an update, then
    // a strategic merge patch of a label, three replicas and a second container first in line.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let rv = list_rv(&Api::<ReplicaSet>::all(client.clone()), "test-rs=patched").await;
    let mut watch = Watch::start(&sets, "test-rs=patched", &rv).await;
    let labels = json!({ "name": "sample-pod", "pod": "agnhost" });
    let created = sets
        .create(&PostParams::default(), &e2e_replica_set("test-rs", 1, labels, "agnhost", AGNHOST))
        .await
        .unwrap();
    eventually(|| async {
        let pods = pods_of(&client, "name=sample-pod").await;
        (pods.len() == 1 && phase(&pods[0]) == "Running").then_some(())
    })
    .await;
    eventually(|| async {
        let mut rs = sets.get("test-rs").await.unwrap();
        rs.spec.replicas = Some(2);
        sets.replace("test-rs", &PostParams::default(), &rs).await.ok()
    })
    .await;
    let pause = "registry.k8s.io/pause:3.10";
    let patch = json!({ "metadata": { "labels": { "test-rs": "patched" } }, "spec": { "replicas": 3,
        "template": { "spec": { "terminationGracePeriodSeconds": 0, "containers": [{ "name": "test-rs", "image": pause }] } } } });
    let patched = sets.patch("test-rs", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let rv_of = |o: &ReplicaSet| o.metadata.resource_version.clone().unwrap().parse::<u64>().unwrap();
    assert!(rv_of(&created) < rv_of(&patched), "the patched object has a larger resourceVersion");
    let (_, rs) = watch
        .until(|_, rs| {
            let status = rs.status.clone().unwrap_or_default();
            let pod = rs.spec.template.as_ref().and_then(|t| t.spec.as_ref()).unwrap();
            rs.labels().get("test-rs").map(String::as_str) == Some("patched")
                && status.ready_replicas == Some(3)
                && status.available_replicas == Some(3)
                && pod.containers[0].image.as_deref() == Some(pause)
                && pod.termination_grace_period_seconds == Some(0)
        })
        .await;
    let containers = rs.spec.template.unwrap().spec.unwrap().containers;
    assert_eq!(containers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["test-rs", "agnhost"]);
}

#[tokio::test]
async fn a_replication_controller_lives_through_patches_of_its_labels_status_and_scale() {
    // Upstream's "ReplicationController should test the lifecycle of a ReplicationController":
    // the watch sees it added, four times modified and deleted.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let rcs: Api<ReplicationController> = Api::default_namespaced(client.clone());
    let selector = "test-rc-static=true";
    let rv = list_rv(&rcs, selector).await;
    let mut watch = Watch::start(&rcs, selector, &rv).await;
    let rc: ReplicationController = of(
        json!({ "metadata": { "name": "rc-test", "labels": { "test-rc-static": "true" } },
        "spec": { "replicas": 1, "selector": { "test-rc-static": "true" },
            "template": { "metadata": { "name": "rc-test", "labels": { "test-rc-static": "true" } },
                "spec": { "containers": [{ "name": "rc-test", "image": "registry.k8s.io/e2e-test-images/nginx:1.14-4" }] } } } }),
    );
    rcs.create(&PostParams::default(), &rc).await.unwrap();
    let mut seen = Vec::new();
    let (kind, _) = watch.until(|kind, _| kind == "ADDED").await;
    seen.push(kind);
    let counts = |r: &ReplicationController| {
        let s = r.status.clone().unwrap_or_default();
        (s.replicas, s.ready_replicas.unwrap_or(0))
    };
    watch.until(|_, r| counts(r) == (1, 1)).await;

    let patch = json!({ "metadata": { "labels": { "test-rc": "patched" } } });
    let patched = rcs.patch("rc-test", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    assert_eq!(patched.labels().get("test-rc").map(String::as_str), Some("patched"));
    let (kind, _) = watch.until(|kind, _| kind == "MODIFIED").await;
    seen.push(kind);

    let patch = json!({ "status": { "readyReplicas": 0, "availableReplicas": 0 } });
    let status =
        rcs.patch_status("rc-test", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    assert_eq!(status.status.unwrap().ready_replicas.unwrap_or(0), 0);
    let (kind, _) = watch.until(|kind, _| kind == "MODIFIED").await;
    seen.push(kind);
    watch.until(|_, r| counts(r).0 == 1).await;
    assert_eq!(rcs.get_status("rc-test").await.unwrap().status.unwrap().replicas, 1);

    let scale = json!({ "spec": { "replicas": 2 } });
    rcs.patch_scale("rc-test", &PatchParams::default(), &Patch::Strategic(&scale)).await.unwrap();
    let (kind, _) = watch.until(|kind, _| kind == "MODIFIED").await;
    seen.push(kind);
    watch.until(|_, r| counts(r) == (2, 2)).await;
    let mut rc = rcs.get("rc-test").await.unwrap();
    assert_eq!(rc.labels().get("test-rc").map(String::as_str), Some("patched"));

    let status = rc.status.get_or_insert_default();
    status.available_replicas = Some(1);
    status.ready_replicas = Some(1);
    rcs.replace_status("rc-test", &PostParams::default(), &rc).await.unwrap();
    let (kind, _) = watch.until(|kind, _| kind == "MODIFIED").await;
    seen.push(kind);

    let all: Api<ReplicationController> = Api::all(client.clone());
    let listed = all.list(&ListParams::default().labels(selector)).await.unwrap().items;
    assert!(listed.iter().any(|r| r.metadata.name.as_deref() == Some("rc-test")
        && r.labels().get("test-rc").map(String::as_str) == Some("patched")));
    rcs.delete_collection(&DeleteParams::default(), &ListParams::default().labels(selector)).await.unwrap();
    let (kind, _) = watch.until(|kind, _| kind == "DELETED").await;
    seen.push(kind);
    assert_eq!(seen, ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]);
}

/// Upstream's `e2ejob.NewTestJob`: a busybox container per pod that, as `behavior` says, never
/// ends (`notTerminate`) or exits 0 (`succeed`).
fn e2e_job(behavior: &str, name: &str, parallelism: i32, completions: i32) -> Job {
    let (command, args) = match behavior {
        "notTerminate" => (json!(["sleep", "1000000"]), json!([])),
        "fail" => (json!(["/bin/sh", "-c", "exit 1"]), json!([])),
        "failOddSucceedEven" => (
            json!(["sh", "-c"]),
            json!([
                "\n\t\t\tif [ $(expr ${JOB_COMPLETION_INDEX} % 2) -ne 0 ]; then\n\t\t\t\texit 1\n\t\t\telse\n\t\t\t\texit 0\n\t\t\tfi\n\t\t\t"
            ]),
        ),
        "succeed" => (json!(["/bin/sh", "-c", "exit 0"]), json!([])),
        // Any other: busybox's own `sh`, which exits 0 without input.
        _ => (json!([]), json!([])),
    };
    of(json!({ "metadata": { "name": name }, "spec": {
        "parallelism": parallelism, "completions": completions, "backoffLimit": 6,
        "template": { "metadata": { "labels": { "job": name } }, "spec": { "restartPolicy": "Never",
            "containers": [{ "name": "c", "image": "registry.k8s.io/e2e-test-images/busybox:1.37.0-1",
                "command": command, "args": args }] } } } }))
}

/// Upstream's `WaitForJobFailed` / `WaitForJobComplete`: the Job's final condition, once there.
async fn job_finished(jobs: &Api<Job>, name: &str, kind: &str) -> Job {
    wait_for(jobs, name, |j: Option<&Job>| {
        j.and_then(|j| j.status.as_ref()?.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == kind && c.status == "True"))
    })
    .await
}

fn reason_of(job: &Job, kind: &str) -> Option<String> {
    job.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)?.reason.clone()
}

#[tokio::test]
async fn an_indexed_job_runs_every_index_when_some_fail_past_their_per_index_backoff_limit() {
    // Upstream's "Job should execute all indexes despite some failing when using
    // backoffLimitPerIndex": odd indexes fail, each tried twice (a back-off of 10 s of the
    // clock before the second try), even ones succeed.
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut job = e2e_job("failOddSucceedEven", "with-backoff-limit-per-index", 2, 4);
    let spec = job.spec.as_mut().unwrap();
    spec.backoff_limit = None;
    spec.backoff_limit_per_index = Some(1);
    spec.completion_mode = Some("Indexed".into());
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let failed = |n: i32| {
        let jobs = jobs.clone();
        async move {
            wait_for(&jobs, "with-backoff-limit-per-index", move |j: Option<&Job>| {
                j.and_then(|j| j.status.as_ref()).is_some_and(|s| s.failed == Some(n))
            })
            .await
        }
    };
    // The first try of each index; the odd ones' second tries a back-off on.
    failed(2).await;
    sim.clock().advance(Duration::from_secs(11));
    let done = job_finished(&jobs, "with-backoff-limit-per-index", "Failed").await;
    assert_eq!(reason_of(&done, "Failed").as_deref(), Some("FailedIndexes"));
    let status = done.status.unwrap();
    assert_eq!(status.failed_indexes.as_deref(), Some("1,3"));
    assert_eq!(status.completed_indexes.as_deref(), Some("0,2"));
    assert_eq!(status.failed, Some(4));
    assert_eq!(status.succeeded, Some(2));
}

#[tokio::test]
async fn an_indexed_job_stops_once_more_indexes_failed_than_allowed() {
    // Upstream's "Job should terminate job execution when the number of failed indexes exceeds
    // maxFailedIndexes": one pod at a time, none retried, none allowed to fail.
    let sb = cluster(Simulation::instant());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut job = e2e_job("fail", "with-max-failed-indexes", 1, 4);
    let spec = job.spec.as_mut().unwrap();
    spec.backoff_limit = None;
    spec.backoff_limit_per_index = Some(0);
    spec.max_failed_indexes = Some(0);
    spec.completion_mode = Some("Indexed".into());
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let done = job_finished(&jobs, "with-max-failed-indexes", "Failed").await;
    assert_eq!(reason_of(&done, "Failed").as_deref(), Some("MaxFailedIndexesExceeded"));
    let status = done.status.unwrap();
    assert_eq!(status.failed_indexes.as_deref(), Some("0"));
    assert_eq!(status.failed, Some(1));
}

/// Upstream's `failOnce` script: exits 0 if `/data/foo` is there, else makes it and exits 1.
const FAIL_ONCE: &str = "\n\t\t\tif [[ -r /data/foo ]]\n\t\t\tthen\n\t\t\t\texit 0\n\t\t\telse\n\t\t\t\ttouch /data/foo\n\t\t\t\texit 1\n\t\t\tfi\n\t\t";

#[tokio::test]
async fn a_job_whose_tasks_fail_once_and_restart_in_place_completes() {
    // Upstream's "Job should run a job to completion when tasks sometimes fail and are locally
    // restarted": `failOnce` under `OnFailure`, the marker in the pod's emptyDir, which a
    // restarted container finds.
    let sb = cluster(Simulation::instant());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut job = e2e_job("fail", "fail-once-local", 2, 4);
    let pod = job.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    pod.restart_policy = Some("OnFailure".into());
    pod.volumes = Some(vec![of(json!({ "name": "data", "emptyDir": {} }))]);
    let c = &mut pod.containers[0];
    c.volume_mounts = Some(vec![of(json!({ "name": "data", "mountPath": "/data" }))]);
    c.command = Some(vec!["/bin/sh".into(), "-c".into()]);
    c.args = Some(vec![FAIL_ONCE.into()]);
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let done = job_finished(&jobs, "fail-once-local", "Complete").await;
    assert_eq!(reason_of(&done, "Complete").as_deref(), Some("CompletionsReached"));
    assert_eq!(done.status.unwrap().succeeded, Some(4));
    // Each pod's container failed once, and ran again in the same pod.
    for p in pods_of(&sb.client(), "batch.kubernetes.io/job-name=fail-once-local").await {
        assert_eq!(phase(&p), "Succeeded");
        assert_eq!(p.status.unwrap().container_statuses.unwrap()[0].restart_count, 1);
    }
}

#[tokio::test]
async fn evicted_pods_a_pod_failure_policy_ignores_are_replaced_and_the_job_completes() {
    // Upstream's "Job should allow to use a pod failure policy to ignore failure matching on
    // DisruptionTarget condition": three indexes on one node, each running until evicted the
    // first time (leaving a marker in a hostPath), succeeding the second; the evictions fail
    // three pods, past the backoff limit of 2, but the rule ignores them.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let name = "evicted-pod-ignore-on-disruption-condition";
    let mut job = e2e_job("fail", name, 3, 3);
    let spec = job.spec.as_mut().unwrap();
    spec.backoff_limit = Some(2);
    spec.completion_mode = Some("Indexed".into());
    spec.pod_failure_policy = Some(of(json!({ "rules": [{ "action": "Ignore",
        "onPodConditions": [{ "type": "DisruptionTarget", "status": "True" }] }] })));
    let pod = spec.template.spec.as_mut().unwrap();
    pod.node_selector = Some([("kubernetes.io/hostname".to_owned(), "sandbox-node-1".to_owned())].into());
    pod.volumes = Some(vec![of(
        json!({ "name": "data", "hostPath": { "path": "/tmp/job-e2e/q9w3e", "type": "DirectoryOrCreate" } }),
    )]);
    let c = &mut pod.containers[0];
    c.volume_mounts = Some(vec![of(json!({ "name": "data", "mountPath": "/data" }))]);
    c.command = Some(vec!["/bin/sh".into(), "-c".into()]);
    c.args = Some(vec![
        "if [[ -r /data/foo-$JOB_COMPLETION_INDEX ]]; then exit 0; else touch /data/foo-$JOB_COMPLETION_INDEX; sleep 1000000; fi"
            .into(),
    ]);
    jobs.create(&PostParams::default(), &job).await.unwrap();
    wait_for(&jobs, name, |j: Option<&Job>| {
        j.and_then(|j| j.status.as_ref()).is_some_and(|s| s.ready == Some(3))
    })
    .await;
    let running: Vec<Pod> = pods_of(&client, &format!("batch.kubernetes.io/job-name={name}"))
        .await
        .into_iter()
        .filter(|p| phase(p) == "Running")
        .collect();
    assert_eq!(running.len(), 3);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    for p in &running {
        pods.evict(&p.name_any(), &Default::default()).await.unwrap();
    }
    for p in &running {
        eventually(|| async {
            let now = pods.get_opt(&p.name_any()).await.unwrap();
            now.is_none_or(|n| n.metadata.uid != p.metadata.uid).then_some(())
        })
        .await;
    }
    let done = job_finished(&jobs, name, "Complete").await;
    assert_eq!(reason_of(&done, "Complete").as_deref(), Some("CompletionsReached"));
    assert_eq!(done.status.unwrap().failed.unwrap_or(0), 0, "the evictions are not counted");
}

#[tokio::test]
async fn a_pod_failure_policy_fails_a_job_early_on_an_exit_code() {
    // Upstream's "Job should allow to use the pod failure policy on exit code to fail the job
    // early": `failOnce` pods on one node, the first of which exits 1, which a FailJob rule
    // matches, far below the backoff limit.
    let sb = cluster(Simulation::instant());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut job = e2e_job("fail", "pod-failure-failjob", 2, 4);
    let spec = job.spec.as_mut().unwrap();
    let pod = spec.template.spec.as_mut().unwrap();
    pod.node_selector = Some([("kubernetes.io/hostname".to_owned(), "sandbox-node-1".to_owned())].into());
    pod.volumes = Some(vec![of(
        json!({ "name": "data", "hostPath": { "path": "/tmp/job-e2e/x7k2p", "type": "DirectoryOrCreate" } }),
    )]);
    let c = &mut pod.containers[0];
    c.volume_mounts = Some(vec![of(json!({ "name": "data", "mountPath": "/data" }))]);
    c.command = Some(vec!["/bin/sh".into(), "-c".into()]);
    c.args = Some(vec![FAIL_ONCE.into()]);
    spec.pod_failure_policy = Some(of(
        json!({ "rules": [{ "action": "FailJob", "onExitCodes": { "operator": "In", "values": [1] } }] }),
    ));
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let done = job_finished(&jobs, "pod-failure-failjob", "Failed").await;
    assert_eq!(reason_of(&done, "Failed").as_deref(), Some("PodFailurePolicy"));
    let failed = done.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "Failed").unwrap();
    let message = failed.message.unwrap();
    assert!(message.starts_with("Container c for pod default/pod-failure-failjob-"), "{message}");
    assert!(message.ends_with(" failed with exit code 1 matching FailJob rule at index 0"), "{message}");
}

#[tokio::test]
async fn a_fail_index_rule_fails_an_index_without_retrying_it() {
    // Upstream's "Job should mark indexes as failed when the FailIndex action is matched in
    // podFailurePolicy": index 1 fails once and is not tried again, despite a per-index limit
    // of 1.
    let sb = cluster(Simulation::instant());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut job = e2e_job("failOddSucceedEven", "matching-fail-index-action", 2, 2);
    let spec = job.spec.as_mut().unwrap();
    spec.backoff_limit = None;
    spec.backoff_limit_per_index = Some(1);
    spec.completion_mode = Some("Indexed".into());
    spec.pod_failure_policy = Some(of(
        json!({ "rules": [{ "action": "FailIndex", "onExitCodes": { "operator": "In", "values": [1] } }] }),
    ));
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let done = job_finished(&jobs, "matching-fail-index-action", "Failed").await;
    assert_eq!(reason_of(&done, "Failed").as_deref(), Some("FailedIndexes"));
    let status = done.status.unwrap();
    assert_eq!(status.failed_indexes.as_deref(), Some("1"));
    assert_eq!(status.completed_indexes.as_deref(), Some("0"));
    assert_eq!((status.failed, status.succeeded), (Some(1), Some(1)));
}

/// Upstream's three `successPolicy` conformance tests: the Job's interim condition, then its
/// `Complete` with reason `SuccessPolicy`, nothing left running.
async fn a_job_meeting_its_success_policy(
    behavior: &str,
    name: &str,
    completions: i32,
    rule: serde_json::Value,
    backoff: i32,
) -> Job {
    let sb = cluster(Simulation::instant());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut job = e2e_job(behavior, name, 2, completions);
    let spec = job.spec.as_mut().unwrap();
    spec.backoff_limit = Some(backoff);
    spec.completion_mode = Some("Indexed".into());
    spec.success_policy = Some(of(json!({ "rules": [rule] })));
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let met = job_finished(&jobs, name, "SuccessCriteriaMet").await;
    assert_eq!(reason_of(&met, "SuccessCriteriaMet").as_deref(), Some("SuccessPolicy"));
    let done = job_finished(&jobs, name, "Complete").await;
    assert_eq!(reason_of(&done, "Complete").as_deref(), Some("SuccessPolicy"));
    let status = done.status.clone().unwrap();
    assert_eq!((status.active.unwrap_or(0), status.ready, status.terminating), (0, Some(0), Some(0)));
    done
}

#[tokio::test]
async fn an_indexed_job_succeeds_by_its_success_policy() {
    // Upstream's "Job with successPolicy should succeeded when all indexes succeeded".
    let done = a_job_meeting_its_success_policy(
        "succeeded",
        "all-index-succeeded",
        2,
        json!({ "succeededCount": 2 }),
        6,
    )
    .await;
    let status = done.status.unwrap();
    assert_eq!(status.succeeded, Some(2));
    assert_eq!(status.failed.unwrap_or(0), 0);
    // "with successPolicy succeededIndexes rule should succeeded even when some indexes remain
    // pending" and "... succeededCount rule ...": index 0 is enough.
    for (name, rule, backoff) in [
        ("succeeded-indexed", json!({ "succeededIndexes": "0" }), 6),
        ("succeeded-count", json!({ "succeededCount": 1 }), i32::MAX),
    ] {
        let done = a_job_meeting_its_success_policy("failOddSucceedEven", name, 5, rule, backoff).await;
        assert_eq!(done.status.unwrap().completed_indexes.as_deref(), Some("0"));
    }
}

#[tokio::test]
async fn a_jobs_status_takes_a_condition_and_an_annotation_by_patch_and_update() {
    // Upstream's "Job should apply changes to a job status".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job = jobs
        .create(&PostParams::default(), &e2e_job("notTerminate", "suspend-false-to-true", 2, 4))
        .await
        .unwrap();
    eventually(|| async {
        let pods = pods_of(&client, "batch.kubernetes.io/job-name=suspend-false-to-true").await;
        (pods.iter().filter(|p| phase(p) == "Running").count() == 2).then_some(())
    })
    .await;

    let now1 = "2026-01-02T03:04:05Z";
    let patch = json!({ "metadata": { "annotations": { "patchedstatus": "true" } },
        "status": { "conditions": [{ "type": "CustomConditionType", "status": "True", "lastTransitionTime": now1 }] } });
    let patched =
        jobs.patch_status(&job.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let custom = |j: &Job| {
        j.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "CustomConditionType").cloned()
    };
    let stamp = |j: &Job| custom(j).and_then(|c| c.last_transition_time).map(|t| t.0.to_string());
    assert_eq!(stamp(&patched).as_deref(), Some(now1), "{:?}", patched.status);
    assert_eq!(patched.annotations().get("patchedstatus").map(String::as_str), Some("true"));

    let now2 = "2026-02-03T04:05:06Z";
    let updated = eventually(|| async {
        let mut j = jobs.get(&job.name_any()).await.unwrap();
        let conditions = j.status.as_mut()?.conditions.as_mut()?;
        let c =
            conditions.iter_mut().find(|c| c.type_ == "CustomConditionType").expect("the patched condition");
        c.last_transition_time = Some(of(json!(now2)));
        match jobs.replace_status(&job.name_any(), &PostParams::default(), &j).await {
            Ok(updated) => Some(updated),
            Err(kube::Error::Api(e)) if e.code == 409 => None,
            Err(e) => panic!("{e}"),
        }
    })
    .await;
    assert_eq!(stamp(&updated).as_deref(), Some(now2));
    let gotten = jobs.get_status(&job.name_any()).await.unwrap();
    assert_eq!(gotten.metadata.uid, job.metadata.uid);
}

#[tokio::test]
async fn a_job_is_patched_updated_resumed_completed_and_deleted_by_collection() {
    // Upstream's "Job should manage the lifecycle of a job".
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let name = "e2e-q4n8z";
    let selector = format!("e2e-job-label={name}");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let rv = list_rv(&jobs, &selector).await;
    let mut watch = Watch::start(&jobs, &selector, &rv).await;
    let mut job = e2e_job("succeed", name, 2, 4);
    job.metadata.labels = Some([("e2e-job-label".to_owned(), name.to_owned())].into());
    job.spec.as_mut().unwrap().suspend = Some(true);
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();

    let patch = json!({ "metadata": { "labels": { name: "patched" } } });
    let patched = jobs.patch(name, &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let rv_of = |j: &Job| j.metadata.resource_version.clone().unwrap().parse::<u64>().unwrap();
    assert!(rv_of(&job) < rv_of(&patched));
    watch
        .until(|kind, j| kind == "MODIFIED" && j.labels().get(name).map(String::as_str) == Some("patched"))
        .await;

    let updated = eventually(|| async {
        let mut j = jobs.get(name).await.unwrap();
        j.spec.as_mut().unwrap().suspend = Some(false);
        j.metadata.annotations.get_or_insert_default().insert("updated".into(), "true".into());
        jobs.replace(name, &PostParams::default(), &j).await.ok()
    })
    .await;
    assert_eq!(updated.annotations().get("updated").map(String::as_str), Some("true"));
    watch
        .until(|kind, j| {
            kind == "MODIFIED" && j.annotations().get("updated").map(String::as_str) == Some("true")
        })
        .await;
    let all: Api<Job> = Api::all(client.clone());
    assert_eq!(all.list(&ListParams::default().labels(&selector)).await.unwrap().items.len(), 1);

    let done = wait_for(&jobs, name, conditions::is_job_completed()).await.status.unwrap();
    assert_eq!(done.succeeded, Some(4));
    let complete = done.conditions.unwrap().into_iter().find(|c| c.type_ == "Complete").unwrap();
    assert_eq!(complete.reason.as_deref(), Some("CompletionsReached"));

    let background = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..Default::default()
    };
    jobs.delete_collection(&background, &ListParams::default().labels(&selector)).await.unwrap();
    watch.until(|kind, _| kind == "DELETED").await;
    assert!(all.list(&ListParams::default().labels(&selector)).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn an_indexed_jobs_containers_find_their_index_in_the_environment() {
    // What upstream's indexed Job conformance test describes beside the annotation: each
    // container has JOB_COMPLETION_INDEX, the kubelet giving it from the pod's index label.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job: Job = of(json!({ "metadata": { "name": "echo-index" }, "spec": {
        "parallelism": 2, "completions": 2, "completionMode": "Indexed",
        "template": { "spec": { "restartPolicy": "Never", "containers": [{ "name": "c", "image": "busybox",
            "command": ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX on $NODE"],
            "env": [{ "name": "NODE", "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } }] }] } } } }));
    jobs.create(&PostParams::default(), &job).await.unwrap();
    wait_for(&jobs, "echo-index", conditions::is_job_completed()).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut said = Vec::new();
    for pod in pods_of(&client, "batch.kubernetes.io/job-name=echo-index").await {
        let log = pods.logs(&pod.name_any(), &Default::default()).await.unwrap();
        let ix = pod.annotations()["batch.kubernetes.io/job-completion-index"].clone();
        let node = pod.spec.unwrap().node_name.unwrap();
        assert_eq!(log.trim(), format!("index={ix} on {node}"));
        said.push(ix);
    }
    said.sort();
    assert_eq!(said, ["0", "1"]);
}

#[tokio::test]
async fn a_suspended_jobs_running_pods_are_deleted_and_gone() {
    // Upstream's "Job should delete pods when suspended": its running pods are deleted, not
    // left terminating, and the Job says it is suspended.
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &e2e_job("notTerminate", "suspend-false-to-true", 2, 4))
        .await
        .unwrap();
    let selector = "batch.kubernetes.io/job-name=suspend-false-to-true";
    eventually(|| async {
        (pods_of(&client, selector).await.iter().filter(|p| phase(p) == "Running").count() == 2).then_some(())
    })
    .await;
    eventually(|| async {
        let mut j = jobs.get("suspend-false-to-true").await.unwrap();
        j.spec.as_mut().unwrap().suspend = Some(true);
        jobs.replace("suspend-false-to-true", &PostParams::default(), &j).await.ok()
    })
    .await;
    eventually(|| async { pods_of(&client, selector).await.is_empty().then_some(()) }).await;
    let job = jobs.get("suspend-false-to-true").await.unwrap();
    assert!(reason_of(&job, "Suspended").is_some());
}
