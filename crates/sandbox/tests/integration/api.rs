//! The sandbox through a real `kube::Client`: CRUD, conflicts, finalizers, garbage collection,
//! selectors, pagination, patches, fault injection and parallel writers.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::Status;
use kube::{Client, Error, Resource};
use kube_sandbox::{FaultKind, FaultRule, Rollout, Sandbox, SandboxConfig, StoreConfig};
use serde_json::json;

fn instant() -> Sandbox {
    Sandbox::with_config(SandboxConfig { rollout: Rollout::Instant, ..SandboxConfig::bare() })
}

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels.iter().cloned().collect::<BTreeMap<_, _>>() },
        "data": { "app": name },
    }))
    .unwrap()
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": { "metadata": { "labels": { "app": name } }, "spec": { "containers": [{ "name": "web", "image": "nginx:1.27" }] } },
        },
    }))
    .unwrap()
}

fn api_error(e: Error) -> Status {
    match e {
        Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn configmap_crud_with_server_fields() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let created = api.create(&PostParams::default(), &cm("web", &[])).await.unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some());
    let rv1: u64 = meta.resource_version.as_ref().unwrap().parse().unwrap();

    let mut changed = created.clone();
    changed.data.as_mut().unwrap().insert("app".into(), "v2".into());
    let updated = api.replace("web", &PostParams::default(), &changed).await.unwrap();
    let rv2: u64 = updated.metadata.resource_version.as_ref().unwrap().parse().unwrap();
    assert!(rv2 > rv1);
    assert_eq!(updated.metadata.uid, created.metadata.uid);

    // A no-op update keeps the version.
    let same = api.replace("web", &PostParams::default(), &updated).await.unwrap();
    assert_eq!(same.metadata.resource_version, updated.metadata.resource_version);

    assert_eq!(api.get("web").await.unwrap().data.unwrap()["app"], "v2");
    api.delete("web", &DeleteParams::default()).await.unwrap();
    let e = api_error(api.get("web").await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    assert_eq!(e.message, "configmaps \"web\" not found");
}

#[tokio::test]
async fn every_resource_round_trips() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    async fn crud<K>(c: &Client, obj: K)
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::default_namespaced(c.clone());
        let made = api.create(&PostParams::default(), &obj).await.unwrap();
        let name = made.meta().name.clone().unwrap();
        assert_eq!(api.list(&ListParams::default()).await.unwrap().items.len(), 1, "{}", K::plural(&()));
        api.get(&name).await.unwrap();
        api.delete(&name, &DeleteParams::default()).await.unwrap();
        assert!(api.get_opt(&name).await.unwrap().is_none());
    }
    crud(&c, cm("a", &[])).await;
    crud(
        &c,
        serde_json::from_value::<Secret>(json!({ "metadata": { "name": "s" }, "stringData": { "k": "v" } }))
            .unwrap(),
    )
    .await;
    crud(&c, deployment("web", 1)).await;
    crud(
        &c,
        serde_json::from_value::<Lease>(
            json!({ "metadata": { "name": "leader" }, "spec": { "holderIdentity": "me" } }),
        )
        .unwrap(),
    )
    .await;
    crud(&c, serde_json::from_value::<Event>(json!({ "metadata": { "name": "e1" }, "involvedObject": { "name": "web" }, "reason": "Created", "message": "hi" })).unwrap()).await;

    // events.k8s.io/v1 shares storage with v1 events.
    let new_events: Api<k8s_openapi::api::events::v1::Event> = Api::default_namespaced(c.clone());
    let ev: k8s_openapi::api::events::v1::Event = serde_json::from_value(json!({
        "metadata": { "name": "e2" }, "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "Scaled", "note": "to 5",
        "regarding": { "kind": "Deployment", "name": "web" }, "reportingController": "c", "reportingInstance": "i", "action": "Scale", "type": "Normal",
    }))
    .unwrap();
    new_events.create(&PostParams::default(), &ev).await.unwrap();
    let core: Api<Event> = Api::default_namespaced(c.clone());
    let seen = core.get("e2").await.unwrap();
    assert_eq!(seen.message.as_deref(), Some("to 5"));
    assert_eq!(seen.involved_object.name.as_deref(), Some("web"));

    // Namespaces are cluster-scoped and come with default and kube-system.
    let ns: Api<Namespace> = Api::all(c.clone());
    let names: Vec<_> = ns
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()) && names.contains(&"kube-system".to_string()));
}

