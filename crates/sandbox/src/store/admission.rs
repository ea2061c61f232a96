//! The store's side of admission ([`crate::admission`]): what the plugins read of its state, and
//! the Warning headers they add to a write, asked for by the HTTP layer after it.

use std::sync::Arc;

use serde_json::Value;

use super::storage::State;
use crate::admission::{self, Objects, Operation, Request, WebhookCalls};
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

impl Objects for State {
    fn list(&self, def: &ResourceDef, ns: Option<&str>) -> Vec<Arc<Value>> {
        self.list_items(def, ns, &super::ListQuery::default())
    }

    fn get(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<Arc<Value>> {
        State::get(self, def, ns, name).ok()
    }

    fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.namespace_state(name)
    }

    fn has_quotas(&self, ns: &str) -> bool {
        self.quota_namespaces.contains_key(ns)
    }

    fn written(&self, def: &ResourceDef) -> (u64, u64) {
        (self.id, self.last_write(def.storage))
    }

    fn find_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        self.registry.read().find_kind(api_version, kind)
    }

    fn versions_of(&self, group: &str, plural: &str) -> Vec<&'static str> {
        let registry = self.registry.read();
        registry
            .resources()
            .iter()
            .filter(|r| r.group == group && r.plural == plural)
            .map(|r| r.version)
            .collect()
    }
}

impl State {
    /// Admission's validating phase for the delete of an object of `def` in `ns`; `old_view`
    /// is the stored object in the request's version.
    pub(super) fn admit_delete(&self, def: &ResourceDef, ns: &str, old_view: &Value) -> Result<(), ApiError> {
        admission::validate(&self.admission_request(Operation::Delete, def, ns, Some(old_view)), &Value::Null)
            .map(drop)
    }

    /// The webhooks an update of the object `name` may call (none when it does not exist).
    /// Choosing them reads no object (rules and namespace selector only), so the stored one is
    /// not converted to the request's version for it.
    pub(super) fn update_webhooks(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<WebhookCalls> {
        let old = State::get(self, def, ns, name).ok()?;
        let req = self.admission_request(Operation::Update, def, ns, Some(&old));
        admission::webhooks(&req, name, None, &self.services.read())
    }

    /// The webhooks the delete of `old` (as stored) may call.
    pub(super) fn delete_webhooks(&self, def: &ResourceDef, ns: &str, old: &Value) -> Option<WebhookCalls> {
        let req = self.admission_request(Operation::Delete, def, ns, Some(old));
        admission::webhooks(&req, meta_str(old, "name"), None, &self.services.read())
    }

    /// The request admission sees of a write of `def` in `ns`, reading this state.
    pub(super) fn admission_request<'a>(
        &'a self,
        op: Operation,
        def: &'a ResourceDef,
        ns: &'a str,
        old: Option<&'a Value>,
    ) -> Request<'a> {
        Request { op, def, ns, old, objects: self }
    }
}

impl super::Store {
    /// Where the webhooks naming the Service `namespace/name` are called from now on.
    pub(crate) fn route_webhook_service(&self, namespace: &str, name: &str, at: std::net::SocketAddr) {
        self.lock().services.write().insert((namespace.to_owned(), name.to_owned()), at);
    }

    /// Whether a write may call an admission webhook: a webhook configuration was written.
    #[must_use]
    pub(crate) fn may_call_webhooks(&self) -> bool {
        let kinds = admission::webhook_configuration_kinds();
        let st = self.lock();
        kinds.iter().any(|def| st.last_write(def.storage) != 0)
    }

    /// Whether reading or writing a custom resource may call its CRD's conversion webhook: an
    /// established CRD converts by webhook.
    #[must_use]
    pub(crate) fn may_convert_by_webhook(&self) -> bool {
        self.registry.read().resources().iter().any(|r| r.conversion_webhook().is_some())
    }

    /// Whether a create (or an update) of `def` in `ns` may draw admission warnings, so that a
    /// writer reads the object as it was first only then.
    #[must_use]
    pub(crate) fn may_warn(&self, def: &ResourceDef, ns: &str, update: bool) -> bool {
        let op = if update { Operation::Update } else { Operation::Create };
        if !admission::warns(op, def) {
            return false;
        }
        let st = self.lock();
        admission::may_warn(&st.admission_request(op, def, ns, None))
    }

    /// The Warning headers admission adds to a write of `new` (over `old`, on an update) that
    /// was allowed.
    #[must_use]
    pub(crate) fn admission_warnings(
        &self,
        def: &ResourceDef,
        ns: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Vec<String> {
        let op = if old.is_some() { Operation::Update } else { Operation::Create };
        if !admission::warns(op, def) {
            return Vec::new();
        }
        let st = self.lock();
        admission::warnings(&st.admission_request(op, def, ns, old), new)
    }
}
