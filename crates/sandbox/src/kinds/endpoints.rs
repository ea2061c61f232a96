//! v1 Endpoints and discovery.k8s.io/v1 EndpointSlices: the addresses and ports a Service's
//! pods answer on, validated as upstream's `ValidateEndpoints` and `ValidateEndpointSlice` in
//! the rules a writer of them meets first.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::status::FieldError;

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// A port's protocol: required, a known one.
fn protocol_errors(field: &str, protocol: Option<&Value>) -> Vec<FieldError> {
    match protocol.and_then(Value::as_str) {
        None | Some("") => vec![(field.to_owned(), "Required value".into())],
        Some(p) if !PROTOCOLS.contains(&p) => vec![crate::field_errors::not_supported(field, p, &PROTOCOLS)],
        Some(_) => Vec::new(),
    }
}

/// `validateEndpointPort`: a name (required when there are several) that is a DNS label, a
/// port in range, a known protocol, a qualified `appProtocol`.
fn endpoint_port_errors(p: &Value, require_name: bool, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match p.get("name").and_then(Value::as_str).unwrap_or("") {
        "" if require_name => errs.push((format!("{at}.name"), "Required value".into())),
        "" => {}
        name => errs.extend(crate::names::label_field(&format!("{at}.name"), name)),
    }
    errs.extend(crate::names::port_num_field(
        &format!("{at}.port"),
        p.get("port").and_then(Value::as_i64).unwrap_or(0),
    ));
    errs.extend(protocol_errors(&format!("{at}.protocol"), p.get("protocol")));
    if let Some(a) = p.get("appProtocol").and_then(Value::as_str) {
        errs.extend(crate::names::qualified_field(&format!("{at}.appProtocol"), a));
    }
    errs
}

/// `validateEndpointAddress`: an IP, a DNS-label hostname, a DNS-subdomain node name, and an
/// address that is not a special one.
fn endpoint_address_errors(a: &Value, at: &str) -> Vec<FieldError> {
    let ip = a.get("ip").and_then(Value::as_str).unwrap_or("");
    let mut errs = crate::netaddr::ip_errors(&format!("{at}.ip"), ip);
    if let Some(h) = a.get("hostname").and_then(Value::as_str).filter(|h| !h.is_empty()) {
        errs.extend(crate::names::label_field(&format!("{at}.hostname"), h));
    }
    if let Some(n) = a.get("nodeName").and_then(Value::as_str) {
        errs.extend(crate::names::subdomain_field(&format!("{at}.nodeName"), n));
    }
    errs.extend(crate::netaddr::non_special_ip_errors(&format!("{at}.ip"), ip));
    errs
}

/// v1 Endpoints' defaults: each port's protocol is TCP.
pub fn default_endpoints(ep: &mut Value) {
    for subset in ep.get_mut("subsets").and_then(Value::as_array_mut).into_iter().flatten() {
        default_ports(subset.get_mut("ports"), false);
    }
}

/// An EndpointSlice's defaults: each port named (empty) with protocol TCP, each endpoint's
/// conditions an object (Go writes the struct even when empty).
pub fn default_slice(slice: &mut Value) {
    default_ports(slice.get_mut("ports"), true);
    for e in slice.get_mut("endpoints").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(e) = e.as_object_mut() {
            e.entry("conditions").or_insert_with(|| json!({}));
        }
    }
}

fn default_ports(ports: Option<&mut Value>, named: bool) {
    for p in ports.and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
        if named {
            p.entry("name").or_insert_with(|| json!(""));
        }
        p.entry("protocol").or_insert_with(|| json!("TCP"));
    }
}

