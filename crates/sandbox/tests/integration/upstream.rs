//! Request for request against upstream: raw HTTP requests to the sandbox, with the code, headers
//! and body a v1.32 kube-apiserver gives, each test citing the upstream source it follows.

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use kube_sandbox::Sandbox;
use serde_json::{Value, json};
use tower::ServiceExt;

/// One request; the status code, the content type and the body (JSON when it parses).
async fn call(
    sb: &Sandbox,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String, Value) {
    let (code, ct, _, v) = call_with_headers(sb, method, path, headers, body).await;
    (code, ct, v)
}

/// As [`call`], with the response's `Warning` headers.
pub(crate) async fn call_with_headers(
    sb: &Sandbox,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String, Vec<String>, Value) {
    let bytes = body.map(|b| serde_json::to_vec(&b).unwrap());
    call_raw(sb, method, path, headers, bytes).await
}

/// As [`call_with_headers`], with the body as bytes (JSON no `Value` can hold: duplicate keys).
async fn call_raw(
    sb: &Sandbox,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> (u16, String, Vec<String>, Value) {
    let mut headers = headers.to_vec();
    if body.is_some() && !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
        headers.push(("content-type", "application/json"));
    }
    let (code, ct, warnings, raw) = request(sb, method, path, &headers, body.unwrap_or_default()).await;
    let v =
        serde_json::from_slice(&raw).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into()));
    (code, ct, warnings, v)
}

