//! Server-side apply: the applied configuration merged onto the live object, conflicts with the
//! other managers' fields, `force`, and the manager's `Apply` entry (see [`crate::patch`] for the
//! subset of apply the sandbox does).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::managed_fields::record_apply;
use crate::object::{meta_mut, meta_str};
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
    let name = meta_str(live, "name");
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
                conflicts.push((patch::display_path(p), e["manager"].as_str().unwrap_or("").to_owned()));
            }
        }
        others.extend(owned);
    }
    if !conflicts.is_empty() && !force {
        let causes: Vec<(String, String)> =
            conflicts.iter().map(|(p, m)| (p.clone(), format!("conflict with {m:?}"))).collect();
        let mut e = ApiError::conflict(
            def.group,
            def.plural,
            name,
            &format!(
                "Apply failed with {} conflict(s): {}",
                causes.len(),
                causes.iter().map(|(p, m)| format!("{m}: {p}")).collect::<Vec<_>>().join("; ")
            ),
        );
        e.details = Some(json!({ "name": name, "group": def.group, "kind": def.plural,
            "causes": causes.iter().map(|(f, m)| json!({ "reason": "FieldManagerConflict", "message": m, "field": f })).collect::<Vec<_>>() }));
        return Err(e);
    }
    let mut merged = live.clone();
    if def.custom().is_some() {
        // A custom resource's lists are atomic unless its schema says otherwise: the applied
        // configuration's maps merge, its lists replace.
        patch::merge_patch(&mut merged, applied);
    } else {
        patch::strategic_merge(&mut merged, applied);
    }
    for gone in previous.difference(&paths).filter(|p| !others.contains(*p)) {
        patch::remove_path(&mut merged, gone);
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
    meta_mut(&mut merged).remove("resourceVersion");
    Ok(merged)
}
