//! The OpenAPI documents: `/openapi/v2`, the `/openapi/v3` index and one `/openapi/v3` document
//! per group/version.
//!
//! Each served kind's schema is the one upstream publishes — every property with its type and
//! description, generated from k8s-openapi's types — carrying its `x-kubernetes-group-version-kind`
//! and, on list fields, the `x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy` markers
//! kubectl's strategic merge reads. So `kubectl explain deployment.spec.replicas` answers as on a
//! cluster, and `kubectl apply` merges containers by name. Each kind also gets a PATCH operation
//! that takes `fieldValidation`: kubectl then leaves validation to the server instead of
//! downloading the protobuf OpenAPI v2.
//!
//! A custom kind's definition is its CRD version's `openAPIV3Schema` as apiextensions' builder
//! publishes it (`openapi_custom`), under upstream's definition name (`com.example.v1.Widget`
//! for `example.com/v1` `Widget`), beside its list's; so `kubectl explain widget.spec.size`
//! answers from the CRD, and kubectl's client-side validation lets through what the schema keeps.
//!
//! Every document carries its entity tag (kube-openapi's: SHA-512 of the bytes); `/openapi/v3`'s
//! index names each group/version's document by it, so a client caches the document until the
//! kinds in it change.
//!
//! The built-in kinds' documents are built once, on first use; the parts for custom resources
//! each time they are asked for, from the registry of the moment.

use std::borrow::Cow;

use std::collections::HashMap;
use std::sync::OnceLock;

use bytes::Bytes;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::catalog::RESOURCES;
use crate::go_order::GoOrdered;
use crate::patch::{self, PatchType};
use crate::registry::Registry;
use crate::resource::{ResourceDef, Strategy};
use crate::rest::discovery::{GIT_VERSION, groups};
use crate::rest::openapi_custom::{self, Document};
use crate::rest::openapi_proto;

/// The schemas of `kinds` and of everything they refer to, by definition name, with references
/// under `definitions_path` (`/definitions` for v2, `/components/schemas` for v3).
fn schemas<'a>(
    kinds: impl Iterator<Item = &'a ResourceDef>,
    definitions_path: &'static str,
) -> Map<String, Value> {
    let settings = SchemaSettings::openapi3().with(|s| s.definitions_path = definitions_path.into());
    let mut generator = SchemaGenerator::new(settings);
    let mut roots = Vec::new();
    for r in kinds {
        let Strategy::BuiltIn(b) = &r.strategy else { continue };
        let Some(schema_of) = b.schema else { continue };
        let root = schema_of(&mut generator);
        if let Some(name) = root.get("$ref").and_then(Value::as_str).and_then(|r| r.rsplit('/').next()) {
            roots.push((name.to_owned(), r));
        }
    }
    let mut defs = generator.take_definitions(true);
    for (name, r) in roots {
        if let Some(def) = defs.get_mut(&name) {
            def["x-kubernetes-group-version-kind"] =
                json!([{ "group": r.group, "version": r.version, "kind": r.kind }]);
        }
    }
    for (name, def) in &mut defs {
        mark_merge_lists(name, def);
    }
    defs
}

/// Marks the list properties strategic merge merges (by the sandbox's own table of merge keys;
/// a Service's `ports` merge by `port`, a container's by `containerPort`).
fn mark_merge_lists(name: &str, def: &mut Value) {
    let Some(props) = def.get_mut("properties").and_then(Value::as_object_mut) else { return };
    for (field, prop) in props.iter_mut().filter(|(_, p)| p["type"] == "array") {
        let key = match field.as_str() {
            "ports" if name.ends_with(".ServiceSpec") => Some("port"),
            "ports" => Some("containerPort"),
            _ => patch::merge_key(field, &[]),
        };
        if let Some(key) = key {
            prop["x-kubernetes-patch-merge-key"] = json!(key);
            prop["x-kubernetes-patch-strategy"] = json!("merge");
        } else if patch::is_primitive_set(field) {
            prop["x-kubernetes-patch-strategy"] = json!("merge");
        }
    }
}

