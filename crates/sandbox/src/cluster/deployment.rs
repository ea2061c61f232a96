//! The Deployment controller: one ReplicaSet per pod template, rolled from the old ones to the
//! new one within the strategy's bounds.
//!
//! The ReplicaSet of the current template is `<deployment>-<pod-template-hash>`, its pods
//! labelled with the hash, its revision one above the others (`deployment.kubernetes.io/revision`,
//! which `kubectl rollout history` and `undo` read). A `RollingUpdate` scales the new set up while
//! the total stays within `replicas + maxSurge`, and the old ones down while the available pods
//! stay at least `replicas - maxUnavailable`; `Recreate` scales the old to zero and waits for
//! their pods to go first. A Deployment scaled (or paused) is not rolled: its sets are resized,
//! what it gained or lost shared among the active ones in proportion to their sizes when a
//! rollout is under way. Old sets beyond `revisionHistoryLimit` are deleted. The status sums the
//! sets (`updatedReplicas` is the new one's) and carries `Available` and `Progressing` as upstream
//! words them, `ProgressDeadlineExceeded` included — what `kubectl rollout status` waits on.
//!
//! Without ReplicaSets and pods to count — a sandbox with no simulated cluster, or one whose
//! Deployment controller is switched off — the controller runs in its status-only mode
//! ([`StatusOnly`]): each Deployment's status climbs one pod at the [`Rollout`](crate::Rollout)
//! pace (all the way at once for `Instant`), written through the status verb and held to the
//! sandbox's `status_writes_per_second`, so `kubectl get deploy -w` shows READY climbing.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::api::{Api, controller_ref, set_condition};
use super::controller_ref::{Claim, claim};
use super::{Controller, Queue, Timers};
use crate::object_meta::{is_deleting, meta_str};

const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
const HASH_LABEL: &str = "pod-template-hash";

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// A set's numeric annotation `key` (its revision, the replicas it was sized for).
fn annotation(rs: &Value, key: &str) -> Option<i64> {
    rs.pointer("/metadata/annotations")?.get(key)?.as_str()?.parse().ok()
}

fn revision(rs: &Value) -> i64 {
    annotation(rs, REVISION).unwrap_or(0)
}

/// A JSON value with its object keys in order, so equal templates print alike.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", json!(k), canonical(&m[*k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// `pod-template-hash`: an FNV-1a hash of the template and the collision count, spelt as
/// upstream's `SafeEncodeString` spells it (no vowels, no look-alike digits).
pub(crate) fn template_hash(template: &Value, collisions: i64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u32 = 0x811c_9dc5;
    let text = canonical(template);
    let extra = if collisions > 0 { collisions.to_string() } else { String::new() };
    for b in text.bytes().chain(extra.bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string().bytes().map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char).collect()
}

/// The template without the hash label, to compare a set's template with the Deployment's.
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
        labels.remove(HASH_LABEL);
    }
    t
}

/// `maxSurge` and `maxUnavailable` as pod counts (`ResolveFenceposts`): a percentage of the
/// replicas, surge rounded up and unavailability down; both zero makes unavailability one.
pub(crate) fn fenceposts(d: &Value, replicas: i64) -> (i64, i64) {
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let resolve = |field: &str, fallback: &str, up: bool| {
        let v = ru.and_then(|r| r.get(field)).cloned().unwrap_or_else(|| json!(fallback));
        match v {
            Value::String(s) => {
                let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
                let scaled = pct * replicas;
                if up { (scaled + 99) / 100 } else { scaled / 100 }
            }
            other => other.as_i64().unwrap_or(0),
        }
    };
    let surge = resolve("maxSurge", "25%", true);
    let unavailable = resolve("maxUnavailable", "25%", false);
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
}

/// Syncs each queued Deployment.
pub(crate) fn sync(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    super::api::sync_each(api, api.defs.deployments, queue, Controller::Deployment, |obj| {
        sync_one(api, obj, timers)
    });
}

/// The sets `d` holds: its own that match its selector, and orphans it adopts.
fn claim_sets(api: &Api<'_>, d: &Value) -> Vec<Arc<Value>> {
    let selector = d.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    let how = Claim {
        def: api.defs.deployments,
        child: api.defs.replicasets,
        selector: &selector,
        considers: &|_| true,
        member: &|_| true,
        finalizer: None,
    };
    claim(api, d, &how)
}

