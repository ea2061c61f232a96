//! Structural schemas (`apiextensions.k8s.io/v1` `JSONSchemaProps`), as upstream's
//! apiextensions-apiserver enforces them on custom resources: whether a schema is structural,
//! validation of an object against it, pruning of the fields it does not declare, and defaulting.
//!
//! SCAFFOLD: the bodies below are placeholders being replaced by the real implementation.

use serde_json::Value;

use crate::resource::FieldError;

/// A version's `openAPIV3Schema`, parsed once and used for every object of that version.
#[derive(Debug, Clone, Default)]
pub struct Structural {
    raw: Value,
}

impl Structural {
    /// Parses a schema that [`structural_errors`] found no fault with.
    #[must_use]
    pub fn parse(schema: &Value) -> Self {
        Self { raw: schema.clone() }
    }

    /// The causes for everything in `obj` that breaks the schema (`metadata` is left to the
    /// generic metadata rules, but for the name restrictions a root schema may give it).
    #[must_use]
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let _ = (&self.raw, obj);
        Vec::new()
    }

    /// Removes the fields the schema does not declare (kept under
    /// `x-kubernetes-preserve-unknown-fields`; `apiVersion`, `kind` and `metadata` stay at the root
    /// and in embedded resources); returns the removed paths (`spec.foo`, `spec.items[0].bar`).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let _ = obj;
        Vec::new()
    }

    /// Fills in the schema's defaults.
    pub fn default(&self, obj: &mut Value) {
        let _ = obj;
    }
}

/// Why `schema` (at `field`, e.g. `spec.versions[0].schema.openAPIV3Schema`) is not structural
/// or not a valid schema; empty when it is both.
#[must_use]
pub fn structural_errors(schema: &Value, field: &str) -> Vec<FieldError> {
    let _ = (schema, field);
    Vec::new()
}
