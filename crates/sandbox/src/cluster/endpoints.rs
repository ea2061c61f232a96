//! The Endpoints and EndpointSlice controllers: each Service with a selector gets the addresses
//! of the pods it selects — ready ones as addresses, the others as not ready — with the
//! Service's ports resolved against each pod's containers (a named `targetPort` by the
//! container port of that name).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::api::{Api, controller_ref, phase, pod_ready};
use super::{Controller, Queue, log_failure};
use crate::object_meta::{is_deleting, meta_str};

const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGER: &str = "endpointslice-controller.k8s.io";
/// Endpoints per slice (the controller's `--max-endpoints-per-slice` default).
const PER_SLICE: usize = 100;

/// One subset being built: ready addresses, not-ready addresses, ports.
type Subset = (Vec<Value>, Vec<Value>, Vec<Value>);

/// One selected pod: where it is and how ready.
struct Member {
    pod: Arc<Value>,
    ip: String,
    ready: bool,
    terminating: bool,
    ports: Vec<Value>,
}

/// The services a queue entry names: one, or (with no name) every one in the namespace.
fn services(api: &Api<'_>, ns: &str, name: &str) -> Vec<Arc<Value>> {
    if name.is_empty() {
        api.list(api.defs.services, Some(ns))
    } else {
        api.get(api.defs.services, ns, name).into_iter().collect()
    }
}

/// The pods the service selects, with the service's ports resolved for each; `None` for a
/// service the controllers leave alone (no selector, `ExternalName`).
fn members(api: &Api<'_>, svc: &Value) -> Option<Vec<Member>> {
    let selector = svc.pointer("/spec/selector").and_then(Value::as_object).filter(|s| !s.is_empty())?;
    if svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return None;
    }
    let publish = svc.pointer("/spec/publishNotReadyAddresses") == Some(&Value::Bool(true));
    let mut out = Vec::new();
    for pod in api.list(api.defs.pods, Some(meta_str(svc, "namespace"))) {
        let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
        if !selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v)) {
            continue;
        }
        let ip = pod.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("").to_owned();
        if ip.is_empty() || matches!(phase(&pod), "Succeeded" | "Failed") {
            continue;
        }
        let ports = resolve_ports(svc, &pod);
        out.push(Member {
            ready: publish || pod_ready(&pod),
            terminating: is_deleting(&pod),
            ip,
            ports,
            pod,
        });
    }
    out.sort_by(|a, b| a.ip.cmp(&b.ip));
    Some(out)
}

/// The service's ports as the pod serves them (`podutil.FindPort`).
fn resolve_ports(svc: &Value, pod: &Value) -> Vec<Value> {
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    ports
        .iter()
        .filter_map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            let number = match &p["targetPort"] {
                Value::String(name) => pod
                    .pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .flat_map(|c| c["ports"].as_array().into_iter().flatten())
                    .find(|cp| {
                        cp["name"] == name.as_str() && cp["protocol"].as_str().unwrap_or("TCP") == protocol
                    })
                    .and_then(|cp| cp["containerPort"].as_i64())?,
                Value::Number(n) => n.as_i64()?,
                _ => p["port"].as_i64()?,
            };
            let mut out = json!({ "port": number, "protocol": protocol });
            if let Some(name) = p["name"].as_str().filter(|n| !n.is_empty()) {
                out["name"] = json!(name);
            }
            if let Some(app) = p.get("appProtocol") {
                out["appProtocol"] = app.clone();
            }
            Some(out)
        })
        .collect()
}

fn target_ref(pod: &Value) -> Value {
    json!({ "kind": "Pod", "namespace": meta_str(pod, "namespace"), "name": meta_str(pod, "name"), "uid": meta_str(pod, "uid") })
}

fn node_of(pod: &Value) -> Option<Value> {
    pod.pointer("/spec/nodeName").filter(|n| n.as_str().is_some_and(|s| !s.is_empty())).cloned()
}

