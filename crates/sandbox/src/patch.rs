//! The four patch types: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch,
//! and server-side apply.
//!
//! **Strategic merge** follows the patch-merge keys of the kinds served here: lists of containers,
//! volumes, env vars, ports, volume mounts, owner references, conditions and image-pull secrets are
//! merged element by element by their key; `finalizers` merge as a set; other lists are replaced.
//! `$patch: delete` / `$patch: replace` in a map, `$deleteFromPrimitiveList/`, `$retainKeys`
//! (only the named fields stay) and `$setElementOrder/` (the order upstream computes: see
//! `normalize_order`) are
//! understood.
//!
//! **Server-side apply (subset).** Each field manager that applies owns the leaf fields of its
//! applied configuration, recorded in `metadata.managedFields` (`operation: Apply`, `FieldsV1`).
//! Applying merges the configuration into the live object like a strategic merge, removes fields
//! the manager applied before and no longer applies (unless another applier owns them), and
//! reports a 409 Conflict naming the fields when another *applier* owns a field with a different
//! value — unless `force=true`, which takes ownership. Plain updates and patches are not tracked as
//! owners, so they never cause an apply conflict.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// The patch types, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`
    Merge,
    /// `application/json-patch+json`
    Json,
    /// `application/strategic-merge-patch+json`
    Strategic,
    /// `application/apply-patch+yaml` (JSON is YAML)
    Apply,
}

impl PatchType {
    /// The patch types a built-in kind takes, in upstream's order.
    pub const BUILT_IN_TYPES: &[&str] = &[
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
        "application/strategic-merge-patch+json",
    ];

    /// The patch types a custom resource takes: no strategic merge.
    pub const CUSTOM_RESOURCE_TYPES: &[&str] =
        &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

    /// The patch type of a `Content-Type` header.
    ///
    /// # Errors
    ///
    /// 415 naming the content type when it is not a patch type.
    pub fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/json-patch+json" => Ok(Self::Json),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            _ => Err(ApiError::unsupported_patch_type()),
        }
    }
}

/// RFC 7386: objects merge, `null` deletes, everything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn pointer_parts(path: &str) -> Result<Vec<String>, ApiError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| ApiError::bad_request(format!("json patch: path {path:?} must start with '/'")))?;
    Ok(rest.split('/').map(|p| p.replace("~1", "/").replace("~0", "~")).collect())
}

