//! `deploy/`: every file the kustomization names exists and parses, the Deployment's arguments
//! are ones the binary accepts, and the Roles allow every request the controller sends in a run
//! on the sandbox (leader-elected, as deployed: create, scale, status, a Deployment it does not
//! control, Events).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_coordination::Membership;
use kube_lease_election::ElectionConfig;
use sample_controller::cli::Cli;
use sample_controller::{Controller, Foo, FooSpec, Options};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{client_as, sandbox_with_crd, until};

const AGENT: &str = "sample-controller-under-test";

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn documents(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy_dir().join(file)).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn the_kustomization_names_files_that_parse() {
    let k = &documents("kustomization.yaml")[0];
    let resources = k["resources"].as_array().unwrap();
    for r in resources {
        let file = r.as_str().unwrap();
        let docs = documents(file);
        assert!(docs.iter().all(|d| d["kind"].is_string()), "{file}: every document has a kind");
    }
    assert!(resources.iter().any(|r| r == "crd.yaml"));
}

#[test]
fn the_deployment_s_arguments_parse() {
    let d = &documents("deployment.yaml")[0];
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let argv = std::iter::once("sample-controller").chain(args.iter().copied());
    if let Err(e) = Cli::try_parse_from(argv) {
        panic!("deploy/deployment.yaml args {args:?}: {e}");
    }
    assert_eq!(d["spec"]["template"]["spec"]["serviceAccountName"], "sample-controller");
}

/// `(namespace, apiGroup, resource, verb)` the Roles of `rbac.yaml` allow.
fn allowed() -> BTreeSet<(String, String, String, String)> {
    let mut set = BTreeSet::new();
    for role in documents("rbac.yaml").into_iter().filter(|d| d["kind"] == "Role") {
        let ns = role["metadata"]["namespace"].as_str().unwrap().to_owned();
        for rule in role["rules"].as_array().unwrap() {
            let strings = |k: &str| -> Vec<String> {
                rule[k].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
            };
            for g in strings("apiGroups") {
                for r in strings("resources") {
                    for v in strings("verbs") {
                        set.insert((ns.clone(), g.clone(), r.clone(), v));
                    }
                }
            }
        }
    }
    set
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roles_allow_every_request_the_controller_sends() {
    let sb = sandbox_with_crd().await;
    let admin = sb.client();
    let ns: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": "sample-controller" } })).unwrap();
    Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &ns).await.unwrap();
    let foos: Api<Foo> = Api::default_namespaced(admin.clone());

    // As deploy/deployment.yaml runs it: leader-elected, its Lease in its own namespace.
    let mut registry = prometheus_client::registry::Registry::default();
    let config = ElectionConfig::new("sample-controller", "sample-controller", "replica");
    let membership = Membership::elected(client_as(&sb, AGENT, None), config, &mut registry).unwrap();
    let client = client_as(&sb, AGENT, membership.fence());
    sample_controller::cli::preflight(&client, &kube_manager::Scope::Namespace("default".into()))
        .await
        .unwrap();
    let controller = Controller::new(client, Options::default(), &mut registry);
    let stop = CancellationToken::new();
    let shutdown = stop.clone().cancelled_owned();
    let task = tokio::spawn(membership.run(|how| controller.run_coordinated(how, shutdown)));

    let deploys: Api<Deployment> = Api::default_namespaced(admin.clone());
    let theirs: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "taken" },
        "spec": { "selector": { "matchLabels": { "app": "t" } },
                  "template": { "metadata": { "labels": { "app": "t" } },
                                "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } },
    }))
    .unwrap();
    deploys.create(&PostParams::default(), &theirs).await.unwrap();
    for (name, deployment) in [("mine", "mine"), ("clash", "taken")] {
        let f = Foo::new(name, FooSpec { deployment_name: deployment.into(), replicas: 1 });
        foos.create(&PostParams::default(), &f).await.unwrap();
    }
    until("mine is available", || async {
        foos.get("mine").await.unwrap().status.is_some_and(|s| s.available_replicas == 1)
    })
    .await;
    let scale = json!({ "spec": { "replicas": 2 } });
    foos.patch("mine", &PatchParams::default(), &Patch::Merge(&scale)).await.unwrap();
    until("mine scaled", || async {
        foos.get("mine").await.unwrap().status.is_some_and(|s| s.available_replicas == 2)
    })
    .await;
    let warned = || async {
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::default_namespaced(admin.clone());
        let list = events.list(&Default::default()).await.unwrap().items;
        list.iter().any(|e| e.reason.as_deref() == Some("ErrResourceExists"))
    };
    until("the clash is reported", warned).await;
    foos.delete("mine", &DeleteParams::default()).await.unwrap();
    until("mine's Deployment is collected", || async { deploys.get_opt("mine").await.unwrap().is_none() })
        .await;
    stop.cancel();
    task.await.unwrap();

    let allowed = allowed();
    let sent: Vec<_> = sb.requests().all().into_iter().filter(|r| r.user_agent == AGENT).collect();
    assert!(sent.iter().any(|r| r.resource == "deployments" && r.verb == "create"), "a real run: {sent:?}");
    let mut refused = BTreeSet::new();
    for r in &sent {
        let resource = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        // A GET of a namespace is authorized in that namespace (a Role there may grant it).
        let ns = if r.resource == "namespaces" { r.name.clone() } else { r.namespace.clone() };
        let want = (ns, r.group.clone(), resource, r.verb.clone());
        if !allowed.contains(&want) {
            refused.insert(want);
        }
    }
    assert!(refused.is_empty(), "deploy/rbac.yaml does not allow: {refused:?}");
}
