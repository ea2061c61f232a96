//! A controller on the embedded API server, with no cluster: each binary's `sandbox` command
//! (the `sandbox` feature).
//!
//! [`run`] starts the sandbox over HTTPS on loopback (its own CA, in the kubeconfig) and writes a
//! kubeconfig (mode 0600) as `kube-sandbox` does (`kube_sandbox_server`, whose flags it shares),
//! prepares what the controller needs (a CRD), runs the controller in-process against it *over
//! HTTPS* — the path a real cluster takes — and either prints the kubectl commands of the
//! walkthrough and waits for a signal, or with `--demo` plays the walkthrough itself and prints
//! what converged and how long it took. A controller supplies only what is its own, as a
//! [`Walkthrough`]; [`step`] and [`follow`] print its steps as kubectl would.

use std::time::{Duration, Instant};

use clap::Args;
use kube::Client;
use kube_sandbox_server::ServerArgs;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::client::{self, Agent};
use crate::logging::LogFormat;
use crate::signal::shutdown_signal;

/// Flags of `sandbox`: the sandbox's own ([`ServerArgs`], as `kube-sandbox` has them) and the
/// controller's. A binary may give its own defaults with clap's `mut_arg`.
#[derive(Debug, Args, Clone)]
pub struct SandboxArgs {
    /// Where the sandbox listens, its kubeconfig, the cluster it simulates.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Serve the API only; do not run the controller.
    #[arg(long)]
    pub no_controller: bool,
    /// Play the walkthrough, print what converged, and exit.
    #[arg(long)]
    pub demo: bool,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
}

/// What a controller brings to [`run`]: how to start it, and its walkthrough.
///
/// ## Warning
///
/// [`start`](Self::start) must return a task that ends once `stop` is cancelled and the
/// controller has finished its reconciles in flight: [`run`] awaits it before it stops the
/// server.
pub trait Walkthrough {
    /// The walkthrough's error; the runner's own errors convert into it.
    type Error: From<Error>;

    /// Who the in-process controller's and the walkthrough's requests say they are.
    fn agent(&self) -> Agent;

    /// What must exist before the controller starts (a CRD); nothing by default.
    fn prepare(&self, client: &Client) -> impl Future<Output = Result<(), Self::Error>> {
        let _ = client;
        async { Ok(()) }
    }

    /// Starts the controller on `client` until `stop` is cancelled.
    fn start(&self, client: Client, stop: CancellationToken) -> JoinHandle<()>;

    /// The kubectl commands of the walkthrough, printed when it is played by hand.
    fn by_hand(&self) -> Vec<String>;

    /// Plays the walkthrough through `client` (the same HTTPS API kubectl uses).
    fn demo(&self, client: &Client) -> impl Future<Output = Result<(), Self::Error>>;
}

/// `<binary> sandbox`: serves the sandbox, runs the controller on it, and plays or prints the
/// walkthrough; returns after the demo, or on SIGINT or SIGTERM.
///
/// # Errors
///
/// The address cannot be bound or is not loopback without `--allow-remote`, the kubeconfig
/// cannot be written, `--demo` with `--no-controller`, or the walkthrough's own error.
pub async fn run<W: Walkthrough>(args: &SandboxArgs, walkthrough: W) -> Result<(), W::Error> {
    if args.demo && args.no_controller {
        return Err(Error::DemoWithoutController.into());
    }
    // Listening before the kubeconfig is printed: a signal sent as soon as it appears is ours.
    // Not for the demo, which a signal ends as any program's.
    let signal = (!args.demo).then(shutdown_signal);
    let running = args.server.start().await.map_err(Error::from)?;
    let result = async {
        let client = client::client(walkthrough.agent(), Some(running.kubeconfig())).await?;
        walkthrough.prepare(&client).await?;
        let stop = CancellationToken::new();
        let controller = (!args.no_controller).then(|| walkthrough.start(client.clone(), stop.clone()));
        let result = if args.demo {
            walkthrough.demo(&client).await
        } else {
            println!("# the walkthrough, in a second terminal:");
            for line in walkthrough.by_hand() {
                println!("{line}");
            }
            if let Some(signal) = signal {
                signal.await;
            }
            Ok(())
        };
        stop.cancel();
        if let Some(c) = controller {
            let _ = c.await;
        }
        result
    }
    .await;
    running.shutdown();
    result
}

/// Prints the pods `selector` selects as `kubectl get pods -o wide` shows them: on the sandbox's
/// simulated nodes, with their addresses.
///
/// # Errors
///
/// The list fails.
pub async fn print_pods(client: &Client, selector: &str) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::Pod;
    let pods: kube::Api<Pod> = kube::Api::default_namespaced(client.clone());
    let list = pods.list(&kube::api::ListParams::default().labels(selector)).await?;
    println!("    $ kubectl get pods -l {selector} -o wide");
    println!("    {:<28} {:<6} {:<12} {:<9} {:<14} NODE", "NAME", "READY", "STATUS", "RESTARTS", "IP");
    for pod in list.items {
        let status = pod.status.clone().unwrap_or_default();
        let containers = status.container_statuses.clone().unwrap_or_default();
        let ready = containers.iter().filter(|c| c.ready).count();
        let restarts: i32 = containers.iter().map(|c| c.restart_count).sum();
        let shown = if pod.metadata.deletion_timestamp.is_some() {
            "Terminating".to_owned()
        } else {
            status.phase.unwrap_or_default()
        };
        println!(
            "    {:<28} {:<6} {:<12} {:<9} {:<14} {}",
            pod.metadata.name.unwrap_or_default(),
            format!("{ready}/{}", containers.len().max(1)),
            shown,
            restarts,
            status.pod_ip.unwrap_or_else(|| "<none>".into()),
            pod.spec.and_then(|s| s.node_name).unwrap_or_else(|| "<none>".into()),
        );
    }
    Ok(())
}

/// One step of a walkthrough: prints `title`, runs `f`, prints how long it took to converge.
///
/// # Errors
///
/// `f`'s.
pub async fn step<E>(title: &str, f: impl Future<Output = Result<(), E>>) -> Result<(), E> {
    println!("==> {title}");
    let start = Instant::now();
    f.await?;
    println!("    converged in {:.2}s", start.elapsed().as_secs_f64());
    Ok(())
}

/// Polls `observe` every 50 ms until `done` holds, printing `show` of what it sees each time it
/// changes from the last (at first, from `T::default()`: "not there yet" is not printed), as
/// `kubectl get -w` would.
///
/// # Errors
///
/// A failed read, or `what` not converged within `limit` ([`Error::NotConverged`], with the
/// last state seen).
pub async fn follow<T, E, Fut>(
    what: &str,
    limit: Duration,
    mut observe: impl FnMut() -> Fut,
    show: impl Fn(&T) -> String,
    done: impl Fn(&T) -> bool,
) -> Result<(), E>
where
    T: PartialEq + Default + std::fmt::Debug,
    E: From<Error>,
    Fut: Future<Output = Result<T, E>>,
{
    let start = Instant::now();
    let mut last = T::default();
    loop {
        let now = observe().await?;
        if now != last {
            println!("    {}", show(&now));
        }
        if done(&now) {
            return Ok(());
        }
        if start.elapsed() > limit {
            let last = format!("{now:?}");
            return Err(Error::NotConverged { what: what.to_owned(), limit, last }.into());
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
