//! Faults of the simulated container runtime: a container that crashes some time after each
//! start, a probe that fails, an exec that hangs. The kubelets and the runtime look the rules up
//! as containers start, probes run and execs begin; adding or removing one wakes the kubelets,
//! so a rule takes effect on containers already running.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::selector::LabelSelector;
use crate::status::ApiError;

/// One of a container's probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Probe {
    /// `startupProbe`: until it succeeds the other probes wait; when it fails the container is
    /// killed.
    Startup,
    /// `livenessProbe`: when it fails the container is killed (and restarted, as its pod's
    /// restart policy says).
    Liveness,
    /// `readinessProbe`: the container is ready while it succeeds.
    Readiness,
}

impl Probe {
    /// The probe's name as the kubelet writes it in events: `Startup`, `Liveness`, `Readiness`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Startup => "Startup",
            Self::Liveness => "Liveness",
            Self::Readiness => "Readiness",
        }
    }

    /// The field of a container's spec that declares it.
    #[must_use]
    pub fn field(self) -> &'static str {
        match self {
            Self::Startup => "startupProbe",
            Self::Liveness => "livenessProbe",
            Self::Readiness => "readinessProbe",
        }
    }
}

/// What goes wrong in a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerFault {
    /// Each run of the container exits with `code` once it has run `after` on the sandbox's
    /// clock — a run already longer than that exits at once. Under `restartPolicy: Always` the
    /// container restarts, then backs off (`CrashLoopBackOff`), as any container that keeps
    /// exiting.
    CrashAfter {
        /// How long each run lasts.
        after: Duration,
        /// Its exit code.
        code: i32,
    },
    /// The probe fails every time it runs, with the output a failing probe of its kind gives
    /// (an HTTP probe's `HTTP probe failed with statuscode: 503`, an exec probe's empty output).
    ProbeFails(Probe),
    /// Every exec in the container — `kubectl exec`, an exec probe — hangs: it writes nothing
    /// and never exits. A probe gives up after its `timeoutSeconds`; a client, when it closes
    /// the connection.
    ExecHangs,
}

/// Which containers a [`ContainerFault`] strikes: those of a namespace, narrowed to one pod, to
/// pods a label selector picks and to one container name.
///
/// ```
/// use std::time::Duration;
/// use kube_sandbox::{ContainerFault, ContainerFaultRule, Probe};
///
/// // Every container of the pods labelled app=web crashes 30 s into each run.
/// let crash = ContainerFaultRule::new("default", ContainerFault::CrashAfter { after: Duration::from_secs(30), code: 1 })
///     .selector("app=web")
///     .unwrap();
/// // The liveness probe of container `nginx` of pod `web-0` fails.
/// let sick = ContainerFaultRule::new("default", ContainerFault::ProbeFails(Probe::Liveness))
///     .pod("web-0")
///     .container("nginx");
/// # let _ = (crash, sick);
/// ```
#[derive(Debug, Clone)]
pub struct ContainerFaultRule {
    /// The pods' namespace.
    pub namespace: String,
    /// One pod, by name; `None`: every pod the selector picks.
    pub pod: Option<String>,
    /// The pods' labels must match it; empty: every pod.
    pub selector: LabelSelector,
    /// One container, by name; `None`: every container of the pods.
    pub container: Option<String>,
    /// What goes wrong.
    pub fault: ContainerFault,
}

impl ContainerFaultRule {
    /// `fault` in every container of every pod of `namespace`.
    #[must_use]
    pub fn new(namespace: &str, fault: ContainerFault) -> Self {
        Self {
            namespace: namespace.to_owned(),
            pod: None,
            selector: LabelSelector::default(),
            container: None,
            fault,
        }
    }

    /// Only in pod `name`.
    #[must_use]
    pub fn pod(mut self, name: &str) -> Self {
        self.pod = Some(name.to_owned());
        self
    }

    /// Only in the pods whose labels match `selector` (`app=web`, `tier in (db)`).
    ///
    /// # Errors
    ///
    /// A selector that does not parse, in upstream's words.
    pub fn selector(mut self, selector: &str) -> Result<Self, ApiError> {
        self.selector = LabelSelector::parse(selector)?;
        Ok(self)
    }

    /// Only in container `name`.
    #[must_use]
    pub fn container(mut self, name: &str) -> Self {
        self.container = Some(name.to_owned());
        self
    }

    fn strikes(&self, at: &Target<'_>) -> bool {
        self.namespace == at.namespace
            && self.pod.as_deref().is_none_or(|p| p == at.pod)
            && self.container.as_deref().is_none_or(|c| c == at.container)
            && (self.selector.is_empty() || self.selector.matches_labels(at.labels))
    }
}

/// A container a rule may strike: where it is and its pod's labels.
pub(crate) struct Target<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) pod: &'a str,
    pub(crate) container: &'a str,
    pub(crate) labels: &'a BTreeMap<String, String>,
}

/// The runtime's fault rules, shared by the fault API, the runtime and the kubelets.
#[derive(Debug, Default)]
pub(crate) struct ContainerFaults {
    rules: Mutex<Vec<ContainerFaultRule>>,
    /// Counts the changes to the rules, so the kubelets look at their pods again after one.
    generation: AtomicU64,
    /// Woken on a change.
    pub(crate) changed: tokio::sync::Notify,
}

impl ContainerFaults {
    pub(crate) fn add(&self, rule: ContainerFaultRule) {
        self.rules.lock().push(rule);
        self.changed_now();
    }

    pub(crate) fn clear(&self) {
        let had = !std::mem::take(&mut *self.rules.lock()).is_empty();
        if had {
            self.changed_now();
        }
    }

    fn changed_now(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_waiters();
    }

    /// How many times the rules changed.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// Whether there is no rule: nothing to look up.
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.lock().is_empty()
    }

    /// The first fault that strikes `at` and `wanted` picks.
    pub(crate) fn find<T>(
        &self,
        at: &Target<'_>,
        wanted: impl Fn(&ContainerFault) -> Option<T>,
    ) -> Option<T> {
        self.rules.lock().iter().filter(|r| r.strikes(at)).find_map(|r| wanted(&r.fault))
    }

    /// How long each run of the container lasts, and its exit code, when a rule crashes it.
    pub(crate) fn crash_after(&self, at: &Target<'_>) -> Option<(Duration, i32)> {
        self.find(at, |f| match *f {
            ContainerFault::CrashAfter { after, code } => Some((after, code)),
            _ => None,
        })
    }

    /// Whether a rule makes the container's `probe` fail.
    pub(crate) fn probe_fails(&self, at: &Target<'_>, probe: Probe) -> bool {
        self.find(at, |f| (*f == ContainerFault::ProbeFails(probe)).then_some(())).is_some()
    }

    /// Whether a rule makes the container's execs hang.
    pub(crate) fn exec_hangs(&self, at: &Target<'_>) -> bool {
        self.find(at, |f| (*f == ContainerFault::ExecHangs).then_some(())).is_some()
    }
}

/// A pod's `metadata.labels`, as the rules match them.
pub(crate) fn labels_of(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(Map::iter)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}