#[tokio::test]
async fn conflicts_and_already_exists() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let first = api.create(&PostParams::default(), &cm("web", &[])).await.unwrap();
    let e = api_error(api.create(&PostParams::default(), &cm("web", &[])).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));

    let mut a = first.clone();
    a.data = Some([("k".to_string(), "a".to_string())].into());
    api.replace("web", &PostParams::default(), &a).await.unwrap();
    let mut stale = first;
    stale.data = Some([("k".to_string(), "b".to_string())].into());
    let e = api_error(api.replace("web", &PostParams::default(), &stale).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert!(e.message.contains("the object has been modified"), "{}", e.message);
    assert_eq!(api.get("web").await.unwrap().data.unwrap()["k"], "a", "the stale write changed nothing");
}

#[tokio::test]
async fn generate_name_namespace_and_name_rules() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let api: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let made = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "generateName": "web-" } })).unwrap(),
        )
        .await
        .unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");

    let missing: Api<ConfigMap> = Api::namespaced(c.clone(), "nope");
    let e = api_error(missing.create(&PostParams::default(), &cm("x", &[])).await.unwrap_err());
    assert_eq!((e.code, e.message.as_str()), (404, "namespaces \"nope\" not found"));

    let e = api_error(api.create(&PostParams::default(), &cm("Bad_Name", &[])).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(e.message.contains("Bad_Name"), "{}", e.message);
}

/// Asked to, the rollout keeps its status writes to the Deployment controller's client rate: 10
/// a second after a burst of 15 here, every pod ready in the end.
#[tokio::test(start_paused = true)]
async fn rollout_status_writes_keep_to_the_rate_limit() {
    let sb = Sandbox::with_config(SandboxConfig {
        rollout: Rollout::Paced(Duration::from_millis(100)),
        status_writes_per_second: Some(10),
        ..SandboxConfig::bare()
    });
    let api: Api<Deployment> = Api::default_namespaced(sb.client());
    for i in 0..20 {
        api.create(&PostParams::default(), &deployment(&format!("web-{i}"), 3)).await.unwrap();
    }
    // Each status write readies one more pod.
    let ready = async || -> i32 {
        let list = api.list(&ListParams::default()).await.unwrap();
        list.items.iter().filter_map(|d| d.status.as_ref()?.ready_replicas).sum()
    };
    tokio::time::sleep(Duration::from_millis(1050)).await;
    let after_a_second = ready().await;
    assert!((20..=26).contains(&after_a_second), "{after_a_second} pods ready after 1 s");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(ready().await, 60);
}

#[tokio::test]
async fn deployments_are_defaulted_validated_and_roll_out() {
    let sb = instant();
    let api: Api<Deployment> = Api::default_namespaced(sb.client());
    let made = api.create(&PostParams::default(), &deployment("web", 3)).await.unwrap();
    let spec = &made.spec;
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    assert_eq!(made.metadata.generation, Some(1));

    let ready = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let d = api.get("web").await.unwrap();
            if d.status.as_ref().and_then(|s| s.ready_replicas) == Some(3) {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(ready.status.unwrap().observed_generation, Some(1));

    // Scale through the scale subresource: generation bumps, status follows.
    let scale = api
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 5 } })))
        .await
        .unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(5));
    let d = api.get("web").await.unwrap();
    assert_eq!((d.spec.replicas, d.metadata.generation), (Some(5), Some(2)));

    // Status written through the main endpoint is ignored. The rollout writes the status
    // meanwhile: a stale replace is tried again, as a client does.
    let after = loop {
        let mut d = api.get("web").await.unwrap();
        d.status.as_mut().unwrap().replicas = Some(99);
        match api.replace("web", &PostParams::default(), &d).await {
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            other => break other.unwrap(),
        }
    };
    assert_ne!(after.status.unwrap().replicas, Some(99));

    // Invalid: negative replicas, selector mismatch, selector change.
    let mut bad = deployment("bad", -1);
    bad.spec.template.metadata.as_mut().unwrap().labels =
        Some([("app".to_string(), "other".to_string())].into());
    let e = api_error(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(e.code, 422);
    assert!(e.message.contains("spec.replicas") && e.message.contains("does not match"), "{}", e.message);
    let e = api_error(api.patch("web", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "selector": { "matchLabels": { "app": "x" } }, "template": { "metadata": { "labels": { "app": "x" } } } } }))).await.unwrap_err());
    assert!(e.message.contains("field is immutable"), "{}", e.message);
}

