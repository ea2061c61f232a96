//! A custom kind's published schema: what apiextensions' OpenAPI builder makes of a CRD
//! version's `openAPIV3Schema` for `/openapi/v2` and `/openapi/v3`.
//!
//! The schema is published as the structural schema reads it (no `example`, `externalDocs` or
//! other keywords it has no place for), with `x-kubernetes-int-or-string` unfolded into its
//! `anyOf`, `metadata` / `apiVersion` / `kind` added at the root and in every embedded resource,
//! and the kind's group/version/kind. The v2 document is for kubectl's client-side validation,
//! and so is cut to what that validation copes with: no junctors, a nullable or
//! unknown-preserving node left untyped and without children, no defaults, and a kind that
//! keeps unknown fields at its root published as a bare `type: object`. A kind's list gets a
//! definition of its own, as the builder writes it.

use serde_json::{Map, Value, json};

use crate::resource::ResourceDef;

/// The document a schema is published in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Document {
    /// `/openapi/v2`: Swagger 2.0, definitions under `#/definitions`.
    V2,
    /// `/openapi/v3/apis/<group>/<version>`, schemas under `#/components/schemas`.
    V3,
}

impl Document {
    fn reference(self, definition: &str) -> String {
        match self {
            Document::V2 => format!("#/definitions/{definition}"),
            Document::V3 => format!("#/components/schemas/{definition}"),
        }
    }

    /// A reference with a description beside it: Swagger 2.0 writes them side by side, OpenAPI
    /// v3 wraps the reference in `allOf`.
    fn described_reference(self, definition: &str, description: &str) -> Value {
        let reference = self.reference(definition);
        match self {
            Document::V2 => json!({ "$ref": reference, "description": description }),
            Document::V3 => json!({ "allOf": [{ "$ref": reference }], "description": description }),
        }
    }
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// Upstream's definition name of a custom kind: the group reversed, the version, the kind
/// (`com.example.v1.Widget` for `example.com/v1` `Widget`).
pub(super) fn definition_name(r: &ResourceDef, kind: &str) -> String {
    let group: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{}", group.join("."), r.version, kind)
}

/// The kind's definition, from its version's schema as the CRD writes it (`None` when it has
/// none).
pub(super) fn kind_definition(r: &ResourceDef, written: Option<&Value>, document: Document) -> Value {
    let structural = written.filter(|s| s.is_object()).map(|s| {
        let mut s = structural(s);
        unfold(&mut s);
        s
    });
    let mut out = match structural {
        // kubectl's v2 validation would refuse every field outside apiVersion, kind and
        // metadata if they were listed: a kind that keeps unknown fields is a bare object.
        None => json!({ "type": "object" }),
        Some(s) if document == Document::V2 && s["x-kubernetes-preserve-unknown-fields"] == true => {
            json!({ "type": "object" })
        }
        Some(mut s) => {
            if document == Document::V2 {
                for_v2(&mut s);
            }
            if let Some(props) = s
                .as_object_mut()
                .and_then(|o| o.entry("properties").or_insert_with(|| json!({})).as_object_mut())
            {
                props.insert("metadata".into(), document.described_reference(OBJECT_META, METADATA));
                props.insert("apiVersion".into(), json!({ "type": "string", "description": API_VERSION }));
                props.insert("kind".into(), json!({ "type": "string", "description": KIND }));
            }
            add_embedded(&mut s, document);
            if document == Document::V2 {
                prune_defaults(&mut s);
            }
            s
        }
    };
    out["x-kubernetes-group-version-kind"] =
        json!([{ "group": r.group, "version": r.version, "kind": r.kind }]);
    out
}

/// The kind's list definition (`WidgetList`): its items refer to the kind's definition.
pub(super) fn list_definition(r: &ResourceDef, document: Document) -> Value {
    json!({
        "description": format!("{} is a list of {}", r.list_kind, r.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": { "type": "string", "description": API_VERSION },
            "items": {
                "type": "array",
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural),
                "items": { "$ref": document.reference(&definition_name(r, r.kind)) },
            },
            "kind": { "type": "string", "description": KIND },
            "metadata": document.described_reference(LIST_META, LIST_METADATA),
        },
        "x-kubernetes-group-version-kind": [{ "group": r.group, "version": r.version, "kind": r.list_kind }],
    })
}

