//! The HTTP face of the store: routes a Kubernetes API request to a verb, answers JSON (or a
//! stream of watch events), applies fault injection and records the request.
//!
//! The same handler serves the in-process `tower::Service` behind `kube::Client` and, later, a
//! real HTTP listener: it is generic over the request body.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body::{Body, Frame};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::Shared;
use crate::actions::Run;
use crate::field_validation::{self, Directive};
use crate::patch::PatchType;
use crate::record::RequestRecord;
use crate::resource::{Answer, ResourceDef};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::Store;
use crate::store::{Change, ChangeType, DeleteOptions, ListQuery, Subresource};

/// The body of every sandbox response.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// The largest request body the API server accepts (3 MiB, as kube-apiserver).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The error type bodies must convert into.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A parsed resource path.
#[derive(Debug)]
struct Target {
    def: Arc<ResourceDef>,
    namespace: Option<String>,
    name: Option<String>,
    sub: Subresource,
}

pub(crate) fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    json_typed(code, "application/json", body)
}

/// An object as Go's encoder writes it: `kind` and `apiVersion` first (the type's embedded
/// `TypeMeta`), then the rest. A client that reads the wrong kind fails at the same column as
/// against a real server.
struct KindFirst<'a>(&'a Value);

impl serde::Serialize for KindFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some(fields) = self.0.as_object().filter(|m| m.contains_key("kind")) else {
            return self.0.serialize(s);
        };
        let mut m = s.serialize_map(Some(fields.len()))?;
        for key in ["kind", "apiVersion"] {
            if let Some(v) = fields.get(key) {
                m.serialize_entry(key, v)?;
            }
        }
        for (k, v) in fields.iter().filter(|(k, _)| *k != "kind" && *k != "apiVersion") {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A JSON body served under `content_type` (aggregated discovery has its own).
pub(crate) fn json_typed(code: u16, content_type: &str, body: &Value) -> Response<ResponseBody> {
    json_body(code, content_type, &KindFirst(body), 0)
}

/// A JSON answer written by its own serializer (a list page thawing its objects as it goes)
/// into a buffer of about `size` bytes.
fn json_serialized(code: u16, body: &impl serde::Serialize, size: usize) -> Response<ResponseBody> {
    json_body(code, "application/json", body, size)
}

fn json_body(
    code: u16,
    content_type: &str,
    body: &impl serde::Serialize,
    size: usize,
) -> Response<ResponseBody> {
    let mut bytes = Vec::with_capacity(size);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        bytes.clear();
    }
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(bytes)).boxed_unsync())
        .expect("valid response")
}

/// Marks a response that must not be sent: the connection is dropped instead (an injected
/// [`FaultKind::Disconnect`](crate::FaultKind::Disconnect)). The HTTP server closes the connection;
/// the in-process service answers with an error, as a broken connection would.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect;

/// An error as a Status response (with Retry-After for 429).
pub fn error_response(e: &ApiError) -> Response<ResponseBody> {
    let mut r = json_response(e.code, &e.to_status());
    if e.reason == crate::faults::DISCONNECTED {
        r.extensions_mut().insert(Disconnect);
    }
    if let Some(secs) = e.details.as_ref().and_then(|d| d.get("retryAfterSeconds")).and_then(Value::as_u64) {
        r.headers_mut().insert(header::RETRY_AFTER, secs.into());
    }
    r
}

fn parse_target(store: &Store, path: &str) -> Result<Target, ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::no_route(path)),
    };
    let find = |plural: &str| store.find(group, version, plural);
    let (def, namespace, name, subres) = match rest {
        ["namespaces", ns, plural, tail @ ..] if find(plural).is_some_and(|d| d.namespaced) => (
            find(plural).expect("checked"),
            Some((*ns).to_owned()),
            tail.first().map(|s| (*s).to_owned()),
            tail.get(1),
        ),
        [plural, tail @ ..] => {
            let def = find(plural).ok_or_else(|| ApiError::no_route(path))?;
            if def.namespaced && !tail.is_empty() {
                return Err(ApiError::no_route(path));
            }
            (def, None, tail.first().map(|s| (*s).to_owned()), tail.get(1))
        }
        [] => return Err(ApiError::no_route(path)),
    };
    if rest.len() > if namespace.is_some() { 5 } else { 3 } {
        return Err(ApiError::no_route(path));
    }
    let sub = match subres.copied() {
        None => Subresource::Main,
        Some("status") if def.status_subresource => Subresource::Status,
        Some("scale") if def.scale.is_some() => Subresource::Scale,
        Some(s) => match def.actions().iter().find(|a| a.name == s) {
            Some(a) => Subresource::Action(a),
            // The custom resource handler answers any other subresource as a missing object.
            None if def.custom().is_some() => {
                return Err(ApiError::not_found(def.group, def.plural, name.as_deref().unwrap_or("")));
            }
            // A pod's streams are served by its kubelet, reached through the pod: a missing pod
            // is not found; an existing one is refused as a request that did not upgrade its
            // connection, the only kind the sandbox could take — it runs no container.
            None if (def.group, def.plural) == ("", "pods")
                && matches!(s, "exec" | "attach" | "portforward") =>
            {
                let (ns, pod) = (namespace.as_deref().unwrap_or(""), name.as_deref().unwrap_or(""));
                store.get(&def, ns, pod, Subresource::Main)?;
                return Err(ApiError::bad_request("Upgrade request required"));
            }
            None => return Err(ApiError::no_route(path)),
        },
    };
    Ok(Target { def, namespace, name, sub })
}

#[derive(Debug, Default)]
struct Query {
    list: ListQuery,
    watch: bool,
    allow_bookmarks: bool,
    send_initial_events: bool,
    timeout: Option<Duration>,
    field_manager: Option<String>,
    field_validation: Option<String>,
    force: bool,
    /// Whether `force` was given at all (upstream's `*bool`: only an apply may carry it).
    force_given: bool,
    propagation: Option<String>,
    grace_period: Option<i64>,
    dry_run: bool,
    /// Every `dryRun` given, for `ValidateDryRun`.
    dry_run_values: Vec<String>,
    /// `Accept: ...;as=Table`: answer with server-side printed Tables.
    as_table: bool,
    /// What the response is transformed into (`as=Table|PartialObjectMetadata[List]`).
    render: Render,
    /// `includeObject` of a Table (`TableOptions`): `None`, `Metadata` (the default), `Object`.
    include_object: Option<String>,
}

