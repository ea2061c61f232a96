//! `batch/v1` (upstream's `pkg/registry/batch`): Jobs and CronJobs.

use k8s_openapi::api::batch::v1 as batch;

use super::{ALL, resource};
use crate::kinds::workload;
use crate::resource::{BuiltIn, ResourceDef, Strategy, typed};
use crate::selector::LabelRefusal;

/// A Job's field label beyond the metadata (`status.successful`).
const JOB_FIELDS: &[(&str, &str)] = &[("status.successful", "/status/succeeded")];

/// What deleting a Job without a propagation policy warns of: its default policy orphans the pods
/// (`pkg/registry/batch/job/storage`).
const JOB_ORPHANS: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            categories: ALL,
            strategy: Strategy::BuiltIn(BuiltIn {
                default: crate::kinds::cron_job::default_cron_job,
                validate: crate::kinds::cron_job::validate_cron_job,
                pod_template: Some("/spec/jobTemplate/spec/template"),
                ..typed::<batch::CronJob>()
            }),
            ..resource!("batch", "v1", "cronjobs", "cronjob", "CronJob", ["cj"], namespaced: true)
        },
        ResourceDef {
            status_subresource: true,
            has_generation: true,
            categories: ALL,
            field_labels: JOB_FIELDS,
            strategy: Strategy::BuiltIn(BuiltIn {
                gc_policy: crate::resource::GcPolicy::OrphanDependents,
                orphaning_warning: Some(JOB_ORPHANS),
                update_validates_twice: true,
                prepare_create: crate::kinds::job::prepare_job,
                default: workload::default_job,
                validate: crate::kinds::job::validate_job,
                label_refusal: Some(LabelRefusal::NotSupportedFor("Job")),
                pod_template: Some("/spec/template"),
                ..typed::<batch::Job>()
            }),
            ..resource!("batch", "v1", "jobs", "job", "Job", [], namespaced: true)
        },
    ]
}