fn sync_one(api: &Api<'_>, d: &Value, timers: &mut Timers) -> Result<(), crate::ApiError> {
    let ns = meta_str(d, "namespace");
    let sets = claim_sets(api, d);
    let template = d.pointer("/spec/template").cloned().unwrap_or_default();
    let replicas = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let paused = d.pointer("/spec/paused") == Some(&Value::Bool(true));
    let recreate = d.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
    let (surge, unavailable) = if recreate { (0, 0) } else { fenceposts(d, replicas) };
    let max_revision = sets.iter().map(|s| revision(s)).max().unwrap_or(0);
    let mut new_rs = sets.iter().find(|s| without_hash(&s["spec"]["template"]) == template).cloned();
    let mut olds: Vec<Arc<Value>> = sets
        .iter()
        .filter(|s| new_rs.as_ref().is_none_or(|n| meta_str(n, "uid") != meta_str(s, "uid")))
        .cloned()
        .collect();
    olds.sort_by_key(|s| (revision(s), meta_str(s, "creationTimestamp").to_owned()));
    // A scaling event (an active set was sized for another `replicas`) or a paused Deployment:
    // the sets are resized, proportionally mid-rollout, and nothing rolls (upstream's `sync`).
    let all: Vec<&Value> = new_rs.iter().map(AsRef::as_ref).chain(olds.iter().map(AsRef::as_ref)).collect();
    if paused || scaling_event(&all, replicas) {
        proportional_scale(api, d, new_rs.as_deref(), &olds, replicas, surge, recreate)?;
        if paused {
            cleanup(api, d, &olds)?;
        }
        let sets = api.owned(api.defs.replicasets, d);
        let new_rs =
            new_rs.and_then(|n| sets.iter().find(|s| meta_str(s, "uid") == meta_str(&n, "uid")).cloned());
        return write_status(api, d, &sets, new_rs.as_deref(), replicas, unavailable, None, timers);
    }
    let mut created = None;

    // The new set: made when missing, or made the latest revision again (a rollback).
    {
        match &new_rs {
            None => {
                let total: i64 = olds.iter().map(|s| int(s, "/spec/replicas")).sum();
                let old_active =
                    olds.iter().any(|s| int(s, "/spec/replicas") > 0 || int(s, "/status/replicas") > 0);
                let start = if recreate && old_active {
                    0
                } else if recreate || olds.is_empty() {
                    replicas
                } else {
                    (replicas + surge - total).clamp(0, replicas)
                };
                let rs = new_replica_set(d, &template, start, max_revision + 1, surge);
                let made = api.create(api.defs.replicasets, ns, rs, "kube-controller-manager")?;
                api.event(
                    api.defs.deployments,
                    d,
                    false,
                    "ScalingReplicaSet",
                    &format!("Scaled up replica set {} from 0 to {start}", meta_str(&made, "name")),
                    "deployment-controller",
                );
                created = Some(meta_str(&made, "name").to_owned());
                new_rs = api.get(api.defs.replicasets, ns, meta_str(&made, "name"));
            }
            Some(rs) if revision(rs) < max_revision || revision(rs) == 0 => {
                let mut rs = (**rs).clone();
                rs["metadata"]["annotations"][REVISION] = json!((max_revision + 1).to_string());
                api.update(api.defs.replicasets, rs, "kube-controller-manager")?;
                return Ok(());
            }
            Some(_) => {}
        }
    }

    if let Some(new) = &new_rs {
        if recreate {
            recreate_step(api, d, new, &olds, replicas)?;
        } else {
            rolling_step(api, d, new, &olds, replicas, surge, unavailable)?;
        }
    }
    cleanup(api, d, &olds)?;
    let sets = api.owned(api.defs.replicasets, d);
    let new_rs =
        new_rs.and_then(|n| sets.iter().find(|s| meta_str(s, "uid") == meta_str(&n, "uid")).cloned());
    write_status(api, d, &sets, new_rs.as_deref(), replicas, unavailable, created.as_deref(), timers)
}

