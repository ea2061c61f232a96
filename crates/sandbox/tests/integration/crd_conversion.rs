//! CRD conversion webhooks, called as a cluster calls them: a CRD of two versions whose schemas
//! differ (`v1`'s `spec.size` is `v2`'s `spec.dimensions.size`), stored in `v2`, converted by a
//! webhook of the test's own over HTTPS — on every read and write that crosses versions, through
//! a real `kube::Client` (on a one-thread runtime, the webhook served by the same thread) and
//! with kubectl.

use std::sync::{Arc, OnceLock};

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube_sandbox::Sandbox;
use serde_json::{Value, json};

use super::webhook_server::Webhook;

/// The test's converter: moves `spec.size` between the two versions' places, labels what it
/// converted, and refuses an object whose `spec.colour` is `"refused"`.
fn convert(_path: &str, req: &Value) -> Value {
    let to = req["desiredAPIVersion"].as_str().unwrap().to_owned();
    let mut converted = Vec::new();
    for o in req["objects"].as_array().unwrap() {
        let mut o = o.clone();
        let spec = o["spec"].as_object_mut().unwrap();
        if spec.get("colour").and_then(Value::as_str) == Some("refused") {
            return json!({ "result": { "status": "Failure", "message": "colour refused may not be converted" } });
        }
        if to.ends_with("/v2") {
            let size = spec.remove("size").unwrap_or(json!(0));
            spec.insert("dimensions".into(), json!({ "size": size }));
        } else {
            let size = spec.remove("dimensions").map_or(json!(0), |d| d["size"].clone());
            spec.insert("size".into(), size);
        }
        o["apiVersion"] = json!(to);
        o["metadata"]["labels"] = json!({ "converted": "yes" });
        // Metadata other than labels and annotations is not the webhook's to change.
        o["metadata"]["generation"] = json!(99);
        converted.push(o);
    }
    json!({ "result": { "status": "Success" }, "convertedObjects": converted })
}

fn crd(webhook: &Webhook) -> CustomResourceDefinition {
    let schema = |spec: Value| {
        json!({ "openAPIV3Schema": { "type": "object", "properties": {
            "spec": { "type": "object", "properties": spec } } } })
    };
    serde_json::from_value(json!({
        "metadata": { "name": "gadgets.example.com" },
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList" },
            "versions": [
                { "name": "v1", "served": true, "storage": false,
                  "schema": schema(json!({ "size": { "type": "integer" }, "colour": { "type": "string" } })) },
                { "name": "v2", "served": true, "storage": true,
                  "schema": schema(json!({ "dimensions": { "type": "object", "properties": {
                      "size": { "type": "integer" } } }, "colour": { "type": "string" } })) },
            ],
            "conversion": { "strategy": "Webhook", "webhook": {
                "clientConfig": webhook.url("/convert"), "conversionReviewVersions": ["v1"] } },
        },
    }))
    .unwrap()
}

fn gadgets(sb: &Sandbox, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", version, "Gadget");
    Api::default_namespaced_with(sb.client(), &ApiResource::from_gvk_with_plural(&gvk, "gadgets"))
}

fn gadget(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({ "apiVersion": format!("example.com/{version}"), "kind": "Gadget",
        "metadata": { "name": name }, "spec": spec }))
    .unwrap()
}

/// The conversions the webhook was asked for: each review's desired version and the names of
/// the objects sent.
fn asked(webhook: &Webhook) -> Vec<(String, Vec<String>)> {
    webhook
        .reviews("/convert")
        .iter()
        .map(|r| {
            let names = r["request"]["objects"].as_array().unwrap().iter();
            let names = names.map(|o| o["metadata"]["name"].as_str().unwrap().to_owned()).collect();
            (r["request"]["desiredAPIVersion"].as_str().unwrap().to_owned(), names)
        })
        .collect()
}

