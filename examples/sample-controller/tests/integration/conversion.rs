//! The Foo CRD with two versions, converted by the example's own webhook: the API server calls it
//! over HTTPS whenever a Foo crosses versions, so a `v1` Foo is reconciled by the controller,
//! which reads `v1alpha1` — in process, and as the `sample-controller webhook` binary.

use std::process::{Child, Command};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, ServiceReference, WebhookClientConfig,
};
use kube::api::{Api, PostParams};
use kube_sandbox::{Rollout, Sandbox, SandboxConfig};
use sample_controller::foo::{self, v1};
use sample_controller::{Controller, Foo, Options, conversion};
use tokio_util::sync::CancellationToken;

use crate::common::eventually;

const BIN: &str = env!("CARGO_BIN_EXE_sample-controller");

/// A serving certificate for `names` and its key, and the PEM of the CA that signed it.
fn certificate(names: &[&str]) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let cert = CertificateParams::new(names).unwrap().signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem(), ca)
}

fn ca_bundle(ca: &str) -> k8s_openapi::ByteString {
    k8s_openapi::ByteString(ca.as_bytes().to_vec())
}

/// A sandbox whose rollouts finish at once, with the two-version Foo CRD converted by the
/// webhook `client_config` names.
async fn sandbox_converting(sb: Sandbox, client_config: WebhookClientConfig) -> Sandbox {
    let crds: Api<CustomResourceDefinition> = Api::all(sb.client());
    crds.create(&PostParams::default(), &foo::crd_with_conversion(client_config)).await.unwrap();
    let foos: Api<v1::Foo> = Api::default_namespaced(sb.client());
    eventually("the v1 Foos are served", || async { foos.list(&Default::default()).await.ok() }).await;
    sb
}

fn new_v1_foo(name: &str, deployment: &str, replicas: i32) -> v1::Foo {
    v1::Foo::new(name, v1::FooSpec { deployment: v1::DeploymentRef { name: deployment.into(), replicas } })
}

#[tokio::test]
async fn a_v1_foo_is_converted_for_the_controller_and_its_status_read_back_in_v1() {
    // The webhook as a cluster runs it: behind a Service, its certificate for the Service's name.
    let (cert, key, ca) = certificate(&["foo-webhook.sample-system.svc"]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let tls = conversion::tls_config(cert.as_bytes(), key.as_bytes()).unwrap();
    tokio::spawn(conversion::serve(listener, tls, stop.clone()));
    let sb = Sandbox::with_config(SandboxConfig { rollout: Rollout::Instant, ..SandboxConfig::default() });
    sb.webhook_service("sample-system", "foo-webhook", addr);
    let service = ServiceReference {
        namespace: "sample-system".into(),
        name: "foo-webhook".into(),
        path: Some("/convert".into()),
        port: Some(addr.port().into()),
    };
    let config = WebhookClientConfig { service: Some(service), ca_bundle: Some(ca_bundle(&ca)), url: None };
    let sb = sandbox_converting(sb, config).await;

    let client = sb.client();
    let mut registry = prometheus_client::registry::Registry::default();
    let options = Options { identity: "test".into(), ..Options::default() };
    let controller = Controller::new(client.clone(), options, &mut registry);
    let running = tokio::spawn(controller.run(stop.clone().cancelled_owned()));

    let foos_v1: Api<v1::Foo> = Api::default_namespaced(client.clone());
    foos_v1.create(&PostParams::default(), &new_v1_foo("web", "web-deploy", 3)).await.unwrap();
    // Stored, and read by the controller, as v1alpha1.
    let foos: Api<Foo> = Api::default_namespaced(client.clone());
    let stored = foos.get("web").await.unwrap();
    assert_eq!((stored.spec.deployment_name.as_str(), stored.spec.replicas), ("web-deploy", 3));

    let deploys: Api<Deployment> = Api::default_namespaced(client.clone());
    eventually("the Deployment of the v1 Foo", || async {
        deploys.get_opt("web-deploy").await.unwrap().filter(|d| d.spec.replicas == Some(3))
    })
    .await;
    // The status the controller wrote in v1alpha1 is read in v1.
    eventually("the v1 Foo's status", || async {
        let f = foos_v1.get("web").await.unwrap();
        f.status.filter(|s| s.available_replicas == 3)
    })
    .await;
    stop.cancel();
    assert!(running.await.unwrap(), "the caches had synced");
}

/// `sample-controller webhook`, killed when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_binary_serves_the_webhook_and_names_a_bad_certificate_file() {
    let dir = std::env::temp_dir().join(format!("sample-webhook-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(BIN)
        .args([
            "webhook",
            "--tls-cert-file",
            "/nonexistent/tls.crt",
            "--tls-private-key-file",
            "/nonexistent/tls.key",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/tls.crt"), "{err}");

    let (cert, key, ca) = certificate(&["127.0.0.1"]);
    let (cert_file, key_file) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    // A free port, given back for the webhook to take.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let _served = Served(
        Command::new(BIN)
            .args(["webhook", "--listen", &listen])
            .arg("--tls-cert-file")
            .arg(&cert_file)
            .arg("--tls-private-key-file")
            .arg(&key_file)
            .spawn()
            .unwrap(),
    );
    eventually("the webhook listens", || async { tokio::net::TcpStream::connect(&listen).await.ok() }).await;
    let config = WebhookClientConfig {
        url: Some(format!("https://{listen}/convert")),
        ca_bundle: Some(ca_bundle(&ca)),
        service: None,
    };
    let sb = sandbox_converting(Sandbox::new(), config).await;
    let foos_v1: Api<v1::Foo> = Api::default_namespaced(sb.client());
    foos_v1.create(&PostParams::default(), &new_v1_foo("f", "d", 2)).await.unwrap();
    let foos: Api<Foo> = Api::default_namespaced(sb.client());
    assert_eq!(foos.get("f").await.unwrap().spec.deployment_name, "d");
    assert_eq!(foos_v1.get("f").await.unwrap().spec.deployment.replicas, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
