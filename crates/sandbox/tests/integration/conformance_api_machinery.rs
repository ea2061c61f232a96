//! Upstream's `[sig-api-machinery]` conformance tests that need no real image, done as the
//! e2e suite does them, through a real `kube::Client` (and raw requests where the suite reads
//! what a typed client drops): the garbage collector with several owners and with an ownership
//! cycle, aggregated discovery, a list continued past its snapshot, field validation of custom
//! resources and server-side apply, resource quotas, webhook match conditions, CRDs' list and
//! status, a namespace's finalize and status, and concurrent watches.

use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube_sandbox::{Sandbox, Simulation};
use serde_json::{Value, json};

use super::cluster::{cluster, eventually, of};

/// Upstream's `newOwnerRC`: an RC of `replicas` pods labelled `labels`.
fn owner_rc(name: &str, replicas: i32, label: &str) -> ReplicationController {
    of(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "gctest": label },
            "template": {
                "metadata": { "labels": { "gctest": label } },
                "spec": { "containers": [{ "name": "nginx", "image": "nginx" }] },
            },
        },
    }))
}

/// Delete options of upstream's GC tests: foreground, on the object of that uid only.
fn foreground(uid: Option<String>) -> DeleteParams {
    DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: Some(Preconditions { uid, resource_version: None }),
        ..DeleteParams::default()
    }
}

#[tokio::test]
async fn a_dependent_with_another_owner_outlives_an_owner_deleted_in_the_foreground() {
    // "Garbage collector should not delete dependents that have both valid owner and owner
    // that's waiting for dependents to be deleted".
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let rcs: Api<ReplicationController> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let (replicas, half) = (10, 5);
    let rc1 = rcs
        .create(&PostParams::default(), &owner_rc("simpletest-rc-to-be-deleted", replicas, "d"))
        .await
        .unwrap();
    let rc2 = rcs.create(&PostParams::default(), &owner_rc("simpletest-rc-to-stay", 0, "s")).await.unwrap();
    eventually(|| async {
        let st = rcs.get("simpletest-rc-to-be-deleted").await.ok()?.status?;
        (st.replicas == replicas).then_some(())
    })
    .await;

    // Half of rc1's pods get rc2 as an owner as well, by a strategic merge patch (owner
    // references merge by uid).
    let listed = pods.list(&ListParams::default()).await.unwrap().items;
    let also_rc2 = json!({ "metadata": { "ownerReferences": [{ "apiVersion": "v1", "kind": "ReplicationController",
        "name": rc2.metadata.name, "uid": rc2.metadata.uid }] } });
    let mut kept: Vec<String> = Vec::new();
    for pod in &listed[..half] {
        let name = pod.metadata.name.clone().unwrap();
        let patched = pods.patch(&name, &PatchParams::default(), &Patch::Strategic(&also_rc2)).await.unwrap();
        assert_eq!(patched.metadata.owner_references.unwrap().len(), 2);
        kept.push(name);
    }

    rcs.delete("simpletest-rc-to-be-deleted", &foreground(rc1.metadata.uid.clone())).await.unwrap();
    eventually(|| async {
        rcs.get_opt("simpletest-rc-to-be-deleted").await.unwrap().is_none().then_some(())
    })
    .await;

    let left = pods.list(&ListParams::default()).await.unwrap().items;
    let mut names: Vec<String> = left.iter().filter_map(|p| p.metadata.name.clone()).collect();
    names.sort();
    kept.sort();
    assert_eq!(names, kept, "the pods rc2 owns as well are kept, the others deleted");
    for pod in &left {
        assert!(pod.metadata.deletion_timestamp.is_none(), "{:?}", pod.metadata);
        let owners = pod.metadata.owner_references.as_ref().unwrap();
        assert_eq!(owners.len(), 1, "only rc2 is left as an owner: {owners:?}");
        assert_eq!(owners[0].uid, rc2.metadata.uid.clone().unwrap());
    }
}

