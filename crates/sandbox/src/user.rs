//! Who makes a request. The sandbox takes every client it lets in for its administrator and
//! enforces no RBAC, so one identity answers for all: the user a `SelfSubjectReview` or a
//! `TokenReview` reports, and the requester a CertificateSigningRequest records (upstream's
//! `user.Info` of the request).

use serde_json::{Value, json};

/// Who every client of the sandbox is.
#[must_use]
pub fn admin_user() -> Value {
    json!({ "username": "sandbox-admin", "groups": ["system:masters", "system:authenticated"] })
}
