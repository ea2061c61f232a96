//! client-go's leader-election metrics (component-base names), so existing dashboards work:
//! `leader_election_master_status{name}` (1 while leading) and `leader_election_slowpath_total{name}`
//! (rounds that had to read the Lease because the fast renew was not possible or failed).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

/// The election's metric handles, labelled with the Lease's name.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    master_status: Family<Labels, Gauge>,
    slowpath: Family<Labels, Counter>,
    labels: Labels,
}

impl Metrics {
    /// Registers the families in `registry`, labelled `name=<lease name>`.
    pub fn register(registry: &mut Registry, name: &str) -> Self {
        let m = Self { labels: vec![("name".into(), name.into())], ..Self::default() };
        registry.register(
            "leader_election_master_status",
            "Whether this process is the leader (1) or not (0) of the named Lease",
            m.master_status.clone(),
        );
        registry.register(
            "leader_election_slowpath",
            "Election rounds that had to read the Lease from the API server",
            m.slowpath.clone(),
        );
        // Present from the start, at 0, so a scrape of a follower shows the series.
        m.master_status.get_or_create(&m.labels).set(0);
        let _ = m.slowpath.get_or_create(&m.labels);
        m
    }

    pub(crate) fn leading(&self, on: bool) {
        self.master_status.get_or_create(&self.labels).set(i64::from(on));
    }

    pub(crate) fn slowpath(&self) {
        self.slowpath.get_or_create(&self.labels).inc();
    }
}
