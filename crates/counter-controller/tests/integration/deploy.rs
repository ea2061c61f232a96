//! `deploy/` for real: `kubectl apply -k deploy/` against the sandbox, then this test plays the
//! kubelet — it starts the Deployment's replicas as processes of the binary, with the manifest's
//! own arguments — and checks what a cluster operator would: one replica leads, the probes pass,
//! the metrics are there, the work gets done, and the Roles grant exactly the (resource, verb)
//! pairs the replicas used: no missing right, no unused one. The sandbox enforces RBAC, as a
//! cluster does, and the replicas authenticate as the manifest's ServiceAccount (a token from
//! `kubectl create token`, as a pod's projected token is), so a right the Roles lack fails the
//! work itself; a test shows it with one verb taken away. One right is used only where the API
//! server does not stream lists: `list` on ConfigMaps, the paginated fallback. The leader-elected
//! test runs on a server that streams them (and allows that one right unused), the sharded test
//! on one that rejects streaming lists, so the fallback, and that right, are used for real.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use kube::api::{Api, ListParams};

/// (namespace, API group, resource, verb).
type Right = (String, String, String, String);

/// The right only the paginated fallback uses: a streamed ConfigMap list is a watch.
fn fallback_list(namespace: &str) -> Right {
    (namespace.to_owned(), String::new(), "configmaps".to_owned(), "list".to_owned())
}

