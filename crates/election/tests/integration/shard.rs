//! Shard membership on the sandbox: members agree on the ring, joiners wait for the others to
//! drain, a clean leave and a crash both hand the keys over, and no key is workable by two
//! members at once.

use std::time::Duration;

use kube_lease_election::ElectionConfig;
use kube_lease_election::shard::{Ownership, ShardMember};
use kube_sandbox::Sandbox;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

struct Member {
    name: String,
    ownership: tokio::sync::watch::Receiver<Ownership>,
    stop: CancellationToken,
    task: JoinHandle<()>,
    acker: JoinHandle<()>,
}

fn member(sb: &Sandbox, name: &str) -> Member {
    let config = ElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1200),
        retry_period: Duration::from_millis(150),
        ..ElectionConfig::new("default", "unused", name)
    };
    let (m, handle) =
        ShardMember::new(sb.client(), "ring", kube_lease_election::ring::Keying::Name, config).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn(m.run(stop.clone()));
    // The controller's part, with nothing in flight: drained for each set as soon as it is seen.
    let (mut rx, drained) = (handle.ownership.clone(), handle.drained);
    let acker = tokio::spawn(async move {
        loop {
            let fp = rx.borrow_and_update().current().fingerprint();
            drained.send_replace(fp);
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
    Member { name: name.to_owned(), ownership: handle.ownership, stop, task, acker }
}

async fn until_settled(members: &[&Member], want: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ok = members.iter().all(|m| {
            let o = m.ownership.borrow();
            o.is_settled() && o.current().members() == want
        });
        if ok {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "members never settled on {want:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn keys() -> Vec<String> {
    (0..600).map(|i| format!("default/cm-{i:04}")).collect()
}

/// No key may be workable by two members at the same instant.
fn exclusive(members: &[&Member]) {
    for k in keys() {
        let workers: Vec<&str> =
            members.iter().filter(|m| m.ownership.borrow().may_work(&k)).map(|m| m.name.as_str()).collect();
        assert!(workers.len() <= 1, "{k} workable by {workers:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_agree_joiners_wait_and_leavers_hand_over() {
    let sb = Sandbox::new();
    let (a, b, c) = (member(&sb, "a"), member(&sb, "b"), member(&sb, "c"));
    until_settled(&[&a, &b, &c], &["a", "b", "c"]).await;
    exclusive(&[&a, &b, &c]);
    for k in keys() {
        assert_eq!(
            [&a, &b, &c].iter().filter(|m| m.ownership.borrow().may_work(&k)).count(),
            1,
            "{k} has one owner"
        );
    }

    // A joiner: checked all along the way, no key is ever workable twice.
    let d = member(&sb, "d");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        exclusive(&[&a, &b, &c, &d]);
        let settled = [&a, &b, &c, &d].iter().all(|m| {
            let o = m.ownership.borrow();
            o.is_settled() && o.current().members().len() == 4
        });
        if settled {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never settled with the joiner");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ds = keys().iter().filter(|k| d.ownership.borrow().may_work(k)).count();
    assert!((90..=210).contains(&ds), "the joiner took {ds} of 600");

    // A clean leave: its Lease is deleted, the others settle without waiting out a lease.
    b.stop.cancel();
    b.task.await.unwrap();
    b.acker.abort();
    until_settled(&[&a, &c, &d], &["a", "c", "d"]).await;
    exclusive(&[&a, &c, &d]);

    // A crash: no delete, no more renews; after its lease the others take its keys.
    c.task.abort();
    c.acker.abort();
    let crashed = tokio::time::Instant::now();
    until_settled(&[&a, &d], &["a", "d"]).await;
    assert!(crashed.elapsed() >= Duration::from_millis(1500), "a live member's keys were taken early");
    for k in keys() {
        assert_eq!(
            [&a, &d].iter().filter(|m| m.ownership.borrow().may_work(&k)).count(),
            1,
            "{k} has one owner"
        );
    }
    for m in [a, d] {
        m.stop.cancel();
        m.task.await.unwrap();
        m.acker.abort();
    }
}
