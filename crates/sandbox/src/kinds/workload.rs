//! The workload kinds beside Deployments, each as its upstream strategy and validation in the
//! rules a user meets first: ReplicaSets and ReplicationControllers, StatefulSets, DaemonSets,
//! Jobs, CronJobs and PodTemplates. Their templates are defaulted and validated as pod specs
//! ([`crate::kinds::pod`]); their selectors must select their templates and are immutable; a
//! StatefulSet's and a Job's specs change only where upstream lets them. The rules Deployments
//! share with them (replicas, selectors, a rolling update's int-or-percent bounds) are here too.

use serde_json::{Value, json};

use crate::kinds::{pod, pod_template};
use crate::label_rules::{conditions_errors, label_selector_errors, nonnegative, nonnegative_fields, not_greater};
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
        errs.push(("spec.selector".into(), format!("Invalid value: {}{why}", crate::go_print::go_label_selector(s))));
    } else if !selector_is_empty(s) && !selector_matches(s, &labels) {
        errs.push(mismatch());
    }
    errs
}

/// The template's pod spec, validated with the restart policies the kind allows.
fn template_errors(spec: &Value, restart_policies: &[&str]) -> Vec<FieldError> {
    let template = spec.get("template").cloned().unwrap_or_default();
    pod_template::errors(&template, "spec.template", restart_policies)
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
    errs.extend(label_selector_errors(given("selector"), "spec.selector"));
    if let Some(p) = given("unhealthyPodEvictionPolicy").and_then(Value::as_str)
        && !matches!(p, "AlwaysAllow" | "IfHealthyBudget")
    {
        errs.push((
            "spec.unhealthyPodEvictionPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"AlwaysAllow\", \"IfHealthyBudget\""),
        ));
    }
    // `ValidatePodDisruptionBudgetStatusUpdate` (the stored status on the main resource).
    if let Some(status) = pdb.get("status").filter(|s| s.is_object()) {
        errs.extend(conditions_errors(status.get("conditions"), "status.conditions"));
        errs.extend(nonnegative_fields(
            status,
            "status",
            &["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"],
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
    errs.extend(stateful_set_strategy_errors(&spec));
    for when in ["whenDeleted", "whenScaled"] {
        if let Some(p) = spec.pointer(&format!("/persistentVolumeClaimRetentionPolicy/{when}")).and_then(Value::as_str)
            && !matches!(p, "Retain" | "Delete")
        {
            errs.push((
                format!("spec.persistentVolumeClaimRetentionPolicy.{when}"),
                format!("Unsupported value: {}: supported values: \"Retain\", \"Delete\"", crate::go_print::go_quote(p)),
            ));
        }
    }
    errs.extend(replicas_errors(&spec));
    if spec.get("ordinals").is_some_and(Value::is_object) {
        errs.extend(nonnegative(spec.pointer("/ordinals/start"), "spec.ordinals.start"));
    }
    errs.extend(nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"));
    let selector_errs = selector_errors(&spec, "statefulset");
    let parses = label_selector_errors(spec.get("selector").filter(|s| !s.is_null()), "spec.selector").is_empty();
    errs.extend(selector_errs);
    // Upstream (before v1.34) does not validate a StatefulSet's pod spec
    // (`ValidatePodTemplateSpecForStatefulSet`): its labels and annotations, then only that its
    // pods restart `Always` and have no deadline.
    if parses {
        let template = spec.get("template").cloned().unwrap_or_default();
        errs.extend(pod_template::meta_errors(&template, "spec.template"));
    }
    if let Some(p) = spec.pointer("/template/spec/restartPolicy").and_then(Value::as_str)
        && p != "Always"
    {
        errs.push((
            "spec.template.spec.restartPolicy".into(),
            format!("Unsupported value: {p:?}: supported values: \"Always\""),
        ));
    }
    errs.extend(deadline_forbidden(&spec, "StatefulSet"));
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
    errs.extend(stateful_set_status_errors(sts));
    errs
}

/// A pointer field as Go's `%#v` prints it inside a struct: nil, or a placeholder address.
fn go_pointer(v: Option<&Value>, ty: &str) -> String {
    if v.is_some_and(|v| !v.is_null()) { format!("(*{ty})(0xc000000000)") } else { format!("(*{ty})(nil)") }
}

/// `ValidateStatefulSetSpec`'s update strategy: `RollingUpdate` (its partition not negative,
/// its `maxUnavailable` a positive int or percentage of at most 100%) or `OnDelete` without
/// rolling settings.
fn stateful_set_strategy_errors(spec: &Value) -> Vec<FieldError> {
    let strategy = spec.get("updateStrategy").cloned().unwrap_or_default();
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    let mut errs = Vec::new();
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(("spec.updateStrategy".into(), "Required value".into())),
        "OnDelete" => {
            if let Some(r) = rolling {
                errs.push((
                    "spec.updateStrategy.rollingUpdate".into(),
                    format!(
                        "Invalid value: apps.RollingUpdateStatefulSetStrategy{{Partition:{}, MaxUnavailable:{}}}: only allowed for updateStrategy 'RollingUpdate'",
                        r.get("partition").and_then(Value::as_i64).unwrap_or(0),
                        go_pointer(r.get("maxUnavailable"), "intstr.IntOrString")
                    ),
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = rolling {
                let at = "spec.updateStrategy.rollingUpdate";
                errs.extend(nonnegative(r.get("partition"), &format!("{at}.partition")));
                if let Some(m) = r.get("maxUnavailable").filter(|m| !m.is_null()) {
                    let field = format!("{at}.maxUnavailable");
                    errs.extend(positive_int_or_percent(m, &field));
                    if int_or_percent_value(m) == 0 {
                        errs.push((field.clone(), format!("Invalid value: {}: must be greater than 0", int_or_string_go(m))));
                    }
                    errs.extend(not_more_than_100_percent(m, &field));
                }
            }
        }
        other => errs.push((
            "spec.updateStrategy".into(),
            format!(
                "Invalid value: apps.StatefulSetUpdateStrategy{{Type:{}, RollingUpdate:{}}}: must be 'RollingUpdate' or 'OnDelete'",
                crate::go_print::go_quote(other),
                go_pointer(rolling, "apps.RollingUpdateStatefulSetStrategy")
            ),
        )),
    }
    errs
}

/// `ValidateStatefulSetStatus`: counts not negative, none above `replicas`, the available not
/// above the ready.
fn stateful_set_status_errors(sts: &Value) -> Vec<FieldError> {
    let Some(status) = sts.get("status").filter(|s| s.is_object()) else { return Vec::new() };
    let mut errs = nonnegative_fields(
        status,
        "status",
        &["replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas", "observedGeneration", "collisionCount"],
    );
    for f in ["readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"] {
        errs.extend(not_greater(status, "status", f, "replicas", "status.replicas"));
    }
    errs.extend(not_greater(status, "status", "availableReplicas", "readyReplicas", "status.readyReplicas"));
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
    errs.extend(deadline_forbidden(&spec, "DaemonSet"));
    errs.extend(nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"));
    errs.extend(nonnegative(spec.get("templateGeneration"), "spec.templateGeneration"));
    errs.extend(daemon_set_strategy_errors(&spec));
    errs.extend(nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit"));
    errs.extend(immutable(ds, old, &[("spec.selector", "/spec/selector")]));
    if let Some(status) = ds.get("status").filter(|s| s.is_object()) {
        errs.extend(nonnegative_fields(
            status,
            "status",
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "observedGeneration",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
                "collisionCount",
            ],
        ));
    }
    errs
}

/// `ValidateDaemonSetUpdateStrategy` and `ValidateRollingUpdateDaemonSet`: `OnDelete`, or
/// `RollingUpdate` whose `maxUnavailable` and `maxSurge` are non-negative ints or percentages
/// of at most 100%, exactly one of them non-zero.
fn daemon_set_strategy_errors(spec: &Value) -> Vec<FieldError> {
    let strategy = spec.get("updateStrategy").cloned().unwrap_or_default();
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    let at = "spec.updateStrategy";
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "OnDelete" => Vec::new(),
        "RollingUpdate" => {
            let Some(r) = rolling else {
                return vec![(format!("{at}.rollingUpdate"), "Required value".into())];
            };
            let zero = json!(0);
            let unavailable = r.get("maxUnavailable").filter(|v| !v.is_null()).unwrap_or(&zero);
            let surge = r.get("maxSurge").filter(|v| !v.is_null()).unwrap_or(&zero);
            let (u_at, s_at) = (format!("{at}.rollingUpdate.maxUnavailable"), format!("{at}.rollingUpdate.maxSurge"));
            let mut errs = positive_int_or_percent(unavailable, &u_at);
            errs.extend(positive_int_or_percent(surge, &s_at));
            errs.extend(not_more_than_100_percent(unavailable, &u_at));
            errs.extend(not_more_than_100_percent(surge, &s_at));
            match (int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0) {
                (true, true) => errs.push((
                    s_at,
                    format!("Invalid value: {}: may not be set when maxUnavailable is non-zero", int_or_string_go(surge)),
                )),
                (false, false) => errs.push((u_at, "Required value: cannot be 0 when maxSurge is 0".into())),
                _ => {}
            }
            errs
        }
        other => vec![(
            at.into(),
            format!(
                "Unsupported value: apps.DaemonSetUpdateStrategy{{Type:{}, RollingUpdate:{}}}: supported values: \"RollingUpdate\", \"OnDelete\"",
                crate::go_print::go_quote(other),
                go_pointer(rolling, "apps.RollingUpdateDaemonSet")
            ),
        )],
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
    let replacement = if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) { "Failed" } else { "TerminatingOrFailed" };
    set_default(spec, "podReplacementPolicy", json!(replacement));
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
        errs.push(("metadata.name".into(), format!("Invalid value: {name:?}: must be no more than 52 characters")));
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
        return invalid("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones");
    }
    if zone != "UTC" && jiff::tz::TimeZone::get(zone).is_err() {
        return invalid(&format!("unknown time zone {zone}"));
    }
    Vec::new()
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
