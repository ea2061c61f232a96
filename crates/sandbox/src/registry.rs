//! The registry: every resource served right now — the built-in kinds of
//! [`RESOURCES`], and the versions that established
//! CustomResourceDefinitions serve ([`crd_resources`]), added and removed as the CRDs change (upstream's
//! apiextensions-apiserver swaps its `crdHandler`'s storage map the same way).
//!
//! Both kinds of entry are [`ResourceDef`]s: routing, the store, watches, patches, managedFields,
//! deletion and garbage collection never ask which kind they serve; only the strategy differs.
//!
//! ## Warning
//!
//! Names of custom resources (group, plural, kind…) are interned for the life of the process:
//! each distinct name costs its bytes once, however often a CRD using it is created and deleted.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::Value;

use crate::catalog::RESOURCES;
use crate::kinds::custom::{CustomStrategy, pointer_of};
use crate::resource::{ResourceDef, ScalePaths, Strategy};
use crate::schema::Structural;

/// The served resources.
#[derive(Debug, Clone)]
pub struct Registry {
    resources: Vec<Arc<ResourceDef>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// The built-in kinds only.
    #[must_use]
    pub fn new() -> Self {
        Self { resources: RESOURCES.iter().cloned().map(Arc::new).collect() }
    }

    /// The resource at `/apis/<group>/<version>/<plural>` (`/api/v1/<plural>` for the core group).
    #[must_use]
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// The resource whose objects have this `apiVersion` and `kind`.
    #[must_use]
    pub fn find_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.resources.iter().find(|r| r.group == group && r.version == version && r.kind == kind).cloned()
    }

    /// A resource serving the objects kept in `storage` (`<plural>.<group>`): the first served
    /// version's when several share it.
    #[must_use]
    pub fn find_storage(&self, storage: &str) -> Option<Arc<ResourceDef>> {
        self.resources.iter().find(|r| r.storage == storage).cloned()
    }

    /// Every served resource: the built-in kinds first, then custom ones in the order defined.
    #[must_use]
    pub fn resources(&self) -> &[Arc<ResourceDef>] {
        &self.resources
    }

    /// Every distinct storage name.
    #[must_use]
    pub fn storages(&self) -> Vec<&'static str> {
        let mut seen: Vec<&'static str> = Vec::new();
        for r in &self.resources {
            if !seen.contains(&r.storage) {
                seen.push(r.storage);
            }
        }
        seen
    }

    /// Serves `defs` (the versions of one CRD, all of storage `storage`) in place of whatever that
    /// CRD served before.
    pub fn define(&mut self, storage: &str, defs: Vec<ResourceDef>) {
        self.remove(storage);
        self.resources.extend(defs.into_iter().map(Arc::new));
    }

    /// Stops serving the custom resources of `storage` (a CRD's name).
    pub fn remove(&mut self, storage: &str) {
        self.resources.retain(|r| r.custom().is_none() || r.storage != storage);
    }

    /// The served versions of `group`, in upstream's priority order (`v1` before `v1beta1` before
    /// `v1alpha1`): the first is the preferred version.
    #[must_use]
    pub fn versions(&self, group: &str) -> Vec<&'static str> {
        let mut versions: Vec<&'static str> = Vec::new();
        for r in self.resources.iter().filter(|r| r.group == group) {
            if !versions.contains(&r.version) {
                versions.push(r.version);
            }
        }
        // `Greater` means "comes first".
        versions.sort_by(|a, b| crate::kinds::crd::compare_kube_aware_versions(b, a));
        versions
    }

    /// Every named group (not the core group), in the order first served.
    #[must_use]
    pub fn groups(&self) -> Vec<&'static str> {
        let mut groups: Vec<&'static str> = Vec::new();
        for r in self.resources.iter().filter(|r| !r.group.is_empty()) {
            if !groups.contains(&r.group) {
                groups.push(r.group);
            }
        }
        groups
    }
}

