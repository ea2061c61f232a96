//! v1 Pods, and the pod spec every workload's template holds: upstream's defaulting
//! (`pkg/apis/core/v1/defaults.go`: `SetDefaults_PodSpec`, `_Container`, `_Probe`, `_Volume`,
//! `_Pod`), the pod strategy's `PrepareForCreate` (phase `Pending`, the QoS class), and
//! `ValidatePodSpec` / `ValidatePodUpdate` in the rules a user meets first, in upstream's words.

mod annotations;
mod dns;
pub(crate) mod scheduling;
mod security;
mod volumes;

use serde_json::{Map, Value, json};

use crate::metadata::check_label;
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

/// A probe's defaults (`SetDefaults_Probe`).
fn default_probe(p: &mut Map<String, Value>) {
    set_default(p, "timeoutSeconds", json!(1));
    set_default(p, "periodSeconds", json!(10));
    set_default(p, "successThreshold", json!(1));
    set_default(p, "failureThreshold", json!(3));
    if let Some(http) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
        set_default(http, "path", json!("/"));
        set_default(http, "scheme", json!("HTTP"));
    }
}

/// A container's defaults (`SetDefaults_Container` and what it holds).
fn default_container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    // `:latest`, or no tag at all, is pulled every time.
    let tag_latest =
        image.rsplit('/').next().is_none_or(|last| !last.contains(':') || last.ends_with(":latest"));
    let pull = if tag_latest && !image.contains('@') { "Always" } else { "IfNotPresent" };
    set_default(c, "imagePullPolicy", json!(pull));
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    set_default(c, "resources", json!({}));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_probe(p);
        }
    }
    for env in c.get_mut("env").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(f) = env.pointer_mut("/valueFrom/fieldRef").and_then(Value::as_object_mut) {
            set_default(f, "apiVersion", json!("v1"));
        }
    }
}

/// A volume's defaults (`SetDefaults_Volume` and its sources'): no source is an `emptyDir`, the
/// projected files' mode is 0644, a hostPath's type is `""` (no check).
fn default_volume(v: &mut Map<String, Value>) {
    if v.keys().all(|k| k == "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_default(h, "type", json!(""));
    }
    for source in ["secret", "configMap", "projected", "downwardAPI"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            set_default(s, "defaultMode", json!(420));
        }
    }
    volumes::default_sources(v);
}

/// The defaults of a pod spec, in a Pod or a template (`SetDefaults_PodSpec`).
pub fn default_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    for list in ["containers", "initContainers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(c) = c.as_object_mut() {
                default_container(c);
            }
        }
    }
    for v in spec.get_mut("volumes").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(v) = v.as_object_mut() {
            default_volume(v);
        }
    }
}

/// The defaults of a template (`spec.template` of a workload), made an object if missing.
pub fn default_template(template: &mut Value) {
    default_spec(object_at(template, "spec"));
}

/// The defaults of a v1 Pod: its spec's, then what only a Pod gets (`SetDefaults_Pod`: service
/// links on, requests from limits), and the status a new pod starts with (the strategy's
/// `PrepareForCreate`: `Pending`, its QoS class). What admission adds on a create (the service
/// account, priority, tolerations) is the store's `admission` module's.
pub fn default(pod: &mut Value) {
    if !pod.is_object() {
        return;
    }
    let spec = object_at(pod, "spec");
    default_spec(spec);
    set_default(spec, "enableServiceLinks", json!(true));
    // On the host's network a port's host port is its container port (`defaultHostNetworkPorts`).
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for list in ["containers", "initContainers"] {
            let ports = spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten();
            for p in ports.filter_map(|c| c.get_mut("ports")).filter_map(Value::as_array_mut).flatten() {
                if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                    && let Some(cp) = p.get("containerPort").cloned()
                {
                    p["hostPort"] = cp;
                }
            }
        }
    }
    for c in spec.get_mut("containers").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(limits) = c.pointer("/resources/limits").and_then(Value::as_object).cloned() else {
            continue;
        };
        let requests = object_at(&mut c["resources"], "requests");
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
    let status = object_at(pod, "status");
    set_default(status, "phase", json!("Pending"));
    let qos = qos_class(&pod["spec"]);
    set_default(object_at(pod, "status"), "qosClass", json!(qos));
}

