//! The admission a real API server runs by default, as a client meets it: ResourceQuota (usage
//! counted, charged on create, refused past the limit, given back on delete), PodSecurity's
//! `warn` level and its warnings for a new `enforce` level, and the eviction subresource
//! honouring a PodDisruptionBudget.

use std::time::Duration;

use http::Method;
use kube_sandbox::{Sandbox, SandboxConfig};
use serde_json::{Value, json};

use super::upstream::call_with_headers;

fn pod(name: &str, extra: Value) -> Value {
    let mut p = json!({ "metadata": { "name": name, "labels": { "app": "web" } },
                        "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] } });
    if let (Some(p), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
        p.extend(extra.clone());
    }
    p
}

async fn post(sb: &Sandbox, path: &str, body: Value) -> (u16, Vec<String>, Value) {
    let (code, _, warnings, v) = call_with_headers(sb, Method::POST, path, &[], Some(body)).await;
    (code, warnings, v)
}

async fn namespace(sb: &Sandbox, name: &str, labels: Value) {
    let (code, _, v) =
        post(sb, "/api/v1/namespaces", json!({ "metadata": { "name": name, "labels": labels } })).await;
    assert_eq!(code, 201, "{v}");
}

/// Waits until the quota's `status.used` says `want` (the quota controller runs in the
/// background); a minute allows for a loaded machine.
async fn used(sb: &Sandbox, path: &str, want: Value) {
    let mut last = Value::Null;
    for _ in 0..6000 {
        let (_, _, _, q) = call_with_headers(sb, Method::GET, path, &[], None).await;
        last = q["status"]["used"].clone();
        if last == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the quota's usage stayed {last}, not {want}");
}

#[tokio::test]
async fn a_resource_quota_counts_charges_refuses_and_gives_back() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    namespace(&sb, "team", json!({})).await;
    let pods = "/api/v1/namespaces/team/pods";
    post(&sb, pods, pod("early", json!({}))).await;
    let quota = json!({ "metadata": { "name": "q" }, "spec": { "hard": { "pods": "2", "count/configmaps": "5", "requests.storage": "3Gi" } } });
    let (code, _, _) = post(&sb, "/api/v1/namespaces/team/resourcequotas", quota).await;
    assert_eq!(code, 201);
    // The controller counts what is there, and copies the limits.
    let q = "/api/v1/namespaces/team/resourcequotas/q";
    used(&sb, q, json!({ "pods": "1", "count/configmaps": "0", "requests.storage": "0" })).await;

    // A create is charged at once: the second pod takes the last unit...
    let (code, _, v) = post(&sb, pods, pod("second", json!({}))).await;
    assert_eq!(code, 201, "{v}");
    let (_, _, _, now) = call_with_headers(&sb, Method::GET, q, &[], None).await;
    assert_eq!(now["status"]["used"]["pods"], "2");
    // ...so the third is refused, named as the request named it.
    let (code, _, v) = post(&sb, pods, pod("third", json!({}))).await;
    assert_eq!((code, v["reason"].as_str()), (403, Some("Forbidden")));
    assert_eq!(
        v["message"],
        "pods \"third\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    );
    let mut generated = pod("", json!({}));
    generated["metadata"] = json!({ "generateName": "web-" });
    let (_, _, v) = post(&sb, pods, generated).await;
    // The name was generated before admission: the refusal names it.
    let message = v["message"].as_str().unwrap();
    assert!(
        message.starts_with("pods \"web-") && message.contains("\" is forbidden: exceeded quota: q"),
        "{v}"
    );
    assert!(!message.starts_with("pods \"web-\""), "{v}");

    // A claim counts its storage, and growing it counts the difference.
    let claims = "/api/v1/namespaces/team/persistentvolumeclaims";
    let claim = json!({ "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "2Gi" } } } });
    assert_eq!(post(&sb, claims, claim).await.0, 201);
    let merge = [("content-type", "application/merge-patch+json")];
    // Only a bound claim may grow (an unbound one's spec is immutable, refused before admission).
    let bound = json!({ "status": { "phase": "Bound" } });
    let (code, _, _, v) =
        call_with_headers(&sb, Method::PATCH, &format!("{claims}/data/status"), &merge, Some(bound)).await;
    assert_eq!(code, 200, "{v}");
    let grow = |size: &str| json!({ "spec": { "resources": { "requests": { "storage": size } } } });
    let (code, _, _, v) =
        call_with_headers(&sb, Method::PATCH, &format!("{claims}/data"), &merge, Some(grow("4Gi"))).await;
    assert_eq!(code, 403, "{v}");
    assert_eq!(
        v["message"],
        "persistentvolumeclaims \"data\" is forbidden: exceeded quota: q, requested: requests.storage=2Gi, used: requests.storage=2Gi, limited: requests.storage=3Gi"
    );

    // A delete gives the unit back once the controller has recounted.
    let (code, _, _, _) = call_with_headers(&sb, Method::DELETE, &format!("{pods}/early"), &[], None).await;
    assert_eq!(code, 200);
    used(&sb, q, json!({ "pods": "1", "count/configmaps": "0", "requests.storage": "2Gi" })).await;
    assert_eq!(post(&sb, pods, pod("third", json!({}))).await.0, 201);
}

#[tokio::test]
async fn a_quota_on_cpu_wants_every_container_to_ask_for_it() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    namespace(&sb, "team", json!({})).await;
    let quota = json!({ "metadata": { "name": "compute" }, "spec": { "hard": { "requests.cpu": "1", "limits.memory": "1Gi" } } });
    post(&sb, "/api/v1/namespaces/team/resourcequotas", quota).await;
    used(
        &sb,
        "/api/v1/namespaces/team/resourcequotas/compute",
        json!({ "requests.cpu": "0", "limits.memory": "0" }),
    )
    .await;
    let pods = "/api/v1/namespaces/team/pods";
    let (code, _, v) = post(&sb, pods, pod("bare", json!({}))).await;
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: main; requests.cpu for: main"
    );
    let sized = json!({ "containers": [{ "name": "main", "image": "busybox:1.36",
        "resources": { "requests": { "cpu": "600m" }, "limits": { "memory": "512Mi" } } }] });
    assert_eq!(post(&sb, pods, pod("one", sized.clone())).await.0, 201);
    let (code, _, v) = post(&sb, pods, pod("two", sized)).await;
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "pods \"two\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
}

#[tokio::test]
async fn pod_security_warns_at_its_warn_level_and_of_pods_a_new_enforce_level_breaks() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    namespace(&sb, "apps", json!({ "pod-security.kubernetes.io/warn": "restricted" })).await;
    let (code, warnings, _) =
        post(&sb, "/api/v1/namespaces/apps/pods", pod("web", json!({ "hostNetwork": true }))).await;
    assert_eq!(code, 201);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(
            "299 - \"would violate PodSecurity \\\"restricted:latest\\\": allowPrivilegeEscalation != false"
        ),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("host namespaces (hostNetwork=true)"), "{warnings:?}");
    // A workload's template is warned of too (enforce would refuse only its pods).
    let deployment = json!({ "metadata": { "name": "web" }, "spec": { "selector": { "matchLabels": { "app": "web" } },
        "template": { "metadata": { "labels": { "app": "web" } }, "spec": pod("x", json!({}))["spec"] } } });
    let (code, warnings, _) = post(&sb, "/apis/apps/v1/namespaces/apps/deployments", deployment).await;
    assert_eq!((code, warnings.len()), (201, 1), "{warnings:?}");

    // Enforcing baseline where a host-network pod runs: allowed, with the pod named.
    let label = json!({ "metadata": { "labels": { "pod-security.kubernetes.io/enforce": "baseline" } } });
    let merge = [("content-type", "application/merge-patch+json")];
    let (code, _, warnings, _) =
        call_with_headers(&sb, Method::PATCH, "/api/v1/namespaces/apps", &merge, Some(label)).await;
    assert_eq!(code, 200);
    assert_eq!(
        warnings,
        [
            "299 - \"existing pods in namespace \\\"apps\\\" violate the new PodSecurity enforce level \\\"baseline:latest\\\"\"",
            "299 - \"web: host namespaces\"",
        ]
    );
}

#[tokio::test]
async fn mutating_admission_runs_before_the_strategys_validation_and_validating_admission_after() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    namespace(&sb, "locked", json!({ "pod-security.kubernetes.io/enforce": "baseline" })).await;
    // Priority is a mutating plugin: its refusal comes before the strategy finds the pod invalid.
    let invalid = |extra: Value| {
        let mut p = pod("web", extra);
        p["spec"]["containers"][0]["image"] = json!("");
        p
    };
    let (code, _, v) =
        post(&sb, "/api/v1/namespaces/locked/pods", invalid(json!({ "priorityClassName": "nope" }))).await;
    assert_eq!(code, 403, "{v}");
    assert!(v["message"].as_str().unwrap().ends_with("no PriorityClass with name nope was found"), "{v}");
    // PodSecurity is a validating plugin: an invalid pod is refused by the strategy first (422),
    // a valid one that breaks the level by the plugin (403).
    let (code, _, v) =
        post(&sb, "/api/v1/namespaces/locked/pods", invalid(json!({ "hostNetwork": true }))).await;
    assert_eq!(code, 422, "{v}");
    let (code, _, v) =
        post(&sb, "/api/v1/namespaces/locked/pods", pod("web", json!({ "hostNetwork": true }))).await;
    assert_eq!(code, 403, "{v}");
    assert!(v["message"].as_str().unwrap().contains("violates PodSecurity \"baseline:latest\""), "{v}");
}