/// v1 Endpoints (`validateEndpointSubsets`): each subset has addresses, each a valid,
/// non-special IP with a DNS-label hostname and a node name; each port in range with a known
/// protocol, named when there are several.
pub fn validate_endpoints(ep: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, subset) in ep.get("subsets").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let none = |list: &str| subset.get(list).and_then(Value::as_array).is_none_or(Vec::is_empty);
        if none("addresses") && none("notReadyAddresses") {
            errs.push((
                format!("subsets[{i}]"),
                "Required value: must specify `addresses` or `notReadyAddresses`".into(),
            ));
        }
        for list in ["addresses", "notReadyAddresses"] {
            for (j, a) in subset.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
                errs.extend(endpoint_address_errors(a, &format!("subsets[{i}].{list}[{j}]")));
            }
        }
        let ports = subset.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
        for (j, p) in ports.iter().enumerate() {
            errs.extend(endpoint_port_errors(p, ports.len() > 1, &format!("subsets[{i}].ports[{j}]")));
        }
    }
    errs
}

/// The EndpointSlice strategy's rule for `metadata.generation`: anything but the metadata
/// changed (it has no spec), or its labels.
#[must_use]
pub fn slice_generation(new: &Value, old: &Value) -> bool {
    let body = |o: &Value| {
        let mut o = o.clone();
        if let Some(m) = o.as_object_mut() {
            m.remove("metadata");
        }
        o
    };
    body(new) != body(old) || new.pointer("/metadata/labels") != old.pointer("/metadata/labels")
}

/// `field.TooMany`'s message.
fn too_many(field: &str, n: usize, max: usize) -> FieldError {
    (field.to_owned(), format!("Too many: {n}: must have at most {max} items"))
}

/// discovery.k8s.io/v1 EndpointSlice (`ValidateEndpointSlice`): a known address type, which
/// never changes; at most 1000 endpoints, each with 1–100 addresses of that type (not special
/// ones), a node name, a hostname and zone hints; ports uniquely named with known protocols.
pub fn validate_slice(slice: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let kind = slice.get("addressType").and_then(Value::as_str).unwrap_or("");
    match kind {
        "" => errs.push(("addressType".into(), "Required value".into())),
        "IPv4" | "IPv6" | "FQDN" => {}
        other => {
            errs.push(crate::field_errors::not_supported("addressType", other, &["FQDN", "IPv4", "IPv6"]))
        }
    }
    errs.extend(slice_endpoint_errors(slice, kind));
    errs.extend(slice_port_errors(slice));
    if let Some(old) = old
        && old.get("addressType") != slice.get("addressType")
    {
        errs.push(("addressType".into(), format!("Invalid value: {kind:?}: field is immutable")));
    }
    errs
}

/// `validateEndpoints` of a slice.
fn slice_endpoint_errors(slice: &Value, kind: &str) -> Vec<FieldError> {
    let endpoints = slice.get("endpoints").and_then(Value::as_array).cloned().unwrap_or_default();
    if endpoints.len() > 1000 {
        return vec![too_many("endpoints", endpoints.len(), 1000)];
    }
    let mut errs = Vec::new();
    for (i, e) in endpoints.iter().enumerate() {
        let at = format!("endpoints[{i}]");
        let addresses = e.get("addresses").and_then(Value::as_array).cloned().unwrap_or_default();
        if addresses.is_empty() {
            errs.push((format!("{at}.addresses"), "Required value: must contain at least 1 address".into()));
        } else if addresses.len() > 100 {
            errs.push(too_many(&format!("{at}.addresses"), addresses.len(), 100));
        }
        for (j, a) in addresses.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            let field = format!("{at}.addresses[{j}]");
            let ip = crate::netaddr::parse_ip(a);
            let family_ok = match kind {
                "IPv4" => Some(matches!(ip, Some(IpAddr::V4(_)))),
                "IPv6" => Some(crate::netaddr::is_ipv6(a)),
                "FQDN" => {
                    errs.extend(crate::names::fqdn_errors(&field, a));
                    None
                }
                _ => None,
            };
            match family_ok {
                Some(false) => {
                    errs.push((field, format!("Invalid value: {a:?}: must be a valid {kind} address")))
                }
                Some(true) => errs.extend(crate::netaddr::non_special_ip_errors(&field, a)),
                None => {}
            }
        }
        if let Some(n) = e.get("nodeName").and_then(Value::as_str) {
            errs.extend(crate::names::subdomain_field(&format!("{at}.nodeName"), n));
        }
        let topology = e.get("deprecatedTopology");
        let count = topology.and_then(Value::as_object).map_or(0, serde_json::Map::len);
        if count > 16 {
            errs.push(too_many(&format!("{at}.deprecatedTopology"), count, 16));
        }
        errs.extend(crate::label_rules::label_map_errors(topology, &format!("{at}.deprecatedTopology")));
        if let Some(h) = e.get("hostname").and_then(Value::as_str) {
            errs.extend(crate::names::label_field(&format!("{at}.hostname"), h));
        }
        if let Some(hints) = e.get("hints").filter(|h| !h.is_null()) {
            errs.extend(hint_errors(hints, &format!("{at}.hints")));
        }
    }
    errs
}

