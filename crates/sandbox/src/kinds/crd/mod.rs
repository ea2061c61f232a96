//! apiextensions.k8s.io/v1 CustomResourceDefinition: defaults, validation and the status its
//! controllers maintain, as upstream's apiextensions-apiserver (Kubernetes v1.32) does.
//!
//! Upstream files followed:
//!
//! - `pkg/apis/apiextensions/v1/defaults.go` — [`default`];
//! - `pkg/registry/customresourcedefinition/strategy.go` — [`prepare_create`],
//!   [`prepare_update`] (PrepareForCreate / PrepareForUpdate);
//! - `pkg/apis/apiextensions/validation/validation.go` — [`validate`] (see [`validation`] for
//!   the order of the causes and what is left out);
//! - `pkg/controller/status/naming_controller.go` and `pkg/controller/establish` —
//!   [`names_status`];
//! - `pkg/registry/customresourcedefinition/etcd.go` (`Delete`) and
//!   `pkg/controller/finalizer/crd_finalizer.go` — [`terminating`], [`cleanup_started`],
//!   [`cleanup_finished`];
//! - `k8s.io/apimachinery/pkg/version` — [`compare_kube_aware_versions`].
//!
//! **When the cleanup finalizer is added.** Not at create: the strategy's PrepareForCreate only
//! resets the status. The CRD registry's own `Delete` does it: on the *first* delete request
//! (no `deletionTimestamp` yet) it sets `deletionTimestamp`, appends
//! [`CLEANUP_FINALIZER`] and the `Terminating` condition in one update, and answers with the
//! still-existing object (200, not deleted). The finalizer controller then marks the deletion
//! in progress, deletes every instance, records the outcome and removes the finalizer, which
//! lets the object go. A later delete request while it is terminating takes the generic path.
//!
//! **Conversion webhooks.** `spec.conversion.strategy: Webhook` is accepted and validated as
//! upstream does (client config, review versions), but the sandbox calls no webhooks: whoever
//! serves a multi-version Webhook CRD must convert some other way or refuse the requests.

use serde_json::{Map, Value, json};

mod names;
pub mod validation;
mod version;

pub use names::names_status;
pub use validation::validate;
pub use version::compare_kube_aware_versions;

/// The finalizer a CRD's delete adds, removed once every instance is gone
/// (`apiextensions.CustomResourceCleanupFinalizer`).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The annotation a CRD in a protected group (`k8s.io`, `kubernetes.io` and their subdomains)
/// must carry: a URL of the approving pull request, or a reason starting with `unapproved`.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The condition types a CRD's status carries.
pub mod condition {
    /// The names in `status.acceptedNames` were accepted (no conflicts in the group).
    pub const NAMES_ACCEPTED: &str = "NamesAccepted";
    /// The resource is served.
    pub const ESTABLISHED: &str = "Established";
    /// The CRD is being deleted, with its instances.
    pub const TERMINATING: &str = "Terminating";
}

static NULL: Value = Value::Null;

/// `key` of `v` when it is set (present and not null).
pub(crate) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// `key` of `v` as a string, `""` when unset or not a string.
pub(crate) fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `key` of `v` as an array, empty when unset or not an array.
pub(crate) fn arr_at<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `key` of `v` is `true`.
pub(crate) fn is_true(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// `spec.versions`, empty when missing or malformed.
pub(crate) fn versions(crd: &Value) -> &[Value] {
    crd.get("spec").map_or(&[], |s| arr_at(s, "versions"))
}

/// `obj[key]` as an object, made one if it is unset or null; `None` when it holds something else
/// (or `obj` is not an object), which is left alone.
fn object_entry<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let slot = map.entry(key.to_owned()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = json!({});
    }
    slot.as_object_mut()
}

