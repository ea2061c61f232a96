//! The registry: every resource served right now — the built-in kinds of
//! [`RESOURCES`], and the versions that established
//! CustomResourceDefinitions serve, added and removed as the CRDs change (upstream's
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

use crate::resource::{RESOURCES, ResourceDef};

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

#[cfg(test)]
mod tests {
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
}