fn new_replica_set(d: &Value, template: &Value, replicas: i64, revision: i64, surge: i64) -> Value {
    let collisions = int(d, "/status/collisionCount");
    let hash = template_hash(template, collisions);
    let mut template = template.clone();
    let labels = crate::object_meta::meta_mut(&mut template).entry("labels").or_insert_with(|| json!({}));
    labels[HASH_LABEL] = json!(hash);
    let labels = labels.clone();
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or_else(|| json!({}));
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let desired = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", meta_str(d, "name")),
            "namespace": meta_str(d, "namespace"),
            "labels": labels,
            "annotations": {
                REVISION: revision.to_string(),
                DESIRED: desired.to_string(),
                MAX_REPLICAS: (desired + surge).to_string(),
            },
            "ownerReferences": [controller_ref(crate::catalog::find("apps", "v1", "deployments").expect("deployments"), d)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int(d, "/spec/minReadySeconds"),
            "selector": selector,
            "template": template,
        },
    })
}

/// Scales one set to `to`, with the Event upstream records.
fn scale(api: &Api<'_>, d: &Value, rs: &Value, to: i64, surge: i64) -> Result<(), crate::ApiError> {
    let from = int(rs, "/spec/replicas");
    let desired = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let mut copy = rs.clone();
    copy["spec"]["replicas"] = json!(to);
    let annotations =
        crate::object_meta::meta_mut(&mut copy).entry("annotations").or_insert_with(|| json!({}));
    annotations[DESIRED] = json!(desired.to_string());
    annotations[MAX_REPLICAS] = json!((desired + surge).to_string());
    if copy == *rs {
        return Ok(());
    }
    api.update(api.defs.replicasets, copy, "kube-controller-manager")?;
    if from != to {
        let way = if to > from { "up" } else { "down" };
        api.event(
            api.defs.deployments,
            d,
            false,
            "ScalingReplicaSet",
            &format!("Scaled {way} replica set {} from {from} to {to}", meta_str(rs, "name")),
            "deployment-controller",
        );
    }
    Ok(())
}

/// Whether an active set was sized for another `replicas` than the Deployment's now (its
/// `desired-replicas` annotation): the Deployment was scaled (upstream's `isScalingEvent`).
fn scaling_event(sets: &[&Value], replicas: i64) -> bool {
    sets.iter()
        .filter(|s| int(s, "/spec/replicas") > 0)
        .any(|s| annotation(s, DESIRED).is_some_and(|desired| desired != replicas))
}

/// Resizes the sets to the Deployment's `replicas` (upstream's `scale`): a lone active set (or
/// else the newest) takes them all; a saturated new set leaves the old ones none; mid-rollout,
/// what the Deployment gained or lost is shared among the active sets in proportion to their
/// sizes (by the `max-replicas` each was sized for), the rounding left to the largest.
fn proportional_scale(
    api: &Api<'_>,
    d: &Value,
    new: Option<&Value>,
    olds: &[Arc<Value>],
    replicas: i64,
    surge: i64,
    recreate: bool,
) -> Result<(), crate::ApiError> {
    let size = |s: &Value| int(s, "/spec/replicas");
    let mut by_age: Vec<&Value> = olds.iter().map(AsRef::as_ref).collect();
    by_age.sort_by_key(|s| std::cmp::Reverse(meta_str(s, "creationTimestamp").to_owned()));
    let mut active: Vec<&Value> =
        new.into_iter().chain(by_age.iter().copied()).filter(|s| size(s) > 0).collect();
    let lone = match active.len() {
        0 => new.or_else(|| by_age.first().copied()),
        1 => Some(active[0]),
        _ => None,
    };
    if let Some(rs) = lone {
        if size(rs) != replicas {
            scale(api, d, rs, replicas, surge)?;
        }
        return Ok(());
    }
    let saturated = new.is_some_and(|n| {
        size(n) == replicas
            && annotation(n, DESIRED) == Some(replicas)
            && int(n, "/status/availableReplicas") == replicas
    });
    if saturated {
        for rs in olds.iter().filter(|s| size(s) > 0) {
            scale(api, d, rs, 0, surge)?;
        }
        return Ok(());
    }
    if recreate {
        return Ok(());
    }
    let total: i64 = active.iter().map(|s| size(s)).sum();
    let allowed = if replicas > 0 { replicas + surge } else { 0 };
    let to_add = allowed - total;
    // Larger first; among equals, newer first when growing and older first when shrinking.
    let created = |s: &Value| meta_str(s, "creationTimestamp").to_owned();
    if to_add > 0 {
        active.sort_by(|a, b| size(b).cmp(&size(a)).then_with(|| created(b).cmp(&created(a))));
    } else {
        active.sort_by(|a, b| size(b).cmp(&size(a)).then_with(|| created(a).cmp(&created(b))));
    }
    let mut added = 0;
    let mut sizes: Vec<i64> = Vec::with_capacity(active.len());
    for rs in &active {
        let share = if to_add == 0 { 0 } else { proportion(rs, d, replicas, surge, to_add, added) };
        sizes.push(size(rs) + share);
        added += share;
    }
    if let Some(largest) = sizes.first_mut() {
        *largest = (*largest + to_add - added).max(0);
    }
    for (rs, to) in active.iter().zip(sizes) {
        scale(api, d, rs, to, surge)?;
    }
    Ok(())
}

