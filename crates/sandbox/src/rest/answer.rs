//! The requests answered rather than stored: the subresources that act on an object
//! (`pods/binding`, `pods/eviction`, `serviceaccounts/token`, `pods/log`), the reviews,
//! computed objects (`componentstatuses`). What each does
//! is [`crate::actions`]'; this is its HTTP side.

use http::{Response, header};
use serde_json::json;

use super::ResponseBody;
use super::body::parse_object;
use super::call::Call;
use super::request::Request;
use super::response::{json_response, no_content};
use crate::resource::Action;
use crate::resource::Review;
use crate::resource::Run;
use crate::status::ApiError;

/// Runs an acting subresource on its object with the request's body.
pub(super) fn act(c: &Call, action: &Action) -> Result<Response<ResponseBody>, ApiError> {
    if action.run == Run::Log {
        return super::log::log(c);
    }
    super::write::options(c)?;
    let body = parse_object(&c.bytes, c.content_type(), c.req.verb.name(), action.kind.2)?;
    same_namespace(c, &body)?;
    let (code, answer) =
        crate::actions::run(c.store, &c.req.def, action.run, c.req.ns(), c.req.name(), &body)?;
    Ok(if code == 204 { no_content() } else { json_response(code, &answer) })
}

/// Answers a review (or a `bindings` create) from its body and the caller's bearer token.
pub(super) fn review(c: &Call, review: Review) -> Result<Response<ResponseBody>, ApiError> {
    super::write::options(c)?;
    let def = &c.req.def;
    let body = parse_object(&c.bytes, c.content_type(), "create", def.kind)?;
    same_namespace(c, &body)?;
    crate::kinds::access_review::check(def.kind, c.req.ns(), &body)?;
    let bearer = c
        .parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let (code, mut answer) = crate::actions::review(c.store, review, c.req.ns(), body, bearer)?;
    def.stamp(&mut answer);
    Ok(json_response(code, &answer))
}

/// The create handler's `EnsureObjectNamespaceMatchesRequestNamespace`: a body may name the
/// request's namespace or none (a cluster-scoped resource's namespace is dropped).
fn same_namespace(c: &Call, body: &serde_json::Value) -> Result<(), ApiError> {
    let given = crate::object_meta::meta_str(body, "namespace");
    if c.req.def.namespaced && !given.is_empty() && given != c.req.ns() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Gets one of the objects the server makes up, or lists them.
pub(super) fn compute(
    req: &Request,
    objects: fn() -> Vec<serde_json::Value>,
    one: bool,
) -> Result<Response<ResponseBody>, ApiError> {
    let objects = objects();
    if one {
        let name = req.name();
        // The component status storage's own error, unclassified: a 500.
        return objects
            .into_iter()
            .find(|o| crate::object_meta::meta_str(o, "name") == name)
            .map(|o| json_response(200, &o))
            .ok_or_else(|| ApiError::unclassified(format!("Component not found: {name}")));
    }
    let def = &req.def;
    Ok(json_response(
        200,
        &json!({ "kind": def.list_kind, "apiVersion": def.api_version(), "metadata": {}, "items": objects }),
    ))
}
