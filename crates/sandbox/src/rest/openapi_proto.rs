//! The protobuf form of `/openapi/v2`: the Swagger document as gnostic's `openapi.v2.Document`
//! message (`openapiv2/OpenAPIv2.proto`), which kube-openapi's handler (`pkg/handler/handler.go`)
//! serves to a client that asks for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
//! (kubectl does) by parsing its JSON document with gnostic and marshalling the result.
//!
//! Only the messages and fields the sandbox's document uses are written: the document's
//! `swagger`, `info`, `paths` (operations with their parameters and responses) and `definitions`
//! (full schema trees). Values gnostic keeps as YAML — `default`, `example`, `enum` members and
//! every `x-` vendor extension — are written as an `Any` whose `yaml` is the value's JSON text
//! (JSON is YAML). Keys gnostic's Swagger 2.0 messages have no field for are left out.

use serde_json::{Map, Value};

/// A protobuf message being written: fields appended in order, nested messages length-delimited.
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A field's key: its number and wire type (0 varint, 1 fixed 64-bit, 2 length-delimited).
    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// A string field; proto3 leaves an empty one out.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A member of a repeated string field, written even when empty.
    fn repeated_string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    /// A bool field; false is left out unless `always` (a member of a oneof).
    fn bool(&mut self, field: u32, b: bool, always: bool) {
        if b || always {
            self.key(field, 0);
            self.varint(u64::from(b));
        }
    }

    fn int64(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }

    fn double(&mut self, field: u32, v: f64) {
        if v != 0.0 {
            self.key(field, 1);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A nested message, built by `f`; written even when empty (the field is set).
    fn message(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(field, &inner.0);
    }
}

fn str_of<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(w: &mut Writer, field: u32, v: Option<&Value>) {
    match v {
        Some(Value::Array(items)) => {
            for s in items.iter().filter_map(Value::as_str) {
                w.repeated_string(field, s);
            }
        }
        Some(Value::String(s)) => w.repeated_string(field, s),
        _ => {}
    }
}

/// An `Any` holding `v` as YAML (its JSON text).
fn any(w: &mut Writer, field: u32, v: &Value) {
    w.message(field, |a| a.string(2, &v.to_string()));
}

/// Every `x-` key of `obj` as a `NamedAny` in the repeated field `field`.
fn vendor_extensions(w: &mut Writer, field: u32, obj: &Map<String, Value>) {
    for (name, v) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        w.message(field, |n| {
            n.string(1, name);
            any(n, 2, v);
        });
    }
}

/// `openapi.v2.Document` of a Swagger 2.0 JSON document.
#[must_use]
pub fn document(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let Some(doc) = doc.as_object() else { return w.0 };
    w.string(1, str_of(doc, "swagger"));
    if let Some(info) = doc.get("info").and_then(Value::as_object) {
        w.message(2, |i| {
            i.string(1, str_of(info, "title"));
            i.string(2, str_of(info, "version"));
            i.string(3, str_of(info, "description"));
            i.string(4, str_of(info, "termsOfService"));
            vendor_extensions(i, 7, info);
        });
    }
    w.string(3, str_of(doc, "host"));
    w.string(4, str_of(doc, "basePath"));
    strings(&mut w, 5, doc.get("schemes"));
    strings(&mut w, 6, doc.get("consumes"));
    strings(&mut w, 7, doc.get("produces"));
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        w.message(8, |p| {
            vendor_extensions(p, 1, paths);
            for (name, item) in paths.iter().filter(|(k, _)| !k.starts_with("x-")) {
                let Some(item) = item.as_object() else { continue };
                p.message(2, |n| {
                    n.string(1, name);
                    n.message(2, |pi| path_item(pi, item));
                });
            }
        });
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        w.message(9, |d| named_schemas(d, 1, defs));
    }
    vendor_extensions(&mut w, 16, doc);
    w.0
}

