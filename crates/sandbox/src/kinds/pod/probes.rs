//! A container's lifecycle handlers and probes (`validateLifecycle`, `validateLivenessProbe`,
//! `validateReadinessProbe`, `validateStartupProbe` and the `validateHandler` they share).

use serde_json::Value;

use super::values::{invalid, num, port_num_error, str_of, unsupported};
use crate::metadata::port_name_errors;
use crate::status::FieldError;

/// A regular container's (or a sidecar's) lifecycle and probes, in upstream's order.
pub(super) fn container_probes(c: &Value, path: &str, grace: Option<i64>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(l) = c.get("lifecycle").filter(|v| !v.is_null()) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = l.get(hook).filter(|v| !v.is_null()) {
                errs.extend(handler(h, &LIFECYCLE_ACTIONS, grace, &format!("{path}.lifecycle.{hook}")));
            }
        }
    }
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = c.get(kind).filter(|v| !v.is_null()) else { continue };
        let at = format!("{path}.{kind}");
        errs.extend(probe(p, grace, &at));
        match kind {
            "readinessProbe" => {
                if let Some(t) = p.get("terminationGracePeriodSeconds").filter(|v| !v.is_null()) {
                    errs.push((
                        format!("{at}.terminationGracePeriodSeconds"),
                        format!("Invalid value: {}: must not be set for readinessProbes", num(t)),
                    ));
                }
            }
            _ => {
                let success = p.get("successThreshold").and_then(Value::as_i64).unwrap_or(0);
                if success != 1 {
                    errs.push((
                        format!("{at}.successThreshold"),
                        format!("Invalid value: {success}: must be 1"),
                    ));
                }
            }
        }
    }
    errs
}

/// The actions a probe may take, in upstream's order.
const PROBE_ACTIONS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "grpc"];
/// The actions a lifecycle hook may take, in upstream's order.
const LIFECYCLE_ACTIONS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "sleep"];

/// `validateProbe`: its handler, and its counts not negative.
fn probe(p: &Value, grace: Option<i64>, at: &str) -> Vec<FieldError> {
    let mut errs = handler(p, &PROBE_ACTIONS, grace, at);
    for f in
        ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"]
    {
        if let Some(n) = p.get(f).and_then(Value::as_i64)
            && n < 0
        {
            errs.push((
                format!("{at}.{f}"),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    }
    if let Some(n) = p.get("terminationGracePeriodSeconds").and_then(Value::as_i64)
        && n <= 0
    {
        errs.push((
            format!("{at}.terminationGracePeriodSeconds"),
            format!("Invalid value: {n}: must be greater than 0"),
        ));
    }
    errs
}

/// `validateHandler`: exactly one action, itself valid.
fn handler(h: &Value, actions: &[&str], grace: Option<i64>, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut found = false;
    for action in actions {
        let Some(a) = h.get(*action).filter(|v| !v.is_null()) else { continue };
        let path = format!("{at}.{action}");
        if found {
            errs.push((path, "Forbidden: may not specify more than 1 handler type".into()));
            continue;
        }
        found = true;
        errs.extend(match *action {
            "exec" => {
                if a.get("command").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                    vec![(format!("{path}.command"), "Required value".into())]
                } else {
                    Vec::new()
                }
            }
            "httpGet" => http_get(a, &path),
            "tcpSocket" => port_num_or_name(a.get("port").unwrap_or(&Value::Null), &format!("{path}.port")),
            "grpc" => {
                let n = a.get("port").and_then(Value::as_i64).unwrap_or(0);
                port_num_error(n).map(|m| (format!("{path}.port"), m)).into_iter().collect()
            }
            _ => sleep(a, grace, &path),
        });
    }
    if !found {
        errs.push((at.to_owned(), "Required value: must specify a handler type".into()));
    }
    errs
}

/// `validateSleepAction` (`PodLifecycleSleepActionAllowZero` off in v1.32): more than zero
/// seconds, no more than the grace period.
fn sleep(a: &Value, grace: Option<i64>, at: &str) -> Vec<FieldError> {
    let Some(grace) = grace else { return Vec::new() };
    let seconds = a.get("seconds").and_then(Value::as_i64).unwrap_or(0);
    if seconds > 0 && seconds <= grace {
        return Vec::new();
    }
    vec![(
        at.to_owned(),
        format!(
            "Invalid value: {seconds}: must be greater than 0 and less than terminationGracePeriodSeconds ({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
        ),
    )]
}

/// `validateHTTPGetAction`: a path, a port, a known scheme, header names as HTTP allows.
fn http_get(a: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_of(a, "path").is_empty() {
        errs.push((format!("{at}.path"), "Required value".into()));
    }
    errs.extend(port_num_or_name(a.get("port").unwrap_or(&Value::Null), &format!("{at}.port")));
    let scheme = str_of(a, "scheme");
    if !matches!(scheme, "HTTP" | "HTTPS") {
        errs.push((format!("{at}.scheme"), unsupported(scheme, &["HTTP", "HTTPS"])));
    }
    for header in a.get("httpHeaders").and_then(Value::as_array).into_iter().flatten() {
        let name = str_of(header, "name");
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            errs.push((
                format!("{at}.httpHeaders"),
                invalid(
                    name,
                    "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
                ),
            ));
        }
    }
    errs
}

/// `ValidatePortNumOrName`: a number in range, or an IANA service name.
fn port_num_or_name(port: &Value, at: &str) -> Vec<FieldError> {
    match port {
        Value::String(name) => {
            port_name_errors(name).iter().map(|m| (at.to_owned(), invalid(name, m))).collect()
        }
        other => {
            let n = other.as_i64().unwrap_or(0);
            port_num_error(n).map(|m| (at.to_owned(), m)).into_iter().collect()
        }
    }
}
