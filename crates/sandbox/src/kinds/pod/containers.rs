//! A pod spec's containers, as upstream's `validateContainers`, `validateInitContainers`,
//! `validateEphemeralContainers` and the `validateContainerCommon` they share: names and
//! images, ports, environment, mounts and devices, the pull policy, resources and the security
//! context, in the order upstream appends their causes. Probes and lifecycle handlers are
//! [`super::probes`]'.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::probes;
use super::values::{has, invalid, port_num_error, str_of, unsupported};
use crate::go_print::go_quote;
use crate::metadata::{label_errors, port_name_errors, qualified_name_errors, subdomain_errors};
use crate::quantity::Quantity;
use crate::resource_name;
use crate::status::FieldError;

/// What every container of a spec is checked against: the pod's volumes by name, and its grace
/// period (a sleep handler's bound).
pub(super) struct PodContext<'a> {
    volumes: HashMap<&'a str, &'a Value>,
    grace: Option<i64>,
}

impl<'a> PodContext<'a> {
    pub(super) fn of(spec: &'a Value) -> Self {
        let volumes = spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| Some((v.get("name")?.as_str()?, v)))
            .collect();
        Self { volumes, grace: spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64) }
    }

    pub(super) fn grace(&self) -> Option<i64> {
        self.grace
    }
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `validateContainers`, `validateInitContainers` and `validateEphemeralContainers`, under
/// `at` (`spec`, or a template's `spec.template.spec`).
pub fn validate(spec: &Value, at: &str) -> Vec<FieldError> {
    let ctx = PodContext::of(spec);
    let mut errs = regular_containers(spec, at, &ctx);
    errs.extend(init_containers(spec, at, &ctx));
    errs.extend(ephemeral_containers(spec, at, &ctx));
    errs
}

/// `validateContainers`: at least one; each valid, named uniquely, its handlers and probes
/// valid and no `restartPolicy`; host ports unique across them.
fn regular_containers(spec: &Value, at: &str, ctx: &PodContext) -> Vec<FieldError> {
    let field = format!("{at}.containers");
    let containers = list(spec, "containers");
    if containers.is_empty() {
        return vec![(field, "Required value".into())];
    }
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        let path = format!("{field}[{i}]");
        errs.extend(common(c, &path, ctx));
        let name = str_of(c, "name");
        if !names.insert(name) {
            errs.push((format!("{path}.name"), format!("Duplicate value: {}", go_quote(name))));
        }
        errs.extend(probes::container_probes(c, &path, ctx.grace()));
        if has(c, "restartPolicy") {
            errs.push((
                format!("{path}.restartPolicy"),
                "Forbidden: may not be set for non-init containers".into(),
            ));
        }
    }
    errs.extend(host_port_conflicts(containers.iter().enumerate(), &field));
    errs
}

/// `validateInitContainers`: as regular containers, named apart from them too; only a sidecar
/// (`restartPolicy: Always`) may have handlers and probes; host ports unique in each.
fn init_containers(spec: &Value, at: &str, ctx: &PodContext) -> Vec<FieldError> {
    const NOT_SIDECAR: &str = "Forbidden: may not be set for init containers without restartPolicy=Always";
    let field = format!("{at}.initContainers");
    let mut names: HashSet<&str> = list(spec, "containers").iter().map(|c| str_of(c, "name")).collect();
    let mut errs = Vec::new();
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let path = format!("{field}[{i}]");
        errs.extend(common(c, &path, ctx));
        let restart = c.get("restartPolicy").and_then(Value::as_str);
        if let Some(p) = restart
            && p != "Always"
        {
            errs.push((format!("{path}.restartPolicy"), unsupported(p, &["Always"])));
        }
        let name = str_of(c, "name");
        if names.contains(name) {
            errs.push((format!("{path}.name"), format!("Duplicate value: {}", go_quote(name))));
        } else if !name.is_empty() {
            names.insert(name);
        }
        // Init containers run one at a time: each is checked alone, as the list's first.
        errs.extend(host_port_conflicts(std::iter::once((0, c)), &field));
        if restart == Some("Always") {
            errs.extend(probes::container_probes(c, &path, ctx.grace()));
        } else {
            for f in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
                if has(c, f) {
                    errs.push((format!("{path}.{f}"), NOT_SIDECAR.into()));
                }
            }
        }
    }
    errs
}

/// The fields an ephemeral container may set (`allowedEphemeralContainerFields`); the others,
/// in the type's order, are refused when set.
const EPHEMERAL_FORBIDDEN: [&str; 8] = [
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// Whether a JSON value is its Go type's zero value (`null`, `false`, `0`, `""`, empty, or an
/// object of zero values).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_zero),
    }
}

