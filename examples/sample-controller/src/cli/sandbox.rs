//! `sample-controller sandbox`: the Foo walkthrough with no cluster.
//!
//! The `kube-manager` crate's runner serves the embedded API server over HTTPS on loopback and runs
//! the controller in-process against it, as for `counter-controller sandbox`; this is what is the
//! Foo's: the CRD installed first, the controller, and the walkthrough — create a Foo with one
//! replica, scale it to three, delete it — played with `--demo`, printing each step and how
//! long it took to converge; without, the kubectl commands to play it by hand.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use kube_manager::client::Agent;
use kube_manager::embedded::{SandboxArgs, Walkthrough, follow, step};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::controller::{AGENT, Controller, Options};
use crate::foo::{self, Foo, FooSpec};

/// The walkthrough's Foo, as upstream's `artifacts/examples/example-foo.yaml`.
const NAME: &str = "example-foo";
/// How long a step may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Flags of `sandbox`: the shared ones, with this controller's defaults.
#[derive(Debug, Args, Clone)]
#[command(
    mut_arg("listen", |a| a.default_value("127.0.0.1:0")),
    mut_arg("kubeconfig_out", |a| a.default_value("./sample-controller.kubeconfig")),
    mut_arg("pod_ready", |a| a.default_value("200ms"))
)]
pub struct SampleSandboxArgs {
    /// The `sandbox` flags every controller of these parts shares.
    #[command(flatten)]
    pub common: SandboxArgs,
}

/// The Foo controller on the sandbox: the CRD, the controller in `default`, the walkthrough.
pub struct Sample;

impl Walkthrough for Sample {
    type Error = anyhow::Error;

    fn agent(&self) -> Agent {
        AGENT
    }

    async fn prepare(&self, client: &Client) -> anyhow::Result<()> {
        step("kubectl apply -f examples/sample-controller/deploy/crd.yaml", install_crd(client)).await
    }

    fn start(&self, client: Client, stop: CancellationToken) -> JoinHandle<()> {
        let mut registry = prometheus_client::registry::Registry::default();
        let controller = Controller::new(client, Options::default(), &mut registry);
        tokio::spawn(async move {
            controller.run(stop.cancelled_owned()).await;
        })
    }

    fn by_hand(&self) -> Vec<String> {
        vec![
            "kubectl apply -f examples/sample-controller/example-foo.yaml".into(),
            "kubectl get foo,deploy -w".into(),
            format!("kubectl patch foo {NAME} --type=merge -p '{{\"spec\":{{\"replicas\":3}}}}'"),
            format!("kubectl delete foo {NAME}"),
        ]
    }

    async fn demo(&self, client: &Client) -> anyhow::Result<()> {
        demo(client).await
    }
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
        anyhow::Ok(())
    })
    .await?;
    println!("demo complete: a Deployment for the Foo, scaled to 3, garbage-collected with it");
    Ok(())
}
