//! Where and how pods run: `scheduling.k8s.io/v1` PriorityClasses (the two system classes exist
//! from the start, as upstream's post-start hook makes them) and `node.k8s.io/v1` RuntimeClasses.

use k8s_openapi::api::{node::v1 as node, scheduling::v1 as scheduling};

use super::resource;
use crate::kinds::{priority, runtime_class};
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn priority() -> Vec<ResourceDef> {
    vec![ResourceDef {
        has_generation: true,
        strategy: Strategy::BuiltIn(BuiltIn {
            default: priority::default,
            validate: priority::validate,
            read_by_admission: true,
            ..typed::<scheduling::PriorityClass>()
        }),
        ..resource!("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", ["pc"], namespaced: false)
    }]
}

pub(super) fn node() -> Vec<ResourceDef> {
    vec![ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            allow_unconditional_update: false,
            validate: runtime_class::validate,
            ..typed::<node::RuntimeClass>()
        }),
        ..resource!("node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", [], namespaced: false)
    }]
}