#[tokio::test]
async fn every_read_and_write_across_versions_goes_through_the_conversion_webhook() {
    let webhook = Webhook::start_for("ConversionReview", &["127.0.0.1"], convert).await;
    let sb = Sandbox::new();
    super::crd::install(&sb.client(), &crd(&webhook)).await;
    let (v1, v2) = (gadgets(&sb, "v1"), gadgets(&sb, "v2"));

    // A create in v1 is converted to v2, the storage version, and answered in v1.
    let created = v1.create(&PostParams::default(), &gadget("v1", "a", json!({ "size": 3 }))).await.unwrap();
    assert_eq!(created.data["spec"], json!({ "size": 3 }));
    assert_eq!(created.metadata.generation, Some(1), "the webhook's metadata is not kept");
    assert_eq!(created.labels().get("converted").map(String::as_str), Some("yes"), "its labels are");
    let review = webhook.reviews("/convert")[0].clone();
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["request"]["objects"][0]["apiVersion"], "example.com/v1");
    assert_eq!(
        asked(&webhook),
        [
            ("example.com/v2".to_owned(), vec!["a".to_owned()]),
            ("example.com/v1".to_owned(), vec!["a".to_owned()])
        ]
    );

    // Read in the storage version, nothing is converted; in v1, it is.
    let stored = v2.get("a").await.unwrap();
    assert_eq!(stored.data["spec"], json!({ "dimensions": { "size": 3 } }));
    assert_eq!(asked(&webhook).len(), 2);
    assert_eq!(v1.get("a").await.unwrap().data["spec"], json!({ "size": 3 }));
    assert_eq!(asked(&webhook).len(), 3);

    // A list converts what is not in the version listed in one review.
    v2.create(&PostParams::default(), &gadget("v2", "b", json!({ "dimensions": { "size": 5 } })))
        .await
        .unwrap();
    let before = asked(&webhook).len();
    let listed = v1.list(&ListParams::default()).await.unwrap();
    let sizes: Vec<Value> = listed.items.iter().map(|o| o.data["spec"]["size"].clone()).collect();
    assert_eq!(sizes, [json!(3), json!(5)]);
    assert_eq!(
        asked(&webhook)[before..],
        [("example.com/v1".to_owned(), vec!["a".to_owned(), "b".to_owned()])]
    );

    // A patch in v1 is applied to the object in v1, and stored in v2.
    let patched = v1
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "size": 7 } })))
        .await
        .unwrap();
    assert_eq!(patched.data["spec"], json!({ "size": 7 }));
    assert_eq!(v2.get("a").await.unwrap().data["spec"], json!({ "dimensions": { "size": 7 } }));

    // A watch in v1 sees a change made in v2, converted.
    let mut events = v1.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    let mut seen = 0;
    while seen < 2 {
        match events.next().await.unwrap().unwrap() {
            WatchEvent::Added(_) => seen += 1,
            other => panic!("{other:?}"),
        }
    }
    v2.patch("b", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "dimensions": { "size": 9 } } })))
        .await
        .unwrap();
    match events.next().await.unwrap().unwrap() {
        WatchEvent::Modified(o) => {
            assert_eq!((o.metadata.name.as_deref(), &o.data["spec"]), (Some("b"), &json!({ "size": 9 })))
        }
        other => panic!("{other:?}"),
    }

    // A server-side apply in v1 works on the object in v1.
    let applied = gadget("v1", "a", json!({ "colour": "red" }));
    let applied = v1.patch("a", &PatchParams::apply("test").force(), &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(applied.data["spec"], json!({ "size": 7, "colour": "red" }));
}