#[tokio::test]
async fn patch_types() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<Deployment> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &deployment("web", 1)).await.unwrap();
    let pp = PatchParams::default();
    api.patch("web", &pp, &Patch::Merge(json!({ "metadata": { "labels": { "a": "1" } } }))).await.unwrap();
    api.patch("web", &pp, &Patch::Strategic(json!({ "spec": { "template": { "spec": { "containers": [{ "name": "sidecar", "image": "busybox:1" }] } } } }))).await.unwrap();
    let d = api.get("web").await.unwrap();
    let names: Vec<_> = d.spec.template.spec.unwrap().containers.into_iter().map(|c| c.name).collect();
    // Merged by name, and — as upstream's `mergeSortedSlice` orders it — the new one first.
    assert_eq!(names, ["sidecar", "web"], "strategic merge adds by name");
    let d = api.get("web").await.unwrap();
    assert_eq!(d.metadata.labels.unwrap()["a"], "1");
}

#[tokio::test]
async fn server_side_apply_creates_owns_and_conflicts() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let applied = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "web" }, "data": { "a": "1", "b": "2" } });
    let made = api.patch("web", &PatchParams::apply("alice"), &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(made.metadata.managed_fields.unwrap()[0].manager.as_deref(), Some("alice"));

    let bob = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "web" }, "data": { "a": "9" } });
    let e = api_error(api.patch("web", &PatchParams::apply("bob"), &Patch::Apply(&bob)).await.unwrap_err());
    assert_eq!(e.code, 409);
    assert!(e.message.contains("alice") && e.message.contains(".data.a"), "{}", e.message);
    let forced = api.patch("web", &PatchParams::apply("bob").force(), &Patch::Apply(&bob)).await.unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");

    // alice stops applying b: it is removed; a now belongs to bob and stays.
    let alice2 =
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "web" }, "data": {} });
    let after = api.patch("web", &PatchParams::apply("alice"), &Patch::Apply(&alice2)).await.unwrap();
    assert_eq!(after.data.unwrap(), [("a".to_string(), "9".to_string())].into());
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let mut obj = cm("web", &[]);
    obj.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &obj).await.unwrap();
    api.delete("web", &DeleteParams::default()).await.unwrap();
    let held = api.get("web").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    api.patch("web", &PatchParams::default(), &Patch::Merge(json!({ "metadata": { "finalizers": null } })))
        .await
        .unwrap();
    assert!(api.get_opt("web").await.unwrap().is_none());
}

