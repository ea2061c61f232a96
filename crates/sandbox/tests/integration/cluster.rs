//! The simulated cluster through a real `kube::Client`, awaited with kube-runtime's own
//! `wait::conditions` as an operator's test would: Deployments become ReplicaSets become running,
//! ready pods on nodes; a rolling update stays within its surge; Jobs complete, back off and fail;
//! pods that fit nowhere are told why; Services get endpoints that follow readiness; a NotReady
//! node is tainted and its pods evicted once their toleration runs out on a paused clock; every
//! namespace gets its `default` ServiceAccount and `kube-root-ca.crt`.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, Namespace, Node, Pod, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::{Client, Resource};
use kube_sandbox::{Controller, Controllers, NodeShape, Simulation};
use kube_sandbox::{Sandbox, SandboxConfig};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub(crate) fn cluster(sim: Simulation) -> Sandbox {
    Sandbox::with_config(SandboxConfig::with_cluster(sim))
}

pub(crate) fn of<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

/// Waits until `cond` holds for `name`, however long a loaded machine takes (the test harness'
/// own timeout is the only deadline).
pub(crate) async fn wait_for<K>(api: &Api<K>, name: &str, cond: impl Condition<K>) -> K
where
    K: Resource + Clone + std::fmt::Debug + DeserializeOwned + Send + 'static,
{
    await_condition(api.clone(), name, cond).await.unwrap().unwrap_or_else(|| panic!("{name} was deleted"))
}

/// Polls `f` until it returns `Some`, yielding to the simulation in between.
pub(crate) async fn eventually<T, F: Future<Output = Option<T>>>(mut f: impl FnMut() -> F) -> T {
    loop {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(crate) fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    of(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "strategy": { "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "web", "image": image, "ports": [{ "name": "http", "containerPort": 8080 }],
                          "resources": { "requests": { "cpu": "100m", "memory": "64Mi" } } }] },
            },
        },
    }))
}

pub(crate) fn job(name: &str, spec: Value) -> Job {
    let mut spec = spec;
    spec["template"] = json!({ "spec": { "restartPolicy": "Never", "containers": [{ "name": "work", "image": "busybox:1.36" }] } });
    of(json!({ "metadata": { "name": name }, "spec": spec }))
}

pub(crate) fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub(crate) async fn pods_of(client: &Client, selector: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.list(&ListParams::default().labels(selector)).await.unwrap().items
}

#[tokio::test]
async fn nodes_are_ready_with_capacity_and_leases() {
    let sb = cluster(Simulation { nodes: 4, ..Simulation::instant() });
    let nodes: Api<Node> = Api::all(sb.client());
    let listed = eventually(|| {
        let nodes = nodes.clone();
        async move { Some(nodes.list(&ListParams::default()).await.unwrap().items).filter(|l| l.len() == 4) }
    })
    .await;
    for node in &listed {
        let status = node.status.clone().unwrap();
        assert_eq!(status.allocatable.unwrap()["pods"].0, "110");
        let ready = status.conditions.unwrap().into_iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "True");
        assert_eq!(node.metadata.labels.as_ref().unwrap()["kubernetes.io/os"], "linux");
    }
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(sb.client(), "kube-node-lease");
    let lease = eventually(|| {
        let leases = leases.clone();
        async move { leases.get_opt("sandbox-node-1").await.unwrap() }
    })
    .await;
    assert_eq!(lease.spec.unwrap().holder_identity.as_deref(), Some("sandbox-node-1"));
}

#[tokio::test]
async fn a_deployment_becomes_a_replica_set_of_running_ready_pods_on_nodes() {
    let sb = cluster(Simulation::instant());
    let deployments: Api<Deployment> = Api::default_namespaced(sb.client());
    deployments.create(&PostParams::default(), &deployment("web", 3, "nginx:1.27")).await.unwrap();
    let done = wait_for(&deployments, "web", conditions::is_deployment_completed()).await;
    let status = done.status.unwrap();
    assert_eq!(
        (status.replicas, status.ready_replicas, status.available_replicas),
        (Some(3), Some(3), Some(3))
    );
    let kinds: Vec<(String, String)> = status
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| (c.type_.unwrap_or_default(), c.reason.unwrap_or_default()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("Available".into(), "MinimumReplicasAvailable".into()),
            ("Progressing".into(), "NewReplicaSetAvailable".into())
        ]
    );

    let sets: Api<ReplicaSet> = Api::default_namespaced(sb.client());
    let rs = sets.list(&ListParams::default().labels("app=web")).await.unwrap().items;
    assert_eq!(rs.len(), 1);
    let hash = &rs[0].metadata.labels.as_ref().unwrap()["pod-template-hash"];
    assert_eq!(rs[0].metadata.name.as_deref(), Some(format!("web-{hash}").as_str()));
    assert_eq!(rs[0].metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"], "1");

    let pods = pods_of(&sb.client(), "app=web").await;
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        let status = pod.status.clone().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(status.pod_ip.as_deref().unwrap().starts_with("10.244."));
        assert!(pod.spec.as_ref().unwrap().node_name.as_deref().unwrap().starts_with("sandbox-node-"));
        let c = &status.container_statuses.unwrap()[0];
        assert!(
            c.ready && c.started == Some(true) && c.image_id.starts_with("docker.io/library/nginx@sha256:")
        );
        assert!(conditions::is_pod_running().matches_object(Some(pod)));
    }
    // The three spread over the three nodes: the least allocated wins each time.
    let mut nodes: Vec<String> = pods.iter().map(|p| p.spec.clone().unwrap().node_name.unwrap()).collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3);
    // The scheduler said where, as upstream's does.
    let events: Api<Event> = Api::default_namespaced(sb.client());
    let scheduled = events.list(&ListParams::default().fields("reason=Scheduled")).await.unwrap().items;
    assert_eq!(scheduled.len(), 3);
}

