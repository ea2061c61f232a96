//! HorizontalPodAutoscalers in `autoscaling/v2` (the storage form) and `autoscaling/v1`, with
//! upstream's defaults (`pkg/apis/autoscaling/v2/defaults.go`), the validation a user meets
//! first, and the conversion between them (`pkg/apis/autoscaling/v1/conversion.go`): v1 holds
//! one CPU target; the metrics, current metrics and conditions it cannot express travel in the
//! `autoscaling.alpha.kubernetes.io/*` annotations, so a v1 client's read-modify-write keeps them.

use serde_json::{Map, Value, json};

use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

fn default_rules(rules: &mut Map<String, Value>, window: i64, policies: Value) {
    set_default(rules, "stabilizationWindowSeconds", json!(window));
    set_default(rules, "selectPolicy", json!("Max"));
    set_default(rules, "policies", policies);
}

/// v2 defaults: one replica at least, 80% CPU when no metric is given, and the scaling rules of a
/// `behavior` that is given filled in.
pub fn default_v2(hpa: &mut Value) {
    if !hpa.is_object() {
        return;
    }
    let status = object_at(hpa, "status");
    status.entry("currentMetrics").or_insert(Value::Null);
    status.entry("desiredReplicas").or_insert(json!(0));
    let spec = object_at(hpa, "spec");
    set_default(spec, "minReplicas", json!(1));
    if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec.insert(
            "metrics".into(),
            json!([{ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } } }]),
        );
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = behavior.entry("scaleUp").or_insert_with(|| json!({}));
        if let Some(up) = up.as_object_mut() {
            default_rules(
                up,
                0,
                json!([{ "type": "Pods", "value": 4, "periodSeconds": 15 }, { "type": "Percent", "value": 100, "periodSeconds": 15 }]),
            );
        }
        let down = behavior.entry("scaleDown").or_insert_with(|| json!({}));
        if let Some(down) = down.as_object_mut() {
            default_rules(down, 300, json!([{ "type": "Percent", "value": 100, "periodSeconds": 15 }]));
        }
    }
}

/// v1 defaults: one replica at least.
pub fn default_v1(hpa: &mut Value) {
    if hpa.is_object() {
        set_default(object_at(hpa, "spec"), "minReplicas", json!(1));
    }
}

/// v2 validation (`ValidateHorizontalPodAutoscalerSpec`): a target to scale, replica bounds.
pub fn validate_v2(hpa: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = hpa.get("spec").cloned().unwrap_or_default();
    let mut errs = Vec::new();
    // `ValidateHorizontalPodAutoscalerSpec`'s order: the replica bounds (each that fails), then
    // the target.
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < 1) {
        errs.push((
            "spec.minReplicas".into(),
            format!("Invalid value: {min}: must be greater than or equal to 1"),
        ));
    }
    if max < 1 {
        errs.push(("spec.maxReplicas".into(), format!("Invalid value: {max}: must be greater than 0")));
    }
    if min.is_some_and(|min| max < min) {
        errs.push((
            "spec.maxReplicas".into(),
            format!("Invalid value: {max}: must be greater than or equal to `minReplicas`"),
        ));
    }
    for field in ["kind", "name"] {
        if spec.pointer(&format!("/scaleTargetRef/{field}")).and_then(Value::as_str).is_none_or(str::is_empty)
        {
            errs.push((format!("spec.scaleTargetRef.{field}"), "Required value".into()));
        }
    }
    errs
}

/// v1 validation: as v2's, on the object converted (upstream validates the internal form).
pub fn validate_v1(hpa: &Value, old: Option<&Value>) -> Vec<FieldError> {
    validate_v2(&v1_to_v2(hpa.clone()), old)
}

fn is_cpu_utilization(m: &Value) -> bool {
    m["type"] == "Resource"
        && m.pointer("/resource/name") == Some(&json!("cpu"))
        && m.pointer("/resource/target/type") == Some(&json!("Utilization"))
}

/// Moves the annotation `key` (JSON text) out of the metadata, parsed.
fn take_annotation(obj: &mut Value, key: &str) -> Option<Value> {
    let annotations = obj.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut)?;
    let text = annotations.remove(key)?;
    if annotations.is_empty()
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("annotations");
    }
    serde_json::from_str(text.as_str()?).ok()
}

fn put_annotation(obj: &mut Value, key: &str, value: &Value) {
    let meta = object_at(obj, "metadata");
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(key.to_owned(), json!(value.to_string()));
    }
}

