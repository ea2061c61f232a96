//! v1 Namespace (`pkg/registry/core/namespace/strategy.go`): phase `Active`, the `kubernetes`
//! finalizer, and the `kubernetes.io/metadata.name` label, which always equals the name — set on
//! create and restored on every update, whatever the request said. `spec.finalizers` changes only
//! through `/finalize`: an update of the namespace itself keeps the stored ones.

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
    let name = crate::object_meta::meta_str(ns, "name").to_owned();
    if name.is_empty() {
        return;
    }
    let meta = crate::object_meta::meta_mut(ns);
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[NAME_LABEL] = json!(name);
}

/// The strategy's `PrepareForUpdate`: the stored `spec.finalizers` stay, whatever the update
/// says (only the `/finalize` subresource changes them).
pub fn prepare_update(ns: &mut Value, old: &Value) {
    let kept = old.pointer("/spec/finalizers").cloned();
    let Some(o) = ns.as_object_mut() else { return };
    let spec = o.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let spec = spec.as_object_mut().expect("just made an object");
    match kept {
        Some(f) => spec.insert("finalizers".into(), f),
        None => spec.remove("finalizers"),
    };
}