fn parent_and_key<'a>(doc: &'a mut Value, path: &str) -> Result<(&'a mut Value, String), ApiError> {
    let mut parts = pointer_parts(path)?;
    let last =
        parts.pop().ok_or_else(|| ApiError::bad_request("json patch: the root cannot be the target"))?;
    let mut cur = doc;
    for p in parts {
        cur = match cur {
            Value::Object(m) => m.get_mut(&p),
            Value::Array(a) => p.parse::<usize>().ok().and_then(move |i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| ApiError::bad_request(format!("json patch: path {path:?} does not exist")))?;
    }
    Ok((cur, last))
}

fn add_at(doc: &mut Value, path: &str, value: Value) -> Result<(), ApiError> {
    let (parent, key) = parent_and_key(doc, path)?;
    match parent {
        Value::Object(m) => {
            m.insert(key, value);
            Ok(())
        }
        Value::Array(a) => {
            let i = if key == "-" {
                a.len()
            } else {
                key.parse()
                    .map_err(|_| ApiError::bad_request(format!("json patch: bad array index in {path:?}")))?
            };
            if i > a.len() {
                return Err(ApiError::bad_request(format!("json patch: index out of range in {path:?}")));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(ApiError::bad_request(format!("json patch: parent of {path:?} is not a container"))),
    }
}

fn remove_at(doc: &mut Value, path: &str) -> Result<Value, ApiError> {
    let (parent, key) = parent_and_key(doc, path)?;
    let missing = || ApiError::bad_request(format!("json patch: path {path:?} does not exist"));
    match parent {
        Value::Object(m) => m.remove(&key).ok_or_else(missing),
        Value::Array(a) => {
            let i: usize = key.parse().map_err(|_| missing())?;
            if i < a.len() { Ok(a.remove(i)) } else { Err(missing()) }
        }
        _ => Err(missing()),
    }
}

/// RFC 6902: applies the operations in order; any failure leaves `doc` unchanged.
///
/// # Errors
///
/// 400 when the body is not a list of operations; an operation that does not apply (a failed
/// `test`, a missing path, an unknown `op`) is upstream's generic 422, its cause naming the
/// operation.
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), ApiError> {
    let ops = ops
        .as_array()
        .ok_or_else(|| ApiError::bad_request("json patch: the body must be an array of operations"))?;
    let mut work = doc.clone();
    apply_ops(&mut work, ops).map_err(|_| ApiError::unprocessable())?;
    *doc = work;
    Ok(())
}

fn apply_ops(work: &mut Value, ops: &[Value]) -> Result<(), ApiError> {
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::bad_request(format!("json patch: operation {op} has no path")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| ApiError::bad_request(format!("json patch: operation {op} has no value")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad_request(format!("json patch: operation {op} has no from")))
        };
        match kind {
            "add" => add_at(work, path, value()?)?,
            "remove" => {
                remove_at(work, path)?;
            }
            "replace" => {
                remove_at(work, path)?;
                add_at(work, path, value()?)?;
            }
            "move" => {
                let v = remove_at(work, from()?)?;
                add_at(work, path, v)?;
            }
            "copy" => {
                let v = work.pointer(from()?).cloned().ok_or_else(|| {
                    ApiError::bad_request(format!("json patch: from path of {op} does not exist"))
                })?;
                add_at(work, path, v)?;
            }
            "test" => {
                let want = value()?;
                let found = work.pointer(path);
                // As the API server's evanphx/json-patch: a member missing from an object that
                // exists reads as null (kube-runtime's finalizer tests `/metadata/finalizers`
                // against null on an object without finalizers).
                let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
                let absent_is_null =
                    found.is_none() && want.is_null() && work.pointer(parent).is_some_and(Value::is_object);
                if found != Some(&want) && !absent_is_null {
                    return Err(ApiError::bad_request(format!("json patch: test failed: {op}")));
                }
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "json patch: unknown operation {other:?} in {op}"
                )));
            }
        }
    }
    Ok(())
}

/// The patch-merge key of a list field, by field name, for the kinds served here. `ports` is two
/// lists upstream — a container's, merged by `containerPort`, and a Service's, by `port` — and
/// the items (`lists`: the patch's and the object's) say which.
pub(crate) fn merge_key(field: &str, lists: &[&[Value]]) -> Option<&'static str> {
    let has = |f: &str| lists.iter().any(|l| l.iter().any(|i| i.get(f).is_some()));
    Some(match field {
        "containers" | "initContainers" | "ephemeralContainers" | "env" | "volumes" | "imagePullSecrets" => {
            "name"
        }
        "ports" if has("containerPort") => "containerPort",
        "ports" => "port",
        "volumeMounts" => "mountPath",
        "ownerReferences" => "uid",
        "conditions" => "type",
        _ => return None,
    })
}

/// Lists merged as sets of primitives.
pub(crate) fn is_primitive_set(field: &str) -> bool {
    field == "finalizers"
}

