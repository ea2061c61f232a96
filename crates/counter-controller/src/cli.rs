//! The command line: `counter-controller [run]` against a cluster, `counter-controller sandbox`
//! with no cluster.
//!
//! The flags every controller shares, start-up, leader election, sharding, logging, metrics and
//! probes are the `kube-manager` crate's: only what names this controller and its kinds is here.
//! Every bad input ends in one line naming the problem and a non-zero exit: a missing or
//! unreadable kubeconfig, an unreachable server, a namespace that does not exist, `--workers 0`,
//! a malformed `--resync`, leader-election durations out of order.
//!
//! With `--leader-elect`, `run` is one candidate of a leader election (see the `kube-lease-election` crate):
//! informers always run; workers run while this replica leads; on SIGTERM it finishes in-flight
//! reconciles, then releases the Lease so a follower takes over at its next try.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Parser, Subcommand};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, ListParams};
use kube_manager::logging::LogFormat;
use kube_manager::signal::shutdown_signal;
use kube_manager::{Scope, Startup};

use crate::controller::{AGENT, CONTROLLER_NAME, Controller};

#[cfg(feature = "sandbox")]
pub mod sandbox;

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
    run: CounterArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controller against a cluster (the default).
    Run(CounterArgs),
    /// Start the embedded API server, run the controller on it, print the walkthrough.
    #[cfg(feature = "sandbox")]
    Sandbox(kube_manager::embedded::SandboxArgs),
}

/// Flags of `run`.
#[derive(Debug, Args, Clone)]
// The shared flags, with this controller's Lease and ring names.
#[command(
    mut_arg("leader_elect_resource_name", |a| a.default_value(CONTROLLER_NAME).required(false)),
    mut_arg("sharding_ring", |a| a.default_value(CONTROLLER_NAME).required(false))
)]
pub struct CounterArgs {
    /// The `run` flags every controller of these parts shares.
    #[command(flatten)]
    pub common: kube_manager::flags::RunArgs,
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

/// `counter-controller run`.
///
/// # Errors
///
/// Configuration, connection or namespace problems, as one line.
pub async fn run(args: CounterArgs) -> anyhow::Result<()> {
    let args = args.common;
    let mut start = Startup::connect(&args, AGENT).await?;
    preflight(&start.client, &start.scope).await?;
    let options = start.options(&args);
    let controller = Controller::new(start.client.clone(), options, &mut start.registry);
    let c = Arc::clone(&controller);
    let work = |how| controller.run_coordinated(how, shutdown_signal());
    Ok(start.serve_and_run(args.metrics_addr, move || c.has_synced(), work).await?)
}

impl Cli {
    /// The log format asked for.
    #[must_use]
    pub fn log_format(&self) -> LogFormat {
        match &self.command {
            Some(Command::Run(args)) => args.common.log_format,
            #[cfg(feature = "sandbox")]
            Some(Command::Sandbox(args)) => args.log_format,
            None => self.run.common.log_format,
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
            #[cfg(feature = "sandbox")]
            Some(Command::Sandbox(args)) => kube_manager::embedded::run(&args, sandbox::Counter).await,
            None => run(self.run).await,
        }
    }
}
