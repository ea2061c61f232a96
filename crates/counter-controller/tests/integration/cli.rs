//! The command line's bad inputs: each is one line naming the problem and a non-zero exit.

use std::process::Command;
use std::time::Duration;

use counter_controller::cli::preflight;
use kube_manager::Scope;

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_counter-controller"));
    cmd.args(args).env_remove("KUBECONFIG").env("HOME", "/nonexistent-home");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_missing_kubeconfig_is_named() {
    let (code, err) = run(&["run", "--kubeconfig", "/no/such/kubeconfig"], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("/no/such/kubeconfig"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn an_unreadable_kubeconfig_is_named() {
    let dir = std::env::temp_dir().join(format!("cc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("garbage");
    std::fs::write(&path, "{{{ not yaml").unwrap();
    let (code, err) = run(&["--kubeconfig", path.to_str().unwrap()], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("garbage") && err.contains("is not valid"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn a_missing_kubeconfig_names_its_cause_once() {
    let (_, err) = run(&["--kubeconfig", "/no/such/kubeconfig"], &[]);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn an_empty_kubeconfig_variable_counts_as_unset() {
    // As kubectl: KUBECONFIG= falls through to ~/.kube/config, then the in-cluster config.
    let (code, err) = run(&[], &[("KUBECONFIG", "")]);
    assert_ne!(code, 0);
    assert!(!err.contains("a value is required"), "{err}");
    assert!(err.contains("no cluster configuration"), "{err}");
}

#[test]
fn leader_election_settings_are_checked_before_connecting() {
    for (args, needle) in [
        (
            vec!["--leader-elect", "--leader-elect-renew-deadline", "20s"],
            "lease-duration > renew-deadline > retry-period > 0",
        ),
        (vec!["--leader-elect", "--leader-elect-retry-period", "0"], "retry-period 0ns"),
        (vec!["--leader-elect", "--all-namespaces"], "--leader-elect-resource-namespace"),
        (vec!["--leader-elect", "--leader-elect-lease-duration", "soon"], "\"soon\""),
        (vec!["--metrics-addr", "everywhere"], "\"everywhere\""),
    ] {
        let (code, err) = run(&args, &[]);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
        // Our own checks are one line; clap's flag errors add its usual hint line.
        if !err.starts_with("error: invalid value") {
            assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        }
    }
}

#[test]
fn no_configuration_at_all_says_what_to_do() {
    let (code, err) = run(&[], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("--kubeconfig"), "{err}");
}

#[test]
fn an_unreachable_server_fails_fast() {
    let dir = std::env::temp_dir().join(format!("cc-cli-unreach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = kubeconfig(&dir, "http://127.0.0.1:1");
    let start = std::time::Instant::now();
    let (code, err) = run(&["run", "--kubeconfig", kc.to_str().unwrap()], &[]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot reach the API server"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(60), "no busy loop, no hang");
}

#[test]
fn bad_flags_are_named() {
    for (args, needle) in [
        (vec!["--workers", "0"], "at least 1"),
        (vec!["--resync", "soon"], "\"soon\""),
        (vec!["--resync", "30"], "\"30\""),
        (vec!["--namespace", "a", "--all-namespaces"], "cannot be used with"),
        (vec!["sandbox", "--listen", "0.0.0.0:0"], "--allow-remote"),
        (vec!["sandbox", "--pod-run-time", "forever"], "\"forever\""),
    ] {
        let (code, err) = run(&args, &[]);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[tokio::test]
async fn a_namespace_that_does_not_exist_is_named() {
    let sb = kube_sandbox::Sandbox::new();
    let err = preflight(&sb.client(), &Scope::Namespace("nope".into())).await.unwrap_err();
    assert_eq!(err.to_string(), "namespace \"nope\" does not exist");
    preflight(&sb.client(), &Scope::Namespace("default".into())).await.unwrap();
    preflight(&sb.client(), &Scope::All).await.unwrap();
}
