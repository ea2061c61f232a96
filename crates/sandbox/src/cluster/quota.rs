//! The resource quota controller: each ResourceQuota's `status.hard` becomes its `spec.hard` and
//! `status.used` what its namespace holds now, recounted after any change in a namespace that has
//! quotas and written through the status verb only when it differs.
//!
//! The counting rules are [`crate::quota`]'s; the admission plugin's charge on each write is the
//! store's. This controller catches up with what the plugin does not charge (deletions, pods that
//! finish, a quota's new `spec.hard`).

use std::collections::{BTreeMap, BTreeSet};

use super::api::Api;
use crate::object_meta::meta_str;
use crate::store::{ChangeType, Key};

/// Where ResourceQuotas are stored.
const QUOTAS: &str = "resourcequotas.";

/// The namespaces holding quotas, and those to recount.
#[derive(Default)]
pub(crate) struct Quotas {
    /// Namespace → how many quotas it holds.
    namespaces: BTreeMap<String, usize>,
    /// Namespaces whose usage may have changed since it was last counted.
    dirty: BTreeSet<String>,
}

impl Quotas {
    /// An object changed: a quota added or gone changes what is watched; any change in a
    /// namespace with quotas calls for a recount.
    pub(crate) fn observe(&mut self, key: &Key, kind: ChangeType) {
        if key.0 == QUOTAS {
            match kind {
                ChangeType::Added => *self.namespaces.entry(key.1.clone()).or_default() += 1,
                ChangeType::Deleted => {
                    if let Some(n) = self.namespaces.get_mut(&key.1) {
                        *n -= 1;
                        if *n == 0 {
                            self.namespaces.remove(&key.1);
                            self.dirty.remove(&key.1);
                            return;
                        }
                    }
                }
                _ => {}
            }
        }
        if self.namespaces.contains_key(&key.1) {
            self.dirty.insert(key.1.clone());
        }
    }

    /// One pass: every quota of each namespace to recount. A write that finds the quota changed
    /// since it was read leaves the namespace to the next pass.
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        if self.dirty.is_empty() {
            return;
        }
        let now = jiff::Timestamp::now();
        for ns in std::mem::take(&mut self.dirty) {
            let objects_of = |group: &str, plural: &str| {
                let def = api.store.find_storage(&format!("{plural}.{group}"));
                def.map(|def| api.list(&def, Some(&ns))).unwrap_or_default()
            };
            for quota in api.list(api.defs.quotas, Some(&ns)) {
                let status = crate::quota::recalculate(&quota, objects_of, now);
                if let Err(e) = api.write_status(api.defs.quotas, &quota, status, "kube-controller-manager") {
                    if e.code == 409 {
                        self.dirty.insert(ns.clone());
                    }
                    super::log_failure("resourcequota-controller", meta_str(&quota, "name"), &e);
                }
            }
        }
    }
}
