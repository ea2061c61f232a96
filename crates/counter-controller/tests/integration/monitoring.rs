//! `deploy/monitoring/` checked against the real thing: every PromQL expression of the Grafana
//! dashboard and of the alerts parses (GreptimeTeam's `promql-parser`), and every metric it reads
//! — with every label value it pins — is in a scrape of the binary, run on the sandbox with the
//! flags that make each family appear (one leader-elected replica, one sharded). The dashboard is
//! held to what Grafana imports; the PrometheusRule to the plain rules file it is made from; the
//! alerts to their unit tests, evaluated by Prometheus' own promtool; the kustomize component to
//! every layout of `deploy/`, built and applied with the real kubectl.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr, VectorSelector};
use promql_parser::util::{ExprVisitor, walk_expr};
use serde_json::Value;

fn monitoring(file: &str) -> PathBuf {
    workspace_root().join("deploy/monitoring").join(file)
}

fn read(file: &str) -> String {
    std::fs::read_to_string(monitoring(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn dashboard() -> Value {
    serde_json::from_str(&read("dashboard.json")).expect("dashboard.json is JSON")
}

fn yaml(text: &str, what: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{what} is not YAML: {e}"))
}

/// The plain rules file, parsed.
fn rules() -> Value {
    yaml(&read("prometheus-rules.yaml"), "prometheus-rules.yaml")
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("no string {key:?} in {v}"))
}

/// Every panel, the rows' nested ones included.
fn panels(d: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        out.push(p);
        out.extend(p["panels"].as_array().into_iter().flatten());
    }
    out
}

/// The dashboard's variables by name.
fn variables(d: &Value) -> BTreeMap<&str, &Value> {
    d["templating"]["list"]
        .as_array()
        .expect("templating.list")
        .iter()
        .map(|v| (text(v, "name"), v))
        .collect()
}

/// What Grafana sends for a variable: the values it takes when every replica is shown.
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$job", "counter-controller-metrics")
        .replace("$namespace", ".*")
        .replace("$pod", ".*")
}

/// Every PromQL expression of the dashboard — its panels' targets and its query variables'
/// selectors (`label_values(<selector>, <label>)`) — named by where it is.
fn dashboard_exprs(d: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in panels(d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push((
                format!("panel {:?} target {}", text(p, "title"), text(t, "refId")),
                text(t, "expr").into(),
            ));
        }
    }
    for (name, v) in variables(d) {
        if v["type"] == "query" {
            let q = text(v, "query");
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|r| r.rsplit_once(','))
                .map(|(selector, _label)| selector)
                .unwrap_or_else(|| panic!("variable {name}: not label_values(selector, label): {q}"));
            out.push((format!("variable {name}"), inner.into()));
        }
    }
    out
}

/// Every rule of the rules file: (group, rule).
fn alert_rules(r: &Value) -> Vec<(&str, &Value)> {
    let groups = r["groups"].as_array().expect("groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules").iter().map(move |r| (text(g, "name"), r)))
        .collect()
}

fn rule_exprs(r: &Value) -> Vec<(String, String)> {
    alert_rules(r)
        .into_iter()
        .map(|(_, rule)| (format!("alert {}", text(rule, "alert")), text(rule, "expr").into()))
        .collect()
}

/// A metric an expression reads, with the label values it pins (`=` matchers).
#[derive(Debug)]
struct Read {
    metric: String,
    pinned: Vec<(String, String)>,
}

struct Reads(Vec<Read>);

impl Reads {
    fn add(&mut self, vs: &VectorSelector) {
        let pinned = vs
            .matchers
            .matchers
            .iter()
            .filter(|m| matches!(m.op, MatchOp::Equal) && m.name != "__name__")
            .map(|m| (m.name.clone(), m.value.clone()))
            .collect();
        let metric = vs.name.clone().unwrap_or_default();
        self.0.push(Read { metric, pinned });
    }
}

impl ExprVisitor for Reads {
    type Error = ();
    fn pre_visit(&mut self, e: &Expr) -> Result<bool, ()> {
        match e {
            Expr::VectorSelector(vs) => self.add(vs),
            // The walk does not descend into a range selector's own vector selector.
            Expr::MatrixSelector(ms) => self.add(&ms.vs),
            _ => {}
        }
        Ok(true)
    }
}