#[tokio::test]
async fn a_rolling_update_never_exceeds_its_surge_and_keeps_every_pod_available() {
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    deployments.create(&PostParams::default(), &deployment("roll", 4, "nginx:1.26")).await.unwrap();
    wait_for(&deployments, "roll", conditions::is_deployment_completed()).await;

    // Watch every pod change while the template changes: never more than 4 + 1 active pods,
    // never fewer than 4 ready ones once the rollout is under way.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut stream = pods.watch(&WatchParams::default().labels("app=roll"), "0").await.unwrap().boxed();
    let patch = json!({ "spec": { "template": { "spec": { "containers": [{ "name": "web", "image": "nginx:1.27" }] } } } });
    deployments.patch("roll", &PatchParams::default(), &Patch::Strategic(patch)).await.unwrap();
    let mut live: std::collections::BTreeMap<String, Pod> = Default::default();
    let mut most = 0;
    let mut fewest_ready = usize::MAX;
    loop {
        match stream.next().await.unwrap().unwrap() {
            WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                live.insert(p.metadata.name.clone().unwrap(), p);
            }
            WatchEvent::Deleted(p) => {
                live.remove(p.metadata.name.as_deref().unwrap());
            }
            _ => continue,
        }
        let active: Vec<&Pod> = live.values().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        let ready = active.iter().filter(|p| is_ready(p)).count();
        most = most.max(active.len());
        if live.len() >= 4 {
            fewest_ready = fewest_ready.min(ready);
        }
        let updated = active
            .iter()
            .all(|p| p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:1.27"));
        if updated && active.len() == 4 && ready == 4 && live.len() == 4 {
            break;
        }
    }
    assert!(most <= 5, "{most} active pods at once with maxSurge 1");
    assert!(fewest_ready >= 4, "only {fewest_ready} ready with maxUnavailable 0");
    let done = wait_for(&deployments, "roll", conditions::is_deployment_completed()).await;
    assert_eq!(done.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"], "2");
    let sets: Api<ReplicaSet> = Api::default_namespaced(client);
    let rs = sets.list(&ListParams::default().labels("app=roll")).await.unwrap().items;
    let mut sizes: Vec<i32> = rs.iter().map(|r| r.spec.replicas.unwrap()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [0, 4], "the old set kept at zero for a rollback");
}

#[tokio::test]
async fn jobs_complete_and_fail_past_their_backoff_limit_on_a_paused_clock() {
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    jobs.create(&PostParams::default(), &job("batch", json!({ "completions": 3, "parallelism": 2 })))
        .await
        .unwrap();
    // Each pod runs one second of the simulation's clock: advancing it finishes them.
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    for _ in 0..2 {
        eventually(|| {
            let pods = pods.clone();
            async move {
                let list = pods.list(&ListParams::default().labels("job-name=batch")).await.unwrap().items;
                list.iter()
                    .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                    .then_some(())
            }
        })
        .await;
        sim.clock().advance(Duration::from_secs(2));
    }
    let done = wait_for(&jobs, "batch", conditions::is_job_completed()).await;
    let status = done.status.unwrap();
    assert_eq!(status.succeeded, Some(3));
    let kinds: Vec<String> = status.conditions.unwrap().into_iter().map(|c| c.type_).collect();
    assert_eq!(kinds, ["SuccessCriteriaMet", "Complete"]);
    // Its pods were released from the tracking finalizer once counted.
    for p in pods.list(&ListParams::default().labels("job-name=batch")).await.unwrap().items {
        assert!(p.metadata.finalizers.unwrap_or_default().is_empty(), "{:?}", p.metadata.name);
    }

    jobs.create(&PostParams::default(), &job("flaky", json!({ "backoffLimit": 1 }))).await.unwrap();
    for attempt in 0..2 {
        let name = eventually(|| {
            let pods = pods.clone();
            async move {
                let list = pods.list(&ListParams::default().labels("job-name=flaky")).await.unwrap().items;
                list.into_iter()
                    .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                    .and_then(|p| p.metadata.name)
            }
        })
        .await;
        sim.exit_pod("default", &name, 1);
        if attempt == 0 {
            // The retry waits out the back-off: 10 s on the paused clock.
            eventually(|| {
                let jobs = jobs.clone();
                async move { (jobs.get("flaky").await.unwrap().status.unwrap().failed == Some(1)).then_some(()) }
            })
            .await;
            sim.clock().advance(Duration::from_secs(11));
        }
    }
    let failed = wait_for(&jobs, "flaky", |j: Option<&Job>| {
        j.and_then(|j| j.status.as_ref()?.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
    })
    .await;
    let cond = failed.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "Failed").unwrap();
    assert_eq!(cond.reason.as_deref(), Some("BackoffLimitExceeded"));
}

#[tokio::test]
async fn pods_scheduled_in_one_round_never_overfill_a_node() {
    // One node with room for two pods; three pods stored before the simulation looks, so the
    // scheduler meets all three in one round. Each bound pod counts against the node at once.
    let sb = cluster(Simulation {
        nodes: 1,
        node_shape: NodeShape { pods: 2, ..NodeShape::default() },
        ..Simulation::instant()
    });
    let pods_def = kube_sandbox::builtin_resource("", "v1", "pods").unwrap();
    for name in ["a", "b", "c"] {
        let pod = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": name },
            "spec": { "containers": [{ "name": "c", "image": "busybox" }] } });
        sb.store().create(pods_def, "default", pod, Some("test")).unwrap();
    }
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let waiting = eventually(|| async {
        let all = pods.list(&ListParams::default()).await.unwrap().items;
        let unschedulable: Vec<Pod> = all
            .iter()
            .filter(|p| {
                p.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))
                })
            })
            .cloned()
            .collect();
        let bound =
            all.iter().filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()).count();
        (bound + unschedulable.len() == 3).then_some((bound, unschedulable))
    })
    .await;
    assert_eq!(waiting.0, 2, "two pods fit");
    let conditions = waiting.1[0].status.as_ref().unwrap().conditions.clone().unwrap();
    let message = conditions.into_iter().find(|c| c.type_ == "PodScheduled").unwrap().message;
    assert_eq!(
        message.as_deref(),
        Some(
            "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )
    );
}

#[tokio::test]
async fn a_pod_that_fits_nowhere_is_unschedulable_with_upstreams_reasons() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let big: Pod = of(
        json!({ "metadata": { "name": "big" }, "spec": { "containers": [{ "name": "c", "image": "busybox",
        "resources": { "requests": { "cpu": "64" } } }] } }),
    );
    pods.create(&PostParams::default(), &big).await.unwrap();
    let pod = wait_for(&pods, "big", |p: Option<&Pod>| {
        p.and_then(|p| {
            p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled").cloned()
        })
        .is_some_and(|c| c.status == "False")
    })
    .await;
    let cond =
        pod.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "PodScheduled").unwrap();
    assert_eq!(cond.reason.as_deref(), Some("Unschedulable"));
    assert_eq!(
        cond.message.as_deref(),
        Some(
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        )
    );
    let events: Api<Event> = Api::default_namespaced(sb.client());
    let failed = events.list(&ListParams::default().fields("reason=FailedScheduling")).await.unwrap().items;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].type_.as_deref(), Some("Warning"));
    // A node with room arrives: the pod is scheduled there.
    let nodes: Api<Node> = Api::all(sb.client());
    let mut roomy = nodes.get("sandbox-node-1").await.unwrap();
    roomy.metadata = kube::api::ObjectMeta {
        name: Some("roomy".into()),
        labels: roomy.metadata.labels,
        ..Default::default()
    };
    roomy.spec = None;
    let status = roomy.status.take().map(|mut s| {
        s.capacity
            .as_mut()
            .unwrap()
            .insert("cpu".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("96".into()));
        s.allocatable = s.capacity.clone();
        s
    });
    nodes.create(&PostParams::default(), &roomy).await.unwrap();
    let mut with_status = nodes.get("roomy").await.unwrap();
    with_status.status = status;
    nodes.replace_status("roomy", &PostParams::default(), &with_status).await.unwrap();
    let placed = wait_for(&pods, "big", conditions::is_pod_running()).await;
    assert_eq!(placed.spec.unwrap().node_name.as_deref(), Some("roomy"));
}

