//! Events, core/v1 and events.k8s.io/v1 (`pkg/apis/core/validation/events.go`,
//! `ValidateEventCreate`, `ValidateEventUpdate`). Both APIs share one storage; the rules differ by the API a client
//! writes through, and — as upstream — the fields are named as in the internal (core) type, so an
//! events.k8s.io client reads `involvedObject.namespace` for its `regarding.namespace`.

use serde_json::Value;

use crate::go_print::go_quote;
use crate::status::FieldError;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// Where the event's fields live in one API version.
struct Names {
    involved: &'static str,
    message: &'static str,
    /// The reporting controller's field (core/v1 calls it `reportingComponent`; errors name it
    /// `reportingController`, as the internal type does).
    reporting: &'static str,
}

const CORE: Names = Names { involved: "involvedObject", message: "message", reporting: "reportingComponent" };
const EVENTS_V1: Names = Names { involved: "regarding", message: "note", reporting: "reportingController" };

fn text<'a>(ev: &'a Value, field: &str) -> &'a str {
    ev.get(field).and_then(Value::as_str).unwrap_or("")
}

fn set(ev: &Value, field: &str) -> bool {
    ev.get(field).is_some_and(|v| !v.is_null())
}

/// The rules every Event passes, whichever API (`legacyValidateEvent`).
fn legacy(ev: &Value, n: &Names) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = crate::object_meta::meta_str(ev, "namespace");
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
        errs.extend(namespace_errors(ns));
        return errs;
    }
    if involved_ns.is_empty() && !matches!(ns, "default" | "kube-system") {
        errs.push(mismatch());
    }
    let required = |f: &str| (f.to_owned(), "Required value".to_owned());
    let too_long =
        |f: &str, n: usize| (f.to_owned(), format!("Invalid value: \"\": can have at most {n} characters"));
    let controller = text(ev, n.reporting);
    if controller.is_empty() {
        errs.push(required("reportingController"));
    }
    for why in crate::metadata::qualified_name_errors(controller) {
        errs.push((
            "reportingController".to_owned(),
            format!("Invalid value: {}: {why}", crate::go_print::go_quote(controller)),
        ));
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
    errs.extend(namespace_errors(ns));
    errs
}

/// The event's namespace is a DNS-1123 subdomain (the end of `legacyValidateEvent`).
fn namespace_errors(ns: &str) -> Vec<FieldError> {
    crate::metadata::check_subdomain(ns)
        .map(|why| {
            ("namespace".to_owned(), format!("Invalid value: {}: {why}", crate::go_print::go_quote(ns)))
        })
        .into_iter()
        .collect()
}

/// core/v1 Event: the legacy rules only, on create and update (backwards compatibility).
#[must_use]
pub fn validate_core(ev: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    legacy(ev, &CORE)
}

/// A series, when there is one, counts at least 2 and says when it was last seen
/// (`validateV1EventSeries`).
fn series_errors(ev: &Value) -> Vec<FieldError> {
    let Some(series) = ev.get("series").filter(|s| !s.is_null()) else { return Vec::new() };
    let mut errs = Vec::new();
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(("series.count".into(), "Invalid value: \"\": should be at least 2".into()));
    }
    if !set(series, "lastObservedTime") {
        errs.push(("series.lastObservedTime".into(), "Required value".into()));
    }
    errs
}