#[tokio::test]
async fn delete_preconditions() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("web", &[])).await.unwrap();
    let e = api_error(
        api.delete(
            "web",
            &DeleteParams {
                preconditions: Some(kube::api::Preconditions {
                    uid: Some("wrong".into()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 409);
    // `rest.BeforeDelete`'s words, naming the object by its kind.
    assert!(e.message.contains("does not match the UID in record"), "{}", e.message);
    assert!(api.get_opt("web").await.unwrap().is_some());
}

fn owned_by(d: &mut Deployment, owner: &ConfigMap) {
    d.metadata.owner_references =
        Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.metadata.name.clone().unwrap(),
            uid: owner.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
}

#[tokio::test]
async fn garbage_collection_background_foreground_and_orphan() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let deps: Api<Deployment> = Api::default_namespaced(c.clone());
    for (name, policy) in [
        ("bg", DeleteParams::background()),
        ("fg", DeleteParams::foreground()),
        ("or", DeleteParams::orphan()),
    ] {
        let owner = cms.create(&PostParams::default(), &cm(name, &[])).await.unwrap();
        let mut d = deployment(name, 1);
        owned_by(&mut d, &owner);
        deps.create(&PostParams::default(), &d).await.unwrap();
        cms.delete(name, &policy).await.unwrap();
        assert!(cms.get_opt(name).await.unwrap().is_none(), "{name}: owner gone");
        let left = deps.get_opt(name).await.unwrap();
        if name == "or" {
            let left = left.expect("orphaned dependent stays");
            assert!(
                left.metadata.owner_references.unwrap_or_default().is_empty(),
                "and loses its owner reference"
            );
        } else {
            assert!(left.is_none(), "{name}: dependent collected");
        }
    }

    // Without the garbage collector (like envtest), dependents stay.
    let no_gc = Sandbox::with_config(SandboxConfig {
        store: StoreConfig { garbage_collection: false, ..StoreConfig::default() },
        ..SandboxConfig::bare()
    });
    let cms: Api<ConfigMap> = Api::default_namespaced(no_gc.client());
    let deps: Api<Deployment> = Api::default_namespaced(no_gc.client());
    let owner = cms.create(&PostParams::default(), &cm("web", &[])).await.unwrap();
    let mut d = deployment("web", 1);
    owned_by(&mut d, &owner);
    deps.create(&PostParams::default(), &d).await.unwrap();
    cms.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(deps.get_opt("web").await.unwrap().is_some());
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let ns: Api<Namespace> = Api::all(c.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({ "metadata": { "name": "team" } })).unwrap(),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "team");
    cms.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    // As upstream: the namespace turns Terminating, its objects are still there for a moment
    // (deleting them right after still works), then the namespace controller empties it.
    let terminating = ns.delete("team", &DeleteParams::default()).await.unwrap().left().unwrap();
    assert_eq!(terminating.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert!(cms.get_opt("a").await.unwrap().is_some());
    let refused = cms.create(&PostParams::default(), &cm("b", &[])).await.unwrap_err();
    assert!(
        matches!(refused, kube::Error::Api(s) if s.code == 403),
        "no new content in a terminating namespace"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while ns.get_opt("team").await.unwrap().is_some() {
        assert!(std::time::Instant::now() < deadline, "the namespace is never removed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let all: Api<ConfigMap> = Api::all(c.clone());
    assert!(
        all.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|c| c.metadata.namespace.as_deref() != Some("team"))
    );
}

#[tokio::test]
async fn selectors_and_pagination() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let api: Api<ConfigMap> = Api::default_namespaced(c.clone());
    for i in 0..25 {
        let tier = if i % 2 == 0 { "front" } else { "back" };
        api.create(&PostParams::default(), &cm(&format!("cm-{i:02}"), &[("tier", tier), ("app", "x")]))
            .await
            .unwrap();
    }
    let front = api.list(&ListParams::default().labels("tier=front")).await.unwrap();
    assert_eq!(front.items.len(), 13);
    assert_eq!(
        api.list(&ListParams::default().labels("tier in (front,back),app")).await.unwrap().items.len(),
        25
    );
    assert_eq!(api.list(&ListParams::default().labels("tier notin (front)")).await.unwrap().items.len(), 12);
    assert_eq!(api.list(&ListParams::default().labels("!app")).await.unwrap().items.len(), 0);
    assert_eq!(api.list(&ListParams::default().fields("metadata.name=cm-03")).await.unwrap().items.len(), 1);

    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(10);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        // A write between pages does not change the paginated result.
        api.create(&PostParams::default(), &cm(&format!("late-{pages}"), &[])).await.unwrap();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 25);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");

    let e = api_error(api.list(&ListParams::default().labels("tier in front")).await.unwrap_err());
    assert_eq!(e.code, 400);
    let e = api_error(api.list(&ListParams::default().fields("data.app=x")).await.unwrap_err());
    assert!(e.message.contains("data.app"), "{}", e.message);
}

#[tokio::test]
async fn injected_faults_reach_the_client() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    sb.faults().add_rule(FaultRule::new(Some("create"), Some("configmaps"), 1.0, FaultKind::InternalError));
    let e = api_error(api.create(&PostParams::default(), &cm("web", &[])).await.unwrap_err());
    assert_eq!(e.code, 500);
    sb.faults().clear();
    api.create(&PostParams::default(), &cm("web", &[])).await.unwrap();

    sb.faults().add_rule(FaultRule::new(Some("get"), None, 1.0, FaultKind::Unavailable));
    // kube's default client retries 503 a few times; the final answer is still the 503.
    let e = tokio::time::timeout(Duration::from_secs(30), api.get("web")).await.unwrap().unwrap_err();
    assert!(matches!(&e, Error::Api(s) if s.code == 503), "{e:?}");
    assert!(sb.requests().count("get", "configmaps") >= 1);
    sb.faults().clear();

    sb.faults().set_latency(Duration::from_millis(50));
    let t = std::time::Instant::now();
    api.get("web").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(50));
}

#[tokio::test]
async fn the_request_record_names_verb_resource_and_agent() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("web", &[])).await.unwrap();
    api.get("web").await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    let log = sb.requests().all();
    let verbs: Vec<_> =
        log.iter().map(|r| (r.verb.as_str(), r.resource.as_str(), r.name.as_str(), r.code)).collect();
    assert_eq!(
        verbs,
        [
            ("create", "configmaps", "web", 201),
            ("get", "configmaps", "web", 200),
            ("list", "configmaps", "", 200)
        ]
    );
    assert_eq!(log[0].namespace, "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_writers_lose_no_update() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let mut counter = cm("counter", &[]);
    counter.data = Some([("n".to_string(), "0".to_string())].into());
    api.create(&PostParams::default(), &counter).await.unwrap();
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move {
                let mut versions = Vec::new();
                for _ in 0..10 {
                    loop {
                        let mut cur = api.get("counter").await.unwrap();
                        let n: u64 = cur.data.as_ref().unwrap()["n"].parse().unwrap();
                        cur.data.as_mut().unwrap().insert("n".into(), (n + 1).to_string());
                        match api.replace("counter", &PostParams::default(), &cur).await {
                            Ok(w) => {
                                versions.push(w.metadata.resource_version.unwrap().parse::<u64>().unwrap());
                                break;
                            }
                            Err(Error::Api(e)) if e.code == 409 => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                versions
            })
        })
        .collect();
    let mut all = Vec::new();
    for w in writers {
        let v = w.await.unwrap();
        assert!(v.windows(2).all(|p| p[0] < p[1]), "each writer sees increasing versions");
        all.extend(v);
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 80, "every successful write got its own version");
    assert_eq!(api.get("counter").await.unwrap().data.unwrap()["n"], "80");
}

