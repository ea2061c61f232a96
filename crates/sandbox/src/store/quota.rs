//! ResourceQuota in the store: the charges the admission plugin
//! ([`crate::admission`]'s ResourceQuota) leaves to write with an object, and the quota
//! controller's recount ([`Store::quota_tick`]) — the decisions are [`crate::quota`]'s, this
//! module reads what they need under the store's lock and commits what they decide.
//!
//! The recount runs for the namespaces in `State::quota_dirty`, which every commit in a namespace
//! holding a quota adds to; a sandbox without quotas pays one empty-map check per commit.

use std::sync::Arc;

use serde_json::Value;

use super::storage::{Key, State};
use super::{ChangeType, ListQuery, Store};
use crate::catalog;
use crate::quota::{self, Charges};
use crate::resource::ResourceDef;

/// Where ResourceQuotas are stored.
pub(super) const QUOTA_STORAGE: &str = "resourcequotas.";

fn quotas_def() -> &'static ResourceDef {
    catalog::find("", "v1", "resourcequotas").expect("resourcequotas are built in")
}

impl State {
    /// Writes each charged quota's new `status.used`, as the plugin does before the object is
    /// stored.
    pub(super) fn charge(&mut self, ns: &str, charges: Charges) {
        for (name, used) in charges {
            let key: Key = (QUOTA_STORAGE, ns.to_owned(), name);
            let Some(old) = self.object(&key) else { continue };
            let mut new = (*old).clone();
            new["status"]["used"] = quota::to_json(&used);
            self.commit(key, ChangeType::Modified, new, Some(old));
        }
    }

    /// The namespace's objects of `plural.group`, whatever version serves them.
    fn objects_of(&self, group: &str, plural: &str, ns: &str) -> Vec<Arc<Value>> {
        let storage = format!("{plural}.{group}");
        let registry = self.registry.read();
        let Some(def) = registry.resources().iter().find(|d| d.storage == storage).cloned() else {
            return Vec::new();
        };
        drop(registry);
        self.list_items(&def, Some(ns), &ListQuery::default())
    }
}

impl Store {
    /// Plays kube-controller-manager's resource quota controller for the namespaces whose
    /// objects changed: each quota's `status.hard` becomes its `spec.hard` and `status.used` what
    /// the namespace holds now, written only when it differs. Returns how many quotas were
    /// written.
    pub fn quota_tick(&self) -> usize {
        let mut st = self.lock();
        if st.quota_dirty.is_empty() {
            return 0;
        }
        let now = jiff::Timestamp::now();
        let namespaces = std::mem::take(&mut st.quota_dirty);
        let mut written = 0;
        for ns in &namespaces {
            for old in st.list_items(quotas_def(), Some(ns), &ListQuery::default()) {
                let status = quota::recalculate(&old, |group, plural| st.objects_of(group, plural, ns), now);
                if old.get("status") == Some(&status) {
                    continue;
                }
                let mut new = (*old).clone();
                new["status"] = status;
                let key: Key =
                    (QUOTA_STORAGE, ns.clone(), crate::object_meta::meta_str(&old, "name").to_owned());
                st.commit(key, ChangeType::Modified, new, Some(old));
                written += 1;
            }
        }
        // The controller's own writes marked the namespaces again; they change no usage.
        for ns in &namespaces {
            st.quota_dirty.remove(ns);
        }
        written
    }
}
