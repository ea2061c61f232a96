//! No request can stop the server: random and adversarial bodies — deep nesting, huge numbers,
//! invalid UTF-8, duplicate keys, giant strings, YAML aliases, a wrong type at every field, bytes
//! flipped in JSON, YAML and protobuf — sent to create, update, the three patch types and apply, for every resource the
//! sandbox serves (a custom resource among them), in-process and over HTTPS. Fails on a panic (the
//! server answers it as upstream's panic filter does, and this test looks for that answer), on a
//! request that does not finish, and when the objects written before the storm are no longer
//! served as they were.
//!
//! Deterministic: `SANDBOX_FUZZ_SEED` picks the random bodies (the default is fixed, the seed is
//! printed), `SANDBOX_FUZZ_ROUNDS` how many random mutations each resource gets (default 40).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use kube_sandbox::{FaultKind, FaultRule, Sandbox, SandboxConfig};
use serde_json::{Value, json};
use tower::ServiceExt;

/// How long one request may take before the test calls it hung: far beyond any answer's time,
/// it tells a loop from a slow machine.
const HANG: Duration = Duration::from_secs(120);

const PANICKED: &str = "This request caused apiserver to panic";

/// A resource the sandbox serves: its collection's path and a valid object of it.
struct Target {
    plural: String,
    path: String,
    base: Value,
}

/// The body of a request, with its content type.
struct Body {
    what: String,
    content_type: &'static str,
    bytes: Vec<u8>,
}

fn body(what: impl Into<String>, content_type: &'static str, bytes: impl Into<Vec<u8>>) -> Body {
    Body { what: what.into(), content_type, bytes: bytes.into() }
}

/// Sends one request in-process; `(code, body)`; panics (failing the test) on a hang.
async fn send(sb: &Sandbox, method: &str, uri: &str, content_type: &str, bytes: Vec<u8>) -> (u16, Bytes) {
    // A list asked with `?as=Table` is asked for as a Table, by its Accept header.
    let (uri, accept) = match uri.strip_suffix("?as=Table") {
        Some(list) => (list, "application/json;as=Table;v=v1;g=meta.k8s.io"),
        None => (uri, "application/json"),
    };
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::ACCEPT, accept)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(bytes)))
        .unwrap();
    let answered = async {
        let resp = sb.service().oneshot(req).await.expect("the service answers");
        let code = resp.status().as_u16();
        (code, resp.into_body().collect().await.unwrap().to_bytes())
    };
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(HANG, answered)
        .await
        .unwrap_or_else(|_| panic!("{method} {uri} did not finish"));
    if started.elapsed() > Duration::from_secs(2) {
        println!("fuzz: slow: {method} {uri} ({content_type}) took {:?}", started.elapsed());
    }
    answer
}

/// Every resource with `create` among its verbs, from discovery, with a base object for each: the
/// validation inventory's where it has one, else a bare object of the kind.
async fn targets(sb: &Sandbox) -> Vec<Target> {
    let bases: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/objects.json"))
            .unwrap(),
    )
    .unwrap();
    let mut versions = vec![("/api/v1".to_owned(), "v1".to_owned())];
    let (_, groups) = send(sb, "GET", "/apis", "application/json", Vec::new()).await;
    let groups: Value = serde_json::from_slice(&groups).unwrap();
    for g in groups["groups"].as_array().unwrap() {
        let gv = g["preferredVersion"]["groupVersion"].as_str().unwrap();
        versions.push((format!("/apis/{gv}"), gv.to_owned()));
    }
    let mut targets = Vec::new();
    for (prefix, gv) in versions {
        let (_, list) = send(sb, "GET", &prefix, "application/json", Vec::new()).await;
        let list: Value = serde_json::from_slice(&list).unwrap();
        for r in list["resources"].as_array().unwrap() {
            let plural = r["name"].as_str().unwrap();
            if plural.contains('/') || !r["verbs"].as_array().unwrap().contains(&json!("create")) {
                continue;
            }
            let kind = r["kind"].as_str().unwrap();
            let path = if r["namespaced"] == true {
                format!("{prefix}/namespaces/default/{plural}")
            } else {
                format!("{prefix}/{plural}")
            };
            let base = bases
                .as_object()
                .unwrap()
                .values()
                .find(|b| b["object"]["kind"] == kind && b["object"]["apiVersion"] == gv.as_str())
                .map_or_else(
                    || json!({ "apiVersion": gv, "kind": kind, "metadata": {} }),
                    |b| b["object"].clone(),
                );
            targets.push(Target { plural: plural.to_owned(), path, base });
        }
    }
    targets
}