/// The fields an events.k8s.io/v1 update may not change, by their v1 name and the internal name
/// errors use (the series, and metadata, may change).
const IMMUTABLE: [(&str, &str); 13] = [
    ("regarding", "involvedObject"),
    ("reason", "reason"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingController", "reportingController"),
    ("reportingInstance", "reportingInstance"),
];

/// The legacy rules of an Event written through events.k8s.io/v1 (`legacyValidateEvent`), which
/// upstream checks before its metadata.
#[must_use]
pub fn legacy_events_v1(ev: &Value) -> Vec<FieldError> {
    legacy(ev, &EVENTS_V1)
}

/// events.k8s.io/v1 Event, beyond the legacy rules ([`legacy_events_v1`]) and the metadata, which
/// upstream checks first, in that order. Create: `eventTime` required, `type` Normal or Warning, a
/// valid series, and none of the deprecated fields set. Update: the series when it changed, and
/// everything else but metadata immutable.
#[must_use]
pub fn strict_events_v1(ev: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if let Some(old) = old {
        let mut errs = Vec::new();
        if ev.get("series") != old.get("series") {
            errs.extend(series_errors(ev));
        }
        let absent = |v: Option<&Value>| v.is_none_or(Value::is_null);
        for (field, internal) in IMMUTABLE {
            let (new, was) = (ev.get(field), old.get(field));
            if new != was && !(absent(new) && absent(was)) {
                let shown = immutable_value(field, new.unwrap_or(&Value::Null));
                errs.push((internal.into(), format!("Invalid value: {shown}: field is immutable")));
            }
        }
        return errs;
    }
    let mut errs = series_errors(ev);
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

/// A changed field's new value as `ValidateImmutableField`'s error prints the internal type's:
/// an object reference or event source by `%#v`, a time by its `String` method, a count bare, a
/// string quoted (an unset one as the zero value Go holds, a missing `related` as `"null"`).
fn immutable_value(field: &str, v: &Value) -> String {
    let text = |f: &str| go_quote(v.get(f).and_then(Value::as_str).unwrap_or(""));
    match field {
        "related" if v.is_null() => "\"null\"".to_owned(),
        "regarding" | "related" => format!(
            "core.ObjectReference{{Kind:{}, Namespace:{}, Name:{}, UID:{}, APIVersion:{}, ResourceVersion:{}, FieldPath:{}}}",
            text("kind"),
            text("namespace"),
            text("name"),
            text("uid"),
            text("apiVersion"),
            text("resourceVersion"),
            text("fieldPath")
        ),
        "deprecatedSource" => {
            format!("core.EventSource{{Component:{}, Host:{}}}", text("component"), text("host"))
        }
        "deprecatedFirstTimestamp" | "deprecatedLastTimestamp" | "eventTime" => {
            go_time(v.as_str().unwrap_or(""))
        }
        "deprecatedCount" => v.as_i64().unwrap_or(0).to_string(),
        _ => go_quote(v.as_str().unwrap_or("")),
    }
}

/// A `metav1.Time` or `MicroTime` as Go's `time.Time.String` writes it in UTC
/// (`2026-01-01 00:00:00.5 +0000 UTC`); the zero time when unset.
fn go_time(rfc3339: &str) -> String {
    let Ok(t) = rfc3339.parse::<jiff::Timestamp>() else {
        return "0001-01-01 00:00:00 +0000 UTC".to_owned();
    };
    let nanos = t.subsec_nanosecond();
    let fraction =
        if nanos == 0 { String::new() } else { format!(".{nanos:09}").trim_end_matches('0').to_owned() };
    format!("{}{fraction} +0000 UTC", t.strftime("%Y-%m-%d %H:%M:%S"))
}

/// How one API's Go type writes an Event's fields (`k8s.io/api/core/v1` and `events/v1`
/// `Event`): the `metav1.Time` fields, the struct-valued fields (written even when empty: a
/// struct is never omitted), the strings written even when empty, those left out when empty,
/// and the count left out when 0.
struct Shape {
    times: [&'static str; 2],
    structs: [&'static str; 2],
    always_strings: &'static [&'static str],
    omit_empty: &'static [&'static str],
    count: &'static str,
}

const CORE_SHAPE: Shape = Shape {
    times: ["firstTimestamp", "lastTimestamp"],
    structs: ["involvedObject", "source"],
    always_strings: &["reportingComponent", "reportingInstance"],
    omit_empty: &["reason", "message", "type", "action"],
    count: "count",
};

const EVENTS_V1_SHAPE: Shape = Shape {
    times: ["deprecatedFirstTimestamp", "deprecatedLastTimestamp"],
    structs: ["regarding", "deprecatedSource"],
    always_strings: &[],
    omit_empty: &["reportingController", "reportingInstance", "action", "reason", "note", "type"],
    count: "deprecatedCount",
};

/// `metav1.Time` decoded (RFC 3339, any fraction, any offset) and encoded again: UTC, whole
/// seconds (`Time.MarshalJSON` formats `time.RFC3339` of `UTC()`). `None` when it does not parse.
fn time_in_utc(s: &str) -> Option<String> {
    let t: jiff::Timestamp = s.parse().ok()?;
    Some(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// An Event as the Go type of its API writes it back: the times normalised (`Time` to the
/// second, `MicroTime` to the microsecond, both in UTC), a zero time as `null` (`omitempty` does
/// not leave a struct out), the struct fields as `{}` when absent, and the empty values that
/// `omitempty` drops dropped.
fn shape(ev: &mut Value, s: &Shape) {
    let Some(o) = ev.as_object_mut() else { return };
    for f in s.times {
        let t = o.get(f).and_then(Value::as_str).and_then(time_in_utc);
        match t {
            Some(t) => {
                o.insert(f.to_owned(), Value::String(t));
            }
            None if o.get(f).is_none_or(Value::is_null) => {
                o.insert(f.to_owned(), Value::Null);
            }
            None => {}
        }
    }
    let micro = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(crate::kinds::lease::micro_time)
            .map(|t| Value::String(crate::kinds::lease::micro_time_string(t)))
    };
    match micro(o.get("eventTime")) {
        Some(t) => {
            o.insert("eventTime".into(), t);
        }
        None if o.get("eventTime").is_none_or(Value::is_null) => {
            o.insert("eventTime".into(), Value::Null);
        }
        None => {}
    }
    if let Some(t) = micro(o.get("series").and_then(|s| s.get("lastObservedTime")))
        && let Some(series) = o.get_mut("series").and_then(Value::as_object_mut)
    {
        series.insert("lastObservedTime".into(), t);
    }
    for f in s.structs {
        if o.get(f).is_none_or(Value::is_null) {
            o.insert(f.to_owned(), Value::Object(serde_json::Map::new()));
        }
    }
    for f in s.always_strings {
        if o.get(*f).is_none_or(Value::is_null) {
            o.insert((*f).to_owned(), Value::String(String::new()));
        }
    }
    for f in s.omit_empty {
        if o.get(*f).is_some_and(|v| v.is_null() || v.as_str() == Some("")) {
            o.remove(*f);
        }
    }
    if o.get(s.count).is_some_and(|v| v.is_null() || v.as_i64() == Some(0)) {
        o.remove(s.count);
    }
}

/// A core/v1 Event as `k8s.io/api/core/v1.Event` writes it (also the stored form).
pub fn default_core(ev: &mut Value) {
    shape(ev, &CORE_SHAPE);
}

/// An events.k8s.io/v1 Event as `k8s.io/api/events/v1.Event` writes it.
pub fn default_events_v1(ev: &mut Value) {
    shape(ev, &EVENTS_V1_SHAPE);
}

/// The layouts `metav1.Time` and `metav1.MicroTime` parse with.
const TIME_LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
const MICRO_LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";

/// Decodes an Event's times as the Go type does: a `Time` is RFC 3339, a `MicroTime` has six
/// fractional digits; anything else does not decode (400).
fn decode_times(ev: &Value, times: [&str; 2]) -> Result<(), String> {
    let str_at = |p: &str| ev.pointer(p).and_then(Value::as_str);
    for f in times {
        if let Some(v) = str_at(&format!("/{f}"))
            && v.parse::<jiff::Timestamp>().is_err()
        {
            return Err(format!("{f}: parsing time {v:?} as {TIME_LAYOUT:?}"));
        }
    }
    for (p, f) in [("/eventTime", "eventTime"), ("/series/lastObservedTime", "series.lastObservedTime")] {
        if let Some(v) = str_at(p)
            && crate::kinds::lease::micro_time(v).is_none()
        {
            return Err(format!("{f}: parsing time {v:?} as {MICRO_LAYOUT:?}"));
        }
    }
    Ok(())
}

/// A core/v1 Event's times decoded as `k8s.io/api/core/v1.Event` decodes them.
///
/// # Errors
///
/// The time that does not parse, and the layout.
pub fn decode_core(ev: &Value) -> Result<(), String> {
    decode_times(ev, CORE_SHAPE.times)
}

/// An events.k8s.io/v1 Event's times decoded as `k8s.io/api/events/v1.Event` decodes them.
///
/// # Errors
///
/// The time that does not parse, and the layout.
pub fn decode_events_v1(ev: &Value) -> Result<(), String> {
    decode_times(ev, EVENTS_V1_SHAPE.times)
}

/// Core v1 Event ↔ events.k8s.io/v1 Event field names; stored in the core form.
const EVENT_RENAMES: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn rename_fields(mut v: Value, to_new: bool) -> Value {
    if let Some(o) = v.as_object_mut() {
        for (core, new) in EVENT_RENAMES {
            let (from, to) = if to_new { (core, new) } else { (new, core) };
            if let Some(x) = o.remove(from) {
                o.insert(to.to_owned(), x);
            }
        }
    }
    v
}

pub(crate) fn event_to_core(v: Value) -> Value {
    rename_fields(v, false)
}
pub(crate) fn event_from_core(v: Value) -> Value {
    rename_fields(v, true)
}

/// An events.k8s.io/v1 Event stored as the core/v1 type writes it (both APIs share one storage).
pub fn v1_to_storage(v: Value) -> Value {
    let mut core = event_to_core(v);
    default_core(&mut core);
    core
}
/// A stored Event as the events.k8s.io/v1 type writes it.
pub fn v1_from_storage(v: Value) -> Value {
    let mut new = event_from_core(v);
    default_events_v1(&mut new);
    new
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_round_trip_between_the_two_apis() {
        let new = json!({ "regarding": { "name": "web" }, "note": "hi", "reason": "Created", "reportingController": "c" });
        let core = event_to_core(new.clone());
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "hi");
        assert_eq!(event_from_core(core), new);
    }
}
