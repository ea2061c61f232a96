//! The non-resource endpoints real clients read before they touch a resource: `/version`,
//! legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`), aggregated discovery
//! (`apidiscovery.k8s.io/v2`), and `/healthz`, `/readyz`, `/livez`. The OpenAPI documents are in
//! [`crate::endpoints::openapi`].

use serde_json::{Value, json};

use crate::resource::{RESOURCES, ResourceDef};

/// The version the sandbox reports (the Kubernetes API it follows).
pub const GIT_VERSION: &str = "v1.32.0-sandbox";

pub(crate) fn groups() -> Vec<(&'static str, &'static str)> {
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
