//! The simulated cluster with the installed kubectl, as an operator's end-to-end test drives a
//! cluster: `kubectl rollout status`, `set image`, `rollout history` and `undo` on a Deployment;
//! `kubectl wait --for=condition=complete` on a Job; `get pods -o wide` on the nodes; and
//! `kubectl drain` against a PodDisruptionBudget, the pods moving to the other nodes;
//! `kubectl logs` of a Job's pod and `kubectl logs -f` of a running one; `kubectl exec` into one,
//! `kubectl attach` to one and `kubectl port-forward` to one; `kubectl top` of pods and nodes;
//! a HorizontalPodAutoscaler scaling a Deployment up and down, on a paused clock.

use std::io::{BufRead, BufReader};

use kube_sandbox::SandboxConfig;
use kube_sandbox::Simulation;

use super::kubectl::{Kubectl, cells};

fn start(test: &str) -> Option<Kubectl> {
    Kubectl::start_with(test, SandboxConfig::with_cluster(Simulation::instant()))
}

#[test]
fn deployments_roll_out_update_and_roll_back() {
    let Some(k) = start("rollout") else { return };
    k.ok(&["create", "deployment", "web", "--image=nginx:1.26", "--replicas=3"]);
    let status = k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(status.trim_end().ends_with("deployment \"web\" successfully rolled out"), "{status}");

    let table = k.ok(&["get", "pods", "-o", "wide"]);
    let rows = cells(&table);
    assert_eq!(rows[0][..7], ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"], "{table}");
    assert_eq!(rows.len(), 4, "{table}");
    for row in &rows[1..] {
        assert_eq!((row[1], row[2]), ("1/1", "Running"), "{table}");
        assert!(row[5].starts_with("10.244.") && row[6].starts_with("sandbox-node-"), "{table}");
    }

    k.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    let status = k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let history = k.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history.lines().skip(2).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(revisions, ["1", "2"], "{history}");

    let undone = k.ok(&["rollout", "undo", "deployment/web"]);
    assert_eq!(undone.trim(), "deployment.apps/web rolled back");
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let image = k.jsonpath(&["get", "deployment/web"], "{.spec.template.spec.containers[0].image}");
    assert_eq!(image, "nginx:1.26");
    let images = k.jsonpath(&["get", "pods"], "{range .items[*]}{.spec.containers[0].image} {end}");
    assert!(images.split_whitespace().all(|i| i == "nginx:1.26"), "{images}");
    let revision = k.jsonpath(
        &["get", "deployment/web"],
        "{.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
    );
    assert_eq!(revision, "3", "the rolled-back template is the newest revision");
}

#[test]
fn a_job_completes_and_kubectl_wait_sees_it() {
    let Some(k) = start("job") else { return };
    k.ok(&["create", "job", "hello", "--image=busybox:1.36", "--", "echo", "hello"]);
    let waited = k.ok(&["wait", "--for=condition=complete", "job/hello", "--timeout=60s"]);
    assert_eq!(waited.trim(), "job.batch/hello condition met");
    let table = k.ok(&["get", "jobs"]);
    let rows = cells(&table);
    assert_eq!((rows[1][0], rows[1][1], rows[1][2]), ("hello", "Complete", "1/1"), "{table}");
    let phase = k.jsonpath(&["get", "pods", "-l", "job-name=hello"], "{.items[0].status.phase}");
    assert_eq!(phase, "Succeeded");
    // Its log: what its command wrote.
    assert_eq!(k.ok(&["logs", "job/hello"]), "hello\n");
    let tail = k.ok(&["logs", "job/hello", "--tail=1", "--timestamps"]);
    let (time, rest) = tail.trim_end().split_once(' ').unwrap();
    assert!(time.ends_with('Z') && rest == "hello", "{tail}");
    // kubectl checks its flags first; the API server the ones it lets through.
    let err = k.fails(&["logs", "job/hello", "-c", "nope"]);
    assert!(err.contains("container nope is not valid for pod hello-"), "{err}");
}

#[test]
fn kubectl_logs_follow_gets_new_lines_and_ends_when_the_pod_is_deleted() {
    let Some(k) = start("logs-follow") else { return };
    k.ok(&["run", "web", "--image=nginx:1.27"]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    let mut follow = k.spawn(&["logs", "-f", "web"]);
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("container \"web\" started at "), "{first}");
    k.sandbox().container_log("default", "web", "web").write_line("GET / 200");
    assert_eq!(lines.next().unwrap().unwrap(), "GET / 200");
    k.ok(&["delete", "pod", "web", "--wait=false"]);
    // The stream ends with the pod, and kubectl with it, successfully.
    assert!(lines.next().is_none());
    assert!(follow.wait().unwrap().success());
}

#[test]
fn kubectl_exec_runs_the_containers_shell_with_stdin_and_exit_codes() {
    let Some(k) = start("exec") else { return };
    k.ok(&["run", "web", "--image=busybox:1.36", "--env=GREETING=hello"]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    assert_eq!(
        k.ok(&["exec", "web", "--", "sh", "-c", "echo $GREETING from $(hostname)"]),
        "hello from web\n"
    );
    // Its exit code is kubectl's; stderr passes through.
    let (ok, out, err) = k.run(&["exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert!(!ok);
    assert_eq!(out, "out\n");
    assert!(err.starts_with("err\n"), "{err}");
    assert!(err.contains("command terminated with exit code 3"), "{err}");
    let err = k.fails(&["exec", "web", "--", "curl", "localhost"]);
    assert!(err.contains("curl: command not found") && err.contains("exit code 127"), "{err}");
    // Stdin, to the end.
    let mut cat = k.spawn_with_stdin(&["exec", "-i", "web", "--", "wc", "-l"]);
    use std::io::Write;
    cat.stdin.take().unwrap().write_all(b"one\ntwo\n").unwrap();
    let out = cat.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    let err = k.fails(&["exec", "web", "-c", "nope", "--", "ls"]);
    assert!(err.contains("container nope is not valid for pod web"), "{err}");
}

/// What a child writes to its stdout, collected as it comes, for a test to wait on.
fn collected(out: impl std::io::Read + Send + 'static) -> std::sync::Arc<std::sync::Mutex<String>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let into = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut out = out;
        let mut buf = [0u8; 1024];
        while let Ok(n) = std::io::Read::read(&mut out, &mut buf) {
            if n == 0 {
                break;
            }
            into.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    seen
}

/// Waits until `seen` contains `text`; what it holds then.
fn wait_for(seen: &std::sync::Mutex<String>, text: &str) -> String {
    loop {
        let now = seen.lock().unwrap().clone();
        if now.contains(text) {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn kubectl_exec_it_runs_an_interactive_shell_on_a_terminal() {
    let Some(k) = start("exec-it") else { return };
    k.ok(&["run", "web", "--image=busybox:1.36", "--", "sh", "-c", "sleep infinity"]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    let mut term = k.on_terminal(&["exec", "-it", "web", "--", "sh"]);
    let seen = collected(term.stdout.take().unwrap());
    let mut keys = term.stdin.take().unwrap();
    use std::io::Write;
    // The shell's prompt, on the terminal; what is typed is echoed, and its answer follows.
    wait_for(&seen, "/ # ");
    keys.write_all(b"echo hello from $(hostname)\r").unwrap();
    let shown = wait_for(&seen, "hello from web");
    assert!(shown.contains("echo hello from $(hostname)"), "{shown:?}");
    assert!(shown.contains("hello from web\r\n"), "a terminal ends lines with CR LF: {shown:?}");
    keys.write_all(b"exit 3\r").unwrap();
    let status = term.wait().unwrap();
    drop(keys);
    assert_eq!(status.code(), Some(3), "kubectl exits with the shell's code: {:?}", seen.lock().unwrap());
}

#[test]
fn kubectl_run_i_attaches_to_the_containers_stdin() {
    let Some(k) = start("run-i") else { return };
    // `kubectl run -i` makes a container that keeps stdin open for one client (`stdinOnce`),
    // attaches, and with `--rm` deletes the pod when it has finished.
    let mut run = k.spawn_with_stdin(&[
        "run",
        "-i",
        "--rm",
        "--restart=Never",
        "demo",
        "--image=busybox:1.36",
        "--",
        "sh",
    ]);
    use std::io::Write;
    run.stdin.take().unwrap().write_all(b"echo hello from $(hostname)\n").unwrap();
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("hello from demo\n"), "{stdout}{stderr}");
    let err = k.fails(&["get", "pod", "demo"]);
    assert!(err.contains("pods \"demo\" not found"), "{err}");
}

#[test]
fn kubectl_exec_and_attach_over_spdy_as_older_clients_speak_them() {
    // kubectl before 1.30, and client-go's SPDY executor, open a SPDY stream per channel.
    let Some(k) = start("exec-spdy") else { return };
    let k = k.with_env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
    k.ok(&["run", "web", "--image=busybox:1.36", "--", "sh", "-c", "echo up; sleep infinity"]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    let (ok, out, err) = k.run(&["exec", "web", "-v=6", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert!(!ok);
    assert_eq!(out, "out\n");
    assert!(err.contains("err\n") && err.contains("command terminated with exit code 3"), "{err}");
    let mut wc = k.spawn_with_stdin(&["exec", "-i", "web", "--", "wc", "-l"]);
    use std::io::Write;
    wc.stdin.take().unwrap().write_all(b"one\ntwo\nthree\n").unwrap();
    let out = wc.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");
    // Attach follows what the container's command writes from then on, in order.
    let ticks = "for i in $(seq 1 10000); do echo tick $i; sleep 0.05; done";
    k.ok(&["run", "ticker", "--image=busybox:1.36", "--", "sh", "-c", ticks]);
    k.ok(&["wait", "--for=condition=ready", "pod/ticker", "--timeout=60s"]);
    let mut attach = k.spawn(&["attach", "ticker"]);
    let mut lines = BufReader::new(attach.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let n: u32 = first.strip_prefix("tick ").unwrap().parse().unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), format!("tick {}", n + 1));
    attach.kill().unwrap();
    let _ = attach.wait();
}

#[test]
fn kubectl_attach_follows_what_the_container_writes() {
    let Some(k) = start("attach") else { return };
    k.ok(&["run", "web", "--image=nginx:1.27"]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    let mut attach = k.spawn(&["attach", "web"]);
    let mut lines = BufReader::new(attach.stdout.take().unwrap()).lines();
    let log = k.sandbox().container_log("default", "web", "web");
    // The session is up once a line written now comes through; until then, lines written
    // before it are not what attach shows, so write until one arrives.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = std::sync::Arc::clone(&stop);
    let writer = std::thread::spawn(move || {
        let mut i = 0;
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            log.write_line(&format!("GET /{i} 200"));
            i += 1;
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("GET /") && first.ends_with(" 200"), "{first}");
    let n: u32 = first["GET /".len()..first.len() - 4].parse().unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), format!("GET /{} 200", n + 1), "lines in order, none lost");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    attach.kill().unwrap();
    let _ = attach.wait();
}

#[test]
fn kubectl_port_forward_reaches_a_mapped_address_an_echo_and_a_refused_port() {
    use std::io::{Read, Write};
    let Some(k) = start("port-forward") else { return };
    k.ok(&["run", "web", "--image=nginx:1.27", "--port=80"]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    let local = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    k.sandbox().forward_port("default", "web", 8080, local.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = local.accept().unwrap();
        conn.write_all(b"from the local server").unwrap();
    });
    // Local ports kubectl picks, one per remote port, in the order asked.
    let mut pf = k.spawn(&["port-forward", "pod/web", ":80", ":8080", ":81"]);
    let mut lines = BufReader::new(pf.stdout.take().unwrap()).lines();
    let mut ports = Vec::new();
    while ports.len() < 3 {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
            ports.push(rest.split_once(' ').unwrap().0.parse::<u16>().unwrap());
        }
    }
    let connect = |port: u16| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut echo = connect(ports[0]);
    echo.write_all(b"ping").unwrap();
    let mut buf = [0; 4];
    echo.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
    drop(echo);
    let mut mapped = connect(ports[1]);
    let mut got = String::new();
    mapped.read_to_string(&mut got).unwrap();
    assert_eq!(got, "from the local server");
    server.join().unwrap();
    // A port nothing listens on: kubectl reports the kubelet's error and, as against a
    // cluster, drops the whole forward.
    let mut refused = connect(ports[2]);
    let _ = refused.write_all(b"x");
    let out = pf.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error forwarding port 81 to pod web_default, uid ")
            && err.contains("failed to connect to localhost:81 inside the pod: connection refused"),
        "{err}"
    );
    assert!(!out.status.success());
}

#[test]
fn a_node_drains_within_its_disruption_budget_and_the_pods_move() {
    let Some(k) = start("drain") else { return };
    k.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=6"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    k.ok(&["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=5"]);
    let on = |node: &str| {
        k.jsonpath(
            &["get", "pods", "--field-selector", &format!("spec.nodeName={node}")],
            "{.items[*].metadata.name}",
        )
    };
    assert!(!on("sandbox-node-1").is_empty(), "the scheduler spread the pods");
    let drained = k.ok(&["drain", "sandbox-node-1", "--ignore-daemonsets", "--timeout=120s"]);
    assert!(drained.contains("node/sandbox-node-1 cordoned"), "{drained}");
    assert!(drained.contains("evicting pod default/web-"), "{drained}");
    assert!(drained.trim_end().ends_with("node/sandbox-node-1 drained"), "{drained}");
    assert_eq!(on("sandbox-node-1"), "", "nothing left on the drained node");
    let status = k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let unschedulable = k.jsonpath(&["get", "node", "sandbox-node-1"], "{.spec.unschedulable}");
    assert_eq!(unschedulable, "true");
    k.ok(&["uncordon", "sandbox-node-1"]);
}

#[test]
fn kubectl_top_shows_what_containers_use() {
    let Some(k) = start("top") else { return };
    k.ok(&["run", "web", "--image=nginx:1.27", "--overrides",
        r#"{"spec":{"containers":[{"name":"web","image":"nginx:1.27","resources":{"requests":{"cpu":"250m","memory":"64Mi"}}}]}}"#]);
    k.ok(&["wait", "--for=condition=ready", "pod/web", "--timeout=60s"]);
    // By default a container uses what it requests.
    let top = k.ok(&["top", "pod", "web"]);
    assert_eq!(
        cells(&top),
        [vec!["NAME", "CPU(cores)", "MEMORY(bytes)"], vec!["web", "250m", "64Mi"]],
        "{top}"
    );
    // An annotation says otherwise; `--containers` shows each container.
    k.ok(&["annotate", "pod", "web", "usage.sandbox.counter.example.com/web=cpu=1200m,memory=300Mi"]);
    let top = k.ok(&["top", "pod", "web", "--containers"]);
    assert_eq!(cells(&top)[1], ["web", "web", "1200m", "300Mi"], "{top}");
    // A node's usage is its pods'; its share of what the node can give.
    let node = k.jsonpath(&["get", "pod", "web"], "{.spec.nodeName}");
    let top = k.ok(&["top", "node", &node]);
    let rows = cells(&top);
    assert_eq!(rows[0][..3], ["NAME", "CPU(cores)", "CPU(%)"], "{top}");
    assert_eq!((rows[1][0], rows[1][1], rows[1][3]), (node.as_str(), "1200m", "300Mi"), "{top}");
    // A pod that runs nothing has no metrics, in metrics-server's words.
    k.ok(&["run", "done", "--image=busybox:1.36", "--restart=Never", "--", "true"]);
    k.ok(&["wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/done", "--timeout=60s"]);
    let err = k.fails(&["top", "pod", "done"]);
    assert!(err.contains("pods.metrics.k8s.io \"default/done\" not found"), "{err}");
}

#[test]
fn kubectl_sees_an_autoscaler_scale_a_deployment_up_and_down() {
    let Some(k) = start("hpa") else { return };
    let clock = k.sandbox().cluster().unwrap().clock().clone();
    clock.pause();
    k.ok(&["create", "deployment", "api", "--image=nginx"]);
    k.ok(&["set", "resources", "deployment", "api", "--requests=cpu=100m"]);
    let busy = r#"{"spec":{"template":{"metadata":{"annotations":{"usage.sandbox.counter.example.com/nginx":"cpu=250m"}}}}}"#;
    k.ok(&["patch", "deployment", "api", "-p", busy]);
    k.ok(&["rollout", "status", "deployment/api", "--timeout=60s"]);
    let hpa = std::env::temp_dir().join(format!("sandbox-hpa-{}.yaml", std::process::id()));
    std::fs::write(
        &hpa,
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: api}\nspec:\n  \
         scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}\n  minReplicas: 1\n  maxReplicas: 4\n  \
         metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]\n",
    )
    .unwrap();
    k.ok(&["apply", "-f", hpa.to_str().unwrap()]);
    let _ = std::fs::remove_file(&hpa);
    // The autoscaler looks every 15 s of the clock: 250 % of a 50 % target wants 5, at most 4.
    let replicas = || k.jsonpath(&["get", "deployment/api"], "{.spec.replicas}");
    // The status counts the replicas the next look finds.
    while k.jsonpath(&["get", "hpa/api"], "{.status.currentReplicas}") != "4" {
        clock.advance(std::time::Duration::from_secs(15));
    }
    assert_eq!(replicas(), "4");
    let table = k.ok(&["get", "hpa", "api"]);
    let rows = cells(&table);
    // TARGETS reads `cpu: 250%/50%`, two cells here.
    assert_eq!(rows[1][2..7], ["cpu:", "250%/50%", "1", "4", "4"], "{table}");
    let described = k.ok(&["describe", "hpa", "api"]);
    assert!(
        described
            .contains("New size: 4; reason: cpu resource utilization (percentage of request) above target"),
        "{described}"
    );
    // Idle: after the 5 min downscale window, one replica.
    while replicas() != "1" {
        k.ok(&[
            "annotate",
            "pods",
            "-l",
            "app=api",
            "--overwrite",
            "usage.sandbox.counter.example.com/nginx=cpu=5m",
        ]);
        clock.advance(std::time::Duration::from_secs(15));
    }
    let status =
        k.jsonpath(&["get", "hpa", "api"], "{.status.conditions[?(@.type==\"AbleToScale\")].reason}");
    assert_eq!(status, "SucceededRescale");
}
