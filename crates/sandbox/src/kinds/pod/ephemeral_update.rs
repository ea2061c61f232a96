//! What a write of `pods/<name>/ephemeralcontainers` may do to the ephemeral containers already
//! there (`ValidatePodEphemeralContainersUpdate`'s second half): nothing. A container may be
//! added; one that exists is neither removed nor changed. Upstream ends each message with a
//! newline, and a change's with the difference `cmp.Diff` writes, which is not reproduced here.

use serde_json::Value;

use crate::field_errors::forbidden;
use crate::go_print::go_quote;
use crate::status::FieldError;

/// The ephemeral containers of `old` that `pod` removed or changed, in `old`'s order.
pub(super) fn validate(pod: &Value, old: &Value) -> Vec<FieldError> {
    let list = |p: &Value| p.pointer("/spec/ephemeralContainers").and_then(Value::as_array).cloned();
    let (new, old) = (list(pod).unwrap_or_default(), list(old).unwrap_or_default());
    let mut errs = Vec::new();
    for before in &old {
        let name = before.get("name").and_then(Value::as_str).unwrap_or("");
        let why = match new.iter().find(|c| c.get("name").and_then(Value::as_str) == Some(name)) {
            None => "removed",
            Some(now) if now != before => "changed",
            Some(_) => continue,
        };
        let detail = format!("existing ephemeral containers {} may not be {why}\n", go_quote(name));
        errs.push(forbidden("spec.ephemeralContainers", &detail));
    }
    errs
}
