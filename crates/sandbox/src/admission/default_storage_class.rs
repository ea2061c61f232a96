//! DefaultStorageClass (`plugin/pkg/admission/storage/storageclass/setdefault`): a claim that
//! names no class gets the default one (the newest, if several say they are).

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core, list, spec};
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct DefaultStorageClass;

impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "persistentvolumeclaims")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, pvc: &mut Value) -> Result<(), ApiError> {
        if pvc.pointer("/spec/storageClassName").is_some_and(|c| !c.is_null()) {
            return Ok(());
        }
        let classes = list(req.objects, "storage.k8s.io", "storageclasses", None);
        let default = classes
            .iter()
            .filter(|c| {
                c.pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
                    == Some(&json!("true"))
            })
            .max_by_key(|c| meta_str(c, "creationTimestamp").to_owned());
        if let Some(c) = default {
            spec(pvc).insert("storageClassName".into(), json!(meta_str(c, "name")));
        }
        Ok(())
    }
}
