//! The policies in force: each ValidatingAdmissionPolicy that some binding names, compiled, with
//! its bindings — what every write is checked against, kept between writes ([`InForce`]).

use std::sync::Arc;

use serde_json::Value;

use super::super::Objects;
use super::super::in_force::InForce;
use super::compiled::Compiled;
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;

/// A policy with the bindings that name it.
pub(super) struct Bound {
    pub policy: Arc<Value>,
    pub compiled: Compiled,
    /// Its bindings, by name.
    pub bindings: Vec<Arc<Value>>,
}

/// The policies in force in the store `objects` reads, by name: `policies` and `bindings` are
/// the two resources.
pub(super) fn in_force(
    objects: &dyn Objects,
    policies: &ResourceDef,
    bindings: &ResourceDef,
) -> Arc<Vec<Bound>> {
    static IN_FORCE: InForce<Vec<Bound>> = InForce::new();
    IN_FORCE.get(objects, [policies, bindings], || read(objects, policies, bindings))
}

/// Reads and compiles the policies that have bindings.
fn read(objects: &dyn Objects, policies: &ResourceDef, bindings: &ResourceDef) -> Vec<Bound> {
    let bindings = objects.list(bindings, None);
    if bindings.is_empty() {
        return Vec::new();
    }
    objects
        .list(policies, None)
        .into_iter()
        .filter_map(|policy| {
            let name = meta_str(&policy, "name");
            let own: Vec<Arc<Value>> = bindings
                .iter()
                .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(name))
                .cloned()
                .collect();
            (!own.is_empty()).then(|| Bound { compiled: Compiled::new(&policy), policy, bindings: own })
        })
        .collect()
}
