//! The causes of a 422, worded as apimachinery's `field.Error` prints each type
//! (`k8s.io/apimachinery/pkg/util/validation/field`): `Required value`, `Invalid value: …`,
//! `Unsupported value: …`, `Forbidden: …`, `Duplicate value: …`, `Too long: …`. A bad value is
//! printed as `ErrorBody` prints it (strings quoted as Go quotes them, numbers and booleans bare).

use serde_json::Value;

use crate::go_print::{bad_value, go_quote};
use crate::status::FieldError;

/// `field.Required`: the field is missing (or empty), with an optional detail.
pub(crate) fn required(path: impl Into<String>, detail: &str) -> FieldError {
    let message =
        if detail.is_empty() { "Required value".to_owned() } else { format!("Required value: {detail}") };
    (path.into(), message)
}

/// `field.Forbidden`.
pub(crate) fn forbidden(path: impl Into<String>, detail: &str) -> FieldError {
    (path.into(), format!("Forbidden: {detail}"))
}

/// `field.Invalid` of a JSON value.
pub(crate) fn invalid(path: impl Into<String>, value: &Value, detail: &str) -> FieldError {
    (path.into(), format!("Invalid value: {}: {detail}", bad_value(value)))
}

/// `field.Invalid` of a string.
pub(crate) fn invalid_str(path: impl Into<String>, value: &str, detail: &str) -> FieldError {
    (path.into(), format!("Invalid value: {}: {detail}", go_quote(value)))
}

/// `field.Invalid` of a value Go prints bare (an integer, or a type with a `String` method such
/// as a resource name).
pub(crate) fn invalid_bare(
    path: impl Into<String>,
    value: impl std::fmt::Display,
    detail: &str,
) -> FieldError {
    (path.into(), format!("Invalid value: {value}: {detail}"))
}

/// `field.NotSupported` of a string, with the values that are.
pub(crate) fn not_supported(path: impl Into<String>, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    (path.into(), format!("Unsupported value: {}: supported values: {}", go_quote(value), list.join(", ")))
}

/// `field.Duplicate` of a string.
pub(crate) fn duplicate(path: impl Into<String>, value: &str) -> FieldError {
    (path.into(), format!("Duplicate value: {}", go_quote(value)))
}

/// `field.TooLong` whose value upstream leaves out.
pub(crate) fn too_long(path: impl Into<String>, max: usize) -> FieldError {
    (path.into(), format!("Too long: may not be more than {max} bytes"))
}

/// `field.TooMany`: a list of `n` items, longer than `max` (`Too many: 9: must have at most 8 items`).
pub(crate) fn too_many(path: impl Into<String>, n: usize, max: usize) -> FieldError {
    (path.into(), format!("Too many: {n}: must have at most {max} items"))
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
pub(crate) fn go_string_slice(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// apimachinery's `InclusiveRangeError`.
pub(crate) fn inclusive_range(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}
