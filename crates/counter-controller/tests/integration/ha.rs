//! High availability with real processes: two `counter-controller run --leader-elect` replicas
//! against one sandbox (in this process, served over HTTPS, so its request record shows who sent
//! what). Exactly one leads and only it writes; kill -9 and SIGTERM hand over; a paused leader
//! sends no write when it wakes; a leader whose renews fail stops writing within the renew
//! deadline.
//!
//! Durations are shortened (lease 3 s, renew 2 s, retry 0.5 s). Waits and bounds are counted in
//! the replicas' own steps — the Lease requests their election loops send — not in wall time: a
//! busy machine slows the steps, and a takeover "at the next try" is one try however long it took.

use std::future::Future;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

use crate::common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_sandbox::{Abandoned, FaultKind, FaultRule};
use serde_json::json;

const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);
/// How many Lease requests (the replicas' election steps, one per retry period each) a wait may
/// see go by with nothing else happening: about a minute on an idle machine, longer on a busy one.
const STEPS: usize = 120;

/// The tests start several processes each and mostly wait on Lease timings; two at a time (no
/// more than the machine's cores, so none of them waits for CPU long) keeps that timing
/// meaningful without leaving a test thread blocked on the others.
static SERIAL: Semaphore = Semaphore::const_new(2);

fn args() -> Vec<String> {
    [
        "run",
        "--namespace=default",
        "--log-format=json",
        "--leader-elect",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
    ]
    .map(String::from)
    .to_vec()
}

struct Cluster {
    sb: ServedSandbox,
    client: Client,
    dir: std::path::PathBuf,
}

impl Cluster {
    async fn new(name: &str) -> Self {
        let dir = temp_dir(name);
        let sb = serve_sandbox(&dir).await;
        let client = sb.sandbox.client();
        Self { sb, client, dir }
    }

    fn replica(&self, hostname: &str) -> Replica {
        Replica::start(&self.dir, &self.sb.kubeconfig, hostname, &args())
    }

    /// Two replicas, once one leads: `(leader, follower)`, with `web` converged to one replica.
    async fn pair(&self) -> (Replica, Replica) {
        let (a, b) = (self.replica("ctl-a"), self.replica("ctl-b"));
        let li = self.leader_among(&[&a, &b]).await;
        self.set_desired("web", "1").await;
        self.until_replicas("web", 1).await;
        if li == 0 { (a, b) } else { (b, a) }
    }

    async fn holder(&self) -> String {
        Api::<Lease>::default_namespaced(self.client.clone())
            .get_opt("counter-controller")
            .await
            .unwrap()
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    }

    /// Lease requests the sandbox has answered: every replica's election steps.
    fn steps(&self) -> usize {
        self.sb.sandbox.requests().all().iter().filter(|q| q.resource == "leases").count()
    }

    /// Lease reads `r` sent at or after `since`: its election loop's tries (each try reads the
    /// Lease, then writes it only if it may).
    fn tries_since(&self, r: &Replica, since: Instant) -> usize {
        let all = self.sb.sandbox.requests().all();
        all.iter()
            .filter(|q| q.resource == "leases" && q.verb == "get" && r.sent(&q.user_agent) && q.at >= since)
            .count()
    }