/// Strategic merge patch for the kinds served here.
///
/// # Errors
///
/// A patch item of a merge-key list that lacks the key: upstream's `mergepatch.ErrNoMergeKey`
/// (`map: map[image:x] does not contain declared merge key: name`), which the patch handler
/// does not classify — a 500 with no reason.
pub fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return Ok(());
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut replaced = patch.clone();
        replaced.as_object_mut().expect("object").remove("$patch");
        *target = replaced;
        return Ok(());
    }
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if k.starts_with("$setElementOrder/") || k == "$patch" || k == "$retainKeys" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(list), Some(del)) = (t.get_mut(field).and_then(Value::as_array_mut), v.as_array()) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if v.is_null() || v.get("$patch").and_then(Value::as_str) == Some("delete") {
            t.remove(k);
            continue;
        }
        let present = t.get(k).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let key = merge_key(k, &[v.as_array().map_or(&[][..], Vec::as_slice), present]);
        match (v, key, is_primitive_set(k)) {
            (Value::Array(items), Some(key), _) => {
                if let Some(item) = items.iter().find(|i| i.as_object().is_some_and(|m| !m.contains_key(key)))
                {
                    return Err(ApiError::unclassified(format!(
                        "map: {} does not contain declared merge key: {key}",
                        crate::go_print::go_print(item)
                    )));
                }
                let list = t.entry(k.clone()).or_insert_with(|| json!([]));
                if !list.is_array() {
                    *list = json!([]);
                }
                let list = list.as_array_mut().expect("array");
                let server = ids(list.iter(), Some(key));
                let named = match p.get(&format!("$setElementOrder/{k}")).and_then(Value::as_array) {
                    Some(order) => ids(order, Some(key)),
                    None => ids(
                        items.iter().filter(|i| i.get("$patch").and_then(Value::as_str) != Some("delete")),
                        Some(key),
                    ),
                };
                for item in items {
                    let id = item.get(key);
                    let pos = list.iter().position(|x| id.is_some() && x.get(key) == id);
                    let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                    match (pos, delete) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (Some(i), false) => strategic_merge(&mut list[i], item)?,
                        (None, true) => {}
                        (None, false) => {
                            let mut fresh = Value::Null;
                            strategic_merge(&mut fresh, item)?;
                            list.push(fresh);
                        }
                    }
                }
                *list = normalize_order(std::mem::take(list), &server, &named, Some(key));
            }
            (Value::Array(items), None, true) => {
                let list = t.entry(k.clone()).or_insert_with(|| json!([]));
                if let Some(list) = list.as_array_mut() {
                    let server = list.clone();
                    let named =
                        p.get(&format!("$setElementOrder/{k}")).and_then(Value::as_array).unwrap_or(items);
                    let named = named.clone();
                    for item in items {
                        if !list.contains(item) {
                            list.push(item.clone());
                        }
                    }
                    *list = normalize_order(std::mem::take(list), &server, &named, None);
                }
            }
            _ => strategic_merge(t.entry(k.clone()).or_insert(Value::Null), v)?,
        }
    }
    // `$setElementOrder/<list>` with no patch of the list itself: a reorder of what is there
    // (with the list in the patch, the order was set as it merged).
    for (k, order) in p {
        let Some(field) = k.strip_prefix("$setElementOrder/") else { continue };
        if p.contains_key(field) {
            continue;
        }
        let (Some(order), Some(list)) = (order.as_array(), t.get_mut(field).and_then(Value::as_array_mut))
        else {
            continue;
        };
        let key = merge_key(field, &[order, list]);
        let server = ids(list.iter(), key);
        *list = normalize_order(std::mem::take(list), &server, &ids(order, key), key);
    }
    // `$retainKeys`: only these fields stay (`kubectl apply` switching a union, e.g. a
    // Deployment's strategy to Recreate, clears rollingUpdate this way).
    if let Some(keep) = p.get("$retainKeys").and_then(Value::as_array) {
        t.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k.as_str())));
    }
    Ok(())
}

/// What identifies a list item for ordering: its merge key's value, or (a primitive) itself.
fn id_of(item: &Value, key: Option<&str>) -> Option<Value> {
    match key {
        Some(k) => item.get(k).cloned(),
        None => Some(item.clone()),
    }
}

fn ids<'a>(items: impl IntoIterator<Item = &'a Value>, key: Option<&str>) -> Vec<Value> {
    items.into_iter().filter_map(|i| id_of(i, key)).collect()
}

