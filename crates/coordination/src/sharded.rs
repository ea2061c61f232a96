//! Sharded work: each replica caches and reconciles only the keys the ring of shard Leases gives
//! it. A worker holds the ownership for its whole reconcile; a new member set waits for the
//! reconciles in flight, relists the caches with the new filter (and `shardSelector`), and only
//! then reports the set drained — so a key moves to its new owner only once nobody here works
//! on it, and the new owner has its objects cached.

use std::sync::Arc;

use election::selector::{SelectorCell, shard_selector};
use election::shard::{Ownership, ShardHandle};
use informer::ObjectKey;

use crate::coordinator::Coordinator;

impl Coordinator {
    /// Before the informers start: the first ownership, the server-side filter when the API
    /// server offers one, and the caches' filter.
    pub(crate) async fn start_sharded(&self, handle: &ShardHandle) {
        let first = handle.ownership.borrow().clone();
        if let Some(cell) = &handle.selector {
            self.ask_server_to_filter(cell, &first).await;
        }
        *self.ownership.write() = Some(first);
        self.filter_caches();
    }

    /// Installs each new [`Ownership`]: waits for the reconciles in flight under the old one (they
    /// hold it), then reports the member set drained and enqueues the keys it may now work on.
    pub(crate) async fn follow_ownership(self: Arc<Self>, handle: ShardHandle) {
        let ShardHandle { mut ownership, drained, selector, .. } = handle;
        let me = self.settings.identity.clone();
        loop {
            let next = ownership.borrow_and_update().clone();
            let fingerprint = next.current().fingerprint();
            let members = next.current().members().len();
            let settled = next.is_settled();
            // Compared with the ownership the caches were last filtered with (at start, the one
            // before the first published), so the first real change relists them.
            let previous = {
                let _drained = self.reconciling.write().await;
                self.ownership.write().replace(next.clone())
            };
            let changed = previous.as_ref().is_none_or(|p| p.current() != next.current());
            if let Some(cell) = &selector {
                // Before the relist, so that its list and watch carry the new share.
                cell.set(next.cached_ranges().map(|r| shard_selector(&r)));
            }
            if changed {
                // The caches hold only keys this replica owns (or owned at the last settled set):
                // read again with the new filter, and only then report drained, so that by the
                // time a key may come here its objects are cached.
                futures::future::join_all(self.sources.iter().map(|s| s.relist())).await;
            } else {
                // Settled on the same set: the filter only narrowed (to the current share).
                for s in &self.sources {
                    s.refilter();
                }
            }
            self.record_cached();
            drained.send_replace(fingerprint);
            // What the change means for the primary kind's cached keys: how many are workable
            // here, and moved.
            let (mut mine, mut moved) = (0, 0);
            for key in self.sources.first().map(|s| s.keys()).unwrap_or_default() {
                let k = key.to_string();
                mine += usize::from(next.may_work(&k));
                moved += usize::from(previous.as_ref().is_some_and(|p| p.owns(&k) != next.owns(&k)));
            }
            self.shard_metrics.observed(&me, members, mine, moved, changed);
            let keys = self.enqueue_all();
            tracing::info!(members, settled, workable = mine, moved, keys, "shard ownership changed");
            if ownership.changed().await.is_err() {
                return;
            }
        }
    }

    /// Sharding by namespace: asks whether the API server filters lists and watches by
    /// `shardSelector` (KEP-5866), and sets the selector for `first`. The caches are filtered here
    /// either way; a server that filters only sends less.
    async fn ask_server_to_filter(&self, cell: &SelectorCell, first: &Ownership) {
        let filters = match &self.settings.shard_probe {
            None => false,
            Some((client, path)) => match election::selector::server_filters(client, path).await {
                Ok(true) => {
                    tracing::info!(
                        "the API server filters lists and watches to this replica's share (shardSelector)"
                    );
                    true
                }
                Ok(false) => {
                    tracing::info!(
                        "the API server does not filter by shardSelector (KEP-5866, Kubernetes 1.36+); this replica filters what it receives"
                    );
                    false
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot tell whether the API server filters by shardSelector; sending it anyway");
                    false
                }
            },
        };
        self.shard_metrics.server_filters(filters);
        cell.set(first.cached_ranges().map(|r| shard_selector(&r)));
    }

    /// Makes every cache keep only the keys this replica owns now or at the last settled member
    /// set (before it knows the ring, none).
    fn filter_caches(&self) {
        let view = Arc::clone(&self.ownership);
        let metrics = self.shard_metrics.clone();
        let keep = Arc::new(move |key: &ObjectKey, kind: &'static str| {
            let k = key.to_string();
            let kept = view.read().as_ref().is_none_or(|o| o.owns(&k) || o.owned_when_settled(&k));
            if !kept {
                metrics.turned_away(kind);
            }
            kept
        });
        for s in &self.sources {
            s.set_filter(keep.clone());
        }
    }
}
