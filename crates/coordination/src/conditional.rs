//! Writes conditional on what they were decided from: a write that changes an object the
//! controller read from its cache carries that object's `resourceVersion` (and uid), so the API
//! server applies it only to the version the decision saw — whatever the network did to the
//! request meanwhile.
//!
//! The fence (the `kube-lease-election` crate) stops a replica that may have been replaced from *sending*;
//! no clock in the sender can stop a request already on the wire, held up by a cut network and
//! delivered after another replica has written the same object. Only the server can refuse that
//! request, and only if it says what it was based on:
//!
//! | write | condition it carries | refused with |
//! |---|---|---|
//! | merge patch (`spec`, or `status` through the subresource) | `metadata.resourceVersion` and `metadata.uid` | 409 Conflict |
//! | JSON patch | `test` of `/metadata/uid`, `replace` of `/metadata/resourceVersion` | 409 Conflict (a different uid: 422) |
//! | delete | `Preconditions { uid, resourceVersion }` | 409 Conflict |
//! | create | none: a late create of a name that exists is 409 AlreadyExists | — |
//!
//! A refused write is not a failure: [`ReadVersion::conflict`] turns the 409 into a [`Conflict`],
//! which a reconcile returns (see [`Reconcile::conflict`](crate::Reconcile::conflict)); the
//! coordinator counts it (`<prefix>_write_conflicts_total{resource}`) and requeues the key once
//! the cache holds a newer version of the object — no backoff, no Warning, no error line.
//!
//! ```
//! use kube_coordination::conditional::ReadVersion;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use serde_json::json;
//!
//! let mut cached = Deployment::default();
//! cached.metadata.name = Some("web".into());
//! cached.metadata.namespace = Some("default".into());
//! cached.metadata.uid = Some("u-1".into());
//! cached.metadata.resource_version = Some("42".into());
//! let read = ReadVersion::of(&cached);
//! let patch = read.merge_patch(json!({ "spec": { "replicas": 5 } }));
//! assert_eq!(patch["metadata"], json!({ "resourceVersion": "42", "uid": "u-1" }));
//! let delete = read.delete_params(kube::api::DeleteParams::background());
//! let pre = delete.preconditions.unwrap();
//! assert_eq!((pre.uid.as_deref(), pre.resource_version.as_deref()), (Some("u-1"), Some("42")));
//! ```
//!
//! ## Warning
//!
//! * **The condition is the version the decision read.** Take the [`ReadVersion`] from the cached
//!   object the decision was made from, never from a fresh GET: a write conditional on a newer
//!   version than the decision saw refuses nothing that matters.
//! * **Every change of the object refuses the write**, a status write too (a Deployment's, each
//!   time a pod becomes ready): during a rollout a write may meet a 409 and go again once the
//!   cache has the new version — one extra request, the price of never applying a stale decision.
//! * **It does not cover what the decision read from other objects.** A late write decided from a
//!   ConfigMap that has changed again, to a Deployment nobody touched since, still matches the
//!   Deployment's version; that case is the fence's deadline's (the write is abandoned when the
//!   fence closes), and what remains of it is in the README's leader-election section.

use std::borrow::Cow;
use std::fmt;

use kube::Resource;
use kube::api::{DeleteParams, Preconditions};
use kube_informer::ObjectKey;
use serde_json::{Value, json};

/// The version of an object a write is decided from: what the server must still hold for the
/// write to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadVersion {
    /// The object's kind, as the coordinator's source for it names it (`Deployment`).
    pub kind: Cow<'static, str>,
    /// The resource (plural), for the conflicts metric (`deployments`).
    pub resource: Cow<'static, str>,
    /// The object.
    pub key: ObjectKey,
    /// Its uid, as read.
    pub uid: Option<String>,
    /// Its `resourceVersion`, as read.
    pub resource_version: Option<String>,
}

