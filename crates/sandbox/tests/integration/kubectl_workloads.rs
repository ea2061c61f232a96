//! The built-in workload kinds with the installed kubectl: a realistic manifest of each applied
//! (and applied again, unchanged), listed with upstream's columns (`-o wide` too), explained from
//! their schemas, scaled, and refused in upstream's words.

use super::kubectl::{Kubectl, cells, is_age};

const WORKLOADS: &str = "examples/workloads.yaml";

#[test]
fn workloads_apply_list_explain_and_scale() {
    let Some(k) = Kubectl::start("workloads") else { return };
    let applied = k.ok(&["apply", "-f", WORKLOADS]);
    assert_eq!(
        applied.lines().collect::<Vec<_>>(),
        [
            "priorityclass.scheduling.k8s.io/batch-low created",
            "service/db created",
            "statefulset.apps/db created",
            "daemonset.apps/node-agent created",
            "job.batch/migrate created",
            "cronjob.batch/backup created",
            "horizontalpodautoscaler.autoscaling/db created",
            "networkpolicy.networking.k8s.io/db created",
            "ingress.networking.k8s.io/web created",
        ],
        "{applied}"
    );
    // Applied again, nothing changes: what kubectl sends back (the lists upstream replaces
    // whole, which the defaults filled in) is defaulted to what is stored, a write that keeps
    // the version.
    let version = |what: &str| k.jsonpath(&["get", what], "{.metadata.resourceVersion}");
    let before = (version("statefulset/db"), version("networkpolicy/db"), version("job/migrate"));
    let again = k.ok(&["apply", "-f", WORKLOADS]);
    assert_eq!(again.lines().count(), 9, "{again}");
    assert_eq!(
        (version("statefulset/db"), version("networkpolicy/db"), version("job/migrate")),
        before,
        "{again}"
    );

    let table = k.ok(&["get", "statefulsets", "-o", "wide"]);
    let rows = cells(&table);
    assert_eq!(rows[0], ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"], "{table}");
    assert_eq!(
        (rows[1][0], rows[1][1], rows[1][3], rows[1][4]),
        ("db", "0/3", "postgres", "postgres:16.4"),
        "{table}"
    );
    assert!(is_age(rows[1][2]), "{table}");

    let table = k.ok(&["get", "jobs"]);
    assert_eq!(cells(&table)[0], ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], "{table}");
    let table = k.ok(&["get", "cronjobs"]);
    assert_eq!(cells(&table)[1][..4], ["backup", "0", "3", "*"], "{table}");
    let table = k.ok(&["get", "hpa"]);
    assert_eq!(cells(&table)[1][..2], ["db", "StatefulSet/db"], "{table}");
    let table = k.ok(&["get", "daemonsets"]);
    assert_eq!(
        cells(&table)[0][..6],
        ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE"],
        "{table}"
    );
    let table = k.ok(&["get", "priorityclasses"]);
    let names: Vec<&str> = cells(&table)[1..].iter().map(|r| r[0]).collect();
    assert_eq!(names, ["batch-low", "system-cluster-critical", "system-node-critical"], "{table}");

    // `kubectl get all` lists what the `all` category holds.
    let all = k.ok(&["get", "all"]);
    for kind in [
        "service/db",
        "statefulset.apps/db",
        "daemonset.apps/node-agent",
        "job.batch/migrate",
        "cronjob.batch/backup",
    ] {
        assert!(all.contains(kind), "{kind} missing from:\n{all}");
    }

    // Every kind is explained from its schema.
    let explained = k.ok(&["explain", "statefulset.spec.volumeClaimTemplates"]);
    assert!(explained.contains("PersistentVolumeClaim"), "{explained}");
    let explained = k.ok(&["explain", "cronjob.spec.concurrencyPolicy"]);
    assert!(explained.contains("FIELD: concurrencyPolicy"), "{explained}");

    k.ok(&["scale", "statefulset/db", "--replicas=4"]);
    assert_eq!(k.jsonpath(&["get", "sts", "db"], "{.spec.replicas}"), "4");
    assert_eq!(k.jsonpath(&["get", "sts", "db"], "{.metadata.generation}"), "2");
    assert_eq!(k.jsonpath(&["get", "job", "migrate"], "{.spec.completions}"), "1");

    // A Job's template is immutable.
    let err = k.fails(&["set", "image", "job/migrate", "migrate=migrate/migrate:v4.18.0"]);
    assert!(err.contains("field is immutable"), "{err}");
}