#[tokio::test]
async fn a_conversion_webhook_may_read_the_api_while_it_converts() {
    // The sandbox calls conversion webhooks with its store's lock let go: one that reads the
    // store while it converts is answered (held, it would wait out its 30 s and fail the request).
    let slot: Arc<OnceLock<Arc<Sandbox>>> = Arc::default();
    let reader = Arc::clone(&slot);
    let webhook = Webhook::start_for("ConversionReview", &["127.0.0.1"], move |path, req| {
        if let Some(sb) = reader.get() {
            let _ = sb.store().resource_version();
        }
        convert(path, req)
    })
    .await;
    let sb = Arc::new(Sandbox::new());
    let _ = slot.set(Arc::clone(&sb));
    super::crd::install(&sb.client(), &crd(&webhook)).await;
    let v1 = gadgets(&sb, "v1");
    let created = v1.create(&PostParams::default(), &gadget("v1", "a", json!({ "size": 1 }))).await.unwrap();
    v1.get("a").await.unwrap();
    v1.list(&ListParams::default()).await.unwrap();
    v1.patch("a", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "size": 2 } }))).await.unwrap();
    let mut replaced = created.clone();
    replaced.data["spec"] = json!({ "size": 3 });
    replaced.metadata.resource_version = v1.get("a").await.unwrap().metadata.resource_version;
    assert_eq!(v1.replace("a", &PostParams::default(), &replaced).await.unwrap().data["spec"]["size"], 3);
    v1.delete("a", &DeleteParams::default()).await.unwrap();
    v1.create(&PostParams::default(), &gadget("v1", "b", json!({ "size": 1 }))).await.unwrap();
    v1.delete_collection(&DeleteParams::default(), &ListParams::default()).await.unwrap();
    assert!(v1.list(&ListParams::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn a_conversion_the_webhook_refuses_or_cannot_answer_fails_the_request_as_upstreams() {
    let webhook = Webhook::start_for("ConversionReview", &["127.0.0.1"], convert).await;
    let sb = Sandbox::new();
    super::crd::install(&sb.client(), &crd(&webhook)).await;
    let (v1, v2) = (gadgets(&sb, "v1"), gadgets(&sb, "v2"));
    v2.create(&PostParams::default(), &gadget("v2", "odd", json!({ "colour": "refused" }))).await.unwrap();

    let status = |e: kube::Error| match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("{other}"),
    };
    let refused =
        "conversion webhook for example.com/v2, Kind=Gadget failed: colour refused may not be converted";
    assert_eq!(status(v1.get("odd").await.unwrap_err()), (500, refused.to_owned()));
    assert_eq!(status(v1.list(&ListParams::default()).await.unwrap_err()), (500, refused.to_owned()));
    let written = gadget("v1", "odd2", json!({ "colour": "refused" }));
    let (code, message) = status(v1.create(&PostParams::default(), &written).await.unwrap_err());
    assert_eq!(
        (code, message.as_str()),
        (
            500,
            "conversion webhook for example.com/v1, Kind=Gadget failed: colour refused may not be converted"
        )
    );
    assert!(v2.get_opt("odd2").await.unwrap().is_none(), "nothing was stored");

    // A webhook that cannot be reached: the call's error, as Go's client words it.
    let crds: Api<CustomResourceDefinition> = Api::all(sb.client());
    let gone = json!({ "spec": { "conversion": { "webhook": { "clientConfig": {
        "url": "https://127.0.0.1:1/convert", "caBundle": webhook.ca_bundle() } } } } });
    crds.patch("gadgets.example.com", &PatchParams::default(), &Patch::Merge(gone)).await.unwrap();
    let message = loop {
        let (code, message) = status(v1.get("odd").await.unwrap_err());
        assert_eq!(code, 500);
        if !message.ends_with("may not be converted") {
            break message;
        }
        // The CRD's new configuration is served once the CRD controller has seen it.
        tokio::task::yield_now().await;
    };
    assert!(
        message.starts_with(
            "conversion webhook for example.com/v2, Kind=Gadget failed: Post \"https://127.0.0.1:1/convert?timeout=30s\": dial tcp 127.0.0.1:1: connect: connection refused"
        ),
        "{message}"
    );
}

#[test]
fn kubectl_reads_each_version_through_the_webhook() {
    let Some(k) = crate::kubectl::Kubectl::start("crd-conversion") else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let webhook = runtime.block_on(Webhook::start_for("ConversionReview", &["127.0.0.1"], convert));
    let manifest = k.path("crd.json");
    std::fs::write(&manifest, serde_json::to_string(&crd(&webhook)).unwrap()).unwrap();
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    k.ok(&["wait", "--for=condition=Established", "crd/gadgets.example.com"]);
    let gadget = k.path("gadget.json");
    std::fs::write(&gadget, gadget_json()).unwrap();
    k.ok(&["create", "-f", gadget.to_str().unwrap()]);
    assert_eq!(k.jsonpath(&["get", "gadgets.v2.example.com", "g"], "{.spec.dimensions.size}"), "4");
    assert_eq!(k.jsonpath(&["get", "gadgets.v1.example.com", "g"], "{.spec.size}"), "4");
    drop(runtime);
}

fn gadget_json() -> String {
    json!({ "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": { "name": "g" }, "spec": { "size": 4 } })
        .to_string()
}
