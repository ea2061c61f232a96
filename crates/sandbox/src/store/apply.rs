//! Server-side apply: the applied configuration merged onto the live object, conflicts with the
//! other managers' fields, `force`, and the manager's `Apply` entry (see [`crate::patch`] for the
//! subset of apply the sandbox does).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::managed_fields::record_apply;
use crate::object_meta::meta_mut;
use crate::patch;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// Records (replacing) `manager`'s Apply entry in `managedFields`.
/// Server-side apply of `applied` by `manager` onto `live` (see [`crate::patch`] for the subset).
pub(super) fn server_side_apply(
    def: &ResourceDef,
    live: &Value,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    let paths = patch::leaf_paths(applied);
    let entries: Vec<Value> =
        live.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default();
    let owned_by = |e: &Value| patch::paths_from_fields_v1(&e["fieldsV1"]);
    let mut conflicts = Vec::new();
    let mut others: BTreeSet<String> = BTreeSet::new();
    let mut previous: BTreeSet<String> = BTreeSet::new();
    // Every other manager's fields can conflict, Update managers' too (`kubectl scale` then an
    // apply of another count is a conflict with "kubectl").
    for e in &entries {
        let owned = owned_by(e);
        if e["manager"] == manager && e["operation"] == "Apply" {
            previous = owned;
            continue;
        }
        for p in &paths {
            if owned.contains(p) && patch::value_at(live, p) != patch::value_at(applied, p) {
                conflicts.push((p.clone(), e["manager"].as_str().unwrap_or("").to_owned()));
            }
        }
        others.extend(owned);
    }
    if !conflicts.is_empty() && !force {
        conflicts.sort_by(|(a, m), (b, n)| m.cmp(n).then_with(|| field_set_order(a, b)));
        let shown: Vec<(String, String)> =
            conflicts.into_iter().map(|(p, m)| (patch::display_path(&p), m)).collect();
        return Err(conflict_error(&shown));
    }
    let mut merged = live.clone();
    if def.custom().is_some() {
        // A custom resource's lists are atomic unless its schema says otherwise: the applied
        // configuration's maps merge, its lists replace.
        patch::merge_patch(&mut merged, applied);
    } else {
        patch::strategic_merge(&mut merged, applied)?;
    }
    // A field the manager no longer applies goes, unless another manager owns it — or it is a
    // map or struct (a `"."` entry) the configuration still sets fields under.
    let still_applied = |parent: &str| {
        paths.iter().any(|p| p.strip_prefix(parent).is_some_and(|rest| rest.starts_with([patch::SEP, '['])))
    };
    for gone in previous.difference(&paths).filter(|p| !others.contains(*p) && !still_applied(p)) {
        patch::remove_path(&mut merged, gone);
        // A map the removal left empty goes too: upstream's object is typed again after the
        // merge, and an empty map (`labels`, `data`, …) is `omitempty`.
        prune_emptied(&mut merged, gone);
    }
    // Forced fields leave their previous owners.
    let mut kept: Vec<Value> = entries;
    if force {
        for e in kept.iter_mut().filter(|e| !(e["operation"] == "Apply" && e["manager"] == manager)) {
            let remaining: BTreeSet<String> = owned_by(e).difference(&paths).cloned().collect();
            e["fieldsV1"] = patch::fields_v1(&remaining);
        }
        kept.retain(|e| e["fieldsV1"].as_object().is_some_and(|f| !f.is_empty()));
    }
    meta_mut(&mut merged).insert("managedFields".into(), Value::Array(kept));
    record_apply(&mut merged, manager, &paths, &def.api_version());
    // The update is conditional on the version the configuration names, else on the live one
    // (an apply is never an unconditional update: a strategy that refuses those takes it).
    let rv = applied
        .pointer("/metadata/resourceVersion")
        .or_else(|| live.pointer("/metadata/resourceVersion"))
        .cloned();
    match rv {
        Some(rv) => meta_mut(&mut merged).insert("resourceVersion".into(), rv),
        None => meta_mut(&mut merged).remove("resourceVersion"),
    };
    Ok(merged)
}

