//! The StatefulSet controller: pods with stable names (`<set>-0`, `<set>-1`…) and hostnames,
//! each with its own claims from `volumeClaimTemplates` (`<claim>-<set>-<ordinal>`, kept when the
//! pod goes). `OrderedReady` makes them one at a time, each once the one before is Running and
//! Ready, and removes them from the highest down; `Parallel` does both at once. A new template
//! is rolled from the highest ordinal down to the `partition`, one pod at a time once all are
//! ready (`OnDelete`: a pod takes the new template only when it is deleted). The templates are
//! kept as ControllerRevisions, named in `currentRevision` and `updateRevision`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::api::{Api, controller_ref, phase, pod_available, pod_ready};
use super::controller_ref::{Claim, claim};
use super::{Controller, Queue, Timers, history};
use crate::object_meta::{is_deleting, meta_str};

const SOURCE: &str = "statefulset-controller";
const REVISION_LABEL: &str = "controller-revision-hash";

fn ordinal(set: &str, pod: &Value) -> Option<i64> {
    meta_str(pod, "name").strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

fn revision_of(pod: &Value) -> &str {
    pod.pointer("/metadata/labels").and_then(|l| l.get(REVISION_LABEL)).and_then(Value::as_str).unwrap_or("")
}

/// Syncs each queued StatefulSet.
pub(crate) fn sync(api: &Api<'_>, queue: &Queue, timers: &mut Timers) {
    super::api::sync_each(api, api.defs.statefulsets, queue, Controller::StatefulSet, |obj| {
        sync_one(api, obj, timers)
    });
}

#[allow(clippy::too_many_lines)]
fn sync_one(api: &Api<'_>, set: &Value, timers: &mut Timers) -> Result<(), crate::ApiError> {
    let def = api.defs.statefulsets;
    let (ns, name) = (meta_str(set, "namespace"), meta_str(set, "name"));
    let now = api.clock.now();
    let keep =
        usize::try_from(set.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64).unwrap_or(10))
            .unwrap_or(10);
    let (update_rev, _, _) = history::current(api, def, set, keep)?;
    let current_rev = set
        .pointer("/status/currentRevision")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .unwrap_or(&update_rev)
        .to_owned();
    let replicas = set.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let parallel = set.pointer("/spec/podManagementPolicy").and_then(Value::as_str) == Some("Parallel");
    let on_delete = set.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("OnDelete");
    let partition =
        set.pointer("/spec/updateStrategy/rollingUpdate/partition").and_then(Value::as_i64).unwrap_or(0);
    let min_ready = set.pointer("/spec/minReadySeconds").and_then(Value::as_i64).unwrap_or(0);

    let selector = set.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    let member = |p: &Value| ordinal(name, p).is_some();
    let how = Claim {
        def,
        child: api.defs.pods,
        selector: &selector,
        considers: &|_| true,
        member: &member,
        finalizer: None,
    };
    let pods: BTreeMap<i64, Arc<Value>> =
        claim(api, set, &how).into_iter().filter_map(|p| Some((ordinal(name, &p)?, p))).collect();
    let healthy = |p: &Value| phase(p) == "Running" && pod_ready(p) && !is_deleting(p);

    // Make what is missing, replace what failed; in order, each after the one before is ready.
    let mut blocked = false;
    for i in 0..replicas {
        match pods.get(&i) {
            None => {
                if blocked {
                    break;
                }
                // A pod below the partition keeps the revision it had (its template then).
                let revision = if !on_delete && i < partition { &current_rev } else { &update_rev };
                create(api, set, i, revision)?;
                if !parallel {
                    blocked = true;
                }
            }
            Some(p) if phase(p) == "Failed" || phase(p) == "Succeeded" => {
                api.delete(api.defs.pods, p, Some(0))?;
                blocked |= !parallel;
            }
            Some(p) => {
                if !parallel && !healthy(p) {
                    blocked = true;
                }
            }
        }
    }
    // Surplus ordinals go, the highest first; ordered: one at a time, once the rest are ready.
    let surplus: Vec<&Arc<Value>> = pods.range(replicas..).rev().map(|(_, p)| p).collect();
    let all_healthy =
        pods.range(..replicas).all(|(_, p)| healthy(p)) && pods.range(..replicas).count() as i64 == replicas;
    for p in &surplus {
        if is_deleting(p) {
            if !parallel {
                break;
            }
            continue;
        }
        if !parallel && !all_healthy {
            break;
        }
        api.delete(api.defs.pods, p, None)?;
        api.event(
            def,
            set,
            false,
            "SuccessfulDelete",
            &format!("delete Pod {} in StatefulSet {name} successful", meta_str(p, "name")),
            SOURCE,
        );
        if !parallel {
            break;
        }
    }
    // The rolling update: the highest stale ordinal at or above the partition, once all are ready.
    if !on_delete
        && surplus.is_empty()
        && all_healthy
        && let Some((_, stale)) =
            pods.range(partition.max(0)..replicas).rev().find(|(_, p)| revision_of(p) != update_rev)
    {
        api.delete(api.defs.pods, stale, None)?;
        api.event(
            def,
            set,
            false,
            "SuccessfulDelete",
            &format!("delete Pod {} in StatefulSet {name} successful", meta_str(stale, "name")),
            SOURCE,
        );
    }

    let live: Vec<&Arc<Value>> = pods.values().filter(|p| !is_deleting(p)).collect();
    let count = |f: &dyn Fn(&Value) -> bool| live.iter().filter(|p| f(p)).count();
    let ready = count(&|p| pod_ready(p));
    let available = count(&|p| pod_available(p, min_ready, now));
    let updated = count(&|p| revision_of(p) == update_rev);
    let mut current = count(&|p| revision_of(p) == current_rev);
    let mut current_name = current_rev.clone();
    // Every pod on the new revision: it becomes the current one.
    if updated == usize::try_from(replicas).unwrap_or(0) && ready == updated && live.len() == updated {
        current_name.clone_from(&update_rev);
        current = updated;
    }
    if ready > available {
        timers.at(
            now.saturating_add(jiff::SignedDuration::from_secs(1)).unwrap_or(now),
            Controller::StatefulSet,
            ns,
            name,
        );
    }
    let mut status = json!({
        "replicas": live.len(),
        "observedGeneration": set.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        "currentRevision": current_name,
        "updateRevision": update_rev,
        "collisionCount": set.pointer("/status/collisionCount").cloned().unwrap_or(json!(0)),
        "availableReplicas": available,
    });
    for (field, n) in [("readyReplicas", ready), ("currentReplicas", current), ("updatedReplicas", updated)] {
        if n > 0 {
            status[field] = json!(n);
        }
    }
    // Upstream's `inconsistentStatus`: the status is written only when a field it computes
    // differs (what else a client put there, conditions say, stays until then).
    let counted = [
        "observedGeneration",
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
        "currentRevision",
        "updateRevision",
    ];
    let had = &set["status"];
    let zero = |v: Option<&Value>| v.cloned().unwrap_or(json!(0));
    let same = counted.iter().all(|f| {
        let (old, new) = (had.get(*f), status.get(*f));
        if matches!(*f, "currentRevision" | "updateRevision") { old == new } else { zero(old) == zero(new) }
    });
    if same {
        return Ok(());
    }
    api.write_status(def, set, status, "kube-controller-manager")
}

