//! `policy/v1` PodDisruptionBudgets.

use k8s_openapi::api::policy::v1 as policy;

use super::resource;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![ResourceDef {
        status_subresource: true,
        has_generation: true,
        strategy: Strategy::BuiltIn(BuiltIn {
            name_rule: crate::metadata::check_path_segment,
            metadata_order: crate::resource::MetadataOrder::AfterKind,
            default: crate::kinds::disruption_budget::default_disruption_budget,
            validate: crate::kinds::disruption_budget::validate_disruption_budget,
            allow_unconditional_update: false,
            decode: crate::kinds::disruption_budget::decode,
            ..typed::<policy::PodDisruptionBudget>()
        }),
        ..resource!("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", ["pdb"], namespaced: true)
    }]
}
