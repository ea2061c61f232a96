//! Scale out, measured: 1, 2, 3 and 4 `counter-controller run --sharding` replicas (each its own
//! process) against one sandbox served from this process, N realistic ConfigMaps (default
//! 10,000; `SHARDING_N`). For each size:
//!
//! 1. **create**: the ConfigMaps exist before the replicas start; until N Deployments have 3;
//! 2. **scale**: every annotation set to 5 by a bulk client; until N Deployments have 5;
//!
//! and per replica: keys it owns, peak RSS (VmHWM), CPU seconds, Deployment writes and reconciles
//! per second over both phases. With 3 replicas, two changes of the member set follow:
//!
//! 3. **join**: a fourth replica starts; keys moved (from the ring of the live shard Leases), and
//!    the longest time a moving key had no owner: from the first replica that saw the new set (and
//!    dropped the keys leaving it) to the last one that saw it settled (and may work the keys
//!    coming to it), from their logs; then every annotation set to 6, until converged;
//! 4. **kill -9** of one replica: keys moved, and the time from the kill until every survivor saw
//!    the smaller set settled (the dead replica's Lease must expire first); then set to 7.
//!
//! Lease settings: `SHARDING_LEASE` (default `5s,3s,500ms` for duration, renew deadline, retry).
//! One machine: the replicas, the sandbox and the bulk client share its cores, so the totals say
//! what the machine can do, not what N replicas on N nodes would.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube_lease_election::ring::Ring;
use kube_sandbox::Sandbox;
use kube_sandbox::builtin_resource;

use crate::feed::Deployments;
use crate::process::{BIN, annotate, cpu_seconds, name, sandbox_with, vm_hwm_mib};

const LIMIT: Duration = Duration::from_secs(600);

struct Replica {
    child: Child,
    host: String,
    metrics: std::net::SocketAddr,
    log: std::path::PathBuf,
}

impl Replica {
    fn start(dir: &Path, kubeconfig: &Path, host: &str, lease: &[String]) -> Self {
        let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let log = dir.join(format!("{host}.log"));
        let child = Command::new(BIN)
            .args(["run", "--namespace=default", "--log-format=json", "--sharding"])
            .args(lease)
            .arg(format!("--metrics-addr={metrics}"))
            .env("KUBECONFIG", kubeconfig)
            .env("HOSTNAME", host)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Self { child, host: host.to_owned(), metrics, log }
    }

    fn metric(&self, family: &str) -> f64 {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.metrics).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body.lines()
            .filter(|l| l.starts_with(family) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    }

    /// When this replica logged each ownership change: (wall time, members, settled).
    fn ownership_log(&self) -> Vec<(jiff::Timestamp, u64, bool)> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["fields"]["message"] == "shard ownership changed")
            .filter_map(|v| {
                let at: jiff::Timestamp = v["timestamp"].as_str()?.parse().ok()?;
                Some((at, v["fields"]["members"].as_u64()?, v["fields"]["settled"].as_bool()?))
            })
            .collect()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Holder identities of the live shard Leases.
fn members(sb: &Sandbox) -> Vec<String> {
    let leases = builtin_resource("coordination.k8s.io", "v1", "leases").unwrap();
    let list = sb.store().list(leases, Some("default"), &Default::default()).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["spec"]["holderIdentity"].as_str().filter(|h| !h.is_empty()).map(str::to_owned))
        .collect()
}