/// A request with these headers and bytes, in-process: the status, content type, `Warning`
/// headers and body bytes.
pub(crate) async fn request(
    sb: &Sandbox,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String, Vec<String>, Bytes) {
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = sb.service().oneshot(req.body(Full::new(Bytes::from(body))).unwrap()).await.unwrap();
    let code = resp.status().as_u16();
    let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let warnings: Vec<String> =
        resp.headers().get_all("warning").iter().map(|v| v.to_str().unwrap_or("").to_owned()).collect();
    (code, ct, warnings, resp.into_body().collect().await.unwrap().to_bytes())
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MERGE: [(&str, &str); 1] = [("content-type", "application/merge-patch+json")];
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

/// A valid Deployment `name`: one container `c`, selector and template labels `app: <name>`.
fn deployment(name: &str) -> Value {
    json!({ "metadata": { "name": name }, "spec": {
        "selector": { "matchLabels": { "app": name } },
        "template": { "metadata": { "labels": { "app": name } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } })
}

/// A POST with no headers of its own.
async fn post(sb: &Sandbox, path: &str, body: Value) -> (u16, String, Value) {
    call(sb, Method::POST, path, &[], Some(body)).await
}

async fn create(sb: &Sandbox, path: &str, obj: Value) -> Value {
    let (code, _, v) = post(sb, path, obj).await;
    assert_eq!(code, 201, "{v}");
    v
}

/// A JSON merge patch of `path`.
async fn merge_patch(sb: &Sandbox, path: &str, body: Value) -> (u16, String, Value) {
    call(sb, Method::PATCH, path, &MERGE, Some(body)).await
}

/// A Status' causes, as `(field, message)`.
fn causes(v: &Value) -> Vec<(&str, &str)> {
    v["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| (c["field"].as_str().unwrap_or(""), c["message"].as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

/// A Status' causes' fields.
fn cause_fields(v: &Value) -> Vec<&str> {
    causes(v).into_iter().map(|(f, _)| f).collect()
}

fn status_of(v: &Value) -> (&str, &str, &str) {
    (
        v["status"].as_str().unwrap_or(""),
        v["reason"].as_str().unwrap_or(""),
        v["message"].as_str().unwrap_or(""),
    )
}

/// `registry/generic/registry/store.go` (`finalizeDelete`) and `endpoints/handlers/delete.go`.
#[tokio::test]
async fn delete_answers_a_status_or_the_lingering_object() {
    let sb = Sandbox::new();
    // Removed at once: a Success Status naming the *resource* in details.kind, with the uid.
    let cm = create(&sb, CMS, json!({ "metadata": { "name": "gone" } })).await;
    let (code, ct, v) = call(&sb, Method::DELETE, &format!("{CMS}/gone"), &[], None).await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    assert_eq!(
        v,
        json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": { "name": "gone", "kind": "configmaps", "uid": cm["metadata"]["uid"] } })
    );
    // A grouped resource carries its group.
    create(&sb, DEPLOYS, deployment("web")).await;
    let (_, _, v) = call(&sb, Method::DELETE, &format!("{DEPLOYS}/web"), &[], None).await;
    assert_eq!(
        (v["details"]["group"].as_str(), v["details"]["kind"].as_str()),
        (Some("apps"), Some("deployments"))
    );
    // ServiceAccounts' registry returns the deleted object (`ReturnDeletedObject`).
    let sas = "/api/v1/namespaces/default/serviceaccounts";
    create(&sb, sas, json!({ "metadata": { "name": "robot" } })).await;
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{sas}/robot"), &[], None).await;
    assert_eq!((code, v["kind"].as_str()), (200, Some("ServiceAccount")));
    // A finalizer keeps it: the object, marked; 202 only when orphanDependents=false was asked.
    create(&sb, CMS, json!({ "metadata": { "name": "held", "finalizers": ["example.com/hold"] } })).await;
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{CMS}/held"), &[], None).await;
    assert_eq!(code, 200);
    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");
    create(&sb, CMS, json!({ "metadata": { "name": "held2", "finalizers": ["example.com/hold"] } })).await;
    let body = json!({ "kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": false });
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{CMS}/held2"), &[], Some(body)).await;
    assert_eq!((code, v["kind"].as_str()), (202, Some("ConfigMap")));
    // Orphan propagation: upstream's garbage collector finishes later, so the object comes back
    // with the orphan finalizer.
    create(&sb, CMS, json!({ "metadata": { "name": "orphan" } })).await;
    let body = json!({ "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan" });
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{CMS}/orphan"), &[], Some(body)).await;
    assert_eq!(code, 200);
    assert_eq!(v["metadata"]["finalizers"], json!(["orphan"]), "{v}");
    // Missing: 404 with the resource in details.kind.
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{CMS}/gone"), &[], None).await;
    assert_eq!(code, 404);
    assert_eq!(status_of(&v), ("Failure", "NotFound", "configmaps \"gone\" not found"));
    // `StatusDetails` leaves the core group out (`omitempty`).
    assert_eq!(v["details"], json!({ "name": "gone", "kind": "configmaps" }));
}

/// `registry/generic/registry/store.go`, `Delete`: a kind's default propagation, the marks the
/// store writes before it removes an object, and a dry run answering what the delete would.
#[tokio::test]
async fn deletes_answer_what_upstreams_store_answers() {
    let sb = Sandbox::new();
    let pod_spec = json!({ "restartPolicy": "Never", "containers": [{ "name": "c", "image": "busybox" }] });
    // batch/v1 Jobs orphan their pods unless told otherwise: the Job comes back with the orphan
    // finalizer, marked for deletion, its generation moved on.
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let job = create(
        &sb,
        jobs,
        json!({ "metadata": { "name": "once" }, "spec": { "template": { "spec": pod_spec } } }),
    )
    .await;
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{jobs}/once"), &[], None).await;
    assert_eq!((code, v["kind"].as_str()), (200, Some("Job")), "{v}");
    assert_eq!(v["metadata"]["finalizers"], json!(["orphan"]), "{v}");
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 0, "{v}");
    assert_eq!(v["metadata"]["generation"], job["metadata"]["generation"].as_i64().unwrap() + 1, "{v}");
    // An object another finalizer keeps is answered with the orphan finalizer beside it.
    create(&sb, CMS, json!({ "metadata": { "name": "kept", "finalizers": ["example.com/hold"] } })).await;
    let body = json!({ "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan" });
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{CMS}/kept"), &[], Some(body)).await;
    assert_eq!(code, 200);
    assert_eq!(v["metadata"]["finalizers"], json!(["example.com/hold", "orphan"]), "{v}");
    // PodTemplates' registry returns the deleted object; under dry-run it is answered the same
    // and stays.
    let templates = "/api/v1/namespaces/default/podtemplates";
    create(&sb, templates, json!({ "metadata": { "name": "t" }, "template": { "spec": pod_spec } })).await;
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{templates}/t?dryRun=All"), &[], None).await;
    assert_eq!((code, v["kind"].as_str()), (200, Some("PodTemplate")), "{v}");
    let (code, _, _) = call(&sb, Method::GET, &format!("{templates}/t"), &[], None).await;
    assert_eq!(code, 200);
    // A pod on no node goes at once, marked first: deleted now, with no grace period.
    let pods = "/api/v1/namespaces/default/pods";
    create(&sb, pods, json!({ "metadata": { "name": "p" }, "spec": { "schedulerName": "nobody", "containers": [{ "name": "c", "image": "busybox" }] } }))
        .await;
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{pods}/p"), &[], None).await;
    assert_eq!((code, v["kind"].as_str()), (200, Some("Pod")), "{v}");
    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");
    assert_eq!(v["metadata"]["deletionGracePeriodSeconds"], 0, "{v}");
    let (code, _, _) = call(&sb, Method::GET, &format!("{pods}/p"), &[], None).await;
    assert_eq!(code, 404);
}

/// `util/notfoundhandler/not_found_handler.go`: what no route serves.
#[tokio::test]
async fn unknown_groups_versions_and_resources_are_404() {
    let sb = Sandbox::new();
    for path in [
        "/api/v1/foos",
        "/apis/foo.example.com/v1/bars",
        "/apis/apps/v2/deployments",
        "/apis/apps/v1/namespaces/default/foos/x",
    ] {
        let (code, ct, v) = call(&sb, Method::GET, path, &[], None).await;
        assert_eq!((code, ct.as_str()), (404, "application/json"), "{path}");
        assert_eq!(
            status_of(&v),
            ("Failure", "NotFound", "the server could not find the requested resource"),
            "{path}"
        );
        assert!(v.get("details").is_none(), "{path}: {v}");
    }
}

/// `endpoints/handlers/negotiation`: unreadable bodies are 415, unsatisfiable `Accept` is 406.
#[tokio::test]
async fn content_negotiation_refuses_what_it_cannot_read_or_write() {
    let sb = Sandbox::new();
    let (code, _, v) = call(
        &sb,
        Method::POST,
        CMS,
        &[("content-type", "text/plain")],
        Some(json!({ "metadata": { "name": "a" } })),
    )
    .await;
    assert_eq!(code, 415);
    assert_eq!(
        status_of(&v),
        (
            "Failure",
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        )
    );
    let (code, _, v) = call(&sb, Method::GET, CMS, &[("accept", "text/html")], None).await;
    assert_eq!(code, 406);
    assert_eq!(
        status_of(&v),
        (
            "Failure",
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        )
    );
    // What kubectl sends is served: Tables first, JSON as the fallback; wildcards too.
    for accept in [
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "*/*",
        "application/vnd.kubernetes.protobuf, */*",
    ] {
        assert_eq!(call(&sb, Method::GET, CMS, &[("accept", accept)], None).await.0, 200, "{accept}");
    }
    // A patch with a type no route consumes: go-restful's bare 415.
    create(&sb, CMS, json!({ "metadata": { "name": "p" } })).await;
    let (code, _, v) = call(
        &sb,
        Method::PATCH,
        &format!("{CMS}/p"),
        &[("content-type", "application/json")],
        Some(json!({})),
    )
    .await;
    assert_eq!((code, status_of(&v).2), (415, "415: Unsupported Media Type"), "{v}");
}

/// `endpoints/handlers/rest.go` (`checkName`), `registry/generic/registry/store.go` (`Update`:
/// the uid precondition, `ObjectResourceVersion`), `endpoints/handlers/update.go`.
#[tokio::test]
async fn update_refuses_a_wrong_uid_a_missing_name_and_a_non_numeric_version() {
    let sb = Sandbox::new();
    let cm = create(&sb, CMS, json!({ "metadata": { "name": "a" } })).await;
    let uid = cm["metadata"]["uid"].as_str().unwrap();
    let path = format!("{CMS}/a");
    let put = |body: Value| call(&sb, Method::PUT, &path, &[], Some(body));
    let (code, _, v) = put(json!({ "metadata": { "name": "a", "uid": "not-the-uid" } })).await;
    assert_eq!(code, 409);
    assert_eq!(
        status_of(&v),
        ("Failure", "Conflict", format!("Operation cannot be fulfilled on configmaps \"a\": Precondition failed: UID in precondition: not-the-uid, UID in object meta: {uid}").as_str())
    );
    let (code, _, v) = put(json!({ "metadata": {} })).await;
    assert_eq!(code, 400);
    assert_eq!(
        status_of(&v),
        (
            "Failure",
            "BadRequest",
            "the name of the object (a based on URL) was undeterminable: name must be provided"
        )
    );
    let (code, _, v) = put(json!({ "metadata": { "name": "b" } })).await;
    assert_eq!(
        (code, status_of(&v).2),
        (400, "the name of the object (b) does not match the name on the URL (a)")
    );
    let (code, _, v) = put(json!({ "metadata": { "name": "a", "resourceVersion": "abc" } })).await;
    assert_eq!(code, 500);
    assert_eq!(v["message"], "strconv.ParseUint: parsing \"abc\": invalid syntax");
    assert!(v.get("reason").is_none(), "an unclassified error has no reason: {v}");
    // The right uid and no version: an unconditional update.
    let (code, _, _) = put(json!({ "metadata": { "name": "a", "uid": uid }, "data": { "k": "v" } })).await;
    assert_eq!(code, 200);
}

/// `AllowCreateOnUpdate` in each kind's strategy: Leases yes, ConfigMaps no.
#[tokio::test]
async fn put_creates_only_the_kinds_whose_strategy_allows_it() {
    let sb = Sandbox::new();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": "l1" }, "spec": { "holderIdentity": "me" } });
    let (code, _, v) = call(&sb, Method::PUT, &format!("{leases}/l1"), &[], Some(lease.clone())).await;
    assert_eq!(code, 201, "{v}");
    assert!(v["metadata"]["uid"].is_string() && v["metadata"]["resourceVersion"].is_string());
    let mut again = lease.clone();
    again["metadata"]["resourceVersion"] = v["metadata"]["resourceVersion"].clone();
    let (code, _, _) = call(&sb, Method::PUT, &format!("{leases}/l1"), &[], Some(again)).await;
    assert_eq!(code, 200, "the second PUT updates");
    let (code, _, v) =
        call(&sb, Method::PUT, &format!("{CMS}/nope"), &[], Some(json!({ "metadata": { "name": "nope" } })))
            .await;
    assert_eq!(code, 404);
    assert_eq!(status_of(&v), ("Failure", "NotFound", "configmaps \"nope\" not found"));
}

/// `storage/cacher/watch_cache.go`: a watch from a version older than the retained history is
/// accepted (200) and answered with one ERROR event carrying a 410 Expired Status — what
/// client-go's reflector and kube's watcher relist on.
#[tokio::test]
async fn a_watch_from_a_compacted_version_gets_one_expired_error_event() {
    let sb = Sandbox::with_config(kube_sandbox::SandboxConfig {
        store: kube_sandbox::StoreConfig { history_limit: 2, ..Default::default() },
        ..Default::default()
    });
    for i in 0..5 {
        create(&sb, CMS, json!({ "metadata": { "name": format!("c{i}") } })).await;
    }
    let (code, ct, v) =
        call(&sb, Method::GET, &format!("{CMS}?watch=true&resourceVersion=1&timeoutSeconds=1"), &[], None)
            .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    assert_eq!(v["type"], "ERROR", "{v}");
    let (status, reason, message) = status_of(&v["object"]);
    assert_eq!((status, reason, v["object"]["code"].as_u64()), ("Failure", "Expired", Some(410)));
    assert!(message.starts_with("too old resource version: 1 ("), "{message}");
}

/// `storage/cacher/watch_cache.go` and `watch_cache_interval.go`: each resource's watch cache keeps
/// its own history, sized to hold `eventFreshDuration` (75 s) between a lower bound of 100 changes
/// and an upper bound of 100 × 1024; a watch resuming inside it gets what it missed.
#[tokio::test]
async fn watch_history_is_kept_per_resource_for_a_window_of_time() {
    let sb = Sandbox::with_config(kube_sandbox::SandboxConfig {
        store: kube_sandbox::StoreConfig {
            history_window: std::time::Duration::from_millis(200),
            ..Default::default()
        },
        ..Default::default()
    });
    const SECRETS: &str = "/api/v1/namespaces/default/secrets";
    let rv = |v: &Value| v["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let first_event = |v: Value| -> Value {
        let raw = v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
        serde_json::from_str(raw.lines().next().unwrap_or("null")).unwrap()
    };
    let s0 = rv(&create(&sb, SECRETS, json!({ "metadata": { "name": "s0" } })).await);
    create(&sb, SECRETS, json!({ "metadata": { "name": "s1" } })).await;
    let c0 = rv(&create(&sb, CMS, json!({ "metadata": { "name": "c0" } })).await);
    for i in 1..=150 {
        create(&sb, CMS, json!({ "metadata": { "name": format!("c{i}") } })).await;
    }
    let watch = |path: &str, from: &str| format!("{path}?watch=true&resourceVersion={from}&timeoutSeconds=1");
    // Inside the window: the missed changes, however many other writes came since.
    let (code, _, v) = call(&sb, Method::GET, &watch(CMS, &c0), &[], None).await;
    assert_eq!((code, first_event(v)["object"]["metadata"]["name"].clone()), (200, json!("c1")));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    create(&sb, CMS, json!({ "metadata": { "name": "late" } })).await;
    // Out of the window, with more than 100 changes since: expired.
    let (code, _, v) = call(&sb, Method::GET, &watch(CMS, &c0), &[], None).await;
    let event = first_event(v);
    assert_eq!(
        (code, event["type"].as_str(), event["object"]["code"].as_u64()),
        (200, Some("ERROR"), Some(410))
    );
    // Secrets saw two changes: under the lower bound, kept however old, and not pushed out by
    // the ConfigMaps' writes.
    let (code, _, v) = call(&sb, Method::GET, &watch(SECRETS, &s0), &[], None).await;
    let event = first_event(v);
    assert_eq!(
        (code, event["type"].as_str(), event["object"]["metadata"]["name"].as_str()),
        (200, Some("ADDED"), Some("s1"))
    );
}

/// `apiserver/pkg/endpoints/handlers/create.go` (`managerOrUserAgent`) and
/// `apimachinery/pkg/util/managedfields`: every write records who set which field.
#[tokio::test]
async fn managed_fields_record_each_writer() {
    let sb = Sandbox::new();
    let kubectl = [("user-agent", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc")];
    let entries = |v: &Value| -> Vec<(String, String, String, Value)> {
        v["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                assert_eq!(
                    (e["fieldsType"].as_str(), e["time"].is_string()),
                    (Some("FieldsV1"), true),
                    "{e}"
                );
                let sub = e.get("subresource").and_then(Value::as_str).unwrap_or("").to_owned();
                (
                    e["manager"].as_str().unwrap().to_owned(),
                    e["operation"].as_str().unwrap().to_owned(),
                    sub,
                    e["fieldsV1"].clone(),
                )
            })
            .collect()
    };
    let entry = |m: &str, op: &str, sub: &str, f: Value| (m.to_owned(), op.to_owned(), sub.to_owned(), f);
    // A create without fieldManager: the manager is the User-Agent up to its first '/'.
    let (code, _, cm) = call(
        &sb,
        Method::POST,
        CMS,
        &kubectl,
        Some(json!({ "metadata": { "name": "mf", "labels": { "app": "web" } }, "data": { "a": "1", "b": "2" } })),
    )
    .await;
    assert_eq!(code, 201);
    let created_fields = json!({ "f:data": { ".": {}, "f:a": {}, "f:b": {} }, "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } });
    assert_eq!(entries(&cm), [entry("kubectl", "Update", "", created_fields.clone())]);
    // A patch by another manager: what it changed is its own, and leaves the first.
    let patch_as = |manager: &'static str, body: Value| {
        let sb = sb.clone();
        async move { merge_patch(&sb, &format!("{CMS}/mf?fieldManager={manager}"), body).await }
    };
    let (code, _, cm) = patch_as(
        "kubectl-edit",
        json!({ "data": { "a": "9" }, "metadata": { "annotations": { "note": "x" } } }),
    )
    .await;
    assert_eq!(code, 200, "{cm}");
    assert_eq!(
        entries(&cm),
        [
            entry(
                "kubectl",
                "Update",
                "",
                json!({ "f:data": { ".": {}, "f:b": {} }, "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } })
            ),
            entry(
                "kubectl-edit",
                "Update",
                "",
                json!({ "f:data": { "f:a": {} }, "f:metadata": { "f:annotations": { ".": {}, "f:note": {} } } })
            ),
        ]
    );
    // A write that changes nothing records nothing and takes no new version.
    let (_, _, same) = patch_as("someone", json!({ "data": { "a": "9" } })).await;
    assert_eq!(
        (entries(&same).len(), &same["metadata"]["resourceVersion"]),
        (2, &cm["metadata"]["resourceVersion"])
    );
    // Apply: a field another manager set, to another value, is a conflict naming it; forced, the
    // field moves to the applier.
    let apply = |force: bool| {
        let sb = sb.clone();
        async move {
            call(
                &sb,
                Method::PATCH,
                &format!("{CMS}/mf?fieldManager=applier&force={force}"),
                &[("content-type", "application/apply-patch+yaml")],
                Some(json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "mf" }, "data": { "a": "5" } })),
            )
            .await
        }
    };
    let (code, _, v) = apply(false).await;
    assert_eq!((code, v["reason"].as_str()), (409, Some("Conflict")), "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], ".data.a", "{v}");
    assert!(v["details"]["causes"][0]["message"].as_str().unwrap().contains("kubectl-edit"), "{v}");
    let (code, _, cm) = apply(true).await;
    assert_eq!(code, 200, "{cm}");
    assert_eq!(
        entries(&cm)[1..],
        [
            entry(
                "kubectl-edit",
                "Update",
                "",
                json!({ "f:metadata": { "f:annotations": { ".": {}, "f:note": {} } } })
            ),
            entry("applier", "Apply", "", json!({ "f:data": { "f:a": {} } })),
        ]
    );
    // A status write is recorded for the status subresource, apart from the spec's writers.
    let (code, _, d) = post(&sb, &format!("{DEPLOYS}?fieldManager=creator"), deployment("web")).await;
    assert_eq!(code, 201, "{d}");
    assert!(
        entries(&d)[0].3["f:spec"]["f:template"]["f:spec"]["f:containers"]
            .get("k:{\"name\":\"c\"}")
            .is_some(),
        "{d}"
    );
    let (code, _, d) = merge_patch(
        &sb,
        &format!("{DEPLOYS}/web/status?fieldManager=kube-controller-manager"),
        json!({ "status": { "replicas": 1 } }),
    )
    .await;
    assert_eq!(code, 200, "{d}");
    let status = entries(&d).pop().unwrap();
    assert_eq!(
        status,
        entry("kube-controller-manager", "Update", "status", json!({ "f:status": { "f:replicas": {} } }))
    );
}

/// `apimachinery/pkg/api/validation/objectmeta.go` (`ValidateObjectMeta`: labels, annotations,
/// `ValidateFinalizers`) and `pkg/apis/core/validation` (`validateKubeFinalizerName`): the
/// metadata every kind shares, on create and on update.
#[tokio::test]
async fn metadata_names_are_validated_as_upstream_does() {
    let sb = Sandbox::new();
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "name": "m", "labels": { "tier": "-front" }, "finalizers": ["cleanup", "example.com/ok"] } })).await;
    assert_eq!((code, v["reason"].as_str()), (422, Some("Invalid")), "{v}");
    let got = causes(&v);
    assert_eq!(got.len(), 2, "{got:?}");
    // `ValidateLabels` names the labels as a whole, for a bad value as for a bad key.
    assert_eq!(got[0].0, "metadata.labels");
    assert!(
        got[0].1.starts_with("Invalid value: \"-front\": a valid label must be an empty string"),
        "{got:?}"
    );
    assert_eq!(
        got[1],
        (
            "metadata.finalizers[0]",
            "Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified"
        )
    );
    // The standard finalizers need no prefix, but orphan and foregroundDeletion exclude each other.
    let (code, _, v) = post(
        &sb,
        CMS,
        json!({ "metadata": { "name": "m", "finalizers": ["orphan", "foregroundDeletion"] } }),
    )
    .await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        causes(&v),
        [(
            "metadata.finalizers",
            "Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set"
        )]
    );
    // On update too: a bad label key added by a patch.
    create(&sb, CMS, json!({ "metadata": { "name": "u" } })).await;
    let (code, _, v) =
        merge_patch(&sb, &format!("{CMS}/u"), json!({ "metadata": { "labels": { "a/b/c": "x" } } })).await;
    assert_eq!(code, 422, "{v}");
    let got = causes(&v);
    assert_eq!(got[0].0, "metadata.labels");
    assert!(got[0].1.starts_with("Invalid value: \"a/b/c\": a qualified name must consist of"), "{got:?}");
}