#[tokio::test]
async fn delete_collection_by_selector() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    for (name, tier) in [("a", "x"), ("b", "x"), ("c", "y")] {
        api.create(&PostParams::default(), &cm(name, &[("tier", tier)])).await.unwrap();
    }
    let gone = api
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels("tier=x"))
        .await
        .unwrap();
    let names: Vec<String> = gone.left().unwrap().items.into_iter().filter_map(|c| c.metadata.name).collect();
    assert_eq!(names, ["a", "b"]);
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(left, ["c"]);
}

#[tokio::test]
async fn the_status_subresource_changes_only_status() {
    // No simulated rollout writing status underneath this test.
    let sb = Sandbox::with_config(SandboxConfig {
        rollout: Rollout::Paced(Duration::from_secs(3600)),
        ..SandboxConfig::bare()
    });
    let api: Api<Deployment> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &deployment("web", 2)).await.unwrap();
    let mut d = api.get("web").await.unwrap();
    d.spec.replicas = Some(9);
    d.status = Some(serde_json::from_value(json!({ "replicas": 2, "readyReplicas": 1 })).unwrap());
    let after = api.replace_status("web", &PostParams::default(), &d).await.unwrap();
    assert_eq!(after.spec.replicas, Some(2), "spec untouched through /status");
    assert_eq!(after.status.unwrap().ready_replicas, Some(1));
    assert_eq!(after.metadata.generation, Some(1), "a status write is not a spec change");
}

