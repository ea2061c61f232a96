//! What stops the sandbox from starting, each naming the input that was wrong.

use std::net::SocketAddr;
use std::path::PathBuf;

/// An error of [`ServerArgs::start`](crate::ServerArgs::start) or [`serve`](crate::serve). A
/// cause (the I/O error) is the error's `source`, not part of its message, so a binary printing
/// the chain (`anyhow`'s `{:#}`) shows it once.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Asked to listen beyond loopback without `--allow-remote`.
    #[error("refusing to listen on {0} (not loopback) without --allow-remote")]
    NotLoopback(SocketAddr),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The kubeconfig cannot be written.
    #[error("cannot write kubeconfig {}", path.display())]
    WriteKubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