/// The shape a response is transformed into, from the `Accept` clause negotiated
/// (`endpoints/handlers/response.go`, `doTransformObject`): the object itself, a
/// `meta.k8s.io` Table, or `PartialObjectMetadata` / `PartialObjectMetadataList`, each in the
/// `meta.k8s.io` version the clause named (`v1` or `v1beta1`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Render {
    #[default]
    Object,
    Table(&'static str),
    Partial(&'static str),
    PartialList(&'static str),
}

/// The first clause of `accept` the server can answer, as upstream's
/// `negotiation.NegotiateOutputMediaType` with the endpoint's transforms
/// (`AllowsMediaTypeTransform`): a served media type (or a wildcard) with no `as=`, or one
/// whose `as=` is a `meta.k8s.io/v1|v1beta1` Table (JSON or YAML) or `PartialObjectMetadata[List]`.
/// `None` when no clause can be served (406); an empty header is the object itself.
fn negotiate(accept: &str) -> Option<Render> {
    if accept.trim().is_empty() {
        return Some(Render::Object);
    }
    accept.split(',').find_map(|clause| {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let served = matches!(media.as_str(), "*/*" | "application/*")
            || crate::status::SERVED_MEDIA_TYPES.contains(&media.as_str());
        if !served {
            return None;
        }
        let (mut as_, mut g, mut v) = ("", "", "");
        for param in parts {
            match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        if as_.is_empty() {
            return Some(Render::Object);
        }
        let version = match (g, v) {
            ("meta.k8s.io", "v1") => "meta.k8s.io/v1",
            ("meta.k8s.io", "v1beta1") => "meta.k8s.io/v1beta1",
            _ => return None,
        };
        match as_ {
            "Table" if media != "application/vnd.kubernetes.protobuf" => Some(Render::Table(version)),
            "PartialObjectMetadata" => Some(Render::Partial(version)),
            "PartialObjectMetadataList" => Some(Render::PartialList(version)),
            _ => None,
        }
    })
}

fn parse_query(q: Option<&str>, def: &ResourceDef) -> Result<Query, ApiError> {
    let mut out = Query::default();
    for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
        let truthy = v == "true" || v == "1";
        match k.as_ref() {
            "labelSelector" => out.list.labels = LabelSelector::parse(&v)?,
            "fieldSelector" => {
                out.list.fields = FieldSelector::parse_converted(&v, def.field_labels, def.label_refusal())?;
            }
            "shardSelector" if !v.is_empty() => {
                out.list.shard = Some(crate::shard::ShardSelector::parse(&v)?)
            }
            // An `int64`; zero or less is no limit (the storage pages only for `limit > 0`).
            "limit" => {
                let limit: i64 = v
                    .parse()
                    .map_err(|_| ApiError::bad_request(format!("invalid limit {v:?}: must be an integer")))?;
                out.list.limit = usize::try_from(limit).unwrap_or(0);
            }
            "continue" => out.list.continue_token = Some(v.into_owned()),
            "resourceVersion" => out.list.resource_version = Some(v.into_owned()),
            "resourceVersionMatch" => out.list.resource_version_match = Some(v.into_owned()),
            "watch" => out.watch = truthy,
            "allowWatchBookmarks" => out.allow_bookmarks = truthy,
            "sendInitialEvents" => out.send_initial_events = truthy,
            "timeoutSeconds" => {
                let secs: u64 = v.parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "strconv.ParseInt: parsing {}: invalid syntax",
                        crate::gofmt::go_quote(&v)
                    ))
                })?;
                out.timeout = Some(Duration::from_secs(secs));
            }
            "fieldManager" => out.field_manager = Some(v.into_owned()),
            "fieldValidation" => out.field_validation = Some(v.into_owned()),
            "force" => {
                out.force = truthy;
                out.force_given = true;
            }
            "includeObject" => out.include_object = Some(v.into_owned()),
            "propagationPolicy" => out.propagation = Some(v.into_owned()),
            "gracePeriodSeconds" => out.grace_period = v.parse().ok(),
            // Judged with the verb's other options (`ValidateDryRun`).
            "dryRun" if !v.is_empty() => {
                out.dry_run |= v == "All";
                out.dry_run_values.push(v.into_owned());
            }
            _ => {}
        }
    }
    Ok(out)
}

fn verb_of(method: &Method, t: &Target, watch: bool) -> &'static str {
    match (method, t.name.is_some()) {
        (&Method::GET, true) => "get",
        (&Method::GET, false) if watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::POST, false) => "create",
        // `pods/<name>/binding`, `/eviction`, `serviceaccounts/<name>/token`: a create of the
        // subresource.
        (&Method::POST, true) if matches!(t.sub, Subresource::Action(_)) => "create",
        (&Method::PUT, true) => "update",
        (&Method::PATCH, true) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => "unsupported",
    }
}

/// Reads the body, refusing more than [`MAX_BODY`] with 413.
///
/// A body somewhat over the limit is still read (and dropped) before answering, so the client,
/// still sending, gets the 413 instead of a broken pipe; past 4× the limit the connection is cut.
/// The request's body, within the size its `Content-Length` announces and the server accepts.
async fn read_request_body<B>(parts: &http::request::Parts, body: B) -> Result<Bytes, ApiError>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let content_length =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    read_body(body, content_length).await
}

async fn read_body<B>(body: B, content_length: Option<usize>) -> Result<Bytes, ApiError>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    const DRAIN: usize = 4 * MAX_BODY;
    if let Some(len) = content_length.filter(|l| *l > DRAIN) {
        return Err(ApiError::too_large(len, MAX_BODY));
    }
    match Limited::new(body, DRAIN).collect().await {
        Ok(c) => {
            let bytes = c.to_bytes();
            if bytes.len() > MAX_BODY { Err(ApiError::too_large(bytes.len(), MAX_BODY)) } else { Ok(bytes) }
        }
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(ApiError::too_large(DRAIN, MAX_BODY))
        }
        Err(e) => Err(ApiError::bad_request(format!("reading the request body failed: {e}"))),
    }
}

