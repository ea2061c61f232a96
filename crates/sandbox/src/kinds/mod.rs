//! Per-kind *strategies*, as upstream's `pkg/registry/<group>/<kind>/strategy.go` and the kind's
//! validation in `pkg/apis/<group>/validation`: one file per kind, named for it, holding what the
//! API server does to that kind's objects beyond the generic metadata rules.
//!
//! | module | kind |
//! |---|---|
//! | [`apiservice`] | apiregistration.k8s.io/v1 APIService: the name `<version>.<group>`, priorities, service vs local, status conditions |
//! | [`admission_match`] | what webhooks and admission policies match: rules, `matchResources`, `matchConditions` |
//! | [`admission_policy`] | ValidatingAdmissionPolicies and their bindings: defaults, the spec's and status's rules (CEL not compiled) |
//! | [`access_review`] | the access reviews and TokenReview: what their storages refuse before answering |
//! | [`autoscaler`] | HorizontalPodAutoscalers: v2 defaults and bounds, conversion to and from v1 |
//! | [`binding`] | v1 Binding: the target is a node, named (`ValidatePodBinding`, a 500) |
//! | [`configmap`] | v1 ConfigMap: key syntax, `data` vs `binaryData`, the 1 MiB total, `immutable` |
//! | [`crd`] | apiextensions.k8s.io/v1 CustomResourceDefinition: defaults, validation, the status its controllers keep |
//! | [`cron`] | a CronJob's schedule: the standard cron syntax, upstream's cron library's errors |
//! | [`cron_job`] | batch/v1 CronJob: schedule, time zone, concurrency policy, its Job template, history limits |
//! | [`csi`] | storage.k8s.io/v1 CSIDrivers (defaults), CSINodes, CSIStorageCapacities, VolumeAttachments |
//! | [`csr`] | CertificateSigningRequests: the requester, the PEM request, usages, signer, conditions, the issued certificate |
//! | [`custom`] | every custom resource: the one strategy a CRD version's structural schema drives |
//! | [`daemon_set`] | apps/v1 DaemonSet: selector and template, rolling update, status counts |
//! | [`deployment`] | apps/v1 Deployment: defaults, validation, selector immutability, the simulated rollout |
//! | [`disruption_budget`] | policy/v1 PodDisruptionBudget: spec and status rules |
//! | [`endpoints`] | Endpoints and EndpointSlices: addresses of their type, ports in range |
//! | [`event`] | Events in both APIs: the legacy rules for core/v1, the strict ones for events.k8s.io/v1 |
//! | [`flow_control`] | flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations: v1 defaults, rules, subjects, queuing |
//! | [`job`] | batch/v1 Job: counts, completion modes, failure and success policies, the generated selector, update and status rules |
//! | [`lease`] | Lease: duration and transitions ranges, `MicroTime` (six digits, stored in UTC) |
//! | [`limitrange`] | v1 LimitRange: limit types, resource names, min ≤ default request ≤ default ≤ max, ratios |
//! | [`namespace`] | v1 Namespace: phase, finalizer, the `kubernetes.io/metadata.name` label |
//! | [`network`] | Ingresses (path types, backends), IngressClasses (controller), NetworkPolicies (policy types) |
//! | [`node`] | v1 Node: allocatable from capacity, taints |
//! | [`pod`] | v1 Pod and every template's pod spec: defaults, admission's additions, the rules, immutability |
//! | [`pod_template`] | the pod template every workload holds: labels, annotations, pod spec |
//! | [`quota`] | v1 ResourceQuota: resource names, integer counts, scopes and scope selectors, scopes immutable |
//! | [`priority`] | PriorityClasses: the system classes, reserved names, the user maximum |
//! | [`pv_source`] | a PersistentVolume's spec: access modes, capacity, node affinity, its one volume source |
//! | [`runtime_class`] | node.k8s.io/v1 RuntimeClass: handler, pod overhead, scheduling constraints |
//! | [`rbac`] | Roles and bindings: a binding's `roleRef` is immutable (no RBAC is enforced) |
//! | [`secret`] | v1 Secret: `stringData` folded into `data`, key syntax, the 1 MiB total, `immutable`, `type` |
//! | [`service`] | v1 Service: cluster IP and port defaults, port rules, `clusterIP` immutable |
//! | [`service_allocation`] | what a Service holds of the service IP and node-port ranges; what a write is given or refused |
//! | [`stateful_set`] | apps/v1 StatefulSet: pod management, update strategy, claim templates, what an update may change, status counts |
//! | [`token_request`] | authentication.k8s.io/v1 TokenRequest: the account's name, the token's life |
//! | [`volume`] | PersistentVolumeClaims, PersistentVolumes, StorageClasses |
//! | [`webhook_client`] | a webhook's `clientConfig`: an `https` URL as Go parses it, or a Service |
//! | [`webhook_configuration`] | Mutating and Validating webhook configurations: defaults, each webhook's rules, what an update lets stay |
//! | [`workload`] | the workload kinds' shared rules; ReplicaSets, ReplicationControllers, ControllerRevisions |
//!
//! Kinds with no module here (ServiceAccount, …) are checked only for their shape,
//! from their k8s-openapi type (see [`crate::catalog`]).

