//! A v1 PersistentVolume's spec as upstream's `ValidatePersistentVolumeSpec` checks it (a
//! non-inline volume): access modes, capacity, reclaim policy, node affinity, exactly one volume
//! source — each source by the PV's own rules (`validate*PersistentVolumeSource` where the PV has
//! its own variant) — and the class and mode; then `pv_validation.go`'s mount-options rule.

use serde_json::Value;

use crate::field_errors::not_supported;
use crate::go_print::go_quote;
use crate::names::invalid;
use crate::status::FieldError;

/// The access modes a volume or a claim may ask for.
const ACCESS_MODES: [&str; 4] = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];

/// The access modes (`ValidatePersistentVolumeClaimSpec`, `ValidatePersistentVolumeSpec`):
/// known ones, `ReadWriteOncePod` alone.
pub(super) fn access_mode_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (mut once_pod, mut other) = (false, false);
    for m in spec.get("accessModes").and_then(Value::as_array).into_iter().flatten() {
        let m = m.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&m) {
            errs.push(not_supported("spec.accessModes", m, &ACCESS_MODES));
        }
        if m == "ReadWriteOncePod" {
            once_pod = true;
        } else if ACCESS_MODES.contains(&m) {
            other = true;
        }
    }
    if once_pod && other {
        errs.push((
            "spec.accessModes".into(),
            "Forbidden: may not use ReadWriteOncePod with other access modes".into(),
        ));
    }
    errs
}

/// `validateBasicResource`: a quantity's value (rounded up) is not negative.
pub(super) fn basic_resource_errors(field: &str, v: &Value) -> Vec<FieldError> {
    match v.as_str().and_then(|s| crate::quantity::Quantity::parse(s).ok()) {
        Some(q) if q.is_negative() => {
            #[allow(clippy::cast_possible_truncation)]
            let n = q.to_f64().ceil() as i64;
            vec![(field.to_owned(), format!("Invalid value: {n}: must be a valid resource quantity"))]
        }
        _ => Vec::new(),
    }
}

