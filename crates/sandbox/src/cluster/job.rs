//! The Job controller and the TTL-after-finished controller.
//!
//! A Job runs up to `parallelism` pods at once until `completions` of them have succeeded (or,
//! without `completions`, until one has and none is left running); with `completionMode: Indexed`
//! each pod has an index (`batch.kubernetes.io/job-completion-index`) and each index must succeed
//! once. Pods are counted as upstream counts them, through the `batch.kubernetes.io/job-tracking`
//! finalizer: a finished pod is added to `succeeded` or `failed`, then released. Failures past
//! `backoffLimit` fail the Job (`BackoffLimitExceeded`), as does running past
//! `activeDeadlineSeconds` (`DeadlineExceeded`); retries wait upstream's back-off (10 s doubling
//! to 6 min, on the clock). With `backoffLimitPerIndex` each index is retried on its own
//! (its pods' `job-index-failure-count`, a back-off per index) until it has failed that many
//! times more, then counted in `failedIndexes`: more than `maxFailedIndexes` fail the Job
//! (`MaxFailedIndexesExceeded`), as do failed indexes once every index is done
//! (`FailedIndexes`). A failed pod its `podFailurePolicy` matches (an exit code, a pod
//! condition) fails the Job (`FailJob`: `PodFailurePolicy`), its index (`FailIndex`), or is not
//! counted (`Ignore`). An indexed Job whose succeeded indexes meet a rule of its `successPolicy`
//! completes (`SuccessPolicy`). An ending Job gets v1.32's conditions — `SuccessCriteriaMet` or
//! `FailureTarget` at once, its running pods deleted, then `Complete` or `Failed` once none is
//! left — and, with `ttlSecondsAfterFinished`, is deleted once that has passed.

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::api::{Api, phase, pod_active, pod_ready, set_condition};
use super::controller_ref::{Claim, claim};
use super::replicaset::{pod_from_template, to_delete};
use super::{Controller, Queue, Timers, log_failure};
use crate::object_meta::{finalizers, is_deleting, meta_str};
use crate::store::{DeleteOptions, Propagation};

/// The finalizer that keeps a Job's pod until the Job has counted it.
pub(crate) const TRACKING: &str = "batch.kubernetes.io/job-tracking";
const INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// How often an index failed before its pod (with `backoffLimitPerIndex`).
const FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The variable an indexed pod's containers find their index in.
const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
const SOURCE: &str = "job-controller";

fn condition_true(job: &Value, kind: &str) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// Whether the Job has finished (`Complete` or `Failed`).
pub(crate) fn finished(job: &Value) -> bool {
    condition_true(job, "Complete") || condition_true(job, "Failed")
}

fn index_of(pod: &Value) -> Option<i64> {
    pod.pointer("/metadata/annotations")?.get(INDEX)?.as_str()?.parse().ok()
}

/// A pod's `job-index-failure-count` annotation (0 when missing or not a count).
fn failure_count(pod: &Value) -> i64 {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(FAILURE_COUNT))
        .and_then(Value::as_str)
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|n| (0..=i64::from(i32::MAX)).contains(n))
        .unwrap_or(0)
}

/// When a pod finished: its containers' latest `finishedAt`.
fn finished_at(pod: &Value) -> Option<Timestamp> {
    pod.pointer("/status/containerStatuses")?
        .as_array()?
        .iter()
        .filter_map(|c| c.pointer("/state/terminated/finishedAt")?.as_str()?.parse::<Timestamp>().ok())
        .max()
}

/// The pod failure back-off after `failures`: 10 s doubling with each, at most 6 min.
fn back_off(failures: i64) -> SignedDuration {
    let exp = u32::try_from(failures - 1).unwrap_or(0).min(6);
    SignedDuration::from_secs((10i64 << exp).min(360))
}