/// `storage/cacher/cacher.go` and `storage/errors.go` (`NewTooLargeResourceVersionError`): a
/// list at a version the server has not reached is a 504 Timeout to retry in a second.
#[tokio::test]
async fn a_list_at_a_future_version_is_a_timeout_to_retry() {
    let sb = Sandbox::new();
    let (code, _, v) = call(&sb, Method::GET, &format!("{CMS}?resourceVersion=999999"), &[], None).await;
    assert_eq!(code, 504);
    assert_eq!(v["reason"], "Timeout");
    assert!(status_of(&v).2.starts_with("Timeout: Too large resource version: 999999, current: "), "{v}");
    assert_eq!(
        v["details"],
        json!({ "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }], "retryAfterSeconds": 1 })
    );
}

/// `apimachinery/pkg/apis/meta/internalversion/validation` (`ValidateListOptions`) and
/// `storage/etcd3/store.go` (`GetList`: continue, remainingItemCount).
#[tokio::test]
async fn list_options_are_checked_as_upstream_does() {
    let sb = Sandbox::new();
    for i in 0..3 {
        create(&sb, CMS, json!({ "metadata": { "name": format!("c{i}"), "labels": { "a": "b" } } })).await;
    }
    let (_, _, first) = call(&sb, Method::GET, &format!("{CMS}?limit=1"), &[], None).await;
    assert_eq!(first["metadata"]["remainingItemCount"], 2);
    let cont = first["metadata"]["continue"].as_str().unwrap().to_owned();
    // A continue token carries its version; another is refused, "0" is not another.
    let (code, _, v) =
        call(&sb, Method::GET, &format!("{CMS}?limit=1&continue={cont}&resourceVersion=5"), &[], None).await;
    assert_eq!(
        (code, status_of(&v)),
        (400, ("Failure", "BadRequest", "specifying resource version is not allowed when using continue"))
    );
    let (code, _, _) =
        call(&sb, Method::GET, &format!("{CMS}?limit=1&continue={cont}&resourceVersion=0"), &[], None).await;
    assert_eq!(code, 200);
    // With a selector the remaining count is not given.
    let (_, _, v) = call(&sb, Method::GET, &format!("{CMS}?limit=1&labelSelector=a%3Db"), &[], None).await;
    assert!(
        v["metadata"]["continue"].is_string() && v["metadata"].get("remainingItemCount").is_none(),
        "{v}"
    );
    // resourceVersionMatch rules: a 422 on ListOptions, one cause per rule broken.
    for (q, message, reasons) in [
        (
            "resourceVersionMatch=Exact",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            vec!["FieldValueForbidden"],
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            vec!["FieldValueForbidden"],
        ),
        (
            "resourceVersionMatch=Bogus",
            "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: \"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"]",
            vec!["FieldValueForbidden", "FieldValueNotSupported"],
        ),
    ] {
        let (code, _, v) = call(&sb, Method::GET, &format!("{CMS}?{q}"), &[], None).await;
        assert_eq!((code, status_of(&v)), (422, ("Failure", "Invalid", message)), "{q}");
        assert_eq!(
            (v["details"]["kind"].as_str(), v["details"]["group"].as_str()),
            (Some("ListOptions"), Some("meta.k8s.io"))
        );
        let got: Vec<&str> = v["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["reason"].as_str().unwrap())
            .collect();
        assert_eq!(got, reasons, "{q}");
    }
    let (code, _, v) = call(
        &sb,
        Method::GET,
        &format!("{CMS}?resourceVersion=2&resourceVersionMatch=NotOlderThan"),
        &[],
        None,
    )
    .await;
    assert_eq!(code, 200, "{v}");
}

/// `pkg/apis/core/validation/validation.go`: `ValidateConfigMap`, `ValidateConfigMapUpdate`.
#[tokio::test]
async fn configmaps_are_validated_as_upstream_does() {
    let sb = Sandbox::new();
    let (code, _, v) = post(
        &sb,
        CMS,
        json!({ "metadata": { "name": "bad" },
        "data": { "a b": "1", "ok": "2", "dup": "3" }, "binaryData": { "dup": "AA==" } }),
    )
    .await;
    assert_eq!(code, 422, "{v}");
    let causes: Vec<(&str, &str, &str)> = v["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (c["field"].as_str().unwrap(), c["reason"].as_str().unwrap(), c["message"].as_str().unwrap())
        })
        .collect();
    assert_eq!(causes[0].0, "data[a b]");
    assert_eq!(causes[0].1, "FieldValueInvalid");
    assert!(
        causes[0].2.starts_with(
            "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters"
        ),
        "{causes:?}"
    );
    assert_eq!(
        causes[1],
        ("data[dup]", "FieldValueInvalid", "Invalid value: \"dup\": duplicate of key present in binaryData")
    );
    // A value that is not a string does not decode: 400.
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "name": "n" }, "data": { "k": 1 } })).await;
    assert_eq!(code, 400, "{v}");
    // Over 1 MiB in total.
    let big = "x".repeat(600 * 1024);
    let (code, _, v) =
        post(&sb, CMS, json!({ "metadata": { "name": "big" }, "data": { "a": big, "b": big } })).await;
    assert_eq!(
        (code, status_of(&v).2),
        (422, "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes")
    );
    // immutable: the data and the flag stay.
    create(&sb, CMS, json!({ "metadata": { "name": "frozen" }, "data": { "k": "v" }, "immutable": true }))
        .await;
    let (code, _, v) = call(
        &sb,
        Method::PUT,
        &format!("{CMS}/frozen"),
        &[],
        Some(json!({ "metadata": { "name": "frozen" }, "data": { "k": "w" } })),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status_of(&v).2,
        "ConfigMap \"frozen\" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when `immutable` is set]"
    );
    let (code, _, _) = call(&sb, Method::PUT, &format!("{CMS}/frozen"), &[], Some(json!({ "metadata": { "name": "frozen", "labels": { "x": "y" } }, "data": { "k": "v" }, "immutable": true }))).await;
    assert_eq!(code, 200, "metadata may still change");
}

/// `ValidateSecret`, `ValidateSecretUpdate`, and the v1 conversion of `stringData`.
#[tokio::test]
async fn secrets_fold_string_data_and_are_validated() {
    let sb = Sandbox::new();
    let secrets = "/api/v1/namespaces/default/secrets";
    let created = create(&sb, secrets, json!({ "metadata": { "name": "s" }, "data": { "a": "b2xk" }, "stringData": { "a": "new", "b": "x" } })).await;
    assert_eq!(created["data"], json!({ "a": "bmV3", "b": "eA==" }), "stringData wins and is encoded");
    assert!(created.get("stringData").is_none());
    assert_eq!(created["type"], "Opaque");
    let (_, _, got) = call(&sb, Method::GET, &format!("{secrets}/s"), &[], None).await;
    assert!(got.get("stringData").is_none() && got["data"]["b"] == "eA==", "{got}");
    let (code, _, v) = call(&sb, Method::PUT, &format!("{secrets}/s"), &[], Some(json!({ "metadata": { "name": "s" }, "type": "kubernetes.io/basic-auth", "data": { "a": "bmV3", "username": "dQ==" } }))).await;
    assert_eq!(
        (code, status_of(&v).2),
        (
            422,
            "Secret \"s\" is invalid: type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"
        )
    );
    let (code, _, v) =
        post(&sb, secrets, json!({ "metadata": { "name": "t" }, "data": { "k": "not base64!" } })).await;
    assert_eq!(code, 400, "{v}");
    // What a well-known type requires of its data, in Go's words for a docker config.
    let (code, _, v) = post(&sb, secrets, json!({ "metadata": { "name": "d" }, "type": "kubernetes.io/dockerconfigjson", "data": { ".dockerconfigjson": "WzFd" } })).await;
    assert_eq!(
        (code, status_of(&v).2),
        (
            422,
            "Secret \"d\" is invalid: data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    );
}

/// `pkg/registry/core/namespace/strategy.go`: the name label is set on create and restored on
/// every update.
#[tokio::test]
async fn a_namespace_always_carries_its_name_label() {
    let sb = Sandbox::new();
    let nss = "/api/v1/namespaces";
    let ns = create(
        &sb,
        nss,
        json!({ "metadata": { "name": "team-a", "labels": { "kubernetes.io/metadata.name": "other" } } }),
    )
    .await;
    assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
    let (code, _, v) = call(
        &sb,
        Method::PUT,
        &format!("{nss}/team-a"),
        &[],
        Some(json!({ "metadata": { "name": "team-a", "labels": { "x": "y" } } })),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["metadata"]["labels"], json!({ "kubernetes.io/metadata.name": "team-a", "x": "y" }));
    let patch = json!({ "metadata": { "labels": { "kubernetes.io/metadata.name": null } } });
    let (_, _, v) = merge_patch(&sb, &format!("{nss}/team-a"), patch).await;
    assert_eq!(v["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a", "{v}");
    let (_, _, v) = call(&sb, Method::GET, &format!("{nss}/default"), &[], None).await;
    assert_eq!(v["metadata"]["labels"]["kubernetes.io/metadata.name"], "default", "the built-in ones too");
}

/// `ValidateLeaseSpec` and `MicroTime` (`apimachinery/pkg/apis/meta/v1/micro_time.go`).
#[tokio::test]
async fn leases_check_ranges_and_micro_times() {
    let sb = Sandbox::new();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str, spec: Value| json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": name }, "spec": spec });
    let l = create(
        &sb,
        leases,
        lease("a", json!({ "holderIdentity": "x", "renewTime": "2026-01-01T10:00:00.123456+02:00" })),
    )
    .await;
    assert_eq!(l["spec"]["renewTime"], "2026-01-01T08:00:00.123456Z", "stored and returned in UTC");
    let (code, _, v) = post(&sb, leases, lease("b", json!({ "renewTime": "2026-01-01T10:00:00Z" }))).await;
    assert_eq!(code, 400, "{v}");
    assert!(status_of(&v).2.starts_with("Lease in version \"v1\" cannot be handled as a Lease: "), "{v}");
    let (code, _, v) =
        post(&sb, leases, lease("c", json!({ "leaseDurationSeconds": 0, "leaseTransitions": -1 }))).await;
    assert_eq!(code, 422);
    assert_eq!(
        status_of(&v).2,
        "Lease.coordination.k8s.io \"c\" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]"
    );
}

/// `apiserver/pkg/storage/names/generate.go`: a long `generateName` is cut to 58 characters, so
/// the generated name is 63.
#[tokio::test]
async fn a_long_generate_name_is_cut_to_fit() {
    let sb = Sandbox::new();
    let prefix = format!("{}-", "p".repeat(69));
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "generateName": prefix } })).await;
    assert_eq!(code, 201, "{v}");
    let name = v["metadata"]["name"].as_str().unwrap();
    assert_eq!(name.len(), 63);
    assert!(name.starts_with(&prefix[..58]));
}

/// `endpoints/handlers/patch.go` (`applyJSPatch`): a JSON patch that does not apply is a 422
/// with the generic message and no cause (`NewGenericServerResponse` with `isUnexpectedResponse`
/// false); a body that is not a patch is 400.
#[tokio::test]
async fn json_patch_failures_are_upstreams_generic_422() {
    let sb = Sandbox::new();
    create(&sb, CMS, json!({ "metadata": { "name": "p", "labels": { "a": "b" } } })).await;
    for ops in [
        json!([{ "op": "test", "path": "/metadata/labels/a", "value": "c" }]),
        json!([{ "op": "remove", "path": "/metadata/labels/zz" }]),
        json!([{ "op": "add", "path": "/spec/x/y", "value": 1 }]),
        json!([{ "op": "frob", "path": "/a" }]),
    ] {
        let (code, _, v) = call(
            &sb,
            Method::PATCH,
            &format!("{CMS}/p"),
            &[("content-type", "application/json-patch+json")],
            Some(ops.clone()),
        )
        .await;
        assert_eq!(
            (code, status_of(&v)),
            (422, ("Failure", "Invalid", "the server rejected our request due to an error in our request")),
            "{ops}"
        );
        // Not an unexpected response: no cause, no word of why.
        assert_eq!(v["details"], json!({}), "{v}");
    }
    let (code, _, _) = call(
        &sb,
        Method::PATCH,
        &format!("{CMS}/p"),
        &[("content-type", "application/json-patch+json")],
        Some(json!({ "not": "a list" })),
    )
    .await;
    assert_eq!(code, 400);
    let (_, _, v) = call(&sb, Method::GET, &format!("{CMS}/p"), &[], None).await;
    assert_eq!(v["metadata"]["labels"], json!({ "a": "b" }), "nothing applied");
}

