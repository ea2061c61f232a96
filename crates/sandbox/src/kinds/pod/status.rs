//! A Pod's status write (`ValidatePodStatusUpdate`; its annotation rules are
//! [`super::update::annotation_updates`], shared with the main update): condition types,
//! the nominated node, the QoS class, containers that may not leave `terminated`, and the
//! pod's and host's IPs.

use std::net::IpAddr;

use serde_json::Value;

use crate::go_print::go_quote;
use crate::metadata::{qualified_name_errors, subdomain_errors};
use crate::status::FieldError;

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The status rules, after the annotations', in upstream's order.
pub(super) fn validate(pod: &Value, old: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let status = pod.get("status").unwrap_or(&null);
    let old_status = old.get("status").unwrap_or(&null);
    let old_spec = old.get("spec").unwrap_or(&null);
    let mut errs = conditions(status);
    let nominated = str_of(status, "nominatedNodeName");
    if nominated != str_of(old_status, "nominatedNodeName") && !nominated.is_empty() {
        errs.extend(subdomain_errors(nominated).into_iter().map(|m| {
            ("status.nominatedNodeName".to_owned(), format!("Invalid value: {}: {m}", go_quote(nominated)))
        }));
    }
    let qos = str_of(status, "qosClass");
    if qos != str_of(old_status, "qosClass") {
        errs.push((
            "status.qosClass".into(),
            format!("Invalid value: {}: field is immutable", go_quote(qos)),
        ));
    }
    let policy = str_of(old_spec, "restartPolicy");
    errs.extend(state_transitions(status, old_status, "containerStatuses", policy, old_spec));
    errs.extend(state_transitions(status, old_status, "initContainerStatuses", policy, old_spec));
    errs.extend(state_transitions(status, old_status, "ephemeralContainerStatuses", "Never", old_spec));
    errs.extend(pod_ips(status));
    errs.extend(host_ips(status));
    errs
}

/// `validatePodConditions`: a condition other than the system's is typed by a qualified name
/// (upstream builds the path from `metadata`).
fn conditions(status: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in list(status, "conditions").iter().enumerate() {
        let ty = str_of(c, "type");
        if matches!(ty, "PodScheduled" | "Ready" | "Initialized") {
            continue;
        }
        errs.extend(qualified_name_errors(ty).into_iter().map(|m| {
            (format!("metadata.conditions[{i}].Type"), format!("Invalid value: {}: {m}", go_quote(ty)))
        }));
    }
    errs
}

/// `ValidateContainerStateTransition` / `ValidateInitContainerStateTransition`: unless the pod
/// restarts its containers, one that terminated (successfully, under `OnFailure`) stays so; a
/// sidecar may restart.
fn state_transitions(
    status: &Value,
    old_status: &Value,
    list_name: &str,
    policy: &str,
    spec: &Value,
) -> Vec<FieldError> {
    if policy == "Always" {
        return Vec::new();
    }
    let terminated = |s: &Value| s.pointer("/state/terminated").is_some_and(|t| !t.is_null());
    let mut errs = Vec::new();
    for (i, before) in list(old_status, list_name).iter().enumerate() {
        if !terminated(before) {
            continue;
        }
        let exit = before.pointer("/state/terminated/exitCode").and_then(Value::as_i64).unwrap_or(0);
        if exit != 0 && policy == "OnFailure" {
            continue;
        }
        let name = str_of(before, "name");
        let sidecar = list_name == "initContainerStatuses"
            && list(spec, "initContainers")
                .iter()
                .find(|c| str_of(c, "name") == name)
                .is_some_and(|c| str_of(c, "restartPolicy") == "Always");
        if sidecar {
            continue;
        }
        for now in list(status, list_name) {
            if str_of(now, "name") == name && !terminated(now) {
                errs.push((
                    format!("status.{list_name}[{i}].state"),
                    "Forbidden: may not be transitioned to non-terminated state".into(),
                ));
            }
        }
    }
    errs
}