    /// Waits until `done` returns `Some`, failing once [`STEPS`] election steps went by without.
    async fn within_steps<T, F: Future<Output = Option<T>>>(
        &self,
        what: &str,
        mut done: impl FnMut() -> F,
    ) -> T {
        let start = self.steps();
        loop {
            if let Some(t) = done().await {
                return t;
            }
            let went = self.steps() - start;
            assert!(went < STEPS, "{what}: not after {went} election steps of the replicas");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until one of `replicas` holds the Lease; returns its index.
    async fn leader_among(&self, replicas: &[&Replica]) -> usize {
        self.within_steps("one of the replicas leads", || async {
            let h = self.holder().await;
            replicas.iter().position(|r| h.starts_with(&format!("{}_", r.hostname)))
        })
        .await
    }

    async fn set_desired(&self, name: &str, desired: &str) {
        let cms: Api<ConfigMap> = Api::default_namespaced(self.client.clone());
        let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": name, "annotations": { "counter.example.com/desired": desired } } });
        cms.patch(name, &PatchParams::apply("test").force(), &Patch::Apply(&cm)).await.unwrap();
    }

    /// `spec.replicas` of the Deployment `name`; `None` when it does not exist.
    async fn replicas(&self, name: &str) -> Option<i32> {
        let deploys: Api<Deployment> = Api::default_namespaced(self.client.clone());
        deploys.get_opt(name).await.unwrap().and_then(|d| d.spec.replicas)
    }

    async fn until_replicas(&self, name: &str, want: i32) {
        self.within_steps(&format!("deploy/{name} at {want} replicas"), || async {
            (self.replicas(name).await == Some(want)).then_some(())
        })
        .await;
    }

    /// Cuts `r` off: its requests are held on the wire (see [`kube_sandbox::Faults::hold`]).
    fn cut_off(&self, r: &Replica, abandoned: Abandoned) {
        self.sb.sandbox.faults().hold(&format!("({}_", r.hostname), abandoned);
    }

    /// Heals the cut: what was held is delivered, in order; returns how many requests were held
    /// and the writes of `r` that reached the server from then on.
    async fn heal(&self, r: &Replica) -> (usize, Vec<kube_sandbox::RequestRecord>) {
        let held = self.sb.sandbox.faults().held();
        let healed = Instant::now();
        self.sb.sandbox.faults().release_held().await;
        (held, self.writes_since(r, healed))
    }

    /// Writes sent by `r` that reached the server at or after `since`.
    fn writes_since(&self, r: &Replica, since: Instant) -> Vec<kube_sandbox::RequestRecord> {
        self.sb
            .sandbox
            .requests()
            .all()
            .into_iter()
            .filter(|q| q.is_write() && r.sent(&q.user_agent) && q.at >= since)
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leads_the_follower_never_writes_and_kill_9_fails_over() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    let c = Cluster::new("ha-kill").await;
    let (leader, follower) = c.pair().await;
    // From here on: before, both may have raced to create the Lease (the loser's create gets 409,
    // the optimistic concurrency that makes only one of them leader).
    let start = Instant::now();

    c.set_desired("web", "2").await;
    c.until_replicas("web", 2).await;
    tokio::time::sleep(RETRY * 4).await;
    let idle = c.writes_since(&follower, start);
    assert!(idle.is_empty(), "the follower wrote: {idle:?}");
    let follower_reads =
        c.sb.sandbox.requests().all().iter().filter(|q| follower.sent(&q.user_agent)).count();
    assert!(follower_reads > 0, "the follower is connected (informers and Lease reads)");
    for r in [&leader, &follower] {
        assert_eq!(http_get(r.metrics_addr(), "/readyz").0, 200, "{} ready with warm caches", r.hostname);
        assert_eq!(http_get(r.metrics_addr(), "/healthz").0, 200);
    }
    let master =
        |r: &Replica| sample(&r.metrics(), "leader_election_master_status", &["name=\"counter-controller\""]);
    assert_eq!((master(&leader), master(&follower)), (Some(1.0), Some(0.0)));

    // kill -9: no release. A change made meanwhile is converged by the new leader.
    leader.signal("KILL");
    let killed = Instant::now();
    c.set_desired("web", "3").await;
    assert_eq!(c.leader_among(&[&follower]).await, 0);
    let took = killed.elapsed();
    c.until_replicas("web", 3).await;
    // It waits out the lease by its own clock, trying every retry period, and takes it at the
    // first try after: at most a lease's worth of tries and two more (a busy machine tries less
    // often, never more).
    let tries = c.tries_since(&follower, killed);
    eprintln!("kill -9 takeover: {took:?}, {tries} tries (lease {LEASE:?}, retry {RETRY:?})");
    let bound = (LEASE.as_millis() / RETRY.as_millis()) as usize + 2;
    assert!(tries <= bound, "took over after {tries} tries, more than {bound}");
    assert_eq!(master(&follower), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_releases_and_hands_over_within_two_retry_periods() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    let c = Cluster::new("ha-term").await;
    let (mut leader, follower) = c.pair().await;
    // Let the follower's informers settle so the measurement is the hand-over alone.
    tokio::time::sleep(RETRY * 2).await;

    leader.signal("TERM");
    let termed = Instant::now();
    let status = leader.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "exit 0 after SIGTERM: {status}");
    let exited = termed.elapsed();
    let released = Instant::now();
    assert!(leader.log().contains("released the Lease"), "{}", leader.log());
    assert_eq!(c.leader_among(&[&follower]).await, 0);
    let took = termed.elapsed();
    // A released Lease is taken at the follower's next try (the one in flight may have read the
    // Lease just before the release).
    let tries = c.tries_since(&follower, released);
    eprintln!("SIGTERM: exit after {exited:?}, takeover after {took:?}, {tries} tries after the release");
    assert!(tries <= 2, "a released Lease is taken at the next try, not after {tries}");
    c.set_desired("web", "2").await;
    c.until_replicas("web", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_sends_no_write_after_waking_and_follows() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    let c = Cluster::new("ha-stop").await;
    let (old, new) = c.pair().await;

    // Split brain: the leader freezes (a stall, a stopped VM); the follower takes over and works.
    old.signal("STOP");
    let stopped = Instant::now();
    c.set_desired("web", "2").await;
    assert_eq!(c.leader_among(&[&new]).await, 0);
    c.until_replicas("web", 2).await;
    eprintln!("SIGSTOP takeover: {:?}", stopped.elapsed());
    // Work the old leader's stale cache will want to redo when it wakes.
    c.set_desired("web", "4").await;
    c.set_desired("other", "1").await;
    c.until_replicas("web", 4).await;
    c.until_replicas("other", 1).await;

    old.signal("CONT");
    let woke = Instant::now();
    tokio::time::sleep(RETRY * 6).await;
    let after = c.writes_since(&old, woke);
    assert!(after.is_empty(), "the woken leader wrote: {after:?}");
    let m = old.metrics();
    assert_eq!(sample(&m, "leader_election_master_status", &[]), Some(0.0), "it follows now");
    assert!(c.holder().await.starts_with("ctl-"), "still held");
    assert!(c.holder().await.starts_with(&format!("{}_", new.hostname)));
    let withheld = sample(&m, "controller_runtime_reconcile_total", &["result=\"requeue\""]).unwrap_or(0.0);
    eprintln!("woken leader: {withheld} reconciles whose writes the fence withheld");
    assert!(old.log().contains("stopped leading"), "{}", old.log());
}

/// A leader cut off from the API server — its requests held on the wire, as a partitioned
/// connection holds them — is replaced; when the cut heals, its held requests arrive late and in
/// order, and the server applies each if it can (the worst case, [`Abandoned::Applied`]). The
/// late scale was conditional on the Deployment's version it was decided from, which the new
/// leader's writes moved on: it is refused, and nothing reverts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leaders_late_writes_arrive_after_the_takeover_and_never_win() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    let c = Cluster::new("ha-late").await;
    let (old, new) = c.pair().await;
    c.cut_off(&old, Abandoned::Applied);
    // The old leader still leads by its clock: it decides 1 → 3 and sends the scale, held.
    c.set_desired("web", "3").await;
    assert_eq!(c.leader_among(&[&new]).await, 0);
    c.until_replicas("web", 3).await;
    // A newer write of the same Deployment by the new leader.
    c.set_desired("web", "2").await;
    c.until_replicas("web", 2).await;
    let healed = Instant::now();
    let (held, late) = c.heal(&old).await;
    eprintln!("late delivery: {held} requests held; the old leader's writes delivered: {late:?}");
    let scales: Vec<_> = late.iter().filter(|q| q.resource == "deployments").collect();
    assert!(!scales.is_empty(), "the held scale was delivered late: {late:?}");
    assert!(scales.iter().all(|q| q.code == 409), "a late write was applied: {scales:?}");
    assert!(late.iter().filter(|q| q.resource == "leases").all(|q| q.code >= 400), "{late:?}");
    // Nothing reverts; the old leader follows, the new one goes on converging.
    tokio::time::sleep(RETRY * 6).await;
    assert_eq!(c.replicas("web").await, Some(2));
    assert!(c.holder().await.starts_with(&format!("{}_", new.hostname)));
    c.set_desired("web", "4").await;
    c.until_replicas("web", 4).await;
    assert!(c.writes_since(&old, healed).iter().all(|q| q.resource != "deployments" || q.code == 409));
}

/// The case a precondition cannot refuse: the cut-off leader's scale was decided from a
/// ConfigMap value that changed back before anyone touched the Deployment, so the Deployment's
/// version still matches when the request arrives. The write's deadline covers it: the old
/// leader abandoned the request when its fence closed (it reset the connection), and a server
/// that sees the reset before the late bytes ([`Abandoned::Cancelled`]) does not apply it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leaders_write_past_its_deadline_is_abandoned_and_not_applied() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    let c = Cluster::new("ha-deadline").await;
    let (old, new) = c.pair().await;
    c.cut_off(&old, Abandoned::Cancelled);
    let faults = c.sb.sandbox.faults();
    c.set_desired("web", "3").await;
    // Back to 1 before the takeover: the new leader finds nothing to do.
    c.within_steps("the old leader's scale is held", || async { (faults.held() > 0).then_some(()) }).await;
    tokio::time::sleep(RETRY).await;
    c.set_desired("web", "1").await;
    assert_eq!(c.leader_among(&[&new]).await, 0);
    tokio::time::sleep(RETRY * 4).await;
    let (_, late) = c.heal(&old).await;
    let abandoned = faults.held_abandoned();
    eprintln!(
        "deadline: {abandoned} held requests abandoned by the old leader and not applied; delivered: {late:?}"
    );
    assert!(
        late.iter().all(|q| q.resource != "deployments"),
        "a write past its deadline was applied: {late:?}"
    );
    assert!(abandoned > 0, "the old leader abandoned its held requests");
    tokio::time::sleep(RETRY * 6).await;
    assert_eq!(c.replicas("web").await, Some(1), "nothing reverts");
    let m = old.metrics();
    let requeued = sample(&m, "controller_runtime_reconcile_total", &["result=\"requeue\""]).unwrap_or(0.0);
    assert!(requeued > 0.0, "the abandoned write is a requeue, not an error");
    c.set_desired("web", "2").await;
    c.until_replicas("web", 2).await;
}

/// A leader whose Lease writes fail steps down, and sends no other write, within the renew
/// deadline of its last renew; when the API heals it leads again and catches up.
async fn renew_faults_stop_the_writes(kind: FaultKind, name: &str) {
    let c = Cluster::new(name).await;
    let a = c.replica("ctl-a");
    c.leader_among(&[&a]).await;
    c.set_desired("web", "1").await;
    c.until_replicas("web", 1).await;

    c.sb.sandbox.faults().add_rule(FaultRule::new(Some("update"), Some("leases"), 1.0, kind));
    let faulted = Instant::now();
    // Keep giving it work so it would write if it could.
    let mut desired = 1;
    while faulted.elapsed() < RENEW + RETRY * 4 {
        desired = desired % 5 + 1;
        c.set_desired("web", &desired.to_string()).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let late = c.writes_since(&a, faulted + RENEW + Duration::from_millis(200));
    let late: Vec<_> = late.iter().filter(|q| q.resource != "leases").collect();
    assert!(late.is_empty(), "writes after the renew deadline: {late:?}");
    assert_eq!(sample(&a.metrics(), "leader_election_master_status", &[]), Some(0.0));
    assert!(a.log().contains("stopped leading"), "{}", a.log());
    assert_eq!(http_get(a.metrics_addr(), "/healthz").0, 200, "a follower is healthy (no restart needed)");

    c.sb.sandbox.faults().clear();
    // A count the loop above never asked for: only a leader elected again can write it (the
    // Deployment may already hold any of 1..=5 from before the deadline).
    c.set_desired("web", "7").await;
    c.until_replicas("web", 7).await;
    assert_eq!(sample(&a.metrics(), "leader_election_master_status", &[]), Some(1.0), "leads again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_renews_500_stop_the_writes_within_the_renew_deadline() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    renew_faults_stop_the_writes(FaultKind::InternalError, "ha-500").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_renew_connections_stop_the_writes_within_the_renew_deadline() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    renew_faults_stop_the_writes(FaultKind::Disconnect, "ha-cut").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_lease_of_another_controller_is_followed_never_overwritten() {
    let _serial = SERIAL.acquire().await.expect("never closed");
    let c = Cluster::new("ha-foreign").await;
    let leases: Api<Lease> = Api::default_namespaced(c.client.clone());
    let mut lease: Lease = serde_json::from_value(json!({
        "metadata": { "name": "counter-controller" },
        "spec": { "holderIdentity": "someone-else_1", "leaseDurationSeconds": 3,
                  "renewTime": "2026-01-01T00:00:00.000000Z" },
    }))
    .unwrap();
    lease = leases.create(&PostParams::default(), &lease).await.unwrap();
    let a = c.replica("ctl-a");
    c.set_desired("web", "1").await;
    let start = Instant::now();
    while start.elapsed() < LEASE * 2 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        lease.spec.as_mut().unwrap().renew_time =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(jiff::Timestamp::now()));
        lease = leases.replace("counter-controller", &PostParams::default(), &lease).await.unwrap();
    }
    assert!(c.writes_since(&a, start - Duration::from_secs(60)).is_empty(), "it never wrote");
    assert!(a.log().contains("new leader observed"), "{}", a.log());
    // The other holder goes away: it takes over after the lease and does the waiting work.
    c.leader_among(&[&a]).await;
    c.until_replicas("web", 1).await;
}