/// `validateEphemeralContainers`: each valid as any container and as a pod's, named apart from
/// every other container, targeting a container that exists, with none of the fields a
/// workload relies on and no sub-path mounts.
fn ephemeral_containers(spec: &Value, at: &str, ctx: &PodContext) -> Vec<FieldError> {
    const NOT_EPHEMERAL: &str = "Forbidden: cannot be set for an Ephemeral Container";
    let ephemeral = list(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return Vec::new();
    }
    let others: HashSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| list(spec, l))
        .map(|c| str_of(c, "name"))
        .collect();
    let mut all = others.clone();
    let mut errs = Vec::new();
    for (i, c) in ephemeral.iter().enumerate() {
        let path = format!("{at}.ephemeralContainers[{i}]");
        errs.extend(common(c, &path, ctx));
        errs.extend(image_whitespace(c, &path));
        let name = str_of(c, "name");
        if !all.insert(name) {
            errs.push((format!("{path}.name"), format!("Duplicate value: {}", go_quote(name))));
        }
        let target = str_of(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            errs.push((format!("{path}.targetContainerName"), format!("Not found: {}", go_quote(target))));
        }
        for f in EPHEMERAL_FORBIDDEN {
            if c.get(f).is_some_and(|v| !is_zero(v)) {
                errs.push((format!("{path}.{f}"), NOT_EPHEMERAL.into()));
            }
        }
        for (j, m) in list(c, "volumeMounts").iter().enumerate() {
            for f in ["subPath", "subPathExpr"] {
                if !str_of(m, f).is_empty() {
                    errs.push((format!("{path}.volumeMounts[{j}].{f}"), NOT_EPHEMERAL.into()));
                }
            }
        }
    }
    errs
}

/// `validateContainerOnlyForPod`: a Pod's image has no surrounding whitespace (a template's
/// may, for compatibility).
fn image_whitespace(c: &Value, path: &str) -> Vec<FieldError> {
    let image = str_of(c, "image");
    if image.trim() == image {
        return Vec::new();
    }
    vec![(format!("{path}.image"), invalid(image, "must not have leading or trailing whitespace"))]
}

/// `validateContainersOnlyForPod` of a Pod's containers and init containers (its ephemeral
/// ones are checked with the spec).
pub fn only_for_pod(spec: &Value) -> Vec<FieldError> {
    ["containers", "initContainers"]
        .iter()
        .flat_map(|l| {
            list(spec, l)
                .iter()
                .enumerate()
                .flat_map(move |(i, c)| image_whitespace(c, &format!("spec.{l}[{i}]")))
        })
        .collect()
}

/// `AccumulateUniqueHostPorts`: each `protocol/hostIP/hostPort` once among `containers`.
fn host_port_conflicts<'a>(
    containers: impl Iterator<Item = (usize, &'a Value)>,
    field: &str,
) -> Vec<FieldError> {
    let mut seen = HashSet::new();
    let mut errs = Vec::new();
    for (i, c) in containers {
        for (j, p) in list(c, "ports").iter().enumerate() {
            let port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if port == 0 {
                continue;
            }
            let key = format!("{}/{}/{port}", str_of(p, "protocol"), str_of(p, "hostIP"));
            if seen.contains(&key) {
                errs.push((
                    format!("{field}[{i}].ports[{j}].hostPort"),
                    format!("Duplicate value: {}", go_quote(&key)),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
    errs
}

/// `validateContainerCommon`: what every kind of container is held to, in upstream's order.
fn common(c: &Value, path: &str, ctx: &PodContext) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_of(c, "name");
    if name.is_empty() {
        errs.push((format!("{path}.name"), "Required value".into()));
    } else {
        errs.extend(label_errors(name).into_iter().map(|m| (format!("{path}.name"), invalid(name, &m))));
    }
    if str_of(c, "image").is_empty() {
        errs.push((format!("{path}.image"), "Required value".into()));
    }
    match str_of(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push((format!("{path}.terminationMessagePolicy"), "Required value".into())),
        p => errs.push((
            format!("{path}.terminationMessagePolicy"),
            unsupported(p, &["File", "FallbackToLogsOnError"]),
        )),
    }
    errs.extend(ports(c, &format!("{path}.ports")));
    errs.extend(env(c, &format!("{path}.env")));
    errs.extend(env_from(c, &format!("{path}.envFrom")));
    errs.extend(volume_mounts(c, &format!("{path}.volumeMounts"), ctx));
    errs.extend(volume_devices(c, &format!("{path}.volumeDevices"), ctx));
    match str_of(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => errs.push((format!("{path}.imagePullPolicy"), "Required value".into())),
        p => errs
            .push((format!("{path}.imagePullPolicy"), unsupported(p, &["Always", "IfNotPresent", "Never"]))),
    }
    errs.extend(resources(c.get("resources").unwrap_or(&Value::Null), &format!("{path}.resources")));
    errs.extend(security_context(
        c.get("securityContext").unwrap_or(&Value::Null),
        &format!("{path}.securityContext"),
    ));
    errs
}

/// `validateContainerPorts`: named ports are IANA service names, unique; numbers in range; a
/// known protocol.
fn ports(c: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, p) in list(c, "ports").iter().enumerate() {
        let at = format!("{field}[{i}]");
        let name = str_of(p, "name");
        if !name.is_empty() {
            let why = port_name_errors(name);
            if !why.is_empty() {
                errs.extend(why.iter().map(|m| (format!("{at}.name"), invalid(name, m))));
            } else if !names.insert(name) {
                errs.push((format!("{at}.name"), format!("Duplicate value: {}", go_quote(name))));
            }
        }
        match p.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => errs.push((format!("{at}.containerPort"), "Required value".into())),
            n => errs.extend(port_num_error(n).map(|m| (format!("{at}.containerPort"), m))),
        }
        match p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => {}
            n => errs.extend(port_num_error(n).map(|m| (format!("{at}.hostPort"), m))),
        }
        match str_of(p, "protocol") {
            "" => errs.push((format!("{at}.protocol"), "Required value".into())),
            "TCP" | "UDP" | "SCTP" => {}
            other => errs.push((format!("{at}.protocol"), unsupported(other, &["SCTP", "TCP", "UDP"]))),
        }
    }
    errs
}

/// `IsRelaxedEnvVarName`: printable ASCII but `=`.
fn relaxed_env_name_error(name: &str) -> Option<&'static str> {
    name.chars().any(|c| !(' '..='~').contains(&c) || c == '=').then_some(
        "a valid environment variable name must consist only of printable ASCII characters other than '='",
    )
}

