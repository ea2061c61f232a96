//! `counter-controller sandbox`: the seed's live walkthrough with no cluster.
//!
//! Starts the embedded API server over HTTPS on loopback (its own CA, in the kubeconfig), writes a
//! kubeconfig (mode 0600), runs the controller in-process against it *over HTTPS* (the same path a
//! real cluster would take), and
//! prints the `export KUBECONFIG=...` line and the kubectl commands of the walkthrough. With
//! `--demo` it plays the walkthrough itself — apply, scale to 5, delete — and prints what
//! converged and how long it took.

use std::net::SocketAddr;
use std::path::PathBuf;
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
    let token = sandbox::server::new_token();
    let server =
        sb.serve(args.listen, token).await.with_context(|| format!("cannot listen on {}", args.listen))?;
    sandbox::server::write_kubeconfig(&args.kubeconfig_out, &server)
        .with_context(|| format!("cannot write kubeconfig {}", args.kubeconfig_out.display()))?;
    let kubeconfig =
        std::fs::canonicalize(&args.kubeconfig_out).unwrap_or_else(|_| args.kubeconfig_out.clone());

    println!("sandbox API server listening on {}", server.url());
    println!("export KUBECONFIG={}", kubeconfig.display());
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

fn ready(d: &Deployment) -> (i32, i32) {
    let want = d.spec.replicas.unwrap_or(1);
    (d.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0), want)
}

/// Polls `web` until `done` says so, printing READY each time it changes.
async fn follow(deploys: &Api<Deployment>, want: Option<i32>, limit: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut last = None;
    loop {
        let d = deploys.get_opt("web").await?;
        let now = d.as_ref().map(ready);
        if now != last {
            match now {
                Some((r, w)) => println!("    deploy/web READY {r}/{w}"),
                None => println!("    deploy/web: not found"),
            }
            last = now;
        }
        let done = match (want, now) {
            (None, None) => true,
            (Some(n), Some((r, w))) => r == n && w == n,
            _ => false,
        };
        if done {
            return Ok(());
        }
        if start.elapsed() > limit {
            bail!("deploy/web did not converge to {want:?} within {limit:?} (last: {now:?})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn step(title: &str, f: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    println!("==> {title}");
    let start = Instant::now();
    f.await?;
    println!("    converged in {:.2}s", start.elapsed().as_secs_f64());
    Ok(())
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
        follow(&deploys, Some(3), limit).await
    })
    .await?;
    step(&format!("kubectl annotate cm web {ANNOTATION}=5 --overwrite"), async {
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: "5" } } });
        cms.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        println!("    configmap/web annotated");
        follow(&deploys, Some(5), limit).await
    })
    .await?;
    step("kubectl delete cm web", async {
        let gone = cms.delete("web", &DeleteParams::default()).await?;
        println!(
            "    configmap \"{}\" deleted",
            gone.left().map(|c| c.name_any()).unwrap_or_else(|| "web".into())
        );
        follow(&deploys, None, limit).await?;
        println!("    Error from server (NotFound): deployments.apps \"web\" not found");
        Ok(())
    })
    .await?;
    println!("demo complete: created 3, scaled to 5, deleted with its ConfigMap");
    Ok(())
}
