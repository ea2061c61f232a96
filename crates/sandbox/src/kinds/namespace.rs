//! v1 Namespace (`pkg/registry/core/namespace/strategy.go`): phase `Active`, the `kubernetes`
//! finalizer, and the `kubernetes.io/metadata.name` label, which always equals the name — set on
//! create and restored on every update, whatever the request said.

use serde_json::{Value, json};

/// The label every namespace carries with its own name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The strategy's defaults (create and update alike).
pub fn default(ns: &mut Value) {
    if ns.pointer("/status/phase").is_none() {
        ns["status"] = json!({ "phase": "Active" });
    }
    if ns.pointer("/spec/finalizers").is_none() {
        ns["spec"] = json!({ "finalizers": ["kubernetes"] });
    }
    let name = crate::object::meta_str(ns, "name").to_owned();
    if name.is_empty() {
        return;
    }
    let meta = crate::object::meta_mut(ns);
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[NAME_LABEL] = json!(name);
}
