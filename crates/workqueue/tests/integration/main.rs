//! The crate's integration tests, built as one binary: one module per layer, plus the
//! multi-threaded stress tests, sharing the helpers below.

mod delay;
mod limiter;
mod metrics;
mod queue;
mod rate_limiting;
mod stress;

use std::time::Duration;

use kube_workqueue::{Item, Key, Queue};

/// The next key, held; fails the test if none comes within five seconds or the queue closes.
pub(crate) async fn take<T: Key>(q: &Queue<T>) -> Item<'_, T> {
    tokio::time::timeout(Duration::from_secs(5), q.get()).await.expect("get timed out").expect("queue closed")
}
