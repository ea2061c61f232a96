//! `serviceaccounts/<name>/token`'s request (authentication.k8s.io/v1 TokenRequest): what
//! `TokenREST.Create` refuses before it looks anything up — a body naming another account, and
//! `ValidateTokenRequest`'s life span, ten minutes to 2^32 seconds. The bound object's checks
//! need the store: they are [`crate::actions`]'.

use serde_json::Value;

use crate::field_errors::{invalid_bare, invalid_str};
use crate::status::ApiError;

/// The shortest life a requested token may have, in seconds.
const MIN_SECONDS: i64 = 600;
/// The longest.
const MAX_SECONDS: i64 = 1 << 32;

/// The life the request asks for: its `expirationSeconds`, an hour when unset (the v1 default).
#[must_use]
pub fn seconds(request: &Value) -> i64 {
    request.pointer("/spec/expirationSeconds").and_then(Value::as_i64).unwrap_or(3600)
}

/// The request for account `name`, refused as `TokenREST.Create` refuses it before the lookup.
///
/// # Errors
///
/// A 422 naming the account when the body names another; a 422 with no name for a life out of
/// range.
pub fn check(request: &Value, name: &str) -> Result<(), ApiError> {
    const KIND: (&str, &str) = ("authentication.k8s.io", "TokenRequest");
    let given = crate::object_meta::meta_str(request, "name");
    if !given.is_empty() && given != name {
        let cause = invalid_str("metadata.name", given, "must match the service account name if specified");
        return Err(ApiError::invalid(KIND.0, KIND.1, name, &[cause]));
    }
    let s = seconds(request);
    let mut errs = Vec::new();
    if s < MIN_SECONDS {
        errs.push(invalid_bare(
            "spec.expirationSeconds",
            s,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if s > MAX_SECONDS {
        errs.push(invalid_bare(
            "spec.expirationSeconds",
            s,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if errs.is_empty() { Ok(()) } else { Err(ApiError::invalid(KIND.0, KIND.1, "", &errs)) }
}