/// Creates ordinal `i` with its claims, from the template of `revision`.
fn create(api: &Api<'_>, set: &Value, i: i64, revision: &str) -> Result<(), crate::ApiError> {
    let def = api.defs.statefulsets;
    let (ns, name) = (meta_str(set, "namespace"), meta_str(set, "name"));
    let pod_name = format!("{name}-{i}");
    let template = revision_template(api, set, revision)
        .unwrap_or_else(|| set.pointer("/spec/template").cloned().unwrap_or_default());
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": pod_name, "namespace": ns,
            "labels": template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({})),
            "ownerReferences": [controller_ref(def, set)],
        },
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    if let Some(a) = template.pointer("/metadata/annotations") {
        pod["metadata"]["annotations"] = a.clone();
    }
    let labels = &mut pod["metadata"]["labels"];
    labels[REVISION_LABEL] = json!(revision);
    labels["statefulset.kubernetes.io/pod-name"] = json!(pod_name);
    labels["apps.kubernetes.io/pod-index"] = json!(i.to_string());
    pod["spec"]["hostname"] = json!(pod_name);
    if let Some(service) = set.pointer("/spec/serviceName").and_then(Value::as_str).filter(|s| !s.is_empty())
    {
        pod["spec"]["subdomain"] = json!(service);
    }
    for claim in set.pointer("/spec/volumeClaimTemplates").and_then(Value::as_array).into_iter().flatten() {
        let claim_name = format!("{}-{pod_name}", meta_str(claim, "name"));
        if api.get(api.defs.claims, ns, &claim_name).is_none() {
            let mut pvc = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": { "name": claim_name, "namespace": ns,
                              "labels": set.pointer("/spec/selector/matchLabels").cloned().unwrap_or_else(|| json!({})) },
                "spec": claim.get("spec").cloned().unwrap_or_else(|| json!({})),
            });
            if let Some(l) = claim.pointer("/metadata/labels").and_then(Value::as_object) {
                for (k, v) in l {
                    pvc["metadata"]["labels"][k] = v.clone();
                }
            }
            match api.create(api.defs.claims, ns, pvc, "kube-controller-manager") {
                Ok(_) => api.event(
                    def,
                    set,
                    false,
                    "SuccessfulCreate",
                    &format!("create Claim {claim_name} Pod {pod_name} in StatefulSet {name} success"),
                    SOURCE,
                ),
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        let volumes = pod["spec"]["volumes"].as_array().cloned().unwrap_or_default();
        let mut volumes: Vec<Value> =
            volumes.into_iter().filter(|v| v["name"] != meta_str(claim, "name")).collect();
        volumes.push(
            json!({ "name": meta_str(claim, "name"), "persistentVolumeClaim": { "claimName": claim_name } }),
        );
        pod["spec"]["volumes"] = json!(volumes);
    }
    match api.create(api.defs.pods, ns, pod, "kube-controller-manager") {
        Ok(_) => {
            api.event(
                def,
                set,
                false,
                "SuccessfulCreate",
                &format!("create Pod {pod_name} in StatefulSet {name} successful"),
                SOURCE,
            );
            Ok(())
        }
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => {
            api.event(
                def,
                set,
                true,
                "FailedCreate",
                &format!("create Pod {pod_name} in StatefulSet {name} failed error: {}", e.message),
                SOURCE,
            );
            Err(e)
        }
    }
}

/// The pod template a ControllerRevision recorded.
fn revision_template(api: &Api<'_>, set: &Value, revision: &str) -> Option<Value> {
    let def = crate::catalog::find("apps", "v1", "controllerrevisions")?;
    let r = api.get(def, meta_str(set, "namespace"), revision)?;
    let mut t = r.pointer("/data/spec/template")?.clone();
    t.as_object_mut()?.remove("$patch");
    Some(t)
}