#[tokio::test]
async fn a_host_port_held_on_the_only_node_keeps_a_pod_asking_for_it_pending() {
    // Upstream's sig-scheduling conformance tests on host ports: the same port and protocol
    // conflict when one asks for 0.0.0.0 (NodePorts), another protocol does not; the pod runs
    // once the holder is gone.
    let sb = cluster(Simulation { nodes: 1, ..Simulation::instant() });
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let with_port = |name: &str, ip: &str, protocol: &str| -> Pod {
        of(json!({ "metadata": { "name": name }, "spec": { "containers": [{ "name": "c", "image": "agnhost",
            "ports": [{ "containerPort": 8080, "hostPort": 54322, "hostIP": ip, "protocol": protocol }] }] } }))
    };
    pods.create(&PostParams::default(), &with_port("pod1", "0.0.0.0", "TCP")).await.unwrap();
    wait_for(&pods, "pod1", conditions::is_pod_running()).await;
    pods.create(&PostParams::default(), &with_port("pod2", "127.0.0.1", "TCP")).await.unwrap();
    pods.create(&PostParams::default(), &with_port("pod3", "127.0.0.1", "UDP")).await.unwrap();
    wait_for(&pods, "pod3", conditions::is_pod_running()).await;
    let pending = wait_for(&pods, "pod2", |p: Option<&Pod>| {
        p.and_then(|p| {
            p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled").cloned()
        })
        .is_some_and(|c| c.status == "False")
    })
    .await;
    let cond =
        pending.status.unwrap().conditions.unwrap().into_iter().find(|c| c.type_ == "PodScheduled").unwrap();
    assert_eq!(
        cond.message.as_deref(),
        Some(
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )
    );
    pods.delete("pod1", &DeleteParams::default().grace_period(0)).await.unwrap();
    wait_for(&pods, "pod2", conditions::is_pod_running()).await;
}

#[tokio::test]
async fn endpoints_and_slices_follow_the_ready_pods_a_service_selects() {
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc: Service = of(json!({ "metadata": { "name": "web" }, "spec": { "selector": { "app": "web" },
        "ports": [{ "name": "http", "port": 80, "targetPort": "http" }] } }));
    services.create(&PostParams::default(), &svc).await.unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    deployments.create(&PostParams::default(), &deployment("web", 2, "nginx")).await.unwrap();
    wait_for(&deployments, "web", conditions::is_deployment_completed()).await;

    let endpoints: Api<Endpoints> = Api::default_namespaced(client.clone());
    let ep = eventually(|| {
        let endpoints = endpoints.clone();
        async move {
            let ep = endpoints.get_opt("web").await.unwrap()?;
            let n = ep.subsets.as_ref()?.first()?.addresses.as_ref()?.len();
            (n == 2).then_some(ep)
        }
    })
    .await;
    let subset = &ep.subsets.unwrap()[0];
    assert_eq!(subset.ports.as_ref().unwrap()[0].port, 8080, "the named targetPort resolved");
    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let slice = eventually(|| {
        let slices = slices.clone();
        async move {
            let list = slices
                .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
                .await
                .unwrap()
                .items;
            list.into_iter().next().filter(|s| s.endpoints.as_ref().is_some_and(|e| e.len() == 2))
        }
    })
    .await;
    assert!(slice.endpoints.unwrap().iter().all(|e| e.conditions.as_ref().unwrap().ready == Some(true)));
    assert_eq!(slice.metadata.owner_references.unwrap()[0].kind, "Service");

    // Scaled to one: the endpoints follow.
    deployments
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 1 } })))
        .await
        .unwrap();
    eventually(|| {
        let endpoints = endpoints.clone();
        async move {
            let ep = endpoints.get("web").await.unwrap();
            (ep.subsets?.first()?.addresses.as_ref()?.len() == 1).then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn a_not_ready_node_is_tainted_and_its_pods_evicted_when_their_toleration_runs_out() {
    let sb = cluster(Simulation { nodes: 1, ..Simulation::instant() });
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let pod: Pod = of(
        json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }),
    );
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let running = wait_for(&pods, "p", conditions::is_pod_running()).await;
    // Admission gave it upstream's 300 s tolerations.
    let tolerations = running.spec.unwrap().tolerations.unwrap();
    assert!(tolerations.iter().any(
        |t| t.key.as_deref() == Some("node.kubernetes.io/not-ready") && t.toleration_seconds == Some(300)
    ));

    sim.set_node_ready("sandbox-node-1", false);
    let nodes: Api<Node> = Api::all(sb.client());
    let tainted = wait_for(&nodes, "sandbox-node-1", |n: Option<&Node>| {
        n.and_then(|n| n.spec.as_ref()?.taints.as_ref())
            .is_some_and(|t| t.iter().any(|t| t.effect == "NoExecute"))
    })
    .await;
    assert!(tainted.spec.unwrap().taints.unwrap().iter().all(|t| t.key == "node.kubernetes.io/not-ready"));
    let unready = wait_for(&pods, "p", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "False"))
    })
    .await;
    assert!(unready.metadata.deletion_timestamp.is_none(), "still within its toleration");
    sim.clock().advance(Duration::from_secs(301));
    let gone = eventually(|| {
        let pods = pods.clone();
        async move {
            pods.get_opt("p").await.unwrap().map_or(Some(()), |p| p.metadata.deletion_timestamp.map(|_| ()))
        }
    })
    .await;
    let () = gone;

    sim.set_node_ready("sandbox-node-1", true);
    wait_for(&nodes, "sandbox-node-1", |n: Option<&Node>| {
        n.is_some_and(|n| n.spec.as_ref().and_then(|s| s.taints.as_ref()).is_none_or(Vec::is_empty))
    })
    .await;
}

#[tokio::test]
async fn a_deleted_pod_terminates_gracefully_and_its_kubelet_removes_it() {
    let sb = cluster(Simulation { stop_after: Duration::from_secs(5), ..Simulation::instant() });
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let pod: Pod = of(
        json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }),
    );
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for(&pods, "p", conditions::is_pod_running()).await;
    let deleted = pods.delete("p", &DeleteParams::default()).await.unwrap();
    let terminating = deleted.left().expect("a running pod lingers in its grace period");
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    assert!(pods.get_opt("p").await.unwrap().is_some());
    sim.clock().advance(Duration::from_secs(6));
    let uid = terminating.metadata.uid.unwrap();
    assert!(await_condition(pods.clone(), "p", conditions::is_deleted(&uid)).await.unwrap().is_none());
}