fn path_item(w: &mut Writer, item: &Map<String, Value>) {
    w.string(1, str_of(item, "$ref"));
    let verbs =
        [("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("options", 6), ("head", 7), ("patch", 8)];
    for (verb, field) in verbs {
        if let Some(op) = item.get(verb).and_then(Value::as_object) {
            w.message(field, |o| operation(o, op));
        }
    }
    parameters(w, 9, item.get("parameters"));
    vendor_extensions(w, 10, item);
}

fn operation(w: &mut Writer, op: &Map<String, Value>) {
    strings(w, 1, op.get("tags"));
    w.string(2, str_of(op, "summary"));
    w.string(3, str_of(op, "description"));
    external_docs(w, 4, op);
    w.string(5, str_of(op, "operationId"));
    strings(w, 6, op.get("produces"));
    strings(w, 7, op.get("consumes"));
    parameters(w, 8, op.get("parameters"));
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        w.message(9, |r| {
            for (code, resp) in responses.iter().filter(|(k, _)| !k.starts_with("x-")) {
                let Some(resp) = resp.as_object() else { continue };
                r.message(1, |n| {
                    n.string(1, code);
                    n.message(2, |v| match resp.get("$ref").and_then(Value::as_str) {
                        Some(reference) => v.message(2, |j| j.string(1, reference)),
                        None => v.message(1, |rr| response(rr, resp)),
                    });
                });
            }
            vendor_extensions(r, 2, responses);
        });
    }
    strings(w, 10, op.get("schemes"));
    w.bool(11, op.get("deprecated").and_then(Value::as_bool).unwrap_or(false), false);
    vendor_extensions(w, 13, op);
}

fn response(w: &mut Writer, resp: &Map<String, Value>) {
    w.string(1, str_of(resp, "description"));
    if let Some(s) = resp.get("schema").and_then(Value::as_object) {
        w.message(2, |si| si.message(1, |sc| schema(sc, s)));
    }
    vendor_extensions(w, 5, resp);
}

fn external_docs(w: &mut Writer, field: u32, obj: &Map<String, Value>) {
    if let Some(docs) = obj.get("externalDocs").and_then(Value::as_object) {
        w.message(field, |d| {
            d.string(1, str_of(docs, "description"));
            d.string(2, str_of(docs, "url"));
            vendor_extensions(d, 3, docs);
        });
    }
}

/// Each of `params` as a `ParametersItem`: a reference, a body parameter (with its schema) or a
/// non-body one (query, path, header or formData, each its own message).
fn parameters(w: &mut Writer, field: u32, params: Option<&Value>) {
    let Some(params) = params.and_then(Value::as_array) else { return };
    for p in params.iter().filter_map(Value::as_object) {
        w.message(field, |item| {
            if let Some(reference) = p.get("$ref").and_then(Value::as_str) {
                item.message(2, |j| {
                    j.string(1, reference);
                    j.string(2, str_of(p, "description"));
                });
                return;
            }
            item.message(1, |param| parameter(param, p));
        });
    }
}

fn parameter(w: &mut Writer, p: &Map<String, Value>) {
    let required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
    let location = str_of(p, "in");
    if location == "body" {
        w.message(1, |b| {
            b.string(1, str_of(p, "description"));
            b.string(2, str_of(p, "name"));
            b.string(3, location);
            b.bool(4, required, false);
            if let Some(s) = p.get("schema").and_then(Value::as_object) {
                b.message(5, |sc| schema(sc, s));
            }
            vendor_extensions(b, 6, p);
        });
        return;
    }
    // Query and formData put `allowEmptyValue` at 5 and shift what follows by one; header and
    // path do not have it.
    let (which, shifted) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "path" => (4, false),
        _ => (3, true),
    };
    let at = |n: u32| if shifted { n + 1 } else { n };
    w.message(2, |nb| {
        nb.message(which, |s| {
            s.bool(1, required, false);
            s.string(2, location);
            s.string(3, str_of(p, "description"));
            s.string(4, str_of(p, "name"));
            if shifted {
                s.bool(5, p.get("allowEmptyValue").and_then(Value::as_bool).unwrap_or(false), false);
            }
            s.string(at(5), str_of(p, "type"));
            s.string(at(6), str_of(p, "format"));
            if let Some(items) = p.get("items").and_then(Value::as_object) {
                s.message(at(7), |i| primitives_items(i, items));
            }
            s.string(at(8), str_of(p, "collectionFormat"));
            if let Some(d) = p.get("default") {
                any(s, at(9), d);
            }
            s.bool(at(19), p.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false), false);
            for e in p.get("enum").and_then(Value::as_array).into_iter().flatten() {
                any(s, at(20), e);
            }
            vendor_extensions(s, at(22), p);
        });
    });
}

