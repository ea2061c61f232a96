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
//! * sharded: a worker reconciles a key only while [`Ownership::may_work`](kube_lease_election::shard::Ownership::may_work)
//!   says so, holding the ownership for the whole reconcile; a new member set waits for the
//!   reconciles in flight, narrows the caches to the new share or, when it grew, lists again
//!   with the new filter (and `shardSelector`), and only then is reported drained; a lapse of
//!   this replica's Lease keeps the caches, so getting it back costs no list;
//! * a reconcile whose write the election's fence withheld (or abandoned in flight) is requeued,
//!   not counted as failed;
//! * writes are conditional on the version they were decided from ([`conditional`]); one the
//!   API server refuses as stale is counted and requeued once the cache holds a newer version;
//! * a reconcile acts on a primary object only once its cache has caught up with the events
//!   that enqueued the key, or a consistent read has confirmed it ([`freshness`]): an owned
//!   object's delete that overtook its owner's is not answered by creating it again;
//! * on shutdown, workers stop taking keys and the reconciles in flight finish.
//!
//! Nothing here knows what a controller reconciles; the safety-critical ordering lives once.
//!
//! | module | what it is |
//! |---|---|
//! | [`coordinator`] | [`Coordinator`]: the informers, the cache-sync gate, the workers, shutdown |
//! | [`conditional`] | [`ReadVersion`]: writes conditional on the version read; [`Conflict`] |
//! | `conflicts` | a refused write's key, requeued once the cache holds a newer version |
//! | [`freshness`] | [`Primary`]: whether the primary cache has caught up with what enqueued a key |
//! | `elected` | workers only while leading |
//! | `sharded` | the ownership gate, cache filters, relist and drain on a member-set change |
//! | [`membership`] | [`Membership`]: alone, elected or a shard member, and the Lease's lifetime around the run |
//! | [`source`] | [`Source`]: an informer as the coordinator drives it; [`Watched`] |
//! | [`metrics`] | controller-runtime's reconcile metrics, the shard metrics, the write conflicts |
//!
//! # Example
//!
//! One controller working alone: an informer whose handler only enqueues, the queue, and a
//! reconcile the coordinator's workers call once the cache has synced. The `kube-sandbox` crate of
//! this crate's workspace (an in-memory API server) stands in for a cluster.
//!
//! ```
//! use std::sync::Arc;
//!
//! use kube_coordination::{Coordination, Coordinator, Reconcile, Settings, Watched};
//! use kube_informer::{Config, EnqueueKey, Informer, ObjectKey};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//! use tokio::sync::{mpsc, oneshot};
//! use kube_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
//!
//! /// The controller's reconcile; this one only reports the key it was given.
//! struct Report(mpsc::UnboundedSender<ObjectKey>);
//!
//! impl Reconcile for Report {
//!     type Error = std::convert::Infallible;
//!     async fn reconcile(&self, key: &ObjectKey) -> Result<(), Self::Error> {
//!         let _ = self.0.send(key.clone());
//!         Ok(())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kube::Error> {
//! let sandbox = kube_sandbox::Sandbox::new();
//! let api: Api<ConfigMap> = Api::default_namespaced(sandbox.client());
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("web".into());
//! api.create(&PostParams::default(), &cm).await?;
//!
//! let informer = Informer::new(api, Config::default());
//! let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//! let q = queue.clone();
//! informer.add_handler(Arc::new(EnqueueKey::new(move |key| {
//!     q.add(key);
//! })));
//! let mut registry = prometheus_client::registry::Registry::default();
//! let coordinator = Coordinator::new(
//!     queue,
//!     vec![Watched::source(informer, "ConfigMap", ObjectKey::of)],
//!     Settings::new("example", 2, "replica-1"),
//!     &mut registry,
//! );
//!
//! let (report, mut reconciled) = mpsc::unbounded_channel();
//! let (stop, stopped) = oneshot::channel::<()>(); // a signal, in a real controller
//! let running = tokio::spawn(async move {
//!     coordinator.run(Arc::new(Report(report)), Coordination::Alone, stopped).await
//! });
//! // Every ConfigMap is reconciled, the cluster's own `kube-root-ca.crt` among them.
//! let web = ObjectKey::new("default", "web");
//! while reconciled.recv().await.as_ref() != Some(&web) {}
//!
//! let _ = stop.send(());
//! assert!(running.await.expect("in-flight reconciles finish, then it returns")); // had synced
//! # Ok(())
//! # }
//! ```
//!
//! With leader election or sharding, [`Membership`] makes the elector or shard member, gives the
//! fence the controller's client must carry, and runs the coordinator with the matching
//! [`Coordination`], releasing the Lease only after the last reconcile.
//!
//! ## Warning
//!
//! * **Fence the controller's client.** The coordinator stops workers when this replica stops
//!   leading (or owning a key), but a write already under way is held back only by the fence:
//!   the client the reconcile writes through must carry [`Membership::fence`] as an
//!   [`kube_lease_election::FenceLayer`].
//! * **Say which errors are the fence's.** Implement [`Reconcile::is_fenced`] (usually with
//!   [`kube_lease_election::is_fenced`]); otherwise every write withheld after a lost Lease is logged as a
//!   warning and counted as a reconcile error, which is what alerts watch.
//! * **The first source is the primary kind**: the one whose keys the workqueue holds and the
//!   shard metrics count. Every source's `key_of` must map its objects to those keys (an owned
//!   Deployment to its owner's key).
//! * **Enqueue into the queue the coordinator runs.** The coordinator takes keys from the
//!   queue it was given; handlers that add to another queue reconcile nothing.

// The README's examples run as doc tests, so what it shows a new user keeps compiling.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod conditional;
mod conflicts;
pub mod coordinator;
mod elected;
pub mod freshness;
pub mod membership;
pub mod metrics;
mod sharded;
pub mod source;

pub use conditional::{Conflict, ReadVersion, is_conflict};
pub use conflicts::VersionHook;
pub use coordinator::{Coordination, Coordinator, Reconcile, Settings};
pub use freshness::{Identity, Primary};
pub use membership::Membership;
pub use metrics::{ControllerMetrics, FreshnessMetrics, Outcome, ShardMetrics, WriteMetrics};
pub use source::{Source, Watched, WorkHook};