/// The pod's QoS class (`qos.GetPodQOS`): `Guaranteed` when every container's requests equal
/// its limits for both cpu and memory, `BestEffort` when none has any, else `Burstable`.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .collect();
    let of = |c: &Value, which: &str, r: &str| c.pointer(&format!("/resources/{which}/{r}")).cloned();
    let any = containers.iter().any(|c| {
        ["cpu", "memory"].iter().any(|r| of(c, "requests", r).is_some() || of(c, "limits", r).is_some())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        ["cpu", "memory"]
            .iter()
            .all(|r| of(c, "limits", r).is_some() && of(c, "limits", r) == of(c, "requests", r))
    });
    if guaranteed { "Guaranteed" } else { "Burstable" }
}

/// `ValidatePodSpec` in the rules a user meets first, under `at` (`spec` of a Pod,
/// `spec.template.spec` of a workload): containers are required, each named by a unique DNS
/// label and given an image; `restartPolicy` is one of the three, or only `allowed` in a
/// template whose controller restarts its pods itself.
pub fn validate_spec(spec: &Value, at: &str, restart_policies: &[&str]) -> Vec<FieldError> {
    validate_spec_of(spec, "", at, restart_policies)
}

/// [`validate_spec`] of a Pod's spec (`pod_name` its name) or a template's (`pod_name` empty),
/// in `ValidatePodSpec`'s order.
fn validate_spec_of(spec: &Value, pod_name: &str, at: &str, restart_policies: &[&str]) -> Vec<FieldError> {
    let mut errs = volumes::validate(spec, at, pod_name);
    let mut names = std::collections::HashSet::new();
    for list in ["containers", "initContainers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        if list == "containers" && containers.is_none_or(Vec::is_empty) {
            errs.push((format!("{at}.containers"), "Required value".into()));
        }
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let field = format!("{at}.{list}[{i}]");
            match c.get("name").and_then(Value::as_str).unwrap_or("") {
                "" => errs.push((format!("{field}.name"), "Required value".into())),
                n => {
                    if let Some(why) = check_label(n) {
                        errs.push((format!("{field}.name"), format!("Invalid value: {n:?}: {why}")));
                    }
                    if !names.insert(n.to_owned()) {
                        errs.push((format!("{field}.name"), format!("Duplicate value: {n:?}")));
                    }
                }
            }
            if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                errs.push((format!("{field}.image"), "Required value".into()));
            }
            errs.extend(resources_errors(c, &field));
        }
    }
    errs.extend(security::host_network_deps(spec, at, !pod_name.is_empty()));
    if let Some(p) = spec.get("restartPolicy").and_then(Value::as_str)
        && !restart_policies.contains(&p)
    {
        let supported: Vec<String> = restart_policies.iter().map(|p| format!("{p:?}")).collect();
        errs.push((
            format!("{at}.restartPolicy"),
            format!("Unsupported value: {p:?}: supported values: {}", supported.join(", ")),
        ));
    }
    errs.extend(dns::policy(spec, at));
    errs.extend(scheduling::node_selector(spec, at));
    errs.extend(security::pod_security_context(spec, at));
    errs.extend(scheduling::affinity(spec, at));
    errs.extend(dns::config(spec, at));
    errs.extend(scheduling::readiness_gates(spec, at));
    errs.extend(scheduling::scheduling_gates(spec, at));
    errs.extend(scheduling::topology_spread(spec, at));
    errs.extend(security::windows_host_process(spec, at));
    errs.extend(scheduling::node_name_and_deadline(spec, at));
    errs.extend(dns::host_names(spec, at));
    errs.extend(scheduling::spec_tolerations(spec, at));
    errs.extend(dns::host_aliases(spec, at));
    errs.extend(scheduling::classes(spec, at));
    errs.extend(scheduling::overhead(spec, at));
    errs.extend(security::os(spec, at));
    errs
}

/// A container's limits and requests (`ValidateResourceRequirements`): no quantity below zero,
/// each printed in its canonical form.
fn resources_errors(container: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for list in ["limits", "requests"] {
        let Some(map) = container.pointer(&format!("/resources/{list}")).and_then(Value::as_object) else {
            continue;
        };
        for (name, q) in map {
            // A quantity may be written as a JSON number too.
            let text = q.as_str().map(str::to_owned).or_else(|| q.as_number().map(ToString::to_string));
            let Some(q) = text.and_then(|t| crate::quantity::Quantity::parse(&t).ok()) else { continue };
            if q.is_negative() {
                errs.push((
                    format!("{field}.resources.{list}[{name}]"),
                    format!("Invalid value: {:?}: must be greater than or equal to 0", q.to_string()),
                ));
            }
        }
    }
    errs
}

