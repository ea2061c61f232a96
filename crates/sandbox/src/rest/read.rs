//! GET of one object or a collection (upstream's `endpoints/handlers/get.go`): read from the
//! store, answered in the shape negotiated. A list of objects is written as it is thawed, in
//! JSON or protobuf.

use http::Response;

use super::ResponseBody;
use super::call::Call;
use super::negotiate::{Render, Wire};
use super::response::{json_response, json_serialized, protobuf_response};
use super::transform::transform;
use crate::status::ApiError;

/// Gets one object, or its part.
pub(super) fn get(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let r = &c.req;
    let obj = c.store.get(&r.def, r.ns(), r.name(), r.sub)?;
    Ok(json_response(200, &transform(&r.def, &r.query, obj, false)?))
}

/// Lists a collection (one page of it, with `limit`).
pub(super) fn list(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let r = &c.req;
    r.query.list.validate()?;
    if r.query.render != Render::Object {
        let list = c.store.list(&r.def, r.namespace.as_deref(), &r.query.list)?;
        return Ok(json_response(200, &transform(&r.def, &r.query, list, true)?));
    }
    // Written as it is thawed, one object at a time, into a buffer of the list's size.
    let page = c.store.list_page(&r.def, r.namespace.as_deref(), &r.query.list)?;
    if r.query.wire == Wire::Protobuf {
        let (kind, api_version, metadata, items) = page.parts();
        if let Ok(bytes) = super::protobuf::list_from(&api_version, &kind, metadata, items) {
            return Ok(protobuf_response(200, bytes));
        }
    }
    Ok(json_serialized(200, &page, page.json_len_hint()))
}
