//! Storage: v1 PersistentVolumeClaims and PersistentVolumes, storage.k8s.io/v1 StorageClasses —
//! upstream's defaults (`SetDefaults_PersistentVolumeClaim`, `_PersistentVolume`,
//! `SetDefaults_StorageClass`) and the validation a user meets first, in upstream's words.

use serde_json::{Value, json};

use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

/// A claim's defaults: `Filesystem` volumes, phase `Pending`.
pub fn default_claim(pvc: &mut Value) {
    if !pvc.is_object() {
        return;
    }
    set_default(object_at(pvc, "spec"), "volumeMode", json!("Filesystem"));
    set_default(object_at(pvc, "status"), "phase", json!("Pending"));
}

/// A claim asks for an access mode and a size; once created, its spec changes only to grow
/// (`resources.requests`) or to be bound (`volumeName`).
pub fn validate_claim(pvc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = pvc.get("spec").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    if spec.get("accessModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(("spec.accessModes".into(), "Required value: at least 1 access mode is required".into()));
    }
    if spec.pointer("/resources/requests/storage").is_none() {
        errs.push(("spec.resources[storage]".into(), "Required value".into()));
    }
    if let Some(old_spec) = old.and_then(|o| o.get("spec")) {
        let rest = |s: &Value| {
            let mut s = s.clone();
            if let Some(m) = s.as_object_mut() {
                m.remove("resources");
                m.remove("volumeAttributesClassName");
                if old_spec.get("volumeName").is_none_or(Value::is_null) {
                    m.remove("volumeName");
                }
            }
            s
        };
        if rest(&spec) != rest(old_spec) {
            errs.push((
                "spec".into(),
                "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims".into(),
            ));
        }
    }
    errs
}

/// A volume's defaults: `Retain`ed, `Filesystem`, phase `Pending`.
pub fn default_volume(pv: &mut Value) {
    if !pv.is_object() {
        return;
    }
    let spec = object_at(pv, "spec");
    set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    set_default(spec, "volumeMode", json!("Filesystem"));
    set_default(object_at(pv, "status"), "phase", json!("Pending"));
}

/// A class's defaults: volumes deleted with their claims, bound at once.
pub fn default_storage_class(sc: &mut Value) {
    if let Some(o) = sc.as_object_mut() {
        set_default(o, "reclaimPolicy", json!("Delete"));
        set_default(o, "volumeBindingMode", json!("Immediate"));
    }
}

/// A class names its provisioner, which with its parameters never changes.
pub fn validate_storage_class(sc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if sc.get("provisioner").and_then(Value::as_str).is_none_or(str::is_empty) {
        errs.push(("provisioner".into(), "Required value".into()));
    }
    if let Some(p) = sc.get("reclaimPolicy").and_then(Value::as_str)
        && !matches!(p, "Delete" | "Retain")
    {
        errs.push((
            "reclaimPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"Delete\", \"Retain\""),
        ));
    }
    if let Some(old) = old {
        for field in ["parameters", "provisioner"] {
            if sc.get(field) != old.get(field) {
                errs.push((field.into(), format!("Forbidden: updates to {field} are forbidden.")));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_asks_and_then_only_grows() {
        let mut pvc = json!({ "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } }, "storageClassName": "standard" } });
        default_claim(&mut pvc);
        assert_eq!(
            (pvc["spec"]["volumeMode"].clone(), pvc["status"]["phase"].clone()),
            (json!("Filesystem"), json!("Pending"))
        );
        assert!(validate_claim(&pvc, None).is_empty());
        let mut grown = pvc.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(validate_claim(&grown, Some(&pvc)).is_empty());
        grown["spec"]["storageClassName"] = json!("fast");
        assert_eq!(validate_claim(&grown, Some(&pvc))[0].0, "spec");
        assert_eq!(validate_claim(&json!({ "spec": {} }), None).len(), 2);
    }

    #[test]
    fn a_class_keeps_its_provisioner() {
        let mut sc = json!({ "provisioner": "rancher.io/local-path" });
        default_storage_class(&mut sc);
        assert_eq!(sc["reclaimPolicy"], "Delete");
        let mut other = sc.clone();
        other["provisioner"] = json!("x");
        assert_eq!(
            validate_storage_class(&other, Some(&sc))[0].1,
            "Forbidden: updates to provisioner are forbidden."
        );
    }
}
