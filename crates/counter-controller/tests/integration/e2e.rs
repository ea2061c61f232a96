//! End to end with real clients nobody here wrote: the binary started as a process, the seed's
//! walkthrough driven by the installed kubectl, the controller binary as its own process against
//! the HTTPS sandbox, Python's `kubernetes` client, and malformed HTTP.
//!
//! Tests that need kubectl (or the Python client) skip with a printed reason when it is missing;
//! `COUNTER_CONTROLLER_REQUIRE_KUBECTL=1` (set by `.ci/run`) turns that skip into a failure, and
//! `COUNTER_CONTROLLER_PYTHON` names the Python interpreter that has the client.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::common::*;

/// A `counter-controller sandbox` process, killed on drop.
struct SandboxProcess {
    child: Child,
    kubeconfig: PathBuf,
    stderr: PathBuf,
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_sandbox(dir: &Path, extra: &[&str]) -> SandboxProcess {
    let kubeconfig = dir.join("sandbox.kubeconfig");
    let stderr = dir.join("sandbox.log");
    let mut child = Command::new(BIN)
        .args(["sandbox", "--listen", "127.0.0.1:0", "--pod-ready", "50ms", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let export = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("export KUBECONFIG="))
        .expect("the export line is printed");
    assert_eq!(export, format!("export KUBECONFIG={}", kubeconfig.canonicalize().unwrap().display()));
    std::thread::spawn(move || for _ in lines {});
    SandboxProcess { child, kubeconfig, stderr }
}

/// Runs `kubectl get deploy web -w` until a line shows `ready`.
fn watch_until(kubectl: &Path, kubeconfig: &Path, ready: &str) -> Vec<String> {
    // `get NAME -w` fails at once if the object does not exist yet; the controller may still be
    // creating it when the machine is busy.
    eventually("deploy/web exists", || kubectl_run(kubectl, kubeconfig, &["get", "deploy", "web"]).0);
    let mut child = Command::new(kubectl)
        .args(["get", "deploy", "web", "-w"])
        .env("KUBECONFIG", kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            let done = line.split_whitespace().nth(1) == Some(ready);
            seen.push(line);
            if done {
                let _ = child.kill();
                let _ = child.wait();
                return seen;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("kubectl get deploy web -w never showed READY {ready}: {seen:?}");
}

#[test]
fn the_seed_walkthrough_with_real_kubectl() {
    let Some(kubectl) = kubectl() else { return };
    let dir = temp_dir("walkthrough");
    let sb = start_sandbox(&dir, &[]);
    let kc = sb.kubeconfig.clone();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&kc).unwrap().permissions().mode() & 0o777,
            0o600,
            "kubeconfig is private"
        );
    }

    // 1. apply; READY climbs to 3/3.
    assert_eq!(
        kubectl_ok(&kubectl, &kc, &["apply", "-f", "examples/cm-web.yaml"]).trim(),
        "configmap/web created"
    );
    let seen = watch_until(&kubectl, &kc, "3/3");
    assert!(seen[0].starts_with("NAME") && seen[0].contains("READY"), "{seen:?}");

    // 2. annotate 5; READY reaches 5/5.
    assert_eq!(
        kubectl_ok(&kubectl, &kc, &["annotate", "cm", "web", "counter.example.com/desired=5", "--overwrite"])
            .trim(),
        "configmap/web annotated"
    );
    watch_until(&kubectl, &kc, "5/5");

    // get -o yaml, edit (the exercise: the controller logs the new data), scale (drift is undone).
    let yaml = kubectl_ok(&kubectl, &kc, &["get", "cm", "web", "-o", "yaml"]);
    assert!(yaml.contains("counter.example.com/desired: \"5\"") && yaml.contains("app: web"), "{yaml}");
    let editor = dir.join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/app: web/app: edited/' \"$1\"\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = Command::new(&kubectl)
        .args(["edit", "cm", "web"])
        .env("KUBECONFIG", &kc)
        .env("EDITOR", &editor)
        .output()
        .unwrap();
    assert!(out.status.success(), "kubectl edit: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(kubectl_ok(&kubectl, &kc, &["get", "cm", "web", "-o", "jsonpath={.data.app}"]), "edited");
    eventually("the controller logs the edited data", || {
        std::fs::read_to_string(&sb.stderr).unwrap_or_default().contains("ConfigMap default/web data: edited")
    });
    kubectl_ok(&kubectl, &kc, &["scale", "deploy", "web", "--replicas=7"]);
    eventually("hand-made scale undone", || {
        kubectl_ok(&kubectl, &kc, &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]) == "5"
    });

    // Server-side apply of a changed manifest scales to 4.
    let ssa = dir.join("cm-web-4.yaml");
    std::fs::write(
        &ssa,
        std::fs::read_to_string(workspace_root().join("examples/cm-web.yaml"))
            .unwrap()
            .replace("\"3\"", "\"4\""),
    )
    .unwrap();
    let out = kubectl_ok(
        &kubectl,
        &kc,
        &["apply", "--server-side", "--force-conflicts", "-f", ssa.to_str().unwrap()],
    );
    assert!(out.contains("serverside-applied"), "{out}");
    eventually("scaled to 4", || {
        kubectl_ok(&kubectl, &kc, &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]) == "4"
    });

