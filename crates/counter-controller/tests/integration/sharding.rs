//! Sharding with real processes: three `counter-controller run --sharding` replicas against one
//! sandbox (in this process, so its request record shows who wrote what), 3,000 ConfigMaps.
//! Every key is written by exactly one replica; kill -9 one and its keys move to the others after
//! its lease, never written by two replicas within a lease of each other. Sharded by namespace,
//! the API server filters each replica's lists and watches (KEP-5866) to the same share the
//! replica's own filter keeps.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::common::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_lease_election::ring::{Keying, Ring};
use kube_lease_election::selector::{SelectorCell, ShardSelectorLayer, shard_selector};
use kube_sandbox::builtin_resource;
use serde_json::json;

const N: usize = 3000;
const LEASE: Duration = Duration::from_secs(3);
const RENEW_DEADLINE: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(300);

fn args() -> Vec<String> {
    [
        "run",
        "--namespace=default",
        "--log-format=json",
        "--workers=4",
        "--sharding",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=300ms",
    ]
    .map(String::from)
    .to_vec()
}

/// Waits until all N Deployments exist with `replicas`.
async fn converged(sb: &kube_sandbox::Sandbox, replicas: i64, stall: Duration) {
    converged_n(sb, N, replicas, stall).await;
}

/// Waits until `n` Deployments in `default` exist with `replicas`.
async fn converged_n(sb: &kube_sandbox::Sandbox, n: usize, replicas: i64, stall: Duration) {
    converged_in(sb, Some("default"), n, replicas, stall).await;
}

