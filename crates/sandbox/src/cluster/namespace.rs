//! The namespace controller: a namespace marked for deletion (Terminating) is emptied — every
//! object in it deleted through the delete verb, as upstream's deleter deletes each resource's
//! collection in the background — and, once nothing is left, finalized.
//!
//! The delete of a namespace only marks it; the controller acts [`NAMESPACE_CLEANUP_DELAY`]
//! later (upstream's works through discovery first), so a client deleting the namespace and then
//! its objects still finds them. Objects held by finalizers keep the namespace until they go;
//! each pass looks again.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::api::Api;
use crate::object_meta::{is_deleting, meta_str};
use crate::store::{DeleteOptions, Propagation};

/// How long a deleted namespace stays Terminating, with its contents, before the namespace
/// controller empties it.
pub const NAMESPACE_CLEANUP_DELAY: Duration = Duration::from_millis(500);

/// The Terminating namespaces, and since when the controller has seen them so.
#[derive(Default)]
pub(crate) struct Namespaces {
    terminating: BTreeMap<String, Instant>,
}

impl Namespaces {
    /// A namespace changed (`None`: it is gone).
    pub(crate) fn observe(&mut self, name: &str, ns: Option<&Value>) {
        match ns {
            Some(ns) if is_deleting(ns) => {
                self.terminating.entry(name.to_owned()).or_insert_with(Instant::now);
            }
            _ => {
                self.terminating.remove(name);
            }
        }
    }

    /// One pass: each namespace Terminating for long enough is emptied, then finalized.
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        let due: Vec<String> = self
            .terminating
            .iter()
            .filter(|(_, since)| since.elapsed() >= NAMESPACE_CLEANUP_DELAY)
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in due {
            delete_contents(api, &ns);
            if api.store.finalize_namespace(&ns) {
                self.terminating.remove(&ns);
            }
        }
    }
}

/// Deletes every object in `ns` not already being deleted, resource by resource, in the
/// background and conditional on each object's uid.
fn delete_contents(api: &Api<'_>, ns: &str) {
    let registry = api.store.registry();
    let mut seen = std::collections::BTreeSet::new();
    for def in registry.resources().iter().filter(|d| d.namespaced) {
        // One version of each stored resource.
        if !seen.insert(def.storage) {
            continue;
        }
        for obj in api.list(def, Some(ns)) {
            if is_deleting(&obj) {
                continue;
            }
            let opts = DeleteOptions {
                propagation: Some(Propagation::Background),
                uid: Some(meta_str(&obj, "uid").to_owned()),
                ..DeleteOptions::default()
            };
            if let Err(e) = api.store.delete(def, ns, meta_str(&obj, "name"), &opts) {
                super::log_failure("namespace-controller", meta_str(&obj, "name"), &e);
            }
        }
    }
}
