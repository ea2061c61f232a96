//! A pod's volumes (`ValidateVolumes`, `validateVolumeSource` and each source's rules), in
//! upstream's words and order: each volume names one source, its name is a unique DNS label,
//! and each source's own fields hold.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::field_errors::{
    duplicate, forbidden, go_string_slice, inclusive_range, invalid_bare, invalid_str, not_supported,
    required, too_long,
};
use crate::metadata::{check_label, check_subdomain, qualified_name_errors};
use crate::status::FieldError;

/// The sources a volume may name, in the order upstream checks them, with the path segment each
/// one's "more than 1 volume type" error names (upstream spells two of them differently).
const SOURCES: [(&str, &str); 29] = [
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
];

/// upstream's file mode message (`fileModeErrorMsg`).
const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn int_at(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// `ValidateVolumes`: each volume's source, then its name (required, a DNS label, unique); a
/// volume with errors does not count as a name seen. `pod_name` is the Pod's own name (empty for
/// a template): with it, the claims its ephemeral volumes create are known.
pub(crate) fn validate(spec: &Value, at: &str, pod_name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let volumes = spec.get("volumes").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let created: HashSet<String> = if pod_name.is_empty() {
        HashSet::new()
    } else {
        volumes
            .iter()
            .filter(|v| v.get("ephemeral").is_some_and(|e| !e.is_null()))
            .map(|v| format!("{pod_name}-{}", str_at(v, "name")))
            .collect()
    };
    let mut names = HashSet::new();
    for (i, vol) in volumes.iter().enumerate() {
        let path = format!("{at}.volumes[{i}]");
        let name = str_at(vol, "name");
        let mut el = source_errors(vol, &path, name, pod_name);
        if name.is_empty() {
            el.push(required(format!("{path}.name"), ""));
        } else {
            el.extend(dns_label(name, &format!("{path}.name")));
        }
        if names.contains(name) {
            el.push(duplicate(format!("{path}.name"), name));
        }
        if el.is_empty() {
            names.insert(name.to_owned());
        } else {
            errs.extend(el);
        }
        if let Some(claim) = vol.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str)
            && created.contains(claim)
        {
            errs.push(invalid_str(
                format!("{path}.persistentVolumeClaim.claimName"),
                claim,
                "must not reference a PVC that gets created for an ephemeral volume",
            ));
        }
    }
    errs
}

/// `ValidateDNS1123Label`: one cause per reason.
pub(crate) fn dns_label(value: &str, path: &str) -> Vec<FieldError> {
    check_label(value)
        .map(|why| split_reasons(&why).map(|w| invalid_str(path, value, w)).collect())
        .unwrap_or_default()
}

/// `ValidateDNS1123Subdomain`: one cause per reason.
pub(crate) fn dns_subdomain(value: &str, path: &str) -> Vec<FieldError> {
    check_subdomain(value)
        .map(|why| split_reasons(&why).map(|w| invalid_str(path, value, w)).collect())
        .unwrap_or_default()
}

/// The reasons `check_label` / `check_subdomain` join with ", " (the length one comes first and
/// holds no comma).
fn split_reasons(joined: &str) -> impl Iterator<Item = &str> {
    match joined.split_once(", ") {
        Some((first, rest)) if first.starts_with("must be no more than") => vec![first, rest].into_iter(),
        _ => vec![joined].into_iter(),
    }
}