/// What a Pod's spec may change in an update (`ValidatePodUpdate`): images, the active
/// deadline, added tolerations, and the scheduling gates; anything else is refused with
/// upstream's list.
const POD_UPDATE_FORBIDDEN: &str = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Validates a v1 Pod, and on update its spec's immutability.
pub fn validate(pod: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let name = crate::object_meta::meta_str(pod, "name");
    let mut errs = annotations::validate(pod);
    errs.extend(validate_spec_of(&spec, name, "spec", &["Always", "OnFailure", "Never"]));
    errs.extend(volumes::pod_only(&spec));
    if old.is_none() {
        // `ValidatePodCreate`'s own checks.
        if spec.get("ephemeralContainers").and_then(Value::as_array).is_some_and(|e| !e.is_empty()) {
            errs.push(crate::field_errors::forbidden("spec.ephemeralContainers", "cannot be set on create"));
        }
        errs.extend(scheduling::gated_node_name(&spec));
        errs.extend(annotations::match_fields(pod));
    }
    if let Some(old) = old {
        // `ValidateContainerUpdates`: a changed number of containers ends the update's checks.
        for list in ["containers", "initContainers"] {
            let count = |o: &Value| {
                o.get("spec").and_then(|s| s.get(list)).and_then(Value::as_array).map_or(0, Vec::len)
            };
            if count(pod) != count(old) {
                errs.push((
                    format!("spec.{list}"),
                    "Forbidden: pod updates may not add or remove containers".into(),
                ));
                return errs;
            }
        }
        // Compare with the mutable fields taken from the new spec.
        let mut before = old.get("spec").cloned().unwrap_or_default();
        for list in ["containers", "initContainers"] {
            let new_list = spec.get(list).and_then(Value::as_array);
            if let (Some(b), Some(n)) = (before.get_mut(list).and_then(Value::as_array_mut), new_list)
                && b.len() == n.len()
            {
                for (bc, nc) in b.iter_mut().zip(n) {
                    bc["image"] = nc.get("image").cloned().unwrap_or(Value::Null);
                }
            }
        }
        for field in [
            "activeDeadlineSeconds",
            "tolerations",
            "terminationGracePeriodSeconds",
            "schedulingGates",
            "ephemeralContainers",
        ] {
            match spec.get(field) {
                Some(v) => before[field] = v.clone(),
                None => {
                    if let Some(b) = before.as_object_mut() {
                        b.remove(field);
                    }
                }
            }
        }
        // `nodeName` is set once, by a binding.
        if old.pointer("/spec/nodeName").is_none_or(Value::is_null)
            && let Some(n) = spec.get("nodeName")
        {
            before["nodeName"] = n.clone();
        }
        if before != spec {
            errs.push(("spec".into(), POD_UPDATE_FORBIDDEN.into()));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_pod_gets_upstreams_defaults() {
        let mut pod = json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
        default(&mut pod);
        let spec = &pod["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["enableServiceLinks"], true);
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["status"], json!({ "phase": "Pending", "qosClass": "BestEffort" }));
        assert!(validate(&pod, None).is_empty());
    }

    #[test]
    fn qos_follows_requests_and_limits() {
        let both = json!({ "cpu": "1", "memory": "1Gi" });
        let guaranteed = json!({ "containers": [{ "resources": { "limits": both, "requests": both } }] });
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        let burstable = json!({ "containers": [{ "resources": { "requests": { "cpu": "1" } } }] });
        assert_eq!(qos_class(&burstable), "Burstable");
    }

    #[test]
    fn a_pod_spec_changes_only_where_upstream_allows() {
        let mut pod = json!({ "spec": { "containers": [{ "name": "c", "image": "a:1" }] } });
        default(&mut pod);
        let mut new = pod.clone();
        new["spec"]["containers"][0]["image"] = json!("a:2");
        assert!(validate(&new, Some(&pod)).is_empty());
        new["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(validate(&new, Some(&pod)), [("spec".to_owned(), POD_UPDATE_FORBIDDEN.to_owned())]);
    }

    #[test]
    fn a_spec_without_containers_or_images_names_them() {
        let errs = validate_spec(&json!({ "containers": [{ "name": "Bad" }] }), "spec", &["Always"]);
        let fields: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(fields, ["spec.containers[0].name", "spec.containers[0].image"]);
        assert_eq!(validate_spec(&json!({}), "spec", &["Always"])[0].0, "spec.containers");
    }
}
