//! The command line: `counter-controller [run]` against a cluster.
//!
//! Every bad input ends in one line naming the problem and a non-zero exit: a missing or
//! unreadable kubeconfig, an unreachable server, a namespace that does not exist, `--workers 0`,
//! a malformed `--resync`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::controller::{Controller, Options, Scope};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "counter-controller",
    version,
    about = "ConfigMap annotation counter.example.com/desired → Deployment replicas"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controller against a cluster (the default).
    Run(RunArgs),
    /// Start the embedded API server, run the controller on it, print the walkthrough.
    Sandbox(crate::embedded::SandboxArgs),
}

/// Flags of `run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Kubeconfig file; else $KUBECONFIG, ~/.kube/config, or the in-cluster config.
    #[arg(long, env = "KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace to watch.
    #[arg(long, short = 'n', default_value = "default", conflicts_with = "all_namespaces")]
    pub namespace: String,
    /// Watch every namespace.
    #[arg(long, short = 'A')]
    pub all_namespaces: bool,
    /// Concurrent reconciles (at least 1).
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Informer resync period, e.g. 30s, 5m, 1h; 0 disables it.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub resync: Duration,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// Serve /metrics, /healthz and /readyz on this address (e.g. 0.0.0.0:8080); off by default.
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    Human,
    /// One JSON object per line.
    Json,
}

fn parse_workers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (0 workers would never reconcile anything)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

/// Parses `500ms`, `30s`, `5m`, `1h`, `1h30m`, or `0`.
///
/// # Errors
///
/// A message naming the value when it is not a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (use e.g. 30s, 5m, 1h30m, or 0 to disable)");
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.saturating_mul(60)),
            "h" => Duration::from_secs(n.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        total = total.saturating_add(unit);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// Sets up `tracing` output (filter from `RUST_LOG`, default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Builds a client from `--kubeconfig` / `$KUBECONFIG`, `~/.kube/config` or the in-cluster config.
///
/// # Errors
///
/// A missing or unreadable kubeconfig, or no configuration at all.
pub async fn client(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig {} is not usable", path.display()))?
        }
        None => Config::infer()
            .await
            .context("no cluster configuration: pass --kubeconfig, set KUBECONFIG, or run in a cluster")?,
    };
    let url = config.cluster_url.clone();
    Client::try_from(config).with_context(|| format!("cannot build a client for {url}"))
}

fn unreachable(e: kube::Error) -> anyhow::Error {
    anyhow::Error::new(e).context("cannot reach the API server")
}

/// Fails fast, with one clear line, when the server cannot be reached or the namespace is missing.
///
/// # Errors
///
/// One line naming the namespace or the unreachable server.
pub async fn preflight(client: &Client, scope: &Scope) -> anyhow::Result<()> {
    let check = async {
        match scope {
            Scope::Namespace(ns) => match Api::<Namespace>::all(client.clone()).get(ns).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => bail!("namespace {ns:?} does not exist"),
                // Allowed to watch ConfigMaps but not to read namespaces: the list below decides.
                Err(kube::Error::Api(s)) if s.code == 403 => Api::<ConfigMap>::namespaced(client.clone(), ns)
                    .list(&ListParams::default().limit(1))
                    .await
                    .map(drop)
                    .map_err(unreachable),
                Err(e) => Err(unreachable(e)),
            },
            Scope::All => Api::<ConfigMap>::all(client.clone())
                .list(&ListParams::default().limit(1))
                .await
                .map(drop)
                .map_err(unreachable),
        }
    };
    match tokio::time::timeout(Duration::from_secs(15), check).await {
        Ok(r) => r,
        Err(_) => bail!("cannot reach the API server: no answer within 15s"),
    }
}

/// Resolves on SIGINT or SIGTERM.
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

/// `counter-controller run`.
///
/// # Errors
///
/// Configuration, connection or namespace problems, as one line.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let scope = if args.all_namespaces { Scope::All } else { Scope::Namespace(args.namespace.clone()) };
    let client = client(args.kubeconfig.as_deref()).await?;
    preflight(&client, &scope).await?;
    let mut registry = prometheus_client::registry::Registry::default();
    let controller =
        Controller::new(client, Options { scope, workers: args.workers, resync: args.resync }, &mut registry);
    let stop = tokio_util::sync::CancellationToken::new();
    if let Some(addr) = args.metrics_addr {
        let ready: crate::metrics::Readiness = {
            let c = std::sync::Arc::clone(&controller);
            std::sync::Arc::new(move || c.has_synced())
        };
        let bound = crate::metrics::serve(addr, std::sync::Arc::new(registry), ready, stop.clone())
            .await
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        tracing::info!(%bound, "serving /metrics, /healthz and /readyz");
    }
    controller.run(shutdown_signal()).await;
    stop.cancel();
    Ok(())
}

impl Cli {
    /// The log format asked for.
    #[must_use]
    pub fn log_format(&self) -> LogFormat {
        match &self.command {
            Some(Command::Run(args)) => args.log_format,
            Some(Command::Sandbox(args)) => args.log_format,
            None => self.run.log_format,
        }
    }

    /// Runs the chosen command: `run` (also with no command) or `sandbox`.
    ///
    /// # Errors
    ///
    /// The command's error, as one line.
    pub async fn execute(self) -> anyhow::Result<()> {
        match self.command {
            Some(Command::Run(args)) => run(args).await,
            Some(Command::Sandbox(args)) => crate::embedded::run(args).await,
            None => run(self.run).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "30", "s", "3x", "-5s", "1.5s", "forever"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn workers() {
        assert!(parse_workers("0").unwrap_err().contains("at least 1"));
        assert!(parse_workers("two").is_err());
        assert_eq!(parse_workers("4"), Ok(4));
    }
}
