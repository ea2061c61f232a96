//! The horizontal pod autoscaler: every 15 s on the clock (the first time 15 s after it is
//! created), each HorizontalPodAutoscaler reads
//! its target's scale, the pods the target selects and their resource metrics (what
//! `metrics.k8s.io` reports), and sets the target's replicas as kube-controller-manager's
//! `podautoscaler` does — upstream's replica calculation (the 10 % tolerance, unready and
//! missing pods), its stabilization windows and scaling policies (`behavior`, or the 5 min
//! downscale window without one), its status (`currentMetrics`, `desiredReplicas`,
//! `lastScaleTime`) and its three conditions in its words.
//!
//! Resource metrics only (`Resource` with `Utilization` or `AverageValue` targets); a metric of
//! another type makes the autoscaler inactive (`ScalingActive` false), as one whose metrics API
//! is missing is.
//!
//! Decisions are pure ([`replicas_for_resource`], [`Autoscalers::normalize`]); [`sync`] reads
//! and writes.

use std::collections::HashMap;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::api::{Api, set_condition};
use super::{Controller, Queue, Timers, log_failure};
use crate::object_meta::{is_deleting, meta_str};
use crate::quantity::Quantity;
use crate::resource::ResourceDef;
use crate::selector::selector_matches;
use crate::status::ApiError;

/// How often each autoscaler looks (`--horizontal-pod-autoscaler-sync-period`).
pub(crate) const SYNC_PERIOD: SignedDuration = SignedDuration::from_secs(15);
/// A usage this close to the target changes nothing (`--horizontal-pod-autoscaler-tolerance`).
const TOLERANCE: f64 = 0.1;
/// The downscale stabilization window without a `behavior`.
const DOWNSCALE_WINDOW: SignedDuration = SignedDuration::from_secs(300);
/// How long after its start a pod's CPU samples may still be from its start-up.
const CPU_INITIALIZATION: SignedDuration = SignedDuration::from_secs(300);
/// How long after its start a pod that never was ready is taken as still starting.
const INITIAL_READINESS_DELAY: SignedDuration = SignedDuration::from_secs(30);
/// The window the metrics cover (metrics-server's).
const METRIC_WINDOW: SignedDuration = SignedDuration::from_secs(15);
/// Who writes.
const MANAGER: &str = "kube-controller-manager";

/// What the autoscalers remember: recent recommendations and scale events, per autoscaler.
#[derive(Default)]
pub(crate) struct Autoscalers {
    recommendations: HashMap<(String, String), Vec<(Timestamp, i64)>>,
    ups: HashMap<(String, String), Vec<(Timestamp, i64)>>,
    downs: HashMap<(String, String), Vec<(Timestamp, i64)>>,
}

/// A pod as the replica calculation sees it: its name, what its containers request of the
/// resource (milli-units), what it uses (milli-units) if it has metrics, and whether its CPU
/// sample counts (it is ready and past its start-up).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodSample {
    pub(crate) name: String,
    pub(crate) request: Option<i128>,
    pub(crate) usage: Option<i128>,
    pub(crate) ignored: bool,
    pub(crate) unready: bool,
}

/// What a resource metric asks: a utilization of the requests, or an average value per pod.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Target {
    Utilization(i64),
    AverageValue(i128),
}