/// A value nested `depth` deep: arrays, objects, or both in turn.
fn nested(depth: usize, style: usize) -> String {
    let (mut open, mut close) = (String::new(), String::new());
    for i in 0..depth {
        match (style + i) % 3 {
            0 => {
                open.push('[');
                close.insert(0, ']');
            }
            1 => {
                open.push_str("{\"a\":");
                close.insert(0, '}');
            }
            _ => {
                open.push_str("[{\"b\":");
                close.insert_str(0, "}]");
            }
        }
    }
    format!("{open}1{close}")
}

/// Every path to a value in `v`, as JSON pointers.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
            out.push(p.clone());
            pointers(x, &p, out);
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| {
            let p = format!("{at}/{i}");
            out.push(p.clone());
            pointers(x, &p, out);
        }),
        _ => {}
    }
}

/// The resources that get the large bodies (deep, giant, aliased): a plain kind, a pod
/// (admission), a cluster-scoped kind, a custom resource.
const HEAVY: [&str; 4] = ["configmaps", "pods", "nodes", "fuzzes"];

/// The adversarial bodies for one object, built around its base: the large ones only when
/// `heavy`.
fn adversarial(base: &Value, heavy: bool) -> Vec<Body> {
    let text = base.to_string();
    let with = |extra: &str| format!("{},\"x\":{extra}}}", &text[..text.len() - 1]);
    let mut bodies = Vec::new();
    let depths: &[usize] = if heavy { &[200, 9_000, 10_001, 100_000] } else { &[200] };
    for &depth in depths {
        for style in 0..if depth > 9_000 { 1 } else { 3 } {
            bodies.push(body(
                format!("nested {depth} deep ({style})"),
                "application/json",
                with(&nested(depth, style)),
            ));
        }
        bodies.push(body(format!("a bare value nested {depth} deep"), "application/json", nested(depth, 0)));
        let flow = format!("{}1{}", "[".repeat(depth.min(20_000)), "]".repeat(depth.min(20_000)));
        bodies.push(body(
            format!("YAML flow nested {depth} deep"),
            "application/yaml",
            format!("x: {flow}\n"),
        ));
    }
    if heavy {
        let block: String = (0..2_000).map(|i| format!("{}- \n", "  ".repeat(i))).collect();
        bodies.push(body("YAML block nested 2,000 deep", "application/yaml", block));
        bodies.push(body(
            "a 2 MiB string",
            "application/json",
            with(&format!("\"{}\"", "x".repeat(2 << 20))),
        ));
        bodies.push(body(
            "a 4 MiB string",
            "application/json",
            with(&format!("\"{}\"", "y".repeat(4 << 20))),
        ));
        let keys: String = (0..60_000).map(|i| format!("\"k{i}\":0,")).collect();
        bodies.push(body("60,000 keys", "application/json", with(&format!("{{{keys}\"k\":0}}"))));
        bodies.push(body("YAML aliases, a billion laughs", "application/yaml", LAUGHS));
    }
    for n in ["1e400", "-1e400", "123456789012345678901234567890", "1e-400", "-0", "18446744073709551616"] {
        bodies.push(body(format!("the number {n}"), "application/json", with(n)));
        for p in ["/spec/replicas", "/spec/containers/0/ports/0/containerPort", "/value", "/spec/size"] {
            let mut obj = base.clone();
            if let Some(v) = obj.pointer_mut(p) {
                *v = json!("__number__");
                bodies.push(body(
                    format!("{p} = {n}"),
                    "application/json",
                    obj.to_string().replace("\"__number__\"", n),
                ));
            }
        }
    }
    let mut utf8 = with("\"\u{1}\"").into_bytes();
    let at = utf8.len() - 3;
    utf8[at] = 0xff;
    bodies.push(body("invalid UTF-8 in a string", "application/json", utf8.clone()));
    bodies.push(body("invalid UTF-8 in YAML", "application/yaml", utf8));
    bodies.push(body(
        "invalid UTF-8 in a key",
        "application/json",
        b"{\"metadata\":{\"name\":\"a\"},\"\xc3\x28\":1}".to_vec(),
    ));
    bodies.push(body(
        "duplicate keys",
        "application/json",
        with("1,\"x\":2,\"metadata\":{\"name\":\"dup\",\"name\":\"dup2\"}"),
    ));
    bodies.push(body("duplicate keys in YAML", "application/yaml", "metadata:\n  name: a\n  name: b\n"));
    bodies.push(body("a recursive YAML alias", "application/yaml", "a: &a [*a]\n"));
    bodies.push(body("a YAML merge key loop", "application/yaml", "a: &a\n  <<: *a\n"));
    for bare in
        ["", "null", "[]", "\"s\"", "1", "{", "}", "{\"metadata\":null}", "{\"metadata\":[]}", "\u{feff}{}"]
    {
        bodies.push(body(format!("the body {bare:?}"), "application/json", bare));
    }
    let mut paths = Vec::new();
    pointers(base, "", &mut paths);
    for p in paths {
        for wrong in
            [json!(1), json!("s"), json!(true), json!(null), json!([]), json!({}), json!(-1.5), json!([{}])]
        {
            let mut obj = base.clone();
            *obj.pointer_mut(&p).unwrap() = wrong.clone();
            bodies.push(body(format!("{p} = {wrong}"), "application/json", obj.to_string()));
        }
    }
    bodies
}