/// A set's share of `to_add` (upstream's `GetProportion`): its size scaled from the
/// Deployment's size it was made for (`max-replicas`, else the status' count) to the new one,
/// bounded by what is left to share.
fn proportion(rs: &Value, d: &Value, replicas: i64, surge: i64, to_add: i64, added: i64) -> i64 {
    let size = int(rs, "/spec/replicas");
    if size == 0 || to_add == added {
        return 0;
    }
    let fraction = if replicas == 0 {
        -size
    } else {
        let before =
            annotation(rs, MAX_REPLICAS).filter(|m| *m != 0).unwrap_or_else(|| int(d, "/status/replicas"));
        if before == 0 {
            0
        } else {
            // Go's math.Round: halves away from zero.
            ((size * (replicas + surge)) as f64 / before as f64).round() as i64 - size
        }
    };
    let allowed = to_add - added;
    if to_add > 0 { fraction.min(allowed) } else { fraction.max(allowed) }
}

/// `Recreate`: the old sets to zero; once their pods are gone, the new set to `replicas`.
fn recreate_step(
    api: &Api<'_>,
    d: &Value,
    new: &Value,
    olds: &[Arc<Value>],
    replicas: i64,
) -> Result<(), crate::ApiError> {
    let mut waiting = false;
    for rs in olds {
        if int(rs, "/spec/replicas") > 0 {
            scale(api, d, rs, 0, 0)?;
            waiting = true;
        }
        waiting |= int(rs, "/status/replicas") > 0;
    }
    if !waiting {
        scale(api, d, new, replicas, 0)?;
    }
    Ok(())
}

/// `RollingUpdate`: the new set up within the surge, the old ones down within availability.
fn rolling_step(
    api: &Api<'_>,
    d: &Value,
    new: &Value,
    olds: &[Arc<Value>],
    replicas: i64,
    surge: i64,
    unavailable: i64,
) -> Result<(), crate::ApiError> {
    let old_total: i64 = olds.iter().map(|s| int(s, "/spec/replicas")).sum();
    let new_now = int(new, "/spec/replicas");
    let new_to = if new_now < replicas {
        let room = replicas + surge - (old_total + new_now);
        new_now + room.clamp(0, replicas - new_now)
    } else {
        replicas
    };
    if new_to != new_now || annotation(new, DESIRED) != Some(replicas) {
        scale(api, d, new, new_to, surge)?;
    }
    // How far the old sets may go down: the pods above the minimum available, less the new
    // set's pods that are not available yet.
    let min_available = replicas - unavailable;
    let new_unavailable = new_to - int(new, "/status/availableReplicas");
    let mut budget = old_total + new_to - min_available - new_unavailable;
    if budget <= 0 {
        return Ok(());
    }
    let mut targets: Vec<(Arc<Value>, i64)> =
        olds.iter().map(|s| (Arc::clone(s), int(s, "/spec/replicas"))).collect();
    // First the old pods that are not available anyway.
    for (rs, to) in &mut targets {
        let unhealthy = (*to - int(rs, "/status/availableReplicas")).clamp(0, budget);
        *to -= unhealthy;
        budget -= unhealthy;
    }
    // Then available ones, while the minimum stays available.
    let available: i64 = olds.iter().map(|s| int(s, "/status/availableReplicas")).sum::<i64>()
        + int(new, "/status/availableReplicas");
    let mut down = (available - min_available).min(budget).max(0);
    for (_, to) in &mut targets {
        let step = (*to).min(down);
        *to -= step;
        down -= step;
    }
    for (rs, to) in targets {
        if to != int(&rs, "/spec/replicas") {
            scale(api, d, &rs, to, surge)?;
        }
    }
    Ok(())
}

