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
pub use fence::{Fence, FenceLayer, Fenced, is_fenced};
