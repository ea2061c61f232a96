//! `metrics.k8s.io/v1beta1` through a real `kube::Client`, as the HorizontalPodAutoscaler and
//! `kubectl top` read it: each running container's usage (its requests, its pod's annotation, or
//! what the test set), a node's as the sum of its pods', selectors, and metrics-server's 404s.
//! Every wait is for progress, never a wall-clock deadline.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube_sandbox::{Sandbox, SandboxConfig, Simulation, parse_usage};
use serde_json::{Value, json};

fn metrics_api(sb: &Sandbox, kind: &str, plural: &str, ns: Option<&str>) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
    match ns {
        Some(ns) => Api::namespaced_with(sb.client(), ns, &ar),
        None => Api::all_with(sb.client(), &ar),
    }
}

async fn running(pods: &Api<Pod>, name: &str, labels: Value, containers: Value) {
    let pod = json!({ "metadata": { "name": name, "labels": labels }, "spec": { "containers": containers } });
    pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
    loop {
        let p = pods.get(name).await.unwrap();
        if p.status.and_then(|s| s.phase).as_deref() == Some("Running") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn usage(obj: &DynamicObject, container: usize) -> (String, String) {
    let u = &obj.data["containers"][container]["usage"];
    (u["cpu"].as_str().unwrap().to_owned(), u["memory"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn pod_and_node_metrics_come_from_requests_annotations_and_the_test() {
    let sb =
        Sandbox::with_config(SandboxConfig::with_cluster(Simulation { nodes: 1, ..Simulation::instant() }));
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let requests = json!({ "requests": { "cpu": "0.5", "memory": "128Mi" } });
    running(
        &pods,
        "web",
        json!({ "app": "web" }),
        json!([
            { "name": "app", "image": "nginx", "resources": requests },
            { "name": "sidecar", "image": "envoy" },
        ]),
    )
    .await;
    running(&pods, "db", json!({ "app": "db" }), json!([{ "name": "pg", "image": "postgres" }])).await;

    let pod_metrics = metrics_api(&sb, "PodMetrics", "pods", Some("default"));
    let web = pod_metrics.get("web").await.unwrap();
    assert_eq!(web.metadata.labels.as_ref().unwrap()["app"], "web");
    assert_eq!(web.data["window"], "15s");
    assert_eq!(usage(&web, 0), ("500m".into(), "128Mi".into()));
    assert_eq!(usage(&web, 1), ("0".into(), "0".into()), "no requests: nothing used");

    // The pod's annotation, then the test's setting, win over the requests.
    let annotated = json!({ "metadata": { "annotations": {
        "usage.sandbox.counter.example.com/pg": "cpu=2,memory=1Gi" } } });
    pods.patch("db", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(annotated)).await.unwrap();
    assert_eq!(usage(&pod_metrics.get("db").await.unwrap(), 0), ("2".into(), "1Gi".into()));
    sb.set_container_usage(
        "default",
        "web",
        "sidecar",
        parse_usage("test", "cpu=100m,memory=1000Ki").unwrap(),
    );
    assert_eq!(usage(&pod_metrics.get("web").await.unwrap(), 1), ("100m".into(), "1000Ki".into()));

    // Label selectors pick pods; the node sums them all.
    let picked = pod_metrics.list(&ListParams::default().labels("app=db")).await.unwrap();
    let names: Vec<_> = picked.items.iter().map(|m| m.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["db"]);
    let nodes = metrics_api(&sb, "NodeMetrics", "nodes", None).list(&ListParams::default()).await.unwrap();
    assert_eq!(nodes.items.len(), 1);
    assert_eq!(nodes.items[0].data["usage"], json!({ "cpu": "2600m", "memory": "1180648Ki" }));

    // metrics-server's 404s: a pod that does not exist, and one without metrics.
    let err = |e: kube::Error| match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("{other:?}"),
    };
    assert_eq!(err(pod_metrics.get("nope").await.unwrap_err()), (404, "pod \"nope\" not found".to_owned()));
    let pending = json!({ "metadata": { "name": "pending" },
        "spec": { "nodeName": "elsewhere", "containers": [{ "name": "c", "image": "busybox" }] } });
    pods.create(&PostParams::default(), &serde_json::from_value(pending).unwrap()).await.unwrap();
    assert_eq!(
        err(pod_metrics.get("pending").await.unwrap_err()),
        (404, "pods.metrics.k8s.io \"default/pending\" not found".to_owned())
    );
}

/// Advances the paused clock a sync period at a time until `done` says so.
async fn until<T>(sb: &Sandbox, mut done: impl AsyncFnMut() -> Option<T>) -> T {
    loop {
        if let Some(v) = done().await {
            return v;
        }
        sb.cluster().unwrap().clock().advance(Duration::from_secs(15));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_autoscaler_scales_a_deployment_up_and_after_its_window_down() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    let sb = Sandbox::with_config(SandboxConfig::with_cluster(Simulation::instant()));
    sb.cluster().unwrap().clock().pause();
    let deployments: Api<Deployment> = Api::default_namespaced(sb.client());
    let hpas: Api<HorizontalPodAutoscaler> = Api::default_namespaced(sb.client());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    // Each pod uses 250 % of the CPU it requests.
    let web = json!({ "metadata": { "name": "web" }, "spec": { "replicas": 1,
        "selector": { "matchLabels": { "app": "web" } },
        "template": { "metadata": { "labels": { "app": "web" },
                "annotations": { "usage.sandbox.counter.example.com/web": "cpu=250m" } },
            "spec": { "containers": [{ "name": "web", "image": "nginx",
                "resources": { "requests": { "cpu": "100m" } } }] } } } });
    deployments.create(&PostParams::default(), &serde_json::from_value(web).unwrap()).await.unwrap();
    let hpa = json!({ "metadata": { "name": "web" }, "spec": {
        "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
        "minReplicas": 1, "maxReplicas": 4,
        "metrics": [{ "type": "Resource", "resource": { "name": "cpu",
            "target": { "type": "Utilization", "averageUtilization": 50 } } }] } });
    hpas.create(&PostParams::default(), &serde_json::from_value(hpa).unwrap()).await.unwrap();

    // 250 % of a 50 % target wants 5 pods; the maximum is 4.
    let scaled = until(&sb, async || {
        let h = hpas.get("web").await.ok()?;
        let status = h.status?;
        (status.desired_replicas == 4 && status.current_replicas == Some(4)).then_some(status)
    })
    .await;
    let cpu = scaled.current_metrics.as_ref().unwrap()[0].resource.clone().unwrap();
    assert_eq!(cpu.current.average_utilization, Some(250));
    assert_eq!(cpu.current.average_value.unwrap().0, "250m");
    assert!(scaled.last_scale_time.is_some());
    let condition = |s: &k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus, kind: &str| {
        let c = s.conditions.as_ref().unwrap().iter().find(|c| c.type_ == kind).unwrap().clone();
        (c.status, c.reason.unwrap_or_default())
    };
    assert_eq!(condition(&scaled, "ScalingActive"), ("True".into(), "ValidMetricFound".into()));
    assert_eq!(deployments.get("web").await.unwrap().spec.replicas, Some(4));

    // Load drops to 10 %: the 5 min window holds the scale-down, then it goes to 1.
    let mut held = false;
    until(&sb, async || {
        for p in pods.list(&ListParams::default().labels("app=web")).await.ok()?.items {
            let name = p.metadata.name.unwrap();
            sb.set_container_usage("default", &name, "web", parse_usage("test", "cpu=10m").unwrap());
        }
        let h = hpas.get("web").await.ok()?;
        let status = h.status?;
        held |= condition(&status, "AbleToScale").1 == "ScaleDownStabilized";
        (status.desired_replicas == 1).then_some(())
    })
    .await;
    assert!(held, "the scale-down waited out its stabilization window");
    until(&sb, async || (deployments.get("web").await.ok()?.spec.replicas == Some(1)).then_some(())).await;
}
