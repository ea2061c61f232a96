//! Structural schemas (`apiextensions.k8s.io/v1` `JSONSchemaProps`), as upstream's
//! apiextensions-apiserver (v1.32) enforces them on custom resources: whether a schema is
//! structural and valid ([`structural_errors`]), and, for a version's schema parsed once into a
//! [`Structural`], validation of an object against it, pruning of the fields it does not declare,
//! and defaulting.
//!
//! A CRD's create and update run [`structural_errors`] on each version's `openAPIV3Schema`; a
//! custom resource's write then runs, as upstream's handler and strategy do, [`Structural::prune`]
//! (decoding), [`Structural::default`] (decoding, after pruning) and [`Structural::validate`]
//! (the strategy's validation). Messages are upstream's, word for word, so that the `reason` of
//! each cause (see `status.rs`) and the text clients show match a real API server.
//!
//! | module | what it is | upstream |
//! |---|---|---|
//! | `node` | the parsed schema tree | `pkg/apiserver/schema/structural.go`, `convert.go` |
//! | `validate` | validation of an object, embedded resources, list types | kube-openapi `pkg/validation/validate`, `pkg/apiserver/validation`, `schema/objectmeta`, `schema/listtype` |
//! | `format` | string formats | kube-openapi `pkg/validation/strfmt`, `pkg/apiserver/validation/formats.go` |
//! | `prune` | pruning, null pruning, ObjectMeta coercion | `schema/pruning`, `schema/defaulting/prunenulls.go`, `schema/objectmeta/coerce.go` |
//! | `default` | defaulting | `schema/defaulting/algorithm.go` |
//! | `cel` | CEL rules (`x-kubernetes-validations`): compiling, evaluating, the Kubernetes libraries | `pkg/apiserver/schema/cel`, `apiserver/pkg/cel/library` |
//! | `rules` | the walk of an object (and the stored one it replaces) to every node with rules | `schema/cel/validation.go` |
//! | `field_path` | a field path into a schema (selectable fields, a rule's `fieldPath`) | `schema/cel/validation.go` `ValidFieldPath` |
//! | `structural` | the schema's own checks, its defaults' validity | `schema/validation.go`, `complete.go`, `defaulting/validation.go`, `apis/apiextensions/validation` |
//!
//! Differences from upstream: CEL rules are parsed and their field selections and operators
//! type-checked, not their functions (see `cel`); no
//! ratcheting on update (every update is validated as a create); `format: int32` and `float`
//! are not range-checked (kube-openapi does not check them either); the formats listed as
//! approximated in `format`'s docs; `pattern` is compiled by the `regex` crate, whose syntax is
//! RE2's as Go's is (its error messages are not Go's).

use serde_json::Value;

use crate::status::FieldError;

pub(crate) mod cel;
mod default;
pub(crate) mod field_path;
mod format;
mod node;
mod prune;
mod rules;
mod structural;
mod validate;

use node::Node;

/// A version's `openAPIV3Schema`, parsed once and used for every object of that version.
#[derive(Debug, Clone, Default)]
pub struct Structural {
    root: Node,
}

impl Structural {
    /// Parses a schema that [`structural_errors`] found no fault with. Any JSON is accepted
    /// (keywords of the wrong shape are ignored), so this never fails and never panics.
    #[must_use]
    pub fn parse(schema: &Value) -> Self {
        Self { root: Node::parse(schema) }
    }

    /// The causes for everything in `obj` that breaks the schema, as `(field, message)`:
    /// kube-openapi's validation (`spec.size`, `Invalid value: 11: spec.size in body should be
    /// less than or equal to 10`), then the embedded resources' `apiVersion`, `kind` and
    /// `metadata`, then `x-kubernetes-list-type` `set`/`map` duplicates. The root `metadata` is
    /// left to the generic metadata rules but for what the schema itself says of it (upstream
    /// lets a root schema restrict `metadata.name` and `metadata.generateName`).
    #[must_use]
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate::validate(&self.root, obj)
    }

    /// The causes of the `x-kubernetes-validations` rules `obj` breaks, `old` the stored object
    /// an update replaces (for transition rules, which read `oldSelf`): `(field, message)` as
    /// upstream's CEL validator words them (`spec: Invalid value: "object": replicas must not
    /// exceed 10`).
    #[must_use]
    pub fn validate_rules(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        if !self.root.has_rules {
            return Vec::new();
        }
        let mut errs = Vec::new();
        let mut budget = cel::RUNTIME_BUDGET;
        rules::walk(&self.root, "", obj, old, true, &mut budget, &mut errs);
        errs
    }

    /// `obj` as a CEL expression outside the schema reads it (an admission policy's `object`):
    /// typed by the schema as a rule's `self` is, its `metadata` whole.
    pub(crate) fn cel_value(&self, obj: &Value) -> kube_cel::cel::Value {
        cel::value::to_cel(obj, Some(&self.root), false)
    }

    /// Removes the fields the schema does not declare (kept under
    /// `x-kubernetes-preserve-unknown-fields`; `apiVersion`, `kind` and `metadata` stay at the root
    /// and in embedded resources), the fields ObjectMeta does not have from the root's and the
    /// embedded resources' `metadata`, and the `null`s the schema neither allows nor defaults;
    /// returns the removed unknown fields' paths (`metadata.foo`, `spec.foo`,
    /// `spec.items[0].bar`, `spec.map.key.bar`), in upstream's order, for `unknown field "…"`.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(&self.root, obj)
    }

    /// Fills in the schema's defaults: absent properties, and `null` ones that are not
    /// `nullable`, get a copy of their `default`, recursively, in array items and map values too.
    pub fn default(&self, obj: &mut Value) {
        default::default(obj, &self.root);
    }
}

/// Why `schema` (at `field`, e.g. `spec.versions[0].schema.openAPIV3Schema`) is not structural
/// or not a valid schema, defaults that are not pruned or not valid included; empty when it is
/// both. Fields are named with upstream's brackets: `….properties[spec].type`.
#[must_use]
pub fn structural_errors(schema: &Value, field: &str) -> Vec<FieldError> {
    structural::errors(schema, field)
}

#[cfg(test)]
mod tests;