    // Server-side dry runs: `kubectl diff` shows the change, `apply --dry-run=server` stores nothing.
    let five = dir.join("cm-web-5.yaml");
    std::fs::write(&five, std::fs::read_to_string(&ssa).unwrap().replace("\"4\"", "\"5\"")).unwrap();
    let (ok, diff, err) = kubectl_run(&kubectl, &kc, &["diff", "-f", five.to_str().unwrap()]);
    assert!(!ok && err.is_empty(), "kubectl diff exits 1 when there is a difference: {err}");
    assert!(
        diff.contains("-    counter.example.com/desired: \"4\"")
            && diff.contains("+    counter.example.com/desired: \"5\""),
        "{diff}"
    );
    let out = kubectl_ok(
        &kubectl,
        &kc,
        &["apply", "--server-side", "--dry-run=server", "-f", five.to_str().unwrap()],
    );
    assert!(out.contains("(server dry run)"), "{out}");
    assert_eq!(
        kubectl_ok(
            &kubectl,
            &kc,
            &["get", "cm", "web", "-o", "jsonpath={.metadata.annotations.counter\\.example\\.com/desired}"]
        ),
        "4",
        "a dry run stores nothing"
    );

    // Events the controller recorded.
    eventually("Created and Scaled events", || {
        let events = kubectl_ok(&kubectl, &kc, &["get", "events"]);
        events.contains("Created") && events.contains("Scaled")
    });

    // A Deployment made by hand (kubectl sends it as protobuf) is never touched: a ConfigMap of
    // the same name gets a ResourceExists Warning instead.
    assert_eq!(
        kubectl_ok(&kubectl, &kc, &["create", "deployment", "hello", "--image=nginx:1.27", "--port=80"])
            .trim(),
        "deployment.apps/hello created"
    );
    kubectl_ok(&kubectl, &kc, &["create", "configmap", "hello", "--from-literal=app=hello"]);
    kubectl_ok(&kubectl, &kc, &["annotate", "cm", "hello", "counter.example.com/desired=4"]);
    eventually("a ResourceExists Warning on cm/hello", || {
        kubectl_ok(&kubectl, &kc, &["describe", "cm", "hello"]).contains("ResourceExists")
    });
    assert_eq!(
        kubectl_ok(&kubectl, &kc, &["get", "deploy", "hello", "-o", "jsonpath={.spec.replicas}"]),
        "1"
    );

    // Namespaces: create, use, delete (its objects go).
    kubectl_ok(&kubectl, &kc, &["create", "ns", "team"]);
    kubectl_ok(&kubectl, &kc, &["create", "configmap", "x", "-n", "team", "--from-literal=a=b"]);
    kubectl_ok(&kubectl, &kc, &["delete", "ns", "team"]);
    let (ok, _, err) = kubectl_run(&kubectl, &kc, &["get", "ns", "team"]);
    assert!(!ok && err.contains("NotFound"), "{err}");

    // 3. delete the ConfigMap; the Deployment follows.
    assert!(kubectl_ok(&kubectl, &kc, &["delete", "cm", "web"]).contains("configmap \"web\" deleted"));
    eventually("the Deployment follows", || !kubectl_run(&kubectl, &kc, &["get", "deploy", "web"]).0);
    let (_, _, err) = kubectl_run(&kubectl, &kc, &["get", "deploy", "web"]);
    assert_eq!(err.trim(), "Error from server (NotFound): deployments.apps \"web\" not found");
}

