//! The workload kinds beside Deployments, each as its upstream strategy and validation in the
//! rules a user meets first: ReplicaSets and ReplicationControllers, StatefulSets, DaemonSets,
//! Jobs, CronJobs and PodTemplates. Their templates are defaulted and validated as pod specs
//! ([`crate::kinds::pod`]); their selectors must select their templates and are immutable; a
//! StatefulSet's and a Job's specs change only where upstream lets them. The rules Deployments
//! share with them (replicas, selectors, a rolling update's int-or-percent bounds) are here too.

use serde_json::{Value, json};

use crate::kinds::pod;
use crate::object_meta::{object_at, set_default};
use crate::selector::{selector_is_empty, selector_matches};
use crate::status::FieldError;

/// `spec.replicas`, when given, is a non-negative int32.
pub(crate) fn replicas_errors(spec: &Value) -> Vec<FieldError> {
    match spec.get("replicas") {
        Some(r) if r.as_i64().is_none_or(|n| !(0..=i64::from(i32::MAX)).contains(&n)) => {
            vec![("spec.replicas".into(), format!("Invalid value: {r}: must be greater than or equal to 0"))]
        }
        _ => Vec::new(),
    }
}

/// A `LabelSelector` selector: required, not empty, selecting the template's labels
/// (`ValidateReplicaSetSpec`, `ValidateStatefulSetSpec`, `ValidateDaemonSetSpec`; upstream's
/// words name the kind, and the ReplicaSet's say "deployment").
pub(crate) fn selector_errors(spec: &Value, kind: &str) -> Vec<FieldError> {
    let given = spec.pointer("/template/metadata/labels").and_then(Value::as_object);
    let labels = given.cloned().unwrap_or_default();
    // A missing selector is `labels.Nothing()`: it matches no template either. A DaemonSet's
    // validation does not require one first.
    let mismatch = || {
        (
            "spec.template.metadata.labels".to_owned(),
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                crate::go_print::go_string_map(given)
            ),
        )
    };
    match spec.get("selector").filter(|s| !s.is_null()) {
        None if kind == "daemonset" => vec![mismatch()],
        None => vec![("spec.selector".into(), "Required value".into()), mismatch()],
        Some(s) if selector_is_empty(s) => {
            vec![(
                "spec.selector".into(),
                format!(
                    "Invalid value: {}: empty selector is invalid for {kind}",
                    crate::go_print::go_label_selector(s)
                ),
            )]
        }
        Some(s) if !selector_matches(s, &labels) => vec![mismatch()],
        Some(_) => Vec::new(),
    }
}

/// The template's pod spec, validated with the restart policies the kind allows.
fn template_errors(spec: &Value, restart_policies: &[&str]) -> Vec<FieldError> {
    let template = spec.pointer("/template/spec").cloned().unwrap_or_default();
    pod::validate_spec(&template, "spec.template.spec", restart_policies)
}

/// `field is immutable` for each of `paths` (JSON pointers under the object) that an update
/// changes.
pub(crate) fn immutable(new: &Value, old: Option<&Value>, paths: &[(&str, &str)]) -> Vec<FieldError> {
    let Some(old) = old else { return Vec::new() };
    paths
        .iter()
        .filter(|(_, p)| new.pointer(p) != old.pointer(p))
        .map(|(field, p)| {
            let v = new.pointer(p).cloned().unwrap_or(Value::Null);
            // As `field.Invalid` prints it: nil as the string "null", a label selector as Go
            // prints the struct, anything else as its JSON.
            let shown = match &v {
                Value::Null => "\"null\"".to_owned(),
                Value::Object(_) if p.ends_with("/selector") => crate::go_print::go_label_selector(&v),
                _ => crate::go_print::go_json(&v),
            };
            ((*field).to_owned(), format!("Invalid value: {shown}: field is immutable"))
        })
        .collect()
}

/// Defaults every workload shares: one replica (where it has replicas), its template's.
fn default_workload(obj: &mut Value, replicas: bool) {
    if !obj.is_object() {
        return;
    }
    let spec = object_at(obj, "spec");
    if replicas {
        set_default(spec, "replicas", json!(1));
    }
    object_at(&mut obj["spec"], "template");
    pod::default_template(&mut obj["spec"]["template"]);
}

