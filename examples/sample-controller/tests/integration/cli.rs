//! The command line and what the process shows of itself: fail-fast checks in one line, and the
//! metrics under this controller's own names.

use std::process::Command;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube_manager::Scope;
use kube_sandbox::Sandbox;
use sample_controller::cli::preflight;
use sample_controller::{Controller, Foo, FooSpec, Options, foo};
use tokio_util::sync::CancellationToken;

const BIN: &str = env!("CARGO_BIN_EXE_sample-controller");

#[test]
fn bad_flags_end_in_one_line_and_a_non_zero_exit() {
    let out = Command::new(BIN).args(["run", "--workers", "0"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--workers"), "{err}");
    let out = Command::new(BIN).args(["run", "--kubeconfig", "/nonexistent/kubeconfig"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
}

#[tokio::test]
async fn preflight_names_a_missing_crd_or_namespace() {
    let sb = Sandbox::new();
    let client = sb.client();
    let e = preflight(&client, &Scope::Namespace("default".into())).await.unwrap_err().to_string();
    assert!(e.contains("foos.samplecontroller.k8s.io") && e.contains("deploy/crd.yaml"), "{e}");
    let e = preflight(&client, &Scope::Namespace("nope".into())).await.unwrap_err().to_string();
    assert_eq!(e, r#"namespace "nope" does not exist"#);

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &foo::crd()).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Err(e) = preflight(&client, &Scope::All).await {
        assert!(tokio::time::Instant::now() < deadline, "the CRD is never served: {e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    preflight(&client, &Scope::Namespace("default".into())).await.unwrap();
}

#[tokio::test]
async fn metrics_are_under_the_controller_s_own_name() {
    let sb = Sandbox::new();
    let crds: Api<CustomResourceDefinition> = Api::all(sb.client());
    crds.create(&PostParams::default(), &foo::crd()).await.unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    let controller = Controller::new(sb.client(), Options::default(), &mut registry);
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(stop.clone().cancelled_owned()));
    let foos: Api<Foo> = Api::default_namespaced(sb.client());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let f = Foo::new("m", FooSpec { deployment_name: "m".into(), replicas: 1 });
    while foos.create(&PostParams::default(), &f).await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "the CRD is never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = loop {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        if text.contains(
            r#"controller_runtime_reconcile_total{controller="sample-controller",result="success"} "#,
        ) && !text.contains(r#"result="success"} 0"#)
        {
            break text;
        }
        assert!(tokio::time::Instant::now() < deadline, "no successful sync counted:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(text.contains(r#"workqueue_adds_total{name="sample-controller"}"#), "{text}");
    assert!(text.contains("sample_controller_"), "shard metrics under sample_controller_: {text}");
    stop.cancel();
    task.await.unwrap();
}