/// The order of a merged list, as upstream's `normalizeElementOrder` and `mergeSortedSlice`
/// compute it: the items the patch names (`named`: the patch's own items, or its
/// `$setElementOrder`) in the patch's order, the others in the order the server had them
/// (`server`), interleaved — a server-only item goes first only when both it and the next named
/// item were on the server and it came earlier there; otherwise the named item does.
fn normalize_order(merged: Vec<Value>, server: &[Value], named: &[Value], key: Option<&str>) -> Vec<Value> {
    let pos =
        |list: &[Value], item: &Value| id_of(item, key).and_then(|id| list.iter().position(|x| *x == id));
    let (mut patch_items, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|item| pos(named, item).is_some());
    patch_items.sort_by_key(|item| pos(named, item));
    let (mut left, mut right) = (server_only.into_iter().peekable(), patch_items.into_iter().peekable());
    let mut out = Vec::new();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => return out,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!((pos(server, l), pos(server, r)), (Some(i), Some(j)) if i < j),
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
}

/// Separates the segments of a leaf path; label keys contain dots and slashes, so neither can.
pub const SEP: char = '\u{1f}';

/// A leaf path as people read it: `.spec.replicas`.
#[must_use]
pub fn display_path(path: &str) -> String {
    path.replace(SEP, ".")
}

/// The leaf field paths of an applied configuration, e.g. `.spec.replicas` or
/// `.spec.template.spec.containers[name=web].image` (segments joined by [`SEP`]).
pub fn leaf_paths(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect_paths(v, "", &mut out);
    out
}

/// The fields under `v` at `prefix`, as `(path, value)` by the rules of [`leaf_paths`] (no
/// `apiVersion`/`kind`, no server-kept metadata, merge-key lists item by item); `None` for a leaf.
fn children<'a>(v: &'a Value, prefix: &str) -> Option<Vec<(String, &'a Value)>> {
    let Value::Object(m) = v else { return None };
    if m.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(m.len());
    for (k, child) in m {
        if prefix.is_empty() && matches!(k.as_str(), "apiVersion" | "kind") {
            continue;
        }
        if prefix == "\u{1f}metadata"
            && matches!(k.as_str(), "name" | "namespace" | "resourceVersion" | "managedFields")
        {
            continue;
        }
        let field = format!("{prefix}{SEP}{k}");
        // The only `ports` at an object's root are an EndpointSlice's, an atomic list (a
        // Service's and a container's are keyed by their port).
        let key = if prefix.is_empty() && k == "ports" {
            None
        } else {
            merge_key(k, &[child.as_array().map_or(&[][..], Vec::as_slice)])
        };
        match (child, key) {
            (Value::Array(items), Some(key)) if !items.is_empty() => {
                for item in items {
                    let id =
                        item.get(key).map(|x| x.to_string().trim_matches('"').to_owned()).unwrap_or_default();
                    out.push((format!("{field}[{key}={id}]"), item));
                }
            }
            _ => out.push((field, child)),
        }
    }
    Some(out)
}

fn collect_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match children(v, prefix) {
        Some(fields) => {
            for (path, child) in fields {
                collect_paths(child, &path, out);
            }
        }
        None => {
            out.insert(prefix.to_owned());
        }
    }
}

/// [`changed_fields`] with no node a member of its own: the leaves alone.
#[cfg(test)]
#[must_use]
pub fn changed_leaves(old: Option<&Value>, new: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    changed_fields(old, new, &|_| false)
}

/// The leaf fields (as [`leaf_paths`] names them) that `new` sets to something `old` (absent for
/// a create) did not have, and those `old` had that `new` has not — in one walk of both — and
/// also the maps and list items (by their paths) that appeared or
/// went as a whole, where `member` says such a node is a field of its own — what
/// structured-merge-diff's comparison adds as a set member (`"."` in `FieldsV1`): a map, a
/// keyed list item, an optional struct, but not a struct every object of the type has.
#[must_use]
pub fn changed_fields(
    old: Option<&Value>,
    new: &Value,
    member: &dyn Fn(&str) -> bool,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut changed, mut removed) = (BTreeSet::new(), BTreeSet::new());
    diff(old, new, "", member, &mut changed, &mut removed);
    (changed, removed)
}

