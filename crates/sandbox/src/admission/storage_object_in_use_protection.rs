//! StorageObjectInUseProtection (`plugin/pkg/admission/storage/storageobjectinuseprotection`):
//! claims and volumes get the finalizer the protection controllers remove once they are no
//! longer in use ([`Store::protection_tick`](crate::store::Store::protection_tick)).

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core};
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::store::{PV_PROTECTION, PVC_PROTECTION};

/// The plugin.
pub(crate) struct StorageObjectInUseProtection;

impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create
            && (is_core(def, "persistentvolumeclaims") || is_core(def, "persistentvolumes"))
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let finalizer = if req.def.plural == "persistentvolumes" { PV_PROTECTION } else { PVC_PROTECTION };
        let meta = crate::object::meta_mut(obj);
        let list = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(l) = list.as_array_mut()
            && !l.iter().any(|f| f == finalizer)
        {
            l.push(json!(finalizer));
        }
        Ok(())
    }
}
