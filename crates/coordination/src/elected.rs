//! Leader-elected work: the workers run only while this replica leads; the informers keep the
//! caches warm in between.

use std::sync::Arc;

use kube_lease_election::Leadership;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::coordinator::{Coordinator, Reconcile};

impl Coordinator {
    /// Each term of leadership: enqueue every cached key (the previous leader may have left work
    /// undone), run the workers until the term ends (lost or shutdown). Never returns before
    /// shutdown, except when the elector is gone.
    pub(crate) async fn lead_when_elected<R: Reconcile>(
        self: &Arc<Self>,
        reconciler: &Arc<R>,
        mut rx: watch::Receiver<Leadership>,
        requested: &CancellationToken,
    ) {
        tracing::info!("waiting to lead before reconciling; the informers keep the caches warm");
        loop {
            tokio::select! {
                r = rx.wait_for(Leadership::is_leading) => if r.is_err() { return },
                () = requested.cancelled() => return,
            }
            let keys = self.enqueue_all();
            tracing::info!(keys, workers = self.settings.workers, "leading: reconciling");
            let mut shutdown = false;
            self.work_until(reconciler, async {
                tokio::select! {
                    _ = rx.wait_for(|l| !l.is_leading()) => {}
                    () = requested.cancelled() => shutdown = true,
                }
            })
            .await;
            if shutdown {
                tracing::info!("shutting down: finished in-flight reconciles");
                return;
            }
            tracing::warn!(
                "stopped leading: workers stopped, no more writes; the informers keep the caches warm"
            );
        }
    }
}
