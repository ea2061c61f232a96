//! `autoscaling/v2` and `autoscaling/v1` HorizontalPodAutoscalers: one storage, in the v2 form;
//! each version reads the other's writes, converted as upstream converts them.

use k8s_openapi::api::autoscaling::{v1, v2};

use super::{ALL, resource};
use crate::kinds::autoscaler;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            storage: "horizontalpodautoscalers.autoscaling",
            status_subresource: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: autoscaler::default_v2,
                validate: autoscaler::validate_v2,
                ..typed::<v2::HorizontalPodAutoscaler>()
            }),
            ..resource!("autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", ["hpa"], namespaced: true)
        },
        ResourceDef {
            storage: "horizontalpodautoscalers.autoscaling",
            status_subresource: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                to_storage: autoscaler::v1_to_v2,
                from_storage: Some(autoscaler::v2_to_v1),
                default: autoscaler::default_v1,
                validate: autoscaler::validate_v1,
                ..typed::<v1::HorizontalPodAutoscaler>()
            }),
            ..resource!("autoscaling", "v1", "horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", ["hpa"], namespaced: true)
        },
    ]
}
