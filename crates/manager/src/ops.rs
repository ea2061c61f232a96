//! The operations endpoint: `/metrics` (Prometheus text: `workqueue_*`, `controller_runtime_*`,
//! `rest_client_requests_total`, `leader_election_*`), `/healthz` (liveness: the process serves,
//! and a leader's last renew is within the renew deadline) and `/readyz` (the informer caches have
//! synced — a follower with warm caches is ready, it can take over at once).
//!
//! Plain HTTP, meant for a Prometheus scrape and kubelet probes inside the cluster; off unless
//! `--metrics-addr` is given.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A probe: `Ok` when passing, else why not.
pub type Probe = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What `/healthz` and `/readyz` check.
#[derive(Clone)]
pub struct Probes {
    /// Liveness (`/healthz`, `/livez`): failing it gets the process restarted.
    pub live: Probe,
    /// Readiness (`/readyz`).
    pub ready: Probe,
}

impl Probes {
    /// Probes that always pass.
    #[must_use]
    pub fn passing() -> Self {
        Self { live: Arc::new(|| Ok(())), ready: Arc::new(|| Ok(())) }
    }

    /// A controller's probes: ready once `synced` says its caches have synced; live while its
    /// `election` (when it has one) is healthy — a leader whose renews stopped is not.
    #[must_use]
    pub fn of_controller(
        synced: impl Fn() -> bool + Send + Sync + 'static,
        election: Option<kube_lease_election::ElectionHandle>,
    ) -> Self {
        let ready: Probe =
            Arc::new(move || if synced() { Ok(()) } else { Err("informer caches have not synced".into()) });
        let live: Probe = match election {
            Some(h) => Arc::new(move || h.check_health()),
            None => Self::passing().live,
        };
        Self { live, ready }
    }
}

fn reply(code: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("valid response")
}

fn probe(p: &Probe) -> Response<Full<Bytes>> {
    match p() {
        Ok(()) => reply(StatusCode::OK, "text/plain", "ok\n".into()),
        Err(why) => reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", format!("{why}\n")),
    }
}

fn route(req: &Request<Incoming>, registry: &Registry, probes: &Probes) -> Response<Full<Bytes>> {
    match req.uri().path() {
        "/metrics" => {
            let mut text = String::new();
            match prometheus_client::encoding::text::encode(&mut text, registry) {
                Ok(()) => {
                    reply(StatusCode::OK, "application/openmetrics-text; version=1.0.0; charset=utf-8", text)
                }
                Err(e) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain",
                    format!("encoding metrics failed: {e}\n"),
                ),
            }
        }
        "/healthz" | "/livez" => probe(&probes.live),
        "/readyz" => probe(&probes.ready),
        other => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            format!("no such endpoint: {other} (try /metrics, /healthz, /readyz)\n"),
        ),
    }
}

/// Binds `addr` and serves until `stop` is cancelled. Returns the bound address.
///
/// # Errors
///
/// The address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    probes: Probes,
    stop: CancellationToken,
) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok((s, _)) => s,
                    Err(_) => continue,
                },
            };
            let (registry, probes) = (Arc::clone(&registry), probes.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let response = route(&req, &registry, &probes);
                    async move { Ok::<_, std::convert::Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}
