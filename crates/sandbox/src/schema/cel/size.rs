//! How big a schema node's value can be in one request, as apiserver's `SchemaDeclType` bounds
//! it for cost estimation (`pkg/cel/common/schemas.go`): a string's bytes, a list's items, a
//! map's entries (`MaxElements`), and the fewest bytes a value takes in JSON
//! (`MinSerializedSize`), from which an unbounded list or map is bounded by the 3 MiB a request
//! may hold. [`super::cost`] reads them where a rule reaches a value through its schema.

use serde_json::{Map, Value};

/// The request size every estimate assumes (`MaxRequestSizeBytes`), whatever the server's flag.
pub(super) const MAX_REQUEST_SIZE: u64 = 3 * 1024 * 1024;

/// The longest string a request can hold: the request less its quotes.
const MAX_STRING: u64 = MAX_REQUEST_SIZE - 2;

fn bound(m: &Map<String, Value>, key: &str) -> Option<u64> {
    m.get(key).and_then(Value::as_i64).map(|n| n.max(0) as u64)
}

fn flag(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool) == Some(true)
}

/// The schema of a list's items, when CEL sees the list (its items have a type).
pub(super) fn items(m: &Map<String, Value>) -> Option<&Map<String, Value>> {
    m.get("items").and_then(Value::as_object).filter(|i| typed(i))
}

/// The schema of a map's values (`additionalProperties`), when CEL sees the map.
pub(super) fn values(m: &Map<String, Value>) -> Option<&Map<String, Value>> {
    m.get("additionalProperties").and_then(Value::as_object).filter(|v| typed(v))
}

/// Whether CEL sees the node at all (upstream's declaration is not nil).
pub(super) fn typed(m: &Map<String, Value>) -> bool {
    if flag(m, "x-kubernetes-int-or-string") {
        return true;
    }
    match m.get("type").and_then(Value::as_str) {
        Some("array") => items(m).is_some(),
        Some("object") => m.get("additionalProperties").and_then(Value::as_object).is_none_or(typed),
        Some("string" | "integer" | "number" | "boolean") => true,
        _ => false,
    }
}

/// `MaxElements`: the most bytes of a string, items of a list or entries of a map the node's
/// value can have; 0 for an object, a number or a boolean (they have no size).
pub(super) fn max_elements(m: &Map<String, Value>) -> u64 {
    if flag(m, "x-kubernetes-int-or-string") {
        return MAX_STRING;
    }
    match m.get("type").and_then(Value::as_str) {
        Some("array") => bound(m, "maxItems")
            .or_else(|| items(m).map(|i| MAX_STRING / (min_serialized_size(i) + 1)))
            .unwrap_or(0),
        Some("object") => match values(m) {
            Some(v) => bound(m, "maxProperties").unwrap_or(MAX_STRING / (min_serialized_size(v) + 6)),
            None => 0,
        },
        Some("string") => match m.get("format").and_then(Value::as_str).unwrap_or("") {
            "byte" => bound(m, "maxLength").unwrap_or(MAX_STRING),
            "duration" | "date-time" => 32,
            "date" => 12,
            // A character is at most four bytes.
            _ => bound(m, "maxLength").map(|n| n.saturating_mul(4)).unwrap_or_else(|| {
                let longest = m
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|e| e.iter().filter_map(Value::as_str).map(|s| s.len() as u64).max().unwrap_or(0));
                longest.unwrap_or(MAX_STRING)
            }),
        },
        _ => 0,
    }
}

/// `MinSerializedSize`: the fewest bytes the node's value takes in JSON (an object's required
/// fields without defaults included, each with its quoted name, colon and comma).
pub(super) fn min_serialized_size(m: &Map<String, Value>) -> u64 {
    if flag(m, "x-kubernetes-int-or-string") {
        return 1;
    }
    match m.get("type").and_then(Value::as_str) {
        Some("object") if values(m).is_none() => {
            let properties = m.get("properties").and_then(Value::as_object);
            let required = m.get("required").and_then(Value::as_array).into_iter().flatten();
            2 + required
                .filter_map(Value::as_str)
                .filter_map(|name| Some((name, properties?.get(name)?.as_object()?)))
                .filter(|(_, p)| typed(p) && p.get("default").is_none_or(Value::is_null))
                .map(|(name, p)| name.len() as u64 + min_serialized_size(p) + 4)
                .sum::<u64>()
        }
        Some("string") => match m.get("format").and_then(Value::as_str).unwrap_or("") {
            "duration" => 3,
            "date" => 12,
            "date-time" => 21,
            _ => 2,
        },
        Some("boolean") => 4,
        Some("integer" | "number") => 1,
        _ => 2,
    }
}

/// How many children of each kind `parent`'s value can have (`extractMaxElements`): a list's
/// `maxItems`, a map's `maxProperties`, 1 for anything else; `None` for an unbounded list or map.
pub(crate) fn max_children(parent: &Map<String, Value>) -> Option<u64> {
    match parent.get("type").and_then(Value::as_str) {
        Some("object") if parent.get("additionalProperties").is_some_and(|a| !a.is_null()) => {
            bound(parent, "maxProperties")
        }
        Some("array") => bound(parent, "maxItems"),
        _ => Some(1),
    }
}

/// How many times a rule at a node may run in one object when an ancestor list or map is
/// unbounded (the rule's own `MaxCardinality`): as many of the node's values as fit in a request.
pub(crate) fn max_cardinality(m: &Map<String, Value>) -> u64 {
    MAX_REQUEST_SIZE / (min_serialized_size(m) + 1)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn of(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn bounds_are_upstreams_estimates() {
        assert_eq!(max_elements(&of(json!({"type": "string"}))), 3_145_726);
        assert_eq!(max_elements(&of(json!({"type": "string", "maxLength": 63}))), 252);
        assert_eq!(max_elements(&of(json!({"type": "string", "enum": ["a", "abc"]}))), 3);
        assert_eq!(max_elements(&of(json!({"type": "string", "format": "date-time", "maxLength": 5}))), 32);
        assert_eq!(max_elements(&of(json!({"type": "array", "items": {"type": "string"}}))), 1_048_575);
        assert_eq!(max_elements(&of(json!({"type": "array", "items": {"type": "integer"}}))), 1_572_863);
        assert_eq!(max_elements(&of(json!({"type": "array", "items": {"type": "boolean"}}))), 629_145);
        assert_eq!(
            max_elements(&of(json!({"type": "array", "maxItems": 10, "items": {"type": "string"}}))),
            10
        );
        assert_eq!(
            max_elements(&of(json!({"type": "object", "additionalProperties": {"type": "string"}}))),
            393_215
        );
        let object = of(json!({"type": "object", "required": ["a", "bb", "c"], "properties": {
            "a": {"type": "string"}, "bb": {"type": "integer"}, "c": {"type": "integer", "default": 1}}}));
        assert_eq!(min_serialized_size(&object), 16);
        assert_eq!(max_cardinality(&object), 185_042);
        assert_eq!(max_cardinality(&of(json!({"type": "string"}))), 1_048_576);
    }
}
