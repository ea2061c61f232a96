//! CustomResourceDefinitions end to end with the installed kubectl: the example Widget CRD
//! (`examples/crd`) applied, waited for, its custom resources listed with the CRD's printer
//! columns, found by short name and category, explained from the CRD's schema, patched, scaled,
//! refused by the schema, and gone with their CRD.
//!
//! Each test serves its own sandbox over HTTPS in this process. Without kubectl on PATH a test
//! prints why and passes; `COUNTER_CONTROLLER_REQUIRE_KUBECTL=1` makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kube_sandbox::HttpServer;
use kube_sandbox::Sandbox;

const CRD: &str = "examples/crd/widget-crd.yaml";
const WIDGETS: &str = "examples/crd/widgets.yaml";

/// A sandbox served over HTTPS by its own runtime, and kubectl pointed at it.
pub(crate) struct Kubectl {
    kubectl: PathBuf,
    dir: PathBuf,
    kubeconfig: PathBuf,
    server: HttpServer,
    /// Variables set for every kubectl run (`KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`).
    env: Vec<(&'static str, &'static str)>,
    _sandbox: Sandbox,
    _runtime: tokio::runtime::Runtime,
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        self.server.shutdown();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Kubectl {
    /// `None` (after saying why) when kubectl is not on PATH and not required.
    pub(crate) fn start(test: &str) -> Option<Self> {
        Self::start_with(test, kube_sandbox::SandboxConfig::bare())
    }

    /// As [`start`](Self::start), with the sandbox's settings (a simulated cluster, say).
    pub(crate) fn start_with(test: &str, config: kube_sandbox::SandboxConfig) -> Option<Self> {
        let on_path = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("kubectl")).find(|f| f.is_file()));
        let Some(kubectl) = on_path else {
            assert!(
                std::env::var("COUNTER_CONTROLLER_REQUIRE_KUBECTL").as_deref() != Ok("1"),
                "kubectl is required (COUNTER_CONTROLLER_REQUIRE_KUBECTL=1) but is not on PATH"
            );
            eprintln!("skipping {test}: kubectl is not on PATH");
            return None;
        };
        let dir = std::env::temp_dir().join(format!("sandbox-kubectl-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        // The sandbox spawns its background tasks (and the server its connections) on `runtime`.
        let (sandbox, server) = runtime.block_on(async {
            let sandbox = Sandbox::with_config(config);
            let server = sandbox.serve("127.0.0.1:0".parse().unwrap(), kube_sandbox::new_token()).await;
            (sandbox, server.expect("the sandbox serves"))
        });
        let kubeconfig = dir.join("kubeconfig");
        kube_sandbox::write_kubeconfig(&kubeconfig, &server).unwrap();
        Some(Self { kubectl, dir, kubeconfig, server, env: Vec::new(), _sandbox: sandbox, _runtime: runtime })
    }

    /// The HTTPS server kubectl talks to.
    pub(crate) fn server(&self) -> &HttpServer {
        &self.server
    }

    /// A file in the test's own directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The same kubectl with `name=value` in its environment.
    pub(crate) fn with_env(mut self, name: &'static str, value: &'static str) -> Self {
        self.env.push((name, value));
        self
    }

    /// Runs kubectl from the workspace root: (success, stdout, stderr).
    pub(crate) fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(&self.kubectl)
            .args(args)
            .envs(self.env.iter().copied())
            .env("KUBECONFIG", &self.kubeconfig)
            // Its discovery cache stays in the test's directory, not in $HOME.
            .env("KUBECACHEDIR", self.dir.join("cache"))
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .output()
            .expect("kubectl runs");
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (out.status.success(), text(out.stdout), text(out.stderr))
    }

