//! networking.k8s.io/v1 Ingresses, IngressClasses and NetworkPolicies: upstream's defaults
//! (`pkg/apis/networking/v1/defaults.go`) and the validation a user meets first.

use serde_json::{Value, json};

use crate::go_print::go_quote;
use crate::object_meta::set_default;
use crate::status::FieldError;

/// An Ingress has no spec defaults in v1 (a path's `pathType` is required); its status starts
/// with an empty load balancer, as Go writes the struct.
pub fn default_ingress(ingress: &mut Value) {
    if ingress.is_object() {
        let status = crate::object_meta::object_at(ingress, "status");
        status.entry("loadBalancer").or_insert_with(|| json!({}));
    }
}

/// An Ingress's rules: on create `ValidateIngressCreate` (the spec, and the class annotation
/// agreeing with `ingressClassName`); on an update `ValidateIngressUpdate` (the spec, with the
/// old object's invalid secret names and wildcard rules still let through); on a `/status` write
/// (the only write that changes the status) `ValidateIngressStatusUpdate`.
pub fn validate_ingress(ingress: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = ingress.get("spec").cloned().unwrap_or_default();
    match old {
        Some(old) if ingress.get("status") != old.get("status") => ingress_status_errors(ingress),
        Some(old) => {
            let opts = IngressOptions {
                allow_invalid_secret_name: old
                    .pointer("/spec/tls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|t| !secret_name_errors(t).is_empty()),
                allow_invalid_wildcard_host_rule: old
                    .pointer("/spec/rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|r| {
                        str_of(r, "host").contains('*')
                            && !rule_value_errors(r, "", &IngressOptions::default()).is_empty()
                    }),
            };
            ingress_spec_errors(&spec, &opts)
        }
        None => {
            let mut errs = ingress_spec_errors(&spec, &IngressOptions::default());
            let annotation = ingress
                .pointer("/metadata/annotations")
                .and_then(|a| a.get("kubernetes.io/ingress.class"))
                .and_then(Value::as_str);
            if let (Some(a), Some(class)) = (annotation, spec.get("ingressClassName").and_then(Value::as_str))
                && a != class
            {
                errs.push((
                    "annotations.kubernetes.io/ingress.class".into(),
                    format!(
                        "Invalid value: {}: must match `ingressClassName` when both are specified",
                        go_quote(a)
                    ),
                ));
            }
            errs
        }
    }
}

/// What an update lets through that a create does not (`IngressValidationOptions`).
#[derive(Default)]
struct IngressOptions {
    allow_invalid_secret_name: bool,
    allow_invalid_wildcard_host_rule: bool,
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `validateIngressSpec`: rules or a default backend; the backend, the rules, the TLS entries,
/// the class name.
fn ingress_spec_errors(spec: &Value, opts: &IngressOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = spec.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    let backend = spec.get("defaultBackend").filter(|b| !b.is_null());
    if rules.is_empty() && backend.is_none() {
        let shown = if spec.get("rules").is_some_and(|r| !r.is_null()) {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        errs.push((
            "spec".into(),
            format!("Invalid value: {shown}: either `defaultBackend` or `rules` must be specified"),
        ));
    }
    if let Some(b) = backend {
        errs.extend(backend_errors(b, "spec.defaultBackend"));
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("spec.rules[{i}]");
        let host = str_of(rule, "host");
        let mut wildcard = false;
        if !host.is_empty() {
            if crate::netaddr::parse_ip(host).is_some() {
                errs.push((
                    format!("{at}.host"),
                    format!("Invalid value: {}: must be a DNS name, not an IP address", go_quote(host)),
                ));
            }
            if host.contains('*') {
                errs.extend(crate::names::invalid(
                    &format!("{at}.host"),
                    host,
                    crate::names::wildcard_errors(host),
                ));
                wildcard = true;
            } else {
                errs.extend(crate::names::subdomain_field(&format!("{at}.host"), host));
            }
        }
        if !wildcard || !opts.allow_invalid_wildcard_host_rule {
            errs.extend(rule_value_errors(rule, &at, opts));
        }
    }
    for (i, tls) in spec.get("tls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("spec.tls[{i}]");
        for (j, host) in tls.get("hosts").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let host = host.as_str().unwrap_or("");
            let msgs = if host.contains('*') {
                crate::names::wildcard_errors(host)
            } else {
                crate::metadata::subdomain_errors(host)
            };
            errs.extend(crate::names::invalid(&format!("{at}.hosts[{j}]"), host, msgs));
        }
        if !opts.allow_invalid_secret_name {
            errs.extend(crate::names::invalid(
                &format!("{at}.secretName"),
                str_of(tls, "secretName"),
                secret_name_errors(tls),
            ));
        }
    }
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        errs.extend(crate::names::subdomain_field("spec.ingressClassName", class));
    }
    errs
}

