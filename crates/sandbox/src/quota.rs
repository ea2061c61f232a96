//! ResourceQuota: what an object counts against a quota, and the decisions the API server and
//! kube-controller-manager make from it — pure functions over objects; the store runs them.
//!
//! - **Usage** (`pkg/quota/v1/evaluator/core`): a pod counts `pods` and its compute requests and
//!   limits (the largest init container against the sum of the others, sidecars added, overhead
//!   on top) while it is not finished; a service `services` and its node ports and load balancer;
//!   a claim `persistentvolumeclaims` and its storage, also per storage class; every object
//!   `count/<resource>.<group>`, and the four kinds with a short name (`configmaps`, `secrets`,
//!   `replicationcontrollers`, `resourcequotas`) that too.
//! - **Admission** ([`admit`], the `ResourceQuota` plugin): a create — or an update that grows a
//!   claim or changes a service — in a namespace with quotas is refused with 403 when it would
//!   take a quota's usage past its hard limit, or when a quota on CPU or memory meets a container
//!   that does not say how much it wants; otherwise each quota it counts against is charged at
//!   once, so two creates in a row cannot both take the last unit.
//! - **The quota controller** ([`recalculate`]): `status.hard` follows `spec.hard`, and
//!   `status.used` is recounted from what the namespace holds, so deletes give units back.
//!
//! Scopes: `Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass` (with
//! its selector's operators) and `CrossNamespacePodAffinity`, for pods; a quota with a scope
//! counts nothing else, as upstream's.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::object_meta::meta_str;
use crate::quantity::Quantity;

/// Resource name → amount, as a quota's `hard` and `used` are.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The resources a pod is counted in.
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// A quota on these makes every container of a pod say how much it wants of them (upstream calls
/// this a mistake it keeps for compatibility).
const MUST_SPECIFY: [&str; 6] =
    ["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

const SERVICE_RESOURCES: [&str; 4] =
    ["count/services", "services", "services.nodeports", "services.loadbalancers"];

const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The kinds whose object count also has a short name.
fn alias(group: &str, plural: &str) -> Option<&'static str> {
    match (group, plural) {
        ("", "configmaps") => Some("configmaps"),
        ("", "secrets") => Some("secrets"),
        ("", "replicationcontrollers") => Some("replicationcontrollers"),
        ("", "resourcequotas") => Some("resourcequotas"),
        _ => None,
    }
}

/// `count/<plural>.<group>` (`count/<plural>` for the core group).
#[must_use]
pub fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() { format!("count/{plural}") } else { format!("count/{plural}.{group}") }
}

/// The resource a `count/…` name counts, as (group, plural).
#[must_use]
pub fn counted_resource(name: &str) -> Option<(&str, &str)> {
    let resource = name.strip_prefix("count/")?;
    Some(match resource.split_once('.') {
        Some((plural, group)) => (group, plural),
        None => ("", resource),
    })
}

/// Whether `name` is an extended resource's quota name (`requests.example.com/gpu`): not in the
/// `kubernetes.io` domains, requested only.
fn extended_request(name: &str) -> bool {
    name.strip_prefix("requests.").is_some_and(|r| {
        let domain = r.split_once('/').map(|(d, _)| d);
        domain.is_some_and(|d| d != "kubernetes.io" && !d.ends_with(".kubernetes.io"))
    })
}

/// Of `names`, the ones an object of `plural.group` can count against (`MatchingResources`).
#[must_use]
pub fn matching<'a>(
    group: &str,
    plural: &str,
    names: impl IntoIterator<Item = &'a String>,
) -> BTreeSet<String> {
    names
        .into_iter()
        .filter(|n| match (group, plural) {
            ("", "pods") => {
                POD_RESOURCES.contains(&n.as_str())
                    || n.starts_with("hugepages-")
                    || n.starts_with("requests.hugepages-")
                    || extended_request(n)
            }
            ("", "services") => SERVICE_RESOURCES.contains(&n.as_str()),
            ("", "persistentvolumeclaims") => {
                ["persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage"]
                    .contains(&n.as_str())
                    || n.ends_with(&format!("{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"))
                    || n.ends_with(&format!("{STORAGE_CLASS_SUFFIX}requests.storage"))
            }
            _ => **n == count_name(group, plural) || alias(group, plural) == Some(n.as_str()),
        })
        .cloned()
        .collect()
}

