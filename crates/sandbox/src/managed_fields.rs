//! `metadata.managedFields`: who set which field, recorded on every write as upstream's field
//! manager does (`apiserver/pkg/endpoints/handlers/fieldmanager`, `managedfields/internal`).
//!
//! * An **Update** (create, update, or a JSON, merge or strategic patch) by manager M: the fields
//!   the write set or changed become M's — in its `Update` entry for that subresource, with the
//!   time — and leave every other manager; fields the write removed leave everyone. A write that
//!   changes nothing leaves the entries as they were.
//! * An **Apply** (server-side apply): the applied configuration's fields are the manager's
//!   `Apply` entry (see [`record_apply`] and the store's apply).
//!
//! The manager is the `fieldManager` parameter or, without one, what precedes the first `/` of
//! the User-Agent ([`manager_from_user_agent`]). Fields the server sets (uid, creationTimestamp,
//! generation, …) belong to nobody; status belongs to status writers only, for kinds with a
//! status subresource. An Update owns the leaf fields it set and, as structured-merge-diff's
//! comparison finds them, the maps, keyed list items and optional structs it added as a whole
//! (`"."` in `FieldsV1`: `{"f:data":{".":{},"f:k":{}}}`; see `is_member`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::object_meta::{meta_mut, now_rfc3339};
use crate::patch;
use crate::resource::{ResourceDef, Run, Subresource};

/// Upstream's `FieldManagerMaxLength`.
pub const MAX_MANAGER_LENGTH: usize = 128;

/// The manager a request without `fieldManager` writes as: the User-Agent up to its first `/`,
/// without unprintable characters, cut to [`MAX_MANAGER_LENGTH`] bytes (upstream's
/// `prefixFromUserAgent`): `kubectl/v1.32.0 (linux/amd64)` → `kubectl`.
#[must_use]
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_MANAGER_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Fields the server sets: nobody's.
const SERVER_FIELDS: [&str; 6] = [
    ".metadata.uid",
    ".metadata.creationTimestamp",
    ".metadata.generation",
    ".metadata.deletionTimestamp",
    ".metadata.deletionGracePeriodSeconds",
    ".metadata.selfLink",
];

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Whether a write through `sub` can own the leaf field `path`.
fn ownable(def: &ResourceDef, path: &str, sub: Subresource) -> bool {
    let shown = patch::display_path(path);
    if SERVER_FIELDS.iter().any(|f| under(&shown, f)) {
        return false;
    }
    match sub {
        Subresource::Main => !(def.status_subresource && under(&shown, ".status")),
        Subresource::Status => under(&shown, ".status"),
        Subresource::Scale => under(&shown, def.scale.map_or(".spec.replicas", |s| s.spec_replicas)),
        Subresource::Action(a) => match a.run {
            Run::Owns(parts) => parts.iter().any(|p| under(&shown, &p.replace('/', "."))),
            _ => false,
        },
    }
}

/// Structs every object of a built-in kind has (Go values, not pointers): the zero object an
/// Update is compared against already holds them, so adding fields under them never adds them.
const ALWAYS_PRESENT: &[&str] = &[
    ".spec",
    ".status",
    ".spec.template",
    ".spec.template.metadata",
    ".spec.template.spec",
    ".spec.strategy",
    ".status.loadBalancer",
    ".involvedObject",
    ".source",
    ".regarding",
    ".roleRef",
];

/// Whether the object at `path` counts as a field of its own when an Update adds or removes it
/// whole (structured-merge-diff's comparison walks a typed object: upstream compares against the
/// live object, or for a create the zero object of the type, whose non-pointer structs are
/// there already). `metadata` itself is in the stripped set; a custom resource is unstructured,
/// so each object it adds (`spec` too) is a member.
pub(crate) fn is_member(def: &ResourceDef, path: &str) -> bool {
    let shown = patch::display_path(path);
    if shown.ends_with(']') {
        return true;
    }
    if shown == ".metadata" {
        return false;
    }
    if def.custom().is_some() {
        return true;
    }
    let container_resources = shown.ends_with("].resources");
    !(container_resources || ALWAYS_PRESENT.contains(&shown.as_str()))
}

