//! The paths that name no resource — `/version`, discovery, the OpenAPI documents and the health
//! checks — answered alike for the in-process client and over HTTPS, from the registry of the
//! moment (so a CRD's kinds are discovered once it is established).

use bytes::Bytes;
use http::{Response, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::ResponseBody;
use super::response::{error_response, json_response, json_typed};
use super::{discovery, openapi};
use crate::SandboxState;
use crate::status::ApiError;
use crate::token_issuer;

/// The media type of aggregated discovery.
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn text(body: &'static str) -> Response<ResponseBody> {
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(body)).boxed_unsync())
        .expect("valid response")
}

/// An issuer discovery document, cacheable for an hour as upstream serves it.
fn discovery_document(doc: Vec<u8>, content_type: &'static str) -> Response<ResponseBody> {
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "public, max-age=3600")
        .body(Full::new(Bytes::from(doc)).boxed_unsync())
        .expect("valid response")
}

/// The forms `/openapi/v2` is served in.
#[derive(Clone, Copy)]
enum OpenApiV2 {
    Json,
    Protobuf,
}

/// kube-openapi's protobuf media subtype, and the one kubectl still asks for (deprecated: it is
/// answered with the first).
const PROTOBUF_SUBTYPE: &str = "com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTOBUF_SUBTYPE_DEPRECATED: &str = "com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// What an `Accept` header gets from `/openapi/v2`, as kube-openapi's handler negotiates
/// (`pkg/handler/handler.go`): no header is `*/*`; the clauses are taken by quality, then the more
/// specific first (`goautoneg.ParseAccept`), and the first clause that names JSON or either
/// protobuf subtype, or a wildcard, decides; `None` (a 406) when none does.
fn negotiate_openapi_v2(accept: &str) -> Option<OpenApiV2> {
    let accept = if accept.trim().is_empty() { "*/*".to_owned() } else { accept.to_ascii_lowercase() };
    let mut clauses: Vec<(f64, u8, String, String)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let media = parts.next()?.trim();
            let (kind, sub) = if media == "*" { ("*", "*") } else { media.split_once('/')? };
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").and_then(|q| q.trim().parse::<f64>().ok()))
                .next()
                .unwrap_or(1.0);
            let specificity = match (kind, sub) {
                ("*", _) => 0,
                (_, "*") => 1,
                _ => 2,
            };
            Some((q, specificity, kind.trim().to_owned(), sub.trim().to_owned()))
        })
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let served = [
        ("json", OpenApiV2::Json),
        (PROTOBUF_SUBTYPE_DEPRECATED, OpenApiV2::Protobuf),
        (PROTOBUF_SUBTYPE, OpenApiV2::Protobuf),
    ];
    clauses.iter().find_map(|(_, _, kind, sub)| {
        served.iter().find_map(|(s, form)| {
            ((kind == "application" || kind == "*") && (sub == s || sub == "*")).then_some(*form)
        })
    })
}

