//! The sandbox over HTTPS (HTTP/1.1), for kubectl, Python's `kubernetes` client and any other
//! real client.
//!
//! Every request must carry `Authorization: Bearer <token>` (`crate::auth` says whose): the
//! sandbox's, one it issued for a user, or a live service account token it issued
//! (`serviceaccounts/<name>/token`); the sandbox's is random and written, with the server's
//! address and its CA certificate, into a kubeconfig of mode 0600. A wrong token gets a 401
//! Status, and so does a missing one unless RBAC is on (then it is `system:anonymous`).
//!
//! Why TLS on loopback: client-go (kubectl) sends bearer tokens only over TLS, so a plain-HTTP
//! server could never authenticate it. Each sandbox generates its own CA and a server certificate
//! for `localhost`, `127.0.0.1` and the listen address; the CA goes into the kubeconfig
//! (`certificate-authority-data`), so clients verify the server like any cluster.
//!
//! What is served is [`crate::rest`]'s: JSON, YAML bodies, and protobuf for every built-in kind
//! where a client asks for it.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use http::{Request, Response, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::Sandbox;
use crate::rest::{self, ResponseBody};

/// A kubeconfig for `server` (trusting `ca_pem`) with `token`, context `sandbox`, namespace
/// `default`.
#[must_use]
pub fn kubeconfig(server: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sandbox\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: sandbox\n  user:\n    token: {token}\ncontexts:\n- name: sandbox\n  context:\n    cluster: sandbox\n    user: sandbox\n    namespace: default\ncurrent-context: sandbox\npreferences: {{}}\n"
    )
}

/// Writes a kubeconfig for `server` (its URL, CA and token) to `path`, readable by its owner only (mode 0600).
///
/// # Errors
///
/// The file cannot be created or written.
pub fn write_kubeconfig(path: &Path, server: &HttpServer) -> io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(kubeconfig(&server.url(), &server.ca_pem, &server.token).as_bytes())
}

/// A running HTTP server. Dropping it does not stop it; call [`shutdown`](Self::shutdown).
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    token: String,
    ca_pem: String,
    stop: watch::Sender<bool>,
}

impl HttpServer {
    /// The address it listens on (with the real port when 0 was asked for).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://<addr>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The PEM certificate of the CA that signed the server's certificate.
    #[must_use]
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The bearer token clients must send.
    #[must_use]
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Stops accepting connections.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Sandbox {
    /// Serves the sandbox over HTTPS on `addr` (port 0 picks a free one) with `token`, for
    /// kubectl and clients in other processes.
    ///
    /// ```
    /// # #[tokio::main]
    /// # async fn main() -> std::io::Result<()> {
    /// let sandbox = kube_sandbox::Sandbox::new();
    /// let server = sandbox.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await?;
    /// let kubeconfig = std::env::temp_dir().join(format!("sandbox-{}.kubeconfig", server.local_addr().port()));
    /// kube_sandbox::write_kubeconfig(&kubeconfig, &server)?;
    /// // KUBECONFIG=<that file> kubectl get namespaces
    /// assert!(std::fs::read_to_string(&kubeconfig)?.contains(&server.url()));
    /// server.shutdown();
    /// # std::fs::remove_file(kubeconfig)
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub async fn serve(&self, addr: SocketAddr, token: String) -> io::Result<HttpServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let ca = authority(&self.shared).map_err(io::Error::other)?;
        let (ca_pem, tls) = tls_config(addr, ca)
            .map_err(|e| io::Error::other(format!("generating the sandbox's TLS certificates: {e}")))?;
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let (stop, mut stopped) = watch::channel(false);
        let sandbox = self.clone();
        // The server's own token is its administrator's.
        self.shared.auth.accept(token.clone(), crate::auth::UserInfo::admin());
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!(error = %e, "accept failed");
                            continue;
                        }
                    },
                    _ = stopped.changed() => return,
                };
                // As the API server's (Go sets TCP_NODELAY on every connection): a watch event is
                // sent when written, not held back by Nagle's algorithm until the client
                // acknowledges the previous one (up to its 40 ms delayed ACK).
                let _ = stream.set_nodelay(true);
                let (sandbox, acceptor) = (sandbox.clone(), acceptor.clone());
                tokio::spawn(async move {
                    // A client that fails the handshake, drops or half-closes ends only this task.
                    let Ok(stream) = acceptor.accept(stream).await else { return };
                    let service = hyper::service::service_fn(move |req| {
                        let sandbox = sandbox.clone();
                        async move {
                            let response = respond(&sandbox, req).await;
                            // An injected dropped connection: an error makes hyper close it unanswered.
                            if response.extensions().get::<rest::Disconnect>().is_some() {
                                return Err(io::Error::other("connection dropped (injected fault)"));
                            }
                            Ok(response)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Ok(HttpServer { addr, token, ca_pem, stop })
    }
}

/// The sandbox's certificate authority: made once, it signs every serving certificate and is
/// what the `kube-root-ca.crt` ConfigMaps publish.
pub(crate) struct Authority {
    pub(crate) pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Authority {
    fn new() -> Result<Self, rcgen::Error> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "counter-controller sandbox CA");
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate()?;
        let pem = ca_params.self_signed(&ca_key)?.pem();
        Ok(Self { pem, issuer: Issuer::new(ca_params, ca_key) })
    }
}

/// The sandbox's CA, made on first use.
pub(crate) fn authority(shared: &crate::SandboxState) -> Result<&Authority, String> {
    shared
        .authority
        .get_or_init(|| Authority::new().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// A server certificate for `localhost`, `127.0.0.1`, `::1` and `addr`'s IP, signed by the CA.
fn tls_config(
    addr: SocketAddr,
    ca: &Authority,
) -> Result<(String, Arc<rustls::ServerConfig>), Box<dyn std::error::Error + Send + Sync>> {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let issuer = &ca.issuer;
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    if !addr.ip().is_unspecified() && !names.contains(&addr.ip().to_string()) {
        names.push(addr.ip().to_string());
    }
    let mut params = CertificateParams::new(names)?;
    params.distinguished_name.push(DnType::CommonName, "sandbox");
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((ca.pem.clone(), Arc::new(config)))
}

async fn respond(sandbox: &Sandbox, mut req: Request<Incoming>) -> Response<ResponseBody> {
    // A request that asks to switch protocols carries its connection's upgrade to the handler
    // of the stream it names.
    if req.headers().contains_key(header::UPGRADE) {
        let on = hyper::upgrade::on(&mut req);
        req.extensions_mut().insert(rest::Upgrade::new(on));
    }
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("");
    let shared = &sandbox.shared;
    match crate::auth::authenticate(&shared.auth, &shared.store, given) {
        Ok(user) => req.extensions_mut().insert(crate::auth::Authenticated(user)),
        Err(e) => return rest::error_response(&e),
    };
    rest::handle(Arc::clone(&sandbox.shared), req).await
}