/// `ValidateEnv`: each variable named (relaxed names, the v1.32 default) and its `valueFrom`.
fn env(c: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, e) in list(c, "env").iter().enumerate() {
        let at = format!("{field}[{i}]");
        let name = str_of(e, "name");
        if name.is_empty() {
            errs.push((format!("{at}.name"), "Required value".into()));
        } else if let Some(why) = relaxed_env_name_error(name) {
            errs.push((format!("{at}.name"), invalid(name, why)));
        }
        if let Some(from) = e.get("valueFrom").filter(|v| !v.is_null()) {
            errs.extend(value_from(from, str_of(e, "value"), &format!("{at}.valueFrom")));
        }
    }
    errs
}

/// The downward API's fields an environment variable may hold (`validEnvDownwardAPIFieldPathExpressions`).
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// A container's resources the downward API gives (`validContainerResourceFieldPathExpressions`).
pub(super) const RESOURCE_FIELD_PATHS: [&str; 6] = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `validateEnvVarValueFrom`: each source valid; exactly one, and no `value` beside it.
fn value_from(from: &Value, value: &str, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut sources = 0;
    if let Some(f) = from.get("fieldRef").filter(|v| !v.is_null()) {
        sources += 1;
        errs.extend(object_field_selector(f, &ENV_FIELD_PATHS, &format!("{field}.fieldRef")));
    }
    if let Some(r) = from.get("resourceFieldRef").filter(|v| !v.is_null()) {
        sources += 1;
        errs.extend(resource_field_selector(r, &format!("{field}.resourceFieldRef")));
    }
    for source in ["configMapKeyRef", "secretKeyRef"] {
        if let Some(s) = from.get(source).filter(|v| !v.is_null()) {
            sources += 1;
            errs.extend(key_selector(s, &format!("{field}.{source}")));
        }
    }
    if sources == 0 {
        errs.push((
            field.to_owned(),
            invalid(
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ),
        ));
    } else if !value.is_empty() {
        errs.push((field.to_owned(), invalid("", "may not be specified when `value` is not empty")));
    } else if sources > 1 {
        errs.push((field.to_owned(), invalid("", "may not have more than one field specified at a time")));
    }
    errs
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['k']` as the path and the key.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (head, key) = inner.split_once("['")?;
    (!head.is_empty()).then_some((head, key))
}

/// `ConvertDownwardAPIFieldLabel` for a Pod: the internal field path, or why it is none.
fn convert_field_label(version: &str, label: &str) -> Result<String, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((path, _)) = split_subscript(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_owned()),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label.to_owned()),
        "spec.host" => Ok("spec.nodeName".to_owned()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `validateObjectFieldSelector`: a version and a path the downward API converts, subscripts
/// only on labels and annotations (qualified keys), and a path among `allowed`.
pub(super) fn object_field_selector(f: &Value, allowed: &[&str], field: &str) -> Vec<FieldError> {
    let version = str_of(f, "apiVersion");
    let path = str_of(f, "fieldPath");
    if version.is_empty() {
        return vec![(format!("{field}.apiVersion"), "Required value".into())];
    }
    if path.is_empty() {
        return vec![(format!("{field}.fieldPath"), "Required value".into())];
    }
    let internal = match convert_field_label(version, path) {
        Ok(p) => p,
        Err(why) => {
            return vec![(
                format!("{field}.fieldPath"),
                invalid(path, &format!("error converting fieldPath: {why}")),
            )];
        }
    };
    if let Some((head, key)) = split_subscript(&internal) {
        let key = if head == "metadata.annotations" { key.to_lowercase() } else { key.to_owned() };
        return match head {
            "metadata.annotations" | "metadata.labels" => {
                qualified_name_errors(&key).iter().map(|m| (field.to_owned(), invalid(&key, m))).collect()
            }
            _ => vec![(field.to_owned(), invalid(head, "does not support subscript"))],
        };
    }
    if !allowed.contains(&internal.as_str()) {
        let mut sorted = allowed.to_vec();
        sorted.sort_unstable();
        return vec![(format!("{field}.fieldPath"), unsupported(&internal, &sorted))];
    }
    Vec::new()
}

/// `validateContainerResourceFieldSelector` for an environment variable: a resource the
/// downward API gives, and a divisor it supports.
fn resource_field_selector(r: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let resource = str_of(r, "resource");
    if resource.is_empty() {
        errs.push((format!("{field}.resource"), "Required value".into()));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("requests.hugepages-")
        && !resource.starts_with("limits.hugepages-")
    {
        errs.push((format!("{field}.resource"), unsupported(resource, &RESOURCE_FIELD_PATHS)));
    }
    errs.extend(divisor_errors(resource, r.get("divisor"), field));
    errs
}

/// `validateContainerResourceDivisor`: cpu by `1m` or `1`, the others by a unit of the SI or
/// binary scale.
fn divisor_errors(resource: &str, divisor: Option<&Value>, field: &str) -> Vec<FieldError> {
    const SCALES: [&str; 13] =
        ["1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"];
    const SCALE_LIST: &str = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";
    let text = divisor
        .and_then(|d| d.as_str().map(str::to_owned).or_else(|| d.as_number().map(ToString::to_string)));
    let Some(q) = text.and_then(|t| Quantity::parse(&t).ok()) else { return Vec::new() };
    if q.is_zero() {
        return Vec::new();
    }
    let canonical = q.to_string();
    let mut errs = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            errs.push((format!("{field}.divisor"), invalid(resource, what)));
        }
    };
    match resource {
        "limits.cpu" | "requests.cpu" => {
            check(
                matches!(canonical.as_str(), "1m" | "1"),
                "only divisor's values 1m and 1 are supported with the cpu resource",
            );
        }
        "limits.memory" | "requests.memory" => check(
            SCALES.contains(&canonical.as_str()),
            &format!("only divisor's values {SCALE_LIST} are supported with the memory resource"),
        ),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" => check(
            SCALES.contains(&canonical.as_str()),
            &format!(
                "only divisor's values {SCALE_LIST} are supported with the local ephemeral storage resource"
            ),
        ),
        _ => {}
    }
    if resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-") {
        check(
            SCALES.contains(&canonical.as_str()),
            &format!("only divisor's values {SCALE_LIST} are supported with the hugepages resource"),
        );
    }
    errs
}

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`: the object's name a
/// subdomain, the key a config key.
fn key_selector(s: &Value, field: &str) -> Vec<FieldError> {
    let name = str_of(s, "name");
    let mut errs: Vec<FieldError> =
        subdomain_errors(name).iter().map(|m| (format!("{field}.name"), invalid(name, m))).collect();
    let key = str_of(s, "key");
    if key.is_empty() {
        errs.push((format!("{field}.key"), "Required value".into()));
    } else {
        errs.extend(crate::kinds::key_errors(key).iter().map(|m| (format!("{field}.key"), invalid(key, m))));
    }
    errs
}

/// `ValidateEnvFrom`: a prefix that is a variable name, and exactly one source, named.
fn env_from(c: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, e) in list(c, "envFrom").iter().enumerate() {
        let at = format!("{field}[{i}]");
        let prefix = str_of(e, "prefix");
        if let Some(why) = relaxed_env_name_error(prefix) {
            errs.push((format!("{at}.prefix"), invalid(prefix, why)));
        }
        let mut sources = 0;
        for source in ["configMapRef", "secretRef"] {
            if let Some(s) = e.get(source).filter(|v| !v.is_null()) {
                sources += 1;
                let name = str_of(s, "name");
                if name.is_empty() {
                    errs.push((format!("{at}.{source}.name"), "Required value".into()));
                } else {
                    errs.extend(
                        subdomain_errors(name)
                            .iter()
                            .map(|m| (format!("{at}.{source}.name"), invalid(name, m))),
                    );
                }
            }
        }
        if sources == 0 {
            errs.push((field.to_owned(), invalid("", "must specify one of: `configMapRef` or `secretRef`")));
        } else if sources > 1 {
            errs.push((
                field.to_owned(),
                invalid("", "may not have more than one field specified at a time"),
            ));
        }
    }
    errs
}