/// Why a TLS entry's secret name is not one (none when it is empty).
fn secret_name_errors(tls: &Value) -> Vec<String> {
    let name = str_of(tls, "secretName");
    if name.is_empty() { Vec::new() } else { crate::metadata::subdomain_errors(name) }
}

/// `validateIngressRuleValue` / `validateHTTPIngressRuleValue`: an `http` rule has paths, each
/// valid.
fn rule_value_errors(rule: &Value, at: &str, opts: &IngressOptions) -> Vec<FieldError> {
    let _ = opts;
    let Some(http) = rule.get("http").filter(|h| !h.is_null()) else { return Vec::new() };
    let mut errs = Vec::new();
    let paths = http.get("paths").and_then(Value::as_array).cloned().unwrap_or_default();
    if paths.is_empty() {
        errs.push((format!("{at}.http.paths"), "Required value".into()));
    }
    for (j, path) in paths.iter().enumerate() {
        errs.extend(http_path_errors(path, &format!("{at}.http.paths[{j}]")));
    }
    errs
}

/// `validateHTTPIngressPath`: a type; for `Exact` and `Prefix` an absolute, clean path; for
/// `ImplementationSpecific` an absolute one when given; a backend.
fn http_path_errors(path: &Value, at: &str) -> Vec<FieldError> {
    let Some(ty) = path.get("pathType").and_then(Value::as_str) else {
        return vec![(format!("{at}.pathType"), "Required value: pathType must be specified".into())];
    };
    let mut errs = Vec::new();
    let p = str_of(path, "path");
    let field = format!("{at}.path");
    let bad = |why: String| (field.clone(), format!("Invalid value: {}: {why}", go_quote(p)));
    match ty {
        "Exact" | "Prefix" => {
            if !p.starts_with('/') {
                errs.push(bad("must be an absolute path".into()));
            }
            if !p.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if p.contains(seq) {
                        errs.push(bad(format!("must not contain '{seq}'")));
                    }
                }
                for suffix in ["/..", "/."] {
                    if p.ends_with(suffix) {
                        errs.push(bad(format!("cannot end with '{suffix}'")));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !p.is_empty() && !p.starts_with('/') {
                errs.push(bad("must be an absolute path".into()));
            }
        }
        other => errs.push(crate::field_errors::not_supported(
            format!("{at}.pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    errs.extend(backend_errors(path.get("backend").unwrap_or(&Value::Null), &format!("{at}.backend")));
    errs
}

/// `validateIngressBackend`: a resource or a service, not both; a service's DNS-1035 name and
/// one of a port name or number.
fn backend_errors(backend: &Value, at: &str) -> Vec<FieldError> {
    let resource = backend.get("resource").filter(|r| !r.is_null());
    let service = backend.get("service").filter(|s| !s.is_null());
    match (resource, service) {
        (Some(_), Some(_)) => {
            vec![(at.to_owned(), "Invalid value: \"\": cannot set both resource and service backends".into())]
        }
        (Some(r), None) => typed_reference_errors(r, &format!("{at}.resource")),
        (None, Some(s)) => {
            let mut errs = Vec::new();
            let name = str_of(s, "name");
            if name.is_empty() {
                errs.push((format!("{at}.service.name"), "Required value".into()));
            } else {
                errs.extend(crate::names::invalid(
                    &format!("{at}.service.name"),
                    name,
                    crate::metadata::dns1035_errors(name),
                ));
            }
            let port_name = s.pointer("/port/name").and_then(Value::as_str).unwrap_or("");
            let number = s.pointer("/port/number").and_then(Value::as_i64).unwrap_or(0);
            match (port_name.is_empty(), number == 0) {
                (false, false) => errs.push((
                    at.to_owned(),
                    "Invalid value: \"\": cannot set both port name & port number".into(),
                )),
                (false, true) => errs.extend(crate::names::invalid(
                    &format!("{at}.service.port.name"),
                    port_name,
                    crate::metadata::port_name_errors(port_name),
                )),
                (true, false) => {
                    errs.extend(crate::names::port_num_field(&format!("{at}.service.port.number"), number))
                }
                (true, true) => {
                    errs.push((at.to_owned(), "Required value: port name or number is required".into()))
                }
            }
            errs
        }
        (None, None) => {
            vec![(at.to_owned(), "Invalid value: \"\": resource or service backend is required".into())]
        }
    }
}

/// `validateIngressTypedLocalObjectReference`: a DNS-subdomain group, a kind and a name that
/// are path segments.
fn typed_reference_errors(r: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(g) = r.get("apiGroup").and_then(Value::as_str) {
        errs.extend(crate::names::subdomain_field(&format!("{at}.apiGroup"), g));
    }
    for key in ["kind", "name"] {
        let v = str_of(r, key);
        if v.is_empty() {
            errs.push((format!("{at}.{key}"), "Required value".into()));
        } else {
            errs.extend(crate::names::path_segment_field(&format!("{at}.{key}"), v));
        }
    }
    errs
}

/// `ValidateIngressLoadBalancerStatus`: each ingress point's IP an IP, its hostname a DNS name.
fn ingress_status_errors(ingress: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ing) in ingress
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("status.loadBalancer.ingress[{i}]");
        let ip = str_of(ing, "ip");
        if !ip.is_empty() {
            errs.extend(crate::netaddr::ip_errors(&format!("{at}.ip"), ip));
        }
        errs.extend(crate::kinds::service::hostname_errors(
            &format!("{at}.hostname"),
            str_of(ing, "hostname"),
        ));
    }
    errs
}

/// An IngressClass's defaults (`SetDefaults_IngressClass`): parameters are cluster-scoped unless
/// said otherwise.
pub fn default_ingress_class(class: &mut Value) {
    if let Some(p) = class.pointer_mut("/spec/parameters").and_then(Value::as_object_mut) {
        set_default(p, "scope", json!("Cluster"));
    }
}

/// An IngressClass's rules: on an update its controller is fixed (`validateIngressClassSpecUpdate`)
/// first; then `ValidateIngressClass`: the controller a domain-prefixed path of at most 250
/// bytes, the parameters a valid reference of a known scope.
pub fn validate_ingress_class(class: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let controller = class.pointer("/spec/controller").and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if let Some(old) = old
        && old.pointer("/spec/controller") != class.pointer("/spec/controller")
    {
        errs.push((
            "spec.controller".into(),
            format!("Invalid value: {}: field is immutable", go_quote(controller)),
        ));
    }
    if controller.len() > 250 {
        errs.push(("spec.controller".into(), "Too long: may not be more than 250 bytes".into()));
    }
    errs.extend(crate::names::domain_prefixed_path_errors("spec.controller", controller));
    if let Some(p) = class.pointer("/spec/parameters").filter(|p| !p.is_null()) {
        let at = "spec.parameters";
        errs.extend(typed_reference_errors(p, at));
        match p.get("scope").and_then(Value::as_str) {
            None => errs.push((format!("{at}.scope"), "Required value".into())),
            Some(scope @ ("Cluster" | "Namespace")) => {
                let ns = p.get("namespace").filter(|n| !n.is_null());
                if scope == "Namespace" {
                    match ns.and_then(Value::as_str) {
                        None => errs.push((
                            format!("{at}.namespace"),
                            "Required value: `parameters.scope` is set to 'Namespace'".into(),
                        )),
                        Some(n) => errs.extend(crate::names::label_field(&format!("{at}.namespace"), n)),
                    }
                } else if ns.is_some() {
                    errs.push((
                        format!("{at}.namespace"),
                        "Forbidden: `parameters.scope` is set to 'Cluster'".into(),
                    ));
                }
            }
            Some(other) => errs.push(crate::field_errors::not_supported(
                format!("{at}.scope"),
                other,
                &["Cluster", "Namespace"],
            )),
        }
    }
    errs
}

/// A NetworkPolicy's policy types follow its rules (`SetDefaults_NetworkPolicy`): `Ingress`
/// always, `Egress` when egress rules are given; ports are TCP unless said otherwise.
pub fn default_network_policy(np: &mut Value) {
    if !np.is_object() {
        return;
    }
    let spec = crate::object_meta::object_at(np, "spec");
    spec.entry("podSelector").or_insert_with(|| json!({}));
    for direction in ["ingress", "egress"] {
        for rule in spec.get_mut(direction).and_then(Value::as_array_mut).into_iter().flatten() {
            for port in rule.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = port.as_object_mut() {
                    set_default(p, "protocol", json!("TCP"));
                }
            }
        }
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
        let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
        spec.insert("policyTypes".into(), types);
    }
}

/// A NetworkPolicy's rules (`ValidateNetworkPolicySpec`, on create and update): its pod
/// selector, each rule's ports and peers, at most two known policy types.
pub fn validate_network_policy(np: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = np.get("spec").cloned().unwrap_or_default();
    let mut errs = crate::label_rules::label_selector_errors(spec.get("podSelector"), "spec.podSelector");
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in spec.get(direction).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let at = format!("spec.{direction}[{i}]");
            for (j, port) in rule.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
                errs.extend(policy_port_errors(port, &format!("{at}.ports[{j}]")));
            }
            for (j, peer) in rule.get(peers).and_then(Value::as_array).into_iter().flatten().enumerate() {
                errs.extend(peer_errors(peer, &format!("{at}.{peers}[{j}]")));
            }
        }
    }
    let types = spec.get("policyTypes").and_then(Value::as_array).cloned().unwrap_or_default();
    if types.len() > 2 {
        let shown: Vec<String> = types.iter().map(|t| go_quote(t.as_str().unwrap_or(""))).collect();
        errs.push((
            "spec.policyTypes".into(),
            format!(
                "Invalid value: []networking.PolicyType{{{}}}: may not specify more than two policyTypes",
                shown.join(", ")
            ),
        ));
        return errs;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if !matches!(t, "Ingress" | "Egress") {
            errs.push(crate::field_errors::not_supported(
                format!("spec.policyTypes[{i}]"),
                t,
                &["Ingress", "Egress"],
            ));
        }
    }
    errs
}

