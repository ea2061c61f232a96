//! `deploy/crd.yaml` is the CRD the code generates, and the API server accepts it.
//!
//! To regenerate the file after changing `Foo`:
//! `SAMPLE_CONTROLLER_WRITE_CRD=1 cargo test -p sample-controller --test integration crd::`.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use sample_controller::foo;
use serde_json::Value;

const WRITE: &str = "SAMPLE_CONTROLLER_WRITE_CRD";

fn shipped() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/crd.yaml")
}

#[test]
fn the_shipped_crd_yaml_is_the_generated_crd() {
    let generated = serde_json::to_value(foo::crd()).unwrap();
    let path = shipped();
    if std::env::var_os(WRITE).is_some() {
        let yaml = serde_saphyr::to_string(&generated).unwrap();
        let header = "# Generated from src/foo.rs (`Foo::crd()` plus the api-approved annotation); do not edit.\n\
                      # Regenerate: SAMPLE_CONTROLLER_WRITE_CRD=1 cargo test -p sample-controller --test integration crd::\n";
        std::fs::write(&path, format!("{header}{yaml}")).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let on_disk: Value = serde_saphyr::from_str(&text).unwrap_or(Value::Null);
    assert!(
        on_disk == generated,
        "{} differs from the CRD src/foo.rs generates; regenerate it with\n  \
         {WRITE}=1 cargo test -p sample-controller --test integration crd::",
        path.display()
    );
}

#[test]
fn the_crd_has_what_upstream_has() {
    let crd = foo::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("foos.samplecontroller.k8s.io"));
    assert_eq!(
        crd.metadata.annotations.unwrap().get(foo::API_APPROVED.0).map(String::as_str),
        Some(foo::API_APPROVED.1)
    );
    assert_eq!(crd.spec.scope, "Namespaced");
    let v = &crd.spec.versions[0];
    assert_eq!(v.name, "v1alpha1");
    assert!(v.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(), "status subresource");
    let schema = serde_json::to_value(v.schema.as_ref().unwrap()).unwrap();
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["properties"]["deploymentName"]["minLength"], 1);
    // JSONSchemaProps' `minimum` is a float64, as upstream's.
    assert_eq!(spec["properties"]["replicas"]["minimum"].as_f64(), Some(0.0));
    let required: Vec<&str> = spec["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(required.contains(&"deploymentName") && required.contains(&"replicas"), "{required:?}");
}

#[tokio::test]
async fn the_sandbox_establishes_the_crd() {
    install(&kube_sandbox::Sandbox::new()).await;
}

/// Creates the CRD and waits until it is established.
async fn install(sandbox: &kube_sandbox::Sandbox) {
    let crds: Api<CustomResourceDefinition> = Api::all(sandbox.client());
    crds.create(&PostParams::default(), &foo::crd()).await.expect("the CRD is accepted");
    let established = kube::runtime::wait::await_condition(
        crds,
        "foos.samplecontroller.k8s.io",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(30), established)
        .await
        .expect("established in time")
        .unwrap();
}

#[tokio::test]
async fn a_foos_deployment_name_cannot_change_as_its_cel_rule_says() {
    use kube::api::{Patch, PatchParams};
    let sandbox = kube_sandbox::Sandbox::new();
    install(&sandbox).await;
    let foos: Api<foo::Foo> = Api::default_namespaced(sandbox.client());
    let spec = foo::FooSpec { deployment_name: "example-foo".into(), replicas: 1 };
    foos.create(&PostParams::default(), &foo::Foo::new("example-foo", spec)).await.unwrap();
    let patch = |spec: Value| Patch::Merge(serde_json::json!({ "spec": spec }));
    foos.patch("example-foo", &PatchParams::default(), &patch(serde_json::json!({ "replicas": 2 })))
        .await
        .expect("replicas may change");
    let err = foos
        .patch(
            "example-foo",
            &PatchParams::default(),
            &patch(serde_json::json!({ "deploymentName": "other" })),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else { panic!("not a Status: {err}") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            422,
            r#"Foo.samplecontroller.k8s.io "example-foo" is invalid: spec.deploymentName: Invalid value: "string": deploymentName is immutable"#
        )
    );
}
