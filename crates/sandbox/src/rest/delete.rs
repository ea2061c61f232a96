//! DELETE (upstream's `endpoints/handlers/delete.go`): the options a delete carries in its body,
//! one object deleted or a collection, the warning of a kind that orphans by default, and the
//! answer upstream's registry store gives.

use http::Response;
use serde_json::{Value, json};

use super::ResponseBody;
use super::body::parse_json;
use super::call::Call;
use super::request::Request;
use super::response::{error_response, json_response, with_warnings};
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::store::DeleteOptions;

/// A delete carries its options, `dryRun` among them, in its body (kubectl and client-go do),
/// read once, before the store is chosen, and checked as upstream's `ValidateDeleteOptions`.
pub(super) fn read_options(
    bytes: &[u8],
    content_type: &str,
    req: &mut Request,
) -> Result<(Value, DeleteOptions), ApiError> {
    let what = req.verb.name();
    let q = &mut req.query;
    // Go clients on protobuf send their DeleteOptions in it (an empty body is no options).
    let protobuf = content_type.split(';').next().is_some_and(|t| t.trim() == super::protobuf::CONTENT_TYPE);
    let body = if protobuf && !bytes.is_empty() {
        super::protobuf::to_json(bytes)?
    } else {
        parse_json(bytes, what)?
    };
    for v in body.get("dryRun").and_then(Value::as_array).into_iter().flatten() {
        let v = v.as_str().unwrap_or("");
        q.dry_run |= v == "All";
        q.dry_run_values.push(v.to_owned());
    }
    let mut opts = DeleteOptions::from_body(&body, q.propagation.as_deref(), &q.dry_run_values)?;
    opts.grace_period = opts.grace_period.or(q.grace_period);
    Ok((body, opts))
}

/// Deletes one object.
pub(super) fn delete(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let (body, opts) = options(c)?;
    let (def, name) = (c.req.def.as_ref(), c.req.name());
    let orphan_dependents = body.get("orphanDependents").and_then(Value::as_bool);
    // The warning is given before the delete is tried: a refused one carries it too.
    let warnings = orphaning_warning(c, body);
    let response = match c.store.delete(def, c.req.ns(), name, opts) {
        Ok((deleted, lingers)) => delete_response(def, name, deleted, lingers, orphan_dependents),
        Err(e) => error_response(&e),
    };
    Ok(with_warnings(response, &warnings))
}

/// Deletes the objects of a collection a selector picks.
pub(super) fn delete_collection(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let (body, opts) = options(c)?;
    let warnings = orphaning_warning(c, body);
    let q = &c.req.query;
    q.list.validate()?;
    let deleted = c.store.delete_collection(&c.req.def, c.req.namespace.as_deref(), &q.list, opts)?;
    Ok(with_warnings(json_response(200, &deleted), &warnings))
}

fn options<'a>(c: &'a Call) -> Result<(&'a Value, &'a DeleteOptions), ApiError> {
    let (body, opts) =
        c.delete.as_ref().ok_or_else(|| ApiError::internal("a delete's options were not read"))?;
    Ok((body, opts))
}

/// The kind's warning when a delete names no propagation policy (a Job's pods are orphaned by
/// default), given before the delete is tried.
fn orphaning_warning(c: &Call, body: &Value) -> Vec<String> {
    let policy = body.get("propagationPolicy").and_then(Value::as_str).or(c.req.query.propagation.as_deref());
    let orphan_dependents = body.get("orphanDependents").and_then(Value::as_bool);
    match c.req.def.orphaning_warning() {
        Some(warning) if policy.is_none() && orphan_dependents.is_none() => vec![warning.to_owned()],
        _ => Vec::new(),
    }
}

/// What a DELETE answers, as upstream's generic registry store and delete handler do
/// (`staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`, `finalizeDelete`;
/// `.../endpoints/handlers/delete.go`):
///
/// * the object lingers (finalizers, a Terminating namespace) or is marked for the garbage
///   collector (the `orphan` or `foregroundDeletion` finalizer the store answered it with): the
///   object, 200 — or 202 when the request set `orphanDependents: false`;
/// * removed at once: a `Status` Success whose `details.kind` is the *resource* (`configmaps`),
///   with the group and uid — except for kinds whose registry returns the deleted object
///   (`ReturnDeletedObject`).
fn delete_response(
    def: &ResourceDef,
    name: &str,
    deleted: Value,
    lingers: bool,
    orphan_dependents: Option<bool>,
) -> Response<ResponseBody> {
    if lingers {
        return json_response(if orphan_dependents == Some(false) { 202 } else { 200 }, &deleted);
    }
    if def.returns_deleted_object() {
        return json_response(200, &deleted);
    }
    let uid = crate::object_meta::meta_str(&deleted, "uid").to_owned();
    let mut details = json!({ "name": name, "kind": def.plural, "uid": uid });
    if !def.group.is_empty() {
        details["group"] = json!(def.group);
    }
    let mut status = crate::status::success();
    status["details"] = details;
    json_response(200, &status)
}
