//! policy/v1 PodDisruptionBudgets (`ValidatePodDisruptionBudgetSpec` and
//! `ValidatePodDisruptionBudgetStatusUpdate`).

use serde_json::Value;

use crate::kinds::workload::{not_more_than_100_percent, positive_int_or_percent, zero_status};
use crate::label_rules::{conditions_errors, label_selector_errors, nonnegative_fields};
use crate::object_meta::object_at;
use crate::status::FieldError;

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

/// Checks that a PodDisruptionBudget decodes as its type. A condition's `lastTransitionTime`
/// may be missing, as Go decodes it (the zero time), for `ValidateConditions` to refuse it
/// as required rather than the decoder.
///
/// # Errors
///
/// The decode error naming the field, as [`crate::kinds::decode_as`] words it.
pub fn decode(pdb: &Value) -> Result<(), String> {
    let conditions = pdb.pointer("/status/conditions").and_then(Value::as_array);
    if conditions.is_none_or(|c| c.iter().all(|c| c.get("lastTransitionTime").is_some())) {
        return crate::kinds::decode_as::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(pdb);
    }
    let mut filled = pdb.clone();
    for c in filled.pointer_mut("/status/conditions").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(c) = c.as_object_mut() {
            c.entry("lastTransitionTime").or_insert_with(|| Value::from("0001-01-01T00:00:00Z"));
        }
    }
    crate::kinds::decode_as::<k8s_openapi::api::policy::v1::PodDisruptionBudget>(&filled)
}
