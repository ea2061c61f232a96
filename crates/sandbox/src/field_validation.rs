//! `fieldValidation`: what the server does with fields a kind's schema does not declare, and
//! with fields a JSON body gives twice (`endpoints/handlers/create.go`, `update.go`, `patch.go`;
//! the directive's rules in `apimachinery/pkg/apis/meta/v1/validation`). `Strict` refuses the
//! request, `Warn` — 1.32's default when the parameter is absent — drops unknown fields and
//! answers a `Warning` header per problem, `Ignore` drops them silently. Any other value is a 422
//! on the request's options kind.
//!
//! A create or update body is checked as it is decoded ([`check`]: 400, "strict decoding
//! error"); a patch is checked twice, as upstream's patcher does ([`check_patched`]): the patch
//! itself for duplicates, then the patched object for unknown fields (422 Invalid on `patch`).

use std::cell::RefCell;
use std::collections::HashSet;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
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

/// Fields a JSON document gives more than once, as dotted paths (`metadata.labels.a`), in the
/// order met — what upstream's strict decoder reports as `duplicate field`. Not JSON: none.
#[must_use]
pub fn duplicate_fields(json: &[u8]) -> Vec<String> {
    let out = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(json);
    let _ = Walk { path: String::new(), out: &out }.deserialize(&mut de);
    out.into_inner()
}

/// Walks a JSON document noting repeated keys.
struct Walk<'a> {
    path: String,
    out: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if !seen.insert(key) {
                self.out.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Walk { path, out: self.out })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(Walk { path: format!("{}[{i}]", self.path), out: self.out })?.is_some() {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Removes the fields `def`'s schema does not declare from `obj`; the strict decoder's words for
/// each (`unknown field "spec.foo"`).
fn unknown_fields(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    unknown_paths(def, obj).iter().map(|f| format!("unknown field {f:?}")).collect()
}

/// The paths of the fields of `obj` that `def` does not declare (`spec.x`, `spec.l[0].y`), which
/// are taken out of it.
fn unknown_paths(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    let Some(known) = def.known(obj) else { return Vec::new() };
    let mut unknown = Vec::new();
    prune(obj, &known, "", &mut unknown);
    unknown
}

/// A server-side apply's body as the field manager converts it to the kind's type
/// (`structuredMergeManager.Apply`): a field the kind does not declare is an error whatever the
/// `fieldValidation` — upstream's unclassified 500, `failed to create typed patch object
/// (<namespace>/<name>; <group>/<version>, Kind=<kind>): .spec.x: field not declared in schema`.
///
/// # Errors
///
/// That 500, naming every such field.
pub fn check_applied(def: &ResourceDef, applied: &Value) -> Result<(), ApiError> {
    let mut probe = applied.clone();
    let unknown = unknown_paths(def, &mut probe);
    if unknown.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = unknown.iter().map(|f| format!(".{f}: field not declared in schema")).collect();
    let errors = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    let meta = |k: &str| applied.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or("");
    let gvk = format!("{}/{}, Kind={}", def.group, def.version, def.kind);
    Err(ApiError::unclassified(format!(
        "failed to create typed patch object ({}/{}; {gvk}): {errors}",
        meta("namespace"),
        meta("name")
    )))
}

/// Applies `directive` to a create or update body of `def` (`raw`: the body's JSON, for
/// duplicate fields; `None` for other encodings); the warnings to answer with.
///
/// # Errors
///
/// `Strict` and an unknown or duplicate field: the 400 upstream's strict decoder gives.
pub fn check(
    def: &ResourceDef,
    body: &mut Value,
    raw: Option<&[u8]>,
    directive: Directive,
) -> Result<Vec<String>, ApiError> {
    if directive == Directive::Ignore {
        let _ = unknown_fields(def, body);
        return Ok(Vec::new());
    }
    let mut named: Vec<String> = raw
        .map(duplicate_fields)
        .unwrap_or_default()
        .iter()
        .map(|f| format!("duplicate field {f:?}"))
        .collect();
    named.extend(unknown_fields(def, body));
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

/// Applies `directive` to a patch of `def`: `patch` is the patch as sent (its duplicate fields
/// count; a JSON patch's are named `json patch duplicate field …`), `patched` the object it made
/// (its unknown fields are dropped); the warnings to answer with.
///
/// # Errors
///
/// `Strict` and a problem: 422 Invalid on the field `patch`, whose value is the patched object,
/// as upstream's `jsonPatcher` answers.
pub fn check_patched(
    def: &ResourceDef,
    patch: &[u8],
    json_patch: bool,
    patched: &mut Value,
    directive: Directive,
) -> Result<Vec<String>, ApiError> {
    let shown = (directive == Directive::Strict).then(|| patched.to_string());
    let unknown = unknown_fields(def, patched);
    if directive == Directive::Ignore {
        return Ok(Vec::new());
    }
    let prefix = if json_patch { "json patch " } else { "" };
    let mut named: Vec<String> =
        duplicate_fields(patch).iter().map(|f| format!("{prefix}duplicate field {f:?}")).collect();
    named.extend(unknown);
    match (directive, shown) {
        (Directive::Strict, Some(shown)) if !named.is_empty() => {
            // An Invalid for no kind and no name, as upstream's `NewInvalid(schema.GroupKind{}, "", …)`.
            Err(ApiError::invalid(
                "",
                "",
                "",
                &[(
                    "patch".into(),
                    format!("Invalid value: {shown:?}: strict decoding error: {}", named.join(", ")),
                )],
            ))
        }
        (Directive::Warn, _) => Ok(named),
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn duplicate_fields_are_found_with_their_paths() {
        let raw = br#"{"a":1,"m":{"x":1,"x":2},"l":[{"k":1,"k":1}],"a":3}"#;
        assert_eq!(duplicate_fields(raw), ["m.x", "l[0].k", "a"]);
        assert!(duplicate_fields(br#"{"a":{"a":1}}"#).is_empty());
    }

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
