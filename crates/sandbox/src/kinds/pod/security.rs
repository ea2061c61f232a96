//! A pod's security: its security context (`validatePodSpecSecurityContext`: ids, sysctls,
//! seccomp, AppArmor, Windows options), what host networking asks of ports
//! (`validatePodHostNetworkDeps`), Windows host-process pods (`validateWindowsHostProcessPod`)
//! and what a pod's OS forbids (`validateOS`, `validateLinux`, `validateWindows`).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::volumes::{dns_subdomain, local_descending_path};
use crate::field_errors::{
    duplicate, forbidden, inclusive_range, invalid, invalid_bare, invalid_str, not_supported, required,
    too_long,
};
use crate::status::FieldError;

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn set(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Every container of the spec with its path, init containers first, as upstream's
/// `VisitContainersWithPath`.
pub(crate) fn containers<'a>(spec: &'a Value, at: &str) -> Vec<(&'a Value, String)> {
    let mut out = Vec::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            out.push((c, format!("{at}.{list}[{i}]")));
        }
    }
    out
}

/// `validatePodHostNetworkDeps`: on the host's network a Pod's host ports are its container
/// ports (a template may leave them 0).
pub(crate) fn host_network_deps(spec: &Value, at: &str, is_pod: bool) -> Vec<FieldError> {
    if !flag(spec, "hostNetwork") {
        return Vec::new();
    }
    let mut errs = Vec::new();
    for (i, c) in spec.get("containers").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for (j, p) in c.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let cp = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
            if (is_pod || hp != 0) && hp != cp {
                errs.push(invalid_bare(
                    format!("{at}.containers[{i}].ports[{j}].hostPort"),
                    hp,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

/// A user or group id (`IsValidUserID` / `IsValidGroupID` in v1.32: up to `MaxInt32`).
fn id(v: &Value, path: &str) -> Vec<FieldError> {
    match v.as_i64() {
        Some(n) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            vec![invalid_bare(path, n, &inclusive_range(0, i64::from(i32::MAX)))]
        }
        _ => Vec::new(),
    }
}

/// `validatePodSpecSecurityContext`.
pub(crate) fn pod_security_context(spec: &Value, at: &str) -> Vec<FieldError> {
    let Some(sc) = spec.get("securityContext").filter(|s| s.is_object()) else { return Vec::new() };
    let path = format!("{at}.securityContext");
    let mut errs = Vec::new();
    for f in ["fsGroup", "runAsUser", "runAsGroup"] {
        if let Some(v) = sc.get(f) {
            errs.extend(id(v, &format!("{path}.{f}")));
        }
    }
    for (g, gid) in sc.get("supplementalGroups").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errs.extend(id(gid, &format!("{path}.supplementalGroups[{g}]")));
    }
    if flag(spec, "hostPID") && spec.get("shareProcessNamespace").and_then(Value::as_bool) == Some(true) {
        errs.push(invalid(
            format!("{path}.shareProcessNamespace"),
            &Value::Bool(true),
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    errs.extend(sysctls(spec, sc, &format!("{path}.sysctls")));
    if let Some(p) = sc.get("fsGroupChangePolicy").and_then(Value::as_str)
        && !["Always", "OnRootMismatch"].contains(&p)
    {
        errs.push(not_supported(format!("{path}.fsGroupChangePolicy"), p, &["Always", "OnRootMismatch"]));
    }
    errs.extend(seccomp_profile(sc.get("seccompProfile"), &format!("{path}.seccompProfile")));
    errs.extend(windows_options(sc.get("windowsOptions"), &format!("{path}.windowsOptions")));
    errs.extend(apparmor_profile(sc.get("appArmorProfile"), &format!("{path}.appArmorProfile")));
    errs
}

static SYSCTL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$")
        .expect("sysctl regex")
});

/// The namespace a sysctl belongs to (`sysctl.GetNamespace`), its name normalized to dots.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    let normalized: String = match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                c => c,
            })
            .collect(),
        _ => name.to_owned(),
    };
    if normalized == "kernel.sem"
        || ["kernel.shm", "kernel.msg", "fs.mqueue."].iter().any(|p| normalized.starts_with(p))
    {
        Some("ipc")
    } else if normalized.starts_with("net.") {
        Some("net")
    } else {
        None
    }
}

