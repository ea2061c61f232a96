//! Fault injection: error rates per verb and resource, latency, cut watch streams, forced 410s,
//! a resource's watch events held back (one watch lagging behind the others), and one client's
//! requests held on the wire and delivered late (a network cut and healed); and, in
//! `containers`, faults of the simulated container runtime.

use std::collections::VecDeque;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::status::ApiError;

mod containers;

pub use containers::{ContainerFault, ContainerFaultRule, Probe};
pub(crate) use containers::{ContainerFaults, Target, labels_of};

/// The error a fault rule answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// 500 InternalError.
    InternalError,
    /// 429 TooManyRequests with `Retry-After: seconds`.
    TooManyRequests {
        /// The Retry-After value.
        retry_after_seconds: u64,
    },
    /// 503 ServiceUnavailable.
    Unavailable,
    /// No answer: the connection is dropped (over HTTP it is closed; in-process the request fails
    /// as a broken connection does). The request is recorded with code 0.
    Disconnect,
    /// The handler panics, as a bug in the server would: the request is answered as upstream's
    /// panic filter answers it (a 500 in plain text, `This request caused apiserver to panic`)
    /// and the server goes on.
    Panic,
}

/// The reason carried internally by a [`FaultKind::Disconnect`] error; never sent to a client.
pub(crate) const DISCONNECTED: &str = "Disconnected";

impl FaultKind {
    pub(crate) fn error(self) -> ApiError {
        match self {
            Self::InternalError => ApiError::internal("injected fault: internal error"),
            Self::TooManyRequests { retry_after_seconds } => ApiError::too_many_requests(retry_after_seconds),
            Self::Unavailable => ApiError::unavailable(),
            Self::Disconnect => ApiError::dropped(DISCONNECTED),
            Self::Panic => panic!("injected fault: the request's handler panicked"),
        }
    }
}

/// Fails a fraction of the requests that match a verb and a resource.
#[derive(Debug, Clone)]
pub struct FaultRule {
    /// Verb to match (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`); `None` matches all. The pseudo-verb `write` matches every write.
    pub verb: Option<String>,
    /// Resource (plural) to match; `None` matches all.
    pub resource: Option<String>,
    /// Fraction of matching requests that fail, 0.0 to 1.0.
    pub rate: f64,
    /// The error they get.
    pub kind: FaultKind,
}

impl FaultRule {
    /// A rule failing `rate` of the requests matching `verb` on `resource` with `kind`.
    #[must_use]
    pub fn new(verb: Option<&str>, resource: Option<&str>, rate: f64, kind: FaultKind) -> Self {
        Self { verb: verb.map(str::to_owned), resource: resource.map(str::to_owned), rate, kind }
    }

    fn matches(&self, verb: &str, resource: &str) -> bool {
        let verb_ok = match self.verb.as_deref() {
            None => true,
            Some("write") => matches!(verb, "create" | "update" | "patch" | "delete" | "deletecollection"),
            Some(v) => v == verb,
        };
        verb_ok && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// What the server does with a held request whose client gave up on it — reset its stream or
/// closed its connection — before the request was released.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Abandoned {
    /// Not applied: the server sees the reset before it reads the request, as an API server
    /// cancels the request of a client that has gone.
    #[default]
    Cancelled,
    /// Applied all the same, as when a server reads and applies the late bytes before it
    /// notices the reset: the worst case a client's deadline cannot rule out.
    Applied,
}

/// A held request's turn to be delivered: what to do if its client has gone, and where to say
/// it has been handled, so the next one is delivered after it, in the order they were sent.
pub(crate) type Turn = (Abandoned, oneshot::Sender<()>);

/// What a held request waits on; dropped unsent, the request is lost.
pub(crate) type Ticket = oneshot::Receiver<Turn>;

#[derive(Debug)]
struct Hold {
    /// Requests whose `User-Agent` contains this are held.
    user_agent: String,
    abandoned: Abandoned,
    held: VecDeque<oneshot::Sender<Turn>>,
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<FaultRule>,
    latency: Duration,
    force_expired: u32,
    cut_generation: u64,
    rng: Option<fastrand::Rng>,
    hold: Option<Hold>,
    held_abandoned: u64,
    /// Resources (plural) whose watch events are held back.
    paused_watches: Vec<String>,
}

/// The fault settings of one sandbox. All methods take effect on the next request.
#[derive(Debug, Default)]
pub struct Faults {
    state: Mutex<State>,
    /// The container runtime's faults, which the runtime and the kubelets share.
    containers: std::sync::Arc<ContainerFaults>,
    cut: tokio::sync::Notify,
    resumed: tokio::sync::Notify,
}

impl Faults {
    /// Adds a rule.
    pub fn add_rule(&self, rule: FaultRule) {
        self.state.lock().rules.push(rule);
    }

