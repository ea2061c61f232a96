//! Which Events are worth an API write: the decisions of client-go's `EventCorrelator`, plus a
//! budget for the whole process. Pure: the clock is an argument, so paused-time tests drive it.
//!
//! For each Event, in order:
//! 1. **Aggregate**: an identical Event (same object, type, reason and note) still waiting to be
//!    written absorbs it — its count grows, no write is added.
//! 2. **Per-object spam filter** (client-go's): a token bucket per object and type, burst 25,
//!    refilled one token per 5 minutes; an empty bucket drops the Event. A key retried with backoff
//!    forever yields 25 Events, then one per 5 minutes.
//! 3. **Global budget**: one token bucket for the process (10/s, burst 100 by default). Normal
//!    Events may not take the last fifth of it, which stays for Warnings: when thousands of objects
//!    change at once, the Events that need attention still get through and the rest are dropped
//!    (and counted) instead of doubling the API traffic.
//!
//! Whether a write is a create or a patch of an earlier identical Event's count (its *series*) is
//! remembered in a bounded cache: [`Correlator::series`].

use std::time::Duration;

use tokio::time::Instant;

use super::lru::Lru;

/// Settings of the correlator.
#[derive(Debug, Clone)]
pub struct CorrelatorConfig {
    /// Per-object bucket size (client-go: 25).
    pub per_object_burst: u32,
    /// One per-object token every this long (client-go: 5 minutes).
    pub per_object_refill: Duration,
    /// Global budget, Events per second (0 disables the budget).
    pub qps: f64,
    /// Global budget, burst.
    pub burst: u32,
    /// Share of the global burst only Warnings may use.
    pub warning_reserve: f64,
    /// Objects and series remembered (client-go: 4096).
    pub cache_size: usize,
}

impl Default for CorrelatorConfig {
    fn default() -> Self {
        Self {
            per_object_burst: 25,
            per_object_refill: Duration::from_secs(300),
            qps: 10.0,
            burst: 100,
            warning_reserve: 0.2,
            cache_size: 4096,
        }
    }
}

/// What an Event is about, and how: two Events with equal keys are the same Event repeated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventKey {
    /// The object: `kind namespace/name uid`.
    pub object: ObjectId,
    /// `Normal` or `Warning`.
    pub warning: bool,
    /// Why.
    pub reason: String,
    /// The message.
    pub note: String,
}

/// An object Events are about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectId {
    /// Its kind.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// The verdict on one Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Queue it for writing.
    Publish,
    /// An identical Event is waiting: counted into it.
    Aggregate,
    /// Not written.
    Drop(DropReason),
}

/// Why an Event was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The object's own bucket is empty (spam filter).
    Spam,
    /// The process's budget is spent.
    Budget,
}

/// A token bucket on the tokio clock.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    burst: f64,
    per_sec: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: f64, per_sec: f64, now: Instant) -> Self {
        Self { tokens: burst, burst, per_sec, at: now }
    }

    /// Takes one token if at least `keep + 1` are there.
    fn take(&mut self, keep: f64, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_sec).min(self.burst);
        self.at = now;
        if self.tokens - 1.0 >= keep - 1e-9 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// An Event written earlier, whose count a repeat patches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// Its name.
    pub name: String,
    /// Its count so far.
    pub count: i32,
}

/// client-go's `EventCorrelator` decisions plus a process-wide budget.
#[derive(Debug)]
pub struct Correlator {
    config: CorrelatorConfig,
    spam: Lru<(ObjectId, bool), Bucket>,
    budget: Bucket,
    series: Lru<EventKey, Series>,
}

impl Correlator {
    /// A correlator with full buckets at `now`.
    #[must_use]
    pub fn new(config: CorrelatorConfig, now: Instant) -> Self {
        Self {
            spam: Lru::new(config.cache_size),
            series: Lru::new(config.cache_size),
            budget: Bucket::full(f64::from(config.burst), config.qps, now),
            config,
        }
    }

    /// Decides about `key`; `pending` says whether an identical Event is waiting to be written.
    pub fn admit(&mut self, key: &EventKey, pending: bool, now: Instant) -> Admit {
        if pending {
            return Admit::Aggregate;
        }
        let (burst, refill) = (f64::from(self.config.per_object_burst), self.config.per_object_refill);
        let spam = self.spam.get_or_insert_with(&(key.object.clone(), key.warning), || {
            Bucket::full(burst, 1.0 / refill.as_secs_f64(), now)
        });
        if !spam.take(0.0, now) {
            return Admit::Drop(DropReason::Spam);
        }
        if self.config.qps > 0.0 {
            let keep =
                if key.warning { 0.0 } else { f64::from(self.config.burst) * self.config.warning_reserve };
            if !self.budget.take(keep, now) {
                return Admit::Drop(DropReason::Budget);
            }
        }
        Admit::Publish
    }

