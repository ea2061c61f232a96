//! The CronJob controller: at each time its `schedule` names (in its `timeZone`, on the
//! simulation's clock) a CronJob makes a Job `<cronjob>-<minutes since the epoch>` from its
//! `jobTemplate`, within `startingDeadlineSeconds`; `concurrencyPolicy` decides what happens when
//! the last one still runs (`Allow`, `Forbid`: skip, `Replace`: delete it first). The status
//! keeps the running Jobs in `active`, `lastScheduleTime` and `lastSuccessfulTime`; finished
//! Jobs beyond `successfulJobsHistoryLimit` and `failedJobsHistoryLimit` are deleted.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::api::{Api, controller_ref};
use super::{Controller, Queue, Timers};
use crate::kinds::cron::Schedule;
use crate::object_meta::{is_deleting, meta_str};
use crate::store::{DeleteOptions, Propagation};

const SOURCE: &str = "cronjob-controller";
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

fn condition(job: &Value, kind: &str) -> Option<Value> {
    job.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
        .cloned()
}

/// Syncs each queued CronJob.
pub(crate) fn sync(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    super::api::sync_each(api, api.defs.cronjobs, queue, Controller::CronJob, |obj| {
        sync_one(api, obj, timers)
    });
}

fn sync_one(api: &Api<'_>, cj: &Value, timers: &mut Timers) -> Result<(), crate::ApiError> {
    let def = api.defs.cronjobs;
    let (ns, name) = (meta_str(cj, "namespace"), meta_str(cj, "name"));
    let now = api.clock.now();
    let mut jobs: Vec<Arc<Value>> = api.owned(api.defs.jobs, cj);
    jobs.sort_by_key(|j| meta_str(j, "creationTimestamp").to_owned());
    let mut status = cj.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));

    // `active` holds the Jobs that still run; a finished one is seen once.
    let mut active = Vec::new();
    for j in &jobs {
        if let Some(done) = condition(j, "Complete").or_else(|| condition(j, "Failed")) {
            let was_active =
                status["active"].as_array().is_some_and(|a| a.iter().any(|r| r["uid"] == meta_str(j, "uid")));
            if was_active {
                let kind = done["type"].as_str().unwrap_or("");
                api.event(
                    def,
                    cj,
                    false,
                    "SawCompletedJob",
                    &format!("Saw completed job: {}, condition: {kind}", meta_str(j, "name")),
                    SOURCE,
                );
            }
            if done["type"] == "Complete"
                && let Some(t) = j.pointer("/status/completionTime").and_then(Value::as_str)
                && status["lastSuccessfulTime"].as_str().is_none_or(|last| last < t)
            {
                status["lastSuccessfulTime"] = json!(t);
            }
        } else if !is_deleting(j) {
            active.push(Arc::clone(j));
        }
    }

    let tz = cj
        .pointer("/spec/timeZone")
        .and_then(Value::as_str)
        .and_then(|z| jiff::tz::TimeZone::get(z).ok())
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let schedule = Schedule::parse(cj.pointer("/spec/schedule").and_then(Value::as_str).unwrap_or(""));
    let suspended = cj.pointer("/spec/suspend") == Some(&Value::Bool(true));
    if let (Ok(schedule), false) = (&schedule, suspended) {
        let since = status["lastScheduleTime"]
            .as_str()
            .or_else(|| cj.pointer("/metadata/creationTimestamp").and_then(Value::as_str))
            .and_then(|t| t.parse::<Timestamp>().ok())
            .unwrap_or(now);
        // The latest time due, of at most 100 missed.
        let mut due = None;
        let mut t = since;
        for _ in 0..100 {
            match schedule.next_after(t, &tz) {
                Some(next) if next <= now => {
                    due = Some(next);
                    t = next;
                }
                _ => break,
            }
        }
        let deadline = cj.pointer("/spec/startingDeadlineSeconds").and_then(Value::as_i64);
        let too_late =
            |at: Timestamp| deadline.is_some_and(|d| now.duration_since(at) > SignedDuration::from_secs(d));
        if let Some(at) = due.filter(|at| !too_late(*at)) {
            let policy = cj.pointer("/spec/concurrencyPolicy").and_then(Value::as_str).unwrap_or("Allow");
            let skip = policy == "Forbid" && !active.is_empty();
            if policy == "Replace" {
                for j in active.drain(..) {
                    let opts = DeleteOptions {
                        propagation: Some(Propagation::Background),
                        uid: Some(meta_str(&j, "uid").to_owned()),
                        ..DeleteOptions::default()
                    };
                    api.store.delete(api.defs.jobs, ns, meta_str(&j, "name"), &opts)?;
                    api.event(
                        def,
                        cj,
                        false,
                        "SuccessfulDelete",
                        &format!("Deleted job {}", meta_str(&j, "name")),
                        SOURCE,
                    );
                }
            }
            if skip {
                api.event(
                    def,
                    cj,
                    false,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                    SOURCE,
                );
            } else {
                let job = new_job(api, cj, at);
                match api.create(api.defs.jobs, ns, job, "kube-controller-manager") {
                    Ok(made) => {
                        api.event(
                            def,
                            cj,
                            false,
                            "SuccessfulCreate",
                            &format!("Created job {}", meta_str(&made, "name")),
                            SOURCE,
                        );
                        active.push(Arc::new(made));
                    }
                    Err(e) if e.code == 409 => {}
                    Err(e) => {
                        api.event(
                            def,
                            cj,
                            true,
                            "FailedCreate",
                            &format!("Error creating job: {}", e.message),
                            SOURCE,
                        );
                        return Err(e);
                    }
                }
                status["lastScheduleTime"] = json!(crate::clock::seconds(at));
            }
        }
        if let Some(next) = schedule.next_after(now, &tz) {
            timers.at(next, Controller::CronJob, ns, name);
        }
    }
    let refs: Vec<Value> = active
        .iter()
        .map(|j| json!({ "apiVersion": "batch/v1", "kind": "Job", "name": meta_str(j, "name"), "namespace": ns, "uid": meta_str(j, "uid"), "resourceVersion": meta_str(j, "resourceVersion") }))
        .collect();
    match status.as_object_mut() {
        Some(s) if refs.is_empty() => {
            s.remove("active");
        }
        Some(s) => {
            s.insert("active".into(), json!(refs));
        }
        None => {}
    }
    api.write_status(def, cj, status, "kube-controller-manager")?;

    // History: the oldest finished Jobs beyond the limits go.
    for (kind, field, default) in
        [("Complete", "successfulJobsHistoryLimit", 3), ("Failed", "failedJobsHistoryLimit", 1)]
    {
        let limit =
            usize::try_from(cj.pointer(&format!("/spec/{field}")).and_then(Value::as_i64).unwrap_or(default))
                .unwrap_or(0);
        let done: Vec<&Arc<Value>> =
            jobs.iter().filter(|j| condition(j, kind).is_some() && !is_deleting(j)).collect();
        for j in done.iter().take(done.len().saturating_sub(limit)) {
            let opts = DeleteOptions {
                propagation: Some(Propagation::Background),
                uid: Some(meta_str(j, "uid").to_owned()),
                ..DeleteOptions::default()
            };
            if api.store.delete(api.defs.jobs, ns, meta_str(j, "name"), &opts).is_ok() {
                api.event(
                    def,
                    cj,
                    false,
                    "SuccessfulDelete",
                    &format!("Deleted job {}", meta_str(j, "name")),
                    SOURCE,
                );
            }
        }
    }
    Ok(())
}

/// The Job of the run scheduled at `at` (`getJobFromTemplate2`).
fn new_job(api: &Api<'_>, cj: &Value, at: Timestamp) -> Value {
    let template = cj.pointer("/spec/jobTemplate").cloned().unwrap_or_default();
    let minutes = at.as_second() / 60;
    let mut meta = json!({
        "name": format!("{}-{minutes}", meta_str(cj, "name")),
        "namespace": meta_str(cj, "namespace"),
        "ownerReferences": [controller_ref(api.defs.cronjobs, cj)],
    });
    let labels = template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
    if labels.as_object().is_some_and(|l| !l.is_empty()) {
        meta["labels"] = labels;
    }
    let mut annotations = template.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({}));
    annotations[SCHEDULED] = json!(crate::clock::seconds(at));
    meta["annotations"] = annotations;
    json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})) })
}