/// Waits until `n` Deployments (in `ns`, or anywhere) exist with `replicas`, as long as it
/// progresses: it fails only when no further Deployment has reached the count for `stall` (a busy
/// machine is slow, not stuck).
async fn converged_in(
    sb: &kube_sandbox::Sandbox,
    ns: Option<&str>,
    n: usize,
    replicas: i64,
    stall: Duration,
) {
    let deploys = builtin_resource("apps", "v1", "deployments").unwrap();
    let (mut best, mut progressed) = (0, Instant::now());
    loop {
        // Off the runtime's threads: the sandbox serving the replicas shares them.
        let done = tokio::task::block_in_place(|| {
            let list = sb.store().list(deploys, ns, &Default::default()).unwrap();
            let items = list["items"].as_array().unwrap();
            items.iter().filter(|d| d["spec"]["replicas"].as_i64() == Some(replicas)).count()
        });
        if done == n {
            return;
        }
        if done > best {
            (best, progressed) = (done, Instant::now());
        }
        if progressed.elapsed() >= stall {
            dump_leases(sb);
        }
        assert!(
            progressed.elapsed() < stall,
            "{done} of {n} Deployments at {replicas} replicas, and no progress for {stall:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until `probe` is `Ok`, failing only when it has answered the same `Err` for `stall`: the
/// state it waits on still moving is progress.
async fn until_steady<S: PartialEq + std::fmt::Debug>(
    what: &str,
    stall: Duration,
    mut probe: impl FnMut() -> Result<(), S>,
) {
    let (mut last, mut since) = (None, Instant::now());
    loop {
        let now = match probe() {
            Ok(()) => return,
            Err(s) => s,
        };
        if last.as_ref() != Some(&now) {
            (last, since) = (Some(now), Instant::now());
        }
        assert!(since.elapsed() < stall, "{what}: still {last:?} after {stall:?} without a change");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `n` ConfigMaps `shop-00000…` wanting 2 replicas, straight in the store.
fn seed(sb: &kube_sandbox::Sandbox, n: usize) {
    let cms = builtin_resource("", "v1", "configmaps").unwrap();
    for i in 0..n {
        let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": format!("shop-{i:05}"), "namespace": "default",
                          "annotations": { "counter.example.com/desired": "2" } } });
        sb.store().create(cms, "default", cm, None).unwrap();
    }
}

/// A sandbox served from a fresh directory `name`, `m` ConfigMaps seeded, and a `--sharding`
/// replica started for each of `hosts`; returns once all `m` Deployments are at 2 replicas.
async fn converged_ring(
    name: &str,
    hosts: &[&str],
    m: usize,
) -> (std::path::PathBuf, ServedSandbox, Vec<Replica>) {
    let dir = temp_dir(name);
    let sb = serve_sandbox(&dir).await;
    seed(&sb.sandbox, m);
    let replicas = hosts.iter().map(|h| Replica::start(&dir, &sb.kubeconfig, h, &args())).collect();
    converged_n(&sb.sandbox, m, 2, Duration::from_secs(90)).await;
    (dir, sb, replicas)
}

/// Deployment writes (create, patch, delete that succeeded) per key: (when, which replica).
fn writes(sb: &kube_sandbox::Sandbox, replicas: &[&Replica]) -> BTreeMap<String, Vec<(Instant, String)>> {
    let mut out: BTreeMap<String, Vec<(Instant, String)>> = BTreeMap::new();
    for r in sb.requests().all() {
        if r.resource != "deployments" || !r.is_write() || r.code >= 300 {
            continue;
        }
        let who = replicas.iter().find(|p| p.sent(&r.user_agent)).map(|p| p.hostname.clone());
        out.entry(r.name.clone()).or_default().push((r.at, who.unwrap_or_else(|| r.user_agent.clone())));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_the_keys_and_a_killed_ones_move_after_its_lease() {
    let dir = temp_dir("sharding");
    let sb = serve_sandbox(&dir).await;
    seed(&sb.sandbox, N);
    let replicas: Vec<Replica> = ["shard-a", "shard-b", "shard-c"]
        .iter()
        .map(|h| Replica::start(&dir, &sb.kubeconfig, h, &args()))
        .collect();
    let all: Vec<&Replica> = replicas.iter().collect();
    converged(&sb.sandbox, 2, Duration::from_secs(90)).await;

    // Every key was created by exactly one replica, and each replica did about a third.
    let before = writes(&sb.sandbox, &all);
    assert_eq!(before.len(), N);
    let mut per_replica: HashMap<String, usize> = HashMap::new();
    let mut owner: HashMap<String, String> = HashMap::new();
    for (key, ws) in &before {
        let mut who: Vec<&String> = ws.iter().map(|(_, w)| w).collect();
        who.dedup();
        assert_eq!(who.len(), 1, "{key} written by {who:?}");
        *per_replica.entry(who[0].clone()).or_default() += 1;
        owner.insert(key.clone(), who[0].clone());
    }
    for r in &replicas {
        let n = per_replica.get(&r.hostname).copied().unwrap_or(0);
        assert!((700..=1300).contains(&n), "{} wrote {n} of {N} keys", r.hostname);
    }
    eprintln!("keys per replica: {per_replica:?}");
    for r in &replicas {
        let m = r.metrics();
        assert_eq!(sample(&m, "counter_controller_shard_members", &[]), Some(3.0), "{}", r.hostname);
        let keys =
            sample(&m, "counter_controller_shard_keys", &[&format!("shard=\"{}_", r.hostname)]).unwrap();
        assert_eq!(keys as usize, per_replica[&r.hostname], "{}: its shard_keys gauge", r.hostname);
        // Less data, not just less work: each cache holds about its third.
        for kind in ["ConfigMap", "Deployment"] {
            let cached =
                sample(&m, "counter_controller_shard_cached_objects", &[&format!("kind=\"{kind}\"")])
                    .unwrap_or_else(|| panic!("no cached {kind} gauge in\n{m}"));
            assert!((700.0..=1300.0).contains(&cached), "{}: {cached} {kind}s cached of {N}", r.hostname);
        }
    }

    // kill -9 one: its keys go to the others once its lease has run out.
    let killed = &replicas[1];
    killed.signal("KILL");
    let t_kill = Instant::now();
    desire(&sb.sandbox, N, "3");
    converged(&sb.sandbox, 3, Duration::from_secs(90)).await;
    let moved_after = t_kill.elapsed();
    let after = writes(&sb.sandbox, &all);
    let mut moved = 0;
    for (key, ws) in &after {
        let was = &owner[key];
        let scaled_by: Vec<&String> = ws.iter().filter(|(at, _)| *at >= t_kill).map(|(_, w)| w).collect();
        assert!(!scaled_by.is_empty(), "{key} never scaled");
        if *was == killed.hostname {
            moved += 1;
            assert!(scaled_by.iter().all(|w| **w != killed.hostname));
        } else {
            assert!(scaled_by.iter().all(|w| *w == was), "{key} moved though its owner lived: {scaled_by:?}");
        }
        // Never two replicas within a lease of each other on one key (the old owner's fence closed
        // a renew deadline after its last renew; the new owner waited out the whole lease).
        for pair in ws.windows(2) {
            let ((t1, w1), (t2, w2)) = (&pair[0], &pair[1]);
            if w1 != w2 {
                let gap = t2.duration_since(*t1);
                assert!(gap >= LEASE - RETRY, "{key}: {w1} then {w2} only {gap:?} apart");
            }
        }
    }
    eprintln!("kill -9: {moved} keys moved; all converged {moved_after:?} after the kill");
    assert_eq!(moved, per_replica[&killed.hostname]);
    let survivors: Vec<&Replica> = replicas.iter().filter(|r| r.hostname != killed.hostname).collect();
    let mut gained = 0.0;
    for r in &survivors {
        let m = r.metrics();
        assert_eq!(sample(&m, "counter_controller_shard_members", &[]), Some(2.0));
        gained += sample(&m, "counter_controller_shard_keys_moved_total", &[]).unwrap_or(0.0);
        assert!(sample(&m, "counter_controller_shard_handovers_total", &[]).unwrap_or(0.0) >= 1.0);
    }
    assert!(gained >= moved as f64, "the survivors counted the keys that came to them: {gained}");
}

/// Sets every ConfigMap's desired count, straight in the store (off the runtime's threads, which
/// serve the replicas meanwhile).
fn desire(sb: &kube_sandbox::Sandbox, n: usize, desired: &str) {
    let cms = builtin_resource("", "v1", "configmaps").unwrap();
    let patch = json!({ "metadata": { "annotations": { "counter.example.com/desired": desired } } });
    tokio::task::block_in_place(|| {
        for i in 0..n {
            sb.store().merge(cms, "default", &format!("shop-{i:05}"), &patch).unwrap();
        }
    });
}

/// The holder identities of the ring's live shard Leases.
fn ring_members(sb: &kube_sandbox::Sandbox) -> Vec<String> {
    let leases = builtin_resource("coordination.k8s.io", "v1", "leases").unwrap();
    let list = sb.store().list(leases, Some("default"), &Default::default()).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joiner_takes_its_share_and_a_woken_replica_writes_nothing_it_no_longer_owns() {
    const M: usize = 1200;
    let (dir, sb, mut replicas) = converged_ring("sharding-join", &["j-a", "j-b", "j-c"], M).await;

    // Freeze one replica mid-flight and add a fourth: the ring rebalances around the frozen one.
    replicas[2].signal("STOP");
    let stopped = Instant::now();
    replicas.push(Replica::start(&dir, &sb.kubeconfig, "j-d", &args()));
    desire(&sb.sandbox, M, "3");
    converged_n(&sb.sandbox, M, 3, Duration::from_secs(90)).await;

    // Wake it: its lease lapsed, so it owns nothing until the others drained for a ring with it.
    replicas[2].signal("CONT");
    let woke = Instant::now();
    tokio::time::sleep(LEASE).await;
    desire(&sb.sandbox, M, "4");
    converged_n(&sb.sandbox, M, 4, Duration::from_secs(90)).await;
    let members = ring_members(&sb.sandbox);
    assert_eq!(members.len(), 4, "{members:?}");
    let ring = kube_lease_election::ring::Ring::new(members.clone());
    let id_of = |host: &str| members.iter().find(|m| m.starts_with(&format!("{host}_"))).cloned().unwrap();

    let all: Vec<&Replica> = replicas.iter().collect();
    let ws = writes(&sb.sandbox, &all);
    let c = "j-c";
    let (mut c_keys, mut d_keys) = (0, 0);
    for (key, w) in &ws {
        let owner = ring.owner(&format!("default/{key}")).unwrap();
        let c_after: Vec<&Instant> =
            w.iter().filter(|(at, who)| who == c && *at >= woke).map(|(at, _)| at).collect();
        if owner != id_of(c) {
            assert!(c_after.is_empty(), "{key}: the woken replica wrote a key it does not own");
        } else if let Some(first) = c_after.iter().min() {
            c_keys += 1;
            let others_after = w.iter().filter(|(at, who)| who != c && at >= *first).count();
            assert_eq!(others_after, 0, "{key}: written by another replica after the woken one took it");
        }
        // While frozen, its keys went to others only after its lease ran out.
        for pair in w.windows(2) {
            let ((t1, w1), (t2, w2)) = (&pair[0], &pair[1]);
            if w1 == c && w2 != c && *t1 < stopped + LEASE {
                assert!(t2.duration_since(*t1) >= LEASE - RETRY, "{key}: {w1} then {w2} too close");
            }
        }
        if w.iter().any(|(_, who)| who == "j-d") {
            d_keys += 1;
        }
    }
    eprintln!("joiner wrote {d_keys} keys; the woken replica took back {c_keys}");
    assert!(d_keys >= M / 5, "the joiner took only {d_keys} of {M}");
    assert!(c_keys >= M / 8, "the woken replica took back only {c_keys} of {M}");
}

/// The `i`th of the namespaces below: team and stage, as real clusters name them (raw FNV-1a,
/// which the server hashes, spreads names that differ only in a trailing number poorly).
fn namespace(i: usize) -> String {
    const TEAMS: [&str; 8] = ["shop", "payments", "search", "auth", "billing", "media", "ads", "maps"];
    const STAGES: [&str; 6] = ["prod", "staging", "dev", "qa", "canary", "sandbox"];
    format!("{}-{}", TEAMS[i % TEAMS.len()], STAGES[(i / TEAMS.len()) % STAGES.len()])
}

/// `count` namespaces (at most 48), and `per` ConfigMaps in each wanting 2 replicas.
fn seed_namespaces(sb: &kube_sandbox::Sandbox, count: usize, per: usize) -> Vec<String> {
    let (nss, cms) = (
        builtin_resource("", "v1", "namespaces").unwrap(),
        builtin_resource("", "v1", "configmaps").unwrap(),
    );
    let names: Vec<String> = (0..count).map(namespace).collect();
    for ns in &names {
        let obj = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns } });
        sb.store().create(nss, "", obj, None).unwrap();
        for i in 0..per {
            let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": format!("app-{i:03}"), "namespace": ns,
                              "annotations": { "counter.example.com/desired": "2" } } });
            sb.store().create(cms, ns, cm, None).unwrap();
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_namespace_the_server_sends_each_member_exactly_its_share() {
    let sb = kube_sandbox::Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
    seed_namespaces(&sb, 40, 3);
    let ring = Ring::with_keying(["r-a", "r-b", "r-c"], Keying::Namespace);
    let all = listed_keys(&kube::Api::<ConfigMap>::all(sb.client())).await;
    let mut seen = 0;
    for member in ring.members() {
        // Through the client layer the controller uses, against the sandbox's KEP-5866 lists.
        let cell = SelectorCell::default();
        cell.set(Some(shard_selector(&Ring::ranges([&ring], member).unwrap())));
        let layered = tower::ServiceBuilder::new()
            .layer(ShardSelectorLayer::new(["configmaps"], cell))
            .service(sb.service());
        let sent = listed_keys(&kube::Api::<ConfigMap>::all(kube::Client::new(layered, "default"))).await;
        let kept: Vec<String> =
            all.iter().filter(|k| ring.owner(k) == Some(member.as_str())).cloned().collect();
        assert_eq!(sent, kept, "{member}: what the server sends is what the ring gives it");
        assert!(!kept.is_empty(), "{member} owns some of the 40 namespaces");
        seen += sent.len();
    }
    assert_eq!(seen, all.len(), "the shares cover every object once");
}

/// The `namespace/name` keys a list returns, sorted.
async fn listed_keys(api: &kube::Api<ConfigMap>) -> Vec<String> {
    let mut keys: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| {
            format!("{}/{}", c.metadata.namespace.as_deref().unwrap(), c.metadata.name.as_deref().unwrap())
        })
        .collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_namespace_server_side_and_client_side_filtering_give_the_same_assignment() {
    const NAMESPACES: usize = 30;
    const PER: usize = 20;
    for served in [true, false] {
        let dir = temp_dir(if served { "shard-ns-server" } else { "shard-ns-client" });
        let config = kube_sandbox::SandboxConfig { sharded_list_watch: served, ..Default::default() };
        let sb = serve_sandbox_with(&dir, config).await;
        seed_namespaces(&sb.sandbox, NAMESPACES, PER);
        let mut args = args();
        args.retain(|a| a != "--namespace=default");
        args.extend(
            ["--all-namespaces", "--leader-elect-resource-namespace=default", "--sharding-key=namespace"]
                .map(String::from),
        );
        let replicas: Vec<Replica> =
            ["ns-a", "ns-b"].iter().map(|h| Replica::start(&dir, &sb.kubeconfig, h, &args)).collect();
        converged_in(&sb.sandbox, None, NAMESPACES * PER, 2, Duration::from_secs(90)).await;
        let members = ring_members(&sb.sandbox);
        let ring = Ring::with_keying(members.clone(), Keying::Namespace);
        let id_of =
            |host: &str| members.iter().find(|m| m.starts_with(&format!("{host}_"))).cloned().unwrap();
        // Every Deployment was written by the ring's owner of its namespace, and only by it.
        let mut written: HashMap<String, usize> = HashMap::new();
        for r in sb.sandbox.requests().all() {
            if r.resource != "deployments" || !r.is_write() || r.code >= 300 {
                continue;
            }
            let who = replicas.iter().find(|p| p.sent(&r.user_agent)).expect("a replica wrote it");
            let key = format!("{}/{}", r.namespace, r.name);
            assert_eq!(
                ring.owner(&key),
                Some(id_of(&who.hostname).as_str()),
                "{key} written by {}",
                who.hostname
            );
            *written.entry(who.hostname.clone()).or_default() += 1;
        }
        let mut turned_away = 0.0;
        for r in &replicas {
            let m = r.metrics();
            let share = (0..NAMESPACES * PER)
                .filter(|i| {
                    let key = format!("{}/app-{:03}", namespace(i / PER), i % PER);
                    ring.owner(&key) == Some(id_of(&r.hostname).as_str())
                })
                .count();
            // Either way the cache holds exactly the share, once the watch has delivered the last
            // writes (the store shows them converged a moment before the informers do).
            for kind in ["ConfigMap", "Deployment"] {
                let what = format!("{} (server filters: {served}) caches {share} {kind}s", r.hostname);
                let cached = || {
                    sample(
                        &r.metrics(),
                        "counter_controller_shard_cached_objects",
                        &[&format!("kind=\"{kind}\"")],
                    )
                };
                until_steady(&what, Duration::from_secs(30), || {
                    let now = tokio::task::block_in_place(cached);
                    if now == Some(share as f64) { Ok(()) } else { Err(now) }
                })
                .await;
            }
            assert_eq!(
                sample(&m, "counter_controller_shard_server_filtered", &[]),
                Some(f64::from(u8::from(served))),
                "{}",
                r.hostname
            );
            turned_away +=
                sample(&m, "counter_controller_shard_filtered_objects_total", &["kind=\"ConfigMap\""])
                    .unwrap_or(0.0);
        }
        let total = (NAMESPACES * PER) as f64;
        eprintln!(
            "server filters: {served}; writes per replica {written:?}; ConfigMaps turned away by the replicas: {turned_away}"
        );
        if served {
            assert!(turned_away < total / 4.0, "the server sent other replicas' objects: {turned_away}");
        } else {
            assert!(turned_away >= total / 2.0, "each replica received everything: {turned_away}");
        }
    }
}

/// On a stall, says how the shard Leases fared: per replica, its Lease writes, the longest gap
/// between two of them and how many gaps exceeded the renew deadline (each one a lapse).
fn dump_leases(sb: &kube_sandbox::Sandbox) {
    let mut last: BTreeMap<String, (Instant, usize, Duration, usize)> = BTreeMap::new();
    for r in sb.requests().all() {
        if r.resource != "leases" || r.verb != "update" {
            continue;
        }
        let who = r.user_agent.split(['(', '_']).nth(1).unwrap_or(&r.user_agent).to_owned();
        let e = last.entry(who).or_insert((r.at, 0, Duration::ZERO, 0));
        let gap = r.at.duration_since(e.0);
        *e = (r.at, e.1 + 1, e.2.max(gap), e.3 + usize::from(gap > RENEW_DEADLINE));
    }
    for (who, (_, writes, longest, lapses)) in last {
        eprintln!("{who}: {writes} Lease renews, longest gap {longest:?}, {lapses} over the renew deadline");
    }
}

/// A replica cut off from the API server — its requests held on the wire — loses its keys to
/// the others once its shard Lease lapses; when the cut heals its held writes arrive late, after
/// the new owners have written the same Deployments, and the server applies each if it can
/// ([`kube_sandbox::Abandoned::Applied`], the worst case). Every one was conditional on the version it
/// was decided from: refused, nothing reverts, everything converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_replicas_late_writes_arrive_after_its_keys_moved_and_never_win() {
    const M: usize = 300;
    let (_dir, sb, replicas) = converged_ring("sharding-late", &["l-a", "l-b", "l-c"], M).await;
    until_steady("three members", Duration::from_secs(60), || {
        let n = ring_members(&sb.sandbox).len();
        if n == 3 { Ok(()) } else { Err(n) }
    })
    .await;

    let faults = sb.sandbox.faults();
    faults.hold("(l-c_", kube_sandbox::Abandoned::Applied);
    desire(&sb.sandbox, M, "3");
    // Its keys move to the two others after its Lease lapses; they converge them all.
    converged_n(&sb.sandbox, M, 3, Duration::from_secs(90)).await;
    desire(&sb.sandbox, M, "4");
    converged_n(&sb.sandbox, M, 4, Duration::from_secs(90)).await;
    let held = faults.held();
    let healed = Instant::now();
    faults.release_held().await;
    let late: Vec<_> = sb
        .sandbox
        .requests()
        .all()
        .into_iter()
        .filter(|r| {
            replicas[2].sent(&r.user_agent) && r.at >= healed && r.resource == "deployments" && r.is_write()
        })
        .collect();
    let codes: Vec<u16> = late.iter().map(|r| r.code).collect();
    eprintln!(
        "sharded late delivery: {held} requests held; the cut-off replica's Deployment writes delivered: {codes:?}"
    );
    assert!(!late.is_empty(), "its held writes were delivered");
    assert!(late.iter().all(|r| r.code == 409), "a late write was applied: {late:?}");
    // Nothing reverted, and all converge with it back in the ring.
    converged_n(&sb.sandbox, M, 4, Duration::from_secs(5)).await;
    desire(&sb.sandbox, M, "5");
    converged_n(&sb.sandbox, M, 5, Duration::from_secs(90)).await;
}
