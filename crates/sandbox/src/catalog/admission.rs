//! `admissionregistration.k8s.io/v1`: webhook configurations and validating admission policies,
//! stored and served as objects. The sandbox never calls a webhook nor evaluates a policy.

use k8s_openapi::api::admissionregistration::v1 as admission;

use super::resource;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

/// The category `kubectl get api-extensions` lists.
pub(super) const API_EXTENSIONS: &[&str] = &["api-extensions"];

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                allow_unconditional_update: false,
                ..typed::<admission::MutatingWebhookConfiguration>()
            }),
            ..resource!("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", [], namespaced: false)
        },
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            status_subresource: true,
            strategy: Strategy::BuiltIn(typed::<admission::ValidatingAdmissionPolicy>()),
            ..resource!("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "validatingadmissionpolicy", "ValidatingAdmissionPolicy", [], namespaced: false)
        },
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            strategy: Strategy::BuiltIn(typed::<admission::ValidatingAdmissionPolicyBinding>()),
            ..resource!("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", [], namespaced: false)
        },
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                allow_unconditional_update: false,
                ..typed::<admission::ValidatingWebhookConfiguration>()
            }),
            ..resource!("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", [], namespaced: false)
        },
    ]
}
