//! How the API is extended: `apiextensions.k8s.io/v1` CustomResourceDefinitions (each
//! established one serves its custom resources, see [`crate::registry`]) and
//! `apiregistration.k8s.io/v1` APIServices (validated, stored and served; nothing is aggregated).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::{admission::API_EXTENSIONS, resource};
use crate::kinds::{apiservice, crd};
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn definitions() -> Vec<ResourceDef> {
    vec![ResourceDef {
        status_subresource: true,
        has_generation: true,
        categories: API_EXTENSIONS,
        strategy: Strategy::BuiltIn(BuiltIn {
            prepare_create: crd::prepare_create,
            prepare_update: crd::prepare_update,
            default: crd::default,
            validate: crd::validate,
            allow_unconditional_update: false,
            deletion: crate::resource::Deletion::Finalized,
            ..typed::<CustomResourceDefinition>()
        }),
        ..resource!("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", ["crd", "crds"], namespaced: false)
    }]
}

/// APIServices have no k8s-openapi type (they are kube-aggregator's): any shape is stored, then
/// held to the aggregator's defaults and rules ([`apiservice`]).
pub(super) fn registration() -> Vec<ResourceDef> {
    vec![ResourceDef {
        status_subresource: true,
        categories: API_EXTENSIONS,
        strategy: Strategy::BuiltIn(BuiltIn {
            prepare_create: apiservice::prepare_create,
            prepare_status_update: apiservice::prepare_status_update,
            default: apiservice::default,
            validate: apiservice::validate,
            name_rule: crate::metadata::check_path_segment,
            metadata_order: crate::resource::MetadataOrder::After(apiservice::name_errors),
            ..BuiltIn::PLAIN
        }),
        ..resource!("apiregistration.k8s.io", "v1", "apiservices", "apiservice", "APIService", [], namespaced: false)
    }]
}
