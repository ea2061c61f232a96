//! ResourceQuota in the store: the admission plugin's check and charge on a write — the
//! decisions are [`crate::quota`]'s, this module reads what they need under the store's lock and
//! commits what they decide. The quota controller's recount is [`crate::cluster`]'s.

use serde_json::Value;

use super::storage::{Key, State};
use super::{ChangeType, ListQuery};
use crate::quota::{self, Charges};
use crate::resource::{self, ResourceDef};
use crate::status::ApiError;

/// Where ResourceQuotas are stored.
pub(super) const QUOTA_STORAGE: &str = "resourcequotas.";

fn quotas_def() -> &'static ResourceDef {
    resource::find("", "v1", "resourcequotas").expect("resourcequotas are built in")
}

impl State {
    /// The ResourceQuota plugin for a write of `new` (over `old`) in `ns`: the quotas to charge,
    /// or a 403 naming `shown`.
    pub(super) fn quota_admit(
        &self,
        def: &ResourceDef,
        ns: &str,
        shown: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Result<Charges, ApiError> {
        if ns.is_empty() || !self.quota_namespaces.contains_key(ns) {
            return Ok(Vec::new());
        }
        let quotas = self.list_items(quotas_def(), Some(ns), &ListQuery::default());
        quota::admit(&quotas, def.group, def.plural, new, old, jiff::Timestamp::now())
            .map_err(|why| ApiError::admission_forbidden(def.group, def.plural, shown, &why))
    }

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
