//! Server-side filtering of a member's share: KEP-5866's `shardSelector` on list and watch.
//!
//! With [`Keying::Namespace`](crate::ring::Keying::Namespace) a member's share is a few ranges of
//! the FNV-1a hash of the namespace ([`Ring::ranges`](crate::ring::Ring::ranges)); an API server
//! that serves sharded list and watch (Kubernetes v1.36+, alpha) sends only those objects when a
//! list or watch carries
//! `shardSelector=shardRange(object.metadata.namespace, '0x…', '0x…') || …`.
//!
//! [`ShardSelectorLayer`] adds the parameter to the list and watch requests of the named resources,
//! reading the current selector from a [`SelectorCell`] the controller updates whenever its share
//! changes (before it relists). The controller keeps filtering on its own side too: a server that
//! does not know the parameter ignores it and sends everything, and the answer is the same
//! objects either way. [`server_filters`] asks the server once whether it honours the parameter
//! (it echoes `metadata.shardInfo` in the list), for the logs and metrics.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use http::{Method, Request, Uri};
use tower::{BoxError, Layer, Service};

/// The hashed field, as KEP-5866 names it.
const FIELD: &str = "object.metadata.namespace";

/// The `shardSelector` for `ranges` of the namespace hash (`[start, end)`, `end` up to 2^64).
///
/// An empty share cannot be written (a range needs start < end), so it becomes the smallest range,
/// `[0, 1)`: the server sends next to nothing, and the controller's own filter drops the rest.
///
/// ```
/// use kube_lease_election::selector::shard_selector;
/// let s = shard_selector(&[(0, 1 << 63)]);
/// assert_eq!(s, "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')");
/// assert!(shard_selector(&[]).ends_with("'0x0000000000000001')"));
/// ```
#[must_use]
pub fn shard_selector(ranges: &[(u64, u128)]) -> String {
    let range = |(s, e): &(u64, u128)| format!("shardRange({FIELD}, '0x{s:016x}', '0x{e:016x}')");
    if ranges.is_empty() {
        return range(&(0, 1));
    }
    ranges.iter().map(range).collect::<Vec<_>>().join(" || ")
}

/// The selector in force, shared between the controller (which sets it) and the client's layer.
#[derive(Clone, Debug, Default)]
pub struct SelectorCell(Arc<RwLock<Option<Arc<str>>>>);

impl SelectorCell {
    /// Sets the selector for the requests from now on (`None`: send none).
    pub fn set(&self, selector: Option<String>) {
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = selector.map(Into::into);
    }

