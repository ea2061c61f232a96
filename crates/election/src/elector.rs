//! The election loop: a candidate tries every retry period; the leader renews every retry period
//! and steps down when it cannot renew within the renew deadline; on stop, the leader releases.
//!
//! ```text
//!              acquire (create / take expired or free / re-take own)
//!   Candidate ────────────────────────────────────────────────▶ Leading ──┐ renew every retry
//!   Following ◀──────────────────────────────────────────────── │  ◀──────┘ period (fast path)
//!       ▲        step down: no renew within the renew deadline,  │
//!       │        or the Lease names someone else                 │ stop
//!       └─ read the Lease every retry period (×1–1.2 jitter)     ▼
//!                                                            release (empty holder) → end
//! ```
//!
//! Every write to the Lease carries the resourceVersion last read or written, so two candidates
//! never both succeed: the loser gets 409 Conflict and stays a follower. Stepping down never ends
//! the process (client-go's callers usually exit); the candidate simply starts again.

use std::time::Instant;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, ElectionConfig};
use crate::decide::{Decision, Record, decide};
use crate::fence::Fence;
use crate::metrics::Metrics;

/// Where this candidate stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leadership {
    /// Has not read the Lease yet, or it is free.
    Candidate,
    /// Another identity holds the Lease.
    Following {
        /// The holder.
        holder: String,
    },
    /// This process holds the Lease; its writes are allowed while the [`Fence`] is open.
    Leading,
}

impl Leadership {
    /// Whether this process leads.
    #[must_use]
    pub fn is_leading(&self) -> bool {
        matches!(self, Self::Leading)
    }
}

/// What the rest of the process sees of an election: the fence, the state, and health.
#[derive(Clone, Debug)]
pub struct ElectionHandle {
    fence: Fence,
    state: watch::Receiver<Leadership>,
    identity: String,
}

impl ElectionHandle {
    /// The fence to put on the client that makes the guarded writes.
    #[must_use]
    pub fn fence(&self) -> Fence {
        self.fence.clone()
    }

    /// A receiver of the state; `wait_for(Leadership::is_leading)` waits to lead.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Leadership> {
        self.state.clone()
    }

    /// The current state.
    #[must_use]
    pub fn leadership(&self) -> Leadership {
        self.state.borrow().clone()
    }

    /// This candidate's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// client-go's `HealthzAdaptor`: unhealthy when this process believes it leads but its last
    /// successful renew was sent longer ago than the renew deadline (a wedged leader, which the
    /// kubelet should restart). A follower is healthy.
    ///
    /// # Errors
    ///
    /// A line saying how old the last renew is.
    pub fn check_health(&self) -> Result<(), String> {
        if self.state.borrow().is_leading() && !self.fence.is_held() {
            let age = self.fence.last_renew_sent().map(|s| s.elapsed());
            return Err(format!("leading, but the last successful renew was sent {age:?} ago"));
        }
        Ok(())
    }
}

/// One candidate in a leader election on a `coordination.k8s.io/v1` Lease.
///
/// ```no_run
/// # async fn f(client: kube::Client) -> Result<(), kube_lease_election::ConfigError> {
/// use tokio_util::sync::CancellationToken;
/// let config = kube_lease_election::ElectionConfig::new("default", "my-controller", &kube_lease_election::new_identity());
/// let elector = kube_lease_election::LeaderElector::new(client, config)?;
/// let handle = elector.handle();
/// let stop = CancellationToken::new();
/// let task = tokio::spawn(elector.run(stop.clone()));
/// handle.subscribe().wait_for(|l| l.is_leading()).await.ok();
/// // ... work, with writes fenced by handle.fence() ...
/// stop.cancel(); // after the guarded work has stopped: releases the Lease
/// task.await.ok();
/// # Ok(()) }
/// ```
pub struct LeaderElector {
    api: Api<Lease>,
    config: ElectionConfig,
    fence: Fence,
    state: watch::Sender<Leadership>,
    metrics: Metrics,
    /// The record we last saw and when it first looked like that on our clock.
    observed: Option<(Record, Instant)>,
    /// The Lease as last read or written (its resourceVersion is the precondition of our writes).
    cached: Option<Lease>,
    /// The last failure logged at warn level, so a persistent one is not repeated every round.
    last_error: Option<String>,
}

impl LeaderElector {
    /// A candidate for `config.lease`, talking to the API server through `client` (which should
    /// not carry this election's own fence: the elector must be able to write while acquiring).
    ///
    /// # Errors
    ///
    /// Settings that break the rules of [`ElectionConfig::validate`].
    pub fn new(client: Client, config: ElectionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let fence = Fence::new(&format!("Lease {}", config.lease), config.renew_deadline);
        let (state, _) = watch::channel(Leadership::Candidate);
        Ok(Self {
            api: Api::namespaced(client, &config.lease.namespace),
            config,
            fence,
            state,
            metrics: Metrics::default(),
            observed: None,
            cached: None,
            last_error: None,
        })
    }