/// Fills in the API server's defaults for a v1 CRD (`SetObjectDefaults_CustomResourceDefinition`):
/// `spec.names.singular` is the lowercased kind, `spec.names.listKind` the kind + `List` (when
/// there is a kind), `spec.conversion` is `{strategy: None}` when unset, a conversion webhook's
/// `service.port` is 443, and `status.storedVersions`, when empty, holds the storage version.
/// Nothing else in a v1 CRD has a default (printer columns' `priority` stays unset: 0).
pub fn default(crd: &mut Value) {
    if !crd.is_object() {
        return;
    }
    let Some(spec) = object_entry(crd, "spec") else { return };
    let mut spec_value = Value::Object(std::mem::take(spec));
    if let Some(names) = object_entry(&mut spec_value, "names") {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        let unset =
            |m: &Map<String, Value>, k: &str| m.get(k).is_none_or(|v| v.as_str() == Some("") || v.is_null());
        if unset(names, "singular") && !kind.is_empty() {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if unset(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if let Some(map) = spec_value.as_object_mut()
        && map.get("conversion").is_none_or(Value::is_null)
    {
        map.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(service) = spec_value.pointer_mut("/conversion/webhook/clientConfig/service")
        && let Some(s) = service.as_object_mut()
        && s.get("port").is_none_or(Value::is_null)
    {
        s.insert("port".into(), json!(443));
    }
    let storage = storage_version(&json!({"spec": &spec_value}));
    crd["spec"] = spec_value;
    if let Some(storage) = storage
        && let Some(status) = crd.get_mut("status").and_then(Value::as_object_mut)
        && status.get("storedVersions").and_then(Value::as_array).is_none_or(Vec::is_empty)
    {
        status.insert("storedVersions".into(), json!([storage]));
    }
}

/// What the strategy's PrepareForCreate does: the status is reset — no conditions, empty
/// accepted names, the storage version as the one stored version — and the generation is 1.
/// The shape is the one a create answers with: `conditions` is `null` (upstream's type does
/// not omit it), `acceptedNames` has its two always-present fields empty, and `storedVersions`
/// is `null` when no version is marked as the storage version (validation then refuses it).
pub fn prepare_create(crd: &mut Value) {
    let Some(map) = crd.as_object_mut() else { return };
    let stored = storage_version(&Value::Object(map.clone())).map_or(Value::Null, |v| json!([v]));
    map.insert(
        "status".into(),
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}),
    );
    if let Some(meta) = object_entry(crd, "metadata") {
        meta.insert("generation".into(), json!(1));
    }
}

/// What the strategy's PrepareForUpdate does to the status of an update of the main resource:
/// the status sent is dropped for the stored one, and the (new) storage version is added to
/// `status.storedVersions` if missing — so switching the storage version records it, and
/// dropping the old one from `spec.versions` fails until a migration drops it from the status.
/// The generation (bumped on spec changes) is left to the store's generic rule.
pub fn prepare_update(new: &mut Value, old: &Value) {
    let Some(map) = new.as_object_mut() else { return };
    match old.get("status") {
        Some(status) => map.insert("status".into(), status.clone()),
        None => map.remove("status"),
    };
    if let Some(storage) = storage_version(new) {
        add_stored_version(new, &storage);
    }
}

/// Appends `version` to `status.storedVersions` unless it is there (the status made an object if
/// it is not one).
pub(crate) fn add_stored_version(crd: &mut Value, version: &str) {
    let Some(status) = object_entry(crd, "status") else { return };
    let stored = status.entry("storedVersions").or_insert(Value::Null);
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut()
        && !list.iter().any(|v| v.as_str() == Some(version))
    {
        list.push(json!(version));
    }
}

/// The version marked `storage: true` (the first, if a malformed CRD marks several).
#[must_use]
pub fn storage_version(crd: &Value) -> Option<String> {
    versions(crd).iter().find(|v| is_true(v, "storage")).map(|v| str_at(v, "name").to_owned())
}

/// The served versions, in `spec.versions` order: `(name, whether it is the storage version)`.
/// Discovery orders the names by [`compare_kube_aware_versions`].
#[cfg(test)]
#[must_use]
pub fn served_versions(crd: &Value) -> Vec<(String, bool)> {
    versions(crd)
        .iter()
        .filter(|v| is_true(v, "served"))
        .map(|v| (str_at(v, "name").to_owned(), is_true(v, "storage")))
        .collect()
}

/// The condition of `type_` in the CRD's status.
#[must_use]
pub fn find_condition<'a>(crd: &'a Value, type_: &str) -> Option<&'a Value> {
    crd.get("status").map_or(&[][..], |s| arr_at(s, "conditions")).iter().find(|c| str_at(c, "type") == type_)
}

/// Whether the condition of `type_` is present with status `True` (`IsCRDConditionTrue`).
#[must_use]
pub fn is_condition_true(crd: &Value, type_: &str) -> bool {
    find_condition(crd, type_).is_some_and(|c| str_at(c, "status") == "True")
}