/// `ValidateNetworkPolicyPort`: a known protocol; a port number in range (and an end port in
/// range, not below it) or a port name (without an end port); no end port without a port.
fn policy_port_errors(port: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(p) = port.get("protocol").and_then(Value::as_str)
        && !matches!(p, "TCP" | "UDP" | "SCTP")
    {
        errs.push(crate::field_errors::not_supported(format!("{at}.protocol"), p, &["TCP", "UDP", "SCTP"]));
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    match port.get("port").filter(|p| !p.is_null()) {
        Some(Value::String(name)) => {
            if let Some(end) = end {
                errs.push((
                    format!("{at}.endPort"),
                    format!("Invalid value: {end}: may not be specified when `port` is non-numeric"),
                ));
            }
            errs.extend(crate::names::invalid(
                &format!("{at}.port"),
                name,
                crate::metadata::port_name_errors(name),
            ));
        }
        Some(p) => {
            let n = p.as_i64().unwrap_or(0);
            errs.extend(crate::names::port_num_field(&format!("{at}.port"), n));
            if let Some(end) = end {
                if end < n {
                    errs.push((
                        format!("{at}.endPort"),
                        format!("Invalid value: {end}: must be greater than or equal to `port`"),
                    ));
                }
                errs.extend(crate::names::port_num_field(&format!("{at}.endPort"), end));
            }
        }
        None => {
            if let Some(end) = end {
                errs.push((
                    format!("{at}.endPort"),
                    format!("Invalid value: {end}: may not be specified when `port` is not specified"),
                ));
            }
        }
    }
    errs
}

/// `ValidateNetworkPolicyPeer`: valid selectors or an IP block, at least one, an IP block alone.
fn peer_errors(peer: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(s) = peer.get(key).filter(|s| !s.is_null()) {
            count += 1;
            errs.extend(crate::label_rules::label_selector_errors(Some(s), &format!("{at}.{key}")));
        }
    }
    let block = peer.get("ipBlock").filter(|b| !b.is_null());
    if let Some(b) = block {
        count += 1;
        errs.extend(ip_block_errors(b, &format!("{at}.ipBlock")));
    }
    if count == 0 {
        errs.push((at.to_owned(), "Required value: must specify a peer".into()));
    } else if count > 1 && block.is_some() {
        errs.push((at.to_owned(), "Forbidden: may not specify both ipBlock and another peer".into()));
    }
    errs
}

