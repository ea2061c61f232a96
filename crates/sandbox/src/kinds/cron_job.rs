//! batch/v1 CronJobs (`validateCronJobSpec`, `ValidateCronJobCreate`): a schedule in cron
//! syntax ([`crate::kinds::cron`]), a time zone of the IANA database, a concurrency policy, a
//! Job template ([`crate::kinds::job`]) and history limits.

use serde_json::{Value, json};

use crate::kinds::workload::default_job_template;
use crate::label_rules::nonnegative;
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

/// batch/v1 CronJob defaults (`SetDefaults_CronJob`): concurrent runs allowed, not suspended,
/// three successful and one failed Job kept; the Job template's pod spec defaulted.
pub fn default_cron_job(cj: &mut Value) {
    if !cj.is_object() {
        return;
    }
    let spec = object_at(cj, "spec");
    set_default(spec, "concurrencyPolicy", json!("Allow"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "successfulJobsHistoryLimit", json!(3));
    set_default(spec, "failedJobsHistoryLimit", json!(1));
    object_at(&mut cj["spec"], "jobTemplate");
    object_at(&mut cj["spec"]["jobTemplate"], "metadata");
    object_at(&mut cj["spec"]["jobTemplate"], "spec");
    object_at(&mut cj["spec"]["jobTemplate"]["spec"], "template");
    default_job_template(&mut cj["spec"]["jobTemplate"]["spec"]["template"]);
    object_at(cj, "status");
}

/// batch/v1 CronJob validation: a schedule in cron syntax ([`crate::kinds::cron`]), a known
/// concurrency policy, and a Job template
/// whose pods restart `OnFailure` or `Never`.
pub fn validate_cron_job(cj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = cj.get("spec").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    match spec.get("schedule").and_then(Value::as_str) {
        None | Some("") => errs.push(("spec.schedule".into(), "Required value".into())),
        Some(s) => {
            if let Some(why) = crate::kinds::cron::schedule_error(s) {
                errs.push(("spec.schedule".into(), format!("Invalid value: {s:?}: {why}")));
            }
        }
    }
    errs.extend(nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds"));
    let zone = spec.get("timeZone").filter(|z| !z.is_null());
    if old.is_none_or(|o| o.pointer("/spec/timeZone").filter(|z| !z.is_null()) != zone) {
        errs.extend(zone.and_then(Value::as_str).map(time_zone_errors).unwrap_or_default());
    }
    match spec.get("concurrencyPolicy").and_then(Value::as_str) {
        None | Some("Allow" | "Forbid" | "Replace") => {}
        Some("") => errs.push(("spec.concurrencyPolicy".into(), "Required value".into())),
        Some(p) => errs.push((
            "spec.concurrencyPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"Allow\", \"Forbid\", \"Replace\""),
        )),
    }
    let template = spec.get("jobTemplate").cloned().unwrap_or_default();
    errs.extend(crate::kinds::job::template_spec_errors(&template, "spec.jobTemplate"));
    errs.extend(nonnegative(spec.get("successfulJobsHistoryLimit"), "spec.successfulJobsHistoryLimit"));
    errs.extend(nonnegative(spec.get("failedJobsHistoryLimit"), "spec.failedJobsHistoryLimit"));
    // `ValidateCronJobCreate`: the controller names its Jobs `<name>-<11 characters>`.
    let name = crate::object_meta::meta_str(cj, "name");
    if old.is_none() && name.len() > 52 {
        errs.push((
            "metadata.name".into(),
            format!("Invalid value: {name:?}: must be no more than 52 characters"),
        ));
    }
    errs
}

/// `validateTimeZone`: a CronJob's zone, when given, names a zone of the IANA database.
fn time_zone_errors(zone: &str) -> Vec<FieldError> {
    let invalid = |why: &str| vec![("spec.timeZone".to_owned(), format!("Invalid value: {zone:?}: {why}"))];
    if zone.is_empty() {
        return invalid("timeZone must be nil or non-empty string");
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
    };
    if !zone.split('/').all(part_ok) {
        return invalid(&format!("unknown time zone {zone}"));
    }
    if zone.eq_ignore_ascii_case("local") {
        return invalid(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
    if zone != "UTC" && jiff::tz::TimeZone::get(zone).is_err() {
        return invalid(&format!("unknown time zone {zone}"));
    }
    Vec::new()
}