/// Sets a condition in `status` as upstream's `SetCRDCondition`: a new type is appended; an
/// existing one takes the new status, reason and message and keeps its `lastTransitionTime`
/// unless the status changed (or it had none).
pub(crate) fn set_condition(
    status: &mut Map<String, Value>,
    type_: &str,
    state: &str,
    reason: &str,
    message: &str,
) {
    let now = crate::object_meta::now_rfc3339();
    let conditions = status.entry("conditions").or_insert(Value::Null);
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else { return };
    let fill = |c: &mut Map<String, Value>| {
        for (k, v) in [("reason", reason), ("message", message)] {
            if v.is_empty() {
                c.remove(k);
            } else {
                c.insert(k.into(), json!(v));
            }
        }
    };
    match list
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    {
        Some(c) => {
            let changed = c.get("status").and_then(Value::as_str) != Some(state);
            let no_time = c.get("lastTransitionTime").and_then(Value::as_str).is_none_or(str::is_empty);
            if changed || no_time {
                c.insert("lastTransitionTime".into(), json!(now));
            }
            c.insert("status".into(), json!(state));
            fill(c);
        }
        None => {
            let mut c = Map::new();
            c.insert("type".into(), json!(type_));
            c.insert("status".into(), json!(state));
            c.insert("lastTransitionTime".into(), json!(now));
            fill(&mut c);
            list.push(Value::Object(c));
        }
    }
}

fn set_crd_condition(crd: &mut Value, type_: &str, state: &str, reason: &str, message: &str) {
    if let Some(status) = object_entry(crd, "status") {
        set_condition(status, type_, state, reason, message);
    }
}

/// What the first delete request of a CRD does instead of deleting it (upstream's
/// `customresourcedefinition.REST.Delete`): sets `metadata.deletionTimestamp` (if unset), appends
/// [`CLEANUP_FINALIZER`] (if missing) and sets `Terminating` True, reason
/// `InstanceDeletionPending`. The object is then stored and answered, not removed; see the
/// module docs for the rest of the sequence.
pub fn terminating(crd: &mut Value) {
    let Some(meta) = object_entry(crd, "metadata") else { return };
    if meta.get("deletionTimestamp").is_none_or(Value::is_null) {
        meta.insert("deletionTimestamp".into(), json!(crate::object_meta::now_rfc3339()));
    }
    let finalizers = meta.entry("finalizers").or_insert(Value::Null);
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f.as_str() == Some(CLEANUP_FINALIZER))
    {
        list.push(json!(CLEANUP_FINALIZER));
    }
    set_crd_condition(
        crd,
        condition::TERMINATING,
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
}

/// The finalizer controller's first step, before it deletes the instances: `Terminating` True,
/// reason `InstanceDeletionInProgress`.
pub fn cleanup_started(crd: &mut Value) {
    set_crd_condition(
        crd,
        condition::TERMINATING,
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
    );
}

/// The finalizer controller's last step, once the instances are gone: `Terminating` False —
/// reason `InstanceDeletionCompleted` if the CRD was established, `NeverEstablished` if not,
/// `OverlappingBuiltInResource` for the two resources whose storage built-in kinds share — and
/// [`CLEANUP_FINALIZER`] removed, after which the store lets the object go.
pub fn cleanup_finished(crd: &mut Value) {
    let spec = crd.get("spec").unwrap_or(&NULL);
    let overlapping = matches!(
        (str_at(spec, "group"), spec.get("names").map_or("", |n| str_at(n, "plural"))),
        ("apiregistration.k8s.io", "apiservices") | ("apiextensions.k8s.io", "customresourcedefinitions")
    );
    let (reason, message) = if overlapping {
        ("OverlappingBuiltInResource", "instances overlap with built-in resources in storage")
    } else if is_condition_true(crd, condition::ESTABLISHED) {
        ("InstanceDeletionCompleted", "removed all instances")
    } else {
        ("NeverEstablished", "resource was never established")
    };
    set_crd_condition(crd, condition::TERMINATING, "False", reason, message);
    if let Some(list) = crd.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
        list.retain(|f| f.as_str() != Some(CLEANUP_FINALIZER));
    }
}

#[cfg(test)]
mod tests;
