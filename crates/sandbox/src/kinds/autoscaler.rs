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
    errs.extend(cross_version_reference_errors(spec.get("scaleTargetRef"), "spec.scaleTargetRef"));
    for (i, metric) in spec.get("metrics").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errs.extend(metric_errors(metric, &format!("spec.metrics[{i}]")));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        for rules in ["scaleUp", "scaleDown"] {
            if let Some(r) = behavior.get(rules).filter(|r| !r.is_null()) {
                errs.extend(scaling_rules_errors(r, &format!("spec.behavior.{rules}")));
            }
        }
    }
    // `ValidateHorizontalPodAutoscalerStatusUpdate` (the stored status on the main resource).
    if let Some(status) = hpa.get("status").filter(|s| s.is_object()) {
        errs.extend(crate::label_rules::nonnegative_fields(
            status,
            "status",
            &["currentReplicas", "desiredReplicas"],
        ));
    }
    errs
}

/// `IsValidPathSegmentName`'s reasons.
fn path_segment_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"].iter().filter(|c| name.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
}

fn quote(s: &str) -> String {
    crate::go_print::go_quote(s)
}

/// `ValidateCrossVersionObjectReference`: a kind and a name, each a path segment.
fn cross_version_reference_errors(reference: Option<&Value>, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for field in ["kind", "name"] {
        let v = reference.and_then(|r| r.get(field)).and_then(Value::as_str).unwrap_or("");
        if v.is_empty() {
            errs.push((format!("{at}.{field}"), "Required value".into()));
        }
        for why in path_segment_errors(v) {
            errs.push((format!("{at}.{field}"), format!("Invalid value: {}: {why}", quote(v))));
        }
    }
    errs
}

/// `validateMetricIdentifier`: a metric's name, a path segment.
fn metric_identifier_errors(metric: Option<&Value>, at: &str) -> Vec<FieldError> {
    let name = metric.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        return vec![(format!("{at}.name"), "Required value: must specify a metric name".into())];
    }
    path_segment_errors(name)
        .into_iter()
        .map(|why| (format!("{at}.name"), format!("Invalid value: {}: {why}", quote(name))))
        .collect()
}

/// A quantity as Go's `%#v` prints a `resource.Quantity` decoded from `text` (its fast path:
/// an integer with an optional decimal suffix).
fn go_quantity(v: &Value) -> String {
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let (number, suffix) = text.split_at(text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len()));
    let scale = match suffix {
        "" => Some(0),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    let format = if suffix.ends_with('i') { "BinarySI" } else { "DecimalSI" };
    match (number.parse::<i64>(), scale) {
        (Ok(n), Some(scale)) => format!(
            "resource.Quantity{{i:resource.int64Amount{{value:{n}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"\", Format:\"{format}\"}}"
        ),
        _ => quote(&text),
    }
}

/// Whether a quantity is above zero (`Sign() == 1`).
fn positive(v: &Value) -> bool {
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    crate::quantity::Quantity::parse(&text).is_ok_and(|q| !q.is_zero() && !q.is_negative())
}

