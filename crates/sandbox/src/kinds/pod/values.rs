//! How the container rules read a JSON value and word what is wrong with it, as Go's `field`
//! errors print a value: shared by [`super::containers`] and [`super::probes`].

use serde_json::Value;

/// A string field of `v`, `""` when absent.
pub(super) fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Whether `v` holds `key` with a value other than `null`.
pub(super) fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// `field.NotSupported`'s message.
pub(super) fn unsupported(value: &str, supported: &[&str]) -> String {
    crate::field_errors::not_supported("", value, supported).1
}

/// `field.Invalid`'s message with a string value.
pub(super) fn invalid(value: &str, why: &str) -> String {
    crate::field_errors::invalid_str("", value, why).1
}

/// A JSON number's text (a bad value as Go prints an integer).
pub(super) fn num(v: &Value) -> String {
    v.as_i64().map_or_else(|| v.to_string(), |n| n.to_string())
}

/// `IsValidPortNum`'s message for a number outside 1..65535, or `None`.
pub(super) fn port_num_error(n: i64) -> Option<String> {
    (!(1..=65535).contains(&n)).then(|| format!("Invalid value: {n}: must be between 1 and 65535, inclusive"))
}