/// Records an Update by `manager` that turned `old` (absent for a create) into `new`, in `new`'s
/// `managedFields` (which start as the body's, or else the stored ones).
pub fn record_update(
    def: &ResourceDef,
    new: &mut Value,
    old: Option<&Value>,
    manager: &str,
    sub: Subresource,
) {
    let member = |path: &str| is_member(def, path);
    let (mut changed, mut removed) = match sub {
        // A status write owns status fields only: the rest of the object is not compared.
        Subresource::Status => patch::changed_fields_under(old, new, "status", &member),
        _ => patch::changed_fields(old, new, &member),
    };
    changed.retain(|p| ownable(def, p, sub));
    removed.retain(|p| ownable(def, p, sub));
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    let subresource = sub.name();
    let mut entries = take_entries(new);
    let mut mine = BTreeSet::new();
    // The root fields written: an entry with none of them loses nothing and is not decoded
    // (a status write leaves the creator's entry alone without reading it).
    let roots: BTreeSet<String> =
        changed.iter().chain(&removed).map(|p| format!("f:{}", patch::root_field(p))).collect();
    entries.retain_mut(|e| {
        let is_mine = manager_of(e) == manager
            && e["operation"] == "Update"
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == subresource;
        if is_mine {
            mine = patch::paths_from_fields_v1(&e["fieldsV1"]);
            return false;
        }
        let fields = e["fieldsV1"].as_object();
        if !fields.is_some_and(|f| roots.iter().any(|r| f.contains_key(r))) {
            // Kept while it owns anything.
            return fields.is_some_and(|f| !f.is_empty());
        }
        let mut owned = patch::paths_from_fields_v1(&e["fieldsV1"]);
        let before_len = owned.len();
        owned.retain(|p| !changed.contains(p) && !removed.contains(p));
        if owned.len() != before_len {
            e["fieldsV1"] = patch::fields_v1(&owned);
        }
        !owned.is_empty()
    });
    mine.retain(|p| !removed.contains(p));
    mine.extend(changed);
    let mut entry = entry(manager, "Update", &def.api_version(), &mine);
    if !subresource.is_empty() {
        entry["subresource"] = json!(subresource);
    }
    entries.push(entry);
    meta_mut(new).insert("managedFields".into(), Value::Array(entries));
}

/// Records an Apply by `manager` owning `paths` in `obj`'s `managedFields`.
pub fn record_apply(obj: &mut Value, manager: &str, paths: &BTreeSet<String>, api_version: &str) {
    let mut entries = take_entries(obj);
    entries.retain(|e| !(manager_of(e) == manager && e["operation"] == "Apply"));
    entries.push(entry(manager, "Apply", api_version, paths));
    meta_mut(obj).insert("managedFields".into(), Value::Array(entries));
}

/// `obj`'s `managedFields` entries, taken out of it.
fn take_entries(obj: &mut Value) -> Vec<Value> {
    match meta_mut(obj).remove("managedFields") {
        Some(Value::Array(entries)) => entries,
        _ => Vec::new(),
    }
}

/// An entry's manager; `""` when it has none.
fn manager_of(entry: &Value) -> &str {
    entry["manager"].as_str().unwrap_or("")
}

/// One `managedFields` entry, stamped now. A client that named no manager and sent no
/// `User-Agent` has none, and the entry no `manager` (Go's `omitempty`).
fn entry(manager: &str, operation: &str, api_version: &str, paths: &BTreeSet<String>) -> Value {
    let mut e = json!({
        "manager": manager, "operation": operation, "apiVersion": api_version, "time": now_rfc3339(),
        "fieldsType": "FieldsV1", "fieldsV1": patch::fields_v1(paths),
    });
    if manager.is_empty()
        && let Some(fields) = e.as_object_mut()
    {
        fields.remove("manager");
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_without_a_manager_has_one_entry_without_one() {
        let cms = crate::catalog::find("", "v1", "configmaps").unwrap();
        let first = json!({ "metadata": { "name": "a" }, "data": { "k": "v" } });
        let mut created = first.clone();
        record_update(cms, &mut created, None, "", Subresource::Main);
        let mut updated = created.clone();
        updated["data"]["k"] = json!("w");
        updated["data"]["l"] = json!("x");
        record_update(cms, &mut updated, Some(&created), "", Subresource::Main);
        let entries = updated["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert!(entries[0].get("manager").is_none(), "{entries:?}");
    }

    #[test]
    fn a_manager_is_the_user_agent_up_to_its_first_slash() {
        assert_eq!(manager_from_user_agent("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), "kubectl");
        assert_eq!(manager_from_user_agent("python-requests"), "python-requests");
    }
}