/// The Endpoints controller: `<service>` Endpoints with one subset per set of resolved ports.
pub(crate) fn endpoints(api: &Api<'_>, queue: &Queue) {
    for (ns, name) in queue {
        for svc in services(api, ns, name) {
            let Some(members) = members(api, &svc) else { continue };
            let mut subsets: BTreeMap<String, Subset> = BTreeMap::new();
            for m in members.iter().filter(|m| !m.terminating && !m.ports.is_empty()) {
                let entry = subsets
                    .entry(json!(m.ports).to_string())
                    .or_insert_with(|| (Vec::new(), Vec::new(), m.ports.clone()));
                let mut address = json!({ "ip": m.ip, "targetRef": target_ref(&m.pod) });
                if let Some(n) = node_of(&m.pod) {
                    address["nodeName"] = n;
                }
                if m.ready { entry.0.push(address) } else { entry.1.push(address) }
            }
            let subsets: Vec<Value> = subsets
                .into_values()
                .map(|(ready, not_ready, ports)| {
                    let mut s = json!({ "ports": ports });
                    if !ready.is_empty() {
                        s["addresses"] = json!(ready);
                    }
                    if !not_ready.is_empty() {
                        s["notReadyAddresses"] = json!(not_ready);
                    }
                    s
                })
                .collect();
            let svc_name = meta_str(&svc, "name");
            let labels = svc.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
            let result = match api.get(api.defs.endpoints, ns, svc_name) {
                Some(current) => {
                    let same = current.get("subsets").cloned().unwrap_or_else(|| json!([])) == json!(subsets)
                        && current.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}))
                            == labels;
                    if same {
                        continue;
                    }
                    let mut copy = (*current).clone();
                    copy["subsets"] = json!(subsets);
                    crate::object_meta::meta_mut(&mut copy).insert("labels".into(), labels);
                    api.update(api.defs.endpoints, copy, "kube-controller-manager").map(drop)
                }
                None => {
                    let mut obj =
                        json!({ "metadata": { "name": svc_name, "namespace": ns, "labels": labels } });
                    if !subsets.is_empty() {
                        obj["subsets"] = json!(subsets);
                    }
                    api.create(api.defs.endpoints, ns, obj, "kube-controller-manager").map(drop)
                }
            };
            if let Err(e) = result {
                log_failure(Controller::Endpoint, svc_name, &e);
            }
        }
    }
}

/// The EndpointSlice controller: the service's endpoints in slices of at most 100, named
/// `<service>-<5 random>`, owned by the service.
pub(crate) fn slices(api: &Api<'_>, queue: &Queue) {
    for (ns, name) in queue {
        for svc in services(api, ns, name) {
            let Some(members) = members(api, &svc) else { continue };
            let ports =
                members.iter().find(|m| !m.ports.is_empty()).map(|m| m.ports.clone()).unwrap_or_default();
            let endpoints: Vec<Value> = members
                .iter()
                .map(|m| {
                    let mut e = json!({
                        "addresses": [m.ip],
                        "conditions": { "ready": m.ready && !m.terminating, "serving": m.ready, "terminating": m.terminating },
                        "targetRef": target_ref(&m.pod),
                    });
                    if let Some(n) = node_of(&m.pod) {
                        e["nodeName"] = n;
                    }
                    e
                })
                .collect();
            let chunks: Vec<Vec<Value>> = if endpoints.is_empty() {
                vec![Vec::new()]
            } else {
                endpoints.chunks(PER_SLICE).map(<[Value]>::to_vec).collect()
            };
            let mut labels: Map<String, Value> =
                svc.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
            labels.insert(SERVICE_NAME.into(), json!(meta_str(&svc, "name")));
            labels.insert(MANAGED_BY.into(), json!(MANAGER));
            let mut owned = api.owned(api.defs.slices, &svc);
            owned.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
            for (i, chunk) in chunks.iter().enumerate() {
                let body = json!({ "addressType": "IPv4", "endpoints": chunk, "ports": ports });
                let result = match owned.get(i) {
                    Some(current) => {
                        let same = ["addressType", "endpoints", "ports"]
                            .iter()
                            .all(|f| current.get(*f).cloned().unwrap_or(Value::Null) == body[*f])
                            && current.pointer("/metadata/labels") == Some(&Value::Object(labels.clone()));
                        if same {
                            continue;
                        }
                        let mut copy = (**current).clone();
                        for f in ["endpoints", "ports"] {
                            copy[f] = body[f].clone();
                        }
                        crate::object_meta::meta_mut(&mut copy)
                            .insert("labels".into(), Value::Object(labels.clone()));
                        api.update(api.defs.slices, copy, "kube-controller-manager").map(drop)
                    }
                    None => {
                        let mut obj = body.clone();
                        obj["apiVersion"] = json!("discovery.k8s.io/v1");
                        obj["kind"] = json!("EndpointSlice");
                        obj["metadata"] = json!({
                            "generateName": format!("{}-", meta_str(&svc, "name")),
                            "namespace": ns,
                            "labels": labels,
                            "ownerReferences": [controller_ref(api.defs.services, &svc)],
                        });
                        api.create(api.defs.slices, ns, obj, "kube-controller-manager").map(drop)
                    }
                };
                if let Err(e) = result {
                    log_failure(Controller::EndpointSlice, meta_str(&svc, "name"), &e);
                }
            }
            for extra in owned.iter().skip(chunks.len()) {
                if let Err(e) = api.delete(api.defs.slices, extra, None) {
                    log_failure(Controller::EndpointSlice, meta_str(extra, "name"), &e);
                }
            }
        }
    }
}
