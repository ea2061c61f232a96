//! storage.k8s.io/v1's CSI objects: CSIDrivers (with `SetDefaults_CSIDriver`), CSINodes,
//! CSIStorageCapacities and VolumeAttachments, as `pkg/apis/storage/validation` checks them and
//! in its order. StorageClasses live in [`super::volume`]; the CSI driver name rule they share
//! with a PersistentVolume's CSI source is [`super::pv_source::csi_driver_name_errors`], and an
//! attachment's inline volume spec is a PV spec ([`super::pv_source::inline_spec_errors`]).

use serde_json::{Value, json};

use crate::field_errors::{
    duplicate, forbidden, invalid_bare, invalid_str, not_supported, required, too_long,
};
use crate::names::{qualified_field, subdomain_field};
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

use super::crd::{get as given, str_at};

use super::pv_source::csi_driver_name_errors;

/// The most bytes a VolumeAttachment's `status.attachmentMetadata` may hold (keys and values).
const MAX_ATTACHMENT_METADATA: usize = 256 * 1024;
/// The longest message of a VolumeAttachment's attach or detach error.
const MAX_VOLUME_ERROR_MESSAGE: usize = 1024;
/// The longest node ID of a CSINode driver (the strategy allows the longer IDs since 1.22).
const MAX_NODE_ID: usize = 256;

/// `SetDefaults_CSIDriver`: a driver needs attaching, gets no pod info, publishes no capacity,
/// applies fsGroup to RWO volumes with a filesystem type, serves persistent volumes, is not
/// republished and (SELinuxMountReadWriteOncePod is on in 1.32) does not mount with a context.
pub fn default_driver(driver: &mut Value) {
    if !driver.is_object() {
        return;
    }
    let spec = object_at(driver, "spec");
    set_default(spec, "attachRequired", json!(true));
    set_default(spec, "podInfoOnMount", json!(false));
    set_default(spec, "storageCapacity", json!(false));
    set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    set_default(spec, "requiresRepublish", json!(false));
    set_default(spec, "seLinuxMount", json!(false));
    if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
}

/// `ValidateCSIDriver` / `ValidateCSIDriverUpdate`: the spec's required switches, fsGroup
/// policy, token requests and lifecycle modes; on update, `attachRequired` and the modes are
/// fixed.
pub fn validate_driver(driver: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = driver.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut errs = Vec::new();
    for (key, path) in [
        ("attachRequired", "spec.attachedRequired"),
        ("podInfoOnMount", "spec.podInfoOnMount"),
        ("storageCapacity", "spec.storageCapacity"),
    ] {
        if given(&spec, key).is_none() {
            errs.push(required(path, ""));
        }
    }
    if let Some(policy) = given(&spec, "fsGroupPolicy").and_then(Value::as_str)
        && !matches!(policy, "File" | "None" | "ReadWriteOnceWithFSType")
    {
        errs.push(not_supported("spec.fsGroupPolicy", policy, &["File", "None", "ReadWriteOnceWithFSType"]));
    }
    errs.extend(token_request_errors(&spec));
    for mode in spec.get("volumeLifecycleModes").and_then(Value::as_array).into_iter().flatten() {
        let mode = mode.as_str().unwrap_or("");
        if !matches!(mode, "Persistent" | "Ephemeral") {
            errs.push(not_supported("spec.volumeLifecycleModes", mode, &["Persistent", "Ephemeral"]));
        }
    }
    if given(&spec, "seLinuxMount").is_none() {
        errs.push(required("spec.seLinuxMount", ""));
    }
    if let Some(old) = old {
        let old_spec = old.get("spec").cloned().unwrap_or_else(|| json!({}));
        if spec.get("attachRequired") != old_spec.get("attachRequired") {
            let shown =
                spec.get("attachRequired").map_or_else(|| "null".to_owned(), crate::go_print::bad_value);
            errs.push(invalid_bare("spec.attachedRequired", shown, "field is immutable"));
        }
        if spec.get("volumeLifecycleModes") != old_spec.get("volumeLifecycleModes") {
            // Go prints the internal `[]storage.VolumeLifecycleMode` with `%#v`.
            let modes: Vec<&str> = spec
                .get("volumeLifecycleModes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let shown = crate::field_errors::go_string_slice(&modes).replacen(
                "[]string",
                "[]storage.VolumeLifecycleMode",
                1,
            );
            errs.push(invalid_bare("spec.volumeLifecycleModes", shown, "field is immutable"));
        }
    }
    errs
}