    /// kubectl started with its stdout piped, for a command that streams (`logs -f`).
    pub(crate) fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.piped(args, std::process::Stdio::inherit())
    }

    /// kubectl started with its stdin and stdout piped (`exec -i`).
    pub(crate) fn spawn_with_stdin(&self, args: &[&str]) -> std::process::Child {
        self.piped(args, std::process::Stdio::piped())
    }

    /// kubectl on a terminal, which util-linux's `script` gives it, with the terminal's input
    /// and output piped: what is written is typed at it, and what it shows (the echo of what
    /// was typed included) is read back. Its exit status is kubectl's.
    pub(crate) fn on_terminal(&self, args: &[&str]) -> std::process::Child {
        let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
        let line: Vec<String> = std::iter::once(quote(&self.kubectl.to_string_lossy()))
            .chain(args.iter().map(|a| quote(a)))
            .collect();
        Command::new("script")
            .args(["-q", "-e", "-f", "-c", &line.join(" "), "/dev/null"])
            .envs(self.env.iter().copied())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.join("cache"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("script (util-linux) runs kubectl on a terminal")
    }

    fn piped(&self, args: &[&str], stdin: std::process::Stdio) -> std::process::Child {
        Command::new(&self.kubectl)
            .args(args)
            .envs(self.env.iter().copied())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.join("cache"))
            .stdin(stdin)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl runs")
    }

    /// The sandbox kubectl talks to, for what a test does beside the API (a scripted log line).
    pub(crate) fn sandbox(&self) -> &Sandbox {
        &self._sandbox
    }

    /// kubectl's stdout; it must succeed.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {} failed:\n{out}{err}", args.join(" "));
        out
    }

    /// kubectl's stderr; it must fail.
    pub(crate) fn fails(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(!ok, "kubectl {} succeeded:\n{out}", args.join(" "));
        err
    }

    /// Applies the Widget CRD and waits until it is established.
    fn install_crd(&self) {
        let applied = self.ok(&["apply", "-f", CRD]);
        assert_eq!(
            applied.trim(),
            "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
        );
        let waited =
            self.ok(&["wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=60s"]);
        assert_eq!(
            waited.trim(),
            "customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met"
        );
    }

    /// The CRD and the two example Widgets.
    fn install_widgets(&self) {
        self.install_crd();
        let applied = self.ok(&["apply", "-f", WIDGETS]);
        assert_eq!(
            applied.lines().collect::<Vec<_>>(),
            ["widget.example.com/small created", "widget.example.com/big created"]
        );
    }

    pub(crate) fn jsonpath(&self, args: &[&str], path: &str) -> String {
        self.ok(&[args, &["-o", &format!("jsonpath={path}")]].concat())
    }
}

/// Polls `f` every 100 ms until it holds, failing after a minute.
pub(crate) fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let limit = Duration::from_secs(60);
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A table's lines split into their columns.
pub(crate) fn cells(table: &str) -> Vec<Vec<&str>> {
    table.lines().map(|l| l.split_whitespace().collect()).collect()
}

/// Whether `age` looks like an age kubectl printed (`3s`, `2m5s`, …).
pub(crate) fn is_age(age: &str) -> bool {
    age.chars().next().is_some_and(|c| c.is_ascii_digit()) && age.ends_with(['s', 'm', 'h', 'd', 'y'])
}

#[test]
fn widgets_are_listed_with_the_crds_columns_found_by_short_name_and_category_and_explained() {
    let Some(k) = Kubectl::start("get") else { return };
    k.install_widgets();

    let table = k.ok(&["get", "widgets"]);
    let rows = cells(&table);
    assert_eq!(rows[0], ["NAME", "SIZE", "COLOR", "AGE"], "{table}");
    assert_eq!(rows.len(), 3, "{table}");
    assert_eq!(rows[1][..3], ["big", "5", "red"], "{table}");
    // The schema's default fills in the color `small` left out.
    assert_eq!(rows[2][..3], ["small", "1", "blue"], "{table}");
    assert!(rows[1..].iter().all(|r| r.len() == 4 && is_age(r[3])), "{table}");

    assert_eq!(k.jsonpath(&["get", "wd", "big"], "{.spec.color}"), "red");
    assert_eq!(k.jsonpath(&["get", "widget", "small"], "{.spec.color}"), "blue");

    // The CRD puts Widgets in the `all` category.
    let all = k.ok(&["get", "all"]);
    let names: Vec<&str> = cells(&all).iter().filter_map(|r| r.first().copied()).collect();
    assert!(names.contains(&"widget.example.com/big"), "{all}");
    assert!(names.contains(&"widget.example.com/small"), "{all}");

    let explained = k.ok(&["explain", "widget.spec.size"]);
    let header: Vec<Vec<&str>> = cells(&explained).into_iter().take(3).collect();
    assert_eq!(header, [["GROUP:", "example.com"], ["KIND:", "Widget"], ["VERSION:", "v1"]], "{explained}");
    assert!(explained.contains("FIELD: size <integer>"), "{explained}");
    assert!(explained.contains("How big the widget is, from 0 to 10."), "{explained}");
}