fn list_of(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, q)| Some((k.clone(), Quantity::parse(q.as_str()?).ok()?)))
        .collect()
}

/// `quota.Add`.
fn add(mut a: ResourceList, b: &ResourceList) -> ResourceList {
    for (k, v) in b {
        let sum = a.get(k).map_or(*v, |have| *have + *v);
        a.insert(k.clone(), sum);
    }
    a
}

/// `quota.Max`.
fn max(mut a: ResourceList, b: &ResourceList) -> ResourceList {
    for (k, v) in b {
        let larger = a.get(k).map_or(*v, |have| (*have).max(*v));
        a.insert(k.clone(), larger);
    }
    a
}

/// A pod's requests or limits (`resourcehelper.PodRequests`/`PodLimits`): its containers summed,
/// sidecars (restartable init containers) added, the largest init container if it is more, and
/// the overhead.
fn pod_resources(spec: &Value, which: &str) -> ResourceList {
    let of = |c: &Value| list_of(c.pointer(&format!("/resources/{which}")));
    let mut total =
        spec["containers"].as_array().into_iter().flatten().fold(ResourceList::new(), |t, c| add(t, &of(c)));
    let mut sidecars = ResourceList::new();
    let mut init = ResourceList::new();
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        let own = of(c);
        let during = if c["restartPolicy"] == "Always" {
            total = add(total, &own);
            sidecars = add(sidecars, &own);
            sidecars.clone()
        } else {
            add(own, &sidecars)
        };
        init = max(init, &during);
    }
    add(max(total, &init), &list_of(spec.get("overhead")))
}

/// What a pod asks of a node (`resourcehelper.PodRequests`), as the scheduler fits it.
#[must_use]
pub fn pod_requests(spec: &Value) -> ResourceList {
    pod_resources(spec, "requests")
}

/// `podComputeUsageHelper`: the quota names a pod's requests and limits count in.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Quantity::count(1));
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.into(), *q);
            out.insert(format!("requests.{r}"), *q);
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), *q);
        }
    }
    for (r, q) in requests {
        if r.starts_with("hugepages-") {
            out.insert(r.clone(), *q);
            out.insert(format!("requests.{r}"), *q);
        } else if extended_request(&format!("requests.{r}")) {
            out.insert(format!("requests.{r}"), *q);
        }
    }
    out
}

/// Whether a pod still counts its compute resources (`QuotaV1Pod`): not finished, and not past
/// its grace period in a deletion.
fn pod_counts(pod: &Value, now: jiff::Timestamp) -> bool {
    if matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
        return false;
    }
    let deleted = pod.pointer("/metadata/deletionTimestamp").and_then(Value::as_str);
    let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
    match (deleted.and_then(|d| d.parse::<jiff::Timestamp>().ok()), grace) {
        (Some(at), Some(grace)) => {
            at.checked_add(jiff::SignedDuration::from_secs(grace)).is_ok_and(|end| now <= end)
        }
        _ => true,
    }
}