/// A create or update body in its declared encoding: JSON (also when no type is given, as
/// upstream defaults to it), protobuf for the kinds the sandbox decodes, or YAML, converted to
/// JSON first as upstream's YAML serializer does (`sigs.k8s.io/yaml`'s `YAMLToJSON`); any other
/// type is 415. YAML that does not parse is upstream's decode error (`transformDecodeError`):
/// a 400 naming the kind the URL wants.
fn parse_object(bytes: &[u8], content_type: &str, what: &str, kind: &str) -> Result<Value, ApiError> {
    let unrecognized = |why: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {why} ({})",
            summarize(bytes)
        ))
    };
    // The serializer reads the apiVersion and kind first, into a struct, with Go's decoder: a
    // body that is not JSON, or not an object, fails there in its words.
    let kind_of = |value: Value| {
        if value.is_object() || value.is_null() {
            Ok(value)
        } else {
            Err(unrecognized(format!(
                "couldn't get version/kind; json parse error: {}",
                crate::gojson::not_an_object(&value)
            )))
        }
    };
    match content_type.split(';').next().unwrap_or("").trim() {
        "" | "application/json" => {
            if !bytes.iter().all(u8::is_ascii_whitespace)
                && let Some(why) = crate::gojson::syntax_error(bytes)
            {
                return Err(unrecognized(format!("couldn't get version/kind; json parse error: {why}")));
            }
            kind_of(parse_json(bytes, what)?)
        }
        crate::endpoints::protobuf::CONTENT_TYPE => crate::endpoints::protobuf::to_json(bytes),
        "application/yaml" => kind_of(yaml_to_json(bytes).map_err(unrecognized)?),
        other => Err(ApiError::unsupported_body(other)),
    }
}

/// YAML (1.1, as go-yaml v2 reads it: `yes`/`no` booleans, `0755` octal) as the JSON value it
/// stands for; the first document of a stream. An empty document is `null`. The error is worded
/// as `sigs.k8s.io/yaml`'s `YAMLToJSON` words it (`yaml: line 1: …`).
pub(crate) fn yaml_to_json(bytes: &[u8]) -> Result<Value, String> {
    let first = first_yaml_document(bytes).map_err(|why| format!("yaml: {why}"))?;
    let text =
        std::str::from_utf8(&bytes[..first]).map_err(|_| "yaml: invalid leading UTF-8 octet".to_owned())?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    options.legacy_octal_numbers = true;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    let mut docs: Vec<Value> =
        serde_saphyr::from_str_multiple_with_options(text, options).map_err(|e| format!("yaml: {e}"))?;
    Ok(if docs.is_empty() { Value::Null } else { docs.swap_remove(0) })
}

/// How many bytes a YAML stream's first document takes — go-yaml reads no further — or its
/// syntax error, as go-yaml v2's `parser.fail` words it: the problem, after `line N: ` when a
/// line is known — the problem's (one further on for a scanner error, which has not moved past
/// its line), else the context's.
fn first_yaml_document(bytes: &[u8]) -> Result<usize, String> {
    use libyaml_safer::{ErrorKind, EventData, Parser};
    let mut parser = Parser::new();
    parser.set_input(bytes);
    loop {
        match parser.parse() {
            Ok(event) => {
                if matches!(event.data, EventData::DocumentEnd { .. } | EventData::StreamEnd) {
                    let end = usize::try_from(event.end_mark.index).unwrap_or(usize::MAX);
                    return Ok(end.min(bytes.len()));
                }
            }
            Err(e) => {
                let problem_line = e.problem_mark().map_or(0, |m| m.line);
                let line = if problem_line != 0 {
                    problem_line + u64::from(e.kind() == ErrorKind::Scanner)
                } else {
                    e.context_mark().map_or(0, |m| m.line)
                };
                let at = if line == 0 { String::new() } else { format!("line {line}: ") };
                return Err(format!("{at}{}", e.problem()));
            }
        }
    }
}

/// The start of a body as upstream's `summarizeData` shows it in a decode error: the first 30
/// bytes (` ...` after them when there is more) as text when it starts with `{`, else in hex; or
/// `<empty>`.
fn summarize(bytes: &[u8]) -> String {
    let start = &bytes[..bytes.len().min(30)];
    let more = if bytes.len() > 30 { " ..." } else { "" };
    match bytes.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(start)),
        Some(_) => format!("{}{more}", start.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

/// The body, when it is JSON (for the duplicate-field check).
fn json_bytes<'a>(bytes: &'a [u8], content_type: &str) -> Option<&'a [u8]> {
    matches!(content_type.split(';').next().unwrap_or("").trim(), "" | "application/json").then_some(bytes)
}

fn parse_json(bytes: &[u8], what: &str) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the body of the {what} request is not valid JSON: {e}")))
}

/// Handles one API request.
pub async fn handle<B>(shared: Arc<Shared>, req: Request<B>) -> Response<ResponseBody>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let (parts, body) = req.into_parts();
    let user_agent = parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if let Some(ticket) = shared.faults.hold_request(user_agent) {
        return held(shared, parts, body, ticket).await;
    }
    serve(shared, parts, body).await
}

