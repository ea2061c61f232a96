//! `apps/v1` (upstream's `pkg/registry/apps`): the workload kinds.

use k8s_openapi::api::apps::v1 as apps;

use super::{ALL, resource};
use crate::kinds::{daemon_set, deployment, stateful_set, workload};
use crate::resource::{BuiltIn, ResourceDef, ScalePaths, Strategy, typed};

/// Where the scale of a Deployment, a ReplicaSet or a StatefulSet reads and writes.
const SCALE: ScalePaths = ScalePaths {
    spec_replicas: ".spec.replicas",
    status_replicas: ".status.replicas",
    label_selector: Some(".spec.selector"),
};

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            strategy: Strategy::BuiltIn(BuiltIn {
                validate: workload::validate_controller_revision,
                ..typed::<apps::ControllerRevision>()
            }),
            ..resource!("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision", [], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                update_validates_twice: true,
                prepare_create: daemon_set::prepare_daemon_set,
                default: daemon_set::default_daemon_set,
                validate: daemon_set::validate_daemon_set,
                pod_template: Some("/spec/template"),
                ..typed::<apps::DaemonSet>()
            }),
            ..resource!("apps", "v1", "daemonsets", "daemonset", "DaemonSet", ["ds"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            scale: Some(SCALE),
            has_generation: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: deployment::default,
                validate: deployment::validate,
                prepare_status_update: deployment::prepare_status_update,
                // Any shape reaches `deployment::validate`, which reads the fields it checks.
                decode: BuiltIn::PLAIN.decode,
                generation_changes: deployment::generation_changes,
                pod_template: Some("/spec/template"),
                ..typed::<apps::Deployment>()
            }),
            ..resource!("apps", "v1", "deployments", "deployment", "Deployment", ["deploy"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            scale: Some(SCALE),
            has_generation: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                update_validates_twice: true,
                default: workload::default_replica_set,
                validate: workload::validate_replica_set,
                pod_template: Some("/spec/template"),
                ..typed::<apps::ReplicaSet>()
            }),
            ..resource!("apps", "v1", "replicasets", "replicaset", "ReplicaSet", ["rs"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            scale: Some(SCALE),
            has_generation: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: stateful_set::default_stateful_set,
                validate: stateful_set::validate_stateful_set,
                // `ValidateStatefulSetName`: its pods' names and hostnames are `<name>-<ordinal>`.
                name_rule: crate::metadata::check_label,
                pod_template: Some("/spec/template"),
                ..typed::<apps::StatefulSet>()
            }),
            ..resource!("apps", "v1", "statefulsets", "statefulset", "StatefulSet", ["sts"], namespaced: true)
        },
    ]
}
