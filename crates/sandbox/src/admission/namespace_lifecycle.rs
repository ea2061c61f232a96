//! NamespaceLifecycle (`k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`): nothing is
//! created in a namespace that does not exist (404) or is being deleted (403).
//!
//! Upstream's is a mutating-phase plugin (its refusal comes before the strategy's validation);
//! the sandbox has always checked the namespace after that validation (an invalid object in a
//! missing namespace is a 422 here, a 404 upstream), so it runs in the validating phase until
//! that difference is measured against a real server.

use serde_json::Value;

use super::{Effects, Operation, Plugin, Request};
use crate::object_meta::{is_deleting, meta_str};
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct NamespaceLifecycle;

impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && def.namespaced
    }

    fn validate(&self, req: &Request<'_>, obj: &Value, _: &mut Effects) -> Result<(), ApiError> {
        match req.objects.namespace(req.ns) {
            None => Err(ApiError::not_found("", "namespaces", req.ns)),
            Some(n) if is_deleting(&n) => Err(ApiError::namespace_terminating(
                req.def.group,
                req.def.plural,
                meta_str(obj, "name"),
                req.ns,
            )),
            Some(_) => Ok(()),
        }
    }
}
