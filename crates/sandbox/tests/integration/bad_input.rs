//! Malformed requests straight to the service: each gets a Status naming the problem, and the
//! store is left unchanged.

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use kube_sandbox::Sandbox;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn call(
    sb: &Sandbox,
    method: &str,
    uri: &str,
    content_type: &str,
    body: impl Into<Bytes>,
) -> (u16, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(body.into()))
        .unwrap();
    let resp = sb.service().oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// method, uri, content type, body, expected code, text the message must contain
type Case = (&'static str, String, &'static str, Vec<u8>, u16, &'static str);

#[tokio::test]
async fn each_bad_request_gets_its_status() {
    // The API alone: no simulated cluster writing beside the requests this test counts.
    let sb = Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
    let objects_before = sb.store().len();
    let cases: Vec<Case> = vec![
        (
            "POST",
            CMS.into(),
            "application/json",
            b"{not json".to_vec(),
            400,
            "json parse error: invalid character",
        ),
        ("POST", CMS.into(), "application/json", b"[1,2]".to_vec(), 400, "cannot unmarshal array"),
        (
            "POST",
            "/api/v1/namespaces/default/widgets".into(),
            "application/json",
            b"{}".to_vec(),
            404,
            "could not find the requested resource",
        ),
        (
            "POST",
            CMS.into(),
            "application/json",
            json!({ "kind": "Secret", "apiVersion": "v1", "metadata": { "name": "x" } })
                .to_string()
                .into_bytes(),
            400,
            "Secret",
        ),
        (
            "POST",
            CMS.into(),
            "application/json",
            json!({ "kind": "ConfigMap", "apiVersion": "apps/v1", "metadata": { "name": "x" } })
                .to_string()
                .into_bytes(),
            400,
            "apps/v1",
        ),
        (
            "POST",
            CMS.into(),
            "application/json",
            json!({ "metadata": { "name": "x", "namespace": "other" } }).to_string().into_bytes(),
            400,
            "does not match the namespace",
        ),
        (
            "POST",
            CMS.into(),
            "application/json",
            json!({ "metadata": {} }).to_string().into_bytes(),
            422,
            "name or generateName",
        ),
        ("POST", CMS.into(), "application/json", vec![b' '; 3 * 1024 * 1024 + 1], 413, "too large"),
        ("GET", format!("{CMS}?labelSelector=a%20in%20b"), "", Vec::new(), 400, "found 'b' expected: '('"),
        ("GET", format!("{CMS}?limit=abc"), "", Vec::new(), 400, "limit"),
        ("GET", format!("{CMS}?continue=garbage&limit=1"), "", Vec::new(), 400, "continue"),
        ("GET", format!("{CMS}?resourceVersion=999999"), "", Vec::new(), 504, "Too large resource version"),
        ("PATCH", format!("{CMS}/nope"), "application/merge-patch+json", b"{}".to_vec(), 404, "not found"),
        ("PATCH", format!("{CMS}/nope"), "text/plain", b"{}".to_vec(), 415, "Unsupported Media Type"),
        (
            "PUT",
            format!("{CMS}/x"),
            "application/json",
            json!({ "metadata": { "name": "y" } }).to_string().into_bytes(),
            400,
            "does not match the name on the URL",
        ),
    ];
    for (method, uri, ct, body, code, needle) in cases {
        let (got, status) = call(&sb, method, &uri, ct, body).await;
        assert_eq!(got, code, "{method} {uri}: {status}");
        assert_eq!(status["kind"], "Status", "{method} {uri}");
        assert_eq!(status["code"], code);
        let msg = status["message"].as_str().unwrap_or("");
        assert!(msg.contains(needle), "{method} {uri}: message {msg:?} should name {needle:?}");
    }
    assert_eq!(sb.store().len(), objects_before, "nothing was written");

    // A body whose name disagrees with the URL, on an object that exists.
    let (code, _) =
        call(&sb, "POST", CMS, "application/json", json!({ "metadata": { "name": "x" } }).to_string()).await;
    assert_eq!(code, 201);
    let (code, status) = call(
        &sb,
        "PUT",
        &format!("{CMS}/x"),
        "application/json",
        json!({ "metadata": { "name": "y" } }).to_string(),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert!(status["message"].as_str().unwrap().contains("does not match the name on the URL"), "{status}");
}

#[tokio::test]
async fn a_seeded_sandbox_holds_its_objects_and_refuses_bad_seeds() {
    let seeded = Sandbox::seeded(
        kube_sandbox::SandboxConfig::default(),
        [json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a", "namespace": "default" } })],
    )
    .unwrap();
    let (code, _) = call(&seeded, "GET", &format!("{CMS}/a"), "", Vec::new()).await;
    assert_eq!(code, 200);
    let err = Sandbox::seeded(
        kube_sandbox::SandboxConfig::default(),
        [json!({ "apiVersion": "v9", "kind": "Widget", "metadata": { "name": "w" } })],
    )
    .unwrap_err();
    assert!(err.message.contains("Widget"), "{err}");
}

#[tokio::test]
async fn a_failed_json_patch_changes_nothing() {
    let sb = Sandbox::new();
    let (code, made) = call(
        &sb,
        "POST",
        CMS,
        "application/json",
        json!({ "metadata": { "name": "web" }, "data": { "a": "1" } }).to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let ops = json!([{ "op": "replace", "path": "/data/a", "value": "2" }, { "op": "remove", "path": "/data/missing" }]);
    let (code, status) =
        call(&sb, "PATCH", &format!("{CMS}/web"), "application/json-patch+json", ops.to_string()).await;
    // Upstream's generic 422, which does not say why.
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")), "{status}");
    let (_, now) = call(&sb, "GET", &format!("{CMS}/web"), "", Vec::new()).await;
    assert_eq!(now["data"]["a"], "1");
    assert_eq!(now["metadata"]["resourceVersion"], made["metadata"]["resourceVersion"]);

    let ok = json!([{ "op": "replace", "path": "/data/a", "value": "2" }]);
    let (code, patched) =
        call(&sb, "PATCH", &format!("{CMS}/web"), "application/json-patch+json", ok.to_string()).await;
    assert_eq!((code, patched["data"]["a"].as_str()), (200, Some("2")));
}

#[tokio::test]
async fn injected_429_carries_retry_after() {
    let sb = Sandbox::new();
    sb.faults().add_rule(kube_sandbox::FaultRule::new(
        Some("list"),
        None,
        1.0,
        kube_sandbox::FaultKind::TooManyRequests { retry_after_seconds: 7 },
    ));
    let req = Request::builder()
        .uri(CMS)
        .header(header::USER_AGENT, "kubectl/v1.32.4")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = sb.service().oneshot(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()[header::RETRY_AFTER], "7");
    let seen = sb.requests().all();
    assert_eq!(
        (seen[0].verb.as_str(), seen[0].user_agent.as_str(), seen[0].code),
        ("list", "kubectl/v1.32.4", 429)
    );
}

#[tokio::test]
async fn a_body_nested_without_end_is_refused_and_the_server_keeps_serving() {
    let sb = Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
    let (code, _) =
        call(&sb, "POST", CMS, "application/json", json!({ "metadata": { "name": "kept" } }).to_string())
            .await;
    assert_eq!(code, 201);
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let deep = nested(20_000);
    // YAML's parser takes time quadratic in the nesting before it refuses it: a shallower body
    // past its bound keeps the test quick.
    let deep_yaml = nested(2_000);
    let object =
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"kept"}},"x":{deep}}}"#);
    // Past Go's nesting bound the decoder refuses it in Go's words; below it, serde's own bound.
    let (code, status) = call(&sb, "POST", CMS, "application/json", object.clone()).await;
    assert_eq!(code, 400, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("json parse error: invalid character '[' exceeded max depth"),
        "{status}"
    );
    for (method, uri, content_type, body) in [
        ("PUT", format!("{CMS}/kept"), "application/json", object.clone()),
        ("PATCH", format!("{CMS}/kept"), "application/merge-patch+json", format!(r#"{{"x":{deep}}}"#)),
        (
            "PATCH",
            format!("{CMS}/kept"),
            "application/strategic-merge-patch+json",
            format!(r#"{{"x":{deep}}}"#),
        ),
        (
            "PATCH",
            format!("{CMS}/kept"),
            "application/json-patch+json",
            format!(r#"[{{"op":"add","path":"/x","value":{deep}}}]"#),
        ),
        (
            "PATCH",
            format!("{CMS}/kept?fieldManager=t"),
            "application/apply-patch+yaml",
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"kept"}},"x":{deep_yaml}}}"#
            ),
        ),
        (
            "POST",
            CMS.to_owned(),
            "application/yaml",
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: y}}\nx: {deep_yaml}\n"),
        ),
    ] {
        let (code, status) = call(&sb, method, &uri, content_type, body).await;
        assert_eq!(code, 400, "{method} {content_type}: {status}");
    }
    let (code, kept) = call(&sb, "GET", &format!("{CMS}/kept"), "", Vec::new()).await;
    assert_eq!((code, kept.get("x")), (200, None));
}