/// The replica count a resource metric proposes, with the utilization (percent, when the
/// target is one) and the raw average (milli-units) it saw: upstream's `GetResourceReplicas`
/// and `GetRawResourceReplicas`.
///
/// # Errors
///
/// Upstream's messages: no pods, no metrics, a container without a request.
pub(crate) fn replicas_for_resource(
    current: i64,
    resource: &str,
    pods: &[PodSample],
    target: Target,
) -> Result<(i64, Option<i64>, i128), String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let counted: Vec<&PodSample> = pods.iter().filter(|p| !p.ignored).collect();
    let with_metrics: Vec<&PodSample> = counted.iter().copied().filter(|p| p.usage.is_some()).collect();
    let ready: Vec<&PodSample> = with_metrics.iter().copied().filter(|p| !p.unready).collect();
    let unready: Vec<&PodSample> = with_metrics.iter().copied().filter(|p| p.unready).collect();
    let missing: Vec<&PodSample> = counted.iter().copied().filter(|p| p.usage.is_none()).collect();
    if ready.is_empty() {
        return Err(format!(
            "unable to get metrics for resource {resource}: did not receive metrics for targeted pods (pods might be unready)"
        ));
    }
    let ratio = |samples: &[(i128, i128)]| -> Result<(f64, Option<i64>, i128), String> {
        let used: i128 = samples.iter().map(|(u, _)| u).sum();
        let n = i128::try_from(samples.len()).unwrap_or(1).max(1);
        match target {
            Target::Utilization(t) => {
                let requested: i128 = samples.iter().map(|(_, r)| r).sum();
                if requested == 0 {
                    return Err("no metrics returned matched known pods".into());
                }
                let utilization = i64::try_from(used * 100 / requested).unwrap_or(i64::MAX);
                #[allow(clippy::cast_precision_loss)]
                Ok((utilization as f64 / t.max(1) as f64, Some(utilization), used / n))
            }
            Target::AverageValue(v) =>
            {
                #[allow(clippy::cast_precision_loss)]
                Ok((used as f64 / (v.max(1) as f64 * n as f64), None, used / n))
            }
        }
    };
    let request = |p: &PodSample| -> Result<i128, String> {
        match (target, p.request) {
            (Target::AverageValue(_), r) => Ok(r.unwrap_or(0)),
            (Target::Utilization(_), Some(r)) => Ok(r),
            (Target::Utilization(_), None) => {
                Err(format!("missing request for {resource} in Pod {}", p.name))
            }
        }
    };
    let samples: Vec<(i128, i128)> =
        ready.iter().map(|p| Ok((p.usage.unwrap_or(0), request(p)?))).collect::<Result<_, String>>()?;
    let (usage_ratio, utilization, raw) = ratio(&samples)?;
    let with_unready = !unready.is_empty() && usage_ratio > 1.0;
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let scaled = |ratio: f64, n: usize| (ratio * n as f64).ceil() as i64;
    if !with_unready && missing.is_empty() {
        if (1.0 - usage_ratio).abs() <= TOLERANCE {
            return Ok((current, utilization, raw));
        }
        return Ok((scaled(usage_ratio, ready.len()), utilization, raw));
    }
    // Missing pods count as using their requests when scaling down (at least the target), as
    // using nothing when scaling up; unready pods as using nothing when scaling up.
    let mut all = samples;
    for p in &missing {
        let r = request(p)?;
        let assumed = match target {
            Target::Utilization(t) if usage_ratio < 1.0 => r * i128::from(t.max(100)) / 100,
            Target::AverageValue(v) if usage_ratio < 1.0 => v,
            _ => 0,
        };
        all.push((assumed, r));
    }
    if with_unready {
        for p in &unready {
            all.push((0, request(p)?));
        }
    }
    let (new_ratio, ..) = ratio(&all)?;
    if (1.0 - new_ratio).abs() <= TOLERANCE
        || (usage_ratio < 1.0 && new_ratio > 1.0)
        || (usage_ratio > 1.0 && new_ratio < 1.0)
    {
        return Ok((current, utilization, raw));
    }
    let proposed = scaled(new_ratio, all.len());
    if (new_ratio < 1.0 && proposed > current) || (new_ratio > 1.0 && proposed < current) {
        return Ok((current, utilization, raw));
    }
    Ok((proposed, utilization, raw))
}

/// A condition the normalization sets: its type, status, reason and message.
type Said = (&'static str, bool, &'static str, &'static str);

/// One direction's scaling rules of a `behavior`.
struct Rules {
    window: SignedDuration,
    select: String,
    policies: Vec<(String, i64, SignedDuration)>,
}

impl Rules {
    fn of(v: Option<&Value>) -> Option<Self> {
        let v = v?;
        Some(Self {
            window: SignedDuration::from_secs(v["stabilizationWindowSeconds"].as_i64().unwrap_or(0)),
            select: v["selectPolicy"].as_str().unwrap_or("Max").to_owned(),
            policies: v["policies"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    let kind = p["type"].as_str().unwrap_or("").to_owned();
                    (
                        kind,
                        p["value"].as_i64().unwrap_or(0),
                        SignedDuration::from_secs(p["periodSeconds"].as_i64().unwrap_or(0)),
                    )
                })
                .collect(),
        })
    }

    fn longest_period(&self) -> SignedDuration {
        self.policies.iter().map(|p| p.2).max().unwrap_or(SignedDuration::ZERO)
    }
}

