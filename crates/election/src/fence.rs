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
//! A write that is let out does not outlive the fence: [`FenceLayer`] abandons a request still
//! unanswered when the fence closes (its future is dropped, so the client resets the stream or
//! closes the connection), and a server that receives it only then — the bytes held up by a
//! network that was cut and healed — sees a request whose client has gone. The request fails with
//! [`Fenced`] marked `abandoned`. Renewing in the meantime keeps the request alive: what counts is
//! that the lease was known to be held at every moment of the request's life
//! ([`Fence::still_held_since`]).
//!
//! ## Warning
//! The fence narrows the split-brain window to the time between the check and the request reaching
//! the server, and abandoning narrows it for requests on the wire, but neither can recall bytes
//! already sent: a server may still apply a request whose client has gone, if it reads and applies
//! it before it notices the reset. Closing that gap needs the server to check a condition, which
//! is what preconditions (`metadata.resourceVersion`, `Preconditions`) on every write do — see
//! the `kube-coordination` crate's `conditional` module.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Method, Request};
use tower::{BoxError, Layer, Service};

/// A write refused because the lease is not known to be held: withheld before it left the
/// process, or abandoned in flight when the fence closed before its answer came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "write {}: {what} is not known to be held (no successful renew sent within the renew deadline)",
    if *.abandoned { "abandoned in flight" } else { "withheld" }
)]
pub struct Fenced {
    /// The lease, e.g. `Lease counter-controller/counter-controller`.
    pub what: String,
    /// The request had been sent and was dropped unanswered when the fence closed.
    pub abandoned: bool,
}

/// What a write was let out under: the fence's state when it was checked, to tell later whether
/// the lease has been known to be held ever since ([`Fence::still_held_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entitlement {
    /// When the fence closes unless renewed; `None` for a fence that is always open.
    pub closes_at: Option<Instant>,
    revocations: u64,
}

/// Whether writes may go out now. Cheap to clone and to check (one atomic load).
///
/// ```
/// use std::time::{Duration, Instant};
/// let fence = kube_lease_election::Fence::new("Lease ns/name", Duration::from_secs(10));
/// assert!(!fence.is_held());
/// fence.renewed(Instant::now());
/// assert!(fence.is_held());
/// fence.revoke();
/// assert!(fence.check().is_err());
/// assert!(kube_lease_election::Fence::open().is_held());
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
    /// How many times the fence was revoked: a revocation breaks every entitlement taken before
    /// it, even if the lease is acquired again at once.
    revocations: AtomicU64,
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
            revocations: AtomicU64::new(0),
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
            revocations: AtomicU64::new(0),
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
        // Counted first: an entitlement read between the two stores is already broken.
        self.0.revocations.fetch_add(1, Ordering::AcqRel);
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
        self.0.deadline?;
        Some(self.closes_at().map_or(Duration::ZERO, |c| c.saturating_duration_since(Instant::now())))
    }

    /// When the fence closes unless renewed: the last renew sent plus the renew deadline; `None`
    /// when it is not held or always open.
    fn closes_at(&self) -> Option<Instant> {
        Some(self.last_renew_sent()? + self.0.deadline?)
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
        self.entitle().map(drop)
    }

    /// The entitlement of a write going out now: when the fence closes unless renewed.
    ///
    /// # Errors
    ///
    /// [`Fenced`] when no write may go out now.
    pub fn entitle(&self) -> Result<Entitlement, Fenced> {
        let revocations = self.0.revocations.load(Ordering::Acquire);
        if self.0.deadline.is_none() {
            return Ok(Entitlement { closes_at: None, revocations });
        }
        match self.closes_at() {
            Some(closes_at) if closes_at > Instant::now() => {
                Ok(Entitlement { closes_at: Some(closes_at), revocations })
            }
            _ => Err(self.fenced(false)),
        }
    }

    /// The entitlement extended to the fence's present deadline, if the lease has been known to
    /// be held at every moment since `e` was taken: never revoked since, and the last renew sent
    /// before `e`'s deadline (its answer may have come after; what matters is that it was *sent*
    /// while the lease was held). `None` once there was a gap: a write let out under `e` must be
    /// abandoned. (An always-open fence's entitlements have no deadline to extend: `None`.)
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let fence = kube_lease_election::Fence::new("Lease ns/name", Duration::from_secs(10));
    /// fence.renewed(Instant::now());
    /// let e = fence.entitle().unwrap();
    /// fence.renewed(Instant::now());
    /// assert!(fence.still_held_since(&e).unwrap().closes_at >= e.closes_at);
    /// fence.revoke();
    /// fence.renewed(Instant::now()); // acquired again: the earlier write's lease is not this one
    /// assert_eq!(fence.still_held_since(&e), None);
    /// ```
    #[must_use]
    pub fn still_held_since(&self, e: &Entitlement) -> Option<Entitlement> {
        let before = e.closes_at?;
        let sent = self.last_renew_sent()?;
        let unbroken = self.0.revocations.load(Ordering::Acquire) == e.revocations && sent < before;
        let closes_at = self.closes_at()?;
        (unbroken && closes_at > Instant::now())
            .then_some(Entitlement { closes_at: Some(closes_at), revocations: e.revocations })
    }

    fn fenced(&self, abandoned: bool) -> Fenced {
        Fenced { what: self.0.what.clone(), abandoned }
    }
}