    /// Removes every rule (the container runtime's too), the latency and pending forced 410s.
    pub fn clear(&self) {
        let mut st = self.state.lock();
        st.rules.clear();
        st.latency = Duration::ZERO;
        st.force_expired = 0;
        self.containers.clear();
    }

    /// Adds a fault of the simulated container runtime: containers that crash, probes that
    /// fail, execs that hang. It strikes containers already running as well as those that start
    /// later, until [`clear_container_faults`](Self::clear_container_faults).
    ///
    /// ```
    /// use kube_sandbox::{ContainerFault, ContainerFaultRule, Probe, Sandbox};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sandbox = Sandbox::new();
    /// let fault = ContainerFault::ProbeFails(Probe::Readiness);
    /// sandbox.faults().add_container_fault(ContainerFaultRule::new("default", fault).pod("web"));
    /// // ... pod `web` turns unready after its probe's failureThreshold failures ...
    /// sandbox.faults().clear_container_faults();
    /// # }
    /// ```
    pub fn add_container_fault(&self, rule: ContainerFaultRule) {
        self.containers.add(rule);
    }

    /// Removes every fault of the container runtime: probes pass again, containers run on and
    /// new execs answer (one already hanging stays hung).
    pub fn clear_container_faults(&self) {
        self.containers.clear();
    }

    /// The container runtime's faults, to share with the runtime and the kubelets.
    pub(crate) fn containers(&self) -> std::sync::Arc<ContainerFaults> {
        std::sync::Arc::clone(&self.containers)
    }

    /// Removes every rule, keeping the latency and pending forced 410s.
    pub fn clear_rules(&self) {
        self.state.lock().rules.clear();
    }

    /// Seeds the random choice of which requests fail, for repeatable tests.
    pub fn seed(&self, seed: u64) {
        self.state.lock().rng = Some(fastrand::Rng::with_seed(seed));
    }

    /// Delays every request by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        self.state.lock().latency = latency;
    }

    /// Holds every request whose `User-Agent` contains `user_agent` (a replica's identity), as a
    /// network cut between that client and the server holds its bytes: the client sees no
    /// answer, the server nothing, until [`release_held`](Self::release_held) delivers them
    /// in the order they were sent, or [`drop_held`](Self::drop_held) loses them. Requests
    /// already being served are not affected, nor are open watches (the cut is one way).
    /// `abandoned` says what becomes of a held request whose client has given up on it.
    pub fn hold(&self, user_agent: &str, abandoned: Abandoned) {
        let mut st = self.state.lock();
        let held = st.hold.take().map(|h| h.held).unwrap_or_default();
        st.hold = Some(Hold { user_agent: user_agent.to_owned(), abandoned, held });
    }

    /// How many requests are held now.
    #[must_use]
    pub fn held(&self) -> usize {
        self.state.lock().hold.as_ref().map_or(0, |h| h.held.len())
    }

    /// How many held requests were not applied because their client had given up on them
    /// ([`Abandoned::Cancelled`]).
    #[must_use]
    pub fn held_abandoned(&self) -> u64 {
        self.state.lock().held_abandoned
    }