/// Removes the maps on `path`'s way that are left empty, innermost first (up to a list: an
/// item is not pruned).
fn prune_emptied(obj: &mut Value, path: &str) {
    let parts: Vec<&str> = path.trim_start_matches(patch::SEP).split(patch::SEP).collect();
    let maps = parts.iter().position(|p| p.contains('[')).unwrap_or(parts.len());
    for depth in (1..maps.min(parts.len() - 1) + 1).rev() {
        let Some((last, parents)) = parts[..depth].split_last() else { return };
        let mut parent = &mut *obj;
        for p in parents {
            let Some(next) = parent.get_mut(*p) else { return };
            parent = next;
        }
        let Some(m) = parent.as_object_mut() else { return };
        if !m.get(*last).and_then(Value::as_object).is_some_and(serde_json::Map::is_empty) {
            return;
        }
        m.remove(*last);
    }
}

/// Upstream's order of two field paths, as structured-merge-diff's `Set.Iterate` walks a set:
/// at each level the fields that end there come first, then those that go deeper, each group
/// by name (a list item's key being a step of its own).
fn field_set_order(a: &str, b: &str) -> std::cmp::Ordering {
    let steps = |p: &str| -> Vec<String> {
        p.trim_start_matches(patch::SEP)
            .split(patch::SEP)
            .flat_map(|segment| match segment.find('[') {
                Some(i) if i > 0 => vec![segment[..i].to_owned(), segment[i..].to_owned()],
                _ => vec![segment.to_owned()],
            })
            .collect()
    };
    let (a, b) = (steps(a), steps(b));
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let ends = |p: &[String]| p.len() <= common + 1;
    match (ends(&a), ends(&b)) {
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.get(common).cmp(&b.get(common)),
    }
}

/// The 409 of an apply that conflicts, as upstream's `NewConflictError`
/// (`managedfields/internal/conflict.go`): no kind or name in the details, one
/// `FieldManagerConflict` cause per field, and the message `Apply failed with 1 conflict:
/// conflict with "m": .data.k` — or, for several, each manager's fields listed under it,
/// managers in sorted order.
fn conflict_error(conflicts: &[(String, String)]) -> ApiError {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(f, m)| serde_json::json!({ "reason": "FieldManagerConflict", "message": format!("conflict with {m:?}"), "field": f }))
        .collect();
    let message = if let [(path, manager)] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {manager:?}: {path}")
    } else {
        let mut by_manager: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
        for (p, m) in conflicts {
            by_manager.entry(m).or_default().push(p);
        }
        let lines: Vec<String> = by_manager
            .iter()
            .flat_map(|(m, paths)| {
                std::iter::once(format!("conflicts with {m:?}:"))
                    .chain(paths.iter().map(|p| format!("- {p}")))
            })
            .collect();
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    ApiError {
        code: 409,
        reason: "Conflict",
        message,
        details: Some(serde_json::json!({ "causes": causes })),
        continue_token: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_follow_the_field_sets_order() {
        let path = |p: &str| p.replace('.', &patch::SEP.to_string());
        let mut paths = [
            path(".metadata.labels.owner"),
            path(".subsets"),
            path(".spec.template.spec.containers[name=web].image"),
            path(".spec.replicas"),
            path(".metadata.annotations.a"),
        ];
        paths.sort_by(|a, b| field_set_order(a, b));
        let shown: Vec<String> = paths.iter().map(|p| patch::display_path(p)).collect();
        // A field that ends at a level comes before those that go deeper; each group by name.
        assert_eq!(
            shown,
            [
                ".subsets",
                ".metadata.annotations.a",
                ".metadata.labels.owner",
                ".spec.replicas",
                ".spec.template.spec.containers[name=web].image"
            ]
        );
    }
}
