//! kube-runtime's `watcher()` against the sandbox: it stays consistent with `list` through
//! creates, updates, deletes, cut streams, a forced 410 and bookmarks.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube_sandbox::{Sandbox, SandboxConfig, StoreConfig, StreamingLists};
use serde_json::json;

fn cm(name: &str, v: &str) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name }, "data": { "v": v } })).unwrap()
}

async fn names_and_values(api: &Api<ConfigMap>) -> BTreeMap<String, String> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| (c.metadata.name.unwrap(), c.data.unwrap_or_default().get("v").cloned().unwrap_or_default()))
        .collect()
}

fn store_state(store: &reflector::Store<ConfigMap>) -> BTreeMap<String, String> {
    store
        .state()
        .iter()
        .map(|c| {
            (
                c.metadata.name.clone().unwrap(),
                c.data.clone().unwrap_or_default().get("v").cloned().unwrap_or_default(),
            )
        })
        .collect()
}

async fn converge(api: &Api<ConfigMap>, store: &reflector::Store<ConfigMap>) {
    let want = names_and_values(api).await;
    tokio::time::timeout(Duration::from_secs(20), async {
        while store_state(store) != want {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("cache never matched the list: {:?} vs {want:?}", store_state(store)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_cache_matches_list_through_everything() {
    let sb = Sandbox::with_config(SandboxConfig {
        store: StoreConfig { history_limit: 20, ..StoreConfig::default() },
        ..SandboxConfig::bare()
    });
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    api.create(&PostParams::default(), &cm("before", "0")).await.unwrap();

    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()).default_backoff())
        .applied_objects();
    let task = tokio::spawn(async move { stream.for_each(|_| async {}).await });
    reader.wait_until_ready().await.unwrap();
    converge(&api, &reader).await;

    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "1")).await.unwrap();
    }
    let mut c = api.get("cm-1").await.unwrap();
    c.data = Some([("v".to_string(), "2".to_string())].into());
    api.replace("cm-1", &PostParams::default(), &c).await.unwrap();
    api.delete("cm-2", &DeleteParams::default()).await.unwrap();
    converge(&api, &reader).await;

    // A cut stream: the watcher resumes from its last version.
    sb.faults().cut_watches();
    api.create(&PostParams::default(), &cm("after-cut", "3")).await.unwrap();
    converge(&api, &reader).await;

    // A forced 410: the watcher relists.
    sb.faults().expire_next_watch();
    sb.faults().cut_watches();
    api.delete("cm-3", &DeleteParams::default()).await.unwrap();
    converge(&api, &reader).await;

    // Real expiry: many writes while the stream is cut push its version out of the history.
    sb.faults().cut_watches();
    for i in 0..30 {
        api.create(&PostParams::default(), &cm(&format!("burst-{i}"), "4")).await.unwrap();
    }
    api.delete("cm-4", &DeleteParams::default()).await.unwrap();
    converge(&api, &reader).await;

    let watches = sb.requests().count("watch", "configmaps");
    let lists = sb.requests().count("list", "configmaps");
    assert!(watches >= 3, "the watcher re-watched after each cut ({watches})");
    assert!(lists >= 2, "and relisted after a 410 ({lists})");
    task.abort();
}

#[tokio::test]
async fn raw_watch_events_bookmarks_and_410() {
    let sb = Sandbox::with_config(SandboxConfig {
        bookmark_interval: Duration::from_millis(50),
        store: StoreConfig { history_limit: 3, ..StoreConfig::default() },
        ..SandboxConfig::bare()
    });
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let created = api.create(&PostParams::default(), &cm("a", "1")).await.unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();

    let mut stream =
        api.watch(&WatchParams { bookmarks: true, ..WatchParams::default() }, &rv).await.unwrap().boxed();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let mut saw_delete = false;
    let mut saw_bookmark = false;
    while !(saw_delete && saw_bookmark) {
        match tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap().unwrap()
        {
            WatchEvent::Deleted(o) => saw_delete = o.metadata.name.as_deref() == Some("a"),
            WatchEvent::Bookmark(b) => saw_bookmark = !b.metadata.resource_version.is_empty(),
            other => panic!("unexpected {other:?}"),
        }
    }

    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("b{i}"), "1")).await.unwrap();
    }
    let mut old = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    match tokio::time::timeout(Duration::from_secs(5), old.try_next()).await.unwrap().unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn streaming_list_ends_with_the_initial_events_bookmark() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    for i in 0..3 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), "1")).await.unwrap();
    }
    let (reader, writer) = reflector::store();
    let cfg = watcher::Config::default().streaming_lists();
    let stream = reflector(writer, watcher(api.clone(), cfg).default_backoff()).applied_objects();
    let task = tokio::spawn(async move { stream.for_each(|_| async {}).await });
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready()).await.unwrap().unwrap();
    assert_eq!(reader.state().len(), 3);
    assert_eq!(sb.requests().count("list", "configmaps"), 0, "no list: the watch streamed the initial state");
    task.abort();
}