/// Deletes the oldest empty sets beyond `revisionHistoryLimit`.
fn cleanup(api: &Api<'_>, d: &Value, olds: &[Arc<Value>]) -> Result<(), crate::ApiError> {
    let limit =
        usize::try_from(d.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64).unwrap_or(10))
            .unwrap_or(0);
    let empty: Vec<&Arc<Value>> = olds
        .iter()
        .filter(|s| int(s, "/spec/replicas") == 0 && int(s, "/status/replicas") == 0 && !is_deleting(s))
        .collect();
    for rs in empty.iter().take(empty.len().saturating_sub(limit)) {
        api.delete(api.defs.replicasets, rs, None)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn write_status(
    api: &Api<'_>,
    d: &Value,
    sets: &[Arc<Value>],
    new: Option<&Value>,
    replicas: i64,
    unavailable: i64,
    created: Option<&str>,
    timers: &mut Timers,
) -> Result<(), crate::ApiError> {
    let now = api.clock.now();
    let stamp = api.clock.rfc3339();
    let sum = |p: &str| sets.iter().map(|s| int(s, p)).sum::<i64>();
    let (actual, ready, available, total) = (
        sum("/status/replicas"),
        sum("/status/readyReplicas"),
        sum("/status/availableReplicas"),
        sum("/spec/replicas"),
    );
    let updated = new.map_or(0, |n| int(n, "/status/replicas"));
    let mut status = Map::new();
    if let Some(g) = d.pointer("/metadata/generation") {
        status.insert("observedGeneration".into(), g.clone());
    }
    for (field, n) in [
        ("replicas", actual),
        ("updatedReplicas", updated),
        ("readyReplicas", ready),
        ("availableReplicas", available),
        ("unavailableReplicas", (total - available).max(0)),
    ] {
        if n > 0 {
            status.insert(field.into(), json!(n));
        }
    }
    let old = d.get("status").cloned().unwrap_or_default();
    let mut conditions: Vec<Value> = old["conditions"].as_array().cloned().unwrap_or_default();
    let enough = available >= replicas - unavailable;
    let (reason, message) = if enough {
        ("MinimumReplicasAvailable", "Deployment has minimum availability.")
    } else {
        ("MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
    };
    set_condition(&mut conditions, "Available", enough, reason, message, &stamp, true);
    let new_name = new.map(|n| meta_str(n, "name").to_owned()).unwrap_or_default();
    let complete = updated == replicas && actual == replicas && available == replicas;
    let moved = ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"]
        .iter()
        .any(|f| old.get(*f) != status.get(*f));
    let paused = d.pointer("/spec/paused") == Some(&Value::Bool(true));
    let deadline = d.pointer("/spec/progressDeadlineSeconds").and_then(Value::as_i64);
    let progressing = conditions.iter().find(|c| c["type"] == "Progressing").cloned();
    if paused {
        set_condition(
            &mut conditions,
            "Progressing",
            false,
            "DeploymentPaused",
            "Deployment is paused",
            &stamp,
            true,
        );
        if let Some(c) = conditions.iter_mut().find(|c| c["type"] == "Progressing") {
            c["status"] = json!("Unknown");
        }
    } else if let Some(created) = created {
        set_condition(
            &mut conditions,
            "Progressing",
            true,
            "NewReplicaSetCreated",
            &format!("Created new replica set \"{created}\""),
            &stamp,
            true,
        );
    } else if complete && !new_name.is_empty() {
        set_condition(
            &mut conditions,
            "Progressing",
            true,
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{new_name}\" has successfully progressed."),
            &stamp,
            true,
        );
    } else if moved && !new_name.is_empty() {
        // Progress moves the update time even when the condition reads the same.
        set_condition(
            &mut conditions,
            "Progressing",
            true,
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{new_name}\" is progressing."),
            &stamp,
            true,
        );
        if let Some(c) = conditions.iter_mut().find(|c| c["type"] == "Progressing") {
            c["lastUpdateTime"] = json!(stamp);
        }
    } else if let (Some(limit), Some(p)) = (deadline, &progressing)
        && !complete
        && p["status"] == "True"
        && p["reason"] != "NewReplicaSetAvailable"
    {
        let since =
            p["lastUpdateTime"].as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok()).unwrap_or(now);
        let due =
            since.saturating_add(jiff::SignedDuration::from_secs(limit)).unwrap_or(jiff::Timestamp::MAX);
        if due <= now {
            set_condition(
                &mut conditions,
                "Progressing",
                false,
                "ProgressDeadlineExceeded",
                &format!("ReplicaSet \"{new_name}\" has timed out progressing."),
                &stamp,
                true,
            );
        } else {
            timers.at(due, Controller::Deployment, meta_str(d, "namespace"), meta_str(d, "name"));
        }
    }
    // Available first, then Progressing, as a cluster shows them.
    conditions.sort_by_key(|c| c["type"] != "Available");
    status.insert("conditions".into(), json!(conditions));
    if let Some(c) = old.get("collisionCount") {
        status.insert("collisionCount".into(), c.clone());
    }
    // The Deployment carries its newest revision, set with the status as upstream sets it (a
    // status write: the generation stays).
    let mut obj = d.clone();
    if let Some(new) = new {
        let meta = crate::object_meta::meta_mut(&mut obj);
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        annotations[REVISION] = json!(revision(new).to_string());
    }
    obj["status"] = Value::Object(status);
    if obj == *d {
        return Ok(());
    }
    api.update_status(api.defs.deployments, obj, "kube-controller-manager")
}

