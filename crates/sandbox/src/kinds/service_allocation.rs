//! What a Service holds of the cluster's service IP range and node-port range, and what a write
//! of one is given or refused: upstream's service registry allocator (`alloc.go` of the service
//! storage, over its IP and port allocators), on a single-stack IPv4 cluster.
//!
//! The decisions are here; who holds what is the store's index (see `store/allocations.rs`),
//! which hands [`allocate`] a [`Pool`] under its lock, so two Services can never be given, or
//! ask for, the same address or node port. The ranges' own rules (an address outside the service
//! range, a port outside 30000–32767, one node port on two ports of a Service) are checked with
//! the Service's validation ([`super::service`]).
//!
//! Upstream allocates before it validates; the sandbox validates first and allocates under the
//! store's lock, so a request that both names a taken address and breaks a rule is answered with
//! the rule's error rather than the clash.

use serde_json::{Value, json};

use super::service::{needs_health_check, needs_node_ports};
use crate::status::ApiError;

/// One thing a Service can hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Held {
    /// A cluster IP.
    Ip(String),
    /// A node port (of a port or the health check).
    Port(i64),
}

/// The allocator a write draws from: what others hold, and the next free values.
pub(crate) trait Pool {
    /// Whether another Service holds `what`, or this write was already given it.
    fn taken(&self, what: &Held) -> bool;
    /// Marks `what` as given to this write.
    fn give(&mut self, what: Held);
    /// The next free cluster IP, in the range's dynamic band first; `None` when the range is full.
    fn next_ip(&mut self) -> Option<String>;
    /// The next free node port, in the range's dynamic band first; `None` when it is full.
    fn next_port(&mut self) -> Option<i64>;
}

fn spec_str<'a>(svc: &'a Value, field: &str) -> &'a str {
    svc.get("spec").and_then(|s| s.get(field)).and_then(Value::as_str).unwrap_or("")
}

fn node_port(p: &Value) -> i64 {
    p.get("nodePort").and_then(Value::as_i64).unwrap_or(0)
}

/// What a stored Service holds: its cluster IPs (not `None`), its ports' node ports and its
/// health-check node port.
pub(crate) fn held(svc: &Value) -> Vec<Held> {
    let mut out = Vec::new();
    if spec_str(svc, "type") != "ExternalName" {
        for ip in svc.pointer("/spec/clusterIPs").and_then(Value::as_array).into_iter().flatten() {
            if let Some(ip) = ip.as_str().filter(|ip| !ip.is_empty() && *ip != "None") {
                out.push(Held::Ip(ip.to_owned()));
            }
        }
    }
    for p in svc.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten() {
        let np = node_port(p);
        if np != 0 && !out.contains(&Held::Port(np)) {
            out.push(Held::Port(np));
        }
    }
    if let Some(h) = svc.pointer("/spec/healthCheckNodePort").and_then(Value::as_i64).filter(|h| *h != 0) {
        out.push(Held::Port(h));
    }
    out
}

fn invalid(name: &str, field: String, message: String) -> ApiError {
    ApiError::invalid("", "Service", name, &[(field, message)])
}

