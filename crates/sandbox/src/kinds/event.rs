//! Events, core/v1 and events.k8s.io/v1 (`pkg/apis/core/validation/events.go`,
//! `ValidateEventCreate`). Both APIs share one storage; the rules differ by the API a client
//! writes through, and — as upstream — the fields are named as in the internal (core) type, so an
//! events.k8s.io client reads `involvedObject.namespace` for its `regarding.namespace`.

use serde_json::Value;

use crate::resource::FieldError;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// Where the event's fields live in one API version.
struct Names {
    involved: &'static str,
    message: &'static str,
    /// The field name errors use for the reporting controller (core/v1 says `reportingComponent`).
    reporting_field: &'static str,
}

const CORE: Names =
    Names { involved: "involvedObject", message: "message", reporting_field: "reportingComponent" };
const EVENTS_V1: Names =
    Names { involved: "regarding", message: "note", reporting_field: "reportingController" };

fn text<'a>(ev: &'a Value, field: &str) -> &'a str {
    ev.get(field).and_then(Value::as_str).unwrap_or("")
}

fn set(ev: &Value, field: &str) -> bool {
    ev.get(field).is_some_and(|v| !v.is_null())
}

/// The rules every Event passes, whichever API (`legacyValidateEvent`).
fn legacy(ev: &Value, n: &Names) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = crate::object::meta_str(ev, "namespace");
    let involved_ns = ev.pointer(&format!("/{}/namespace", n.involved)).and_then(Value::as_str).unwrap_or("");
    let mismatch = || {
        (
            "involvedObject.namespace".to_owned(),
            format!("Invalid value: {involved_ns:?}: does not match event.namespace"),
        )
    };
    if !set(ev, "eventTime") {
        if (involved_ns.is_empty() && !matches!(ns, "" | "default"))
            || (!involved_ns.is_empty() && ns != involved_ns)
        {
            errs.push(mismatch());
        }
        return errs;
    }
    if involved_ns.is_empty() && !matches!(ns, "default" | "kube-system") {
        errs.push(mismatch());
    }
    let required = |f: &str| (f.to_owned(), "Required value".to_owned());
    let too_long =
        |f: &str, n: usize| (f.to_owned(), format!("Invalid value: \"\": can have at most {n} characters"));
    if text(ev, "reportingController").is_empty() {
        errs.push(required(n.reporting_field));
    }
    let instance = text(ev, "reportingInstance");
    if instance.is_empty() {
        errs.push(required("reportingInstance"));
    } else if instance.len() > REPORTING_INSTANCE_LIMIT {
        errs.push(too_long("reportingInstance", REPORTING_INSTANCE_LIMIT));
    }
    let action = text(ev, "action");
    if action.is_empty() {
        errs.push(required("action"));
    } else if action.len() > ACTION_LIMIT {
        errs.push(too_long("action", ACTION_LIMIT));
    }
    let reason = text(ev, "reason");
    if reason.is_empty() {
        errs.push(required("reason"));
    } else if reason.len() > REASON_LIMIT {
        errs.push(too_long("reason", REASON_LIMIT));
    }
    if text(ev, n.message).len() > NOTE_LIMIT {
        errs.push(too_long("message", NOTE_LIMIT));
    }
    errs
}

/// core/v1 Event: the legacy rules only (backwards compatibility).
#[must_use]
pub fn validate_core(ev: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if old.is_some() {
        return Vec::new();
    }
    legacy(ev, &CORE)
}

/// events.k8s.io/v1 Event: the legacy rules, then the strict ones — `eventTime` required, `type`
/// Normal or Warning, and none of the deprecated fields set.
#[must_use]
pub fn validate_events_v1(ev: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if old.is_some() {
        return Vec::new();
    }
    let mut errs = legacy(ev, &EVENTS_V1);
    if !set(ev, "eventTime") {
        errs.push(("eventTime".into(), "Required value".into()));
    }
    let t = text(ev, "type");
    if t != "Normal" && t != "Warning" {
        errs.push(("type".into(), format!("Invalid value: \"\": has invalid value: {t}")));
    }
    for (field, internal) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
    ] {
        if ev.get(field).is_some_and(|v| !v.is_null() && v.as_i64() != Some(0)) {
            errs.push((internal.into(), "Invalid value: \"\": needs to be unset".into()));
        }
    }
    if ev
        .get("deprecatedSource")
        .and_then(Value::as_object)
        .is_some_and(|s| s.values().any(|v| v.as_str().is_some_and(|x| !x.is_empty())))
    {
        errs.push(("source".into(), "Invalid value: \"\": needs to be unset".into()));
    }
    errs
}
