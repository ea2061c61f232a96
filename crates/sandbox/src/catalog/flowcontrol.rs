//! `flowcontrol.apiserver.k8s.io/v1` (API Priority and Fairness): stored and served as objects;
//! the sandbox queues no request by them. Their defaults and rules are [`crate::kinds::flow_control`]'s.

use k8s_openapi::api::flowcontrol::v1 as flowcontrol;

use super::resource;
use crate::kinds::flow_control;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: flow_control::default_flow_schema,
                validate: flow_control::validate_flow_schema,
                ..typed::<flowcontrol::FlowSchema>()
            }),
            ..resource!("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "flowschema", "FlowSchema", [], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: flow_control::default_priority_level,
                validate: flow_control::validate_priority_level,
                ..typed::<flowcontrol::PriorityLevelConfiguration>()
            }),
            ..resource!("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "prioritylevelconfiguration", "PriorityLevelConfiguration", [], namespaced: false)
        },
    ]
}