/// `validatePathNoBacksteps`: no `..` element.
pub(super) fn backstep_errors(path: &str, field: &str) -> Vec<FieldError> {
    if path.split('/').any(|p| p == "..") {
        return vec![(field.to_owned(), invalid(path, "must not contain '..'"))];
    }
    Vec::new()
}

/// `validateLocalDescendingPath`: relative, without `..`.
pub(super) fn local_descending_path(path: &str, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if path.starts_with('/') {
        errs.push((field.to_owned(), invalid(path, "must be a relative path")));
    }
    errs.extend(backstep_errors(path, field));
    errs
}

/// `ValidateVolumeMounts`: each of a pod's volumes, at a unique path, apart from the devices;
/// sub-paths relative; propagation and recursive read-only as allowed. (Upstream names the
/// sub-path, propagation and read-only causes without the mount's index.)
fn volume_mounts(c: &Value, field: &str, ctx: &PodContext) -> Vec<FieldError> {
    let devices: HashMap<&str, &str> =
        list(c, "volumeDevices").iter().map(|d| (str_of(d, "name"), str_of(d, "devicePath"))).collect();
    let privileged = c.pointer("/securityContext/privileged").and_then(Value::as_bool) == Some(true);
    let mut errs = Vec::new();
    let mut paths = HashSet::new();
    for (i, m) in list(c, "volumeMounts").iter().enumerate() {
        let at = format!("{field}[{i}]");
        let name = str_of(m, "name");
        let path = str_of(m, "mountPath");
        if name.is_empty() {
            errs.push((format!("{at}.name"), "Required value".into()));
        }
        if !ctx.volumes.contains_key(name) {
            errs.push((format!("{at}.name"), format!("Not found: {}", go_quote(name))));
        }
        if path.is_empty() {
            errs.push((format!("{at}.mountPath"), "Required value".into()));
        }
        if !paths.insert(path) {
            errs.push((format!("{at}.mountPath"), invalid(path, "must be unique")));
        }
        if devices.contains_key(name) {
            errs.push((format!("{at}.name"), invalid(name, "must not already exist in volumeDevices")));
        }
        if devices.values().any(|p| *p == path) {
            errs.push((
                format!("{at}.mountPath"),
                invalid(path, "must not already exist as a path in volumeDevices"),
            ));
        }
        let sub = str_of(m, "subPath");
        let expr = str_of(m, "subPathExpr");
        if ctx.volumes.get(name).is_some_and(|v| has(v, "image")) {
            for (f, v) in [("subPath", sub), ("subPathExpr", expr)] {
                if !v.is_empty() {
                    errs.push((format!("{at}.{f}"), invalid(v, "not allowed in image volume sources")));
                }
            }
        }
        if !sub.is_empty() {
            errs.extend(local_descending_path(sub, &format!("{field}.subPath")));
        }
        if !expr.is_empty() {
            if !sub.is_empty() {
                errs.push((
                    format!("{at}.subPathExpr"),
                    invalid(expr, "subPathExpr and subPath are mutually exclusive"),
                ));
            }
            errs.extend(local_descending_path(expr, &format!("{field}.subPathExpr")));
        }
        let propagation = m.get("mountPropagation").and_then(Value::as_str);
        if let Some(p) = propagation {
            let at = format!("{field}.mountPropagation");
            if !matches!(p, "Bidirectional" | "HostToContainer" | "None") {
                errs.push((at.clone(), unsupported(p, &["Bidirectional", "HostToContainer", "None"])));
            }
            if p == "Bidirectional" && !privileged {
                errs.push((
                    at,
                    "Forbidden: Bidirectional mount propagation is available only to privileged containers"
                        .into(),
                ));
            }
        }
        if let Some(rro) = m.get("recursiveReadOnly").and_then(Value::as_str) {
            let at = format!("{field}.recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if m.get("readOnly").and_then(Value::as_bool) != Some(true) {
                        errs.push((
                            at.clone(),
                            "Forbidden: may only be specified when readOnly is true".into(),
                        ));
                    }
                    if propagation.is_some_and(|p| p != "None") {
                        errs.push((
                            at,
                            "Forbidden: may only be specified when mountPropagation is None or not specified"
                                .into(),
                        ));
                    }
                }
                other => errs.push((at, unsupported(other, &["Disabled", "Enabled", "IfPossible"]))),
            }
        }
    }
    errs
}