/// Nine levels of nine aliases each: 9^9 strings if the aliases were expanded.
const LAUGHS: &str = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n\
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";

/// `rounds` bodies made by flipping, inserting, deleting and cutting bytes of the base.
fn mutations(base: &Value, rounds: usize, rng: &mut fastrand::Rng) -> Vec<Body> {
    let text = base.to_string().into_bytes();
    let yaml = serde_json::to_string_pretty(base).unwrap().into_bytes();
    // A built-in kind's protobuf too (a custom resource has none).
    let protobuf = kube_sandbox::protobuf::from_json(base).ok();
    (0..rounds)
        .map(|round| {
            let (mut bytes, ct) = match (round % 4, &protobuf) {
                (3, _) => (yaml.clone(), "application/yaml"),
                (1, Some(pb)) => (pb.clone(), kube_sandbox::protobuf::CONTENT_TYPE),
                _ => (text.clone(), "application/json"),
            };
            for _ in 0..rng.usize(1..6) {
                let at = rng.usize(..bytes.len().max(1));
                match rng.u8(..4) {
                    0 if !bytes.is_empty() => bytes[at] = rng.u8(..),
                    1 => {
                        bytes.insert(at, *rng.choice(b"[]{}\":,\\0123456789-.eE \ntrufalsn\xff\xc3").unwrap())
                    }
                    2 if !bytes.is_empty() => {
                        bytes.remove(at);
                    }
                    _ => bytes.truncate(at),
                }
            }
            body(format!("mutation {round}"), ct, bytes)
        })
        .collect()
}

/// JSON patches that reach into the object: deep paths, escapes, moves of a value into itself.
fn json_patches() -> Vec<Body> {
    let deep = format!("/metadata/annotations/{}", "a/".repeat(5_000));
    [
        json!([{ "op": "add", "path": deep, "value": 1 }]),
        json!([{ "op": "add", "path": "/metadata/labels/x", "value": serde_json::from_str::<Value>(&nested(60, 0)).unwrap() }]),
        json!([{ "op": "move", "from": "/metadata", "path": "/metadata/labels" }]),
        json!([{ "op": "copy", "from": "/metadata", "path": "/metadata/x" }, { "op": "copy", "from": "/metadata", "path": "/metadata/x/y" }]),
        json!([{ "op": "test", "path": "/metadata/name~2", "value": 1 }]),
        json!([{ "op": "replace", "path": "/metadata/finalizers/99999999999999999999", "value": "x" }]),
        json!([{ "op": "add", "path": "/metadata/finalizers/-1", "value": "x" }]),
        json!([{ "op": "remove", "path": "" }]),
        json!([{ "op": "bogus" }]),
        json!([{ "op": "add", "path": "/metadata/annotations", "value": { "a": "x".repeat(300_000) } }]),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, p)| body(format!("JSON patch {i}"), "application/json-patch+json", p.to_string()))
    .collect()
}