/// The definitions of the custom kinds among `kinds` (each kind's and its list's, as `document`
/// publishes them) and, when there are any, of `ObjectMeta`, `ListMeta` and what they refer to.
fn custom_schemas<'a>(
    kinds: impl Iterator<Item = &'a ResourceDef>,
    document: Document,
) -> Map<String, Value> {
    let mut out = Map::new();
    for r in kinds {
        let Some(custom) = r.custom() else { continue };
        let written = custom.version.pointer("/schema/openAPIV3Schema");
        out.insert(
            openapi_custom::definition_name(r, r.kind),
            openapi_custom::kind_definition(r, written, document),
        );
        out.insert(
            openapi_custom::definition_name(r, r.list_kind),
            openapi_custom::list_definition(r, document),
        );
    }
    if !out.is_empty() {
        let definitions_path = match document {
            Document::V2 => "/definitions",
            Document::V3 => "/components/schemas",
        };
        let settings = SchemaSettings::openapi3().with(|s| s.definitions_path = definitions_path.into());
        let mut generator = SchemaGenerator::new(settings);
        generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>();
        generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta>();
        out.extend(generator.take_definitions(true));
    }
    out
}

/// `/openapi/v2`: one Swagger document with every served kind.
#[must_use]
pub fn openapi_v2(registry: &Registry) -> Cow<'static, Value> {
    static DOC: OnceLock<Value> = OnceLock::new();
    let built_in = DOC.get_or_init(|| {
        let definitions = schemas(RESOURCES.iter(), "/definitions");
        json!({
            "swagger": "2.0",
            "info": { "title": "Kubernetes (sandbox)", "version": GIT_VERSION },
            "paths": paths_v2(RESOURCES.iter(), &definitions),
            "definitions": definitions,
        })
    });
    let customs = || registry.resources().iter().map(AsRef::as_ref).filter(|r| r.custom().is_some());
    let custom = custom_schemas(customs(), Document::V2);
    if custom.is_empty() {
        return Cow::Borrowed(built_in);
    }
    let mut doc = built_in.clone();
    let paths = paths_v2(customs(), &custom);
    if let Some(defs) = doc["definitions"].as_object_mut() {
        defs.extend(custom);
    }
    if let Some(p) = doc["paths"].as_object_mut() {
        p.extend(paths);
    }
    Cow::Owned(doc)
}

/// A document as it is served: its bytes and its entity tag, the SHA-512 of the bytes in
/// upper-case hex as kube-openapi's handlers compute it (`/openapi/v3`'s index names each
/// group/version's document by it, so a client may cache that document for good).
#[derive(Clone, Debug)]
pub struct Served {
    /// The document's bytes.
    pub body: Bytes,
    /// Its entity tag, unquoted.
    pub etag: String,
}

impl Served {
    fn new(body: Vec<u8>) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA512, &body);
        let etag = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
        Served { body: Bytes::from(body), etag }
    }

    /// A JSON document as Go's `json.Marshal` writes it (no newline after it).
    pub(crate) fn json(doc: &Value) -> Self {
        Served::new(serde_json::to_vec(&GoOrdered::object(doc)).unwrap_or_default())
    }
}

/// `/openapi/v2` as JSON; the built-in document's bytes are written once.
#[must_use]
pub fn openapi_v2_json(registry: &Registry) -> Served {
    static JSON: OnceLock<Served> = OnceLock::new();
    match openapi_v2(registry) {
        Cow::Borrowed(doc) => JSON.get_or_init(|| Served::json(doc)).clone(),
        Cow::Owned(doc) => Served::json(&doc),
    }
}

/// `/openapi/v2` as gnostic's `openapi.v2.Document` protobuf message (what kube-openapi's handler
/// serves kubectl): the built-in document's bytes are encoded once; with custom kinds, the
/// document of the moment is encoded on each call.
#[must_use]
pub fn openapi_v2_protobuf(registry: &Registry) -> Served {
    static PROTO: OnceLock<Served> = OnceLock::new();
    match openapi_v2(registry) {
        Cow::Borrowed(doc) => PROTO.get_or_init(|| Served::new(openapi_proto::document(doc))).clone(),
        Cow::Owned(doc) => Served::new(openapi_proto::document(&doc)),
    }
}

