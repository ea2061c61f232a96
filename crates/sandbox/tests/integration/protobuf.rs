//! Protobuf (`application/vnd.kubernetes.protobuf`) over the REST layer, as Go clients on it
//! use the API: bodies read, answers and errors written, watch streams framed, delete options
//! read, and custom resources kept to JSON but for their metadata. The codec's own cases are its
//! unit tests; kubectl's typed clients (`kubectl create deployment`, `autoscale`, `drain`)
//! exercise a real Go decoder in the kubectl tests.

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use kube::CustomResourceExt;
use kube::api::{Api, PostParams};
use kube_sandbox::{Sandbox, protobuf};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::crd::{Widget, install, widget};
use super::upstream::request;

const PB: &str = "application/vnd.kubernetes.protobuf";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// A request as a Go client on protobuf sends it (its user agent first); the status, content
/// type and body.
async fn call(
    sb: &Sandbox,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String, Bytes) {
    let mut all = vec![("user-agent", "e2e.test/v1.32.0")];
    all.extend_from_slice(headers);
    let (code, ct, _, bytes) = request(sb, method, path, &all, body).await;
    (code, ct, bytes)
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": name, "labels": { "app": name } },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "c", "image": "nginx", "ports": [{ "containerPort": 80 }] }] },
            },
        },
    })
}