/// Whether a Deployment's status has not caught up with its spec and generation.
#[must_use]
pub fn needs_rollout(d: &Value) -> bool {
    let want = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let generation = d.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let have = |k: &str| d.pointer(&format!("/status/{k}")).and_then(Value::as_i64).unwrap_or(0);
    ["readyReplicas", "replicas", "availableReplicas"].iter().any(|k| have(k) != want)
        || have("observedGeneration") != generation
}

/// One rollout step: the status a Deployment's pods would reach one pod later.
///
/// Returns `None` when the status already matches the spec.
#[must_use]
pub fn rollout_step(d: &Value, jump: bool) -> Option<Value> {
    if !needs_rollout(d) {
        return None;
    }
    let want = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let generation = d.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let current = d.pointer("/status/readyReplicas").and_then(Value::as_i64).unwrap_or(0);
    let next = if jump {
        want
    } else if current < want {
        current + 1
    } else if current > want {
        current - 1
    } else {
        want
    };
    let available = next >= want;
    let now = crate::object_meta::now_rfc3339();
    let mut s = json!({
        "observedGeneration": generation,
        "replicas": next,
        "updatedReplicas": next,
        "readyReplicas": next,
        "availableReplicas": next,
        "conditions": [
            { "type": "Available", "status": if available { "True" } else { "False" },
              "reason": if available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
              "message": if available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." },
              "lastUpdateTime": now, "lastTransitionTime": now },
            { "type": "Progressing", "status": "True",
              "reason": if next == want { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
              "message": format!("ReplicaSet \"{}\" is progressing.", crate::object_meta::meta_str(d, "name")),
              "lastUpdateTime": now, "lastTransitionTime": now },
        ],
    });
    if next < want {
        s["unavailableReplicas"] = json!(want - next);
    }
    if next == 0 {
        for k in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"] {
            s.as_object_mut().expect("object").remove(k);
        }
    }
    Some(s)
}

/// The Deployment controller's status-only mode: the Deployments whose status lags their spec,
/// each advanced by one [`rollout_step`] a pass.
pub(crate) struct StatusOnly {
    /// Deployments whose status has not caught up with their spec, in key order.
    rolling: Queue,
    /// All the way in one step (`Rollout::Instant`).
    jump: bool,
    /// The client's rate limiter, when the sandbox has one.
    limiter: Option<StatusBucket>,
}

