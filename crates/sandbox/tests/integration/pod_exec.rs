//! `pods/exec`, `pods/attach` and `pods/portforward` over the sandbox's HTTPS server, through a
//! real `kube::Client` (its `ws` feature: the v5 and v4 channel protocols): the built-in shell's
//! answers, stdin and its close, exit statuses as the error channel carries them, a scripted
//! exec, an attach following what the container writes, and port-forwards to an echo, a local
//! listener and a refused port. Every wait is for progress, never a wall-clock deadline.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, PostParams};
use kube::{Client, Error};
use kube_sandbox::{HttpServer, Sandbox, SandboxConfig, Simulation};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A simulated cluster served over HTTPS, and a client of it.
pub(crate) async fn served() -> (Sandbox, HttpServer, Client) {
    served_with(SandboxConfig::with_cluster(Simulation::instant())).await
}

/// A sandbox with `config` served over HTTPS, and a client of it.
async fn served_with(config: SandboxConfig) -> (Sandbox, HttpServer, Client) {
    let sb = Sandbox::with_config(config);
    let server = sb.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await.unwrap();
    let dir = std::env::temp_dir().join(format!("sandbox-exec-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kubeconfig");
    kube_sandbox::write_kubeconfig(&path, &server).unwrap();
    let kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (sb, server, Client::try_from(config).unwrap())
}

/// Creates a pod of one container `main` (with `extra` merged into the container) and waits
/// until it runs.
async fn running(pods: &Api<Pod>, name: &str, extra: serde_json::Value) -> Pod {
    let mut container =
        json!({ "name": "main", "image": "busybox:stable", "command": ["sh", "-c", "sleep 3600"] });
    for (k, v) in extra.as_object().unwrap() {
        container[k] = v.clone();
    }
    let pod: Pod = serde_json::from_value(
        json!({ "metadata": { "name": name }, "spec": { "containers": [container] } }),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    loop {
        if let Ok(p) = pods.get(name).await {
            let ready = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_some_and(|s| s.iter().all(|c| c.ready));
            if ready {
                return p;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn read_all(r: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut out = String::new();
    let mut r = r;
    r.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_the_built_in_shell_with_stdin_and_exit_statuses() {
    let (_sb, _server, client) = served().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    running(&pods, "busybox", json!({})).await;

    // kube-rs's own cluster test, as written there.
    let mut attached = pods
        .exec(
            "busybox",
            vec!["sh", "-c", "for i in $(seq 1 3); do echo $i; done"],
            &AttachParams::default().stderr(false),
        )
        .await
        .unwrap();
    let out = read_all(attached.stdout().unwrap()).await;
    let status = attached.take_status().unwrap().await.unwrap();
    attached.join().await.unwrap();
    assert_eq!(out, "1\n2\n3\n");
    assert_eq!(status.status.as_deref(), Some("Success"));

    // v5: stdin closed by the client, the command still runs to its output.
    let ap = AttachParams::default().stdin(true).stderr(false);
    let mut attached =
        pods.exec("busybox", vec!["sh", "-c", "sleep 0.2; echo test string 2"], &ap).await.unwrap();
    let mut stdin = attached.stdin().unwrap();
    stdin.write_all(b"this will be ignored\n").await.unwrap();
    stdin.shutdown().await.unwrap();
    let out = read_all(attached.stdout().unwrap()).await;
    assert_eq!(out, "test string 2\n");
    let status = attached.take_status().unwrap().await.unwrap();
    assert_eq!((status.status.as_deref(), status.reason.as_deref()), (Some("Success"), None));

    // An interactive shell: a line's output before the next line is sent; `exit 1` a failure.
    let mut attached = pods.exec("busybox", vec!["sh"], &ap).await.unwrap();
    let mut stdin = attached.stdin().unwrap();
    let mut stdout = tokio_util::io::ReaderStream::new(attached.stdout().unwrap());
    stdin.write_all(b"echo test string 1\n").await.unwrap();
    let first = stdout.next().await.unwrap().unwrap();
    assert_eq!(&first[..], b"test string 1\n");
    stdin.write_all(b"exit 1\n").await.unwrap();
    let status = attached.take_status().unwrap().await.unwrap();
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    assert_eq!(
        status.message.as_deref(),
        Some("command terminated with non-zero exit code: error executing command [sh], exit code 1")
    );
    assert_eq!(exit_cause(status), ("ExitCode".to_string(), "1".to_string()));

    // What one exec writes, the next one in the same container reads.
    let run = |cmd: &'static str| {
        let pods = pods.clone();
        async move {
            let ap = AttachParams::default().stderr(false);
            let mut attached = pods.exec("busybox", vec!["sh", "-c", cmd], &ap).await.unwrap();
            read_all(attached.stdout().unwrap()).await
        }
    };
    assert_eq!(run("mkdir -p /data && echo kept > /data/note").await, "");
    assert_eq!(run("cat /data/note; ls /data").await, "kept\nnote\n");

    // The container's own command runs on the same machine: an exec reads what it wrote.
    let script = "echo written by the container > /tmp/state; sleep 3600";
    running(&pods, "writer", json!({ "command": ["sh", "-c", script] })).await;
    loop {
        let ap = AttachParams::default().stderr(false);
        let mut attached = pods.exec("writer", vec!["cat", "/tmp/state"], &ap).await.unwrap();
        if read_all(attached.stdout().unwrap()).await == "written by the container\n" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Stderr, and a command the container does not have.
    let ap = AttachParams::default().stderr(true);
    let mut attached = pods.exec("busybox", vec!["kubectl", "version"], &ap).await.unwrap();
    let err = read_all(attached.stderr().unwrap()).await;
    let status = attached.take_status().unwrap().await.unwrap();
    assert_eq!(err, "kubectl: command not found\n");
    assert_eq!(exit_cause(status).1, "127");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_refusals_are_upstreams() {
    let (_sb, _server, client) = served().await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    running(&pods, "web", json!({})).await;
    let status = |e: Error| match e {
        Error::Api(s) => (s.code, s.message),
        other => panic!("expected a refusal as a Status, got {other:?}"),
    };
    let e = pods.exec("missing", vec!["ls"], &AttachParams::default()).await.err().unwrap();
    assert_eq!(status(e), (404, "pods \"missing\" not found".to_string()));
    let e = pods.exec("web", vec!["ls"], &AttachParams::default().container("other")).await.err().unwrap();
    assert_eq!(status(e).0, 400);
    // A plain request is refused as the API server refuses one that does not upgrade.
    let req = http::Request::get("/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true")
        .body(Vec::new())
        .unwrap();
    let text = client.request_text(req).await.unwrap_err();
    let Error::Api(s) = text else { panic!("{text:?}") };
    assert_eq!((s.code, s.message.as_str()), (400, "Upgrade request required"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_exec_and_an_attach_that_follows_the_container() {
    let (sb, _server, client) = served().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    sb.container_exec("default", "db", "main", |container, mut process| {
        let pod = container.pod.clone();
        Box::pin(async move {
            let input = process.stdin.read_to_end().await;
            process
                .stdout
                .write(format!("{pod}: {} {}", process.command.join(" "), String::from_utf8_lossy(&input)))
                .await;
            4
        })
    });
    running(&pods, "db", json!({})).await;
    let ap = AttachParams::default().stdin(true).stderr(false);
    let mut attached = pods.exec("db", vec!["pg_isready"], &ap).await.unwrap();
    let mut stdin = attached.stdin().unwrap();
    stdin.write_all(b"hello").await.unwrap();
    stdin.shutdown().await.unwrap();
    assert_eq!(read_all(attached.stdout().unwrap()).await, "db: pg_isready hello");
    assert_eq!(exit_cause(attached.take_status().unwrap().await.unwrap()).1, "4");

    // Attach: what the container writes from now on.
    let ap = AttachParams::default().stdin(false).stderr(false).stdout(true);
    let mut attached = pods.attach("db", &ap).await.unwrap();
    let mut stdout = tokio_util::io::ReaderStream::new(attached.stdout().unwrap());
    let log = sb.container_log("default", "db", "main");
    let next = tokio::spawn(async move { stdout.next().await.unwrap().unwrap() });
    // Written until the attach sees it: the session may not be following yet.
    loop {
        log.write_line("ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
        if next.is_finished() {
            break;
        }
    }
    assert!(String::from_utf8_lossy(&next.await.unwrap()).starts_with("ready\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_forward_to_an_echo_a_local_listener_and_a_refused_port() {
    let (sb, _server, client) = served().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    running(&pods, "web", json!({ "ports": [{ "containerPort": 80 }] })).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    sb.forward_port("default", "web", 9090, listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        conn.write_all(b"from the local server").await.unwrap();
    });

    let mut pf = pods.portforward("web", &[80, 9090, 81]).await.unwrap();
    let mut echo = pf.take_stream(80).unwrap();
    echo.write_all(b"ping").await.unwrap();
    let mut buf = [0; 4];
    echo.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    // A port's stream ends only with the session, as over a kubelet: read what was sent.
    let mut local = pf.take_stream(9090).unwrap();
    let mut buf = [0; 21];
    local.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"from the local server");
    let refused = pf.take_error(81).unwrap().await.unwrap();
    assert!(refused.starts_with("error forwarding port 81 to pod web_default"), "{refused}");
    assert!(refused.ends_with("connection refused"), "{refused}");
    drop(echo);
    pf.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opt_in_host_runtime_runs_execs_as_local_processes_in_the_containers_directory() {
    let dir =
        std::env::temp_dir().join(format!("sandbox-host-exec-{}-{}", std::process::id(), fastrand::u64(..)));
    let config = SandboxConfig {
        container_runtime: std::sync::Arc::new(kube_sandbox::HostExec::new(&dir)),
        ..SandboxConfig::with_cluster(Simulation::instant())
    };
    let (_sb, _server, client) = served_with(config).await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    running(&pods, "web", json!({ "env": [{ "name": "GREETING", "value": "hello" }] })).await;
    // The machine's /bin/sh, in the container's own directory, with its variables and stdin.
    let ap = AttachParams::default().stdin(true).stderr(false);
    let script = "pwd; echo $GREETING; cat; exit 4";
    let mut attached = pods.exec("web", vec!["/bin/sh", "-c", script], &ap).await.unwrap();
    let mut stdin = attached.stdin().unwrap();
    stdin.write_all(b"piped\n").await.unwrap();
    stdin.shutdown().await.unwrap();
    let out = read_all(attached.stdout().unwrap()).await;
    let here = dir.join("default/web/main").canonicalize().unwrap();
    assert_eq!(out, format!("{}\nhello\npiped\n", here.display()));
    assert_eq!(exit_cause(attached.take_status().unwrap().await.unwrap()).1, "4");
    // A program this machine does not have: a shell's words and code.
    let ap = AttachParams::default().stdout(false).stderr(true);
    let mut attached = pods.exec("web", vec!["no-such-program-here"], &ap).await.unwrap();
    let err = read_all(attached.stderr().unwrap()).await;
    assert_eq!(err, "no-such-program-here: command not found\n");
    assert_eq!(exit_cause(attached.take_status().unwrap().await.unwrap()).1, "127");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The exit code cause of a failed exec's status: (reason, message).
fn exit_cause(status: Status) -> (String, String) {
    let cause = status.details.unwrap().causes.unwrap().into_iter().next().unwrap();
    (cause.reason.unwrap(), cause.message.unwrap())
}