/// The replicas changed within `period` before `now`.
fn changed_within(events: &[(Timestamp, i64)], period: SignedDuration, now: Timestamp) -> i64 {
    let cutoff = now.checked_sub(period).unwrap_or(now);
    events.iter().filter(|(t, _)| *t > cutoff).map(|(_, n)| n).sum()
}

impl Autoscalers {
    /// `normalizeDesiredReplicas(WithBehaviors)`: the proposal stabilized over the recent
    /// recommendations, then held to the scaling rate and the replica bounds; with the
    /// `AbleToScale` and `ScalingLimited` conditions that say why.
    #[allow(clippy::too_many_arguments)]
    fn normalize(
        &mut self,
        key: &(String, String),
        behavior: Option<&Value>,
        current: i64,
        proposed: i64,
        min: i64,
        max: i64,
        now: Timestamp,
    ) -> (i64, [Said; 2]) {
        let up_rules = behavior.and_then(|b| Rules::of(b.get("scaleUp")));
        let down_rules = behavior.and_then(|b| Rules::of(b.get("scaleDown")));
        let recs = self.recommendations.entry(key.clone()).or_default();
        let (stabilized, why) = match (&up_rules, &down_rules) {
            (Some(up), Some(down)) => {
                let (up_cut, down_cut) = (now - up.window, now - down.window);
                let (mut up_rec, mut down_rec) = (proposed, proposed);
                for (t, r) in recs.iter() {
                    if *t > up_cut {
                        up_rec = up_rec.min(*r);
                    }
                    if *t > down_cut {
                        down_rec = down_rec.max(*r);
                    }
                }
                recs.retain(|(t, _)| *t >= up_cut || *t >= down_cut);
                let stabilized = current.max(up_rec).min(down_rec);
                let why = if proposed >= current {
                    (
                        "ScaleUpStabilized",
                        "recent recommendations were lower than current one, applying the lowest recent recommendation",
                    )
                } else {
                    (
                        "ScaleDownStabilized",
                        "recent recommendations were higher than current one, applying the highest recent recommendation",
                    )
                };
                (stabilized, why)
            }
            _ => {
                let cut = now - DOWNSCALE_WINDOW;
                recs.retain(|(t, _)| *t >= cut);
                let stabilized = recs.iter().map(|(_, r)| *r).fold(proposed, i64::max);
                (
                    stabilized,
                    (
                        "ScaleDownStabilized",
                        "recent recommendations were higher than current one, applying the highest recent recommendation",
                    ),
                )
            }
        };
        recs.push((now, proposed));
        let able = if stabilized == proposed {
            ("AbleToScale", true, "ReadyForNewScale", "recommended size matches current size")
        } else {
            ("AbleToScale", true, why.0, why.1)
        };
        let (desired, reason, message) = match (&up_rules, &down_rules) {
            (Some(up), Some(down)) => self.rate_limited(key, up, down, current, stabilized, min, max, now),
            _ => legacy_bounds(current, stabilized, min, max),
        };
        let limited = ("ScalingLimited", desired != stabilized, reason, message);
        (desired, [able, limited])
    }

    /// `convertDesiredReplicasWithBehaviorRate`.
    #[allow(clippy::too_many_arguments)]
    fn rate_limited(
        &self,
        key: &(String, String),
        up: &Rules,
        down: &Rules,
        current: i64,
        desired: i64,
        min: i64,
        max: i64,
        now: Timestamp,
    ) -> (i64, &'static str, &'static str) {
        let ups = self.ups.get(key).map_or(&[][..], Vec::as_slice);
        let downs = self.downs.get(key).map_or(&[][..], Vec::as_slice);
        let start = |period| current - changed_within(ups, period, now) + changed_within(downs, period, now);
        if desired > current {
            let limit = if up.select == "Disabled" {
                current
            } else {
                let proposals = up.policies.iter().map(|(kind, value, period)| {
                    let from = start(*period);
                    if kind == "Pods" {
                        from + value
                    } else {
                        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                        let p = (from as f64 * (1.0 + *value as f64 / 100.0)).ceil() as i64;
                        p
                    }
                });
                let picked = if up.select == "Min" { proposals.min() } else { proposals.max() };
                picked.unwrap_or(current).max(current)
            };
            let (allowed, reason, message) = ceiling(limit, max);
            if desired > allowed {
                return (allowed, reason, message);
            }
        } else if desired < current {
            let limit = if down.select == "Disabled" {
                current
            } else {
                let proposals = down.policies.iter().map(|(kind, value, period)| {
                    let from = start(*period);
                    if kind == "Pods" {
                        from - value
                    } else {
                        #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                        let p = (from as f64 * (1.0 - *value as f64 / 100.0)) as i64;
                        p
                    }
                });
                let picked = if down.select == "Min" { proposals.max() } else { proposals.min() };
                picked.unwrap_or(current).min(current)
            };
            let (allowed, reason, message) = if min < limit {
                (
                    limit,
                    "ScaleDownLimit",
                    "the desired replica count is decreasing faster than the maximum scale rate",
                )
            } else {
                (min, "TooFewReplicas", "the desired replica count is less than the minimum replica count")
            };
            if desired < allowed {
                return (allowed, reason, message);
            }
        }
        (desired, "DesiredWithinRange", "the desired count is within the acceptable range")
    }

