//! The workload kinds' shared rules, and the kinds small enough to stay here: ReplicaSets and
//! ReplicationControllers, a Job's defaults, PodTemplates, ControllerRevisions and
//! LimitRanges. Templates are defaulted and validated as pod templates
//! ([`crate::kinds::pod_template`]); selectors must select their templates and are immutable.
//! The rules Deployments, StatefulSets ([`crate::kinds::stateful_set`]) and DaemonSets
//! ([`crate::kinds::daemon_set`]) share with them (replicas, selectors, a rolling update's
//! int-or-percent bounds) are here too.

use serde_json::{Value, json};

use crate::kinds::{pod, pod_template};
use crate::label_rules::{label_selector_errors, nonnegative, nonnegative_fields, not_greater};
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
    let selector = spec.get("selector").filter(|s| !s.is_null());
    let Some(s) = selector else {
        // A missing selector is `labels.Nothing()`: it matches no template either. A DaemonSet's
        // validation does not require one first.
        return if kind == "daemonset" {
            vec![mismatch()]
        } else {
            vec![("spec.selector".into(), "Required value".into()), mismatch()]
        };
    };
    // `ValidateLabelSelector` first; a selector it refuses does not parse, so it is not matched
    // against the template (`LabelSelectorAsSelector` fails).
    let mut errs = label_selector_errors(selector, "spec.selector");
    let parses = errs.is_empty();
    let empty = || {
        (
            "spec.selector".to_owned(),
            format!(
                "Invalid value: {}: empty selector is invalid for {kind}",
                crate::go_print::go_label_selector(s)
            ),
        )
    };
    if kind == "daemonset" {
        if parses && !selector_matches(s, &labels) {
            errs.push(mismatch());
        }
        if selector_is_empty(s) {
            errs.push(empty());
        }
        return errs;
    }
    if selector_is_empty(s) {
        errs.push(empty());
    }
    if !parses {
        let why = if kind == "statefulset" { "" } else { ": invalid label selector" };
        errs.push((
            "spec.selector".into(),
            format!("Invalid value: {}{why}", crate::go_print::go_label_selector(s)),
        ));
    } else if !selector_is_empty(s) && !selector_matches(s, &labels) {
        errs.push(mismatch());
    }
    errs
}

/// The template's pod spec, validated with the restart policies the kind allows.
pub(crate) fn template_errors(spec: &Value, restart_policies: &[&str]) -> Vec<FieldError> {
    let template = spec.get("template").cloned().unwrap_or_default();
    pod_template::errors(&template, "spec.template", restart_policies)
}

/// The status update rule of Deployments, StatefulSets and DaemonSets: `status.collisionCount`
/// is not decremented.
pub(crate) fn collision_count_errors(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let count = |o: &Value| o.pointer("/status/collisionCount").and_then(Value::as_i64);
    match (count(obj), old.and_then(count)) {
        (Some(n), Some(was)) if n < was => {
            vec![("status.collisionCount".into(), format!("Invalid value: {n}: cannot be decremented"))]
        }
        _ => Vec::new(),
    }
}

/// `activeDeadlineSeconds in <kind> is not Supported`: a controller's pods run until replaced.
pub(crate) fn deadline_forbidden(spec: &Value, kind: &str) -> Vec<FieldError> {
    if spec.pointer("/template/spec/activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        vec![(
            "spec.template.spec.activeDeadlineSeconds".into(),
            format!("Forbidden: activeDeadlineSeconds in {kind} is not Supported"),
        )]
    } else {
        Vec::new()
    }
}