/// The raw events of a streaming list (`sendInitialEvents`), until its end bookmark or the
/// stream's end: the names added, and whether the end bookmark came.
async fn stream_initial(api: &Api<ConfigMap>) -> Result<(Vec<String>, bool), kube::Error> {
    let params = WatchParams { send_initial_events: true, timeout: Some(2), ..WatchParams::default() };
    let mut stream = api.watch(&params, "0").await?.boxed();
    let mut added = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.try_next()).await.unwrap()? {
        match event {
            WatchEvent::Added(o) => added.push(o.metadata.name.unwrap()),
            WatchEvent::Bookmark(b) if b.metadata.annotations.contains_key("k8s.io/initial-events-end") => {
                return Ok((added, true));
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    Ok((added, false))
}

#[tokio::test]
async fn the_initial_state_comes_by_pages_or_by_stream_as_the_server_is_configured() {
    for how in [StreamingLists::Served, StreamingLists::Rejected, StreamingLists::Ignored] {
        let sb = Sandbox::with_config(SandboxConfig { streaming_lists: how, ..SandboxConfig::bare() });
        let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
        for i in 0..7 {
            api.create(&PostParams::default(), &cm(&format!("p{i}"), "1")).await.unwrap();
        }
        // Paginated, whatever the configuration: pages of 3 with a continue token.
        let mut names = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(3);
            lp.continue_token = token.take();
            let page = api.list(&lp).await.unwrap();
            assert!(page.items.len() <= 3);
            names.extend(page.items.into_iter().map(|c| c.metadata.name.unwrap()));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => token = Some(next),
                None => break,
            }
        }
        assert_eq!(names.len(), 7, "{how:?}");
        // Streaming: served, rejected (422 Invalid), or ignored (every object, no end bookmark).
        match (how, stream_initial(&api).await) {
            (StreamingLists::Served, Ok((added, true))) => assert_eq!(added.len(), 7),
            (StreamingLists::Rejected, Err(kube::Error::Api(s))) => {
                assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
                assert!(s.message.contains("sendInitialEvents"), "{s:?}");
            }
            (StreamingLists::Ignored, Ok((added, false))) => assert_eq!(added.len(), 7),
            (how, other) => panic!("{how:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_streaming_list_needs_bookmarks_and_not_older_than() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let client = sb.client();
    for query in [
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        "watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
    ] {
        let req = http::Request::get(format!("/api/v1/namespaces/default/configmaps?{query}"))
            .body(Vec::new())
            .unwrap();
        match client.request_text(req).await {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 422, "{query}: {s:?}"),
            other => panic!("{query}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn label_selected_watch_sees_objects_leave_and_enter() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let mut labelled = cm("x", "1");
    labelled.metadata.labels = Some([("keep".to_string(), "yes".to_string())].into());
    let made = api.create(&PostParams::default(), &labelled).await.unwrap();
    let rv = made.metadata.resource_version.clone().unwrap();
    let mut stream = api.watch(&WatchParams::default().labels("keep=yes"), &rv).await.unwrap().boxed();
    let mut c = made;
    c.metadata.labels = None;
    let c = api.replace("x", &PostParams::default(), &c).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap().unwrap() {
        // Upstream's cache watcher: the previous content (still labelled), at the change's version.
        WatchEvent::Deleted(o) => {
            assert_eq!(o.metadata.name.as_deref(), Some("x"));
            assert_eq!(o.metadata.labels.as_ref().map(|l| l["keep"].as_str()), Some("yes"));
            assert_eq!(o.metadata.resource_version, c.metadata.resource_version);
        }
        other => panic!("an object that stops matching is DELETED for the watch, got {other:?}"),
    }
    let mut back = c;
    back.metadata.labels = Some([("keep".to_string(), "yes".to_string())].into());
    api.replace("x", &PostParams::default(), &back).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap().unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("x")),
        other => panic!("expected ADDED, got {other:?}"),
    }
}

#[tokio::test]
async fn a_watch_ends_after_its_timeout() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let rv = sb.store().resource_version().to_string();
    let mut stream = api.watch(&WatchParams::default().timeout(1), &rv).await.unwrap().boxed();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.try_next().await {
                Ok(Some(WatchEvent::Bookmark(_))) => {}
                other => return other,
            }
        }
    })
    .await
    .expect("ended by the server");
    assert!(matches!(ended, Ok(None)), "{ended:?}");
}

