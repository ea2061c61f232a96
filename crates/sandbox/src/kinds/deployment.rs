//! apps/v1 Deployments: the API server's defaults and validation, and a simulated rollout.
//!
//! There are no kubelets here, so the sandbox plays the Deployment controller: each rollout step
//! moves `status.replicas`, `updatedReplicas`, `readyReplicas` and `availableReplicas` one pod
//! towards `spec.replicas` and records `observedGeneration`, which is what `kubectl get deploy -w`
//! shows as READY climbing from 0/3 to 3/3.

use serde_json::{Value, json};

use crate::kinds::{pod, workload};
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

/// The defaults `kube-apiserver` fills in for an apps/v1 Deployment.
pub fn default(d: &mut Value) {
    if !d.is_object() {
        return;
    }
    let spec = object_at(d, "spec");
    set_default(spec, "replicas", json!(1));
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(spec, "progressDeadlineSeconds", json!(600));
    // An absent type is RollingUpdate, also in a strategy given empty (`kubectl create
    // deployment` sends `strategy: {}`).
    let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
    if !strategy.is_object() {
        *strategy = json!({});
    }
    if strategy.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
        strategy["type"] = json!("RollingUpdate");
    }
    if spec["strategy"]["type"] == "RollingUpdate"
        && let Some(s) = spec["strategy"].as_object_mut()
    {
        set_default(s, "rollingUpdate", json!({}));
        if let Some(ru) = s["rollingUpdate"].as_object_mut() {
            set_default(ru, "maxUnavailable", json!("25%"));
            set_default(ru, "maxSurge", json!("25%"));
        }
    }
    object_at(&mut d["spec"], "template");
    pod::default_template(&mut d["spec"]["template"]);
    // Go writes a status struct even when all its fields are empty: `status: {}`.
    object_at(d, "status");
}

/// The validation `kube-apiserver` applies to an apps/v1 Deployment.
pub fn validate(d: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = d.get("spec").cloned().unwrap_or(Value::Null);
    // The replica count and the selector follow the same rules as a ReplicaSet's.
    let mut errs = workload::replicas_errors(&spec);
    errs.extend(workload::selector_errors(&spec, "deployment"));
    let template = spec.get("template").cloned().unwrap_or_default();
    errs.extend(crate::kinds::pod_template::errors(&template, "spec.template", &["Always"]));
    errs.extend(workload::deadline_forbidden(&spec, "ReplicaSet"));
    errs.extend(strategy_errors(&spec));
    errs.extend(spec_count_errors(&spec));
    // The strategy's `ValidateUpdate` checks the selector's immutability after the spec.
    errs.extend(workload::immutable(d, old, &[("spec.selector", "/spec/selector")]));
    errs.extend(status_errors(d));
    errs.extend(workload::collision_count_errors(d, old));
    errs
}

/// The strategy's rule for `metadata.generation`: a spec change bumps it, and so does an
/// annotation change (annotations are copied to the ReplicaSets).
#[must_use]
pub fn generation_changes(new: &Value, old: &Value) -> bool {
    let annotations = |o: &Value| {
        o.pointer("/metadata/annotations").filter(|a| a.as_object().is_some_and(|m| !m.is_empty())).cloned()
    };
    super::spec_changed(new, old) || annotations(new) != annotations(old)
}

/// The status strategy's `PrepareForUpdate` (`pkg/registry/apps/deployment/strategy.go`): a
/// `/status` write keeps the stored spec and labels; the rest of the metadata (annotations,
/// finalizers, owner references) is the request's.
pub fn prepare_status_update(d: &mut Value, old: &Value) {
    let labels = old.pointer("/metadata/labels").cloned();
    let meta = crate::object_meta::meta_mut(d);
    match labels {
        Some(l) => meta.insert("labels".into(), l),
        None => meta.remove("labels"),
    };
}

