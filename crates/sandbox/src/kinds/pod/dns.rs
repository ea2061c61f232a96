//! A pod's names and DNS (`validateDNSPolicy`, `validatePodDNSConfig`, `ValidateHostAliases`,
//! and `ValidatePodSpec`'s hostname and subdomain checks).

use serde_json::Value;

use super::volumes::{dns_label, dns_subdomain};
use crate::field_errors::{go_string_slice, invalid_bare, invalid_str, not_supported, required};
use crate::status::FieldError;

/// The policies upstream knows, in its order.
const POLICIES: [&str; 4] = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).into_iter().flatten().map(|s| s.as_str().unwrap_or("")).collect()
}

/// `validateDNSPolicy`.
pub(crate) fn policy(spec: &Value, at: &str) -> Vec<FieldError> {
    match spec.get("dnsPolicy").and_then(Value::as_str) {
        Some("") => vec![required(format!("{at}.dnsPolicy"), "")],
        Some(p) if !POLICIES.contains(&p) => vec![not_supported(format!("{at}.dnsPolicy"), p, &POLICIES)],
        _ => Vec::new(),
    }
}

/// Whether `value` is an IPv4 address written with leading zeros, which Go's `ParseIPSloppy`
/// (what upstream parses with) takes and Rust's parser does not.
fn sloppy_ipv4(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            (1..=3).contains(&p.len())
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// `IsValidIP`: one cause when `ip` is not an address.
pub(crate) fn ip(value: &str, path: &str) -> Vec<FieldError> {
    if value.parse::<std::net::IpAddr>().is_ok() || sloppy_ipv4(value) {
        Vec::new()
    } else {
        vec![invalid_str(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
    }
}

/// `validatePodDNSConfig`: with policy `None` a config with a nameserver; at most 3 nameservers,
/// each an IP; at most 32 search domains of 2048 characters in all, each a subdomain (a trailing
/// dot allowed); each option named.
pub(crate) fn config(spec: &Value, at: &str) -> Vec<FieldError> {
    let path = format!("{at}.dnsConfig");
    let cfg = spec.get("dnsConfig").filter(|c| !c.is_null());
    if spec.get("dnsPolicy").and_then(Value::as_str) == Some("None") {
        let Some(cfg) = cfg else {
            return vec![required(path, "must provide `dnsConfig` when `dnsPolicy` is None")];
        };
        if strings(cfg.get("nameservers")).is_empty() {
            return vec![required(
                format!("{path}.nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )];
        }
    }
    let Some(cfg) = cfg else { return Vec::new() };
    let mut errs = Vec::new();
    let servers = strings(cfg.get("nameservers"));
    if servers.len() > 3 {
        errs.push(invalid_bare(
            format!("{path}.nameservers"),
            go_string_slice(&servers),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, s) in servers.iter().enumerate() {
        errs.extend(ip(s, &format!("{path}.nameservers[{i}]")));
    }
    let searches = strings(cfg.get("searches"));
    if searches.len() > 32 {
        errs.push(invalid_bare(
            format!("{path}.searches"),
            go_string_slice(&searches),
            "must not have more than 32 search paths",
        ));
    }
    if searches.join(" ").len() > 2048 {
        errs.push(invalid_bare(
            format!("{path}.searches"),
            go_string_slice(&searches),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, s) in searches.iter().enumerate() {
        let s = s.strip_suffix('.').unwrap_or(s);
        errs.extend(dns_subdomain(s, &format!("{path}.searches[{i}]")));
    }
    for (i, o) in cfg.get("options").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if o.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            errs.push(required(format!("{path}.options[{i}]"), "must not be empty"));
        }
    }
    errs
}

/// `ValidatePodSpec`'s hostname and subdomain: DNS labels when given.
pub(crate) fn host_names(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for f in ["hostname", "subdomain"] {
        if let Some(v) = spec.get(f).and_then(Value::as_str).filter(|v| !v.is_empty()) {
            errs.extend(dns_label(v, &format!("{at}.{f}")));
        }
    }
    errs
}

/// `ValidateHostAliases`: each an IP with subdomain host names.
pub(crate) fn host_aliases(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, a) in spec.get("hostAliases").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let path = format!("{at}.hostAliases[{i}]");
        errs.extend(ip(a.get("ip").and_then(Value::as_str).unwrap_or(""), &format!("{path}.ip")));
        for (j, h) in strings(a.get("hostnames")).iter().enumerate() {
            errs.extend(dns_subdomain(h, &format!("{path}.hostnames[{j}]")));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policy_none_wants_a_config_with_a_nameserver() {
        assert_eq!(config(&json!({ "dnsPolicy": "None" }), "spec")[0].0, "spec.dnsConfig");
        let spec = json!({ "dnsPolicy": "None", "dnsConfig": { "nameservers": ["1.1.1.1"], "searches": ["a.example.com."] } });
        assert!(config(&spec, "spec").is_empty());
        let spec = json!({ "dnsConfig": { "nameservers": ["bad"] } });
        assert_eq!(config(&spec, "spec")[0].0, "spec.dnsConfig.nameservers[0]");
        assert!(ip("010.0.0.1", "p").is_empty() && ip("::1", "p").is_empty());
        assert!(!ip("256.0.0.1", "p").is_empty() && !ip("1.2.3", "p").is_empty());
    }
}
