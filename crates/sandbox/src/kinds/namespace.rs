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

/// `ValidateNamespace` on create: `spec.finalizers` qualified names, an unqualified one only
/// when standard (`validateFinalizerName`). On update, what the three update strategies check
/// beyond the metadata: the finalizers again, each by its index (`ValidateNamespaceFinalizeUpdate`:
/// only `/finalize` changes them), and the phase agreeing with the deletion
/// (`ValidateNamespaceStatusUpdate`: a main update keeps the stored status, `/finalize` too).
#[must_use]
pub fn validate(ns: &Value, old: Option<&Value>) -> Vec<crate::status::FieldError> {
    let mut errs = finalizer_errors(ns, old.is_some());
    if old.is_some() {
        errs.extend(phase_errors(ns));
    }
    errs
}

/// `validateFinalizerName` of each of `spec.finalizers`, named by the list (on create) or by
/// the finalizer's index (on `/finalize`).
fn finalizer_errors(ns: &Value, indexed: bool) -> Vec<crate::status::FieldError> {
    let mut errs = Vec::new();
    let finalizers = ns.pointer("/spec/finalizers").and_then(Value::as_array).into_iter().flatten();
    for (i, f) in finalizers.filter_map(Value::as_str).enumerate() {
        let field = if indexed { format!("spec.finalizers[{i}]") } else { "spec.finalizers".to_owned() };
        let invalid =
            |why: &str| (field.clone(), format!("Invalid value: {}: {why}", crate::go_print::go_quote(f)));
        for why in crate::metadata::qualified_name_errors(f) {
            errs.push(invalid(&why));
        }
        if !f.contains('/') && !crate::metadata::STANDARD_FINALIZERS.contains(&f) {
            errs.push(invalid("name is neither a standard finalizer name nor is it fully qualified"));
        }
    }
    errs
}

/// The phase a namespace may have: `Active` while it is not being deleted, `Terminating` once
/// it is.
fn phase_errors(ns: &Value) -> Vec<crate::status::FieldError> {
    let phase = ns.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    let (want, why) = if crate::object_meta::is_deleting(ns) {
        ("Terminating", "may only be 'Terminating' if `deletionTimestamp` is not empty")
    } else {
        ("Active", "may only be 'Active' if `deletionTimestamp` is empty")
    };
    if phase == want {
        return Vec::new();
    }
    vec![("status.Phase".to_owned(), format!("Invalid value: {}: {why}", crate::go_print::go_quote(phase)))]
}
