//! What every answer is made of: JSON bodies written as Go's encoder writes them (fields in
//! [`go_order`](crate::go_order), a newline at the end), `metav1.Status`
//! errors (with `Retry-After` and the injected disconnect), `Warning` headers and watch streams.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::status::ApiError;

/// The body of every sandbox response.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// The error type bodies must convert into.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Marks a response that must not be sent: the connection is dropped instead (an injected
/// [`FaultKind::Disconnect`](crate::FaultKind::Disconnect)). The HTTP server closes the connection;
/// the in-process service answers with an error, as a broken connection would.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect;

pub(crate) fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    json_typed(code, "application/json", body)
}

/// A JSON body served under `content_type` (aggregated discovery has its own).
pub(crate) fn json_typed(code: u16, content_type: &str, body: &Value) -> Response<ResponseBody> {
    json_body(code, content_type, &crate::go_order::GoOrdered::object(body), 0)
}

/// A JSON answer written by its own serializer (a list page thawing its objects as it goes)
/// into a buffer of about `size` bytes.
pub(super) fn json_serialized(
    code: u16,
    body: &impl serde::Serialize,
    size: usize,
) -> Response<ResponseBody> {
    json_body(code, "application/json", body, size)
}

fn json_body(
    code: u16,
    content_type: &str,
    body: &impl serde::Serialize,
    size: usize,
) -> Response<ResponseBody> {
    let mut bytes = Vec::with_capacity(size + 1);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        bytes.clear();
    }
    // Go's `json.Encoder` ends each value it writes with a newline, and so does every JSON body
    // upstream sends.
    bytes.push(b'\n');
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(bytes)).boxed_unsync())
        .expect("valid response")
}

/// What upstream's panic filter (`WithPanicRecovery`) answers a request that panicked: Go's
/// `http.Error`, a 500 in plain text.
pub(super) fn panicked() -> Response<ResponseBody> {
    Response::builder()
        .status(StatusCode::INTERNAL_SERVER_ERROR)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .body(
            Full::new(Bytes::from_static(
                b"This request caused apiserver to panic. Look in the logs for details.\n",
            ))
            .boxed_unsync(),
        )
        .expect("valid response")
}

/// 204 No Content.
pub(super) fn no_content() -> Response<ResponseBody> {
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .body(Full::new(Bytes::new()).boxed_unsync())
        .expect("valid response")
}

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

/// `Warning: 299 - "…"` headers, one per warning (RFC 7234, as upstream writes them).
pub(super) fn with_warnings(mut r: Response<ResponseBody>, warnings: &[String]) -> Response<ResponseBody> {
    for w in warnings {
        let text = format!("299 - {}", serde_json::Value::String(w.clone()));
        if let Ok(v) = http::HeaderValue::from_str(&text) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

/// A protobuf body.
pub(super) fn protobuf_response(code: u16, bytes: Vec<u8>) -> Response<ResponseBody> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, crate::rest::protobuf::CONTENT_TYPE)
        .body(Full::new(Bytes::from(bytes)).boxed_unsync())
        .expect("valid response")
}

/// A JSON answer written again in protobuf, when its object is a built-in kind (or metadata, or
/// a Status); anything else — text, a stream, a kind protobuf does not carry — is left as it is.
pub(super) async fn as_protobuf(r: Response<ResponseBody>) -> Response<ResponseBody> {
    let is_json = r.headers().get(header::CONTENT_TYPE).is_some_and(|v| v == "application/json");
    if !is_json || r.headers().contains_key(header::TRANSFER_ENCODING) {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|v| crate::rest::protobuf::from_json(&v).map_err(|e| e.to_string()));
    let body = match encoded {
        Ok(pb) => {
            let content_type = http::HeaderValue::from_static(crate::rest::protobuf::CONTENT_TYPE);
            parts.headers.insert(header::CONTENT_TYPE, content_type);
            Bytes::from(pb)
        }
        Err(why) => {
            tracing::debug!(%why, "an answer stays JSON");
            bytes
        }
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(body).boxed_unsync())
}

/// A chunked stream of the frames `rx` yields (a watch), of `content_type`.
pub(super) fn stream_response(
    rx: mpsc::Receiver<Bytes>,
    content_type: &'static str,
) -> Response<ResponseBody> {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(StreamBody::new(stream).boxed_unsync())
        .expect("valid response")
}
