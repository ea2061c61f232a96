//! Prometheus export of the queue metrics, with the names, label and buckets client-go's
//! `component-base` registers, so existing workqueue dashboards and alerts work unchanged.
//!
//! | metric | type | buckets |
//! |---|---|---|
//! | `workqueue_depth` | gauge | |
//! | `workqueue_adds_total` | counter | |
//! | `workqueue_queue_duration_seconds` | histogram | 1e-8 … 10, ×10 |
//! | `workqueue_work_duration_seconds` | histogram | 1e-8 … 10, ×10 |
//! | `workqueue_unfinished_work_seconds` | gauge | |
//! | `workqueue_longest_running_processor_seconds` | gauge | |
//! | `workqueue_retries_total` | counter | |
//!
//! Every metric has one label, `name`: the queue's name.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::metrics::{CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric};

/// The label every workqueue metric carries.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    /// The queue's name.
    pub name: String,
}

type HistogramFamily = Family<QueueLabel, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// The histogram bucket bounds client-go uses: `ExponentialBuckets(10e-9, 10, 10)`.
///
/// Computed by repeated multiplication, as Go does, so the bounds are bit-for-bit the same
/// (`9.999999999999999e-06`, not `1e-05`).
#[must_use]
pub fn duration_buckets() -> Vec<f64> {
    std::iter::successors(Some(10e-9_f64), |b| Some(b * 10.0)).take(10).collect()
}

fn duration_histogram() -> Histogram {
    Histogram::new(duration_buckets())
}

/// A [`MetricsProvider`] that registers the seven `workqueue_*` families in a Prometheus registry.
///
/// One provider serves any number of queues; each queue's name becomes its `name` label.
///
/// ```
/// use std::sync::Arc;
/// use prometheus_client::{encoding::text::encode, registry::Registry};
/// use kube_workqueue::{Queue, QueueConfig, prometheus::PrometheusMetrics};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut registry = Registry::default();
/// let metrics = Arc::new(PrometheusMetrics::register(&mut registry));
/// let queue = Queue::with_config(QueueConfig::named("configmaps").metrics(metrics));
/// queue.add("default/web");
///
/// let mut text = String::new();
/// encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"workqueue_adds_total{name="configmaps"} 1"#));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct PrometheusMetrics {
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueLabel, FloatGauge>,
    longest_running: Family<QueueLabel, FloatGauge>,
    retries: Family<QueueLabel, Counter>,
}

impl PrometheusMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
        };
        registry.register("workqueue_depth", "Current depth of workqueue", m.depth.clone());
        registry.register("workqueue_adds", "Total number of adds handled by workqueue", m.adds.clone());
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            m.latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            m.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by \
             work_duration. Large values indicate stuck threads. One can deduce the number of stuck \
             threads by observing the rate at which this increases.",
            m.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            m.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            m.retries.clone(),
        );
        m
    }
}

fn label(name: &str) -> QueueLabel {
    QueueLabel { name: name.to_owned() }
}

impl GaugeMetric for Gauge {
    fn inc(&self) {
        Gauge::inc(self);
    }
    fn dec(&self) {
        Gauge::dec(self);
    }
}

impl SettableGaugeMetric for FloatGauge {
    fn set(&self, value: f64) {
        Gauge::set(self, value);
    }
}

impl CounterMetric for Counter {
    fn inc(&self) {
        Counter::inc(self);
    }
}

impl HistogramMetric for Histogram {
    fn observe(&self, seconds: f64) {
        Histogram::observe(self, seconds);
    }
}

impl MetricsProvider for PrometheusMetrics {
    fn depth(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(self.depth.get_or_create(&label(name)).clone())
    }
    fn adds(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.adds.get_or_create(&label(name)).clone())
    }
    fn latency(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.latency.get_or_create(&label(name)).clone())
    }
    fn work_duration(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.work_duration.get_or_create(&label(name)).clone())
    }
    fn unfinished_work_seconds(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.unfinished_work.get_or_create(&label(name)).clone())
    }
    fn longest_running_processor_seconds(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.longest_running.get_or_create(&label(name)).clone())
    }
    fn retries(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.retries.get_or_create(&label(name)).clone())
    }
}
