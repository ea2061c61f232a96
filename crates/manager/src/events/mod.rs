//! Events that help people and cost little.
//!
//! `kubectl describe cm web` shows what a controller did, but Events must neither slow the
//! reconciles nor double the API traffic when thousands of objects change at once:
//!
//! * [`EventRecorder::publish`] never waits: it decides (the [`correlator`]: aggregate identical
//!   Events still waiting, a per-object spam filter, a process-wide budget with a share kept for
//!   Warnings) and queues; anything not written is counted, never silently lost.
//! * A few writers publish concurrently ([`EventConfig::in_flight`]), Warnings first, so Events do
//!   not trail convergence.
//! * A repeat of an Event already written patches its `series.count` instead of creating another
//!   (the bounded series cache is the recorder's only per-object memory).
//! * [`EventRecorder::close`] flushes for at most [`EventConfig::flush`] and drops the rest, so a
//!   SIGTERM is not held up by a backlog.
//! * `<controller>_events_total{type,result}` counts `published`, `aggregated`, `dropped`
//!   (`counter_controller_events_total` for the counter-controller: the reporter's controller
//!   name, `-` as `_`).
//!
//! Events are `events.k8s.io/v1` objects in the regarding object's namespace, named
//! `<object>.<hex nanoseconds>` as client-go names them.

pub mod correlator;
pub mod lru;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{EventType, Reporter};
use kube::{Client, ResourceExt};
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;

use correlator::{Admit, Correlator, CorrelatorConfig, EventKey, ObjectId, Series};

/// Which Events are published (`--events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EventsMode {
    /// Normal and Warning.
    #[default]
    All,
    /// Warnings only (for big clusters).
    Warnings,
    /// None.
    None,
}

/// Settings of the recorder.
#[derive(Debug, Clone)]
pub struct EventConfig {
    /// Which Events.
    pub mode: EventsMode,
    /// Writes in flight at once.
    pub in_flight: usize,
    /// Events waiting to be written at most (client-go: 1000); beyond, they are dropped.
    pub max_pending: usize,
    /// How long [`EventRecorder::close`] waits for the queue to drain.
    pub flush: Duration,
    /// The correlator's buckets and caches.
    pub correlator: CorrelatorConfig,
}

impl Default for EventConfig {
    fn default() -> Self {
        Self {
            mode: EventsMode::All,
            in_flight: 4,
            max_pending: 1000,
            flush: Duration::from_millis(500),
            correlator: CorrelatorConfig::default(),
        }
    }
}

/// One Event waiting to be written.
struct Pending {
    regarding: ObjectReference,
    /// How many identical Events it stands for.
    count: i32,
    at: jiff::Timestamp,
}

struct State {
    correlator: Correlator,
    pending: HashMap<EventKey, Pending>,
    warnings: VecDeque<EventKey>,
    normals: VecDeque<EventKey>,
    /// Events being written now, by type (Normal, Warning): counted as dropped if cut short.
    in_flight: [u64; 2],
    closed: bool,
}

impl State {
    fn next(&mut self) -> Option<(EventKey, Pending)> {
        let key = self.warnings.pop_front().or_else(|| self.normals.pop_front())?;
        let p = self.pending.remove(&key)?;
        Some((key, p))
    }
}

struct Inner {
    client: Client,
    reporter: Reporter,
    config: EventConfig,
    state: Mutex<State>,
    wake: Notify,
    metrics: Family<Vec<(String, String)>, Counter>,
}

impl Inner {
    fn count(&self, warning: bool, result: &str, n: u64) {
        let ty = if warning { "Warning" } else { "Normal" };
        self.metrics
            .get_or_create(&vec![("type".into(), ty.into()), ("result".into(), result.into())])
            .inc_by(n);
    }
}

/// A non-blocking Event recorder with client-go's correlator and a process-wide budget.
pub struct EventRecorder {
    inner: Arc<Inner>,
    writers: Mutex<Option<JoinSet<()>>>,
}