/// `s`, as a string that lives as long as the process (one copy per distinct value).
pub fn intern(s: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Mutex::default).lock();
    if let Some(known) = names.get(s) {
        return known;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// `items`, as a list that lives as long as the process (one copy per distinct list).
pub fn intern_list<T>(items: Vec<T>) -> &'static [T]
where
    T: std::hash::Hash + Eq + Send + Sync + 'static,
{
    use std::any::{Any, TypeId};
    use std::collections::HashMap;
    // One set per element type, type-erased.
    static LISTS: OnceLock<Mutex<HashMap<TypeId, Box<dyn Any + Send>>>> = OnceLock::new();
    let mut lists = LISTS.get_or_init(Mutex::default).lock();
    let set = lists
        .entry(TypeId::of::<T>())
        .or_insert_with(|| Box::new(HashSet::<&'static [T]>::new()))
        .downcast_mut::<HashSet<&'static [T]>>()
        .expect("one set per type");
    if let Some(known) = set.get(items.as_slice()) {
        return known;
    }
    let leaked: &'static [T] = Box::leak(items.into_boxed_slice());
    set.insert(leaked);
    leaked
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn strings_at(v: &Value, ptr: &str) -> &'static [&'static str] {
    let items: Vec<&'static str> = v
        .pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(intern).collect())
        .unwrap_or_default();
    intern_list(items)
}

/// The resources an established CRD serves: one per served version, under its accepted names.
/// None while its names are not accepted.
#[must_use]
pub fn crd_resources(crd: &Value, services: &crate::webhook_client::Services) -> Vec<ResourceDef> {
    let names = "/status/acceptedNames";
    let plural = str_at(crd, &format!("{names}/plural"));
    let kind = str_at(crd, &format!("{names}/kind"));
    if plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let group = intern(str_at(crd, "/spec/group"));
    let storage = intern(crate::object_meta::meta_str(crd, "name"));
    let list_kind = match str_at(crd, &format!("{names}/listKind")) {
        "" => format!("{kind}List"),
        l => l.to_owned(),
    };
    let singular = match str_at(crd, &format!("{names}/singular")) {
        "" => kind.to_lowercase(),
        s => s.to_owned(),
    };
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    let conversion = Arc::new(crate::kinds::custom::Conversion::of(crd, services));
    versions
        .into_iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| {
            let schema = Structural::parse(v.pointer("/schema/openAPIV3Schema").unwrap_or(&Value::Null));
            let scale = v.pointer("/subresources/scale").map(|s| ScalePaths {
                spec_replicas: intern(str_at(s, "/specReplicasPath")),
                status_replicas: intern(str_at(s, "/statusReplicasPath")),
                label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(intern),
            });
            let field_labels: Vec<(&'static str, &'static str)> = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                .map(|p| (intern(p.trim_start_matches('.')), intern(&pointer_of(p))))
                .collect();
            let name = intern(str_at(&v, "/name"));
            ResourceDef {
                group,
                version: name,
                plural: intern(plural),
                singular: intern(&singular),
                kind: intern(kind),
                list_kind: intern(&list_kind),
                short_names: strings_at(crd, &format!("{names}/shortNames")),
                categories: strings_at(crd, &format!("{names}/categories")),
                field_labels: intern_list(field_labels),
                namespaced: str_at(crd, "/spec/scope") != "Cluster",
                status_subresource: v.pointer("/subresources/status").is_some(),
                scale,
                has_generation: true,
                storage,
                strategy: Strategy::Custom(Arc::new(CustomStrategy {
                    schema,
                    api_version: if group.is_empty() { name.to_owned() } else { format!("{group}/{name}") },
                    version: v,
                    conversion: Arc::clone(&conversion),
                })),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn storages_are_distinct() {
        let s = Registry::new().storages();
        assert_eq!(s.iter().filter(|x| **x == "events").count(), 1);
        // The two Event APIs share one storage, as do the two HorizontalPodAutoscaler versions.
        assert_eq!(s.len(), RESOURCES.len() - 2);
    }

    #[test]
    fn interned_values_are_shared() {
        let a = intern(&String::from("widgets.example.com"));
        let b = intern("widgets.example.com");
        assert!(std::ptr::eq(a, b));
        let l1 = intern_list(vec!["w", "wd"]);
        let l2 = intern_list(vec!["w", "wd"]);
        assert!(std::ptr::eq(l1, l2));
        assert_eq!(l1, ["w", "wd"]);
    }

    #[test]
    fn an_established_crd_serves_its_served_versions_under_its_accepted_names() {
        let crd = json!({
            "metadata": { "name": "widgets.example.com" },
            "spec": { "group": "example.com", "scope": "Namespaced", "versions": [
                { "name": "v1", "served": true, "storage": true, "schema": { "openAPIV3Schema": { "type": "object" } },
                  "subresources": { "status": {}, "scale": { "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size" } } },
                { "name": "v1beta1", "served": false, "storage": false, "schema": { "openAPIV3Schema": { "type": "object" } } },
            ] },
            "status": { "acceptedNames": { "plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"] } },
        });
        let defs = crd_resources(&crd, &Default::default());
        assert_eq!(defs.len(), 1);
        let d = &defs[0];
        assert_eq!(
            (d.group, d.version, d.plural, d.kind, d.list_kind, d.singular),
            ("example.com", "v1", "widgets", "Widget", "WidgetList", "widget")
        );
        assert_eq!(d.short_names, ["wd"]);
        assert!(d.namespaced && d.status_subresource && d.has_generation);
        assert_eq!(d.scale.unwrap().spec_replicas, ".spec.size");
        assert_eq!(d.storage, "widgets.example.com");
        let mut unaccepted = crd.clone();
        unaccepted["status"] = json!({});
        assert!(crd_resources(&unaccepted, &Default::default()).is_empty());
    }
}
