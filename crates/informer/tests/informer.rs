//! The informer against the sandbox: adds, updates, deletes, tombstones after a broken watch,
//! resync, late handlers, label selection and the cache-sync gate.

use std::sync::Arc;
use std::time::Duration;

use informer::{Config, Deleted, EventHandler, Informer, ObjectKey};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use parking_lot::Mutex;
use sandbox::{FaultKind, FaultRule, Sandbox};
use serde_json::json;

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
    async fn wait_for(&self, line: &str) -> Vec<String> {
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if self.0.lock().iter().any(|l| l == line) {
                    return self.take();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("never saw {line:?}; saw {:?}", self.0.lock()))
    }
}

fn rv(c: &ConfigMap) -> String {
    c.metadata.resource_version.clone().unwrap_or_default()
}

impl EventHandler<ConfigMap> for Log {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        self.0.lock().push(format!(
            "add {} {}",
            ObjectKey::of(obj.as_ref()),
            if initial { "initial" } else { "live" }
        ));
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let what = if rv(old) == rv(new) { "resync" } else { "changed" };
        self.0.lock().push(format!("update {} {what}", ObjectKey::of(new.as_ref())));
    }
    fn on_delete(&self, obj: &Deleted<ConfigMap>) {
        let how = match obj {
            Deleted::Known(_) => "known",
            Deleted::FinalStateUnknown { .. } => "tombstone",
        };
        self.0.lock().push(format!("delete {} {how}", obj.key()));
    }
}

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels }, "data": { "app": name } }))
        .unwrap()
}

fn start(sb: &Sandbox, config: Config) -> (Informer<ConfigMap>, Arc<Log>, tokio::task::JoinHandle<()>) {
    start_prepared(sb, config, |_| {})
}

