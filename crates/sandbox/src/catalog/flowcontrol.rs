//! `flowcontrol.apiserver.k8s.io/v1` (API Priority and Fairness): stored and served as objects;
//! the sandbox queues no request by them.

use k8s_openapi::api::flowcontrol::v1 as flowcontrol;

use super::resource;
use crate::resource::{ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            strategy: Strategy::BuiltIn(typed::<flowcontrol::FlowSchema>()),
            ..resource!("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "flowschema", "FlowSchema", [], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            strategy: Strategy::BuiltIn(typed::<flowcontrol::PriorityLevelConfiguration>()),
            ..resource!("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "prioritylevelconfiguration", "PriorityLevelConfiguration", [], namespaced: false)
        },
    ]
}