/// What a user reaches for before writing YAML: `kubectl explain` reads the kinds' schemas from
/// the OpenAPI v3 documents; `kubectl create deployment` gets upstream's defaults back, and a
/// client-side `kubectl apply` merges containers by name (the schema's patch merge keys).
#[test]
fn kubectl_explain_create_and_apply_read_the_openapi_schemas() {
    let Some(kubectl) = kubectl() else { return };
    let dir = temp_dir("explain");
    let sb = start_sandbox(&dir, &["--no-controller"]);
    let kc = sb.kubeconfig.clone();
    let out = kubectl_ok(&kubectl, &kc, &["explain", "deployment.spec.replicas"]);
    for want in
        ["GROUP:      apps", "KIND:       Deployment", "FIELD: replicas <integer>", "Number of desired pods"]
    {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    let out = kubectl_ok(&kubectl, &kc, &["explain", "configmap"]);
    assert!(out.contains("data\t<map[string]string>") && out.contains("immutable\t<boolean>"), "{out}");
    let out = kubectl_ok(&kubectl, &kc, &["explain", "lease.spec.renewTime"]);
    assert!(out.contains("KIND:       Lease") && out.contains("FIELD: renewTime <"), "{out}");

    kubectl_ok(&kubectl, &kc, &["create", "deployment", "web", "--image=nginx"]);
    let strategy = kubectl_ok(&kubectl, &kc, &["get", "deploy", "web", "-o", "jsonpath={.spec.strategy}"]);
    assert_eq!(
        strategy,
        r#"{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"}"#
    );
    let manager = kubectl_ok(
        &kubectl,
        &kc,
        &[
            "get",
            "deploy",
            "web",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[0].manager}",
        ],
    );
    assert_eq!(manager, "kubectl-create");

    let manifest = dir.join("api.yaml");
    let two = |image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: api}}\nspec:\n  selector: {{matchLabels: {{app: api}}}}\n  template:\n    metadata: {{labels: {{app: api}}}}\n    spec:\n      containers:\n      - {{name: a, image: \"{image}\"}}\n      - {{name: b, image: busybox}}\n"
        )
    };
    std::fs::write(&manifest, two("nginx:1")).unwrap();
    kubectl_ok(&kubectl, &kc, &["apply", "-f", manifest.to_str().unwrap()]);
    let env =
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"b","env":[{"name":"X","value":"1"}]}]}}}}"#;
    kubectl_ok(&kubectl, &kc, &["patch", "deploy", "api", "-p", env]);
    std::fs::write(&manifest, two("nginx:2")).unwrap();
    kubectl_ok(&kubectl, &kc, &["apply", "-f", manifest.to_str().unwrap()]);
    let containers = kubectl_ok(
        &kubectl,
        &kc,
        &[
            "get",
            "deploy",
            "api",
            "-o",
            "jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}:{.env[0].name} {end}",
        ],
    );
    assert_eq!(containers.trim(), "a=nginx:2: b=busybox:X", "the apply changed a's image and kept b's env");
}

