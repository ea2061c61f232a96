//! How the sandbox reaches a webhook — an admission webhook or a CRD's conversion webhook: a
//! `clientConfig` made an HTTPS endpoint (upstream's `util/webhook` client manager), and POSTs
//! to it.
//!
//! A `url` is called as written. A `service` reference is called as
//! `https://<name>.<namespace>.svc:<port>/<path>` — its TLS server name — at the address the
//! sandbox was given for that Service ([`StoreConfig::webhook_services`]); without one, the
//! name is looked up as any host's, and a sandbox has no cluster DNS. The server's certificate
//! must chain to the configuration's `caBundle`.
//!
//! Calls are made on a runtime of their own (one thread, started with the first call), which
//! also keeps the idle connections. The store's verbs are synchronous, so [`post_all`] blocks
//! the calling thread — on a worker of a multi-threaded runtime with its other tasks handed to
//! another worker meanwhile, so a webhook served in the same process keeps running; [`post`] is
//! awaited instead, for a watch stream.
//!
//! [`StoreConfig::webhook_services`]: crate::StoreConfig::webhook_services

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

/// Where the sandbox's Services listen, by namespace and name: shared by the store (which is
/// told of them) and the CRDs' conversions (which call them).
pub(crate) type Services = Arc<parking_lot::RwLock<BTreeMap<(String, String), SocketAddr>>>;

/// Where a webhook is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The URL as upstream prints it in its errors, with the `timeout` query.
    pub url: String,
    /// The host the certificate must name.
    host: String,
    /// The port to connect to.
    port: u16,
    /// The path and query of the request.
    path: String,
    /// Where the Service it names listens, when the sandbox was told.
    routed: Option<SocketAddr>,
    /// The configuration's `caBundle`, PEM.
    ca_bundle: Vec<u8>,
}

impl Endpoint {
    /// The endpoint of `client_config` called with `timeout`; `services` are where the
    /// sandbox's Services listen. `Err` when it cannot be made (validation keeps such
    /// configurations out of the store, so this is a message for the failure policy).
    pub(crate) fn new(
        client_config: &Value,
        timeout: Duration,
        services: &BTreeMap<(String, String), SocketAddr>,
    ) -> Result<Self, String> {
        let ca_bundle = client_config
            .get("caBundle")
            .and_then(Value::as_str)
            .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
            .transpose()
            .map_err(|e| format!("invalid caBundle: {e}"))?
            .unwrap_or_default();
        let query = format!("timeout={}s", timeout.as_secs());
        if let Some(service) = client_config.get("service").filter(|s| s.is_object()) {
            let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let (ns, name) = (text("namespace"), text("name"));
            let port = service
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443);
            let path = text("path");
            let path = if path.starts_with('/') { path } else { format!("/{path}") };
            let host = format!("{name}.{ns}.svc");
            let routed = services.get(&(ns, name)).copied();
            return Ok(Self {
                url: format!("https://{host}:{port}{path}?{query}"),
                host,
                port,
                path: format!("{path}?{query}"),
                routed,
                ca_bundle,
            });
        }
        let raw = client_config.get("url").and_then(Value::as_str).unwrap_or("");
        let uri: http::Uri = raw.parse().map_err(|e| format!("invalid URL {raw:?}: {e}"))?;
        let host = uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = uri.port_u16().unwrap_or(443);
        let path = match uri.path() {
            "" => "/",
            p => p,
        };
        let sep = if raw.contains('?') { "&" } else { "?" };
        let path = match uri.query() {
            Some(q) => format!("{path}?{q}&{query}"),
            None => format!("{path}?{query}"),
        };
        Ok(Self { url: format!("{raw}{sep}{query}"), host, port, path, routed: None, ca_bundle })
    }
}

/// The webhook's answer: its HTTP status and body.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Answer {
    /// The answer's body as JSON, read as client-go's REST client reads a result: a status
    /// other than 2xx is an error, worded as it words one with a body that is not a Status.
    ///
    /// # Errors
    ///
    /// The status's error, or why the body is not JSON.
    pub(crate) fn decoded(&self) -> Result<Value, String> {
        if !(200..300).contains(&self.status) {
            return Err(if self.status == 404 {
                "the server could not find the requested resource".to_owned()
            } else {
                format!(
                    "an error on the server ({:?}) has prevented the request from succeeding",
                    String::from_utf8_lossy(&self.body).trim()
                )
            });
        }
        serde_json::from_slice(&self.body).map_err(|e| e.to_string())
    }
}

/// POSTs each body (JSON) to its endpoint, all at once, waiting at most the endpoint's
/// timeout for each answer; the answers in the order of `calls`.
///
/// # Errors
///
/// Per call, what went wrong, in the words of Go's HTTP client where it has them
/// (`Post "<url>": …`).
pub(crate) fn post_all(calls: Vec<(Endpoint, Vec<u8>, Duration)>) -> Vec<Result<Answer, String>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let count = calls.len();
    for (i, (endpoint, body, timeout)) in calls.into_iter().enumerate() {
        let tx = tx.clone();
        runtime().spawn(async move {
            let _ = tx.send((i, timed(&endpoint, body, timeout).await));
        });
    }
    drop(tx);
    let wait = || {
        let mut answers: Vec<Result<Answer, String>> = (0..count).map(|_| Err(STOPPED.to_owned())).collect();
        for (i, answer) in rx.iter() {
            answers[i] = answer;
        }
        answers
    };
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

/// POSTs `body` (JSON) to `endpoint` as [`post_all`] does, awaited rather than waited for.
///
/// # Errors
///
/// As [`post_all`]'s.
pub(crate) async fn post(endpoint: Endpoint, body: Vec<u8>, timeout: Duration) -> Result<Answer, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    runtime().spawn(async move {
        let _ = tx.send(timed(&endpoint, body, timeout).await);
    });
    rx.await.unwrap_or_else(|_| Err(STOPPED.to_owned()))
}