/// What a Job's `podFailurePolicy` makes of a failed pod (upstream's `matchPodFailurePolicy`):
/// the action of the first rule it matches (`FailJob`, `FailIndex`, `Ignore`, `Count`), with the
/// message a `FailJob` fails the Job with.
fn pod_failure_action(spec: &Value, pod: &Value) -> Option<(String, Option<String>)> {
    let rules = spec.pointer("/podFailurePolicy/rules")?.as_array()?;
    let statuses = |key: &str| pod.pointer(&format!("/status/{key}")).and_then(Value::as_array).cloned();
    let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
    rules.iter().enumerate().find_map(|(i, rule)| {
        let action = rule["action"].as_str()?.to_owned();
        let matched = if let Some(codes) = rule.get("onExitCodes").filter(|c| c.is_object()) {
            let values: Vec<i64> = codes["values"].as_array()?.iter().filter_map(Value::as_i64).collect();
            let matches = |code: i64| match codes["operator"].as_str() {
                Some("In") => values.contains(&code),
                Some("NotIn") => !values.contains(&code),
                _ => false,
            };
            let container = codes["containerName"].as_str();
            let found = [statuses("containerStatuses"), statuses("initContainerStatuses")]
                .into_iter()
                .flatten()
                .flatten()
                .find_map(|c| {
                    let code = c.pointer("/state/terminated/exitCode")?.as_i64()?;
                    let named = c["name"].as_str()?;
                    (code != 0 && container.is_none_or(|n| n == named) && matches(code))
                        .then(|| (named.to_owned(), code))
                })?;
            format!("Container {} for pod {ns}/{name} failed with exit code {} matching {action} rule at index {i}", found.0, found.1)
        } else {
            let patterns = rule["onPodConditions"].as_array()?;
            let found = statuses("conditions")?.into_iter().find(|c| {
                patterns.iter().any(|p| p["type"] == c["type"] && p["status"] == c["status"])
            })?;
            format!("Pod {ns}/{name} has condition {} matching {action} rule at index {i}", found["type"].as_str().unwrap_or(""))
        };
        match action.as_str() {
            "FailJob" => Some((action, Some(matched))),
            "FailIndex" | "Ignore" | "Count" => Some((action, None)),
            _ => None,
        }
    })
}

/// Upstream's `matchSuccessPolicy`: the message of the first rule the succeeded indexes meet —
/// all of its `succeededIndexes` (or `succeededCount` of them), or `succeededCount` indexes.
fn success_policy_met(spec: &Value, completions: i64, done: &BTreeSet<i64>) -> Option<String> {
    if done.is_empty() {
        return None;
    }
    let rules = spec.pointer("/successPolicy/rules")?.as_array()?;
    rules.iter().enumerate().find_map(|(i, rule)| {
        let count = rule["succeededCount"].as_i64();
        let met = match rule["succeededIndexes"].as_str() {
            Some(text) => {
                let wanted: BTreeSet<i64> =
                    parse_indexes(text).into_iter().filter(|ix| *ix < completions).collect();
                let have = i64::try_from(wanted.intersection(done).count()).unwrap_or(0);
                !wanted.is_empty()
                    && count.map_or(have == i64::try_from(wanted.len()).unwrap_or(0), |c| have >= c)
            }
            None => count.is_some_and(|c| i64::try_from(done.len()).unwrap_or(0) >= c),
        };
        met.then(|| format!("Matched rules at index {i}"))
    })
}

/// `completedIndexes` as a set, and back ("0-2,4").
fn parse_indexes(text: &str) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<i64>().ok()),
        }
    }
    out
}

fn format_indexes(set: &BTreeSet<i64>) -> String {
    let mut parts = Vec::new();
    let mut iter = set.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end = iter.next().unwrap_or(end);
        }
        // Upstream's `orderedIntervals.String`: a run of two is written as two.
        parts.push(match end - start {
            0 => start.to_string(),
            1 => format!("{start},{end}"),
            _ => format!("{start}-{end}"),
        });
    }
    parts.join(",")
}

