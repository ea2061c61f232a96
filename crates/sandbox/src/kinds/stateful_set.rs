//! apps/v1 StatefulSets (`pkg/apis/apps/validation`, `ValidateStatefulSet*`): ordered or
//! parallel pods, an update strategy with a partition, claim templates and their retention,
//! a spec that changes only where upstream lets it, and the status counts.

use serde_json::{Value, json};

use crate::kinds::pod_template;
use crate::kinds::workload::{
    deadline_forbidden, default_rolling_update, default_workload, go_pointer, int_or_percent_value,
    int_or_string_go, not_more_than_100_percent, positive_int_or_percent, replicas_errors, selector_errors,
    zero_status,
};
use crate::label_rules::{label_selector_errors, nonnegative, nonnegative_fields, not_greater};
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

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
        if let Some(p) =
            spec.pointer(&format!("/persistentVolumeClaimRetentionPolicy/{when}")).and_then(Value::as_str)
            && !matches!(p, "Retain" | "Delete")
        {
            errs.push((
                format!("spec.persistentVolumeClaimRetentionPolicy.{when}"),
                format!(
                    "Unsupported value: {}: supported values: \"Retain\", \"Delete\"",
                    crate::go_print::go_quote(p)
                ),
            ));
        }
    }
    errs.extend(replicas_errors(&spec));
    if spec.get("ordinals").is_some_and(Value::is_object) {
        errs.extend(nonnegative(spec.pointer("/ordinals/start"), "spec.ordinals.start"));
    }
    errs.extend(nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"));
    let selector_errs = selector_errors(&spec, "statefulset");
    let parses =
        label_selector_errors(spec.get("selector").filter(|s| !s.is_null()), "spec.selector").is_empty();
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
    errs.extend(crate::kinds::workload::collision_count_errors(sts, old));
    errs
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
        &[
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
            "observedGeneration",
            "collisionCount",
        ],
    );
    for f in ["readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"] {
        errs.extend(not_greater(status, "status", f, "replicas", "status.replicas"));
    }
    errs.extend(not_greater(status, "status", "availableReplicas", "readyReplicas", "status.readyReplicas"));
    errs
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
}