    /// Ends the hold (the cut heals) and delivers what it held, one after the other in the order
    /// sent; returns once each has been handled (answered, or not applied because its client had
    /// gone). Requests sent from now on go through.
    pub async fn release_held(&self) {
        let Some(hold) = self.state.lock().hold.take() else { return };
        for turn in hold.held {
            let (done, handled) = oneshot::channel();
            if turn.send((hold.abandoned, done)).is_ok() {
                // Dropped unanswered when its client has gone and it is not applied.
                let _ = handled.await;
            }
        }
    }

    /// Ends the hold and loses what it held: never applied; a client still waiting sees its
    /// connection dropped.
    pub fn drop_held(&self) {
        // Their turns never come.
        drop(self.state.lock().hold.take());
    }

    /// A ticket when a request of `user_agent` is to be held.
    pub(crate) fn hold_request(&self, user_agent: &str) -> Option<Ticket> {
        let mut st = self.state.lock();
        let hold = st.hold.as_mut().filter(|h| user_agent.contains(h.user_agent.as_str()))?;
        let (turn, ticket) = oneshot::channel();
        hold.held.push_back(turn);
        Some(ticket)
    }

    /// Counts a held request not applied because its client had gone.
    pub(crate) fn abandoned_on_release(&self) {
        self.state.lock().held_abandoned += 1;
    }

    /// Ends every open watch stream now, as a dropped connection would.
    pub fn cut_watches(&self) {
        self.state.lock().cut_generation += 1;
        self.cut.notify_waiters();
    }

    /// Holds back the events (and bookmarks) of every watch of `resource` (plural), as a watch
    /// that lags behind the others does: the changes are made and other resources' watches see
    /// theirs, but these streams send nothing until
    /// [`resume_watch_events`](Self::resume_watch_events), then everything held, in order. What a
    /// controller does when an event of one kind overtakes a related event of another is tested
    /// with it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let sb = kube_sandbox::Sandbox::new();
    /// sb.faults().pause_watch_events("configmaps");
    /// // ... delete a ConfigMap: its watchers do not hear of it yet ...
    /// sb.faults().resume_watch_events("configmaps");
    /// # }
    /// ```
    ///
    /// ## Warning
    /// A stream held back longer than its resource's changes fit in the watch buffer ends, and
    /// its client relists, as a real server's slow watcher does.
    pub fn pause_watch_events(&self, resource: &str) {
        let mut st = self.state.lock();
        if !st.paused_watches.iter().any(|r| r == resource) {
            st.paused_watches.push(resource.to_owned());
        }
    }

    /// Lets the watches of `resource` send what they held back, and go on as before.
    pub fn resume_watch_events(&self, resource: &str) {
        self.state.lock().paused_watches.retain(|r| r != resource);
        self.resumed.notify_waiters();
    }

    /// Resolves once the watches of `resource` may send (at once, unless they are held back).
    pub(crate) async fn watch_events_flow(&self, resource: &str) {
        loop {
            let notified = self.resumed.notified();
            if !self.state.lock().paused_watches.iter().any(|r| r == resource) {
                return;
            }
            notified.await;
        }
    }

    /// Makes the next watch request fail with an ERROR event, 410 Expired.
    pub fn expire_next_watch(&self) {
        self.state.lock().force_expired += 1;
    }

    pub(crate) fn latency(&self) -> Duration {
        self.state.lock().latency
    }

    /// The injected error for this request, if a rule fires.
    pub(crate) fn check(&self, verb: &str, resource: &str) -> Option<ApiError> {
        let mut st = self.state.lock();
        let st = &mut *st;
        let rng = st.rng.get_or_insert_with(fastrand::Rng::new);
        st.rules.iter().find(|r| r.matches(verb, resource) && rng.f64() < r.rate).map(|r| r.kind.error())
    }

    pub(crate) fn take_forced_expiry(&self) -> bool {
        let mut st = self.state.lock();
        if st.force_expired > 0 {
            st.force_expired -= 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn cut_generation(&self) -> u64 {
        self.state.lock().cut_generation
    }

    /// Resolves at the next [`cut_watches`](Self::cut_watches) after generation `seen`.
    pub(crate) async fn cut_after(&self, seen: u64) {
        loop {
            let notified = self.cut.notified();
            if self.cut_generation() != seen {
                return;
            }
            notified.await;
        }
    }
}