#[test]
fn widgets_are_patched_merge_and_json_but_not_strategic_and_scaled() {
    let Some(k) = Kubectl::start("patch") else { return };
    k.install_widgets();
    let size = || k.jsonpath(&["get", "widget", "small"], "{.spec.size}");

    let merged = k.ok(&["patch", "widget", "small", "--type", "merge", "-p", r#"{"spec":{"size":3}}"#]);
    assert_eq!(merged.trim(), "widget.example.com/small patched");
    assert_eq!(size(), "3");

    let json = r#"[{"op":"replace","path":"/spec/size","value":4}]"#;
    let patched = k.ok(&["patch", "widget", "small", "--type", "json", "-p", json]);
    assert_eq!(patched.trim(), "widget.example.com/small patched");
    assert_eq!(size(), "4");

    // A custom resource has no patch strategies: 415 Unsupported Media Type, as upstream.
    let err = k.fails(&["patch", "widget", "small", "--type", "strategic", "-p", r#"{"spec":{"size":6}}"#]);
    // (kubectl words it so only for a 415.)
    assert!(
        err.contains("application/strategic-merge-patch+json is not supported by example.com/v1"),
        "{err}"
    );
    assert_eq!(size(), "4");

    // Through the scale subresource, whose replicas are spec.size.
    let scaled = k.ok(&["scale", "widget", "small", "--replicas=2"]);
    assert_eq!(scaled.trim(), "widget.example.com/small scaled");
    eventually("widget small has size 2", || size() == "2");
    let scale = k.ok(&["get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/small/scale"]);
    let scale: serde_json::Value = serde_json::from_str(&scale).expect("a Scale");
    assert_eq!((&scale["kind"], &scale["spec"]["replicas"]), (&"Scale".into(), &2.into()), "{scale}");
}

#[test]
fn the_schema_refuses_a_widget_too_big() {
    let Some(k) = Kubectl::start("schema") else { return };
    k.install_crd();
    let manifest = k.dir.join("huge.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: huge\nspec:\n  size: 11\n",
    )
    .unwrap();
    let err = k.fails(&["apply", "-f", manifest.to_str().unwrap()]);
    assert!(
        err.contains("spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"),
        "{err}"
    );
    let (found, _, missing) = k.run(&["get", "widget", "huge"]);
    assert!(!found && missing.contains("not found"), "{missing}");
}

#[test]
fn deleting_the_crd_takes_the_resource_type_away() {
    let Some(k) = Kubectl::start("delete") else { return };
    k.install_widgets();
    let deleted = k.ok(&["delete", "crd", "widgets.example.com"]);
    assert_eq!(
        deleted.trim(),
        "customresourcedefinition.apiextensions.k8s.io \"widgets.example.com\" deleted"
    );
    // kubectl waited for the deletion (the CRD's finalizer removes its Widgets first).
    let err = k.fails(&["get", "crd", "widgets.example.com"]);
    assert!(err.contains("NotFound") && err.contains("not found"), "{err}");
    // kubectl's discovery cache still has Widgets, so it asks for them at their old path: 404
    // (or, were the cache refreshed, it knows the type is gone).
    let err = k.fails(&["get", "widgets"]);
    assert!(
        err.contains("Error from server (NotFound)") || err.contains("doesn't have a resource type"),
        "{err}"
    );
    // Fresh discovery (`api-resources` refreshes the cache) no longer lists the group…
    eventually("discovery no longer lists widgets", || {
        !k.ok(&["api-resources", "--api-group=example.com", "-o", "name"]).contains("widgets")
    });
    // …and kubectl knows the type is gone.
    let err = k.fails(&["get", "widgets"]);
    assert!(err.contains(r#"the server doesn't have a resource type "widgets""#), "{err}");

    // The Widgets went with their CRD: one made again has none.
    k.install_crd();
    let (ok, out, err) = k.run(&["get", "widgets"]);
    assert!(ok && out.is_empty() && err.contains("No resources found"), "{out}{err}");
}
