//! The core group, `/api/v1` (upstream's `pkg/registry/core`).

use k8s_openapi::api::core::v1 as core;
use serde_json::{Value, json};

use super::{ALL, resource};
use crate::kinds::{configmap, endpoints, event, namespace, node, pod, secret, service, volume, workload};
use crate::resource::{
    Action, Answer, BuiltIn, Deletion, ResourceDef, Review, Run, ScalePaths, Strategy, typed,
};

/// The field labels of core v1 Events (what `kubectl describe` selects on).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject.kind", "/involvedObject/kind"),
    ("involvedObject.namespace", "/involvedObject/namespace"),
    ("involvedObject.name", "/involvedObject/name"),
    ("involvedObject.uid", "/involvedObject/uid"),
    ("involvedObject.apiVersion", "/involvedObject/apiVersion"),
    ("involvedObject.resourceVersion", "/involvedObject/resourceVersion"),
    ("involvedObject.fieldPath", "/involvedObject/fieldPath"),
    ("reason", "/reason"),
    ("reportingComponent", "/reportingComponent"),
    ("source", "/source/component"),
    ("type", "/type"),
];

/// A Namespace's field labels beyond `metadata.name` (`NamespaceToSelectableFields`:
/// `status.phase`, and `name`, kept for compatibility).
const NAMESPACE_FIELDS: &[(&str, &str)] = &[("status.phase", "/status/phase"), ("name", "/metadata/name")];

/// A Secret's field label beyond the metadata (`type`).
const SECRET_FIELDS: &[(&str, &str)] = &[("type", "/type")];

/// A Pod's field labels (`pkg/registry/core/pod/strategy.go`, `ToSelectableFields`): what
/// `kubectl drain` and the kubelet select pods by.
const POD_FIELDS: &[(&str, &str)] = &[
    ("spec.nodeName", "/spec/nodeName"),
    ("spec.restartPolicy", "/spec/restartPolicy"),
    ("spec.schedulerName", "/spec/schedulerName"),
    ("spec.serviceAccountName", "/spec/serviceAccountName"),
    ("spec.hostNetwork", "/spec/hostNetwork"),
    ("status.phase", "/status/phase"),
    ("status.podIP", "/status/podIP"),
    ("status.nominatedNodeName", "/status/nominatedNodeName"),
];

/// A Service's field labels beyond the metadata (`AddFieldLabelConversionsForService`, v1.31).
const SERVICE_FIELDS: &[(&str, &str)] = &[("spec.clusterIP", "/spec/clusterIP"), ("spec.type", "/spec/type")];

/// A Node's field label beyond the metadata (`spec.unschedulable`).
const NODE_FIELDS: &[(&str, &str)] = &[("spec.unschedulable", "/spec/unschedulable")];

/// A ReplicationController's field label beyond the metadata (`status.replicas`).
const RC_FIELDS: &[(&str, &str)] = &[("status.replicas", "/status/replicas")];

/// Where a ReplicationController's scale reads and writes (its selector is a plain map).
const RC_SCALE: ScalePaths = ScalePaths {
    spec_replicas: ".spec.replicas",
    status_replicas: ".status.replicas",
    label_selector: Some(".spec.selector"),
};

const POD_ACTIONS: &[Action] = &[
    Action { name: "binding", kind: ("", "v1", "Binding"), verbs: &["create"], run: Run::Bind },
    Action {
        name: "ephemeralcontainers",
        kind: ("", "v1", "Pod"),
        verbs: &["get", "patch", "update"],
        run: Run::Owns(&["/spec/ephemeralContainers"]),
    },
    Action { name: "eviction", kind: ("policy", "v1", "Eviction"), verbs: &["create"], run: Run::Evict },
    Action { name: "log", kind: ("", "v1", "Pod"), verbs: &["get"], run: Run::Log },
];

const NAMESPACE_ACTIONS: &[Action] = &[Action {
    name: "finalize",
    kind: ("", "v1", "Namespace"),
    verbs: &["update"],
    run: Run::Owns(&["/spec/finalizers"]),
}];

/// A Namespace's verbs: every stored kind's but `deletecollection` (its registry has none).
const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