/// As `start`, with `prepare` (a transform, a filter) applied before the informer runs.
fn start_prepared(
    sb: &Sandbox,
    config: Config,
    prepare: impl FnOnce(&Informer<ConfigMap>),
) -> (Informer<ConfigMap>, Arc<Log>, tokio::task::JoinHandle<()>) {
    let informer = Informer::new(Api::<ConfigMap>::namespaced(sb.client(), "default"), config);
    prepare(&informer);
    let log = Arc::new(Log::default());
    informer.add_handler(log.clone());
    let task = tokio::spawn({
        let i = informer.clone();
        async move { i.run(std::future::pending::<()>()).await }
    });
    (informer, log, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_update_delete_and_the_lister() {
    let sb = Sandbox::new();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("first", json!({}))).await.unwrap();
    let (informer, log, task) = start(&sb, Config::default().resync(Duration::ZERO));
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    assert_eq!(log.take(), ["add default/first initial"]);

    api.create(&PostParams::default(), &cm("web", json!({}))).await.unwrap();
    log.wait_for("add default/web live").await;
    let mut c = api.get("web").await.unwrap();
    c.data = Some([("app".to_string(), "v2".to_string())].into());
    api.replace("web", &PostParams::default(), &c).await.unwrap();
    log.wait_for("update default/web changed").await;

    let lister = informer.lister();
    assert_eq!(lister.get(&"default/web".parse().unwrap()).unwrap().data.as_ref().unwrap()["app"], "v2");
    assert_eq!(lister.list_namespace("default").len(), 2);
    assert!(lister.list_namespace("other").is_empty());

    api.delete("web", &DeleteParams::default()).await.unwrap();
    log.wait_for("delete default/web known").await;
    assert!(lister.get(&"default/web".parse().unwrap()).is_none());
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_missed_while_the_watch_was_down_becomes_a_tombstone() {
    let sb = Sandbox::new();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("gone", json!({}))).await.unwrap();
    api.create(&PostParams::default(), &cm("stays", json!({}))).await.unwrap();
    let (informer, log, task) = start(&sb, Config::default().resync(Duration::ZERO));
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    log.take();

    // The watch that follows the first list must be open before it is cut (a watch opened after
    // the cut would not be cut).
    let watching = |code: u16| sb.requests().all().iter().any(|r| r.verb == "watch" && r.code == code);
    tokio::time::timeout(Duration::from_secs(10), async {
        while !watching(200) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the informer watches after its list");
    // Break the watch and keep it down while the object is deleted.
    sb.faults().add_rule(FaultRule::new(Some("watch"), Some("configmaps"), 1.0, FaultKind::InternalError));
    sb.faults().cut_watches();
    // Only once a new watch has been refused is the old one surely gone (under load the cut can
    // reach the stream after a later event).
    tokio::time::timeout(Duration::from_secs(10), async {
        while !watching(500) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the informer tried to watch again");
    api.delete("gone", &DeleteParams::default()).await.unwrap();
    // When it comes back, its version is "expired": the informer must relist.
    sb.faults().expire_next_watch();
    sb.faults().clear_rules();
    let seen = log.wait_for("delete default/gone tombstone").await;
    assert!(!seen.iter().any(|l| l == "delete default/gone known"), "{seen:?}");
    assert!(informer.lister().get(&"default/gone".parse().unwrap()).is_none());
    assert!(informer.lister().get(&"default/stays".parse().unwrap()).is_some());
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_replays_every_object_and_zero_disables_it() {
    let sb = Sandbox::new();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("web", json!({}))).await.unwrap();
    let (informer, log, task) = start(&sb, Config::default().resync(Duration::from_millis(100)));
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    log.wait_for("update default/web resync").await;
    task.abort();

    let (informer, log, task) = start(&sb, Config::default().resync(Duration::ZERO));
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(log.take(), ["add default/web initial"]);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_handler_gets_the_cache_as_adds_and_selectors_filter() {
    let sb = Sandbox::new();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("ours", json!({ "managed-by": "counter-controller" })))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("theirs", json!({}))).await.unwrap();
    let (informer, _log, task) = start(&sb, Config::default().labels("managed-by=counter-controller"));
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    let late = Arc::new(Log::default());
    informer.add_handler(late.clone());
    assert_eq!(late.take(), ["add default/ours initial"]);
    assert_eq!(informer.lister().len(), 1);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_cache_sync_can_be_cancelled() {
    let sb = Sandbox::new();
    sb.faults().add_rule(FaultRule::new(Some("list"), None, 1.0, FaultKind::InternalError));
    let (informer, _log, task) = start(&sb, Config::default());
    assert!(!informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_millis(300))).await);
    assert!(!informer.has_synced());
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transform_shapes_what_is_cached_and_handed_out() {
    let sb = Sandbox::new();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let mut big = cm("listed", json!({ "tier": "front" }));
    big.data.as_mut().unwrap().insert("blob".into(), "x".repeat(10_000));
    api.create(&PostParams::default(), &big).await.unwrap();
    // Keep only `data.app`, as a controller that reads nothing else would.
    let (informer, log, task) = start_prepared(&sb, Config::default(), |i| {
        i.set_transform(Arc::new(|mut c: ConfigMap| {
            if let Some(d) = c.data.as_mut() {
                d.retain(|k, _| k == "app");
            }
            c
        }));
    });
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    let mut live = big.clone();
    live.metadata.name = Some("watched".into());
    api.create(&PostParams::default(), &live).await.unwrap();
    log.wait_for("add default/watched live").await;
    let lister = informer.lister();
    for name in ["listed", "watched"] {
        let cached = lister.get(&format!("default/{name}").parse().unwrap()).unwrap();
        let keys: Vec<&String> = cached.data.as_ref().unwrap().keys().collect();
        assert_eq!(keys, ["app"], "{name}: from the list and from the watch alike");
        assert_eq!(cached.metadata.labels.as_ref().unwrap()["tier"], "front");
    }
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_keeps_only_its_objects_and_a_relist_applies_a_new_one() {
    let sb = Sandbox::new();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    for name in ["a1", "a2", "b1"] {
        api.create(&PostParams::default(), &cm(name, json!({}))).await.unwrap();
    }
    let prefix = Arc::new(parking_lot::RwLock::new("a".to_owned()));
    let p = Arc::clone(&prefix);
    let (informer, log, task) = start_prepared(&sb, Config::default(), |i| {
        i.set_filter(Arc::new(move |c: &ConfigMap| {
            c.metadata.name.as_deref().unwrap_or("").starts_with(p.read().as_str())
        }));
    });
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    let lister = informer.lister();
    let names = |l: &informer::Lister<ConfigMap>| {
        let mut n: Vec<String> = l.list().iter().map(|c| c.metadata.name.clone().unwrap()).collect();
        n.sort();
        n
    };
    assert_eq!(names(&lister), ["a1", "a2"]);
    // Changes to objects the filter rejects are not reported at all.
    log.take();
    api.create(&PostParams::default(), &cm("b2", json!({}))).await.unwrap();
    api.delete("b1", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("a3", json!({}))).await.unwrap();
    log.wait_for("add default/a3 live").await;
    assert!(log.take().iter().all(|l| !l.contains("/b")), "nothing about rejected objects");
    // The filter changes: a relist reads the newly accepted objects and drops the others.
    *prefix.write() = "b".into();
    informer.relist().await;
    assert_eq!(names(&lister), ["b2"]);
    let events = log.take();
    assert!(
        events.contains(&"add default/b2 live".to_owned())
            || events.contains(&"add default/b2 initial".to_owned()),
        "{events:?}"
    );
    assert!(events.iter().any(|l| l == "delete default/a1 tombstone"), "{events:?}");
    // A filter that only narrowed: refilter drops what it now rejects, with no request.
    api.create(&PostParams::default(), &cm("b3", json!({}))).await.unwrap();
    log.wait_for("add default/b3 live").await;
    log.take();
    *prefix.write() = "b3".into();
    let requests = sb.requests().all().len();
    informer.refilter();
    assert_eq!(names(&lister), ["b3"]);
    assert_eq!(log.take(), ["delete default/b2 tombstone"]);
    assert_eq!(sb.requests().all().len(), requests, "refilter asks the server nothing");
    task.abort();
}
