//! The operations endpoint: `/metrics` (Prometheus text, including client-go's `workqueue_*`
//! series), `/healthz` (the process is serving) and `/readyz` (the informer caches have synced).
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

/// Answers whether the controller is ready (its caches have synced).
pub type Readiness = Arc<dyn Fn() -> bool + Send + Sync>;

fn reply(code: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("valid response")
}

fn route(req: &Request<Incoming>, registry: &Registry, ready: &Readiness) -> Response<Full<Bytes>> {
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
        "/healthz" | "/livez" => reply(StatusCode::OK, "text/plain", "ok\n".into()),
        "/readyz" if ready() => reply(StatusCode::OK, "text/plain", "ok\n".into()),
        "/readyz" => {
            reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "informer caches have not synced\n".into())
        }
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
    ready: Readiness,
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
            let (registry, ready) = (Arc::clone(&registry), Arc::clone(&ready));
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let response = route(&req, &registry, &ready);
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
