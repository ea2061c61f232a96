//! The shapes of names beyond object names, as apimachinery's `util/validation` words them, one
//! message per reason (each becomes a cause of its own): DNS-1123 labels and subdomains as field
//! values, port names, port numbers, wildcard and fully qualified domain names, domain-prefixed
//! paths.

use crate::go_print::go_quote;
use crate::status::FieldError;

use crate::metadata::{label_errors, port_name_errors, subdomain_errors};

/// `field.Invalid(field, value, msg)` for each of `msgs`.
#[must_use]
pub fn invalid(field: &str, value: &str, msgs: Vec<String>) -> Vec<FieldError> {
    msgs.into_iter().map(|m| crate::field_errors::invalid_str(field, value, &m)).collect()
}

/// `ValidateDNS1123Label` of a field's value.
#[must_use]
pub fn label_field(field: &str, value: &str) -> Vec<FieldError> {
    invalid(field, value, label_errors(value))
}

/// `ValidateDNS1123Subdomain` of a field's value.
#[must_use]
pub fn subdomain_field(field: &str, value: &str) -> Vec<FieldError> {
    invalid(field, value, subdomain_errors(value))
}

/// `ValidateQualifiedName` of a field's value.
#[must_use]
pub fn qualified_field(field: &str, value: &str) -> Vec<FieldError> {
    invalid(field, value, crate::metadata::qualified_name_errors(value))
}

/// `IsValidPortNum` of a field's number: in 1–65535.
#[must_use]
pub fn port_num_field(field: &str, n: i64) -> Vec<FieldError> {
    if (1..=65535).contains(&n) {
        Vec::new()
    } else {
        vec![(field.to_owned(), format!("Invalid value: {n}: must be between 1 and 65535, inclusive"))]
    }
}

/// `ValidatePortNumOrName`: a number in range or a port name.
#[must_use]
pub fn port_num_or_name(field: &str, v: &serde_json::Value) -> Vec<FieldError> {
    match v {
        serde_json::Value::String(s) => invalid(field, s, port_name_errors(s)),
        other => other.as_i64().map(|n| port_num_field(field, n)).unwrap_or_default(),
    }
}

const WILDCARD_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";

/// Why `v` is not a wildcard DNS-1123 subdomain (`IsWildcardDNS1123Subdomain`).
#[must_use]
pub fn wildcard_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    let ok = v.strip_prefix("*.").is_some_and(|rest| crate::metadata::check_subdomain(rest).is_none());
    if !ok {
        errs.push(crate::metadata::regex_error(
            WILDCARD_MSG,
            "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["*.example.com"],
        ));
    }
    errs
}

/// `IsFullyQualifiedDomainName`: required, at least two dot-separated segments, a DNS-1123
/// subdomain (the trailing dot of a rooted name dropped).
#[must_use]
pub fn fqdn_errors(field: &str, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![(field.to_owned(), "Required value".to_owned())];
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let mut errs = subdomain_field(field, name);
    if !errs.is_empty() {
        return errs;
    }
    if !name.contains('.') {
        errs.push((
            field.to_owned(),
            format!(
                "Invalid value: {}: should be a domain with at least two segments separated by dots",
                go_quote(name)
            ),
        ));
        return errs;
    }
    for label in name.split('.') {
        errs.extend(invalid(field, label, label_errors(label)));
    }
    errs
}

/// `IsDomainPrefixedPath`: a DNS-1123 subdomain, `/`, and a path of RFC 3986 characters.
#[must_use]
pub fn domain_prefixed_path_errors(field: &str, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![(field.to_owned(), "Required value".to_owned())];
    }
    let Some((host, path)) = value.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        return vec![(
            field.to_owned(),
            format!(
                "Invalid value: {}: must be a domain-prefixed path (such as \"acme.io/foo\")",
                go_quote(value)
            ),
        )];
    };
    let mut errs = subdomain_field(field, host);
    let ok = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !path.chars().all(ok) {
        errs.push((
            field.to_owned(),
            format!(
                "Invalid value: {}: Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
                go_quote(path)
            ),
        ));
    }
    errs
}

/// `ValidatePathSegmentName` of a field's value (no `.`, `..`, `/` or `%`).
#[must_use]
pub fn path_segment_field(field: &str, value: &str) -> Vec<FieldError> {
    if value == "." || value == ".." {
        return invalid(field, value, vec![format!("may not be '{value}'")]);
    }
    let msgs =
        ["/", "%"].iter().filter(|c| value.contains(**c)).map(|c| format!("may not contain '{c}'")).collect();
    invalid(field, value, msgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_and_domains() {
        assert_eq!(port_name_errors("8080-90"), ["must contain at least one letter (a-z)"]);
        assert_eq!(port_name_errors("a--b"), ["must not contain consecutive hyphens"]);
        assert!(wildcard_errors("*.example.com").is_empty());
        assert_eq!(wildcard_errors("*.*.example.com").len(), 1);
        assert_eq!(fqdn_errors("f", "localhost").len(), 1);
        assert!(fqdn_errors("f", "a.example.com.").is_empty());
        assert_eq!(label_errors(&"a".repeat(64)), ["must be no more than 63 characters"]);
        assert_eq!(domain_prefixed_path_errors("f", "example.com/in gress").len(), 1);
    }
}
