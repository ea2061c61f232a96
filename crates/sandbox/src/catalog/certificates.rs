//! `certificates.k8s.io/v1` CertificateSigningRequests: `approval` writes only the
//! Approved/Denied conditions, `status` the rest of the status (the issued certificate).

use k8s_openapi::api::certificates::v1 as certificates;

use super::resource;
use crate::kinds::csr;
use crate::resource::{Action, BuiltIn, ResourceDef, Run, Strategy, typed};

/// A CSR's field label beyond the metadata (`spec.signerName`).
const CSR_FIELDS: &[(&str, &str)] = &[("spec.signerName", "/spec/signerName")];

const CSR_ACTIONS: &[Action] = &[Action {
    name: "approval",
    kind: ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    verbs: &["get", "patch", "update"],
    run: Run::Owns(&["/status/conditions"]),
}];

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![ResourceDef {
        status_subresource: true,
        field_labels: CSR_FIELDS,
        strategy: Strategy::BuiltIn(BuiltIn {
            default: csr::default,
            validate: csr::validate,
            prepare_status_update: csr::prepare_status_update,
            validate_status_update: csr::validate_status_update,
            // `ValidateCertificateRequestName` accepts any name; only what cannot be a path
            // segment is refused (upstream's store refuses it when it makes the key).
            name_rule: crate::metadata::check_path_segment,
            actions: CSR_ACTIONS,
            ..typed::<certificates::CertificateSigningRequest>()
        }),
        ..resource!("certificates.k8s.io", "v1", "certificatesigningrequests", "certificatesigningrequest", "CertificateSigningRequest", ["csr"], namespaced: false)
    }]
}
