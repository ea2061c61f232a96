//! The types whose JSON is not their message's fields, both ways: times, durations,
//! int-or-strings, quantities, embedded JSON, a CRD schema's either-or values and Go slice types
//! wrapped in a message. Each is written as its Go type's `Marshal` and `MarshalJSON` write it,
//! and an unset one as Go writes its zero value.

use serde_json::Value;

use super::Error;
use super::schema::Special;
use super::wire::{put_bytes, put_uint};

/// A special message's JSON from the fields [`decode`](super::decode) read of it (`empty`: it
/// had no bytes at all). Embedded JSON is read there, where an embedded object can be decoded.
pub(super) fn from_fields(special: Special, empty: bool, fields: &[(u32, Value)]) -> Value {
    let get = |n: u32| fields.iter().rev().find(|(k, _)| *k == n).map(|(_, v)| v);
    let all = |n: u32| fields.iter().filter(move |(k, _)| *k == n).map(|(_, v)| v.clone());
    let either = |single: u32, many: u32| {
        let list: Vec<Value> = all(many).collect();
        if list.is_empty() { get(single).cloned().unwrap_or(Value::Null) } else { Value::Array(list) }
    };
    match special {
        // An unset time is written as an empty message, and Go's JSON shows it as null.
        Special::Time | Special::MicroTime if empty => Value::Null,
        Special::Time | Special::MicroTime => {
            let seconds = get(1).and_then(Value::as_i64).unwrap_or(0);
            let nanos = get(2).and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok()).unwrap_or(0);
            // A time past what RFC 3339 writes (Go's would fail to marshal it) reads as unset.
            jiff::Timestamp::new(seconds, nanos).map_or(Value::Null, |t| {
                Value::String(if special == Special::Time {
                    crate::object_meta::rfc3339(t)
                } else {
                    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
                })
            })
        }
        Special::Duration => Value::String(go_duration(get(1).and_then(Value::as_i64).unwrap_or(0))),
        Special::IntOrString => {
            if get(1).and_then(Value::as_i64) == Some(1) {
                get(3).cloned().unwrap_or_else(|| Value::String(String::new()))
            } else {
                get(2).cloned().unwrap_or_else(|| Value::from(0))
            }
        }
        Special::Quantity => get(1).cloned().unwrap_or_else(|| Value::String("0".into())),
        Special::RawJson => unreachable!("embedded JSON is read by decode"),
        Special::SchemaOrArray => either(1, 2),
        Special::SchemaOrBool => match get(2) {
            Some(schema) => schema.clone(),
            None => Value::Bool(get(1).and_then(Value::as_bool).unwrap_or(false)),
        },
        Special::SchemaOrStringArray => either(1, 2),
        Special::Wrapper => Value::Array(all(1).collect()),
    }
}

/// Writes field `n` of a message with a value, into a buffer.
pub(super) type WriteField<'a> = dyn FnMut(u32, &Value, &mut Vec<u8>) -> Result<(), Error> + 'a;

/// Writes a special message's body from its JSON (null: the Go zero value).
///
/// `nested(n, value, out)` writes field `n` of the message, whatever its type, as
/// [`encode`](super::encode) writes any field.
pub(super) fn encode(
    special: Special,
    v: &Value,
    out: &mut Vec<u8>,
    nested: &mut WriteField<'_>,
) -> Result<(), Error> {
    match special {
        Special::Time | Special::MicroTime => match v {
            Value::Null => {}
            Value::String(text) => {
                let t: jiff::Timestamp = text.parse().map_err(|_| Error::mismatch(v, "an RFC 3339 time"))?;
                put_uint(out, 1, t.as_second().cast_unsigned());
                put_uint(out, 2, i64::from(t.subsec_nanosecond()).cast_unsigned());
            }
            _ => return Err(Error::mismatch(v, "an RFC 3339 time")),
        },
        Special::Duration => {
            let nanos = match v {
                Value::Null => 0,
                Value::String(text) => {
                    parse_go_duration(text).ok_or_else(|| Error::mismatch(v, "a duration"))?
                }
                _ => return Err(Error::mismatch(v, "a duration")),
            };
            put_uint(out, 1, nanos.cast_unsigned());
        }
        Special::IntOrString => {
            let (kind, int, text) = match v {
                Value::Null => (0, 0, ""),
                Value::String(t) => (1, 0, t.as_str()),
                Value::Number(n) => {
                    (0, n.as_i64().ok_or_else(|| Error::mismatch(v, "an int or a string"))?, "")
                }
                _ => return Err(Error::mismatch(v, "an int or a string")),
            };
            put_uint(out, 1, kind);
            put_uint(out, 2, int.cast_unsigned());
            put_bytes(out, 3, text.as_bytes());
        }
        Special::Quantity => {
            let text = match v {
                Value::Null => "0".to_owned(),
                Value::String(t) => t.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(Error::mismatch(v, "a quantity")),
            };
            put_bytes(out, 1, text.as_bytes());
        }
        Special::RawJson => {
            if !v.is_null() {
                let bytes =
                    serde_json::to_vec(v).map_err(|_| Error::Malformed("embedded JSON cannot be written"))?;
                put_bytes(out, 1, &bytes);
            }
        }
        Special::SchemaOrArray | Special::SchemaOrStringArray => match v {
            Value::Null => {}
            Value::Object(_) => nested(1, v, out)?,
            Value::Array(items) => {
                items.iter().try_for_each(|item| nested(2, item, out))?;
            }
            _ => return Err(Error::mismatch(v, "a schema or a list")),
        },
        Special::SchemaOrBool => {
            let allows = match v {
                Value::Bool(b) => *b,
                Value::Object(_) => true,
                Value::Null => false,
                _ => return Err(Error::mismatch(v, "a schema or a bool")),
            };
            put_uint(out, 1, u64::from(allows));
            if v.is_object() {
                nested(2, v, out)?;
            }
        }
        Special::Wrapper => match v {
            Value::Null => {}
            Value::Array(items) => {
                items.iter().try_for_each(|item| nested(1, item, out))?;
            }
            _ => return Err(Error::mismatch(v, "a list")),
        },
    }
    Ok(())
}

/// Go's `time.Duration.String()`: `0s`, `1.5s`, `2h3m4s`, `300ms`, `1µs`.
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let fraction = |value: u64, unit: u64| {
        let (whole, rest) = (value / unit, value % unit);
        if rest == 0 {
            whole.to_string()
        } else {
            let digits = unit.ilog10() as usize;
            let text = format!("{whole}.{rest:0digits$}");
            text.trim_end_matches('0').to_owned()
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", fraction(n, 1_000));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(n, 1_000_000));
    }
    let (hours, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let seconds = fraction(rest, 1_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// Go's `time.ParseDuration`, to nanoseconds.
fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += number * scale;
    }
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_and_read_as_go_writes_them() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (-2_000_000_000, "-2s"),
        ] {
            assert_eq!(go_duration(nanos), text);
            assert_eq!(parse_go_duration(text), Some(nanos), "{text}");
        }
        assert_eq!(parse_go_duration("1h"), Some(3_600_000_000_000));
        assert_eq!(parse_go_duration("5x"), None);
        assert_eq!(parse_go_duration(""), None);
    }
}
