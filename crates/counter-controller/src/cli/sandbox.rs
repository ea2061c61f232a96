//! `counter-controller sandbox`: the seed's live walkthrough with no cluster.
//!
//! The `kube-manager` crate's runner serves the embedded API server over HTTPS on loopback and runs
//! the controller in-process against it; this is what is the counter's: the controller on the
//! sandbox, the kubectl commands of the walkthrough, and with `--demo` the walkthrough played —
//! apply, scale to 5, delete — printing what converged and how long it took.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use kube_manager::client::Agent;
use kube_manager::embedded::{Walkthrough, follow, print_pods, step};
use kube_manager::{Options, Scope};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::annotation::ANNOTATION;
use crate::controller::{AGENT, Controller};

/// The counter on the sandbox: its controller in `default`, and the seed's walkthrough.
pub struct Counter;

impl Walkthrough for Counter {
    type Error = anyhow::Error;

    fn agent(&self) -> Agent {
        AGENT
    }

    fn start(&self, client: Client, stop: CancellationToken) -> JoinHandle<()> {
        let mut registry = prometheus_client::registry::Registry::default();
        let options = Options { scope: Scope::Namespace("default".into()), ..Options::default() };
        let c = Controller::new(client, options, &mut registry);
        tokio::spawn(async move {
            c.run(stop.cancelled_owned()).await;
        })
    }

    fn by_hand(&self) -> Vec<String> {
        vec![
            "kubectl apply -f examples/cm-web.yaml".into(),
            "kubectl get deploy web -w".into(),
            format!("kubectl annotate cm web {ANNOTATION}=5 --overwrite"),
            "kubectl get deploy web -w".into(),
            "kubectl delete cm web".into(),
            "kubectl get deploy web".into(),
        ]
    }

    async fn demo(&self, client: &Client) -> anyhow::Result<()> {
        demo(client).await
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
        follow_web(&deploys, Some(3), limit).await?;
        // On the simulated nodes the Deployment is real pods.
        print_pods(client, "app=web").await?;
        anyhow::Ok(())
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
        anyhow::Ok(())
    })
    .await?;
    println!("demo complete: created 3, scaled to 5, deleted with its ConfigMap");
    Ok(())
}