#[tokio::test]
async fn an_owner_gone_in_the_background_is_dropped_from_a_dependent_another_owner_keeps() {
    // The same collector, for a background delete: the dependent keeps its other owner and loses
    // its reference to the one gone.
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(client.clone());
    let owner =
        |name: &str| of::<k8s_openapi::api::core::v1::ConfigMap>(json!({ "metadata": { "name": name } }));
    let a = cms.create(&PostParams::default(), &owner("a")).await.unwrap();
    let b = cms.create(&PostParams::default(), &owner("b")).await.unwrap();
    let reference = |o: &k8s_openapi::api::core::v1::ConfigMap| json!({ "apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid });
    let dependent =
        json!({ "metadata": { "name": "both", "ownerReferences": [reference(&a), reference(&b)] } });
    cms.create(&PostParams::default(), &of(dependent)).await.unwrap();
    cms.delete("a", &DeleteParams::background()).await.unwrap();
    let kept = eventually(|| async {
        let d = cms.get("both").await.ok()?;
        (d.metadata.owner_references.as_ref()?.len() == 1).then_some(d)
    })
    .await;
    assert_eq!(kept.metadata.owner_references.unwrap()[0].uid, b.metadata.uid.unwrap());
    assert!(kept.metadata.deletion_timestamp.is_none());
}

#[tokio::test]
async fn an_ownership_cycle_does_not_block_a_foreground_delete() {
    // "Garbage collector should not be blocked by dependency circle".
    let sb = cluster(Simulation::default());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let mut uids = Vec::new();
    for name in ["pod1", "pod2", "pod3"] {
        let pod = json!({ "metadata": { "name": name }, "spec": { "containers": [{ "name": "nginx", "image": "nginx" }] } });
        uids.push(pods.create(&PostParams::default(), &of(pod)).await.unwrap().metadata.uid.unwrap());
    }
    // pod1 is owned by pod3, pod2 by pod1, pod3 by pod2.
    for (pod, owner) in [(0, 2), (1, 0), (2, 1)] {
        let patch = json!({ "metadata": { "ownerReferences": [{ "apiVersion": "v1", "kind": "Pod",
            "name": format!("pod{}", owner + 1), "uid": uids[owner], "controller": true, "blockOwnerDeletion": true }] } });
        pods.patch(&format!("pod{}", pod + 1), &PatchParams::default(), &Patch::Strategic(&patch))
            .await
            .unwrap();
    }
    pods.delete("pod1", &foreground(Some(uids[0].clone()))).await.unwrap();
    eventually(|| async { pods.list(&ListParams::default()).await.unwrap().items.is_empty().then_some(()) })
        .await;
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// `/apis` or `/api` in aggregated discovery's form, as a raw GET with upstream's `Accept`.
async fn aggregated(client: &Client, path: &str) -> Value {
    let request = http::Request::get(path).header(http::header::ACCEPT, AGGREGATED).body(Vec::new()).unwrap();
    serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap()
}

/// Upstream's `isGVRPresentAPIDiscovery`.
fn lists(doc: &Value, group: &str, version: &str, resource: &str) -> bool {
    let items = doc["items"].as_array().into_iter().flatten();
    items.filter(|g| g["metadata"]["name"].as_str().unwrap_or("") == group).any(|g| {
        g["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| v["version"] == version)
            .any(|v| v["resources"].as_array().into_iter().flatten().any(|r| r["resource"] == resource))
    })
}

#[tokio::test]
async fn aggregated_discovery_lists_the_built_in_kinds_and_a_new_crds() {
    // "AggregatedDiscovery should support raw aggregated discovery endpoint Accept headers" and
    // "… raw aggregated discovery request for CRDs".
    let sb = Sandbox::new();
    let client = sb.client();
    let apis = aggregated(&client, "/apis").await;
    assert_eq!(apis["kind"], "APIGroupDiscoveryList");
    for (group, version, resource) in [
        ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"),
        ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "v1", "apiservices"),
        ("apps", "v1", "deployments"),
        ("authentication.k8s.io", "v1", "tokenreviews"),
        ("authorization.k8s.io", "v1", "selfsubjectaccessreviews"),
        ("autoscaling", "v1", "horizontalpodautoscalers"),
        ("autoscaling", "v2", "horizontalpodautoscalers"),
        ("batch", "v1", "jobs"),
        ("certificates.k8s.io", "v1", "certificatesigningrequests"),
        ("coordination.k8s.io", "v1", "leases"),
        ("discovery.k8s.io", "v1", "endpointslices"),
        ("events.k8s.io", "v1", "events"),
        ("networking.k8s.io", "v1", "ingresses"),
        ("node.k8s.io", "v1", "runtimeclasses"),
        ("policy", "v1", "poddisruptionbudgets"),
        ("scheduling.k8s.io", "v1", "priorityclasses"),
        ("storage.k8s.io", "v1", "csinodes"),
    ] {
        assert!(lists(&apis, group, version, resource), "{group}/{version} {resource} is not in /apis");
    }
    assert!(lists(&aggregated(&client, "/api").await, "", "v1", "namespaces"));

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = json!({
        "metadata": { "name": "testcrds.group-x7k2q.example.com" },
        "spec": {
            "group": "group-x7k2q.example.com",
            "scope": "Namespaced",
            "names": { "plural": "testcrds", "singular": "testcrd", "kind": "testcrd", "listKind": "testcrdList" },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }],
        },
    });
    crds.create(&PostParams::default(), &of(crd)).await.unwrap();
    eventually(|| async {
        lists(&aggregated(&client, "/apis").await, "group-x7k2q.example.com", "v1", "testcrds").then_some(())
    })
    .await;
}

/// A raw GET: its status code and JSON body.
async fn get_raw(client: &Client, path: &str) -> (u16, Value) {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    let response = client.send(request.map(kube::client::Body::from)).await.unwrap();
    let code = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    (code, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn a_list_continued_past_its_snapshot_goes_on_inconsistently_from_the_last_key() {
    // "Servers with support for API chunking should support continue listing from the last key
    // if the original version has been compacted away, though the list is inconsistent": the
    // sandbox lets a snapshot go after five minutes or 64 newer ones, as etcd compacts.
    let sb = Sandbox::new();
    let client = sb.client();
    let templates: Api<k8s_openapi::api::core::v1::PodTemplate> = Api::default_namespaced(client.clone());
    let total = 40;
    for i in 0..total {
        let t = json!({ "metadata": { "name": format!("template-{i:04}") },
            "template": { "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } });
        templates.create(&PostParams::default(), &of(t)).await.unwrap();
    }
    let base = "/api/v1/namespaces/default/podtemplates?limit=4";
    let (_, first) = get_raw(&client, base).await;
    let first_rv = first["metadata"]["resourceVersion"].clone();
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    assert_eq!(first["metadata"]["remainingItemCount"], total - 4);

    // 64 newer paginated lists let the first one's snapshot go; a write moves the version on.
    for _ in 0..64 {
        get_raw(&client, base).await;
    }
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(&PostParams::default(), &of(json!({ "metadata": { "name": "later" } }))).await.unwrap();

    let (code, expired) = get_raw(&client, &format!("{base}&continue={token}")).await;
    assert_eq!(code, 410, "{expired}");
    assert_eq!(expired["reason"], "Expired");
    assert!(
        expired["message"].as_str().unwrap().contains("use the continue token in this response"),
        "{expired}"
    );
    let mut token =
        expired["metadata"]["continue"].as_str().expect("an inconsistent continue token").to_owned();

    let mut found = 4;
    let mut last_rv = None;
    loop {
        let (code, page) = get_raw(&client, &format!("{base}&continue={token}")).await;
        assert_eq!(code, 200, "{page}");
        let rv = page["metadata"]["resourceVersion"].clone();
        assert_ne!(rv, first_rv, "the rest is listed at the latest version");
        assert_eq!(*last_rv.get_or_insert_with(|| rv.clone()), rv, "one version for the rest");
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 4);
        for item in items {
            assert_eq!(item["metadata"]["name"], format!("template-{found:04}"));
            found += 1;
        }
        match page["metadata"]["continue"].as_str() {
            Some(next) if !next.is_empty() => {
                assert_eq!(page["metadata"]["remainingItemCount"], total - found);
                token = next.to_owned();
            }
            _ => break,
        }
    }
    assert_eq!(found, total);
}

/// Upstream's `NewRandomNameMultipleVersionCustomResourceDefinition`'s CRD (cluster-scoped,
/// served at `v1beta1` and `v1`, in a group of its own) with `schema` for each version; created
/// and established. Its collection's path.
async fn noxu_crd(client: &Client, group: &str, schema: Value) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let plural = "noxus";
    let version = |name: &str, storage: bool| json!({ "name": name, "served": true, "storage": storage, "schema": { "openAPIV3Schema": schema } });
    let crd = json!({
        "metadata": { "name": format!("{plural}.{group}") },
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": { "plural": plural, "singular": format!("{plural}-one"), "kind": "WishIHadChosenNoxu", "listKind": "NoxuItemList" },
            "versions": [version("v1beta1", true), version("v1", false)],
        },
    });
    crds.create(&PostParams::default(), &of(crd)).await.unwrap();
    let path = format!("/apis/{group}/v1beta1/{plural}");
    eventually(|| async { (get_raw(client, &path).await.0 == 200).then_some(()) }).await;
    path
}

/// A server-side apply of the YAML `body` to `path/name` with `fieldValidation=Strict`: the code,
/// the answer, and the warnings.
async fn apply_strict(client: &Client, path: &str, name: &str, body: &str) -> (u16, String, Vec<String>) {
    let uri = format!("{path}/{name}?fieldManager=field_validation_mgr&fieldValidation=Strict");
    let request = http::Request::patch(uri)
        .header(http::header::CONTENT_TYPE, "application/apply-patch+yaml")
        .body(body.as_bytes().to_vec())
        .unwrap();
    let response = client.send(request.map(kube::client::Body::from)).await.unwrap();
    let code = response.status().as_u16();
    let warnings =
        response.headers().get_all("warning").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
    let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    (code, String::from_utf8_lossy(&body).into_owned(), warnings)
}

/// The `ports` of upstream's field validation tests' schemas.
fn ports_schema() -> Value {
    json!({
        "type": "array",
        "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
        "x-kubernetes-list-type": "map",
        "items": {
            "type": "object",
            "required": ["containerPort", "protocol"],
            "properties": {
                "containerPort": { "format": "int32", "type": "integer" },
                "hostIP": { "type": "string" },
                "hostPort": { "format": "int32", "type": "integer" },
                "name": { "type": "string" },
                "protocol": { "type": "string" },
            },
        },
    })
}

/// A custom resource as upstream's field validation tests apply it: `extra` lines inserted
/// before `spec`, `spec_extra` at the start of `spec`.
fn noxu_yaml(group: &str, name: &str, meta_extra: &str, extra: &str, spec_extra: &str) -> String {
    format!(
        "\napiVersion: {group}/v1beta1\nkind: WishIHadChosenNoxu\nmetadata:\n  name: {name}\n{meta_extra}  finalizers:\n  - test-finalizer\n{extra}spec:\n{spec_extra}  foo: foo1\n  cronSpec: \"* * * * */5\"\n  ports:\n  - name: x\n    containerPort: 80\n    protocol: TCP"
    )
}

#[tokio::test]
async fn a_server_side_apply_of_a_custom_resource_is_checked_as_upstreams_field_validation() {
    // The five "FieldValidation" conformance tests on custom resources.
    let sb = Sandbox::new();
    let client = sb.client();
    let spec = |preserve: bool, extra: Value| {
        let mut spec = json!({ "type": "object", "properties": {
            "foo": { "type": "string" },
            "cronSpec": { "type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$" },
            "ports": ports_schema(),
        } });
        if preserve {
            spec["x-kubernetes-preserve-unknown-fields"] = json!(true);
        }
        spec["properties"].as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({ "type": "object", "properties": { "spec": spec } })
    };

    // "should create/apply a valid CR for CRD with validation schema": an unqualified finalizer
    // is only warned of on a custom resource.
    let strict = noxu_crd(&client, "strict.example.com", spec(false, json!({}))).await;
    let (code, answer, warnings) =
        apply_strict(&client, &strict, "mytest", &noxu_yaml("strict.example.com", "mytest", "", "", ""))
            .await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(
        warnings,
        [
            r#"299 - "metadata.finalizers: \"test-finalizer\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers""#
        ]
    );

    // "should create/apply an invalid CR with extra properties for CRD with validation schema".
    let unknown = noxu_yaml("strict.example.com", "mytest2", "", "unknownField: unknown\n", "");
    let (code, answer, _) = apply_strict(&client, &strict, "mytest2", &unknown).await;
    assert_eq!(code, 500, "{answer}");
    assert!(answer.contains(r#"failed to create typed patch object (/mytest2; strict.example.com/v1beta1, Kind=WishIHadChosenNoxu): .unknownField: field not declared in schema"#), "{answer}");

    // "should create/apply a CR with unknown fields for CRD with no validation schema".
    let open = noxu_crd(
        &client,
        "open.example.com",
        json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true }),
    )
    .await;
    let (code, answer, _) = apply_strict(
        &client,
        &open,
        "mytest",
        &noxu_yaml("open.example.com", "mytest", "", "", "  unknown: uk1\n"),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
    assert!(answer.contains(r#""unknown":"uk1""#), "{answer}");

    // "should detect unknown metadata fields in both the root and embedded object of a CR".
    let template = json!({ "template": { "type": "object", "x-kubernetes-embedded-resource": true, "properties": {
        "metadata": { "type": "object", "properties": { "name": { "type": "string" } } },
        "spec": { "type": "object" },
    } } });
    let embedded = noxu_crd(&client, "embedded.example.com", spec(true, template)).await;
    let body = noxu_yaml(
        "embedded.example.com",
        "mytest",
        "  unknownMeta: unknown\n",
        "",
        "  template:\n    apiversion: foo/v1\n    kind: Sub\n    metadata:\n        unknownSubMeta: unknown\n        name: subobject\n        namespace: default\n",
    );
    let (code, answer, _) = apply_strict(&client, &embedded, "mytest", &body).await;
    assert_eq!(code, 500, "{answer}");
    assert!(
        answer.contains(".spec.template.metadata.unknownSubMeta: field not declared in schema")
            || answer.contains(".metadata.unknownMeta: field not declared in schema"),
        "{answer}"
    );

    // "should detect duplicates in a CR when preserving unknown fields".
    let duplicates = noxu_crd(&client, "dup.example.com", spec(true, json!({}))).await;
    let body = noxu_yaml("dup.example.com", "mytest", "", "", "  unknown: uk1\n  foo: foo1\n");
    let (code, answer, _) = apply_strict(&client, &duplicates, "mytest", &body).await;
    assert_eq!(code, 400, "{answer}");
    assert!(answer.contains(r#"line 11: key \"foo\" already set in map"#), "{answer}");

    // A built-in kind is held to the in-tree rule: an unqualified finalizer is refused.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(client.clone());
    let err = cms
        .create(
            &PostParams::default(),
            &of(json!({ "metadata": { "name": "f", "finalizers": ["test-finalizer"] } })),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("name is neither a standard finalizer name nor is it fully qualified"),
        "{err}"
    );
}

#[tokio::test]
async fn quotas_count_objects_and_pods_by_scope_and_release_them() {
    // "ResourceQuota should create a ResourceQuota and capture the life of a secret / service /
    // replica set / replication controller", "… verify ResourceQuota with best effort scope" and
    // "… with terminating scopes": usage goes up with each object its scope counts, and back down.
    let sb = cluster(Simulation::default());
    let client = sb.client();
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> = Api::default_namespaced(client.clone());
    let quota = |name: &str, hard: Value, scopes: &[&str]| {
        of::<k8s_openapi::api::core::v1::ResourceQuota>(
            json!({ "metadata": { "name": name }, "spec": { "hard": hard, "scopes": scopes } }),
        )
    };
    let counts = json!({ "secrets": "10", "services": "10", "services.nodeports": "1",
        "services.loadbalancers": "1", "replicationcontrollers": "5", "count/replicasets.apps": "5" });
    quotas.create(&PostParams::default(), &quota("counts", counts, &[])).await.unwrap();
    for (name, scope) in
        [("be", "BestEffort"), ("nbe", "NotBestEffort"), ("term", "Terminating"), ("nterm", "NotTerminating")]
    {
        quotas.create(&PostParams::default(), &quota(name, json!({ "pods": "5" }), &[scope])).await.unwrap();
    }
    let used = |name: &'static str, resource: &'static str| {
        let quotas = quotas.clone();
        async move {
            let q = quotas.get(name).await.ok()?;
            let used = q.status?.used?;
            used.get(resource).map(|v| v.0.clone())
        }
    };
    let wait_used = |name: &'static str, resource: &'static str, want: &'static str| {
        let used = &used;
        async move {
            eventually(|| async { (used(name, resource).await.as_deref() == Some(want)).then_some(()) }).await
        }
    };
    // The namespace's own `kubernetes` Service counts from the start.
    wait_used("counts", "secrets", "0").await;
    wait_used("counts", "services", "1").await;

    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::default_namespaced(client.clone());
    secrets.create(&PostParams::default(), &of(json!({ "metadata": { "name": "s" } }))).await.unwrap();
    wait_used("counts", "secrets", "1").await;
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::default_namespaced(client.clone());
    let service = |name: &str, kind: &str| {
        of::<k8s_openapi::api::core::v1::Service>(
            json!({ "metadata": { "name": name }, "spec": { "type": kind, "ports": [{ "port": 80 }] } }),
        )
    };
    services.create(&PostParams::default(), &service("np", "NodePort")).await.unwrap();
    wait_used("counts", "services", "2").await;
    wait_used("counts", "services.nodeports", "1").await;
    // A load balancer takes a node port too: past the one the quota allows.
    let err = services.create(&PostParams::default(), &service("lb", "LoadBalancer")).await.unwrap_err();
    assert!(err.to_string().contains("exceeded quota: counts"), "{err}");
    let rcs: Api<ReplicationController> = Api::default_namespaced(client.clone());
    rcs.create(&PostParams::default(), &owner_rc("rc", 0, "quota")).await.unwrap();
    wait_used("counts", "replicationcontrollers", "1").await;
    let sets: Api<k8s_openapi::api::apps::v1::ReplicaSet> = Api::default_namespaced(client.clone());
    let rs = json!({ "metadata": { "name": "rs" }, "spec": { "replicas": 0, "selector": { "matchLabels": { "a": "b" } },
        "template": { "metadata": { "labels": { "a": "b" } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } });
    sets.create(&PostParams::default(), &of(rs)).await.unwrap();
    wait_used("counts", "count/replicasets.apps", "1").await;

    // Pods by scope: no requests is best effort; requests and limits are not; a deadline
    // makes a pod terminating.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let resources = json!({ "requests": { "cpu": "100m", "memory": "10Mi" }, "limits": { "cpu": "100m", "memory": "10Mi" } });
    let pod = |name: &str, resources: Value, deadline: Option<i64>| {
        let mut p = json!({ "metadata": { "name": name },
            "spec": { "containers": [{ "name": "c", "image": "nginx", "resources": resources }] } });
        if let Some(d) = deadline {
            p["spec"]["activeDeadlineSeconds"] = json!(d);
        }
        of::<Pod>(p)
    };
    pods.create(&PostParams::default(), &pod("best-effort", json!({}), None)).await.unwrap();
    pods.create(&PostParams::default(), &pod("burstable", resources, Some(3600))).await.unwrap();
    wait_used("be", "pods", "1").await;
    wait_used("nbe", "pods", "1").await;
    wait_used("term", "pods", "1").await;
    wait_used("nterm", "pods", "1").await;

    // Every object gone, every count back to zero.
    let gone = DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() };
    secrets.delete("s", &gone).await.unwrap();
    services.delete("np", &gone).await.unwrap();
    rcs.delete("rc", &gone).await.unwrap();
    sets.delete("rs", &gone).await.unwrap();
    pods.delete("best-effort", &gone).await.unwrap();
    pods.delete("burstable", &gone).await.unwrap();
    wait_used("counts", "services", "1").await;
    for (name, resource) in [
        ("counts", "secrets"),
        ("counts", "services.nodeports"),
        ("counts", "replicationcontrollers"),
        ("counts", "count/replicasets.apps"),
        ("be", "pods"),
        ("nbe", "pods"),
        ("term", "pods"),
        ("nterm", "pods"),
    ] {
        wait_used(name, resource, "0").await;
    }
}

#[tokio::test]
async fn a_quota_status_patched_by_hand_is_reset_to_its_spec() {
    // "ResourceQuota should apply changes to a resourcequota status": a /status patch is taken,
    // the spec is not changed by it, and the quota controller sets the status back.
    let sb = cluster(Simulation::default());
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> = Api::default_namespaced(sb.client());
    let q = json!({ "metadata": { "name": "rq" }, "spec": { "hard": { "cpu": "1", "memory": "1Gi" } } });
    quotas.create(&PostParams::default(), &of(q)).await.unwrap();
    let patch = json!({ "status": { "hard": { "cpu": "2", "memory": "2Gi" } } });
    let patched =
        quotas.patch_status("rq", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let hard = patched.status.unwrap().hard.unwrap();
    assert_eq!((hard["cpu"].0.as_str(), hard["memory"].0.as_str()), ("2", "2Gi"));
    assert_eq!(patched.spec.unwrap().hard.unwrap()["cpu"].0, "1");
    eventually(|| async {
        let hard = quotas.get("rq").await.ok()?.status?.hard?;
        (hard["cpu"].0 == "1" && hard["memory"].0 == "1Gi").then_some(())
    })
    .await;
}

#[tokio::test]
async fn webhook_configurations_with_match_conditions_that_do_not_compile_are_refused() {
    // "AdmissionWebhook should reject validating / mutating webhook configurations with invalid
    // match conditions".
    let sb = Sandbox::new();
    let client = sb.client();
    let webhook = |name: &str| {
        json!({ "metadata": { "name": name }, "webhooks": [{
            "name": "deny.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": { "url": "https://127.0.0.1:1/x" },
            "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"] }],
            "matchConditions": [{ "name": "invalid-expression-1", "expression": "... [] bad expression" }],
        }] })
    };
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let err = validating.create(&PostParams::default(), &of(webhook("v"))).await.unwrap_err();
    assert!(err.to_string().contains("compilation failed"), "{err}");
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client);
    let err = mutating.create(&PostParams::default(), &of(webhook("m"))).await.unwrap_err();
    assert!(err.to_string().contains("compilation failed"), "{err}");
}

#[tokio::test]
async fn crds_are_listed_by_label_deleted_by_collection_and_take_status_changes() {
    // "CustomResourceDefinition resources … listing custom resource definition objects works"
    // and "… getting/updating/patching custom resource definition status sub-resource works".
    let sb = Sandbox::new();
    let crds: Api<CustomResourceDefinition> = Api::all(sb.client());
    let crd = |n: usize| {
        of::<CustomResourceDefinition>(json!({
            "metadata": { "name": format!("things{n}.list.example.com"), "labels": { "e2e-list-test-uuid": "u1" } },
            "spec": { "group": "list.example.com", "scope": "Cluster",
                "names": { "plural": format!("things{n}"), "singular": format!("thing{n}"), "kind": format!("Thing{n}"), "listKind": format!("Thing{n}List") },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }] },
        }))
    };
    for n in 0..10 {
        crds.create(&PostParams::default(), &crd(n)).await.unwrap();
    }
    let selected = ListParams::default().labels("e2e-list-test-uuid=u1");
    assert_eq!(crds.list(&selected).await.unwrap().items.len(), 10);

    // The status: read, a condition set by an update, another by a patch; the spec untouched.
    let name = "things0.list.example.com";
    let mut current = crds.get_status(name).await.unwrap();
    let condition = |kind: &str| json!({ "type": kind, "status": "True", "reason": "E2E", "message": "Set from an e2e test", "lastTransitionTime": "2026-01-01T00:00:00Z" });
    let status = current.status.get_or_insert_with(Default::default);
    status.conditions.get_or_insert_with(Vec::new).push(of(condition("StatusUpdate")));
    let updated = crds.replace_status(name, &PostParams::default(), &current).await.unwrap();
    let types = |c: &CustomResourceDefinition| -> Vec<String> {
        c.status.iter().flat_map(|s| s.conditions.iter().flatten()).map(|c| c.type_.clone()).collect()
    };
    assert!(types(&updated).contains(&"StatusUpdate".to_owned()), "{:?}", types(&updated));
    let mut conditions = updated.status.clone().unwrap().conditions.unwrap();
    conditions.push(of(condition("StatusPatched")));
    let patch = json!({ "status": { "conditions": conditions } });
    let patched = crds.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert!(types(&patched).contains(&"StatusPatched".to_owned()), "{:?}", types(&patched));
    assert_eq!(patched.spec.names.plural, "things0");

    crds.delete_collection(&DeleteParams::default(), &selected).await.unwrap();
    eventually(|| async { crds.list(&selected).await.unwrap().items.is_empty().then_some(()) }).await;
}

#[tokio::test]
async fn a_namespace_takes_a_finalizer_by_finalize_and_conditions_by_status() {
    // "Namespaces should apply a finalizer to a Namespace" and "… should apply changes to a
    // namespace status".
    let sb = Sandbox::new();
    let client = sb.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(&PostParams::default(), &of(json!({ "metadata": { "name": "e2e-fin" } })))
        .await
        .unwrap();
    let finalize = |finalizers: Value| {
        let client = client.clone();
        async move {
            let body = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "e2e-fin" },
                "spec": { "finalizers": finalizers } });
            let request = http::Request::put("/api/v1/namespaces/e2e-fin/finalize")
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .unwrap();
            let answer: Value = serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap();
            answer["spec"]["finalizers"].clone()
        }
    };
    assert_eq!(
        finalize(json!(["kubernetes", "e2e.example.com/fakeFinalizer"])).await,
        json!(["kubernetes", "e2e.example.com/fakeFinalizer"])
    );
    let stored = namespaces.get("e2e-fin").await.unwrap();
    assert_eq!(stored.spec.unwrap().finalizers.unwrap(), ["kubernetes", "e2e.example.com/fakeFinalizer"]);
    assert_eq!(finalize(json!(["kubernetes"])).await, json!(["kubernetes"]));

    let patch = json!({ "status": { "conditions": [{ "type": "StatusPatch", "status": "True", "reason": "E2E", "message": "Patched by an e2e test" }] } });
    let patched =
        namespaces.patch_status("e2e-fin", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let status = patched.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Active"));
    assert_eq!(status.conditions.unwrap()[0].type_, "StatusPatch");
    let read = namespaces.get_status("e2e-fin").await.unwrap();
    assert_eq!(read.status.unwrap().conditions.unwrap()[0].reason.as_deref(), Some("E2E"));
}

#[tokio::test]
async fn a_quota_is_updated_listed_patched_and_deleted_by_collection() {
    // "ResourceQuota should be able to update and delete ResourceQuota" and "… should manage the
    // lifecycle of a ResourceQuota".
    let sb = Sandbox::new();
    let client = sb.client();
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> = Api::default_namespaced(client.clone());
    let q = json!({ "metadata": { "name": "test-quota", "labels": { "e2e-rq-label": "test-quota" } },
        "spec": { "hard": { "cpu": "1", "memory": "500Mi" } } });
    let mut created = quotas.create(&PostParams::default(), &of(q)).await.unwrap();
    created.spec.as_mut().unwrap().hard.as_mut().unwrap().insert("cpu".into(), of(json!("2")));
    let updated = quotas.replace("test-quota", &PostParams::default(), &created).await.unwrap();
    assert_eq!(updated.spec.unwrap().hard.unwrap()["cpu"].0, "2");

    let everywhere: Api<k8s_openapi::api::core::v1::ResourceQuota> = Api::all(client);
    let selected = ListParams::default().labels("e2e-rq-label=test-quota");
    assert_eq!(everywhere.list(&selected).await.unwrap().items.len(), 1);
    let patch = json!({ "spec": { "hard": { "memory": "1Gi" } } });
    let patched =
        quotas.patch("test-quota", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let hard = patched.spec.unwrap().hard.unwrap();
    assert_eq!((hard["cpu"].0.as_str(), hard["memory"].0.as_str()), ("2", "1Gi"));

    quotas.delete_collection(&DeleteParams::default(), &selected).await.unwrap();
    assert!(quotas.get_opt("test-quota").await.unwrap().is_none());
}

#[tokio::test]
async fn concurrent_watches_from_each_version_see_the_same_events_in_the_same_order() {
    // "Watchers should receive events on concurrent watches in same order": watches started at
    // each version a write made see the writes after it in one order.
    use futures::StreamExt;
    use kube::api::{WatchEvent, WatchParams};
    let sb = Sandbox::new();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(sb.client());
    let mut versions = Vec::new();
    for i in 0..20 {
        let cm = json!({ "metadata": { "name": format!("cm-{}", i % 5) }, "data": { "i": i.to_string() } });
        let written = match cms.get_opt(&format!("cm-{}", i % 5)).await.unwrap() {
            Some(_) => cms.replace(&format!("cm-{}", i % 5), &PostParams::default(), &of(cm)).await.unwrap(),
            None => cms.create(&PostParams::default(), &of(cm)).await.unwrap(),
        };
        versions.push(written.metadata.resource_version.unwrap());
    }
    let last = versions.last().unwrap().clone();
    let mut seen = Vec::new();
    for from in &versions[..10] {
        let mut stream = cms.watch(&WatchParams::default(), from).await.unwrap().boxed();
        let mut order = Vec::new();
        while let Some(event) = stream.next().await {
            let (WatchEvent::Added(o) | WatchEvent::Modified(o)) = event.unwrap() else { continue };
            let rv = o.metadata.resource_version.unwrap();
            order.push(rv.clone());
            if rv == last {
                break;
            }
        }
        seen.push(order);
    }
    for (i, order) in seen.iter().enumerate() {
        assert_eq!(order[..], versions[i + 1..], "the watch from {}", versions[i]);
    }
}