/// A Job template's defaults: a pod spec's, but no restart policy — a Job must say which of
/// `OnFailure` and `Never` it wants.
fn default_job_template(template: &mut Value) {
    let given = template.pointer("/spec/restartPolicy").cloned();
    pod::default_template(template);
    if given.is_none()
        && let Some(spec) = template.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("restartPolicy");
    }
}

/// The status fields Go writes even when zero (its status types' non-pointer integers): what a
/// new object's status reads before any controller has written it.
fn zero_status(obj: &mut Value, fields: &[&str]) {
    let status = object_at(obj, "status");
    for f in fields {
        status.entry(*f).or_insert(json!(0));
    }
}

/// policy/v1 PodDisruptionBudget (`ValidatePodDisruptionBudgetSpec`): `minAvailable` and
/// `maxUnavailable` not both set (the refusal prints the spec as Go's `%#v` does, its pointers
/// as addresses), each a non-negative integer or a percentage of at most 100%, and a known
/// `unhealthyPodEvictionPolicy`. Its strategy validates no metadata (see the store's order).
pub fn validate_disruption_budget(pdb: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = pdb.get("spec").cloned().unwrap_or_default();
    let given = |f: &str| spec.get(f).filter(|v| !v.is_null());
    let mut errs = Vec::new();
    if given("minAvailable").is_some() && given("maxUnavailable").is_some() {
        let pointer = |f: &str, ty: &str| {
            if given(f).is_some() { format!("(*{ty})(0xc000000000)") } else { format!("(*{ty})(nil)") }
        };
        errs.push((
            "spec".into(),
            format!(
                "Invalid value: policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, UnhealthyPodEvictionPolicy:{}}}: minAvailable and maxUnavailable cannot be both set",
                pointer("minAvailable", "intstr.IntOrString"),
                pointer("selector", "v1.LabelSelector"),
                pointer("maxUnavailable", "intstr.IntOrString"),
                pointer("unhealthyPodEvictionPolicy", "policy.UnhealthyPodEvictionPolicyType"),
            ),
        ));
    }
    for f in ["minAvailable", "maxUnavailable"] {
        if let Some(v) = given(f) {
            let at = format!("spec.{f}");
            errs.extend(positive_int_or_percent(v, &at));
            errs.extend(not_more_than_100_percent(v, &at));
        }
    }
    if let Some(p) = given("unhealthyPodEvictionPolicy").and_then(Value::as_str)
        && !matches!(p, "AlwaysAllow" | "IfHealthyBudget")
    {
        errs.push((
            "spec.unhealthyPodEvictionPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"AlwaysAllow\", \"IfHealthyBudget\""),
        ));
    }
    errs
}

/// A PodDisruptionBudget's status counts, zero until the disruption controller writes them.
pub fn default_disruption_budget(pdb: &mut Value) {
    if pdb.is_object() {
        object_at(pdb, "spec");
        zero_status(pdb, &["currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods"]);
    }
}

/// A LimitRange's defaults (`SetDefaults_LimitRangeItem`): a container's default limit is its
/// max where unset, its default request the default limit, else the min; `limits` is written
/// even when nil.
pub fn default_limit_range(range: &mut Value) {
    if !range.is_object() {
        return;
    }
    let spec = object_at(range, "spec");
    let limits = spec.entry("limits").or_insert(Value::Null);
    for item in limits.as_array_mut().into_iter().flatten().filter_map(Value::as_object_mut) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        for (into, from) in [("default", "max"), ("defaultRequest", "default"), ("defaultRequest", "min")] {
            let Some(source) = item.get(from).and_then(Value::as_object).cloned() else { continue };
            let target = item.entry(into).or_insert_with(|| json!({}));
            if let Some(t) = target.as_object_mut() {
                for (resource, amount) in source {
                    t.entry(resource).or_insert(amount);
                }
            }
        }
    }
}

/// `ValidateControllerRevision`: its data is required, its revision not negative.
pub fn validate_controller_revision(rev: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if rev.get("data").is_none_or(Value::is_null) {
        errs.push(("data".into(), "Required value: data is mandatory".into()));
    }
    if let Some(n) = rev.get("revision").and_then(Value::as_i64).filter(|n| *n < 0) {
        errs.push(("revision".into(), format!("Invalid value: {n}: must be greater than or equal to 0")));
    }
    errs
}