#[test]
fn the_demo_shows_the_three_convergences() {
    let dir = temp_dir("demo");
    let out = Command::new(BIN)
        .args(["sandbox", "--demo", "--listen", "127.0.0.1:0", "--pod-ready", "20ms", "--kubeconfig-out"])
        .arg(dir.join("k"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The Deployment became pods on the simulated nodes, listed as `kubectl get pods -o wide`.
    for line in [
        "READY 3/3",
        "Running",
        "sandbox-node-",
        "READY 5/5",
        "deployments.apps \"web\" not found",
        "demo complete",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");
    }
    assert_eq!(stdout.matches("converged in").count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_binary_converges_against_the_https_sandbox() {
    let dir = temp_dir("binary");
    let sb = start_sandbox(&dir, &["--no-controller"]);
    let metrics_addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let controller = Command::new(BIN)
        .args([
            "run",
            "--namespace",
            "default",
            "--log-format",
            "json",
            "--metrics-addr",
            &metrics_addr.to_string(),
            "--kubeconfig",
        ])
        .arg(&sb.kubeconfig)
        .stderr(std::fs::File::create(dir.join("controller.log")).unwrap())
        .spawn()
        .unwrap();
    // Killed if an assertion fails first, so no process outlives the test.
    let mut controller = KillOnDrop(controller);
    let client = kube_manager::client::client(counter_controller::AGENT, Some(&sb.kubeconfig)).await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deploys: Api<Deployment> = Api::default_namespaced(client);
    let cm: ConfigMap = serde_json::from_value(
        json!({ "metadata": { "name": "web", "annotations": { "counter.example.com/desired": "2" } } }),
    )
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if deploys.get_opt("web").await.unwrap().and_then(|d| d.spec.replicas) == Some(2) {
            break;
        }
        assert!(Instant::now() < deadline, "the controller process never created the Deployment");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The operations endpoint: ready, and the queue's metrics under client-go's names.
    let (code, _) = http_get(metrics_addr, "/readyz");
    assert_eq!(code, 200);
    let (code, body) = http_get(metrics_addr, "/metrics");
    assert_eq!(code, 200);
    assert!(body.contains("workqueue_adds_total{name=\"counter-controller\"}"), "{body}");
    assert!(body.contains("workqueue_work_duration_seconds_bucket"), "{body}");

    // SIGTERM: finish in-flight work and exit 0.
    let _ = Command::new("sh").args(["-c", &format!("kill -TERM {}", controller.0.id())]).status();
    let status = controller.0.wait().unwrap();
    assert!(status.success(), "exit on SIGTERM: {status}");
    let log = std::fs::read_to_string(dir.join("controller.log")).unwrap();
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).expect("JSON logs");
    assert!(first.get("fields").is_some(), "{first}");
    assert!(log.contains("counter-controller started: watching ConfigMaps in namespace=default for annotation counter.example.com/desired"));
}

#[test]
fn the_python_kubernetes_client_works_against_the_sandbox() {
    let python = std::env::var("COUNTER_CONTROLLER_PYTHON").ok().map(PathBuf::from).or_else(|| {
        let ok = Command::new("python3")
            .args(["-c", "import kubernetes"])
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| PathBuf::from("python3"))
    });
    let Some(python) = python else {
        assert!(
            std::env::var("COUNTER_CONTROLLER_REQUIRE_KUBECTL").is_err(),
            "the Python kubernetes client is required in CI: set COUNTER_CONTROLLER_PYTHON"
        );
        eprintln!("skipping: no Python with the kubernetes package (set COUNTER_CONTROLLER_PYTHON)");
        return;
    };
    let dir = temp_dir("python");
    let sb = start_sandbox(&dir, &["--no-controller"]);
    let out = Command::new(&python)
        .arg(workspace_root().join("tests/python/check_sandbox.py"))
        .arg(&sb.kubeconfig)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("python client: 7 checks passed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_http_gets_a_status_and_the_server_keeps_serving() {
    use http::{Request, header};
    let sb = kube_sandbox::Sandbox::new();
    let server = sb.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await.unwrap();
    let dir = temp_dir("http");
    let kc = dir.join("kubeconfig");
    kube_sandbox::write_kubeconfig(&kc, &server).unwrap();
    let client = kube_manager::client::client(counter_controller::AGENT, Some(&kc)).await.unwrap();

    let send = |method: &str, path: &str, ct: &str, body: Vec<u8>| {
        let req =
            Request::builder().method(method).uri(path).header(header::CONTENT_TYPE, ct).body(body).unwrap();
        let client = client.clone();
        async move {
            let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
            let code = resp.status().as_u16();
            let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
            (code, serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default())
        }
    };
    let cms = "/api/v1/namespaces/default/configmaps";
    for (method, path, ct, body, code) in [
        ("POST", cms, "application/json", b"garbage{".to_vec(), 400),
        ("PATCH", "/api/v1/namespaces/default/configmaps/web", "text/html", b"{}".to_vec(), 415),
        ("POST", cms, "application/json", vec![b'x'; 4 * 1024 * 1024], 413),
        ("GET", "/no/such/path", "", Vec::new(), 404),
    ] {
        let (got, status) = send(method, path, ct, body).await;
        assert_eq!(got, code, "{method} {path}: {status}");
        assert_eq!(status["kind"], "Status");
    }

    // A wrong token: 401 Status.
    let bad = std::fs::read_to_string(&kc).unwrap().replace(server.token(), "wrong");
    std::fs::write(dir.join("bad"), bad).unwrap();
    let intruder =
        kube_manager::client::client(counter_controller::AGENT, Some(&dir.join("bad"))).await.unwrap();
    let err = Api::<ConfigMap>::default_namespaced(intruder).list(&Default::default()).await.unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 401), "{err:?}");

    // Half-closed and garbage connections end only themselves.
    {
        use std::io::Write;
        let mut raw = std::net::TcpStream::connect(server.local_addr()).unwrap();
        raw.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n").unwrap();
        raw.shutdown(std::net::Shutdown::Write).unwrap();
        let mut junk = std::net::TcpStream::connect(server.local_addr()).unwrap();
        junk.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 0, 1, 2, 3]).unwrap();
    }
    let (code, _) = send("GET", "/version", "", Vec::new()).await;
    assert_eq!(code, 200, "still serving");
    server.shutdown();
}