/// The keywords a structural schema keeps (its generic part, value validations and the
/// Kubernetes extensions); what else a CRD may write (`example`, `externalDocs`, `id`,
/// `$schema`, `definitions`, `dependencies`, `additionalItems`, `patternProperties`) is not
/// published. A `false` flag or an empty list is as if unwritten.
fn structural(written: &Value) -> Value {
    const KEPT: &[&str] = &[
        "description",
        "type",
        "title",
        "default",
        "nullable",
        "format",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    ];
    let Some(node) = written.as_object() else { return written.clone() };
    let mut out = Map::new();
    for (key, value) in node {
        let unset = value == &Value::Bool(false) || value.as_array().is_some_and(Vec::is_empty);
        match key.as_str() {
            _ if unset => {}
            "properties" => {
                let properties = value.as_object().into_iter().flatten();
                out.insert(key.clone(), properties.map(|(k, v)| (k.clone(), structural(v))).collect());
            }
            "items" | "additionalProperties" => {
                out.insert(key.clone(), structural(value));
            }
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// The children of a schema node: its properties, items and additional properties.
fn children(node: &mut Value) -> impl Iterator<Item = &mut Value> {
    let Some(node) = node.as_object_mut() else { return Vec::new().into_iter() };
    let mut out = Vec::new();
    for (key, value) in node.iter_mut() {
        match key.as_str() {
            "properties" => out.extend(value.as_object_mut().into_iter().flat_map(|p| p.values_mut())),
            "items" | "additionalProperties" if value.is_object() => out.push(value),
            _ => {}
        }
    }
    out.into_iter()
}

/// `x-kubernetes-int-or-string` spelled out as the `anyOf` of an integer and a string, as
/// apiextensions' `Unfold` does (unless the schema already says so).
fn unfold(node: &mut Value) {
    if node["x-kubernetes-int-or-string"] == true {
        let pattern = json!([{ "type": "integer" }, { "type": "string" }]);
        let said = node["anyOf"] == pattern || node.pointer("/allOf/0") == Some(&json!({ "anyOf": pattern }));
        if !said {
            if node.get("anyOf").is_none() {
                node["anyOf"] = pattern;
            } else {
                let mut all_of = vec![json!({ "anyOf": pattern })];
                all_of.extend(node.get("allOf").and_then(Value::as_array).cloned().unwrap_or_default());
                node["allOf"] = Value::Array(all_of);
            }
        }
    }
    children(node).for_each(unfold);
}

/// What OpenAPI v2 (and kubectl's validation reading it) cannot express, taken out as
/// apiextensions' `ToStructuralOpenAPIV2` does, a node before its children.
fn for_v2(node: &mut Value) {
    let Some(s) = node.as_object_mut() else { return };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(junctor);
    }
    let preserves = s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if s.remove("nullable") == Some(Value::Bool(true)) {
        s.remove("type");
        s.remove("items");
        s.remove("properties");
    }
    if preserves {
        s.remove("items");
        s.remove("properties");
    }
    let typed = |s: &Map<String, Value>, t: &str| s.get("type").and_then(Value::as_str) == Some(t);
    if !s.contains_key("items") && typed(s, "array") {
        s.remove("type");
    }
    if preserves && typed(s, "object") {
        s.remove("type");
    }
    // A nullable property is not required (null stands for it); a nullable map value makes
    // nothing required.
    let nullable = |v: &Value| v["nullable"] == true;
    let nullable_properties: Vec<String> = s
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, v)| nullable(v))
        .map(|(k, _)| k.clone())
        .collect();
    if s.get("additionalProperties").is_some_and(nullable) {
        s.remove("required");
    } else if let Some(required) = s.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable_properties.iter().any(|n| n == r)));
        if required.is_empty() {
            s.remove("required");
        }
    }
    children(node).for_each(for_v2);
}

/// `apiVersion`, `kind` and `metadata` in every embedded resource
/// (`x-kubernetes-embedded-resource`), both required to be set; in v2 not where unknown fields
/// are kept, as kubectl would then refuse those.
fn add_embedded(node: &mut Value, document: Document) {
    children(node).for_each(|child| add_embedded(child, document));
    if document == Document::V2 && node["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    if node["x-kubernetes-embedded-resource"] != true {
        return;
    }
    let Some(s) = node.as_object_mut() else { return };
    let props = s.entry("properties").or_insert_with(|| json!({}));
    props["apiVersion"] = json!({ "type": "string", "description": EMBEDDED_API_VERSION });
    props["kind"] = json!({ "type": "string", "description": EMBEDDED_KIND });
    props["metadata"] = document.described_reference(OBJECT_META, METADATA);
    let required = s.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(json!(field));
            }
        }
    }
}