/// Parses `expr` (at `at`) with Grafana's variables substituted; the metrics it reads.
fn reads(at: &str, expr: &str) -> Vec<Read> {
    let ast =
        parser::parse(&substitute(expr)).unwrap_or_else(|e| panic!("{at}: does not parse: {e}\n{expr}"));
    let mut r = Reads(Vec::new());
    walk_expr(&mut r, &ast).unwrap();
    assert!(!r.0.is_empty(), "{at}: reads no metric: {expr}");
    for read in &r.0 {
        assert!(!read.metric.is_empty(), "{at}: a selector without a metric name: {expr}");
    }
    r.0
}

fn all_exprs() -> Vec<(String, String)> {
    let mut all = dashboard_exprs(&dashboard());
    all.extend(rule_exprs(&rules()));
    all
}

#[test]
fn every_expression_of_the_dashboard_and_the_alerts_parses() {
    let all = all_exprs();
    assert!(all.len() > 40, "{} expressions", all.len());
    for (at, expr) in &all {
        reads(at, expr);
    }
}

/// The panel types of Grafana's core plugins that are not Angular (removed in Grafana 12: no
/// `graph`, no `singlestat`).
const PANEL_TYPES: [&str; 12] = [
    "row",
    "timeseries",
    "stat",
    "gauge",
    "bargauge",
    "table",
    "text",
    "heatmap",
    "histogram",
    "piechart",
    "state-timeline",
    "status-history",
];

#[test]
fn the_dashboard_is_what_grafana_imports() {
    let d = dashboard();
    // The classic JSON model's version that Grafana 12 writes; an importer migrates what is older.
    assert_eq!(d["schemaVersion"], 41);
    assert!(d["id"].is_null(), "an exported dashboard has no instance id");
    assert_eq!(d["uid"], "counter-controller");
    assert!(!text(&d, "title").is_empty() && d["time"]["from"].is_string() && d["refresh"].is_string());

    // The data source is a variable, so the JSON imports as is, into any Grafana.
    let vars = variables(&d);
    assert_eq!(vars.len(), d["templating"]["list"].as_array().unwrap().len(), "variable names are unique");
    let ds = vars.get("datasource").expect("a datasource variable");
    assert_eq!((&ds["type"], &ds["query"]), (&Value::from("datasource"), &Value::from("prometheus")));
    for (name, v) in &vars {
        let kind = text(v, "type");
        assert!(["datasource", "query", "custom", "interval", "constant"].contains(&kind), "{name}: {kind}");
        if kind == "query" {
            assert_eq!(v["datasource"]["uid"], "${datasource}", "variable {name}");
            assert!(v["refresh"].as_u64().is_some_and(|r| r >= 1), "variable {name} is never refreshed");
            if v["includeAll"] == true {
                // All must also match series without the label (a Prometheus without the operator).
                assert_eq!(v["allValue"], ".*", "variable {name}");
            }
        }
    }
    // Every variable an expression or a query uses is defined (or one of Grafana's own).
    let defined: BTreeSet<&str> = vars.keys().copied().collect();
    let builtin = ["__rate_interval", "__interval", "__range"];
    let exprs = dashboard_exprs(&d);
    for (at, expr) in &exprs {
        for name in expr.split('$').skip(1).map(|r| {
            let r = r.trim_start_matches('{');
            &r[..r.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(r.len())]
        }) {
            assert!(defined.contains(name) || builtin.contains(&name), "{at}: undefined variable ${name}");
        }
    }

    let all = panels(&d);
    let mut ids = BTreeSet::new();
    let mut boxes: Vec<(&str, [u64; 4])> = Vec::new();
    for p in &all {
        let title = text(p, "title");
        let id = p["id"].as_u64().unwrap_or_else(|| panic!("panel {title:?} has no id"));
        assert!(ids.insert(id), "panel id {id} twice");
        let kind = text(p, "type");
        assert!(PANEL_TYPES.contains(&kind), "panel {title:?}: type {kind:?} is not a current core panel");
        let g = &p["gridPos"];
        let [h, w, x, y] = ["h", "w", "x", "y"]
            .map(|k| g[k].as_u64().unwrap_or_else(|| panic!("panel {title:?}: gridPos.{k}")));
        assert!(h > 0 && w > 0 && x + w <= 24, "panel {title:?}: gridPos {g} is off Grafana's 24 columns");
        for (other, [oh, ow, ox, oy]) in &boxes {
            let apart = x + w <= *ox || *ox + ow <= x || y + h <= *oy || *oy + oh <= y;
            assert!(apart, "panels {title:?} and {other:?} overlap");
        }
        boxes.push((title, [h, w, x, y]));
        if kind == "row" {
            continue;
        }
        assert!(!text(p, "description").is_empty(), "panel {title:?} says what it shows");
        assert_eq!(p["datasource"]["uid"], "${datasource}", "panel {title:?}");
        let targets = p["targets"].as_array().filter(|t| !t.is_empty());
        let targets = targets.unwrap_or_else(|| panic!("panel {title:?} has no query"));
        let mut refs = BTreeSet::new();
        for t in targets {
            assert!(!text(t, "expr").trim().is_empty(), "panel {title:?}: an empty expr");
            assert!(refs.insert(text(t, "refId")), "panel {title:?}: refId twice");
            assert_eq!(t["datasource"], p["datasource"], "panel {title:?}");
        }
    }
    let types: BTreeSet<&str> = all.iter().map(|p| text(p, "type")).collect();
    assert!(types.contains("timeseries") && types.contains("stat"), "{types:?}");

    // The issue's panels, each reading its family.
    let read: BTreeSet<String> = exprs.iter().flat_map(|(at, e)| reads(at, e)).map(|r| r.metric).collect();
    for family in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "controller_runtime_reconcile_errors_total",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_work_duration_seconds_bucket",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "leader_election_master_status",
        "counter_controller_shard_keys",
        "counter_controller_shard_members",
        "rest_client_requests_total",
        "counter_controller_events_total",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
    ] {
        assert!(read.contains(family), "no panel reads {family}");
    }
}