    /// The selector in force.
    #[must_use]
    pub fn get(&self) -> Option<Arc<str>> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// The resource a path lists or watches: `/api/v1[/namespaces/NS]/R` or
/// `/apis/G/V[/namespaces/NS]/R`; `None` for anything else (a single object, discovery).
fn collection(path: &str) -> Option<&str> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segs.first() {
        Some(&"api") => segs.get(2..)?,
        Some(&"apis") => segs.get(3..)?,
        _ => return None,
    };
    match rest {
        [r] | ["namespaces", _, r] => Some(r),
        _ => None,
    }
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 2);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `uri` with `shardSelector=<selector>` appended to its query.
fn with_selector(uri: &Uri, selector: &str) -> Option<Uri> {
    let pq = match uri.query() {
        Some(q) => format!("{}?{q}&shardSelector={}", uri.path(), encode(selector)),
        None => format!("{}?shardSelector={}", uri.path(), encode(selector)),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// A `tower` layer for a `kube::Client` that adds the [`SelectorCell`]'s selector to every list
/// and watch of the given resources (plural names such as `configmaps`).
///
/// ```no_run
/// # async fn f(config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
/// use kube_lease_election::selector::{SelectorCell, ShardSelectorLayer};
/// let cell = SelectorCell::default();
/// let client = kube::client::ClientBuilder::try_from(config)?
///     .with_layer(&ShardSelectorLayer::new(["configmaps", "deployments"], cell.clone()))
///     .build();
/// cell.set(Some(kube_lease_election::selector::shard_selector(&[(0, 1 << 63)])));
/// # Ok(()) }
/// ```
///
/// ## Warning
/// A watch keeps the selector it was opened with. After changing the cell, relist (restart the
/// watches), or objects that came into the share are not seen.
#[derive(Clone, Debug)]
pub struct ShardSelectorLayer {
    resources: Arc<[String]>,
    cell: SelectorCell,
}

impl ShardSelectorLayer {
    /// A layer for `resources`, reading `cell`.
    #[must_use]
    pub fn new<S: Into<String>>(resources: impl IntoIterator<Item = S>, cell: SelectorCell) -> Self {
        Self { resources: resources.into_iter().map(Into::into).collect(), cell }
    }
}

impl<S> Layer<S> for ShardSelectorLayer {
    type Service = ShardSelectorService<S>;
    fn layer(&self, inner: S) -> ShardSelectorService<S> {
        ShardSelectorService { inner, layer: self.clone() }
    }
}

/// The service made by [`ShardSelectorLayer`].
#[derive(Clone, Debug)]
pub struct ShardSelectorService<S> {
    inner: S,
    layer: ShardSelectorLayer,
}

impl<S, B> Service<Request<B>> for ShardSelectorService<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        if req.method() == Method::GET
            && collection(req.uri().path()).is_some_and(|r| self.layer.resources.iter().any(|x| x == r))
            && let Some(selector) = self.layer.cell.get()
            && let Some(uri) = with_selector(req.uri(), &selector)
        {
            *req.uri_mut() = uri;
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// Whether the API server filters lists by `shardSelector`: one list of `collection` (a path such
/// as `/api/v1/namespaces/default/configmaps`) with `limit=1` and a selector covering everything;
/// a server that honours it echoes `metadata.shardInfo`.
///
/// # Errors
///
/// The list failed (unreachable, forbidden).
pub async fn server_filters(client: &kube::Client, collection: &str) -> Result<bool, kube::Error> {
    let everything = shard_selector(&[(0, 1 << 64)]);
    let uri = format!("{collection}?limit=1&shardSelector={}", encode(&everything));
    let req = Request::get(uri).body(Vec::new()).map_err(kube::Error::HttpError)?;
    let list: serde_json::Value = client.request(req).await?;
    Ok(list.pointer("/metadata/shardInfo/selector").and_then(|s| s.as_str()).is_some())
}

#[cfg(test)]
mod tests {
    use tower::ServiceExt;

    use super::*;

    #[test]
    fn only_collections_of_the_named_resources() {
        assert_eq!(collection("/api/v1/configmaps"), Some("configmaps"));
        assert_eq!(collection("/api/v1/namespaces/default/configmaps"), Some("configmaps"));
        assert_eq!(collection("/apis/apps/v1/namespaces/x/deployments"), Some("deployments"));
        assert_eq!(collection("/apis/apps/v1/deployments"), Some("deployments"));
        assert_eq!(collection("/api/v1/namespaces/default/configmaps/configmaps"), None);
        assert_eq!(collection("/api/v1/namespaces/default"), None);
        assert_eq!(collection("/apis/apps/v1"), None);
        assert_eq!(collection("/version"), None);
    }

    #[tokio::test]
    async fn the_layer_adds_the_selector_to_lists_and_watches_only() {
        let cell = SelectorCell::default();
        let inner =
            tower::service_fn(|req: Request<()>| async move { Ok::<_, BoxError>(req.uri().to_string()) });
        let svc = ShardSelectorLayer::new(["configmaps"], cell.clone()).layer(inner);
        let get = |uri: &str| Request::get(uri).body(()).unwrap();
        let list = "/api/v1/namespaces/default/configmaps?limit=500";
        assert_eq!(svc.clone().oneshot(get(list)).await.unwrap(), list, "nothing set, nothing sent");
        cell.set(Some(shard_selector(&[(0, 1 << 63), (3 << 62, 1 << 64)])));
        let sent = svc.clone().oneshot(get(list)).await.unwrap();
        let q: Vec<(String, String)> = sent
            .split_once('?')
            .unwrap()
            .1
            .split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_owned(), v.to_owned())
            })
            .collect();
        assert_eq!(q[0], ("limit".into(), "500".into()));
        assert_eq!(q[1].0, "shardSelector");
        assert!(
            q[1].1.starts_with("shardRange%28object.metadata.namespace%2C%20%270x0000000000000000%27"),
            "{}",
            q[1].1
        );
        assert!(q[1].1.contains("%7C%7C"), "the ranges are OR-ed");
        let watch = "/api/v1/configmaps?watch=true&resourceVersion=5";
        assert!(svc.clone().oneshot(get(watch)).await.unwrap().contains("&shardSelector="));
        for other in
            ["/api/v1/namespaces/default/configmaps/web", "/apis/apps/v1/deployments", "/api/v1/secrets"]
        {
            assert_eq!(svc.clone().oneshot(get(other)).await.unwrap(), other);
        }
        let patch = Request::patch("/api/v1/namespaces/default/configmaps").body(()).unwrap();
        assert!(!svc.oneshot(patch).await.unwrap().contains("shardSelector"));
    }
}