/// Serves one request that has reached the server.
async fn serve<B>(shared: Arc<Shared>, parts: http::request::Parts, body: B) -> Response<ResponseBody>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let path = parts.uri.path().to_owned();
    // Discovery, OpenAPI, health: the same answers in-process as over HTTPS, not in the log.
    if parts.method == Method::GET
        && let Some(r) = crate::endpoints::non_resource::respond(&shared, &parts)
    {
        return r;
    }
    // A discovery document's route serves GET alone: go-restful's 405 for the other methods.
    // (Only paths as deep as a discovery document are probed: a write to a resource is not.)
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let discovery_depth =
        matches!(segments.as_slice(), ["api"] | ["api", _] | ["apis"] | ["apis", _] | ["apis", _, _]);
    if parts.method != Method::GET && discovery_depth {
        let mut probe =
            Request::get(parts.uri.clone()).body(()).expect("a GET of a valid URI").into_parts().0;
        probe.headers = parts.headers.clone();
        if crate::endpoints::non_resource::respond(&shared, &probe)
            .is_some_and(|r| r.status() == StatusCode::OK)
        {
            return error_response(&ApiError::method_not_allowed());
        }
    }
    let user_agent =
        parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let mut record = RequestRecord {
        verb: parts.method.as_str().to_ascii_lowercase(),
        group: String::new(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
        user_agent,
        code: 0,
        at: std::time::Instant::now(),
        took: std::time::Duration::ZERO,
    };
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let mut response = match route(&shared, &parts, body, &path, &mut record).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    // A deprecated resource warns of it in every answer, a refusal too (the installer's
    // deprecation warning, before any handler).
    if let Some(warning) = deprecation(&record.group, &record.resource) {
        response = with_warnings(response, &[warning.to_owned()]);
    }
    record.code =
        if response.extensions().get::<Disconnect>().is_some() { 0 } else { response.status().as_u16() };
    record.took = record.at.elapsed();
    shared.requests.push(record);
    response
}

