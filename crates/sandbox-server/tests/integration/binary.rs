//! What its users see: the kubeconfig, a real client on it, a clean stop, one-line errors.

use std::os::unix::fs::PermissionsExt;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::common::{Server, run, temp_dir};

#[tokio::test]
async fn serves_a_real_client_and_stops_on_sigterm_with_exit_0() {
    let dir = temp_dir("serve");
    let server = Server::start(&dir, &["--no-simulation"]);
    assert!(
        server.printed.iter().any(|l| l.starts_with("sandbox API server listening on https://127.0.0.1:")),
        "{:?}",
        server.printed
    );
    assert_eq!(server.kubeconfig, dir.join("kubeconfig").canonicalize().unwrap());
    let mode = std::fs::metadata(&server.kubeconfig).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the kubeconfig holds the token: owner only");

    let client = server.client().await;
    // A cluster's namespaces, as kubectl's first request would read them.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let default = namespaces.get("default").await.unwrap();
    assert_eq!(default.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = serde_json::from_value(json!({ "metadata": { "name": "web" }, "data": { "k": "v" } })).unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(created.metadata.resource_version.is_some());
    assert_eq!(cms.get("web").await.unwrap().data.unwrap()["k"], "v");

    let status = server.stop("TERM");
    assert_eq!(status.code(), Some(0), "SIGTERM: {status}");
}

#[tokio::test]
async fn stops_on_sigint_with_exit_0() {
    let dir = temp_dir("sigint");
    let server = Server::start(&dir, &[]);
    let status = server.stop("INT");
    assert_eq!(status.code(), Some(0), "SIGINT: {status}");
}

/// One line on stderr, naming `input`, and a non-zero exit.
fn refused(args: &[&str], input: &str) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(stderr.contains(input), "{args:?}: the error does not name {input:?}: {stderr}");
    stderr
}

#[test]
fn a_non_loopback_address_needs_allow_remote() {
    let e = refused(&["--listen", "0.0.0.0:0", "--kubeconfig-out", "/dev/null"], "0.0.0.0:0");
    assert_eq!(
        e.trim(),
        "kube-sandbox: refusing to listen on 0.0.0.0:0 (not loopback) without --allow-remote"
    );
}

#[test]
fn an_address_in_use_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = temp_dir("in-use");
    let kubeconfig = dir.join("kubeconfig");
    let e = refused(&["--listen", &addr, "--kubeconfig-out", kubeconfig.to_str().unwrap()], &addr);
    assert!(e.starts_with(&format!("kube-sandbox: cannot listen on {addr}: ")), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!kubeconfig.exists(), "no kubeconfig for a server that never ran");
}

#[test]
fn an_unwritable_kubeconfig_is_named() {
    let path = "/nonexistent-kube-sandbox-dir/kubeconfig";
    let e = refused(&["--listen", "127.0.0.1:0", "--kubeconfig-out", path], path);
    assert!(e.starts_with(&format!("kube-sandbox: cannot write kubeconfig {path}: ")), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn a_bad_duration_is_named() {
    refused(&["--pod-ready", "fast"], "\"fast\" is not a duration");
}

#[test]
fn a_bad_port_forward_is_named() {
    refused(
        &["--forward-port", "web:80=127.0.0.1:8080"],
        "\"web:80=127.0.0.1:8080\" is not NS/POD:PORT=HOST:PORT",
    );
}

#[tokio::test]
async fn exec_on_host_runs_kubectl_exec_as_a_local_process() {
    let on_path = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("kubectl")).find(|f| f.is_file()));
    let Some(kubectl) = on_path else {
        assert!(
            std::env::var("COUNTER_CONTROLLER_REQUIRE_KUBECTL").as_deref() != Ok("1"),
            "kubectl is required (COUNTER_CONTROLLER_REQUIRE_KUBECTL=1) but is not on PATH"
        );
        eprintln!("skipped: kubectl is not on PATH");
        return;
    };
    let dir = temp_dir("exec-on-host");
    let execs = dir.join("execs");
    let server = Server::start(&dir, &["--exec-on-host", execs.to_str().unwrap(), "--pod-ready", "0s"]);
    let pods: Api<Pod> = Api::default_namespaced(server.client().await);
    let pod = json!({ "metadata": { "name": "web" },
        "spec": { "containers": [{ "name": "main", "image": "busybox", "command": ["sleep", "infinity"] }] } });
    pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
    loop {
        let p = pods.get("web").await.unwrap();
        if p.status.and_then(|s| s.container_statuses).is_some_and(|c| c.iter().all(|c| c.ready)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let out = std::process::Command::new(kubectl)
        .args(["exec", "web", "--", "pwd"])
        .env("KUBECONFIG", &server.kubeconfig)
        .env("KUBECACHEDIR", dir.join("cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let here = execs.join("default/web/main").canonicalize().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), here.to_str().unwrap());
    server.stop("TERM");
}

#[test]
fn version_is_the_binarys_name_and_the_packages_version() {
    let out = run(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("kube-sandbox {}", env!("CARGO_PKG_VERSION"))
    );
}