/// `dryRun=All` (apiserver's `pkg/endpoints/handlers` and `pkg/util/dryrun`): validated, defaulted
/// and answered like the real write, never stored, never seen by a watch; other values are a 400.
#[tokio::test]
async fn dry_run_writes_answer_but_store_nothing() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let c = sb.client();
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let dry = PostParams { dry_run: true, ..PostParams::default() };
    let rv_before = sb.store().resource_version();

    let made = cms.create(&dry, &cm("dry", &[])).await.unwrap();
    assert_eq!(made.metadata.name.as_deref(), Some("dry"));
    assert!(made.metadata.uid.is_none() && made.metadata.resource_version.is_none(), "{made:?}");
    assert!(made.metadata.creation_timestamp.is_some());
    assert!(cms.get_opt("dry").await.unwrap().is_none(), "not stored");

    let real = cms.create(&PostParams::default(), &cm("web", &[])).await.unwrap();
    let rv = real.metadata.resource_version.clone();
    let patch = json!({ "data": { "k": "v" } });
    let patched = cms
        .patch("web", &PatchParams { dry_run: true, ..PatchParams::default() }, &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["k"], "v", "answered as the write would be");
    assert_eq!(patched.metadata.resource_version, rv, "with the version actually stored");
    assert!(cms.get("web").await.unwrap().data.is_none_or(|d| !d.contains_key("k")), "not stored");

    // An invalid object is refused as the real write would be.
    let bad: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "Not_Valid" } })).unwrap();
    let err = cms.create(&dry, &bad).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 422));

    let dp = DeleteParams { dry_run: true, ..DeleteParams::default() };
    cms.delete("web", &dp).await.unwrap();
    assert!(cms.get_opt("web").await.unwrap().is_some(), "a dry-run delete deletes nothing");
    assert_eq!(sb.store().resource_version(), rv_before + 1, "only the real create took a version");

    // Only "All" is a dry-run value.
    let req = http::Request::post("/api/v1/namespaces/default/configmaps?dryRun=Yes")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&cm("x", &[])).unwrap())
        .unwrap();
    let resp = c.send(req.map(kube::client::Body::from)).await.unwrap();
    // `ValidateCreateOptions`: a 422 on CreateOptions.
    assert_eq!(resp.status(), 422);
}

/// A client of `sb` whose requests say `User-Agent: <agent>`, as a replica's do.
fn client_as(sb: &Sandbox, agent: &'static str) -> Client {
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut r: http::Request<kube::client::Body>| {
            r.headers_mut().insert(http::header::USER_AGENT, http::HeaderValue::from_static(agent));
            r
        })
        .service(sb.service());
    Client::new(service, "default")
}