    /// The earlier Event identical to `key`, if it is remembered (then a repeat is a patch).
    pub fn series(&mut self, key: &EventKey) -> Option<Series> {
        self.series.get_mut(key).cloned()
    }

    /// Remembers that `key` was written as `series`.
    pub fn written(&mut self, key: EventKey, series: Series) {
        self.series.insert(key, series);
    }

    /// Forgets `key`'s series (its Event is gone from the server).
    pub fn forget(&mut self, key: &EventKey) {
        self.series.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, warning: bool, note: &str) -> EventKey {
        EventKey {
            object: ObjectId {
                kind: "ConfigMap".into(),
                namespace: "default".into(),
                name: name.into(),
                uid: format!("uid-{name}"),
            },
            warning,
            reason: if warning { "InvalidAnnotation" } else { "Scaled" }.into(),
            note: note.into(),
        }
    }

    fn unlimited() -> CorrelatorConfig {
        CorrelatorConfig { qps: 0.0, ..CorrelatorConfig::default() }
    }

    #[tokio::test(start_paused = true)]
    async fn an_identical_pending_event_is_aggregated() {
        let mut c = Correlator::new(CorrelatorConfig::default(), Instant::now());
        let k = key("web", true, "\"abc\" is not a count");
        assert_eq!(c.admit(&k, false, Instant::now()), Admit::Publish);
        assert_eq!(c.admit(&k, true, Instant::now()), Admit::Aggregate);
    }

    #[tokio::test(start_paused = true)]
    async fn one_object_gets_a_burst_of_25_then_one_per_five_minutes() {
        let mut c = Correlator::new(unlimited(), Instant::now());
        let k = key("web", true, "bad");
        let published = (0..100).filter(|_| c.admit(&k, false, Instant::now()) == Admit::Publish).count();
        assert_eq!(published, 25);
        assert_eq!(c.admit(&k, false, Instant::now()), Admit::Drop(DropReason::Spam));
        tokio::time::advance(Duration::from_secs(299)).await;
        assert_eq!(c.admit(&k, false, Instant::now()), Admit::Drop(DropReason::Spam));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(c.admit(&k, false, Instant::now()), Admit::Publish);
        // Another object, and the same object's other type, have their own buckets.
        assert_eq!(c.admit(&key("api", true, "bad"), false, Instant::now()), Admit::Publish);
        assert_eq!(c.admit(&key("web", false, "ok"), false, Instant::now()), Admit::Publish);
    }

    #[tokio::test(start_paused = true)]
    async fn the_global_budget_keeps_a_share_for_warnings_and_refills() {
        let config = CorrelatorConfig { qps: 10.0, burst: 100, ..CorrelatorConfig::default() };
        let mut c = Correlator::new(config, Instant::now());
        let normals = (0..5000)
            .filter(|i| {
                c.admit(&key(&format!("cm-{i}"), false, "Scaled"), false, Instant::now()) == Admit::Publish
            })
            .count();
        assert_eq!(normals, 80, "a bulk change writes at most the burst less the Warnings' share");
        let warnings = (0..100)
            .filter(|i| {
                c.admit(&key(&format!("bad-{i}"), true, "bad"), false, Instant::now()) == Admit::Publish
            })
            .count();
        assert_eq!(warnings, 20, "Warnings still get through");
        assert_eq!(
            c.admit(&key("late", true, "bad"), false, Instant::now()),
            Admit::Drop(DropReason::Budget)
        );
        // A second later: 10 more tokens, but Normals wait for the reserve to refill first.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            c.admit(&key("one", false, "Scaled"), false, Instant::now()),
            Admit::Drop(DropReason::Budget)
        );
        assert_eq!(c.admit(&key("one", true, "bad"), false, Instant::now()), Admit::Publish);
        // Quiet for a while: a single `kubectl annotate` gets its Scaled Event.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(c.admit(&key("web", false, "Scaled"), false, Instant::now()), Admit::Publish);
    }

    #[tokio::test(start_paused = true)]
    async fn series_are_remembered_within_the_cache_size() {
        let config = CorrelatorConfig { cache_size: 2, ..unlimited() };
        let mut c = Correlator::new(config, Instant::now());
        let (a, b, d) = (key("a", true, "x"), key("b", true, "x"), key("d", true, "x"));
        assert_eq!(c.series(&a), None);
        c.written(a.clone(), Series { name: "a.1".into(), count: 1 });
        c.written(b.clone(), Series { name: "b.1".into(), count: 3 });
        assert_eq!(c.series(&a), Some(Series { name: "a.1".into(), count: 1 }));
        c.written(d, Series { name: "d.1".into(), count: 1 });
        assert_eq!(c.series(&b), None, "evicted: the least recently used");
        c.forget(&a);
        assert_eq!(c.series(&a), None);
    }
}
