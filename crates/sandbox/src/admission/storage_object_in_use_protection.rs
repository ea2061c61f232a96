//! StorageObjectInUseProtection (`plugin/pkg/admission/storage/storageobjectinuseprotection`):
//! claims and volumes get the finalizer the protection controllers remove once they are no
//! longer in use (`cluster/protection.rs`).

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core};
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The finalizer the plugin puts on every claim, which the protection controller removes once no
/// pod uses it.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer the plugin puts on every volume, removed once no claim is bound to it.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

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
