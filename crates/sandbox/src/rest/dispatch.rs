//! One request from arrival to answer: held or served ([`handle`]), a panic answered as
//! upstream's panic filter answers it and the server going on, the non-resource paths
//! answered first, the request recorded and its latency injected, the resource request parsed
//! into a [`Request`] and dispatched on its [`Verb`] to the handler of its family.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use http::{Method, Request as HttpRequest, Response, StatusCode, header};
use http_body::Body;
use http_body_util::Full;

use super::body::read_request_body;
use super::call::Call;
use super::negotiate::{Render, Wire};
use super::request::{Request, Target, Verb};
use super::response::{Disconnect, as_protobuf, error_response, panicked, with_warnings};
use super::{BoxError, ResponseBody, answer, delete, read, watch, write};
use crate::SandboxState;
use crate::invocation::{self, Invocation, Left};
use crate::record::RequestRecord;
use crate::status::ApiError;
use crate::user::UserInfo;

/// Handles one API request.
pub async fn handle<B>(shared: Arc<SandboxState>, req: HttpRequest<B>) -> Response<ResponseBody>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let (parts, body) = req.into_parts();
    let (method, uri) = (parts.method.clone(), parts.uri.clone());
    let user_agent = parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let answer = if let Some(ticket) = shared.faults.hold_request(user_agent) {
        AssertUnwindSafe(held(shared, parts, body, ticket)).catch_unwind().await
    } else {
        AssertUnwindSafe(serve(shared, parts, body)).catch_unwind().await
    };
    // The store's locks do not poison and its writes commit at their end, so a request that
    // panicked left nothing half-written: the server goes on, as upstream's panic filter does.
    answer.unwrap_or_else(|_| {
        tracing::error!(%method, %uri, "the request panicked");
        panicked()
    })
}

/// Serves one request that has reached the server.
async fn serve<B>(
    shared: Arc<SandboxState>,
    mut parts: http::request::Parts,
    body: B,
) -> Response<ResponseBody>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    // Who it is and whether it may, before the path is known to name anything (upstream's
    // impersonation and authorization filters).
    if let Err(e) = crate::auth::admit(&shared.auth, &shared.store, &mut parts) {
        return error_response(&e);
    }
    // Discovery, OpenAPI, health: the same answers in-process as over HTTPS, not in the log.
    if parts.method == Method::GET
        && let Some(r) = super::non_resource::respond(&shared, &parts)
    {
        return r;
    }
    if discovery_refuses(&shared, &parts) {
        return error_response(&ApiError::method_not_allowed());
    }
    let mut record = record_of(&parts);
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let response = route(&shared, &parts, body, &mut record).await;
    record.code =
        if response.extensions().get::<Disconnect>().is_some() { 0 } else { response.status().as_u16() };
    record.took = record.at.elapsed();
    shared.requests.push(record);
    response
}

/// A discovery document's route serves GET alone: go-restful's 405 for the other methods.
/// (Only paths as deep as a discovery document are probed: a write to a resource is not.)
fn discovery_refuses(shared: &SandboxState, parts: &http::request::Parts) -> bool {
    let segments: Vec<&str> = parts.uri.path().trim_matches('/').split('/').collect();
    let discovery_depth =
        matches!(segments.as_slice(), ["api"] | ["api", _] | ["apis"] | ["apis", _] | ["apis", _, _]);
    if parts.method == Method::GET || !discovery_depth {
        return false;
    }
    let mut probe =
        HttpRequest::get(parts.uri.clone()).body(()).expect("a GET of a valid URI").into_parts().0;
    probe.headers = parts.headers.clone();
    super::non_resource::respond(shared, &probe).is_some_and(|r| r.status() == StatusCode::OK)
}

/// The log's entry for a request, before anything of it is known but its method and client.
fn record_of(parts: &http::request::Parts) -> RequestRecord {
    let user_agent =
        parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    RequestRecord {
        verb: parts.method.as_str().to_ascii_lowercase(),
        group: String::new(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        user_agent,
        code: 0,
        annotations: std::collections::BTreeMap::new(),
        at: std::time::Instant::now(),
        took: std::time::Duration::ZERO,
    }
}

/// A request held on the wire ([`Faults::hold`](crate::Faults::hold)): handled when its turn
/// comes, in a task of its own, so that a request whose client has gone meanwhile can still be
/// applied when the hold says so — as a server reads bytes that arrive after their sender reset.
async fn held<B>(
    shared: Arc<SandboxState>,
    parts: http::request::Parts,
    body: B,
    ticket: crate::faults::Ticket,
) -> Response<ResponseBody>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    // The bytes are all sent; a body that cannot be read is answered when delivered, as any.
    let bytes = read_request_body(&parts, body).await.unwrap_or_default();
    let (answer, answered) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        // Lost (`drop_held`): its client sees the connection dropped.
        let Ok((abandoned, handled)) = ticket.await else { return };
        if answer.is_closed() && abandoned == crate::faults::Abandoned::Cancelled {
            shared.faults.abandoned_on_release();
            return;
        }
        let response = serve(Arc::clone(&shared), parts, Full::new(bytes)).await;
        let _ = answer.send(response);
        let _ = handled.send(());
    });
    answered.await.unwrap_or_else(|_| error_response(&crate::faults::FaultKind::Disconnect.error()))
}

