//! What a Pod's update may change (`ValidatePodUpdate` after the spec's own rules): the
//! annotations only the kubelet and admission set, the number of containers, the active
//! deadline (only down), tolerations (only added), scheduling gates (only removed), a gated
//! pod's node selector (only added to), the QoS class, and otherwise only images.

use serde_json::{Map, Value};

use super::qos_class;
use crate::go_print::{go_quote, go_string_map};
use crate::status::FieldError;

/// What a Pod's spec may change in an update; anything else is refused with upstream's list.
pub(super) const POD_UPDATE_FORBIDDEN: &str = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

const APP_ARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
const MIRROR: &str = "kubernetes.io/config.mirror";

fn annotations(pod: &Value) -> Map<String, Value> {
    pod.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `ValidatePodSpecificAnnotationUpdates`: AppArmor and mirror-pod annotations are neither
/// added, changed nor removed (keys in order; upstream walks a Go map).
pub(super) fn annotation_updates(pod: &Value, old: &Value) -> Vec<FieldError> {
    let (new, old) = (annotations(pod), annotations(old));
    let mut errs = Vec::new();
    for (k, v) in &old {
        if new.get(k) == Some(v) {
            continue;
        }
        let field = format!("metadata.annotations[{k}]");
        if k.starts_with(APP_ARMOR_PREFIX) {
            errs.push((field.clone(), "Forbidden: may not remove or update AppArmor annotations".into()));
        }
        if k == MIRROR {
            errs.push((field, "Forbidden: may not remove or update mirror pod annotation".into()));
        }
    }
    for k in new.keys().filter(|k| !old.contains_key(*k)) {
        let field = format!("metadata.annotations[{k}]");
        if k.starts_with(APP_ARMOR_PREFIX) {
            errs.push((field.clone(), "Forbidden: may not add AppArmor annotations".into()));
        }
        if k == MIRROR {
            errs.push((field, "Forbidden: may not add mirror pod annotation".into()));
        }
    }
    errs
}

fn list<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `ValidatePodUpdate`'s rules beyond the new pod's own, in upstream's order (some end the
/// checks, as upstream returns early).
pub(super) fn validate(pod: &Value, old: &Value) -> Vec<FieldError> {
    let null = Value::Null;
    let spec = pod.get("spec").unwrap_or(&null);
    let old_spec = old.get("spec").unwrap_or(&null);
    let mut errs = annotation_updates(pod, old);
    // `ValidateContainerUpdates`: a changed number of containers ends the update's checks.
    for l in ["containers", "initContainers"] {
        let (new_list, old_list) = (list(spec, l), list(old_spec, l));
        if new_list.len() != old_list.len() {
            errs.push((
                format!("spec.{l}"),
                "Forbidden: pod updates may not add or remove containers".into(),
            ));
            return errs;
        }
        for (i, c) in new_list.iter().enumerate() {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            if image.is_empty() {
                errs.push((format!("spec.{l}[{i}].image"), "Required value".into()));
            }
            if image.trim() != image {
                errs.push((
                    format!("spec.{l}[{i}].image"),
                    format!(
                        "Invalid value: {}: must not have leading or trailing whitespace",
                        go_quote(image)
                    ),
                ));
            }
        }
    }
    // The active deadline is set once, then only lowered.
    let deadline = |s: &Value| s.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(spec), deadline(old_spec)) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            errs.push((
                "spec.activeDeadlineSeconds".into(),
                format!("Invalid value: {n}: must be between 0 and 2147483647, inclusive"),
            ));
            return errs;
        }
        (Some(n), Some(before)) if before < n => {
            errs.push((
                "spec.activeDeadlineSeconds".into(),
                format!("Invalid value: {n}: must be less than or equal to previous value"),
            ));
            return errs;
        }
        (None, Some(_)) => errs.push((
            "spec.activeDeadlineSeconds".into(),
            "Invalid value: null: must not update from a positive integer to nil value".into(),
        )),
        _ => {}
    }
    errs.extend(only_added_tolerations(list(spec, "tolerations"), list(old_spec, "tolerations")));
    errs.extend(only_deleted_gates(list(spec, "schedulingGates"), list(old_spec, "schedulingGates")));
    if spec == old_spec {
        return errs;
    }
    let old_qos =
        old.pointer("/status/qosClass").and_then(Value::as_str).unwrap_or_else(|| qos_class(old_spec));
    if old_qos != qos_class(spec) {
        let qos = pod.pointer("/status/qosClass").and_then(Value::as_str).unwrap_or("");
        errs.push(("metadata".into(), format!("Invalid value: {}: Pod QoS is immutable", go_quote(qos))));
    }
    // The new spec with what may change taken from the old one.
    let mut munged = spec.clone();
    for l in ["containers", "initContainers"] {
        if let Some(cs) = munged.get_mut(l).and_then(Value::as_array_mut) {
            for (c, before) in cs.iter_mut().zip(list(old_spec, l)) {
                set_or_remove(c, "image", before.get("image"));
            }
        }
    }
    // The ephemeral containers change through their own subresource.
    for f in ["activeDeadlineSeconds", "schedulingGates", "tolerations", "ephemeralContainers"] {
        set_or_remove(&mut munged, f, old_spec.get(f));
    }
    let grace = |s: &Value| s.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(old_spec).is_some_and(|g| g < 0) && grace(&munged) == Some(1) {
        set_or_remove(
            &mut munged,
            "terminationGracePeriodSeconds",
            old_spec.get("terminationGracePeriodSeconds"),
        );
    }
    // A pod its gates hold back may gain node selector terms.
    if !list(old_spec, "schedulingGates").is_empty()
        && munged.get("nodeSelector") != old_spec.get("nodeSelector")
    {
        let new_sel = munged.get("nodeSelector").and_then(Value::as_object);
        let old_sel = old_spec.get("nodeSelector").and_then(Value::as_object);
        let kept = old_sel.into_iter().flatten().all(|(k, v)| new_sel.and_then(|n| n.get(k)) == Some(v));
        if !kept {
            errs.push((
                "spec.nodeSelector".into(),
                format!(
                    "Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                    go_string_map(new_sel)
                ),
            ));
        }
        set_or_remove(&mut munged, "nodeSelector", old_spec.get("nodeSelector"));
    }
    // …and requirements in its required node affinity's terms.
    let old_affinity = old_spec.pointer("/affinity/nodeAffinity").filter(|v| !v.is_null());
    if !list(old_spec, "schedulingGates").is_empty()
        && munged.pointer("/affinity/nodeAffinity").filter(|v| !v.is_null()) != old_affinity
    {
        errs.extend(node_affinity_mutation(munged.pointer("/affinity/nodeAffinity"), old_affinity));
        let has_affinity = munged.get("affinity").is_some_and(Value::is_object);
        let only_node = |a: &Value| !has(a, "podAffinity") && !has(a, "podAntiAffinity");
        if !has_affinity {
            if let Some(na) = old_affinity {
                munged["affinity"] = serde_json::json!({ "nodeAffinity": na });
            }
        } else if !has(old_spec, "affinity") && only_node(&munged["affinity"]) {
            set_or_remove(&mut munged, "affinity", None);
        } else {
            set_or_remove(&mut munged["affinity"], "nodeAffinity", old_affinity);
        }
    }
    if &munged != old_spec {
        errs.push(("spec".into(), POD_UPDATE_FORBIDDEN.into()));
    }
    errs
}

