//! One resource request being answered, as its handler sees it: the sandbox, the store it acts on
//! (a throwaway copy for a dry run), the parsed request, its body and its record. The dispatch
//! builds it; every verb family's handler takes it.

use std::sync::Arc;

use bytes::Bytes;
use http::header;

use super::request::Request;
use crate::SandboxState;
use crate::record::RequestRecord;
use crate::store::{DeleteOptions, Store};

/// One resource request being answered: what its handler reads and records.
pub(super) struct Call<'a> {
    pub(super) shared: &'a Arc<SandboxState>,
    /// The store the request acts on: a throwaway copy of it for a dry-run write.
    pub(super) store: &'a Store,
    pub(super) req: Request,
    pub(super) parts: &'a http::request::Parts,
    pub(super) bytes: Bytes,
    pub(super) record: &'a mut RequestRecord,
    /// A delete's options, read from its body (and its `dryRun` joined to the query's).
    pub(super) delete: Option<(serde_json::Value, DeleteOptions)>,
}

impl Call<'_> {
    /// The body's declared type, `""` when none is.
    pub(super) fn content_type(&self) -> &str {
        self.parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// Who writes, for `managedFields` (upstream's `managerOrUserAgent`).
    /// The user the request acts as (the administrator for one the server did not admit).
    pub(super) fn requester(&self) -> crate::user::UserInfo {
        self.parts
            .extensions
            .get::<crate::auth::Requester>()
            .map_or_else(crate::user::UserInfo::admin, |r| r.0.clone())
    }

    /// RBAC's escalation check of a write of this request's object: `body` a create's or a
    /// PUT's, the stored object read for an update.
    pub(super) fn escalation(
        &self,
        body: Option<&serde_json::Value>,
    ) -> Result<Option<crate::auth::escalation::Escalation>, crate::status::ApiError> {
        let (def, ns, name) = (self.req.def.as_ref(), self.req.ns(), self.req.name());
        if self.req.sub != crate::resource::Subresource::Main {
            return Ok(None);
        }
        let old = || if name.is_empty() { None } else { self.store.stored(def, ns, name) };
        crate::auth::escalation::Escalation::prepare(
            &self.shared.auth,
            self.store,
            &self.requester(),
            (def.group, def.plural, ns, name),
            body,
            old,
        )
    }

    pub(super) fn manager(&self) -> String {
        self.req
            .query
            .field_manager
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| crate::managed_fields::manager_from_user_agent(&self.record.user_agent))
    }
}
