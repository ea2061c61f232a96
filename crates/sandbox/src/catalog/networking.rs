//! `networking.k8s.io/v1` (Ingresses, IngressClasses, NetworkPolicies) and
//! `discovery.k8s.io/v1` EndpointSlices: how traffic reaches pods.

use k8s_openapi::api::{discovery::v1 as discovery, networking::v1 as networking};

use super::resource;
use crate::kinds::network;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: network::default_ingress_class,
                validate: network::validate_ingress_class,
                ..typed::<networking::IngressClass>()
            }),
            ..resource!("networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass", [], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: network::default_ingress,
                validate: network::validate_ingress,
                // Its internal type is registered under `extensions` first: a 422 says
                // `Ingress.extensions`, as a real server's does.
                internal_group: Some("extensions"),
                ..typed::<networking::Ingress>()
            }),
            ..resource!("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", ["ing"], namespaced: true)
        },
        ResourceDef {
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                update_validates_twice: true,
                default: network::default_network_policy,
                validate: network::validate_network_policy,
                // As an Ingress, registered under `extensions` first.
                internal_group: Some("extensions"),
                ..typed::<networking::NetworkPolicy>()
            }),
            ..resource!("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", ["netpol"], namespaced: true)
        },
    ]
}

pub(super) fn discovery() -> Vec<ResourceDef> {
    vec![ResourceDef {
        has_generation: true,
        strategy: Strategy::BuiltIn(BuiltIn {
            default: crate::kinds::endpoints::default_slice,
            validate: crate::kinds::endpoints::validate_slice,
            generation_changes: crate::kinds::endpoints::slice_generation,
            ..typed::<discovery::EndpointSlice>()
        }),
        ..resource!("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", [], namespaced: true)
    }]
}