/// `ValidateVolumeDevices`: each of a pod's claims (or ephemeral volumes), named and placed
/// once, without backsteps, apart from the mounts.
fn volume_devices(c: &Value, field: &str, ctx: &PodContext) -> Vec<FieldError> {
    let mounts: HashMap<&str, &str> =
        list(c, "volumeMounts").iter().map(|m| (str_of(m, "name"), str_of(m, "mountPath"))).collect();
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    let mut paths = HashSet::new();
    for (i, d) in list(c, "volumeDevices").iter().enumerate() {
        let at = format!("{field}[{i}]");
        let name = str_of(d, "name");
        let path = str_of(d, "devicePath");
        let volume = ctx.volumes.get(name);
        if name.is_empty() {
            errs.push((format!("{at}.name"), "Required value".into()));
        }
        if names.contains(name) {
            errs.push((format!("{at}.name"), invalid(name, "must be unique")));
        }
        match volume {
            Some(v) if !has(v, "persistentVolumeClaim") && !has(v, "ephemeral") => errs.push((
                format!("{at}.name"),
                invalid(
                    name,
                    "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                ),
            )),
            Some(_) => {}
            None => errs.push((format!("{at}.name"), format!("Not found: {}", go_quote(name)))),
        }
        if path.is_empty() {
            errs.push((format!("{at}.devicePath"), "Required value".into()));
        }
        if paths.contains(path) {
            errs.push((format!("{at}.devicePath"), invalid(path, "must be unique")));
        }
        if !path.is_empty() && path.split('/').any(|p| p == "..") {
            errs.push((format!("{at}.devicePath"), invalid(path, "can not contain backsteps ('..')")));
        } else {
            paths.insert(path);
        }
        if mounts.contains_key(name) {
            errs.push((format!("{at}.name"), invalid(name, "must not already exist in volumeMounts")));
        }
        if mounts.values().any(|p| *p == path) {
            errs.push((
                format!("{at}.devicePath"),
                invalid(path, "must not already exist as a path in volumeMounts"),
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
    errs
}

/// A quantity written as a string or a JSON number.
fn quantity(v: &Value) -> Option<Quantity> {
    let text = v.as_str().map(str::to_owned).or_else(|| v.as_number().map(ToString::to_string))?;
    Quantity::parse(&text).ok()
}

/// The page size a `hugepages-<size>` resource names, in bytes.
fn huge_page_size(name: &str) -> Option<f64> {
    Some(Quantity::parse(name.strip_prefix("hugepages-")?).ok()?.to_f64())
}

/// `validateResourceQuantityHugePageValue`: a whole number of pages.
fn huge_pages_errors(name: &str, q: Quantity, field: &str) -> Vec<FieldError> {
    let divisible = huge_page_size(name).is_some_and(|page| {
        let value = q.ceil().to_f64();
        page > 0.0 && page.fract() == 0.0 && value % page == 0.0
    });
    if divisible {
        return Vec::new();
    }
    vec![(
        field.to_owned(),
        invalid(&q.to_string(), &format!("{q} is not positive integer multiple of {name}")),
    )]
}

/// `ValidateContainerResourceRequirements`: names and quantities of limits, then requests
/// (at most their limit; equal to it when not overcommitable), and cpu or memory beside huge
/// pages.
pub(crate) fn resources(r: &Value, field: &str) -> Vec<FieldError> {
    let empty = Map::new();
    let limits = r.get("limits").and_then(Value::as_object).unwrap_or(&empty);
    let requests = r.get("requests").and_then(Value::as_object).unwrap_or(&empty);
    let mut errs = Vec::new();
    let (mut cpu_or_memory, mut huge) = (false, false);
    // Upstream walks Go maps; the names are taken in order here.
    let sorted = |m: &'_ Map<String, Value>| m.keys().cloned().collect::<BTreeSet<String>>();
    for name in sorted(limits) {
        let at = format!("{field}.limits[{name}]");
        errs.extend(resource_name::container_resource_errors(&name, &at));
        let Some(q) = quantity(&limits[&name]) else { continue };
        errs.extend(resource_name::quantity_value_errors(&name, q, &at));
        if resource_name::is_huge_pages(&name) {
            huge = true;
            errs.extend(huge_pages_errors(&name, q, &at));
        }
        cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
    }
    for name in sorted(requests) {
        let at = format!("{field}.requests[{name}]");
        errs.extend(resource_name::container_resource_errors(&name, &at));
        let Some(q) = quantity(&requests[&name]) else { continue };
        errs.extend(resource_name::quantity_value_errors(&name, q, &at));
        let overcommit = resource_name::overcommit_allowed(&name);
        match limits.get(&name).and_then(quantity) {
            Some(limit) if q != limit && !overcommit => errs.push((
                format!("{field}.requests"),
                invalid(&q.to_string(), &format!("must be equal to {name} limit of {limit}")),
            )),
            Some(limit) if q > limit => errs.push((
                format!("{field}.requests"),
                invalid(&q.to_string(), &format!("must be less than or equal to {name} limit of {limit}")),
            )),
            Some(_) => {}
            None if !overcommit => errs.push((
                format!("{field}.limits"),
                "Required value: Limit must be set for non overcommitable resources".into(),
            )),
            None => {}
        }
        if resource_name::is_huge_pages(&name) {
            huge = true;
            errs.extend(huge_pages_errors(&name, q, &at));
        }
        cpu_or_memory |= matches!(name.as_str(), "cpu" | "memory");
    }
    if huge && !cpu_or_memory {
        errs.push((field.to_owned(), "Forbidden: HugePages require cpu or memory".into()));
    }
    errs
}

/// `ValidateSecurityContext` of a container: ids in range, seccomp and AppArmor profiles, no
/// privilege escalation refused beside privileges that need it, Windows options.
fn security_context(sc: &Value, field: &str) -> Vec<FieldError> {
    if !sc.is_object() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    for id in ["runAsUser", "runAsGroup"] {
        if let Some(n) = sc.get(id).and_then(Value::as_i64)
            && !(0..=4_294_967_295).contains(&n)
        {
            errs.push((
                format!("{field}.{id}"),
                format!("Invalid value: {n}: must be between 0 and 4294967295, inclusive"),
            ));
        }
    }
    errs.extend(seccomp_profile(
        sc.get("seccompProfile").unwrap_or(&Value::Null),
        &format!("{field}.seccompProfile"),
    ));
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        // Upstream prints the whole security context (Go's `%#v`, pointers as addresses).
        let printed = "core.SecurityContext{...}";
        if sc.get("privileged").and_then(Value::as_bool) == Some(true) {
            errs.push((
                field.to_owned(),
                format!("Invalid value: {printed}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
            ));
        }
        for cap in list(sc.get("capabilities").unwrap_or(&Value::Null), "add") {
            if cap.as_str() == Some("CAP_SYS_ADMIN") {
                errs.push((
                    field.to_owned(),
                    format!("Invalid value: {printed}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"),
                ));
            }
        }
    }
    errs.extend(windows_options(
        sc.get("windowsOptions").unwrap_or(&Value::Null),
        &format!("{field}.windowsOptions"),
    ));
    errs.extend(app_armor_profile(
        sc.get("appArmorProfile").unwrap_or(&Value::Null),
        &format!("{field}.appArmorProfile"),
    ));
    errs
}

const PROFILE_TYPES: [&str; 3] = ["Localhost", "RuntimeDefault", "Unconfined"];

/// `validateSeccompProfileField`: a known type; a relative local profile exactly when the type
/// is `Localhost`.
pub(super) fn seccomp_profile(sp: &Value, field: &str) -> Vec<FieldError> {
    if !sp.is_object() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let ty = str_of(sp, "type");
    match ty {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push((
            format!("{field}.type"),
            "Required value: type is required when seccompProfile is set".into(),
        )),
        other => errs.push((format!("{field}.type"), unsupported(other, &PROFILE_TYPES))),
    }
    let local = sp.get("localhostProfile").and_then(Value::as_str);
    if ty == "Localhost" {
        match local {
            None => errs.push((
                format!("{field}.localhostProfile"),
                "Required value: must be set when seccomp type is Localhost".into(),
            )),
            Some(p) => errs.extend(local_descending_path(p, &format!("{field}.localhostProfile"))),
        }
    } else if local.is_some() {
        // Upstream prints the profile with Go's `%#v`, its pointer as an address.
        errs.push((
            format!("{field}.localhostProfile"),
            format!(
                "Invalid value: core.SeccompProfile{{Type:{}, LocalhostProfile:(*string)(0x...)}}: can only be set when seccomp type is Localhost",
                go_quote(ty)
            ),
        ));
    }
    errs
}

/// `validateWindowsSecurityContextOptions`: a credential spec's name a subdomain, the spec
/// and the user name not empty, the user name with one backslash at most.
fn windows_options(w: &Value, field: &str) -> Vec<FieldError> {
    if !w.is_object() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if let Some(name) = w.get("gmsaCredentialSpecName").and_then(Value::as_str) {
        errs.extend(
            subdomain_errors(name)
                .iter()
                .map(|m| (format!("{field}.gmsaCredentialSpecName"), invalid(name, m))),
        );
    }
    if let Some(spec) = w.get("gmsaCredentialSpec").and_then(Value::as_str) {
        if spec.is_empty() {
            errs.push((
                format!("{field}.gmsaCredentialSpec"),
                invalid(spec, "gmsaCredentialSpec cannot be an empty string"),
            ));
        } else if spec.len() > 64 * 1024 {
            errs.push((
                format!("{field}.gmsaCredentialSpec"),
                invalid(spec, "gmsaCredentialSpec size must be under 64 KiB"),
            ));
        }
    }
    if let Some(user) = w.get("runAsUserName").and_then(Value::as_str) {
        let at = format!("{field}.runAsUserName");
        if user.is_empty() {
            errs.push((at, invalid(user, "runAsUserName cannot be an empty string")));
        } else if user.chars().any(char::is_control) {
            errs.push((at, invalid(user, "runAsUserName cannot contain control characters")));
        } else if user.split('\\').count() > 2 {
            errs.push((at, invalid(user, "runAsUserName cannot contain more than one backslash")));
        }
    }
    errs
}

/// `ValidateAppArmorProfileField`: a known type; an unpadded local profile exactly when the
/// type is `Localhost`.
pub(super) fn app_armor_profile(p: &Value, field: &str) -> Vec<FieldError> {
    if !p.is_object() {
        return Vec::new();
    }
    let local = p.get("localhostProfile").and_then(Value::as_str);
    let at = format!("{field}.localhostProfile");
    let mut errs = Vec::new();
    match str_of(p, "type") {
        "Localhost" => match local {
            None => errs.push((at, "Required value: must be set when AppArmor type is Localhost".into())),
            Some(l) => {
                if l.trim() != l {
                    errs.push((at.clone(), invalid(l, "must not be padded with whitespace")));
                } else if l.is_empty() {
                    errs.push((
                        at.clone(),
                        "Required value: must be set when AppArmor type is Localhost".into(),
                    ));
                }
                if l.len() > 4095 {
                    errs.push((at, "Too long: may not be more than 4095 bytes".into()));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = local {
                errs.push((at, invalid(l, "can only be set when AppArmor type is Localhost")));
            }
        }
        "" => errs.push((
            format!("{field}.type"),
            "Required value: type is required when appArmorProfile is set".into(),
        )),
        other => errs.push((format!("{field}.type"), unsupported(other, &PROFILE_TYPES))),
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A container as the server validates it: with the defaulted policies.
    fn container(name: &str, extra: &Value) -> Value {
        let mut c = json!({ "name": name, "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always" });
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    fn fields(errs: &[FieldError]) -> Vec<&str> {
        errs.iter().map(|e| e.0.as_str()).collect()
    }

    #[test]
    fn init_containers_check_their_host_ports_one_by_one_and_only_sidecars_probe() {
        let port = json!({ "ports": [{ "containerPort": 80, "hostPort": 8080, "protocol": "TCP" }] });
        let probe = json!({ "exec": { "command": ["true"] }, "successThreshold": 1 });
        let spec = json!({
            "containers": [container("web", &port)],
            "initContainers": [
                container("a", &port),
                container("b", &json!({ "restartPolicy": "Always", "livenessProbe": probe })),
                container("c", &json!({ "readinessProbe": probe })),
            ],
        });
        assert_eq!(fields(&validate(&spec, "spec")), ["spec.initContainers[2].readinessProbe"]);
    }

    #[test]
    fn a_field_ref_keys_annotations_lower_cased_and_refuses_other_paths() {
        let at = "f";
        let annotation = json!({ "apiVersion": "v1", "fieldPath": "metadata.annotations['Good.Key']" });
        assert!(object_field_selector(&annotation, &ENV_FIELD_PATHS, at).is_empty());
        let host = json!({ "apiVersion": "v1", "fieldPath": "spec.host" });
        assert!(object_field_selector(&host, &ENV_FIELD_PATHS, at).is_empty());
        let labels = json!({ "apiVersion": "v1", "fieldPath": "metadata.labels" });
        assert_eq!(fields(&object_field_selector(&labels, &ENV_FIELD_PATHS, at)), ["f.fieldPath"]);
    }

    #[test]
    fn huge_pages_count_whole_pages_beside_cpu_or_memory() {
        let ok = json!({ "limits": { "hugepages-2Mi": "4Mi", "memory": "1Gi" }, "requests": { "hugepages-2Mi": "4Mi" } });
        assert!(resources(&ok, "r").is_empty());
        let unequal = json!({ "limits": { "hugepages-2Mi": "4Mi", "cpu": "1" }, "requests": { "hugepages-2Mi": "2Mi" } });
        assert_eq!(
            resources(&unequal, "r")[0].1,
            "Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi"
        );
        let whole = json!({ "limits": { "example.com/gpu": "1" }, "requests": { "example.com/gpu": "1" } });
        assert!(resources(&whole, "r").is_empty());
    }
}
