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

use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

mod containers;
mod ephemeral_update;
mod probes;
mod status;
mod update;
mod values;

pub(crate) use containers::resources as container_resources;

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
    for hook in ["postStart", "preStop"] {
        let handler = c.get_mut("lifecycle").and_then(|l| l.get_mut(hook)).and_then(|h| h.get_mut("httpGet"));
        if let Some(http) = handler.and_then(Value::as_object_mut) {
            set_default(http, "path", json!("/"));
            set_default(http, "scheme", json!("HTTP"));
        }
    }
    for env in c.get_mut("env").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(f) = env.pointer_mut("/valueFrom/fieldRef").and_then(Value::as_object_mut) {
            set_default(f, "apiVersion", json!("v1"));
        }
        if let Some(r) = env.pointer_mut("/valueFrom/resourceFieldRef").and_then(Value::as_object_mut) {
            volumes::default_divisor(r);
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
    for list in ["containers", "initContainers", "ephemeralContainers"] {
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
/// `spec.template.spec` of a workload): the containers of each kind ([`containers`]);
/// `restartPolicy` is one of the three, or only `allowed` in a template whose controller
/// restarts its pods itself.
pub fn validate_spec(spec: &Value, at: &str, restart_policies: &[&str]) -> Vec<FieldError> {
    validate_spec_of(spec, "", at, restart_policies)
}

/// [`validate_spec`] of a Pod's spec (`pod_name` its name) or a template's (`pod_name` empty),
/// in `ValidatePodSpec`'s order.
fn validate_spec_of(spec: &Value, pod_name: &str, at: &str, restart_policies: &[&str]) -> Vec<FieldError> {
    let mut errs = volumes::validate(spec, at, pod_name);
    errs.extend(containers::validate(spec, at));
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

/// Validates a v1 Pod (`ValidatePodCreate`'s rules: the spec's, then what only a Pod's
/// containers are held to); on an update, what it may change ([`update`]), and on a write of
/// its status (the only kind of update that changes it), the status' rules ([`status`]).
pub fn validate(pod: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = pod.get("spec").cloned().unwrap_or_default();
    let name = crate::object_meta::meta_str(pod, "name");
    let mut errs = annotations::validate(pod);
    errs.extend(validate_spec_of(&spec, name, "spec", &["Always", "OnFailure", "Never"]));
    errs.extend(volumes::pod_only(&spec));
    errs.extend(containers::only_for_pod(&spec));
    if old.is_none() {
        // `ValidatePodCreate`'s own checks.
        if spec.get("ephemeralContainers").and_then(Value::as_array).is_some_and(|e| !e.is_empty()) {
            errs.push(crate::field_errors::forbidden("spec.ephemeralContainers", "cannot be set on create"));
        }
        errs.extend(scheduling::gated_node_name(&spec));
        errs.extend(annotations::match_fields(pod));
    }
    if let Some(old) = old {
        errs.extend(update::validate(pod, old));
        errs.extend(ephemeral_update::validate(pod, old));
        if pod.get("status") != old.get("status") {
            errs.extend(status::validate(pod, old));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::update::POD_UPDATE_FORBIDDEN;
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
    fn a_resource_field_reference_gets_its_zero_divisor() {
        let r = json!({ "resource": "limits.cpu", "containerName": "c" });
        let mut pod = json!({ "spec": {
            "containers": [{ "name": "c", "image": "nginx", "env": [{ "name": "CPU", "valueFrom": { "resourceFieldRef": r } }] }],
            "volumes": [{ "name": "info", "downwardAPI": { "items": [{ "path": "cpu", "resourceFieldRef": r }] } }],
        } });
        default(&mut pod);
        assert_eq!(
            pod.pointer("/spec/containers/0/env/0/valueFrom/resourceFieldRef/divisor"),
            Some(&json!("0"))
        );
        assert_eq!(
            pod.pointer("/spec/volumes/0/downwardAPI/items/0/resourceFieldRef/divisor"),
            Some(&json!("0"))
        );
        assert!(validate(&pod, None).is_empty(), "{:?}", validate(&pod, None));
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
        assert_eq!(fields[..2], ["spec.containers[0].name", "spec.containers[0].image"]);
        assert_eq!(validate_spec(&json!({}), "spec", &["Always"])[0].0, "spec.containers");
    }
}