#[tokio::test]
async fn every_namespace_gets_its_default_service_account_and_root_ca() {
    let sb = cluster(Simulation { nodes: 0, ..Simulation::instant() });
    let namespaces: Api<Namespace> = Api::all(sb.client());
    namespaces.create(&PostParams::default(), &of(json!({ "metadata": { "name": "team" } }))).await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(sb.client(), "team");
    wait_for(&accounts, "default", |s: Option<&ServiceAccount>| s.is_some()).await;
    let maps: Api<ConfigMap> = Api::namespaced(sb.client(), "team");
    let ca = wait_for(&maps, "kube-root-ca.crt", |c: Option<&ConfigMap>| c.is_some()).await;
    assert!(ca.data.unwrap()["ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
    // Deleted, it comes back.
    maps.delete("kube-root-ca.crt", &DeleteParams::default()).await.unwrap();
    wait_for(&maps, "kube-root-ca.crt", |c: Option<&ConfigMap>| c.is_some()).await;
}

#[tokio::test]
async fn parts_switched_off_do_nothing() {
    let controllers: Controllers = "*,-scheduler".parse().unwrap();
    assert!(!controllers.runs(Controller::Scheduler) && controllers.runs(Controller::Kubelet));
    assert!(
        "*,-schedular"
            .parse::<Controllers>()
            .unwrap_err()
            .to_string()
            .contains("unknown controller \"schedular\"")
    );
    let sb = cluster(Simulation { controllers, ..Simulation::instant() });
    let deployments: Api<Deployment> = Api::default_namespaced(sb.client());
    deployments.create(&PostParams::default(), &deployment("idle", 1, "nginx")).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let pod =
        eventually(|| {
            let pods = pods.clone();
            async move {
                pods.list(&ListParams::default().labels("app=idle")).await.unwrap().items.into_iter().next()
            }
        })
        .await;
    // Made by the ReplicaSet, never bound: no scheduler runs.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pod = pods.get(pod.metadata.name.as_deref().unwrap()).await.unwrap();
    assert!(pod.spec.unwrap().node_name.is_none());
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
}

#[tokio::test]
async fn a_stateful_set_starts_in_order_with_stable_names_and_claims_and_rolls_down_to_its_partition() {
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let set: StatefulSet = of(json!({
        "metadata": { "name": "db" },
        "spec": {
            "replicas": 3, "serviceName": "db",
            "selector": { "matchLabels": { "app": "db" } },
            "template": { "metadata": { "labels": { "app": "db" } }, "spec": { "containers": [{ "name": "db", "image": "postgres:16" }] } },
            "volumeClaimTemplates": [{ "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } }],
        },
    }));
    // Ordered start: a watch sees db-0 ready before db-1 exists, db-1 before db-2.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut stream = pods.watch(&WatchParams::default().labels("app=db"), "0").await.unwrap().boxed();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let mut created = Vec::new();
    let mut ready: std::collections::BTreeSet<String> = Default::default();
    while ready.len() < 3 {
        if let WatchEvent::Added(p) | WatchEvent::Modified(p) = stream.next().await.unwrap().unwrap() {
            let name = p.metadata.name.clone().unwrap();
            if !created.contains(&name) {
                assert_eq!(ready.len(), created.len(), "{name} made before the one before it was ready");
                created.push(name.clone());
            }
            if is_ready(&p) {
                ready.insert(name);
            }
        }
    }
    assert_eq!(created, ["db-0", "db-1", "db-2"]);
    let pod = pods.get("db-1").await.unwrap();
    let spec = pod.spec.unwrap();
    assert_eq!((spec.hostname.as_deref(), spec.subdomain.as_deref()), (Some("db-1"), Some("db")));
    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::default_namespaced(client.clone());
    assert!(claims.get_opt("data-db-2").await.unwrap().is_some());
    let done = wait_for(&sets, "db", |s: Option<&StatefulSet>| {
        s.and_then(|s| s.status.as_ref())
            .is_some_and(|st| st.ready_replicas == Some(3) && st.current_revision == st.update_revision)
    })
    .await;
    let first = done.status.unwrap().update_revision.unwrap();

    // A new template with partition 1: db-2 and db-1 roll, db-0 keeps the old revision.
    let patch = json!({ "spec": { "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "partition": 1 } },
        "template": { "spec": { "containers": [{ "name": "db", "image": "postgres:17" }] } } } });
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(patch)).await.unwrap();
    let rolled = wait_for(&sets, "db", |s: Option<&StatefulSet>| {
        s.and_then(|s| s.status.as_ref())
            .is_some_and(|st| st.updated_replicas == Some(2) && st.ready_replicas == Some(3))
    })
    .await;
    let status = rolled.status.unwrap();
    assert_ne!(status.update_revision.as_deref(), Some(first.as_str()));
    assert_eq!(status.current_revision.as_deref(), Some(first.as_str()));
    let image = |p: Pod| p.spec.unwrap().containers[0].image.clone().unwrap();
    assert_eq!(image(pods.get("db-0").await.unwrap()), "postgres:16");
    assert_eq!(image(pods.get("db-2").await.unwrap()), "postgres:17");
    // Scaled down: the highest ordinal goes; its claim stays.
    sets.patch("db", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 2 } })))
        .await
        .unwrap();
    eventually(|| {
        let pods = pods.clone();
        async move { pods.get_opt("db-2").await.unwrap().is_none().then_some(()) }
    })
    .await;
    assert!(claims.get_opt("data-db-2").await.unwrap().is_some());
}

#[tokio::test]
async fn a_daemon_set_runs_one_pod_per_eligible_node_and_follows_new_nodes() {
    let sb = cluster(Simulation { nodes: 2, ..Simulation::instant() });
    let client = sb.client();
    let nodes: Api<Node> = Api::all(client.clone());
    // One node the template's selector excludes.
    nodes
        .patch(
            "sandbox-node-2",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "role": "edge" } } })),
        )
        .await
        .unwrap();
    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    let ds: DaemonSet = of(json!({
        "metadata": { "name": "agent" },
        "spec": {
            "selector": { "matchLabels": { "app": "agent" } },
            "template": { "metadata": { "labels": { "app": "agent" } }, "spec": {
                "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                    { "matchExpressions": [{ "key": "role", "operator": "NotIn", "values": ["edge"] }] }] } } },
                "containers": [{ "name": "agent", "image": "fluent-bit:3" }] } },
        },
    }));
    sets.create(&PostParams::default(), &ds).await.unwrap();
    let synced = |want: i32| {
        move |s: Option<&DaemonSet>| {
            s.and_then(|s| s.status.as_ref())
                .is_some_and(|st| st.desired_number_scheduled == want && st.number_ready == want)
        }
    };
    wait_for(&sets, "agent", synced(1)).await;
    let on = |p: &Pod| p.spec.as_ref().unwrap().node_name.clone().unwrap();
    assert_eq!(pods_of(&client, "app=agent").await.iter().map(on).collect::<Vec<_>>(), ["sandbox-node-1"]);

    // A third node arrives (a copy of the first): the daemon follows it there.
    let mut third = nodes.get("sandbox-node-1").await.unwrap();
    third.metadata = kube::api::ObjectMeta { name: Some("sandbox-node-3".into()), ..Default::default() };
    let status = third.status.take();
    nodes.create(&PostParams::default(), &third).await.unwrap();
    let mut with_status = nodes.get("sandbox-node-3").await.unwrap();
    with_status.status = status;
    nodes.replace_status("sandbox-node-3", &PostParams::default(), &with_status).await.unwrap();
    wait_for(&sets, "agent", synced(2)).await;
    let mut placed: Vec<String> = pods_of(&client, "app=agent").await.iter().map(on).collect();
    placed.sort();
    assert_eq!(placed, ["sandbox-node-1", "sandbox-node-3"]);
    // Each pod tolerates what a daemon must.
    let pod = pods_of(&client, "app=agent").await.remove(0);
    let tolerations = pod.spec.unwrap().tolerations.unwrap();
    assert!(tolerations.iter().any(|t| t.key.as_deref() == Some("node.kubernetes.io/unschedulable")));
}

