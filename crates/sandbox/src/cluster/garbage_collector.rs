//! The garbage collector's attempt to delete dependents written with a missing owner (say,
//! created pointing at a uid that is not there).
//!
//! The cascade of a delete — dependents of an owner that goes, foreground and orphan deletion —
//! is the store's delete verb's own work (`store/deletion.rs`); what is left to a controller is
//! the dependent whose owner was already missing when it was written. It is seen through the
//! store's changes, left alone for [`DANGLING_OWNER_DELAY`] (upstream's collector looks the owner
//! up first: a client reading the object right after writing it still finds it), then deleted
//! when none of its owners exists, or stripped of its references to the missing ones.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::api::Api;
use crate::object_meta::{finalizers, is_deleting};
use crate::store::{DeleteOptions, Key, Propagation, Store};

/// How long a dependent written with a missing owner stays before the garbage collector acts on
/// it.
pub const DANGLING_OWNER_DELAY: Duration = Duration::from_millis(100);

/// The garbage collector's user agent, as `managedFields` names its writes.
const MANAGER: &str = "kube-controller-manager";

/// What the collector reads of every changed object.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Glance {
    metadata: GlanceMetadata,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GlanceMetadata {
    owner_references: Vec<Value>,
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

/// The attempt-to-delete queue: dependents with a missing owner, and since when.
#[derive(Default)]
pub(crate) struct GarbageCollector {
    dangling: BTreeMap<Key, Instant>,
}

impl GarbageCollector {
    /// An object changed: queued when it names an owner that does not exist.
    pub(crate) fn observe(&mut self, store: &Store, change: &crate::store::Followed) {
        let key = &change.retained.key;
        if change.retained.kind == crate::store::ChangeType::Deleted {
            return;
        }
        let Ok(glance) = change.object_as::<Glance>() else { return };
        let meta = glance.metadata;
        if meta.deletion_timestamp.is_some() || meta.owner_references.is_empty() {
            return;
        }
        if meta.owner_references.iter().any(|r| !store.owner_exists(&key.1, r)) {
            self.dangling.entry(key.clone()).or_insert_with(Instant::now);
        }
    }

    /// One pass over the dependents that have waited long enough.
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        let due: Vec<(Key, Instant)> = self
            .dangling
            .iter()
            .filter(|(_, since)| since.elapsed() >= DANGLING_OWNER_DELAY)
            .map(|(k, since)| (k.clone(), *since))
            .collect();
        for (key, since) in due {
            self.dangling.remove(&key);
            if let Err(e) = attempt_to_delete(api, &key) {
                if e.code == 409 {
                    // Written meanwhile: looked at again on the next pass.
                    self.dangling.insert(key, since);
                } else {
                    super::log_failure("garbage-collector-controller", &key.2, &e);
                }
            }
        }
    }
}

/// Upstream's `attemptToDeleteItem` for one dependent: when none of its owners exists it is
/// deleted (in the foreground, or orphaning its own dependents, when it carries that finalizer;
/// in the background otherwise); when some still exist, the references to the missing ones are
/// removed. Both writes are conditional on what was read.
fn attempt_to_delete(api: &Api<'_>, key: &Key) -> Result<(), crate::ApiError> {
    let Some(def) = api.store.find_storage(key.0) else { return Ok(()) };
    let Some(obj) = api.get(&def, &key.1, &key.2) else { return Ok(()) };
    if is_deleting(&obj) {
        return Ok(());
    }
    let refs =
        obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    let (absent, present): (Vec<Value>, Vec<Value>) =
        refs.into_iter().partition(|r| !api.store.owner_exists(&key.1, r));
    if absent.is_empty() {
        return Ok(());
    }
    if present.is_empty() {
        let f = finalizers(&obj);
        let propagation = if f.iter().any(|x| x == "orphan") {
            Propagation::Orphan
        } else if f.iter().any(|x| x == "foregroundDeletion") {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        let opts = DeleteOptions {
            propagation: Some(propagation),
            uid: Some(crate::object_meta::meta_str(&obj, "uid").to_owned()),
            ..DeleteOptions::default()
        };
        return api.store.delete(&def, &key.1, &key.2, &opts).map(drop);
    }
    let mut kept = (*obj).clone();
    crate::object_meta::meta_mut(&mut kept).insert("ownerReferences".into(), Value::Array(present));
    api.update(&def, kept, MANAGER).map(drop)
}