/// A CRD whose field keeps unknown fields, so deep values reach storage, managed fields, pruning
/// and the Table printer.
async fn install_crd(sb: &Sandbox) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "fuzzes.example.com" },
        "spec": { "group": "example.com", "scope": "Namespaced",
            "names": { "plural": "fuzzes", "singular": "fuzz", "kind": "Fuzz" },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": [{ "name": "Deep", "type": "string", "jsonPath": ".spec.free" }],
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": { "type": "object", "properties": {
                    "spec": { "type": "object", "properties": {
                        "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "size": { "type": "integer", "default": 1, "maximum": 10 },
                        "items": { "type": "array", "items": { "type": "object", "properties": { "v": { "type": "string", "pattern": "^(a+)+$" } } } } } },
                    "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } } } }] } });
    let (code, answer) = send(
        sb,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&answer));
    // Served once established (its discovery is updated at once in the sandbox).
    for _ in 0..200 {
        if send(sb, "GET", "/apis/example.com/v1/namespaces/default/fuzzes", "", Vec::new()).await.0 == 200 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the fuzz CRD is not served");
}

/// Sends every body by every write verb to one resource; the number of requests sent.
async fn storm(sb: &Sandbox, t: &Target, bodies: &[Body]) -> usize {
    let item = format!("{}/fuzz-target", t.path);
    let mut sent = 0;
    for b in bodies {
        let requests: [(&str, String, &str); 6] = [
            ("POST", t.path.clone(), b.content_type),
            ("PUT", item.clone(), b.content_type),
            ("PATCH", item.clone(), "application/merge-patch+json"),
            ("PATCH", item.clone(), "application/strategic-merge-patch+json"),
            ("PATCH", format!("{item}?fieldManager=fuzz&force=true"), "application/apply-patch+yaml"),
            ("PATCH", item.clone(), "application/json-patch+json"),
        ];
        for (method, uri, ct) in requests {
            let (code, answer) = send(sb, method, &uri, ct, b.bytes.clone()).await;
            sent += 1;
            assert!(
                !(code == 500 && answer.starts_with(PANICKED.as_bytes())),
                "{method} {uri} ({ct}) with {} made the server panic",
                b.what
            );
        }
    }
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_body_stops_the_server_or_loses_an_object() {
    let seed =
        std::env::var("SANDBOX_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_1234_u64);
    let rounds = std::env::var("SANDBOX_FUZZ_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let mut rng = fastrand::Rng::with_seed(seed);
    let sb = Sandbox::with_config(SandboxConfig::bare());
    install_crd(&sb).await;
    let mut targets = targets(&sb).await;
    targets.retain(|t| t.plural != "fuzzes");
    targets.push(Target {
        plural: "fuzzes".into(),
        path: "/apis/example.com/v1/namespaces/default/fuzzes".into(),
        base: json!({ "apiVersion": "example.com/v1", "kind": "Fuzz", "metadata": {},
            "spec": { "free": { "deep": serde_json::from_str::<Value>(&nested(40, 1)).unwrap() }, "items": [{ "v": "aaa" }] } }),
    });
    // The objects the storm aims at, and what each was before it.
    let mut before = Vec::new();
    for t in &mut targets {
        let mut obj = t.base.clone();
        obj["metadata"]["name"] = json!("fuzz-target");
        let (code, created) =
            send(&sb, "POST", &t.path, "application/json", obj.to_string().into_bytes()).await;
        if code == 201 {
            t.base = obj;
            // Reviews and other virtual kinds answer a create but keep nothing.
            let uri = format!("{}/fuzz-target", t.path);
            if send(&sb, "GET", &uri, "", Vec::new()).await.0 == 200 {
                let created: Value = serde_json::from_slice(&created).unwrap();
                before.push((uri, t.path.clone(), created["metadata"]["uid"].clone()));
            }
        }
    }
    let patches = json_patches();
    let mut sent = 0;
    for t in &targets {
        let mut bodies = adversarial(&t.base, HEAVY.contains(&t.plural.as_str()));
        bodies.extend(mutations(&t.base, rounds, &mut rng));
        sent += storm(&sb, t, &bodies).await;
        for p in &patches {
            let (code, answer) =
                send(&sb, "PATCH", &format!("{}/fuzz-target", t.path), p.content_type, p.bytes.clone()).await;
            sent += 1;
            assert!(
                !(code == 500 && answer.starts_with(PANICKED.as_bytes())),
                "{} of {} made the server panic",
                p.what,
                t.plural
            );
        }
    }
    // Still serving, and every object still there (updates may have changed them: they were valid).
    for (uri, list, uid) in &before {
        let (code, got) = send(&sb, "GET", uri, "", Vec::new()).await;
        let got: Value = serde_json::from_slice(&got).unwrap();
        assert!(code == 200 || got["metadata"]["deletionTimestamp"].is_string(), "{uri}: {code} {got}");
        assert_eq!(&got["metadata"]["uid"], uid, "{uri} was replaced");
        for query in ["", "?as=Table", "?labelSelector=a%20in%20(b)"] {
            let (code, _) = send(&sb, "GET", &format!("{list}{query}"), "", Vec::new()).await;
            assert_eq!(code, 200, "list {list}{query}");
        }
    }
    println!("fuzz: seed {seed:#x}, {} resources, {sent} requests in-process", targets.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_panics_is_answered_and_the_server_goes_on() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    sb.faults().add_rule(FaultRule::new(Some("create"), Some("configmaps"), 1.0, FaultKind::Panic));
    let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" } }).to_string();
    let (code, answer) = send(
        &sb,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        cm.clone().into_bytes(),
    )
    .await;
    assert_eq!(code, 500);
    assert_eq!(&answer[..], b"This request caused apiserver to panic. Look in the logs for details.\n");
    sb.faults().clear();
    let (code, _) =
        send(&sb, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm.into_bytes()).await;
    assert_eq!(code, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_https_no_body_stops_the_server() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    install_crd(&sb).await;
    let server = sb.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await.unwrap();
    let dir = std::env::temp_dir().join(format!("sandbox-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    kube_sandbox::write_kubeconfig(&kubeconfig, &server).unwrap();
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let targets = [
        (
            "/api/v1/namespaces/default/configmaps",
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "fuzz-target" }, "data": { "k": "v" } }),
        ),
        (
            "/apis/example.com/v1/namespaces/default/fuzzes",
            json!({ "apiVersion": "example.com/v1", "kind": "Fuzz", "metadata": { "name": "fuzz-target" }, "spec": { "free": { "a": 1 } } }),
        ),
    ];
    let mut rng = fastrand::Rng::with_seed(7);
    let mut sent = 0;
    for (path, base) in &targets {
        let (code, _) = send(&sb, "POST", path, "application/json", base.to_string().into_bytes()).await;
        assert_eq!(code, 201);
        let mut bodies = adversarial(base, true);
        bodies.extend(mutations(base, 10, &mut rng));
        for b in &bodies {
            for (method, uri, ct) in [
                ("POST", (*path).to_owned(), b.content_type),
                ("PUT", format!("{path}/fuzz-target"), b.content_type),
                ("PATCH", format!("{path}/fuzz-target?fieldManager=fuzz"), "application/apply-patch+yaml"),
            ] {
                let req = Request::builder()
                    .method(method)
                    .uri(&uri)
                    .header(header::CONTENT_TYPE, ct)
                    .body(kube::client::Body::from(b.bytes.clone()))
                    .unwrap();
                let answered = async {
                    let resp = client.send(req).await.expect("an answer over HTTPS");
                    let code = resp.status().as_u16();
                    (code, resp.into_body().collect().await.unwrap().to_bytes())
                };
                let (code, answer) = tokio::time::timeout(HANG, answered)
                    .await
                    .unwrap_or_else(|_| panic!("{method} {uri} over HTTPS did not finish"));
                sent += 1;
                assert!(
                    !(code == 500 && answer.starts_with(PANICKED.as_bytes())),
                    "{method} {uri} ({ct}) with {} made the server panic",
                    b.what
                );
            }
        }
        let (code, _) = send(&sb, "GET", &format!("{path}/fuzz-target"), "", Vec::new()).await;
        assert_eq!(code, 200, "{path}/fuzz-target is still served");
    }
    server.shutdown();
    println!("fuzz: {sent} requests over HTTPS");
}