/// `validateVolumeSource`: the first source set is checked, every other one is refused.
fn source_errors(vol: &Value, path: &str, name: &str, pod_name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut count = 0;
    for (key, spelled) in SOURCES {
        let Some(src) = vol.get(key).filter(|s| !s.is_null()) else { continue };
        if key == "emptyDir" {
            count += 1;
            let negative = src.get("sizeLimit").and_then(quantity).is_some_and(|q| q.is_negative());
            if negative {
                errs.push(forbidden(
                    format!("{path}.emptyDir.sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
            continue;
        }
        if count > 0 {
            errs.push(forbidden(format!("{path}.{spelled}"), "may not specify more than 1 volume type"));
        } else {
            count += 1;
            errs.extend(one_source(key, src, path));
            if key == "ephemeral" && !pod_name.is_empty() && !name.is_empty() {
                let claim = format!("{pod_name}-{name}");
                if let Some(why) = check_subdomain(&claim) {
                    for w in split_reasons(&why) {
                        errs.push(invalid_str(
                            format!("{path}.name"),
                            name,
                            &format!("PVC name {claim:?}: {w}"),
                        ));
                    }
                }
            }
        }
        if key == "iscsi" && src.get("initiatorName").is_some_and(|i| !i.is_null()) {
            let portal = str_at(src, "targetPortal");
            if name.len() + 1 + portal.len() > 64 {
                errs.push(invalid_str(
                    format!("{path}.name"),
                    name,
                    "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
                ));
            }
        }
    }
    if count == 0 {
        errs.push(required(path, "must specify a volume type"));
    }
    errs
}

/// A quantity written as a string or a number.
fn quantity(v: &Value) -> Option<crate::quantity::Quantity> {
    let text = v.as_str().map(str::to_owned).or_else(|| v.as_number().map(ToString::to_string))?;
    crate::quantity::Quantity::parse(&text).ok()
}

/// The rules of one source, under `{path}.{key}` (GCE's under `persistentDisk`, as upstream).
fn one_source(key: &str, src: &Value, path: &str) -> Vec<FieldError> {
    let at = |child: &str| format!("{path}.{child}");
    match key {
        "hostPath" => host_path(src, &at("hostPath")),
        "gitRepo" => {
            let p = at("gitRepo");
            let mut errs = Vec::new();
            if str_at(src, "repository").is_empty() {
                errs.push(required(format!("{p}.repository"), ""));
            }
            errs.extend(local_descending_path(str_at(src, "directory"), &format!("{p}.directory")));
            errs
        }
        "gcePersistentDisk" => disk(src, &at("persistentDisk"), "pdName"),
        "awsElasticBlockStore" => disk(src, &at("awsElasticBlockStore"), "volumeID"),
        "secret" => items_source(src, &at("secret"), "secretName"),
        "configMap" => items_source(src, &at("configMap"), "name"),
        "nfs" => {
            let p = at("nfs");
            let mut errs = required_strings(src, &p, &["server", "path"]);
            let nfs_path = str_at(src, "path");
            if !nfs_path.starts_with('/') {
                errs.push(invalid_str(format!("{p}.path"), nfs_path, "must be an absolute path"));
            }
            errs
        }
        "iscsi" => iscsi(src, &at("iscsi")),
        "glusterfs" => required_strings(src, &at("glusterfs"), &["endpoints", "path"]),
        "flocker" => flocker(src, &at("flocker")),
        "persistentVolumeClaim" => required_strings(src, &at("persistentVolumeClaim"), &["claimName"]),
        "rbd" => {
            let p = at("rbd");
            let mut errs = Vec::new();
            if src.get("monitors").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                errs.push(required(format!("{p}.monitors"), ""));
            }
            errs.extend(required_strings(src, &p, &["image"]));
            errs
        }
        "cinder" => {
            let p = at("cinder");
            let mut errs = required_strings(src, &p, &["volumeID"]);
            errs.extend(secret_ref_name(src, &p));
            errs
        }
        "cephfs" => {
            if src.get("monitors").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                vec![required(format!("{}.monitors", at("cephfs")), "")]
            } else {
                Vec::new()
            }
        }
        "quobyte" => quobyte(src, &at("quobyte")),
        "downwardAPI" => {
            let p = at("downwardAPI");
            let mut errs = mode(src, "defaultMode", &p);
            for item in src.get("items").and_then(Value::as_array).into_iter().flatten() {
                errs.extend(downward_api_file(item, &p));
            }
            errs
        }
        "fc" => fc(src, &at("fc")),
        "flexVolume" => flex(src, &at("flexVolume")),
        "azureFile" => required_strings(src, &at("azureFile"), &["secretName", "shareName"]),
        "vsphereVolume" => required_strings(src, &at("vsphereVolume"), &["volumePath"]),
        "photonPersistentDisk" => required_strings(src, &at("photonPersistentDisk"), &["pdID"]),
        "portworxVolume" => required_strings(src, &at("portworxVolume"), &["volumeID"]),
        "azureDisk" => azure_disk(src, &at("azureDisk")),
        "storageos" => storageos(src, &at("storageos")),
        "projected" => projected(src, &at("projected")),
        "scaleIO" => required_strings(src, &at("scaleIO"), &["gateway", "system", "volumeName"]),
        "csi" => csi(src, &at("csi")),
        "ephemeral" => ephemeral(src, &at("ephemeral")),
        _ => Vec::new(),
    }
}

/// `Required value` for each of `keys` that is empty.
fn required_strings(src: &Value, path: &str, keys: &[&str]) -> Vec<FieldError> {
    keys.iter().filter(|k| str_at(src, k).is_empty()).map(|k| required(format!("{path}.{k}"), "")).collect()
}

/// A `secretRef` given with an empty name.
fn secret_ref_name(src: &Value, path: &str) -> Vec<FieldError> {
    match src.get("secretRef").filter(|r| !r.is_null()) {
        Some(r) if str_at(r, "name").is_empty() => vec![required(format!("{path}.secretRef.name"), "")],
        _ => Vec::new(),
    }
}

/// A file mode at `key`, if set, within 0..=0777.
fn mode(src: &Value, key: &str, path: &str) -> Vec<FieldError> {
    match int_at(src, key) {
        Some(m) if !(0..=0o777).contains(&m) => vec![invalid_bare(format!("{path}.{key}"), m, FILE_MODE)],
        _ => Vec::new(),
    }
}

/// `validateHostPathVolumeSource` and `validateHostPathType`.
fn host_path(src: &Value, path: &str) -> Vec<FieldError> {
    let p = str_at(src, "path");
    if p.is_empty() {
        return vec![required(format!("{path}.path"), "")];
    }
    let mut errs = path_no_backsteps(p, &format!("{path}.path"));
    const TYPES: [&str; 8] =
        ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"];
    if let Some(t) = src.get("type").and_then(Value::as_str)
        && !TYPES.contains(&t)
    {
        errs.push(not_supported(format!("{path}.type"), t, &TYPES));
    }
    errs
}

/// GCE's and AWS's disks: the id required, the partition within 0..=255 (upstream's message
/// says from 1).
fn disk(src: &Value, path: &str, id: &str) -> Vec<FieldError> {
    let mut errs = required_strings(src, path, &[id]);
    if let Some(p) = int_at(src, "partition")
        && !(0..=255).contains(&p)
    {
        errs.push(invalid_bare(format!("{path}.partition"), p, &inclusive_range(1, 255)));
    }
    errs
}

/// Secret and ConfigMap sources: the name, the default mode, the items.
fn items_source(src: &Value, path: &str, name_key: &str) -> Vec<FieldError> {
    let mut errs = required_strings(src, path, &[name_key]);
    errs.extend(mode(src, "defaultMode", path));
    for (i, item) in src.get("items").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errs.extend(key_to_path(item, &format!("{path}.items[{i}]")));
    }
    errs
}

/// `validateKeyToPath`.
fn key_to_path(item: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = required_strings(item, path, &["key", "path"]);
    errs.extend(local_non_reserved_path(str_at(item, "path"), &format!("{path}.path")));
    errs.extend(mode(item, "mode", path));
    errs
}

/// `validatePathNoBacksteps`: no `..` element.
pub(crate) fn path_no_backsteps(p: &str, path: &str) -> Vec<FieldError> {
    if p.replace('\\', "/").split('/').any(|e| e == "..") {
        vec![invalid_str(path, p, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

/// `validateLocalDescendingPath`: relative, and no `..` element.
pub(crate) fn local_descending_path(p: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if p.starts_with('/') {
        errs.push(invalid_str(path, p, "must be a relative path"));
    }
    errs.extend(path_no_backsteps(p, path));
    errs
}

/// `ValidateLocalNonReservedPath`: a local descending path that does not start with `..`.
pub(crate) fn local_non_reserved_path(p: &str, path: &str) -> Vec<FieldError> {
    let mut errs = local_descending_path(p, path);
    if p.starts_with("..") && !p.starts_with("../") {
        errs.push(invalid_str(path, p, "must not start with '..'"));
    }
    errs
}

static IQN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$").expect("iqn regex"));
static EUI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^eui.[[:alnum:]]{16}$").expect("eui regex"));
static NAA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^naa.[[:alnum:]]{32}$").expect("naa regex"));

/// Whether an iSCSI name of a known prefix has that prefix's format (`None` for no known prefix).
fn iscsi_name_ok(name: &str) -> Option<bool> {
    if name.starts_with("iqn") {
        Some(IQN.is_match(name))
    } else if name.starts_with("eui") {
        Some(EUI.is_match(name))
    } else if name.starts_with("naa") {
        Some(NAA.is_match(name))
    } else {
        None
    }
}

/// `validateISCSIVolumeSource`.
fn iscsi(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = required_strings(src, path, &["targetPortal"]);
    let iqn = str_at(src, "iqn");
    if iqn.is_empty() {
        errs.push(required(format!("{path}.iqn"), ""));
    } else {
        match iscsi_name_ok(iqn) {
            None => errs.push(invalid_str(
                format!("{path}.iqn"),
                iqn,
                "must be valid format starting with iqn, eui, or naa",
            )),
            Some(false) => errs.push(invalid_str(format!("{path}.iqn"), iqn, "must be valid format")),
            Some(true) => {}
        }
    }
    let lun = int_at(src, "lun").unwrap_or(0);
    if !(0..=255).contains(&lun) {
        errs.push(invalid_bare(format!("{path}.lun"), lun, &inclusive_range(0, 255)));
    }
    let chap = |k: &str| src.get(k).and_then(Value::as_bool).unwrap_or(false);
    if (chap("chapAuthDiscovery") || chap("chapAuthSession"))
        && src.get("secretRef").is_none_or(Value::is_null)
    {
        errs.push(required(format!("{path}.secretRef"), ""));
    }
    if let Some(initiator) = src.get("initiatorName").and_then(Value::as_str) {
        match iscsi_name_ok(initiator) {
            None => errs.push(invalid_str(
                format!("{path}.initiatorname"),
                initiator,
                "must be valid format starting with iqn, eui, or naa",
            )),
            Some(false) => {
                errs.push(invalid_str(format!("{path}.initiatorname"), initiator, "must be valid format"))
            }
            Some(true) => {}
        }
    }
    errs
}

/// `validateFlockerVolumeSource`.
fn flocker(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (name, uuid) = (str_at(src, "datasetName"), str_at(src, "datasetUUID"));
    if name.is_empty() && uuid.is_empty() {
        errs.push(required(path, "one of datasetName and datasetUUID is required"));
    }
    if !name.is_empty() && !uuid.is_empty() {
        errs.push(invalid_str(
            path,
            "resource",
            "datasetName and datasetUUID can not be specified simultaneously",
        ));
    }
    if name.contains('/') {
        errs.push(invalid_str(format!("{path}.datasetName"), name, "must not contain '/'"));
    }
    errs
}

/// `validateQuobyteVolumeSource`.
fn quobyte(src: &Value, path: &str) -> Vec<FieldError> {
    const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
    let mut errs = Vec::new();
    let registry = str_at(src, "registry");
    if registry.is_empty() {
        errs.push(required(format!("{path}.registry"), PAIRS));
    } else if str_at(src, "tenant").len() >= 65 {
        errs.push(required(
            format!("{path}.tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !host_port(pair) {
                errs.push(invalid_str(format!("{path}.registry"), registry, PAIRS));
            }
        }
    }
    errs.extend(required_strings(src, path, &["volume"]));
    errs
}

/// Whether Go's `net.SplitHostPort` takes `s`: `host:port`, or `[host]:port`.
fn host_port(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split_once("]:").is_some_and(|(h, p)| !h.contains(['[', ']']) && !p.contains(':'));
    }
    match s.rsplit_once(':') {
        Some((host, _)) => !host.contains([':', '[', ']']),
        None => false,
    }
}

/// `validateFCVolumeSource`.
fn fc(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let list = |k: &str| -> Vec<&str> {
        src.get(k).and_then(Value::as_array).into_iter().flatten().map(|v| v.as_str().unwrap_or("")).collect()
    };
    let (wwns, wwids) = (list("targetWWNs"), list("wwids"));
    if wwns.is_empty() && wwids.is_empty() {
        errs.push(required(
            format!("{path}.targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        errs.push(invalid_bare(
            format!("{path}.targetWWNs"),
            go_string_slice(&wwns),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if !wwns.is_empty() {
        match int_at(src, "lun") {
            None => errs.push(required(format!("{path}.lun"), "lun is required if targetWWNs is specified")),
            Some(l) if !(0..=255).contains(&l) => {
                errs.push(invalid_bare(format!("{path}.lun"), l, &inclusive_range(0, 255)));
            }
            Some(_) => {}
        }
    }
    errs
}

/// `validateFlexVolumeSource`: the driver, and no option in a Kubernetes namespace.
fn flex(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = required_strings(src, path, &["driver"]);
    let mut keys: Vec<&String> =
        src.get("options").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k).collect();
    keys.sort();
    for k in keys {
        let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            errs.push(invalid_str(
                format!("{path}.options[{k}]"),
                k,
                "kubernetes.io and k8s.io namespaces are reserved",
            ));
        }
    }
    errs
}

/// `validateAzureDisk`.
fn azure_disk(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = required_strings(src, path, &["diskName", "diskURI"]);
    if let Some(c) = src.get("cachingMode").and_then(Value::as_str)
        && !["None", "ReadOnly", "ReadWrite"].contains(&c)
    {
        errs.push(not_supported(format!("{path}.cachingMode"), c, &["None", "ReadOnly", "ReadWrite"]));
    }
    let kind = src.get("kind").and_then(Value::as_str);
    if let Some(k) = kind
        && !["Dedicated", "Managed", "Shared"].contains(&k)
    {
        errs.push(not_supported(format!("{path}.kind"), k, &["Dedicated", "Managed", "Shared"]));
    }
    let uri = str_at(src, "diskURI");
    match kind {
        Some("Managed") if !uri.starts_with("/subscriptions/") => errs.push(not_supported(
            format!("{path}.diskURI"),
            uri,
            &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
        )),
        Some(k) if k != "Managed" && !uri.starts_with("https://") => errs.push(not_supported(
            format!("{path}.diskURI"),
            uri,
            &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
        )),
        _ => {}
    }
    errs
}

/// `validateStorageOSVolumeSource`.
fn storageos(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(src, "volumeName");
    if name.is_empty() {
        errs.push(required(format!("{path}.volumeName"), ""));
    } else {
        errs.extend(dns_label(name, &format!("{path}.volumeName")));
    }
    let ns = str_at(src, "volumeNamespace");
    if !ns.is_empty() {
        errs.extend(dns_label(ns, &format!("{path}.volumeNamespace")));
    }
    errs.extend(secret_ref_name(src, path));
    errs
}

/// `validateCSIVolumeSource` with `ValidateCSIDriverName`.
fn csi(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let driver = str_at(src, "driver");
    let dp = format!("{path}.driver");
    if driver.is_empty() {
        errs.push(required(&dp, ""));
    }
    if driver.len() > 63 {
        errs.push(too_long(&dp, 63));
    }
    if let Some(why) = check_subdomain(&driver.to_lowercase()) {
        errs.extend(split_reasons(&why).map(|w| invalid_str(&dp, driver, w)));
    }
    if let Some(r) = src.get("nodePublishSecretRef").filter(|r| !r.is_null()) {
        let name = str_at(r, "name");
        if name.is_empty() {
            errs.push(required(format!("{path}.nodePublishSecretRef.name"), ""));
        } else if let Some(why) = check_subdomain(name) {
            errs.extend(split_reasons(&why).map(|w| invalid_str(format!("{path}.name"), name, w)));
        }
    }
    errs
}

/// `validateEphemeralVolumeSource`: a claim template (`ValidatePersistentVolumeClaimTemplate`).
fn ephemeral(src: &Value, path: &str) -> Vec<FieldError> {
    let Some(t) = src.get("volumeClaimTemplate").filter(|t| !t.is_null()) else {
        return vec![required(format!("{path}.volumeClaimTemplate"), "")];
    };
    let tp = format!("{path}.volumeClaimTemplate");
    let meta = t.get("metadata").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    // `ValidateTemplateObjectMeta`: annotations, labels, then nothing else set.
    let mut keys: Vec<&String> =
        meta.get("annotations").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k).collect();
    keys.sort();
    for k in keys {
        for why in qualified_name_errors(&k.to_lowercase()) {
            errs.push(invalid_str(format!("{tp}.metadata.annotations"), k, &why));
        }
    }
    errs.extend(crate::label_rules::label_map_errors(meta.get("labels"), &format!("{tp}.metadata.labels")));
    const OTHER_FIELDS: [&str; 13] = [
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "ownerReferences",
        "finalizers",
        "managedFields",
    ];
    for f in OTHER_FIELDS {
        let set = match meta.get(f) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Number(n)) => n.as_i64() != Some(0),
            Some(_) => true,
        };
        if set {
            errs.push(forbidden(format!("{tp}.metadata.{f}"), "cannot be set"));
        }
    }
    errs.extend(claim_spec(t.get("spec").unwrap_or(&Value::Null), &format!("{tp}.spec")));
    errs
}

/// The first rules of `ValidatePersistentVolumeClaimSpec`: access modes given and known, a
/// storage request that is above zero.
fn claim_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    const MODES: [&str; 4] = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
    let mut errs = Vec::new();
    let modes: Vec<&str> = spec
        .get("accessModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    if modes.is_empty() {
        errs.push(required(format!("{path}.accessModes"), "at least 1 access mode is required"));
    }
    errs.extend(crate::label_rules::label_selector_errors(spec.get("selector"), &format!("{path}.selector")));
    for m in &modes {
        if !MODES.contains(m) {
            errs.push(not_supported(format!("{path}.accessModes"), m, &MODES));
        }
    }
    match spec.pointer("/resources/requests/storage") {
        None => errs.push(required(format!("{path}.resources[storage]"), "")),
        Some(q) => {
            if let Some(q) = quantity(q)
                && (q.is_negative() || q.is_zero())
            {
                errs.push(invalid_str(
                    format!("{path}.resources[storage]"),
                    &q.to_string(),
                    "must be greater than zero",
                ));
            }
        }
    }
    errs
}

/// `validateProjectedVolumeSource` and `validateProjectionSources`.
fn projected(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = mode(src, "defaultMode", path);
    let mut seen: HashSet<String> = HashSet::new();
    for (i, source) in src.get("sources").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let sp = format!("{path}.sources[{i}]");
        let mut kinds = 0;
        for (key, name_key) in [("secret", "name"), ("configMap", "name")] {
            let Some(s) = source.get(key).filter(|s| !s.is_null()) else { continue };
            kinds += 1;
            let pp = format!("{sp}.{key}");
            errs.extend(required_strings(s, &pp, &[name_key]));
            for (j, item) in s.get("items").and_then(Value::as_array).into_iter().flatten().enumerate() {
                errs.extend(key_to_path(item, &format!("{pp}.items[{j}]")));
                let p = str_at(item, "path");
                if !p.is_empty() && !seen.insert(p.to_owned()) {
                    errs.push(invalid_str(path, str_at(s, name_key), "conflicting duplicate paths"));
                }
            }
        }
        if let Some(d) = source.get("downwardAPI").filter(|s| !s.is_null()) {
            kinds += 1;
            let pp = format!("{sp}.downwardAPI");
            for item in d.get("items").and_then(Value::as_array).into_iter().flatten() {
                errs.extend(downward_api_file(item, &pp));
                let p = str_at(item, "path");
                if !p.is_empty() && !seen.insert(p.to_owned()) {
                    errs.push(invalid_str(path, p, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(t) = source.get("serviceAccountToken").filter(|s| !s.is_null()) {
            kinds += 1;
            let pp = format!("{sp}.serviceAccountToken");
            let seconds = int_at(t, "expirationSeconds").unwrap_or(3600);
            if seconds < 600 {
                errs.push(invalid_bare(
                    format!("{pp}.expirationSeconds"),
                    seconds,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if seconds > 1 << 32 {
                errs.push(invalid_bare(
                    format!("{pp}.expirationSeconds"),
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            let p = str_at(t, "path");
            if p.is_empty() {
                errs.push(required(format!("{path}.path"), ""));
            } else {
                errs.extend(local_non_reserved_path(p, &format!("{path}.path")));
            }
        }
        if kinds > 1 {
            errs.push(forbidden(sp, "may not specify more than 1 volume type per source"));
        }
    }
    errs
}

/// The fields a volume's downward API file may name (`validVolumeDownwardAPIFieldPathExpressions`).
const VOLUME_FIELD_PATHS: [&str; 5] =
    ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"];

/// `validateDownwardAPIVolumeFile`, its paths under `path` (upstream names no item index).
fn downward_api_file(item: &Value, path: &str) -> Vec<FieldError> {
    let p = str_at(item, "path");
    let mut errs = Vec::new();
    if p.is_empty() {
        errs.push(required(format!("{path}.path"), ""));
    }
    errs.extend(local_non_reserved_path(p, &format!("{path}.path")));
    let field_ref = item.get("fieldRef").filter(|f| !f.is_null());
    let resource_ref = item.get("resourceFieldRef").filter(|f| !f.is_null());
    if let Some(f) = field_ref {
        errs.extend(object_field_selector(f, &VOLUME_FIELD_PATHS, &format!("{path}.fieldRef")));
        if resource_ref.is_some() {
            errs.push(invalid_str(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(r) = resource_ref {
        errs.extend(resource_field_selector(r, &format!("{path}.resourceFieldRef")));
    } else {
        errs.push(required(path, "one of fieldRef and resourceFieldRef is required"));
    }
    errs.extend(mode(item, "mode", path));
    errs
}

/// Go's `fieldpath.SplitMaybeSubscriptedPath`: `path['subscript']`.
fn split_subscript(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, sub) = s.split_once("['")?;
    (!path.is_empty()).then_some((path, sub))
}

/// The pod fields the downward API knows (`ConvertDownwardAPIFieldLabel`'s v1 list).
const POD_FIELD_LABELS: [&str; 14] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validateObjectFieldSelector`: the version and path given, the path one the downward API
/// converts, then one of `allowed` (a labels' or annotations' subscript a qualified name).
fn object_field_selector(f: &Value, allowed: &[&str], path: &str) -> Vec<FieldError> {
    let version = str_at(f, "apiVersion");
    let field_path = str_at(f, "fieldPath");
    if version.is_empty() {
        return vec![required(format!("{path}.apiVersion"), "")];
    }
    if field_path.is_empty() {
        return vec![required(format!("{path}.fieldPath"), "")];
    }
    let converted = if version != "v1" {
        Err(format!("unsupported pod version: {version}"))
    } else if let Some((p, _)) = split_subscript(field_path) {
        if p == "metadata.annotations" || p == "metadata.labels" {
            Ok(field_path.to_owned())
        } else {
            Err(format!("field label does not support subscript: {field_path}"))
        }
    } else if field_path == "spec.host" {
        Ok("spec.nodeName".to_owned())
    } else if POD_FIELD_LABELS.contains(&field_path) {
        Ok(field_path.to_owned())
    } else {
        Err(format!("field label not supported: {field_path}"))
    };
    let internal = match converted {
        Ok(p) => p,
        Err(why) => {
            return vec![invalid_str(
                format!("{path}.fieldPath"),
                field_path,
                &format!("error converting fieldPath: {why}"),
            )];
        }
    };
    if let Some((p, sub)) = split_subscript(&internal) {
        let key = if p == "metadata.annotations" { sub.to_lowercase() } else { sub.to_owned() };
        if p == "metadata.annotations" || p == "metadata.labels" {
            return qualified_name_errors(&key).iter().map(|why| invalid_str(path, &key, why)).collect();
        }
        return vec![invalid_str(path, p, "does not support subscript")];
    }
    if !allowed.contains(&internal.as_str()) {
        return vec![not_supported(format!("{path}.fieldPath"), &internal, allowed)];
    }
    Vec::new()
}

/// `validateContainerResourceFieldSelector` for a volume (the container's name required) and
/// `validateContainerResourceDivisor`.
fn resource_field_selector(r: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let resource = str_at(r, "resource");
    if str_at(r, "containerName").is_empty() {
        errs.push(required(format!("{path}.containerName"), ""));
    } else if resource.is_empty() {
        errs.push(required(format!("{path}.resource"), ""));
    } else if !super::containers::RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("requests.hugepages-")
        && !resource.starts_with("limits.hugepages-")
    {
        errs.push(not_supported(
            format!("{path}.resource"),
            resource,
            &super::containers::RESOURCE_FIELD_PATHS,
        ));
    }
    let Some(divisor) = r.get("divisor").and_then(quantity).filter(|d| !d.is_zero()) else { return errs };
    let d = divisor.to_string();
    const UNITS: [&str; 13] =
        ["1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"];
    let units_msg = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the";
    let dp = format!("{path}.divisor");
    match resource {
        "limits.cpu" | "requests.cpu" if d != "1m" && d != "1" => errs.push(invalid_str(
            &dp,
            resource,
            "only divisor's values 1m and 1 are supported with the cpu resource",
        )),
        "limits.memory" | "requests.memory" if !UNITS.contains(&d.as_str()) => {
            errs.push(invalid_str(&dp, resource, &format!("{units_msg} memory resource")));
        }
        "limits.ephemeral-storage" | "requests.ephemeral-storage" if !UNITS.contains(&d.as_str()) => {
            errs.push(invalid_str(&dp, resource, &format!("{units_msg} local ephemeral storage resource")));
        }
        _ => {}
    }
    if (resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-"))
        && !UNITS.contains(&d.as_str())
    {
        errs.push(invalid_str(&dp, resource, &format!("{units_msg} hugepages resource")));
    }
    errs
}

/// What only a Pod (not a template) is refused (`validatePodMetadataAndSpec`): a projected
/// service account token when no account is named.
pub(crate) fn pod_only(spec: &Value) -> Vec<FieldError> {
    if !str_at(spec, "serviceAccountName").is_empty() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    for (vi, v) in spec.get("volumes").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for (si, s) in
            v.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            if s.get("serviceAccountToken").is_some_and(|t| !t.is_null()) {
                errs.push(forbidden(
                    format!("spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken"),
                    "must not be specified when serviceAccountName is not set",
                ));
            }
        }
    }
    errs
}

/// The defaults of the sources `default_volume` leaves (`SetDefaults_AzureDiskVolumeSource`,
/// `_ISCSIVolumeSource`, `_RBDVolumeSource`, `_ScaleIOVolumeSource`,
/// `_ServiceAccountTokenProjection`, `_ObjectFieldSelector` of the downward API's files).
pub(super) fn default_sources(v: &mut serde_json::Map<String, Value>) {
    use crate::object_meta::set_default;
    use serde_json::json;
    defaults_of(
        v,
        "azureDisk",
        &[
            ("cachingMode", json!("ReadWrite")),
            ("kind", json!("Shared")),
            ("fsType", json!("ext4")),
            ("readOnly", json!(false)),
        ],
    );
    defaults_of(v, "iscsi", &[("iscsiInterface", json!("default"))]);
    defaults_of(
        v,
        "rbd",
        &[("pool", json!("rbd")), ("user", json!("admin")), ("keyring", json!("/etc/ceph/keyring"))],
    );
    defaults_of(v, "scaleIO", &[("storageMode", json!("ThinProvisioned")), ("fsType", json!("xfs"))]);
    let field_refs = |items: Option<&mut Value>| {
        for item in items.and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
                set_default(f, "apiVersion", json!("v1"));
            }
            if let Some(r) = item.get_mut("resourceFieldRef").and_then(Value::as_object_mut) {
                default_divisor(r);
            }
        }
    };
    field_refs(v.get_mut("downwardAPI").and_then(|d| d.get_mut("items")));
    let sources = v.get_mut("projected").and_then(|p| p.get_mut("sources")).and_then(Value::as_array_mut);
    for s in sources.into_iter().flatten() {
        if let Some(t) = s.get_mut("serviceAccountToken").and_then(Value::as_object_mut) {
            set_default(t, "expirationSeconds", json!(3600));
        }
        field_refs(s.get_mut("downwardAPI").and_then(|d| d.get_mut("items")));
    }
}

/// A resource field reference's divisor: a `resource.Quantity` is a struct, which Go's
/// `omitempty` never leaves out, so an unset one is written as its zero value, `"0"`.
pub(super) fn default_divisor(r: &mut serde_json::Map<String, Value>) {
    crate::object_meta::set_default(r, "divisor", Value::String("0".into()));
}

/// Sets each of `defaults` missing from the source `key` of a volume, if it has that source.
fn defaults_of(v: &mut serde_json::Map<String, Value>, key: &str, defaults: &[(&str, Value)]) {
    if let Some(s) = v.get_mut(key).and_then(Value::as_object_mut) {
        for (k, d) in defaults {
            crate::object_meta::set_default(s, k, d.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_second_source_is_refused_and_the_first_checked() {
        let spec = json!({ "volumes": [{ "name": "v", "emptyDir": {}, "hostPath": { "path": "/tmp" } }] });
        assert_eq!(validate(&spec, "spec", "p")[0].0, "spec.volumes[0].hostPath");
        let spec = json!({ "volumes": [{ "name": "v", "secret": { "secretName": "" } }] });
        assert_eq!(validate(&spec, "spec", "p"), [required("spec.volumes[0].secret.secretName", "")]);
    }

    #[test]
    fn paths_that_climb_are_refused() {
        assert!(local_non_reserved_path("a/b", "p").is_empty());
        assert_eq!(
            local_non_reserved_path("..a", "p")[0].1,
            "Invalid value: \"..a\": must not start with '..'"
        );
        assert_eq!(local_non_reserved_path("a/../b", "p").len(), 1);
    }

    #[test]
    fn go_splits_host_and_port() {
        assert!(host_port("r:7861"));
        assert!(host_port("[::1]:80"));
        assert!(!host_port("bad"));
        assert!(!host_port("::1:80"));
    }
}