#[tokio::test]
async fn a_cron_job_runs_on_its_schedule_on_the_simulations_clock() {
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let cron: Api<CronJob> = Api::default_namespaced(sb.client());
    let cj: CronJob = of(json!({
        "metadata": { "name": "tick" },
        "spec": { "schedule": "*/5 * * * *", "successfulJobsHistoryLimit": 1, "jobTemplate": { "spec": { "template": {
            "spec": { "restartPolicy": "Never", "containers": [{ "name": "tick", "image": "busybox" }] } } } } },
    }));
    cron.create(&PostParams::default(), &cj).await.unwrap();
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let mut seen = Vec::new();
    for _ in 0..2 {
        // Five minutes (and a bit) on the clock: one more run.
        sim.clock().advance(Duration::from_secs(301));
        let name = eventually(|| {
            let cron = cron.clone();
            let seen = seen.clone();
            async move {
                let active = cron.get("tick").await.unwrap().status?.active?;
                active.into_iter().filter_map(|r| r.name).find(|n| !seen.contains(n))
            }
        })
        .await;
        assert!(name.starts_with("tick-"));
        // Its pod runs a second of the clock, then the Job completes. The clock moves on only
        // once the pod runs: a pod still pending when it moves would start after it, and wait
        // for a second the paused clock never gives.
        eventually(|| {
            let jobs = jobs.clone();
            let name = name.clone();
            async move { (jobs.get(&name).await.unwrap().status?.active == Some(1)).then_some(()) }
        })
        .await;
        let pods: Api<Pod> = Api::default_namespaced(sb.client());
        eventually(|| {
            let pods = pods.clone();
            let selector = format!("job-name={name}");
            async move {
                let list = pods.list(&ListParams::default().labels(&selector)).await.unwrap();
                list.items
                    .iter()
                    .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                    .then_some(())
            }
        })
        .await;
        sim.clock().advance(Duration::from_secs(2));
        wait_for(&jobs, &name, conditions::is_job_completed()).await;
        seen.push(name);
    }
    let status = wait_for(&cron, "tick", |c: Option<&CronJob>| {
        c.and_then(|c| c.status.as_ref())
            .is_some_and(|s| s.active.as_ref().is_none_or(Vec::is_empty) && s.last_successful_time.is_some())
    })
    .await;
    assert!(status.status.unwrap().last_schedule_time.is_some());
    // One successful Job kept: the first went.
    eventually(|| {
        let jobs = jobs.clone();
        let first = seen[0].clone();
        async move { jobs.get_opt(&first).await.unwrap().is_none().then_some(()) }
    })
    .await;
}