/// `spec.updateStrategy` of a StatefulSet or a DaemonSet: `RollingUpdate` unless said
/// otherwise, its `rollingUpdate` given `settings` where they are unset.
fn default_rolling_update(spec: &mut serde_json::Map<String, Value>, settings: &[(&str, Value)]) {
    let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    let Some(s) = strategy.as_object_mut() else { return };
    set_default(s, "type", json!("RollingUpdate"));
    if s["type"] == "RollingUpdate" {
        set_default(s, "rollingUpdate", json!({}));
        if let Some(r) = s["rollingUpdate"].as_object_mut() {
            for (k, v) in settings {
                set_default(r, k, v.clone());
            }
        }
    }
}

/// apps/v1 ReplicaSet defaults.
pub fn default_replica_set(rs: &mut Value) {
    default_workload(rs, true);
    zero_status(rs, &["replicas"]);
}

/// apps/v1 ReplicaSet validation.
pub fn validate_replica_set(rs: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = rs.get("spec").cloned().unwrap_or_default();
    let mut errs = replicas_errors(&spec);
    errs.extend(selector_errors(&spec, "deployment"));
    errs.extend(template_errors(&spec, &["Always"]));
    errs.extend(immutable(rs, old, &[("spec.selector", "/spec/selector")]));
    errs
}

/// v1 ReplicationController defaults: one replica, and a selector and labels from the
/// template's labels when they are not given (`SetDefaults_ReplicationController`).
pub fn default_replication_controller(rc: &mut Value) {
    // An RC's template is a pointer: absent stays absent (and is refused as required).
    if rc.pointer("/spec/template").is_none_or(Value::is_null) {
        if rc.is_object() {
            set_default(object_at(rc, "spec"), "replicas", json!(1));
            zero_status(rc, &["replicas"]);
        }
        return;
    }
    default_workload(rc, true);
    zero_status(rc, &["replicas"]);
    let labels = rc
        .pointer("/spec/template/metadata/labels")
        .cloned()
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()));
    if let Some(labels) = labels {
        let spec = object_at(rc, "spec");
        if spec.get("selector").is_none_or(|s| s.as_object().is_none_or(serde_json::Map::is_empty)) {
            spec.insert("selector".into(), labels.clone());
        }
        let meta = object_at(rc, "metadata");
        if meta.get("labels").is_none_or(|l| l.as_object().is_none_or(serde_json::Map::is_empty)) {
            meta.insert("labels".into(), labels);
        }
    }
}

/// v1 ReplicationController validation: its selector is a plain map that must select the
/// template's labels.
pub fn validate_replication_controller(rc: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = rc.get("spec").cloned().unwrap_or_default();
    let mut errs = replicas_errors(&spec);
    let selector = spec.get("selector").and_then(Value::as_object).cloned().unwrap_or_default();
    let labels =
        spec.pointer("/template/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    if selector.is_empty() {
        errs.push(("spec.selector".into(), "Required value".into()));
    } else if !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
        errs.push((
            "spec.template.metadata.labels".into(),
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                crate::go_print::go_string_map(Some(&labels))
            ),
        ));
    }
    // Without a template there is nothing more to check in it.
    if spec.get("template").is_none_or(Value::is_null) {
        errs.push(("spec.template".into(), "Required value".into()));
    } else {
        errs.extend(template_errors(&spec, &["Always"]));
    }
    errs
}

/// apps/v1 StatefulSet defaults (`SetDefaults_StatefulSet`): ordered pod management, rolling
/// updates from partition 0, ten revisions kept, claims retained, and each
/// `volumeClaimTemplate` a `v1` `PersistentVolumeClaim` with its claim defaults.
pub fn default_stateful_set(sts: &mut Value) {
    default_workload(sts, true);
    zero_status(sts, &["availableReplicas", "replicas"]);
    let spec = object_at(sts, "spec");
    set_default(spec, "podManagementPolicy", json!("OrderedReady"));
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(
        spec,
        "persistentVolumeClaimRetentionPolicy",
        json!({ "whenDeleted": "Retain", "whenScaled": "Retain" }),
    );
    default_rolling_update(spec, &[("partition", json!(0))]);
    for claim in spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(c) = claim.as_object_mut() {
            set_default(c, "apiVersion", json!("v1"));
            set_default(c, "kind", json!("PersistentVolumeClaim"));
        }
        crate::kinds::volume::default_claim(claim);
    }
}