    /// Reports `leader_election_*` metrics into `registry`.
    #[must_use]
    pub fn with_metrics(mut self, registry: &mut prometheus_client::registry::Registry) -> Self {
        self.metrics = Metrics::register(registry, &self.config.lease.name);
        self
    }

    /// A handle for the rest of the process.
    #[must_use]
    pub fn handle(&self) -> ElectionHandle {
        ElectionHandle {
            fence: self.fence.clone(),
            state: self.state.subscribe(),
            identity: self.config.identity.clone(),
        }
    }

    /// Runs the election until `stop` is cancelled; then, if leading, releases the Lease.
    ///
    /// ## Warning
    /// Cancel `stop` only after the guarded work has stopped: the release lets another candidate
    /// lead at once.
    pub async fn run(mut self, stop: CancellationToken) {
        tracing::info!(identity = %self.config.identity, lease = %self.config.lease, "leader election: candidate");
        while self.acquire(&stop).await {
            self.lead(&stop).await;
            if stop.is_cancelled() {
                return;
            }
        }
    }

    /// Tries every retry period until it leads (`true`) or `stop` (`false`).
    async fn acquire(&mut self, stop: &CancellationToken) -> bool {
        loop {
            let attempt = tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew());
            match attempt.await {
                Ok(Ok(true)) => return true,
                Ok(Ok(false)) => {}
                Ok(Err(e)) => self.failed(&format!("cannot acquire Lease {}: {e}", self.config.lease)),
                Err(_) => self.failed(&format!(
                    "cannot acquire Lease {}: no answer within {:?}",
                    self.config.lease, self.config.renew_deadline
                )),
            }
            let jitter = self.config.retry_period.mul_f64(0.2 * fastrand::f64());
            tokio::select! {
                () = tokio::time::sleep(self.config.retry_period + jitter) => {}
                () = stop.cancelled() => return false,
            }
        }
    }

    /// Renews every retry period while it leads; returns after stepping down or releasing.
    async fn lead(&mut self, stop: &CancellationToken) {
        self.last_error = None;
        self.metrics.leading(true);
        self.state.send_replace(Leadership::Leading);
        tracing::info!(identity = %self.config.identity, lease = %self.config.lease, "became leader");
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.config.retry_period) => {}
                () = stop.cancelled() => {
                    self.release().await;
                    return;
                }
            }
            // Checked before any write: after a pause the deadline may be long gone.
            let left = self.fence.remaining().unwrap_or_default();
            if left.is_zero() {
                return self.step_down("no successful renew within the renew deadline");
            }
            match tokio::time::timeout(left, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    let holder = self.observed_holder().unwrap_or_default();
                    return self.step_down(&format!("the Lease is now held by {holder:?}"));
                }
                Ok(Err(e)) => {
                    tracing::warn!(lease = %self.config.lease, error = %e, "renew failed; retrying until the renew deadline");
                    if !self.fence.is_held() {
                        return self.step_down("no successful renew within the renew deadline");
                    }
                }
                Err(_) => return self.step_down("no successful renew within the renew deadline"),
            }
        }
    }

    fn step_down(&mut self, why: &str) {
        self.fence.revoke();
        self.metrics.leading(false);
        self.state.send_replace(Leadership::Candidate);
        tracing::warn!(identity = %self.config.identity, lease = %self.config.lease, "stopped leading: {why}");
    }

    fn failed(&mut self, message: &str) {
        if self.last_error.as_deref() == Some(message) {
            tracing::debug!("{message}");
        } else {
            tracing::warn!("{message}");
            self.last_error = Some(message.to_owned());
        }
    }

    fn observed_holder(&self) -> Option<String> {
        self.observed.as_ref().and_then(|(r, _)| r.holder().map(str::to_owned))
    }

    /// Notes what the Lease says now; the clock of its expiry restarts when the record changes.
    fn observe(&mut self, lease: &Lease) {
        let record = Record::from_spec(lease.spec.as_ref());
        if self.observed.as_ref().is_some_and(|(r, _)| *r == record) {
            return;
        }
        let problems = record.problems();
        if !problems.is_empty() {
            tracing::warn!(
                lease = %self.config.lease,
                "Lease has invalid fields ({}); reading it conservatively: waiting our own lease duration of {:?} after it last changed",
                problems.join("; "),
                self.config.lease_duration
            );
        }
        let (old, new) = (self.observed_holder(), record.holder().map(str::to_owned));
        if old != new
            && let Some(h) = new.as_deref().filter(|h| *h != self.config.identity)
        {
            tracing::info!(lease = %self.config.lease, holder = h, "new leader observed");
        }
        self.observed = Some((record, Instant::now()));
    }

    /// One round (client-go's `tryAcquireOrRenew`): `Ok(true)` when we hold the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        // Fast path: a leader whose fence is still open renews over the version it last wrote.
        if self.state.borrow().is_leading()
            && self.fence.is_held()
            && let Some(lease) = self.cached.clone()
        {
            let renew = self.claimed(lease, None, true);
            match self.write(&renew).await {
                Ok(true) => return Ok(true),
                Ok(false) | Err(_) => {
                    tracing::debug!(lease = %self.config.lease, "fast renew failed; re-reading the Lease")
                }
            }
        }
        self.metrics.slowpath();
        let Some(lease) = self.api.get_opt(&self.config.lease.name).await? else {
            return self.create().await;
        };
        self.observe(&lease);
        self.cached = Some(lease.clone());
        let (record, seen_at) = self.observed.clone().expect("observed just now");
        match decide(Some(&record), &self.config.identity, seen_at.elapsed(), self.config.lease_duration) {
            Decision::Follow { holder, expires_in } => {
                tracing::trace!(%holder, ?expires_in, "following");
                self.state.send_if_modified(|s| {
                    let next = Leadership::Following { holder };
                    (*s != next).then(|| *s = next).is_some()
                });
                Ok(false)
            }
            Decision::Take { transitions, renew } => {
                let take = self.claimed(lease, Some(transitions), renew);
                self.write(&take).await
            }
            Decision::Create => self.create().await,
        }
    }

    /// `lease` rewritten to name us, renewed now.
    fn claimed(&self, mut lease: Lease, transitions: Option<i32>, renew: bool) -> Lease {
        let now = MicroTime(jiff::Timestamp::now());
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some(self.config.identity.clone());
        spec.lease_duration_seconds = Some(self.config.lease_duration_seconds());
        if !renew || spec.acquire_time.is_none() {
            spec.acquire_time = Some(now.clone());
        }
        spec.renew_time = Some(now);
        if let Some(t) = transitions {
            spec.lease_transitions = Some(t);
        }
        lease
    }

    /// PUTs `lease` (with its resourceVersion). `Ok(false)` on 409: someone else wrote first.
    async fn write(&mut self, lease: &Lease) -> Result<bool, kube::Error> {
        let sent = Instant::now();
        match self.api.replace(&self.config.lease.name, &PostParams::default(), lease).await {
            Ok(written) => {
                self.held(written, sent);
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Our cached version is stale; the next round re-reads it.
                self.cached = None;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    async fn create(&mut self) -> Result<bool, kube::Error> {
        let mut lease = Lease::default();
        lease.metadata.name = Some(self.config.lease.name.clone());
        lease.metadata.namespace = Some(self.config.lease.namespace.clone());
        let lease = self.claimed(lease, Some(0), false);
        let sent = Instant::now();
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.held(created, sent);
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn held(&mut self, lease: Lease, sent: Instant) {
        self.observe(&lease);
        self.cached = Some(lease);
        self.fence.renewed(sent);
    }

    /// client-go's `ReleaseOnCancel`: if we hold the Lease, write an empty holder (and a
    /// one-second duration) so a follower takes over at its next try instead of waiting out the
    /// lease. Retries a conflict while the Lease still names us, within the renew deadline.
    async fn release(&mut self) {
        self.fence.revoke();
        self.metrics.leading(false);
        let deadline = Instant::now() + self.config.renew_deadline;
        let outcome = tokio::time::timeout(self.config.renew_deadline, async {
            while Instant::now() < deadline {
                let lease = match self.cached.take() {
                    Some(l) => l,
                    None => match self.api.get_opt(&self.config.lease.name).await? {
                        Some(l) => l,
                        None => return Ok(false),
                    },
                };
                if Record::from_spec(lease.spec.as_ref()).holder() != Some(self.config.identity.as_str()) {
                    return Ok(false);
                }
                let mut free = lease;
                let now = MicroTime(jiff::Timestamp::now());
                let spec = free.spec.get_or_insert_with(LeaseSpec::default);
                spec.holder_identity = Some(String::new());
                spec.lease_duration_seconds = Some(1);
                spec.acquire_time = Some(now.clone());
                spec.renew_time = Some(now);
                match self.api.replace(&free.name_any(), &PostParams::default(), &free).await {
                    Ok(_) => return Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(false)
        })
        .await;
        self.state.send_replace(Leadership::Candidate);
        match outcome {
            Ok(Ok(true)) => tracing::info!(lease = %self.config.lease, "released the Lease"),
            Ok(Ok(false)) => {
                tracing::info!(lease = %self.config.lease, "stopped; the Lease no longer named us")
            }
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.config.lease, error = %e, "could not release the Lease; it expires by itself")
            }
            Err(_) => {
                tracing::warn!(lease = %self.config.lease, "could not release the Lease in time; it expires by itself")
            }
        }
    }
}