#[test]
fn a_pod_is_listed_wide_and_has_no_log_before_it_has_a_node() {
    let Some(k) = Kubectl::start("pods") else { return };
    k.ok(&["run", "web", "--image=nginx:1.27", "--restart=Never"]);
    let table = k.ok(&["get", "pods", "-o", "wide"]);
    let rows = cells(&table);
    assert_eq!(
        rows[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ],
        "{table}"
    );
    assert_eq!(rows[1][..4], ["web", "0/1", "Pending", "0"], "{table}");
    // Not scheduled: no log yet, and no error.
    assert_eq!(k.ok(&["logs", "web"]), "");
    assert_eq!(k.jsonpath(&["get", "pod", "web"], "{.spec.serviceAccountName}"), "default");
}

#[test]
fn a_service_account_token_is_a_credential_and_quotas_show_their_usage() {
    let Some(k) = Kubectl::start("tokens") else { return };
    k.ok(&["create", "serviceaccount", "app"]);
    // `kubectl create token` asks the TokenRequest API; the token it prints signs kubectl in.
    let token = k.ok(&["create", "token", "app"]);
    let token = token.trim();
    let listed = k.ok(&["--token", token, "get", "serviceaccounts", "-o", "name"]);
    assert!(listed.lines().any(|l| l == "serviceaccount/app"), "{listed}");
    let refused = k.fails(&["--token", "not-a-token", "get", "pods"]);
    assert!(refused.contains("Unauthorized"), "{refused}");
    // Once its account is gone, so is the token's use.
    k.ok(&["delete", "serviceaccount", "app"]);
    let refused = k.fails(&["--token", token, "get", "pods"]);
    assert!(refused.contains("Unauthorized"), "{refused}");

    // A quota's usage is counted by the sandbox's quota controller, and `kubectl create` meets
    // its refusal in upstream's words.
    k.ok(&["create", "quota", "q", "--hard=pods=1"]);
    k.ok(&["wait", "--for=jsonpath={.status.used.pods}=0", "quota/q", "--timeout=60s"]);
    k.ok(&["run", "a", "--image=nginx:1.27", "--restart=Never"]);
    let refused = k.fails(&["run", "b", "--image=nginx:1.27", "--restart=Never"]);
    assert!(
        refused.contains(
            "pods \"b\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
        ),
        "{refused}"
    );
    let described = k.ok(&["describe", "quota", "q"]);
    assert!(
        described.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["pods", "1", "1"]),
        "{described}"
    );
}

#[test]
fn kubectls_typed_clients_write_and_read_protobuf() {
    let Some(k) = Kubectl::start("protobuf") else { return };
    let (ok, out, log) = k.run(&["create", "deployment", "web", "--image=nginx", "--replicas=2", "-v=8"]);
    assert!(ok, "{log}");
    assert_eq!(out.trim(), "deployment.apps/web created");
    // The typed client sent the Deployment in protobuf and read the answer in it.
    let protobuf =
        log.lines().filter(|l| l.contains("Content-Type: application/vnd.kubernetes.protobuf")).count();
    assert_eq!(protobuf, 2, "the request's and the response's: {log}");
    assert_eq!(
        k.ok(&["autoscale", "deployment", "web", "--min=1", "--max=3", "--cpu-percent=50"]).trim(),
        "horizontalpodautoscaler.autoscaling/web autoscaled"
    );
    assert_eq!(k.jsonpath(&["get", "hpa", "web"], "{.spec.maxReplicas}"), "3");
    k.ok(&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "true"]);
    // `--from` reads the CronJob (a protobuf answer) and writes its Job.
    assert_eq!(
        k.ok(&["create", "job", "manual", "--from=cronjob/nightly"]).trim(),
        "job.batch/manual created"
    );
    assert_eq!(k.jsonpath(&["get", "job", "manual"], "{.metadata.ownerReferences[0].name}"), "nightly");
    assert_eq!(k.ok(&["create", "service", "clusterip", "db", "--tcp=5432"]).trim(), "service/db created");
    assert_eq!(k.jsonpath(&["get", "service", "db"], "{.spec.ports[0].targetPort}"), "5432");
    assert_eq!(k.ok(&["auth", "can-i", "create", "pods"]).trim(), "yes");
}
