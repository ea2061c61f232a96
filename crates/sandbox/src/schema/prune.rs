//! Pruning, as a v1.32 API server applies it to a custom resource it decodes (`crdhandler.go`,
//! `unstructuredSchemaCoercer.apply`), in upstream's order:
//!
//! 1. the root `metadata` is read as an ObjectMeta (`objectmeta/coerce.go`,
//!    `GetObjectMetaWithOptions`): fields ObjectMeta does not have are dropped and reported
//!    (`metadata.foo`), fields of the wrong type are dropped silently, empty ones go (the
//!    round trip's `omitempty`);
//! 2. fields the schema does not declare are dropped and reported (`pruning/algorithm.go`):
//!    kept under `x-kubernetes-preserve-unknown-fields`, and `apiVersion`, `kind` and `metadata`
//!    stay at the root and in embedded resources; map values (`additionalProperties`) are pruned
//!    by their schema. Paths are upstream's: `spec.foo`, `spec.items[0].bar`, `spec.map.key.x`,
//!    sorted;
//! 3. `null`s the schema neither allows (`nullable`) nor defaults are dropped
//!    (`defaulting/prunenulls.go`);
//! 4. embedded resources' `apiVersion`/`kind` that are not strings are dropped and their
//!    `metadata` is read as an ObjectMeta as in 1. (`objectmeta/coerce.go`, `CoerceWithOptions`),
//!    unknown fields reported as `spec.template.metadata.foo`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::node::{Additional, Node};
use super::validate::embedded::decode_error;

/// The fields an ObjectMeta has.
const OBJECT_META: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const OWNER_REFERENCE: [&str; 6] = ["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"];
const MANAGED_FIELDS_ENTRY: [&str; 7] =
    ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"];
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Steps 1 to 4 on `obj`; the unknown fields' paths, in upstream's order.
pub(crate) fn prune(root: &Node, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(meta) = obj.get_mut("metadata") {
        coerce_meta(meta, "metadata", &mut unknown);
    }
    let mut pruned = Vec::new();
    let mut path = String::new();
    prune_value(obj, Some(root), true, &mut path, &mut pruned);
    pruned.sort();
    unknown.extend(pruned);
    prune_nulls(obj, Some(root));
    let mut embedded = Vec::new();
    coerce(None, obj, root, &mut embedded);
    embedded.sort();
    unknown.extend(embedded);
    unknown
}

/// Step 2 alone (`pruning.Prune`), as upstream checks that defaults are pruned; `root` treats
/// `node` as a resource root.
pub(crate) fn prune_unknown(node: &Node, value: &mut Value, root: bool) {
    let mut path = String::new();
    prune_value(value, Some(node), root, &mut path, &mut Vec::new());
}

/// `UnknownFieldPathOptions.AppendKey`: a dot between keys, none before the first.
fn append_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn record(path: &mut String, key: &str, out: &mut Vec<String>) {
    let len = path.len();
    append_key(path, key);
    out.push(path.clone());
    path.truncate(len);
}

