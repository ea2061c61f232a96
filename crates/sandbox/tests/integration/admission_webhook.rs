//! Admission webhooks, called as a cluster calls them: a webhook server of the test's own,
//! over HTTPS with a certificate its configuration's `caBundle` vouches for, receives an
//! `AdmissionReview` and refuses, patches, warns or fails — through a real `kube::Client`
//! in-process (on a one-thread runtime, the webhook served by the same thread) and with kubectl.

use std::time::Duration;

use base64::Engine as _;
use http::Method;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_sandbox::{Sandbox, SandboxConfig, UserInfo};
use serde_json::{Value, json};

use super::upstream::call_with_headers;
use super::webhook_server::Webhook;

const GROUP: &str = "admissionregistration.k8s.io/v1";

/// A webhook entry of a configuration for ConfigMaps in namespaces labelled `webhooks: on`.
fn hook(name: &str, client_config: Value, operations: &[&str], extra: Value) -> Value {
    let mut w = json!({ "name": name, "clientConfig": client_config, "admissionReviewVersions": ["v1"],
        "sideEffects": "None", "failurePolicy": "Fail",
        "namespaceSelector": { "matchLabels": { "webhooks": "on" } },
        "rules": [{ "apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": ["configmaps"] }] });
    for (k, v) in extra.as_object().into_iter().flatten() {
        w[k] = v.clone();
    }
    w
}

fn configuration(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
    json!({ "apiVersion": GROUP, "kind": kind, "metadata": { "name": name }, "webhooks": hooks })
}

fn config_map(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name }, "data": data })).unwrap()
}

/// A sandbox whose `default` namespace is selected by the tests' webhooks.
fn sandbox(config: SandboxConfig) -> Sandbox {
    let sb = Sandbox::with_config(config);
    sb.store()
        .merge(
            sb.store().find("", "v1", "namespaces").as_deref().unwrap(),
            "",
            "default",
            &json!({ "metadata": { "labels": { "webhooks": "on" } } }),
        )
        .unwrap();
    sb
}

fn refusal(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("not a refusal: {other:?}"),
    }
}

/// A sandbox with the `guard` webhook ([`guard`]) on ConfigMap creates, `extra` its fields.
fn guarded(webhook: &Webhook, extra: Value) -> Sandbox {
    let sb = sandbox(SandboxConfig::bare());
    sb.seed(configuration(
        "ValidatingWebhookConfiguration",
        "guard",
        vec![hook("guard.example.com", webhook.url("/validate"), &["CREATE"], extra)],
    ))
    .unwrap();
    sb
}

/// Refuses a ConfigMap holding `forbidden`, warns of one holding `risky`, notes its size.
fn guard(_: &str, req: &Value) -> Value {
    let data = &req["object"]["data"];
    if data.get("forbidden").is_some() {
        return json!({ "allowed": false, "status": { "code": 403, "reason": "Forbidden",
            "message": "the key forbidden may not be used" } });
    }
    let mut r = json!({ "allowed": true, "auditAnnotations": { "keys": data.as_object().map_or(0, |d| d.len()).to_string() } });
    if data.get("risky").is_some() {
        r["warnings"] = json!(["risky is deprecated"]);
    }
    r
}