/// What `obj`, an object of `plural.group`, counts (`Evaluator.Usage`).
#[must_use]
pub fn usage(group: &str, plural: &str, obj: &Value, now: jiff::Timestamp) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert(count_name(group, plural), Quantity::count(1));
    match (group, plural) {
        ("", "pods") => {
            if pod_counts(obj, now) {
                let spec = obj.get("spec").cloned().unwrap_or_default();
                let used = compute_usage(&pod_resources(&spec, "requests"), &pod_resources(&spec, "limits"));
                out.extend(used);
            }
        }
        ("", "services") => {
            let ports = obj.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len);
            let ports = i64::try_from(ports).unwrap_or(i64::MAX);
            let kind = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
            out.insert("services".into(), Quantity::count(1));
            let node_ports = match kind {
                "NodePort" => ports,
                "LoadBalancer"
                    if obj.pointer("/spec/allocateLoadBalancerNodePorts") == Some(&Value::Bool(false)) =>
                {
                    let given = obj.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten();
                    i64::try_from(given.filter(|p| p["nodePort"].as_i64().unwrap_or(0) != 0).count())
                        .unwrap_or(0)
                }
                "LoadBalancer" => ports,
                _ => 0,
            };
            out.insert("services.nodeports".into(), Quantity::count(node_ports));
            out.insert("services.loadbalancers".into(), Quantity::count(i64::from(kind == "LoadBalancer")));
        }
        ("", "persistentvolumeclaims") => {
            out.insert("persistentvolumeclaims".into(), Quantity::count(1));
            let class = obj.pointer("/spec/storageClassName").and_then(Value::as_str).unwrap_or("");
            if !class.is_empty() {
                out.insert(
                    format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                    Quantity::count(1),
                );
            }
            let request = list_of(obj.pointer("/spec/resources/requests")).remove("storage");
            let allocated = list_of(obj.pointer("/status/allocatedResources")).remove("storage");
            let storage = match (request, allocated) {
                (Some(r), Some(a)) if a > r => Some(a),
                (r, _) => r,
            };
            if let Some(s) = storage.map(Quantity::ceil) {
                out.insert("requests.storage".into(), s);
                if !class.is_empty() {
                    out.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), s);
                }
            }
        }
        _ => {
            if let Some(a) = alias(group, plural) {
                out.insert(a.into(), Quantity::count(1));
            }
        }
    }
    out
}

/// A quota's scopes as selector requirements (`getScopeSelectorsFromQuota`): each of
/// `spec.scopes` as `Exists`, then `spec.scopeSelector.matchExpressions`.
fn scope_requirements(quota: &Value) -> Vec<Value> {
    let scopes = quota.pointer("/spec/scopes").and_then(Value::as_array).into_iter().flatten();
    let mut out: Vec<Value> = scopes.map(|s| json!({ "scopeName": s, "operator": "Exists" })).collect();
    let selected = quota.pointer("/spec/scopeSelector/matchExpressions").and_then(Value::as_array);
    out.extend(selected.into_iter().flatten().cloned());
    out
}

/// Whether the pod's containers ask for no CPU or memory at all (the BestEffort QoS class).
fn best_effort(pod: &Value) -> bool {
    let spec = pod.get("spec").cloned().unwrap_or_default();
    !["initContainers", "containers"].iter().flat_map(|l| spec[*l].as_array().into_iter().flatten()).any(
        |c| {
            ["requests", "limits"].iter().any(|w| {
                let set = list_of(c.pointer(&format!("/resources/{w}")));
                set.contains_key("cpu") || set.contains_key("memory")
            })
        },
    )
}

