//! v1 Endpoints and discovery.k8s.io/v1 EndpointSlices: the addresses and ports a Service's
//! pods answer on, validated as upstream's `ValidateEndpoints` and `ValidateEndpointSlice` in
//! the rules a writer of them meets first.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::status::FieldError;

const PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];

/// Each port in range with a known protocol; named when there are several and `named` says so.
fn port_errors(ports: &[Value], at: &str, named: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let field = format!("{at}[{i}]");
        if named && ports.len() > 1 && p.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            errs.push((format!("{field}.name"), "Required value".into()));
        }
        if let Some(n) = p.get("port").and_then(Value::as_i64)
            && !(1..=65535).contains(&n)
        {
            errs.push((
                format!("{field}.port"),
                format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
            ));
        }
        if let Some(proto) = p.get("protocol").and_then(Value::as_str)
            && !PROTOCOLS.contains(&proto)
        {
            errs.push((
                format!("{field}.protocol"),
                format!("Unsupported value: {proto:?}: supported values: \"SCTP\", \"TCP\", \"UDP\""),
            ));
        }
    }
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

/// v1 Endpoints: each address a valid IP, each port in range with a known protocol, named when
/// there are several.
pub fn validate_endpoints(ep: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, subset) in ep.get("subsets").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for list in ["addresses", "notReadyAddresses"] {
            for (j, a) in subset.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
                let ip = a.get("ip").and_then(Value::as_str).unwrap_or("");
                if ip.parse::<IpAddr>().is_err() {
                    // `validation.IsValidIP`, then `validateNonSpecialIP`: two causes.
                    let field = format!("subsets[{i}].{list}[{j}].ip");
                    errs.push((
                        field.clone(),
                        format!("Invalid value: {ip:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"),
                    ));
                    errs.push((field, format!("Invalid value: {ip:?}: must be a valid IP address")));
                }
            }
        }
        let ports = subset.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
        errs.extend(port_errors(&ports, &format!("subsets[{i}].ports"), true));
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

/// discovery.k8s.io/v1 EndpointSlice: a known address type, which never changes; each endpoint
/// has addresses of that type; ports in range.
pub fn validate_slice(slice: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let kind = slice.get("addressType").and_then(Value::as_str).unwrap_or("");
    match kind {
        "" => errs.push(("addressType".into(), "Required value".into())),
        "IPv4" | "IPv6" | "FQDN" => {}
        other => errs.push((
            "addressType".into(),
            format!("Unsupported value: {other:?}: supported values: \"FQDN\", \"IPv4\", \"IPv6\""),
        )),
    }
    for (i, e) in slice.get("endpoints").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let addresses = e.get("addresses").and_then(Value::as_array).cloned().unwrap_or_default();
        if addresses.is_empty() {
            errs.push((
                format!("endpoints[{i}].addresses"),
                "Required value: must contain at least 1 address".into(),
            ));
        }
        for (j, a) in addresses.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            let ok = match kind {
                "IPv4" => a.parse::<std::net::Ipv4Addr>().is_ok(),
                "IPv6" => a.parse::<std::net::Ipv6Addr>().is_ok(),
                _ => true,
            };
            if !ok {
                errs.push((
                    format!("endpoints[{i}].addresses[{j}]"),
                    format!("Invalid value: {a:?}: must be a valid {kind} address"),
                ));
            }
        }
    }
    let ports = slice.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    errs.extend(port_errors(&ports, "ports", false));
    if let Some(old) = old
        && old.get("addressType") != slice.get("addressType")
    {
        errs.push(("addressType".into(), format!("Invalid value: {kind:?}: field is immutable")));
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
            ["subsets[0].addresses[1].ip", "subsets[0].addresses[1].ip", "subsets[0].ports[0].port"]
        );
        let slice = json!({ "addressType": "IPv4", "endpoints": [{ "addresses": ["::1"] }] });
        assert_eq!(validate_slice(&slice, None)[0].0, "endpoints[0].addresses[0]");
        let v6 = json!({ "addressType": "IPv6", "endpoints": [] });
        assert_eq!(validate_slice(&v6, Some(&slice))[0].0, "addressType");
    }
}