/// Whether `v` holds `key` with a value other than `null`.
fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Sets `key` of `v` to `value`, or removes it when there is none.
fn set_or_remove(v: &mut Value, key: &str, value: Option<&Value>) {
    let Some(o) = v.as_object_mut() else { return };
    match value {
        Some(x) => {
            o.insert(key.to_owned(), x.clone());
        }
        None => {
            o.remove(key);
        }
    }
}

/// `validateOnlyAddedTolerations`: each old toleration is still there, its `tolerationSeconds`
/// aside.
fn only_added_tolerations(new: &[Value], old: &[Value]) -> Vec<FieldError> {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(o) = t.as_object_mut() {
            o.remove("tolerationSeconds");
            o.retain(|_, v| !v.is_null() && v.as_str() != Some(""));
        }
        t
    };
    let kept = old.iter().all(|o| new.iter().any(|n| strip(n) == strip(o)));
    if kept {
        return Vec::new();
    }
    vec![(
        "spec.tolerations".into(),
        "Forbidden: existing toleration can not be modified except its tolerationSeconds".into(),
    )]
}

/// `validateOnlyDeletedSchedulingGates`: no gate the old pod did not have.
fn only_deleted_gates(new: &[Value], old: &[Value]) -> Vec<FieldError> {
    let name = |g: &Value| g.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
    let before: Vec<String> = old.iter().map(name).collect();
    let mut added: Vec<(usize, String)> = Vec::new();
    // The last index of a name counts, as upstream's map of names keeps it.
    for (i, g) in new.iter().enumerate() {
        let n = name(g);
        added.retain(|(_, m)| *m != n);
        if !before.contains(&n) {
            added.push((i, n));
        }
    }
    added.sort();
    added
        .into_iter()
        .map(|(i, n)| {
            (
                format!("spec.schedulingGates[{i}].name"),
                format!("Forbidden: only deletion is allowed, but found new scheduling gate '{n}'"),
            )
        })
        .collect()
}