/// The operations of `kinds` as the v2 document lists them (upstream's `endpoints/installer.go`
/// registers a route per verb, and kube-openapi writes each with its `operationId`
/// — `listCoreV1NamespacedConfigMap`, `patchAppsV1NamespacedDeploymentStatus` —, its
/// `x-kubernetes-action` and `x-kubernetes-group-version-kind`): the collection (list, create,
/// deletecollection), the object (read, replace, patch, delete), the list across namespaces, and
/// the `status` / `scale` subresources. `definitions` names each kind's schema.
fn paths_v2<'a>(
    kinds: impl Iterator<Item = &'a ResourceDef>,
    definitions: &Map<String, Value>,
) -> Map<String, Value> {
    let mut paths = Map::new();
    for r in kinds {
        let gvk = json!({ "group": r.group, "version": r.version, "kind": r.kind });
        let schema = definitions
            .iter()
            .find(|(_, d)| d["x-kubernetes-group-version-kind"].as_array().is_some_and(|l| l.contains(&gvk)))
            .map_or(json!({}), |(name, _)| json!({ "$ref": format!("#/definitions/{name}") }));
        let group = match r.group {
            "" => "Core".to_owned(),
            g => g.trim_end_matches(".k8s.io").split('.').map(capitalize).collect(),
        };
        let prefix = format!("{group}{}", capitalize(r.version));
        let base = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let (scope, collection) = if r.namespaced {
            ("Namespaced", format!("{base}/namespaces/{{namespace}}/{}", r.plural))
        } else {
            ("", format!("{base}/{}", r.plural))
        };
        let op = |verb: &str, action: &str, kind: &str, ok: &str| {
            json!({
                "operationId": format!("{verb}{prefix}{scope}{kind}"),
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "consumes": ["*/*"],
                "produces": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
                "schemes": ["https"],
                "responses": { ok: { "description": "OK", "schema": schema }, "401": { "description": "Unauthorized" } },
            })
        };
        let mut patch = op("patch", "patch", r.kind, "200");
        patch["consumes"] = json!(if r.custom().is_some() {
            PatchType::CUSTOM_RESOURCE_TYPES
        } else {
            PatchType::BUILT_IN_TYPES
        });
        // `deleteCoreV1CollectionNamespacedConfigMap`: the scope follows `Collection`.
        let mut delete_collection = op("delete", "deletecollection", r.kind, "200");
        delete_collection["operationId"] = json!(format!("delete{prefix}Collection{scope}{}", r.kind));
        // Only the verbs the resource serves: a review is a create alone, component statuses
        // are read only.
        let verbs = r.verbs();
        let mut routes = |path: String, ops: Vec<(&str, &str, Value)>| {
            let served: Map<String, Value> = ops
                .into_iter()
                .filter(|(verb, _, _)| verbs.contains(verb))
                .map(|(_, method, op)| (method.to_owned(), op))
                .collect();
            if !served.is_empty() {
                paths.insert(path, Value::Object(served));
            }
        };
        routes(
            collection.clone(),
            vec![
                ("list", "get", op("list", "list", r.kind, "200")),
                ("create", "post", op("create", "post", r.kind, "201")),
                ("deletecollection", "delete", delete_collection),
            ],
        );
        routes(
            format!("{collection}/{{name}}"),
            vec![
                ("get", "get", op("read", "get", r.kind, "200")),
                ("update", "put", op("replace", "put", r.kind, "200")),
                ("patch", "patch", patch),
                ("delete", "delete", op("delete", "delete", r.kind, "200")),
            ],
        );
        if r.namespaced {
            let mut all = op("list", "list", r.kind, "200");
            all["operationId"] = json!(format!("list{prefix}{}ForAllNamespaces", r.kind));
            routes(format!("{base}/{}", r.plural), vec![("list", "get", all)]);
        }
        for (sub, present) in [("status", r.status_subresource), ("scale", r.scale.is_some())] {
            if present {
                let kind = format!("{}{}", r.kind, capitalize(sub));
                paths.insert(
                    format!("{collection}/{{name}}/{sub}"),
                    json!({
                        "get": op("read", "get", &kind, "200"),
                        "put": op("replace", "put", &kind, "200"),
                        "patch": op("patch", "patch", &kind, "200"),
                    }),
                );
            }
        }
    }
    paths
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `/openapi/v3`: the index of group/version documents, each named with its entity tag as
/// `hash`.
#[must_use]
pub fn openapi_v3_index(registry: &Registry) -> Value {
    let mut gvs: Vec<(&str, &str)> = vec![("", "v1")];
    gvs.extend(groups(registry));
    let paths: Map<String, Value> = gvs
        .into_iter()
        .filter_map(|(g, v)| {
            let path = if g.is_empty() { format!("api/{v}") } else { format!("apis/{g}/{v}") };
            let served = openapi_v3_json(registry, g, v)?;
            Some((path.clone(), json!({ "serverRelativeURL": v3_url(&path, &served.etag) })))
        })
        .collect();
    json!({ "paths": paths })
}

/// Where a group/version's document of entity tag `etag` is served (`path` is `apis/apps/v1`).
#[must_use]
pub fn v3_url(path: &str, etag: &str) -> String {
    format!("/openapi/v3/{path}?hash={etag}")
}

/// A built-in group/version's `/openapi/v3` document, built once, and its bytes, written once
/// when first served.
struct BuiltInV3 {
    doc: Value,
    json: OnceLock<Served>,
}

/// The built-in group/versions' `/openapi/v3` documents.
fn built_in_v3(group: &str, version: &str) -> Option<&'static BuiltInV3> {
    static DOCS: OnceLock<HashMap<(String, String), BuiltInV3>> = OnceLock::new();
    let docs = DOCS.get_or_init(|| {
        let built_in = Registry::new();
        let mut gvs: Vec<(&str, &str)> = vec![("", "v1")];
        gvs.extend(groups(&built_in));
        gvs.into_iter()
            .map(|(g, v)| {
                let doc = group_version_document(&built_in, g, v);
                ((g.to_owned(), v.to_owned()), BuiltInV3 { doc, json: OnceLock::new() })
            })
            .collect()
    });
    docs.get(&(group.to_owned(), version.to_owned()))
}

