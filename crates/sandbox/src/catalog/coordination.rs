//! `coordination.k8s.io/v1` Leases: what leader election and node heartbeats write.

use k8s_openapi::api::coordination::v1 as coordination;

use super::resource;
use crate::kinds::lease;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: lease::decode,
            default: lease::default,
            validate: lease::validate,
            allow_unconditional_update: false,
            create_on_update: true,
            ..typed::<coordination::Lease>()
        }),
        ..resource!("coordination.k8s.io", "v1", "leases", "lease", "Lease", [], namespaced: true)
    }]
}
