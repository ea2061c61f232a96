//! The disruption controller: each PodDisruptionBudget's status from the pods it selects — how
//! many are expected and healthy, how many must stay healthy (`minAvailable`, or the expected
//! less `maxUnavailable`, percentages of the expected rounded up), and so how many disruptions
//! are allowed now — which the eviction API then spends. `kubectl drain` waits on it.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::api::{Api, pod_active, pod_ready, set_condition};
use super::{Controller, Queue, Timers, log_failure};
use crate::object_meta::meta_str;
use crate::selector::selector_matches;

/// How long an eviction's entry in `disruptedPods` is kept when the pod is not deleted
/// (upstream's `DeletionTimeout`).
const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(120);

/// `minAvailable` or `maxUnavailable` as a count of `expected` (percentages rounded up).
fn scaled(v: &Value, expected: i64) -> i64 {
    match v {
        Value::String(s) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * expected + 99) / 100
        }
        other => other.as_i64().unwrap_or(0),
    }
}

/// Syncs each queued budget (an entry with no name: every budget of the namespace).
pub(crate) fn sync(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    let now = api.clock.now();
    for (ns, name) in queue {
        let budgets = if name.is_empty() {
            api.list(api.defs.budgets, Some(ns))
        } else {
            api.get(api.defs.budgets, ns, name).into_iter().collect()
        };
        if budgets.is_empty() {
            continue;
        }
        let pods = api.list(api.defs.pods, Some(ns));
        for pdb in budgets {
            let selector = pdb.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
            // A budget with no selector selects nothing in policy/v1.
            let selected: Vec<_> = pods
                .iter()
                .filter(|p| pod_active(p))
                .filter(|p| {
                    !selector.is_null()
                        && selector_matches(
                            &selector,
                            p.pointer("/metadata/labels").and_then(Value::as_object).unwrap_or(&Map::new()),
                        )
                })
                .collect();
            let expected = i64::try_from(selected.len()).unwrap_or(0);
            let healthy = i64::try_from(selected.iter().filter(|p| pod_ready(p)).count()).unwrap_or(0);
            let spec = pdb.get("spec").cloned().unwrap_or_default();
            let desired = match (spec.get("minAvailable"), spec.get("maxUnavailable")) {
                (Some(min), _) => scaled(min, expected),
                (None, Some(max)) => (expected - scaled(max, expected)).max(0),
                (None, None) => 0,
            };
            // Evictions still in flight count against the budget until their pod goes or they
            // time out.
            let mut disrupted = Map::new();
            for (pod, at) in
                pdb.pointer("/status/disruptedPods").and_then(Value::as_object).into_iter().flatten()
            {
                let Some(t) = at.as_str().and_then(|t| t.parse::<Timestamp>().ok()) else { continue };
                let still = selected.iter().any(|p| meta_str(p, "name") == pod);
                let expires = t.saturating_add(DELETION_TIMEOUT).unwrap_or(t);
                if still && expires > now {
                    disrupted.insert(pod.clone(), at.clone());
                    timers.at(expires, Controller::Disruption, ns, meta_str(&pdb, "name"));
                }
            }
            let in_flight = i64::try_from(disrupted.len()).unwrap_or(0);
            let allowed = (healthy - in_flight - desired).max(0);
            let mut conditions: Vec<Value> =
                pdb.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            let (reason, message) =
                if allowed > 0 { ("SufficientPods", "") } else { ("InsufficientPods", "") };
            set_condition(
                &mut conditions,
                "DisruptionAllowed",
                allowed > 0,
                reason,
                message,
                &api.clock.rfc3339(),
                false,
            );
            for c in &mut conditions {
                if c["type"] == "DisruptionAllowed" {
                    c["observedGeneration"] =
                        pdb.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
                }
            }
            let mut status = json!({
                "observedGeneration": pdb.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
                "disruptionsAllowed": allowed,
                "currentHealthy": healthy,
                "desiredHealthy": desired,
                "expectedPods": expected,
                "conditions": conditions,
            });
            if !disrupted.is_empty() {
                status["disruptedPods"] = Value::Object(disrupted);
            }
            if let Err(e) = api.write_status(api.defs.budgets, &pdb, status, "kube-controller-manager") {
                log_failure(Controller::Disruption, meta_str(&pdb, "name"), &e);
            }
        }
    }
}