fn rights_of(rules: &[k8s_openapi::api::rbac::v1::PolicyRule], namespace: &str) -> BTreeSet<Right> {
    let mut out = BTreeSet::new();
    for rule in rules {
        for g in rule.api_groups.iter().flatten() {
            for r in rule.resources.iter().flatten() {
                for v in &rule.verbs {
                    assert!(g != "*" && r != "*" && v != "*", "a wildcard in {rule:?}");
                    out.insert((namespace.to_owned(), g.clone(), r.clone(), v.clone()));
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_k_deploy_runs_two_replicas_one_leading_with_exactly_the_rights_it_uses() {
    let Some(kubectl) = kubectl() else { return };
    let dir = temp_dir("deploy");
    let sb = serve_sandbox_with(&dir, rbac(kube_sandbox::SandboxConfig::default())).await;
    let kc = sb.kubeconfig.clone();

    let out = kubectl_ok(&kubectl, &kc, &["apply", "-k", "deploy/"]);
    for line in [
        "namespace/counter-controller created",
        "serviceaccount/counter-controller created",
        "role.rbac.authorization.k8s.io/counter-controller created",
        "rolebinding.rbac.authorization.k8s.io/counter-controller-leader-election created",
        "service/counter-controller-metrics created",
        "deployment.apps/counter-controller created",
        "poddisruptionbudget.policy/counter-controller created",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    let listed = kubectl_ok(&kubectl, &kc, &["get", "deploy,svc,pdb", "-n", "counter-controller"]);
    assert!(listed.contains("poddisruptionbudget.policy/counter-controller"), "{listed}");
    let all = kubectl_ok(&kubectl, &kc, &["get", "all", "-n", "counter-controller"]);
    assert!(
        all.contains("deployment.apps/counter-controller")
            && all.contains("service/counter-controller-metrics"),
        "{all}"
    );

    // The kubelet's part: the Deployment's replicas, with its container's arguments.
    let client = sb.sandbox.client();
    let d = Api::<Deployment>::namespaced(client.clone(), "counter-controller")
        .get("counter-controller")
        .await
        .unwrap();
    let pod = d.spec.template.spec.clone().unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some("counter-controller"));
    let c = &pod.containers[0];
    let sec = c.security_context.clone().unwrap();
    assert_eq!(sec.read_only_root_filesystem, Some(true));
    assert_eq!(sec.allow_privilege_escalation, Some(false));
    assert_eq!(sec.capabilities.unwrap().drop, Some(vec!["ALL".to_owned()]));
    let pod_sec = pod.security_context.clone().unwrap();
    assert_eq!(pod_sec.run_as_non_root, Some(true));
    assert_eq!(pod_sec.seccomp_profile.unwrap().type_, "RuntimeDefault");
    assert_eq!(
        c.liveness_probe.as_ref().unwrap().http_get.as_ref().unwrap().path.as_deref(),
        Some("/healthz")
    );
    assert_eq!(
        c.readiness_probe.as_ref().unwrap().http_get.as_ref().unwrap().path.as_deref(),
        Some("/readyz")
    );
    assert!(c.args.as_ref().unwrap().contains(&"--leader-elect=true".to_owned()));
    let mut pods = start_pods(&d, &dir, &service_account_kubeconfig(&kubectl, &sb, &dir));
    assert_eq!(pods.len(), 2);

    // One leads; both become ready (a follower's caches are warm) and live.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "counter-controller");
    let mut holder = String::new();
    eventually("a replica leads", || {
        holder = futures::executor::block_on(leases.get_opt("counter-controller"))
            .unwrap()
            .and_then(|l| l.spec?.holder_identity)
            .unwrap_or_default();
        pods.iter().any(|p| holder.starts_with(&format!("{}_", p.hostname)))
    });
    let leader = pods.iter().find(|p| holder.starts_with(&format!("{}_", p.hostname))).unwrap();
    // README's way to see who leads.
    let shown = kubectl_ok(
        &kubectl,
        &kc,
        &[
            "get",
            "lease",
            "counter-controller",
            "-n",
            "counter-controller",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
    );
    assert_eq!(shown, holder);
    for p in &pods {
        eventually("ready", || http_get(p.metrics_addr(), "/readyz").0 == 200);
        assert_eq!(http_get(p.metrics_addr(), "/healthz").0, 200);
    }

    exercise(&kubectl, &kc, &sb.sandbox);

    // Metrics a Prometheus scrape of the leader finds, with plausible values.
    eventually("a renew (PUT of the Lease) is counted", || {
        sample(&leader.metrics(), "rest_client_requests_total", &["code=\"200\"", "method=\"PUT\""]).is_some()
    });
    let m = leader.metrics();
    let ctl = "controller=\"counter-controller\"";
    for (family, labels, at_least) in [
        ("leader_election_master_status", vec!["name=\"counter-controller\""], 1.0),
        ("workqueue_adds_total", vec!["name=\"counter-controller\""], 3.0),
        ("workqueue_depth", vec!["name=\"counter-controller\""], 0.0),
        ("controller_runtime_reconcile_total", vec![ctl, "result=\"success\""], 3.0),
        ("controller_runtime_reconcile_total", vec![ctl, "result=\"error\""], 1.0),
        ("controller_runtime_reconcile_errors_total", vec![ctl], 1.0),
        ("controller_runtime_reconcile_time_seconds_count", vec![ctl], 4.0),
        ("controller_runtime_active_workers", vec![ctl], 0.0),
        ("controller_runtime_max_concurrent_reconciles", vec![ctl], 2.0),
        ("rest_client_requests_total", vec!["code=\"201\"", "method=\"POST\""], 2.0),
    ] {
        let v = sample(&m, family, &labels).unwrap_or_else(|| panic!("no {family}{labels:?} in\n{m}"));
        assert!(v >= at_least, "{family}{labels:?} = {v}, expected at least {at_least}");
    }
    assert_eq!(sample(&m, "controller_runtime_max_concurrent_reconciles", &[ctl]), Some(2.0));
    let follower = pods.iter().find(|p| p.hostname != leader.hostname).unwrap();
    assert_eq!(sample(&follower.metrics(), "leader_election_master_status", &[]), Some(0.0));

    // Shut down as the kubelet does; then least privilege, both ways.
    stop_pods(&mut pods);
    assert_rights_are_exactly_the_used_ones(&sb.sandbox, &pods, Some(fallback_list("default"))).await;
    let out = kubectl_ok(&kubectl, &kc, &["delete", "-k", "deploy/"]);
    assert!(out.contains("namespace \"counter-controller\" deleted"), "{out}");
    let (ok, _, err) = kubectl_run(&kubectl, &kc, &["get", "role", "-n", "default", "counter-controller"]);
    assert!(!ok && err.contains("NotFound"), "{err}");
}

/// `config` enforcing RBAC.
fn rbac(config: kube_sandbox::SandboxConfig) -> kube_sandbox::SandboxConfig {
    kube_sandbox::SandboxConfig { authorization: kube_sandbox::Authorization::Rbac, ..config }
}

/// A kubeconfig of the manifest's ServiceAccount, with a token `kubectl create token` asks for
/// (what a pod's projected token volume holds).
fn service_account_kubeconfig(kubectl: &Path, sb: &ServedSandbox, dir: &Path) -> std::path::PathBuf {
    let token = kubectl_ok(
        kubectl,
        &sb.kubeconfig,
        &["create", "token", "counter-controller", "-n", "counter-controller"],
    );
    let path = dir.join("counter-controller.kubeconfig");
    let text = kube_sandbox::kubeconfig(&sb.server.url(), sb.server.ca_pem(), token.trim());
    std::fs::write(&path, text).unwrap();
    path
}

/// Plays the kubelet: the Deployment's replicas as processes with its container's arguments, each
/// with its own metrics port on this one machine.
fn start_pods(d: &Deployment, dir: &Path, kubeconfig: &Path) -> Vec<Replica> {
    let spec = &d.spec;
    let mut args: Vec<String> = spec.template.spec.as_ref().unwrap().containers[0].args.clone().unwrap();
    assert!(args.contains(&"--metrics-addr=:8080".to_owned()), "{args:?}");
    args.retain(|a| !a.starts_with("--metrics-addr"));
    (0..spec.replicas.unwrap())
        .map(|i| Replica::start(dir, kubeconfig, &format!("counter-controller-7d9f-{i}"), &args))
        .collect()
}

/// The work every layout must do with its rights: create, scale, an invalid value (a Warning,
/// repeated: an Event patch), delete.
fn exercise(kubectl: &Path, kc: &Path, sb: &kube_sandbox::Sandbox) {
    kubectl_ok(kubectl, kc, &["apply", "-f", "examples/cm-web.yaml"]);
    let replicas_of =
        || kubectl_run(kubectl, kc, &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]).1;
    eventually("created with 3", || replicas_of() == "3");
    kubectl_ok(kubectl, kc, &["annotate", "cm", "web", "counter.example.com/desired=abc", "--overwrite"]);
    eventually("the Warning repeats (an Event patch)", || {
        sb.requests().all().iter().any(|r| r.resource == "events" && r.verb == "patch")
    });
    let described = kubectl_ok(kubectl, kc, &["describe", "cm", "web"]);
    assert!(described.contains("InvalidAnnotation") && described.contains("Created"), "{described}");
    kubectl_ok(kubectl, kc, &["annotate", "cm", "web", "counter.example.com/desired=4", "--overwrite"]);
    eventually("scaled to 4", || replicas_of() == "4");
    // Orphaned, so the controller (not the garbage collector, which may win the race) deletes it.
    kubectl_ok(kubectl, kc, &["delete", "cm", "web", "--cascade=orphan"]);
    eventually("deleted", || !kubectl_run(kubectl, kc, &["get", "deploy", "web"]).0);
    let warnings = kubectl_ok(kubectl, kc, &["get", "events", "--field-selector", "type=Warning"]);
    assert!(warnings.contains("InvalidAnnotation") && !warnings.contains("Scaled"), "{warnings}");
}

/// SIGTERM to every pod, as the kubelet stops them; each exits 0.
fn stop_pods(pods: &mut [Replica]) {
    let started = Instant::now();
    for p in pods.iter() {
        p.signal("TERM");
    }
    for p in pods.iter_mut() {
        let status = p.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "{}: {status}\n{}", p.hostname, p.log());
    }
    eprintln!("{} replicas exited {:?} after SIGTERM", pods.len(), started.elapsed());
}

/// Least privilege, both ways: the (namespace, group, resource, verb) the pods used == what the
/// Roles grant (and nothing is granted cluster-wide); `fallback`, when given, is granted and must
/// not have been used (the server streamed the lists it is for).
async fn assert_rights_are_exactly_the_used_ones(
    sb: &kube_sandbox::Sandbox,
    pods: &[Replica],
    fallback: Option<Right>,
) {
    let mut used = BTreeSet::new();
    for r in sb.requests().all().iter().filter(|r| pods.iter().any(|p| p.sent(&r.user_agent))) {
        assert!(!r.resource.is_empty(), "a non-resource request: {r:?}");
        assert!(r.subresource.is_empty(), "a subresource request: {r:?}");
        // A namespace's own object is authorized in that namespace (as RBAC's request info does).
        let ns = if r.resource == "namespaces" { r.name.clone() } else { r.namespace.clone() };
        used.insert((ns, r.group.clone(), r.resource.clone(), r.verb.clone()));
    }
    let client = sb.client();
    let mut granted = BTreeSet::new();
    for role in Api::<Role>::all(client.clone()).list(&ListParams::default()).await.unwrap() {
        granted.extend(rights_of(
            role.rules.as_deref().unwrap_or_default(),
            role.metadata.namespace.as_deref().unwrap(),
        ));
    }
    // The API server's own bootstrap roles aside (`cluster-admin`), nothing is cluster-wide.
    let ours = ListParams::default().labels("!kubernetes.io/bootstrapping");
    let cluster_roles = Api::<ClusterRole>::all(client).list(&ours).await.unwrap();
    assert!(cluster_roles.items.is_empty(), "nothing is granted cluster-wide");
    if let Some(right) = fallback {
        assert!(!used.contains(&right), "{right:?} used although the server streams lists");
        assert!(granted.contains(&right), "{right:?}, the paginated fallback's, not granted");
        used.insert(right);
    }
    let missing: Vec<_> = used.difference(&granted).collect();
    let unused: Vec<_> = granted.difference(&used).collect();
    assert!(
        missing.is_empty() && unused.is_empty(),
        "used but not granted: {missing:?}\ngranted but unused: {unused:?}"
    );
}

#[test]
fn the_all_namespaces_overlay_swaps_the_role_for_a_cluster_role() {
    let Some(kubectl) = kubectl() else { return };
    let (ok, out, err) =
        kubectl_run(&kubectl, std::path::Path::new("/dev/null"), &["kustomize", "deploy/all-namespaces"]);
    assert!(ok, "{err}");
    let docs: Vec<&str> = out.split("\n---\n").collect();
    let kinds: Vec<String> = docs
        .iter()
        .filter_map(|d| d.lines().find(|l| l.starts_with("kind: ")).map(|l| l[6..].to_owned()))
        .collect();
    assert!(
        kinds.contains(&"ClusterRole".to_owned()) && kinds.contains(&"ClusterRoleBinding".to_owned()),
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "Role").count(),
        1,
        "only the leader-election Role stays: {kinds:?}"
    );
    assert!(docs.iter().any(|d| d.starts_with("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n")
        && d.contains("name: counter-controller-leader-election")));
    assert!(out.contains("- --all-namespaces") && !out.contains("--namespace=default"), "{out}");
    assert!(!out.contains("--leader-elect-resource-namespace"), "the Lease defaults to the pod's namespace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_k_sharded_runs_three_active_replicas_with_exactly_the_rights_they_use() {
    let Some(kubectl) = kubectl() else { return };
    let dir = temp_dir("deploy-sharded");
    let config = rbac(kube_sandbox::SandboxConfig {
        streaming_lists: kube_sandbox::StreamingLists::Rejected,
        ..Default::default()
    });
    let sb = serve_sandbox_with(&dir, config).await;
    let kc = sb.kubeconfig.clone();
    let out = kubectl_ok(&kubectl, &kc, &["apply", "-k", "deploy/sharded"]);
    assert!(out.contains("deployment.apps/counter-controller created"), "{out}");
    let d = Api::<Deployment>::namespaced(sb.sandbox.client(), "counter-controller")
        .get("counter-controller")
        .await
        .unwrap();
    let args = d.spec.template.spec.as_ref().unwrap().containers[0].args.clone().unwrap();
    assert!(
        args.contains(&"--sharding=true".to_owned())
            && !args.iter().any(|a| a.starts_with("--leader-elect="))
    );
    let mut pods = start_pods(&d, &dir, &service_account_kubeconfig(&kubectl, &sb, &dir));
    assert_eq!(pods.len(), 3);
    // All three are members, ready, and each holds its own shard Lease.
    for p in &pods {
        eventually("a member of a ring of three", || {
            sample(&p.metrics(), "counter_controller_shard_members", &[]) == Some(3.0)
        });
        eventually("ready", || http_get(p.metrics_addr(), "/readyz").0 == 200);
    }
    let leases = kubectl_ok(
        &kubectl,
        &kc,
        &[
            "get",
            "lease",
            "-n",
            "counter-controller",
            "-l",
            "sharding.counter.example.com/ring=counter-controller",
            "-o",
            "name",
        ],
    );
    assert_eq!(leases.lines().count(), 3, "{leases}");
    exercise(&kubectl, &kc, &sb.sandbox);
    // A clean stop deletes each shard Lease (the right to delete is used, and the ring shrinks at once).
    stop_pods(&mut pods);
    let leases = kubectl_ok(&kubectl, &kc, &["get", "lease", "-n", "counter-controller", "-o", "name"]);
    assert!(leases.trim().is_empty(), "{leases}");
    assert_rights_are_exactly_the_used_ones(&sb.sandbox, &pods, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_missing_one_verb_fails_the_work_as_on_a_cluster() {
    let Some(kubectl) = kubectl() else { return };
    let dir = temp_dir("deploy-missing-verb");
    let sb = serve_sandbox_with(&dir, rbac(kube_sandbox::SandboxConfig::default())).await;
    let kc = sb.kubeconfig.clone();
    kubectl_ok(&kubectl, &kc, &["apply", "-k", "deploy/"]);
    // The shipped Role without `patch` on Deployments: they can be created, not scaled.
    let roles: Api<Role> = Api::namespaced(sb.sandbox.client(), "default");
    let mut role = roles.get("counter-controller").await.unwrap();
    for rule in role.rules.iter_mut().flatten() {
        if rule.resources.as_deref() == Some(&["deployments".to_owned()][..]) {
            rule.verbs.retain(|v| v != "patch");
        }
    }
    roles.replace("counter-controller", &Default::default(), &role).await.unwrap();
    let d = Api::<Deployment>::namespaced(sb.sandbox.client(), "counter-controller")
        .get("counter-controller")
        .await
        .unwrap();
    let mut pods = start_pods(&d, &dir, &service_account_kubeconfig(&kubectl, &sb, &dir));
    kubectl_ok(&kubectl, &kc, &["apply", "-f", "examples/cm-web.yaml"]);
    let replicas_of =
        || kubectl_run(&kubectl, &kc, &["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]).1;
    eventually("created with 3", || replicas_of() == "3");
    kubectl_ok(&kubectl, &kc, &["annotate", "cm", "web", "counter.example.com/desired=4", "--overwrite"]);
    let refused = r#"deployments.apps \"web\" is forbidden: User \"system:serviceaccount:counter-controller:counter-controller\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"default\""#;
    eventually("the scale is refused with the API server's 403", || {
        pods.iter().any(|p| p.log().contains(refused))
    });
    assert_eq!(replicas_of(), "3", "not scaled without the right to");
    stop_pods(&mut pods);
}
