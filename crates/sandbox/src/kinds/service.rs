//! v1 Service, as upstream's `pkg/registry/core/service` strategy and `ValidateService` in the
//! parts a user meets first: a cluster IP from the default range and the port defaults; ports
//! required (except for ExternalName and headless Services), each in 1–65535, named when there are
//! several; `clusterIP` immutable.

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use crate::resource::FieldError;

/// The next cluster IP, from the default service range 10.96.0.0/12 (10.96.0.1 is the
/// `kubernetes` Service's in a real cluster, so allocation starts above it).
fn next_cluster_ip() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(10);
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % (1 << 20);
    format!("10.{}.{}.{}", 96 + (n >> 16), (n >> 8) & 0xff, n & 0xff)
}

/// The defaults the API server fills in for a v1 Service.
pub fn default(svc: &mut Value) {
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else { return };
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

/// The Service rules a user meets first: ports are required (except for ExternalName and
/// headless Services), each in 1–65535, named when there are several; `clusterIP` is immutable.
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = new.get("spec").cloned().unwrap_or_default();
    let ports = spec.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    if ports.is_empty() && spec.get("type").and_then(Value::as_str) != Some("ExternalName") && !headless {
        errs.push(("spec.ports".into(), "Required value".into()));
    }
    for (i, p) in ports.iter().enumerate() {
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errs.push((
                format!("spec.ports[{i}].port"),
                format!("Invalid value: {port}: must be between 1 and 65535, inclusive"),
            ));
        }
        if ports.len() > 1 && p.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            errs.push((format!("spec.ports[{i}].name"), "Required value".into()));
        }
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
        assert_eq!(fields, ["spec.ports[0].port", "spec.ports[0].name"]);
    }
}
