//! Probes and the runtime's faults on the simulated kubelets, through a real `kube::Client`:
//! the liveness example of Kubernetes' documentation (a file the container removes, a probe
//! that `cat`s it, the kill and restart), readiness from an HTTP server a port is forwarded to,
//! startup gating the other probes, and the fault API's failing probes, crashing containers and
//! hanging execs. The simulation's clock is paused and moved by the tests; every wait is for
//! progress, never a wall-clock deadline.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use kube::api::{Api, AttachParams, ListParams, PostParams};
use kube_sandbox::{Cluster, ContainerFault, ContainerFaultRule, Probe, Sandbox, SandboxConfig, Simulation};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A simulated cluster on a paused clock.
fn paused() -> (Sandbox, Cluster) {
    let sb = Sandbox::with_config(SandboxConfig::with_cluster(Simulation::instant()));
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    (sb, sim)
}

/// Polls `f` until it returns `Some`, yielding to the simulation in between.
async fn eventually<T, F: Future<Output = Option<T>>>(mut f: impl FnMut() -> F) -> T {
    loop {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Creates a pod of one container `main` (with `extra` merged into it, labelled `app=<name>`).
async fn create(pods: &Api<Pod>, name: &str, extra: Value) {
    let mut container = json!({ "name": "main", "image": "busybox:stable" });
    for (k, v) in extra.as_object().unwrap() {
        container[k] = v.clone();
    }
    let pod = json!({ "metadata": { "name": name, "labels": { "app": name } }, "spec": { "containers": [container] } });
    pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
}

fn main_status(p: &Pod) -> Option<&ContainerStatus> {
    p.status.as_ref()?.container_statuses.as_ref()?.iter().find(|s| s.name == "main")
}

/// Moves the clock a second at a time until `done` holds for the pod; the pod then.
async fn advance_until(sim: &Cluster, pods: &Api<Pod>, name: &str, done: impl Fn(&Pod) -> bool) -> Pod {
    eventually(|| async {
        let p = pods.get(name).await.ok()?;
        if done(&p) {
            return Some(p);
        }
        sim.clock().advance(Duration::from_secs(1));
        None
    })
    .await
}

fn ready(p: &Pod) -> bool {
    main_status(p).is_some_and(|s| s.ready)
}

fn restarts(p: &Pod) -> i32 {
    main_status(p).map_or(0, |s| s.restart_count)
}

/// The pod's `Ready` condition: its status and message.
fn ready_condition(p: &Pod) -> (String, Option<String>) {
    let conditions = p.status.as_ref().unwrap().conditions.as_ref().unwrap();
    let c = conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    (c.status.clone(), c.message.clone())
}

/// The Events about pod `name` with `reason`.
async fn events(sb: &Sandbox, name: &str, reason: &str) -> Vec<Event> {
    let events: Api<Event> = Api::default_namespaced(sb.client());
    let selector = format!("involvedObject.name={name},reason={reason}");
    events.list(&ListParams::default().fields(&selector)).await.unwrap().items
}

#[tokio::test]
async fn a_liveness_probe_that_fails_has_the_container_killed_and_restarted() {
    // The liveness example of Kubernetes' documentation (`exec-liveness.yaml`).
    let (sb, sim) = paused();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let spec = json!({
        "args": ["/bin/sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"],
        "livenessProbe": { "exec": { "command": ["cat", "/tmp/healthy"] }, "initialDelaySeconds": 5, "periodSeconds": 5 },
    });
    create(&pods, "liveness-exec", spec).await;
    // Healthy for 30 s; then three failures in a row, and the kubelet kills it.
    let p = advance_until(&sim, &pods, "liveness-exec", |p| restarts(p) == 1).await;
    let last = main_status(&p).unwrap().last_state.clone().unwrap().terminated.unwrap();
    assert_eq!((last.exit_code, last.reason.as_deref()), (137, Some("Error")));
    let unhealthy = events(&sb, "liveness-exec", "Unhealthy").await;
    assert_eq!(unhealthy.len(), 1, "the same failure is counted on one Event: {unhealthy:?}");
    let e = &unhealthy[0];
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(
        e.message.as_deref(),
        Some("Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n")
    );
    assert_eq!(e.count, Some(3));
    assert_eq!(e.involved_object.field_path.as_deref(), Some("spec.containers{main}"));
    assert_eq!(e.source.as_ref().unwrap().component.as_deref(), Some("kubelet"));
    let killing = events(&sb, "liveness-exec", "Killing").await;
    assert_eq!(
        killing[0].message.as_deref(),
        Some("Container main failed liveness probe, will be restarted")
    );
    // The new run touches the file again: it stays alive.
    let p = advance_until(&sim, &pods, "liveness-exec", ready).await;
    assert_eq!(restarts(&p), 1);
}

/// A local HTTP server answering every request with the status `code` holds.
async fn http_server(code: Arc<AtomicU16>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let status = code.load(Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = conn.read(&mut buf).await;
                let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn readiness_follows_an_http_probe_of_a_forwarded_port() {
    let (sb, sim) = paused();
    let code = Arc::new(AtomicU16::new(500));
    let addr = http_server(Arc::clone(&code)).await;
    sb.forward_port("default", "web", 8080, addr);
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let spec = json!({
        "image": "nginx:1.27",
        "ports": [{ "name": "http", "containerPort": 8080 }],
        "readinessProbe": { "httpGet": { "port": "http", "path": "/healthz" }, "periodSeconds": 5, "failureThreshold": 1 },
    });
    create(&pods, "web", spec).await;
    // Running, but not ready while the server answers 500.
    let p = eventually(|| async {
        let p = pods.get("web").await.ok()?;
        let failed = !events(&sb, "web", "Unhealthy").await.is_empty();
        (main_status(&p)?.state.as_ref()?.running.is_some() && failed).then_some(p)
    })
    .await;
    assert!(!ready(&p));
    let (status, message) = ready_condition(&p);
    assert_eq!(
        (status.as_str(), message.as_deref()),
        ("False", Some("containers with unready status: [main]"))
    );
    let unhealthy = events(&sb, "web", "Unhealthy").await;
    assert_eq!(
        unhealthy[0].message.as_deref(),
        Some("Readiness probe failed: HTTP probe failed with statuscode: 500")
    );
    // The server recovers: the next probe makes the pod ready.
    code.store(200, Ordering::SeqCst);
    let p = advance_until(&sim, &pods, "web", ready).await;
    assert_eq!(ready_condition(&p).0, "True");
}

#[tokio::test]
async fn a_probe_fault_turns_a_pod_unready_until_it_is_cleared() {
    let (sb, sim) = paused();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    // An image's own server: nothing simulates it, so its probe passes.
    let spec = json!({ "image": "nginx:1.27", "readinessProbe": { "tcpSocket": { "port": 80 } } });
    create(&pods, "web", spec).await;
    advance_until(&sim, &pods, "web", ready).await;
    let rule = ContainerFaultRule::new("default", ContainerFault::ProbeFails(Probe::Readiness))
        .selector("app=web")
        .unwrap();
    sb.faults().add_container_fault(rule);
    // Three failures in a row (the default threshold), a period apart.
    let p = advance_until(&sim, &pods, "web", |p| !ready(p)).await;
    assert_eq!(ready_condition(&p).0, "False");
    let unhealthy = events(&sb, "web", "Unhealthy").await;
    let ip = p.status.as_ref().unwrap().pod_ip.clone().unwrap();
    assert_eq!(
        unhealthy[0].message.as_deref(),
        Some(format!("Readiness probe failed: dial tcp {ip}:80: connect: connection refused").as_str())
    );
    assert!(unhealthy[0].count >= Some(3));
    sb.faults().clear_container_faults();
    advance_until(&sim, &pods, "web", ready).await;
    assert_eq!(restarts(&p), 0, "a readiness probe never restarts a container");
}

#[tokio::test]
async fn a_startup_probe_holds_the_other_probes_and_kills_a_container_it_gives_up_on() {
    let (sb, sim) = paused();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let spec = json!({
        "command": ["sh", "-c", "sleep 20; touch /tmp/started; sleep 600"],
        "startupProbe": { "exec": { "command": ["cat", "/tmp/started"] }, "periodSeconds": 5, "failureThreshold": 10 },
        "livenessProbe": { "exec": { "command": ["cat", "/tmp/started"] }, "periodSeconds": 5, "failureThreshold": 1 },
    });
    create(&pods, "slow", spec).await;
    let p = eventually(|| async {
        let p = pods.get("slow").await.ok()?;
        main_status(&p)?.state.as_ref()?.running.as_ref()?;
        Some(p)
    })
    .await;
    let s = main_status(&p).unwrap();
    assert_eq!((s.started, s.ready), (Some(false), false));
    // Started (and, without a readiness probe, ready) once the file is there; the liveness
    // probe, which would have killed it at its first failure, waited for it.
    let p = advance_until(&sim, &pods, "slow", ready).await;
    assert_eq!((main_status(&p).unwrap().started, restarts(&p)), (Some(true), 0));
    // A startup probe a fault fails kills the container after its threshold.
    let spec = json!({
        "image": "postgres:17",
        "startupProbe": { "exec": { "command": ["pg_isready"] }, "periodSeconds": 5, "failureThreshold": 2 },
    });
    create(&pods, "stuck", spec).await;
    let rule = ContainerFaultRule::new("default", ContainerFault::ProbeFails(Probe::Startup)).pod("stuck");
    sb.faults().add_container_fault(rule);
    advance_until(&sim, &pods, "stuck", |p| restarts(p) >= 1).await;
    let killing = events(&sb, "stuck", "Killing").await;
    assert_eq!(killing[0].message.as_deref(), Some("Container main failed startup probe, will be restarted"));
    let unhealthy = events(&sb, "stuck", "Unhealthy").await;
    assert_eq!(unhealthy[0].message.as_deref(), Some("Startup probe failed: "));
}

#[tokio::test]
async fn a_crash_fault_ends_each_run_after_its_time() {
    let (sb, sim) = paused();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    create(&pods, "crashy", json!({ "image": "nginx:1.27" })).await;
    advance_until(&sim, &pods, "crashy", ready).await;
    let crash = ContainerFault::CrashAfter { after: Duration::from_secs(30), code: 2 };
    sb.faults()
        .add_container_fault(ContainerFaultRule::new("default", crash).selector("app=crashy").unwrap());
    // The run already going crashes 30 s after it started, and restarts at once.
    let p = advance_until(&sim, &pods, "crashy", |p| restarts(p) == 1).await;
    let last = main_status(&p).unwrap().last_state.clone().unwrap().terminated.unwrap();
    assert_eq!((last.exit_code, last.reason.as_deref()), (2, Some("Error")));
    // The next run crashes too, then backs off.
    let p = advance_until(&sim, &pods, "crashy", |p| {
        main_status(p).and_then(|s| s.state.as_ref()?.waiting.as_ref()?.reason.clone()).as_deref()
            == Some("CrashLoopBackOff")
    })
    .await;
    assert_eq!(restarts(&p), 1);
    // Cleared, the container runs on once its back-off is over.
    sb.faults().clear_container_faults();
    let p = advance_until(&sim, &pods, "crashy", |p| restarts(p) == 2 && ready(p)).await;
    assert!(main_status(&p).unwrap().state.as_ref().unwrap().running.is_some());
}

#[tokio::test]
async fn a_hanging_exec_times_the_probe_out_and_holds_a_clients_exec() {
    // Execs upgrade the connection: over the sandbox's HTTPS server.
    let (sb, _server, client) = super::pod_exec::served().await;
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let pods: Api<Pod> = Api::default_namespaced(client);
    let spec = json!({
        "command": ["sh", "-c", "sleep 3600"],
        "livenessProbe": { "exec": { "command": ["true"] }, "periodSeconds": 5, "timeoutSeconds": 2, "failureThreshold": 100 },
    });
    create(&pods, "hung", spec).await;
    advance_until(&sim, &pods, "hung", ready).await;
    sb.faults()
        .add_container_fault(ContainerFaultRule::new("default", ContainerFault::ExecHangs).pod("hung"));
    // A client's exec gets no answer...
    let exec = {
        let pods = pods.clone();
        tokio::spawn(async move {
            let params = AttachParams::default().stdout(true).stderr(false);
            let mut process = pods.exec("hung", ["echo", "hi"], &params).await.unwrap();
            let mut out = String::new();
            process.stdout().unwrap().read_to_string(&mut out).await.unwrap();
            out
        })
    };
    // ...while the probe gives up after its timeout, as many times as the clock moves.
    let unhealthy = eventually(|| async {
        sim.clock().advance(Duration::from_secs(1));
        let found = events(&sb, "hung", "Unhealthy").await;
        found.first().filter(|e| e.count >= Some(2)).cloned()
    })
    .await;
    assert_eq!(unhealthy.message.as_deref(), Some("Liveness probe failed: command \"true\" timed out"));
    assert!(!exec.is_finished(), "the exec answered while its container's execs hang");
    // Cleared, a new exec answers; the one that hung stays hung until its client goes.
    sb.faults().clear_container_faults();
    let params = AttachParams::default().stdout(true).stderr(false);
    let mut process = pods.exec("hung", ["echo", "hi"], &params).await.unwrap();
    let mut out = String::new();
    process.stdout().unwrap().read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "hi\n");
    assert!(!exec.is_finished());
    exec.abort();
}