/// `validateHints`: at most 8 zones, each named once by a label value.
fn hint_errors(hints: &Value, at: &str) -> Vec<FieldError> {
    let zones = hints.get("forZones").and_then(Value::as_array).cloned().unwrap_or_default();
    if zones.len() > 8 {
        return vec![too_many(&format!("{at}.forZones"), zones.len(), 8)];
    }
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, z) in zones.iter().enumerate() {
        let name = z.get("name").and_then(Value::as_str).unwrap_or("");
        let field = format!("{at}.forZones[{i}].name");
        if !seen.insert(name.to_owned()) {
            errs.push((field.clone(), format!("Duplicate value: {name:?}")));
        }
        errs.extend(crate::names::invalid(&field, name, crate::metadata::label_value_errors(name)));
    }
    errs
}

/// `validatePorts` of a slice: at most 20000, names DNS labels and unique (an unnamed port is
/// named ""), known protocols, qualified `appProtocol`s.
fn slice_port_errors(slice: &Value) -> Vec<FieldError> {
    let ports = slice.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    if ports.len() > 20000 {
        return vec![too_many("ports", ports.len(), 20000)];
    }
    let mut errs = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("ports[{i}]");
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            errs.extend(crate::names::label_field(&format!("{at}.name"), name));
        }
        if !names.insert(name.to_owned()) {
            errs.push((format!("{at}.name"), format!("Duplicate value: {name:?}")));
        }
        if let Some(n) = p.get("port").and_then(Value::as_i64) {
            errs.extend(crate::names::port_num_field(&format!("{at}.port"), n));
        }
        errs.extend(protocol_errors(&format!("{at}.protocol"), p.get("protocol")));
        if let Some(a) = p.get("appProtocol").and_then(Value::as_str) {
            errs.extend(crate::names::qualified_field(&format!("{at}.appProtocol"), a));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn addresses_and_ports_are_checked() {
        let ep = json!({ "subsets": [{ "addresses": [{ "ip": "10.0.0.1" }, { "ip": "nope" }], "ports": [{ "port": 0 }] }] });
        let fields: Vec<String> = validate_endpoints(&ep, None).into_iter().map(|e| e.0).collect();
        assert_eq!(
            fields,
            [
                "subsets[0].addresses[1].ip",
                "subsets[0].addresses[1].ip",
                "subsets[0].ports[0].port",
                "subsets[0].ports[0].protocol"
            ]
        );
        let special = json!({ "subsets": [{ "addresses": [{ "ip": "127.0.0.1" }] }] });
        assert_eq!(validate_endpoints(&special, None)[0].0, "subsets[0].addresses[0].ip");
        let slice = json!({ "addressType": "IPv4", "endpoints": [{ "addresses": ["::1"] }] });
        assert_eq!(validate_slice(&slice, None)[0].0, "endpoints[0].addresses[0]");
        let v6 = json!({ "addressType": "IPv6", "endpoints": [] });
        assert_eq!(validate_slice(&v6, Some(&slice))[0].0, "addressType");
    }
}
