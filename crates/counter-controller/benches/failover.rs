//! Leader election as an operator sees it: two `counter-controller run --leader-elect` processes
//! (the real binary, each in its own process) against a sandbox in this process, with
//! kube-controller-manager's durations unless told otherwise. Prints
//!
//! * requests per minute of an idle leader and an idle follower (from each replica's own
//!   `rest_client_requests_total`), and each one's resident memory (VmRSS, VmHWM);
//! * takeover time after SIGTERM (release), kill -9 (crash) and SIGSTOP (a frozen leader), from
//!   the signal to the Lease naming the other replica, next to the protocol's bounds.
//!
//! `cargo bench -p counter-controller --bench failover` (about 2 minutes with the defaults);
//! `FAILOVER_DURATIONS=3s,2s,500ms FAILOVER_IDLE=20s` shortens it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube_manager::flags::parse_duration;

const BIN: &str = env!("CARGO_BIN_EXE_counter-controller");

struct Replica {
    child: Child,
    host: String,
    metrics: std::net::SocketAddr,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    fn start(dir: &Path, kubeconfig: &Path, host: &str, durations: &[String; 3]) -> Self {
        let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let child = Command::new(BIN)
            .args(["run", "--namespace=default", "--log-format=json", "--leader-elect"])
            .arg(format!("--leader-elect-lease-duration={}", durations[0]))
            .arg(format!("--leader-elect-renew-deadline={}", durations[1]))
            .arg(format!("--leader-elect-retry-period={}", durations[2]))
            .arg(format!("--metrics-addr={metrics}"))
            .env("KUBECONFIG", kubeconfig)
            .env("HOSTNAME", host)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("{host}.log"))).unwrap())
            .spawn()
            .unwrap();
        Self { child, host: host.to_owned(), metrics }
    }

    fn signal(&self, sig: &str) {
        Command::new("kill").args([&format!("-{sig}"), &self.child.id().to_string()]).status().unwrap();
    }

    /// Requests sent so far (every code and method).
    fn requests(&self) -> f64 {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.metrics).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text.lines()
            .filter(|l| l.starts_with("rest_client_requests_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// (VmRSS, VmHWM) in MiB.
    fn memory(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let kib = |field: &str| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
    }
}

async fn holder(leases: &Api<Lease>) -> String {
    leases
        .get_opt("counter-controller")
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
        .unwrap_or_default()
}

/// Waits until the Lease names one of `hosts`; returns its index and the time it took.
async fn until_held_by(leases: &Api<Lease>, hosts: &[&str], limit: Duration) -> (usize, Duration) {
    let start = Instant::now();
    loop {
        let h = holder(leases).await;
        if let Some(i) = hosts.iter().position(|host| h.starts_with(&format!("{host}_"))) {
            return (i, start.elapsed());
        }
        assert!(start.elapsed() < limit, "nobody of {hosts:?} leads after {limit:?} (holder {h:?})");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let durations: Vec<String> =
        env_or("FAILOVER_DURATIONS", "15s,10s,2s").split(',').map(str::to_owned).collect();
    let durations: [String; 3] = durations.try_into().expect("FAILOVER_DURATIONS=lease,renew,retry");
    let [lease, _, retry] = durations.clone().map(|d| parse_duration(&d).unwrap());
    let idle = parse_duration(&env_or("FAILOVER_IDLE", "60s")).unwrap();

    let dir: PathBuf = std::env::temp_dir().join(format!("cc-failover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sb = kube_sandbox::Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
    let server = sb.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    kube_sandbox::write_kubeconfig(&kubeconfig, &server).unwrap();
    let leases: Api<Lease> = Api::default_namespaced(sb.client());
    println!("durations: lease {}, renew deadline {}, retry {}", durations[0], durations[1], durations[2]);

    let replicas = vec![
        Replica::start(&dir, &kubeconfig, "a", &durations),
        Replica::start(&dir, &kubeconfig, "b", &durations),
    ];
    let (li, _) = until_held_by(&leases, &["a", "b"], lease * 3).await;
    tokio::time::sleep(Duration::from_secs(5)).await; // past start-up (lists, first renews)
    let before: Vec<f64> = replicas.iter().map(Replica::requests).collect();
    tokio::time::sleep(idle).await;
    let per_min = |i: usize| (replicas[i].requests() - before[i]) * 60.0 / idle.as_secs_f64();
    let (fi, f_rpm, l_rpm) = (1 - li, per_min(1 - li), per_min(li));
    let (l_rss, l_hwm) = replicas[li].memory();
    let (f_rss, f_hwm) = replicas[fi].memory();
    println!("idle leader:   {l_rpm:6.1} requests/min, RSS {l_rss:.1} MiB (peak {l_hwm:.1})");
    println!("idle follower: {f_rpm:6.1} requests/min, RSS {f_rss:.1} MiB (peak {f_hwm:.1})");
    println!("  (one renew per retry period is {:.1}/min)", 60.0 / retry.as_secs_f64());

    let mut ctx = Takeovers { leases, dir, kubeconfig, durations, replicas, leader: li };
    // SIGTERM: the leader releases; the follower takes it at its next try.
    ctx.signal_leader("SIGTERM", "TERM", retry.mul_f64(1.2), "1.2 retry periods", lease * 3).await;
    // kill -9: nobody releases; the follower waits out the lease from when it first saw the last
    // renew (up to one try after it was written), then takes it at its next try.
    let worst = lease + retry.mul_f64(2.4);
    ctx.signal_leader("kill -9", "KILL", worst, "worst case lease + 2 x 1.2 retry", lease * 3).await;
    // SIGSTOP: a frozen leader is replaced the same way; woken, it finds itself a follower.
    let stopped = ctx.leader;
    ctx.signal_leader("SIGSTOP", "STOP", worst, "worst case lease + 2 x 1.2 retry", lease * 3).await;
    ctx.replicas[stopped].signal("CONT");
    server.shutdown();
}

struct Takeovers {
    leases: Api<Lease>,
    dir: PathBuf,
    kubeconfig: PathBuf,
    durations: [String; 3],
    replicas: Vec<Replica>,
    leader: usize,
}

impl Takeovers {
    /// Signals the leader, times the Lease moving to the follower and prints it next to `bound`;
    /// then (unless the signal was a pause) starts a fresh follower in the old leader's place.
    async fn signal_leader(&mut self, what: &str, sig: &str, bound: Duration, rule: &str, limit: Duration) {
        let (leader, follower) = (self.leader, 1 - self.leader);
        self.replicas[leader].signal(sig);
        let (_, took) = until_held_by(&self.leases, &[&self.replicas[follower].host.clone()], limit).await;
        println!("{what} takeover: {:.2}s (bound: {rule} = {:.2}s)", took.as_secs_f64(), bound.as_secs_f64());
        self.leader = follower;
        if sig != "STOP" {
            let _ = self.replicas[leader].child.wait();
            let host = format!("{}2", self.replicas[leader].host);
            self.replicas[leader] = Replica::start(&self.dir, &self.kubeconfig, &host, &self.durations);
            let retry = parse_duration(&self.durations[2]).unwrap();
            tokio::time::sleep(retry * 3).await;
        }
    }
}
