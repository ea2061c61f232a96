//! The whole built-in API through a real `kube::Client`: every discovered resource lists and
//! watches; each workload kind gets upstream's defaults and refusals; the subresources that act
//! (binding, eviction, token, approval, log) and the reviews answer as a v1.32 server does. What
//! a real server answers to the same kinds is compared in `tests/fidelity` (run by `.ci/apidiff`).

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet, StatefulSet};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::autoscaling::{v1 as hpa_v1, v2 as hpa_v2};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ReplicationController, ServiceAccount};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::core::Status;
use kube::discovery::{Discovery, verbs};
use kube::{Client, Error};
use kube_sandbox::{Sandbox, SandboxConfig};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn api_error(e: Error) -> Status {
    match e {
        Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn of<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn template(app: &str, restart: Option<&str>) -> Value {
    let mut t = json!({ "metadata": { "labels": { "app": app } }, "spec": { "containers": [{ "name": "main", "image": "busybox:1.36" }] } });
    if let Some(r) = restart {
        t["spec"]["restartPolicy"] = json!(r);
    }
    t
}

/// The causes' fields of a 422.
fn causes(s: &Status) -> Vec<String> {
    s.details.as_ref().map(|d| d.causes.iter().map(|c| c.field.clone()).collect()).unwrap_or_default()
}

#[tokio::test]
async fn every_discovered_resource_lists_and_watches() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let client = sb.client();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let mut checked = 0;
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            if caps.supports_operation(verbs::LIST) {
                api.list(&ListParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("list {}: {e}", resource.plural));
                checked += 1;
            }
            if caps.supports_operation(verbs::WATCH) {
                let mut events = api
                    .watch(&WatchParams::default().timeout(30), "0")
                    .await
                    .unwrap_or_else(|e| panic!("watch {}: {e}", resource.plural))
                    .boxed();
                // The stream is open: what it sends in its first moments is no error event.
                let first =
                    tokio::time::timeout(std::time::Duration::from_millis(20), events.try_next()).await;
                if let Ok(event) = first {
                    let event = event.unwrap();
                    assert!(
                        !matches!(event, Some(kube::api::WatchEvent::Error(_))),
                        "{}: {event:?}",
                        resource.plural
                    );
                }
            }
        }
    }
    // Every group a v1.32 cluster serves is here, and the core group's kinds.
    assert!(checked >= 45, "only {checked} resources list");
    for group in [
        "apps",
        "batch",
        "autoscaling",
        "networking.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "admissionregistration.k8s.io",
        "discovery.k8s.io",
        "node.k8s.io",
    ] {
        assert!(discovery.has_group(group), "{group} is not served");
    }
}

#[tokio::test]
async fn a_pod_gets_the_defaults_and_admission_a_server_gives_it() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let pod = pods
        .create(
            &PostParams::default(),
            &of(json!({ "metadata": { "name": "web" }, "spec": template("web", None)["spec"] })),
        )
        .await
        .unwrap();
    let v = serde_json::to_value(&pod).unwrap();
    assert_eq!(v["spec"]["serviceAccountName"], "default");
    assert_eq!(v["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(v["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(v["spec"]["tolerations"][0]["tolerationSeconds"], 300);
    assert_eq!(v["status"]["phase"], "Pending");
    assert_eq!(v["status"]["qosClass"], "BestEffort");

    // A pod's spec changes only where upstream allows.
    let e = api_error(
        pods.patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "restartPolicy": "Never" } })),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, causes(&e)), (422, vec!["spec".to_owned()]));
    pods.patch(
        "web",
        &PatchParams::default(),
        &Patch::Strategic(json!({ "spec": { "containers": [{ "name": "main", "image": "busybox:1.37" }] } })),
    )
    .await
    .unwrap();

    // Without containers it is refused, naming the field.
    let e = api_error(
        pods.create(
            &PostParams::default(),
            &of(json!({ "metadata": { "name": "empty" }, "spec": { "containers": [] } })),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, causes(&e)), (422, vec!["spec.containers".to_owned()]));
}