/// The answer to a GET of a non-resource path; `None` for a resource path.
pub(crate) fn respond(shared: &SandboxState, parts: &http::request::Parts) -> Option<Response<ResponseBody>> {
    let path = parts.uri.path().trim_end_matches('/');
    let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let aggregated = accept.contains("as=APIGroupDiscoveryList");
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ok = |doc: &Value| json_response(200, doc);
    // A group/version the sandbox does not serve is a 404 Status, as for any unknown path.
    let found = |doc: Option<&Value>| doc.map_or_else(|| error_response(&ApiError::no_route(path)), ok);
    let is_resource = matches!(segs.as_slice(), ["api", _, _, ..] | ["apis", _, _, _, ..]);
    if is_resource {
        return None;
    }
    let registry = || shared.store.registry();
    Some(match segs.as_slice() {
        ["healthz"] | ["readyz"] | ["livez"] => text("ok"),
        ["version"] => ok(&discovery::version()),
        ["api"] if aggregated => json_typed(200, AGGREGATED, &discovery::aggregated(&registry(), true)),
        ["api"] => ok(&discovery::core_versions()),
        ["apis"] if aggregated => json_typed(200, AGGREGATED, &discovery::aggregated(&registry(), false)),
        ["apis"] => ok(&discovery::group_list(&registry())),
        ["apis", g] => found(discovery::group(&registry(), g).as_ref()),
        ["api", v] => found(discovery::resource_list(&registry(), "", v).as_ref()),
        ["apis", g, v] => found(discovery::resource_list(&registry(), g, v).as_ref()),
        // kube-openapi's handler serves JSON or gnostic's protobuf encoding, by Accept, and
        // answers 406 with no body when no clause matches.
        ["openapi", "v2"] => match negotiate_openapi_v2(accept) {
            Some(OpenApiV2::Json) => {
                entity(parts, &openapi::openapi_v2_json(&registry()), "application/json", false)
            }
            Some(OpenApiV2::Protobuf) => {
                let served = openapi::openapi_v2_protobuf(&registry());
                entity(parts, &served, &format!("application/{PROTOBUF_SUBTYPE}"), true)
            }
            None => Response::builder()
                .status(406)
                .header(header::VARY, "Accept")
                .body(Full::new(Bytes::new()).boxed_unsync())
                .expect("valid response"),
        },
        // Service account issuer discovery: what verifies the tokens the sandbox issues.
        [".well-known", "openid-configuration"] => {
            let host = parts.headers.get(header::HOST).and_then(|v| v.to_str().ok());
            let host = host.or_else(|| parts.uri.authority().map(http::uri::Authority::as_str));
            discovery_document(
                token_issuer::openid_configuration(host.unwrap_or("localhost")),
                "application/json",
            )
        }
        ["openid", "v1", "jwks"] => discovery_document(token_issuer::jwks(), "application/jwk-set+json"),
        ["openapi", "v3"] => entity(
            parts,
            &openapi::Served::json(&openapi::openapi_v3_index(&registry())),
            "application/json",
            false,
        ),
        ["openapi", "v3", "api", v] => group_version(parts, &registry(), "", v, path),
        ["openapi", "v3", "apis", g, v] => group_version(parts, &registry(), g, v, path),
        _ => error_response(&ApiError::no_route(path)),
    })
}

/// A group/version's `/openapi/v3` document, as kube-openapi's v3 handler serves it: asked for
/// by the `hash` the index gives, it may be cached for good (`Cache-Control: public, immutable`,
/// expiring in a year); asked for by another hash (a client's stale one), it is a 301 to the
/// document's current address.
fn group_version(
    parts: &http::request::Parts,
    registry: &crate::registry::Registry,
    group: &str,
    version: &str,
    path: &str,
) -> Response<ResponseBody> {
    let Some(served) = openapi::openapi_v3_json(registry, group, version) else {
        return error_response(&ApiError::no_route(path));
    };
    let hash = parts
        .uri
        .query()
        .into_iter()
        .flat_map(|q| form_urlencoded::parse(q.as_bytes()))
        .find(|(k, _)| k == "hash");
    let Some((_, hash)) = hash.filter(|(_, h)| !h.is_empty()) else {
        return entity(parts, &served, "application/json", true);
    };
    if hash != served.etag {
        let location = openapi::v3_url(path.trim_start_matches("/openapi/v3/"), &served.etag);
        return Response::builder()
            .status(301)
            .header(header::LOCATION, &location)
            .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
            .header(header::VARY, "Accept")
            .body(
                Full::new(Bytes::from(format!("<a href=\"{location}\">Moved Permanently</a>.\n\n")))
                    .boxed_unsync(),
            )
            .expect("valid response");
    }
    let mut response = entity(parts, &served, "application/json", true);
    let expires =
        jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC).saturating_add(jiff::Span::new().years(1));
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, http::HeaderValue::from_static("public, immutable"));
    if let Ok(value) = http::HeaderValue::from_str(&expires.strftime("%a, %d %b %Y %H:%M:%S UTC").to_string())
    {
        headers.insert(header::EXPIRES, value);
    }
    response
}

/// A document with its entity tag (quoted in `ETag`), as Go's `http.ServeContent` serves it: a
/// 304 with no body when the request's `If-None-Match` names that tag (or is `*`).
fn entity(
    parts: &http::request::Parts,
    served: &openapi::Served,
    content_type: &str,
    vary: bool,
) -> Response<ResponseBody> {
    let etag = format!("\"{}\"", served.etag);
    let if_none_match = parts.headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|v| v.to_str().ok());
    let matched = if_none_match
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag);
    let mut builder = Response::builder().header(header::ETAG, &etag);
    if vary {
        builder = builder.header(header::VARY, "Accept");
    }
    if matched {
        return builder.status(304).body(Full::new(Bytes::new()).boxed_unsync()).expect("valid response");
    }
    builder
        .status(200)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(served.body.clone()).boxed_unsync())
        .expect("valid response")
}
