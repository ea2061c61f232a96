//! The elector against a real `kube::Client` on the sandbox: who leads, hand-over on release and on
//! a crash, stepping down when renews fail, and never overwriting someone else's live Lease.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use kube_lease_election::{ElectionConfig, ElectionHandle, LeaderElector, Leadership};
use kube_sandbox::{FaultKind, FaultRule, Sandbox};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(1200);
const RETRY: Duration = Duration::from_millis(200);

struct Candidate {
    handle: ElectionHandle,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

fn candidate(sb: &Sandbox, identity: &str) -> Candidate {
    let config = ElectionConfig {
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..ElectionConfig::new("default", "ctl", identity)
    };
    let elector = LeaderElector::new(sb.client(), config).unwrap();
    let handle = elector.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(elector.run(stop.clone()));
    Candidate { handle, stop, task }
}

async fn until_leading(c: &Candidate, within: Duration) -> Duration {
    let start = Instant::now();
    tokio::time::timeout(within, c.handle.subscribe().wait_for(Leadership::is_leading))
        .await
        .unwrap_or_else(|_| panic!("{} did not lead within {within:?}", c.handle.identity()))
        .unwrap();
    start.elapsed()
}

async fn lease(sb: &Sandbox) -> Lease {
    Api::<Lease>::default_namespaced(sb.client()).get("ctl").await.unwrap()
}

fn holder(l: &Lease) -> String {
    l.spec.as_ref().and_then(|s| s.holder_identity.clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leads_the_other_follows_and_a_release_hands_over_at_once() {
    let sb = Sandbox::new();
    let a = candidate(&sb, "a");
    until_leading(&a, Duration::from_secs(5)).await;
    let b = candidate(&sb, "b");
    tokio::time::sleep(RETRY * 3).await;
    assert_eq!(b.handle.leadership(), Leadership::Following { holder: "a".into() });
    assert!(a.handle.fence().is_held() && !b.handle.fence().is_held());
    let l = lease(&sb).await;
    assert_eq!(holder(&l), "a");
    let spec = l.spec.unwrap();
    assert_eq!((spec.lease_duration_seconds, spec.lease_transitions), (Some(2), Some(0)));

    // A clean stop releases: B leads within about one retry period, not a lease duration.
    a.stop.cancel();
    a.task.await.unwrap();
    assert!(!a.handle.fence().is_held());
    let took = until_leading(&b, Duration::from_secs(5)).await;
    assert!(took < LEASE, "took over in {took:?}, as if the lease had not been released");
    let l = lease(&sb).await;
    assert_eq!(holder(&l), "b");
    assert_eq!(l.spec.unwrap().lease_transitions, Some(1));
    b.stop.cancel();
    b.task.await.unwrap();
    assert_eq!(holder(&lease(&sb).await), "", "released: empty holder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_leader_is_replaced_after_the_lease_runs_out() {
    let sb = Sandbox::new();
    let a = candidate(&sb, "a");
    until_leading(&a, Duration::from_secs(5)).await;
    let b = candidate(&sb, "b");
    tokio::time::sleep(RETRY * 3).await;
    // A crash: no release, no more renews.
    a.task.abort();
    let crashed = Instant::now();
    until_leading(&b, Duration::from_secs(10)).await;
    let took = crashed.elapsed();
    assert!(took >= LEASE - RETRY * 2, "took the lease after only {took:?}");
    assert_eq!(holder(&lease(&sb).await), "b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_renews_step_down_within_the_renew_deadline() {
    let sb = Sandbox::new();
    let a = candidate(&sb, "a");
    until_leading(&a, Duration::from_secs(5)).await;
    tokio::time::sleep(RETRY * 2).await;
    sb.faults().add_rule(FaultRule::new(Some("update"), Some("leases"), 1.0, FaultKind::InternalError));
    let last_renew = a.handle.fence().last_renew_sent().unwrap();
    tokio::time::timeout(Duration::from_secs(5), a.handle.subscribe().wait_for(|l| !l.is_leading()))
        .await
        .expect("stepped down")
        .unwrap();
    let stepped = last_renew.elapsed();
    assert!(stepped <= RENEW + RETRY * 2, "stepped down {stepped:?} after the last good renew");
    assert!(!a.handle.fence().is_held());
    assert!(a.handle.check_health().is_ok(), "a follower is healthy");

    // Still a candidate, not dead: when the API heals it leads again.
    sb.faults().clear();
    until_leading(&a, Duration::from_secs(5)).await;
    a.stop.cancel();
    a.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_foreign_lease_is_never_overwritten() {
    let sb = Sandbox::new();
    let api = Api::<Lease>::default_namespaced(sb.client());
    let foreign = |renew: &str| -> Lease {
        serde_json::from_value(json!({
            "metadata": { "name": "ctl" },
            "spec": { "holderIdentity": "another-controller_1", "leaseDurationSeconds": 2,
                      "renewTime": renew, "leaseTransitions": 3 },
        }))
        .unwrap()
    };
    api.create(&PostParams::default(), &foreign("2026-01-01T00:00:00.000000Z")).await.unwrap();
    let a = candidate(&sb, "a");
    // The other holder keeps renewing for three lease durations: we follow and never write.
    for i in 0..12 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut l = api.get("ctl").await.unwrap();
        l.spec = foreign(&format!("2026-01-01T00:00:{i:02}.000000Z")).spec;
        api.replace("ctl", &PostParams::default(), &l).await.unwrap();
        assert_eq!(a.handle.leadership(), Leadership::Following { holder: "another-controller_1".into() });
    }
    let writes = sb.requests().all().into_iter().filter(|r| r.resource == "leases" && r.is_write()).count();
    assert_eq!(writes, 1 + 12, "only the test's own create and renews");
    // It stops renewing: we take it after its lease duration, counting a transition.
    until_leading(&a, Duration::from_secs(6)).await;
    let l = lease(&sb).await;
    assert_eq!((holder(&l), l.spec.unwrap().lease_transitions), ("a".into(), Some(4)));
    a.stop.cancel();
    a.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_with_garbage_fields_is_waited_out_not_taken() {
    let sb = Sandbox::new();
    let api = Api::<Lease>::default_namespaced(sb.client());
    let garbage: Lease = serde_json::from_value(json!({
        "metadata": { "name": "ctl" },
        // What the API server lets through: no duration and no renew time (it refuses negative
        // values); the elector must not read that as expired.
        "spec": { "holderIdentity": "ghost" },
    }))
    .unwrap();
    api.create(&PostParams::default(), &garbage).await.unwrap();
    let a = candidate(&sb, "a");
    tokio::time::sleep(LEASE / 2).await;
    assert_eq!(a.handle.leadership(), Leadership::Following { holder: "ghost".into() });
    let took = until_leading(&a, Duration::from_secs(6)).await + LEASE / 2;
    assert!(took >= LEASE, "a missing duration must not shorten the wait: took {took:?}");
    let l = lease(&sb).await;
    assert_eq!(l.spec.unwrap().lease_transitions, Some(1));
    a.stop.cancel();
    a.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_lease_namespace_is_retried_not_fatal() {
    let sb = Sandbox::new();
    let config = ElectionConfig {
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..ElectionConfig::new("nowhere", "ctl", "a")
    };
    let elector = LeaderElector::new(sb.client(), config).unwrap();
    let handle = elector.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(elector.run(stop.clone()));
    tokio::time::sleep(RETRY * 3).await;
    assert_eq!(handle.leadership(), Leadership::Candidate);
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({ "metadata": { "name": "nowhere" } })).unwrap();
    Api::all(sb.client()).create(&PostParams::default(), &ns).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), handle.subscribe().wait_for(Leadership::is_leading))
        .await
        .expect("leads once the namespace exists")
        .unwrap();
    stop.cancel();
    task.await.unwrap();
}
