//! The policies in force: each ValidatingAdmissionPolicy that some binding names, compiled, with
//! its bindings — what every write is checked against, as upstream's policy source keeps it from
//! its informers. It is made again only after a policy or a binding is written (keyed on the
//! store's identity and its last write to each), so a write pays for no parsing or compiling.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::Value;

use super::super::Objects;
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
    /// Per store: the last writes the policies were read at, and what they were.
    type Cache = HashMap<u64, (u64, u64, Arc<Vec<Bound>>)>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let (store, policies_at) = objects.written(policies);
    let (_, bindings_at) = objects.written(bindings);
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some((p, b, bound)) = cache.lock().get(&store)
        && (*p, *b) == (policies_at, bindings_at)
    {
        return Arc::clone(bound);
    }
    let bound = Arc::new(read(objects, policies, bindings));
    let mut cache = cache.lock();
    // A process holds few stores at once; those gone leave an entry each (a dry run's copy too).
    if cache.len() >= 64 {
        cache.clear();
    }
    cache.insert(store, (policies_at, bindings_at, Arc::clone(&bound)));
    bound
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
