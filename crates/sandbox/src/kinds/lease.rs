//! coordination.k8s.io/v1 Lease (`pkg/apis/coordination/validation/validation.go`,
//! `ValidateLeaseSpec`; `apimachinery/pkg/apis/meta/v1/micro_time.go` for the times). A PUT may
//! create one (`AllowCreateOnUpdate`, see [`crate::resource::BuiltIn::create_on_update`]).

use serde_json::Value;

use crate::status::FieldError;

/// The layout upstream parses and writes `MicroTime` with.
const LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";
const TIMES: [&str; 2] = ["acquireTime", "renewTime"];

/// Whether `s` has `MicroTime`'s shape: six fractional digits, then `Z` or an offset.
pub(crate) fn micro_time(s: &str) -> Option<jiff::Timestamp> {
    let b = s.as_bytes();
    let zone = s.get(26..)?;
    let shaped = b.len() >= 27
        && b[19] == b'.'
        && b[20..26].iter().all(u8::is_ascii_digit)
        && (zone == "Z"
            || (zone.len() == 6 && matches!(zone.as_bytes()[0], b'+' | b'-') && zone.as_bytes()[3] == b':'));
    if !shaped {
        return None;
    }
    s.parse().ok()
}

/// Decodes as the typed Lease, and its times as upstream's `MicroTime` does: a time without six
/// fractional digits does not decode (400).
///
/// # Errors
///
/// What does not decode, naming the value and the layout.
pub fn decode(lease: &Value) -> Result<(), String> {
    crate::kinds::decode_as::<k8s_openapi::api::coordination::v1::Lease>(lease)?;
    for f in TIMES {
        if let Some(v) = lease.pointer(&format!("/spec/{f}")).and_then(Value::as_str)
            && micro_time(v).is_none()
        {
            return Err(format!("spec.{f}: parsing time {v:?} as {LAYOUT:?}"));
        }
    }
    Ok(())
}

/// `MicroTime` as upstream writes it: in UTC, six fractional digits.
pub(crate) fn micro_time_string(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Times written back in UTC, as upstream stores and returns them; a Lease without a spec has an
/// empty one (`LeaseSpec` is a struct, not a pointer, in the Go type: it is always written).
pub fn default(lease: &mut Value) {
    if let Some(o) = lease.as_object_mut()
        && o.get("spec").is_none_or(Value::is_null)
    {
        o.insert("spec".into(), Value::Object(serde_json::Map::new()));
    }
    for f in TIMES {
        let Some(t) = lease.pointer(&format!("/spec/{f}")).and_then(Value::as_str).and_then(micro_time)
        else {
            continue;
        };
        lease["spec"][f] = Value::String(micro_time_string(t));
    }
}

/// Durations above zero, transitions not negative.
#[must_use]
pub fn validate(lease: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(d) = lease.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64).filter(|d| *d <= 0) {
        errs.push((
            "spec.leaseDurationSeconds".into(),
            format!("Invalid value: {d}: must be greater than 0"),
        ));
    }
    if let Some(t) = lease.pointer("/spec/leaseTransitions").and_then(Value::as_i64).filter(|t| *t < 0) {
        errs.push((
            "spec.leaseTransitions".into(),
            format!("Invalid value: {t}: must be greater than or equal to 0"),
        ));
    }
    errs
}
