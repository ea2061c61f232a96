//! The sandbox's flags, one definition for `kube-sandbox` and every controller's `sandbox`
//! command. A binary may give its own defaults with clap's `mut_arg` (`listen`,
//! `kubeconfig_out`, `pod_ready`, …).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube_sandbox::{Controllers, Simulation};
use kube_sandbox::{Rollout, Sandbox, SandboxConfig};

/// Where the sandbox listens, where its kubeconfig goes, and the cluster it simulates.
#[derive(Debug, Args, Clone)]
pub struct ServerArgs {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Allow listening on a non-loopback address (anyone who can reach it and has the token can
    /// use the sandbox: TLS with its own CA, one bearer token, no authorization).
    #[arg(long)]
    pub allow_remote: bool,
    /// Where to write the kubeconfig (mode 0600).
    #[arg(long, default_value = "./sandbox.kubeconfig", value_name = "PATH")]
    pub kubeconfig_out: PathBuf,
    /// Time for one simulated pod to become ready.
    #[arg(long, default_value = "300ms", value_parser = parse_duration, value_name = "DURATION")]
    pub pod_ready: Duration,
    /// How long a container that runs its image's entrypoint, in a simulated pod that does not
    /// restart (`restartPolicy: Never` or `OnFailure`, a Job's), runs before it exits 0. A
    /// command the built-in shell runs (`sh -c …`, `sleep 30`, `echo hi`) runs as long as it
    /// takes, and exits with its own code.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub pod_run_time: Duration,
    /// Nodes of the simulated cluster (each with a kubelet that runs the pods bound to it).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub nodes: usize,
    /// The simulated components that run, in kube-controller-manager's `--controllers` syntax:
    /// `*` for all, `name` to add one, `-name` to leave one out (`*,-scheduler`).
    #[arg(long, default_value = "*", value_name = "LIST")]
    pub controllers: Controllers,
    /// A bare API server: no nodes, no scheduler, no kubelets, no controllers (Deployments get
    /// a simulated status only).
    #[arg(long)]
    pub no_simulation: bool,
}

impl ServerArgs {
    /// The sandbox these flags describe, not yet served.
    #[must_use]
    pub fn sandbox(&self) -> Sandbox {
        let simulation = (!self.no_simulation).then(|| Simulation {
            nodes: self.nodes,
            controllers: self.controllers.clone(),
            run_to_completion: self.pod_run_time,
            ..Simulation::default()
        });
        Sandbox::with_config(SandboxConfig {
            rollout: Rollout::Paced(self.pod_ready),
            simulation,
            ..SandboxConfig::default()
        })
    }
}

/// A duration as Go and kubectl write it (`300ms`, `1s`, `1m30s`) or in ISO 8601 (`PT1S`).
fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (use e.g. 300ms, 1s, 1m30s)");
    let d: jiff::SignedDuration = s.trim().parse().map_err(|_| bad())?;
    Duration::try_from(d).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_kubectl_writes_them() {
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        for bad in ["", "fast", "-1s", "10"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }
}
