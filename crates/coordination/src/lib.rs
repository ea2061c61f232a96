//! How replicas share a controller's work, for any controller built from informers and a
//! workqueue: **alone**, **leader-elected** (only the holder of a Lease works) or **sharded**
//! (each replica works on the keys the ring of shard Leases gives it).
//!
//! A controller hands the [`Coordinator`] its informers (as [`Source`]s: run, wait for sync,
//! relist, filter, and which work key each cached object stands for), its queue, and its
//! reconcile ([`Reconcile`]); the coordinator owns the worker loop and everything about who may
//! run it:
//!
//! * the informers always run, so a follower's caches stay warm; workers start only after every
//!   cache has synced;
//! * leader-elected: workers run only while this replica leads, starting each term by enqueueing
//!   every cached key (the previous leader may have left work undone);
//! * sharded: a worker reconciles a key only while [`Ownership::may_work`](election::shard::Ownership::may_work)
//!   says so, holding the ownership for the whole reconcile; a new member set waits for the
//!   reconciles in flight, relists the caches with the new filter (and `shardSelector`), and only
//!   then is reported drained;
//! * a reconcile whose write the election's fence withheld is requeued, not counted as failed;
//! * on shutdown, workers stop taking keys and the reconciles in flight finish.
//!
//! Nothing here knows what a controller reconciles; the safety-critical ordering lives once.
//!
//! | module | what it is |
//! |---|---|
//! | [`coordinator`] | [`Coordinator`]: the informers, the cache-sync gate, the workers, shutdown |
//! | `elected` | workers only while leading |
//! | `sharded` | the ownership gate, cache filters, relist and drain on a member-set change |
//! | [`membership`] | [`Membership`]: alone, elected or a shard member, and the Lease's lifetime around the run |
//! | [`source`] | [`Source`]: an informer as the coordinator drives it; [`Watched`] |
//! | [`metrics`] | controller-runtime's reconcile metrics and the shard metrics |
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use coordination::{Coordination, Coordinator, Reconcile, Watched};
//! # use informer::{Config, Informer, ObjectKey};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # use kube::Api;
//! # use workqueue::{RateLimitingQueue, default_controller_rate_limiter};
//! struct Noop;
//! impl Reconcile for Noop {
//!     type Error = std::io::Error;
//!     async fn reconcile(&self, key: &ObjectKey) -> Result<(), Self::Error> {
//!         println!("reconciling {key}");
//!         Ok(())
//!     }
//! }
//! # async fn demo(client: kube::Client) {
//! let mut registry = prometheus_client::registry::Registry::default();
//! let informer = Informer::new(Api::<ConfigMap>::default_namespaced(client), Config::default());
//! let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//! let q = queue.clone();
//! informer.add_handler(Arc::new(informer::EnqueueKey::new(move |key| {
//!     q.add(key);
//! })));
//! let coordinator = Coordinator::new(
//!     queue,
//!     vec![Watched::source(informer, "ConfigMap", ObjectKey::of)],
//!     coordination::Settings::new("noop", 2, "noop"),
//!     &mut registry,
//! );
//! let shutdown = std::future::pending::<()>(); // a signal, in a real controller
//! coordinator.run(Arc::new(Noop), Coordination::Alone, shutdown).await;
//! # }
//! ```

pub mod coordinator;
mod elected;
pub mod membership;
pub mod metrics;
mod sharded;
pub mod source;

pub use coordinator::{Coordination, Coordinator, Reconcile, Settings};
pub use membership::Membership;
pub use metrics::{ControllerMetrics, Outcome, ShardMetrics};
pub use source::{Source, Watched};