    /// `storeScaleEvent`: a change of the target's replicas, kept for the policies' periods.
    fn record_scale(
        &mut self,
        key: &(String, String),
        behavior: Option<&Value>,
        from: i64,
        to: i64,
        now: Timestamp,
    ) {
        let Some(behavior) = behavior else { return };
        let (events, rules, change) = if to > from {
            (self.ups.entry(key.clone()).or_default(), Rules::of(behavior.get("scaleUp")), to - from)
        } else {
            (self.downs.entry(key.clone()).or_default(), Rules::of(behavior.get("scaleDown")), from - to)
        };
        let period = rules.map_or(SignedDuration::ZERO, |r| r.longest_period());
        events.retain(|(t, _)| *t >= now - period);
        events.push((now, change));
    }

    /// Forgets an autoscaler that is gone.
    fn forget(&mut self, key: &(String, String)) {
        self.recommendations.remove(key);
        self.ups.remove(key);
        self.downs.remove(key);
    }
}

/// The most replicas a scale-up may reach: the scaling rate's `limit`, or the maximum when that
/// is lower, with the reason either gives.
fn ceiling(limit: i64, max: i64) -> (i64, &'static str, &'static str) {
    if max > limit {
        (limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
    } else {
        (max, "TooManyReplicas", "the desired replica count is more than the maximum replica count")
    }
}

/// `convertDesiredReplicasWithRules`: without a `behavior`, no more than twice the current
/// replicas (at least 4) at once, within the bounds.
fn legacy_bounds(current: i64, desired: i64, min: i64, max: i64) -> (i64, &'static str, &'static str) {
    let (ceiling, reason, message) = ceiling((current * 2).max(4), max);
    if desired < min {
        return (min, "TooFewReplicas", "the desired replica count is less than the minimum replica count");
    }
    if desired > ceiling {
        return (ceiling, reason, message);
    }
    (desired, "DesiredWithinRange", "the desired count is within the acceptable range")
}

/// The scalable kinds an autoscaler may target, by `apiVersion` and `kind`.
fn target_def(api: &Api<'_>, api_version: &str, kind: &str) -> Option<&'static ResourceDef> {
    let d = api.defs;
    [d.deployments, d.replicasets, d.statefulsets, d.controllers].into_iter().find(|def| {
        def.kind == kind
            && (api_version.is_empty()
                || def.api_version() == api_version
                || api_version.split('/').next() == Some(def.group))
    })
}

/// A pod's request of `resource`, in milli-units, if every container requests it.
fn pod_request(pod: &Value, resource: &str) -> Option<i128> {
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .map(|c| {
            c.pointer(&format!("/resources/requests/{resource}"))
                .and_then(Value::as_str)
                .and_then(|q| Quantity::parse(q).ok())
                .map(Quantity::milli_value)
        })
        .sum()
}

/// `groupPods`: how each selected pod counts for `resource`, with its usage from `usage`.
fn samples(pods: &[&Value], resource: &str, usage: &HashMap<String, i128>, now: Timestamp) -> Vec<PodSample> {
    pods.iter()
        .map(|pod| {
            let name = meta_str(pod, "name").to_owned();
            let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
            let ignored = is_deleting(pod) || matches!(phase, "Failed" | "Pending");
            let used = usage.get(&name).copied();
            let unready = resource == "cpu" && used.is_some() && cpu_unready(pod, now);
            PodSample { request: pod_request(pod, resource), usage: used, ignored, unready, name }
        })
        .collect()
}

/// Whether a pod's CPU sample is left out: not ready, or still starting.
fn cpu_unready(pod: &Value, now: Timestamp) -> bool {
    let time = |p: &str| pod.pointer(p).and_then(Value::as_str).and_then(|t| t.parse::<Timestamp>().ok());
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    let (Some(ready), Some(started)) = (ready, time("/status/startTime")) else { return true };
    let since =
        ready["lastTransitionTime"].as_str().and_then(|t| t.parse::<Timestamp>().ok()).unwrap_or(started);
    let is_ready = ready["status"] == "True";
    if started + CPU_INITIALIZATION > now {
        // The sample must cover a whole window since readiness changed.
        !is_ready || now < since + METRIC_WINDOW
    } else {
        !is_ready && started + INITIAL_READINESS_DELAY > since
    }
}

/// Syncs each queued autoscaler, and looks again after the sync period.
pub(crate) fn sync(
    api: &Api<'_>,
    state: &mut Autoscalers,
    containers: &crate::container_runtime::Containers,
    queue: &Queue,
    timers: &mut Timers,
) {
    let def = api.defs.autoscalers;
    for (ns, name) in queue {
        let key = (ns.clone(), name.clone());
        let Some(hpa) = api.get(def, ns, name) else {
            state.forget(&key);
            continue;
        };
        if is_deleting(&hpa) {
            continue;
        }
        let now = api.clock.now();
        if let Err(e) = sync_one(api, state, containers, &key, &hpa, now) {
            log_failure(Controller::HorizontalPodAutoscaler, name, &e);
        }
        timers.at(now + SYNC_PERIOD, Controller::HorizontalPodAutoscaler, ns, name);
    }
}

/// What one look found for the status: replicas, metrics, conditions.
struct Look {
    current: i64,
    desired: i64,
    metrics: Option<Value>,
    conditions: Vec<Value>,
    rescaled: bool,
}

fn sync_one(
    api: &Api<'_>,
    state: &mut Autoscalers,
    containers: &crate::container_runtime::Containers,
    key: &(String, String),
    hpa: &Value,
    now: Timestamp,
) -> Result<(), ApiError> {
    let stamp = crate::clock::seconds(now);
    let spec = hpa.get("spec").cloned().unwrap_or_default();
    let mut conditions: Vec<Value> =
        hpa.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let set = |conditions: &mut Vec<Value>, (kind, status, reason, message): (&str, bool, &str, &str)| {
        set_condition(conditions, kind, status, reason, message, &stamp, false);
    };
    let target = &spec["scaleTargetRef"];
    let (kind, target_name) = (target["kind"].as_str().unwrap_or(""), target["name"].as_str().unwrap_or(""));
    let target_def = target_def(api, target["apiVersion"].as_str().unwrap_or(""), kind);
    let found = target_def.and_then(|d| api.get(d, &key.0, target_name).map(|o| (d, o)));
    let Some((tdef, scaled)) = found else {
        let why = match target_def {
            Some(d) => format!(
                "{}{} \"{target_name}\" not found",
                d.plural,
                if d.group.is_empty() { String::new() } else { format!(".{}", d.group) }
            ),
            None => format!(
                "no matches for kind \"{kind}\" in group \"{}\"",
                target["apiVersion"].as_str().unwrap_or("").split('/').next().unwrap_or("")
            ),
        };
        let message = format!("the HPA controller was unable to get the target's current scale: {why}");
        set(&mut conditions, ("AbleToScale", false, "FailedGetScale", &message));
        api.event(api.defs.autoscalers, hpa, true, "FailedGetScale", &why, "horizontal-pod-autoscaler");
        let current = hpa.pointer("/status/currentReplicas").and_then(Value::as_i64).unwrap_or(0);
        let desired = hpa.pointer("/status/desiredReplicas").and_then(Value::as_i64).unwrap_or(0);
        let metrics = hpa.pointer("/status/currentMetrics").cloned();
        return write(api, hpa, &Look { current, desired, metrics, conditions, rescaled: false }, &stamp);
    };
    set(
        &mut conditions,
        (
            "AbleToScale",
            true,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        ),
    );
    let current = scaled.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let min = spec["minReplicas"].as_i64().unwrap_or(1);
    let max = spec["maxReplicas"].as_i64().unwrap_or(1);
    state.recommendations.entry(key.clone()).or_insert_with(|| vec![(now, current)]);
    let behavior = spec.get("behavior").filter(|b| b.is_object());
    let mut metrics = None;
    let (desired, reason) = if current == 0 && min != 0 {
        set(
            &mut conditions,
            (
                "ScalingActive",
                false,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            ),
        );
        (0, String::new())
    } else if current > max {
        (max, "Current number of replicas above Spec.MaxReplicas".to_owned())
    } else if current < min {
        (min, "Current number of replicas below Spec.MinReplicas".to_owned())
    } else {
        let selector = scaled.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
        let pods = api.list(api.defs.pods, Some(&key.0));
        let empty = Map::new();
        let selected: Vec<&Value> = pods
            .iter()
            .map(AsRef::as_ref)
            .filter(|p| {
                selector_matches(
                    &selector,
                    p.pointer("/metadata/labels").and_then(Value::as_object).unwrap_or(&empty),
                )
            })
            .collect();
        match proposals(containers, &spec, current, &selected, now) {
            Ok((proposed, name, statuses)) => {
                metrics = Some(json!(statuses));
                let message =
                    format!("the HPA was able to successfully calculate a replica count from {name}");
                set(&mut conditions, ("ScalingActive", true, "ValidMetricFound", &message));
                let (desired, said) = state.normalize(key, behavior, current, proposed, min, max, now);
                for s in said {
                    set(&mut conditions, s);
                }
                let reason = if proposed > current {
                    format!("{name} above target")
                } else {
                    "All metrics below target".to_owned()
                };
                (desired, reason)
            }
            Err((reason, message, statuses)) => {
                metrics = Some(json!(statuses));
                let full = format!("the HPA was unable to compute the replica count: {message}");
                set(&mut conditions, ("ScalingActive", false, reason, &full));
                api.event(
                    api.defs.autoscalers,
                    hpa,
                    true,
                    "FailedComputeMetricsReplicas",
                    &format!("invalid metrics (1 invalid out of 1), first error is: {message}"),
                    "horizontal-pod-autoscaler",
                );
                let current_metrics = hpa.pointer("/status/currentMetrics").cloned();
                let look = Look {
                    current,
                    desired: hpa
                        .pointer("/status/desiredReplicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(current),
                    metrics: metrics.or(current_metrics),
                    conditions,
                    rescaled: false,
                };
                return write(api, hpa, &look, &stamp);
            }
        }
    };
    let rescaled = desired != current && !(current == 0 && min != 0);
    if rescaled {
        let mut changed = (*scaled).clone();
        changed["spec"]["replicas"] = json!(desired);
        if let Err(e) = api.update(tdef, changed, MANAGER) {
            let message = format!("the HPA controller was unable to update the target scale: {}", e.message);
            set(&mut conditions, ("AbleToScale", false, "FailedUpdateScale", &message));
            api.event(
                api.defs.autoscalers,
                hpa,
                true,
                "FailedRescale",
                &format!("New size: {desired}; reason: {reason}; error: {}", e.message),
                "horizontal-pod-autoscaler",
            );
            return write(
                api,
                hpa,
                &Look { current, desired: current, metrics, conditions, rescaled: false },
                &stamp,
            );
        }
        let message = format!("the HPA controller was able to update the target scale to {desired}");
        set(&mut conditions, ("AbleToScale", true, "SucceededRescale", &message));
        api.event(
            api.defs.autoscalers,
            hpa,
            false,
            "SuccessfulRescale",
            &format!("New size: {desired}; reason: {reason}"),
            "horizontal-pod-autoscaler",
        );
        state.record_scale(key, behavior, current, desired, now);
    }
    let desired = if rescaled { desired } else { current };
    write(api, hpa, &Look { current, desired, metrics, conditions, rescaled }, &stamp)
}

/// The largest proposal of the autoscaler's metrics, the name of the metric that made it,
/// and each metric's status; or the first failure's reason and message.
#[allow(clippy::type_complexity)]
fn proposals(
    containers: &crate::container_runtime::Containers,
    spec: &Value,
    current: i64,
    pods: &[&Value],
    now: Timestamp,
) -> Result<(i64, String, Vec<Value>), (&'static str, String, Vec<Value>)> {
    let told = |ns: &str, pod: &str, container: &str| containers.usage(ns, pod, container);
    let mut best: Option<(i64, String)> = None;
    let mut statuses = Vec::new();
    let mut first_error = None;
    for metric in spec["metrics"].as_array().into_iter().flatten() {
        let kind = metric["type"].as_str().unwrap_or("");
        if kind != "Resource" {
            first_error.get_or_insert((
                "FailedGetExternalMetric",
                format!("unable to get metric of type {kind}: the sandbox serves resource metrics only"),
            ));
            continue;
        }
        let resource = metric.pointer("/resource/name").and_then(Value::as_str).unwrap_or("");
        let target = &metric["resource"]["target"];
        let goal = match target["type"].as_str() {
            Some("Utilization") => Target::Utilization(target["averageUtilization"].as_i64().unwrap_or(80)),
            _ => Target::AverageValue(
                target["averageValue"]
                    .as_str()
                    .and_then(|q| Quantity::parse(q).ok())
                    .map_or(0, Quantity::milli_value),
            ),
        };
        // What metrics.k8s.io reports of each pod that has metrics: its running containers' usage.
        let usage: HashMap<String, i128> = pods
            .iter()
            .filter_map(|pod| {
                let used = crate::metrics::pod_usage(&told, pod);
                let total = used.iter().map(|(_, u)| u.of(resource).milli_value()).sum();
                (!used.is_empty()).then(|| (meta_str(pod, "name").to_owned(), total))
            })
            .collect();
        let name = match goal {
            Target::Utilization(_) => format!("{resource} resource utilization (percentage of request)"),
            Target::AverageValue(_) => format!("{resource} resource"),
        };
        match replicas_for_resource(current, resource, &samples(pods, resource, &usage, now), goal) {
            Ok((replicas, utilization, raw)) => {
                let mut current_value = json!({ "averageValue": milli(raw) });
                if let Some(u) = utilization {
                    current_value["averageUtilization"] = json!(u);
                }
                statuses.push(
                    json!({ "type": "Resource", "resource": { "name": resource, "current": current_value } }),
                );
                if best.as_ref().is_none_or(|(r, _)| replicas > *r) {
                    best = Some((replicas, name));
                }
            }
            Err(message) => {
                first_error.get_or_insert(("FailedGetResourceMetric", message));
            }
        }
    }
    match (best, first_error) {
        (Some((replicas, name)), _) => Ok((replicas, name, statuses)),
        (None, Some((reason, message))) => Err((reason, message, statuses)),
        (None, None) => {
            Err(("FailedGetResourceMetric", "no metrics to compute a replica count from".into(), statuses))
        }
    }
}

/// A milli-unit amount as a quantity's text (`NewMilliQuantity(v, DecimalSI)`).
fn milli(v: i128) -> String {
    Quantity::parse(&format!("{v}m")).map(|q| q.to_string()).unwrap_or_else(|_| format!("{v}m"))
}

/// Writes the autoscaler's status when it changed.
fn write(api: &Api<'_>, hpa: &Value, look: &Look, stamp: &str) -> Result<(), ApiError> {
    let mut status = hpa.get("status").cloned().unwrap_or_else(|| json!({}));
    status["currentReplicas"] = json!(look.current);
    status["desiredReplicas"] = json!(look.desired);
    status["currentMetrics"] = look.metrics.clone().unwrap_or(Value::Null);
    status["conditions"] = json!(look.conditions);
    if look.rescaled {
        status["lastScaleTime"] = json!(stamp);
    }
    if hpa.get("status") == Some(&status) {
        return Ok(());
    }
    api.write_status(api.defs.autoscalers, hpa, status, MANAGER).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, request: i128, usage: Option<i128>) -> PodSample {
        PodSample { name: name.into(), request: Some(request), usage, ignored: false, unready: false }
    }

    #[test]
    fn the_replica_count_follows_the_utilization_within_the_tolerance() {
        let at = |u| vec![pod("a", 100, Some(u)), pod("b", 100, Some(u))];
        // 105 % of a 100 % target is within the 10 % tolerance: no change.
        assert_eq!(
            replicas_for_resource(2, "cpu", &at(105), Target::Utilization(100)),
            Ok((2, Some(105), 105))
        );
        // 250 % of a 50 % target: five times the ready pods.
        assert_eq!(replicas_for_resource(2, "cpu", &at(125), Target::Utilization(50)).unwrap().0, 5);
        assert_eq!(replicas_for_resource(2, "cpu", &at(10), Target::Utilization(50)).unwrap().0, 1);
        // An average value per pod.
        assert_eq!(replicas_for_resource(2, "memory", &at(300), Target::AverageValue(100)).unwrap().0, 6);
    }

    #[test]
    fn missing_and_unready_pods_damp_the_change_as_upstream_does() {
        // Scaling down, a pod without metrics counts as using its request: 3 pods at
        // (10 + 10 + 100) / 300 = 40 % of a 50 % target is 0.8 → ceil(2.4) = 3: no change.
        let pods = vec![pod("a", 100, Some(10)), pod("b", 100, Some(10)), pod("c", 100, None)];
        assert_eq!(replicas_for_resource(3, "cpu", &pods, Target::Utilization(50)).unwrap().0, 3);
        // Scaling up, an unready pod counts as using nothing.
        let mut unready = pod("c", 100, Some(500));
        unready.unready = true;
        let pods = vec![pod("a", 100, Some(100)), pod("b", 100, Some(100)), unready];
        // Ready pods at 100 % of 50 %: ratio 2; with c at 0: 200 / 300 = 66 % → 1.33 → 4 pods.
        assert_eq!(replicas_for_resource(3, "cpu", &pods, Target::Utilization(50)).unwrap().0, 4);
        let none: Vec<PodSample> = Vec::new();
        assert_eq!(
            replicas_for_resource(1, "cpu", &none, Target::Utilization(50)).unwrap_err(),
            "no pods returned by selector while calculating replica count"
        );
        let no_request = vec![PodSample { request: None, ..pod("a", 0, Some(5)) }];
        assert_eq!(
            replicas_for_resource(1, "cpu", &no_request, Target::Utilization(50)).unwrap_err(),
            "missing request for cpu in Pod a"
        );
    }

    #[test]
    fn scaling_rules_limit_the_rate_and_the_window_holds_a_scale_down() {
        let key = ("default".to_owned(), "web".to_owned());
        let t0: Timestamp = "2026-12-04T00:00:00Z".parse().unwrap();
        let mut state = Autoscalers::default();
        // Without a behavior: at most twice the replicas (at least 4) at once, within the bounds.
        let (desired, [_, limited]) = state.normalize(&key, None, 1, 9, 1, 10, t0);
        assert_eq!((desired, limited.2), (4, "ScaleUpLimit"));
        // A lower proposal within 5 min is held at the highest recent one.
        let (desired, [able, _]) =
            state.normalize(&key, None, 4, 1, 1, 10, t0 + SignedDuration::from_secs(60));
        // (The highest recent proposal, 9, still holds, so it even grows, as upstream does.)
        assert_eq!((desired, able.2), (8, "ScaleDownStabilized"));
        let (desired, _) = state.normalize(&key, None, 4, 1, 1, 10, t0 + SignedDuration::from_secs(400));
        assert_eq!(desired, 1);
        // A behavior: 1 pod per 60 s up.
        let behavior = json!({
            "scaleUp": { "stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [{ "type": "Pods", "value": 1, "periodSeconds": 60 }] },
            "scaleDown": { "stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [{ "type": "Percent", "value": 50, "periodSeconds": 60 }] },
        });
        let other = ("default".to_owned(), "api".to_owned());
        let (desired, [_, limited]) = state.normalize(&other, Some(&behavior), 2, 6, 1, 10, t0);
        assert_eq!((desired, limited.2), (3, "ScaleUpLimit"));
        state.record_scale(&other, Some(&behavior), 2, 3, t0);
        let (desired, _) =
            state.normalize(&other, Some(&behavior), 3, 6, 1, 10, t0 + SignedDuration::from_secs(30));
        assert_eq!(desired, 3, "the period's one pod is spent");
        let (desired, [_, limited]) =
            state.normalize(&other, Some(&behavior), 4, 1, 1, 10, t0 + SignedDuration::from_secs(120));
        assert_eq!((desired, limited.2), (2, "ScaleDownLimit"));
    }
}