#[tokio::test]
async fn an_eviction_takes_a_disruption_from_the_pods_budget_or_is_refused() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let pods = "/api/v1/namespaces/default/pods";
    post(&sb, pods, pod("web", json!({}))).await;
    let evict = || json!({ "apiVersion": "policy/v1", "kind": "Eviction", "metadata": { "name": "web" } });
    let budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let budget = json!({ "metadata": { "name": "web" }, "spec": { "minAvailable": 1, "selector": { "matchLabels": { "app": "web" } } } });
    assert_eq!(post(&sb, budgets, budget).await.0, 201);
    // A running, ready pod (no kubelet here: its status is written as one would).
    let running =
        json!({ "status": { "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] } });
    let merge = [("content-type", "application/merge-patch+json")];
    let status = format!("{pods}/web/status");
    assert_eq!(call_with_headers(&sb, Method::PATCH, &status, &merge, Some(running)).await.0, 200);

    // The budget's controller has not looked at it yet.
    let (code, _, v) = post(&sb, &format!("{pods}/web/eviction"), evict()).await;
    assert_eq!((code, v["reason"].as_str()), (429, Some("TooManyRequests")), "{v}");
    assert_eq!(
        v["details"]["causes"][0]["message"],
        "The disruption budget web is still being processed by the server."
    );

    let observed = |allowed: i64| json!({ "status": { "observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1 } });
    let budget_status = format!("{budgets}/web/status");
    call_with_headers(&sb, Method::PATCH, &budget_status, &merge, Some(observed(0))).await;
    let (code, _, v) = post(&sb, &format!("{pods}/web/eviction"), evict()).await;
    assert_eq!(code, 429);
    assert_eq!(v["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(
        v["details"]["causes"][0],
        json!({ "reason": "DisruptionBudget", "message": "The disruption budget web needs 1 healthy pods and has 1 currently" })
    );

    call_with_headers(&sb, Method::PATCH, &budget_status, &merge, Some(observed(1))).await;
    let (code, _, v) = post(&sb, &format!("{pods}/web/eviction"), evict()).await;
    assert_eq!((code, v["status"].as_str()), (201, Some("Success")), "{v}");
    let (_, _, _, b) = call_with_headers(&sb, Method::GET, &format!("{budgets}/web"), &[], None).await;
    assert_eq!(b["status"]["disruptionsAllowed"], 0);
    assert!(b["status"]["disruptedPods"]["web"].is_string(), "{b}");
    assert_eq!(b["status"]["conditions"][0]["reason"], "InsufficientPods");
    let (code, _, _, _) = call_with_headers(&sb, Method::GET, &format!("{pods}/web"), &[], None).await;
    assert_eq!(code, 404);

    // A pending pod is evicted whatever its budget says.
    post(&sb, pods, pod("web", json!({}))).await;
    let (code, _, _) = post(&sb, &format!("{pods}/web/eviction"), evict()).await;
    assert_eq!(code, 201);
}