/// An `autoscaling/v1` object in the v2 form (with v2's defaults, as the stored object is read).
#[must_use]
pub fn v1_to_v2(mut hpa: Value) -> Value {
    let extra = take_annotation(&mut hpa, METRICS);
    let current = take_annotation(&mut hpa, CURRENT_METRICS);
    let conditions = take_annotation(&mut hpa, CONDITIONS);
    if let Some(spec) = hpa.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics: Vec<Value> = Vec::new();
        if let Some(cpu) = spec.remove("targetCPUUtilizationPercentage").filter(|v| !v.is_null()) {
            metrics.push(json!({ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": cpu } } }));
        }
        metrics.extend(extra.and_then(|v| v.as_array().cloned()).unwrap_or_default());
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
    }
    if let Some(status) = hpa.get_mut("status").and_then(Value::as_object_mut) {
        let mut current_metrics: Vec<Value> = Vec::new();
        if let Some(cpu) = status.remove("currentCPUUtilizationPercentage").filter(|v| !v.is_null()) {
            current_metrics.push(json!({ "type": "Resource", "resource": { "name": "cpu", "current": { "averageUtilization": cpu } } }));
        }
        current_metrics.extend(current.and_then(|v| v.as_array().cloned()).unwrap_or_default());
        if !current_metrics.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current_metrics));
        }
        if let Some(c) = conditions {
            status.insert("conditions".into(), c);
        }
    }
    default_v2(&mut hpa);
    // v2's current replica count is `omitempty`: a zero is not kept.
    if let Some(status) = hpa.get_mut("status").and_then(Value::as_object_mut)
        && status.get("currentReplicas") == Some(&json!(0))
    {
        status.remove("currentReplicas");
    }
    hpa
}

/// A stored (v2) object as `autoscaling/v1` shows it.
#[must_use]
pub fn v2_to_v1(mut hpa: Value) -> Value {
    if let Some(spec) = hpa.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = spec.remove("metrics").and_then(|m| m.as_array().cloned()).unwrap_or_default();
        spec.remove("behavior");
        let (cpu, other): (Vec<Value>, Vec<Value>) = metrics.into_iter().partition(is_cpu_utilization);
        if let Some(target) = cpu.first().and_then(|m| m.pointer("/resource/target/averageUtilization")) {
            spec.insert("targetCPUUtilizationPercentage".into(), target.clone());
        }
        if !other.is_empty() {
            put_annotation(&mut hpa, METRICS, &Value::Array(other));
        }
    }
    let mut annotations = Vec::new();
    if let Some(status) = hpa.get_mut("status").and_then(Value::as_object_mut) {
        let current = status.remove("currentMetrics").and_then(|m| m.as_array().cloned()).unwrap_or_default();
        let (cpu, other): (Vec<Value>, Vec<Value>) = current
            .into_iter()
            .partition(|m| m["type"] == "Resource" && m.pointer("/resource/name") == Some(&json!("cpu")));
        if let Some(u) = cpu.first().and_then(|m| m.pointer("/resource/current/averageUtilization")) {
            status.insert("currentCPUUtilizationPercentage".into(), u.clone());
        }
        if !other.is_empty() {
            annotations.push((CURRENT_METRICS, Value::Array(other)));
        }
        if let Some(c) = status.remove("conditions").filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
            annotations.push((CONDITIONS, c));
        }
    }
    for (key, value) in annotations {
        put_annotation(&mut hpa, key, &value);
    }
    // v1's replica counts are not `omitempty`: Go writes them, zero, before any controller does.
    if let Some(status) = hpa.as_object_mut().map(|o| o.entry("status").or_insert_with(|| json!({})))
        && let Some(status) = status.as_object_mut()
    {
        status.entry("currentReplicas").or_insert(json!(0));
        status.entry("desiredReplicas").or_insert(json!(0));
    }
    hpa
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_reads_the_others_writes() {
        let v1 = json!({ "metadata": { "name": "web" }, "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "web" }, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60 } });
        let v2 = v1_to_v2(v1);
        assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 60);
        assert_eq!(v2["spec"]["minReplicas"], 1);
        let back = v2_to_v1(v2);
        assert_eq!(back["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(back["metadata"].get("annotations").is_none());
    }

    #[test]
    fn metrics_v1_cannot_hold_survive_a_round_trip() {
        let memory = json!({ "type": "Resource", "resource": { "name": "memory", "target": { "type": "AverageValue", "averageValue": "500Mi" } } });
        let mut v2 = json!({ "metadata": { "name": "web" }, "spec": { "scaleTargetRef": { "kind": "Deployment", "name": "web" }, "maxReplicas": 5, "metrics": [memory] } });
        default_v2(&mut v2);
        let v1 = v2_to_v1(v2.clone());
        assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert!(v1["metadata"]["annotations"][METRICS].as_str().unwrap().contains("memory"));
        assert_eq!(v1_to_v2(v1), v2);
    }

    #[test]
    fn bounds_are_checked() {
        let hpa = json!({ "spec": { "scaleTargetRef": { "kind": "Deployment" }, "minReplicas": 3, "maxReplicas": 2 } });
        let fields: Vec<String> = validate_v2(&hpa, None).into_iter().map(|e| e.0).collect();
        assert_eq!(fields, ["spec.maxReplicas", "spec.scaleTargetRef.name"]);
    }
}