/// The alerts the issue asks for.
const ALERTS: [&str; 7] = [
    "CounterControllerNoLeader",
    "CounterControllerReconcileErrors",
    "CounterControllerQueueDepthGrowing",
    "CounterControllerLongRunningReconcile",
    "CounterControllerAPIErrors",
    "CounterControllerShardRingEmpty",
    "CounterControllerEventsDropped",
];

/// The PrometheusRule as it is made from the rules file: its own header, then the file's groups
/// under `spec:`.
fn prometheus_rule_from_rules_file() -> String {
    let (current, plain) = (read("prometheusrule.yaml"), read("prometheus-rules.yaml"));
    let header = &current[..current.find("\nspec:\n").expect("prometheusrule.yaml has a spec") + 7];
    let groups = &plain[plain.find("groups:\n").expect("the rules file has groups")..];
    let indented: String =
        groups.lines().map(|l| if l.is_empty() { "\n".to_owned() } else { format!("  {l}\n") }).collect();
    format!("{header}{indented}")
}

#[test]
fn the_prometheus_rule_carries_the_rules_file_and_every_alert_is_complete() {
    // The plain file is the source: COUNTER_CONTROLLER_BLESS=1 writes the PrometheusRule from it.
    let made = prometheus_rule_from_rules_file();
    if std::env::var_os("COUNTER_CONTROLLER_BLESS").is_some() {
        std::fs::write(monitoring("prometheusrule.yaml"), &made).unwrap();
    }
    assert!(
        read("prometheusrule.yaml") == made,
        "deploy/monitoring/prometheusrule.yaml is not prometheus-rules.yaml's groups under its spec; \
         edit the rules file, then run this test with COUNTER_CONTROLLER_BLESS=1"
    );
    let cr = yaml(&made, "prometheusrule.yaml");
    assert_eq!((text(&cr, "apiVersion"), text(&cr, "kind")), ("monitoring.coreos.com/v1", "PrometheusRule"));
    assert_eq!(cr["metadata"]["namespace"], "counter-controller");
    let plain = rules();
    assert_eq!(cr["spec"]["groups"], plain["groups"], "the same groups, parsed");

    let mut names = BTreeSet::new();
    for (group, rule) in alert_rules(&plain) {
        let name = text(rule, "alert");
        assert!(names.insert(name), "alert {name} twice");
        assert!(group.starts_with("counter-controller"), "group {group}");
        reads(name, text(rule, "expr"));
        let wait = text(rule, "for");
        let wait =
            promql_parser::util::parse_duration(wait).unwrap_or_else(|e| panic!("{name}: for {wait}: {e}"));
        assert!(wait >= Duration::from_secs(60), "{name}: for {wait:?}, a blip would page");
        let severity = text(&rule["labels"], "severity");
        assert!(["critical", "warning", "info"].contains(&severity), "{name}: severity {severity}");
        for key in ["summary", "description"] {
            let a = text(&rule["annotations"], key);
            assert!(a.len() > 20, "{name}: {key} says little: {a:?}");
            assert_eq!(
                a.matches("{{").count(),
                a.matches("}}").count(),
                "{name}: {key}: unbalanced template"
            );
        }
    }
    assert_eq!(names, ALERTS.into_iter().collect(), "the alerts");
    let no_leader = alert_rules(&plain).into_iter().find(|(_, r)| r["alert"] == ALERTS[0]).unwrap().1;
    assert_eq!(no_leader["for"], "1m");
}

