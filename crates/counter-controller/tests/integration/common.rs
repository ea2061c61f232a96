//! Helpers shared by the tests that run real processes: the binary, kubectl, an in-process
//! sandbox served over HTTPS (whose request record the test can read), and signals.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_counter-controller");

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cc-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(tool)).find(|f| f.is_file()))
}

/// kubectl, or `None` after printing why the test is skipped (a failure when it is required).
pub fn kubectl() -> Option<PathBuf> {
    let found = on_path("kubectl");
    if found.is_none() {
        assert!(
            std::env::var("COUNTER_CONTROLLER_REQUIRE_KUBECTL").is_err(),
            "kubectl is required (COUNTER_CONTROLLER_REQUIRE_KUBECTL is set) but is not on PATH"
        );
        eprintln!("skipping: kubectl is not on PATH");
    }
    found
}

pub fn kubectl_run(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(kubectl)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn kubectl_ok(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let (ok, out, err) = kubectl_run(kubectl, kubeconfig, args);
    assert!(ok, "kubectl {args:?} failed: {out}{err}");
    out
}

/// Waits for `f`. Each condition these tests wait on follows one event (a Deployment created, a
/// gauge updated), with nothing partial to watch move, so the limit is a guard against a hang —
/// two minutes, far beyond what a busy machine needs — not a timing: waits with something to
/// count (Deployments converged, election steps) count it instead.
pub fn eventually(what: &str, f: impl FnMut() -> bool) {
    eventually_within(what, Duration::from_secs(120), f);
}

pub fn eventually_within(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed (if still running) when the test ends, even by a failed assertion.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A plain HTTP/1.1 GET: (status code, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return (0, String::new()) };
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

/// The value of the first sample of `family` whose labels contain all of `labels`.
pub fn sample(metrics: &str, family: &str, labels: &[&str]) -> Option<f64> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(family) && l[family.len()..].starts_with(['{', ' ']))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// A sandbox in this process, served over HTTPS, with a kubeconfig for the binary and kubectl.
pub struct ServedSandbox {
    pub sandbox: kube_sandbox::Sandbox,
    pub server: kube_sandbox::HttpServer,
    pub kubeconfig: PathBuf,
}

impl Drop for ServedSandbox {
    fn drop(&mut self) {
        self.server.shutdown();
    }
}

pub async fn serve_sandbox(dir: &Path) -> ServedSandbox {
    serve_sandbox_with(dir, kube_sandbox::SandboxConfig::default()).await
}

/// As [`serve_sandbox`], with `config` (its rollout made instant).
pub async fn serve_sandbox_with(dir: &Path, config: kube_sandbox::SandboxConfig) -> ServedSandbox {
    let sandbox = kube_sandbox::Sandbox::with_config(kube_sandbox::SandboxConfig {
        rollout: kube_sandbox::Rollout::Instant,
        ..config
    });
    let server = sandbox.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await.unwrap();
    let kubeconfig = dir.join("sandbox.kubeconfig");
    kube_sandbox::write_kubeconfig(&kubeconfig, &server).unwrap();
    ServedSandbox { sandbox, server, kubeconfig }
}

/// One controller process: `HOSTNAME` names it (its identity is `<hostname>_<uuid>`, in its
/// User-Agent), its log goes to a file.
pub struct Replica {
    pub process: KillOnDrop,
    pub hostname: String,
    pub log: PathBuf,
    metrics: std::sync::OnceLock<SocketAddr>,
}

impl Replica {
    pub fn start(dir: &Path, kubeconfig: &Path, hostname: &str, args: &[String]) -> Self {
        let log = dir.join(format!("{hostname}.log"));
        // Port 0, read back from the log: a free port picked here and released for the child to
        // bind was, now and then, taken by a process of a parallel test first.
        let child = Command::new(BIN)
            .args(args)
            .arg("--metrics-addr=127.0.0.1:0")
            .env("KUBECONFIG", kubeconfig)
            .env("HOSTNAME", hostname)
            .env("RUST_LOG", "info,counter_controller=debug,election=debug")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("the binary starts");
        Self {
            process: KillOnDrop(child),
            hostname: hostname.to_owned(),
            log,
            metrics: std::sync::OnceLock::new(),
        }
    }

    /// Where it serves `/metrics`, `/healthz` and `/readyz`: the address its log says it bound.
    pub fn metrics_addr(&self) -> SocketAddr {
        *self.metrics.get_or_init(|| {
            let deadline = Instant::now() + Duration::from_secs(90);
            loop {
                let log = self.log();
                let bound = log.lines().filter(|l| l.contains("serving /metrics")).find_map(|l| {
                    let port = l.split("127.0.0.1:").nth(1)?;
                    let digits: String = port.chars().take_while(char::is_ascii_digit).collect();
                    format!("127.0.0.1:{digits}").parse().ok()
                });
                if let Some(addr) = bound {
                    return addr;
                }
                assert!(
                    Instant::now() < deadline,
                    "{} never served its metrics; its log:\n{log}",
                    self.hostname
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    }

    /// Whether `user_agent` is this replica's.
    pub fn sent(&self, user_agent: &str) -> bool {
        user_agent.contains(&format!("({}_", self.hostname))
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([&format!("-{sig}"), &self.process.0.id().to_string()]).status();
        assert!(ok.is_ok_and(|s| s.success()), "kill -{sig}");
    }

    pub fn metrics(&self) -> String {
        http_get(self.metrics_addr(), "/metrics").1
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the process to exit; its exit status.
    pub fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.process.0.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "{} did not exit within {limit:?}", self.hostname);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
