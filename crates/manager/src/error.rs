//! What can go wrong before a controller runs, each naming the input that was wrong.
//!
//! A cause (an I/O error, kube's error) is the error's `source`, not part of its message, so a
//! binary printing the chain (`anyhow`'s `{:#}`) shows it once: `cannot read kubeconfig
//! ./kc: No such file or directory (os error 2)`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// An error of start-up, of the operations endpoint, or of the embedded sandbox runner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kubeconfig file cannot be read.
    #[error("cannot read kubeconfig {}", path.display())]
    ReadKubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A kubeconfig file is not a kubeconfig.
    #[error("kubeconfig {} is not valid: {message}", path.display())]
    InvalidKubeconfig {
        /// The file.
        path: PathBuf,
        /// The parser's first line (the YAML error draws the offending line below it).
        message: String,
    },
    /// Two kubeconfig files of `$KUBECONFIG` cannot be merged.
    #[error("cannot merge kubeconfig {}", path.display())]
    MergeKubeconfig {
        /// The file merged in.
        path: PathBuf,
        /// Why.
        source: kube::config::KubeconfigError,
    },
    /// The kubeconfig names no usable cluster, user or context.
    #[error("kubeconfig {paths} is not usable")]
    UnusableKubeconfig {
        /// The files, as `$KUBECONFIG` lists them.
        paths: String,
        /// Why.
        source: kube::config::KubeconfigError,
    },
    /// No kubeconfig anywhere and not in a pod.
    #[error(
        "no cluster configuration: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run in a pod"
    )]
    NoConfig {
        /// Why the in-cluster configuration was not found.
        source: kube::config::InClusterError,
    },
    /// The configuration cannot give a client (a bad certificate, say).
    #[error("cannot build a client for {url}")]
    BuildClient {
        /// The server.
        url: String,
        /// Why.
        source: kube::Error,
    },
    /// `--all-namespaces` with an election, outside a pod, and no Lease namespace given.
    #[error(
        "--leader-elect or --sharding with --all-namespaces needs --leader-elect-resource-namespace \
         outside a pod (no service account namespace to default to)"
    )]
    NoLeaseNamespace,
    /// Leader-election settings that break its rules (durations out of order, say).
    #[error("leader election: {0}")]
    Election(#[source] kube_lease_election::ConfigError),
    /// The operations endpoint's address cannot be bound.
    #[error("cannot serve metrics on {addr}")]
    ServeMetrics {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The sandbox cannot start: its address or its kubeconfig.
    #[cfg(feature = "sandbox")]
    #[error(transparent)]
    Sandbox(#[from] kube_sandbox_server::Error),
    /// `--demo` with `--no-controller`: nothing would converge.
    #[error("--demo needs the controller; drop --no-controller")]
    DemoWithoutController,
    /// A walkthrough step did not reach what it waited for.
    #[error("{what} did not converge within {limit:?} (last: {last})")]
    NotConverged {
        /// What was awaited.
        what: String,
        /// How long it was given.
        limit: Duration,
        /// The last state seen.
        last: String,
    },
}
