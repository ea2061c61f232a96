//! Leader election on a `coordination.k8s.io/v1` Lease, with writes fenced by the lease.
//!
//! client-go's `tools/leaderelection` semantics — acquire when the Lease is absent, free, expired
//! by the candidate's own clock, or already ours; renew every retry period; step down when a renew
//! does not succeed within the renew deadline; optimistic concurrency on every write; release on a
//! clean stop — plus what client-go leaves to its callers:
//!
//! * **Fencing at the write.** A [`Fence`] is open only while a successful renew was *sent* less
//!   than the renew deadline ago; [`FenceLayer`] on the client refuses every write otherwise, so a
//!   leader that was paused past its lease sends nothing when it wakes.
//! * **Stepping down is not dying.** Losing the Lease makes the process a candidate again.
//!
//! | module | what it is |
//! |---|---|
//! | [`config`] | [`ElectionConfig`]: the Lease, the identity, the three durations and their rules |
//! | [`decide`] | the pure decision of one round, from the Lease record and our clock |
//! | [`elector`] | the loop: acquire, renew, step down, release; [`ElectionHandle`] and health |
//! | [`fence`] | [`Fence`] and the [`FenceLayer`] for a `kube::Client` |
//! | [`metrics`] | `leader_election_master_status` and `leader_election_slowpath_total` |
//! | [`ring`] | which member of a ring of replicas owns a key (rendezvous hashing), for sharding |
//! | [`selector`] | KEP-5866 `shardSelector` on list and watch, so the API server filters a member's share |
//! | [`shard`] | shard Leases as ring membership, the drain handshake, [`shard::Ownership`] per key |
//!
//! # Example
//!
//! One candidate, the controller's client fenced by its election: a write before it leads never
//! leaves the process; once it leads, writes go out. The `kube-sandbox` crate of this crate's
//! workspace (an in-memory API server) stands in for a cluster.
//!
//! ```
//! use kube_lease_election::{ElectionConfig, FenceLayer, LeaderElector, is_fenced, new_identity};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let sandbox = kube_sandbox::Sandbox::new();
//! let config = ElectionConfig::new("default", "my-controller", &new_identity());
//! // The elector writes its Lease through a client of its own, without the fence.
//! let elector = LeaderElector::new(sandbox.client(), config)?;
//! let handle = elector.handle();
//!
//! // The controller's client carries the fence.
//! let fenced = tower::ServiceBuilder::new().layer(FenceLayer::new(handle.fence()));
//! let client = kube::Client::new(fenced.service(sandbox.service()), "default");
//! let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("work".into());
//!
//! let early = configmaps.create(&PostParams::default(), &cm).await.unwrap_err();
//! assert!(is_fenced(&early)); // not leading: withheld
//!
//! let stop = CancellationToken::new();
//! let running = tokio::spawn(elector.run(stop.clone()));
//! handle.subscribe().wait_for(|l| l.is_leading()).await?;
//! configmaps.create(&PostParams::default(), &cm).await?; // leading: sent
//! assert_eq!(sandbox.requests().count("create", "configmaps"), 1);
//!
//! stop.cancel(); // after the guarded work has stopped: releases the Lease
//! running.await?;
//! assert!(!handle.fence().is_held());
//! # Ok(())
//! # }
//! ```
//!
//! ## Warning
//!
//! * **Only a fenced client is fenced.** Writes through any client without the election's
//!   [`FenceLayer`] go out whatever the Lease says. The elector's own client must *not* carry
//!   its fence, or it could never acquire.
//! * **Losing the Lease does not stop your work by itself.** Follow
//!   [`ElectionHandle::subscribe`] and stop the workers when it leaves
//!   [`Leadership::Leading`] (the `kube-coordination` crate does this for a controller); the fence
//!   withholds their writes meanwhile.
//! * **Stop the elector last.** Cancelling [`LeaderElector::run`] releases the Lease, and another
//!   candidate may lead at once: cancel it only after the work it guards has ended.
//! * **Time is each process's own.** Expiry is measured on the candidate's monotonic clock, never
//!   by comparing timestamps across machines; what it assumes is that the clocks *run* at about
//!   the same rate, and that the renew deadline is well below the lease duration (the gap is the
//!   margin for requests in flight). The [`fence`] module says what remains between the check and
//!   the server.

// The README's examples run as doc tests, so what it shows a new user keeps compiling.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod config;
pub mod decide;
pub mod elector;
pub mod fence;
pub mod metrics;
pub mod ring;
pub mod selector;
pub mod shard;

pub use config::{ConfigError, ElectionConfig, LeaseRef, hostname, new_identity};
pub use elector::{ElectionHandle, LeaderElector, Leadership};
pub use fence::{Entitlement, Fence, FenceLayer, Fenced, is_fenced};
