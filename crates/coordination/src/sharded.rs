//! Sharded work: each replica caches and reconciles only the keys the ring of shard Leases gives
//! it. A worker holds the ownership for its whole reconcile; a new member set waits for the
//! reconciles in flight, brings the caches to the new share — a list again (with the new filter
//! and `shardSelector`) only when the share grew — and only then reports the set drained, so a
//! key moves to its new owner only once nobody here works on it, and the new owner has its
//! objects cached.
//!
//! A lapse of this replica's own Lease (a pause, a slow API server) keeps the caches as they are:
//! it owns nothing until it renews, and under the same members it works again with no list. On a
//! busy machine lapses come in bursts; a list per lapse made them feed themselves.

use std::sync::Arc;

use kube_informer::ObjectKey;
use kube_lease_election::selector::{SelectorCell, shard_selector};
use kube_lease_election::shard::{Ownership, ShardHandle};

use crate::coordinator::Coordinator;

impl Coordinator {
    /// Before the informers start: the first ownership, the server-side filter when the API
    /// server offers one, and the caches' filter.
    pub(crate) async fn start_sharded(&self, handle: &ShardHandle) {
        let first = handle.ownership.borrow().clone();
        if let Some(cell) = &handle.selector {
            self.ask_server_to_filter(cell, &first).await;
        }
        *self.cached.write() = Some(first.clone());
        *self.ownership.write() = Some(first);
        self.filter_caches();
    }

    /// Installs each new [`Ownership`]: waits for the reconciles in flight under the old one (they
    /// hold it), brings the caches to the new share, then reports the member set drained and
    /// enqueues the keys it may now work on.
    pub(crate) async fn follow_ownership(self: Arc<Self>, handle: ShardHandle) {
        let ShardHandle { mut ownership, drained, selector, .. } = handle;
        let me = self.settings.identity.clone();
        loop {
            let next = ownership.borrow_and_update().clone();
            let fingerprint = next.current().fingerprint();
            let members = next.current().members().len();
            let settled = next.is_settled();
            let previous = {
                let _drained = self.reconciling.write().await;
                self.ownership.write().replace(next.clone())
            };
            let changed = previous.as_ref().is_none_or(|p| p.current() != next.current());
            let step = {
                let mut cached = self.cached.write();
                let step = CacheStep::decide(cached.as_ref(), &next, selector.is_some());
                if step != CacheStep::Keep {
                    *cached = Some(next.clone());
                }
                step
            };
            if let (Some(cell), Some(cached)) = (&selector, self.cached.read().as_ref()) {
                // Before the relist, so that its list and watch carry the new share.
                cell.set(cached.cached_ranges().map(|r| shard_selector(&r)));
            }
            match step {
                // The share grew: read again with the new filter, and only then report drained,
                // so that by the time a key may come here its objects are cached.
                CacheStep::Relist => {
                    futures::future::join_all(self.sources.iter().map(|s| s.relist())).await;
                }
                CacheStep::Narrow => {
                    for s in &self.sources {
                        s.refilter();
                    }
                }
                CacheStep::Keep => {}
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
            tracing::info!(members, settled, workable = mine, moved, keys, cache = ?step, "shard ownership changed");
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
            Some((client, path)) => match kube_lease_election::selector::server_filters(client, path).await {
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

    /// Makes every cache keep only the keys of the cached ownership: owned now or at the last
    /// settled member set (before it knows the ring, none).
    fn filter_caches(&self) {
        let view = Arc::clone(&self.cached);
        let metrics = self.shard_metrics.clone();
        let keep = Arc::new(move |key: &ObjectKey, kind: &'static str| {
            let k = key.to_string();
            let kept = view.read().as_ref().is_none_or(|o| o.caches(&k));
            if !kept {
                metrics.turned_away(kind);
            }
            kept
        });
        for s in &self.sources {
            self.shard_metrics.filters(s.kind());
            s.set_filter(keep.clone());
        }
    }
}

/// What a new ownership means for the caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheStep {
    /// This replica's Lease lapsed (it owns nothing for now): keep what is cached — its watches
    /// keep it fresh — so that getting the Lease back under the same members costs no list.
    Keep,
    /// Every key the new share keeps was kept already: drop the others, no list.
    Narrow,
    /// The share grew (or the caches hold none yet), or the lists and watches carry a
    /// `shardSelector` for another share: list again with the new filter (and selector).
    Relist,
}

impl CacheStep {
    /// `selected`: the lists and watches carry a `shardSelector` (sharding by namespace). A
    /// narrower share then restarts them anyway, so that the API server sends only the new share
    /// — and the list it starts with is only that share.
    fn decide(cached: Option<&Ownership>, next: &Ownership, selected: bool) -> Self {
        match cached {
            Some(_) if next.current().is_empty() => Self::Keep,
            Some(c) if next.caches_within(c) && !(selected && c.cached_ranges() != next.cached_ranges()) => {
                Self::Narrow
            }
            _ => Self::Relist,
        }
    }
}

#[cfg(test)]
mod tests {
    use kube_lease_election::ring::{Keying, Ring};

    use super::*;

    #[test]
    fn a_lapse_keeps_the_cache_a_joiner_narrows_it_a_leaver_relists() {
        let (three, four) = (Ring::new(["a", "b", "c"]), Ring::new(["a", "b", "c", "d"]));
        let settled = Ownership::new("a", three.clone(), Some(three.clone()));
        let lapsed = Ownership::none("a", Keying::Name);
        let decide = |c, n| CacheStep::decide(c, n, false);
        assert_eq!(decide(None, &lapsed), CacheStep::Relist, "nothing cached yet");
        assert_eq!(decide(Some(&settled), &lapsed), CacheStep::Keep);
        // Back under the same members, not yet settled again: the share is the one cached.
        let back = Ownership::new("a", three.clone(), None);
        assert_eq!(decide(Some(&settled), &back), CacheStep::Narrow);
        let joined = Ownership::new("a", four.clone(), Some(three.clone()));
        assert_eq!(decide(Some(&settled), &joined), CacheStep::Narrow);
        let after = Ownership::new("a", four.clone(), Some(four));
        assert_eq!(decide(Some(&joined), &after), CacheStep::Narrow);
        let left = Ownership::new("a", Ring::new(["a", "b"]), Some(three));
        assert_eq!(decide(Some(&settled), &left), CacheStep::Relist);
        assert_eq!(decide(Some(&lapsed), &back), CacheStep::Relist, "a start with none cached");
    }

    #[test]
    fn with_a_shard_selector_a_narrower_share_restarts_the_watch_the_same_one_does_not() {
        let ns = |m: &[&str]| Ring::with_keying(m.iter().copied(), Keying::Namespace);
        let settled = Ownership::new("a", ns(&["a", "b"]), Some(ns(&["a", "b"])));
        let back = Ownership::new("a", ns(&["a", "b"]), None);
        assert_eq!(CacheStep::decide(Some(&settled), &back, true), CacheStep::Narrow, "same ranges");
        let after = Ownership::new("a", ns(&["a", "b", "c"]), Some(ns(&["a", "b", "c"])));
        assert_eq!(CacheStep::decide(Some(&settled), &after, false), CacheStep::Narrow);
        assert_eq!(CacheStep::decide(Some(&settled), &after, true), CacheStep::Relist);
    }
}
