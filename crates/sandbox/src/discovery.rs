//! The non-resource endpoints real clients read before they touch a resource: `/version`,
//! legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`), aggregated discovery
//! (`apidiscovery.k8s.io/v2`), OpenAPI v2 and v3 documents, and `/healthz`, `/readyz`, `/livez`.
//!
//! The OpenAPI documents describe each served kind with an open schema (`type: object` plus its
//! group/version/kind) and the `x-kubernetes-patch-merge-key` markers strategic merge needs: enough
//! for kubectl's apply, edit and validation to find the kinds, while the server does the real
//! validation.

use serde_json::{Value, json};

use crate::resource::{RESOURCES, ResourceDef};

/// The version the sandbox reports (the Kubernetes API it follows).
pub const GIT_VERSION: &str = "v1.32.0-sandbox";

fn groups() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in RESOURCES.iter().filter(|r| !r.group.is_empty()) {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

fn verbs(r: &ResourceDef) -> Vec<&'static str> {
    vec!["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        .into_iter()
        .filter(|v| r.plural != "namespaces" || *v != "deletecollection")
        .collect()
}

fn resource_entries(group: &str, version: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        out.push(json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
            "verbs": verbs(r), "shortNames": r.short_names, "categories": r.categories, "storageVersionHash": "",
        }));
        if r.status_subresource {
            out.push(json!({ "name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get", "patch", "update"] }));
        }
        if r.scale_subresource {
            out.push(json!({ "name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"] }));
        }
    }
    out
}

/// `/version`.
#[must_use]
pub fn version() -> Value {
    json!({ "major": "1", "minor": "32", "gitVersion": GIT_VERSION, "gitCommit": "", "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z", "goVersion": "n/a", "compiler": "rustc", "platform": "linux/amd64" })
}

/// `/api`: the core group's versions.
#[must_use]
pub fn core_versions() -> Value {
    json!({ "kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1" }] })
}

/// `/apis`: the named groups.
#[must_use]
pub fn group_list() -> Value {
    let groups: Vec<Value> = groups()
        .into_iter()
        .map(|(g, v)| {
            let gv = json!({ "groupVersion": format!("{g}/{v}"), "version": v });
            json!({ "name": g, "versions": [gv.clone()], "preferredVersion": gv })
        })
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `/api/v1` or `/apis/<group>/<version>`; `None` for a group/version the sandbox does not serve.
#[must_use]
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let entries = resource_entries(group, version);
    if entries.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    Some(json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries }))
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) for `/api` (core) or
/// `/apis` (named groups).
#[must_use]
pub fn aggregated(core: bool) -> Value {
    let group_versions: Vec<(&str, &str)> = if core { vec![("", "v1")] } else { groups() };
    let items: Vec<Value> = group_versions
        .into_iter()
        .map(|(g, v)| {
            let resources: Vec<Value> = RESOURCES
                .iter()
                .filter(|r| r.group == g && r.version == v)
                .map(|r| {
                    let mut subs = Vec::new();
                    if r.status_subresource {
                        subs.push(json!({ "subresource": "status", "responseKind": { "group": g, "version": v, "kind": r.kind }, "verbs": ["get", "patch", "update"] }));
                    }
                    if r.scale_subresource {
                        subs.push(json!({ "subresource": "scale", "responseKind": { "group": "autoscaling", "version": "v1", "kind": "Scale" }, "verbs": ["get", "patch", "update"] }));
                    }
                    json!({
                        "resource": r.plural, "responseKind": { "group": g, "version": v, "kind": r.kind },
                        "scope": if r.namespaced { "Namespaced" } else { "Cluster" }, "singularResource": r.singular,
                        "verbs": verbs(r), "shortNames": r.short_names, "categories": r.categories, "subresources": subs,
                    })
                })
                .collect();
            json!({ "metadata": { "name": g }, "versions": [{ "version": v, "resources": resources, "freshness": "Current" }] })
        })
        .collect();
    json!({ "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items })
}

fn definition_name(r: &ResourceDef) -> String {
    let group = match r.group {
        "" => "core".to_owned(),
        g => g.trim_end_matches(".k8s.io").to_owned(),
    };
    format!("io.k8s.api.{group}.{}.{}", r.version, r.kind)
}

fn kind_schema(r: &ResourceDef) -> Value {
    let mut schema = json!({
        "type": "object",
        "description": format!("{} ({}), served by the sandbox", r.kind, r.api_version()),
        "x-kubernetes-group-version-kind": [{ "group": r.group, "version": r.version, "kind": r.kind }],
        "properties": {
            "apiVersion": { "type": "string" },
            "kind": { "type": "string" },
            "metadata": {
                "type": "object",
                "properties": {
                    "ownerReferences": { "type": "array", "items": { "type": "object" }, "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge" },
                    "finalizers": { "type": "array", "items": { "type": "string" }, "x-kubernetes-patch-strategy": "merge" },
                },
                "x-kubernetes-preserve-unknown-fields": true,
            },
        },
        "x-kubernetes-preserve-unknown-fields": true,
    });
    if r.kind == "Deployment" {
        let containers = json!({ "type": "array", "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }, "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge" });
        schema["properties"]["spec"] = json!({
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": { "template": { "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": { "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": { "containers": containers.clone(), "initContainers": containers } } } } },
        });
    }
    schema
}

/// `/openapi/v2`: one Swagger document with every served kind.
#[must_use]
pub fn openapi_v2() -> Value {
    let mut defs = serde_json::Map::new();
    for r in RESOURCES {
        defs.insert(definition_name(r), kind_schema(r));
    }
    json!({ "swagger": "2.0", "info": { "title": "Kubernetes (sandbox)", "version": GIT_VERSION }, "paths": {}, "definitions": defs })
}

/// `/openapi/v3`: the index of group/version documents.
#[must_use]
pub fn openapi_v3_index() -> Value {
    let mut paths = serde_json::Map::new();
    paths.insert("api/v1".into(), json!({ "serverRelativeURL": "/openapi/v3/api/v1?hash=sandbox" }));
    for (g, v) in groups() {
        paths.insert(
            format!("apis/{g}/{v}"),
            json!({ "serverRelativeURL": format!("/openapi/v3/apis/{g}/{v}?hash=sandbox") }),
        );
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
#[must_use]
pub fn openapi_v3(group: &str, version: &str) -> Option<Value> {
    let mut schemas = serde_json::Map::new();
    for r in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        schemas.insert(definition_name(r), kind_schema(r));
    }
    if schemas.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    for r in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        // kubectl looks for a PATCH operation of the kind that takes `fieldValidation`: then it
        // leaves validation to the server instead of downloading the protobuf OpenAPI v2.
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
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes (sandbox)", "version": GIT_VERSION },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}