/// What a StatefulSet's update may change (`ValidateStatefulSetUpdate`).
const STATEFUL_SET_UPDATE_FORBIDDEN: &str = "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

/// apps/v1 StatefulSet validation.
pub fn validate_stateful_set(sts: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = sts.get("spec").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    if let Some(policy) = spec.get("podManagementPolicy").and_then(Value::as_str)
        && !matches!(policy, "OrderedReady" | "Parallel")
    {
        errs.push((
            "spec.podManagementPolicy".into(),
            format!("Invalid value: {policy:?}: must be 'OrderedReady' or 'Parallel'"),
        ));
    }
    errs.extend(replicas_errors(&spec));
    errs.extend(selector_errors(&spec, "statefulset"));
    // Upstream (before v1.34) does not validate a StatefulSet's pod spec
    // (`ValidatePodTemplateSpecForStatefulSet`): only that its pods restart `Always` and have no
    // deadline.
    if let Some(p) = spec.pointer("/template/spec/restartPolicy").and_then(Value::as_str)
        && p != "Always"
    {
        errs.push((
            "spec.template.spec.restartPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"Always\""),
        ));
    }
    if spec.pointer("/template/spec/activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        errs.push((
            "spec.template.spec.activeDeadlineSeconds".into(),
            "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported".into(),
        ));
    }
    if let Some(old_spec) = old.and_then(|o| o.get("spec")) {
        let mutable = [
            "replicas",
            "ordinals",
            "template",
            "updateStrategy",
            "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds",
        ];
        let rest = |s: &Value| {
            let mut s = s.clone();
            if let Some(m) = s.as_object_mut() {
                m.retain(|k, _| !mutable.contains(&k.as_str()));
            }
            s
        };
        if rest(&spec) != rest(old_spec) {
            errs.push(("spec".into(), STATEFUL_SET_UPDATE_FORBIDDEN.into()));
        }
    }
    errs
}

/// apps/v1 DaemonSet defaults (`SetDefaults_DaemonSet`): rolling updates of one pod at a time,
/// ten revisions kept.
pub fn default_daemon_set(ds: &mut Value) {
    default_workload(ds, false);
    zero_status(
        ds,
        &["currentNumberScheduled", "desiredNumberScheduled", "numberMisscheduled", "numberReady"],
    );
    let spec = object_at(ds, "spec");
    set_default(spec, "revisionHistoryLimit", json!(10));
    default_rolling_update(spec, &[("maxUnavailable", json!(1)), ("maxSurge", json!(0))]);
}

/// The DaemonSet strategy's `PrepareForCreate`: the template's generation, 1, in the annotation
/// kubectl's rollout history reads.
pub fn prepare_daemon_set(ds: &mut Value) {
    let meta = crate::object_meta::meta_mut(ds);
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = annotations.as_object_mut() {
        a.insert("deprecated.daemonset.template.generation".into(), json!("1"));
    }
}

/// apps/v1 DaemonSet validation.
pub fn validate_daemon_set(ds: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = ds.get("spec").cloned().unwrap_or_default();
    let mut errs = selector_errors(&spec, "daemonset");
    errs.extend(template_errors(&spec, &["Always"]));
    errs.extend(immutable(ds, old, &[("spec.selector", "/spec/selector")]));
    errs
}

/// The labels a Job's pods carry and its generated selector matches (`generateSelector`).
const JOB_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";

/// A Job's generated selector and template labels (the Job strategy's `PrepareForCreate`,
/// without `manualSelector`): its pods are selected by the Job's uid.
pub fn prepare_job(job: &mut Value) {
    if job.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let uid = crate::object_meta::meta_str(job, "uid").to_owned();
    let name = crate::object_meta::meta_str(job, "name").to_owned();
    let spec = object_at(job, "spec");
    spec.insert("selector".into(), json!({ "matchLabels": { JOB_UID_LABEL: uid } }));
    object_at(&mut job["spec"], "template");
    let meta = object_at(&mut job["spec"]["template"], "metadata");
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        for (k, v) in [
            (JOB_UID_LABEL, &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            l.insert(k.into(), json!(v));
        }
    }
}

