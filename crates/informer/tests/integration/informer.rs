//! The informer against the sandbox: adds, updates, deletes, tombstones after a broken watch,
//! resync, late handlers, label selection, the cache-sync gate, objects kept uncached (gained,
//! lost, deleted, gone at a relist), and streaming lists with their fallback to pages.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube_informer::{Config, Deleted, EventHandler, Informer, ObjectKey, Presence};
use kube_sandbox::{FaultKind, FaultRule, Sandbox, SandboxConfig, StreamingLists};
use parking_lot::Mutex;
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
    fn on_uncached_deleted(&self, count: usize) {
        self.0.lock().push(format!("uncached gone {count}"));
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
    let sb = Sandbox::with_config(SandboxConfig::bare());
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
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("gone", json!({}))).await.unwrap();
    api.create(&PostParams::default(), &cm("stays", json!({}))).await.unwrap();
    let (informer, log, task) = start(&sb, Config::default().resync(Duration::ZERO));
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    log.take();

    with_the_watch_down(&sb, async {
        api.delete("gone", &DeleteParams::default()).await.unwrap();
    })
    .await;
    let seen = log.wait_for("delete default/gone tombstone").await;
    assert!(!seen.iter().any(|l| l == "delete default/gone known"), "{seen:?}");
    assert!(informer.lister().get(&"default/gone".parse().unwrap()).is_none());
    assert!(informer.lister().get(&"default/stays".parse().unwrap()).is_some());
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_replays_every_object_and_zero_disables_it() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
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
    let sb = Sandbox::with_config(SandboxConfig::bare());
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
    let sb = Sandbox::with_config(SandboxConfig::bare());
    sb.faults().add_rule(FaultRule::new(Some("list"), None, 1.0, FaultKind::InternalError));
    let (informer, _log, task) = start(&sb, Config::default());
    assert!(!informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_millis(300))).await);
    assert!(!informer.has_synced());
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transform_shapes_what_is_cached_and_handed_out() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
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
    let sb = Sandbox::with_config(SandboxConfig::bare());
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
    let names = |l: &kube_informer::Lister<ConfigMap>| {
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

/// Breaks the informer's watch, runs `meanwhile` while it is down, then brings it back with an
/// expired version, so the informer lists again.
async fn with_the_watch_down<F: std::future::Future<Output = ()>>(sb: &Sandbox, meanwhile: F) {
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
    meanwhile.await;
    // When it comes back, its version is "expired": the informer must relist.
    sb.faults().expire_next_watch();
    sb.faults().clear_rules();
}

fn labelled(c: &ConfigMap, keep: bool) -> ConfigMap {
    let mut c = c.clone();
    c.metadata.labels = keep.then(|| [("keep".to_string(), "yes".to_string())].into());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_predicate_caches_its_objects_and_remembers_the_others_as_present() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("a", json!({ "keep": "yes" }))).await.unwrap();
    api.create(&PostParams::default(), &cm("b", json!({}))).await.unwrap();
    let (informer, log, task) = start_prepared(&sb, Config::default().resync(Duration::ZERO), |i| {
        i.set_keep(Arc::new(|c: &ConfigMap| {
            c.metadata.labels.as_ref().is_some_and(|l| l.contains_key("keep"))
        }));
    });
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    assert_eq!(log.take(), ["add default/a initial"], "uncached objects are not reported");
    let lister = informer.lister();
    let presence = |name: &str| match lister.presence(&ObjectKey::new("default", name)) {
        Presence::Cached(_) => "cached",
        Presence::Uncached => "uncached",
        Presence::Absent => "absent",
    };
    assert_eq!((presence("a"), presence("b"), presence("c")), ("cached", "uncached", "absent"));
    assert_eq!((lister.len(), lister.uncached_len()), (1, 1));
    assert!(lister.get(&ObjectKey::new("default", "b")).is_none());

    // Gained: cached, and an add at once.
    let b = api.get("b").await.unwrap();
    api.replace("b", &PostParams::default(), &labelled(&b, true)).await.unwrap();
    log.wait_for("add default/b live").await;
    assert_eq!(presence("b"), "cached");
    // Lost: out of the cache, an update (it exists), never a delete.
    let a = api.get("a").await.unwrap();
    let a = api.replace("a", &PostParams::default(), &labelled(&a, false)).await.unwrap();
    let seen = log.wait_for("update default/a changed").await;
    assert!(!seen.iter().any(|l| l.starts_with("delete")), "{seen:?}");
    assert_eq!((presence("a"), lister.len(), lister.uncached_len()), ("uncached", 1, 1));
    // Changes to an uncached object that leave it uncached, and new uncached objects: nothing.
    let mut a2 = a.clone();
    a2.data = Some([("app".to_string(), "v2".to_string())].into());
    api.replace("a", &PostParams::default(), &a2).await.unwrap();
    api.create(&PostParams::default(), &cm("c", json!({}))).await.unwrap();
    api.create(&PostParams::default(), &cm("marker", json!({ "keep": "yes" }))).await.unwrap();
    assert_eq!(log.wait_for("add default/marker live").await, ["add default/marker live"]);
    assert_eq!(presence("c"), "uncached");
    // Deleted, uncached: the watch's DELETED is reported; the key is absent.
    api.delete("a", &DeleteParams::default()).await.unwrap();
    log.wait_for("delete default/a known").await;
    assert_eq!(presence("a"), "absent");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_finds_uncached_keys_gone_and_tells_lost_from_deleted() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    for (name, keep) in
        [("kept-gone", true), ("kept-loses", true), ("gains", false), ("gone", false), ("stays", false)]
    {
        let labels = if keep { json!({ "keep": "yes" }) } else { json!({}) };
        api.create(&PostParams::default(), &cm(name, labels)).await.unwrap();
    }
    let (informer, log, task) = start_prepared(&sb, Config::default().resync(Duration::ZERO), |i| {
        i.set_keep(Arc::new(|c: &ConfigMap| {
            c.metadata.labels.as_ref().is_some_and(|l| l.contains_key("keep"))
        }));
    });
    assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
    log.take();
    with_the_watch_down(&sb, async {
        api.delete("kept-gone", &DeleteParams::default()).await.unwrap();
        api.delete("gone", &DeleteParams::default()).await.unwrap();
        let c = api.get("kept-loses").await.unwrap();
        api.replace("kept-loses", &PostParams::default(), &labelled(&c, false)).await.unwrap();
        let c = api.get("gains").await.unwrap();
        api.replace("gains", &PostParams::default(), &labelled(&c, true)).await.unwrap();
    })
    .await;
    let mut seen = log.wait_for("uncached gone 1").await;
    // The relist's notes come together, under one dispatch: the rest is there too.
    seen.extend(log.take());
    seen.sort();
    assert_eq!(
        seen,
        [
            "add default/gains live",
            "delete default/kept-gone tombstone",
            "uncached gone 1",
            "update default/kept-loses changed",
        ]
    );
    let lister = informer.lister();
    let presence = |name: &str| lister.presence(&ObjectKey::new("default", name));
    assert_eq!(presence("gone"), Presence::Absent);
    assert_eq!(presence("kept-gone"), Presence::Absent);
    assert_eq!(presence("kept-loses"), Presence::Uncached);
    assert_eq!(presence("stays"), Presence::Uncached);
    assert!(presence("gains").cached().is_some());
    assert_eq!((lister.len(), lister.uncached_len()), (1, 2));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_stream_where_the_server_serves_it_and_come_in_pages_where_not() {
    let modes =
        [(StreamingLists::Served, true), (StreamingLists::Rejected, false), (StreamingLists::Ignored, false)];
    let runs = modes.map(|(how, streams)| async move {
        let sb = Sandbox::with_config(SandboxConfig { streaming_lists: how, ..SandboxConfig::bare() });
        let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
        for i in 0..3 {
            api.create(&PostParams::default(), &cm(&format!("s{i}"), json!({}))).await.unwrap();
        }
        let (informer, log, task) = start(&sb, Config::default().prefer_streaming_lists());
        // A server that ignores the request is given the probe's whole timeout to answer.
        assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(30))).await, "{how:?}");
        assert_eq!(informer.streams_lists(), Some(streams), "{how:?}");
        assert_eq!(informer.lister().len(), 3, "{how:?}");
        assert_eq!(log.take().len(), 3, "{how:?}");
        let lists = sb.requests().count("list", "configmaps");
        assert_eq!(lists == 0, streams, "{how:?}: {lists} lists");
        // Live changes follow either way.
        api.create(&PostParams::default(), &cm("live", json!({}))).await.unwrap();
        log.wait_for("add default/live live").await;
        task.abort();
    });
    futures::future::join_all(runs).await;
}
