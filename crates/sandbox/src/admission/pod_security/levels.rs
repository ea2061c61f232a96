//! PodSecurity's levels (`staging/src/k8s.io/pod-security-admission`): a namespace's
//! `pod-security.kubernetes.io/enforce` label (`privileged`, `baseline` or `restricted`) refuses
//! the pods that break its level, with upstream's message — the failed checks in their ids'
//! order, each with its reason and what the pod must (not) set; its `warn` label warns of them,
//! and a namespace given a new `enforce` level warns of the pods already there that break it.
//!
//! Checked: the baseline's capabilities, host namespaces, hostPath volumes, host ports,
//! privileged containers and an `Unconfined` seccomp profile; the restricted level's privilege
//! escalation, capabilities, volume types, `runAsNonRoot`, `runAsUser=0` and seccomp profile.
//! Not checked: AppArmor, `procMount`, SELinux options and sysctls. The `warn` level answers
//! Warning headers (for pods and for the pod templates of workloads); `audit` writes to an audit
//! log upstream, which the sandbox does not keep. Which kinds hold a pod template is their
//! strategy's [`pod_template`](crate::resource::ResourceDef::pod_template); the plugin that
//! applies these checks is [`super::PodSecurity`].

use serde_json::Value;

/// The capabilities the baseline level lets a container add.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The volume types the restricted level allows.
const RESTRICTED_VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// `container "a"` or `containers "a", "b"`.
fn containers(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let noun = if names.len() == 1 { "container" } else { "containers" };
    format!("{noun} {}", quoted.join(", "))
}

fn quoted(items: &[String]) -> String {
    items.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(", ")
}

/// Every container of the pod (init containers first, as upstream visits them) with its name.
fn all_containers(spec: &Value) -> Vec<(&str, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .map(|c| (c["name"].as_str().unwrap_or(""), c))
        .collect()
}

fn names_where(spec: &Value, f: impl Fn(&Value) -> bool) -> Vec<String> {
    all_containers(spec).into_iter().filter(|(_, c)| f(c)).map(|(n, _)| n.to_owned()).collect()
}

