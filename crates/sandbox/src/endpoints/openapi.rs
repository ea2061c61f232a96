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
//! The documents are built once, on first use.

use std::collections::HashMap;
use std::sync::OnceLock;

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::endpoints::discovery::{GIT_VERSION, groups};
use crate::patch;
use crate::resource::{RESOURCES, ResourceDef};

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
        let Some(schema_of) = r.schema else { continue };
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

/// `/openapi/v2`: one Swagger document with every served kind.
#[must_use]
pub fn openapi_v2() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        json!({
            "swagger": "2.0",
            "info": { "title": "Kubernetes (sandbox)", "version": GIT_VERSION },
            "paths": {},
            "definitions": schemas(RESOURCES.iter(), "/definitions"),
        })
    })
}

/// `/openapi/v3`: the index of group/version documents.
#[must_use]
pub fn openapi_v3_index() -> Value {
    let mut paths = Map::new();
    paths.insert("api/v1".into(), json!({ "serverRelativeURL": "/openapi/v3/api/v1?hash=sandbox" }));
    for (g, v) in groups() {
        paths.insert(
            format!("apis/{g}/{v}"),
            json!({ "serverRelativeURL": format!("/openapi/v3/apis/{g}/{v}?hash=sandbox") }),
        );
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`; `None` for one not served.
#[must_use]
pub fn openapi_v3(group: &str, version: &str) -> Option<&'static Value> {
    static DOCS: OnceLock<HashMap<(String, String), Value>> = OnceLock::new();
    let docs = DOCS.get_or_init(|| {
        let mut gvs: Vec<(&str, &str)> = vec![("", "v1")];
        gvs.extend(groups());
        gvs.into_iter().map(|(g, v)| ((g.to_owned(), v.to_owned()), group_version_document(g, v))).collect()
    });
    docs.get(&(group.to_owned(), version.to_owned()))
}

fn group_version_document(group: &str, version: &str) -> Value {
    let kinds = || RESOURCES.iter().filter(|r| r.group == group && r.version == version);
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
    json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes (sandbox)", "version": GIT_VERSION },
        "paths": paths,
        "components": { "schemas": schemas(kinds(), "/components/schemas") },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_described_field_by_field_and_found_by_its_gvk() {
        let doc = openapi_v3("apps", "v1").unwrap();
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
        let v1 = openapi_v3("", "v1").unwrap();
        let merge_key = |schemas: &Value, def: &str| {
            schemas[def]["properties"]["ports"]["x-kubernetes-patch-merge-key"].clone()
        };
        assert_eq!(merge_key(&v1["components"]["schemas"], "io.k8s.api.core.v1.ServiceSpec"), "port");
        assert_eq!(merge_key(schemas, "io.k8s.api.core.v1.Container"), "containerPort");
        assert!(openapi_v3("apps", "v2").is_none());
        assert!(
            openapi_v2()["definitions"]["io.k8s.api.core.v1.ConfigMap"]["properties"]["data"].is_object()
        );
    }
}