/// A request held on the wire ([`Faults::hold`](crate::Faults::hold)): handled when its turn
/// comes, in a task of its own, so that a request whose client has gone meanwhile can still be
/// applied when the hold says so — as a server reads bytes that arrive after their sender reset.
async fn held<B>(
    shared: Arc<Shared>,
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

async fn route<B>(
    shared: &Arc<Shared>,
    parts: &http::request::Parts,
    body: B,
    path: &str,
    record: &mut RequestRecord,
) -> Result<Response<ResponseBody>, ApiError>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    // Read first, whatever the answer: a client still sending its body when an error is answered
    // (a 404 or a 405 for the URL alone) would otherwise meet a reset connection, not the Status.
    let bytes = read_request_body(parts, body).await;
    let t = parse_target(&shared.store, path)?;
    // What was asked is recorded before it is validated, as the API server's request info is.
    record.group = t.def.group.to_owned();
    record.resource = t.def.plural.to_owned();
    record.subresource = t.sub.name().to_owned();
    record.namespace = t.namespace.clone().unwrap_or_default();
    record.name = t.name.clone().unwrap_or_default();
    let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let render = negotiate(accept).ok_or_else(ApiError::not_acceptable)?;
    let mut q = parse_query(parts.uri.query(), &t.def)?;
    let verb = verb_of(&parts.method, &t, q.watch);
    record.verb = verb.to_owned();
    if !shared.sharded_list_watch {
        q.list.shard = None;
    }
    if q.watch && q.send_initial_events {
        streaming_list_allowed(shared.streaming_lists, &mut q)?;
    }
    q.as_table = matches!(render, Render::Table(_));
    q.render = render;
    let allowed = match t.sub {
        Subresource::Main => t.def.verbs().contains(&verb),
        Subresource::Status | Subresource::Scale => matches!(verb, "get" | "update" | "patch"),
        Subresource::Action(a) => a.verbs.contains(&verb),
    };
    if verb == "unsupported" {
        // The custom resource handler takes a write of its collection, then wants a name.
        if t.def.custom().is_some() && matches!(parts.method, Method::PATCH | Method::PUT) {
            return Err(ApiError::bad_request("name must be provided"));
        }
        return Err(ApiError::method_not_allowed());
    }
    if !allowed {
        return Err(ApiError::method_not_allowed());
    }
    if let Some(e) = shared.faults.check(verb, t.def.plural) {
        return Err(e);
    }

    let bytes = bytes?;
    // A delete carries its options, `dryRun` among them, in its body (kubectl and client-go do),
    // read once here and checked as upstream's `ValidateDeleteOptions`.
    let delete = if matches!(verb, "delete" | "deletecollection") {
        let body = parse_json(&bytes, verb)?;
        for v in body.get("dryRun").and_then(Value::as_array).into_iter().flatten() {
            let v = v.as_str().unwrap_or("");
            q.dry_run |= v == "All";
            q.dry_run_values.push(v.to_owned());
        }
        let mut opts = DeleteOptions::from_body(&body, q.propagation.as_deref(), &q.dry_run_values)?;
        opts.grace_period = opts.grace_period.or(q.grace_period);
        Some((body, opts))
    } else {
        None
    };
    // dryRun=All: the same request against a throwaway copy of the store — validated, defaulted,
    // answered, never stored and never seen by a watch.
    let scratch;
    let store = if q.dry_run && !matches!(verb, "get" | "list" | "watch") {
        scratch = shared.store.scratch();
        &scratch
    } else {
        &shared.store
    };
    let def = t.def.as_ref();
    let ns = t.namespace.as_deref().unwrap_or("");
    let name = t.name.as_deref().unwrap_or("");
    let ok = |v: Value| Ok(json_response(200, &v));
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let options = match verb {
        "create" => Some("CreateOptions"),
        "update" => Some("UpdateOptions"),
        "patch" => Some("PatchOptions"),
        _ => None,
    };
    // Who writes, for `managedFields` (upstream's `managerOrUserAgent`); reads never ask.
    let manager = || {
        q.field_manager
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| crate::managed_fields::manager_from_user_agent(&record.user_agent))
    };
    let directive = match options {
        Some(o) => Directive::parse(q.field_validation.as_deref(), o)?,
        None => Directive::Warn,
    };
    if let Some(kind) = options {
        validate_write_options(kind, &q, (verb == "patch").then(|| patch_type(def, content_type)))?;
    }
    // What is answered rather than stored: an action on an object, a review, computed objects.
    if let Subresource::Action(a) = t.sub
        && !matches!(a.run, Run::Owns(_))
    {
        let body = parse_object(&bytes, content_type, verb, a.kind.2)?;
        let (code, answer) = crate::actions::run(store, def, a.run, ns, name, &body)?;
        if code == 204 {
            return Ok(Response::builder()
                .status(StatusCode::NO_CONTENT)
                .body(Full::new(Bytes::new()).boxed_unsync())
                .expect("valid response"));
        }
        return Ok(json_response(code, &answer));
    }
    match def.answer() {
        Answer::Stored => {}
        Answer::Review(review) => {
            let body = parse_object(&bytes, content_type, "create", def.kind)?;
            let bearer = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            let (code, mut answer) = crate::actions::review(store, review, ns, body, bearer)?;
            def.stamp(&mut answer);
            return Ok(json_response(code, &answer));
        }
        Answer::Computed(objects) => {
            let objects = objects();
            return match verb {
                // The component status storage's own error, unclassified: a 500.
                "get" => objects
                    .into_iter()
                    .find(|o| crate::object::meta_str(o, "name") == name)
                    .map(|o| json_response(200, &o))
                    .ok_or_else(|| ApiError::unclassified(format!("Component not found: {name}"))),
                _ => Ok(json_response(
                    200,
                    &json!({ "kind": def.list_kind, "apiVersion": def.api_version(), "metadata": {}, "items": objects }),
                )),
            };
        }
    }
    match verb {
        "get" | "list" | "watch" if q.render != Render::Object => match verb {
            "get" => ok(transform(def, &q, store.get(def, ns, name, t.sub)?, false)?),
            "list" => {
                q.list.validate()?;
                ok(transform(def, &q, store.list(def, t.namespace.as_deref(), &q.list)?, true)?)
            }
            _ => watch(shared, Arc::clone(&t.def), t.namespace.clone(), q),
        },
        "get" => ok(store.get(def, ns, name, t.sub)?),
        "list" | "deletecollection" if let Err(e) = q.list.validate() => Err(e),
        // Written as it is thawed, one object at a time, into a buffer of the list's size.
        "list" => {
            let page = store.list_page(def, t.namespace.as_deref(), &q.list)?;
            Ok(json_serialized(200, &page, page.json_len_hint()))
        }
        "watch" => watch(shared, Arc::clone(&t.def), t.namespace.clone(), q),
        "create" => {
            if def.namespaced && t.namespace.is_none() {
                return Err(ApiError::method_not_allowed());
            }
            let mut body = parse_object(&bytes, content_type, "create", def.kind)?;
            let mut warnings =
                field_validation::check(def, &mut body, json_bytes(&bytes, content_type), directive)?;
            let generate = crate::object::meta_str(&body, "generateName").to_owned();
            let mut created = store.create(def, ns, body, Some(&manager()))?;
            if store.may_warn(def, ns, false) {
                warnings.extend(store.admission_warnings(def, ns, &created, None));
            }
            // The record names what was created (the URL of a create names only the collection).
            record.name = crate::object::meta_str(&created, "name").to_owned();
            if q.dry_run {
                // Nothing was stored: no uid, no version, and a generated name stays ungenerated.
                let meta = crate::object::meta_mut(&mut created);
                meta.remove("uid");
                meta.remove("resourceVersion");
                if !generate.is_empty() {
                    meta.insert("name".into(), Value::String(String::new()));
                }
            }
            // A write's answer is transformed as a read's (`transformResponseObject`).
            Ok(with_warnings(json_response(201, &transform(def, &q, created, false)?), &warnings))
        }
        "update" => {
            let mut body = parse_object(&bytes, content_type, "update", def.kind)?;
            let mut warnings = if t.sub == Subresource::Main {
                field_validation::check(def, &mut body, json_bytes(&bytes, content_type), directive)?
            } else {
                Vec::new()
            };
            let before = admission_before(store, def, ns, name, t.sub);
            let (mut obj, created) = store.update_or_create(def, ns, name, body, t.sub, Some(&manager()))?;
            if let Some(before) = before {
                warnings.extend(store.admission_warnings(def, ns, &obj, before.as_ref()));
            }
            if q.dry_run && !created {
                keep_stored_version(shared, def, ns, name, &mut obj);
            }
            let obj = transform(def, &q, obj, false)?;
            Ok(with_warnings(json_response(if created { 201 } else { 200 }, &obj), &warnings))
        }
        "patch" => {
            let ptype = patch_type(def, content_type)?;
            // An apply configuration is YAML (JSON being YAML), decoded as upstream's
            // `applyPatcher` does (`yaml.Unmarshal`); the other types are JSON.
            let body = if ptype == PatchType::Apply {
                yaml_to_json(&bytes).map_err(|e| {
                    // `yaml.Unmarshal` wraps what `YAMLToJSON` says.
                    ApiError::bad_request(format!("error decoding YAML: error converting YAML to JSON: {e}"))
                })?
            } else {
                parse_json(&bytes, "patch")?
            };
            // An apply requires its own `fieldManager`; the User-Agent does not stand in.
            let writer = manager();
            let manager =
                if ptype == PatchType::Apply { q.field_manager.as_deref() } else { Some(writer.as_str()) };
            let mut warnings = Vec::new();
            let mut check = |patched: &mut Value| {
                warnings = field_validation::check_patched(
                    def,
                    &bytes,
                    ptype == PatchType::Json,
                    patched,
                    directive,
                )?;
                Ok(())
            };
            let before = admission_before(store, def, ns, name, t.sub);
            let (mut obj, created) =
                store.patch(def, ns, name, ptype, &body, t.sub, manager, q.force, &mut check)?;
            if let Some(before) = before {
                warnings.extend(store.admission_warnings(def, ns, &obj, before.as_ref()));
            }
            if q.dry_run {
                keep_stored_version(shared, def, ns, name, &mut obj);
            }
            let obj = transform(def, &q, obj, false)?;
            Ok(with_warnings(json_response(if created { 201 } else { 200 }, &obj), &warnings))
        }
        "delete" => {
            let (body, opts) =
                delete.ok_or_else(|| ApiError::internal("a delete's options were not read"))?;
            let policy = body.get("propagationPolicy").and_then(Value::as_str).or(q.propagation.as_deref());
            let orphan_dependents = body.get("orphanDependents").and_then(Value::as_bool);
            // The warning is given before the delete is tried: a refused one carries it too.
            let warnings = orphaning_warning(def, policy, orphan_dependents);
            let response = match store.delete(def, ns, name, &opts) {
                Ok((deleted, lingers)) => delete_response(def, name, deleted, lingers, orphan_dependents),
                Err(e) => error_response(&e),
            };
            Ok(with_warnings(response, &warnings))
        }
        "deletecollection" => {
            let (body, opts) =
                delete.ok_or_else(|| ApiError::internal("a delete's options were not read"))?;
            let policy = body.get("propagationPolicy").and_then(Value::as_str).or(q.propagation.as_deref());
            let warnings =
                orphaning_warning(def, policy, body.get("orphanDependents").and_then(Value::as_bool));
            let deleted = store.delete_collection(def, t.namespace.as_deref(), &q.list, &opts)?;
            Ok(with_warnings(json_response(200, &deleted), &warnings))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The deprecation warning of a served resource deprecated upstream.
fn deprecation(group: &str, resource: &str) -> Option<&'static str> {
    match (group, resource) {
        ("", "componentstatuses") => Some("v1 ComponentStatus is deprecated in v1.19+"),
        _ => None,
    }
}

/// A PATCH's type. A content type that is none is refused before any handler runs for a built-in
/// kind (go-restful's bare 415); a custom resource's handler (apiextensions', not go-restful)
/// refuses it in its patch handler's words, naming the types it takes.
fn patch_type(def: &ResourceDef, content_type: &str) -> Result<PatchType, ApiError> {
    PatchType::from_content_type(content_type).map_err(|e| {
        if def.custom().is_some() {
            ApiError::unsupported_media_type(PatchType::CUSTOM_RESOURCE_TYPES)
        } else {
            e
        }
    })
}

/// The warning of a kind's storage for a delete without a propagation policy (a batch/v1 Job
/// orphans its pods: `pkg/registry/batch/job/storage`).
fn orphaning_warning(
    def: &ResourceDef,
    policy: Option<&str>,
    orphan_dependents: Option<bool>,
) -> Vec<String> {
    match def.delete_warning() {
        Some(warning) if policy.is_none() && orphan_dependents.is_none() => vec![warning.into()],
        _ => Vec::new(),
    }
}

/// For a write admission may warn of, the object before it (`Some(None)` when there is none yet);
/// `None` when no warning can come of it.
fn admission_before(
    store: &Store,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    sub: Subresource,
) -> Option<Option<Value>> {
    (sub == Subresource::Main && store.may_warn(def, ns, true))
        .then(|| store.get(def, ns, name, Subresource::Main).ok())
}

/// Upstream's `ValidateCreateOptions` / `ValidateUpdateOptions` / `ValidatePatchOptions`
/// (`apimachinery/pkg/apis/meta/v1/validation/validation.go`), before the body is read: a
/// `fieldManager` of at most 128 bytes, all printable (`ValidateFieldManager`); for a patch,
/// `force` only on an apply, and an apply's required `fieldManager`. A 422 on the options kind
/// (`PatchOptions.meta.k8s.io ""`).
fn validate_write_options(
    kind: &str,
    q: &Query,
    ptype: Option<Result<PatchType, ApiError>>,
) -> Result<(), ApiError> {
    let mut causes: Vec<(String, String)> = crate::store::dry_run_causes(&q.dry_run_values);
    let manager = q.field_manager.as_deref().unwrap_or("");
    if let Some(Ok(ptype)) = ptype {
        if ptype != PatchType::Apply && q.force_given {
            causes.push(("force".into(), "Forbidden: may not be specified for non-apply patch".into()));
        } else if ptype == PatchType::Apply && manager.is_empty() {
            causes.push(("fieldManager".into(), "Required value: is required for apply patch".into()));
        }
    }
    if manager.len() > crate::managed_fields::MAX_MANAGER_LENGTH {
        causes.push((
            "fieldManager".into(),
            format!("Too long: may not be more than {} bytes", crate::managed_fields::MAX_MANAGER_LENGTH),
        ));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            causes.push((
                "fieldManager".into(),
                format!(
                    "Invalid value: {}: invalid character U+{:04X} (at position {i})",
                    crate::gofmt::go_quote(manager),
                    u32::from(c)
                ),
            ));
        }
    }
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid("meta.k8s.io", kind, "", &causes)) }
}