/// `ValidateDeploymentStrategy` and `ValidateRollingUpdateDeployment`
/// (`pkg/apis/apps/validation/validation.go`): Recreate takes no rollingUpdate (a client
/// switching the type must remove it, which `kubectl apply` does with `$retainKeys`); a rolling
/// update's `maxUnavailable` and `maxSurge` are non-negative integers or percentages, not both 0,
/// and `maxUnavailable` is at most 100%.
fn strategy_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = Vec::new();
    let rolling = spec.pointer("/strategy/rollingUpdate").filter(|r| !r.is_null());
    match spec.pointer("/strategy/type").and_then(Value::as_str).unwrap_or("") {
        "Recreate" => {
            if rolling.is_some() {
                errs.push((
                    "spec.strategy.rollingUpdate".into(),
                    "Forbidden: may not be specified when strategy `type` is 'Recreate'".into(),
                ));
            }
        }
        "RollingUpdate" => {
            let Some(ru) = rolling else {
                errs.push((
                    "spec.strategy.rollingUpdate".into(),
                    "Required value: this should be defaulted and never be nil".into(),
                ));
                return errs;
            };
            let zero = json!(0);
            let unavailable = ru.get("maxUnavailable").filter(|v| !v.is_null()).unwrap_or(&zero);
            let surge = ru.get("maxSurge").filter(|v| !v.is_null()).unwrap_or(&zero);
            for (name, v) in [("maxUnavailable", unavailable), ("maxSurge", surge)] {
                errs.extend(workload::positive_int_or_percent(
                    v,
                    &format!("spec.strategy.rollingUpdate.{name}"),
                ));
            }
            if workload::int_or_percent_value(unavailable) == 0 && workload::int_or_percent_value(surge) == 0
            {
                errs.push((
                    "spec.strategy.rollingUpdate.maxUnavailable".into(),
                    format!(
                        "Invalid value: {}: may not be 0 when `maxSurge` is 0",
                        workload::int_or_string_go(unavailable)
                    ),
                ));
            }
            errs.extend(workload::not_more_than_100_percent(
                unavailable,
                "spec.strategy.rollingUpdate.maxUnavailable",
            ));
        }
        // Defaulting makes an absent type RollingUpdate: only an object validated without its
        // defaults (a unit test's) has none.
        "" => {}
        other => {
            let rolling_go = if rolling.is_some() {
                "(*apps.RollingUpdateDeployment)(0xc000000000)"
            } else {
                "(*apps.RollingUpdateDeployment)(nil)"
            };
            errs.push((
                "spec.strategy".into(),
                format!(
                    "Unsupported value: apps.DeploymentStrategy{{Type:{}, RollingUpdate:{rolling_go}}}: supported values: \"Recreate\", \"RollingUpdate\"",
                    crate::go_print::go_quote(other)
                ),
            ));
        }
    }
    errs
}

/// The end of `ValidateDeploymentSpec`: `minReadySeconds` and `revisionHistoryLimit` not
/// negative, `progressDeadlineSeconds` not negative and greater than `minReadySeconds`.
fn spec_count_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = Vec::new();
    let count = |k: &str| spec.get(k).and_then(Value::as_i64);
    let non_negative = |errs: &mut Vec<FieldError>, k: &str, n: i64| {
        if n < 0 {
            errs.push((
                format!("spec.{k}"),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    };
    let min_ready = count("minReadySeconds").unwrap_or(0);
    non_negative(&mut errs, "minReadySeconds", min_ready);
    if let Some(n) = count("revisionHistoryLimit") {
        non_negative(&mut errs, "revisionHistoryLimit", n);
    }
    if let Some(n) = count("progressDeadlineSeconds") {
        non_negative(&mut errs, "progressDeadlineSeconds", n);
        if n <= min_ready {
            errs.push((
                "spec.progressDeadlineSeconds".into(),
                format!("Invalid value: {n}: must be greater than minReadySeconds"),
            ));
        }
    }
    errs
}

/// `ValidateDeploymentStatus`: counts are non-negative, and none exceeds what it is part of. (On
/// the main endpoint the status is the stored one, so only `/status` writes can fail these.)
fn status_errors(d: &Value) -> Vec<FieldError> {
    let Some(status) = d.get("status").filter(|s| s.is_object()) else { return Vec::new() };
    let count = |k: &str| status.get(k).and_then(Value::as_i64);
    let mut errs = Vec::new();
    for k in [
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "collisionCount",
    ] {
        if let Some(n) = count(k).filter(|n| *n < 0) {
            errs.push((
                format!("status.{k}"),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    }
    let replicas = count("replicas").unwrap_or(0);
    // The Go type's counts are int32s: an absent one is 0, and compared as such.
    let more_than = |k: &str, limit: i64, what: &str| {
        Some(count(k).unwrap_or(0))
            .filter(|n| *n > limit)
            .map(|n| (format!("status.{k}"), format!("Invalid value: {n}: cannot be greater than {what}")))
    };
    errs.extend(more_than("updatedReplicas", replicas, "status.replicas"));
    errs.extend(more_than("readyReplicas", replicas, "status.replicas"));
    errs.extend(more_than("availableReplicas", replicas, "status.replicas"));
    errs.extend(more_than("availableReplicas", count("readyReplicas").unwrap_or(0), "readyReplicas"));
    errs
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal valid Deployment, for the tests of what acts on Deployments.
    pub(crate) fn web() -> Value {
        json!({
            "metadata": { "name": "web" },
            "spec": {
                "selector": { "matchLabels": { "app": "web" } },
                "template": { "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [{ "name": "web", "image": "nginx:1.27" }] } },
            },
        })
    }

    #[test]
    fn defaults_fill_what_the_api_server_fills() {
        let mut d = web();
        default(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert!(validate(&d, None).is_empty());
    }

    #[test]
    fn validation_names_the_field() {
        let mut d = web();
        // Validated as the server validates it: defaulted first.
        default(&mut d);
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["template"]["metadata"]["labels"]["app"] = json!("other");
        let errs = validate(&d, None);
        let fields: Vec<_> = errs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["spec.replicas", "spec.template.metadata.labels"]);

        let mut no_sel = web();
        no_sel["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(validate(&no_sel, None)[0].0, "spec.selector");

        let mut changed = web();
        changed["spec"]["selector"]["matchLabels"]["tier"] = json!("x");
        changed["spec"]["template"]["metadata"]["labels"]["tier"] = json!("x");
        default(&mut changed);
        assert!(validate(&changed, Some(&web()))[0].1.contains("immutable"));
    }
}