/// As [`changed_fields`], for the fields under the root field `field` only (what a status write
/// can own): the rest of the objects is not walked.
#[must_use]
pub fn changed_fields_under(
    old: Option<&Value>,
    new: &Value,
    field: &str,
    member: &dyn Fn(&str) -> bool,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut changed, mut removed) = (BTreeSet::new(), BTreeSet::new());
    let prefix = format!("{SEP}{field}");
    let before = old.and_then(|o| o.get(field));
    match new.get(field) {
        Some(now) => diff(before, now, &prefix, member, &mut changed, &mut removed),
        None => {
            if let Some(before) = before {
                collect_fields(before, &prefix, member, &mut removed);
            }
        }
    }
    (changed, removed)
}

/// The root field a path is under: `spec` for `.spec.replicas`.
#[must_use]
pub fn root_field(path: &str) -> &str {
    let path = path.trim_start_matches(SEP);
    let end = path.find([SEP, '[']).unwrap_or(path.len());
    &path[..end]
}

/// Every field under `v` at `prefix`, leaves and (as `member` says) the objects on the way.
fn collect_fields(v: &Value, prefix: &str, member: &dyn Fn(&str) -> bool, out: &mut BTreeSet<String>) {
    match children(v, prefix) {
        Some(fields) => {
            if !prefix.is_empty() && member(prefix) {
                out.insert(prefix.to_owned());
            }
            for (path, child) in fields {
                collect_fields(child, &path, member, out);
            }
        }
        None => {
            out.insert(prefix.to_owned());
        }
    }
}

fn diff(
    old: Option<&Value>,
    new: &Value,
    prefix: &str,
    member: &dyn Fn(&str) -> bool,
    changed: &mut BTreeSet<String>,
    removed: &mut BTreeSet<String>,
) {
    match (children(new, prefix), old.and_then(|o| children(o, prefix))) {
        (Some(now), Some(before)) => {
            let mut before: std::collections::HashMap<String, &Value> = before.into_iter().collect();
            for (path, child) in now {
                let was = before.remove(&path);
                diff(was, child, &path, member, changed, removed);
            }
            for (path, child) in before {
                collect_fields(child, &path, member, removed);
            }
        }
        (Some(now), None) => {
            if old.is_some() {
                removed.insert(prefix.to_owned());
            }
            if !prefix.is_empty() && member(prefix) {
                changed.insert(prefix.to_owned());
            }
            for (path, child) in now {
                diff(None, child, &path, member, changed, removed);
            }
        }
        (None, Some(before)) => {
            for (path, child) in before {
                collect_fields(child, &path, member, removed);
            }
            changed.insert(prefix.to_owned());
        }
        (None, None) => {
            if old != Some(new) {
                changed.insert(prefix.to_owned());
            }
        }
    }
}

/// Splits a leaf path into segments: `("spec", None)`, `("containers", Some(("name", "web")))`.
fn segments(path: &str) -> Vec<(String, Option<(String, String)>)> {
    let mut out = Vec::new();
    for part in path.trim_start_matches(SEP).split(SEP) {
        match part.split_once('[') {
            Some((name, sel)) => {
                let sel = sel.trim_end_matches(']');
                let (k, v) = sel.split_once('=').unwrap_or((sel, ""));
                out.push((name.to_owned(), Some((k.to_owned(), v.to_owned()))));
            }
            None => out.push((part.to_owned(), None)),
        }
    }
    out
}

fn item_matches(item: &Value, key: &str, id: &str) -> bool {
    item.get(key).is_some_and(|x| x.to_string().trim_matches('"') == id)
}