/// A read transformed as the request's `Accept` asked (`endpoints/handlers/response.go`,
/// `doTransformObject`): a Table (rows carrying the object as `includeObject` says:
/// `PartialObjectMetadata` by default, the object, or nothing), or the object's metadata alone
/// (`PartialObjectMetadata`, `PartialObjectMetadataList`). Asking a list for
/// `PartialObjectMetadata`, or one object for the list, is a 406.
fn transform(def: &ResourceDef, q: &Query, value: Value, is_list: bool) -> Result<Value, ApiError> {
    let partial = |o: &Value, version: &str| json!({ "kind": "PartialObjectMetadata", "apiVersion": version, "metadata": o.get("metadata").cloned().unwrap_or(json!({})) });
    let items =
        || if is_list { value["items"].as_array().cloned().unwrap_or_default() } else { vec![value.clone()] };
    match &q.render {
        Render::Object => Ok(value),
        Render::Table(version) => {
            let items = items();
            let rv = if is_list {
                value["metadata"]["resourceVersion"].as_str()
            } else {
                value.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            };
            let mut table = crate::endpoints::table::table(def, &items, rv.unwrap_or(""), true);
            if is_list {
                table["metadata"] = value["metadata"].clone();
            }
            table["apiVersion"] = json!(version);
            let include = q.include_object.as_deref().unwrap_or("");
            if let Some(rows) = table["rows"].as_array_mut() {
                for (row, obj) in rows.iter_mut().zip(&items) {
                    row["object"] = match include {
                        "" | "Metadata" => partial(obj, version),
                        "Object" => obj.clone(),
                        "None" => Value::Null,
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "unrecognized includeObject value: {other:?}"
                            )));
                        }
                    };
                }
            }
            Ok(table)
        }
        Render::Partial(version) if !is_list => Ok(partial(&value, version)),
        Render::PartialList(version) if is_list => Ok(json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": version,
            "metadata": value["metadata"].clone(),
            "items": items().iter().map(|o| partial(o, version)).collect::<Vec<_>>(),
        })),
        Render::Partial(_) => Err(ApiError::not_acceptable_because(
            "you requested PartialObjectMetadata, but the requested object is a list",
        )),
        Render::PartialList(_) => Err(ApiError::not_acceptable_because(
            "you requested PartialObjectMetadataList, but the requested object is not a list",
        )),
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
    let uid = crate::object::meta_str(&deleted, "uid").to_owned();
    let mut details = json!({ "name": name, "kind": def.plural, "uid": uid });
    if !def.group.is_empty() {
        details["group"] = json!(def.group);
    }
    let mut status = crate::status::success();
    status["details"] = details;
    json_response(200, &status)
}

