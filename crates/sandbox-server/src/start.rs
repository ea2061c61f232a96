//! Serving: the address checked, the sandbox served over HTTPS with its own CA and a random bearer
//! token, and a kubeconfig for it written (mode 0600), its path printed as `export KUBECONFIG=…`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use kube_sandbox::HttpServer;
use kube_sandbox::Sandbox;

use crate::{Error, ServerArgs};

/// A sandbox being served; [`shutdown`](Self::shutdown) stops it.
pub struct Running {
    sandbox: Sandbox,
    server: HttpServer,
    kubeconfig: PathBuf,
}

impl Running {
    /// The sandbox served: its store, request record, faults and in-process client.
    #[must_use]
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The kubeconfig written for it, as an absolute path.
    #[must_use]
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The server's URL, `https://<addr>` (with the real port when 0 was asked for).
    #[must_use]
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Stops accepting connections.
    pub fn shutdown(self) {
        self.server.shutdown();
    }
}

impl ServerArgs {
    /// Checks the address, then serves the sandbox these flags describe and writes its
    /// kubeconfig (see [`serve`]).
    ///
    /// # Errors
    ///
    /// A non-loopback address without `--allow-remote`, an address that cannot be bound, a
    /// kubeconfig that cannot be written; each names its input.
    pub async fn start(&self) -> Result<Running, Error> {
        if !self.listen.ip().is_loopback() {
            if !self.allow_remote {
                return Err(Error::NotLoopback(self.listen));
            }
            tracing::warn!(listen = %self.listen, "the sandbox is reachable from other machines: anyone with its bearer token may do anything");
        }
        let sandbox = self.sandbox();
        let (server, kubeconfig) = serve(&sandbox, self.listen, &self.kubeconfig_out).await?;
        Ok(Running { sandbox, server, kubeconfig })
    }
}

/// Serves `sb` over HTTPS on `listen` and writes a kubeconfig for it to `kubeconfig_out`;
/// prints `sandbox API server listening on <url>` and `export KUBECONFIG=<path>`. Returns the
/// server (its `shutdown` stops it) and the kubeconfig's absolute path.
///
/// # Errors
///
/// The address cannot be bound, or the kubeconfig cannot be written; each names its input.
pub async fn serve(
    sb: &Sandbox,
    listen: SocketAddr,
    kubeconfig_out: &Path,
) -> Result<(HttpServer, PathBuf), Error> {
    let server = sb
        .serve(listen, kube_sandbox::new_token())
        .await
        .map_err(|source| Error::Listen { addr: listen, source })?;
    if let Err(source) = kube_sandbox::write_kubeconfig(kubeconfig_out, &server) {
        server.shutdown();
        return Err(Error::WriteKubeconfig { path: kubeconfig_out.to_owned(), source });
    }
    let kubeconfig = std::fs::canonicalize(kubeconfig_out).unwrap_or_else(|_| kubeconfig_out.to_owned());
    println!("sandbox API server listening on {}", server.url());
    println!("export KUBECONFIG={}", kubeconfig.display());
    Ok((server, kubeconfig))
}