/// `validateMetricTarget`: a known type; values positive, a utilization above 0.
fn metric_target_errors(target: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = target.get("type").and_then(Value::as_str).unwrap_or("");
    if ty.is_empty() {
        errs.push((format!("{at}.type"), "Required value: must specify a metric target type".into()));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        errs.push((
            format!("{at}.type"),
            format!("Invalid value: {}: must be either Utilization, Value, or AverageValue", quote(ty)),
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(q) = target.get(field).filter(|q| !q.is_null())
            && !positive(q)
        {
            errs.push((
                format!("{at}.{field}"),
                format!("Invalid value: {}: must be positive", go_quantity(q)),
            ));
        }
    }
    if let Some(u) = target.get("averageUtilization").and_then(Value::as_i64).filter(|u| *u < 1) {
        errs.push((
            format!("{at}.averageUtilization"),
            format!("Invalid value: {u}: must be greater than 0"),
        ));
    }
    errs
}

/// The raw-value and utilization rules a resource metric's target follows.
fn utilization_errors(target: &Value, at: &str) -> Vec<FieldError> {
    let has = |k: &str| target.get(k).is_some_and(|v| !v.is_null());
    let mut errs = Vec::new();
    if !has("averageUtilization") && !has("averageValue") {
        errs.push((
            format!("{at}.averageUtilization"),
            "Required value: must set either a target raw value or a target utilization".into(),
        ));
    }
    if has("averageUtilization") && has("averageValue") {
        errs.push((
            format!("{at}.averageValue"),
            "Forbidden: may not set both a target raw value and a target utilization".into(),
        ));
    }
    errs
}

/// The metric source of `kind` under `at`, validated as its kind is (`validateObjectSource`,
/// `validateExternalSource`, `validatePodsSource`, `validateResourceSource`,
/// `validateContainerResourceSource`).
fn source_errors(kind: &str, src: &Value, at: &str) -> Vec<FieldError> {
    let empty = json!({});
    let target = src.get("target").filter(|t| !t.is_null()).unwrap_or(&empty);
    let has = |k: &str| target.get(k).is_some_and(|v| !v.is_null());
    let target_at = format!("{at}.target");
    let mut errs = Vec::new();
    match kind {
        "object" => {
            errs.extend(cross_version_reference_errors(
                src.get("describedObject"),
                &format!("{at}.describedObject"),
            ));
            errs.extend(metric_identifier_errors(src.get("metric"), &format!("{at}.metric")));
            errs.extend(metric_target_errors(target, &target_at));
            if !has("value") && !has("averageValue") {
                errs.push((
                    format!("{target_at}.averageValue"),
                    "Required value: must set either a target value or averageValue".into(),
                ));
            }
        }
        "external" => {
            errs.extend(metric_identifier_errors(src.get("metric"), &format!("{at}.metric")));
            errs.extend(metric_target_errors(target, &target_at));
            if !has("value") && !has("averageValue") {
                errs.push((
                    format!("{target_at}.averageValue"),
                    "Required value: must set either a target value for metric or a per-pod target".into(),
                ));
            }
            if has("value") && has("averageValue") {
                errs.push((
                    format!("{target_at}.value"),
                    "Forbidden: may not set both a target value for metric and a per-pod target".into(),
                ));
            }
        }
        "pods" => {
            errs.extend(metric_identifier_errors(src.get("metric"), &format!("{at}.metric")));
            errs.extend(metric_target_errors(target, &target_at));
            if !has("averageValue") {
                errs.push((
                    format!("{target_at}.averageValue"),
                    "Required value: must specify a positive target averageValue".into(),
                ));
            }
        }
        "resource" => {
            if src.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
                errs.push((format!("{at}.name"), "Required value: must specify a resource name".into()));
            }
            errs.extend(metric_target_errors(target, &target_at));
            errs.extend(utilization_errors(target, &target_at));
        }
        _ => {
            match src.get("name").and_then(Value::as_str).unwrap_or("") {
                "" => {
                    errs.push((format!("{at}.name"), "Required value: must specify a resource name".into()))
                }
                name => {
                    errs.extend(crate::resource_name::container_resource_errors(name, &format!("{at}.name")))
                }
            }
            match src.get("container").and_then(Value::as_str).unwrap_or("") {
                "" => {
                    errs.push((format!("{at}.container"), "Required value: must specify a container".into()))
                }
                c => {
                    if let Some(why) = crate::metadata::check_label(c) {
                        errs.push((format!("{at}.container"), format!("Invalid value: {}: {why}", quote(c))));
                    }
                }
            }
            errs.extend(metric_target_errors(target, &target_at));
            errs.extend(utilization_errors(target, &target_at));
        }
    }
    errs
}

/// The metric source types and the field each fills, in the order upstream checks them.
const SOURCES: [(&str, &str); 5] = [
    ("Object", "object"),
    ("External", "external"),
    ("Pods", "pods"),
    ("Resource", "resource"),
    ("ContainerResource", "containerResource"),
];

/// `validateMetricSpec`: a known type, its source given and the only one; the first source
/// given is validated.
fn metric_errors(metric: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = metric.get("type").and_then(Value::as_str).unwrap_or("");
    if ty.is_empty() {
        errs.push((format!("{at}.type"), "Required value: must specify a metric source type".into()));
    }
    let known = SOURCES.iter().find(|(t, _)| *t == ty).map(|(_, f)| *f);
    let unsupported = || {
        (
            format!("{at}.type"),
            format!(
                "Unsupported value: {}: supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                quote(ty)
            ),
        )
    };
    if known.is_none() {
        errs.push(unsupported());
    }
    let present: Vec<&str> =
        SOURCES.iter().map(|(_, f)| *f).filter(|f| metric.get(*f).is_some_and(|v| !v.is_null())).collect();
    if let Some(first) = present.first() {
        errs.extend(source_errors(
            if *first == "containerResource" { "container" } else { first },
            &metric[*first],
            &format!("{at}.{first}"),
        ));
    }
    // An unknown type is refused again, as upstream's switch does, and its field is then `""`.
    if known.is_none() {
        errs.push(unsupported());
    }
    let expected = known.unwrap_or("");
    if !present.contains(&expected) {
        let field = if expected.is_empty() { format!("{at}.") } else { format!("{at}.{expected}") };
        errs.push((field, "Required value: must populate information for the given metric source".into()));
    }
    if present.len() != 1 {
        let mut others: Vec<&str> = present.iter().copied().filter(|f| *f != expected).collect();
        others.sort_unstable();
        for f in others {
            errs.push((format!("{at}.{f}"), "Forbidden: must populate the given metric source only".into()));
        }
    }
    errs
}

/// `validateScalingRules` and `validateScalingPolicy`: a window of 0 to 3600 seconds, a known
/// select policy, at least one policy, each of a known type with a positive value over a
/// period of 1 to 1800 seconds.
fn scaling_rules_errors(rules: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(w) = rules.get("stabilizationWindowSeconds").and_then(Value::as_i64) {
        let field = format!("{at}.stabilizationWindowSeconds");
        if w < 0 {
            errs.push((field.clone(), format!("Invalid value: {w}: must be greater than or equal to zero")));
        }
        if w > 3600 {
            errs.push((field, format!("Invalid value: {w}: must be less than or equal to 3600")));
        }
    }
    if let Some(p) = rules.get("selectPolicy").and_then(Value::as_str)
        && !matches!(p, "Disabled" | "Max" | "Min")
    {
        errs.push((
            format!("{at}.selectPolicy"),
            format!("Unsupported value: {}: supported values: \"Disabled\", \"Max\", \"Min\"", quote(p)),
        ));
    }
    let policies = rules.get("policies").and_then(Value::as_array).cloned().unwrap_or_default();
    if policies.is_empty() {
        errs.push((format!("{at}.policies"), "Required value: must specify at least one Policy".into()));
    }
    for (i, p) in policies.iter().enumerate() {
        let at = format!("{at}.policies[{i}]");
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(ty, "Pods" | "Percent") {
            errs.push((
                format!("{at}.type"),
                format!("Unsupported value: {}: supported values: \"Percent\", \"Pods\"", quote(ty)),
            ));
        }
        let value = p.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            errs.push((format!("{at}.value"), format!("Invalid value: {value}: must be greater than zero")));
        }
        let period = p.get("periodSeconds").and_then(Value::as_i64).unwrap_or(0);
        if period <= 0 {
            errs.push((
                format!("{at}.periodSeconds"),
                format!("Invalid value: {period}: must be greater than zero"),
            ));
        }
        if period > 1800 {
            errs.push((
                format!("{at}.periodSeconds"),
                format!("Invalid value: {period}: must be less than or equal to 1800"),
            ));
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
