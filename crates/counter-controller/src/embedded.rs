//! `counter-controller sandbox`: the seed's live walkthrough with no cluster.
//!
//! Starts the embedded API server over HTTPS on loopback (its own CA, in the kubeconfig), writes a
//! kubeconfig (mode 0600), runs the controller in-process against it *over HTTPS* (the same path a
//! real cluster would take), and
//! prints the `export KUBECONFIG=...` line and the kubectl commands of the walkthrough. With
//! `--demo` it plays the walkthrough itself — apply, scale to 5, delete — and prints what
//! converged and how long it took.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use sandbox::{Rollout, Sandbox, SandboxConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::annotation::ANNOTATION;
use crate::cli::{LogFormat, parse_duration, shutdown_signal};
use crate::controller::{Controller, Options, Scope};

/// Flags of `sandbox`.
#[derive(Debug, Args, Clone)]
pub struct SandboxArgs {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Allow listening on a non-loopback address (anyone who can reach it and has the token can
    /// use the sandbox: TLS with its own CA, one bearer token, no authorization).
    #[arg(long)]
    pub allow_remote: bool,
    /// Where to write the kubeconfig (mode 0600).
    #[arg(long, default_value = "./sandbox.kubeconfig", value_name = "PATH")]
    pub kubeconfig_out: PathBuf,
    /// Serve the API only; do not run the controller.
    #[arg(long)]
    pub no_controller: bool,
    /// Play the walkthrough (apply, scale to 5, delete), print what converged, and exit.
    #[arg(long)]
    pub demo: bool,
    /// Time for one simulated pod to become ready.
    #[arg(long, default_value = "300ms", value_parser = parse_duration)]
    pub pod_ready: Duration,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
}

/// `counter-controller sandbox`.
///
/// # Errors
///
/// The address cannot be bound or is not loopback without `--allow-remote`, the kubeconfig
/// cannot be written, or the demo does not converge.
pub async fn run(args: SandboxArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() {
        if !args.allow_remote {
            bail!("refusing to listen on {} (not loopback) without --allow-remote", args.listen);
        }
        tracing::warn!(listen = %args.listen, "the sandbox is reachable from other machines: anyone with its bearer token may do anything");
    }
    let sb = Sandbox::with_config(SandboxConfig {
        rollout: Rollout::Paced(args.pod_ready),
        ..SandboxConfig::default()
    });
    let (server, kubeconfig) = serve(&sb, args.listen, &args.kubeconfig_out).await?;
    if !args.demo {
        println!("# the walkthrough (seed section 9), in a second terminal:");
        println!("kubectl apply -f examples/cm-web.yaml");
        println!("kubectl get deploy web -w");
        println!("kubectl annotate cm web {ANNOTATION}=5 --overwrite");
        println!("kubectl get deploy web -w");
        println!("kubectl delete cm web");
        println!("kubectl get deploy web");
    }

    let client = crate::client::client(Some(&kubeconfig)).await?;
    let stop = CancellationToken::new();
    let controller = if args.no_controller {
        None
    } else {
        let mut registry = prometheus_client::registry::Registry::default();
        let options = Options { scope: Scope::Namespace("default".into()), ..Options::default() };
        let c = Controller::new(client.clone(), options, &mut registry);
        Some(tokio::spawn(Arc::clone(&c).run(stop.clone().cancelled_owned())))
    };

    let result = if args.demo {
        if controller.is_none() {
            bail!("--demo needs the controller; drop --no-controller");
        }
        demo(&client).await
    } else {
        shutdown_signal().await;
        Ok(())
    };
    stop.cancel();
    if let Some(c) = controller {
        let _ = c.await;
    }
    server.shutdown();
    result
}

/// Serves `sb` over HTTPS on `listen` and writes a kubeconfig for it to `kubeconfig_out`;
/// prints the URL and the `export KUBECONFIG=…` line. Returns the server (its `shutdown` stops
/// it) and the kubeconfig's absolute path.
///
/// # Errors
///
/// The address cannot be bound, or the kubeconfig cannot be written; each names its input.
pub async fn serve(
    sb: &Sandbox,
    listen: SocketAddr,
    kubeconfig_out: &Path,
) -> anyhow::Result<(sandbox::server::HttpServer, PathBuf)> {
    let server = sb
        .serve(listen, sandbox::server::new_token())
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    sandbox::server::write_kubeconfig(kubeconfig_out, &server)
        .with_context(|| format!("cannot write kubeconfig {}", kubeconfig_out.display()))?;
    let kubeconfig = std::fs::canonicalize(kubeconfig_out).unwrap_or_else(|_| kubeconfig_out.to_owned());
    println!("sandbox API server listening on {}", server.url());
    println!("export KUBECONFIG={}", kubeconfig.display());
    Ok((server, kubeconfig))
}

/// One step of a walkthrough: prints `title`, runs `f`, prints how long it took to converge.
///
/// # Errors
///
/// `f`'s.
pub async fn step(title: &str, f: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
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
/// A failed read, or `what` not converged within `limit` (with the last state seen).
pub async fn follow<T, Fut>(
    what: &str,
    limit: Duration,
    mut observe: impl FnMut() -> Fut,
    show: impl Fn(&T) -> String,
    done: impl Fn(&T) -> bool,
) -> anyhow::Result<()>
where
    T: PartialEq + Default + std::fmt::Debug,
    Fut: Future<Output = anyhow::Result<T>>,
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
            bail!("{what} did not converge within {limit:?} (last: {now:?})");
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Follows `web` until it runs `want` replicas, all ready (`None`: until it is gone).
async fn follow_web(deploys: &Api<Deployment>, want: Option<i32>, limit: Duration) -> anyhow::Result<()> {
    let observe = || async {
        let d = deploys.get_opt("web").await?;
        Ok(d.map(|d| {
            (d.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0), d.spec.replicas.unwrap_or(1))
        }))
    };
    let show = |now: &Option<(i32, i32)>| match now {
        Some((r, w)) => format!("deploy/web READY {r}/{w}"),
        None => "deploy/web: not found".to_owned(),
    };
    let done = |now: &Option<(i32, i32)>| match (want, now) {
        (None, None) => true,
        (Some(n), Some((r, w))) => *r == n && *w == n,
        _ => false,
    };
    follow(&format!("deploy/web to {want:?}"), limit, observe, show, done).await
}

/// The walkthrough, through the same HTTP API kubectl uses.
async fn demo(client: &Client) -> anyhow::Result<()> {
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    let limit = Duration::from_secs(60);
    // The same object as examples/cm-web.yaml.
    let manifest = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "web", "namespace": "default", "annotations": { ANNOTATION: "3" } },
        "data": { "app": "web" },
    });
    step("kubectl apply -f examples/cm-web.yaml   (desired 3)", async {
        cms.patch("web", &PatchParams::apply("kubectl").force(), &Patch::Apply(&manifest)).await?;
        println!("    configmap/web created");
        follow_web(&deploys, Some(3), limit).await
    })
    .await?;
    step(&format!("kubectl annotate cm web {ANNOTATION}=5 --overwrite"), async {
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: "5" } } });
        cms.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        println!("    configmap/web annotated");
        follow_web(&deploys, Some(5), limit).await
    })
    .await?;
    step("kubectl delete cm web", async {
        let gone = cms.delete("web", &DeleteParams::default()).await?;
        println!(
            "    configmap \"{}\" deleted",
            gone.left().map(|c| c.name_any()).unwrap_or_else(|| "web".into())
        );
        follow_web(&deploys, None, limit).await?;
        println!("    Error from server (NotFound): deployments.apps \"web\" not found");
        Ok(())
    })
    .await?;
    println!("demo complete: created 3, scaled to 5, deleted with its ConfigMap");
    Ok(())
}