/// Every `default` taken out: the v2 document publishes none (upstream prunes them from the
/// whole document, so a CRD's merges cleanly with the built-in kinds').
fn prune_defaults(node: &mut Value) {
    if let Some(s) = node.as_object_mut() {
        s.remove("default");
    }
    children(node).for_each(prune_defaults);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> ResourceDef {
        let mut r = crate::registry::Registry::new().find("", "v1", "configmaps").unwrap().as_ref().clone();
        r.group = "example.com";
        r.version = "v1";
        r.kind = "Widget";
        r.list_kind = "WidgetList";
        r.plural = "widgets";
        r
    }

    fn without_added(mut d: Value) -> Value {
        let props = d["properties"].as_object_mut().unwrap();
        for k in ["metadata", "apiVersion", "kind"] {
            props.remove(k);
        }
        d.as_object_mut().unwrap().remove("x-kubernetes-group-version-kind");
        d
    }

    #[test]
    fn a_kind_keeping_unknown_fields_at_its_root_is_a_bare_object_in_v2_only() {
        let r = widget();
        let written = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": { "spec": { "type": "object" } } });
        let v2 = kind_definition(&r, Some(&written), Document::V2);
        assert_eq!(
            v2,
            json!({ "type": "object", "x-kubernetes-group-version-kind": [{ "group": "example.com", "version": "v1", "kind": "Widget" }] })
        );
        assert_eq!(kind_definition(&r, None, Document::V2), v2);
        let v3 = kind_definition(&r, Some(&written), Document::V3);
        assert_eq!(v3["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(v3["properties"]["spec"], json!({ "type": "object" }));
        assert_eq!(
            v3["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }

    #[test]
    fn v2_drops_what_kubectl_cannot_validate() {
        let r = widget();
        let written = json!({
            "type": "object",
            "example": { "spec": {} },
            "required": ["spec", "gone"],
            "properties": {
                "spec": {
                    "type": "object",
                    "description": "Spec.",
                    "externalDocs": { "url": "https://example.com" },
                    "properties": {
                        "port": { "x-kubernetes-int-or-string": true, "default": 80 },
                        "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                            "properties": { "a": { "type": "string" } } },
                        "list": { "type": "array", "x-kubernetes-preserve-unknown-fields": true,
                            "items": { "type": "string" } },
                        "size": { "type": "integer", "minimum": 1, "nullable": false,
                            "oneOf": [{ "minimum": 2 }] },
                    },
                },
                "gone": { "type": "string", "nullable": true },
            },
        });
        let v2 = without_added(kind_definition(&r, Some(&written), Document::V2));
        assert_eq!(
            v2,
            json!({
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "spec": {
                        "type": "object",
                        "description": "Spec.",
                        "properties": {
                            "port": { "x-kubernetes-int-or-string": true },
                            "free": { "x-kubernetes-preserve-unknown-fields": true },
                            "list": { "x-kubernetes-preserve-unknown-fields": true },
                            "size": { "type": "integer", "minimum": 1 },
                        },
                    },
                    "gone": {},
                },
            })
        );
        let v3 = without_added(kind_definition(&r, Some(&written), Document::V3));
        let port = &v3["properties"]["spec"]["properties"]["port"];
        assert_eq!(port["anyOf"], json!([{ "type": "integer" }, { "type": "string" }]));
        assert_eq!(port["default"], 80);
        assert_eq!(v3["properties"]["gone"]["nullable"], true);
        assert!(v3.get("example").is_none());
        assert_eq!(v3["properties"]["spec"]["properties"]["free"]["properties"]["a"]["type"], "string");
    }

    #[test]
    fn an_embedded_resource_gets_its_type_and_object_meta() {
        let r = widget();
        let written = json!({ "type": "object", "properties": {
            "template": { "type": "object", "x-kubernetes-embedded-resource": true,
                "properties": { "spec": { "type": "object" } }, "required": ["spec"] },
            "loose": { "type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true },
        } });
        let v2 = kind_definition(&r, Some(&written), Document::V2);
        let template = &v2["properties"]["template"];
        assert_eq!(template["required"], json!(["spec", "kind", "apiVersion"]));
        assert_eq!(
            template["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(template["properties"]["kind"]["type"], "string");
        assert!(v2["properties"]["loose"].get("properties").is_none());
        let v3 = kind_definition(&r, Some(&written), Document::V3);
        assert_eq!(v3["properties"]["loose"]["required"], json!(["kind", "apiVersion"]));
    }

    #[test]
    fn a_list_refers_to_its_kind() {
        let list = list_definition(&widget(), Document::V2);
        assert_eq!(list["properties"]["items"]["items"]["$ref"], "#/definitions/com.example.v1.Widget");
        assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "WidgetList");
    }
}