#[tokio::test]
async fn init_containers_run_first() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let mut stream = pods.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    let pod: Pod = of(json!({ "metadata": { "name": "p" }, "spec": {
        "initContainers": [{ "name": "migrate", "image": "busybox" }],
        "containers": [{ "name": "app", "image": "busybox" }] } }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    // Each status the pod goes through, until it runs.
    let mut phases: Vec<String> = Vec::new();
    while phases.last().is_none_or(|p| !p.starts_with("Running")) {
        if let WatchEvent::Modified(p) = stream.next().await.unwrap().unwrap() {
            let status = p.status.unwrap();
            let init = status.init_container_statuses.unwrap_or_default();
            let state = init.first().and_then(|c| c.state.clone()).unwrap_or_default();
            let what = if state.running.is_some() {
                " init running"
            } else if state.terminated.is_some() {
                " init done"
            } else {
                ""
            };
            phases.push(format!("{}{what}", status.phase.unwrap_or_default()));
        }
    }
    assert!(phases.contains(&"Pending init running".to_owned()), "{phases:?}");
    assert!(phases.contains(&"Running init done".to_owned()), "{phases:?}");
}

pub(crate) fn controller_of(obj: &impl Resource) -> Option<String> {
    obj.meta().owner_references.as_ref()?.iter().find(|r| r.controller == Some(true)).map(|r| r.uid.clone())
}

#[tokio::test]
async fn a_replica_set_adopts_a_matching_orphan_and_releases_a_pod_that_stops_matching() {
    // Upstream's conformance test "ReplicaSet should adopt matching pods on creation and release
    // no longer matching pods", as kube-controller-manager's ControllerRef manager answers it.
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let bare = json!({ "metadata": { "name": "adopt-me", "labels": { "name": "adopt-me" } },
                       "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
    pods.create(&PostParams::default(), &of(bare)).await.unwrap();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let rs = json!({ "metadata": { "name": "adopt-me" }, "spec": { "replicas": 1,
        "selector": { "matchLabels": { "name": "adopt-me" } },
        "template": { "metadata": { "labels": { "name": "adopt-me" } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } });
    let rs = sets.create(&PostParams::default(), &of(rs)).await.unwrap();
    let uid = rs.metadata.uid.clone().unwrap();
    let adopted = eventually(|| async {
        let p = pods.get("adopt-me").await.ok()?;
        (controller_of(&p).as_deref() == Some(uid.as_str())).then_some(p)
    })
    .await;
    assert_eq!(adopted.metadata.owner_references.as_ref().unwrap()[0].block_owner_deletion, Some(true));
    wait_for(&sets, "adopt-me", |s: Option<&ReplicaSet>| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|st| st.replicas == 1 && st.ready_replicas == Some(1))
    })
    .await;
    assert_eq!(pods_of(&client, "name=adopt-me").await.len(), 1, "the orphan was adopted, no pod was made");

    // Its label changed, the pod is released, and the set makes another.
    let relabel = json!({ "metadata": { "labels": { "name": "not-matching" } } });
    pods.patch("adopt-me", &PatchParams::default(), &Patch::Merge(&relabel)).await.unwrap();
    eventually(|| async { controller_of(&pods.get("adopt-me").await.ok()?).is_none().then_some(()) }).await;
    let replacement = eventually(|| async {
        let mine = pods_of(&client, "name=adopt-me").await;
        (mine.len() == 1 && mine[0].metadata.name.as_deref() != Some("adopt-me")).then(|| mine[0].clone())
    })
    .await;
    assert_eq!(controller_of(&replacement).as_deref(), Some(uid.as_str()));
}

#[tokio::test]
async fn orphans_left_by_a_replica_set_deleted_with_orphan_propagation_are_adopted_by_the_next() {
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let rs = |name: &str| -> ReplicaSet {
        of(json!({ "metadata": { "name": name }, "spec": { "replicas": 2,
            "selector": { "matchLabels": { "app": "kept" } },
            "template": { "metadata": { "labels": { "app": "kept" } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } }))
    };
    sets.create(&PostParams::default(), &rs("first")).await.unwrap();
    let ready = |s: Option<&ReplicaSet>| {
        s.and_then(|s| s.status.as_ref()).and_then(|st| st.ready_replicas) == Some(2)
    };
    wait_for(&sets, "first", ready).await;
    let before: Vec<String> =
        pods_of(&client, "app=kept").await.into_iter().filter_map(|p| p.metadata.name).collect();
    sets.delete("first", &DeleteParams::orphan()).await.unwrap();
    let second = sets.create(&PostParams::default(), &rs("second")).await.unwrap();
    let uid = second.metadata.uid.unwrap();
    wait_for(&sets, "second", ready).await;
    let after = eventually(|| async {
        let pods = pods_of(&client, "app=kept").await;
        pods.iter().all(|p| controller_of(p).as_deref() == Some(uid.as_str())).then_some(pods)
    })
    .await;
    let mut names: Vec<String> = after.into_iter().filter_map(|p| p.metadata.name).collect();
    names.sort();
    let mut before = before;
    before.sort();
    assert_eq!(names, before, "the same pods, adopted; none made");
}

#[tokio::test]
async fn a_job_adopts_its_orphaned_pods_again_and_releases_one_whose_labels_change() {
    // Upstream's conformance test "Job should adopt matching orphans and release non-matching pods".
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let mut j = job("adopt", json!({ "parallelism": 2, "completions": 4 }));
    j.spec.as_mut().unwrap().template.spec.as_mut().unwrap().containers[0].command =
        Some(vec!["sleep".into(), "3600".into()]);
    let j = jobs.create(&PostParams::default(), &j).await.unwrap();
    let uid = j.metadata.uid.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let selector = format!("batch.kubernetes.io/controller-uid={uid}");
    let first = eventually(|| async {
        let mine = pods_of(&client, &selector).await;
        (mine.len() == 2).then(|| mine[0].metadata.name.clone().unwrap())
    })
    .await;
    // Orphaned by hand: the Job adopts it again.
    let orphan = json!({ "metadata": { "ownerReferences": null } });
    pods.patch(&first, &PatchParams::default(), &Patch::Merge(&orphan)).await.unwrap();
    eventually(|| async {
        (controller_of(&pods.get(&first).await.ok()?).as_deref() == Some(uid.as_str())).then_some(())
    })
    .await;
    // Its labels changed: released, and its tracking finalizer with it.
    let relabel = json!({ "metadata": { "labels": { "batch.kubernetes.io/controller-uid": null, "controller-uid": null, "job-name": null, "batch.kubernetes.io/job-name": null } } });
    pods.patch(&first, &PatchParams::default(), &Patch::Merge(&relabel)).await.unwrap();
    let released = eventually(|| async {
        let p = pods.get(&first).await.ok()?;
        controller_of(&p).is_none().then_some(p)
    })
    .await;
    assert!(released.metadata.finalizers.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn a_deployment_scaled_mid_rollout_shares_the_change_among_its_sets_in_proportion() {
    // Upstream's conformance test "Deployment deployment should support proportional scaling":
    // 10 replicas, surge 3, unavailable 2; a template whose pods never get ready stalls the
    // rollout at 8 old and 5 new; scaled to 30, the sets get 20 and 13.
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let mut d = deployment("webserver", 10, "nginx:1.27");
    d.spec.strategy =
        Some(of(json!({ "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 3, "maxUnavailable": 2 } })));
    deployments.create(&PostParams::default(), &d).await.unwrap();
    let available = |n: i32| {
        move |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref()).and_then(|s| s.available_replicas) == Some(n)
        }
    };
    wait_for(&deployments, "webserver", available(10)).await;
    let never_ready = json!({ "spec": { "template": { "spec": { "containers": [{ "name": "web", "image": "nginx:404",
        "readinessProbe": { "exec": { "command": ["false"] }, "periodSeconds": 1 } }] } } } });
    deployments.patch("webserver", &PatchParams::default(), &Patch::Strategic(&never_ready)).await.unwrap();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    // The replica counts of the (old, new) sets, by image.
    let sizes = || async {
        let all = sets.list(&ListParams::default().labels("app=webserver")).await.unwrap().items;
        let of_image = |image: &str| {
            all.iter()
                .map(|s| serde_json::to_value(s).unwrap())
                .find(|s| s.pointer("/spec/template/spec/containers/0/image") == Some(&json!(image)))
                .and_then(|s| s.pointer("/spec/replicas").and_then(Value::as_i64))
        };
        (of_image("nginx:1.27"), of_image("nginx:404"))
    };
    eventually(|| async { (sizes().await == (Some(8), Some(5))).then_some(()) }).await;
    let scaled = json!({ "spec": { "replicas": 30 } });
    deployments.patch("webserver", &PatchParams::default(), &Patch::Merge(&scaled)).await.unwrap();
    eventually(|| async { (sizes().await == (Some(20), Some(13))).then_some(()) }).await;
}

#[tokio::test]
async fn a_failed_daemon_pod_is_killed_and_its_node_gets_a_new_one() {
    // Upstream's conformance test "Daemon set should retry creating failed daemon pods".
    let sb = cluster(Simulation { nodes: 2, ..Simulation::instant() });
    let client = sb.client();
    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    let ds: DaemonSet = of(json!({ "metadata": { "name": "agent" }, "spec": {
        "selector": { "matchLabels": { "app": "agent" } },
        "template": { "metadata": { "labels": { "app": "agent" } }, "spec": { "containers": [{ "name": "agent", "image": "fluent-bit:3" }] } } } }));
    sets.create(&PostParams::default(), &ds).await.unwrap();
    wait_for(&sets, "agent", |s: Option<&DaemonSet>| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|st| st.number_ready == 2)
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let victim = pods_of(&client, "app=agent").await.remove(0);
    let (name, node) =
        (victim.metadata.name.clone().unwrap(), victim.spec.as_ref().unwrap().node_name.clone());
    let failed = json!({ "status": { "phase": "Failed" } });
    pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&failed)).await.unwrap();
    // Gone, and another on its node.
    eventually(|| async {
        let now = pods_of(&client, "app=agent").await;
        let replaced = now.iter().all(|p| p.metadata.name.as_deref() != Some(name.as_str()))
            && now.iter().any(|p| p.spec.as_ref().unwrap().node_name == node);
        replaced.then_some(())
    })
    .await;
    let events: Api<Event> = Api::default_namespaced(client);
    let warned = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("FailedDaemonPod"));
    let message = warned.and_then(|e| e.message).unwrap_or_default();
    assert!(message.starts_with(&format!("Found failed daemon pod default/{name} on node ")), "{message}");
}

#[tokio::test]
async fn a_replica_set_orphaned_by_its_deployment_is_adopted_by_the_next_with_its_selector() {
    // Upstream's "test Deployment ReplicaSet orphaning and adoption regarding controllerRef".
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    deployments.create(&PostParams::default(), &deployment("keep", 2, "nginx:1.27")).await.unwrap();
    let available = |d: Option<&Deployment>| {
        d.and_then(|d| d.status.as_ref()).and_then(|s| s.available_replicas) == Some(2)
    };
    wait_for(&deployments, "keep", available).await;
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let first = sets.list(&ListParams::default().labels("app=keep")).await.unwrap().items.remove(0);
    deployments.delete("keep", &DeleteParams::orphan()).await.unwrap();
    let set_name = first.metadata.name.clone().unwrap();
    eventually(|| async { controller_of(&sets.get(&set_name).await.ok()?).is_none().then_some(()) }).await;
    let second =
        deployments.create(&PostParams::default(), &deployment("keep", 2, "nginx:1.27")).await.unwrap();
    let uid = second.metadata.uid.unwrap();
    eventually(|| async {
        (controller_of(&sets.get(&set_name).await.ok()?).as_deref() == Some(uid.as_str())).then_some(())
    })
    .await;
    wait_for(&deployments, "keep", available).await;
    let now = sets.list(&ListParams::default().labels("app=keep")).await.unwrap().items;
    assert_eq!(now.len(), 1, "the set was adopted, not made again");
    assert_eq!(now[0].metadata.uid, first.metadata.uid);
}

#[tokio::test]
async fn a_cron_jobs_concurrency_policy_decides_what_runs_beside_a_run_not_finished() {
    // Upstream's conformance tests "CronJob should schedule multiple jobs concurrently", "should
    // not schedule new jobs when ForbidConcurrent" and "should replace jobs when
    // ReplaceConcurrent": every minute a Job whose container sleeps five minutes.
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let cron: Api<CronJob> = Api::default_namespaced(sb.client());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    for policy in ["Allow", "Forbid", "Replace"] {
        let cj: CronJob = of(json!({
            "metadata": { "name": policy.to_lowercase() },
            "spec": { "schedule": "*/1 * * * ?", "concurrencyPolicy": policy, "jobTemplate": { "spec": {
                "template": { "spec": { "restartPolicy": "OnFailure", "containers": [{ "name": "c",
                    "image": "busybox", "command": ["sleep", "300"] }] } } } } },
        }));
        cron.create(&PostParams::default(), &cj).await.unwrap();
    }
    // The Jobs of `cron` not being deleted, and whether their pods all run.
    let alive = |cron: &'static str| {
        let (jobs, pods) = (jobs.clone(), pods.clone());
        async move {
            let mut names: Vec<String> = jobs
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter(|j| j.metadata.deletion_timestamp.is_none())
                .filter(|j| {
                    controller_of(j).is_some()
                        && j.metadata.name.as_deref().is_some_and(|n| n.starts_with(&format!("{cron}-")))
                })
                .filter_map(|j| j.metadata.name)
                .collect();
            names.sort();
            let mut running = true;
            for name in &names {
                let selector = format!("job-name={name}");
                let list = pods.list(&ListParams::default().labels(&selector)).await.unwrap();
                running &= list
                    .items
                    .iter()
                    .any(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
            }
            (names, running)
        }
    };
    // A minute on: one Job each, whose pod runs (the clock moves on only once they do).
    sim.clock().advance(Duration::from_secs(61));
    let mut first = Vec::new();
    for name in ["allow", "forbid", "replace"] {
        let jobs = eventually(|| async move {
            let (jobs, running) = alive(name).await;
            (jobs.len() == 1 && running).then_some(jobs)
        })
        .await;
        first.push(jobs[0].clone());
    }
    // Another minute: Allow runs two at once, Forbid still the first alone, Replace a new one
    // in place of the first.
    sim.clock().advance(Duration::from_secs(60));
    let two = eventually(|| async move {
        let (jobs, _) = alive("allow").await;
        (jobs.len() == 2).then_some(jobs)
    })
    .await;
    assert!(two.contains(&first[0]), "{two:?}");
    eventually(|| {
        let first = first[2].clone();
        async move {
            let (jobs, _) = alive("replace").await;
            assert!(jobs.len() <= 1, "more than one job is running: {jobs:?}");
            (jobs.len() == 1 && jobs[0] != first).then_some(())
        }
    })
    .await;
    // Forbid said why it started none.
    let events: Api<Event> = Api::default_namespaced(sb.client());
    eventually(|| {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.unwrap();
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("JobAlreadyActive")
                        && e.involved_object.name.as_deref() == Some("forbid")
                })
                .then_some(())
        }
    })
    .await;
    let (forbid, _) = alive("forbid").await;
    assert_eq!(forbid, [first[1].clone()]);
    let forbidden = cron.get("forbid").await.unwrap().status.unwrap();
    assert_eq!(forbidden.active.unwrap_or_default().len(), 1);
    // Allow's status lists both as active.
    let both = eventually(|| {
        let cron = cron.clone();
        async move {
            let active = cron.get("allow").await.unwrap().status?.active?;
            (active.len() == 2).then_some(active)
        }
    })
    .await;
    assert_eq!(both.len(), 2);
}

/// A simulation whose registry has no `*:non-existent` image.
pub(crate) fn missing_images() -> Simulation {
    Simulation { missing_images: vec!["*:non-existent".into()], ..Simulation::instant() }
}

fn image_of(p: &Pod) -> String {
    p.spec.as_ref().unwrap().containers[0].image.clone().unwrap_or_default()
}

#[tokio::test]
async fn a_container_whose_image_is_missing_waits_on_its_pull_until_the_image_changes() {
    let sb = cluster(missing_images());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let pod: Pod = of(json!({ "metadata": { "name": "bad" }, "spec": {
        "containers": [{ "name": "app", "image": "foo:non-existent" }] } }));
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let waiting = |reason: &'static str| {
        move |p: Option<&Pod>| {
            p.and_then(|p| {
                p.status.as_ref()?.container_statuses.as_ref()?.first()?.state.as_ref()?.waiting.clone()
            })
            .is_some_and(|w| w.reason.as_deref() == Some(reason))
        }
    };
    let p = wait_for(&pods, "bad", waiting("ImagePullBackOff")).await;
    let status = p.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let waited = status.container_statuses.unwrap()[0].state.clone().unwrap().waiting.unwrap();
    assert_eq!(waited.message.as_deref(), Some("Back-off pulling image \"foo:non-existent\""));
    let ready = status.conditions.unwrap().into_iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.status, "False");
    // The kubelet's events, in its words.
    let events: Api<Event> = Api::default_namespaced(sb.client());
    let said = eventually(|| {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.unwrap();
            let said: Vec<String> = list
                .items
                .iter()
                .filter(|e| e.involved_object.name.as_deref() == Some("bad"))
                .map(|e| {
                    format!(
                        "{} {}",
                        e.reason.clone().unwrap_or_default(),
                        e.message.clone().unwrap_or_default()
                    )
                })
                .collect();
            (said.len() >= 5).then_some(said)
        }
    })
    .await;
    for line in [
        "Pulling Pulling image \"foo:non-existent\"",
        "Failed Failed to pull image \"foo:non-existent\": rpc error: code = NotFound desc = failed to pull and unpack image \"docker.io/library/foo:non-existent\": failed to resolve reference \"docker.io/library/foo:non-existent\": docker.io/library/foo:non-existent: not found",
        "Failed Error: ErrImagePull",
        "BackOff Back-off pulling image \"foo:non-existent\"",
        "Failed Error: ImagePullBackOff",
    ] {
        assert!(said.iter().any(|s| s == line), "{line} not in {said:#?}");
    }
    // The pod's image changed to one the registry has: the container runs.
    let fixed =
        Patch::Strategic(json!({ "spec": { "containers": [{ "name": "app", "image": "nginx:1.27" }] } }));
    pods.patch("bad", &PatchParams::default(), &fixed).await.unwrap();
    wait_for(&pods, "bad", conditions::is_pod_running()).await;
    wait_for(&pods, "bad", |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.container_statuses.as_ref()?.first().map(|c| c.ready)) == Some(true)
    })
    .await;
}

