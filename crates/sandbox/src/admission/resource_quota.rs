//! ResourceQuota (`k8s.io/apiserver/pkg/admission/plugin/resourcequota`): a write that would take
//! a namespace's usage past a quota's `hard` limits is refused (403); one that fits charges the
//! quotas, whose new `status.used` the store writes with the object. The decisions are
//! [`crate::quota`]'s; the recount is the quota controller's (`cluster/quota.rs`).

use serde_json::Value;

use super::{Effects, Operation, Plugin, Request};
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct ResourceQuota;

impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op != Operation::Delete && crate::quota::handles(def.group, def.plural, op == Operation::Update)
    }

    fn validate(&self, req: &Request<'_>, obj: &Value, effects: &mut Effects) -> Result<(), ApiError> {
        if req.ns.is_empty() || !req.objects.has_quotas(req.ns) {
            return Ok(());
        }
        let quotas_def =
            crate::catalog::find("", "v1", "resourcequotas").expect("resourcequotas are built in");
        let quotas = req.objects.list(quotas_def, Some(req.ns));
        let (group, plural) = (req.def.group, req.def.plural);
        effects.charges =
            crate::quota::admit(&quotas, group, plural, obj, req.old, jiff::Timestamp::now())
                .map_err(|why| ApiError::admission_forbidden(group, plural, meta_str(obj, "name"), &why))?;
        Ok(())
    }
}
