//! The stop signal: SIGINT or SIGTERM (what a kubelet sends before it kills a pod).
//!
//! A controller's `run` takes it as its shutdown future: workers stop taking keys, reconciles in
//! flight finish, the Lease is released, the process exits 0.

/// Resolves on SIGINT or SIGTERM, and logs which came. The handlers are installed when this is
/// called, not when the future is first awaited: call it before announcing anything a caller may
/// answer with a signal (the sandbox's kubeconfig line), so an early signal is not lost.
///
/// ```no_run
/// # async fn run() {
/// kube_manager::signal::shutdown_signal().await;
/// // stop taking keys, finish what is in flight, release the Lease
/// # }
/// ```
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers =
            signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)));
        async move {
            match handlers {
                Ok((mut int, mut term)) => {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                // No handler could be installed: Ctrl-C as tokio listens for it.
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            tracing::info!("signal received");
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("signal received");
    }
}