/// Releases a pod from the Job's tracking finalizer.
fn release(api: &Api<'_>, pod: &Value) {
    let kept: Vec<String> = finalizers(pod).into_iter().filter(|f| f != TRACKING).collect();
    let mut copy = pod.clone();
    crate::object_meta::meta_mut(&mut copy).insert("finalizers".into(), json!(kept));
    if let Err(e) = api.update(api.defs.pods, copy, "kube-controller-manager") {
        log_failure(Controller::Job, meta_str(pod, "name"), &e);
    }
}

/// Syncs each queued Job.
pub(crate) fn sync(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    for (ns, name) in queue {
        match api.get(api.defs.jobs, ns, name) {
            Some(job) if !is_deleting(&job) => sync_one(api, &job, timers),
            // A Job gone (or going) leaves its pods' finalizers to be removed.
            _ => {
                for pod in api.list(api.defs.pods, Some(ns)) {
                    if super::controller(&pod) == Some(("Job", name.as_str()))
                        && finalizers(&pod).iter().any(|f| f == TRACKING)
                    {
                        release(api, &pod);
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_lines)]
fn sync_one(api: &Api<'_>, job: &Value, timers: &mut Timers) {
    let (ns, name) = (meta_str(job, "namespace"), meta_str(job, "name"));
    let now = api.clock.now();
    let stamp = api.clock.rfc3339();
    let selector = job.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    let how = Claim {
        def: api.defs.jobs,
        child: api.defs.pods,
        selector: &selector,
        considers: &|_| true,
        member: &|_| true,
        finalizer: Some(TRACKING),
    };
    let pods = claim(api, job, &how);
    let tracked = |p: &Value| finalizers(p).iter().any(|f| f == TRACKING);
    let spec = job.get("spec").cloned().unwrap_or_default();
    let indexed = spec["completionMode"] == "Indexed";
    let old = job.get("status").cloned().unwrap_or_else(|| json!({}));

    // Upstream's `isPodFailed`: a failed pod, or — unless only failed pods are replaced (the
    // `podReplacementPolicy` a pod failure policy defaults) — one deleted before it succeeded.
    let only_failed = match spec["podReplacementPolicy"].as_str() {
        Some(policy) => policy == "Failed",
        None => spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()),
    };
    let pod_failed =
        |p: &Value| phase(p) == "Failed" || (!only_failed && is_deleting(p) && phase(p) != "Succeeded");
    // Count the finished pods still held, then let them go.
    let newly: Vec<&Arc<Value>> =
        pods.iter().filter(|p| tracked(p) && (phase(p) == "Succeeded" || pod_failed(p))).collect();
    let mut succeeded = old["succeeded"].as_i64().unwrap_or(0);
    let mut failed = old["failed"].as_i64().unwrap_or(0);
    let mut done_indexes = parse_indexes(old["completedIndexes"].as_str().unwrap_or(""));
    // With `backoffLimitPerIndex`, an index whose pod failed that many times more is failed
    // for good (upstream's `isIndexFailed`), and `backoffLimit` is unlimited unless given.
    let per_index = spec["backoffLimitPerIndex"].as_i64().filter(|_| indexed);
    let mut failed_indexes = parse_indexes(old["failedIndexes"].as_str().unwrap_or(""));
    // The message of the first failed pod a `FailJob` rule matched.
    let mut fail_job: Option<String> = None;
    for p in &newly {
        if phase(p) == "Succeeded" {
            match index_of(p) {
                Some(i) if indexed => {
                    if done_indexes.insert(i) {
                        succeeded += 1;
                    }
                }
                _ => succeeded += 1,
            }
        } else {
            let (action, message) =
                pod_failure_action(&spec, p).unwrap_or_else(|| ("Count".to_owned(), None));
            if action == "Ignore" {
                continue;
            }
            failed += 1;
            if fail_job.is_none() {
                fail_job = message;
            }
            if let (Some(limit), Some(i)) = (per_index, index_of(p))
                && (action == "FailIndex" || failure_count(p) >= limit)
            {
                failed_indexes.insert(i);
            }
        }
    }
    let active: Vec<Arc<Value>> = pods.iter().filter(|p| pod_active(p)).cloned().collect();
    let terminating =
        pods.iter().filter(|p| is_deleting(p) && !matches!(phase(p), "Succeeded" | "Failed")).count();
    let ready = active.iter().filter(|p| pod_ready(p)).count();
    let completions = spec["completions"].as_i64();
    let parallelism = spec["parallelism"].as_i64().unwrap_or(1);
    let backoff_limit =
        spec["backoffLimit"].as_i64().unwrap_or(if per_index.is_some() { i64::from(i32::MAX) } else { 6 });
    let suspended = spec["suspend"] == json!(true);
    let started = old["startTime"].as_str().and_then(|t| t.parse::<Timestamp>().ok());
    let was_finished = finished(job);

    let mut conditions: Vec<Value> = old["conditions"].as_array().cloned().unwrap_or_default();
    let mut status = json!({});
    let mut ending: Option<(&str, String, String)> = None;
    let complete = match completions {
        Some(c) => succeeded >= c,
        None => succeeded > 0 && active.is_empty(),
    };
    // An ending already decided (its interim condition written) waits for its pods to go.
    let decided = conditions.iter().find_map(|c| {
        let outcome = match c["type"].as_str() {
            Some("SuccessCriteriaMet") => "Complete",
            Some("FailureTarget") => "Failed",
            _ => return None,
        };
        (c["status"] == "True").then(|| {
            let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
            (outcome, text("reason"), text("message"))
        })
    });
    let failure = |reason: &str, message: &str| Some(("Failed", reason.to_owned(), message.to_owned()));
    if !was_finished {
        if decided.is_some() {
            ending = decided.clone();
        } else if let Some(message) = fail_job {
            ending = Some(("Failed", "PodFailurePolicy".to_owned(), message));
        } else if failed > backoff_limit {
            ending = failure("BackoffLimitExceeded", "Job has reached the specified backoff limit");
        } else if let (Some(limit), Some(start)) = (spec["activeDeadlineSeconds"].as_i64(), started) {
            let due = start.saturating_add(SignedDuration::from_secs(limit)).unwrap_or(Timestamp::MAX);
            if due <= now {
                ending = failure("DeadlineExceeded", "Job was active longer than specified deadline");
            } else {
                timers.at(due, Controller::Job, ns, name);
            }
        }
        if let (None, Some(_), Some(c)) = (&ending, per_index, completions) {
            let total = i64::try_from(failed_indexes.len() + done_indexes.len()).unwrap_or(i64::MAX);
            if spec["maxFailedIndexes"]
                .as_i64()
                .is_some_and(|m| i64::try_from(failed_indexes.len()).unwrap_or(0) > m)
            {
                ending = failure(
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes",
                );
            } else if !failed_indexes.is_empty() && total >= c {
                ending = failure("FailedIndexes", "Job has failed indexes");
            }
        }
        if let (None, true, Some(c)) = (&ending, indexed, completions)
            && let Some(message) = success_policy_met(&spec, c, &done_indexes)
        {
            ending = Some(("Complete", "SuccessPolicy".to_owned(), message));
        }
        if ending.is_none() && complete {
            ending = Some((
                "Complete",
                "CompletionsReached".to_owned(),
                "Reached expected number of succeeded pods".to_owned(),
            ));
        }
    }
    let mut created = 0;
    if let Some((outcome, reason, message)) = &ending {
        for p in &active {
            let _ = api.delete(api.defs.pods, p, None);
        }
        // Upstream's v1.31 order: the interim condition first, the final one once no pod of
        // the Job runs or terminates.
        let target = if *outcome == "Complete" { "SuccessCriteriaMet" } else { "FailureTarget" };
        if decided.is_none() {
            set_condition(&mut conditions, target, true, reason, message, &stamp, false);
        }
        if active.is_empty() && terminating == 0 {
            set_condition(&mut conditions, outcome, true, reason, message, &stamp, false);
            if *outcome == "Complete" {
                status["completionTime"] = json!(stamp);
                api.event(api.defs.jobs, job, false, "Completed", "Job completed", SOURCE);
            } else {
                api.event(api.defs.jobs, job, true, reason, message, SOURCE);
            }
        }
        for c in &mut conditions {
            if (c["type"] == *outcome || c["type"] == target) && c["lastProbeTime"].is_null() {
                c["lastProbeTime"] = json!(stamp);
            }
        }
    } else if !was_finished && suspended {
        for p in &active {
            let _ = api.delete(api.defs.pods, p, None);
        }
        set_condition(&mut conditions, "Suspended", true, "JobSuspended", "Job suspended", &stamp, false);
    } else if !was_finished {
        if condition_true(job, "Suspended") {
            set_condition(&mut conditions, "Suspended", false, "JobResumed", "Job resumed", &stamp, false);
        }
        // How many should run: no more than parallelism, nor than completions still wanted.
        let left = completions.map_or(if succeeded > 0 { 0 } else { parallelism }, |c| c - succeeded);
        let want = usize::try_from(parallelism.min(left).max(0)).unwrap_or(0);
        // Per index, its failures so far and when it may run again; the Job's as a whole
        // otherwise.
        let retries = per_index.map(|_| index_retries(&pods));
        let backoff = if retries.is_some() { now } else { backoff_until(&pods, failed, now) };
        let skip: BTreeSet<i64> = done_indexes.union(&failed_indexes).copied().collect();
        if active.len() < want {
            if backoff > now {
                timers.at(backoff, Controller::Job, ns, name);
            } else {
                let how = Make { done: &skip, indexed, completions, retries: retries.as_ref(), now };
                let (made, wake) = create(api, job, &active, want - active.len(), &how);
                created = made;
                if let Some(at) = wake {
                    timers.at(at, Controller::Job, ns, name);
                }
            }
        } else if active.len() > want {
            for p in to_delete(active.clone(), active.len() - want) {
                if api.delete(api.defs.pods, &p, None).is_ok() {
                    api.event(
                        api.defs.jobs,
                        job,
                        false,
                        "SuccessfulDelete",
                        &format!("Deleted pod: {}", meta_str(&p, "name")),
                        SOURCE,
                    );
                }
            }
        }
    }
    let running = if ending.is_some() { 0 } else { active.len() + created };
    let terminating = if ending.is_some() { terminating + active.len() } else { terminating };
    let mut put = |field: &str, n: usize| {
        if n > 0 {
            status[field] = json!(n);
        }
    };
    put("active", running);
    for (field, n) in [("succeeded", succeeded), ("failed", failed)] {
        if n > 0 {
            status[field] = json!(n);
        }
    }
    status["ready"] = json!(if ending.is_some() { 0 } else { ready });
    status["terminating"] = json!(terminating);
    status["uncountedTerminatedPods"] = json!({});
    if indexed && !done_indexes.is_empty() {
        status["completedIndexes"] = json!(format_indexes(&done_indexes));
    }
    if per_index.is_some() {
        status["failedIndexes"] = json!(format_indexes(&failed_indexes));
    }
    match (started, suspended && !was_finished) {
        (Some(_), _) => status["startTime"] = old["startTime"].clone(),
        (None, false) => status["startTime"] = json!(stamp),
        (None, true) => {}
    }
    if let Some(t) = old.get("completionTime") {
        status["completionTime"] = t.clone();
    }
    if !conditions.is_empty() {
        status["conditions"] = json!(conditions);
    }
    if let Err(e) = api.write_status(api.defs.jobs, job, status, "kube-controller-manager") {
        log_failure(Controller::Job, name, &e);
        return;
    }
    for p in newly {
        release(api, p);
    }
    if ending.is_some() {
        timers.at(now, Controller::TtlAfterFinished, ns, name);
    }
}

/// Upstream's `addCompletionIndexEnvVariables`: each container and init container of an indexed
/// pod reads its index from the pod's label (`PodIndexLabel`, GA) as `JOB_COMPLETION_INDEX`,
/// unless it sets that variable itself.
fn with_index_env(spec: &mut Value) {
    let var = json!({ "name": INDEX_ENV, "valueFrom": { "fieldRef": {
        "fieldPath": format!("metadata.labels['{INDEX}']") } } });
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else { continue };
        for c in containers {
            let env = c.as_object_mut().map(|c| c.entry("env").or_insert_with(|| json!([])));
            if let Some(Value::Array(env)) = env
                && !env.iter().any(|e| e["name"] == INDEX_ENV)
            {
                env.push(var.clone());
            }
        }
    }
}

/// When the next pod may be made after `failed` failures: 10 s after the latest failure,
/// doubling with each, at most 6 min (upstream's pod failure back-off).
fn backoff_until(pods: &[Arc<Value>], failed: i64, now: Timestamp) -> Timestamp {
    if failed == 0 {
        return now;
    }
    let last = pods
        .iter()
        .filter(|p| phase(p) == "Failed")
        .filter_map(|p| {
            p.pointer("/status/containerStatuses")?
                .as_array()?
                .iter()
                .filter_map(|c| {
                    c.pointer("/state/terminated/finishedAt")?.as_str()?.parse::<Timestamp>().ok()
                })
                .max()
        })
        .max();
    let Some(last) = last else { return now };
    let exp = u32::try_from(failed - 1).unwrap_or(u32::MAX).min(6);
    let delay = (10i64 << exp).min(360);
    last.saturating_add(SignedDuration::from_secs(delay)).unwrap_or(now)
}

/// Per index that failed: how often (its latest pod's failure count, plus one) and when it may
/// run again (upstream's per-index back-off).
fn index_retries(pods: &[Arc<Value>]) -> std::collections::BTreeMap<i64, (i64, Timestamp)> {
    let mut out = std::collections::BTreeMap::new();
    for p in pods.iter().filter(|p| phase(p) == "Failed") {
        let (Some(i), Some(at)) = (index_of(p), finished_at(p)) else { continue };
        let failures = failure_count(p) + 1;
        let entry = out.entry(i).or_insert((0, at));
        if failures > entry.0 {
            *entry = (failures, at.saturating_add(back_off(failures)).unwrap_or(at));
        }
    }
    out
}

/// What pods `create` makes: for which indexes, and when each may run again.
struct Make<'a> {
    /// Indexes not to run again (succeeded, or failed for good).
    done: &'a BTreeSet<i64>,
    indexed: bool,
    completions: Option<i64>,
    /// With `backoffLimitPerIndex`: per index that failed, its failures and when it may run.
    retries: Option<&'a std::collections::BTreeMap<i64, (i64, Timestamp)>>,
    now: Timestamp,
}

/// Creates `count` pods (for the indexes not done nor running nor backing off, when indexed);
/// how many, and when an index backing off may run.
fn create(
    api: &Api<'_>,
    job: &Value,
    active: &[Arc<Value>],
    count: usize,
    how: &Make<'_>,
) -> (usize, Option<Timestamp>) {
    let Make { done, indexed, completions, retries, now } = *how;
    let template = job.pointer("/spec/template").cloned().unwrap_or_default();
    let name = meta_str(job, "name");
    let running: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
    let mut wake: Option<Timestamp> = None;
    let mut free = (0..completions.unwrap_or(0))
        .filter(|i| !done.contains(i) && !running.contains(i))
        .filter(|i| match retries.and_then(|r| r.get(i)) {
            Some((_, at)) if *at > now => {
                wake = Some(wake.map_or(*at, |w| w.min(*at)));
                false
            }
            _ => true,
        });
    let mut made = 0;
    for _ in 0..count {
        let index = if indexed {
            match free.next() {
                Some(i) => Some(i),
                None => break,
            }
        } else {
            None
        };
        let prefix = index.map_or_else(|| name.to_owned(), |i| format!("{name}-{i}"));
        let mut pod = pod_from_template(api.defs.jobs, job, &template, &prefix);
        let meta = crate::object_meta::meta_mut(&mut pod);
        let mut held = meta.get("finalizers").and_then(Value::as_array).cloned().unwrap_or_default();
        held.push(json!(TRACKING));
        meta.insert("finalizers".into(), json!(held));
        if let Some(i) = index {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            annotations[INDEX] = json!(i.to_string());
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            labels[INDEX] = json!(i.to_string());
            if let Some(retries) = retries {
                let failures = retries.get(&i).map_or(0, |(n, _)| *n);
                crate::object_meta::meta_mut(&mut pod).entry("annotations").or_insert_with(|| json!({}))
                    [FAILURE_COUNT] = json!(failures.to_string());
            }
            pod["spec"]["hostname"] = json!(format!("{name}-{i}"));
            with_index_env(&mut pod["spec"]);
        }
        match api.create(api.defs.pods, meta_str(job, "namespace"), pod, "kube-controller-manager") {
            Ok(created) => {
                made += 1;
                let msg = format!("Created pod: {}", meta_str(&created, "name"));
                api.event(api.defs.jobs, job, false, "SuccessfulCreate", &msg, SOURCE);
            }
            Err(e) => {
                api.event(
                    api.defs.jobs,
                    job,
                    true,
                    "FailedCreate",
                    &format!("Error creating: {}", e.message),
                    SOURCE,
                );
                break;
            }
        }
    }
    drop(free);
    (made, wake)
}

/// The TTL-after-finished controller: a finished Job with `ttlSecondsAfterFinished` is deleted
/// (in the foreground, its pods first) once that long has passed since it finished.
pub(crate) fn ttl(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    let now = api.clock.now();
    for (ns, name) in queue {
        let Some(job) = api.get(api.defs.jobs, ns, name) else { continue };
        let Some(ttl) = job.pointer("/spec/ttlSecondsAfterFinished").and_then(Value::as_i64) else {
            continue;
        };
        if !finished(&job) || is_deleting(&job) {
            continue;
        }
        let at = job
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
            })
            .and_then(|c| c["lastTransitionTime"].as_str())
            .and_then(|t| t.parse::<Timestamp>().ok())
            .unwrap_or(now);
        let due = at.saturating_add(SignedDuration::from_secs(ttl)).unwrap_or(Timestamp::MAX);
        if due > now {
            timers.at(due, Controller::TtlAfterFinished, ns, name);
            continue;
        }
        let opts = DeleteOptions {
            propagation: Some(Propagation::Foreground),
            uid: Some(meta_str(&job, "uid").to_owned()),
            ..DeleteOptions::default()
        };
        if let Err(e) = api.store.delete(api.defs.jobs, ns, name, &opts) {
            log_failure(Controller::TtlAfterFinished, name, &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_read_and_print_as_ranges() {
        let set = parse_indexes("0-2,4,6-7");
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), vec![0, 1, 2, 4, 6, 7]);
        // A run of two is printed as two indexes, as upstream prints it.
        assert_eq!(format_indexes(&set), "0-2,4,6,7");
        assert_eq!(format_indexes(&parse_indexes("0,1")), "0,1");
        assert_eq!(format_indexes(&BTreeSet::new()), "");
    }
}
