//! ResourceQuota in the store: the charges the admission plugin ([`crate::admission`]'s
//! ResourceQuota) leaves to write with an object — the decisions are [`crate::quota`]'s, this
//! module reads what they need under the store's lock and commits what they decide. The quota
//! controller's recount is [`crate::cluster`]'s.

use super::ChangeType;
use super::storage::{Key, State};
use crate::quota::{self, Charges};

/// Where ResourceQuotas are stored.
pub(super) const QUOTA_STORAGE: &str = "resourcequotas.";

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
}