fn primitives_items(w: &mut Writer, items: &Map<String, Value>) {
    w.string(1, str_of(items, "type"));
    w.string(2, str_of(items, "format"));
    if let Some(inner) = items.get("items").and_then(Value::as_object) {
        w.message(3, |i| primitives_items(i, inner));
    }
    w.string(4, str_of(items, "collectionFormat"));
    if let Some(d) = items.get("default") {
        any(w, 5, d);
    }
    for e in items.get("enum").and_then(Value::as_array).into_iter().flatten() {
        any(w, 16, e);
    }
    vendor_extensions(w, 18, items);
}

/// `schemas` as `NamedSchema`s in the repeated field `field`.
fn named_schemas(w: &mut Writer, field: u32, schemas: &Map<String, Value>) {
    for (name, s) in schemas {
        let Some(s) = s.as_object() else { continue };
        w.message(field, |n| {
            n.string(1, name);
            n.message(2, |sc| schema(sc, s));
        });
    }
}

/// `openapi.v2.Schema`.
fn schema(w: &mut Writer, s: &Map<String, Value>) {
    let num = |k: &str| s.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
    let flag = |k: &str| s.get(k).and_then(Value::as_bool).unwrap_or(false);
    // A described reference is `allOf: [{$ref}]` in the sandbox's document (the OpenAPI v3
    // form); Swagger 2.0 — and so upstream's v2 document — puts the `$ref` beside the
    // description, which is the only form kubectl's `util/proto` follows (strategic merge
    // walks through it).
    let folded = match s.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::Object(only)]) if !s.contains_key("$ref") && only.keys().all(|k| k == "$ref") => {
            only.get("$ref").and_then(Value::as_str)
        }
        _ => None,
    };
    w.string(1, folded.unwrap_or_else(|| str_of(s, "$ref")));
    w.string(2, str_of(s, "format"));
    w.string(3, str_of(s, "title"));
    w.string(4, str_of(s, "description"));
    if let Some(d) = s.get("default") {
        any(w, 5, d);
    }
    w.double(6, num("multipleOf"));
    w.double(7, num("maximum"));
    w.bool(8, flag("exclusiveMaximum"), false);
    w.double(9, num("minimum"));
    w.bool(10, flag("exclusiveMinimum"), false);
    w.int64(11, int("maxLength"));
    w.int64(12, int("minLength"));
    w.string(13, str_of(s, "pattern"));
    w.int64(14, int("maxItems"));
    w.int64(15, int("minItems"));
    w.bool(16, flag("uniqueItems"), false);
    w.int64(17, int("maxProperties"));
    w.int64(18, int("minProperties"));
    strings(w, 19, s.get("required"));
    for e in s.get("enum").and_then(Value::as_array).into_iter().flatten() {
        any(w, 20, e);
    }
    match s.get("additionalProperties") {
        Some(Value::Object(sub)) => w.message(21, |a| a.message(1, |sc| schema(sc, sub))),
        Some(Value::Bool(b)) => w.message(21, |a| a.bool(2, *b, true)),
        _ => {}
    }
    if let Some(t) = s.get("type").filter(|t| t.is_string() || t.is_array()) {
        w.message(22, |ti| strings(ti, 1, Some(t)));
    }
    match s.get("items") {
        Some(Value::Object(sub)) => w.message(23, |i| i.message(1, |sc| schema(sc, sub))),
        Some(Value::Array(subs)) => w.message(23, |i| {
            for sub in subs.iter().filter_map(Value::as_object) {
                i.message(1, |sc| schema(sc, sub));
            }
        }),
        _ => {}
    }
    let all_of = s.get("allOf").and_then(Value::as_array).filter(|_| folded.is_none());
    for sub in all_of.into_iter().flatten().filter_map(Value::as_object) {
        w.message(24, |sc| schema(sc, sub));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        w.message(25, |p| named_schemas(p, 1, props));
    }
    w.string(26, str_of(s, "discriminator"));
    w.bool(27, flag("readOnly"), false);
    external_docs(w, 29, s);
    if let Some(e) = s.get("example") {
        any(w, 30, e);
    }
    vendor_extensions(w, 31, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One decoded field: a varint, a fixed 64-bit word or length-delimited bytes.
    #[derive(Debug, Clone)]
    enum F {
        V(u64),
        D(u64),
        B(Vec<u8>),
    }

    /// An independent reading of a message: every (field number, value), in order.
    fn decode(mut b: &[u8]) -> Vec<(u32, F)> {
        fn uvarint(b: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            for shift in (0..64).step_by(7) {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    break;
                }
            }
            v
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let k = uvarint(&mut b);
            let (num, wire) = ((k >> 3) as u32, k & 7);
            let f = match wire {
                0 => F::V(uvarint(&mut b)),
                1 => {
                    let (word, rest) = b.split_at(8);
                    b = rest;
                    F::D(u64::from_le_bytes(word.try_into().unwrap()))
                }
                2 => {
                    let n = uvarint(&mut b) as usize;
                    let (data, rest) = b.split_at(n);
                    b = rest;
                    F::B(data.to_vec())
                }
                other => panic!("unexpected wire type {other}"),
            };
            out.push((num, f));
        }
        out
    }

    fn bytes_of(msg: &[(u32, F)], num: u32) -> Vec<Vec<u8>> {
        msg.iter()
            .filter(|(n, _)| *n == num)
            .map(|(_, f)| match f {
                F::B(b) => b.clone(),
                other => panic!("field {num} is {other:?}"),
            })
            .collect()
    }

    fn one(msg: &[(u32, F)], num: u32) -> Vec<(u32, F)> {
        let all = bytes_of(msg, num);
        assert_eq!(all.len(), 1, "field {num} once");
        decode(&all[0])
    }

    fn text(msg: &[(u32, F)], num: u32) -> String {
        String::from_utf8(bytes_of(msg, num).pop().unwrap_or_default()).unwrap()
    }

    /// The `(name, value)` pairs of a repeated Named* field.
    fn named(msg: &[(u32, F)], num: u32) -> Vec<(String, Vec<(u32, F)>)> {
        bytes_of(msg, num)
            .iter()
            .map(|b| {
                let pair = decode(b);
                (text(&pair, 1), one(&pair, 2))
            })
            .collect()
    }

    fn find<'a>(pairs: &'a [(String, Vec<(u32, F)>)], name: &str) -> &'a [(u32, F)] {
        &pairs.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name} absent")).1
    }

    #[test]
    fn the_built_in_document_decodes_field_by_field() {
        let registry = crate::registry::Registry::new();
        let json_doc = crate::rest::openapi::openapi_v2(&registry);
        let doc = decode(&document(&json_doc));
        assert_eq!(text(&doc, 1), "2.0");
        assert_eq!(text(&one(&doc, 2), 1), "Kubernetes (sandbox)");
        // Definitions (9) → NamedSchema (1): Deployment's description (4) and GVK extension (31).
        let defs = named(&one(&doc, 9), 1);
        let deployment = find(&defs, "io.k8s.api.apps.v1.Deployment");
        let want = json_doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["description"].as_str().unwrap();
        assert_eq!(text(deployment, 4), want);
        let ext = named(deployment, 31);
        let gvk = find(&ext, "x-kubernetes-group-version-kind");
        let yaml: Value = serde_json::from_str(&text(gvk, 2)).unwrap();
        assert_eq!(yaml, json!([{ "group": "apps", "version": "v1", "kind": "Deployment" }]));
        // Properties (25) → NamedSchema: replicas is an integer (TypeItem 22 → value 1).
        let spec = find(&defs, "io.k8s.api.apps.v1.DeploymentSpec");
        let props = named(&one(spec, 25), 1);
        assert_eq!(text(&one(find(&props, "replicas"), 22), 1), "integer");
        assert!(text(find(&props, "replicas"), 4).starts_with("Number of desired pods"));
        // A described reference (`allOf: [{$ref}]` in JSON) is Swagger 2.0's `$ref` (1) beside
        // the description, with no allOf (24).
        let template = find(&props, "template");
        assert_eq!(text(template, 1), "#/definitions/io.k8s.api.core.v1.PodTemplateSpec");
        assert!(bytes_of(template, 24).is_empty());
        assert!(!text(template, 4).is_empty());
        // required (19) is repeated.
        let required: Vec<String> =
            bytes_of(spec, 19).into_iter().map(|b| String::from_utf8(b).unwrap()).collect();
        assert!(required.contains(&"selector".to_owned()), "{required:?}");
        // A container list: array (22) of items (23 → schema 1) with the merge key extension.
        let pod_spec = find(&defs, "io.k8s.api.core.v1.PodSpec");
        let containers = find(&named(&one(pod_spec, 25), 1), "containers").to_vec();
        assert_eq!(text(&one(&containers, 22), 1), "array");
        let item = decode(&bytes_of(&one(&containers, 23), 1)[0]);
        assert_eq!(text(&item, 1), "#/definitions/io.k8s.api.core.v1.Container");
        let merge_key = find(&named(&containers, 31), "x-kubernetes-patch-merge-key").to_vec();
        assert_eq!(text(&merge_key, 2), "\"name\"");
        // Paths (8) → NamedPathItem (2) → PathItem get (2) → Operation operationId (5).
        let paths = named(&one(&doc, 8), 2);
        let cms = find(&paths, "/api/v1/namespaces/{namespace}/configmaps");
        assert_eq!(text(&one(cms, 2), 5), "listCoreV1NamespacedConfigMap");
    }

    #[test]
    fn schemas_keep_maps_enums_bools_and_parameters() {
        let doc = json!({
            "swagger": "2.0",
            "paths": { "/x": { "get": {
                "parameters": [{ "name": "watch", "in": "query", "type": "boolean", "uniqueItems": true }],
                "responses": { "200": { "description": "OK", "schema": { "type": "string" } } },
            } } },
            "definitions": { "A": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "m": { "type": "object", "additionalProperties": { "type": "string" } },
                    "e": { "type": "string", "enum": ["a", "b"], "default": "a", "maxLength": 3, "minimum": 1.5 },
                },
            } },
        });
        let out = decode(&document(&doc));
        let defs = named(&one(&out, 9), 1);
        let a = find(&defs, "A");
        // additionalProperties: false is the oneof's bool, written although false.
        assert!(matches!(one(a, 21).as_slice(), [(2, F::V(0))]));
        let props = named(&one(a, 25), 1);
        let m = one(&one(find(&props, "m"), 21), 1);
        assert_eq!(text(&one(&m, 22), 1), "string");
        let e = find(&props, "e");
        let enums: Vec<String> = bytes_of(e, 20).iter().map(|b| text(&decode(b), 2)).collect();
        assert_eq!(enums, ["\"a\"", "\"b\""]);
        assert_eq!(text(&one(e, 5), 2), "\"a\"");
        assert!(e.iter().any(|(n, f)| *n == 11 && matches!(f, F::V(3))));
        assert!(e.iter().any(|(n, f)| *n == 9 && matches!(f, F::D(d) if f64::from_bits(*d) == 1.5)));
        let get = one(find(&named(&one(&out, 8), 2), "/x"), 2);
        // ParametersItem (8) → Parameter (1) → NonBodyParameter (2) → QueryParameterSubSchema (3).
        let query = one(&one(&one(&one(&get, 8), 1), 2), 3);
        assert_eq!(
            (text(&query, 4), text(&query, 2), text(&query, 6)),
            ("watch".into(), "query".into(), "boolean".into())
        );
        assert!(query.iter().any(|(n, f)| *n == 20 && matches!(f, F::V(1))));
        // Responses (9) → NamedResponseValue (1) → ResponseValue response (1) → schema (2 → 1).
        let ok = named(&one(&get, 9), 1);
        let resp = one(find(&ok, "200"), 1);
        assert_eq!(text(&resp, 1), "OK");
        assert_eq!(text(&one(&one(&one(&resp, 2), 1), 22), 1), "string");
    }
}
