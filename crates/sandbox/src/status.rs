//! API errors as `metav1.Status` objects, with the codes and reasons the real API server uses, so
//! client-go's `IsNotFound` / `IsConflict` / `IsAlreadyExists` and kube's `ErrorResponse` work.
//! Validation's field errors ([`FieldError`]) become the causes of a 422 ([`ApiError::invalid`]).

use serde_json::{Value, json};

/// A field error (upstream's `field.Error`): `(path, message)`, e.g.
/// `("spec.replicas", "must be greater than or equal to 0")`. A 422's causes are a list of them
/// ([`ApiError::invalid`]).
pub type FieldError = (String, String);

/// An error the API answers with: an HTTP code, a `reason`, and a message naming what was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The `metav1.StatusReason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details` of the Status (name, group, kind, causes), when known.
    pub details: Option<Value>,
    /// `metadata.continue` of the Status: the token a 410 for an expired continue token gives
    /// to list the rest at the latest version.
    pub continue_token: Option<String>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None, continue_token: None }
    }

    /// The error with `token` as its Status's `metadata.continue`.
    #[must_use]
    pub fn with_continue(mut self, token: String) -> Self {
        self.continue_token = Some(token);
        self
    }

    /// Adds the object's name, group and kind to the details; `StatusDetails` leaves empty strings
    /// out (`omitempty`), so a core kind has no group.
    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        let details = self.details.get_or_insert_with(|| json!({}));
        for (k, v) in [("name", name), ("group", group), ("kind", kind)] {
            if !v.is_empty() {
                details[k] = json!(v);
            }
        }
        self
    }

    /// An injected dropped connection (see [`crate::FaultKind::Disconnect`]).
    pub(crate) fn dropped(reason: &'static str) -> Self {
        Self::new(503, reason, "injected fault: connection dropped")
    }

    /// 404: `configmaps "web" not found`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{} \"{name}\" not found", qualified(group, plural)))
            .with_details(group, plural, name)
    }

    /// 409: the object already exists.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", qualified(group, plural)))
            .with_details(group, plural, name)
    }

    /// 409: a stale resourceVersion or failed precondition.
    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", qualified(group, plural)),
        )
        .with_details(group, plural, name)
    }

    /// 422: the object is invalid; `causes` are `(field, message)` pairs.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[(String, String)]) -> Self {
        // The causes keep every error; the message tells a repeated one once.
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {}", qualified(group, kind), aggregate(causes)),
        );
        e.details = Some(json!({
            "causes": causes.iter().map(|(f, m)| json!({"reason": cause_reason(m), "message": m, "field": f})).collect::<Vec<_>>(),
        }));
        e.with_details(group, kind, name)
    }

    /// 422 as upstream's `NewGenericServerResponse` words it: what the patch handler answers for
    /// a JSON patch that does not apply (`endpoints/handlers/patch.go`, `applyJSPatch`). Not an
    /// unexpected response, so upstream keeps no cause: why it did not apply is not told.
    pub fn unprocessable() -> Self {
        let mut e =
            Self::new(422, "Invalid", "the server rejected our request due to an error in our request");
        e.details = Some(json!({}));
        e
    }

    /// 403 from the namespace lifecycle admission (`plugin/pkg/admission/namespace/lifecycle`):
    /// no new objects in a namespace being deleted; the cause says why, on `metadata.namespace`.
    pub fn namespace_terminating(group: &str, plural: &str, name: &str, ns: &str) -> Self {
        let resource = qualified(group, plural);
        let mut e = Self::new(
            403,
            "Forbidden",
            format!("{resource} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"),
        )
        .with_details(group, plural, name);
        if let Some(d) = e.details.as_mut() {
            d["causes"] = json!([{ "reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace" }]);
        }
        e
    }

    /// 400: the request itself is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401: no or wrong credentials.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 as `apierrors.NewForbidden` words it, for an admission plugin's or the authorizer's
    /// refusal: `<resource> "<name>" is forbidden: <why>`, `<resource> is forbidden: <why>` for
    /// a request that names no object, `forbidden: <why>` for one that names no resource (a
    /// path); the resource and name in the details.
    pub fn admission_forbidden(group: &str, plural: &str, name: &str, why: &str) -> Self {
        let resource = qualified(group, plural);
        let message = match (plural.is_empty(), name.is_empty()) {
            (true, _) => format!("forbidden: {why}"),
            (false, true) => format!("{resource} is forbidden: {why}"),
            (false, false) => format!("{resource} \"{name}\" is forbidden: {why}"),
        };
        Self::new(403, "Forbidden", message).with_details(group, plural, name)
    }

    /// An admission policy's denial (upstream's `admission.NewForbidden`, its reason and code
    /// then set from the validation's `reason`): `<resource> "<name>" is forbidden: <message>`,
    /// with the message as the one cause.
    pub(crate) fn policy_denied(group: &str, plural: &str, name: &str, message: &str, reason: &str) -> Self {
        let (code, reason) = match reason {
            "Forbidden" => (403, "Forbidden"),
            "Unauthorized" => (401, "Unauthorized"),
            "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
            _ => (422, "Invalid"),
        };
        let mut e = Self::admission_forbidden(group, plural, name, message);
        e.code = code;
        e.reason = reason;
        if let Some(d) = e.details.as_mut() {
            d["causes"] = json!([{ "message": message }]);
        }
        e
    }

    /// An admission webhook's refusal, as upstream's `ToStatusErr` makes it of the `status` the
    /// webhook answered: its code (400 when below 400), reason and details kept, its message
    /// (else its reason) after `admission webhook "<name>" denied the request`.
    pub(crate) fn webhook_denied(webhook: &str, status: Option<&Value>) -> Self {
        const REASONS: &[&str] = &[
            "Unauthorized",
            "Forbidden",
            "NotFound",
            "AlreadyExists",
            "Conflict",
            "Gone",
            "Invalid",
            "ServerTimeout",
            "Timeout",
            "TooManyRequests",
            "BadRequest",
            "MethodNotAllowed",
            "NotAcceptable",
            "RequestEntityTooLarge",
            "UnsupportedMediaType",
            "InternalError",
            "Expired",
            "ServiceUnavailable",
        ];
        let field = |k: &str| status.and_then(|s| s.get(k)).and_then(Value::as_str).unwrap_or("");
        let denied = format!("admission webhook {} denied the request", crate::go_print::go_quote(webhook));
        let message = match (field("message"), field("reason")) {
            ("", "") => format!("{denied} without explanation"),
            ("", reason) => format!("{denied}: {reason}"),
            (message, _) => format!("{denied}: {message}"),
        };
        let code =
            status.and_then(|s| s.get("code")).and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
        let reason = REASONS.iter().find(|r| **r == field("reason")).copied().unwrap_or("");
        let mut e = Self::new(code.filter(|c| *c >= 400).unwrap_or(400), reason, message);
        e.details = status.and_then(|s| s.get("details")).filter(|d| d.is_object()).cloned();
        e
    }

    /// 403: forbidden, e.g. creating in a terminating namespace.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 404 for a path that names no resource, worded as upstream's last handler
    /// (`staging/src/k8s.io/apiserver/pkg/util/notfoundhandler/not_found_handler.go`): no path,
    /// no details.
    pub fn no_route(_path: &str) -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
    }

    /// 406: no media type in `Accept` can be served (`negotiation.NewNotAcceptableError`).
    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {}", SERVED_MEDIA_TYPES.join(", ")),
        )
    }

    /// 406 with upstream's own words for a transform the object cannot take
    /// (`endpoints/handlers/response.go`, `newNotAcceptableError`).
    pub fn not_acceptable_because(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 415 for a request body that is not an object encoding (`negotiation.NewUnsupportedMediaTypeError`).
    pub fn unsupported_body(_content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                SERVED_MEDIA_TYPES.join(", ")
            ),
        )
    }

    /// 500 for an error upstream does not classify (`ErrorToAPIStatus`'s default: no reason).
    pub fn unclassified(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// 405 for a method the route does not serve (a PATCH of a collection, a list of a review, a
    /// watch of component statuses): go-restful's answer, which names neither the method nor the
    /// path.
    pub fn method_not_allowed() -> Self {
        Self::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    }

    /// 410: the resourceVersion is older than the retained history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413: the body is larger than the API server accepts.
    pub fn too_large(size: usize, limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit} bytes, got {size}"),
        )
    }

    /// 415 for a patch in a content type no route consumes: go-restful's answer, before any
    /// handler runs.
    pub fn unsupported_patch_type() -> Self {
        Self::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
    }

    /// 415: a patch content type the resource does not take; `accepted` are those it takes.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 405 for a verb a resource refuses for now, with upstream's `NewMethodNotSupported` details
    /// and `message` (a terminating CRD refusing creates).
    pub fn method_not_supported(group: &str, plural: &str, message: &str) -> Self {
        let mut e = Self::new(405, "MethodNotAllowed", message);
        e.details = Some(json!({ "group": group, "kind": plural }));
        e
    }

    /// 415 for a protobuf body the sandbox cannot read, saying what it reads instead.
    pub fn unreadable_protobuf(why: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", why)
    }

    /// 500, injected by a fault rule.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 500 for a failure inside the server, as apimachinery's `NewInternalError` words it: the
    /// error is the message's tail and the one cause.
    pub fn internal_error(err: &str) -> Self {
        let mut e = Self::new(500, "InternalError", format!("Internal error occurred: {err}"));
        e.details = Some(serde_json::json!({ "causes": [{ "message": err }] }));
        e
    }

    /// 429 with a Retry-After, injected by a fault rule.
    pub fn too_many_requests(retry_after_seconds: u64) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        );
        e.details = Some(json!({ "retryAfterSeconds": retry_after_seconds }));
        e
    }

    /// 429 from the eviction subresource: the pod's disruption budget does not allow it now
    /// (`createTooManyRequestsError` and `checkAndDecrement`), `why` as the `DisruptionBudget`
    /// cause; a Retry-After only when it is not zero.
    pub fn disruption_refused(why: String, retry_after_seconds: u64) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
        );
        let mut details = json!({ "causes": [{ "reason": "DisruptionBudget", "message": why }] });
        if retry_after_seconds > 0 {
            details["retryAfterSeconds"] = json!(retry_after_seconds);
        }
        e.details = Some(details);
        e
    }

    /// A failure answered as a bare Status with no reason, as a REST handler that returns a
    /// `metav1.Status` of its own does (the eviction of a pod under two budgets: 500).
    pub fn bare(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, "", message)
    }

    /// 503, injected by a fault rule.
    pub fn unavailable() -> Self {
        Self::new(503, "ServiceUnavailable", "the server is currently unable to handle the request")
    }

    /// 504: a resourceVersion newer than the store's, as upstream's
    /// `NewTooLargeResourceVersionError` (a Timeout that says to retry in a second, with a
    /// `ResourceVersionTooLarge` cause — what client-go's reflector retries on).
    pub fn too_large_resource_version(asked: u64, current: u64) -> Self {
        let mut e = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {asked}, current: {current}"),
        );
        e.details = Some(json!({
            "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
            "retryAfterSeconds": 1,
        }));
        e
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let Some(d) = &self.details {
            status["details"] = d.clone();
        }
        if let Some(token) = &self.continue_token {
            status["metadata"]["continue"] = json!(token);
        }
        status
    }
}

/// The `reason` of a cause, from the error type its message starts with (as `field.Error`
/// renders them: `Required value: …`, `Forbidden: …`).
fn cause_reason(message: &str) -> &'static str {
    const TYPES: [(&str, &str); 7] = [
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Not found", "FieldValueNotFound"),
    ];
    TYPES.iter().find(|(prefix, _)| message.starts_with(prefix)).map_or("FieldValueInvalid", |(_, r)| r)
}

/// The media types the API serves and reads objects in, in upstream's order.
pub const SERVED_MEDIA_TYPES: [&str; 3] =
    ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];

/// `configmaps` or `deployments.apps`, as the API server names a resource in messages.
fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() { plural.to_owned() } else { format!("{plural}.{group}") }
}

/// `field.ErrorList.ToAggregate().Error()`: each error as `<field>: <detail>`, one repeated told
/// once, one error bare, several in brackets.
#[must_use]
pub(crate) fn aggregate(errs: &[FieldError]) -> String {
    let mut list: Vec<String> = Vec::new();
    for (f, m) in errs {
        let line = format!("{f}: {m}");
        if !list.contains(&line) {
            list.push(line);
        }
    }
    match list.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A success Status, as returned by some deletes.
pub fn success() -> Value {
    json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success" })
}