/// The checks `pod` fails at `level`, in their ids' order, as (reason, detail) (`None` when it
/// passes, or the level is `privileged` or unknown).
#[must_use]
pub fn violations(level: &str, pod: &Value) -> Option<Vec<(String, String)>> {
    let restricted = match level {
        "baseline" => false,
        "restricted" => true,
        _ => return None,
    };
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let sc = |c: &Value, ptr: &str| c.pointer(&format!("/securityContext{ptr}")).cloned();
    // (check id, reason, detail): sorted by id at the end.
    let mut failed: Vec<(&str, &str, String)> = Vec::new();

    if restricted {
        let escalating =
            names_where(&spec, |c| sc(c, "/allowPrivilegeEscalation") != Some(Value::Bool(false)));
        if !escalating.is_empty() {
            failed.push((
                "allowPrivilegeEscalation",
                "allowPrivilegeEscalation != false",
                format!(
                    "{} must set securityContext.allowPrivilegeEscalation=false",
                    containers(&escalating)
                ),
            ));
        }
    }
    let added = |c: &Value| -> Vec<String> {
        sc(c, "/capabilities/add")
            .and_then(|a| a.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    if restricted {
        let undropped = names_where(&spec, |c| {
            !sc(c, "/capabilities/drop")
                .and_then(|d| d.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .any(|d| d == "ALL")
        });
        let adders = names_where(&spec, |c| added(c).iter().any(|a| a != "NET_BIND_SERVICE"));
        let mut details = Vec::new();
        if !undropped.is_empty() {
            details.push(format!(
                "{} must set securityContext.capabilities.drop=[\"ALL\"]",
                containers(&undropped)
            ));
        }
        if !adders.is_empty() {
            let mut caps: Vec<String> = all_containers(&spec)
                .iter()
                .flat_map(|(_, c)| added(c))
                .filter(|a| a != "NET_BIND_SERVICE")
                .collect();
            caps.sort();
            caps.dedup();
            details.push(format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers(&adders),
                quoted(&caps)
            ));
        }
        if !details.is_empty() {
            failed.push(("capabilities_restricted", "unrestricted capabilities", details.join("; ")));
        }
    } else {
        let adders =
            names_where(&spec, |c| added(c).iter().any(|a| !BASELINE_CAPABILITIES.contains(&a.as_str())));
        if !adders.is_empty() {
            let mut caps: Vec<String> = all_containers(&spec)
                .iter()
                .flat_map(|(_, c)| added(c))
                .filter(|a| !BASELINE_CAPABILITIES.contains(&a.as_str()))
                .collect();
            caps.sort();
            caps.dedup();
            failed.push((
                "capabilities_baseline",
                "non-default capabilities",
                format!(
                    "{} must not include {} in securityContext.capabilities.add",
                    containers(&adders),
                    quoted(&caps)
                ),
            ));
        }
    }
    let hosts: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|f| spec.get(**f) == Some(&Value::Bool(true)))
        .map(|f| format!("{f}=true"))
        .collect();
    if !hosts.is_empty() {
        failed.push(("hostNamespaces", "host namespaces", hosts.join(", ")));
    }
    let volumes: Vec<&Value> = spec.get("volumes").and_then(Value::as_array).into_iter().flatten().collect();
    let volume_name = |v: &&Value| v["name"].as_str().unwrap_or("").to_owned();
    if restricted {
        let bad: Vec<(String, String)> = volumes
            .iter()
            .filter_map(|v| {
                let kind = v.as_object()?.keys().find(|k| *k != "name")?.clone();
                (!RESTRICTED_VOLUMES.contains(&kind.as_str())).then(|| (volume_name(v), kind))
            })
            .collect();
        if !bad.is_empty() {
            let (names, kinds): (Vec<String>, Vec<String>) = bad.into_iter().unzip();
            let noun = if names.len() == 1 { "volume" } else { "volumes" };
            let mut kinds = kinds;
            kinds.dedup();
            let types = if kinds.len() == 1 { "type" } else { "types" };
            failed.push((
                "restrictedVolumes",
                "restricted volume types",
                format!(
                    "{noun} {} {} restricted volume {types} {}",
                    quoted(&names),
                    if names.len() == 1 { "uses" } else { "use" },
                    quoted(&kinds)
                ),
            ));
        }
    } else {
        let host_paths: Vec<String> =
            volumes.iter().filter(|v| v.get("hostPath").is_some()).map(volume_name).collect();
        if !host_paths.is_empty() {
            let noun = if host_paths.len() == 1 { "volume" } else { "volumes" };
            failed.push(("hostPathVolumes", "hostPath volumes", format!("{noun} {}", quoted(&host_paths))));
        }
    }
    let mut port_users = Vec::new();
    let mut ports = Vec::new();
    for (name, c) in all_containers(&spec) {
        let used: Vec<i64> = c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["hostPort"].as_i64())
            .filter(|p| *p != 0)
            .collect();
        if !used.is_empty() {
            port_users.push(name.to_owned());
            ports.extend(used);
        }
    }
    if !port_users.is_empty() {
        let (verb, noun) = if port_users.len() == 1 && ports.len() == 1 {
            ("uses", "hostPort")
        } else if port_users.len() == 1 {
            ("uses", "hostPorts")
        } else {
            ("use", "hostPorts")
        };
        let list: Vec<String> = ports.iter().map(ToString::to_string).collect();
        failed.push((
            "hostPorts",
            "hostPort",
            format!("{} {verb} {noun} {}", containers(&port_users), list.join(", ")),
        ));
    }
    let privileged = names_where(&spec, |c| sc(c, "/privileged") == Some(Value::Bool(true)));
    if !privileged.is_empty() {
        failed.push((
            "privileged",
            "privileged",
            format!("{} must not set securityContext.privileged=true", containers(&privileged)),
        ));
    }
    if restricted {
        let pod_non_root = spec.pointer("/securityContext/runAsNonRoot") == Some(&Value::Bool(true));
        let unset = names_where(&spec, |c| sc(c, "/runAsNonRoot") != Some(Value::Bool(true)));
        if !pod_non_root && !unset.is_empty() {
            failed.push((
                "runAsNonRoot",
                "runAsNonRoot != true",
                format!("pod or {} must set securityContext.runAsNonRoot=true", containers(&unset)),
            ));
        }
        let root = names_where(&spec, |c| sc(c, "/runAsUser") == Some(Value::from(0)));
        if spec.pointer("/securityContext/runAsUser") == Some(&Value::from(0)) || !root.is_empty() {
            let who = if root.is_empty() { "pod".to_owned() } else { containers(&root) };
            failed.push(("runAsUser", "runAsUser=0", format!("{who} must not set runAsUser=0")));
        }
        let allowed = |t: Option<Value>| {
            matches!(t.as_ref().and_then(Value::as_str), Some("RuntimeDefault" | "Localhost"))
        };
        let pod_profile = allowed(spec.pointer("/securityContext/seccompProfile/type").cloned());
        let unset = names_where(&spec, |c| !allowed(sc(c, "/seccompProfile/type")));
        if !pod_profile && !unset.is_empty() {
            failed.push((
                "seccompProfile_restricted",
                "seccompProfile",
                format!("pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"", containers(&unset)),
            ));
        }
    } else if spec.pointer("/securityContext/seccompProfile/type").and_then(Value::as_str)
        == Some("Unconfined")
    {
        failed.push((
            "seccompProfile_baseline",
            "seccompProfile",
            "pod must not set securityContext.seccompProfile.type to \"Unconfined\"".to_owned(),
        ));
    }
    if failed.is_empty() {
        return None;
    }
    failed.sort_by_key(|f| f.0);
    Some(failed.into_iter().map(|(_, reason, detail)| (reason.to_owned(), detail)).collect())
}

/// A namespace's level and version for `mode` (`enforce`, `warn`, `audit`), from its
/// `pod-security.kubernetes.io/<mode>` and `<mode>-version` labels, as `level:version`.
#[must_use]
pub fn policy(namespace: &Value, mode: &str) -> Option<String> {
    let label = |key: &str| {
        namespace
            .pointer("/metadata/labels")
            .and_then(|l| l.get(format!("pod-security.kubernetes.io/{key}")))
            .and_then(Value::as_str)
    };
    let level = label(mode)?;
    Some(format!("{level}:{}", label(&format!("{mode}-version")).unwrap_or("latest")))
}

/// The checks `pod` fails at `policy` (`level:version`), as `reason (detail)` joined by commas.
fn forbidden_detail(policy: &str, pod: &Value) -> Option<String> {
    let level = policy.split(':').next().unwrap_or("");
    let failed = violations(level, pod)?;
    Some(
        failed
            .into_iter()
            .map(|(reason, detail)| format!("{reason} ({detail})"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Why the namespace's `enforce` level refuses `pod`: `violates PodSecurity "…": …`.
#[must_use]
pub fn enforce_refusal(namespace: &Value, pod: &Value) -> Option<String> {
    let policy = policy(namespace, "enforce")?;
    forbidden_detail(&policy, pod).map(|d| format!("violates PodSecurity {policy:?}: {d}"))
}

/// The `warn` level's warnings for a pod, or for a workload's pod template (which `enforce` does
/// not refuse: only the pods it makes are): `would violate PodSecurity "…": …`.
#[must_use]
pub fn warnings(namespace: &Value, pod: &Value) -> Vec<String> {
    let Some(policy) = policy(namespace, "warn") else { return Vec::new() };
    forbidden_detail(&policy, pod)
        .map(|d| format!("would violate PodSecurity {policy:?}: {d}"))
        .into_iter()
        .collect()
}

/// What a namespace update that sets a new `enforce` level warns of (`EvaluatePodsInNamespace`):
/// that some existing pods break it, then each distinct set of failed checks with the first pod
/// (by name) that fails it, and how many others do.
#[must_use]
pub fn existing_pods_warnings(namespace: &Value, pods: &[std::sync::Arc<Value>]) -> Vec<String> {
    let Some(policy) = policy(namespace, "enforce") else { return Vec::new() };
    let level = policy.split(':').next().unwrap_or("");
    // reasons → (first pod name, count)
    let mut seen: std::collections::BTreeMap<String, (String, usize)> = std::collections::BTreeMap::new();
    for pod in pods {
        let Some(failed) = violations(level, pod) else { continue };
        let reasons = failed.into_iter().map(|(r, _)| r).collect::<Vec<_>>().join(", ");
        let name = crate::object_meta::meta_str(pod, "name").to_owned();
        let entry = seen.entry(reasons).or_insert_with(|| (name.clone(), 0));
        if name < entry.0 {
            entry.0 = name;
        }
        entry.1 += 1;
    }
    if seen.is_empty() {
        return Vec::new();
    }
    let ns = crate::object_meta::meta_str(namespace, "name");
    let mut per_pod: Vec<String> = seen
        .into_iter()
        .map(|(reasons, (name, count))| match count {
            1 => format!("{name}: {reasons}"),
            2 => format!("{name} (and 1 other pod): {reasons}"),
            n => format!("{name} (and {} other pods): {reasons}", n - 1),
        })
        .collect();
    per_pod.sort();
    let mut out = vec![format!(
        "existing pods in namespace {ns:?} violate the new PodSecurity enforce level {policy:?}"
    )];
    out.extend(per_pod);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn baseline_refuses_host_access_in_upstreams_words() {
        let pod = json!({ "spec": {
            "hostNetwork": true,
            "volumes": [{ "name": "root", "hostPath": { "path": "/" } }],
            "containers": [{ "name": "main", "securityContext": { "privileged": true, "capabilities": { "add": ["NET_ADMIN"] } },
                             "ports": [{ "containerPort": 80, "hostPort": 80 }] }],
        } });
        let ns = json!({ "metadata": { "labels": { "pod-security.kubernetes.io/enforce": "baseline" } } });
        assert_eq!(
            enforce_refusal(&ns, &pod).unwrap(),
            "violates PodSecurity \"baseline:latest\": non-default capabilities (container \"main\" must not include \"NET_ADMIN\" in securityContext.capabilities.add), host namespaces (hostNetwork=true), hostPath volumes (volume \"root\"), hostPort (container \"main\" uses hostPort 80), privileged (container \"main\" must not set securityContext.privileged=true)"
        );
        assert_eq!(violations("privileged", &pod), None);
    }

    #[test]
    fn restricted_wants_a_locked_down_pod() {
        let plain = json!({ "spec": { "containers": [{ "name": "main" }] } });
        let ns = json!({ "metadata": { "labels": { "pod-security.kubernetes.io/warn": "restricted",
                                                    "pod-security.kubernetes.io/warn-version": "v1.32" } } });
        assert_eq!(
            warnings(&ns, &plain)[0],
            "would violate PodSecurity \"restricted:v1.32\": allowPrivilegeEscalation != false (container \"main\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"main\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"main\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"main\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        let locked = json!({ "spec": {
            "securityContext": { "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } },
            "containers": [{ "name": "main", "securityContext": { "allowPrivilegeEscalation": false, "capabilities": { "drop": ["ALL"] } } }],
        } });
        assert_eq!(violations("restricted", &locked), None);
        assert_eq!(violations("baseline", &plain), None);
    }

    #[test]
    fn a_new_enforce_level_names_the_pods_that_break_it() {
        let pod = |name: &str, host: bool| {
            std::sync::Arc::new(
                json!({ "metadata": { "name": name }, "spec": { "hostNetwork": host, "containers": [{ "name": "c" }] } }),
            )
        };
        let ns = json!({ "metadata": { "name": "team", "labels": { "pod-security.kubernetes.io/enforce": "baseline" } } });
        let found = existing_pods_warnings(&ns, &[pod("b", true), pod("a", true), pod("c", false)]);
        assert_eq!(
            found,
            [
                "existing pods in namespace \"team\" violate the new PodSecurity enforce level \"baseline:latest\"",
                "a (and 1 other pod): host namespaces",
            ]
        );
    }
}