#[tokio::test]
async fn a_daemon_set_rolled_back_mid_rollout_keeps_the_pods_it_did_not_change() {
    // Upstream's conformance test "Daemon set should rollback without unnecessary restarts":
    // a rollout to an image that cannot be pulled stalls on its first pod; rolled back, the
    // pods of the old template are kept, and only the stalled one is replaced.
    let sb = cluster(missing_images());
    let client = sb.client();
    let sets: Api<DaemonSet> = Api::default_namespaced(client.clone());
    let ds: DaemonSet = of(json!({ "metadata": { "name": "web" }, "spec": {
        "selector": { "matchLabels": { "app": "web" } },
        "updateStrategy": { "type": "RollingUpdate" },
        "template": { "metadata": { "labels": { "app": "web" } },
            "spec": { "containers": [{ "name": "app", "image": "httpd:2.4" }] } } } }));
    sets.create(&PostParams::default(), &ds).await.unwrap();
    let ready_on_all = |s: Option<&DaemonSet>| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|st| {
            st.desired_number_scheduled == 3
                && st.number_available == Some(3)
                && st.updated_number_scheduled == Some(3)
        })
    };
    wait_for(&sets, "web", ready_on_all).await;
    let image = |image: &str| {
        Patch::Strategic(json!({ "spec": { "template": { "spec": {
        "containers": [{ "name": "app", "image": image }] } } } }))
    };
    sets.patch("web", &PatchParams::default(), &image("foo:non-existent")).await.unwrap();
    // Mid-rollout: one pod of the new image, which never runs, and the rest of the old.
    let (existing, new) = eventually(|| {
        let client = client.clone();
        async move {
            let pods = pods_of(&client, "app=web").await;
            let live: Vec<&Pod> = pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
            let new = live.iter().filter(|p| image_of(p) == "foo:non-existent").count();
            let existing: Vec<String> = live
                .iter()
                .filter(|p| image_of(p) == "httpd:2.4")
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            (new == 1 && existing.len() == 2).then_some((existing, new))
        }
    })
    .await;
    assert_eq!(new, 1);
    sets.patch("web", &PatchParams::default(), &image("httpd:2.4")).await.unwrap();
    wait_for(&sets, "web", ready_on_all).await;
    let pods = pods_of(&client, "app=web").await;
    let names: Vec<String> = pods.iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert_eq!(pods.len(), 3, "{names:?}");
    assert!(pods.iter().all(|p| image_of(p) == "httpd:2.4"), "{names:?}");
    for old in &existing {
        assert!(names.contains(old), "{old} was restarted: {names:?}");
    }
}

