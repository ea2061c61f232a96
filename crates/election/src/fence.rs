//! The fence: writes are allowed only while the lease that entitles them is known to be held.
//!
//! "Known to be held" is measured on this process's monotonic clock from the moment the last
//! successful renew was *sent* (not answered): the Lease on the server cannot have run out before
//! `sent + leaseDuration`, and we stop writing at `sent + renewDeadline`, leaving the gap between
//! the two as the margin for requests already on the wire and for clock-rate differences.
//!
//! The check is made for every request, at the last moment before it leaves the process, by
//! [`FenceLayer`] on the controller's client — not only in the renew loop. A process that was
//! paused (SIGSTOP, a stall, a lost network) and wakes up after its lease ran out finds the fence
//! closed and sends nothing until the elector has re-read the Lease and renewed it.
//!
//! ## Warning
//! The fence narrows the split-brain window to the time between the check and the request reaching
//! the server (microseconds, unless the process is paused exactly there). Closing it completely
//! needs the server to check a token, which Kubernetes does not offer for built-in kinds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Method, Request};
use tower::{BoxError, Layer, Service};

/// A write refused because the lease is not known to be held.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "write withheld: {what} is not known to be held (no successful renew sent within the renew deadline)"
)]
pub struct Fenced {
    /// The lease, e.g. `Lease counter-controller/counter-controller`.
    pub what: String,
}

/// Whether writes may go out now. Cheap to clone and to check (one atomic load).
///
/// ```
/// use std::time::{Duration, Instant};
/// let fence = election::Fence::new("Lease ns/name", Duration::from_secs(10));
/// assert!(!fence.is_held());
/// fence.renewed(Instant::now());
/// assert!(fence.is_held());
/// fence.revoke();
/// assert!(fence.check().is_err());
/// assert!(election::Fence::open().is_held());
/// ```
#[derive(Clone, Debug)]
pub struct Fence(Arc<State>);

#[derive(Debug)]
struct State {
    what: String,
    /// `None`: always open (no election).
    deadline: Option<Duration>,
    base: Instant,
    /// Nanoseconds after `base` at which the last successful renew was sent, plus one; 0 = not held.
    sent: AtomicU64,
}

impl Fence {
    /// A fence for `what`, closed until the first renew.
    #[must_use]
    pub fn new(what: &str, renew_deadline: Duration) -> Self {
        Self(Arc::new(State {
            what: what.to_owned(),
            deadline: Some(renew_deadline),
            base: Instant::now(),
            sent: AtomicU64::new(0),
        }))
    }

    /// A fence that is always open: a controller run without leader election.
    #[must_use]
    pub fn open() -> Self {
        Self(Arc::new(State {
            what: "no lease".into(),
            deadline: None,
            base: Instant::now(),
            sent: AtomicU64::new(0),
        }))
    }

    /// Records a successful renew (or acquire) that was sent at `sent`.
    pub fn renewed(&self, sent: Instant) {
        let nanos = sent.saturating_duration_since(self.0.base).as_nanos();
        let v = u64::try_from(nanos).unwrap_or(u64::MAX - 1) + 1;
        // Never move backwards: a slow answer to an older renew must not shorten a newer one.
        self.0.sent.fetch_max(v, Ordering::AcqRel);
    }

    /// Closes the fence now (stepped down, released, or lost the Lease).
    pub fn revoke(&self) {
        self.0.sent.store(0, Ordering::Release);
    }

    /// When the last successful renew was sent, if the lease is held.
    #[must_use]
    pub fn last_renew_sent(&self) -> Option<Instant> {
        match self.0.sent.load(Ordering::Acquire) {
            0 => None,
            v => Some(self.0.base + Duration::from_nanos(v - 1)),
        }
    }

    /// How long the fence stays open from now; `None` when it is always open.
    #[must_use]
    pub fn remaining(&self) -> Option<Duration> {
        let deadline = self.0.deadline?;
        Some(self.last_renew_sent().map_or(Duration::ZERO, |s| deadline.saturating_sub(s.elapsed())))
    }