/// Waits until `n` requests are held.
async fn until_held(sb: &Sandbox, n: usize) {
    while sb.faults().held() < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn held_requests_arrive_late_in_order_and_a_conditional_one_loses_to_a_newer_write() {
    let sb = instant();
    let (late, other) = (client_as(&sb, "replica-a/1 (a)"), client_as(&sb, "replica-b/1 (b)"));
    let cms: Api<ConfigMap> = Api::default_namespaced(other.clone());
    let read = cms.create(&PostParams::default(), &cm("x", &[])).await.unwrap();
    let rv = read.metadata.resource_version.clone().unwrap();

    sb.faults().hold("(a)", kube_sandbox::Abandoned::Applied);
    let late_cms: Api<ConfigMap> = Api::default_namespaced(late);
    let conditional = {
        let api = late_cms.clone();
        let patch = json!({ "metadata": { "resourceVersion": rv }, "data": { "v": "stale" } });
        tokio::spawn(async move { api.patch("x", &PatchParams::default(), &Patch::Merge(patch)).await })
    };
    until_held(&sb, 1).await;
    let unconditional = {
        let api = late_cms.clone();
        let patch = json!({ "data": { "w": "stale" } });
        tokio::spawn(async move { api.patch("x", &PatchParams::default(), &Patch::Merge(patch)).await })
    };
    until_held(&sb, 2).await;
    // Nothing of the held client reached the server; the other client goes on.
    assert!(sb.requests().all().iter().all(|r| !r.user_agent.contains("(a)")));
    cms.patch("x", &PatchParams::default(), &Patch::Merge(json!({ "data": { "v": "new", "w": "new" } })))
        .await
        .unwrap();

    sb.faults().release_held().await;
    let refused = api_error(conditional.await.unwrap().unwrap_err());
    assert_eq!((refused.code, refused.reason.as_str()), (409, "Conflict"));
    unconditional.await.unwrap().unwrap();
    let now = cms.get("x").await.unwrap();
    let data = now.data.unwrap();
    assert_eq!(data["v"], "new", "the late conditional write lost to the newer one");
    assert_eq!(data["w"], "stale", "a late unconditional write wins: what preconditions are for");
    // Delivered in the order sent.
    let late: Vec<u16> =
        sb.requests().all().iter().filter(|r| r.user_agent.contains("(a)")).map(|r| r.code).collect();
    assert_eq!(late, [409, 200]);
    // The hold is over: the client's next request goes straight through.
    late_cms.get("x").await.unwrap();
}

#[tokio::test]
async fn a_held_request_whose_client_gave_up_is_cancelled_or_applied_as_the_hold_says() {
    let sb = instant();
    let late: Api<ConfigMap> = Api::default_namespaced(client_as(&sb, "replica-a/1 (a)"));
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client());
    cms.create(&PostParams::default(), &cm("x", &[])).await.unwrap();
    for (abandoned, value) in
        [(kube_sandbox::Abandoned::Cancelled, "cancelled"), (kube_sandbox::Abandoned::Applied, "applied")]
    {
        sb.faults().hold("(a)", abandoned);
        let patch = json!({ "data": { "v": value } });
        // The client gives up (drops the request) before the hold ends.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(50),
            late.patch("x", &PatchParams::default(), &Patch::Merge(patch)),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(sb.faults().held(), 1);
        sb.faults().release_held().await;
        let v = cms.get("x").await.unwrap().data.unwrap_or_default().get("v").cloned();
        match abandoned {
            kube_sandbox::Abandoned::Cancelled => {
                assert_eq!(v, None, "not applied: its client had gone");
                assert_eq!(sb.faults().held_abandoned(), 1);
            }
            kube_sandbox::Abandoned::Applied => assert_eq!(v.as_deref(), Some("applied")),
        }
    }
}

#[tokio::test]
async fn dropped_held_requests_are_lost() {
    let sb = instant();
    let late: Api<ConfigMap> = Api::default_namespaced(client_as(&sb, "replica-a/1 (a)"));
    sb.faults().hold("(a)", kube_sandbox::Abandoned::Applied);
    let create = {
        let late = late.clone();
        tokio::spawn(async move { late.create(&PostParams::default(), &cm("lost", &[])).await })
    };
    until_held(&sb, 1).await;
    sb.faults().drop_held();
    assert!(create.await.unwrap().is_err(), "the client sees its connection dropped");
    assert_eq!(sb.faults().held(), 0);
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client());
    assert!(cms.get_opt("lost").await.unwrap().is_none());
}
