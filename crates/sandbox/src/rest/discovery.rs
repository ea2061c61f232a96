//! The non-resource endpoints real clients read before they touch a resource: `/version`,
//! legacy discovery (`/api`, `/apis`, `/apis/<group>`, `/api/v1`, `/apis/<group>/<version>`),
//! aggregated discovery (`apidiscovery.k8s.io/v2`), and `/healthz`, `/readyz`, `/livez`. The
//! OpenAPI documents are in [`crate::rest::openapi`]. Every document is made from the
//! [`Registry`] of the moment, so an established CRD's group is discovered at once.

use serde_json::{Value, json};

use crate::registry::Registry;
use crate::resource::ResourceDef;

/// The version the sandbox reports (the Kubernetes API it follows).
pub const GIT_VERSION: &str = "v1.32.0-sandbox";

/// Every named group/version served, groups in the order first served, each group's versions in
/// priority order.
pub(crate) fn groups(registry: &Registry) -> Vec<(&'static str, &'static str)> {
    registry
        .groups()
        .into_iter()
        .flat_map(|g| registry.versions(g).into_iter().map(move |v| (g, v)))
        .collect()
}

/// A resource's subresources as `(name, (group, version, kind), verbs)`: `status`, `scale`, and
/// its actions.
/// A subresource as discovery lists it: name, `(group, version, kind)`, verbs.
type SubresourceEntry = (&'static str, (&'static str, &'static str, &'static str), &'static [&'static str]);

fn subresources(r: &ResourceDef) -> Vec<SubresourceEntry> {
    const GET_UPDATE: &[&str] = &["get", "patch", "update"];
    let mut subs = Vec::new();
    if r.status_subresource {
        subs.push(("status", (r.group, r.version, r.kind), GET_UPDATE));
    }
    if r.scale.is_some() {
        subs.push(("scale", ("autoscaling", "v1", "Scale"), GET_UPDATE));
    }
    subs.extend(r.actions().iter().map(|a| (a.name, a.kind, a.verbs)));
    // A built-in kind's are listed by name; a custom resource's status before scale, as
    // apiextensions-apiserver adds them.
    if r.custom().is_none() {
        subs.sort_by_key(|s| s.0);
    }
    subs
}

fn served<'a>(
    registry: &'a Registry,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'a ResourceDef> {
    registry.resources().iter().map(AsRef::as_ref).filter(move |r| r.group == group && r.version == version)
}

fn resource_entries(registry: &Registry, group: &str, version: &str) -> Vec<Value> {
    let mut served: Vec<&ResourceDef> = served(registry, group, version).collect();
    // Upstream lists a group version's resources by name, each followed by its subresources.
    served.sort_by_key(|r| r.plural);
    let mut out = Vec::new();
    for r in served {
        out.push(json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
            "verbs": r.verbs(), "shortNames": r.short_names, "categories": r.categories, "storageVersionHash": "",
        }));
        for (name, (g, v, kind), verbs) in subresources(r) {
            let mut entry = json!({ "name": format!("{}/{name}", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": kind, "verbs": verbs });
            if (g, v) != (r.group, r.version) {
                entry["group"] = json!(g);
                entry["version"] = json!(v);
            }
            out.push(entry);
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

/// One named group as `/apis` lists it and `/apis/<group>` answers it: its versions in priority
/// order, the first preferred.
fn api_group(registry: &Registry, group: &str) -> Value {
    let versions: Vec<Value> = registry
        .versions(group)
        .into_iter()
        .map(|v| json!({ "groupVersion": format!("{group}/{v}"), "version": v }))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({ "name": group, "versions": versions, "preferredVersion": preferred })
}

/// `/apis`: the named groups.
#[must_use]
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry.groups().into_iter().map(|g| api_group(registry, g)).collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `/apis/<group>`; `None` for a group the sandbox does not serve.
#[must_use]
pub fn group(registry: &Registry, group: &str) -> Option<Value> {
    if !registry.groups().contains(&group) {
        return None;
    }
    let mut doc = api_group(registry, group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// `/api/v1` or `/apis/<group>/<version>`; `None` for a group/version the sandbox does not serve.
#[must_use]
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let entries = resource_entries(registry, group, version);
    if entries.is_empty() {
        return None;
    }
    let gv = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    Some(json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": entries }))
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) for `/api` (core) or
/// `/apis` (named groups).
#[must_use]
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let group_names: Vec<&str> = if core { vec![""] } else { registry.groups() };
    let items: Vec<Value> = group_names
        .into_iter()
        .map(|g| {
            let versions: Vec<&str> = if core { vec!["v1"] } else { registry.versions(g) };
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|v| {
                    let mut served: Vec<&ResourceDef> = served(registry, g, v).collect();
                    served.sort_by_key(|r| r.plural);
                    let resources: Vec<Value> = served
                        .into_iter()
                        .map(|r| {
                            let subs: Vec<Value> = subresources(r)
                                .into_iter()
                                .map(|(name, (sg, sv, kind), verbs)| {
                                    json!({ "subresource": name, "responseKind": { "group": sg, "version": sv, "kind": kind }, "verbs": verbs })
                                })
                                .collect();
                            json!({
                                "resource": r.plural, "responseKind": { "group": g, "version": v, "kind": r.kind },
                                "scope": if r.namespaced { "Namespaced" } else { "Cluster" }, "singularResource": r.singular,
                                "verbs": r.verbs(), "shortNames": r.short_names, "categories": r.categories, "subresources": subs,
                            })
                        })
                        .collect();
                    json!({ "version": v, "resources": resources, "freshness": "Current" })
                })
                .collect();
            json!({ "metadata": { "name": g }, "versions": versions })
        })
        .collect();
    json!({ "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items })
}
