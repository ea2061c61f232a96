//! `sample-controller sandbox`: the Foo walkthrough with no cluster.
//!
//! Starts the embedded API server over HTTPS on loopback (as `counter-controller sandbox` does),
//! writes a kubeconfig (mode 0600), installs the Foo CRD and runs the controller in-process
//! against it over HTTPS — the path a real cluster takes. With `--demo` it plays the walkthrough:
//! create a Foo with one replica, scale it to three, delete it, printing each step and how long
//! it took to converge; without, it prints the kubectl commands to play it by hand.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use counter_controller::cli::{LogFormat, parse_duration, shutdown_signal};
use counter_controller::embedded::{follow, serve, step};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use sandbox::{Rollout, Sandbox, SandboxConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::controller::{Controller, Options};
use crate::foo::{self, Foo, FooSpec};

/// The walkthrough's Foo, as upstream's `artifacts/examples/example-foo.yaml`.
const NAME: &str = "example-foo";
/// How long a step may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Flags of `sandbox`.
#[derive(Debug, Args, Clone)]
pub struct SandboxArgs {
    /// Address to listen on (loopback); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write the kubeconfig (mode 0600).
    #[arg(long, default_value = "./sample-controller.kubeconfig", value_name = "PATH")]
    pub kubeconfig_out: PathBuf,
    /// Play the walkthrough (create a Foo, scale it to 3, delete it), print what converged, exit.
    #[arg(long)]
    pub demo: bool,
    /// Time for one simulated pod to become ready.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub pod_ready: Duration,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
}

/// `sample-controller sandbox`.
///
/// # Errors
///
/// The address cannot be bound or is not loopback, the kubeconfig cannot be written, the CRD is
/// refused, or the walkthrough does not converge.
pub async fn run(args: SandboxArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() {
        bail!("refusing to listen on {} (not loopback): the sandbox has no authorization", args.listen);
    }
    let sb = Sandbox::with_config(SandboxConfig {
        rollout: Rollout::Paced(args.pod_ready),
        ..SandboxConfig::default()
    });
    let (server, kubeconfig) = serve(&sb, args.listen, &args.kubeconfig_out).await?;

    let client = counter_controller::client::client(Some(&kubeconfig)).await?;
    let result = async {
        step("kubectl apply -f examples/sample-controller/deploy/crd.yaml", install_crd(&client)).await?;
        let mut registry = prometheus_client::registry::Registry::default();
        let controller = Controller::new(client.clone(), Options::default(), &mut registry);
        let stop = CancellationToken::new();
        let running = tokio::spawn(Arc::clone(&controller).run(stop.clone().cancelled_owned()));
        let result = if args.demo {
            demo(&client).await
        } else {
            println!("# in a second terminal:");
            println!("kubectl apply -f examples/sample-controller/example-foo.yaml");
            println!("kubectl get foo,deploy -w");
            println!("kubectl patch foo {NAME} --type=merge -p '{{\"spec\":{{\"replicas\":3}}}}'");
            println!("kubectl delete foo {NAME}");
            shutdown_signal().await;
            Ok(())
        };
        stop.cancel();
        let _ = running.await;
        result
    }
    .await;
    server.shutdown();
    result
}

/// Creates the Foo CRD and waits until it is established.
async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.create(&PostParams::default(), &foo::crd()).await.context("the Foo CRD was refused")?;
    let name = crd.name_any();
    println!("    customresourcedefinition.apiextensions.k8s.io/{name} created");
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(LIMIT, established).await.context("the Foo CRD was not established")??;
    println!("    condition met: Established");
    Ok(())
}

/// What the walkthrough watches: the Deployment's READY and the Foo's available replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    ready: i32,
    replicas: i32,
    available: Option<i32>,
}

async fn seen(foos: &Api<Foo>, deploys: &Api<Deployment>) -> anyhow::Result<Option<Seen>> {
    let Some(d) = deploys.get_opt(NAME).await? else { return Ok(None) };
    let foo = foos.get_opt(NAME).await?;
    Ok(Some(Seen {
        ready: d.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        replicas: d.spec.replicas.unwrap_or(1),
        available: foo.and_then(|f| f.status).map(|s| s.available_replicas),
    }))
}

/// Follows until the Deployment runs `want` replicas, all ready, and the Foo's status says so
/// (`None`: until the Deployment is gone).
async fn follow_foo(foos: &Api<Foo>, deploys: &Api<Deployment>, want: Option<i32>) -> anyhow::Result<()> {
    let show = |now: &Option<Seen>| match now {
        Some(s) => format!(
            "deploy/{NAME} READY {}/{}   foo/{NAME} availableReplicas {}",
            s.ready,
            s.replicas,
            s.available.map_or_else(|| "-".into(), |a| a.to_string())
        ),
        None => format!("deploy/{NAME}: not found"),
    };
    let done = |now: &Option<Seen>| match (want, now) {
        (None, None) => true,
        (Some(n), Some(s)) => s.ready == n && s.replicas == n && s.available == Some(n),
        _ => false,
    };
    follow(&format!("{NAME} to {want:?}"), LIMIT, || seen(foos, deploys), show, done).await
}

/// The walkthrough, through the same HTTPS API kubectl uses.
async fn demo(client: &Client) -> anyhow::Result<()> {
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    step("kubectl apply -f examples/sample-controller/example-foo.yaml   (replicas 1)", async {
        let foo = Foo::new(NAME, FooSpec { deployment_name: NAME.into(), replicas: 1 });
        foos.create(&PostParams::default(), &foo).await?;
        println!("    foo.samplecontroller.k8s.io/{NAME} created");
        follow_foo(&foos, &deploys, Some(1)).await
    })
    .await?;
    step(&format!("kubectl patch foo {NAME} --type=merge -p '{{\"spec\":{{\"replicas\":3}}}}'"), async {
        let patch = json!({ "spec": { "replicas": 3 } });
        foos.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        println!("    foo.samplecontroller.k8s.io/{NAME} patched");
        follow_foo(&foos, &deploys, Some(3)).await
    })
    .await?;
    step(&format!("kubectl delete foo {NAME}"), async {
        foos.delete(NAME, &DeleteParams::default()).await?;
        println!("    foo.samplecontroller.k8s.io \"{NAME}\" deleted");
        follow_foo(&foos, &deploys, None).await?;
        println!("    the garbage collector deleted deploy/{NAME} (its ownerReference named the Foo)");
        Ok(())
    })
    .await?;
    println!("demo complete: a Deployment for the Foo, scaled to 3, garbage-collected with it");
    Ok(())
}
