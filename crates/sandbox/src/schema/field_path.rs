//! A field path into a schema (`.spec.size`, `.spec['a.b']`), resolved as upstream's
//! `cel.ValidFieldPath` (`pkg/apiserver/schema/cel/validation.go`) resolves it: what a CRD's
//! `selectableFields` and an `x-kubernetes-validations` rule's `fieldPath` must name.
//!
//! The path is read token by token (`.`, `[`, `]`, a single-quoted string, or a name); each
//! step goes into `properties` (the name must be one) or, for an object without properties, into
//! `additionalProperties`. The walk is bounded by the path's length, not by the schema's depth.

use serde_json::{Map, Value};

/// Where a path led: its first field's name and the schema it ends at (`None` when it went into
/// an `additionalProperties` that is no schema).
pub(crate) struct Resolved<'a> {
    /// The name of the path's first field (`metadata` for `.metadata.name`), empty for `""`.
    pub root: String,
    /// The schema of the field the path names.
    pub schema: Option<&'a Map<String, Value>>,
    /// The path as a field error names it (`spec.size`, `labels[a.b]`): a property by its name,
    /// a map's key in brackets.
    pub normalized: String,
}

const NOT_A_FIELD: &str = "does not refer to a valid field";
const EARLY_END: &str = "unexpected end of JSON path";

/// Splits a path into upstream's tokens: each of `.`, `[`, `]` alone, a single-quoted string
/// whole (with its quotes), and the text between delimiters.
fn tokens(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        let end = if rest.starts_with('\'') {
            // Up to the next quote not escaped by a backslash, or the end.
            let bytes = rest.as_bytes();
            (1..bytes.len())
                .find(|&i| bytes[i] == b'\'' && bytes[i - 1] != b'\\')
                .map_or(rest.len(), |i| i + 1)
        } else if rest.starts_with(['.', '[', ']']) {
            1
        } else {
            rest.find(['.', '[', ']']).unwrap_or(rest.len())
        };
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// Undoes the escapes a single-quoted name may hold (`\'`, `\\`, …), as `unescapeSingleQuote`.
fn unescape(quoted: &str) -> Result<String, String> {
    let mut out = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(e @ ('\'' | '"' | '\\' | '?' | '`')) => out.push(e),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(other) => return Err(format!("invalid string literal: unknown escape sequence \\{other}")),
            None => return Err("invalid string literal: unterminated escape".to_owned()),
        }
    }
    Ok(out)
}

/// One step from `schema` into its field `name`.
fn step<'a>(
    schema: Option<&'a Map<String, Value>>,
    name: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    let schema = schema.ok_or(NOT_A_FIELD)?;
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        return props.get(name).map(Value::as_object).ok_or_else(|| NOT_A_FIELD.to_owned());
    }
    match schema.get("additionalProperties") {
        Some(v) if !v.is_null() => Ok(v.as_object()),
        _ => Err(NOT_A_FIELD.to_owned()),
    }
}

/// Resolves `path` in `schema`; the error is upstream's (`does not refer to a valid field`,
/// `array notation is not allowed`, …). `allow_array` permits the `['name']` form.
pub(crate) fn resolve<'a>(
    schema: &'a Map<String, Value>,
    path: &str,
    allow_array: bool,
) -> Result<Resolved<'a>, String> {
    let toks = tokens(path);
    let mut it = toks.into_iter();
    let mut at = Some(schema);
    let mut root = None;
    let mut normalized = String::new();
    while let Some(tok) = it.next() {
        let name = match tok {
            "[" => {
                if !allow_array {
                    return Err("array notation is not allowed".to_owned());
                }
                let quoted = it.next().ok_or(EARLY_END)?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape(&quoted[1..quoted.len() - 1])?;
                match it.next() {
                    None => return Err(EARLY_END.to_owned()),
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                }
                name
            }
            "." => it.next().ok_or(EARLY_END)?.to_owned(),
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        let named = at.is_some_and(|s| s.get("properties").is_some_and(Value::is_object));
        at = step(at, &name)?;
        if named {
            if !normalized.is_empty() {
                normalized.push('.');
            }
            normalized.push_str(&name);
        } else {
            normalized.push_str(&format!("[{name}]"));
        }
        root.get_or_insert(name);
    }
    Ok(Resolved { root: root.unwrap_or_default(), schema: at, normalized })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_go_into_properties_and_maps() {
        let v = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "string"}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        }});
        let s = v.as_object().unwrap();
        let r = resolve(s, ".spec.size", false).map(|r| (r.root, r.schema.cloned().map(Value::Object)));
        assert_eq!(r.ok(), Some(("spec".to_owned(), Some(json!({"type": "string"})))));
        assert!(resolve(s, ".labels['a.b']", true).is_ok());
        assert_eq!(resolve(s, ".labels['a']", false).err().as_deref(), Some("array notation is not allowed"));
        assert_eq!(resolve(s, ".spec.color", false).err().as_deref(), Some(NOT_A_FIELD));
        assert_eq!(resolve(s, "spec", false).err().as_deref(), Some("expected [ or . but got: spec"));
        assert_eq!(resolve(s, ".spec.", false).err().as_deref(), Some(EARLY_END));
    }
}
