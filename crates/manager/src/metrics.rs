//! client-go's `rest_client_requests_total{code,method,host}`, counted by a `tower` layer on the
//! client from the requests it actually sends.
//!
//! The reconciles' `controller_runtime_*` and the shard families come from the coordination
//! crate, the queue's `workqueue_*` from the workqueue crate, leader election's from the election
//! crate. All go into one registry served by [`ops`](crate::ops).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tower::{BoxError, Layer, Service};

type Labels = Vec<(String, String)>;

/// client-go's `rest_client_requests_total{code,method,host}`.
#[derive(Clone, Debug, Default)]
pub struct RestClientMetrics {
    requests: Family<Labels, Counter>,
}

impl RestClientMetrics {
    /// Registers the family.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            m.requests.clone(),
        );
        m
    }

    /// A layer counting the requests of a client talking to `host`.
    #[must_use]
    pub fn layer(&self, host: &str) -> RestClientLayer {
        RestClientLayer { requests: self.requests.clone(), host: host.to_owned() }
    }
}

/// The layer made by [`RestClientMetrics::layer`]. A request that got no answer counts with code
/// `<error>`, as client-go labels it.
#[derive(Clone, Debug)]
pub struct RestClientLayer {
    requests: Family<Labels, Counter>,
    host: String,
}

impl<S> Layer<S> for RestClientLayer {
    type Service = RestClientService<S>;
    fn layer(&self, inner: S) -> RestClientService<S> {
        RestClientService { inner, layer: self.clone() }
    }
}

/// The service made by [`RestClientLayer`].
#[derive(Clone, Debug)]
pub struct RestClientService<S> {
    inner: S,
    layer: RestClientLayer,
}

impl<S, B, R> Service<Request<B>> for RestClientService<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    R: Send + 'static,
{
    type Response = Response<R>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<R>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let method = req.method().as_str().to_owned();
        let (requests, host) = (self.layer.requests.clone(), self.layer.host.clone());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await.map_err(Into::into);
            let code =
                result.as_ref().map_or_else(|_| "<error>".to_owned(), |r| r.status().as_u16().to_string());
            requests
                .get_or_create(&vec![("code".into(), code), ("method".into(), method), ("host".into(), host)])
                .inc();
            result
        })
    }
}
