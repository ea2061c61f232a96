//! `pods/log` against the simulated runtime, through a real `kube::Client`: what a running and
//! a finished container wrote, lines a test scripts, the query's options (`tailLines`,
//! `limitBytes`, `timestamps`, `sinceSeconds`, `previous`, `follow`) and upstream's refusals in
//! its words. Every wait is for progress, never a wall-clock deadline.

use std::future::Future;
use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use kube::core::Status;
use kube::{Client, Error};
use kube_sandbox::{Controller, Controllers, Sandbox, SandboxConfig, Simulation};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn cluster(sim: Simulation) -> Sandbox {
    Sandbox::with_config(SandboxConfig::with_cluster(sim))
}

fn of<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn api_error(e: Error) -> Status {
    match e {
        Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
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

/// A pod with the given spec.
fn pod(name: &str, spec: Value) -> Pod {
    of(json!({ "metadata": { "name": name }, "spec": spec }))
}

/// One container `main` running its image's entrypoint, which runs until stopped.
fn server() -> Value {
    json!({ "containers": [{ "name": "main", "image": "nginx:1.27" }] })
}

/// Creates the pod and waits until its kubelet runs it; the pod as it runs.
async fn running(pods: &Api<Pod>, name: &str, spec: Value) -> Pod {
    pods.create(&PostParams::default(), &pod(name, spec)).await.unwrap();
    eventually(|| async {
        let p = pods.get(name).await.ok()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
    })
    .await
}

/// The container's status (`main` unless named).
fn started_at(p: &Pod, container: &str) -> String {
    let statuses = p.status.as_ref().unwrap().container_statuses.as_ref().unwrap();
    let s = statuses.iter().find(|s| s.name == container).unwrap();
    s.state.as_ref().unwrap().running.as_ref().unwrap().started_at.as_ref().unwrap().0.to_string()
}

/// A raw GET: its status code, content type and body.
async fn get(client: &Client, path: &str) -> (u16, String, String) {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
    let code = resp.status().as_u16();
    let kind =
        resp.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let bytes = resp.into_body().collect_bytes().await.unwrap();
    (code, kind, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn log(pods: &Api<Pod>, name: &str, lp: &LogParams) -> String {
    pods.logs(name, lp).await.unwrap()
}

async fn refusal(pods: &Api<Pod>, name: &str, lp: &LogParams) -> (u16, String) {
    let e = api_error(pods.logs(name, lp).await.unwrap_err());
    (e.code, e.message)
}

#[tokio::test]
async fn a_running_pods_log_says_when_it_started_with_what_image_and_command_as_text() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let p = running(&pods, "web", server()).await;
    let since = started_at(&p, "main");
    let (code, kind, body) = get(&sb.client(), "/api/v1/namespaces/default/pods/web/log").await;
    assert_eq!((code, kind.as_str()), (200, "text/plain"));
    assert_eq!(
        body,
        format!(
            "container \"main\" started at {since}: image \"nginx:1.27\", command the image's entrypoint\n"
        )
    );
    // The same through kube's `logs`, and the same on every read.
    assert_eq!(log(&pods, "web", &LogParams::default()).await, body);
}

#[tokio::test]
async fn a_finished_job_pods_log_ends_with_its_exit_code() {
    let sb = cluster(Simulation::instant());
    let jobs: Api<Job> = Api::default_namespaced(sb.client());
    let job = json!({ "metadata": { "name": "once" }, "spec": { "template": { "spec": {
        "restartPolicy": "Never", "containers": [{ "name": "main", "image": "busybox:1.36" }] } } } });
    jobs.create(&PostParams::default(), &of(job)).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let done = eventually(|| async {
        let list = pods.list(&ListParams::default().labels("job-name=once")).await.ok()?;
        list.items
            .into_iter()
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
    })
    .await;
    let name = done.metadata.name.clone().unwrap();
    let state = done.status.unwrap().container_statuses.unwrap()[0].state.clone().unwrap();
    let terminated = state.terminated.unwrap();
    let text = log(&pods, &name, &LogParams::default()).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(
        lines[0],
        format!(
            "container \"main\" started at {}: image \"busybox:1.36\", command the image's entrypoint",
            terminated.started_at.unwrap().0
        )
    );
    assert_eq!(
        lines[1],
        format!("container \"main\" exited with code 0 at {}", terminated.finished_at.unwrap().0)
    );
    // Following a container that has exited gives its log and ends.
    let followed = pods.log_stream(&name, &LogParams { follow: true, ..LogParams::default() }).await.unwrap();
    let all: Vec<String> = followed.lines().map(Result::unwrap).collect().await;
    assert_eq!(all, lines);
}

#[tokio::test]
async fn scripted_lines_follow_the_start_line_and_the_options_choose_what_is_sent() {
    let sim = Simulation::instant();
    let clock = sim.clock.clone();
    let sb = cluster(sim);
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    running(&pods, "web", server()).await;
    clock.pause();
    let out = sb.container_log("default", "web", "main");
    out.write_line("listening on :8080");
    out.write_line("GET /healthz 200\nGET / 200");
    let text = log(&pods, "web", &LogParams::default()).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("container \"main\" started at "), "{text}");
    assert_eq!(lines[1..], ["listening on :8080", "GET /healthz 200", "GET / 200"]);

    // tailLines: the last lines only; zero is none.
    let tail = |n| LogParams { tail_lines: Some(n), ..LogParams::default() };
    assert_eq!(log(&pods, "web", &tail(2)).await, "GET /healthz 200\nGET / 200\n");
    assert_eq!(log(&pods, "web", &tail(0)).await, "");
    // limitBytes: the first bytes, cut inside a line if need be.
    let limit = LogParams { limit_bytes: Some(9), tail_lines: Some(1), ..LogParams::default() };
    assert_eq!(log(&pods, "web", &limit).await, "GET / 200");
    // timestamps: each line after its time (RFC 3339, nanoseconds as needed) and a space; a
    // scripted line has the clock's time.
    let stamped =
        log(&pods, "web", &LogParams { timestamps: true, tail_lines: Some(1), ..LogParams::default() }).await;
    assert_eq!(stamped, format!("{} GET / 200\n", clock.now()));
    let whole = log(&pods, "web", &LogParams { timestamps: true, ..LogParams::default() }).await;
    for line in whole.lines() {
        let (time, _) = line.split_once(' ').unwrap();
        assert!(time.parse::<jiff::Timestamp>().is_ok(), "{line}");
    }
    // sinceSeconds: what was written in the last seconds of the clock.
    clock.advance(Duration::from_secs(60));
    out.write_line("a minute later");
    let recent = LogParams { since_seconds: Some(30), ..LogParams::default() };
    assert_eq!(log(&pods, "web", &recent).await, "a minute later\n");
}

#[tokio::test]
async fn invalid_options_are_refused_as_upstream_validates_them() {
    let sb = cluster(Simulation::instant());
    let client = sb.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    running(&pods, "web", server()).await;
    let invalid = |q: &'static str| {
        let client = client.clone();
        async move {
            let req = http::Request::get(format!("/api/v1/namespaces/default/pods/web/log?{q}"))
                .body(Vec::new())
                .unwrap();
            let e = api_error(client.request_text(req).await.unwrap_err());
            (e.code, e.reason, e.message)
        }
    };
    let expect = |m: &str| (422, "Invalid".to_owned(), format!("PodLogOptions \"web\" is invalid: {m}"));
    assert_eq!(
        invalid("tailLines=-1").await,
        expect("tailLines: Invalid value: -1: must be greater than or equal to 0")
    );
    assert_eq!(invalid("limitBytes=0").await, expect("limitBytes: Invalid value: 0: must be greater than 0"));
    assert_eq!(
        invalid("sinceSeconds=0").await,
        expect("sinceSeconds: Invalid value: 0: must be greater than 0")
    );
    assert_eq!(
        invalid("sinceSeconds=10&sinceTime=2025-01-01T00:00:00Z").await,
        expect(": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
    );
    // Options are judged before the pod is looked for.
    let req =
        http::Request::get("/api/v1/namespaces/default/pods/nope/log?tailLines=-1").body(Vec::new()).unwrap();
    assert_eq!(api_error(client.request_text(req).await.unwrap_err()).code, 422);
    let e = api_error(pods.logs("nope", &LogParams::default()).await.unwrap_err());
    assert_eq!((e.code, e.message.as_str()), (404, "pods \"nope\" not found"));
}

#[tokio::test]
async fn the_container_must_be_named_among_several_and_be_the_pods() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let spec = json!({
        "initContainers": [{ "name": "setup", "image": "busybox:1.36" }],
        "containers": [{ "name": "a", "image": "busybox:1.36" }, { "name": "b", "image": "nginx:1.27" }],
    });
    running(&pods, "two", spec).await;
    assert_eq!(
        refusal(&pods, "two", &LogParams::default()).await,
        (400, "a container name must be specified for pod two, choose one of: [setup a b]".to_owned())
    );
    let named = |c: &str| LogParams { container: Some(c.into()), ..LogParams::default() };
    assert_eq!(
        refusal(&pods, "two", &named("c")).await,
        (400, "container c is not valid for pod two".to_owned())
    );
    assert!(log(&pods, "two", &named("b")).await.starts_with("container \"b\" started at "));
    // An init container that completed: its start and its exit.
    let setup = log(&pods, "two", &named("setup")).await;
    assert!(
        setup.lines().nth(1).is_some_and(|l| l.starts_with("container \"setup\" exited with code 0 at ")),
        "{setup}"
    );
}

#[tokio::test]
async fn a_container_not_started_is_waiting_and_one_never_restarted_has_no_previous_log() {
    // No kubelets: a pod put on a node is never started.
    let sim =
        Simulation { controllers: Controllers::all().without(Controller::Kubelet), ..Simulation::instant() };
    let sb = cluster(sim);
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let mut spec = server();
    spec["nodeName"] = json!("sandbox-node-1");
    pods.create(&PostParams::default(), &pod("idle", spec)).await.unwrap();
    assert_eq!(
        refusal(&pods, "idle", &LogParams::default()).await,
        (400, "container \"main\" in pod \"idle\" is waiting to start: ContainerCreating".to_owned())
    );

    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    running(&pods, "web", server()).await;
    let previous = LogParams { previous: true, ..LogParams::default() };
    assert_eq!(
        refusal(&pods, "web", &previous).await,
        (400, "previous terminated container \"main\" in pod \"web\" not found".to_owned())
    );
}

#[tokio::test]
async fn a_restarted_container_has_a_previous_log_with_its_exit() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    running(&pods, "web", server()).await;
    sb.container_log("default", "web", "main").write_line("about to crash");
    sb.cluster().unwrap().exit_pod("default", "web", 2);
    let restarted = eventually(|| async {
        let p = pods.get("web").await.ok()?;
        let restarts = p.status.as_ref()?.container_statuses.as_ref()?[0].restart_count;
        (restarts == 1).then_some(p)
    })
    .await;
    let before = log(&pods, "web", &LogParams { previous: true, ..LogParams::default() }).await;
    let lines: Vec<&str> = before.lines().collect();
    assert_eq!(lines.len(), 3, "{before}");
    assert_eq!(lines[1], "about to crash");
    assert!(lines[2].starts_with("container \"main\" exited with code 2 at "), "{before}");
    let now = log(&pods, "web", &LogParams::default()).await;
    assert_eq!(
        now,
        format!(
            "container \"main\" restarted (1) at {}: image \"nginx:1.27\", command the image's entrypoint\n",
            started_at(&restarted, "main")
        )
    );
}

