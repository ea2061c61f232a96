//! The status the naming and establishing controllers give a CRD
//! (`pkg/controller/status/naming_controller.go`, `pkg/controller/establish`).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{NULL, arr_at, condition, find_condition, set_condition, str_at};

/// A requested name is fine when it is the one already accepted or nobody in the group uses it
/// (`equalToAcceptedOrFresh`).
fn fresh(requested: &str, accepted: &str, used: &HashSet<&str>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    arr_at(v, key).iter().map(|s| s.as_str().unwrap_or("").to_owned()).collect()
}

/// The new `status` of `crd`, given every other existing CRD (`others`, which may include
/// terminating ones, as upstream's lister does): what the naming controller and then the
/// establishing controller write, in one step.
///
/// - `acceptedNames`: each requested name that is the one already accepted or that no CRD of
///   the same group has accepted (plural, singular and short names share one namespace, kind
///   and list kind another; the CRD's own accepted names count, as upstream lists it too); a
///   conflicting name keeps its previously accepted value. Categories are always taken.
/// - `NamesAccepted`: True, `NoConflicts`, `no conflicts found`; or False with the reason of
///   the last conflict found (`PluralConflict`, `SingularConflict`, `ShortNamesConflict`,
///   `KindConflict`, `ListKindConflict`) and its message (`"widgets" is already in use`).
/// - `Established`: True, `InitialNamesAccepted`, `the initial names have been accepted` once the
///   names are accepted (upstream's naming controller first writes it False, `Installing`, and
///   the establishing controller flips it; the sandbox serves at once, so it is one step); if
///   the names are not accepted and it was never set, False, `NotAccepted`,
///   `not all names are accepted`; an Established CRD stays so when a later name change
///   conflicts.
/// - `storedVersions` kept, with the storage version added if missing.
///
/// Conditions keep their `lastTransitionTime` unless their status changes.
#[must_use]
pub fn names_status(crd: &Value, others: &[&Value]) -> Value {
    let spec = crd.get("spec").unwrap_or(&NULL);
    let group = str_at(spec, "group");
    let mut resources: HashSet<&str> = HashSet::new();
    let mut kinds: HashSet<&str> = HashSet::new();
    for other in others.iter().copied().chain(std::iter::once(crd)) {
        if other.get("spec").map_or("", |s| str_at(s, "group")) != group {
            continue;
        }
        let names = other.pointer("/status/acceptedNames").unwrap_or(&NULL);
        resources.insert(str_at(names, "plural"));
        resources.insert(str_at(names, "singular"));
        resources.extend(arr_at(names, "shortNames").iter().map(|s| s.as_str().unwrap_or("")));
        kinds.insert(str_at(names, "kind"));
        kinds.insert(str_at(names, "listKind"));
    }

    let requested = spec.get("names").unwrap_or(&NULL);
    let accepted = crd.pointer("/status/acceptedNames").unwrap_or(&NULL);
    let mut new_names: Map<String, Value> = accepted.as_object().cloned().unwrap_or_default();
    let mut conflict: Option<(&str, String)> = None;
    for (field, reason, used) in
        [("plural", "PluralConflict", &resources), ("singular", "SingularConflict", &resources)]
    {
        match fresh(str_at(requested, field), str_at(accepted, field), used) {
            Ok(()) => {
                new_names.insert(field.into(), json!(str_at(requested, field)));
            }
            Err(why) => conflict = Some((reason, why)),
        }
    }
    let (want_short, have_short) = (strings(requested, "shortNames"), strings(accepted, "shortNames"));
    if want_short != have_short {
        let mut errs: Vec<String> = Vec::new();
        for short in &want_short {
            // Already ours, or our own accepted plural or singular (which are in the set).
            if have_short.contains(short)
                || short == str_at(accepted, "plural")
                || short == str_at(accepted, "singular")
            {
                continue;
            }
            if let Err(why) = fresh(short, "", &resources)
                && !errs.contains(&why)
            {
                errs.push(why);
            }
        }
        match errs.len() {
            0 => {
                new_names.insert("shortNames".into(), json!(want_short));
            }
            // `utilerrors.NewAggregate(...).Error()`.
            1 => conflict = Some(("ShortNamesConflict", errs.remove(0))),
            _ => conflict = Some(("ShortNamesConflict", format!("[{}]", errs.join(", ")))),
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match fresh(str_at(requested, field), str_at(accepted, field), &kinds) {
            Ok(()) => {
                new_names.insert(field.into(), json!(str_at(requested, field)));
            }
            Err(why) => conflict = Some((reason, why)),
        }
    }
    new_names.insert("categories".into(), json!(strings(requested, "categories")));
    // The v1 shape: `plural` and `kind` always there, the others omitted when empty.
    new_names.retain(|k, v| {
        matches!(k.as_str(), "plural" | "kind")
            || !(v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty))
    });
    for k in ["plural", "kind"] {
        new_names.entry(k).or_insert(json!(""));
    }

    let mut status: Map<String, Value> =
        crd.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    status.insert("acceptedNames".into(), Value::Object(new_names));
    let accepted_now = conflict.is_none();
    match &conflict {
        None => {
            set_condition(&mut status, condition::NAMES_ACCEPTED, "True", "NoConflicts", "no conflicts found")
        }
        Some((reason, why)) => set_condition(&mut status, condition::NAMES_ACCEPTED, "False", reason, why),
    }
    let established = find_condition(crd, condition::ESTABLISHED);
    let established_true = established.is_some_and(|c| str_at(c, "status") == "True");
    if accepted_now && !established_true {
        set_condition(
            &mut status,
            condition::ESTABLISHED,
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        );
    } else if !accepted_now && established.is_none() {
        set_condition(
            &mut status,
            condition::ESTABLISHED,
            "False",
            "NotAccepted",
            "not all names are accepted",
        );
    }
    let mut out = json!({"status": status});
    if let Some(storage) = super::storage_version(crd) {
        super::add_stored_version(&mut out, &storage);
    }
    out["status"].take()
}
