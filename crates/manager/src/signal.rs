//! The stop signal: SIGINT or SIGTERM (what a kubelet sends before it kills a pod).
//!
//! A controller's `run` takes it as its shutdown future: workers stop taking keys, reconciles in
//! flight finish, the Lease is released, the process exits 0.

/// Resolves on SIGINT or SIGTERM, and logs which came.
///
/// ```no_run
/// # async fn run() {
/// manager::signal::shutdown_signal().await;
/// // stop taking keys, finish what is in flight, release the Lease
/// # }
/// ```
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("signal received");
}
