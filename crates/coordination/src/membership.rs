//! This process's place among its replicas — alone, a candidate for the leader's Lease, or a
//! member of a ring of shard Leases — and the Lease's lifetime around the controller's run: the
//! elector (or shard member) runs beside the controller and lets its Lease go only after the
//! last reconcile has ended, so no successor starts while a write of ours may still be in flight.

use std::future::Future;

use kube_lease_election::ring::Keying;
use kube_lease_election::selector::SelectorCell;
use kube_lease_election::shard::{ShardHandle, ShardMember};
use kube_lease_election::{ConfigError, ElectionConfig, ElectionHandle, Fence, LeaderElector};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::Coordination;

/// How this process shares the work with its replicas.
pub enum Membership {
    /// It works alone.
    Alone,
    /// A candidate for the leader's Lease.
    Elected(LeaderElector),
    /// A member of a ring of shard Leases.
    Sharded(ShardMember, ShardHandle),
}

impl Membership {
    /// A candidate for the Lease `config` names, talking through `lease_client` (unfenced: it must
    /// write while acquiring), its `leader_election_*` metrics in `registry`.
    ///
    /// # Errors
    ///
    /// Settings that break leader election's rules.
    pub fn elected(
        lease_client: kube::Client,
        config: ElectionConfig,
        registry: &mut Registry,
    ) -> Result<Self, ConfigError> {
        Ok(Self::Elected(LeaderElector::new(lease_client, config)?.with_metrics(registry)))
    }

    /// A member of the ring `ring` (its Leases in `config.lease.namespace`), hashing keys as
    /// `keying` says.
    ///
    /// # Errors
    ///
    /// Settings that break leader election's rules.
    pub fn sharded(
        lease_client: kube::Client,
        ring: &str,
        keying: Keying,
        config: ElectionConfig,
    ) -> Result<Self, ConfigError> {
        let (member, handle) = ShardMember::new(lease_client, ring, keying, config)?;
        Ok(Self::Sharded(member, handle))
    }

    /// The fence the controller's client must carry ([`kube_lease_election::FenceLayer`]); `None` alone.
    #[must_use]
    pub fn fence(&self) -> Option<Fence> {
        match self {
            Self::Alone => None,
            Self::Elected(e) => Some(e.handle().fence()),
            Self::Sharded(_, h) => Some(h.fence.clone()),
        }
    }

    /// With sharding by namespace, the `shardSelector` the controller's client sends.
    #[must_use]
    pub fn selector(&self) -> Option<SelectorCell> {
        match self {
            Self::Sharded(_, h) => h.selector.clone(),
            _ => None,
        }
    }

    /// The election's handle (leadership and health), when elected.
    #[must_use]
    pub fn election(&self) -> Option<ElectionHandle> {
        match self {
            Self::Elected(e) => Some(e.handle()),
            _ => None,
        }
    }

    /// Runs `work` with the matching [`Coordination`] while the elector (or shard member) runs
    /// beside it; the Lease is released (or the shard Lease deleted) only once `work` has
    /// returned.
    pub async fn run<F, Fut>(self, work: F) -> Fut::Output
    where
        F: FnOnce(Coordination) -> Fut,
        Fut: Future,
    {
        let lease_stop = CancellationToken::new();
        let (task, how) = match self {
            Self::Alone => (None, Coordination::Alone),
            Self::Elected(elector) => {
                let rx = elector.handle().subscribe();
                (Some(tokio::spawn(elector.run(lease_stop.clone()))), Coordination::Elected(rx))
            }
            Self::Sharded(member, handle) => {
                (Some(tokio::spawn(member.run(lease_stop.clone()))), Coordination::Sharded(handle))
            }
        };
        let out = work(how).await;
        lease_stop.cancel();
        if let Some(task) = task {
            let _ = task.await;
        }
        out
    }
}