/// `Warning: 299 - "…"` headers, one per warning (RFC 7234, as upstream writes them).
fn with_warnings(mut r: Response<ResponseBody>, warnings: &[String]) -> Response<ResponseBody> {
    for w in warnings {
        let text = format!("299 - {}", serde_json::Value::String(w.clone()));
        if let Ok(v) = http::HeaderValue::from_str(&text) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

/// A dry-run write answers with the version actually stored (nothing new was stored).
fn keep_stored_version(shared: &Shared, def: &ResourceDef, ns: &str, name: &str, obj: &mut Value) {
    let stored = shared.store.get(def, ns, name, Subresource::Main).ok();
    let rv = stored.as_ref().map(|o| crate::object::meta_str(o, "resourceVersion").to_owned());
    let meta = crate::object::meta_mut(obj);
    match rv {
        Some(rv) => meta.insert("resourceVersion".into(), Value::String(rv)),
        None => meta.remove("resourceVersion"),
    };
}

/// How a change looks to one watch: ADDED / MODIFIED / DELETED, or nothing, taking selector
/// transitions into account (an object that stops matching is DELETED for this watch).
/// What a watch event carries.
enum EventObject {
    /// A stored object, written out as its resource presents it.
    Stored(Arc<Value>),
    /// An object made for the event, already presented.
    Made(Value),
}

impl EventObject {
    fn into_presented(self, def: &ResourceDef) -> Value {
        match self {
            Self::Stored(o) => def.present(&o),
            Self::Made(v) => v,
        }
    }
}

fn event_for(
    def: &ResourceDef,
    ns: Option<&str>,
    q: &ListQuery,
    c: &Change,
) -> Option<(&'static str, EventObject)> {
    if c.storage != def.storage {
        return None;
    }
    let obj_ns = crate::object::meta_str(&c.object, "namespace");
    if ns.is_some_and(|ns| ns != obj_ns) {
        return None;
    }
    // As upstream's cache watcher (`storage/cacher/cache_watcher.go`, `convertToWatchEvent`): an
    // object that stops matching is DELETED with its *previous* content, at the change's version.
    let deleted = c.kind == ChangeType::Deleted;
    let now = !deleted && q.matches(&c.object);
    let before = if deleted { q.matches(&c.object) } else { c.old.as_ref().is_some_and(|o| q.matches(o)) };
    let stored = || EventObject::Stored(Arc::clone(&c.object));
    match (before, now) {
        (false, true) => Some(("ADDED", stored())),
        (true, true) => Some(("MODIFIED", stored())),
        (true, false) if deleted => Some(("DELETED", stored())),
        (true, false) => {
            let mut old = def.present(c.old.as_deref()?);
            crate::object::meta_mut(&mut old).insert("resourceVersion".into(), json!(c.rv.to_string()));
            Some(("DELETED", EventObject::Made(old)))
        }
        (false, false) => None,
    }
}

/// One line of a watch stream: `type` first, then `object`, as the API server writes them.
fn frame_with(kind: &str, write_object: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let mut line = Vec::with_capacity(1024);
    line.extend_from_slice(b"{\"type\":");
    // A `&str` always serialises.
    let _ = serde_json::to_writer(&mut line, kind);
    line.extend_from_slice(b",\"object\":");
    write_object(&mut line);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn frame(kind: &str, object: &Value) -> Bytes {
    frame_with(kind, |out| {
        let _ = serde_json::to_writer(out, object);
    })
}

/// A watch asking for its initial events (a streaming list), checked as the API server checks
/// it (`ValidateListOptions`), or answered as a server without the feature would (see
/// [`StreamingLists`](crate::StreamingLists)).
fn streaming_list_allowed(how: crate::StreamingLists, q: &mut Query) -> Result<(), ApiError> {
    let forbid = |field: &str, why: &str| {
        ApiError::invalid("meta.k8s.io", "ListOptions", "", &[(field.to_owned(), why.to_owned())])
    };
    match how {
        crate::StreamingLists::Ignored => {
            q.send_initial_events = false;
            Ok(())
        }
        crate::StreamingLists::Rejected => Err(forbid(
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        )),
        crate::StreamingLists::Served if !q.allow_bookmarks => Err(forbid(
            "allowWatchBookmarks",
            "Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is set",
        )),
        crate::StreamingLists::Served if q.list.resource_version_match.as_deref() != Some("NotOlderThan") => {
            Err(forbid(
                "resourceVersionMatch",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ))
        }
        crate::StreamingLists::Served => Ok(()),
    }
}

fn bookmark(def: &ResourceDef, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if initial_end {
        meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    frame("BOOKMARK", &json!({ "kind": def.kind, "apiVersion": def.api_version(), "metadata": meta }))
}

fn watch(
    shared: &Arc<Shared>,
    def: Arc<ResourceDef>,
    ns: Option<String>,
    q: Query,
) -> Result<Response<ResponseBody>, ApiError> {
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    if shared.faults.take_forced_expiry() {
        let e = ApiError::expired("too old resource version: forced by the sandbox's fault injection");
        let _ = tx.try_send(frame("ERROR", &e.to_status()));
        return Ok(stream_response(rx));
    }
    let start = match shared.store.watch(&def, ns.as_deref(), &q.list, q.send_initial_events) {
        Ok(s) => s,
        Err(e) if e.code == 410 => {
            // The API server answers an expired watch with 200 and one ERROR event.
            let _ = tx.try_send(frame("ERROR", &e.to_status()));
            return Ok(stream_response(rx));
        }
        Err(e) => return Err(e),
    };
    let shared = Arc::clone(shared);
    let cut_seen = shared.faults.cut_generation();
    let bookmark_every = shared.bookmark_interval;
    tokio::spawn(async move {
        let mut feed = start.feed;
        // Every initial event is at or below the store's version when the watch began.
        let mut rv = start.rv;
        let mut headers = true;
        // Tables carry their column definitions in the first event only, as the API server's do.
        let mut render = |kind: &str, obj: EventObject| {
            if let Render::Partial(version) | Render::PartialList(version) = q.render {
                let obj = obj.into_presented(&def);
                frame(
                    kind,
                    &json!({ "kind": "PartialObjectMetadata", "apiVersion": version, "metadata": obj["metadata"] }),
                )
            } else if q.as_table {
                let obj = obj.into_presented(&def);
                let rv = crate::object::meta_str(&obj, "resourceVersion").to_owned();
                let mut t = crate::endpoints::table::table(&def, &[obj], &rv, headers);
                if let Render::Table(version) = q.render {
                    t["apiVersion"] = json!(version);
                }
                headers = false;
                frame(kind, &t)
            } else {
                match obj {
                    EventObject::Stored(o) => frame_with(kind, |out| def.write_presented(&o, out)),
                    EventObject::Made(v) => frame(kind, &v),
                }
            }
        };
        for retained in &start.initial {
            let c = retained.thaw(!q.list.selects_all());
            if let Some((kind, obj)) = event_for(&def, ns.as_deref(), &q.list, &c)
                && tx.send(render(kind, obj)).await.is_err()
            {
                return;
            }
        }
        if start.initial_events_end && tx.send(bookmark(&def, rv, true)).await.is_err() {
            return;
        }
        let timeout = tokio::time::sleep(q.timeout.unwrap_or(Duration::from_secs(365 * 24 * 3600)));
        tokio::pin!(timeout);
        let mut ticks = tokio::time::interval(bookmark_every);
        ticks.tick().await;
        loop {
            tokio::select! {
                // A cut comes first: nothing committed after `cut_watches` reaches this stream.
                biased;
                () = shared.faults.cut_after(cut_seen) => return,
                change = feed.recv() => match change {
                    Ok(c) if c.rv <= rv => {}
                    // The CRD defining this resource is gone: so is the resource, and the stream
                    // ends, as upstream's watches end when the CRD's storage is torn down.
                    Ok(c) if c.kind == ChangeType::Deleted && ends_resource(&def, &c) => return,
                    Ok(c) => {
                        shared.faults.watch_events_flow(def.plural).await;
                        rv = c.rv;
                        if let Some((kind, obj)) = event_for(&def, ns.as_deref(), &q.list, &c)
                            && tx.send(render(kind, obj)).await.is_err()
                        {
                            return;
                        }
                    }
                    // Too slow to keep up, or the store is gone: end the stream; the client
                    // resumes from the last version it saw, as with a real API server.
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
                },
                _ = ticks.tick(), if q.allow_bookmarks => {
                    shared.faults.watch_events_flow(def.plural).await;
                    if tx.send(bookmark(&def, rv, false)).await.is_err() {
                        return;
                    }
                }
                () = &mut timeout => return,
                () = tx.closed() => return,
            }
        }
    });
    Ok(stream_response(rx))
}

/// Whether `c` removes the CRD that defines `def`.
fn ends_resource(def: &ResourceDef, c: &Change) -> bool {
    def.custom().is_some()
        && c.storage == crate::resource::crds().storage
        && crate::object::meta_str(&c.object, "name") == def.storage
}

fn stream_response(rx: mpsc::Receiver<Bytes>) -> Response<ResponseBody> {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(StreamBody::new(stream).boxed_unsync())
        .expect("valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_syntax_errors_are_go_yamls() {
        let err = |y: &str| yaml_to_json(y.as_bytes()).unwrap_err();
        // A parser error names the line of the token it met (the end of the stream, on a new line).
        assert_eq!(err("metadata: [name: obj"), "yaml: line 1: did not find expected ',' or ']'");
        // A scanner error on the first line names none; on a later line, its own.
        assert_eq!(err("a: b: c"), "yaml: mapping values are not allowed in this context");
        assert_eq!(err("x: 1\na: b: c"), "yaml: line 2: mapping values are not allowed in this context");
        assert_eq!(err("k: \"open"), "yaml: found unexpected end of stream");
        // Only the first document is read, as go-yaml reads it.
        assert_eq!(yaml_to_json(b"a: 1\n---\nb: [").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn paths() {
        let store = Store::new(crate::StoreConfig::default());
        let parse_target = |p: &str| super::parse_target(&store, p);
        let t = parse_target("/api/v1/namespaces/default/configmaps/web").unwrap();
        assert_eq!(
            (t.def.plural, t.namespace.as_deref(), t.name.as_deref()),
            ("configmaps", Some("default"), Some("web"))
        );
        let t = parse_target("/apis/apps/v1/namespaces/default/deployments/web/scale").unwrap();
        assert_eq!(t.sub, Subresource::Scale);
        let t = parse_target("/api/v1/namespaces/kube-system").unwrap();
        assert_eq!((t.def.plural, t.name.as_deref()), ("namespaces", Some("kube-system")));
        let t = parse_target("/apis/apps/v1/deployments").unwrap();
        assert!(t.namespace.is_none() && t.name.is_none());
        for bad in [
            "/api/v1/widgets",
            "/apis/apps/v2/deployments",
            "/healthz",
            "/api/v1/namespaces/default/configmaps/web/scale",
            "/api/v1/configmaps/web",
        ] {
            assert_eq!(parse_target(bad).unwrap_err().code, 404, "{bad}");
        }
    }
}