/// `ValidateIPBlock`: a CIDR, and exceptions that are CIDRs strictly inside it.
fn ip_block_errors(block: &Value, at: &str) -> Vec<FieldError> {
    let cidr = str_of(block, "cidr");
    if cidr.is_empty() {
        return vec![(format!("{at}.cidr"), "Required value".into())];
    }
    let mut errs = crate::netaddr::cidr_errors(&format!("{at}.cidr"), cidr);
    let Some((net, len, v4)) = crate::netaddr::network(cidr) else { return errs };
    for (i, except) in block.get("except").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let except = except.as_str().unwrap_or("");
        let field = format!("{at}.except[{i}]");
        errs.extend(crate::netaddr::cidr_errors(&field, except));
        let Some((ex_net, ex_len, ex_v4)) = crate::netaddr::network(except) else { continue };
        let width: u8 = if v4 { 32 } else { 128 };
        let host = u32::from(width - len);
        let inside = v4 == ex_v4 && (if host >= 128 { true } else { (ex_net >> host) == (net >> host) });
        if !inside || len >= ex_len {
            errs.push((
                field,
                format!("Invalid value: {}: must be a strict subset of `cidr`", go_quote(except)),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_types_follow_the_rules() {
        let mut np = json!({ "spec": { "podSelector": {}, "egress": [{ "ports": [{ "port": 53 }] }] } });
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        assert!(validate_network_policy(&np, None).is_empty());
    }

    #[test]
    fn an_ingress_path_needs_a_type() {
        let ing = json!({ "spec": { "rules": [{ "http": { "paths": [{ "path": "/", "backend": { "service": { "name": "web", "port": { "number": 80 } } } }] } }] } });
        assert_eq!(validate_ingress(&ing, None)[0].0, "spec.rules[0].http.paths[0].pathType");
    }
}