/// KEP-5866: `shardSelector` on lists and watches — two halves of the uid hash space partition the
/// objects, a list echoes the selector in `shardInfo`, a watch sends only its shard's events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_lists_and_watches_partition_by_hash() {
    use futures::StreamExt;
    let sb = kube_sandbox::Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
    let c = sb.client();
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::default_namespaced(c.clone());
    for i in 0..200 {
        let cm =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": format!("cm-{i}") } })).unwrap();
        api.create(&Default::default(), &cm).await.unwrap();
    }
    let halves = [
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    ];
    let get = |path: String| {
        let c = c.clone();
        async move {
            let req = http::Request::get(path).body(Vec::new()).unwrap();
            let text = c.request_text(req).await.unwrap();
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        }
    };
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let mut seen = std::collections::BTreeSet::new();
    for h in halves {
        let list = get(format!("/api/v1/namespaces/default/configmaps?shardSelector={}", enc(h))).await;
        assert_eq!(list["metadata"]["shardInfo"]["selector"], h);
        let names: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert!(names.len() > 60 && names.len() < 140, "{} of 200 in one half", names.len());
        for n in names {
            assert!(seen.insert(n), "an object in both halves");
        }
    }
    assert_eq!(seen.len(), 200, "the halves cover everything");
    let plain = get("/api/v1/namespaces/default/configmaps".into()).await;
    assert!(plain["metadata"].get("shardInfo").is_none(), "no shardInfo without a selector");
    let bad = c
        .request_text(
            http::Request::get(format!(
                "/api/v1/namespaces/default/configmaps?shardSelector={}",
                enc("shardRange(x)")
            ))
            .body(Vec::new())
            .unwrap(),
        )
        .await
        .unwrap_err();
    assert!(matches!(bad, kube::Error::Api(s) if s.code == 400));

    // A watch of one half: only that half's changes.
    let rv = plain["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    // The lower half, by KEP-5866's hash (64-bit FNV-1a of the uid), computed here on its own.
    let in_lower_half = |o: &serde_json::Value| {
        let uid = o["metadata"]["uid"].as_str().unwrap();
        let hash = uid
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        hash < 0x8000_0000_0000_0000
    };
    let req = http::Request::get(format!(
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&shardSelector={}",
        enc(halves[0])
    ))
    .body(Vec::new())
    .unwrap();
    let mut events = c.request_events::<k8s_openapi::api::core::v1::ConfigMap>(req).await.unwrap().boxed();
    let mut expected = 0;
    for i in 200..260 {
        let cm =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": format!("cm-{i}") } })).unwrap();
        let made = api.create(&Default::default(), &cm).await.unwrap();
        if in_lower_half(&serde_json::to_value(&made).unwrap()) {
            expected += 1;
        }
    }
    let mut got = 0;
    while got < expected {
        let ev = tokio::time::timeout(std::time::Duration::from_secs(5), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let kube::api::WatchEvent::Added(o) = ev {
            assert!(in_lower_half(&serde_json::to_value(&o).unwrap()), "an event from the other half");
            got += 1;
        }
    }
    assert!(expected > 10);
}