const SERVICE_ACCOUNT_ACTIONS: &[Action] = &[Action {
    name: "token",
    kind: ("authentication.k8s.io", "v1", "TokenRequest"),
    verbs: &["create"],
    run: Run::Token,
}];

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                answer: Answer::Review(Review::Bind),
                ..typed::<core::Binding>()
            }),
            ..resource!("", "v1", "bindings", "binding", "Binding", [], namespaced: true)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                answer: Answer::Computed(component_statuses),
                deprecation: Some("v1 ComponentStatus is deprecated in v1.19+"),
                ..typed::<core::ComponentStatus>()
            }),
            ..resource!("", "v1", "componentstatuses", "componentstatus", "ComponentStatus", ["cs"], namespaced: false)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                validate: configmap::validate,
                ..typed::<core::ConfigMap>()
            }),
            ..resource!("", "v1", "configmaps", "configmap", "ConfigMap", ["cm"], namespaced: true)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                default: endpoints::default_endpoints,
                validate: endpoints::validate_endpoints,
                create_on_update: true,
                ..typed::<core::Endpoints>()
            }),
            ..resource!("", "v1", "endpoints", "endpoints", "Endpoints", ["ep"], namespaced: true)
        },
        ResourceDef {
            storage: "events",
            field_labels: EVENT_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_path_segment,
                metadata_order: crate::resource::MetadataOrder::AfterKind,
                gc_policy: crate::resource::GcPolicy::Unsupported,
                decode: event::decode_core,
                default: event::default_core,
                validate: event::validate_core,
                known: None,
                create_on_update: true,
                watch_cached: false,
                ..typed::<core::Event>()
            }),
            ..resource!("", "v1", "events", "event", "Event", ["ev"], namespaced: true)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                default: workload::default_limit_range,
                validate: crate::kinds::limitrange::validate,
                create_on_update: true,
                name_unnamed: Some(crate::object_meta::new_uid),
                read_by_admission: true,
                ..typed::<core::LimitRange>()
            }),
            ..resource!("", "v1", "limitranges", "limitrange", "LimitRange", ["limits"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            field_labels: NAMESPACE_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_label,
                returns_deleted_object: true,
                default: namespace::default,
                validate: namespace::validate,
                prepare_update: namespace::prepare_update,
                actions: NAMESPACE_ACTIONS,
                verbs: NAMESPACE_VERBS,
                create_keeps_status: true,
                deletion: Deletion::Terminating,
                read_by_admission: true,
                ..typed::<core::Namespace>()
            }),
            ..resource!("", "v1", "namespaces", "namespace", "Namespace", ["ns"], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            field_labels: NODE_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: node::default,
                validate: node::validate,
                create_keeps_status: true,
                ..typed::<core::Node>()
            }),
            ..resource!("", "v1", "nodes", "node", "Node", ["no"], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                update_validates_twice: true,
                returns_deleted_object: true,
                default: volume::default_claim,
                validate: volume::validate_claim,
                ..typed::<core::PersistentVolumeClaim>()
            }),
            ..resource!("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", ["pvc"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                default: volume::default_volume,
                validate: volume::validate_volume,
                ..typed::<core::PersistentVolume>()
            }),
            ..resource!("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", ["pv"], namespaced: false)
        },
        ResourceDef {
            status_subresource: true,
            categories: ALL,
            field_labels: POD_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                default: pod::default,
                validate: pod::validate,
                actions: POD_ACTIONS,
                kubelet_streams: &["exec", "attach", "portforward"],
                deletion: Deletion::Graceful,
                ..typed::<core::Pod>()
            }),
            ..resource!("", "v1", "pods", "pod", "Pod", ["po"], namespaced: true)
        },
        ResourceDef {
            has_generation: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                default: workload::default_pod_template,
                validate: workload::validate_pod_template,
                generation_changes: workload::pod_template_generation,
                pod_template: Some("/template"),
                ..typed::<core::PodTemplate>()
            }),
            ..resource!("", "v1", "podtemplates", "podtemplate", "PodTemplate", [], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            scale: Some(RC_SCALE),
            has_generation: true,
            categories: ALL,
            field_labels: RC_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                gc_policy: crate::resource::GcPolicy::OrphanDependents,
                update_validates_twice: true,
                default: workload::default_replication_controller,
                validate: workload::validate_replication_controller,
                pod_template: Some("/spec/template"),
                ..typed::<core::ReplicationController>()
            }),
            ..resource!("", "v1", "replicationcontrollers", "replicationcontroller", "ReplicationController", ["rc"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                // Go writes the status struct, empty until the quota controller fills it.
                default: |quota| {
                    if quota.is_object() {
                        crate::object_meta::object_at(quota, "spec");
                        crate::object_meta::object_at(quota, "status");
                    }
                },
                validate: crate::kinds::quota::validate,
                read_by_admission: true,
                ..typed::<core::ResourceQuota>()
            }),
            ..resource!("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", ["quota"], namespaced: true)
        },
        ResourceDef {
            field_labels: SECRET_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: secret::default,
                validate: secret::validate,
                ..typed::<core::Secret>()
            }),
            ..resource!("", "v1", "secrets", "secret", "Secret", [], namespaced: true)
        },
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                returns_deleted_object: true,
                actions: SERVICE_ACCOUNT_ACTIONS,
                read_by_admission: true,
                ..typed::<core::ServiceAccount>()
            }),
            ..resource!("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", ["sa"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            categories: ALL,
            field_labels: SERVICE_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                name_rule: crate::metadata::check_dns1035,
                returns_deleted_object: true,
                default: service::default,
                prepare_update: service::prepare_update,
                validate: service::validate,
                create_on_update: true,
                ..typed::<core::Service>()
            }),
            ..resource!("", "v1", "services", "service", "Service", ["svc"], namespaced: true)
        },
    ]
}

/// The component statuses a v1.32 server reports (`kubectl get cs`): all healthy.
#[must_use]
fn component_statuses() -> Vec<Value> {
    ["controller-manager", "scheduler", "etcd-0"]
        .into_iter()
        .map(|name| {
            json!({ "kind": "ComponentStatus", "apiVersion": "v1", "metadata": { "name": name },
                    "conditions": [{ "type": "Healthy", "status": "True", "message": "ok" }] })
        })
        .collect()
}
