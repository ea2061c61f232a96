//! v1 Service, as upstream's `pkg/registry/core/service` strategy and `ValidateService` in the
//! parts a user meets first: a cluster IP from the default range (kept by an update that leaves it
//! out) and the port defaults; ports required (except for ExternalName and headless Services),
//! each in 1–65535 with a known protocol and a target port in range, named when there are
//! several; a known type; `clusterIP` immutable.

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use crate::status::FieldError;

/// The next cluster IP, from the default service range 10.96.0.0/12 (10.96.0.1 is the
/// `kubernetes` Service's in a real cluster, so allocation starts above it).
fn next_cluster_ip() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(10);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % (1 << 20);
    format!("10.{}.{}.{}", 96 + (n >> 16), (n >> 8) & 0xff, n & 0xff)
}

/// The defaults the API server fills in for a v1 Service.
pub fn default(svc: &mut Value) {
    // A Go Service always has a spec to default, given or not.
    let Some(spec) =
        svc.as_object_mut().and_then(|o| o.entry("spec").or_insert_with(|| json!({})).as_object_mut())
    else {
        return;
    };
    let ty = spec.entry("type").or_insert_with(|| json!("ClusterIP")).as_str().unwrap_or("").to_owned();
    spec.entry("sessionAffinity").or_insert_with(|| json!("None"));
    if ty != "ExternalName" {
        if spec.get("clusterIP").is_none_or(|ip| ip.as_str().is_none_or(str::is_empty)) {
            spec.insert("clusterIP".into(), json!(next_cluster_ip()));
        }
        let ip = spec["clusterIP"].clone();
        spec.entry("clusterIPs").or_insert_with(|| json!([ip]));
        spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
        spec.entry("ipFamilyPolicy").or_insert_with(|| json!("SingleStack"));
        spec.entry("internalTrafficPolicy").or_insert_with(|| json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            p.entry("protocol").or_insert_with(|| json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                p.entry("targetPort").or_insert(port);
            }
        }
    }
    let status = svc.as_object_mut().expect("an object").entry("status").or_insert_with(|| json!({}));
    if let Some(s) = status.as_object_mut() {
        s.entry("loadBalancer").or_insert_with(|| json!({}));
    }
}

/// An update keeps what the old Service was allocated when the new one leaves it out, as
/// upstream's service storage does before validating (`patchAllocatedValues`): its cluster IPs,
/// when both need one.
pub fn prepare_update(new: &mut Value, old: &Value) {
    let needs_ip = |s: &Value| s.pointer("/spec/type").and_then(Value::as_str) != Some("ExternalName");
    if !needs_ip(new) || !needs_ip(old) {
        return;
    }
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let empty = |v: Option<&Value>| v.is_none_or(|ip| ip.as_str().is_some_and(str::is_empty) || ip.is_null());
    let no_ips = |v: Option<&Value>| v.is_none_or(|ips| ips.as_array().is_none_or(Vec::is_empty));
    if empty(spec.get("clusterIP")) && no_ips(spec.get("clusterIPs")) {
        for f in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old.pointer(&format!("/spec/{f}")) {
                spec.insert(f.into(), v.clone());
            }
        }
    }
}

/// The types a Service may have (`supportedServiceType`, sorted).
const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// The Service rules a user meets first, in upstream's order (`ValidateService`): ports are
/// required (except for ExternalName and headless Services); each is named (when there are
/// several) by a unique DNS label, in 1–65535, of a known protocol, with a target port in range;
/// the type is a known one; `clusterIP` is immutable.
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = new.get("spec").cloned().unwrap_or_default();
    let ports = spec.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("");
    if ports.is_empty() && ty != "ExternalName" && !headless {
        errs.push(("spec.ports".into(), "Required value".into()));
    }
    let in_range = |n: i64| (1..=65535).contains(&n);
    let mut names = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        match p.get("name").and_then(Value::as_str).unwrap_or("") {
            "" if ports.len() > 1 => errs.push((format!("{at}.name"), "Required value".into())),
            "" => {}
            name => {
                if let Some(why) = crate::metadata::check_label(name) {
                    errs.push((format!("{at}.name"), format!("Invalid value: {name:?}: {why}")));
                }
                if !names.insert(name.to_owned()) {
                    errs.push((format!("{at}.name"), format!("Duplicate value: {name:?}")));
                }
            }
        }
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !in_range(port) {
            errs.push((
                format!("{at}.port"),
                format!("Invalid value: {port}: must be between 1 and 65535, inclusive"),
            ));
        }
        match p.get("protocol").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push((format!("{at}.protocol"), "Required value".into())),
            "SCTP" | "TCP" | "UDP" => {}
            other => errs.push((
                format!("{at}.protocol"),
                format!("Unsupported value: {other:?}: supported values: \"SCTP\", \"TCP\", \"UDP\""),
            )),
        }
        if let Some(target) = p.get("targetPort").and_then(Value::as_i64).filter(|t| !in_range(*t)) {
            errs.push((
                format!("{at}.targetPort"),
                format!("Invalid value: {target}: must be between 1 and 65535, inclusive"),
            ));
        }
    }
    if ty.is_empty() {
        errs.push(("spec.type".into(), "Required value".into()));
    } else if !TYPES.contains(&ty) {
        let supported: Vec<String> = TYPES.iter().map(|t| format!("{t:?}")).collect();
        errs.push((
            "spec.type".into(),
            format!("Unsupported value: {ty:?}: supported values: {}", supported.join(", ")),
        ));
    }
    if let Some(old_ip) = old.and_then(|o| o.pointer("/spec/clusterIP")).filter(|ip| !ip.is_null())
        && spec.get("clusterIP").is_some_and(|ip| ip != old_ip)
    {
        errs.push(("spec.clusterIP".into(), "Invalid value: field is immutable".into()));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_get_an_ip_and_port_defaults() {
        let mut svc = json!({ "spec": { "ports": [{ "port": 8080 }] } });
        default(&mut svc);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert!(svc["spec"]["clusterIP"].as_str().unwrap().starts_with("10.96."));
        assert_eq!(svc["spec"]["ports"][0], json!({ "port": 8080, "protocol": "TCP", "targetPort": 8080 }));
        assert!(validate(&svc, None).is_empty());
        let mut moved = svc.clone();
        moved["spec"]["clusterIP"] = json!("10.0.0.1");
        assert_eq!(validate(&moved, Some(&svc))[0].0, "spec.clusterIP");
        let errs =
            validate(&json!({ "spec": { "ports": [{ "port": 0 }, { "port": 1, "name": "a" }] } }), None);
        let fields: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.ports[0].name",
                "spec.ports[0].port",
                "spec.ports[0].protocol",
                "spec.ports[1].protocol",
                "spec.type"
            ]
        );
        // An update that leaves the cluster IP out keeps the allocated one.
        let mut update = svc.clone();
        update["spec"].as_object_mut().unwrap().remove("clusterIP");
        update["spec"].as_object_mut().unwrap().remove("clusterIPs");
        prepare_update(&mut update, &svc);
        default(&mut update);
        assert!(validate(&update, Some(&svc)).is_empty());
        assert_eq!(update["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    }
}
