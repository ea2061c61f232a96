//! Custom resources: the one strategy every kind a CustomResourceDefinition defines is served
//! with, driven by its version's structural schema — as upstream's apiextensions-apiserver
//! (`pkg/registry/customresource/strategy.go`, `pkg/apiserver/customresource_handler.go`).
//!
//! * On every write: unknown fields are pruned (kept under `x-kubernetes-preserve-unknown-fields`;
//!   `fieldValidation` reports them), the schema's defaults are filled in, and the object is
//!   validated against the schema.
//! * Objects are stored in the CRD's storage version and read in the version asked for
//!   ([`conversion`]: the `apiVersion` rewritten, or the CRD's conversion webhook called), then
//!   pruned and defaulted by that version's schema, so a default added after an object was
//!   stored shows up when it is read.
//! * With a status subresource, the main endpoint keeps the stored status and `/status` changes
//!   only status; `metadata.generation` counts changes to anything but metadata and status.
//!
//! [`crd_resources`](crate::registry::crd_resources) turns an established CRD into the
//! resources the registry serves, each with this strategy.

mod conversion;

use std::sync::Arc;

use serde_json::Value;

pub use self::conversion::Conversion;
use crate::schema::Structural;
use crate::status::{ApiError, FieldError};

/// The strategy of one served version of a CRD.
#[derive(Debug)]
pub struct CustomStrategy {
    /// The version's `openAPIV3Schema`, parsed.
    pub schema: Structural,
    /// The version's entry of the CRD's `spec.versions` (printer columns, schema as written).
    pub version: Value,
    /// This version's `apiVersion` (`group/version`).
    pub api_version: String,
    /// How objects move between the CRD's versions, shared by them all.
    pub conversion: Arc<Conversion>,
}

impl CustomStrategy {
    /// A stored object (which the caller owns) as this version reads it: converted from the
    /// version it was stored in, then pruned and defaulted by this version's schema.
    ///
    /// # Errors
    ///
    /// The conversion webhook's failure (a 500).
    pub fn read_owned(&self, mut obj: Value) -> Result<Value, ApiError> {
        // An object stored without an `apiVersion` (written by a harness) is read as it is.
        if obj.get("apiVersion").is_some() {
            self.conversion.convert(std::slice::from_mut(&mut obj), &self.api_version, false)?;
        }
        self.schema.prune(&mut obj);
        self.schema.default(&mut obj);
        Ok(obj)
    }

    /// An object of this version as it is stored: in the storage version.
    ///
    /// # Errors
    ///
    /// The conversion webhook's failure (a 500).
    pub fn to_storage(&self, mut obj: Value) -> Result<Value, ApiError> {
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        self.conversion.convert(std::slice::from_mut(&mut obj), self.conversion.storage_version(), false)?;
        Ok(obj)
    }

    /// Checks what the generic decoder checks of a custom resource: that it is an object whose
    /// `metadata` is an `ObjectMeta`.
    ///
    /// # Errors
    ///
    /// The decode error, naming the field.
    pub fn decode(&self, obj: &Value) -> Result<(), String> {
        match obj.get("metadata") {
            None => Ok(()),
            Some(meta) => {
                crate::kinds::decode_as::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(meta)
                    .map_err(|e| format!("metadata.{e}"))
            }
        }
    }

    /// The object as the schema keeps it.
    #[must_use]
    pub fn known(&self, obj: &Value) -> Value {
        let mut kept = obj.clone();
        self.schema.prune(&mut kept);
        kept
    }

    /// What the decoder does to every object written: drops the fields the schema does not
    /// declare (`fieldValidation` has already reported them for a request), then fills in the
    /// schema's defaults — upstream's order, so a default never hides behind an unknown field.
    pub fn default(&self, obj: &mut Value) {
        self.schema.prune(obj);
        self.schema.default(obj);
    }

    /// Validates `new` against the schema.
    #[must_use]
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = self.schema.validate(new);
        errs.extend(self.schema.validate_rules(new, old));
        errs.extend(self.scale_errors(new));
        errs
    }

    /// The scale subresource's replicas must be a non-negative int32 where it is set
    /// (upstream's `validateScaleSpec` / `validateScaleStatus`).
    fn scale_errors(&self, obj: &Value) -> Vec<FieldError> {
        let Some(scale) = self.version.pointer("/subresources/scale") else { return Vec::new() };
        let mut errs = Vec::new();
        for key in ["specReplicasPath", "statusReplicasPath"] {
            let Some(path) = scale.get(key).and_then(Value::as_str) else { continue };
            let Some(v) = obj.pointer(&pointer_of(path)) else { continue };
            let field = path.trim_start_matches('.').to_owned();
            match v.as_i64() {
                Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => {}
                Some(n) if n < 0 => {
                    errs.push((field, format!("Invalid value: {n}: should be a non-negative integer")))
                }
                Some(n) => errs.push((
                    field,
                    format!("Invalid value: {n}: should be less than or equal to {}", i32::MAX),
                )),
                None => errs.push((field, format!("Invalid value: {v}: should be an integer"))),
            }
        }
        errs
    }
}

/// A `.spec.replicas` path as a JSON pointer (`/spec/replicas`).
#[must_use]
pub fn pointer_of(path: &str) -> String {
    path.split('.').filter(|s| !s.is_empty()).fold(String::new(), |mut p, seg| {
        p.push('/');
        p.push_str(&seg.replace('~', "~0").replace('/', "~1"));
        p
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_pointers() {
        assert_eq!(pointer_of(".spec.replicas"), "/spec/replicas");
        assert_eq!(pointer_of(".status.a/b"), "/status/a~1b");
    }
}