impl ReadVersion {
    /// The version of `obj`, as the cache holds it.
    #[must_use]
    pub fn of<K: Resource<DynamicType = ()>>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            kind: K::kind(&()),
            resource: K::plural(&()),
            key: ObjectKey::new(meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or("")),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
        }
    }

    /// A merge patch (of the object or of its `status` subresource) that applies only to this
    /// version: `patch` with `metadata.resourceVersion` and `metadata.uid` set.
    #[must_use]
    pub fn merge_patch(&self, mut patch: Value) -> Value {
        if let Some(o) = patch.as_object_mut() {
            let meta = o.entry("metadata").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                if let Some(rv) = &self.resource_version {
                    m.insert("resourceVersion".into(), json!(rv));
                }
                if let Some(uid) = &self.uid {
                    m.insert("uid".into(), json!(uid));
                }
            }
        }
        patch
    }

    /// A JSON patch of `ops` that applies only to this version: preceded by a `test` of the uid
    /// and a `replace` of `metadata.resourceVersion`, which the server checks as it would a
    /// merge patch's (409 Conflict; a failed `test` is 422).
    ///
    /// # Panics
    ///
    /// If `ops` are not JSON patch operations.
    #[must_use]
    pub fn json_patch(&self, ops: impl IntoIterator<Item = Value>) -> json_patch::Patch {
        let mut all = Vec::new();
        if let Some(uid) = &self.uid {
            all.push(json!({ "op": "test", "path": "/metadata/uid", "value": uid }));
        }
        if let Some(rv) = &self.resource_version {
            all.push(json!({ "op": "replace", "path": "/metadata/resourceVersion", "value": rv }));
        }
        all.extend(ops);
        serde_json::from_value(Value::Array(all)).expect("JSON patch operations")
    }

    /// The JSON patch that sets `path` to `value` on this version only (a Deployment's scale:
    /// `replace("/spec/replicas", 5)`).
    #[must_use]
    pub fn replace(&self, path: &str, value: impl Into<Value>) -> json_patch::Patch {
        self.json_patch([json!({ "op": "replace", "path": path, "value": value.into() })])
    }

    /// `params` with this version's uid and `resourceVersion` as the delete's preconditions.
    #[must_use]
    pub fn delete_params(&self, params: DeleteParams) -> DeleteParams {
        DeleteParams {
            preconditions: Some(Preconditions {
                uid: self.uid.clone(),
                resource_version: self.resource_version.clone(),
            }),
            ..params
        }
    }

    /// The [`Conflict`] when `error` is the server refusing a write because the object is no
    /// longer this version (409 with reason `Conflict`; `AlreadyExists` is not one).
    #[must_use]
    pub fn conflict(&self, error: &kube::Error) -> Option<Conflict> {
        is_conflict(error).then(|| Conflict { read: self.clone() })
    }
}

/// Whether `error` is a 409 Conflict: a precondition or an optimistic-concurrency check failed.
#[must_use]
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict")
}

/// A write refused because the object had changed since it was read: the key is requeued once
/// the cache holds a newer version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The version the write was conditional on.
    pub read: ReadVersion,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} changed since resourceVersion {} was read; the write was refused",
            self.read.kind,
            self.read.key,
            self.read.resource_version.as_deref().unwrap_or("(none)")
        )
    }
}

impl std::error::Error for Conflict {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_patch_tests_the_uid_and_carries_the_version_first() {
        let read = ReadVersion {
            kind: "Deployment".into(),
            resource: "deployments".into(),
            key: ObjectKey::new("ns", "web"),
            uid: Some("u".into()),
            resource_version: Some("7".into()),
        };
        let patch = read.replace("/spec/replicas", 3);
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([
                { "op": "test", "path": "/metadata/uid", "value": "u" },
                { "op": "replace", "path": "/metadata/resourceVersion", "value": "7" },
                { "op": "replace", "path": "/spec/replicas", "value": 3 },
            ])
        );
        let refused = kube::Error::Api(
            kube::core::Status::failure("the object has been modified", "Conflict").with_code(409).boxed(),
        );
        let conflict = read.conflict(&refused).expect("a conflict");
        assert_eq!(
            conflict.to_string(),
            "Deployment ns/web changed since resourceVersion 7 was read; the write was refused"
        );
        let exists =
            kube::Error::Api(kube::core::Status::failure("exists", "AlreadyExists").with_code(409).boxed());
        assert_eq!(read.conflict(&exists), None);
    }
}