fn cross_namespace_affinity(pod: &Value) -> bool {
    ["podAffinity", "podAntiAffinity"].iter().any(|a| {
        let Some(affinity) = pod.pointer(&format!("/spec/affinity/{a}")) else { return false };
        let required =
            affinity["requiredDuringSchedulingIgnoredDuringExecution"].as_array().into_iter().flatten();
        let preferred = affinity["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| &w["podAffinityTerm"]);
        required.chain(preferred).any(|t| {
            t["namespaces"].as_array().is_some_and(|n| !n.is_empty())
                || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
        })
    })
}

/// Whether a pod falls in a scope (`podMatchesScopeFunc`); other kinds fall in none.
fn in_scope(group: &str, plural: &str, requirement: &Value, obj: &Value) -> bool {
    if (group, plural) != ("", "pods") {
        return false;
    }
    let terminating =
        obj.pointer("/spec/activeDeadlineSeconds").and_then(Value::as_i64).is_some_and(|s| s >= 0);
    match requirement["scopeName"].as_str().unwrap_or("") {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(obj),
        "NotBestEffort" => !best_effort(obj),
        "CrossNamespacePodAffinity" => cross_namespace_affinity(obj),
        "PriorityClass" => {
            // `podMatchesSelector`: the requirement as a label selector over one label.
            let class = obj.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or("");
            let labels = if class.is_empty() {
                Map::new()
            } else {
                Map::from_iter([("PriorityClass".into(), json!(class))])
            };
            let mut expression = requirement.clone();
            expression["key"] = json!("PriorityClass");
            crate::selector::selector_matches(&json!({ "matchExpressions": [expression] }), &labels)
        }
        _ => false,
    }
}

/// Whether `obj` counts against `quota` (`Evaluator.Matches`): the quota limits something the
/// object counts in, and the object is in every one of its scopes.
fn counts_against(group: &str, plural: &str, quota: &Value, obj: &Value) -> bool {
    let hard = list_of(quota.pointer("/status/hard"));
    !matching(group, plural, hard.keys()).is_empty()
        && scope_requirements(quota).iter().all(|r| in_scope(group, plural, r, obj))
}

/// `prettyPrint`: `name=amount` pairs, sorted, comma-separated.
fn pretty(list: &ResourceList, only: &BTreeSet<String>) -> String {
    list.iter()
        .filter(|(k, _)| only.contains(*k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `enforcePodContainerConstraints`: per resource of `required` a pod's containers do not ask
/// for, the containers that do not; worded as v1.32's `must specify …`.
fn missing_requests(pod: &Value, required: &BTreeSet<String>) -> Option<String> {
    let required: BTreeSet<&str> =
        required.iter().map(String::as_str).filter(|r| MUST_SPECIFY.contains(r)).collect();
    let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let spec = pod.get("spec").cloned().unwrap_or_default();
    for c in ["containers", "initContainers"].iter().flat_map(|l| spec[*l].as_array().into_iter().flatten()) {
        let has = compute_usage(
            &list_of(c.pointer("/resources/requests")),
            &list_of(c.pointer("/resources/limits")),
        );
        for r in &required {
            if !has.contains_key(*r) {
                missing.entry(r).or_default().insert(c["name"].as_str().unwrap_or("").to_owned());
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| format!("{r} for: {}", names.iter().cloned().collect::<Vec<_>>().join(",")))
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// Whether the quota plugin looks at this write (`Evaluator.Handles`): every create; an update of
/// a service or a claim (a type changed, a claim grown).
#[must_use]
pub fn handles(group: &str, plural: &str, update: bool) -> bool {
    !update || (group.is_empty() && matches!(plural, "services" | "persistentvolumeclaims"))
}

/// The quotas a write charges, with their new `status.used`, or why it is refused.
pub type Charges = Vec<(String, ResourceList)>;

/// The ResourceQuota admission plugin (`CheckRequest`) for a write of `new` (over `old` on an
/// update) of a `plural.group` object, against the namespace's `quotas`.
///
/// # Errors
///
/// The refusal's words after `is forbidden: `: `failed quota: …: must specify …`, `status
/// unknown for quota: …`, or `exceeded quota: …, requested: …, used: …, limited: …`.
pub fn admit(
    quotas: &[std::sync::Arc<Value>],
    group: &str,
    plural: &str,
    new: &Value,
    old: Option<&Value>,
    now: jiff::Timestamp,
) -> Result<Charges, String> {
    if quotas.is_empty() || !handles(group, plural, old.is_some()) {
        return Ok(Vec::new());
    }
    let mut pertinent = Vec::new();
    for quota in quotas {
        if !counts_against(group, plural, quota, new) {
            continue;
        }
        let hard = list_of(quota.pointer("/status/hard"));
        let restricted = matching(group, plural, hard.keys());
        let name = meta_str(quota, "name");
        if (group, plural) == ("", "pods")
            && let Some(why) = missing_requests(new, &restricted)
        {
            return Err(format!("failed quota: {name}: {why}"));
        }
        let used = list_of(quota.pointer("/status/used"));
        if restricted.iter().any(|r| !used.contains_key(r)) {
            let names: Vec<&str> = restricted.iter().map(String::as_str).collect();
            return Err(format!("status unknown for quota: {name}, resources: {}", names.join(",")));
        }
        pertinent.push((quota, hard, used));
    }
    let mut delta = usage(group, plural, new, now);
    let negative: Vec<&str> =
        delta.iter().filter(|(_, q)| q.is_negative()).map(|(k, _)| k.as_str()).collect();
    if !negative.is_empty() {
        return Err(format!("quota usage is negative for resource(s): {}", negative.join(",")));
    }
    if let Some(old) = old {
        let before = usage(group, plural, old, now);
        for (k, q) in &mut delta {
            if let Some(b) = before.get(k) {
                let less = *q - *b;
                *q = if less.is_negative() { Quantity::zero() } else { less };
            }
        }
    }
    delta.retain(|_, q| !q.is_zero());
    if delta.is_empty() {
        return Ok(Vec::new());
    }
    let mut charges = Vec::new();
    for (quota, hard, used) in pertinent {
        let requested: ResourceList =
            delta.iter().filter(|(k, _)| hard.contains_key(*k)).map(|(k, v)| (k.clone(), *v)).collect();
        let new_used = add(used.clone(), &requested);
        let exceeded: BTreeSet<String> = requested
            .keys()
            .filter(|k| new_used.get(*k).zip(hard.get(*k)).is_some_and(|(u, h)| u > h))
            .cloned()
            .collect();
        if !exceeded.is_empty() {
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                meta_str(quota, "name"),
                pretty(&requested, &exceeded),
                pretty(&used, &exceeded),
                pretty(&hard, &exceeded),
            ));
        }
        charges.push((meta_str(quota, "name").to_owned(), new_used));
    }
    Ok(charges)
}

/// The quota controller's `status` for `quota` (`syncResourceQuota` with `CalculateUsage`):
/// `hard` as the spec says, `used` recounted over `objects(group, plural)` — the namespace's
/// objects of each resource a limited name counts.
pub fn recalculate<F>(quota: &Value, mut objects: F, now: jiff::Timestamp) -> Value
where
    F: FnMut(&str, &str) -> Vec<std::sync::Arc<Value>>,
{
    let hard = list_of(quota.pointer("/spec/hard"));
    let requirements = scope_requirements(quota);
    let mut resources: BTreeSet<(String, String)> = BTreeSet::new();
    for name in hard.keys() {
        let known = [("", "pods"), ("", "services"), ("", "persistentvolumeclaims")]
            .into_iter()
            .find(|(g, p)| !matching(g, p, [name]).is_empty())
            .map(|(g, p)| (g.to_owned(), p.to_owned()));
        let counted = counted_resource(name).map(|(g, p)| (g.to_owned(), p.to_owned()));
        let aliased = (alias("", name) == Some(name.as_str())).then(|| (String::new(), name.clone()));
        resources.extend(known.or(counted).or(aliased));
    }
    let mut used: ResourceList = ResourceList::new();
    for (group, plural) in &resources {
        let limited = matching(group, plural, hard.keys());
        for name in &limited {
            used.entry(name.clone()).or_insert_with(Quantity::zero);
        }
        for obj in objects(group, plural) {
            if requirements.iter().all(|r| in_scope(group, plural, r, &obj)) {
                let counted: ResourceList = usage(group, plural, &obj, now)
                    .into_iter()
                    .filter(|(k, _)| limited.contains(k))
                    .collect();
                used = add(used, &counted);
            }
        }
    }
    json!({ "hard": to_json(&hard), "used": to_json(&used) })
}

/// A resource list as JSON, each amount in its canonical text.
#[must_use]
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(list.iter().map(|(k, v)| (k.clone(), Value::String(v.to_string()))).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn quota(hard: Value, used: Value) -> Arc<Value> {
        Arc::new(
            json!({ "metadata": { "name": "q" }, "spec": { "hard": hard }, "status": { "hard": hard, "used": used } }),
        )
    }

    fn pod(cpu: Option<&str>) -> Value {
        let resources =
            cpu.map_or(json!({}), |c| json!({ "requests": { "cpu": c }, "limits": { "cpu": c } }));
        json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "main", "resources": resources }] } })
    }

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::now()
    }

    #[test]
    fn a_pod_past_the_limit_is_refused_in_upstreams_words() {
        let q = quota(json!({ "pods": "1" }), json!({ "pods": "1" }));
        let why = admit(&[q], "", "pods", &pod(None), None, now()).unwrap_err();
        assert_eq!(why, "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1");
    }

    #[test]
    fn a_pod_within_the_limit_charges_the_quota() {
        let q =
            quota(json!({ "pods": "2", "requests.cpu": "1" }), json!({ "pods": "0", "requests.cpu": "0" }));
        let charges = admit(&[q], "", "pods", &pod(Some("500m")), None, now()).unwrap();
        assert_eq!(to_json(&charges[0].1), json!({ "pods": "1", "requests.cpu": "500m" }));
    }

    #[test]
    fn a_cpu_quota_wants_every_container_to_ask() {
        let q = quota(
            json!({ "requests.cpu": "1", "limits.memory": "1Gi" }),
            json!({ "requests.cpu": "0", "limits.memory": "0" }),
        );
        let why = admit(&[q], "", "pods", &pod(None), None, now()).unwrap_err();
        assert_eq!(why, "failed quota: q: must specify limits.memory for: main; requests.cpu for: main");
    }

    #[test]
    fn an_unsynced_quota_refuses_until_its_usage_is_known() {
        let q = quota(json!({ "pods": "2" }), json!({}));
        let why = admit(&[q], "", "pods", &pod(None), None, now()).unwrap_err();
        assert_eq!(why, "status unknown for quota: q, resources: pods");
    }

    #[test]
    fn scopes_pick_the_pods_a_quota_counts() {
        let mut q = (*quota(json!({ "pods": "0" }), json!({ "pods": "0" }))).clone();
        q["spec"]["scopes"] = json!(["NotBestEffort"]);
        assert!(admit(&[Arc::new(q.clone())], "", "pods", &pod(None), None, now()).unwrap().is_empty());
        assert!(admit(&[Arc::new(q)], "", "pods", &pod(Some("1")), None, now()).is_err());
    }

    #[test]
    fn a_grown_claim_is_charged_the_difference() {
        let claim = |size: &str| json!({ "spec": { "storageClassName": "fast", "resources": { "requests": { "storage": size } } } });
        let q = quota(json!({ "requests.storage": "3Gi" }), json!({ "requests.storage": "2Gi" }));
        let charges = admit(
            std::slice::from_ref(&q),
            "",
            "persistentvolumeclaims",
            &claim("3Gi"),
            Some(&claim("2Gi")),
            now(),
        )
        .unwrap();
        assert_eq!(to_json(&charges[0].1), json!({ "requests.storage": "3Gi" }));
        let why =
            admit(&[q], "", "persistentvolumeclaims", &claim("4Gi"), Some(&claim("2Gi")), now()).unwrap_err();
        assert_eq!(
            why,
            "exceeded quota: q, requested: requests.storage=2Gi, used: requests.storage=2Gi, limited: requests.storage=3Gi"
        );
    }

    #[test]
    fn the_controller_recounts_what_the_namespace_holds() {
        let q = json!({ "spec": { "hard": { "pods": "5", "requests.memory": "4Gi", "count/deployments.apps": "2", "configmaps": "3" } } });
        let memory = json!({ "spec": { "containers": [{ "name": "a", "resources": { "requests": { "memory": "1Gi" } } }],
                                       "initContainers": [{ "name": "i", "resources": { "requests": { "memory": "2Gi" } } }] } });
        let done = json!({ "spec": { "containers": [] }, "status": { "phase": "Succeeded" } });
        let status = recalculate(
            &q,
            |group, plural| match (group, plural) {
                ("", "pods") => vec![Arc::new(memory.clone()), Arc::new(done.clone())],
                ("apps", "deployments") => vec![Arc::new(json!({}))],
                _ => Vec::new(),
            },
            now(),
        );
        assert_eq!(status["hard"], q["spec"]["hard"]);
        assert_eq!(
            status["used"],
            json!({ "pods": "1", "requests.memory": "2Gi", "count/deployments.apps": "1", "configmaps": "0" })
        );
    }

    #[test]
    fn services_count_their_node_ports() {
        let svc = json!({ "spec": { "type": "NodePort", "ports": [{ "port": 80 }, { "port": 443 }] } });
        let used = usage("", "services", &svc, now());
        assert_eq!(
            to_json(&used),
            json!({ "count/services": "1", "services": "1", "services.loadbalancers": "0", "services.nodeports": "2" })
        );
    }
}