/// `validateTokenRequests`: audiences unique (a repeated one is not checked further), each
/// token's lifetime between ten minutes and 2³² seconds.
fn token_request_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, t) in spec.get("tokenRequests").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let audience = str_at(t, "audience");
        if !seen.insert(audience) {
            errs.push(duplicate(format!("spec.tokenRequests[{i}].audience"), audience));
            continue;
        }
        let Some(secs) = t.get("expirationSeconds").and_then(Value::as_i64) else { continue };
        let at = format!("spec.tokenRequests[{i}].expirationSeconds");
        if secs < 600 {
            errs.push(invalid_bare(&at, secs, "may not specify a duration less than 10 minutes"));
        }
        if secs > 1 << 32 {
            errs.push(invalid_bare(&at, secs, "may not specify a duration larger than 2^32 seconds"));
        }
    }
    errs
}

/// `ValidateCSINode` / `ValidateCSINodeUpdate`: each driver's name, node ID, allocatable count
/// and topology keys (twice on update, as upstream reports them); a driver's entry never
/// changes once there.
pub fn validate_node(node: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let drivers =
        |n: &Value| n.pointer("/spec/drivers").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut errs = Vec::new();
    let mut names = std::collections::HashSet::new();
    let new_drivers = drivers(node);
    for (i, d) in new_drivers.iter().enumerate() {
        let at = format!("spec.drivers[{i}]");
        let name = str_at(d, "name");
        errs.extend(csi_driver_name_errors(name, &format!("{at}.name")));
        let id = str_at(d, "nodeID");
        if id.is_empty() {
            errs.push(required(format!("{at}.nodeID"), ""));
        }
        if id.len() > MAX_NODE_ID {
            errs.push(invalid_str(
                format!("{at}.nodeID"),
                id,
                &format!("must be {MAX_NODE_ID} characters or less"),
            ));
        }
        errs.extend(crate::label_rules::nonnegative(
            d.pointer("/allocatable/count"),
            &format!("{at}.allocatable.count"),
        ));
        if !names.insert(name.to_owned()) {
            errs.push(duplicate(format!("{at}.name"), name));
        }
        let mut keys = std::collections::HashSet::new();
        for key in d.get("topologyKeys").and_then(Value::as_array).into_iter().flatten() {
            let key = key.as_str().unwrap_or("");
            if key.is_empty() {
                errs.push(required(&at, ""));
            }
            if !keys.insert(key) {
                errs.push(duplicate(&at, key));
            }
            errs.extend(qualified_field(&at, key));
        }
    }
    if let Some(old) = old {
        // The update strategy validates the object, then `ValidateCSINodeUpdate` validates it
        // again before comparing the drivers.
        errs.extend(errs.clone());
        for o in drivers(old) {
            for n in new_drivers.iter().filter(|n| str_at(n, "name") == str_at(&o, "name")) {
                if *n != o {
                    errs.push(invalid_bare("spec.drivers", node_driver_go(n), "field is immutable"));
                }
            }
        }
    }
    errs
}

/// Go's `%#v` of an internal `storage.CSINodeDriver` (an `allocatable` is a pointer: its
/// address is what Go prints, so only its absence is written as Go would).
fn node_driver_go(d: &Value) -> String {
    let keys: Vec<&str> = d
        .get("topologyKeys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let keys = if d.get("topologyKeys").is_some_and(Value::is_array) {
        crate::field_errors::go_string_slice(&keys)
    } else {
        "[]string(nil)".to_owned()
    };
    let allocatable = if given(d, "allocatable").is_some() {
        "(*storage.VolumeNodeResources)(…)"
    } else {
        "(*storage.VolumeNodeResources)(nil)"
    };
    format!(
        "storage.CSINodeDriver{{Name:{}, NodeID:{}, TopologyKeys:{keys}, Allocatable:{allocatable}}}",
        crate::go_print::go_quote(str_at(d, "name")),
        crate::go_print::go_quote(str_at(d, "nodeID")),
    )
}

