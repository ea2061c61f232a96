//! Who a request is and what it may do: `authentication.k8s.io/v1` and
//! `authorization.k8s.io/v1` reviews (answered, never stored: the sandbox authenticates every
//! client as its administrator and enforces no RBAC), and `rbac.authorization.k8s.io/v1` (stored
//! and served, not enforced).

use k8s_openapi::api::{authentication::v1 as authn, authorization::v1 as authz, rbac::v1 as rbac};

use super::resource;
use crate::resource::{Answer, BuiltIn, ResourceDef, Review, Strategy, typed};

/// A create-only review answered by `review`.
const fn answered<K>(review: Review) -> Strategy
where
    K: serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema,
{
    Strategy::BuiltIn(BuiltIn { answer: Answer::Review(review), ..typed::<K>() })
}

pub(super) fn authentication() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            strategy: answered::<authn::SelfSubjectReview>(Review::SelfSubject),
            ..resource!("authentication.k8s.io", "v1", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", [], namespaced: false)
        },
        ResourceDef {
            strategy: answered::<authn::TokenReview>(Review::Token),
            ..resource!("authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview", [], namespaced: false)
        },
    ]
}

pub(super) fn authorization() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            strategy: answered::<authz::LocalSubjectAccessReview>(Review::Access),
            ..resource!("authorization.k8s.io", "v1", "localsubjectaccessreviews", "localsubjectaccessreview", "LocalSubjectAccessReview", [], namespaced: true)
        },
        ResourceDef {
            strategy: answered::<authz::SelfSubjectAccessReview>(Review::Access),
            ..resource!("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview", [], namespaced: false)
        },
        ResourceDef {
            strategy: answered::<authz::SelfSubjectRulesReview>(Review::Rules),
            ..resource!("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview", [], namespaced: false)
        },
        ResourceDef {
            strategy: answered::<authz::SubjectAccessReview>(Review::Access),
            ..resource!("authorization.k8s.io", "v1", "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview", [], namespaced: false)
        },
    ]
}

pub(super) fn rbac() -> Vec<ResourceDef> {
    use crate::kinds::rbac::{
        default_binding, default_role, validate_binding, validate_cluster_binding, validate_cluster_role,
        validate_role,
    };
    vec![
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_path_segment,
                default: default_binding,
                validate: validate_cluster_binding,
                create_on_update: true,
                ..typed::<rbac::ClusterRoleBinding>()
            }),
            ..resource!("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", [], namespaced: false)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_path_segment,
                default: default_role,
                validate: validate_cluster_role,
                create_on_update: true,
                ..typed::<rbac::ClusterRole>()
            }),
            ..resource!("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", [], namespaced: false)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_path_segment,
                default: default_binding,
                validate: validate_binding,
                create_on_update: true,
                ..typed::<rbac::RoleBinding>()
            }),
            ..resource!("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", [], namespaced: true)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_path_segment,
                default: default_role,
                validate: validate_role,
                create_on_update: true,
                ..typed::<rbac::Role>()
            }),
            ..resource!("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", [], namespaced: true)
        },
    ]
}
