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

pub mod cache;
pub mod expectations;
pub mod handler;
pub mod informer;
pub mod key;

pub use cache::Lister;
pub use expectations::{EXPECTATION_TIMEOUT, Expect, Expectations};
pub use handler::{Deleted, EnqueueKey, EventHandler};
pub use informer::{Config, Filter, Informer, Transform, Watchable};
pub use key::{KeyError, ObjectKey};
