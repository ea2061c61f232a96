//! A client-go style shared informer over `kube::runtime::watcher`.
//!
//! The first of the controller's four parts: it lists and watches one resource, keeps a local
//! cache (read through a [`Lister`], never the API server), and calls [`EventHandler`]s with what
//! changed — which, in a controller, only enqueue the object's [`ObjectKey`].
//!
//! | module | what it is |
//! |---|---|
//! | [`informer`] | the watch loop, dispatch, tombstones, resync, cache-sync gate |
//! | [`expectations`] | [`Expectations`]: a controller's own writes the cache has not shown yet |
//! | [`cache`] | the cache and its [`Lister`] with a namespace index |
//! | [`handler`] | [`EventHandler`], [`Deleted`] tombstones, the [`EnqueueKey`] adapter |
//! | [`key`] | [`ObjectKey`]: `namespace/name` keys |
//! | [`presence`] | [`Presence`]: keys of objects kept uncached, remembered by a hash |
//! | [`streaming`] | whether the API server serves streaming lists, asked once |
//! | [`version`] | comparing `resourceVersion`s: has a cache caught up with an event |
//!
//! # Example
//!
//! An informer over the ConfigMaps of one namespace, a handler that only names the work, and a
//! read from the cache once it has synced. The `kube-sandbox` crate of this crate's workspace (an
//! in-memory API server) stands in for a cluster; against a real one the `Api` comes from
//! `kube::Client::try_default()`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use kube_informer::{Config, EnqueueKey, Informer, ObjectKey};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kube::Error> {
//! let sandbox = kube_sandbox::Sandbox::new();
//! let api: Api<ConfigMap> = Api::namespaced(sandbox.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("web".into());
//! api.create(&PostParams::default(), &cm).await?;
//!
//! let informer = Informer::new(api, Config::default());
//! let (work, mut named) = tokio::sync::mpsc::unbounded_channel();
//! informer.add_handler(Arc::new(EnqueueKey::new(move |key: ObjectKey| {
//!     let _ = work.send(key); // a controller adds the key to its workqueue
//! })));
//!
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let running = tokio::spawn({
//!     let informer = informer.clone();
//!     async move { informer.run(stopped).await }
//! });
//! assert!(informer.wait_for_cache_sync(tokio::time::sleep(Duration::from_secs(10))).await);
//!
//! // Every ConfigMap of the namespace is named, the cluster's own `kube-root-ca.crt` too.
//! let key = ObjectKey::new("default", "web");
//! while named.recv().await.as_ref() != Some(&key) {}
//! let cached = informer.lister().get(&key).expect("synced: the cache has it");
//! assert_eq!(cached.metadata.name.as_deref(), Some("web"));
//!
//! let _ = stop.send(());
//! running.await.expect("the informer stops when asked");
//! # Ok(())
//! # }
//! ```
//!
//! ## Warning
//!
//! * **An unsynced cache is not an answer.** Until [`Informer::has_synced`] is true, an object
//!   missing from the [`Lister`] may well exist. A controller that acts on absence (deletes what
//!   it does not find) must wait for every cache it reads with
//!   [`Informer::wait_for_cache_sync`] before its first reconcile.
//! * **Cached objects are shared.** The lister hands out the cache's own `Arc<K>`; to change an
//!   object, clone it and write the copy to the API server — the cache follows through the watch.
//! * **Handlers are on the informer's path.** They run one at a time, in order, under the
//!   informer's dispatch lock: a handler that blocks or calls the API delays every later
//!   notification, and one that calls [`Informer::add_handler`] deadlocks. Name the work and
//!   return.
//! * **A tombstone may be stale.** [`Deleted::FinalStateUnknown`] carries the last state the cache
//!   had, not the object's state when it was deleted.

// The README's examples run as doc tests, so what it shows a new user keeps compiling.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod cache;
pub mod expectations;
pub mod handler;
pub mod informer;
pub mod key;
pub mod presence;
pub mod streaming;
pub mod version;

pub use cache::Lister;
pub use expectations::{EXPECTATION_TIMEOUT, Expect, Expectations};
pub use handler::{Deleted, EnqueueKey, EventHandler};
pub use informer::{Config, Filter, Informer, Transform, Watchable};
pub use key::{KeyError, ObjectKey};
pub use presence::Presence;