/// Gives a created Service (`old` is `None`) or an updated one what it needs and has not named —
/// a cluster IP, node ports, a health-check node port — and refuses what it names that another
/// Service holds, in upstream's order: the cluster IPs, then the ports' node ports, then the
/// health check's.
///
/// # Errors
///
/// 422 for a named cluster IP or node port another Service holds; 500 for a named health-check
/// node port another holds and for a full range, as upstream answers both.
pub(crate) fn allocate(svc: &mut Value, old: Option<&Value>, pool: &mut dyn Pool) -> Result<(), ApiError> {
    let name = svc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
    let ty = spec_str(svc, "type").to_owned();
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    let old_ty = old.map(|o| spec_str(o, "type"));
    // Addresses are given on a create and when an ExternalName Service takes another type; an
    // update otherwise keeps the ones it has (the rules make them immutable).
    if ty != "ExternalName" && old_ty.is_none_or(|t| t == "ExternalName") {
        let ips: Vec<String> = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|s| s.as_str().unwrap_or("").to_owned()).collect())
            .unwrap_or_default();
        let family = spec.get("ipFamilies").and_then(|f| f.get(0)).and_then(Value::as_str).unwrap_or("IPv4");
        match ips.first().map(String::as_str) {
            None | Some("") if family == "IPv4" => {
                let ip = pool.next_ip().ok_or_else(|| {
                    ApiError::internal_error("failed to allocate a serviceIP: range is full")
                })?;
                pool.give(Held::Ip(ip.clone()));
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
            }
            Some("None") | None | Some("") => {}
            Some(_) => {
                for ip in &ips {
                    let what = Held::Ip(ip.clone());
                    if pool.taken(&what) {
                        return Err(invalid(
                            &name,
                            "spec.clusterIPs".into(),
                            format!(
                                "Invalid value: {}: failed to allocate IP {ip}: provided IP is already allocated",
                                crate::netaddr::go_strings(Some(&ips))
                            ),
                        ));
                    }
                    pool.give(what);
                }
            }
        }
    }
    let spec_view = Value::Object(spec.clone());
    let old_ports: Vec<i64> = old
        .and_then(|o| o.pointer("/spec/ports"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(node_port)
        .collect();
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
        let allocates = needs_node_ports(&spec_view);
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        let all: Vec<(i64, i64)> = ports
            .as_deref()
            .into_iter()
            .flatten()
            .map(|p| (p.get("port").and_then(Value::as_i64).unwrap_or(0), node_port(p)))
            .collect();
        // Ports of one number share a node port: the one any of them names, else one given.
        let mut by_port: Vec<(i64, i64)> = Vec::new();
        for (i, p) in ports.into_iter().flatten().enumerate() {
            let (port, asked) = all[i];
            if asked == 0 && !allocates {
                continue;
            }
            let shared = by_port.iter().find(|(q, _)| *q == port).map(|s| s.1);
            let wanted = match (shared, asked) {
                (Some(s), 0) => s,
                (Some(s), n) if n == s => continue,
                (Some(_), n) => n,
                (None, 0) if old.is_none() => {
                    all.iter().find(|(q, n)| *q == port && *n != 0).map_or(0, |g| g.1)
                }
                (None, n) => n,
            };
            let np = if wanted == 0 {
                let np = pool.next_port().ok_or_else(|| {
                    ApiError::internal_error("failed to allocate a nodePort: range is full")
                })?;
                pool.give(Held::Port(np));
                np
            } else if Some(wanted) == shared || old_ports.contains(&wanted) {
                wanted
            } else {
                let what = Held::Port(wanted);
                if pool.taken(&what) {
                    return Err(invalid(
                        &name,
                        format!("spec.ports[{i}].nodePort"),
                        format!("Invalid value: {wanted}: provided port is already allocated"),
                    ));
                }
                pool.give(what);
                wanted
            };
            if shared.is_none() {
                by_port.push((port, np));
            }
            if let Some(p) = p.as_object_mut() {
                p.insert("nodePort".into(), json!(np));
            }
        }
    }
    if needs_health_check(&spec_view) {
        let old_check = old
            .filter(|o| o.get("spec").is_some_and(needs_health_check))
            .and_then(|o| o.pointer("/spec/healthCheckNodePort"));
        let asked = spec.get("healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0);
        if asked == 0 {
            let np = pool.next_port().ok_or_else(|| {
                ApiError::internal_error("failed to allocate a HealthCheck NodePort 0: range is full")
            })?;
            pool.give(Held::Port(np));
            spec.insert("healthCheckNodePort".into(), json!(np));
        } else if old_check.and_then(Value::as_i64) != Some(asked) {
            let what = Held::Port(asked);
            if pool.taken(&what) {
                return Err(ApiError::internal_error(&format!(
                    "failed to allocate requested HealthCheck NodePort {asked}: provided port is already allocated"
                )));
            }
            pool.give(what);
        }
    }
    Ok(())
}

/// The `n`th address of the service range 10.96.0.0/12, counting from its first.
pub(crate) fn service_ip(n: u32) -> String {
    format!("10.{}.{}.{}", 96 + ((n >> 16) & 0xf), (n >> 8) & 0xff, n & 0xff)
}

/// How many addresses the service range has, and where its dynamic band starts: upstream keeps
/// the lower part (`min(max(16, size/16), 256)` addresses) for Services that name theirs.
pub(crate) const IP_RANGE: (u32, u32) = (1 << 20, 256);

/// The node-port range 30000–32767's first port, its size, and where its dynamic band starts
/// (`min(max(16, size/32), 128)` ports are kept for Services that name theirs).
pub(crate) const PORT_RANGE: (i64, u32, u32) = (30000, 2768, 86);

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[derive(Default)]
    struct Free {
        others: HashSet<Held>,
        given: HashSet<Held>,
        ip: u32,
        port: i64,
    }

    impl Pool for Free {
        fn taken(&self, what: &Held) -> bool {
            self.others.contains(what) || self.given.contains(what)
        }
        fn give(&mut self, what: Held) {
            self.given.insert(what);
        }
        fn next_ip(&mut self) -> Option<String> {
            self.ip += 1;
            Some(service_ip(255 + self.ip))
        }
        fn next_port(&mut self) -> Option<i64> {
            self.port += 1;
            Some(30085 + self.port)
        }
    }

    fn node_port_service(ports: Value) -> Value {
        json!({ "metadata": { "name": "web" }, "spec": { "type": "NodePort", "ports": ports } })
    }

    #[test]
    fn a_service_is_given_an_address_and_node_ports_shared_by_port_number() {
        let mut pool = Free::default();
        let mut svc = node_port_service(json!([
            { "port": 80, "protocol": "TCP" }, { "port": 80, "protocol": "UDP" }, { "port": 443 }
        ]));
        allocate(&mut svc, None, &mut pool).unwrap();
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.1.0"]));
        let nps: Vec<i64> = svc["spec"]["ports"].as_array().unwrap().iter().map(node_port).collect();
        assert_eq!(nps, [30086, 30086, 30087]);
        assert_eq!(held(&svc).len(), 3);
    }

    #[test]
    fn what_another_service_holds_is_refused() {
        let mut pool = Free::default();
        pool.others.insert(Held::Port(30080));
        pool.others.insert(Held::Ip("10.96.0.10".into()));
        let mut svc = node_port_service(json!([{ "port": 80, "nodePort": 30080 }]));
        let err = allocate(&mut svc.clone(), None, &mut pool).unwrap_err();
        assert_eq!(err.code, 422);
        assert!(
            err.message
                .contains("spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated")
        );
        svc["spec"]["clusterIP"] = json!("10.96.0.10");
        svc["spec"]["clusterIPs"] = json!(["10.96.0.10"]);
        let err = allocate(&mut svc, None, &mut Free { others: pool.others.clone(), ..Free::default() })
            .unwrap_err();
        assert!(err.message.contains("failed to allocate IP 10.96.0.10: provided IP is already allocated"));
    }

    #[test]
    fn an_update_keeps_what_it_held_and_asks_only_for_new_ports() {
        let old = node_port_service(json!([{ "port": 80, "nodePort": 30080 }]));
        let mut pool = Free::default();
        // Held by this Service itself: not another's.
        let mut same = old.clone();
        same["spec"]["clusterIP"] = json!("10.96.0.10");
        allocate(&mut same, Some(&old), &mut pool).unwrap();
        pool.others.insert(Held::Port(30081));
        let mut moved = node_port_service(json!([{ "port": 80, "nodePort": 30081 }]));
        assert_eq!(allocate(&mut moved, Some(&old), &mut pool).unwrap_err().code, 422);
    }
}