impl EventRecorder {
    /// Starts the writers. Registers `<controller>_events_total` in `registry`, named after
    /// the reporter's controller (`my-controller` counts into `my_controller_events_total`).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, like `tokio::spawn`.
    #[must_use]
    pub fn new(client: Client, reporter: Reporter, config: EventConfig, registry: &mut Registry) -> Self {
        let prefix: String =
            reporter.controller.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        Self::with_prefix(&prefix, client, reporter, config, registry)
    }

    /// As [`new`](Self::new), counting into `<prefix>_events_total`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, like `tokio::spawn`.
    #[must_use]
    pub fn with_prefix(
        prefix: &str,
        client: Client,
        reporter: Reporter,
        config: EventConfig,
        registry: &mut Registry,
    ) -> Self {
        let metrics = Family::<Vec<(String, String)>, Counter>::default();
        registry.register(
            format!("{prefix}_events"),
            "Events by type and result: published, aggregated into a waiting Event, or dropped",
            metrics.clone(),
        );
        let inner = Arc::new(Inner {
            client,
            reporter,
            state: Mutex::new(State {
                correlator: Correlator::new(config.correlator.clone(), Instant::now()),
                pending: HashMap::new(),
                warnings: VecDeque::new(),
                normals: VecDeque::new(),
                in_flight: [0, 0],
                closed: false,
            }),
            wake: Notify::new(),
            metrics,
            config,
        });
        for warning in [false, true] {
            for result in ["published", "aggregated", "dropped"] {
                inner.count(warning, result, 0);
            }
        }
        let mut writers = JoinSet::new();
        for _ in 0..inner.config.in_flight.max(1) {
            writers.spawn(writer(Arc::clone(&inner)));
        }
        Self { inner, writers: Mutex::new(Some(writers)) }
    }

    /// Records an Event about `regarding`; never waits.
    pub fn publish(&self, regarding: &ObjectReference, type_: EventType, reason: &str, note: String) {
        let warning = type_ == EventType::Warning;
        let mode = self.inner.config.mode;
        if mode == EventsMode::None || (mode == EventsMode::Warnings && !warning) {
            return;
        }
        let key = EventKey {
            object: ObjectId {
                kind: regarding.kind.clone().unwrap_or_default(),
                namespace: regarding.namespace.clone().unwrap_or_default(),
                name: regarding.name.clone().unwrap_or_default(),
                uid: regarding.uid.clone().unwrap_or_default(),
            },
            warning,
            reason: reason.to_owned(),
            note,
        };
        let verdict = {
            let mut st = self.inner.state.lock();
            let st = &mut *st;
            if st.closed {
                Admit::Drop(correlator::DropReason::Budget)
            } else {
                let waiting = st.pending.contains_key(&key);
                match st.correlator.admit(&key, waiting, Instant::now()) {
                    Admit::Aggregate => {
                        if let Some(p) = st.pending.get_mut(&key) {
                            p.count += 1;
                            p.at = jiff::Timestamp::now();
                        }
                        Admit::Aggregate
                    }
                    Admit::Publish if st.pending.len() >= self.inner.config.max_pending => {
                        Admit::Drop(correlator::DropReason::Budget)
                    }
                    Admit::Publish => {
                        let p =
                            Pending { regarding: regarding.clone(), count: 1, at: jiff::Timestamp::now() };
                        if warning {
                            st.warnings.push_back(key.clone())
                        } else {
                            st.normals.push_back(key.clone())
                        }
                        st.pending.insert(key, p);
                        Admit::Publish
                    }
                    drop @ Admit::Drop(_) => drop,
                }
            }
        };
        match verdict {
            Admit::Publish => self.inner.wake.notify_one(),
            Admit::Aggregate => self.inner.count(warning, "aggregated", 1),
            Admit::Drop(why) => {
                tracing::debug!(reason, ?why, "Event dropped");
                self.inner.count(warning, "dropped", 1);
            }
        }
    }