/// What a call that never answered says (the client's runtime is gone: the process is ending).
const STOPPED: &str = "the webhook client stopped";

/// The runtime calls are made on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sandbox-webhook-client")
            .enable_all()
            .build()
            .expect("a runtime for webhook calls")
    });
    &RUNTIME
}

/// One call given up after `timeout`, its error worded as Go's client words it.
async fn timed(endpoint: &Endpoint, body: Vec<u8>, timeout: Duration) -> Result<Answer, String> {
    let answer = match tokio::time::timeout(timeout, send(endpoint, body)).await {
        Ok(answer) => answer,
        Err(_) => Err("context deadline exceeded".to_owned()),
    };
    answer.map_err(|e| format!("Post {:?}: {e}", endpoint.url))
}

/// What a connection is kept for: where it goes and whom it trusts.
type Route = (Option<SocketAddr>, String, u16, Vec<u8>);

/// Open connections to webhooks, idle between calls, as Go's transport keeps them: a write that
/// calls a webhook does not pay for a TLS handshake each time.
static IDLE: LazyLock<parking_lot::Mutex<HashMap<Route, Vec<Sender>>>> = LazyLock::new(Default::default);

/// One connection's sending half.
type Sender = SendRequest<Full<Bytes>>;

/// The most idle connections kept to one webhook.
const MAX_IDLE: usize = 8;

/// One request, over an idle connection to the webhook if there is one (and again over a new one
/// if that one was closed meanwhile), else a new one.
async fn send(endpoint: &Endpoint, body: Vec<u8>) -> Result<Answer, String> {
    let route: Route = (endpoint.routed, endpoint.host.clone(), endpoint.port, endpoint.ca_bundle.clone());
    let body = Bytes::from(body);
    loop {
        let idle = IDLE.lock().get_mut(&route).and_then(Vec::pop);
        let (mut sender, reused) = match idle {
            Some(s) if s.is_ready() => (s, true),
            Some(_) => continue,
            None => (connect(endpoint).await?, false),
        };
        let response = match sender.send_request(request(endpoint, body.clone())?).await {
            Ok(r) => r,
            // The server closed the idle connection: a new one is made.
            Err(e) if reused && (e.is_closed() || e.is_canceled()) => continue,
            Err(e) => return Err(e.to_string()),
        };
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
        if sender.is_ready() {
            let mut idle = IDLE.lock();
            let kept = idle.entry(route).or_default();
            if kept.len() < MAX_IDLE {
                kept.push(sender);
            }
        }
        return Ok(Answer { status, body });
    }
}

/// A new TLS connection to the webhook, speaking HTTP/1.1.
async fn connect(endpoint: &Endpoint) -> Result<Sender, String> {
    let tcp = match endpoint.routed {
        Some(addr) => tokio::net::TcpStream::connect(addr).await,
        None => tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port)).await,
    }
    .map_err(|e| format!("dial tcp {}:{}: {}", endpoint.host, endpoint.port, dial_error(&e)))?;
    // As Go's dialer: a review is not held back waiting for the last one's acknowledgement.
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let tls = tls_config(&endpoint.ca_bundle)?;
    let name = ServerName::try_from(endpoint.host.clone()).map_err(|e| format!("invalid host: {e}"))?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// A failed dial in the words of Go's `net` package, where it has them.
fn dial_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_owned(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_owned(),
        _ => e.to_string(),
    }
}

/// The POST of a review to `endpoint`.
fn request(endpoint: &Endpoint, body: Bytes) -> Result<http::Request<Full<Bytes>>, String> {
    let host = if endpoint.host.contains(':') {
        format!("[{}]:{}", endpoint.host, endpoint.port)
    } else {
        format!("{}:{}", endpoint.host, endpoint.port)
    };
    http::Request::post(&endpoint.path)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(body))
        .map_err(|e| e.to_string())
}

/// A client configuration trusting the certificates of `ca_bundle` alone.
fn tls_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let cert = cert.map_err(|e| format!("invalid caBundle: {e}"))?;
        roots.add(cert).map_err(|e| format!("invalid caBundle: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_service_reference_is_called_by_its_cluster_name_at_the_address_given() {
        let services = BTreeMap::from([(
            ("webhooks".to_owned(), "guard".to_owned()),
            "127.0.0.1:9443".parse().unwrap(),
        )]);
        let cc = json!({ "service": { "namespace": "webhooks", "name": "guard", "path": "/validate", "port": 443 } });
        let e = Endpoint::new(&cc, Duration::from_secs(10), &services).unwrap();
        assert_eq!(e.url, "https://guard.webhooks.svc:443/validate?timeout=10s");
        assert_eq!(e.host, "guard.webhooks.svc");
        assert_eq!(e.routed, Some("127.0.0.1:9443".parse().unwrap()));
        let url = Endpoint::new(
            &json!({ "url": "https://127.0.0.1:8443/mutate" }),
            Duration::from_secs(3),
            &services,
        )
        .unwrap();
        assert_eq!(url.url, "https://127.0.0.1:8443/mutate?timeout=3s");
        assert_eq!(
            (url.host.as_str(), url.port, url.path.as_str()),
            ("127.0.0.1", 8443, "/mutate?timeout=3s")
        );
        assert!(
            Endpoint::new(
                &json!({ "url": "https://x", "caBundle": "%%" }),
                Duration::from_secs(1),
                &services
            )
            .unwrap_err()
            .starts_with("invalid caBundle")
        );
    }
}