/// batch/v1 Job defaults (`SetDefaults_Job`): one completion at a time, six retries,
/// `NonIndexed`, pods replaced once they have failed, and a suspended flag.
pub fn default_job(job: &mut Value) {
    if !job.is_object() {
        return;
    }
    object_at(object_at(job, "spec").entry("template").or_insert_with(|| json!({})), "metadata");
    default_job_template(&mut job["spec"]["template"]);
    // A Job without labels takes its template's (`SetDefaults_Job`).
    let template_labels = job.pointer("/spec/template/metadata/labels").cloned();
    let meta = crate::object_meta::meta_mut(job);
    if meta.get("labels").is_none_or(|l| l.as_object().is_none_or(serde_json::Map::is_empty))
        && let Some(l) = template_labels
    {
        meta.insert("labels".into(), l);
    }
    object_at(job, "status");
    let spec = object_at(job, "spec");
    let parallelism_given = spec.get("parallelism").is_some_and(|p| !p.is_null());
    let completions_given = spec.get("completions").is_some_and(|p| !p.is_null());
    if !completions_given && !parallelism_given {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    set_default(spec, "backoffLimit", json!(6));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
}

/// A Job template's pod spec under `at`, a pod's rules first; then the Job's restart policy,
/// `OnFailure` or `Never` — `Always` (a pod spec's default) or none is called missing, as
/// upstream's `validateJobSpec` words it.
fn job_template_errors(template: &Value, at: &str) -> Vec<FieldError> {
    let spec = template.get("spec").cloned().unwrap_or_default();
    let mut errs = pod::validate_spec(&spec, &format!("{at}.spec"), &["Always", "OnFailure", "Never"]);
    match spec.get("restartPolicy").and_then(Value::as_str).unwrap_or("") {
        "" | "Always" => errs.push((
            format!("{at}.spec.restartPolicy"),
            "Required value: valid values: \"OnFailure\", \"Never\"".into(),
        )),
        "OnFailure" | "Never" => {}
        other => errs.push((
            format!("{at}.spec.restartPolicy"),
            format!("Unsupported value: {other:?}: supported values: \"OnFailure\", \"Never\""),
        )),
    }
    errs
}

/// batch/v1 Job validation: `restartPolicy` `OnFailure` or `Never`, counts non-negative, and
/// the selector and template immutable (`ValidateJobUpdate`).
pub fn validate_job(job: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = job.get("spec").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    for field in ["parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"] {
        if let Some(n) = spec.get(field).and_then(Value::as_i64)
            && n < 0
        {
            errs.push((
                format!("spec.{field}"),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    }
    errs.extend(job_template_errors(spec.get("template").unwrap_or(&Value::Null), "spec.template"));
    errs.extend(immutable(
        job,
        old,
        &[("spec.selector", "/spec/selector"), ("spec.template", "/spec/template")],
    ));
    errs
}

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
pub fn validate_cron_job(cj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
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
    if let Some(p) = spec.get("concurrencyPolicy").and_then(Value::as_str)
        && !matches!(p, "Allow" | "Forbid" | "Replace")
    {
        errs.push((
            "spec.concurrencyPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"Allow\", \"Forbid\", \"Replace\""),
        ));
    }
    let template = spec.pointer("/jobTemplate/spec/template").cloned().unwrap_or_default();
    errs.extend(job_template_errors(&template, "spec.jobTemplate.spec.template"));
    errs
}

/// v1 PodTemplate defaults: its template's.
pub fn default_pod_template(pt: &mut Value) {
    if pt.is_object() {
        object_at(pt, "template");
        pod::default_template(&mut pt["template"]);
    }
}

/// The PodTemplate strategy's rule for `metadata.generation`: a change of its template (it has
/// no spec).
#[must_use]
pub fn pod_template_generation(new: &Value, old: &Value) -> bool {
    new.get("template") != old.get("template")
}

/// v1 PodTemplate validation: its template is a pod spec.
pub fn validate_pod_template(pt: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let template = pt.pointer("/template/spec").cloned().unwrap_or_default();
    pod::validate_spec(&template, "template.spec", &["Always", "OnFailure", "Never"])
}

/// An `IntOrString` as Go's `%#v` prints it in a field error (`intstr.IntOrString` has no
/// value-receiver `String`, so `ErrorBody` falls back to the raw struct).
pub(crate) fn int_or_string_go(v: &Value) -> String {
    match v {
        Value::String(s) => {
            format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", crate::go_print::go_quote(s))
        }
        other => format!("intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}", other.as_i64().unwrap_or(0)),
    }
}

/// `validation.IsValidPercent`'s rule: digits, then `%`; the number when it holds.
fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`: a percentage's number, else `IntValue()` (a string that is not a
/// percentage reads as `strconv.Atoi` does: 0 when it is not a number).
pub(crate) fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::String(s) => percent(s).unwrap_or_else(|| s.parse().unwrap_or(0)),
        other => other.as_i64().unwrap_or(0),
    }
}

/// `ValidatePositiveIntOrPercent`: an integer at least 0, or a percentage (`N%`).
pub(crate) fn positive_int_or_percent(v: &Value, field: &str) -> Vec<FieldError> {
    match v {
        Value::String(s) if percent(s).is_none() => vec![(
            field.to_owned(),
            format!(
                "Invalid value: {}: {}",
                int_or_string_go(v),
                crate::metadata::regex_error(
                    "a valid percent string must be a numeric string followed by an ending '%'",
                    "[0-9]+%",
                    &["1%", "93%"],
                )
            ),
        )],
        Value::Number(_) if int_or_percent_value(v) < 0 => vec![(
            field.to_owned(),
            format!("Invalid value: {}: must be greater than or equal to 0", int_or_percent_value(v)),
        )],
        _ => Vec::new(),
    }
}

/// `IsNotMoreThan100Percent`: a percentage is at most 100%.
pub(crate) fn not_more_than_100_percent(v: &Value, field: &str) -> Vec<FieldError> {
    match v {
        Value::String(s) if percent(s).is_some_and(|p| p > 100) => vec![(
            field.to_owned(),
            format!("Invalid value: {}: must not be greater than 100%", int_or_string_go(v)),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Value {
        json!({ "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [{ "name": "c", "image": "nginx:1" }] } })
    }

    #[test]
    fn a_stateful_set_gets_its_defaults_and_keeps_its_claims() {
        let mut sts = json!({ "spec": {
            "selector": { "matchLabels": { "app": "web" } }, "template": template(),
            "volumeClaimTemplates": [{ "metadata": { "name": "data" }, "spec": { "accessModes": ["ReadWriteOnce"] } }],
        } });
        default_stateful_set(&mut sts);
        assert_eq!(sts["spec"]["replicas"], 1);
        assert_eq!(
            sts["spec"]["updateStrategy"],
            json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } })
        );
        assert_eq!(sts["spec"]["volumeClaimTemplates"][0]["kind"], "PersistentVolumeClaim");
        assert!(validate_stateful_set(&sts, None).is_empty());
        let mut changed = sts.clone();
        changed["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(validate_stateful_set(&changed, Some(&sts))[0].1, STATEFUL_SET_UPDATE_FORBIDDEN);
        changed = sts.clone();
        changed["spec"]["replicas"] = json!(3);
        assert!(validate_stateful_set(&changed, Some(&sts)).is_empty());
    }

    #[test]
    fn a_job_is_selected_by_its_uid_and_its_template_is_immutable() {
        let mut t = template();
        t["spec"]["restartPolicy"] = json!("Never");
        let mut job = json!({ "metadata": { "name": "pi", "uid": "u-1" }, "spec": { "template": t } });
        prepare_job(&mut job);
        default_job(&mut job);
        assert_eq!(job["spec"]["selector"]["matchLabels"][JOB_UID_LABEL], "u-1");
        assert_eq!(job["spec"]["template"]["metadata"]["labels"]["job-name"], "pi");
        assert_eq!(
            (job["spec"]["completions"].clone(), job["spec"]["backoffLimit"].clone()),
            (json!(1), json!(6))
        );
        assert!(validate_job(&job, None).is_empty());
        let mut changed = job.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:2");
        assert_eq!(validate_job(&changed, Some(&job))[0].0, "spec.template");
        let mut always = job.clone();
        always["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            validate_job(&always, None)[0].1,
            "Required value: valid values: \"OnFailure\", \"Never\""
        );
    }

    #[test]
    fn selectors_must_select_the_template() {
        let rs =
            json!({ "spec": { "selector": { "matchLabels": { "app": "db" } }, "template": template() } });
        assert_eq!(validate_replica_set(&rs, None)[0].0, "spec.template.metadata.labels");
        let mut rc = json!({ "spec": { "template": template() } });
        default_replication_controller(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({ "app": "web" }));
        assert!(validate_replication_controller(&rc, None).is_empty());
    }
}