pub mod access_review;
pub mod admission_match;
pub mod admission_policy;
pub mod apiservice;
pub mod autoscaler;
pub mod binding;
pub mod configmap;
pub mod crd;
pub mod cron;
pub mod cron_job;
pub mod csi;
pub mod csr;
pub mod custom;
pub mod daemon_set;
pub mod deployment;
pub mod disruption_budget;
pub mod endpoints;
pub mod event;
pub mod flow_control;
pub mod job;
pub mod lease;
pub mod limitrange;
pub mod namespace;
pub mod network;
pub mod node;
pub mod pod;
pub mod pod_template;
pub mod priority;
pub mod pv_source;
pub mod quota;
pub mod rbac;
pub mod runtime_class;
pub mod secret;
pub mod service;
pub(crate) mod service_allocation;
pub mod stateful_set;
pub mod token_request;
pub mod volume;
pub mod webhook_client;
pub mod webhook_configuration;
pub mod workload;

/// Checks that `obj` decodes as the k8s-openapi type `K`; the error names the field.
///
/// # Errors
///
/// The decode error, e.g. `spec.ports[0].port: invalid type: string "x", expected i32`.
pub fn decode_as<K: serde::de::DeserializeOwned>(obj: &serde_json::Value) -> Result<(), String> {
    serde_path_to_error::deserialize::<_, K>(obj).map(drop).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })
}

/// The largest total of a ConfigMap's or a Secret's values (`core.MaxSecretSize`).
pub const MAX_SIZE: usize = 1024 * 1024;

const KEY_MESSAGE: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// Why `key` is not a valid ConfigMap or Secret key (`validation.IsConfigMapKey`), in upstream's
/// order and words; empty when it is.
#[must_use]
pub fn key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')) {
        errs.push(KEY_MESSAGE.to_owned());
    }
    match key {
        "." => errs.push("must not be '.'".to_owned()),
        ".." => errs.push("must not be '..'".to_owned()),
        k if k.starts_with("..") => errs.push("must not start with '..'".to_owned()),
        _ => {}
    }
    errs
}

/// The `Invalid value` cause for each bad key of the map at `field` (sorted by key: upstream walks
/// a Go map, in no fixed order).
pub(crate) fn bad_keys(
    map: Option<&serde_json::Map<String, serde_json::Value>>,
    field: &str,
) -> Vec<(String, String)> {
    let mut keys: Vec<&String> = map.map(|m| m.keys().collect()).unwrap_or_default();
    keys.sort();
    keys.into_iter()
        .flat_map(|k| {
            key_errors(k)
                .into_iter()
                .map(move |m| (format!("{field}[{k}]"), format!("Invalid value: {k:?}: {m}")))
        })
        .collect()
}

/// `Forbidden` causes for the fields of an `immutable: true` object that an update changes or
/// unsets (`ValidateConfigMapUpdate` / `ValidateSecretUpdate`).
pub(crate) fn immutable_errors(
    new: &serde_json::Value,
    old: &serde_json::Value,
    fields: &[&str],
) -> Vec<(String, String)> {
    const WHY: &str = "Forbidden: field is immutable when `immutable` is set";
    if old.get("immutable") != Some(&serde_json::Value::Bool(true)) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if new.get("immutable") != Some(&serde_json::Value::Bool(true)) {
        errs.push(("immutable".to_owned(), WHY.to_owned()));
    }
    for f in fields {
        if new.get(*f) != old.get(*f) {
            errs.push(((*f).to_owned(), WHY.to_owned()));
        }
    }
    errs
}

/// The bytes a map of base64 values holds once decoded (`binaryData`, a Secret's `data`).
pub(crate) fn decoded_size(map: Option<&serde_json::Map<String, serde_json::Value>>) -> usize {
    use base64::Engine;
    map.iter()
        .flat_map(|m| m.values())
        .filter_map(serde_json::Value::as_str)
        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).map_or(0, |b| b.len()))
        .sum()
}

/// The whole-object size cause, with 1.32's `TooLong` wording.
pub(crate) fn too_long(field: &str) -> (String, String) {
    (field.to_owned(), format!("Too long: may not be more than {MAX_SIZE} bytes"))
}

/// The generation rule of most kinds: a change of `spec`.
#[must_use]
pub fn spec_changed(new: &serde_json::Value, old: &serde_json::Value) -> bool {
    new.get("spec") != old.get("spec")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_is_config_map_key() {
        assert!(key_errors("settings.yaml").is_empty());
        assert!(key_errors("KEY_NAME-1").is_empty());
        assert_eq!(key_errors("a b"), [KEY_MESSAGE]);
        assert_eq!(key_errors(".."), ["must not be '..'"]);
        assert_eq!(key_errors("..x"), ["must not start with '..'"]);
        assert_eq!(key_errors(&"k".repeat(254)), ["must be no more than 253 characters"]);
        assert_eq!(key_errors("../x"), [KEY_MESSAGE, "must not start with '..'"]);
    }

    #[test]
    fn a_body_that_does_not_decode_names_its_field() {
        use k8s_openapi::api::rbac::v1::Role;
        use serde_json::json;
        let ok = json!({ "metadata": { "name": "r" }, "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"] }] });
        assert_eq!(decode_as::<Role>(&ok), Ok(()));
        let bad = json!({ "metadata": { "name": "r" }, "rules": [{ "verbs": "get" }] });
        let e = decode_as::<Role>(&bad).unwrap_err();
        assert!(e.starts_with("rules[0].verbs: invalid type: string"), "{e}");
    }
}
