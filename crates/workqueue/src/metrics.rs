//! Metrics hooks: the seven measurements client-go's workqueue keeps.
//!
//! A [`MetricsProvider`] makes one metric of each kind per named queue; the queue calls them under
//! its lock at the moments client-go does:
//!
//! | metric | kind | updated when |
//! |---|---|---|
//! | depth | gauge | +1 when a key newly becomes dirty, −1 when a worker takes it |
//! | adds | counter | a key newly becomes dirty |
//! | latency (queue duration) | histogram | a worker takes a key: seconds since it became dirty |
//! | work duration | histogram | a worker releases a key: seconds it held it |
//! | unfinished work | settable gauge | every 500 ms: sum of the ages of all held keys |
//! | longest running processor | settable gauge | every 500 ms: the oldest held key's age |
//! | retries | counter | every `add_after` (and so every `add_rate_limited`), even with zero delay |
//!
//! `depth` counts dirty keys, including ones re-added while held; [`Queue::len`](crate::Queue::len)
//! does not, so the two can differ.
//!
//! The Prometheus implementation is in [`crate::prometheus`]; implement the trait yourself to send
//! the same signals elsewhere.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::time::Instant;

use crate::queue::Key;

/// A gauge that moves by one.
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge that is set to a value.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A histogram of durations, in seconds.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, seconds: f64);
}

/// Makes the metrics of one named queue (client-go's `MetricsProvider`).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use kube_workqueue::metrics::*;
///
/// /// Counts adds across all queues; ignores the rest.
/// #[derive(Default)]
/// struct CountAdds(Arc<AtomicU64>);
/// struct Adds(Arc<AtomicU64>);
/// impl CounterMetric for Adds { fn inc(&self) { self.0.fetch_add(1, Ordering::Relaxed); } }
///
/// impl MetricsProvider for CountAdds {
///     fn adds(&self, _name: &str) -> Box<dyn CounterMetric> { Box::new(Adds(self.0.clone())) }
///     fn depth(&self, _: &str) -> Box<dyn GaugeMetric> { Box::new(Noop) }
///     fn latency(&self, _: &str) -> Box<dyn HistogramMetric> { Box::new(Noop) }
///     fn work_duration(&self, _: &str) -> Box<dyn HistogramMetric> { Box::new(Noop) }
///     fn unfinished_work_seconds(&self, _: &str) -> Box<dyn SettableGaugeMetric> { Box::new(Noop) }
///     fn longest_running_processor_seconds(&self, _: &str) -> Box<dyn SettableGaugeMetric> { Box::new(Noop) }
///     fn retries(&self, _: &str) -> Box<dyn CounterMetric> { Box::new(Noop) }
/// }
/// ```
pub trait MetricsProvider: Send + Sync {
    /// `workqueue_depth`.
    fn depth(&self, name: &str) -> Box<dyn GaugeMetric>;
    /// `workqueue_adds_total`.
    fn adds(&self, name: &str) -> Box<dyn CounterMetric>;
    /// `workqueue_queue_duration_seconds`.
    fn latency(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_work_duration_seconds`.
    fn work_duration(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_unfinished_work_seconds`.
    fn unfinished_work_seconds(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_longest_running_processor_seconds`.
    fn longest_running_processor_seconds(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_retries_total`.
    fn retries(&self, name: &str) -> Box<dyn CounterMetric>;
}

/// A metric that records nothing, for providers that keep only some of the seven.
#[derive(Debug, Clone, Copy, Default)]
pub struct Noop;

impl GaugeMetric for Noop {
    fn inc(&self) {}
    fn dec(&self) {}
}
impl SettableGaugeMetric for Noop {
    fn set(&self, _: f64) {}
}
impl CounterMetric for Noop {
    fn inc(&self) {}
}
impl HistogramMetric for Noop {
    fn observe(&self, _: f64) {}
}

impl<P: MetricsProvider + ?Sized> MetricsProvider for Arc<P> {
    fn depth(&self, name: &str) -> Box<dyn GaugeMetric> {
        (**self).depth(name)
    }
    fn adds(&self, name: &str) -> Box<dyn CounterMetric> {
        (**self).adds(name)
    }
    fn latency(&self, name: &str) -> Box<dyn HistogramMetric> {
        (**self).latency(name)
    }
    fn work_duration(&self, name: &str) -> Box<dyn HistogramMetric> {
        (**self).work_duration(name)
    }
    fn unfinished_work_seconds(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        (**self).unfinished_work_seconds(name)
    }
    fn longest_running_processor_seconds(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        (**self).longest_running_processor_seconds(name)
    }
    fn retries(&self, name: &str) -> Box<dyn CounterMetric> {
        (**self).retries(name)
    }
}

/// One queue's metrics plus the timestamps they need; lives inside the queue's lock.
pub(crate) struct QueueMetrics<T> {
    depth: Box<dyn GaugeMetric>,
    adds: Box<dyn CounterMetric>,
    latency: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished_work: Box<dyn SettableGaugeMetric>,
    longest_running: Box<dyn SettableGaugeMetric>,
    retries: Box<dyn CounterMetric>,
    added_at: HashMap<T, Instant>,
    started_at: HashMap<T, Instant>,
}

impl<T: Key> QueueMetrics<T> {
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        Self {
            depth: provider.depth(name),
            adds: provider.adds(name),
            latency: provider.latency(name),
            work_duration: provider.work_duration(name),
            unfinished_work: provider.unfinished_work_seconds(name),
            longest_running: provider.longest_running_processor_seconds(name),
            retries: provider.retries(name),
            added_at: HashMap::new(),
            started_at: HashMap::new(),
        }
    }

    /// A key newly became dirty.
    pub(crate) fn add(&mut self, key: &T) {
        self.adds.inc();
        self.depth.inc();
        self.added_at.entry(key.clone()).or_insert_with(Instant::now);
    }

    /// A worker took a key.
    pub(crate) fn get(&mut self, key: &T) {
        let now = Instant::now();
        self.depth.dec();
        self.started_at.insert(key.clone(), now);
        if let Some(added) = self.added_at.remove(key) {
            self.latency.observe((now - added).as_secs_f64());
        }
    }

    /// A worker released a key.
    pub(crate) fn done(&mut self, key: &T) {
        if let Some(started) = self.started_at.remove(key) {
            self.work_duration.observe(started.elapsed().as_secs_f64());
        }
    }

    pub(crate) fn retry(&mut self) {
        self.retries.inc();
    }

    pub(crate) fn update_unfinished_work(&mut self, now: Instant) {
        let (total, longest) = self.started_at.values().fold((0.0, 0.0_f64), |(sum, max), start| {
            let age = (now - *start).as_secs_f64();
            (sum + age, max.max(age))
        });
        self.unfinished_work.set(total);
        self.longest_running.set(longest);
    }
}