/// Answers a request to a resource, with the deprecation warning of the resource it names.
async fn route<B>(
    shared: &Arc<SandboxState>,
    parts: &http::request::Parts,
    body: B,
    record: &mut RequestRecord,
) -> Response<ResponseBody>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    // Read first, whatever the answer: a client still sending its body when an error is answered
    // (a 404 or a 405 for the URL alone) would otherwise meet a reset connection, not the Status.
    let bytes = read_request_body(parts, body).await;
    let target = match Target::parse(&shared.store, parts.uri.path()) {
        Ok(t) => t,
        Err(e) => return error_response(&e),
    };
    // A deprecated resource warns of it in every answer, a refusal too (the installer's
    // deprecation warning, before any handler).
    let deprecation = target.def.deprecation();
    // Negotiated once: the request's handler answers in its shape, and the answer is written
    // in its encoding here.
    let negotiated = target.negotiate(parts);
    let wire = negotiated.as_ref().map_or(Wire::Json, |(_, wire)| *wire);
    // The handler runs as the request's invocation: admission reads who makes it, and leaves
    // Warning headers (on a refusal too) and audit annotations for the record.
    let user = parts.extensions.get::<crate::auth::Requester>().map_or_else(UserInfo::admin, |r| r.0.clone());
    let authorizer = parts.extensions.get::<crate::auth::RequestAuthorizer>().map(|a| a.0.clone());
    let invocation = move || Invocation::authorized_by(user, authorizer);
    let (answered, left) = if calls_out(shared, parts) {
        // A write that may wait for a webhook is answered on a thread of its own: on a
        // single-threaded runtime the webhook may be served by the same runtime's thread.
        let (shared, parts, mut taken) = (Arc::clone(shared), parts.clone(), record.clone());
        let answered = tokio::task::spawn_blocking(move || {
            let answered = invocation::within(invocation(), || {
                answer(&shared, &parts, target, negotiated, bytes, &mut taken)
            });
            (answered, taken)
        })
        .await;
        match answered {
            Ok((answered, taken)) => {
                *record = taken;
                answered
            }
            Err(e) => (Err(ApiError::internal_error(&e.to_string())), Left::default()),
        }
    } else {
        invocation::within(invocation(), || answer(shared, parts, target, negotiated, bytes, record))
    };
    let response = match answered {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    let response = with_warnings(response, &left.warnings);
    record.annotations = left.annotations;
    // Answers are made as JSON and written in the encoding negotiated (a refusal too, as
    // upstream's errors are); a watch writes its own frames.
    let response = if wire == Wire::Protobuf { as_protobuf(response).await } else { response };
    match deprecation {
        Some(warning) => with_warnings(response, &[warning.to_owned()]),
        None => response,
    }
}

/// Whether the request may call a webhook — an admission webhook on a write, a conversion
/// webhook on any request — while the runtime it is served on has one thread (a stream's
/// upgrade is answered where it came).
fn calls_out(shared: &SandboxState, parts: &http::request::Parts) -> bool {
    let write = !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    !parts.headers.contains_key(header::UPGRADE)
        && tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread
        && ((write && shared.store.may_call_webhooks()) || shared.store.may_convert_by_webhook())
}

/// Parses the request to `target`, then hands it to the handler of its verb.
fn answer(
    shared: &Arc<SandboxState>,
    parts: &http::request::Parts,
    target: Target,
    negotiated: Option<(Render, Wire)>,
    bytes: Result<Bytes, ApiError>,
    record: &mut RequestRecord,
) -> Result<Response<ResponseBody>, ApiError> {
    let mut req = Request::parse(shared, parts, target, negotiated, record)?;
    invocation::current(|i| i.map(|i| i.set_dry_run(req.query.dry_run)));
    // A stream is answered before faults or the body are judged: its handler answers it alone.
    if let Verb::Connect(stream) = req.verb {
        return super::connect::connect(shared, parts, &req, stream);
    }
    if let Some(e) = shared.faults.check(req.verb.name(), req.def.plural) {
        return Err(e);
    }
    let bytes = bytes?;
    let delete = match req.verb {
        Verb::Delete | Verb::DeleteCollection => {
            let content_type =
                parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
            Some(delete::read_options(&bytes, content_type, &mut req)?)
        }
        _ => None,
    };
    // dryRun=All: the same request against a throwaway copy of the store — validated, defaulted,
    // answered, never stored and never seen by a watch.
    let scratch;
    let store = if req.query.dry_run && !req.verb.reads() {
        scratch = shared.store.scratch();
        &scratch
    } else {
        &shared.store
    };
    let mut call = Call { shared, store, req, parts, bytes, record, delete };
    match call.req.verb {
        Verb::Get => read::get(&call),
        Verb::List => read::list(&call),
        Verb::Watch => watch::watch(shared, call.req),
        Verb::Create => write::create(&mut call),
        Verb::Update => write::update(&call),
        Verb::Patch => write::patch(&call),
        Verb::Delete => delete::delete(&call),
        Verb::DeleteCollection => delete::delete_collection(&call),
        Verb::Act { action, .. } => answer::act(&call, action),
        Verb::Review(review) => answer::review(&call, review),
        Verb::Compute { objects, one } => answer::compute(&call.req, objects, one),
        Verb::Metrics { of, one } => answer::metrics(&call, of, one),
        Verb::Connect(stream) => super::connect::connect(shared, parts, &call.req, stream),
    }
}