/// `validateSysctls` with `ValidateHostSysctl`.
fn sysctls(spec: &Value, sc: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, s) in sc.get("sysctls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let name = str_at(s, "name");
        let np = format!("{path}[{i}].name");
        if name.is_empty() {
            errs.push(required(&np, ""));
        } else if name.len() > 253 || !SYSCTL.is_match(name) {
            errs.push(invalid_str(
                &np,
                name,
                &format!("must have at most 253 characters and match regex {}", SYSCTL.as_str()),
            ));
        } else if names.contains(name) {
            errs.push(duplicate(&np, name));
        }
        match sysctl_namespace(name) {
            Some("net") if flag(spec, "hostNetwork") => {
                errs.push(invalid_str(&np, name, "may not be specified when 'hostNetwork' is true"));
            }
            Some("ipc") if flag(spec, "hostIPC") => {
                errs.push(invalid_str(&np, name, "may not be specified when 'hostIPC' is true"));
            }
            _ => {}
        }
        names.insert(name);
    }
    errs
}

/// `validateSeccompProfileField` with `validateSeccompProfileType`.
pub(crate) fn seccomp_profile(profile: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(p) = profile.filter(|p| p.is_object()) else { return Vec::new() };
    let mut errs = Vec::new();
    let t = str_at(p, "type");
    match t {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(required(format!("{path}.type"), "type is required when seccompProfile is set")),
        other => errs.push(not_supported(
            format!("{path}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let local = p.get("localhostProfile").and_then(Value::as_str);
    if t == "Localhost" {
        match local {
            None => errs.push(required(
                format!("{path}.localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(l) => errs.extend(local_descending_path(l, &format!("{path}.localhostProfile"))),
        }
    } else if local.is_some() {
        // Upstream prints the profile struct with Go's `%#v`: the address of its string is the
        // server's own, one is made up here.
        errs.push((
            format!("{path}.localhostProfile"),
            format!(
                "Invalid value: core.SeccompProfile{{Type:{}, LocalhostProfile:(*string)(0xc000000000)}}: can only be set when seccomp type is Localhost",
                crate::go_print::go_quote(t)
            ),
        ));
    }
    errs
}

/// `ValidateAppArmorProfileField`.
pub(crate) fn apparmor_profile(profile: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(p) = profile.filter(|p| p.is_object()) else { return Vec::new() };
    let local = p.get("localhostProfile").and_then(Value::as_str);
    let lp = format!("{path}.localhostProfile");
    let mut errs = Vec::new();
    match str_at(p, "type") {
        "Localhost" => match local {
            None => errs.push(required(&lp, "must be set when AppArmor type is Localhost")),
            Some(l) => {
                if l.trim() != l {
                    errs.push(invalid_str(&lp, l, "must not be padded with whitespace"));
                } else if l.is_empty() {
                    errs.push(required(&lp, "must be set when AppArmor type is Localhost"));
                }
                if l.len() > 4095 {
                    errs.push(too_long(&lp, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = local {
                errs.push(invalid_str(&lp, l, "can only be set when AppArmor type is Localhost"));
            }
        }
        "" => errs.push(required(format!("{path}.type"), "type is required when appArmorProfile is set")),
        other => errs.push(not_supported(
            format!("{path}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    errs
}

static NETBIOS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$"#).expect("netbios regex"));
static DNS_DOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)*[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$")
        .expect("domain regex")
});

/// `validateWindowsSecurityContextOptions`.
pub(crate) fn windows_options(options: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(o) = options.filter(|o| o.is_object()) else { return Vec::new() };
    let mut errs = Vec::new();
    if let Some(n) = o.get("gmsaCredentialSpecName").and_then(Value::as_str) {
        errs.extend(dns_subdomain(n, &format!("{path}.gmsaCredentialSpecName")));
    }
    if let Some(s) = o.get("gmsaCredentialSpec").and_then(Value::as_str) {
        let sp = format!("{path}.gmsaCredentialSpec");
        if s.is_empty() {
            errs.push(invalid_str(&sp, s, "gmsaCredentialSpec cannot be an empty string"));
        } else if s.len() > 64 * 1024 {
            errs.push(invalid_str(&sp, s, "gmsaCredentialSpec size must be under 64 KiB"));
        }
    }
    let Some(user) = o.get("runAsUserName").and_then(Value::as_str) else { return errs };
    let up = format!("{path}.runAsUserName");
    let mut bad = |why: &str| errs.push(invalid_str(&up, user, why));
    if user.is_empty() {
        bad("runAsUserName cannot be an empty string");
        return errs;
    }
    if user.chars().any(|c| c.is_ascii_control()) {
        bad("runAsUserName cannot contain control characters");
        return errs;
    }
    let parts: Vec<&str> = user.split('\\').collect();
    if parts.len() > 2 {
        bad("runAsUserName cannot contain more than one backslash");
        return errs;
    }
    let (domain, name) = if parts.len() == 1 { (None, parts[0]) } else { (Some(parts[0]), parts[1]) };
    if domain.is_some_and(|d| d.len() >= 256) {
        bad("runAsUserName's Domain length must be under 256 characters");
    }
    if let Some(d) = domain
        && !(NETBIOS.is_match(d) || DNS_DOMAIN.is_match(d))
    {
        bad("runAsUserName's Domain doesn't match the NetBios nor the DNS format");
    }
    if name.is_empty() {
        bad("runAsUserName's User cannot be empty");
    } else if name.len() > 104 {
        bad("runAsUserName's User length must not be longer than 104 characters");
    }
    if !name.is_empty() && name.chars().all(|c| c == '.' || c == ' ') {
        bad("runAsUserName's User cannot contain only periods or spaces");
    }
    if name.contains(['"', '/', '\\', ':', ';', '|', '=', ',', '+', '*', '?', '<', '>', '@', '[', ']']) {
        bad(r#"runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#);
    }
    errs
}

/// `validateWindowsHostProcessPod`: a pod's containers are all host-process ones or none, agree
/// with the pod's setting, and run on the host's network. (The cluster allows privileged pods,
/// as kind and kubeadm clusters do.)
pub(crate) fn windows_host_process(spec: &Value, at: &str) -> Vec<FieldError> {
    let pod_hp = spec.pointer("/securityContext/windowsOptions/hostProcess").and_then(Value::as_bool);
    let mut errs = Vec::new();
    let (mut count, mut host_process) = (0, 0);
    for (c, path) in containers(spec, at) {
        count += 1;
        let c_hp = c.pointer("/securityContext/windowsOptions/hostProcess").and_then(Value::as_bool);
        if let (Some(p), Some(ch)) = (pod_hp, c_hp)
            && p != ch
        {
            errs.push(invalid(
                format!("{path}.securityContext.windowsOptions.hostProcess"),
                &Value::Bool(ch),
                &format!("pod hostProcess value must be identical if both are specified, was {p}"),
            ));
        }
        if c_hp == Some(true) || (c_hp.is_none() && pod_hp == Some(true)) {
            host_process += 1;
        }
    }
    if host_process > 0 {
        if host_process != count {
            errs.push(invalid_str(
                at,
                "",
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if !flag(spec, "hostNetwork") {
            errs.push(invalid(
                format!("{at}.hostNetwork"),
                &Value::Bool(false),
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
    errs
}

/// `validateOS`, then what the named OS forbids (`validateLinux` / `validateWindows`).
pub(crate) fn os(spec: &Value, at: &str) -> Vec<FieldError> {
    let Some(os) = spec.get("os").filter(|o| o.is_object()) else { return Vec::new() };
    match str_at(os, "name") {
        "" => vec![required(format!("{at}.os.name"), "cannot be empty")],
        "linux" => linux(spec, at),
        "windows" => windows(spec, at),
        other => vec![not_supported(format!("{at}.os"), other, &["linux", "windows"])],
    }
}

/// `validateLinux`: no Windows options.
fn linux(spec: &Value, at: &str) -> Vec<FieldError> {
    const WHY: &str = "windows options cannot be set for a linux pod";
    let mut errs = Vec::new();
    if spec.pointer("/securityContext/windowsOptions").is_some_and(|o| !o.is_null()) {
        errs.push(forbidden(format!("{at}.securityContext.windowsOptions"), WHY));
    }
    for (c, path) in containers(spec, at) {
        if c.pointer("/securityContext/windowsOptions").is_some_and(|o| !o.is_null()) {
            errs.push(forbidden(format!("{path}.securityContext.windowsOptions"), WHY));
        }
    }
    errs
}

/// `validateWindows`: none of the Linux-only settings, in the pod's or a container's context.
fn windows(spec: &Value, at: &str) -> Vec<FieldError> {
    const WHY: &str = "cannot be set for a windows pod";
    let mut errs = Vec::new();
    let sc = spec.get("securityContext").cloned().unwrap_or_default();
    let scp = format!("{at}.securityContext");
    for (present, path) in [
        (set(&sc, "appArmorProfile"), format!("{scp}.appArmorProfile")),
        (set(&sc, "seLinuxOptions"), format!("{scp}.seLinuxOptions")),
        (flag(spec, "hostPID"), format!("{at}.hostPID")),
        (flag(spec, "hostIPC"), format!("{at}.hostIPC")),
        (set(&sc, "seccompProfile"), format!("{scp}.seccompProfile")),
        (set(&sc, "fsGroup"), format!("{scp}.fsGroup")),
        (set(&sc, "fsGroupChangePolicy"), format!("{scp}.fsGroupChangePolicy")),
        (
            sc.get("sysctls").and_then(Value::as_array).is_some_and(|s| !s.is_empty()),
            format!("{scp}.sysctls"),
        ),
        (set(spec, "shareProcessNamespace"), format!("{at}.shareProcessNamespace")),
        (set(&sc, "runAsUser"), format!("{scp}.runAsUser")),
        (set(&sc, "runAsGroup"), format!("{scp}.runAsGroup")),
        (set(&sc, "supplementalGroups"), format!("{scp}.supplementalGroups")),
    ] {
        if present {
            errs.push(forbidden(path, WHY));
        }
    }
    for (c, path) in containers(spec, at) {
        let Some(csc) = c.get("securityContext").filter(|s| s.is_object()) else { continue };
        for f in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if set(csc, f) {
                errs.push(forbidden(format!("{path}.securityContext.{f}"), WHY));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_user_names_as_upstream_parses_them() {
        let check = |user: &str| windows_options(Some(&json!({ "runAsUserName": user })), "o");
        assert!(check("DOMAIN\\user").is_empty());
        assert!(check("example.com\\user").is_empty());
        assert!(check("a\\b\\c")[0].1.ends_with("cannot contain more than one backslash"));
        assert!(check("dom\\")[0].1.ends_with("User cannot be empty"));
    }

    #[test]
    fn sysctls_know_their_namespaces() {
        assert_eq!(sysctl_namespace("net.ipv4.ip_forward"), Some("net"));
        assert_eq!(sysctl_namespace("net/ipv4/ip_forward"), Some("net"));
        assert_eq!(sysctl_namespace("kernel.shm_rmid_forced"), Some("ipc"));
        assert_eq!(sysctl_namespace("vm.swappiness"), None);
    }

    #[test]
    fn a_windows_pod_refuses_linux_settings() {
        let spec = json!({ "os": { "name": "windows" }, "securityContext": { "runAsUser": 1 },
            "containers": [{ "name": "c", "securityContext": { "privileged": false } }] });
        let fields: Vec<String> = os(&spec, "spec").into_iter().map(|e| e.0).collect();
        assert_eq!(
            fields,
            ["spec.securityContext.runAsUser", "spec.containers[0].securityContext.privileged"]
        );
    }
}