/// The value at a leaf path, if present.
pub fn value_at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for (name, sel) in segments(path) {
        cur = cur.get(&name)?;
        if let Some((k, id)) = sel {
            cur = cur.as_array()?.iter().find(|i| item_matches(i, &k, &id))?;
        }
    }
    Some(cur)
}

/// Removes the field at a leaf path (and a list element left empty by it).
pub fn remove_path(v: &mut Value, path: &str) {
    let segs = segments(path);
    remove_segments(v, &segs);
}

fn remove_segments(cur: &mut Value, segs: &[(String, Option<(String, String)>)]) {
    let Some(((name, sel), rest)) = segs.split_first() else { return };
    let Some(obj) = cur.as_object_mut() else { return };
    match (sel, rest.is_empty()) {
        (None, true) => {
            obj.remove(name);
        }
        (None, false) => {
            if let Some(child) = obj.get_mut(name) {
                remove_segments(child, rest);
            }
        }
        (Some((k, id)), last) => {
            let Some(list) = obj.get_mut(name).and_then(Value::as_array_mut) else { return };
            if last {
                list.retain(|i| !item_matches(i, k, id));
            } else if let Some(item) = list.iter_mut().find(|i| item_matches(i, k, id)) {
                remove_segments(item, rest);
            }
        }
    }
}

/// Encodes a set of field paths as `FieldsV1` (`{"f:spec":{"f:replicas":{}}}`); a path that is
/// a field of its own and has fields under it too is marked `".": {}`
/// (`{"f:data":{".":{},"f:k":{}}}`).
pub fn fields_v1(paths: &BTreeSet<String>) -> Value {
    /// The node under `key`, made empty if it is not there yet.
    fn child<'a>(node: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
        if !node.contains_key(key) {
            node.insert(key.to_owned(), Value::Object(Map::new()));
        }
        node.get_mut(key).and_then(Value::as_object_mut).expect("a FieldsV1 node is an object")
    }
    /// Each path's node was marked `"."`: a mark with nothing beside it is a leaf (`{}`).
    fn unmark_leaves(node: &mut Map<String, Value>) {
        if node.len() == 1 && node.contains_key(".") {
            node.clear();
            return;
        }
        for (k, v) in node.iter_mut() {
            if let (false, Value::Object(m)) = (k == ".", v) {
                unmark_leaves(m);
            }
        }
    }
    // Written once per object write: one key buffer, no segment strings.
    let mut root = Map::new();
    let mut key = String::new();
    for path in paths {
        let mut node = &mut root;
        for part in path.trim_start_matches(SEP).split(SEP) {
            let (name, selector) = match part.split_once('[') {
                Some((name, sel)) => (name, Some(sel.trim_end_matches(']'))),
                None => (part, None),
            };
            key.clear();
            key.push_str("f:");
            key.push_str(name);
            node = child(node, &key);
            if let Some(sel) = selector {
                let (k, id) = sel.split_once('=').unwrap_or((sel, ""));
                key.clear();
                key.push_str("k:{");
                key.push_str(&Value::from(k).to_string());
                key.push(':');
                key.push_str(&Value::from(id).to_string());
                key.push('}');
                node = child(node, &key);
            }
        }
        node.insert(".".into(), Value::Object(Map::new()));
    }
    unmark_leaves(&mut root);
    Value::Object(root)
}

/// Decodes `FieldsV1` back into leaf paths (inverse of [`fields_v1`]).
pub fn paths_from_fields_v1(f: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    decode_fields(f, String::new(), &mut out);
    out
}

