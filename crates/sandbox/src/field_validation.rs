//! `fieldValidation`: what the server does with fields a kind's schema does not declare, on
//! create and update (`endpoints/handlers/create.go`, `update.go`; the directive's rules in
//! `apimachinery/pkg/apis/meta/v1/validation`). `Strict` refuses the object (400, a "strict
//! decoding error" naming every such field), `Warn` — 1.32's default when the parameter is absent
//! — drops them and answers a `Warning` header per field, `Ignore` drops them silently. Any other
//! value is a 422 on the request's options kind.

use serde_json::Value;

use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The directive of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop them, with a warning each.
    Warn,
    /// Refuse the object.
    Strict,
}

impl Directive {
    /// The directive of `value` (absent or empty: `Warn`), for a request whose options are
    /// `options` (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    ///
    /// # Errors
    ///
    /// An unsupported value, as upstream's `ValidateFieldValidation`.
    pub fn parse(value: Option<&str>, options: &str) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => Err(ApiError::invalid(
                "meta.k8s.io",
                options,
                "",
                &[(
                    "fieldValidation".into(),
                    format!(
                        "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                )],
            )),
        }
    }
}

/// Removes from `body` what `known` (the same object as the schema keeps it) lacks; returns the
/// removed fields' paths (`spec.template.spec.containers[0].foo`).
fn prune(body: &mut Value, known: &Value, path: &str, out: &mut Vec<String>) {
    match (body, known) {
        (Value::Object(a), Value::Object(b)) => {
            a.retain(|k, v| {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match b.get(k) {
                    // A null for a declared optional field is not an unknown field.
                    None if v.is_null() => true,
                    None => {
                        out.push(p);
                        false
                    }
                    Some(kv) => {
                        prune(v, kv, &p, out);
                        true
                    }
                }
            });
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (x, y)) in a.iter_mut().zip(b).enumerate() {
                prune(x, y, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Applies `directive` to a create or update body of `def`; the warnings to answer with.
///
/// # Errors
///
/// `Strict` and an unknown field: the 400 upstream's strict decoder gives.
pub fn check(def: &ResourceDef, body: &mut Value, directive: Directive) -> Result<Vec<String>, ApiError> {
    let Some(known) = def.known.and_then(|k| k(body)) else { return Ok(Vec::new()) };
    let mut unknown = Vec::new();
    prune(body, &known, "", &mut unknown);
    let named: Vec<String> = unknown.iter().map(|f| format!("unknown field {f:?}")).collect();
    match directive {
        Directive::Strict if !named.is_empty() => Err(ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
            def.kind,
            def.version,
            def.kind,
            named.join(", ")
        ))),
        Directive::Warn => Ok(named),
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_fields_are_found_at_any_depth_and_removed() {
        let mut body = json!({ "a": 1, "x": 2, "spec": { "b": [ { "c": 1, "y": 3 } ], "n": null } });
        let known = json!({ "a": 1, "spec": { "b": [ { "c": 1 } ] } });
        let mut out = Vec::new();
        prune(&mut body, &known, "", &mut out);
        assert_eq!(out, ["spec.b[0].y", "x"], "in key order");
        assert_eq!(body, json!({ "a": 1, "spec": { "b": [ { "c": 1 } ], "n": null } }));
    }
}
