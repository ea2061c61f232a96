//! The command line: `sample-controller [run]` against a cluster, `sample-controller sandbox`
//! with no cluster.
//!
//! The flags, the client, leader election, sharding, logging, metrics and probes are the
//! counter-controller's (its `cli`, `client`, `ops` and `metrics` modules): only what names this
//! controller and its kinds is here. Every bad input ends in one line naming the problem and a
//! non-zero exit, including a cluster without the Foo CRD.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use coordination::Membership;
use counter_controller::Scope;
use counter_controller::cli::{LogFormat, shutdown_signal};
use counter_controller::client::{self, Source};
use counter_controller::events::EventConfig;
use counter_controller::metrics::RestClientMetrics;
use counter_controller::ops::{self, Probes};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ListParams};
use tokio_util::sync::CancellationToken;

use crate::controller::{AGENT, CONTROLLER_NAME, Controller, Options};
use crate::foo::Foo;

pub mod sandbox;

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "sample-controller",
    version,
    about = "kubernetes/sample-controller's Foo: a Deployment per Foo, its available replicas in the Foo's status"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: SampleArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the controller against a cluster (the default).
    Run(SampleArgs),
    /// Start the embedded API server with the Foo CRD, run the controller on it; `--demo` plays
    /// the walkthrough.
    Sandbox(sandbox::SandboxArgs),
}

/// Flags of `run`.
#[derive(Debug, Args, Clone)]
// The shared flags, with this controller's Lease and ring names.
#[command(
    mut_arg("leader_elect_resource_name", |a| a.default_value(CONTROLLER_NAME)),
    mut_arg("sharding_ring", |a| a.default_value(CONTROLLER_NAME))
)]
pub struct SampleArgs {
    /// The counter-controller's `run` flags, which every controller of these parts shares.
    #[command(flatten)]
    pub common: counter_controller::cli::RunArgs,
}

/// Fails fast, with one clear line, when the server cannot be reached, the namespace is missing
/// or the Foo CRD is not installed.
///
/// # Errors
///
/// One line naming what is missing.
pub async fn preflight(client: &Client, scope: &Scope) -> anyhow::Result<()> {
    let check = async {
        let foos: Api<Foo> = match scope {
            Scope::Namespace(ns) => {
                match Api::<Namespace>::all(client.clone()).get(ns).await {
                    Err(kube::Error::Api(s)) if s.code == 404 => bail!("namespace {ns:?} does not exist"),
                    // Allowed to watch Foos but not to read namespaces: the list below decides.
                    Ok(_) | Err(kube::Error::Api(_)) => {}
                    Err(e) => return Err(anyhow::Error::new(e).context("cannot reach the API server")),
                }
                Api::namespaced(client.clone(), ns)
            }
            Scope::All => Api::all(client.clone()),
        };
        match foos.list(&ListParams::default().limit(1)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => bail!(
                "the API server does not serve foos.samplecontroller.k8s.io: install the CRD \
                 (kubectl apply -f examples/sample-controller/deploy/crd.yaml)"
            ),
            Err(e) => Err(anyhow::Error::new(e).context("cannot list Foos")),
        }
    };
    match tokio::time::timeout(Duration::from_secs(15), check).await {
        Ok(r) => r,
        Err(_) => bail!("cannot reach the API server: no answer within 15s"),
    }
}

/// `sample-controller run`.
///
/// # Errors
///
/// Configuration, connection, namespace or CRD problems, as one line.
pub async fn run(args: SampleArgs) -> anyhow::Result<()> {
    let args = args.common;
    let scope = if args.all_namespaces { Scope::All } else { Scope::Namespace(args.namespace.clone()) };
    let identity = election::new_identity();
    let election_config = args.election.config(&scope, &identity)?;
    let (config, source) = client::config(args.kubeconfig.as_deref()).await?;
    match &source {
        Source::Kubeconfig(paths) => {
            tracing::info!(%identity, kubeconfig = ?paths, server = %config.cluster_url, "connecting");
        }
        Source::InCluster => {
            tracing::info!(%identity, server = %config.cluster_url, "connecting with the in-cluster service account");
        }
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let rest = RestClientMetrics::register(&mut registry);
    counter_controller::process::ProcessMetrics::register(&mut registry);
    // The elector (or shard member) talks through its own, unfenced client: it must write while
    // acquiring.
    let membership = match election_config {
        None => Membership::Alone,
        Some(c) => {
            let lease_client = client::build_for(AGENT, config.clone(), &identity, &rest, None, None)?;
            if args.election.sharding {
                let (ring, key) = (&args.election.sharding_ring, args.election.sharding_key);
                tracing::info!(%ring, %identity, ?key, "sharding: a member of the ring");
                Membership::sharded(lease_client, ring, key.into(), c)?
            } else {
                Membership::elected(lease_client, c, &mut registry)?
            }
        }
    };
    let client = client::build_for(
        AGENT,
        config,
        &identity,
        &rest,
        membership.fence().as_ref(),
        membership.selector(),
    )?;
    preflight(&client, &scope).await?;
    let options = Options {
        scope,
        workers: args.workers,
        resync: args.resync,
        identity,
        events: EventConfig { mode: args.events, ..EventConfig::default() },
    };
    let election = membership.election();
    let controller = Controller::new(client, options, &mut registry);
    let stop = CancellationToken::new();
    if let Some(addr) = args.metrics_addr {
        let c = Arc::clone(&controller);
        let probes = Probes::of_controller(move || c.has_synced(), election);
        let bound = ops::serve(addr, Arc::new(registry), probes, stop.clone())
            .await
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        tracing::info!(%bound, "serving /metrics, /healthz and /readyz");
    }
    // The Lease goes (released, or the shard Lease deleted) only after the last sync ended.
    membership.run(|how| controller.run_coordinated(how, shutdown_signal())).await;
    stop.cancel();
    Ok(())
}

impl Cli {
    /// The log format asked for.
    #[must_use]
    pub fn log_format(&self) -> LogFormat {
        match &self.command {
            Some(Command::Run(args)) => args.common.log_format,
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
            Some(Command::Sandbox(args)) => sandbox::run(args).await,
            None => run(self.run).await,
        }
    }
}
