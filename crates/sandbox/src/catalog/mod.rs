//! The built-in resources, one file per API group (upstream's `pkg/registry/<group>`): what each
//! is called, its scope, its subresources, its field labels and its strategy's hooks from
//! [`crate::kinds`]. [`all`] lists them in the order a v1.32 server's discovery lists the groups;
//! [`RESOURCES`] holds that list for the life of the process, and [`find`] looks one up.
//!
//! Every entry is served by the same store, watches, patches and garbage collector: nothing here
//! is more than a description.

use std::sync::LazyLock;

use crate::resource::ResourceDef;

mod admission;
mod apps;
mod auth;
mod autoscaling;
mod batch;
mod certificates;
mod coordination;
mod core;
mod events;
mod extensions;
mod flowcontrol;
mod metrics;
mod networking;
mod policy;
mod scheduling;
mod storage;

/// A resource with the common settings: every verb, no subresources, no field labels beyond the
/// metadata's, no generation, stored under `<plural>.<group>`, no rules of its own.
macro_rules! resource {
    ($group:literal, $version:literal, $plural:literal, $singular:literal, $kind:literal, [$($short:literal),*], namespaced: $ns:literal) => {
        $crate::resource::ResourceDef {
            group: $group,
            version: $version,
            plural: $plural,
            singular: $singular,
            kind: $kind,
            list_kind: concat!($kind, "List"),
            short_names: &[$($short),*],
            categories: &[],
            field_labels: &[],
            namespaced: $ns,
            status_subresource: false,
            scale: None,
            has_generation: false,
            storage: concat!($plural, ".", $group),
            strategy: $crate::resource::Strategy::BuiltIn($crate::resource::BuiltIn::PLAIN),
        }
    };
}
pub(crate) use resource;

/// The categories of the kinds `kubectl get all` lists.
const ALL: &[&str] = &["all"];

/// Every built-in resource: the core group, then the named groups in upstream's order
/// (`/apis` of a v1.32 server).
#[must_use]
pub fn all() -> Vec<ResourceDef> {
    [
        core::resources(),
        extensions::registration(),
        apps::resources(),
        events::resources(),
        auth::authentication(),
        auth::authorization(),
        autoscaling::resources(),
        batch::resources(),
        certificates::resources(),
        networking::resources(),
        policy::resources(),
        auth::rbac(),
        storage::resources(),
        admission::resources(),
        extensions::definitions(),
        scheduling::priority(),
        coordination::resources(),
        scheduling::node(),
        networking::discovery(),
        flowcontrol::resources(),
        // An aggregated API's group comes after the server's own, as an APIService adds it.
        metrics::resources(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Every built-in resource the sandbox serves, groups in upstream's discovery order.
pub static RESOURCES: LazyLock<Vec<ResourceDef>> = LazyLock::new(all);

/// Finds a built-in resource by group, version and plural (custom resources are found through
/// the [`Registry`](crate::registry::Registry)).
#[must_use]
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The CustomResourceDefinition resource.
#[must_use]
pub fn crds() -> &'static ResourceDef {
    find("apiextensions.k8s.io", "v1", "customresourcedefinitions").expect("CRDs are a built-in kind")
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_resource_is_listed_once() {
        let all = all();
        let mut seen = HashSet::new();
        for r in &all {
            assert!(
                seen.insert((r.group, r.version, r.plural)),
                "{}/{} {} twice",
                r.group,
                r.version,
                r.plural
            );
            assert!(r.kind.chars().next().is_some_and(char::is_uppercase), "{}", r.plural);
        }
    }
}