/// The required terms of a node affinity, if it has any.
fn required_terms(affinity: Option<&Value>) -> Option<&Vec<Value>> {
    affinity?.pointer("/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")?.as_array()
}

/// Go's `%#v` of a `[]core.NodeSelectorRequirement` (`nil` when absent).
fn go_requirements(list: Option<&Value>) -> String {
    let Some(items) = list.and_then(Value::as_array) else {
        return "[]core.NodeSelectorRequirement(nil)".to_owned();
    };
    let items: Vec<String> = items
        .iter()
        .map(|r| {
            let values = match r.get("values").and_then(Value::as_array) {
                None => "[]string(nil)".to_owned(),
                Some(vs) => {
                    let vs: Vec<String> = vs.iter().map(|v| go_quote(v.as_str().unwrap_or(""))).collect();
                    format!("[]string{{{}}}", vs.join(", "))
                }
            };
            let s = |k: &str| go_quote(r.get(k).and_then(Value::as_str).unwrap_or(""));
            format!(
                "core.NodeSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                s("key"),
                s("operator")
            )
        })
        .collect();
    format!("[]core.NodeSelectorRequirement{{{}}}", items.join(", "))
}

/// Go's `%#v` of a `core.NodeSelectorTerm`.
fn go_term(t: &Value) -> String {
    format!(
        "core.NodeSelectorTerm{{MatchExpressions:{}, MatchFields:{}}}",
        go_requirements(t.get("matchExpressions")),
        go_requirements(t.get("matchFields"))
    )
}

/// `validateNodeAffinityMutation`: a gated pod's required terms, once it has some, stay as
/// many, each keeping its requirements and maybe gaining more.
fn node_affinity_mutation(new: Option<&Value>, old: Option<&Value>) -> Vec<FieldError> {
    const AT: &str =
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    let Some(old_terms) = required_terms(old).filter(|t| !t.is_empty()) else { return Vec::new() };
    let new_terms = required_terms(new);
    let new_list: &[Value] = new_terms.map_or(&[], Vec::as_slice);
    if new_list.len() != old_terms.len() {
        let printed = match new_terms {
            None => "[]core.NodeSelectorTerm(nil)".to_owned(),
            Some(ts) => format!(
                "[]core.NodeSelectorTerm{{{}}}",
                ts.iter().map(go_term).collect::<Vec<_>>().join(", ")
            ),
        };
        return vec![(
            AT.to_owned(),
            format!(
                "Invalid value: {printed}: no additions/deletions to non-empty NodeSelectorTerms list are allowed"
            ),
        )];
    }
    let kept = |new: &Value, old: &Value, key: &str| {
        let of = |t: &Value| t.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        let (n, o) = (of(new), of(old));
        o.len() <= n.len() && o.iter().zip(&n).all(|(a, b)| a == b)
    };
    old_terms
        .iter()
        .zip(new_list)
        .enumerate()
        .filter(|(_, (o, n))| !(kept(n, o, "matchExpressions") && kept(n, o, "matchFields")))
        .map(|(i, (_, n))| {
            (
                format!("{AT}[{i}]"),
                format!(
                    "Invalid value: {}: only additions are allowed (no mutations or deletions)",
                    go_term(n)
                ),
            )
        })
        .collect()
}