fn decode_fields(f: &Value, prefix: String, out: &mut BTreeSet<String>) {
    let Some(m) = f.as_object() else { return };
    if m.is_empty() {
        if !prefix.is_empty() {
            out.insert(prefix);
        }
        return;
    }
    for (k, child) in m {
        if k == "." {
            out.insert(prefix.clone());
        } else if let Some(name) = k.strip_prefix("f:") {
            decode_fields(child, format!("{prefix}{SEP}{name}"), out);
        } else if let Some(sel) = k.strip_prefix("k:")
            && let Ok(Value::Object(sel)) = serde_json::from_str::<Value>(sel)
            && let Some((key, id)) = sel.iter().next()
        {
            let id = id.to_string().trim_matches('"').to_owned();
            decode_fields(child, format!("{prefix}[{key}={id}]"), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_rfc7386() {
        let mut t = json!({ "a": 1, "b": { "c": 2, "d": 3 }, "l": [1, 2] });
        merge_patch(&mut t, &json!({ "a": null, "b": { "c": 5 }, "l": [3] }));
        assert_eq!(t, json!({ "b": { "c": 5, "d": 3 }, "l": [3] }));
    }

    #[test]
    fn json_patch_ops_and_atomicity() {
        let mut d = json!({ "metadata": { "labels": { "a": "1" } }, "list": [1, 2] });
        json_patch(
            &mut d,
            &json!([
                { "op": "add", "path": "/metadata/labels/b", "value": "2" },
                { "op": "replace", "path": "/list/0", "value": 9 },
                { "op": "add", "path": "/list/-", "value": 3 },
                { "op": "test", "path": "/list/2", "value": 3 },
                { "op": "remove", "path": "/metadata/labels/a" },
            ]),
        )
        .unwrap();
        assert_eq!(d, json!({ "metadata": { "labels": { "b": "2" } }, "list": [9, 2, 3] }));
        let before = d.clone();
        let err = json_patch(
            &mut d,
            &json!([{ "op": "add", "path": "/x", "value": 1 }, { "op": "remove", "path": "/nope" }]),
        )
        .unwrap_err();
        assert_eq!(err.code, 422, "an operation that does not apply");
        assert_eq!(d, before, "a failed patch changes nothing");
    }

    #[test]
    fn strategic_merge_by_key() {
        let mut d = json!({ "spec": { "containers": [{ "name": "a", "image": "x:1" }, { "name": "b", "image": "y:1" }] },
                             "metadata": { "finalizers": ["f1"] } });
        strategic_merge(
            &mut d,
            &json!({
                "spec": { "containers": [{ "name": "b", "image": "y:2" }, { "name": "c", "image": "z:1" }, { "name": "a", "$patch": "delete" }] },
                "metadata": { "finalizers": ["f2"] },
            }),
        )
        .unwrap();
        assert_eq!(
            d["spec"]["containers"],
            json!([{ "name": "b", "image": "y:2" }, { "name": "c", "image": "z:1" }])
        );
        // A new item goes before the server's (upstream's `mergeSortedSlice`: an item the server
        // never had cannot be placed after one it had).
        assert_eq!(d["metadata"]["finalizers"], json!(["f2", "f1"]));
        // Named items keep the patch's order; the server's others slot in where the server had
        // them relative to named ones it also had.
        let mut d = json!({ "containers": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
        strategic_merge(&mut d, &json!({ "containers": [{ "name": "x" }, { "name": "b", "v": 1 }] }))
            .unwrap();
        let names: Vec<&str> =
            d["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["x", "a", "b", "c"]);
        let mut d = json!({ "containers": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
        strategic_merge(
            &mut d,
            &json!({ "$setElementOrder/containers": [{ "name": "c" }, { "name": "a" }] }),
        )
        .unwrap();
        let names: Vec<&str> =
            d["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["b", "c", "a"]);
    }

    #[test]
    fn changed_leaves_are_found_in_one_walk() {
        let old = json!({ "metadata": { "name": "x", "labels": { "a": "1", "b": "2" } },
            "spec": { "containers": [{ "name": "c", "image": "1" }, { "name": "d", "image": "1" }], "x": { "y": 1 } } });
        let new = json!({ "metadata": { "name": "x", "labels": { "a": "1", "c": "3" } },
            "spec": { "containers": [{ "name": "c", "image": "2" }], "x": 5 } });
        let (changed, removed) = changed_leaves(Some(&old), &new);
        let shown = |s: BTreeSet<String>| s.iter().map(|p| display_path(p)).collect::<Vec<_>>();
        assert_eq!(shown(changed), [".metadata.labels.c", ".spec.containers[name=c].image", ".spec.x"]);
        assert_eq!(
            shown(removed),
            [
                ".metadata.labels.b",
                ".spec.containers[name=d].image",
                ".spec.containers[name=d].name",
                ".spec.x.y"
            ]
        );
        let (created, none) = changed_leaves(None, &new);
        assert_eq!((created, none.len()), (leaf_paths(&new), 0));
    }

    #[test]
    fn changed_fields_under_a_root_field_are_those_of_the_whole_walk_under_it() {
        let old = json!({ "spec": { "x": 1 }, "status": { "phase": "Pending", "gone": { "a": 1 },
            "conditions": [{ "type": "Ready", "status": "False" }] } });
        let new = json!({ "spec": { "x": 2 }, "status": { "phase": "Running", "podIP": "10.0.0.1",
            "conditions": [{ "type": "Ready", "status": "True" }, { "type": "Initialized", "status": "True" }] } });
        let member = |p: &str| p.ends_with(']');
        let under = |set: BTreeSet<String>| -> BTreeSet<String> {
            set.into_iter().filter(|p| root_field(p) == "status").collect()
        };
        for (old, new) in [(Some(&old), &new), (None, &new), (Some(&new), &old), (Some(&old), &json!({}))] {
            let (changed, removed) = changed_fields(old, new, &member);
            assert_eq!(changed_fields_under(old, new, "status", &member), (under(changed), under(removed)));
        }
        assert_eq!(root_field(&format!("{SEP}spec{SEP}containers[name=a]{SEP}image")), "spec");
        assert_eq!(root_field(&format!("{SEP}ports[port=80]")), "ports");
    }

    #[test]
    fn fields_v1_marks_a_field_with_fields_under_it_and_quotes_keys() {
        let p = |s: &str| s.replace('.', &SEP.to_string());
        let paths: BTreeSet<String> = [
            ".data",
            ".data.k",
            ".spec.containers[name=web]",
            ".spec.containers[name=web].image",
            ".spec.ports[port=80].protocol",
            ".metadata.labels.a\"b",
        ]
        .iter()
        .map(|s| p(s))
        .collect();
        assert_eq!(
            fields_v1(&paths),
            json!({
                "f:data": { ".": {}, "f:k": {} },
                "f:metadata": { "f:labels": { "f:a\"b": {} } },
                "f:spec": {
                    "f:containers": { "k:{\"name\":\"web\"}": { ".": {}, "f:image": {} } },
                    "f:ports": { "k:{\"port\":\"80\"}": { "f:protocol": {} } },
                },
            })
        );
    }

    #[test]
    fn fields_round_trip() {
        let applied = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web", "labels": { "app": "web" } },
            "spec": { "replicas": 3, "template": { "spec": { "containers": [{ "name": "web", "image": "nginx" }] } } } });
        let paths = leaf_paths(&applied);
        let shown: Vec<String> = paths.iter().map(|p| display_path(p)).collect();
        assert!(shown.contains(&".spec.replicas".to_string()), "{shown:?}");
        assert!(shown.contains(&".spec.template.spec.containers[name=web].image".to_string()));
        assert!(shown.contains(&".metadata.labels.app".to_string()));
        assert!(!shown.iter().any(|p| p.contains("metadata.name")));
        let p = |s: &str| s.replace('.', &SEP.to_string());
        assert_eq!(paths_from_fields_v1(&fields_v1(&paths)), paths);
        assert_eq!(
            value_at(&applied, &p(".spec.template.spec.containers[name=web].image")),
            Some(&json!("nginx"))
        );
        let mut live = applied.clone();
        remove_path(&mut live, &p(".metadata.labels.app"));
        assert_eq!(live["metadata"]["labels"], json!({}));
    }
}