    /// Whether a write may go out now.
    #[must_use]
    pub fn is_held(&self) -> bool {
        self.remaining().is_none_or(|r| !r.is_zero())
    }

    /// `Ok` when a write may go out now.
    ///
    /// # Errors
    ///
    /// [`Fenced`] when it may not.
    pub fn check(&self) -> Result<(), Fenced> {
        if self.is_held() { Ok(()) } else { Err(Fenced { what: self.0.what.clone() }) }
    }
}

/// Whether a request changes state (anything but GET, HEAD and OPTIONS; watches are GETs).
#[must_use]
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A `tower` layer for a `kube::Client` that refuses every write while the [`Fence`] is closed:
/// the request fails with [`Fenced`] (as `kube::Error::Service`) without leaving the process.
///
/// ```no_run
/// # async fn f(config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
/// let fence = election::Fence::new("Lease ns/name", std::time::Duration::from_secs(10));
/// let client = kube::client::ClientBuilder::try_from(config)?
///     .with_layer(&election::FenceLayer::new(fence))
///     .build();
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FenceLayer(Fence);

impl FenceLayer {
    /// A layer checking `fence`.
    #[must_use]
    pub fn new(fence: Fence) -> Self {
        Self(fence)
    }
}

impl<S> Layer<S> for FenceLayer {
    type Service = FenceService<S>;
    fn layer(&self, inner: S) -> FenceService<S> {
        FenceService { inner, fence: self.0.clone() }
    }
}

/// The service made by [`FenceLayer`].
#[derive(Clone, Debug)]
pub struct FenceService<S> {
    inner: S,
    fence: Fence,
}

impl<S, B> Service<Request<B>> for FenceService<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if is_write(req.method())
            && let Err(e) = self.fence.check()
        {
            return Box::pin(std::future::ready(Err(Box::new(e) as BoxError)));
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

/// Whether a `kube::Error` is a write the fence withheld.
#[must_use]
pub fn is_fenced(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Service(inner) if inner.downcast_ref::<Fenced>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_closes_a_renew_deadline_after_the_renew_was_sent() {
        let fence = Fence::new("Lease ns/l", Duration::from_secs(10));
        let sent = Instant::now();
        // The answer came late; what counts is when it was sent.
        std::thread::sleep(Duration::from_millis(20));
        fence.renewed(sent);
        assert!(fence.is_held());
        let left = fence.remaining().unwrap();
        assert!(left <= Duration::from_millis(9_980), "{left:?}");
        // An older renew's late answer does not move it back.
        fence.renewed(sent - Duration::from_secs(5));
        assert_eq!(fence.last_renew_sent(), Some(sent));
    }

    #[test]
    fn an_expired_fence_refuses() {
        let fence = Fence::new("Lease ns/l", Duration::from_millis(30));
        fence.renewed(Instant::now());
        assert!(fence.check().is_ok());
        std::thread::sleep(Duration::from_millis(40));
        let e = fence.check().unwrap_err();
        assert!(e.to_string().contains("Lease ns/l is not known to be held"), "{e}");
    }

    #[tokio::test]
    async fn the_layer_stops_writes_and_lets_reads_through() {
        use tower::ServiceExt;
        let fence = Fence::new("Lease ns/l", Duration::from_secs(10));
        let inner = tower::service_fn(|_req: Request<()>| async { Ok::<_, BoxError>("sent") });
        let svc = FenceLayer::new(fence.clone()).layer(inner);
        let req = |m: Method| Request::builder().method(m).uri("/api").body(()).unwrap();
        assert_eq!(svc.clone().oneshot(req(Method::GET)).await.unwrap(), "sent");
        let err = svc.clone().oneshot(req(Method::PATCH)).await.unwrap_err();
        assert!(err.downcast_ref::<Fenced>().is_some());
        assert!(is_fenced(&kube::Error::Service(err)));
        fence.renewed(Instant::now());
        assert_eq!(svc.oneshot(req(Method::DELETE)).await.unwrap(), "sent");
    }
}
