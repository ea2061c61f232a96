//! apps/v1 DaemonSets (`ValidateDaemonSetSpec`, `ValidateDaemonSetUpdateStrategy`,
//! `validateDaemonSetStatus`): a selector of the template, pods that restart `Always`, a rolling
//! update that surges or takes pods down, and the status counts.

use serde_json::{Value, json};

use crate::kinds::workload::{
    deadline_forbidden, default_rolling_update, default_workload, go_pointer, immutable,
    int_or_percent_value, int_or_string_go, not_more_than_100_percent, positive_int_or_percent,
    selector_errors, template_errors, zero_status,
};
use crate::label_rules::{nonnegative, nonnegative_fields};
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

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
    errs.extend(crate::kinds::workload::collision_count_errors(ds, old));
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
            let (u_at, s_at) =
                (format!("{at}.rollingUpdate.maxUnavailable"), format!("{at}.rollingUpdate.maxSurge"));
            let mut errs = positive_int_or_percent(unavailable, &u_at);
            errs.extend(positive_int_or_percent(surge, &s_at));
            errs.extend(not_more_than_100_percent(unavailable, &u_at));
            errs.extend(not_more_than_100_percent(surge, &s_at));
            match (int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0) {
                (true, true) => errs.push((
                    s_at,
                    format!(
                        "Invalid value: {}: may not be set when maxUnavailable is non-zero",
                        int_or_string_go(surge)
                    ),
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