/// `pruning.prune`; `root` marks the resource root, treated as an embedded resource.
fn prune_value(x: &mut Value, s: Option<&Node>, root: bool, path: &mut String, out: &mut Vec<String>) {
    if let Some(s) = s.filter(|s| s.preserve_unknown) {
        skip_prune(x, s, root, path, out);
        return;
    }
    let len = path.len();
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                for k in map.keys() {
                    record(path, k, out);
                }
                map.clear();
                return;
            };
            let embedded = root || s.embedded;
            map.retain(|k, v| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let declared = prune_member(k, v, s, path, out);
                if !declared && (!META_FIELDS.contains(&k.as_str()) || !path.is_empty()) {
                    record(path, k, out);
                }
                declared
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                let _ = write!(path, "[{i}]");
                prune_value(v, item_schema, false, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Prunes the member `k` of an object of schema `s` by its property's schema, or its
/// `additionalProperties`' values; `false` when the schema declares neither (an unknown field).
fn prune_member(k: &str, v: &mut Value, s: &Node, path: &mut String, out: &mut Vec<String>) -> bool {
    let values = match (s.properties.get(k), &s.additional) {
        (Some(prop), _) => Some(prop),
        (None, Some(Additional::Schema(values))) => Some(&**values),
        (None, Some(Additional::Allows(_))) => None,
        (None, None) => return false,
    };
    let len = path.len();
    append_key(path, k);
    prune_value(v, values, false, path, out);
    path.truncate(len);
    true
}

/// `pruning.skipPrune`: under `x-kubernetes-preserve-unknown-fields`, unknown fields stay but
/// declared ones are still pruned by their schema.
fn skip_prune(x: &mut Value, s: &Node, root: bool, path: &mut String, out: &mut Vec<String>) {
    let len = path.len();
    match x {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if (root || s.embedded) && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                prune_member(k, v, s, path, out);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    let _ = write!(path, "[{i}]");
                    skip_prune(v, item_schema, false, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// `PruneNonNullableNullsWithoutDefaults`.
fn prune_nulls(x: &mut Value, s: Option<&Node>) {
    match x {
        Value::Object(map) => map.retain(|k, v| {
            let schema = s.and_then(|s| s.field(k));
            if v.is_null() && schema.is_some_and(|s| !s.nullable && s.default.is_none()) {
                return false;
            }
            prune_nulls(v, schema);
            true
        }),
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for v in items {
                prune_nulls(v, item_schema);
            }
        }
        _ => {}
    }
}

/// `objectmeta.coercer.coerce` from the root (which is not an embedded resource here), with
/// malformed fields dropped; `p` is the `field.Path` so far (`Key` in brackets).
fn coerce(p: Option<&str>, x: &mut Value, s: &Node, out: &mut Vec<String>) {
    if !s.has_embedded {
        return;
    }
    let join = |name: &str| match p {
        Some(p) => format!("{p}.{name}"),
        None => name.to_owned(),
    };
    match x {
        Value::Object(map) => {
            if s.embedded {
                for k in ["apiVersion", "kind"] {
                    if map.get(k).is_some_and(|v| !v.is_string()) {
                        map.remove(k);
                    }
                }
                if let Some(meta) = map.get_mut("metadata") {
                    coerce_meta(meta, &join("metadata"), out);
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    coerce(Some(&join(k)), v, prop, out);
                } else if let Some(values) = s.additional_schema() {
                    coerce(Some(&format!("{}[{k}]", p.unwrap_or(""))), v, values, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    coerce(Some(&format!("{}[{i}]", p.unwrap_or(""))), v, item, out);
                }
            }
        }
        _ => {}
    }
}

/// Drops from `items`' objects the fields `known` does not list, reporting them under `prefix`.
fn known_fields_only(items: &mut Value, known: &[&str], prefix: &str, out: &mut Vec<String>) {
    let Value::Array(items) = items else { return };
    for (i, item) in items.iter_mut().enumerate() {
        if let Value::Object(m) = item {
            m.retain(|k, _| {
                let keep = known.contains(&k.as_str());
                if !keep {
                    out.push(format!("{prefix}[{i}].{k}"));
                }
                keep
            });
        }
    }
}

/// Whether a decoded-and-reencoded ObjectMeta field would be left out (`omitempty`).
fn omitted(k: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => k == "generation" && v.as_i64() == Some(0),
        Value::Bool(_) => false,
    }
}

/// An ObjectMeta round trip of `meta` (upstream decodes it into `metav1.ObjectMeta` and encodes
/// it back): unknown fields dropped and reported under `prefix`, malformed ones dropped, empty
/// ones left out. Anything but an object is left for the generic metadata rules to refuse.
fn coerce_meta(meta: &mut Value, prefix: &str, out: &mut Vec<String>) {
    let Value::Object(m) = meta else { return };
    let mut kept = Map::new();
    for (k, mut v) in std::mem::take(m) {
        if !OBJECT_META.contains(&k.as_str()) {
            out.push(format!("{prefix}.{k}"));
            continue;
        }
        let single = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
        if decode_error(&single).is_some() {
            continue;
        }
        match k.as_str() {
            "ownerReferences" => known_fields_only(&mut v, &OWNER_REFERENCE, &format!("{prefix}.{k}"), out),
            "managedFields" => {
                known_fields_only(&mut v, &MANAGED_FIELDS_ENTRY, &format!("{prefix}.{k}"), out)
            }
            "labels" | "annotations" => {
                // A JSON null decodes into a Go string as "".
                if let Value::Object(entries) = &mut v {
                    for e in entries.values_mut().filter(|e| e.is_null()) {
                        *e = Value::String(String::new());
                    }
                }
            }
            _ => {}
        }
        if !omitted(&k, &v) {
            kept.insert(k, v);
        }
    }
    *m = kept;
}

#[cfg(test)]
mod tests {
    //! Follows `pruning/algorithm_test.go`, `defaulting/prunenulls_test.go` and
    //! `objectmeta/coerce_test.go`.
    use serde_json::json;

    use super::super::Structural;

    fn pruned(schema: serde_json::Value, mut obj: serde_json::Value) -> (serde_json::Value, Vec<String>) {
        let paths = Structural::parse(&schema).prune(&mut obj);
        (obj, paths)
    }

    #[test]
    fn unknown_fields_go_with_their_paths() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"y": {"type": "string"}}}},
        }}}});
        let (obj, paths) = pruned(
            schema,
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n"}, "extra": 1,
                   "spec": {"a": "x", "b": 2, "list": [{"x": 1, "z": 2}], "map": {"k": {"y": "v", "w": 3}}}}),
        );
        assert_eq!(paths, ["extra", "spec.b", "spec.list[0].z", "spec.map.k.w"]);
        assert_eq!(
            obj,
            json!({"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n"},
                   "spec": {"a": "x", "list": [{"x": 1}], "map": {"k": {"y": "v"}}}})
        );
    }

    #[test]
    fn preserve_unknown_fields_keeps_them_but_prunes_declared_ones() {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}}}});
        let (obj, paths) = pruned(schema, json!({"spec": {"free": {"any": 1}, "known": {"a": "x", "b": 1}}}));
        assert_eq!(paths, ["spec.known.b"]);
        assert_eq!(obj, json!({"spec": {"free": {"any": 1}, "known": {"a": "x"}}}));
    }

    #[test]
    fn embedded_resources_keep_type_and_object_meta() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object"}}}}}}});
        let (obj, paths) = pruned(
            schema,
            json!({"spec": {"template": {"apiVersion": "v1", "kind": 5, "metadata": {"name": "x", "bogus": 1},
                                         "spec": {}, "status": {}}}}),
        );
        assert_eq!(paths, ["spec.template.status", "spec.template.metadata.bogus"]);
        assert_eq!(
            obj,
            json!({"spec": {"template": {"apiVersion": "v1", "metadata": {"name": "x"}, "spec": {}}}})
        );
    }

    #[test]
    fn root_metadata_is_an_object_meta() {
        let (obj, paths) = pruned(
            json!({"type": "object"}),
            json!({"metadata": {"name": "n", "foo": 1, "labels": {"a": "b"}, "generation": "x",
                                "ownerReferences": [{"name": "o", "extra": true}]}}),
        );
        assert_eq!(paths, ["metadata.foo", "metadata.ownerReferences[0].extra"]);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "n", "labels": {"a": "b"}, "ownerReferences": [{"name": "o"}]}})
        );
    }

    #[test]
    fn non_nullable_nulls_without_defaults_go() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "nullable": true},
            "c": {"type": "string", "default": "x"},
            "l": {"type": "array", "items": {"type": "string"}}}}}});
        let (obj, paths) = pruned(schema, json!({"spec": {"a": null, "b": null, "c": null, "l": [null]}}));
        assert!(paths.is_empty());
        assert_eq!(obj, json!({"spec": {"b": null, "c": null, "l": [null]}}));
    }

    #[test]
    fn additional_properties_true_alone_prunes_object_values() {
        let schema =
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": true}}});
        let (obj, paths) = pruned(schema, json!({"m": {"k": {"x": 1}, "s": "v"}}));
        assert_eq!(paths, ["m.k.x"]);
        assert_eq!(obj, json!({"m": {"k": {}, "s": "v"}}));
    }
}