    /// How many Events wait to be written.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.inner.state.lock().pending.len()
    }

    /// Stops taking Events, waits at most [`EventConfig::flush`] for the waiting ones to be
    /// written, then drops (and counts) what is left.
    pub async fn close(&self) {
        self.inner.state.lock().closed = true;
        self.inner.wake.notify_waiters();
        let Some(mut writers) = self.writers.lock().take() else { return };
        let drained = tokio::time::timeout(self.inner.config.flush, async {
            while writers.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            writers.abort_all();
            while writers.join_next().await.is_some() {}
            let mut st = self.inner.state.lock();
            let [mut normals, mut warnings] = std::mem::take(&mut st.in_flight);
            let left: Vec<(EventKey, Pending)> = std::iter::from_fn(|| st.next()).collect();
            drop(st);
            for (k, p) in left {
                let n = u64::try_from(p.count).unwrap_or(1);
                if k.warning { warnings += n } else { normals += n }
            }
            self.inner.count(true, "dropped", warnings);
            self.inner.count(false, "dropped", normals);
            if warnings + normals > 0 {
                tracing::warn!(warnings, normals, flush = ?self.inner.config.flush, "Events not written before shutdown: dropped");
            }
        }
    }
}

/// Writes waiting Events, Warnings first, until closed and empty.
async fn writer(inner: Arc<Inner>) {
    loop {
        // Registered before looking, so a publish or close in between is not missed.
        let notified = inner.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let next = {
            let mut st = inner.state.lock();
            match st.next() {
                Some((key, p)) => {
                    st.in_flight[usize::from(key.warning)] += u64::try_from(p.count).unwrap_or(1);
                    Some((key, p))
                }
                None if st.closed => return,
                None => None,
            }
        };
        match next {
            Some((key, pending)) => write(&inner, key, pending).await,
            None => notified.await,
        }
    }
}

/// One create, or one patch of an earlier identical Event's count.
async fn write(inner: &Inner, key: EventKey, p: Pending) {
    let ns = p.regarding.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
    let api: Api<K8sEvent> = Api::namespaced(inner.client.clone(), &ns);
    let earlier = inner.state.lock().correlator.series(&key);
    let result = match earlier {
        Some(series) => {
            let count = series.count + p.count;
            let patch =
                serde_json::json!({ "series": { "count": count, "lastObservedTime": MicroTime(p.at) } });
            match api.patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => Ok(Series { name: series.name, count }),
                // Gone from the server (Events expire): write it anew.
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    inner.state.lock().correlator.forget(&key);
                    create(inner, &api, &key, &p).await
                }
                Err(e) => Err(e),
            }
        }
        None => create(inner, &api, &key, &p).await,
    };
    // Counted and taken off the in-flight tally in one step (no await between), so a write cut
    // short by `close` is counted exactly once.
    let n = u64::try_from(p.count).unwrap_or(1);
    let mut st = inner.state.lock();
    st.in_flight[usize::from(key.warning)] -= n;
    match result {
        Ok(series) => {
            inner.count(key.warning, "published", n);
            st.correlator.written(key, series);
        }
        Err(e) => {
            inner.count(key.warning, "dropped", n);
            drop(st);
            if kube_lease_election::is_fenced(&e) {
                tracing::debug!(reason = key.reason, "Event withheld: {e}");
            } else {
                tracing::warn!(reason = key.reason, error = %e, "could not publish Event");
            }
        }
    }
}

async fn create(
    inner: &Inner,
    api: &Api<K8sEvent>,
    key: &EventKey,
    p: &Pending,
) -> Result<Series, kube::Error> {
    let name = format!("{}.{:x}", key.object.name, p.at.as_nanosecond());
    let ev = K8sEvent {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: p.regarding.namespace.clone(),
            ..ObjectMeta::default()
        },
        action: Some(key.reason.clone()),
        reason: Some(key.reason.clone()),
        note: Some(key.note.clone()),
        type_: Some(if key.warning { "Warning" } else { "Normal" }.into()),
        event_time: Some(MicroTime(p.at)),
        regarding: Some(p.regarding.clone()),
        reporting_controller: Some(inner.reporter.controller.clone()),
        reporting_instance: Some(
            inner.reporter.instance.clone().unwrap_or_else(|| inner.reporter.controller.clone()),
        ),
        series: (p.count > 1).then_some(EventSeries { count: p.count, last_observed_time: MicroTime(p.at) }),
        ..K8sEvent::default()
    };
    let created = api.create(&PostParams::default(), &ev).await?;
    Ok(Series { name: created.name_any(), count: p.count })
}
