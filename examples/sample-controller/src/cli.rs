//! The command line: `sample-controller [run]` against a cluster, `sample-controller sandbox`
//! with no cluster.
//!
//! The flags, the client, leader election, sharding, logging, metrics and probes are the
//! `kube-manager` crate's (its `RunArgs` and `Startup`): only what names this controller and its
//! kinds is here. Every bad input ends in one line naming the problem and a
//! non-zero exit, including a cluster without the Foo CRD.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Parser, Subcommand};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ListParams};
use kube_manager::logging::LogFormat;
use kube_manager::signal::shutdown_signal;
use kube_manager::{Scope, Startup};

use crate::controller::{AGENT, CONTROLLER_NAME, Controller};
use crate::foo::Foo;

#[cfg(feature = "sandbox")]
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
    #[cfg(feature = "sandbox")]
    Sandbox(sandbox::SampleSandboxArgs),
    /// Serve the Foo's conversion webhook (`v1alpha1` ⇄ `v1`) over HTTPS at `/convert`.
    Webhook(WebhookArgs),
}

/// Flags of `webhook`.
#[derive(Debug, Args, Clone)]
pub struct WebhookArgs {
    /// Where to listen.
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub listen: std::net::SocketAddr,
    /// The serving certificate (PEM, its chain after it): it must name the webhook Service's
    /// `NAME.NAMESPACE.svc`, and the CRD's `caBundle` must vouch for it.
    #[arg(long, value_name = "FILE")]
    pub tls_cert_file: std::path::PathBuf,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_private_key_file: std::path::PathBuf,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
}

/// `sample-controller webhook`: serves the conversion webhook until SIGTERM or Ctrl-C.
///
/// # Errors
///
/// A certificate or key that cannot be read, or an address that cannot be listened on, as one
/// line naming it.
pub async fn webhook(args: WebhookArgs) -> anyhow::Result<()> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))
    };
    let tls = crate::conversion::tls_config(&read(&args.tls_cert_file)?, &read(&args.tls_private_key_file)?)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    tracing::info!(addr = %args.listen, "serving the Foo conversion webhook at /convert");
    let stop = tokio_util::sync::CancellationToken::new();
    let serving = tokio::spawn(crate::conversion::serve(listener, tls, stop.clone()));
    shutdown_signal().await;
    stop.cancel();
    let _ = serving.await;
    Ok(())
}

/// Flags of `run`.
#[derive(Debug, Args, Clone)]
// The shared flags, with this controller's Lease and ring names.
#[command(
    mut_arg("leader_elect_resource_name", |a| a.default_value(CONTROLLER_NAME).required(false)),
    mut_arg("sharding_ring", |a| a.default_value(CONTROLLER_NAME).required(false))
)]
pub struct SampleArgs {
    /// The `run` flags every controller of these parts shares.
    #[command(flatten)]
    pub common: kube_manager::flags::RunArgs,
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
            Some(Command::Sandbox(args)) => args.common.log_format,
            Some(Command::Webhook(args)) => args.log_format,
            None => self.run.common.log_format,
        }
    }

    /// Runs the chosen command: `run` (also with no command), `sandbox` or `webhook`.
    ///
    /// # Errors
    ///
    /// The command's error, as one line.
    pub async fn execute(self) -> anyhow::Result<()> {
        match self.command {
            Some(Command::Run(args)) => run(args).await,
            #[cfg(feature = "sandbox")]
            Some(Command::Sandbox(args)) => kube_manager::embedded::run(&args.common, sandbox::Sample).await,
            Some(Command::Webhook(args)) => webhook(args).await,
            None => run(self.run).await,
        }
    }
}