/// `ValidateReplicaSetStatus` and `ValidateReplicationControllerStatus`: counts not negative,
/// none above `replicas`, the available not above the ready.
fn replica_status_errors(obj: &Value) -> Vec<FieldError> {
    let Some(status) = obj.get("status").filter(|s| s.is_object()) else { return Vec::new() };
    let mut errs = nonnegative_fields(
        status,
        "status",
        &["replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"],
    );
    for f in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
        errs.extend(not_greater(status, "status", f, "replicas", "status.replicas"));
    }
    errs.extend(not_greater(status, "status", "availableReplicas", "readyReplicas", "readyReplicas"));
    errs
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
pub(crate) fn default_workload(obj: &mut Value, replicas: bool) {
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
pub(crate) fn default_job_template(template: &mut Value) {
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
pub(crate) fn zero_status(obj: &mut Value, fields: &[&str]) {
    let status = object_at(obj, "status");
    for f in fields {
        status.entry(*f).or_insert(json!(0));
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
pub fn validate_controller_revision(rev: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if rev.get("data").is_none_or(Value::is_null) {
        errs.push(("data".into(), "Required value: data is mandatory".into()));
    }
    if let Some(n) = rev.get("revision").and_then(Value::as_i64).filter(|n| *n < 0) {
        errs.push(("revision".into(), format!("Invalid value: {n}: must be greater than or equal to 0")));
    }
    // `ValidateControllerRevisionUpdate`: the data never changes; Go prints it as the
    // `runtime.Unknown` holding its raw JSON bytes.
    if let Some(old) = old
        && rev.get("data") != old.get("data")
    {
        let raw = rev.get("data").map(Value::to_string).unwrap_or_default();
        let bytes: Vec<String> = raw.bytes().map(|b| format!("{b:#x}")).collect();
        errs.push((
            "data".into(),
            format!(
                "Invalid value: runtime.Unknown{{TypeMeta:runtime.TypeMeta{{APIVersion:\"\", Kind:\"\"}}, Raw:[]uint8{{{}}}, ContentEncoding:\"\", ContentType:\"application/json\"}}: field is immutable",
                bytes.join(", ")
            ),
        ));
    }
    errs
}

/// `spec.updateStrategy` of a StatefulSet or a DaemonSet: `RollingUpdate` unless said
/// otherwise, its `rollingUpdate` given `settings` where they are unset.
pub(crate) fn default_rolling_update(spec: &mut serde_json::Map<String, Value>, settings: &[(&str, Value)]) {
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
    errs.extend(nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"));
    errs.extend(selector_errors(&spec, "deployment"));
    errs.extend(template_errors(&spec, &["Always"]));
    errs.extend(deadline_forbidden(&spec, "ReplicaSet"));
    errs.extend(immutable(rs, old, &[("spec.selector", "/spec/selector")]));
    errs.extend(replica_status_errors(rs));
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
    let mut errs = nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds");
    let selector = spec.get("selector").and_then(Value::as_object).cloned().unwrap_or_default();
    if selector.is_empty() {
        errs.push(("spec.selector".into(), "Required value".into()));
    }
    errs.extend(replicas_errors(&spec));
    // `ValidatePodTemplateSpecForRC`: without a template there is nothing more to check.
    let Some(template) = spec.get("template").filter(|t| !t.is_null()) else {
        errs.push(("spec.template".into(), "Required value".into()));
        errs.extend(replica_status_errors(rc));
        return errs;
    };
    let labels = template.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    if !selector.is_empty() && !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
        errs.push((
            "spec.template.metadata.labels".into(),
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                crate::go_print::go_string_map(Some(&labels))
            ),
        ));
    }
    errs.extend(template_errors(&spec, &["Always"]));
    errs.extend(deadline_forbidden(&spec, "ReplicationController"));
    errs.extend(replica_status_errors(rc));
    errs
}

/// A pointer field as Go's `%#v` prints it inside a struct: nil, or a placeholder address.
pub(crate) fn go_pointer(v: Option<&Value>, ty: &str) -> String {
    if v.is_some_and(|v| !v.is_null()) { format!("(*{ty})(0xc000000000)") } else { format!("(*{ty})(nil)") }
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
    let replacement = if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    set_default(spec, "podReplacementPolicy", json!(replacement));
    // A pod failure policy's condition patterns match `True` unless they say otherwise.
    let rules =
        spec.get_mut("podFailurePolicy").and_then(|p| p.get_mut("rules")).and_then(Value::as_array_mut);
    for rule in rules.into_iter().flatten() {
        let patterns = rule.get_mut("onPodConditions").and_then(Value::as_array_mut);
        for pattern in patterns.into_iter().flatten().filter_map(Value::as_object_mut) {
            set_default(pattern, "status", json!("True"));
        }
    }
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
    let template = pt.get("template").cloned().unwrap_or_default();
    pod_template::errors(&template, "template", &["Always", "OnFailure", "Never"])
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
pub(crate) fn percent(s: &str) -> Option<i64> {
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