/// The sources a PV may have, in the order upstream checks them: the field's name, and the path
/// its errors are reported under (a GCE disk's are under `persistentDisk`).
pub const SOURCES: [(&str, &str); 22] = [
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephfs"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

/// The sources that take mount options (`checkMountOption`).
const MOUNTABLE: [&str; 13] = [
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "iscsi",
    "cinder",
    "cephfs",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
];

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn given<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn required(field: String) -> FieldError {
    (field, "Required value".into())
}

/// `ValidateCSIDriverName`: a CSI driver's name (a PersistentVolume's CSI source, a CSINode's
/// drivers, a VolumeAttachment's attacher) is given, at most 63 bytes, and a DNS subdomain once
/// lowercased.
#[must_use]
pub(crate) fn csi_driver_name_errors(driver: &str, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if driver.is_empty() {
        errs.push(required(field.to_owned()));
    }
    if driver.len() > 63 {
        errs.push(crate::field_errors::too_long(field, 63));
    }
    errs.extend(invalid(field, driver, crate::metadata::subdomain_errors(&driver.to_lowercase())));
    errs
}

/// `ValidatePersistentVolumeSpec` and `checkMountOption` for the PV `pv` named `name`.
#[must_use]
pub fn volume_errors(pv: &Value, name: &str) -> Vec<FieldError> {
    let spec = pv.get("spec").cloned().unwrap_or_default();
    let mut errs = access_errors(&spec, "spec");
    let capacity = spec.get("capacity").and_then(Value::as_object).cloned().unwrap_or_default();
    if capacity.is_empty() {
        errs.push(required("spec.capacity".into()));
    }
    if !capacity.contains_key("storage") || capacity.len() > 1 {
        errs.push((
            "spec.capacity".into(),
            "Unsupported value: core.ResourceList{…}: supported values: \"storage\"".into(),
        ));
    }
    for (k, v) in &capacity {
        let at = format!("spec.capacity[{k}]");
        errs.extend(basic_resource_errors(&at, v));
        if let Some(q) = v.as_str().and_then(|t| crate::quantity::Quantity::parse(t).ok())
            && (q.is_zero() || q.is_negative())
        {
            errs.push((
                at,
                format!("Invalid value: {}: must be greater than zero", go_quote(&q.to_string())),
            ));
        }
    }
    let policy = s(&spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !matches!(policy, "Delete" | "Recycle" | "Retain") {
        errs.push(not_supported(
            "spec.persistentVolumeReclaimPolicy",
            policy,
            &["Delete", "Recycle", "Retain"],
        ));
    }
    let affinity = given(&spec, "nodeAffinity");
    if let Some(a) = affinity {
        match given(a, "required") {
            Some(r) => errs
                .extend(crate::kinds::pod::scheduling::node_selector_terms(r, "spec.nodeAffinity.required")),
            None => errs.push((
                "spec.nodeAffinity.required".into(),
                "Required value: must specify required node constraints".into(),
            )),
        }
    }
    errs.extend(one_source_errors(&spec, "spec", name, |key| {
        if key == "local" && affinity.is_none() {
            vec![("spec.nodeAffinity".into(), "Required value: Local volume requires node affinity".into())]
        } else {
            Vec::new()
        }
    }));
    if let Some(h) = given(&spec, "hostPath")
        && clean_is_root(s(h, "path"))
        && policy == "Recycle"
    {
        errs.push((
            "spec.persistentVolumeReclaimPolicy".into(),
            "Forbidden: may not be 'recycle' for a hostPath mount of '/'".into(),
        ));
    }
    let class = s(&spec, "storageClassName");
    if !class.is_empty() {
        errs.extend(crate::names::subdomain_field("spec.storageClassName", class));
    }
    if let Some(m) = spec.get("volumeMode").and_then(Value::as_str)
        && !matches!(m, "Block" | "Filesystem")
    {
        errs.push(not_supported("spec.volumeMode", m, &["Block", "Filesystem"]));
    }
    let mountable = MOUNTABLE.iter().any(|k| given(&spec, k).is_some());
    let annotated = pv
        .pointer("/metadata/annotations")
        .and_then(|a| a.get("volume.beta.kubernetes.io/mount-options"))
        .is_some();
    if !mountable && annotated {
        errs.push((
            "metadata.annotations.volume.beta.kubernetes.io/mount-options".into(),
            "Forbidden: may not specify mount options for this volume type".into(),
        ));
    }
    errs
}

/// A PV spec's one volume source at `at`: its own rules (with what `after` adds for the kind
/// of the first), then each further source is one too many.
fn one_source_errors(
    spec: &Value,
    at: &str,
    name: &str,
    after: impl Fn(&str) -> Vec<FieldError>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    for (key, path) in SOURCES {
        let Some(src) = given(spec, key) else { continue };
        if count > 0 {
            errs.push((format!("{at}.{key}"), "Forbidden: may not specify more than 1 volume type".into()));
            continue;
        }
        count += 1;
        errs.extend(source_errors(key, src, &format!("{at}.{path}"), name));
        errs.extend(after(key));
    }
    if count == 0 {
        errs.push((at.to_owned(), "Required value: must specify a volume type".into()));
    }
    errs
}

/// `ValidatePersistentVolumeSpec` of an inline spec (a VolumeAttachment's `inlineVolumeSpec`)
/// at `at`: no claim reference or capacity, a CSI source, then a PV spec's rules.
#[must_use]
pub(crate) fn inline_spec_errors(spec: &Value, at: &str) -> Vec<FieldError> {
    const INLINE: &str = "may not be specified in the context of inline volumes";
    let mut errs = Vec::new();
    if given(spec, "claimRef").is_some() {
        errs.push(crate::field_errors::forbidden(format!("{at}.claimRef"), INLINE));
    }
    if spec.get("capacity").and_then(Value::as_object).is_some_and(|c| !c.is_empty()) {
        errs.push(crate::field_errors::forbidden(format!("{at}.capacity"), INLINE));
    }
    if given(spec, "csi").is_none() {
        errs.push(crate::field_errors::required(
            format!("{at}.csi"),
            "has to be specified in the context of inline volumes",
        ));
    }
    errs.extend(access_errors(spec, at));
    errs.extend(one_source_errors(spec, at, "", |_| Vec::new()));
    errs
}

/// A PV spec's access modes at `at`: given, supported, `ReadWriteOncePod` alone.
fn access_errors(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.get("accessModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        errs.push(required(format!("{at}.accessModes")));
    }
    errs.extend(access_mode_errors(spec).into_iter().map(|(f, m)| (f.replacen("spec", at, 1), m)));
    errs
}

/// Whether `path.Clean(p)` is `/`.
fn clean_is_root(p: &str) -> bool {
    p.starts_with('/') && p.split('/').all(|seg| seg.is_empty() || seg == "." || seg == "..")
}

/// `validatePathNoBacksteps`: no `..` segment.
fn no_backsteps(field: &str, p: &str) -> Vec<FieldError> {
    if p.split(['/', '\\']).any(|seg| seg == "..") {
        invalid(field, p, vec!["must not contain '..'".into()])
    } else {
        Vec::new()
    }
}

/// A partition or LUN within `lo..=255`.
fn range_errors(field: &str, v: Option<&Value>, lo: i64) -> Vec<FieldError> {
    match v.and_then(Value::as_i64) {
        Some(n) if !(lo..=255).contains(&n) => {
            vec![(field.to_owned(), format!("Invalid value: {n}: must be between {lo} and 255, inclusive"))]
        }
        _ => Vec::new(),
    }
}

/// A disk partition: 0 (none) to 255, though upstream's words say 1.
fn partition_errors(field: &str, v: Option<&Value>) -> Vec<FieldError> {
    match v.and_then(Value::as_i64) {
        Some(n) if !(0..=255).contains(&n) => {
            vec![(field.to_owned(), format!("Invalid value: {n}: must be between 1 and 255, inclusive"))]
        }
        _ => Vec::new(),
    }
}

/// A secret reference's name and namespace, both required when the reference is given.
fn secret_ref_required(r: Option<&Value>, at: &str) -> Vec<FieldError> {
    let Some(r) = r else { return Vec::new() };
    let mut errs = Vec::new();
    if s(r, "name").is_empty() {
        errs.push(required(format!("{at}.name")));
    }
    if s(r, "namespace").is_empty() {
        errs.push(required(format!("{at}.namespace")));
    }
    errs
}

/// A CSI secret reference: a DNS-subdomain name and a DNS-label namespace, both required.
fn csi_secret_ref(r: Option<&Value>, at: &str) -> Vec<FieldError> {
    let Some(r) = r else { return Vec::new() };
    let mut errs = Vec::new();
    match s(r, "name") {
        "" => errs.push(required(format!("{at}.name"))),
        n => errs.extend(crate::names::subdomain_field(&format!("{at}.name"), n)),
    }
    match s(r, "namespace") {
        "" => errs.push(required(format!("{at}.namespace"))),
        n => errs.extend(crate::names::label_field(&format!("{at}.namespace"), n)),
    }
    errs
}

/// An iSCSI qualified name's shape: `iqn.YYYY-MM.<name>[:<rest>]`, `eui.` and 16, or `naa.` and
/// 32 alphanumerics.
fn iscsi_name_ok(v: &str) -> bool {
    let alnum = |t: &str, n: usize| t.len() == n && t.bytes().all(|b| b.is_ascii_alphanumeric());
    if let Some(rest) = v.strip_prefix("iqn.") {
        let b = rest.as_bytes();
        let dated = b.len() > 8
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'-'
            && b[5..7].iter().all(u8::is_ascii_digit)
            && b[7] == b'.';
        if !dated {
            return false;
        }
        let tail = &rest[8..];
        let (name, extra) = tail.split_once(':').map_or((tail, None), |(n, e)| (n, Some(e)));
        let name_ok =
            !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.');
        let extra_ok = extra
            .is_some_and(|e| !e.is_empty() && !e.chars().any(|c| ",;*&$|".contains(c) || c.is_whitespace()));
        return name_ok && extra_ok;
    }
    if v.starts_with("eui") {
        return v.len() == 20 && alnum(&v[4..], 16);
    }
    if v.starts_with("naa") {
        return v.len() == 36 && alnum(&v[4..], 32);
    }
    false
}

/// The rules of one source, reported under `at`.
fn source_errors(key: &str, src: &Value, at: &str, pv_name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let need = |errs: &mut Vec<FieldError>, field: &str| {
        if s(src, field).is_empty() {
            errs.push(required(format!("{at}.{field}")));
        }
    };
    match key {
        "hostPath" => {
            let p = s(src, "path");
            if p.is_empty() {
                return vec![required(format!("{at}.path"))];
            }
            errs.extend(no_backsteps(&format!("{at}.path"), p));
            if let Some(t) = src.get("type").and_then(Value::as_str) {
                const TYPES: [&str; 8] = [
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if !TYPES.contains(&t) {
                    errs.push(not_supported(format!("{at}.type"), t, &TYPES));
                }
            }
        }
        "gcePersistentDisk" => {
            need(&mut errs, "pdName");
            errs.extend(partition_errors(&format!("{at}.partition"), src.get("partition")));
        }
        "awsElasticBlockStore" => {
            need(&mut errs, "volumeID");
            errs.extend(partition_errors(&format!("{at}.partition"), src.get("partition")));
        }
        "glusterfs" => {
            need(&mut errs, "endpoints");
            need(&mut errs, "path");
            if let Some(ns) = src.get("endpointsNamespace").and_then(Value::as_str) {
                let field = format!("{at}.endpointsNamespace");
                if ns.is_empty() {
                    errs.extend(invalid(
                        &field,
                        ns,
                        vec!["if the endpointnamespace is set, it must be a valid namespace name".into()],
                    ));
                } else {
                    errs.extend(crate::names::label_field(&field, ns));
                }
            }
        }
        "flocker" => {
            let (name, uuid) = (s(src, "datasetName"), s(src, "datasetUUID"));
            if name.is_empty() && uuid.is_empty() {
                errs.push((
                    at.to_owned(),
                    "Required value: one of datasetName and datasetUUID is required".into(),
                ));
            }
            if !name.is_empty() && !uuid.is_empty() {
                errs.push((
                    at.to_owned(),
                    "Invalid value: \"resource\": datasetName and datasetUUID can not be specified simultaneously".into(),
                ));
            }
            if name.contains('/') {
                errs.extend(invalid(&format!("{at}.datasetName"), name, vec!["must not contain '/'".into()]));
            }
        }
        "nfs" => {
            need(&mut errs, "server");
            need(&mut errs, "path");
            let p = s(src, "path");
            if !p.starts_with('/') {
                errs.extend(invalid(&format!("{at}.path"), p, vec!["must be an absolute path".into()]));
            }
        }
        "rbd" => {
            if src.get("monitors").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                errs.push(required(format!("{at}.monitors")));
            }
            need(&mut errs, "image");
        }
        "quobyte" => {
            let registry = s(src, "registry");
            let why = "must be a host:port pair or multiple pairs separated by commas";
            if registry.is_empty() {
                errs.push((format!("{at}.registry"), format!("Required value: {why}")));
            } else if s(src, "tenant").len() >= 65 {
                errs.push((
                    format!("{at}.tenant"),
                    "Required value: must be a UUID and may not exceed a length of 64 characters".into(),
                ));
            } else {
                for pair in registry.split(',') {
                    if !host_port(pair) {
                        errs.extend(invalid(&format!("{at}.registry"), registry, vec![why.into()]));
                    }
                }
            }
            need(&mut errs, "volume");
        }
        "cephfs" if src.get("monitors").and_then(Value::as_array).is_none_or(Vec::is_empty) => {
            errs.push(required(format!("{at}.monitors")));
        }
        "iscsi" => {
            let portal = s(src, "targetPortal");
            if portal.is_empty() {
                errs.push(required(format!("{at}.targetPortal")));
            }
            let initiator = src.get("initiatorName").and_then(Value::as_str);
            if initiator.is_some() && pv_name.len() + 1 + portal.len() > 64 {
                errs.extend(invalid(
                    &format!("{at}.targetportal"),
                    portal,
                    vec!["Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.".into()],
                ));
            }
            let iqn = s(src, "iqn");
            if iqn.is_empty() {
                errs.push(required(format!("{at}.iqn")));
            } else if !iscsi_name_ok(iqn) {
                errs.extend(invalid(&format!("{at}.iqn"), iqn, vec!["must be valid format".into()]));
            }
            errs.extend(range_errors(&format!("{at}.lun"), src.get("lun"), 0));
            let chap = src.get("chapAuthDiscovery") == Some(&Value::Bool(true))
                || src.get("chapAuthSession") == Some(&Value::Bool(true));
            let secret = given(src, "secretRef");
            if chap && secret.is_none() {
                errs.push(required(format!("{at}.secretRef")));
            }
            if let Some(r) = secret
                && s(r, "name").is_empty()
            {
                errs.push(required(format!("{at}.secretRef.name")));
            }
            if let Some(i) = initiator
                && !iscsi_name_ok(i)
            {
                errs.extend(invalid(&format!("{at}.initiatorname"), i, vec!["must be valid format".into()]));
            }
        }
        "cinder" => {
            need(&mut errs, "volumeID");
            errs.extend(secret_ref_required(given(src, "secretRef"), &format!("{at}.secretRef")));
        }
        "fc" => {
            let list = |k: &str| src.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
            let (wwns, wwids) = (list("targetWWNs"), list("wwids"));
            if wwns.is_empty() && wwids.is_empty() {
                errs.push((
                    format!("{at}.targetWWNs"),
                    "Required value: must specify either targetWWNs or wwids, but not both".into(),
                ));
            }
            if !wwns.is_empty() && !wwids.is_empty() {
                let shown: Vec<String> = wwns.iter().map(|w| w.as_str().unwrap_or("").to_owned()).collect();
                errs.push((
                    format!("{at}.targetWWNs"),
                    format!(
                        "Invalid value: {}: targetWWNs and wwids can not be specified simultaneously",
                        crate::netaddr::go_strings(Some(&shown))
                    ),
                ));
            }
            if !wwns.is_empty() {
                match given(src, "lun") {
                    None => errs.push((
                        format!("{at}.lun"),
                        "Required value: lun is required if targetWWNs is specified".into(),
                    )),
                    Some(l) => errs.extend(range_errors(&format!("{at}.lun"), Some(l), 0)),
                }
            }
        }
        "flexVolume" => {
            need(&mut errs, "driver");
            for k in src.get("options").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k) {
                let ns = k.split_once('/').map_or(k.as_str(), |(n, _)| n);
                let normalized = format!(".{}", ns.to_lowercase());
                if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                    errs.extend(invalid(
                        &format!("{at}.options[{k}]"),
                        k,
                        vec!["kubernetes.io and k8s.io namespaces are reserved".into()],
                    ));
                }
            }
        }
        "azureFile" => {
            need(&mut errs, "secretName");
            need(&mut errs, "shareName");
            if src.get("secretNamespace").and_then(Value::as_str) == Some("") {
                errs.push(required(format!("{at}.secretNamespace")));
            }
        }
        "vsphereVolume" => need(&mut errs, "volumePath"),
        "photonPersistentDisk" => need(&mut errs, "pdID"),
        "portworxVolume" => need(&mut errs, "volumeID"),
        "azureDisk" => {
            need(&mut errs, "diskName");
            need(&mut errs, "diskURI");
            if let Some(m) = src.get("cachingMode").and_then(Value::as_str)
                && !matches!(m, "None" | "ReadOnly" | "ReadWrite")
            {
                errs.push(not_supported(format!("{at}.cachingMode"), m, &["None", "ReadOnly", "ReadWrite"]));
            }
            let kind = src.get("kind").and_then(Value::as_str);
            if let Some(k) = kind
                && !matches!(k, "Dedicated" | "Managed" | "Shared")
            {
                errs.push(not_supported(format!("{at}.kind"), k, &["Dedicated", "Managed", "Shared"]));
            }
            let uri = s(src, "diskURI");
            if kind == Some("Managed") && !uri.starts_with("/subscriptions/") {
                errs.push(not_supported(
                    format!("{at}.diskURI"),
                    uri,
                    &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
                ));
            }
            if kind.is_some_and(|k| k != "Managed") && !uri.starts_with("https://") {
                errs.push(not_supported(
                    format!("{at}.diskURI"),
                    uri,
                    &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
                ));
            }
        }
        "scaleIO" => {
            need(&mut errs, "gateway");
            need(&mut errs, "system");
            need(&mut errs, "volumeName");
        }
        "local" => {
            let p = s(src, "path");
            if p.is_empty() {
                return vec![required(format!("{at}.path"))];
            }
            errs.extend(no_backsteps(&format!("{at}.path"), p));
        }
        "storageos" => {
            match s(src, "volumeName") {
                "" => errs.push(required(format!("{at}.volumeName"))),
                n => errs.extend(crate::names::label_field(&format!("{at}.volumeName"), n)),
            }
            let ns = s(src, "volumeNamespace");
            if !ns.is_empty() {
                errs.extend(crate::names::label_field(&format!("{at}.volumeNamespace"), ns));
            }
            errs.extend(secret_ref_required(given(src, "secretRef"), &format!("{at}.secretRef")));
        }
        "csi" => {
            errs.extend(csi_driver_name_errors(s(src, "driver"), &format!("{at}.driver")));
            need(&mut errs, "volumeHandle");
            for r in [
                "controllerPublishSecretRef",
                "controllerExpandSecretRef",
                "nodePublishSecretRef",
                "nodeExpandSecretRef",
            ] {
                errs.extend(csi_secret_ref(given(src, r), &format!("{at}.{r}")));
            }
        }
        _ => {}
    }
    errs
}

/// Whether `pair` splits as Go's `net.SplitHostPort` would: `host:port`, a bracketed IPv6 host.
fn host_port(pair: &str) -> bool {
    if let Some(rest) = pair.strip_prefix('[') {
        return rest.split_once("]:").is_some_and(|(h, p)| !h.contains(']') && !p.contains(':'));
    }
    pair.matches(':').count() == 1 && !pair.contains('[') && !pair.contains(']')
}

/// The volume source of a spec, for the update rule that it never changes (a CSI volume may
/// gain a `controllerExpandSecretRef`).
#[must_use]
pub fn source_of(spec: &Value, old_spec: Option<&Value>) -> Vec<(String, Value)> {
    SOURCES
        .iter()
        .filter_map(|(k, _)| {
            let mut v = given(spec, k)?.clone();
            if *k == "csi"
                && old_spec
                    .and_then(|o| o.pointer("/csi"))
                    .is_some_and(|c| c.get("controllerExpandSecretRef").is_none_or(Value::is_null))
                && let Some(m) = v.as_object_mut()
            {
                m.remove("controllerExpandSecretRef");
            }
            Some(((*k).to_owned(), v))
        })
        .collect()
}
