//! The `kube-sandbox` binary: serves the sandbox over HTTPS until SIGINT or SIGTERM, then exits
//! 0; a bad input ends as one line naming it and a non-zero exit.

use std::io::IsTerminal;

use clap::{Parser, ValueEnum};
use kube_sandbox_server::ServerArgs;

// The sandbox builds and frees a parsed object for every write and for every read of one not
// written lately; glibc's allocator spent a third of its time there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "kube-sandbox",
    version,
    about = "A Kubernetes API server for tests and demos: in memory, over HTTPS, with a simulated cluster; writes a kubeconfig"
)]
struct Cli {
    #[command(flatten)]
    server: ServerArgs,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    log_format: LogFormat,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    /// One readable line per event.
    Human,
    /// One JSON object per line.
    Json,
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    // RUST_LOG filters (default `info`); colour only on a terminal without NO_COLOR.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    match cli.log_format {
        LogFormat::Human => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
    let code = match serve_until_signal(&cli.server).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("kube-sandbox: {e:#}");
            1
        }
    };
    // The process ends here rather than by dropping the runtime under the sandbox's tasks (its
    // simulation and timers): tokio then at times printed a panic of a timer polled during its
    // shutdown, after the one line a failed start is allowed.
    std::process::exit(code)
}

async fn serve_until_signal(args: &ServerArgs) -> anyhow::Result<()> {
    // Listening before the kubeconfig is printed: a signal sent as soon as it appears is ours.
    let stop = stop_signal()?;
    let running = args.start().await?;
    let signal = stop.await;
    tracing::info!(signal, "stopping");
    running.shutdown();
    Ok(())
}

/// Listens for SIGINT and SIGTERM from now on; resolves to which came.
#[cfg(unix)]
fn stop_signal() -> std::io::Result<impl Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut int, mut term) = (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?);
    Ok(async move {
        tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        }
    })
}

/// Resolves on Ctrl-C.
#[cfg(not(unix))]
fn stop_signal() -> std::io::Result<impl Future<Output = &'static str>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    })
}
