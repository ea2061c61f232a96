//! The metric families of a coordinated controller, named as the dashboards people already
//! have expect them: controller-runtime's `controller_runtime_reconcile_total{controller,result}`
//! (`success`, `error`, `requeue`), `controller_runtime_reconcile_errors_total{controller}`,
//! `controller_runtime_reconcile_time_seconds{controller}`, `controller_runtime_active_workers`
//! and `controller_runtime_max_concurrent_reconciles`; and, under the controller's own prefix,
//! sharding's ([`ShardMetrics`]), refused writes' ([`WriteMetrics`]) and the reads of a primary
//! its cache could not vouch for ([`FreshnessMetrics`]).

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

/// controller-runtime's reconcile-time buckets, in seconds.
const RECONCILE_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
    1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0,
    50.0, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

/// How one reconcile ended, as controller-runtime labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Converged (or nothing to do).
    Success,
    /// Failed; retried with backoff.
    Error,
    /// Not done and not failed (a write withheld because this replica stopped leading).
    Requeue,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Requeue => "requeue",
        }
    }
}

/// controller-runtime's reconcile metrics for one controller.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    name: String,
    total: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    time: Family<Labels, Histogram, fn() -> Histogram>,
    active: Family<Labels, Gauge>,
    max: Family<Labels, Gauge>,
}

impl ControllerMetrics {
    /// Registers the families for controller `name`, which runs `workers` concurrent reconciles.
    pub fn register(registry: &mut Registry, name: &str, workers: usize) -> Self {
        let m = Self {
            name: name.to_owned(),
            total: Family::default(),
            errors: Family::default(),
            time: Family::new_with_constructor(reconcile_histogram),
            active: Family::default(),
            max: Family::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            m.total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            m.errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            m.time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            m.active.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            m.max.clone(),
        );
        let c = m.controller();
        m.max.get_or_create(&c).set(i64::try_from(workers).unwrap_or(i64::MAX));
        m.active.get_or_create(&c).set(0);
        let _ = m.errors.get_or_create(&c);
        for o in [Outcome::Success, Outcome::Error, Outcome::Requeue] {
            let _ = m.total.get_or_create(&m.with_result(o));
        }
        m
    }

    fn controller(&self) -> Labels {
        vec![("controller".into(), self.name.clone())]
    }

    fn with_result(&self, o: Outcome) -> Labels {
        vec![("controller".into(), self.name.clone()), ("result".into(), o.label().into())]
    }

    /// A worker starts a reconcile.
    pub fn started(&self) {
        self.active.get_or_create(&self.controller()).inc();
    }

    /// A worker finished a reconcile that took `took`.
    pub fn finished(&self, outcome: Outcome, took: Duration) {
        let c = self.controller();
        self.active.get_or_create(&c).dec();
        self.time.get_or_create(&c).observe(took.as_secs_f64());
        self.total.get_or_create(&self.with_result(outcome)).inc();
        if outcome == Outcome::Error {
            self.errors.get_or_create(&c).inc();
        }
    }
}

/// Sharding's figures (all zero without sharding), under the controller's prefix:
/// `<prefix>_shard_keys{shard}` (the keys this replica may work on), `<prefix>_shard_members`,
/// `<prefix>_shard_cached_objects{kind}`, `<prefix>_shard_filtered_objects_total{kind}`,
/// `<prefix>_shard_server_filtered`, `<prefix>_shard_handovers_total` (member-set changes seen)
/// and `<prefix>_shard_keys_moved_total` (keys that came to or left this replica).
#[derive(Clone, Debug, Default)]
pub struct ShardMetrics {
    keys: Family<Labels, Gauge>,
    cached: Family<Labels, Gauge>,
    turned_away: Family<Labels, Counter>,
    server_filtered: Gauge,
    members: Gauge,
    handovers: Counter,
    moved: Counter,
}

impl ShardMetrics {
    /// Registers the families under `prefix` (`counter_controller`).
    pub fn register(registry: &mut Registry, prefix: &str) -> Self {
        let m = Self::default();
        let name = |suffix: &str| format!("{prefix}_{suffix}");
        registry.register(name("shard_keys"), "Keys this replica may work on", m.keys.clone());
        registry.register(name("shard_members"), "Live members of the shard ring", m.members.clone());
        registry.register(
            name("shard_cached_objects"),
            "Objects in this replica's caches, which hold only its keys",
            m.cached.clone(),
        );
        registry.register(
            name("shard_filtered_objects"),
            "Objects received from the API server that belong to another replica, dropped by this one's filter (few when the server filters)",
            m.turned_away.clone(),
        );
        registry.register(
            name("shard_server_filtered"),
            "1 when the API server filters lists and watches to this replica's share (KEP-5866 shardSelector)",
            m.server_filtered.clone(),
        );
        registry.register(
            name("shard_handovers"),
            "Changes of the ring's member set this replica has seen",
            m.handovers.clone(),
        );
        registry.register(
            name("shard_keys_moved"),
            "Keys that came to or left this replica with a change of the member set",
            m.moved.clone(),
        );
        m
    }