#[tokio::test]
async fn a_validating_webhook_judges_creates_updates_and_deletes() {
    let webhook = Webhook::start(&["127.0.0.1"], guard).await;
    let sb = sandbox(SandboxConfig::bare());
    sb.seed(configuration(
        "ValidatingWebhookConfiguration",
        "guard",
        vec![hook("guard.example.com", webhook.url("/validate"), &["CREATE", "UPDATE", "DELETE"], json!({}))],
    ))
    .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client_as(UserInfo::new("alice", ["dev"])));

    let (code, reason, message) = refusal(
        cms.create(&PostParams::default(), &config_map("bad", json!({ "forbidden": "1" })))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (
            403,
            "Forbidden",
            "admission webhook \"guard.example.com\" denied the request: the key forbidden may not be used"
        )
    );
    assert!(cms.get_opt("bad").await.unwrap().is_none());

    cms.create(&PostParams::default(), &config_map("good", json!({ "a": "1" }))).await.unwrap();
    let review = webhook.reviews("/validate").pop().unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    let req = &review["request"];
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["kind"], json!({ "group": "", "version": "v1", "kind": "ConfigMap" }));
    assert_eq!(req["resource"], json!({ "group": "", "version": "v1", "resource": "configmaps" }));
    assert_eq!((req["name"].as_str(), req["namespace"].as_str()), (Some("good"), Some("default")));
    assert_eq!(req["userInfo"]["username"], "alice");
    assert_eq!(req["object"]["data"]["a"], "1");
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["options"], json!({ "kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1" }));
    assert_eq!(req["dryRun"], false);
    assert!(req["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(webhook.reviews("/validate?timeout=10s").len() >= 2, "the call names its timeout");

    // A patch is judged on the patched object, with the stored one as oldObject.
    let e = cms
        .patch("good", &PatchParams::default(), &Patch::Merge(json!({ "data": { "forbidden": "2" } })))
        .await
        .unwrap_err();
    assert_eq!(refusal(e).0, 403);
    let req = webhook.reviews("/validate").pop().unwrap()["request"].clone();
    assert_eq!(
        (req["operation"].as_str(), req["oldObject"]["data"]["a"].as_str()),
        (Some("UPDATE"), Some("1"))
    );
    assert_eq!(cms.get("good").await.unwrap().data.unwrap().get("forbidden"), None);

    // Warnings and audit annotations reach the answer and the request's record.
    let (code, _, warnings, _) = call_with_headers(
        &sb,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        &[],
        Some(json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "risky" }, "data": { "risky": "1", "b": "2" } })),
    )
    .await;
    assert_eq!((code, warnings), (201, vec!["299 - \"risky is deprecated\"".to_owned()]));
    let record = sb.requests().all().into_iter().rev().find(|r| r.verb == "create").unwrap();
    assert_eq!(record.annotations.get("guard.example.com/keys").map(String::as_str), Some("2"));

    // A delete is sent the stored object as oldObject and no object.
    cms.delete("good", &DeleteParams::default()).await.unwrap();
    let req = webhook.reviews("/validate").pop().unwrap()["request"].clone();
    assert_eq!(req["operation"], "DELETE");
    assert_eq!(
        (req["object"].clone(), req["oldObject"]["metadata"]["name"].as_str()),
        (Value::Null, Some("good"))
    );
    assert_eq!(req["options"]["kind"], "DeleteOptions");

    // The calls were made over one connection, kept between them.
    assert_eq!(webhook.connections.load(std::sync::atomic::Ordering::Relaxed), 1);

    // Namespaces the selector does not select are not judged.
    let other = Api::<ConfigMap>::namespaced(sb.client(), "kube-public");
    let before = webhook.reviews("/").len();
    other.create(&PostParams::default(), &config_map("free", json!({ "forbidden": "1" }))).await.unwrap();
    assert_eq!(webhook.reviews("/").len(), before);
}

#[tokio::test]
async fn a_dry_run_reaches_a_webhook_that_has_no_side_effects() {
    let webhook = Webhook::start(&["127.0.0.1"], guard).await;
    let sb = guarded(&webhook, json!({ "sideEffects": "NoneOnDryRun" }));
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let dry = PostParams { dry_run: true, ..PostParams::default() };
    cms.create(&dry, &config_map("dry", json!({}))).await.unwrap();
    assert_eq!(webhook.reviews("/validate").pop().unwrap()["request"]["dryRun"], true);
    assert!(cms.get_opt("dry").await.unwrap().is_none());

    // A dry run refused is refused as the real one.
    let (code, _, _) =
        refusal(cms.create(&dry, &config_map("dry", json!({ "forbidden": "1" }))).await.unwrap_err());
    assert_eq!(code, 403);
    cms.create(&PostParams::default(), &config_map("real", json!({}))).await.unwrap();
    assert_eq!(webhook.reviews("/validate").pop().unwrap()["request"]["dryRun"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhooks_patch_in_order_and_are_reinvoked_if_needed() {
    // The first labels every ConfigMap; the second, reached as a Service, annotates it with its
    // labels' count — a change the first is called again for.
    let webhook = Webhook::start(&["127.0.0.1", "mutator.webhooks.svc"], |path, req| {
        let obj = &req["object"];
        let patch = if path.starts_with("/label") {
            if obj["metadata"]["labels"]["labelled"] == "yes" {
                json!([])
            } else if obj["metadata"].get("labels").is_some() {
                json!([{ "op": "add", "path": "/metadata/labels/labelled", "value": "yes" }])
            } else {
                json!([{ "op": "add", "path": "/metadata/labels", "value": { "labelled": "yes" } }])
            }
        } else {
            let count = obj["metadata"]["labels"].as_object().map_or(0, |l| l.len());
            json!([{ "op": "add", "path": "/metadata/annotations", "value": { "labels": count.to_string() } }])
        };
        json!({ "allowed": true, "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()) })
    })
    .await;
    let sb = sandbox(SandboxConfig::bare());
    sb.webhook_service("webhooks", "mutator", webhook.addr);
    let service = json!({ "service": { "namespace": "webhooks", "name": "mutator", "path": "/annotate" },
        "caBundle": webhook.ca_bundle() });
    sb.seed(configuration(
        "MutatingWebhookConfiguration",
        "a-label",
        vec![hook(
            "label.example.com",
            webhook.url("/label"),
            &["CREATE", "UPDATE"],
            json!({ "reinvocationPolicy": "IfNeeded" }),
        )],
    ))
    .unwrap();
    sb.seed(configuration(
        "MutatingWebhookConfiguration",
        "b-annotate",
        vec![hook("annotate.example.com", service, &["CREATE"], json!({}))],
    ))
    .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let created =
        cms.create(&PostParams::default(), &config_map("mutated", json!({ "a": "1" }))).await.unwrap();
    assert_eq!(created.metadata.labels.unwrap()["labelled"], "yes");
    assert_eq!(created.metadata.annotations.unwrap()["labels"], "1");
    assert_eq!(webhook.reviews("/label").len(), 2, "called again after the annotation");
    assert_eq!(webhook.reviews("/annotate").len(), 1);
    let record = sb.requests().all().into_iter().rev().find(|r| r.verb == "create").unwrap();
    assert_eq!(
        record.annotations.get("mutation.webhook.admission.k8s.io/round_0_index_0").map(String::as_str),
        Some("{\"configuration\":\"a-label\",\"webhook\":\"label.example.com\",\"mutated\":true}")
    );
    assert!(record.annotations.contains_key("mutation.webhook.admission.k8s.io/round_1_index_0"));

    // An update is patched too, and the patch is validated as the object is.
    let updated = cms
        .patch(
            "mutated",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "labelled": null } } })),
        )
        .await
        .unwrap();
    assert_eq!(updated.metadata.labels.unwrap()["labelled"], "yes");
    // A server-side apply that creates is a create.
    let applied = cms
        .patch(
            "applied",
            &PatchParams::apply("test"),
            &Patch::Apply(
                json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "applied" } }),
            ),
        )
        .await
        .unwrap();
    assert_eq!(applied.metadata.annotations.unwrap()["labels"], "1");
    // A name still to be generated is not sent.
    let unnamed: ConfigMap =
        serde_json::from_value(json!({ "metadata": { "generateName": "gen-" } })).unwrap();
    let made = cms.create(&PostParams::default(), &unnamed).await.unwrap();
    assert!(made.metadata.name.unwrap().starts_with("gen-"));
    let req = webhook.reviews("/label").pop().unwrap()["request"].clone();
    assert_eq!((req.get("name"), req["object"]["metadata"]["generateName"].as_str()), (None, Some("gen-")));
}

