//! StorageObjectInUseProtection (`plugin/pkg/admission/storage/storageobjectinuseprotection`):
//! claims and volumes get the finalizer the protection controllers remove once they are no
//! longer in use (`cluster/protection.rs`).

use serde_json::{Value, json};

use super::{Operation, Plugin, Request};
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The finalizer the plugin puts on every claim, which the protection controller removes once no
/// pod uses it.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer the plugin puts on every volume, removed once no claim is bound to it.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// The protection finalizer of the objects kept in `storage`: claims' and volumes'.
pub(crate) fn protection_finalizer(storage: &str) -> Option<&'static str> {
    match storage {
        "persistentvolumeclaims." => Some(PVC_PROTECTION),
        "persistentvolumes." => Some(PV_PROTECTION),
        _ => None,
    }
}

/// The plugin.
pub(crate) struct StorageObjectInUseProtection;

impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && protection_finalizer(def.storage).is_some()
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let Some(finalizer) = protection_finalizer(req.def.storage) else { return Ok(()) };
        let meta = crate::object_meta::meta_mut(obj);
        let list = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(l) = list.as_array_mut()
            && !l.iter().any(|f| f == finalizer)
        {
            l.push(json!(finalizer));
        }
        Ok(())
    }
}