/// The state of container `main`: its status, as the kubelet wrote it.
fn main_status(p: &Pod) -> k8s_openapi::api::core::v1::ContainerStatus {
    p.status.as_ref().unwrap().container_statuses.as_ref().unwrap()[0].clone()
}

async fn phase_is(pods: &Api<Pod>, name: &str, phase: &str) -> Pod {
    eventually(|| async {
        let p = pods.get(name).await.ok()?;
        (p.status.as_ref()?.phase.as_deref() == Some(phase)).then_some(p)
    })
    .await
}

#[tokio::test]
async fn a_containers_command_runs_its_output_is_its_log_and_its_exit_is_the_containers() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    // kube-rs's own log test: a loop with sleeps, in a pod that does not restart.
    let script = "for i in $(seq 1 5); do echo kube $i; sleep 0.1; done";
    let spec = json!({ "restartPolicy": "Never",
        "containers": [{ "name": "main", "image": "busybox:stable", "command": ["sh", "-c", script] }] });
    running(&pods, "loop", spec).await;
    let stream = pods.log_stream("loop", &LogParams { follow: true, ..LogParams::default() }).await.unwrap();
    let followed: Vec<String> = stream.lines().map(Result::unwrap).collect().await;
    assert_eq!(followed, ["kube 1", "kube 2", "kube 3", "kube 4", "kube 5"]);
    let done = phase_is(&pods, "loop", "Succeeded").await;
    let ended = main_status(&done).state.unwrap().terminated.unwrap();
    assert_eq!((ended.exit_code, ended.reason.as_deref()), (0, Some("Completed")));
    assert_eq!(log(&pods, "loop", &LogParams::default()).await, "kube 1\nkube 2\nkube 3\nkube 4\nkube 5\n");

    // stderr is in the log too; a failing command fails the pod with its code.
    let spec = json!({ "restartPolicy": "Never",
        "containers": [{ "name": "main", "image": "busybox", "command": ["sh", "-c", "echo out; echo err >&2; exit 3"] }] });
    pods.create(&PostParams::default(), &pod("fails", spec)).await.unwrap();
    let failed = phase_is(&pods, "fails", "Failed").await;
    let ended = main_status(&failed).state.unwrap().terminated.unwrap();
    assert_eq!((ended.exit_code, ended.reason.as_deref()), (3, Some("Error")));
    assert_eq!(log(&pods, "fails", &LogParams::default()).await, "out\nerr\n");
}