/// A group/version's `/openapi/v3` document as JSON; `None` for one not served.
#[must_use]
pub fn openapi_v3_json(registry: &Registry, group: &str, version: &str) -> Option<Served> {
    if let Some(built_in) = built_in_v3(group, version) {
        return Some(built_in.json.get_or_init(|| Served::json(&built_in.doc)).clone());
    }
    openapi_v3(registry, group, version).map(|doc| Served::json(&doc))
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`; `None` for one not served.
#[must_use]
pub fn openapi_v3(registry: &Registry, group: &str, version: &str) -> Option<Cow<'static, Value>> {
    if let Some(built_in) = built_in_v3(group, version) {
        return Some(Cow::Borrowed(&built_in.doc));
    }
    let served = registry.resources().iter().any(|r| r.group == group && r.version == version);
    served.then(|| Cow::Owned(group_version_document(registry, group, version)))
}

/// The schema of a served kind, as its `/openapi/v3` document defines it with every reference
/// inlined and descriptions left out: what upstream's schema resolver gives an admission
/// policy's type checker. A definition met again inside itself (a recursive type) is inlined as
/// `{}`, anything. `None` for a kind not served.
#[must_use]
pub fn resolved_schema(registry: &Registry, group: &str, version: &str, kind: &str) -> Option<Value> {
    let doc = openapi_v3(registry, group, version)?;
    let schemas = doc.pointer("/components/schemas").and_then(Value::as_object)?;
    let gvk = json!([{ "group": group, "version": version, "kind": kind }]);
    let root = schemas.values().find(|d| d.get("x-kubernetes-group-version-kind") == Some(&gvk))?;
    Some(inlined(root, schemas, &mut Vec::new()))
}

/// `schema` with its references replaced by what they name, `path` the definitions being
/// inlined around it.
fn inlined<'d>(schema: &Value, definitions: &'d Map<String, Value>, path: &mut Vec<&'d str>) -> Value {
    let Some(node) = schema.as_object() else { return schema.clone() };
    // A reference, bare or as the one member of `allOf` (a described reference).
    let reference = node
        .get("$ref")
        .or_else(|| node.get("allOf").and_then(Value::as_array).filter(|a| a.len() == 1)?[0].get("$ref"))
        .and_then(Value::as_str);
    let mut out = Map::new();
    if let Some(reference) = reference {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        let Some((name, definition)) = definitions.get_key_value(name) else { return json!({}) };
        if path.contains(&name.as_str()) {
            return json!({});
        }
        path.push(name);
        if let Value::Object(resolved) = inlined(definition, definitions, path) {
            out = resolved;
        }
        path.pop();
    }
    for (key, value) in node {
        match key.as_str() {
            "$ref" | "allOf" if reference.is_some() => {}
            "description" => {}
            "properties" => {
                let properties = value.as_object().into_iter().flatten();
                let properties =
                    properties.map(|(k, v)| (k.clone(), inlined(v, definitions, path))).collect();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" | "additionalProperties" => {
                out.insert(key.clone(), inlined(value, definitions, path));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

fn group_version_document(registry: &Registry, group: &str, version: &str) -> Value {
    let kinds = || {
        registry.resources().iter().map(AsRef::as_ref).filter(|r| r.group == group && r.version == version)
    };
    let mut paths = Map::new();
    for r in kinds() {
        let base =
            if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
        let path = if r.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{base}/{}/{{name}}", r.plural)
        };
        let query = |name: &str| json!({ "name": name, "in": "query", "schema": { "type": "string", "uniqueItems": true } });
        paths.insert(
            path,
            json!({ "patch": {
                "x-kubernetes-group-version-kind": { "group": r.group, "version": r.version, "kind": r.kind },
                "x-kubernetes-action": "patch",
                "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
                "responses": { "200": { "description": "OK" } },
            } }),
        );
    }
    let mut schemas = schemas(kinds(), "/components/schemas");
    schemas.extend(custom_schemas(kinds(), Document::V3));
    json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes (sandbox)", "version": GIT_VERSION },
        "paths": paths,
        "components": { "schemas": schemas },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_described_field_by_field_and_found_by_its_gvk() {
        let registry = Registry::new();
        let doc = openapi_v3(&registry, "apps", "v1").unwrap();
        let schemas = &doc["components"]["schemas"];
        let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"],
            json!([{ "group": "apps", "version": "v1", "kind": "Deployment" }])
        );
        let spec = &schemas["io.k8s.api.apps.v1.DeploymentSpec"];
        assert_eq!(spec["properties"]["replicas"]["type"], "integer");
        assert!(
            spec["properties"]["replicas"]["description"]
                .as_str()
                .unwrap()
                .starts_with("Number of desired pods")
        );
        // A described reference is wrapped in allOf, as upstream writes it.
        assert_eq!(
            spec["properties"]["template"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"
        );
        let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        // A Service's ports merge by port (core/v1's document), a container's by containerPort.
        let v1 = openapi_v3(&registry, "", "v1").unwrap();
        let merge_key = |schemas: &Value, def: &str| {
            schemas[def]["properties"]["ports"]["x-kubernetes-patch-merge-key"].clone()
        };
        assert_eq!(merge_key(&v1["components"]["schemas"], "io.k8s.api.core.v1.ServiceSpec"), "port");
        assert_eq!(merge_key(schemas, "io.k8s.api.core.v1.Container"), "containerPort");
        assert!(openapi_v3(&registry, "apps", "v2").is_none());
        assert!(
            openapi_v2(&registry)["definitions"]["io.k8s.api.core.v1.ConfigMap"]["properties"]["data"]
                .is_object()
        );
    }
}