impl StatusOnly {
    /// The mode for the sandbox's `rollout` pace and `status_writes_per_second`.
    pub(crate) fn new(pace: crate::Rollout, per_second: Option<u32>) -> Self {
        Self {
            rolling: Queue::new(),
            jump: pace == crate::Rollout::Instant,
            limiter: per_second.map(StatusBucket::new),
        }
    }

    /// A Deployment changed (`None`: it is gone).
    pub(crate) fn observe(&mut self, ns: &str, name: &str, d: Option<&Value>) {
        let key = (ns.to_owned(), name.to_owned());
        if d.is_some_and(|d| needs_rollout(d) && !is_deleting(d)) {
            self.rolling.insert(key);
        } else {
            self.rolling.remove(&key);
        }
    }

    /// One pass: each lagging Deployment's status one step on, as many as the rate limiter
    /// allows (in key order: held to 20 writes a second, thousands stay rolling for minutes).
    /// The write is conditional on the version read; a stale one waits for the next pass.
    pub(crate) fn sync(&mut self, api: &Api<'_>) {
        let budget = self.limiter.as_mut().map_or(usize::MAX, StatusBucket::available);
        let mut made = 0;
        for (ns, name) in &self.rolling {
            if made == budget {
                break;
            }
            let Some(d) = api.get(api.defs.deployments, ns, name) else { continue };
            let Some(status) = rollout_step(&d, self.jump) else { continue };
            made += 1;
            if let Err(e) = api.write_status(api.defs.deployments, &d, status, "kube-controller-manager") {
                super::log_failure(Controller::Deployment, name, &e);
            }
        }
        if let Some(limiter) = self.limiter.as_mut() {
            limiter.take(made);
        }
    }
}

/// The Deployment controller's client-side rate limiter: a token bucket refilled at `rate` a
/// second, holding one and a half seconds' worth (client-go's QPS and burst, 20 and 30 in
/// kube-controller-manager).
struct StatusBucket {
    rate: f64,
    tokens: f64,
    at: tokio::time::Instant,
}

impl StatusBucket {
    fn new(rate: u32) -> Self {
        let rate = f64::from(rate);
        Self { rate, tokens: rate * 1.5, at: tokio::time::Instant::now() }
    }

    /// Whole writes allowed now.
    fn available(&mut self) -> usize {
        let now = tokio::time::Instant::now();
        let refilled = self.rate * (now - self.at).as_secs_f64();
        self.tokens = (self.tokens + refilled).min(self.rate * 1.5);
        self.at = now;
        self.tokens as usize
    }

    fn take(&mut self, n: usize) {
        self.tokens -= n as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::deployment::tests::web;

    #[test]
    fn the_hash_is_stable_and_spelt_without_vowels() {
        let t = json!({ "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
        let reordered = json!({ "spec": { "containers": [{ "image": "nginx", "name": "c" }] }, "metadata": { "labels": { "app": "web" } } });
        assert_eq!(template_hash(&t, 0), template_hash(&reordered, 0));
        assert_ne!(template_hash(&t, 0), template_hash(&t, 1));
        assert!(template_hash(&t, 0).bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)));
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        let d = |surge: Value, unavailable: Value| json!({ "spec": { "strategy": { "rollingUpdate": { "maxSurge": surge, "maxUnavailable": unavailable } } } });
        assert_eq!(fenceposts(&d(json!("25%"), json!("25%")), 10), (3, 2));
        assert_eq!(fenceposts(&d(json!(0), json!(0)), 10), (0, 1));
        assert_eq!(fenceposts(&d(json!(2), json!("50%")), 3), (2, 1));
    }

    #[test]
    fn rollout_climbs_one_pod_at_a_time() {
        let mut d = web();
        d["spec"]["replicas"] = json!(3);
        d["metadata"]["generation"] = json!(1);
        let mut seen = Vec::new();
        while let Some(s) = rollout_step(&d, false) {
            seen.push(s["readyReplicas"].as_i64().unwrap_or(0));
            d["status"] = s;
        }
        assert_eq!(seen, [1, 2, 3]);
        assert_eq!(d["status"]["observedGeneration"], 1);
    }
}