#[tokio::test]
async fn a_crashing_container_restarts_at_once_then_backs_off_as_the_kubelet_does() {
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let spec = json!({ "containers": [{ "name": "main", "image": "busybox", "command": ["sh", "-c", "echo crashed; exit 1"] }] });
    pods.create(&PostParams::default(), &pod("crash", spec)).await.unwrap();
    let waiting_with = |count: i32| {
        let pods = pods.clone();
        async move {
            eventually(|| async {
                let p = pods.get("crash").await.ok()?;
                let s = main_status(&p);
                let waiting = s.state.as_ref()?.waiting.clone()?;
                (s.restart_count == count).then_some((p, waiting))
            })
            .await
        }
    };
    // The first exit restarts it at once; the second waits 10 s.
    let (p, waiting) = waiting_with(1).await;
    let uid = p.metadata.uid.clone().unwrap();
    assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(
        waiting.message.unwrap(),
        format!("back-off 10s restarting failed container=main pod=crash_default({uid})")
    );
    let s = main_status(&p);
    assert_eq!(s.last_state.unwrap().terminated.unwrap().exit_code, 1);
    assert!(!s.ready);
    assert_eq!(p.status.as_ref().unwrap().phase.as_deref(), Some("Running"));
    // Its log, and its previous one, are the run that crashed, as the kubelet shows them.
    assert_eq!(log(&pods, "crash", &LogParams::default()).await, "crashed\n");
    assert_eq!(log(&pods, "crash", &LogParams { previous: true, ..LogParams::default() }).await, "crashed\n");
    // Once the back-off is over it runs again, crashes again, and waits twice as long.
    sim.clock().advance(Duration::from_secs(10));
    let (_, waiting) = waiting_with(2).await;
    assert!(waiting.message.unwrap().starts_with("back-off 20s restarting failed container=main "));
}