#[tokio::test]
async fn a_go_client_on_protobuf_creates_gets_lists_and_deletes_a_deployment() {
    let sb = Sandbox::new();
    let both = [("content-type", PB), ("accept", "application/vnd.kubernetes.protobuf, application/json")];
    let (code, ct, body) =
        call(&sb, Method::POST, DEPLOYS, &both, protobuf::from_json(&deployment("web")).unwrap()).await;
    assert_eq!((code, ct.as_str()), (201, PB), "{}", String::from_utf8_lossy(&body));
    let created = protobuf::to_json(&body).unwrap();
    assert_eq!(created["kind"], "Deployment");
    assert_eq!(created["spec"]["replicas"], 2);
    // Defaults were applied to what protobuf carried, as to JSON.
    assert_eq!(created["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(created["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
    let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();

    let (code, ct, body) = call(&sb, Method::GET, &format!("{DEPLOYS}/web"), &[("accept", PB)], vec![]).await;
    assert_eq!((code, ct.as_str()), (200, PB));
    let got = protobuf::to_json(&body).unwrap();
    assert_eq!(got["metadata"]["uid"], uid.as_str());
    // The same object as JSON, but for Go's zeros protobuf always carries.
    let (_, _, json_body) = call(&sb, Method::GET, &format!("{DEPLOYS}/web"), &[], vec![]).await;
    let as_json: Value = serde_json::from_slice(&json_body).unwrap();
    assert_eq!(got["metadata"], as_json["metadata"]);
    assert_eq!(
        got["spec"]["template"]["spec"]["containers"],
        as_json["spec"]["template"]["spec"]["containers"]
    );

    let (code, ct, body) = call(&sb, Method::GET, DEPLOYS, &[("accept", PB)], vec![]).await;
    assert_eq!((code, ct.as_str()), (200, PB));
    let list = protobuf::to_json(&body).unwrap();
    assert_eq!(list["kind"], "DeploymentList");
    assert_eq!(list["items"][0]["metadata"]["name"], "web");

    // An error is a Status in protobuf.
    let (code, ct, body) =
        call(&sb, Method::GET, &format!("{DEPLOYS}/nope"), &[("accept", PB)], vec![]).await;
    assert_eq!((code, ct.as_str()), (404, PB));
    let status = protobuf::to_json(&body).unwrap();
    assert_eq!((status["kind"].as_str(), status["reason"].as_str()), (Some("Status"), Some("NotFound")));
    assert_eq!(status["message"], "deployments.apps \"nope\" not found");

    // DeleteOptions in protobuf, sent as the group's version as client-go sends them: a dry run
    // with a precondition that holds leaves the Deployment in place.
    let opts = json!({ "apiVersion": "apps/v1", "kind": "DeleteOptions", "dryRun": ["All"], "preconditions": { "uid": uid } });
    let headers = [("content-type", PB), ("accept", PB)];
    let (code, _, body) =
        call(&sb, Method::DELETE, &format!("{DEPLOYS}/web"), &headers, protobuf::from_json(&opts).unwrap())
            .await;
    assert_eq!(code, 200, "{:?}", protobuf::to_json(&body));
    let (code, _, _) = call(&sb, Method::GET, &format!("{DEPLOYS}/web"), &[], vec![]).await;
    assert_eq!(code, 200, "a dry run deletes nothing");
    // A precondition that fails is refused, its Status in protobuf.
    let opts =
        json!({ "apiVersion": "apps/v1", "kind": "DeleteOptions", "preconditions": { "uid": "other" } });
    let (code, _, body) =
        call(&sb, Method::DELETE, &format!("{DEPLOYS}/web"), &headers, protobuf::from_json(&opts).unwrap())
            .await;
    assert_eq!(code, 409);
    assert_eq!(protobuf::to_json(&body).unwrap()["reason"], "Conflict");
    let (code, _, _) = call(&sb, Method::DELETE, &format!("{DEPLOYS}/web"), &headers, vec![]).await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn a_malformed_protobuf_body_is_a_400_naming_where_it_breaks() {
    let sb = Sandbox::new();
    let mut body = protobuf::from_json(&deployment("web")).unwrap();
    body.truncate(body.len() - 7);
    let (code, _, answer) = call(&sb, Method::POST, DEPLOYS, &[("content-type", PB)], body).await;
    assert_eq!(code, 400);
    let status: Value = serde_json::from_slice(&answer).unwrap();
    assert!(status["message"].as_str().unwrap().starts_with("the protobuf body is malformed: "), "{status}");
    // Nothing was stored.
    let (_, _, list) = call(&sb, Method::GET, DEPLOYS, &[], vec![]).await;
    assert_eq!(serde_json::from_slice::<Value>(&list).unwrap()["items"], json!([]));
}

#[tokio::test]
async fn a_protobuf_watch_streams_length_prefixed_events() {
    let sb = Sandbox::new();
    let req = Request::get("/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true")
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf;stream=watch, application/vnd.kubernetes.protobuf",
        )
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = sb.service().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/vnd.kubernetes.protobuf;stream=watch");
    let mut stream = resp.into_body().into_data_stream();
    let cm =
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" }, "data": { "k": "v" } });
    let (code, _, _) = call(
        &sb,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        &[("content-type", PB)],
        protobuf::from_json(&cm).unwrap(),
    )
    .await;
    assert_eq!(code, 201);
    let mut buf = Vec::new();
    while buf.len() < 4 || buf.len() < 4 + u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize {
        buf.extend_from_slice(&stream.next().await.expect("an event").unwrap());
    }
    let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
    let event = &buf[4..4 + len];
    // WatchEvent { type = 1; object = 2 (RawExtension { raw = 1 }) }, the object enveloped.
    let (ty, rest) = field(event);
    assert_eq!(ty, b"ADDED");
    let (raw_ext, _) = field(rest);
    let (object, _) = field(raw_ext);
    let added = protobuf::to_json(object).unwrap();
    assert_eq!((added["kind"].as_str(), added["data"]["k"].as_str()), (Some("ConfigMap"), Some("v")));
}

/// A length-delimited field's bytes (its number not checked) and what follows it.
fn field(b: &[u8]) -> (&[u8], &[u8]) {
    let len = usize::from(b[1]);
    assert!(b[1] < 0x80 || b.len() > 2, "short lengths only");
    if b[1] < 0x80 {
        return (&b[2..2 + len], &b[2 + len..]);
    }
    let len = usize::from(b[1] & 0x7f) | usize::from(b[2]) << 7;
    (&b[3..3 + len], &b[3 + len..])
}

#[tokio::test]
async fn a_custom_resource_is_json_but_its_metadata_may_be_protobuf() {
    let sb = Sandbox::new();
    let client = sb.client();
    install(&client, &Widget::crd()).await;
    let widgets: Api<Widget> = Api::namespaced(client, "default");
    widgets.create(&PostParams::default(), &widget("w", 1)).await.unwrap();
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    // Protobuf first, JSON after: JSON, as the custom resource handler's serializers have it.
    let (code, ct, _) = call(
        &sb,
        Method::GET,
        path,
        &[("accept", "application/vnd.kubernetes.protobuf, application/json")],
        vec![],
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    // Protobuf alone: 406.
    let (code, _, _) = call(&sb, Method::GET, path, &[("accept", PB)], vec![]).await;
    assert_eq!(code, 406);
    // Its metadata as protobuf, as the garbage collector's metadata informers ask.
    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let (code, ct, body) = call(&sb, Method::GET, path, &[("accept", accept)], vec![]).await;
    assert_eq!((code, ct.as_str()), (200, PB));
    let list = protobuf::to_json(&body).unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["name"], "w");
    // A custom resource sent as protobuf is refused, naming its kind.
    let w = json!({ "apiVersion": "example.com/v1", "kind": "Widget", "metadata": { "name": "x" } });
    let mut body = b"k8s\0".to_vec();
    let type_meta = [&[0x0a, 14][..], b"example.com/v1", &[0x12, 6], b"Widget"].concat();
    body.extend_from_slice(&[0x0a, u8::try_from(type_meta.len()).unwrap()]);
    body.extend_from_slice(&type_meta);
    let (code, _, answer) = call(&sb, Method::POST, path, &[("content-type", PB)], body).await;
    assert_eq!(code, 415, "{w}");
    assert!(String::from_utf8_lossy(&answer).contains("example.com/v1 Widget"));
}