#[tokio::test]
async fn a_namespaces_pod_security_level_refuses_the_pods_that_break_it() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    namespaces
        .create(&PostParams::default(), &of(json!({ "metadata": { "name": "locked", "labels": { "pod-security.kubernetes.io/enforce": "restricted" } } })))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(c, "locked");
    let plain = of(json!({ "metadata": { "name": "web" }, "spec": template("web", None)["spec"] }));
    let e = api_error(pods.create(&PostParams::default(), &plain).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(e.message.starts_with("pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false"), "{}", e.message);
    let mut locked = template("web", None)["spec"].clone();
    locked["securityContext"] =
        json!({ "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } });
    locked["containers"][0]["securityContext"] =
        json!({ "allowPrivilegeEscalation": false, "capabilities": { "drop": ["ALL"] } });
    pods.create(&PostParams::default(), &of(json!({ "metadata": { "name": "web" }, "spec": locked })))
        .await
        .unwrap();
}

#[tokio::test]
async fn binding_eviction_and_logs_act_on_a_pod() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let client = sb.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &of(json!({ "metadata": { "name": "web" }, "spec": template("web", None)["spec"] })),
    )
    .await
    .unwrap();

    // No node yet: an empty log, as upstream answers.
    assert_eq!(pods.logs("web", &Default::default()).await.unwrap(), "");

    let binding = json!({ "apiVersion": "v1", "kind": "Binding", "metadata": { "name": "web" }, "target": { "kind": "Node", "name": "node-1" } });
    let req = http::Request::post("/api/v1/namespaces/default/pods/web/binding")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&binding).unwrap())
        .unwrap();
    let status: Value = client.request(req).await.unwrap();
    assert_eq!(status["status"], "Success");
    let bound = pods.get("web").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let scheduled = bound.status.unwrap().conditions.unwrap();
    assert!(scheduled.iter().any(|c| c.type_ == "PodScheduled" && c.status == "True"));
    // On a node the API server cannot find (a bare sandbox has none): the node's 404, as
    // upstream's connection lookup answers.
    let e = api_error(pods.logs("web", &Default::default()).await.unwrap_err());
    assert_eq!((e.code, e.message.as_str()), (404, "nodes \"node-1\" not found"));

    // Bound once only.
    let again = http::Request::post("/api/v1/namespaces/default/pods/web/binding")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&binding).unwrap())
        .unwrap();
    let e = api_error(client.request::<Value>(again).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));

    // An eviction deletes it — gracefully, as it is bound to a node: it is Terminating for its
    // grace period until its kubelet (none runs on a bare sandbox) removes it.
    pods.evict("web", &Default::default()).await.unwrap();
    let terminating = pods.get("web").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    // A delete with no grace removes it at once, as a kubelet's final delete does.
    pods.delete("web", &kube::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() })
        .await
        .unwrap();
    assert!(pods.get_opt("web").await.unwrap().is_none());
}

