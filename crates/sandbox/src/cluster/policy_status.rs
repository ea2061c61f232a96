//! kube-controller-manager's ValidatingAdmissionPolicy status controller: each policy whose
//! `metadata.generation` is past its `status.observedGeneration` is type-checked
//! (`admission::expression_warnings`, against the schemas the OpenAPI documents publish) and
//! its status written: the generation observed and `typeChecking`, with the warnings when
//! there are any.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::api::Api;
use crate::admission::expression_warnings;
use crate::object_meta::meta_str;
use crate::rest::openapi::resolved_schema;

/// Where the policies are stored.
pub(crate) const STORAGE: &str = "validatingadmissionpolicies.admissionregistration.k8s.io";

/// The field manager of its writes.
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

/// The policies written since the last pass.
#[derive(Default)]
pub(crate) struct PolicyStatus {
    dirty: BTreeSet<String>,
}

impl PolicyStatus {
    /// Policy `name` was written.
    pub(crate) fn observe(&mut self, name: &str) {
        self.dirty.insert(name.to_owned());
    }

    /// One pass: each policy written since the last whose generation is not yet observed; a
    /// write that finds it changed since it was read waits for the next pass.
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        if self.dirty.is_empty() {
            return;
        }
        let Some(def) = api.store.find_storage(STORAGE) else { return };
        let registry = api.store.registry();
        for name in std::mem::take(&mut self.dirty) {
            let Some(policy) = api.get(&def, "", &name) else { continue };
            let generation = policy.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            let observed = policy.pointer("/status/observedGeneration").and_then(Value::as_i64).unwrap_or(0);
            if generation <= observed {
                continue;
            }
            let resolve =
                |group: &str, version: &str, kind: &str| resolved_schema(&registry, group, version, kind);
            let warnings = expression_warnings(&policy, &registry, &resolve);
            let mut status =
                policy.get("status").filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
            status["observedGeneration"] = json!(generation);
            status["typeChecking"] =
                if warnings.is_empty() { json!({}) } else { json!({ "expressionWarnings": warnings }) };
            if let Err(e) = api.write_status(&def, &policy, status, MANAGER) {
                if e.code == 409 {
                    self.dirty.insert(name.clone());
                }
                super::log_failure(MANAGER, meta_str(&policy, "name"), &e);
            }
        }
    }
}
