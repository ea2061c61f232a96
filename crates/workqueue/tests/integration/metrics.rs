//! Metric values after a scripted sequence, through a recording provider and through Prometheus.

use std::sync::Arc;
use std::time::Duration;

use kube_workqueue::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};
use kube_workqueue::prometheus::{PrometheusMetrics, duration_buckets};
use kube_workqueue::{DelayingQueue, Queue, QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use parking_lot::Mutex;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

/// Records every call as a line, e.g. `q depth +1`.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Metric(Recorder, String);

impl Recorder {
    fn metric(&self, queue: &str, what: &str) -> Metric {
        Metric(self.clone(), format!("{queue} {what}"))
    }
    fn push(&self, line: String) {
        self.0.lock().push(line);
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
}

impl GaugeMetric for Metric {
    fn inc(&self) {
        self.0.push(format!("{} +1", self.1));
    }
    fn dec(&self) {
        self.0.push(format!("{} -1", self.1));
    }
}
impl CounterMetric for Metric {
    fn inc(&self) {
        self.0.push(format!("{} +1", self.1));
    }
}
impl HistogramMetric for Metric {
    fn observe(&self, s: f64) {
        self.0.push(format!("{} {s}", self.1));
    }
}
impl SettableGaugeMetric for Metric {
    fn set(&self, v: f64) {
        self.0.push(format!("{} ={v}", self.1));
    }
}

impl MetricsProvider for Recorder {
    fn depth(&self, n: &str) -> Box<dyn GaugeMetric> {
        Box::new(self.metric(n, "depth"))
    }
    fn adds(&self, n: &str) -> Box<dyn CounterMetric> {
        Box::new(self.metric(n, "adds"))
    }
    fn latency(&self, n: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.metric(n, "latency"))
    }
    fn work_duration(&self, n: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.metric(n, "work"))
    }
    fn unfinished_work_seconds(&self, n: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.metric(n, "unfinished"))
    }
    fn longest_running_processor_seconds(&self, n: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.metric(n, "longest"))
    }
    fn retries(&self, n: &str) -> Box<dyn CounterMetric> {
        Box::new(self.metric(n, "retries"))
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_fire_when_client_go_fires_them() {
    let rec = Recorder::default();
    let q = DelayingQueue::with_config(QueueConfig::named("q").metrics(Arc::new(rec.clone())));

    q.add("a");
    q.add("a"); // merged: no metric
    assert_eq!(rec.take(), ["q adds +1", "q depth +1"]);

    tokio::time::advance(Duration::from_millis(250)).await;
    let item = q.get().await.unwrap();
    assert_eq!(rec.take(), ["q depth -1", "q latency 0.25"]);

    q.add("a"); // dirty again while held: counted as an add and in depth
    assert_eq!(rec.take(), ["q adds +1", "q depth +1"]);
    assert_eq!(q.len(), 0, "but not in len");

    // The unfinished-work gauges tick every 500 ms while the key is held.
    tokio::time::sleep(Duration::from_millis(760)).await;
    let ticks = rec.take();
    assert!(ticks.len() >= 2, "{ticks:?}");
    for pair in ticks.chunks(2) {
        // One key held: the sum of ages and the longest age are the same number.
        let unfinished = pair[0].strip_prefix("q unfinished =").expect("unfinished first");
        assert_eq!(pair[1], format!("q longest ={unfinished}"));
    }
    let last: f64 = ticks[ticks.len() - 2].rsplit('=').next().unwrap().parse().unwrap();
    assert!((0.26..=0.76).contains(&last), "the held key's age was measured: {ticks:?}");

    drop(item);
    assert_eq!(rec.take(), ["q work 0.76"]);

    q.add_after("b", Duration::ZERO);
    q.add_after("c", Duration::from_secs(1));
    assert_eq!(rec.take(), ["q retries +1", "q adds +1", "q depth +1", "q retries +1"]);
}

#[tokio::test(start_paused = true)]
async fn a_finished_key_added_again_is_counted_as_a_new_add() {
    let rec = Recorder::default();
    let q = Queue::with_config(QueueConfig::named("q").metrics(Arc::new(rec.clone())));
    q.add("a");
    q.get().await.unwrap().done();
    rec.take();
    q.add("a"); // finished: a new add, as in client-go
    assert_eq!(rec.take(), ["q adds +1", "q depth +1"]);
    tokio::time::advance(Duration::from_millis(100)).await;
    let item = q.get().await.unwrap();
    assert_eq!(rec.take(), ["q depth -1", "q latency 0.1"]);
    drop(item);
    assert_eq!(rec.take(), ["q work 0"]);
}

#[tokio::test]
async fn an_unnamed_queue_keeps_no_metrics() {
    let rec = Recorder::default();
    let q = Queue::with_config(QueueConfig { name: None, metrics: Some(Arc::new(rec.clone())) });
    q.add(1);
    drop(q.get().await);
    assert!(rec.take().is_empty());
}

#[tokio::test(start_paused = true)]
async fn prometheus_text_has_client_go_names_labels_and_buckets() {
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetrics::register(&mut registry));
    let q = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::named("configmaps").metrics(provider.clone()),
    );
    let other = Queue::with_config(QueueConfig::named("deployments").metrics(provider));

    q.add("default/a".to_string());
    q.add("default/b".to_string());
    other.add("x".to_string());
    tokio::time::advance(Duration::from_millis(3)).await;
    let a = q.get().await.unwrap();
    tokio::time::advance(Duration::from_millis(20)).await;
    q.add_rate_limited(a.key().clone());
    q.add_rate_limited(a.key().clone());
    drop(a);

    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        "# TYPE workqueue_depth gauge",
        r#"workqueue_depth{name="configmaps"} 1"#,
        r#"workqueue_depth{name="deployments"} 1"#,
        "# TYPE workqueue_adds counter",
        r#"workqueue_adds_total{name="configmaps"} 2"#,
        r#"workqueue_retries_total{name="configmaps"} 2"#,
        "# TYPE workqueue_queue_duration_seconds histogram",
        r#"workqueue_queue_duration_seconds_count{name="configmaps"} 1"#,
        r#"workqueue_queue_duration_seconds_sum{name="configmaps"} 0.003"#,
        r#"workqueue_work_duration_seconds_sum{name="configmaps"} 0.02"#,
        "# TYPE workqueue_unfinished_work_seconds gauge",
        "# TYPE workqueue_longest_running_processor_seconds gauge",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    // Ten finite buckets, 1e-8 to 10, plus +Inf.
    let buckets: Vec<_> = text
        .lines()
        .filter(|l| {
            l.starts_with(r#"workqueue_work_duration_seconds_bucket{le="#) && l.contains("configmaps")
        })
        .collect();
    assert_eq!(buckets.len(), 11, "{buckets:?}");
    assert!(buckets[10].contains("+Inf"));
}

#[test]
fn buckets_are_computed_the_way_go_computes_them() {
    let b = duration_buckets();
    assert_eq!(b.len(), 10);
    assert_eq!(b[0], 1e-8);
    assert_eq!(b[3], 9.999999999999999e-6, "repeated multiplication, not a decimal literal");
    assert_eq!(b[9], 10.0);
}