/// The YAML block of deploy/monitoring/README.md that contains `marker`.
fn readme_yaml(marker: &str) -> String {
    let readme = read("README.md");
    let block = readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split_once("```").map(|(y, _)| y))
        .find(|y| y.contains(marker));
    block.unwrap_or_else(|| panic!("README.md has no yaml block with {marker:?}")).to_owned()
}

/// promtool, or `None` after printing why the test is skipped (a failure when it is required).
fn promtool() -> Option<PathBuf> {
    let given = std::env::var_os("COUNTER_CONTROLLER_PROMTOOL").map(PathBuf::from);
    let found = given.filter(|p| p.is_file()).or_else(|| on_path("promtool"));
    if found.is_none() {
        assert!(
            std::env::var("COUNTER_CONTROLLER_REQUIRE_PROMTOOL").is_err(),
            "promtool is required (COUNTER_CONTROLLER_REQUIRE_PROMTOOL is set) but neither \
             COUNTER_CONTROLLER_PROMTOOL nor PATH has it"
        );
        eprintln!("skipping: promtool is not on PATH (nor in COUNTER_CONTROLLER_PROMTOOL)");
    }
    found
}

#[test]
fn prometheus_evaluates_every_alert_as_its_unit_test_says() {
    // Every alert has a case where it fires, with its labels and rendered annotations.
    let tests = yaml(&read("prometheus-rules.test.yaml"), "prometheus-rules.test.yaml");
    assert_eq!(tests["rule_files"][0], "prometheus-rules.yaml");
    let tested: BTreeSet<&str> = tests["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().expect("alert_rule_test"))
        .filter(|c| c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty()))
        .map(|c| text(c, "alertname"))
        .collect();
    assert_eq!(tested, ALERTS.into_iter().collect(), "the alerts with a firing case");
    let Some(promtool) = promtool() else { return };
    for args in [["check", "rules", "prometheus-rules.yaml"], ["test", "rules", "prometheus-rules.test.yaml"]]
    {
        let out = Command::new(&promtool).args(args).current_dir(monitoring("")).output().unwrap();
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A scrape, sample by sample: (name, labels).
fn samples(scrape: &str) -> Vec<(String, BTreeMap<String, String>)> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let end = l.find(['{', ' ']).unwrap_or(l.len());
            let mut labels = BTreeMap::new();
            if l[end..].starts_with('{') {
                let mut rest = &l[end + 1..];
                while let Some(eq) = rest.find("=\"") {
                    let key = rest[..eq].trim_start_matches(',').to_owned();
                    let (mut value, mut chars) = (String::new(), rest[eq + 2..].char_indices());
                    let mut close = 0;
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => value.extend(chars.next().map(|(_, c)| c)),
                            '"' => {
                                close = eq + 2 + i + 1;
                                break;
                            }
                            c => value.push(c),
                        }
                    }
                    labels.insert(key, value);
                    rest = &rest[close..];
                    if rest.starts_with('}') {
                        break;
                    }
                }
            }
            (l[..end].to_owned(), labels)
        })
        .collect()
}

