//! `admissionregistration.k8s.io/v1`: webhook configurations and validating admission policies,
//! stored and served as objects, with upstream's defaults and validation
//! ([`crate::kinds::webhook_configuration`], [`crate::kinds::admission_policy`]). The sandbox never
//! calls a webhook nor evaluates a policy.

use k8s_openapi::api::admissionregistration::v1 as admission;

use super::resource;
use crate::kinds::{admission_policy, webhook_configuration};
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
                default: webhook_configuration::default_mutating,
                validate: webhook_configuration::validate_mutating,
                generation_changes: webhook_configuration::webhooks_changed,
                ..typed::<admission::MutatingWebhookConfiguration>()
            }),
            ..resource!("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", [], namespaced: false)
        },
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            status_subresource: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                // Both strategies want the version an update starts from.
                allow_unconditional_update: false,
                default: admission_policy::default_policy,
                validate: admission_policy::validate_policy,
                prepare_status_update: admission_policy::prepare_status_update,
                ..typed::<admission::ValidatingAdmissionPolicy>()
            }),
            ..resource!("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "validatingadmissionpolicy", "ValidatingAdmissionPolicy", [], namespaced: false)
        },
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                allow_unconditional_update: false,
                default: admission_policy::default_binding,
                validate: admission_policy::validate_binding,
                ..typed::<admission::ValidatingAdmissionPolicyBinding>()
            }),
            ..resource!("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", [], namespaced: false)
        },
        ResourceDef {
            categories: API_EXTENSIONS,
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                allow_unconditional_update: false,
                default: webhook_configuration::default_validating,
                validate: webhook_configuration::validate_validating,
                generation_changes: webhook_configuration::webhooks_changed,
                ..typed::<admission::ValidatingWebhookConfiguration>()
            }),
            ..resource!("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", [], namespaced: false)
        },
    ]
}