#[tokio::test]
async fn workload_kinds_get_their_defaults_and_keep_their_immutable_fields() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let post = PostParams::default();

    let sts: Api<StatefulSet> = Api::default_namespaced(c.clone());
    let made = sts
        .create(&post, &of(json!({ "metadata": { "name": "db" }, "spec": {
            "selector": { "matchLabels": { "app": "db" } }, "serviceName": "db", "template": template("db", None),
            "volumeClaimTemplates": [{ "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } }],
        } })))
        .await
        .unwrap();
    let spec = made.spec;
    assert_eq!((spec.replicas, spec.pod_management_policy.as_deref()), (Some(1), Some("OrderedReady")));
    assert_eq!(made.metadata.generation, Some(1));
    let e = api_error(
        sts.patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "serviceName": "other" } })),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, causes(&e)), (422, vec!["spec".to_owned()]));
    // Scaling goes through the scale subresource, and moves the generation.
    let scale = sts
        .patch_scale("db", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 3 } })))
        .await
        .unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(3));
    assert_eq!(sts.get("db").await.unwrap().metadata.generation, Some(2));
    assert_eq!(sts.get_scale("db").await.unwrap().status.unwrap().selector.as_deref(), Some("app=db"));

    let jobs: Api<Job> = Api::default_namespaced(c.clone());
    let job = jobs
        .create(&post, &of(json!({ "metadata": { "name": "pi" }, "spec": { "template": template("pi", Some("Never")) } })))
        .await
        .unwrap();
    let uid = job.metadata.uid.clone().unwrap();
    let spec = job.spec.unwrap();
    assert_eq!((spec.completions, spec.parallelism, spec.backoff_limit), (Some(1), Some(1), Some(6)));
    let selector = spec.selector.unwrap().match_labels.unwrap();
    assert_eq!(selector["batch.kubernetes.io/controller-uid"], uid);
    let e = api_error(
        jobs.create(
            &post,
            &of(json!({ "metadata": { "name": "bad" }, "spec": { "template": template("bad", None) } })),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, causes(&e)), (422, vec!["spec.template.spec.restartPolicy".to_owned()]));
    assert!(e.message.contains("Required value: valid values: \"OnFailure\", \"Never\""), "{}", e.message);

    let cron: Api<CronJob> = Api::default_namespaced(c.clone());
    let made = cron
        .create(&post, &of(json!({ "metadata": { "name": "tick" }, "spec": { "schedule": "*/5 * * * *", "jobTemplate": { "spec": { "template": template("tick", Some("OnFailure")) } } } })))
        .await
        .unwrap();
    let spec = made.spec;
    assert_eq!(
        (spec.concurrency_policy.as_deref(), spec.successful_jobs_history_limit),
        (Some("Allow"), Some(3))
    );

    let ds: Api<DaemonSet> = Api::default_namespaced(c.clone());
    let made = ds
        .create(&post, &of(json!({ "metadata": { "name": "agent" }, "spec": { "selector": { "matchLabels": { "app": "agent" } }, "template": template("agent", None) } })))
        .await
        .unwrap();
    assert_eq!(made.spec.update_strategy.unwrap().type_.as_deref(), Some("RollingUpdate"));

    let rs: Api<ReplicaSet> = Api::default_namespaced(c.clone());
    let e = api_error(
        rs.create(&post, &of(json!({ "metadata": { "name": "web" }, "spec": { "selector": { "matchLabels": { "app": "other" } }, "template": template("web", None) } })))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, causes(&e)), (422, vec!["spec.template.metadata.labels".to_owned()]));

    let rc: Api<ReplicationController> = Api::default_namespaced(c.clone());
    rc.create(
        &post,
        &of(json!({ "metadata": { "name": "old" }, "spec": { "template": template("old", None) } })),
    )
    .await
    .unwrap();
    assert_eq!(rc.get_scale("old").await.unwrap().status.unwrap().selector.as_deref(), Some("app=old"));

    let pvcs: Api<PersistentVolumeClaim> = Api::default_namespaced(c.clone());
    let pvc = pvcs
        .create(&post, &of(json!({ "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } }, "storageClassName": "standard" } })))
        .await
        .unwrap();
    assert_eq!(pvc.status.unwrap().phase.as_deref(), Some("Pending"));
    let e = api_error(
        pvcs.patch(
            "data",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "storageClassName": "fast" } })),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
}

#[tokio::test]
async fn a_claim_in_use_stays_until_its_pod_is_gone() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let pvcs: Api<PersistentVolumeClaim> = Api::default_namespaced(c.clone());
    let pods: Api<Pod> = Api::default_namespaced(c);
    let claim = of(
        json!({ "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } }),
    );
    let made = pvcs.create(&PostParams::default(), &claim).await.unwrap();
    assert_eq!(made.metadata.finalizers.as_deref(), Some(&["kubernetes.io/pvc-protection".to_owned()][..]));
    let mut spec = template("db", None)["spec"].clone();
    spec["volumes"] = json!([{ "name": "data", "persistentVolumeClaim": { "claimName": "data" } }]);
    pods.create(&PostParams::default(), &of(json!({ "metadata": { "name": "db" }, "spec": spec })))
        .await
        .unwrap();

    pvcs.delete("data", &DeleteParams::default()).await.unwrap();
    // Several protection ticks pass: the pod still uses it.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(pvcs.get("data").await.unwrap().metadata.deletion_timestamp.is_some());
    pods.delete("db", &DeleteParams::default()).await.unwrap();
    // Released by the next tick; a minute allows for a loaded machine.
    for _ in 0..6000 {
        if pvcs.get_opt("data").await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the claim was never released");
}

#[tokio::test]
async fn each_autoscaling_version_reads_the_others_writes() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let v1: Api<hpa_v1::HorizontalPodAutoscaler> = Api::default_namespaced(sb.client());
    let v2: Api<hpa_v2::HorizontalPodAutoscaler> = Api::default_namespaced(sb.client());
    v1.create(
        &PostParams::default(),
        &of(json!({ "metadata": { "name": "web" }, "spec": { "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" }, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60 } })),
    )
    .await
    .unwrap();
    let read = v2.get("web").await.unwrap().spec;
    let metric = &read.metrics.unwrap()[0];
    assert_eq!(metric.resource.as_ref().unwrap().target.average_utilization, Some(60));
    assert_eq!(read.min_replicas, Some(1));
    v2.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "metrics": [{ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 75 } } }] } })),
    )
    .await
    .unwrap();
    assert_eq!(v1.get("web").await.unwrap().spec.target_cpu_utilization_percentage, Some(75));
    let e = api_error(
        v2.create(&PostParams::default(), &of(json!({ "metadata": { "name": "bad" }, "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "x" }, "minReplicas": 4, "maxReplicas": 2 } })))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, causes(&e)), (422, vec!["spec.maxReplicas".to_owned()]));
}

/// The tokens the sandbox issues verify, with no help from it, against the key its issuer
/// discovery publishes: RS256, the token's `kid` in the key set.
#[tokio::test]
async fn service_account_tokens_verify_against_the_published_key_set() {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c: Client = sb.client();
    let accounts: Api<ServiceAccount> = Api::default_namespaced(c.clone());
    accounts.create(&PostParams::default(), &of(json!({ "metadata": { "name": "app" } }))).await.unwrap();
    let request: TokenRequest = of(json!({ "spec": {} }));
    let token = accounts.create_token_request("app", &PostParams::default(), &request).await.unwrap();
    let token = token.status.unwrap().token.unwrap();

    let get = |path: &str| http::Request::get(path).body(Vec::new()).unwrap();
    let config: Value = c.request(get("/.well-known/openid-configuration")).await.unwrap();
    assert_eq!(config["issuer"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(config["id_token_signing_alg_values_supported"], json!(["RS256"]));
    let jwks_path = config["jwks_uri"].as_str().unwrap().split_once("/openid/").unwrap().1;
    let jwks: Value = c.request(get(&format!("/openid/{jwks_path}"))).await.unwrap();

    let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    let header: Value = serde_json::from_slice(&decode(parts[0])).unwrap();
    assert_eq!(header["alg"], "RS256");
    let jwk =
        jwks["keys"].as_array().unwrap().iter().find(|k| k["kid"] == header["kid"]).expect("the token's key");
    let key = ring::signature::RsaPublicKeyComponents {
        n: decode(jwk["n"].as_str().unwrap()),
        e: decode(jwk["e"].as_str().unwrap()),
    };
    let signed = format!("{}.{}", parts[0], parts[1]);
    key.verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, signed.as_bytes(), &decode(parts[2]))
        .expect("the published key verifies the token");
    let claims: Value = serde_json::from_slice(&decode(parts[1])).unwrap();
    assert_eq!(claims["iss"], config["issuer"]);
    assert_eq!(claims["sub"], "system:serviceaccount:default:app");
    assert!(
        key.verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, b"another payload", &decode(parts[2]))
            .is_err()
    );
}

#[tokio::test]
async fn tokens_reviews_and_approvals_answer() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c: Client = sb.client();
    let accounts: Api<ServiceAccount> = Api::default_namespaced(c.clone());
    accounts.create(&PostParams::default(), &of(json!({ "metadata": { "name": "app" } }))).await.unwrap();
    let request: TokenRequest = of(json!({ "spec": { "audiences": ["api"], "expirationSeconds": 3600 } }));
    let token = accounts.create_token_request("app", &PostParams::default(), &request).await.unwrap();
    let token = token.status.unwrap().token.unwrap();
    assert_eq!(token.split('.').count(), 3, "a JWT");

    let reviews: Api<TokenReview> = Api::all(c.clone());
    let review =
        reviews.create(&PostParams::default(), &of(json!({ "spec": { "token": token } }))).await.unwrap();
    let status = review.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    assert_eq!(status.user.unwrap().username.as_deref(), Some("system:serviceaccount:default:app"));
    let forged = reviews
        .create(&PostParams::default(), &of(json!({ "spec": { "token": format!("{token}x") } })))
        .await
        .unwrap();
    assert_ne!(forged.status.unwrap().authenticated, Some(true));
    // An account gone takes its tokens with it.
    accounts.delete("app", &DeleteParams::default()).await.unwrap();
    let gone =
        reviews.create(&PostParams::default(), &of(json!({ "spec": { "token": token } }))).await.unwrap();
    assert_ne!(gone.status.unwrap().authenticated, Some(true));
    let e =
        api_error(accounts.create_token_request("app", &PostParams::default(), &request).await.unwrap_err());
    assert_eq!(e.code, 404);

    let access: Api<SelfSubjectAccessReview> = Api::all(c.clone());
    let answer = access
        .create(
            &PostParams::default(),
            &of(json!({ "spec": { "resourceAttributes": { "verb": "delete", "resource": "pods" } } })),
        )
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed);
    // Nothing is stored: a review has no list.
    let e = api_error(access.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(e.code, 405);

    let csrs: Api<CertificateSigningRequest> = Api::all(c.clone());
    // A PEM certificate request (an EC P-256 key's, subject CN=base), base64 as `[]byte` is.
    const REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIS01IRUNBUUF3RHpFTk1Bc0dBMVVFQXd3RVltRnpaVEJaTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSApBMElBQklIZlNLMHFNYmZvd09YOUNGOUFQOEZ3VDZMYkVCZ1NsclBzRU5hSXMxYUszTW05bXVBQ3VBdnFvbjhsCmsxQWlQNXFWVEFvd1NDZkZreEZIUWxINEZJT2dBREFLQmdncWhrak9QUVFEQWdOSkFEQkdBaUVBc2JGZGYwVzcKRFo2cXFNSEIva0NYWnhRcHhiS2tFUkNSVVV1NlFCVGVoVjBDSVFDNzFtaDYydENWdzhZNHNvN0ZxMWEwSGRKKwp2dU1UcllwRDJ3cWoxeWhpRHc9PQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";
    csrs.create(
        &PostParams::default(),
        &of(json!({ "metadata": { "name": "me" }, "spec": { "request": REQUEST, "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"] } })),
    )
    .await
    .unwrap();
    let mut csr = csrs.get("me").await.unwrap();
    csr.status = Some(of(
        json!({ "conditions": [{ "type": "Approved", "status": "True", "reason": "Test", "message": "ok" }] }),
    ));
    let approved = csrs
        .patch_approval("me", &PatchParams::default(), &Patch::Merge(serde_json::to_value(&csr).unwrap()))
        .await
        .unwrap();
    assert_eq!(approved.status.unwrap().conditions.unwrap()[0].type_, "Approved");

    // The system priority classes are there from the start.
    let classes: Api<PriorityClass> = Api::all(c);
    assert_eq!(classes.get("system-node-critical").await.unwrap().value, Some(2_000_001_000));
}