/// The IPs of a list (`podIPs`, `hostIPs`) as the internal type holds them: the singular
/// field alone makes a list of one, and wins over a list that starts elsewhere.
fn ips(status: &Value, single: &str, plural: &str) -> Vec<String> {
    let one = str_of(status, single);
    let many: Vec<String> = list(status, plural).iter().map(|p| str_of(p, "ip").to_owned()).collect();
    if !one.is_empty() && many.first().is_none_or(|first| first != one) {
        return vec![one.to_owned()];
    }
    many
}

const BAD_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const ONE_PER_FAMILY: &str = "may specify no more than one IP for each IP family";

/// Whether `ips` hold one IPv4 and one IPv6 address (`IsDualStackIPStrings`).
fn dual_stack(ips: &[String]) -> bool {
    let parsed: Vec<IpAddr> = ips.iter().filter_map(|ip| ip.parse().ok()).collect();
    parsed.iter().any(IpAddr::is_ipv4) && parsed.iter().any(IpAddr::is_ipv6)
}

/// Go's `%#v` of a `[]core.PodIP` or `[]core.HostIP`.
fn go_ip_list(ty: &str, ips: &[String]) -> String {
    let items: Vec<String> = ips.iter().map(|ip| format!("core.{ty}{{IP:{}}}", go_quote(ip))).collect();
    format!("[]core.{ty}{{{}}}", items.join(", "))
}

/// `validatePodIPs`: each an IP; several only one per family, none twice.
fn pod_ips(status: &Value) -> Vec<FieldError> {
    let ips = ips(status, "podIP", "podIPs");
    let mut errs: Vec<FieldError> = ips
        .iter()
        .enumerate()
        .filter(|(_, ip)| ip.parse::<IpAddr>().is_err())
        .map(|(i, ip)| (format!("status.podIPs[{i}]"), format!("Invalid value: {}: {BAD_IP}", go_quote(ip))))
        .collect();
    if ips.len() > 1 {
        if !dual_stack(&ips) || ips.len() > 2 {
            errs.push((
                "status.podIPs".into(),
                format!("Invalid value: {}: {ONE_PER_FAMILY}", go_ip_list("PodIP", &ips)),
            ));
        }
        for (i, ip) in ips.iter().enumerate() {
            if ips[..i].contains(ip) {
                errs.push((
                    format!("status.podIPs[{i}]"),
                    format!("Duplicate value: core.PodIP{{IP:{}}}", go_quote(ip)),
                ));
            }
        }
    }
    errs
}

/// `validateHostIPs`: the first is `hostIP`; each an IP; several none twice, one per family.
fn host_ips(status: &Value) -> Vec<FieldError> {
    let ips = ips(status, "hostIP", "hostIPs");
    let Some(first) = ips.first() else { return Vec::new() };
    let mut errs = Vec::new();
    if str_of(status, "hostIP") != first {
        errs.push((
            "status.hostIPs[0].ip".into(),
            format!("Invalid value: {}: must be equal to `hostIP`", go_quote(first)),
        ));
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip.parse::<IpAddr>().is_err() {
            errs.push((format!("status.hostIPs[{i}]"), format!("Invalid value: {}: {BAD_IP}", go_quote(ip))));
        }
    }
    if ips.len() > 1 {
        for (i, ip) in ips.iter().enumerate() {
            if ips[..i].contains(ip) {
                errs.push((
                    format!("status.hostIPs[{i}]"),
                    format!("Duplicate value: core.HostIP{{IP:{}}}", go_quote(ip)),
                ));
            }
        }
        if !dual_stack(&ips) || ips.len() > 2 {
            errs.push((
                "status.hostIPs".into(),
                format!("Invalid value: {}: {ONE_PER_FAMILY}", go_ip_list("HostIP", &ips)),
            ));
        }
    }
    errs
}
