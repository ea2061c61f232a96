//! The paths that name no resource — `/version`, discovery, the OpenAPI documents and the health
//! checks — answered alike for the in-process client and over HTTPS, from the registry of the
//! moment (so a CRD's kinds are discovered once it is established).

use bytes::Bytes;
use http::{Response, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::api::{self, ResponseBody};
use super::{discovery, openapi};
use crate::Shared;
use crate::status::ApiError;

/// The media type of aggregated discovery.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn text(body: &'static str) -> Response<ResponseBody> {
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)).boxed_unsync())
        .expect("valid response")
}

/// Whether an `Accept` header takes JSON (`application/json`, a wildcard, or no header at all),
/// clause by clause as kube-openapi negotiates (`goautoneg.ParseAccept`).
fn accepts_json(accept: &str) -> bool {
    accept.trim().is_empty()
        || accept.split(',').any(|clause| {
            let media = clause.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
            matches!(media.as_str(), "application/json" | "application/*" | "*/*")
        })
}

/// The answer to a GET of a non-resource path; `None` for a resource path.
pub(crate) fn respond(shared: &Shared, parts: &http::request::Parts) -> Option<Response<ResponseBody>> {
    let path = parts.uri.path().trim_end_matches('/');
    let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let aggregated = accept.contains("as=APIGroupDiscoveryList");
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ok = |doc: &Value| api::json_response(200, doc);
    // A group/version the sandbox does not serve is a 404 Status, as for any unknown path.
    let found = |doc: Option<&Value>| doc.map_or_else(|| api::error_response(&ApiError::no_route(path)), ok);
    let is_resource = matches!(segs.as_slice(), ["api", _, _, ..] | ["apis", _, _, _, ..]);
    if is_resource {
        return None;
    }
    let registry = || shared.store.registry();
    Some(match segs.as_slice() {
        ["healthz"] | ["readyz"] | ["livez"] => text("ok"),
        ["version"] => ok(&discovery::version()),
        ["api"] if aggregated => api::json_typed(200, AGGREGATED, &discovery::aggregated(&registry(), true)),
        ["api"] => ok(&discovery::core_versions()),
        ["apis"] if aggregated => {
            api::json_typed(200, AGGREGATED, &discovery::aggregated(&registry(), false))
        }
        ["apis"] => ok(&discovery::group_list(&registry())),
        ["apis", g] => found(discovery::group(&registry(), g).as_ref()),
        ["api", v] => found(discovery::resource_list(&registry(), "", v).as_ref()),
        ["apis", g, v] => found(discovery::resource_list(&registry(), g, v).as_ref()),
        // kube-openapi's handler serves JSON or its protobuf encoding, by Accept, and answers 406
        // with no body when no clause matches. The sandbox has no protobuf encoding of the
        // document, so a client that accepts only protobuf gets that 406 rather than JSON it
        // would fail to decode as protobuf.
        ["openapi", "v2"] if !accepts_json(accept) => Response::builder()
            .status(406)
            .header(header::VARY, "Accept")
            .body(Full::new(Bytes::new()).boxed_unsync())
            .expect("valid response"),
        ["openapi", "v2"] => ok(&openapi::openapi_v2(&registry())),
        ["openapi", "v3"] => ok(&openapi::openapi_v3_index(&registry())),
        ["openapi", "v3", "api", v] => found(openapi::openapi_v3(&registry(), "", v).as_deref()),
        ["openapi", "v3", "apis", g, v] => found(openapi::openapi_v3(&registry(), g, v).as_deref()),
        _ => api::error_response(&ApiError::no_route(path)),
    })
}