#[tokio::test]
async fn a_deployment_rolls_over_a_stalled_rollout_and_the_set_it_adopted() {
    // Upstream's conformance test "Deployment deployment should support rollover": a
    // Deployment adopts a ReplicaSet of its pods, stalls on an image that cannot be pulled
    // (surge 1, unavailable 0, minReadySeconds 10), then rolls over both to a third template,
    // never below one available pod nor above two.
    let sb = cluster(Simulation { missing_images: vec!["*:nonexistent".into()], ..Simulation::instant() });
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let client = sb.client();
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let rs: ReplicaSet = of(json!({ "metadata": { "name": "test-rollover-controller",
        "labels": { "name": "rollover-pod", "pod": "httpd" } }, "spec": {
        "replicas": 1, "selector": { "matchLabels": { "name": "rollover-pod", "pod": "httpd" } },
        "template": { "metadata": { "labels": { "name": "rollover-pod", "pod": "httpd" } },
            "spec": { "containers": [{ "name": "httpd", "image": "httpd:2.4" }] } } } }));
    sets.create(&PostParams::default(), &rs).await.unwrap();
    wait_for(&sets, "test-rollover-controller", |r: Option<&ReplicaSet>| {
        r.and_then(|r| r.status.as_ref()).and_then(|s| s.ready_replicas) == Some(1)
    })
    .await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let d: Deployment = of(json!({ "metadata": { "name": "test-rollover-deployment" }, "spec": {
        "replicas": 1, "minReadySeconds": 10, "selector": { "matchLabels": { "name": "rollover-pod" } },
        "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
        "template": { "metadata": { "labels": { "name": "rollover-pod" } },
            "spec": { "containers": [{ "name": "redis-slave", "image": "gcr.io/google_samples/gb-redisslave:nonexistent" }] } } } }));
    deployments.create(&PostParams::default(), &d).await.unwrap();
    wait_for(&deployments, "test-rollover-deployment", |d: Option<&Deployment>| {
        d.and_then(|d| d.status.as_ref()).and_then(|s| s.updated_replicas).is_some_and(|n| n >= 1)
    })
    .await;
    // Both sets have one pod: the adopted one's runs, the new one's never does.
    let replicas = |rs: &ReplicaSet| (rs.spec.replicas, rs.status.as_ref().map(|s| s.replicas));
    let (old, first) = eventually(|| {
        let sets = sets.clone();
        async move {
            let all = sets.list(&ListParams::default()).await.unwrap().items;
            let old =
                all.iter().find(|r| r.metadata.name.as_deref() == Some("test-rollover-controller"))?.clone();
            let first =
                all.iter().find(|r| r.metadata.name.as_deref() != Some("test-rollover-controller"))?.clone();
            (controller_of(&old).is_some()
                && replicas(&old) == (Some(1), Some(1))
                && replicas(&first) == (Some(1), Some(1)))
                .then_some((old, first))
        }
    })
    .await;
    let revision = |d: &Deployment| {
        d.metadata.annotations.as_ref().and_then(|a| a.get("deployment.kubernetes.io/revision").cloned())
    };
    assert_eq!(revision(&deployments.get("test-rollover-deployment").await.unwrap()).as_deref(), Some("1"));
    // Rolled over to a template whose image there is (its one container renamed, as the test's
    // update does).
    let agnhost = json!({ "spec": { "template": { "spec": { "containers": [
        { "name": "agnhost", "image": "registry.k8s.io/e2e-test-images/agnhost:2.39" }] } } } });
    deployments
        .patch("test-rollover-deployment", &PatchParams::default(), &Patch::Merge(&agnhost))
        .await
        .unwrap();
    let mut complete = false;
    while !complete {
        let d = deployments.get("test-rollover-deployment").await.unwrap();
        let pods = pods_of(&client, "name=rollover-pod").await;
        let live = pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count();
        assert!(live <= 2, "total pods created: {live}, more than the max allowed: 2");
        let status = d.status.clone().unwrap_or_default();
        assert!(status.available_replicas.unwrap_or(0) >= 1, "fewer than one pod available: {status:?}");
        complete = revision(&d).as_deref() == Some("2")
            && status.observed_generation == d.metadata.generation
            && status.updated_replicas == Some(1)
            && status.replicas == Some(1)
            && status.available_replicas == Some(1);
        sim.clock().advance(Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Both earlier sets are down to none.
    for name in [old.metadata.name.unwrap(), first.metadata.name.unwrap()] {
        let rs = eventually(|| {
            let (sets, name) = (sets.clone(), name.clone());
            async move {
                let rs = sets.get(&name).await.unwrap();
                (replicas(&rs) == (Some(0), Some(0))).then_some(rs)
            }
        })
        .await;
        assert_eq!(replicas(&rs), (Some(0), Some(0)));
    }
}