#[tokio::test]
async fn sleep_in_a_container_waits_on_the_simulations_clock() {
    let sb = cluster(Simulation::instant());
    let sim = sb.cluster().unwrap().clone();
    sim.clock().pause();
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let spec = json!({ "restartPolicy": "Never",
        "containers": [{ "name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 30; echo woke"] }] });
    running(&pods, "nap", spec).await;
    // The process may start its sleep after the status says Running: the clock moves until it
    // has woken, never the wall clock's 30 s.
    eventually(|| async {
        sim.clock().advance(Duration::from_secs(30));
        let p = pods.get("nap").await.ok()?;
        (p.status?.phase.as_deref() == Some("Succeeded")).then_some(())
    })
    .await;
    assert_eq!(log(&pods, "nap", &LogParams::default()).await, "woke\n");
}

#[tokio::test]
async fn follow_streams_lines_written_after_it_began_and_ends_when_the_pod_is_deleted() {
    let sb = cluster(Simulation::instant());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    running(&pods, "web", server()).await;
    let stream = pods.log_stream("web", &LogParams { follow: true, ..LogParams::default() }).await.unwrap();
    let mut lines = stream.lines();
    let first = lines.next().await.unwrap().unwrap();
    assert!(first.starts_with("container \"main\" started at "), "{first}");
    sb.container_log("default", "web", "main").write_line("written while followed");
    assert_eq!(lines.next().await.unwrap().unwrap(), "written while followed");
    pods.delete("web", &DeleteParams::default()).await.unwrap();
    // The stream ends (the pod is gone), with nothing more.
    assert!(lines.next().await.is_none());
}

#[tokio::test]
async fn a_pod_on_a_node_that_does_not_exist_is_its_nodes_404() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let pods: Api<Pod> = Api::default_namespaced(sb.client());
    let mut spec = server();
    spec["nodeName"] = json!("node-1");
    pods.create(&PostParams::default(), &pod("web", spec)).await.unwrap();
    assert_eq!(
        refusal(&pods, "web", &LogParams::default()).await,
        (404, "nodes \"node-1\" not found".to_owned())
    );
}