/// `pkg/apis/apps/validation` (`ValidateDeploymentStrategy`) and `pkg/apis/core/validation`
/// (`ValidateContainers`), and `IsDNS1123Label`'s words.
#[tokio::test]
async fn deployments_check_container_names_and_strategy() {
    let sb = Sandbox::new();
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = |containers: Value, strategy: Value| {
        json!({ "metadata": { "name": "web" }, "spec": {
            "selector": { "matchLabels": { "app": "web" } }, "strategy": strategy,
            "template": { "metadata": { "labels": { "app": "web" } }, "spec": { "containers": containers } } } })
    };
    let (code, _, v) = post(&sb, deploys, d(
        json!([{ "name": "Web", "image": "nginx" }, { "name": "side", "image": "a" }, { "name": "side", "image": "b" }]),
        json!({ "type": "Recreate", "rollingUpdate": { "maxSurge": 1 } }),
    )).await;
    assert_eq!(code, 422, "{v}");
    let causes = causes(&v);
    assert!(causes.contains(&(
        "spec.template.spec.containers[0].name",
        "Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )), "{causes:?}");
    assert!(
        causes.contains(&("spec.template.spec.containers[2].name", "Duplicate value: \"side\"")),
        "{causes:?}"
    );
    assert!(
        causes.contains(&(
            "spec.strategy.rollingUpdate",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'"
        )),
        "{causes:?}"
    );
    let reasons: Vec<&str> =
        v["details"]["causes"].as_array().unwrap().iter().map(|c| c["reason"].as_str().unwrap()).collect();
    assert!(
        reasons.contains(&"FieldValueDuplicate") && reasons.contains(&"FieldValueForbidden"),
        "{reasons:?}"
    );
    let (code, _, _) =
        post(&sb, deploys, d(json!([{ "name": "web", "image": "nginx" }]), json!({ "type": "Recreate" })))
            .await;
    assert_eq!(code, 201);
    // An object name that is not a subdomain, with upstream's example and regex.
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "name": "a..b" } })).await;
    assert_eq!(code, 422);
    assert!(status_of(&v).2.ends_with("(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"), "{v}");
}