/// Whether a request changes state (anything but GET, HEAD and OPTIONS; watches are GETs).
#[must_use]
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A `tower` layer for a `kube::Client` that refuses every write while the [`Fence`] is closed:
/// the request fails with [`Fenced`] (as `kube::Error::Service`) without leaving the process. A
/// write that went out is abandoned (dropped unanswered, [`Fenced::abandoned`]) the moment the
/// fence closes, so it cannot outlive the lease that let it out.
///
/// ```no_run
/// # async fn f(config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
/// let fence = kube_lease_election::Fence::new("Lease ns/name", std::time::Duration::from_secs(10));
/// let client = kube::client::ClientBuilder::try_from(config)?
///     .with_layer(&kube_lease_election::FenceLayer::new(fence))
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
        if !is_write(req.method()) {
            let fut = self.inner.call(req);
            return Box::pin(async move { fut.await.map_err(Into::into) });
        }
        let entitlement = match self.fence.entitle() {
            Ok(e) => e,
            Err(e) => return Box::pin(std::future::ready(Err(Box::new(e) as BoxError))),
        };
        let fut = self.inner.call(req);
        let fence = self.fence.clone();
        Box::pin(async move {
            let mut entitlement = entitlement;
            let mut fut = std::pin::pin!(fut);
            while let Some(closes_at) = entitlement.closes_at {
                tokio::select! {
                    answer = &mut fut => return answer.map_err(Into::into),
                    () = tokio::time::sleep_until(closes_at.into()) => match fence.still_held_since(&entitlement) {
                        Some(later) => entitlement = later,
                        // Dropping `fut` resets the request: a server that reads it late finds
                        // its client gone.
                        None => return Err(Box::new(fence.fenced(true)) as BoxError),
                    },
                }
            }
            // Always open: no deadline.
            fut.await.map_err(Into::into)
        })
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

    /// A server that never answers, and counts the requests it dropped unanswered.
    fn silent(
        dropped: Arc<AtomicU64>,
    ) -> impl Service<Request<()>, Response = &'static str, Error = BoxError, Future: Send> + Clone {
        tower::service_fn(move |_req: Request<()>| {
            struct CountDrop(Arc<AtomicU64>);
            impl Drop for CountDrop {
                fn drop(&mut self) {
                    self.0.fetch_add(1, Ordering::SeqCst);
                }
            }
            let guard = CountDrop(Arc::clone(&dropped));
            async move {
                let _guard = guard;
                std::future::pending::<Result<&'static str, BoxError>>().await
            }
        })
    }

    /// A fence just renewed, closing after `deadline`, in front of a [`silent`] server; and the
    /// count of requests that server dropped.
    fn fenced_silent(
        deadline: Duration,
    ) -> (
        Fence,
        Arc<AtomicU64>,
        impl Service<Request<()>, Response = &'static str, Error = BoxError, Future: Send> + Clone,
    ) {
        let fence = Fence::new("Lease ns/l", deadline);
        fence.renewed(Instant::now());
        let dropped = Arc::new(AtomicU64::new(0));
        let svc = FenceLayer::new(fence.clone()).layer(silent(Arc::clone(&dropped)));
        (fence, dropped, svc)
    }

    #[tokio::test]
    async fn a_write_in_flight_is_abandoned_when_the_fence_closes() {
        use tower::ServiceExt;
        let (_fence, dropped, svc) = fenced_silent(Duration::from_millis(150));
        let req = |m: Method| Request::builder().method(m).uri("/api").body(()).unwrap();
        let sent = Instant::now();
        let err = svc.clone().oneshot(req(Method::PATCH)).await.unwrap_err();
        let fenced = err.downcast_ref::<Fenced>().expect("a Fenced error");
        assert!(fenced.abandoned, "{fenced}");
        assert!(fenced.to_string().starts_with("write abandoned in flight"), "{fenced}");
        // Not before the fence closed, and the request itself was dropped (reset), not kept.
        assert!(sent.elapsed() >= Duration::from_millis(140), "{:?}", sent.elapsed());
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        // A read has no deadline of its own: it waits for its answer.
        let read = tokio::time::timeout(Duration::from_millis(300), svc.oneshot(req(Method::GET))).await;
        assert!(read.is_err(), "a read is not abandoned");
    }

    #[tokio::test]
    async fn renewals_keep_a_write_in_flight_and_a_revocation_ends_it() {
        use tower::ServiceExt;
        let (fence, dropped, svc) = fenced_silent(Duration::from_millis(100));
        let write =
            tokio::spawn(svc.oneshot(Request::builder().method(Method::PUT).uri("/x").body(()).unwrap()));
        // Renewed every 40 ms for 400 ms: four deadlines' worth, the write still in flight.
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(40)).await;
            fence.renewed(Instant::now());
        }
        assert!(!write.is_finished());
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        // Stepped down and at once acquired again: the write's lease is gone all the same.
        fence.revoke();
        fence.renewed(Instant::now());
        let err = write.await.unwrap().unwrap_err();
        assert!(err.downcast_ref::<Fenced>().is_some_and(|f| f.abandoned));
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_gap_between_renewals_breaks_the_entitlement() {
        let fence = Fence::new("Lease ns/l", Duration::from_millis(30));
        fence.renewed(Instant::now());
        let e = fence.entitle().unwrap();
        std::thread::sleep(Duration::from_millis(40));
        // Renewed only after the fence had closed: the write let out before is not covered.
        fence.renewed(Instant::now());
        assert!(fence.is_held());
        assert_eq!(fence.still_held_since(&e), None);
        // A renew sent before the deadline whose answer came only after it does cover it.
        let fence = Fence::new("Lease ns/l", Duration::from_millis(100));
        fence.renewed(Instant::now());
        let e = fence.entitle().unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let sent = Instant::now();
        std::thread::sleep(Duration::from_millis(50)); // past e's deadline, the answer still out
        assert!(Instant::now() > e.closes_at.unwrap());
        fence.renewed(sent);
        assert_eq!(fence.still_held_since(&e).unwrap().closes_at, Some(sent + Duration::from_millis(100)));
    }
}