/// `ValidateCSIStorageCapacity` / `ValidateCSIStorageCapacityUpdate`: the topology a label
/// selector, the class a DNS subdomain, the capacity not negative; on update the topology and
/// the class are fixed.
pub fn validate_capacity(cap: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = crate::label_rules::label_selector_errors(cap.get("nodeTopology"), "nodeTopology");
    errs.extend(subdomain_field("storageClassName", str_at(cap, "storageClassName")));
    if let Some(q) =
        cap.get("capacity").and_then(Value::as_str).and_then(|t| crate::quantity::Quantity::parse(t).ok())
        && q.is_negative()
    {
        errs.push(invalid_str("capacity", &q.to_string(), "must be greater than or equal to 0"));
    }
    if let Some(old) = old {
        if given(cap, "nodeTopology") != given(old, "nodeTopology") {
            errs.push(invalid_bare(
                "nodeTopology",
                given(cap, "nodeTopology")
                    .map_or_else(|| "null".to_owned(), crate::go_print::go_label_selector),
                "field is immutable",
            ));
        }
        if str_at(cap, "storageClassName") != str_at(old, "storageClassName") {
            errs.push(invalid_str("storageClassName", str_at(cap, "storageClassName"), "field is immutable"));
        }
    }
    errs
}

/// `ValidateVolumeAttachment` and, on create and update alike, the v1 tightening
/// (`ValidateVolumeAttachmentV1`): an attacher, exactly one source, a node name that is a DNS
/// subdomain, the status's sizes; the spec never changes.
pub fn validate_attachment(va: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = va.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut errs = attachment_errors(va, &spec);
    if let Some(old) = old {
        // The update strategy validates the object, then `ValidateVolumeAttachmentUpdate`
        // validates it again before comparing the specs.
        errs.extend(attachment_errors(va, &spec));
        if old.get("spec") != va.get("spec") {
            // Go prints the internal spec with `%#v`, pointers as addresses.
            errs.push(invalid_bare("spec", "storage.VolumeAttachmentSpec{…}", "field is immutable"));
        }
        return errs;
    }
    let attacher = str_at(&spec, "attacher");
    errs.extend(csi_driver_name_errors(attacher, "spec.attacher"));
    if let Some(pv) = spec.pointer("/source/persistentVolumeName").and_then(Value::as_str) {
        errs.extend(subdomain_field("spec.source.persistentVolumeName", pv));
    }
    errs
}

/// `ValidateVolumeAttachment` without its metadata.
fn attachment_errors(va: &Value, spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_at(spec, "attacher").is_empty() {
        errs.push(required("spec.attacher", ""));
    }
    let source = spec.get("source").cloned().unwrap_or_else(|| json!({}));
    const ONE: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (given(&source, "inlineVolumeSpec"), given(&source, "persistentVolumeName")) {
        (None, None) => errs.push(required("spec.source", ONE)),
        (Some(_), Some(_)) => errs.push(forbidden("spec.source", ONE)),
        (None, Some(pv)) if pv.as_str().is_none_or(str::is_empty) => {
            errs.push(required(
                "spec.source.persistentVolumeName",
                "must specify non empty persistentVolumeName",
            ));
        }
        (Some(inline), None) => {
            errs.extend(super::pv_source::inline_spec_errors(inline, "spec.source.inlineVolumeSpec"));
        }
        _ => {}
    }
    errs.extend(subdomain_field("spec.nodeName", str_at(spec, "nodeName")));
    let status = va.get("status").cloned().unwrap_or_else(|| json!({}));
    let metadata_size: usize = status
        .get("attachmentMetadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if metadata_size > MAX_ATTACHMENT_METADATA {
        errs.push(too_long("status.attachmentMetadata", MAX_ATTACHMENT_METADATA));
    }
    for which in ["attachError", "detachError"] {
        if given(&status, which).is_some_and(|e| str_at(e, "message").len() > MAX_VOLUME_ERROR_MESSAGE) {
            // Upstream names the metadata's limit in this message, not the message's own.
            errs.push(too_long(format!("status.{which}.message"), MAX_ATTACHMENT_METADATA));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_is_defaulted_to_be_valid() {
        let mut d = json!({ "metadata": { "name": "example.com" }, "spec": {} });
        default_driver(&mut d);
        assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        assert!(validate_driver(&d, None).is_empty());
    }

    #[test]
    fn an_attachment_needs_one_source() {
        let va = json!({ "spec": { "attacher": "example.com", "nodeName": "n", "source": {} } });
        let errs = validate_attachment(&va, None);
        assert_eq!(errs[0].0, "spec.source");
    }
}