    /// Records how many keys `shard` (this replica) may work on.
    pub fn workable(&self, shard: &str, keys: usize) {
        self.keys
            .get_or_create(&vec![("shard".into(), shard.into())])
            .set(i64::try_from(keys).unwrap_or(i64::MAX));
    }

    /// Records how many objects of `kind` the caches hold.
    pub fn cached(&self, kind: &str, n: usize) {
        self.cached
            .get_or_create(&vec![("kind".into(), kind.into())])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Exports `kind`'s count of objects turned away at zero before any is (a series that
    /// appears only with its first increment is missing from a scrape, and `rate()` misses the
    /// first).
    pub fn filters(&self, kind: &str) {
        let _ = self.turned_away.get_or_create(&vec![("kind".into(), kind.into())]);
    }

    /// Counts an object of `kind` the shard filter turned away.
    pub fn turned_away(&self, kind: &str) {
        self.turned_away.get_or_create(&vec![("kind".into(), kind.into())]).inc();
    }

    /// Records whether the API server filters by shard.
    pub fn server_filters(&self, yes: bool) {
        self.server_filtered.set(i64::from(yes));
    }

    /// Records a new ownership: `shard` (this replica), how many members, how many keys it may work
    /// on now, and how many moved to or from it.
    pub fn observed(&self, shard: &str, members: usize, keys: usize, moved: usize, changed_members: bool) {
        self.workable(shard, keys);
        self.members.set(i64::try_from(members).unwrap_or(i64::MAX));
        if changed_members {
            self.handovers.inc();
        }
        self.moved.inc_by(u64::try_from(moved).unwrap_or(u64::MAX));
    }
}

/// Conditional writes the API server refused, under the controller's prefix:
/// `<prefix>_write_conflicts_total{resource}` (see [`conditional`](crate::conditional)).
#[derive(Clone, Debug, Default)]
pub struct WriteMetrics {
    conflicts: Family<Labels, Counter>,
}

impl WriteMetrics {
    /// Registers the family under `prefix` (`counter_controller`).
    pub fn register(registry: &mut Registry, prefix: &str) -> Self {
        let help = "Writes refused because the object had changed since it was read (409 Conflict on a precondition); the key is requeued once the cache holds the newer version";
        Self { conflicts: counters(registry, &format!("{prefix}_write_conflicts"), help) }
    }

    /// Counts a refused write to `resource` (plural).
    pub fn conflict(&self, resource: &str) {
        count(&self.conflicts, "resource", resource);
    }
}

/// Consistent reads of a primary object its cache could not vouch for, under the controller's
/// prefix: `<prefix>_primary_reads_total{outcome}`, `confirmed` (acted on) or `stale` (gone,
/// replaced or being deleted: not acted on). See [`freshness`](crate::freshness).
#[derive(Clone, Debug, Default)]
pub struct FreshnessMetrics {
    reads: Family<Labels, Counter>,
}

impl FreshnessMetrics {
    /// Registers the family under `prefix` (`counter_controller`).
    pub fn register(registry: &mut Registry, prefix: &str) -> Self {
        let help = "Consistent reads of a primary object whose cache had not caught up with the event that enqueued its key, by outcome: confirmed (acted on) or stale (not acted on)";
        Self { reads: counters(registry, &format!("{prefix}_primary_reads"), help) }
    }

    /// Counts a read that found `outcome` (`confirmed` or `stale`).
    pub fn read(&self, outcome: &str) {
        count(&self.reads, "outcome", outcome);
    }
}

/// A family of counters with one label, registered as `name`.
fn counters(registry: &mut Registry, name: &str, help: &str) -> Family<Labels, Counter> {
    let family = Family::default();
    registry.register(name, help, family.clone());
    family
}

/// Counts one in `family` under `label=value`.
fn count(family: &Family<Labels, Counter>, label: &str, value: &str) {
    family.get_or_create(&vec![(label.into(), value.into())]).inc();
}