#[tokio::test]
async fn a_webhook_that_fails_refuses_under_fail_and_is_skipped_under_ignore() {
    let webhook = Webhook::start(&["127.0.0.1"], |path, _| {
        if path.starts_with("/slow") {
            json!({ "allowed": true, "delaySeconds": 3 })
        } else {
            json!({ "allowed": true })
        }
    })
    .await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let sb = sandbox(SandboxConfig::bare());
    let unreachable = json!({ "url": format!("https://{closed}/check"), "caBundle": webhook.ca_bundle() });
    sb.seed(configuration(
        "ValidatingWebhookConfiguration",
        "broken",
        vec![
            hook(
                "ignored.example.com",
                unreachable.clone(),
                &["CREATE"],
                json!({ "failurePolicy": "Ignore" }),
            ),
            hook("slow.example.com", webhook.url("/slow"), &["UPDATE"], json!({ "timeoutSeconds": 1 })),
            hook(
                "untrusted.example.com",
                json!({ "url": format!("https://{}/plain", webhook.addr) }),
                &["DELETE"],
                json!({}),
            ),
        ],
    ))
    .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client());
    cms.create(&PostParams::default(), &config_map("kept", json!({}))).await.expect("failing open");
    let record = sb.requests().all().into_iter().rev().find(|r| r.verb == "create").unwrap();
    assert_eq!(
        record
            .annotations
            .get("failed-open.validating.webhook.admission.k8s.io/round_0_index_0")
            .map(String::as_str),
        Some("ignored.example.com")
    );

    let (code, reason, message) = refusal(
        cms.patch("kept", &PatchParams::default(), &Patch::Merge(json!({ "data": { "a": "1" } })))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (500, "InternalError"));
    assert_eq!(
        message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"https://{}/slow?timeout=1s\": context deadline exceeded",
            webhook.addr
        )
    );

    // A certificate no caBundle vouches for is a failed call.
    let (code, _, message) = refusal(cms.delete("kept", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(code, 500);
    assert!(
        message.contains("failed calling webhook \"untrusted.example.com\": failed to call webhook: Post"),
        "{message}"
    );
    assert!(webhook.reviews("/plain").is_empty());
    assert!(cms.get_opt("kept").await.unwrap().is_some());
}

#[tokio::test]
async fn match_conditions_and_object_selectors_choose_the_writes_a_webhook_sees() {
    let webhook = Webhook::start(&["127.0.0.1"], guard).await;
    let sb = guarded(
        &webhook,
        json!({
            "objectSelector": { "matchExpressions": [{ "key": "skip", "operator": "DoesNotExist" }] },
            "matchConditions": [{ "name": "not-alice", "expression": "request.userInfo.username != 'alice'" }],
        }),
    );
    let admin: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let alice: Api<ConfigMap> = Api::default_namespaced(sb.client_as(UserInfo::new("alice", ["dev"])));
    alice.create(&PostParams::default(), &config_map("by-alice", json!({ "forbidden": "1" }))).await.unwrap();
    let skipped: ConfigMap = serde_json::from_value(
        json!({ "metadata": { "name": "skipped", "labels": { "skip": "yes" } }, "data": { "forbidden": "1" } }),
    )
    .unwrap();
    admin.create(&PostParams::default(), &skipped).await.unwrap();
    assert!(webhook.reviews("/").is_empty());
    assert_eq!(
        refusal(
            admin
                .create(&PostParams::default(), &config_map("by-admin", json!({ "forbidden": "1" })))
                .await
                .unwrap_err()
        )
        .0,
        403
    );

    // A condition that cannot be evaluated refuses under Fail.
    sb.seed(configuration(
        "ValidatingWebhookConfiguration",
        "broken-condition",
        vec![hook(
            "broken.example.com",
            webhook.url("/broken"),
            &["CREATE"],
            json!({ "matchConditions": [{ "name": "missing", "expression": "object.data.nope == 'x'" }] }),
        )],
    ))
    .unwrap();
    let (code, _, message) = refusal(
        admin.create(&PostParams::default(), &config_map("any", json!({ "a": "1" }))).await.unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(
        message.starts_with(
            "configmaps \"any\" is forbidden: expression 'object.data.nope == 'x'' resulted in error: "
        ),
        "{message}"
    );
}

#[test]
fn kubectl_meets_a_webhook_over_https() {
    let Some(k) = crate::kubectl::Kubectl::start("admission-webhook") else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let webhook = runtime.block_on(Webhook::start(&["127.0.0.1"], guard));
    let manifest = k.path("webhook.yaml");
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "guard",
        vec![hook("guard.example.com", webhook.url("/validate"), &["CREATE"], json!({}))],
    );
    std::fs::write(&manifest, config.to_string()).unwrap();
    k.ok(&["label", "namespace", "default", "webhooks=on"]);
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    let err = k.fails(&["create", "configmap", "bad", "--from-literal=forbidden=1"]);
    assert!(
        err.contains(
            "error: failed to create configmap: admission webhook \"guard.example.com\" denied the request: the key forbidden may not be used"
        ),
        "{err}"
    );
    let (ok, _, stderr) = k.run(&["create", "configmap", "risky", "--from-literal=risky=1"]);
    assert!(ok && stderr.contains("Warning: risky is deprecated"), "{stderr}");
    drop(runtime);
}

#[tokio::test]
async fn the_simulated_controllers_pods_pass_a_mutating_webhook() {
    // A sidecar injector's shape: every pod created in the namespace is labelled. The pods are
    // the ReplicaSet controller's, made on the simulation's round; the webhook is served by this
    // test's one-thread runtime.
    let webhook = Webhook::start(&["127.0.0.1"], |_, req| {
        let patch = if req["object"]["metadata"].get("labels").is_some() {
            json!([{ "op": "add", "path": "/metadata/labels/injected", "value": "yes" }])
        } else {
            json!([{ "op": "add", "path": "/metadata/labels", "value": { "injected": "yes" } }])
        };
        json!({ "allowed": true, "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()) })
    })
    .await;
    let sb = sandbox(SandboxConfig::default());
    let mut pods_hook = hook("inject.example.com", webhook.url("/inject"), &["CREATE"], json!({}));
    pods_hook["rules"][0]["resources"] = json!(["pods"]);
    sb.seed(configuration("MutatingWebhookConfiguration", "inject", vec![pods_hook])).unwrap();
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::default_namespaced(sb.client());
    let d = serde_json::from_value(json!({ "metadata": { "name": "web" }, "spec": { "replicas": 2,
        "selector": { "matchLabels": { "app": "web" } },
        "template": { "metadata": { "labels": { "app": "web" } },
            "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } }))
    .unwrap();
    deployments.create(&PostParams::default(), &d).await.unwrap();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::default_namespaced(sb.client());
    let listed = loop {
        let listed = pods.list(&Default::default()).await.unwrap().items;
        if listed.len() == 2 {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for pod in listed {
        let labels = pod.metadata.labels.unwrap();
        assert_eq!((labels["app"].as_str(), labels["injected"].as_str()), ("web", "yes"));
    }
    assert_eq!(webhook.reviews("/inject").len(), 2);
}
