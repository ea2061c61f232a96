//! Fault injection: error rates per verb and resource, latency, cut watch streams, forced 410s.

use std::time::Duration;

use parking_lot::Mutex;

use crate::status::ApiError;

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

#[derive(Debug, Default)]
struct State {
    rules: Vec<FaultRule>,
    latency: Duration,
    force_expired: u32,
    cut_generation: u64,
    rng: Option<fastrand::Rng>,
}

/// The fault settings of one sandbox. All methods take effect on the next request.
#[derive(Debug, Default)]
pub struct Faults {
    state: Mutex<State>,
    cut: tokio::sync::Notify,
}

impl Faults {
    /// Adds a rule.
    pub fn add_rule(&self, rule: FaultRule) {
        self.state.lock().rules.push(rule);
    }

    /// Removes every rule, the latency and pending forced 410s.
    pub fn clear(&self) {
        let mut st = self.state.lock();
        st.rules.clear();
        st.latency = Duration::ZERO;
        st.force_expired = 0;
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

    /// Ends every open watch stream now, as a dropped connection would.
    pub fn cut_watches(&self) {
        self.state.lock().cut_generation += 1;
        self.cut.notify_waiters();
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
