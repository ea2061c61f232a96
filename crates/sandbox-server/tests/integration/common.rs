//! Starting and stopping the binary.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_kube-sandbox");

/// A fresh directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kube-sandbox-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A `kube-sandbox` process, killed (if still running) when the test ends.
pub struct Server {
    pub child: Child,
    /// The kubeconfig it said to export.
    pub kubeconfig: PathBuf,
    /// What it printed before the kubeconfig line.
    pub printed: Vec<String>,
}

impl Server {
    /// Starts `kube-sandbox --listen 127.0.0.1:0 --kubeconfig-out <dir>/kubeconfig <args>`; returns
    /// once it has printed `export KUBECONFIG=…` (a failure with its stderr if it exits first).
    pub fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(["--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(dir.join("kubeconfig"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("kube-sandbox starts");
        let mut printed = Vec::new();
        let mut kubeconfig = None;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
                kubeconfig = Some(PathBuf::from(path));
                break;
            }
            printed.push(line);
        }
        let Some(kubeconfig) = kubeconfig else {
            let _ = child.wait();
            panic!("kube-sandbox exited before its kubeconfig line: {}", stderr(dir));
        };
        Self { child, kubeconfig, printed }
    }

    /// A client from the kubeconfig it wrote, as any program would make one.
    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// Sends `signal` (`TERM`, `INT`) and waits for the exit.
    pub fn stop(mut self, signal: &str) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn stderr(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
}

/// `kube-sandbox <args>` run to its end.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}