async fn wait_members(sb: &Sandbox, n: usize) {
    let deadline = Instant::now() + LIMIT;
    while members(sb).len() != n {
        assert!(Instant::now() < deadline, "the ring never had {n} members");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn keys_moved(before: &Ring, after: &Ring, n: usize) -> usize {
    (0..n)
        .filter(|i| {
            let k = format!("default/{}", name(*i));
            before.owner(&k) != after.owner(&k)
        })
        .count()
}

/// Waits until every replica has logged a settled set of `members` members since `since`.
async fn wait_settled(replicas: &[&Replica], members: u64, since: jiff::Timestamp) {
    let deadline = Instant::now() + LIMIT;
    let settled =
        |r: &&Replica| r.ownership_log().iter().any(|(at, m, s)| *at >= since && *m == members && *s);
    while !replicas.iter().all(settled) {
        assert!(Instant::now() < deadline, "the replicas never settled on {members} members");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// From the first replica that saw `members` members to the last one that saw them settled.
fn handover_window(
    replicas: &[&Replica],
    members: u64,
    since: jiff::Timestamp,
) -> (jiff::Timestamp, jiff::Timestamp) {
    let mut first_seen: Option<jiff::Timestamp> = None;
    let mut last_settled: Option<jiff::Timestamp> = None;
    for r in replicas {
        let log: Vec<_> =
            r.ownership_log().into_iter().filter(|(at, m, _)| *at >= since && *m == members).collect();
        if let Some((at, _, _)) = log.first() {
            first_seen = Some(first_seen.map_or(*at, |f| f.min(*at)));
        }
        let settled =
            log.iter().find(|(_, _, s)| *s).map(|(at, _, _)| *at).expect("the replica saw the set settle");
        last_settled = Some(last_settled.map_or(settled, |l| l.max(settled)));
    }
    (first_seen.unwrap(), last_settled.unwrap())
}

fn secs(from: jiff::Timestamp, to: jiff::Timestamp) -> f64 {
    (to - from).total(jiff::Unit::Second).unwrap_or(f64::NAN)
}

async fn run(n: usize, size: usize, lease: &[String]) {
    let sb = sandbox_with(n);
    let (server, dir, kubeconfig) = crate::process::serve(&sb, &format!("sharding-{size}")).await;
    let mut view = Deployments::follow(&sb);
    let sandbox_cpu = cpu_seconds("self");

    let t0 = Instant::now();
    let mut replicas: Vec<Replica> =
        (0..size).map(|i| Replica::start(&dir, &kubeconfig, &format!("shard-{i}"), lease)).collect();
    let t1 = view.until(LIMIT, Deployments::all(n, 3)).await;
    let user = kube_manager::client::client(counter_controller::AGENT, Some(&kubeconfig)).await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(user);
    annotate(&cms, n, |_| "5".into()).await;
    let t2 = view.until(LIMIT, Deployments::all(n, 5)).await;
    let window = (t2 - t0).as_secs_f64();

    let ring = Ring::new(members(&sb));
    println!(
        "\n{size} replica(s): create {:.2}s, scale {:.2}s ({:.0} keys/s over both); sandbox CPU {:.1}s",
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        2.0 * n as f64 / window,
        cpu_seconds("self") - sandbox_cpu
    );
    println!(
        "  {:<8} {:>6} {:>9} {:>8} {:>9} {:>12} {:>10}",
        "replica", "keys", "cached", "RSS MiB", "CPU s", "reconciles/s", "writes/s"
    );
    let requests = sb.requests().all();
    for r in &replicas {
        let id = ring
            .members()
            .iter()
            .find(|m| m.starts_with(&format!("{}_", r.host)))
            .cloned()
            .unwrap_or_default();
        let keys =
            (0..n).filter(|i| ring.owner(&format!("default/{}", name(*i))) == Some(id.as_str())).count();
        let writes = requests
            .iter()
            .filter(|q| {
                q.resource == "deployments" && q.is_write() && q.user_agent.contains(&format!("({}_", r.host))
            })
            .count();
        println!(
            "  {:<8} {:>6} {:>9} {:>8.1} {:>9.1} {:>12.0} {:>10.0}",
            r.host,
            keys,
            r.metric("counter_controller_shard_cached_objects{kind=\"ConfigMap\"}"),
            vm_hwm_mib(r.child.id()),
            cpu_seconds(&r.child.id().to_string()),
            r.metric("controller_runtime_reconcile_total") / window,
            writes as f64 / window,
        );
    }

    if size == 3 {
        // Join: a fourth member.
        let since = jiff::Timestamp::now();
        replicas.push(Replica::start(&dir, &kubeconfig, "shard-3", lease));
        wait_members(&sb, 4).await;
        let four = Ring::new(members(&sb));
        let all: Vec<&Replica> = replicas.iter().collect();
        wait_settled(&all, 4, since).await;
        let (seen, settled) = handover_window(&all, 4, since);
        let t = Instant::now();
        annotate(&cms, n, |_| "6".into()).await;
        view.until(LIMIT, Deployments::all(n, 6)).await;
        println!(
            "  join:    {} of {n} keys moved ({:.1}%); longest without an owner {:.2}s (joiner started → settled {:.2}s); then all converged {:.2}s after the change began",
            keys_moved(&ring, &four, n),
            100.0 * keys_moved(&ring, &four, n) as f64 / n as f64,
            secs(seen, settled),
            secs(since, settled),
            t.elapsed().as_secs_f64()
        );

        // kill -9 one of the first three.
        let victim = replicas.remove(1);
        let killed_at = jiff::Timestamp::now();
        Command::new("kill").args(["-KILL", &victim.child.id().to_string()]).status().unwrap();
        drop(victim);
        // The dead member's Lease stays until it expires; wait until the survivors settled.
        let all: Vec<&Replica> = replicas.iter().collect();
        wait_settled(&all, 3, killed_at).await;
        let (_, settled) = handover_window(&all, 3, killed_at);
        let survivors: Vec<String> = four
            .members()
            .iter()
            .filter(|m| replicas.iter().any(|r| m.starts_with(&format!("{}_", r.host))))
            .cloned()
            .collect();
        let t = Instant::now();
        annotate(&cms, n, |_| "7".into()).await;
        view.until(LIMIT, Deployments::all(n, 7)).await;
        println!(
            "  kill -9: {} of {n} keys moved; longest without an owner {:.2}s (kill → survivors settled; lease {}); then all converged {:.2}s after the change began",
            keys_moved(&four, &Ring::new(survivors), n),
            secs(killed_at, settled),
            lease[0].trim_start_matches("--leader-elect-lease-duration="),
            t.elapsed().as_secs_f64()
        );
    }
    drop(replicas);
    server.shutdown();
}

/// Prints the table for 1 to 4 replicas.
pub fn main() {
    let n: usize = std::env::var("SHARDING_N").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let lease = std::env::var("SHARDING_LEASE").unwrap_or_else(|_| "5s,3s,500ms".into());
    let parts: Vec<&str> = lease.split(',').collect();
    let [d, r, p] = parts.as_slice() else {
        panic!("SHARDING_LEASE is duration,renew-deadline,retry-period")
    };
    let lease = vec![
        format!("--leader-elect-lease-duration={d}"),
        format!("--leader-elect-renew-deadline={r}"),
        format!("--leader-elect-retry-period={p}"),
    ];
    let sizes: Vec<usize> = std::env::var("SHARDING_REPLICAS")
        .unwrap_or_else(|_| "1,2,3,4".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!("sharding: N = {n} ConfigMaps, lease {lease:?}, 2 workers per replica, one machine");
    for size in sizes {
        rt.block_on(run(n, size, &lease));
    }
}