/// `fieldValidation` on create and update: Strict refuses, Warn (the default) drops with a
/// `Warning` per field, Ignore drops silently, anything else is a 422 on the options kind.
#[tokio::test]
async fn field_validation_strict_warn_and_ignore() {
    let sb = Sandbox::new();
    let body =
        |name: &str| json!({ "metadata": { "name": name, "bogus": 1 }, "data": { "k": "v" }, "extra": true });
    let (code, _, _, v) =
        call_with_headers(&sb, Method::POST, &format!("{CMS}?fieldValidation=Strict"), &[], Some(body("s")))
            .await;
    assert_eq!(code, 400);
    assert_eq!(
        status_of(&v).2,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"extra\", unknown field \"metadata.bogus\""
    );
    let (code, _, warnings, v) = call_with_headers(&sb, Method::POST, CMS, &[], Some(body("w"))).await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        [r#"299 - "unknown field \"extra\"""#, r#"299 - "unknown field \"metadata.bogus\"""#]
    );
    assert!(v.get("extra").is_none() && v["metadata"].get("bogus").is_none() && v["data"]["k"] == "v", "{v}");
    let (code, _, warnings, _) =
        call_with_headers(&sb, Method::POST, &format!("{CMS}?fieldValidation=Ignore"), &[], Some(body("i")))
            .await;
    assert_eq!((code, warnings.len()), (201, 0));
    let (code, _, _, v) =
        call_with_headers(&sb, Method::PUT, &format!("{CMS}/i?fieldValidation=Strict"), &[], Some(body("i")))
            .await;
    assert_eq!(code, 400, "{v}");
    let (code, _, _, v) =
        call_with_headers(&sb, Method::POST, &format!("{CMS}?fieldValidation=Bogus"), &[], Some(body("b")))
            .await;
    assert_eq!(code, 422);
    assert_eq!(
        status_of(&v).2,
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
}

/// `endpoints/handlers/patch.go` (`jsonPatcher`, `strategicPatchObject`) and the strict decoder:
/// a patch's duplicate fields and the patched object's unknown fields, by directive; a create's
/// duplicate fields.
#[tokio::test]
async fn field_validation_of_patches_and_duplicate_fields() {
    let sb = Sandbox::new();
    create(&sb, CMS, json!({ "metadata": { "name": "p" }, "data": { "a": "1" } })).await;
    // Strict: 422 Invalid on `patch`, no kind and no name, the patched object as the value.
    let (code, _, v) = merge_patch(
        &sb,
        &format!("{CMS}/p?fieldValidation=Strict"),
        json!({ "data": { "a": "2" }, "spec": { "x": 1 } }),
    )
    .await;
    assert_eq!((code, v["reason"].as_str()), (422, Some("Invalid")), "{v}");
    assert_eq!(
        v["details"],
        json!({ "causes": [{ "reason": "FieldValueInvalid", "field": "patch",
        "message": v["details"]["causes"][0]["message"] }] })
    );
    let message = v["details"]["causes"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("Invalid value: \"{"), "{message}");
    assert!(message.ends_with("\": strict decoding error: unknown field \"spec\""), "{message}");
    assert!(status_of(&v).2.starts_with(" \"\" is invalid: patch: Invalid value: "), "{v}");
    // Warn (the default): the unknown field is dropped, the duplicate's last value kept, a
    // warning for each.
    let (code, _, warnings, v) = call_raw(
        &sb,
        Method::PATCH,
        &format!("{CMS}/p"),
        &MERGE,
        Some(br#"{"data":{"a":"3","a":"4"},"spec":{"x":1}}"#.to_vec()),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(warnings, [r#"299 - "duplicate field \"data.a\"""#, r#"299 - "unknown field \"spec\"""#]);
    assert_eq!((v["data"]["a"].as_str(), v.get("spec")), (Some("4"), None));
    // A JSON patch names its own duplicates as such.
    let (code, _, warnings, _) = call_raw(
        &sb,
        Method::PATCH,
        &format!("{CMS}/p"),
        &[("content-type", "application/json-patch+json")],
        Some(br#"[{"op":"replace","path":"/data/a","value":"5","value":"6"}]"#.to_vec()),
    )
    .await;
    assert_eq!(
        (code, warnings),
        (200, vec![r#"299 - "json patch duplicate field \"[0].value\"""#.to_owned()])
    );
    // A create's duplicate field: refused with Strict as the decoder words it.
    let (code, _, _, v) = call_raw(
        &sb,
        Method::POST,
        &format!("{CMS}?fieldValidation=Strict"),
        &[],
        Some(br#"{"metadata":{"name":"d","name":"d"}}"#.to_vec()),
    )
    .await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(
        status_of(&v).2,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\""
    );
}

/// `pkg/apis/core/validation/events.go`: core/v1 keeps the legacy rules; events.k8s.io/v1 adds
/// the strict ones, and both name fields as the internal type does.
#[tokio::test]
async fn events_are_validated_by_the_api_they_come_through() {
    let sb = Sandbox::new();
    let core = "/api/v1/namespaces/default/events";
    let v1 = "/apis/events.k8s.io/v1/namespaces/default/events";
    // core/v1 without eventTime: only the namespaces must agree.
    let (code, _, v) = post(
        &sb,
        core,
        json!({ "metadata": { "name": "a" },
        "involvedObject": { "kind": "ConfigMap", "name": "web", "namespace": "other" }, "reason": "X" }),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status_of(&v).2,
        "Event \"a\" is invalid: involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
    );
    create(&sb, core, json!({ "metadata": { "name": "b" }, "involvedObject": { "kind": "ConfigMap", "name": "web", "namespace": "default" } })).await;
    // events.k8s.io/v1: eventTime, reporting fields, action, reason and type are required.
    let (code, _, v) = post(
        &sb,
        v1,
        json!({ "metadata": { "name": "c" },
        "regarding": { "kind": "ConfigMap", "name": "web", "namespace": "default" }, "note": "hi" }),
    )
    .await;
    assert_eq!(code, 422);
    let fields = cause_fields(&v);
    assert_eq!(
        fields,
        ["eventTime", "type"],
        "without eventTime: the legacy namespace rule (met), then the strict ones: {v}"
    );
    let (code, _, v) = post(&sb, v1, json!({ "metadata": { "name": "d" }, "eventTime": "2026-01-01T00:00:00.000000Z",
        "type": "Normal", "regarding": { "kind": "ConfigMap", "name": "web", "namespace": "default" }, "deprecatedCount": 3 })).await;
    assert_eq!(code, 422);
    let fields = cause_fields(&v);
    // An empty reporting controller is also not a qualified name: upstream says so twice more.
    assert_eq!(
        fields,
        [
            "reportingController",
            "reportingController",
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "count"
        ],
        "{v}"
    );
    create(&sb, v1, json!({ "metadata": { "name": "e" }, "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal",
        "regarding": { "kind": "ConfigMap", "name": "web", "namespace": "default" }, "reason": "Created", "action": "Create",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "note": "made" })).await;

    // `ValidateEventUpdate`: through events.k8s.io/v1 the series may grow, the rest may not
    // change; errors name the internal fields (`message` for `note`).
    let patch = |body: Value| {
        let sb = sb.clone();
        async move { merge_patch(&sb, &format!("{v1}/e"), body).await }
    };
    let (code, _, v) =
        patch(json!({ "series": { "count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z" } })).await;
    assert_eq!(code, 200, "{v}");
    let (code, _, v) = patch(json!({ "series": { "count": 1, "lastObservedTime": null } })).await;
    let fields = cause_fields(&v);
    assert_eq!((code, fields), (422, vec!["series.count", "series.lastObservedTime"]), "{v}");
    let (code, _, v) = patch(json!({ "note": "changed", "reason": "Other" })).await;
    assert_eq!(code, 422, "{v}");
    let causes = causes(&v);
    assert_eq!(
        causes,
        [
            ("reason", "Invalid value: \"Other\": field is immutable"),
            ("message", "Invalid value: \"changed\": field is immutable")
        ]
    );
    // Through core/v1 only the legacy rules apply, on update too.
    let (code, _, v) = merge_patch(
        &sb,
        &format!("{core}/b"),
        json!({ "involvedObject": { "namespace": "other" }, "message": "changed is fine" }),
    )
    .await;
    assert_eq!(
        (code, v["details"]["causes"][0]["field"].as_str()),
        (422, Some("involvedObject.namespace")),
        "{v}"
    );
    let (code, _, v) = merge_patch(&sb, &format!("{core}/b"), json!({ "message": "changed is fine" })).await;
    assert_eq!(code, 200, "{v}");
}

/// `pkg/apis/apps/validation` (`ValidateDeploymentStatus`) through `/status`: counts are
/// non-negative and none exceeds what it is part of.
#[tokio::test]
async fn a_deployments_status_is_validated_on_the_status_subresource() {
    let sb = Sandbox::new();
    create(&sb, DEPLOYS, deployment("s")).await;
    let status = |body: Value| {
        let sb = sb.clone();
        async move { merge_patch(&sb, &format!("{DEPLOYS}/s/status"), body).await }
    };
    let (code, _, v) = status(json!({ "status": { "replicas": 2, "readyReplicas": 3, "availableReplicas": 1, "observedGeneration": -1 } })).await;
    assert_eq!(code, 422, "{v}");
    let causes = causes(&v);
    assert_eq!(
        causes,
        [
            ("status.observedGeneration", "Invalid value: -1: must be greater than or equal to 0"),
            ("status.readyReplicas", "Invalid value: 3: cannot be greater than status.replicas"),
        ]
    );
    let (code, _, v) = status(json!({ "status": { "replicas": 2, "readyReplicas": 1, "availableReplicas": 2, "observedGeneration": 1 } })).await;
    assert_eq!(
        (code, v["details"]["causes"][0]["field"].as_str()),
        (422, Some("status.availableReplicas")),
        "{v}"
    );
    let (code, _, v) =
        status(json!({ "status": { "replicas": 2, "readyReplicas": 2, "availableReplicas": 1 } })).await;
    assert_eq!(code, 200, "{v}");
}

/// `apimachinery/pkg/util/strategicpatch/patch.go` (`mergeSlice`, `normalizeElementOrder`,
/// `mergeSortedSlice`): the order of a merged list — the patch's items in its order, the
/// server's others placed among them by where the server had them; a new item goes first.
#[tokio::test]
async fn strategic_merge_orders_merged_lists_as_upstream() {
    let sb = Sandbox::new();
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let containers = |names: &[&str]| -> Value {
        names.iter().map(|n| json!({ "name": n, "image": "nginx" })).collect::<Vec<_>>().into()
    };
    create(&sb, deploys, json!({ "metadata": { "name": "o", "finalizers": ["example.com/a"] }, "spec": {
        "selector": { "matchLabels": { "app": "o" } },
        "template": { "metadata": { "labels": { "app": "o" } }, "spec": { "containers": containers(&["a", "b", "c"]) } } } }))
    .await;
    let smp = [("content-type", "application/strategic-merge-patch+json")];
    let (code, _, v) = call(
        &sb,
        Method::PATCH,
        &format!("{deploys}/o"),
        &smp,
        Some(json!({ "metadata": { "finalizers": ["example.com/b"] },
            "spec": { "template": { "spec": { "containers": [{ "name": "x", "image": "busybox" }, { "name": "b", "image": "nginx:2" }] } } } })),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let names: Vec<&str> = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "a", "b", "c"]);
    assert_eq!(v["metadata"]["finalizers"], json!(["example.com/b", "example.com/a"]));
    // A Service's ports merge by `port` (a container's by `containerPort`).
    let svcs = "/api/v1/namespaces/default/services";
    create(
        &sb,
        svcs,
        json!({ "metadata": { "name": "s" }, "spec": { "selector": { "app": "o" },
        "ports": [{ "name": "http", "port": 80 }, { "name": "metrics", "port": 9090 }] } }),
    )
    .await;
    let (code, _, v) = call(
        &sb,
        Method::PATCH,
        &format!("{svcs}/s"),
        &smp,
        Some(json!({ "spec": { "ports": [{ "port": 80, "targetPort": 8080 }] } })),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let ports: Vec<(i64, i64)> = v["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["port"].as_i64().unwrap(), p["targetPort"].as_i64().unwrap()))
        .collect();
    assert_eq!(ports, [(80, 8080), (9090, 9090)]);
    // Cleared so the test's sandbox can delete it.
    merge_patch(&sb, &format!("{deploys}/o"), json!({ "metadata": { "finalizers": null } })).await;
}

/// `pkg/registry/apps/deployment/strategy.go` (`PrepareForUpdate`): the generation counts spec and
/// annotation changes, not label or status changes.
#[tokio::test]
async fn a_deployments_generation_counts_spec_and_annotation_changes() {
    let sb = Sandbox::new();
    create(&sb, DEPLOYS, deployment("g")).await;
    let generation = |patch: Value| {
        let sb = sb.clone();
        async move {
            let (code, _, v) = merge_patch(&sb, &format!("{DEPLOYS}/g"), patch).await;
            assert_eq!(code, 200, "{v}");
            v["metadata"]["generation"].as_i64().unwrap()
        }
    };
    assert_eq!(
        generation(json!({ "metadata": { "labels": { "tier": "web" } } })).await,
        1,
        "a label is not counted"
    );
    assert_eq!(
        generation(json!({ "metadata": { "annotations": { "note": "x" } } })).await,
        2,
        "an annotation is"
    );
    assert_eq!(generation(json!({ "spec": { "replicas": 3 } })).await, 3, "the spec is");
}

/// The namespace lifecycle admission: nothing new in a namespace being deleted.
#[tokio::test]
async fn creating_in_a_terminating_namespace_is_forbidden() {
    let sb = Sandbox::new();
    create(&sb, "/api/v1/namespaces", json!({ "metadata": { "name": "going" } })).await;
    let (code, _, v) = call(&sb, Method::DELETE, "/api/v1/namespaces/going", &[], None).await;
    assert_eq!((code, v["status"]["phase"].as_str()), (200, Some("Terminating")), "{v}");
    // Validation comes first: an invalid object is 422 wherever it goes.
    let deploys = "/apis/apps/v1/namespaces/going/deployments";
    let (code, _, _) = post(&sb, deploys, json!({ "metadata": { "name": "web" } })).await;
    assert_eq!(code, 422);
    let (code, _, v) = post(&sb, deploys, deployment("web")).await;
    assert_eq!(code, 403);
    assert_eq!(
        status_of(&v),
        (
            "Failure",
            "Forbidden",
            "deployments.apps \"web\" is forbidden: unable to create new content in namespace going because it is being terminated"
        )
    );
    assert_eq!(
        v["details"],
        json!({ "name": "web", "group": "apps", "kind": "deployments", "causes": [
            { "reason": "NamespaceTerminating", "message": "namespace going is being terminated", "field": "metadata.namespace" }] })
    );
}

/// Strategic merge patch directives as `kubectl apply` sends them
/// (`apimachinery/pkg/util/strategicpatch/patch.go`): `$retainKeys` clears the fields it does not
/// name (so switching a Deployment to Recreate drops rollingUpdate and passes validation), and
/// `$setElementOrder` orders a merged list.
#[tokio::test]
async fn strategic_merge_directives_retain_keys_and_order() {
    let sb = Sandbox::new();
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    create(
        &sb,
        deploys,
        json!({ "metadata": { "name": "web" }, "spec": {
        "selector": { "matchLabels": { "app": "web" } },
        "template": { "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [
            { "name": "a", "image": "x" }, { "name": "b", "image": "y" }] } } } }),
    )
    .await;
    let smp = [("content-type", "application/strategic-merge-patch+json")];
    let patch = json!({ "spec": {
        "strategy": { "$retainKeys": ["type"], "type": "Recreate" },
        "template": { "spec": {
            "$setElementOrder/containers": [{ "name": "c" }, { "name": "b" }, { "name": "a" }],
            "containers": [{ "name": "c", "image": "z" }] } } } });
    let (code, _, v) = call(&sb, Method::PATCH, &format!("{deploys}/web"), &smp, Some(patch)).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["spec"]["strategy"], json!({ "type": "Recreate" }));
    let names: Vec<&str> = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "b", "a"]);
    assert!(
        v["spec"]["template"]["spec"].get("$setElementOrder/containers").is_none(),
        "directives are not stored"
    );
}

/// `apimachinery/pkg/api/validation/objectmeta.go` (`ValidateObjectMetaUpdate`): an object being
/// deleted takes no new finalizers (removing them is how deletion finishes).
#[tokio::test]
async fn an_object_being_deleted_takes_no_new_finalizers() {
    let sb = Sandbox::new();
    create(&sb, CMS, json!({ "metadata": { "name": "held", "finalizers": ["example.com/a"] } })).await;
    let (code, _, _) = call(&sb, Method::DELETE, &format!("{CMS}/held"), &[], None).await;
    assert_eq!(code, 200);
    let add = json!({ "metadata": { "finalizers": ["example.com/a", "example.com/b"] } });
    let (code, _, v) = merge_patch(&sb, &format!("{CMS}/held"), add).await;
    assert_eq!(code, 422);
    assert_eq!(
        status_of(&v).2,
        "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/b\"}"
    );
    let done = json!({ "metadata": { "finalizers": null } });
    let (code, _, _) = merge_patch(&sb, &format!("{CMS}/held"), done).await;
    assert_eq!(code, 200, "removing the last finalizer finishes the deletion");
    assert_eq!(call(&sb, Method::GET, &format!("{CMS}/held"), &[], None).await.0, 404);
}

/// A request with a raw body of `content_type` (YAML, an apply configuration).
async fn send(sb: &Sandbox, method: Method, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    let (code, _, _, v) =
        call_raw(sb, method, path, &[("content-type", content_type)], Some(body.as_bytes().to_vec())).await;
    (code, v)
}

const APPLY: &str = "application/apply-patch+yaml";

/// `apimachinery/pkg/runtime/serializer/json/json.go` (a YAML body is `yaml.YAMLToJSON` then
/// JSON), `endpoints/handlers/create.go` (`transformDecodeError`) and
/// `endpoints/handlers/patch.go` (`applyPatcher`: `error decoding YAML: …`).
#[tokio::test]
async fn yaml_bodies_are_decoded_for_create_update_and_apply() {
    let sb = Sandbox::new();
    let yaml =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fromyaml\n  labels: {on: yes}\ndata:\n  k: v\n";
    let ok = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fromyaml\ndata:\n  k: v\n";
    let (code, v) = send(&sb, Method::POST, CMS, "application/yaml", ok).await;
    assert_eq!((code, v["data"]["k"].as_str()), (201, Some("v")), "{v}");
    // YAML 1.1 as go-yaml v2 reads it: `yes` is a boolean — a label value must be a string.
    let (code, v) = send(&sb, Method::PUT, &format!("{CMS}/fromyaml"), "application/yaml", yaml).await;
    assert_eq!(code, 400, "{v}");
    let put = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fromyaml\ndata:\n  k: w\n";
    let (code, v) = send(&sb, Method::PUT, &format!("{CMS}/fromyaml"), "application/yaml", put).await;
    assert_eq!((code, v["data"]["k"].as_str()), (200, Some("w")), "{v}");
    // go-yaml's words, recorded from a real kube-apiserver, with the body's start in hex.
    let (code, v) = send(&sb, Method::POST, CMS, "application/yaml", "metadata: [name: obj").await;
    let (_, reason, message) = status_of(&v);
    assert_eq!((code, reason), (400, "BadRequest"));
    assert_eq!(
        message,
        "the object provided is unrecognized (must be of type ConfigMap): yaml: line 1: did not find expected ',' or ']' (6d657461646174613a205b6e616d653a206f626a)"
    );
    let applied = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\ndata:\n  k: v\n";
    let (code, v) = send(&sb, Method::PATCH, &format!("{CMS}/e?fieldManager=m"), APPLY, applied).await;
    assert_eq!((code, v["data"]["k"].as_str()), (201, Some("v")), "{v}");
    let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n";
    let (code, v) = send(&sb, Method::PATCH, &format!("{CMS}/d?fieldManager=m"), APPLY, bad).await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(
        status_of(&v).2,
        "error decoding YAML: error converting YAML to JSON: yaml: line 3: did not find expected node content",
        "{v}"
    );
}

/// `apimachinery/pkg/apis/meta/v1/validation/validation.go`: `ValidatePatchOptions`,
/// `ValidateCreateOptions`, `ValidateFieldManager` — a 422 on the options kind, before the body.
#[tokio::test]
async fn write_options_are_validated_as_upstream_does() {
    let sb = Sandbox::new();
    create(&sb, CMS, json!({ "metadata": { "name": "a" } })).await;
    let long = "x".repeat(129);
    let (code, _, v) =
        merge_patch(&sb, &format!("{CMS}/a?fieldManager={long}"), json!({ "data": { "k": "v" } })).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(v["details"]["kind"], "PatchOptions");
    assert_eq!(v["details"]["group"], "meta.k8s.io");
    assert_eq!(v["details"].get("name"), None);
    assert_eq!(
        status_of(&v).2,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    let (code, _, v) = call(
        &sb,
        Method::POST,
        &format!("{CMS}?fieldManager={long}"),
        &[],
        Some(json!({ "metadata": { "name": "b" } })),
    )
    .await;
    assert_eq!((code, v["details"]["kind"].as_str()), (422, Some("CreateOptions")), "{v}");
    // An apply needs its own manager, said on PatchOptions, forced or not.
    for query in ["", "?force=true"] {
        let (code, v) = send(
            &sb,
            Method::PATCH,
            &format!("{CMS}/a{query}"),
            APPLY,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}",
        )
        .await;
        assert_eq!(code, 422, "{v}");
        assert_eq!(
            status_of(&v).2,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
    }
    let (code, _, v) = merge_patch(&sb, &format!("{CMS}/a?force=false"), json!({})).await;
    assert_eq!(causes(&v), [("force", "Forbidden: may not be specified for non-apply patch")], "{code} {v}");
}

/// `managedfields/internal/structuredmerge.go` (`Apply`: the typed patch object),
/// `managedfields/internal/conflict.go` (`NewConflictError`) and the patch handler's name check.
#[tokio::test]
async fn apply_checks_its_configuration_and_words_conflicts_as_upstream() {
    let sb = Sandbox::new();
    let apply = |name: &str, manager: &str, body: Value| {
        let path = format!("{CMS}/{name}?fieldManager={manager}");
        let body = body.to_string();
        let sb = &sb;
        async move { send(sb, Method::PATCH, &path, APPLY, &body).await }
    };
    let (code, v) = apply("b", "m", json!({ "apiVersion": "v1", "metadata": { "name": "b" } })).await;
    assert_eq!((code, status_of(&v).1), (500, ""), "{v}");
    assert_eq!(
        status_of(&v).2,
        "failed to create typed patch object (/b; /v1, Kind=): no corresponding type for /v1, Kind="
    );
    let (code, v) =
        apply("c", "m", json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "other" } }))
            .await;
    assert_eq!(
        (code, status_of(&v).2),
        (400, "the name of the object (other) does not match the name on the URL (c)")
    );
    let cm = |data: Value, labels: Value| json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a", "labels": labels }, "data": data });
    let (code, _) = apply("a", "mgr-a", cm(json!({ "k": "a", "x": "1" }), json!({ "l": "1" }))).await;
    assert_eq!(code, 201);
    let (code, v) = apply("a", "mgr-b", cm(json!({ "k": "b" }), json!({}))).await;
    assert_eq!(code, 409, "{v}");
    assert_eq!(status_of(&v).2, "Apply failed with 1 conflict: conflict with \"mgr-a\": .data.k");
    assert_eq!(
        v["details"],
        json!({ "causes": [{ "reason": "FieldManagerConflict", "message": "conflict with \"mgr-a\"", "field": ".data.k" }] })
    );
    // Dropping the only label leaves no empty `labels` behind (the typed object's `omitempty`).
    let (code, v) = apply(
        "a",
        "mgr-a",
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" }, "data": { "k": "a" } }),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!((v["metadata"].get("labels"), &v["data"]), (None, &json!({ "k": "a" })));
}

/// structured-merge-diff's comparison (`typed/compare.go`) as the Update manager records it: a
/// map or keyed list item an update adds as a whole is a member (`"."`), a struct every object
/// has is not (`managedfields/internal/structuredmerge.go`, `Update`).
#[tokio::test]
async fn update_managers_own_the_maps_and_items_they_add() {
    let sb = Sandbox::new();
    let (_, _, v) = call(
        &sb,
        Method::POST,
        &format!("{CMS}?fieldManager=creator"),
        &[],
        Some(json!({ "metadata": { "name": "b", "labels": { "a": "1" } }, "data": { "k": "v" } })),
    )
    .await;
    assert_eq!(
        v["metadata"]["managedFields"][0]["fieldsV1"],
        json!({ "f:data": { ".": {}, "f:k": {} }, "f:metadata": { "f:labels": { ".": {}, "f:a": {} } } })
    );
    // Another key in the map: the creator keeps the map itself.
    let (_, _, v) =
        merge_patch(&sb, &format!("{CMS}/b?fieldManager=editor"), json!({ "data": { "k2": "v" } })).await;
    let fields: Vec<&Value> =
        v["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| &e["fieldsV1"]).collect();
    assert_eq!(fields[1], &json!({ "f:data": { "f:k2": {} } }));
    let (_, _, d) =
        call(&sb, Method::POST, &format!("{DEPLOYS}?fieldManager=creator"), &[], Some(deployment("web")))
            .await;
    let f = &d["metadata"]["managedFields"][0]["fieldsV1"];
    assert_eq!(f["f:spec"].get("."), None, "{f}");
    assert_eq!(
        f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["."],
        json!({}),
        "{f}"
    );
}

/// `endpoints/handlers/patch.go`: a patched object its type cannot hold is a 422 on `patch`
/// with no kind; a strategic merge patch item without its merge key is `mergepatch.ErrNoMergeKey`,
/// which nothing classifies (500).
#[tokio::test]
async fn patches_that_break_the_type_or_miss_a_merge_key() {
    let sb = Sandbox::new();
    create(&sb, CMS, json!({ "metadata": { "name": "a" }, "data": { "y": "2" } })).await;
    let (code, _, v) = merge_patch(&sb, &format!("{CMS}/a"), json!({ "data": { "k": 5 } })).await;
    assert_eq!((code, status_of(&v).1, cause_fields(&v)), (422, "Invalid", vec!["patch"]), "{v}");
    assert_eq!(v["details"].get("kind"), None);
    assert!(status_of(&v).2.starts_with(" \"\" is invalid: patch: Invalid value: \"{"), "{v}");
    create(&sb, DEPLOYS, deployment("web")).await;
    let smp = [("content-type", "application/strategic-merge-patch+json")];
    let patch = json!({ "spec": { "template": { "spec": { "containers": [{ "image": "no-name" }] } } } });
    let (code, _, v) = call(&sb, Method::PATCH, &format!("{DEPLOYS}/web"), &smp, Some(patch)).await;
    assert_eq!((code, status_of(&v).1), (500, ""), "{v}");
    assert_eq!(status_of(&v).2, "map: map[image:no-name] does not contain declared merge key: name");
}

/// etcd3's `GetList` at an older revision (`storage/etcd3/store.go`), a limit of zero or less
/// being no limit, and the versioner's `ParseResourceVersion` error (unclassified: 500).
#[tokio::test]
async fn lists_at_an_older_version_and_odd_limits_and_versions() {
    let sb = Sandbox::new();
    let sel = "labelSelector=grp%3Drv";
    create(&sb, CMS, json!({ "metadata": { "name": "a", "labels": { "grp": "rv" } }, "data": { "v": "1" } }))
        .await;
    let (_, _, first) = call(&sb, Method::GET, &format!("{CMS}?{sel}"), &[], None).await;
    let rv1 = first["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    create(&sb, CMS, json!({ "metadata": { "name": "b", "labels": { "grp": "rv" } } })).await;
    merge_patch(&sb, &format!("{CMS}/a"), json!({ "data": { "v": "2" } })).await;
    let (code, _, v) = call(
        &sb,
        Method::GET,
        &format!("{CMS}?{sel}&resourceVersion={rv1}&resourceVersionMatch=Exact"),
        &[],
        None,
    )
    .await;
    assert_eq!((code, v["metadata"]["resourceVersion"].as_str()), (200, Some(rv1.as_str())), "{v}");
    let items = v["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0]["metadata"]["name"].as_str(), items[0]["data"]["v"].as_str()),
        (Some("a"), Some("1"))
    );
    let (code, _, v) = call(&sb, Method::GET, &format!("{CMS}?{sel}&limit=-1"), &[], None).await;
    assert_eq!((code, v["items"].as_array().map(Vec::len)), (200, Some(2)), "{v}");
    let (code, _, v) = call(&sb, Method::GET, &format!("{CMS}?resourceVersion=abc"), &[], None).await;
    assert_eq!((code, status_of(&v).1), (500, ""));
    assert_eq!(
        status_of(&v).2,
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
}

const TABLE: (&str, &str) = ("accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");

/// `pkg/printers/internalversion/printers.go` (columns), `endpoints/handlers/response.go`
/// (`doTransformObject`, `asTable`'s `includeObject`, `asPartialObjectMetadata[List]`) and the
/// endpoint's `AllowsMediaTypeTransform`.
#[tokio::test]
async fn tables_and_metadata_only_answers() {
    let sb = Sandbox::new();
    create(&sb, CMS, json!({ "metadata": { "name": "a" }, "data": { "k1": "1", "k2": "2" } })).await;
    let (code, _, t) = call(&sb, Method::GET, CMS, &[TABLE], None).await;
    assert_eq!(code, 200);
    let cols: Vec<(&str, &str)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(cols, [("Name", "string"), ("Data", "string"), ("Age", "string")]);
    assert_eq!(t["rows"][0]["cells"][1], 2);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let (_, _, t) = call(&sb, Method::GET, &format!("{CMS}?includeObject=Object"), &[TABLE], None).await;
    assert_eq!(t["rows"][0]["object"]["kind"], "ConfigMap");
    let (_, _, t) = call(&sb, Method::GET, &format!("{CMS}?includeObject=None"), &[TABLE], None).await;
    assert_eq!(t["rows"][0]["object"], Value::Null);
    create(&sb, DEPLOYS, deployment("web")).await;
    let (_, _, t) = call(&sb, Method::GET, DEPLOYS, &[TABLE], None).await;
    let cols: Vec<(&str, u64)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        cols,
        [
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
    assert_eq!(
        t["rows"][0]["cells"].as_array().unwrap()[5..],
        [json!("c"), json!("nginx"), json!("app=web")]
    );
    let pom_list =
        ("accept", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json");
    let (code, _, v) = call(&sb, Method::GET, CMS, &[pom_list], None).await;
    assert_eq!(
        (code, v["kind"].as_str(), v["apiVersion"].as_str()),
        (200, Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(
        (v["items"][0]["kind"].as_str(), v["items"][0].get("data")),
        (Some("PartialObjectMetadata"), None)
    );
    let pom = ("accept", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json");
    let (code, _, v) = call(&sb, Method::GET, &format!("{CMS}/a"), &[pom], None).await;
    assert_eq!((code, v["kind"].as_str(), v.get("data")), (200, Some("PartialObjectMetadata"), None));
    let (code, _, v) = call(&sb, Method::GET, CMS, &[pom], None).await;
    assert_eq!((code, status_of(&v).1), (406, "NotAcceptable"), "{v}");
    let bogus = ("accept", "application/json;as=Bogus;v=v1;g=meta.k8s.io");
    let (code, _, v) = call(&sb, Method::GET, &format!("{CMS}/a"), &[bogus], None).await;
    assert_eq!((code, status_of(&v).1), (406, "NotAcceptable"), "{v}");
}

/// `pkg/registry/core/namespace/strategy.go`: `NamespaceToSelectableFields` (`status.phase`).
#[tokio::test]
async fn namespaces_select_by_phase() {
    let sb = Sandbox::new();
    let (code, _, v) = call(
        &sb,
        Method::GET,
        "/api/v1/namespaces?fieldSelector=status.phase%3DActive,metadata.name%3Ddefault",
        &[],
        None,
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let names: Vec<&str> =
        v["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default"]);
}

/// `ReturnDeletedObject: true` in `pkg/registry/core/service/storage/storage.go` and
/// `core/namespace/storage/storage.go`: a DELETE answers with the object, not a Status.
#[tokio::test]
async fn services_answer_a_delete_with_the_deleted_service() {
    let sb = Sandbox::new();
    let svcs = "/api/v1/namespaces/default/services";
    let svc = json!({ "metadata": { "name": "metrics" }, "spec": { "ports": [{ "port": 8080 }] } });
    create(&sb, svcs, svc).await;
    let (code, _, v) = call(&sb, Method::DELETE, &format!("{svcs}/metrics"), &[], None).await;
    assert_eq!(
        (code, v["kind"].as_str(), v["metadata"]["name"].as_str()),
        (200, Some("Service"), Some("metrics"))
    );
}

/// apimachinery's `ValidateObjectMetaAccessor` (`api/validation/objectmeta.go`): a generateName
/// is checked as a prefix with the kind's name rule (its trailing `-` masked) and named first,
/// then the generated name; a valid name does not spare an invalid generateName.
#[tokio::test]
async fn an_invalid_generate_name_is_named_before_the_generated_name() {
    let sb = Sandbox::new();
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "generateName": "Bad-" } })).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(cause_fields(&v), ["metadata.generateName", "metadata.name"]);
    assert!(causes(&v)[0].1.starts_with("Invalid value: \"Bad-\": a lowercase RFC 1123 subdomain"), "{v}");
    let generated = v["details"]["name"].as_str().unwrap();
    assert!(generated.starts_with("Bad-") && generated.len() == 9, "{v}");
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "name": "ok", "generateName": "Bad-" } })).await;
    assert_eq!((code, cause_fields(&v)), (422, vec!["metadata.generateName"]));
    // `gen-` is a valid prefix: the dash is masked before the check.
    let (code, _, v) = post(&sb, CMS, json!({ "metadata": { "generateName": "gen-" } })).await;
    assert_eq!(code, 201, "{v}");
    // Namespaces take DNS-1123 labels: a dotted prefix is refused.
    let (code, _, v) =
        post(&sb, "/api/v1/namespaces", json!({ "metadata": { "generateName": "a.b-" } })).await;
    assert_eq!((code, cause_fields(&v)[0]), (422, "metadata.generateName"), "{v}");
}

/// `pkg/registry/apps/deployment/storage/storage.go`: the scale REST answers a missing
/// Deployment with NotFound for `deployments/scale` (`ScaleREST.Get`, and
/// `scaleUpdatedObjectInfo` on update and patch); `/status` passes the store's on.
#[tokio::test]
async fn a_missing_deployment_through_scale_is_not_found_as_the_subresource() {
    let sb = Sandbox::new();
    let scale = format!("{DEPLOYS}/missing/scale");
    let (code, _, v) = call(&sb, Method::GET, &scale, &[], None).await;
    assert_eq!(code, 404);
    assert_eq!(status_of(&v), ("Failure", "NotFound", "deployments/scale.apps \"missing\" not found"));
    assert_eq!(v["details"], json!({ "name": "missing", "group": "apps", "kind": "deployments/scale" }));
    let body = json!({ "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": { "name": "missing" }, "spec": { "replicas": 2 } });
    let (code, _, v) = call(&sb, Method::PUT, &scale, &[], Some(body)).await;
    assert_eq!((code, v["details"]["kind"].as_str()), (404, Some("deployments/scale")), "{v}");
    let (code, _, v) = merge_patch(&sb, &scale, json!({ "spec": { "replicas": 2 } })).await;
    assert_eq!((code, v["details"]["kind"].as_str()), (404, Some("deployments/scale")), "{v}");
    let (code, _, v) = call(&sb, Method::GET, &format!("{DEPLOYS}/missing/status"), &[], None).await;
    assert_eq!((code, v["details"]["kind"].as_str()), (404, Some("deployments")), "{v}");
}

/// `pkg/apis/apps/validation/validation.go`: `ValidateRollingUpdateDeployment` (non-negative
/// integers or percentages, not both 0, `maxUnavailable` at most 100%, the value printed as Go's
/// `%#v` of an `intstr.IntOrString`) and the end of `ValidateDeploymentSpec`
/// (`revisionHistoryLimit`, `minReadySeconds`, `progressDeadlineSeconds` > `minReadySeconds`).
#[tokio::test]
async fn deployments_refuse_what_validate_deployment_spec_refuses() {
    let sb = Sandbox::new();
    let with = |name: &str, spec: Value| {
        let mut d = deployment(name);
        for (k, v) in spec.as_object().unwrap() {
            d["spec"][k] = v.clone();
        }
        d
    };
    let rolling = |ru: Value| json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": ru } });
    let cases = [
        (
            with("a", rolling(json!({ "maxSurge": 0, "maxUnavailable": 0 }))),
            "spec.strategy.rollingUpdate.maxUnavailable",
            "Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
        ),
        (
            with("b", rolling(json!({ "maxSurge": "0%", "maxUnavailable": 0 }))),
            "spec.strategy.rollingUpdate.maxUnavailable",
            "Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
        ),
        (
            with("c", rolling(json!({ "maxUnavailable": "150%" }))),
            "spec.strategy.rollingUpdate.maxUnavailable",
            "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
        ),
        (
            with("d", rolling(json!({ "maxSurge": -1 }))),
            "spec.strategy.rollingUpdate.maxSurge",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            with("e", rolling(json!({ "maxSurge": "x%" }))),
            "spec.strategy.rollingUpdate.maxSurge",
            "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"x%\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
        (
            with("f", json!({ "minReadySeconds": 10, "progressDeadlineSeconds": 10 })),
            "spec.progressDeadlineSeconds",
            "Invalid value: 10: must be greater than minReadySeconds",
        ),
        (
            with("g", json!({ "revisionHistoryLimit": -1 })),
            "spec.revisionHistoryLimit",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            with("h", json!({ "minReadySeconds": -1 })),
            "spec.minReadySeconds",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
    ];
    for (body, field, message) in cases {
        let (code, _, v) = post(&sb, DEPLOYS, body).await;
        assert_eq!(code, 422, "{v}");
        assert_eq!(causes(&v), [(field, message)], "{v}");
    }
    let (_, _, v) = call(&sb, Method::GET, DEPLOYS, &[], None).await;
    assert_eq!(v["items"], json!([]), "nothing stored");
}

/// `pkg/registry/apps/deployment/strategy.go`, `deploymentStatusStrategy.PrepareForUpdate`: a
/// `/status` write keeps the stored spec and labels, takes the request's annotations, and does
/// not move the generation.
#[tokio::test]
async fn a_deployment_status_write_takes_annotations_but_not_labels_or_spec() {
    let sb = Sandbox::new();
    create(&sb, DEPLOYS, deployment("web")).await;
    let patch = json!({ "metadata": { "labels": { "via-status": "1" }, "annotations": { "via-status": "1" } },
                        "spec": { "replicas": 7 }, "status": { "observedGeneration": 42 } });
    let (code, _, v) = merge_patch(&sb, &format!("{DEPLOYS}/web/status"), patch).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["metadata"]["annotations"]["via-status"], "1", "{v}");
    assert!(v["metadata"].get("labels").is_none_or(|l| l.get("via-status").is_none()), "{v}");
    assert_eq!((v["spec"]["replicas"].as_i64(), v["metadata"]["generation"].as_i64()), (Some(1), Some(1)));
    assert_eq!(v["status"]["observedGeneration"], 42);
}

/// `registry/generic/registry/store.go` (`Update`): a strategy whose `AllowUnconditionalUpdate`
/// is false (`pkg/registry/coordination/lease/strategy.go`, CRDs, custom resources) refuses a PUT
/// without `metadata.resourceVersion`, the error naming the *resource*; ConfigMaps' allows it. An
/// apply keeps the live version and is not refused.
#[tokio::test]
async fn an_update_without_a_version_is_refused_where_the_strategy_wants_one() {
    let sb = Sandbox::new();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": "lock" }, "spec": { "holderIdentity": "a" } });
    create(&sb, leases, lease.clone()).await;
    let (code, _, v) = call(&sb, Method::PUT, &format!("{leases}/lock"), &[], Some(lease)).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        status_of(&v),
        (
            "Failure",
            "Invalid",
            "leases.coordination.k8s.io \"lock\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        )
    );
    assert_eq!(
        (v["details"]["group"].as_str(), v["details"]["kind"].as_str()),
        (Some("coordination.k8s.io"), Some("leases"))
    );
    let apply = [("content-type", "application/apply-patch+yaml")];
    let body = json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": "lock" }, "spec": { "holderIdentity": "b" } });
    let (code, _, v) =
        call(&sb, Method::PATCH, &format!("{leases}/lock?fieldManager=m&force=true"), &apply, Some(body))
            .await;
    assert_eq!((code, v["spec"]["holderIdentity"].as_str()), (200, Some("b")), "{v}");
    create(&sb, CMS, json!({ "metadata": { "name": "free" } })).await;
    let (code, _, v) = call(
        &sb,
        Method::PUT,
        &format!("{CMS}/free"),
        &[],
        Some(json!({ "metadata": { "name": "free" }, "data": { "k": "v" } })),
    )
    .await;
    assert_eq!(code, 200, "{v}");
}

/// `k8s.io/api/coordination/v1.Lease`: `Spec LeaseSpec` is a struct, always written: a Lease
/// created without a spec reads back with an empty one.
#[tokio::test]
async fn a_lease_without_a_spec_has_an_empty_one() {
    let sb = Sandbox::new();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let v = create(&sb, leases, json!({ "metadata": { "name": "c" } })).await;
    assert_eq!(v["spec"], json!({}), "{v}");
}

/// `k8s.io/api/core/v1.Event` and `events/v1.Event` as Go writes them: `metav1.Time` in UTC to
/// the second (`Time.MarshalJSON`), a zero time `null` (`omitempty` leaves no struct out),
/// `MicroTime` to the microsecond, `reportingComponent`/`reportingInstance` always written in
/// core/v1 and left out when empty in events.k8s.io/v1.
#[tokio::test]
async fn events_write_their_times_as_the_go_types_do() {
    let sb = Sandbox::new();
    let evs = "/api/v1/namespaces/default/events";
    let ev = json!({ "metadata": { "name": "e1" },
        "involvedObject": { "kind": "ConfigMap", "name": "cm1", "namespace": "default" },
        "reason": "R", "message": "m", "type": "Normal", "count": 1,
        "firstTimestamp": "2024-01-02T03:04:05.5Z", "lastTimestamp": "2024-01-02T05:04:06+02:00" });
    let v = create(&sb, evs, ev).await;
    assert_eq!(v["firstTimestamp"], "2024-01-02T03:04:05Z");
    assert_eq!(v["lastTimestamp"], "2024-01-02T03:04:06Z");
    assert_eq!(v.get("eventTime"), Some(&Value::Null), "{v}");
    assert_eq!((v["reportingComponent"].as_str(), v["reportingInstance"].as_str()), (Some(""), Some("")));
    assert_eq!(v["source"], json!({}));
    let (code, _, v) =
        call(&sb, Method::GET, "/apis/events.k8s.io/v1/namespaces/default/events/e1", &[], None).await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v.get("eventTime"), Some(&Value::Null), "{v}");
    assert_eq!(v["deprecatedFirstTimestamp"], "2024-01-02T03:04:05Z");
    assert!(v.get("reportingController").is_none() && v.get("reportingInstance").is_none(), "{v}");
    let v1 = json!({ "metadata": { "name": "e2" }, "eventTime": "2024-01-02T05:04:05.123456+02:00",
        "reportingController": "example.com/c", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
        "regarding": { "kind": "ConfigMap", "name": "cm1", "namespace": "default" } });
    let v = create(&sb, "/apis/events.k8s.io/v1/namespaces/default/events", v1).await;
    assert_eq!(v["eventTime"], "2024-01-02T03:04:05.123456Z", "{v}");
    assert_eq!(
        (v.get("deprecatedFirstTimestamp"), v.get("deprecatedLastTimestamp")),
        (Some(&Value::Null), Some(&Value::Null))
    );
    // A `MicroTime` without its six digits, or a `Time` that is not RFC 3339, does not decode.
    let bad = json!({ "metadata": { "name": "e3" }, "eventTime": "2024-01-02T03:04:05Z",
        "involvedObject": { "kind": "ConfigMap", "name": "cm1", "namespace": "default" } });
    let (code, _, v) = post(&sb, evs, bad).await;
    assert_eq!((code, status_of(&v).1), (400, "BadRequest"), "{v}");
    let bad = json!({ "metadata": { "name": "e4" }, "lastTimestamp": "yesterday",
        "involvedObject": { "kind": "ConfigMap", "name": "cm1", "namespace": "default" } });
    let (code, _, v) = post(&sb, evs, bad).await;
    assert_eq!((code, status_of(&v).1), (400, "BadRequest"), "{v}");
}

/// `pkg/registry/core/event/strategy.go` serves both Event APIs with the internal core type:
/// `rest.BeforeCreate` names the internal kind in an `Invalid` error, so an events.k8s.io/v1
/// validation error has no group (its NotFound, named from the request, has one).
#[tokio::test]
async fn events_v1_validation_errors_name_the_core_kind() {
    let sb = Sandbox::new();
    let evs = "/apis/events.k8s.io/v1/namespaces/default/events";
    let (code, _, v) = post(
        &sb,
        evs,
        json!({ "metadata": { "name": "v" }, "reportingController": "example.com/c",
        "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal" }),
    )
    .await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(status_of(&v).2, "Event \"v\" is invalid: eventTime: Required value");
    assert_eq!(v["details"].get("group"), None, "{v}");
    assert_eq!(v["details"]["kind"], "Event");
    let (code, _, v) = call(&sb, Method::GET, &format!("{evs}/missing"), &[], None).await;
    assert_eq!((code, v["details"]["group"].as_str()), (404, Some("events.k8s.io")), "{v}");
}

/// `pkg/registry/core/namespace/strategy.go`, `PrepareForUpdate`: an update of the namespace
/// keeps the stored `spec.finalizers` (only `/finalize` changes them).
#[tokio::test]
async fn a_namespace_update_keeps_its_spec_finalizers() {
    let sb = Sandbox::new();
    create(&sb, "/api/v1/namespaces", json!({ "metadata": { "name": "team" } })).await;
    let (code, _, v) =
        merge_patch(&sb, "/api/v1/namespaces/team", json!({ "spec": { "finalizers": [] } })).await;
    assert_eq!((code, v["spec"]["finalizers"].clone()), (200, json!(["kubernetes"])), "{v}");
}

/// kube-controller-manager's garbage collector (`pkg/controller/garbagecollector`,
/// `attemptToDeleteItem` and `isDangling`): a dependent written pointing at an owner that does not
/// exist (no object of that name has that uid) is deleted soon after when none of its owners
/// exists; one with an owner still there only loses the reference to the missing one.
#[tokio::test]
async fn a_dependent_of_a_missing_owner_is_collected() {
    let sb = Sandbox::new();
    let owner = create(&sb, CMS, json!({ "metadata": { "name": "owner" } })).await;
    let ghost = json!({ "apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000001" });
    let real =
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"] });
    // The right uid under another name is not the owner either.
    let misnamed =
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": owner["metadata"]["uid"] });
    create(&sb, CMS, json!({ "metadata": { "name": "dangling", "ownerReferences": [ghost] } })).await;
    create(&sb, CMS, json!({ "metadata": { "name": "misnamed", "ownerReferences": [misnamed] } })).await;
    create(&sb, CMS, json!({ "metadata": { "name": "half", "ownerReferences": [ghost, real.clone()] } }))
        .await;
    let (code, _, _) = call(&sb, Method::GET, &format!("{CMS}/dangling"), &[], None).await;
    assert_eq!(code, 200, "still there right after its create");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (a, _, _) = call(&sb, Method::GET, &format!("{CMS}/dangling"), &[], None).await;
        let (b, _, _) = call(&sb, Method::GET, &format!("{CMS}/misnamed"), &[], None).await;
        let (_, _, half) = call(&sb, Method::GET, &format!("{CMS}/half"), &[], None).await;
        if a == 404 && b == 404 && half["metadata"]["ownerReferences"] == json!([real]) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not collected: {a} {b} {half}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `pkg/apis/apps/validation/validation.go`, `ValidateDeploymentStatus`: the counts are int32s, so
/// an absent one is 0 — a negative `replicas` makes every other count too many.
#[tokio::test]
async fn a_negative_status_replicas_makes_the_absent_counts_too_many() {
    let sb = Sandbox::new();
    create(&sb, DEPLOYS, deployment("web")).await;
    // (The other counts removed, whatever the simulated rollout has written by now.)
    let absent = json!({ "status": { "replicas": -1, "updatedReplicas": null, "readyReplicas": null,
                                     "availableReplicas": null, "unavailableReplicas": null } });
    let (code, _, v) = merge_patch(&sb, &format!("{DEPLOYS}/web/status"), absent).await;
    assert_eq!(code, 422, "{v}");
    assert_eq!(
        causes(&v),
        [
            ("status.replicas", "Invalid value: -1: must be greater than or equal to 0"),
            ("status.updatedReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
            ("status.readyReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
            ("status.availableReplicas", "Invalid value: 0: cannot be greater than status.replicas"),
        ]
    );
}

/// kube-openapi's `/openapi/v2` handler (`handler/handler.go`): every route with its operations
/// (`operationId` as `endpoints/openapi` names them), and a 406 with no body for an `Accept` it
/// cannot serve (neither JSON nor its protobuf encoding).
#[tokio::test]
async fn openapi_v2_lists_every_path_and_refuses_what_it_cannot_serve() {
    let sb = Sandbox::new();
    let (code, _, doc) = call(&sb, Method::GET, "/openapi/v2", &[("accept", "application/json")], None).await;
    assert_eq!(code, 200);
    let cms = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"];
    assert_eq!(cms["get"]["operationId"], "listCoreV1NamespacedConfigMap");
    assert_eq!(cms["delete"]["operationId"], "deleteCoreV1CollectionNamespacedConfigMap");
    let scale = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
    assert_eq!(scale["patch"]["operationId"], "patchAppsV1NamespacedDeploymentScale");
    assert_eq!(
        doc["paths"]["/apis/apps/v1/deployments"]["get"]["operationId"],
        "listAppsV1DeploymentForAllNamespaces"
    );
    let yaml = ("accept", "application/yaml");
    let (code, _, body) = call(&sb, Method::GET, "/openapi/v2", &[yaml], None).await;
    assert_eq!((code, body), (406, json!("")));
}

/// kube-openapi's `/openapi/v2` handler (`pkg/handler/handler.go`) serves kubectl's
/// `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (deprecated, answered under the
/// `…spec.v2.v1.0+protobuf` type) and `…spec.v2.v1.0+protobuf` alike: the JSON document parsed
/// by gnostic (`openapi_v2.ParseDocument`) and marshalled as its `openapi.v2.Document`
/// (`openapiv2/OpenAPIv2.proto`: swagger = 1, info = 2, paths = 8, definitions = 9).
#[tokio::test]
async fn openapi_v2_is_served_as_gnostics_protobuf_document() {
    /// The (field number, length-delimited bytes) of a message's fields; other wire types skipped.
    fn fields(mut b: &[u8]) -> Vec<(u64, Vec<u8>)> {
        fn uvarint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte < 0x80 {
                    return v;
                }
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = uvarint(&mut b);
            match key & 7 {
                0 => drop(uvarint(&mut b)),
                1 => b = &b[8..],
                2 => {
                    let n = usize::try_from(uvarint(&mut b)).unwrap();
                    out.push((key >> 3, b[..n].to_vec()));
                    b = &b[n..];
                }
                w => panic!("wire type {w}"),
            }
        }
        out
    }
    let field = |msg: &[(u64, Vec<u8>)], n: u64| -> Vec<Vec<u8>> {
        msg.iter().filter(|(k, _)| *k == n).map(|(_, v)| v.clone()).collect()
    };
    let sb = Sandbox::new();
    for accept in [
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json;q=0.5",
    ] {
        let req = Request::get("/openapi/v2").header("accept", accept).body(Full::new(Bytes::new())).unwrap();
        let resp = sb.service().oneshot(req).await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{accept}");
        let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        assert_eq!(ct, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let doc = fields(&body);
        assert_eq!(field(&doc, 1), [b"2.0".to_vec()]);
        let info = fields(&field(&doc, 2)[0]);
        assert_eq!(field(&info, 1), [b"Kubernetes (sandbox)".to_vec()]);
        let definitions = fields(&field(&doc, 9)[0]);
        let names: Vec<Vec<u8>> =
            definitions.iter().map(|(_, named)| field(&fields(named), 1).remove(0)).collect();
        assert!(names.contains(&b"io.k8s.api.apps.v1.Deployment".to_vec()));
        let paths = fields(&field(&doc, 8)[0]);
        let routes: Vec<Vec<u8>> =
            field(&paths, 2).iter().map(|named| field(&fields(named), 1).remove(0)).collect();
        assert!(routes.contains(&b"/api/v1/namespaces/{namespace}/configmaps".to_vec()));
    }
    // JSON first, or a wildcard, still gets the JSON document.
    for accept in ["application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "*/*"] {
        let (code, ct, doc) = call(&sb, Method::GET, "/openapi/v2", &[("accept", accept)], None).await;
        assert_eq!(
            (code, ct.as_str(), &doc["swagger"]),
            (200, "application/json", &json!("2.0")),
            "{accept}"
        );
    }
}

/// Server-side apply removes what its manager stopped applying, but not a map it still sets
/// fields under: after `kubectl apply --server-side` took over a client-side apply (kubectl's
/// `csaupgrade` gives the manager a `"."` entry for `data` and `metadata.annotations`), a
/// re-apply keeps both (`structured-merge-diff`'s `merge.Updater` removes only fields that left
/// the applied set, and a map whose children are applied stays in it).
#[tokio::test]
async fn an_apply_keeps_the_maps_it_still_sets_fields_under() {
    let sb = Sandbox::new();
    let (code, _, _) =
        post(&sb, CMS, json!({ "metadata": { "name": "web" }, "data": { "app": "web" } })).await;
    assert_eq!(code, 201);
    // What kubectl's migration writes: the applier owns the maps themselves too.
    let fields = json!({ "f:data": { ".": {}, "f:app": {} }, "f:metadata": { "f:annotations": { ".": {}, "f:desired": {} } } });
    let migrate = json!([{ "op": "replace", "path": "/metadata/managedFields", "value": [
        { "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields },
    ] }]);
    let (code, _, _, v) = call_with_headers(
        &sb,
        Method::PATCH,
        &format!("{CMS}/web"),
        &[("content-type", "application/json-patch+json")],
        Some(migrate),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    let applied = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "web", "annotations": { "desired": "4" } }, "data": { "app": "web" } });
    let (code, _, cm) = call(
        &sb,
        Method::PATCH,
        &format!("{CMS}/web?fieldManager=kubectl&force=true"),
        &[("content-type", "application/apply-patch+yaml")],
        Some(applied),
    )
    .await;
    assert_eq!(code, 200, "{cm}");
    assert_eq!(cm["data"], json!({ "app": "web" }), "{cm}");
    assert_eq!(cm["metadata"]["annotations"], json!({ "desired": "4" }), "{cm}");
}

/// What a kind's declaration makes the HTTP layer do for it: a pod's kubelet streams located
/// (`pkg/registry/core/pod/rest/subresources.go`, reached through the pod), a Job's delete warning
/// (`pkg/registry/batch/job/storage`), ComponentStatus's deprecation on every answer (the
/// installer's).
#[tokio::test]
async fn kinds_declare_their_streams_warnings_and_deprecation() {
    let sb = Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
    let pods = "/api/v1/namespaces/default/pods";
    let (code, _, v) = call(&sb, Method::POST, &format!("{pods}/p/exec?command=ls"), &[], None).await;
    assert_eq!((code, v["reason"].as_str()), (404, Some("NotFound")), "{v}");
    create(&sb, pods, json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }))
        .await;
    for stream in ["exec", "attach", "portforward"] {
        let (code, _, v) = call(&sb, Method::POST, &format!("{pods}/p/{stream}"), &[], None).await;
        // Unscheduled: upstream's location lookup refuses before any upgrade is looked at.
        assert_eq!(
            (code, v["message"].as_str()),
            (400, Some("pod p does not have a host assigned")),
            "{stream}: {v}"
        );
    }
    // Only a pod has them.
    create(&sb, CMS, json!({ "metadata": { "name": "c" } })).await;
    let (code, _, _) = call(&sb, Method::POST, &format!("{CMS}/c/exec"), &[], None).await;
    assert_eq!(code, 404);

    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let spec = json!({ "template": { "spec": { "restartPolicy": "Never", "containers": [{ "name": "c", "image": "busybox" }] } } });
    for name in ["a", "b"] {
        create(&sb, jobs, json!({ "metadata": { "name": name }, "spec": spec })).await;
    }
    let (code, _, warnings, _) =
        call_with_headers(&sb, Method::DELETE, &format!("{jobs}/a"), &[], None).await;
    assert_eq!(code, 200);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("299 - \"child pods are preserved by default when jobs are deleted"),
        "{warnings:?}"
    );
    let background = json!({ "propagationPolicy": "Background" });
    let (code, _, warnings, _) =
        call_with_headers(&sb, Method::DELETE, &format!("{jobs}/b"), &[], Some(background)).await;
    assert_eq!((code, warnings.len()), (200, 0), "{warnings:?}");
    // A kind that orphans by default without a warning of it.
    let rcs = "/api/v1/namespaces/default/replicationcontrollers";
    let (code, _, warnings, _) =
        call_with_headers(&sb, Method::DELETE, &format!("{rcs}/none"), &[], None).await;
    assert_eq!((code, warnings.len()), (404, 0), "{warnings:?}");

    let deprecated = vec!["299 - \"v1 ComponentStatus is deprecated in v1.19+\"".to_owned()];
    let (code, _, warnings, v) =
        call_with_headers(&sb, Method::GET, "/api/v1/componentstatuses", &[], None).await;
    assert_eq!((code, &warnings), (200, &deprecated), "{v}");
    // A refusal carries it too; another resource's answers do not.
    let (code, _, warnings, _) =
        call_with_headers(&sb, Method::DELETE, "/api/v1/componentstatuses/etcd-0", &[], None).await;
    assert_eq!((code, &warnings), (405, &deprecated));
    let (code, _, warnings, _) = call_with_headers(&sb, Method::GET, CMS, &[], None).await;
    assert_eq!((code, warnings.len()), (200, 0));
}

#[tokio::test]
async fn a_table_is_not_acceptable_from_a_storage_without_a_table_convertor() {
    // Upstream's conformance test "Servers with support for Table transformation should return
    // a 406 for a backend which does not implement metadata": a review has no table convertor.
    let sb = Sandbox::new();
    let review = json!({ "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": { "nonResourceAttributes": { "path": "/", "verb": "get" } } });
    let table = [("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")];
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let (code, _, status) = call(&sb, Method::POST, path, &table, Some(review.clone())).await;
    assert_eq!((code, status["reason"].as_str()), (406, Some("NotAcceptable")), "{status}");
    // With JSON after it, JSON.
    let then_json = [("accept", "application/json;as=Table;v=v1;g=meta.k8s.io, application/json")];
    let (code, _, answer) = call(&sb, Method::POST, path, &then_json, Some(review)).await;
    assert_eq!((code, answer["kind"].as_str()), (201, Some("SelfSubjectAccessReview")), "{answer}");
    // A stored kind still answers its Table.
    let (code, _, answer) = call(&sb, Method::GET, CMS, &table, None).await;
    assert_eq!((code, answer["kind"].as_str()), (200, Some("Table")));
}