/// Labels a Prometheus adds to a target's series; the binary exports none of them.
const TARGET_LABELS: [&str; 7] = ["job", "instance", "namespace", "pod", "service", "endpoint", "container"];

fn start(dir: &Path, kubeconfig: &Path, hostname: &str, flags: &[&str]) -> Replica {
    let mut args = vec!["run".to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    // Short leases: the sharded replica's ring settles in about a second.
    args.extend(
        [
            "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=300ms",
        ]
        .map(String::from),
    );
    Replica::start(dir, kubeconfig, hostname, &args)
}

async fn config_map(client: &kube::Client, namespace: &str, name: &str, desired: &str) {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some([("counter.example.com/desired".to_owned(), desired.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

/// Waits for progress; the limit only keeps a broken run from hanging (a healthy one takes seconds).
fn wait_for(what: &str, f: impl FnMut() -> bool) {
    eventually_within(what, Duration::from_secs(300), f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_and_the_alerts_read_is_in_a_scrape_of_the_binary() {
    let dir = temp_dir("monitoring");
    let sb = serve_sandbox(&dir).await;
    let client = sb.sandbox.client();
    let ns = Namespace {
        metadata: ObjectMeta { name: Some("sharded".into()), ..ObjectMeta::default() },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    // Leader election's families from one, sharding's from the other: no layout has both.
    let elected = start(&dir, &sb.kubeconfig, "mon-elected", &["--namespace=default", "--leader-elect"]);
    let sharded = start(&dir, &sb.kubeconfig, "mon-sharded", &["--namespace=sharded", "--sharding"]);
    // A create and its Event, and a value that fails (an error, a retry, a Warning Event).
    for namespace in ["default", "sharded"] {
        config_map(&client, namespace, "web", "2").await;
        config_map(&client, namespace, "broken", "abc").await;
    }
    let ctl = "controller=\"counter-controller\"";
    for (replica, extra) in
        [(&elected, "leader_election_master_status"), (&sharded, "counter_controller_shard_keys")]
    {
        wait_for(&format!("{}: a create, a failure and a retry, {extra}", replica.hostname), || {
            let m = replica.metrics();
            sample(&m, "controller_runtime_reconcile_total", &[ctl, "result=\"success\""])
                .is_some_and(|v| v >= 1.0)
                && sample(&m, "controller_runtime_reconcile_errors_total", &[ctl]).is_some_and(|v| v >= 1.0)
                && sample(&m, "workqueue_retries_total", &[]).is_some_and(|v| v >= 1.0)
                && sample(&m, "counter_controller_events_total", &["result=\"published\""])
                    .is_some_and(|v| v >= 1.0)
                && sample(&m, extra, &[]).is_some()
        });
    }
    wait_for("mon-elected leads", || {
        sample(&elected.metrics(), "leader_election_master_status", &[]) == Some(1.0)
    });
    wait_for("mon-sharded is a member", || {
        sample(&sharded.metrics(), "counter_controller_shard_members", &[]).is_some_and(|v| v >= 1.0)
    });

    let scraped: Vec<_> = [&elected, &sharded].iter().flat_map(|r| samples(&r.metrics())).collect();
    let names: BTreeSet<&str> = scraped.iter().map(|(n, _)| n.as_str()).collect();
    let mut missing = Vec::new();
    let mut checked = BTreeSet::new();
    for (at, expr) in all_exprs() {
        for read in reads(&at, &expr) {
            checked.insert(read.metric.clone());
            if !names.contains(read.metric.as_str()) {
                missing.push(format!("{at}: {} is not in the scrape", read.metric));
                continue;
            }
            // The label values an expression pins must be ones the binary exports.
            let pinned: Vec<_> =
                read.pinned.iter().filter(|(k, _)| !TARGET_LABELS.contains(&k.as_str())).collect();
            let found = scraped
                .iter()
                .any(|(n, labels)| *n == read.metric && pinned.iter().all(|(k, v)| labels.get(k) == Some(v)));
            if !found {
                missing.push(format!("{at}: no {} series has {pinned:?}", read.metric));
            }
        }
    }
    assert!(missing.is_empty(), "{}\nscraped: {names:?}", missing.join("\n"));
    eprintln!("{} metrics read by the dashboard and the alerts, all scraped: {checked:?}", checked.len());
}

/// A directory for an overlay inside the work tree (kustomize takes no absolute path to a base),
/// `UP` below its root; the same one at each run, so runs leave no more than one behind.
fn overlay_dir(test: &str, name: &str) -> PathBuf {
    let dir = workspace_root().join("target/monitoring-overlays").join(test).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const UP: &str = "../../../../";

/// One overlay per layout of `deploy/` with the component added, as README.md shows it.
fn overlays(test: &str) -> Vec<(&'static str, PathBuf)> {
    ["deploy", "deploy/sharded", "deploy/all-namespaces"]
        .into_iter()
        .map(|layout| {
            let dir = overlay_dir(test, &layout.replace('/', "-"));
            let kustomization = format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
                 resources:\n  - {UP}{layout}\ncomponents:\n  - {UP}deploy/monitoring\n"
            );
            std::fs::write(dir.join("kustomization.yaml"), kustomization).unwrap();
            (layout, dir)
        })
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[test]
fn the_component_adds_a_service_monitor_that_scrapes_the_metrics_port_to_every_layout() {
    let Some(kubectl) = kubectl() else { return };
    let component = yaml(&read("kustomization.yaml"), "deploy/monitoring/kustomization.yaml");
    assert_eq!(
        (text(&component, "apiVersion"), text(&component, "kind")),
        ("kustomize.config.k8s.io/v1alpha1", "Component")
    );
    for (layout, dir) in overlays("build") {
        let (ok, out, err) =
            kubectl_run(&kubectl, Path::new("/dev/null"), &["kustomize", dir.to_str().unwrap()]);
        assert!(ok, "{layout}: {err}");
        let docs: Vec<Value> = out.split("\n---\n").map(|d| yaml(d, layout)).collect();
        let monitor = find(&docs, "ServiceMonitor", "counter-controller");
        assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
        let ns = text(&monitor["metadata"], "namespace");
        // The Service it selects, in its namespace, with the port it names, which is the pods'.
        let selector = monitor["spec"]["selector"]["matchLabels"].as_object().expect("matchLabels");
        let services: Vec<&Value> = docs
            .iter()
            .filter(|d| d["kind"] == "Service" && d["metadata"]["namespace"] == ns)
            .filter(|d| selector.iter().all(|(k, v)| d["metadata"]["labels"][k] == *v))
            .collect();
        assert_eq!(services.len(), 1, "{layout}: the ServiceMonitor selects {} Services", services.len());
        let ports = services[0]["spec"]["ports"].as_array().unwrap();
        let deployment = find(&docs, "Deployment", "counter-controller");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        for endpoint in monitor["spec"]["endpoints"].as_array().unwrap() {
            let port = ports.iter().find(|p| p["name"] == endpoint["port"]);
            let port =
                port.unwrap_or_else(|| panic!("{layout}: the Service has no port {}", endpoint["port"]));
            assert!(
                container["ports"].as_array().unwrap().iter().any(|p| p["name"] == port["targetPort"]),
                "{layout}: the pods have no port {}",
                port["targetPort"]
            );
            assert_eq!(endpoint["path"], "/metrics");
            let addr = container["args"]
                .as_array()
                .unwrap()
                .iter()
                .find_map(|a| a.as_str()?.strip_prefix("--metrics-addr="));
            assert_eq!(addr, Some(":8080"), "{layout}: the replicas serve their metrics on every address");
        }
        let rule = find(&docs, "PrometheusRule", "counter-controller");
        assert_eq!(rule["metadata"]["namespace"], ns);
        assert_eq!(rule["spec"]["groups"], rules()["groups"], "{layout}");
        let board = find(&docs, "ConfigMap", "counter-controller-dashboard");
        assert_eq!(board["metadata"]["labels"]["grafana_dashboard"], "1");
        let json: Value = serde_json::from_str(text(&board["data"], "counter-controller.json")).unwrap();
        assert_eq!(json, dashboard(), "{layout}: the ConfigMap holds the dashboard");
    }
}

#[test]
fn the_readme_overlay_builds_and_labels_only_the_monitoring_kinds() {
    let Some(kubectl) = kubectl() else { return };
    let dir = overlay_dir("readme", "monitored");
    // README's overlay sits at the repository's root, this one further down.
    let overlay = readme_yaml("kind: Kustomization").replace("../deploy", &format!("{UP}deploy"));
    std::fs::write(dir.join("kustomization.yaml"), overlay).unwrap();
    let (ok, out, err) = kubectl_run(&kubectl, Path::new("/dev/null"), &["kustomize", dir.to_str().unwrap()]);
    assert!(ok, "README's overlay: {err}");
    let docs: Vec<Value> = out.split("\n---\n").map(|d| yaml(d, "README's overlay")).collect();
    for (kind, name) in [("ServiceMonitor", "counter-controller"), ("PrometheusRule", "counter-controller")] {
        assert_eq!(
            find(&docs, kind, name)["metadata"]["labels"]["release"],
            "kube-prometheus-stack",
            "{kind}"
        );
    }
    for (kind, name) in [("Deployment", "counter-controller"), ("Service", "counter-controller-metrics")] {
        assert!(
            find(&docs, kind, name)["metadata"]["labels"]["release"].is_null(),
            "{kind} is not relabelled"
        );
    }
}

/// The prometheus-operator's two kinds, schemaless: enough for the sandbox to store them.
fn operator_crds() -> String {
    [("ServiceMonitor", "servicemonitor"), ("PrometheusRule", "prometheusrule")]
        .map(|(kind, singular)| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {singular}s.monitoring.coreos.com}}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {{kind: {kind}, listKind: {kind}List, plural: {singular}s, singular: {singular}}}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"
            )
        })
        .join("---\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_k_with_the_component_creates_the_monitor_the_rules_and_the_dashboard() {
    let Some(kubectl) = kubectl() else { return };
    let dir = temp_dir("monitoring-apply");
    let sb = serve_sandbox(&dir).await;
    let kc = sb.kubeconfig.clone();
    let crds = dir.join("operator-crds.yaml");
    std::fs::write(&crds, operator_crds()).unwrap();
    kubectl_ok(&kubectl, &kc, &["apply", "-f", crds.to_str().unwrap()]);
    kubectl_ok(&kubectl, &kc, &["wait", "--for=condition=Established", "crd", "--all"]);
    let (_, overlay) = overlays("apply").into_iter().next().unwrap();
    let out = kubectl_ok(&kubectl, &kc, &["apply", "-k", overlay.to_str().unwrap()]);
    for line in [
        "deployment.apps/counter-controller created",
        "service/counter-controller-metrics created",
        "configmap/counter-controller-dashboard created",
        "servicemonitor.monitoring.coreos.com/counter-controller created",
        "prometheusrule.monitoring.coreos.com/counter-controller created",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    let listed = kubectl_ok(
        &kubectl,
        &kc,
        &["get", "servicemonitor,prometheusrule,cm", "-n", "counter-controller", "-o", "name"],
    );
    for name in [
        "servicemonitor.monitoring.coreos.com/counter-controller",
        "prometheusrule.monitoring.coreos.com/counter-controller",
        "configmap/counter-controller-dashboard",
    ] {
        assert!(listed.lines().any(|l| l == name), "{name} not in\n{listed}");
    }
    let out = kubectl_ok(&kubectl, &kc, &["delete", "-k", overlay.to_str().unwrap()]);
    assert!(out.contains("servicemonitor.monitoring.coreos.com \"counter-controller\" deleted"), "{out}");
}
