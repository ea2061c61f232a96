//! The WebSocket side of the kubelet's streams: the upgrade handshake, the channel
//! subprotocols (`channel.k8s.io`, its `base64.` form, their `v4.` forms and
//! `v5.channel.k8s.io`) and their framing — each message one channel's bytes, the channel its
//! first byte (a digit before base64 text in the base64 forms).

use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use http::{HeaderMap, Response, header};
use http_body_util::{BodyExt, Empty};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::ResponseBody;
use super::upgrade;
use crate::status::ApiError;

/// A channel subprotocol, as the client and the server agreed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Protocol {
    /// `channel.k8s.io`, or no subprotocol: binary; the error channel carries the message text
    /// of a failure.
    V1,
    /// `base64.channel.k8s.io`.
    V1Base64,
    /// `v4.channel.k8s.io`: the error channel carries a `Status` as JSON.
    V4,
    /// `v4.base64.channel.k8s.io`.
    V4Base64,
    /// `v5.channel.k8s.io`: v4, and a client may close one channel (stdin) with a message on
    /// channel 255.
    V5,
}

impl Protocol {
    /// Its name, `""` for a connection that asked for none.
    pub(super) fn name(self, asked: bool) -> &'static str {
        match self {
            Self::V1 if !asked => "",
            Self::V1 => "channel.k8s.io",
            Self::V1Base64 => "base64.channel.k8s.io",
            Self::V4 => "v4.channel.k8s.io",
            Self::V4Base64 => "v4.base64.channel.k8s.io",
            Self::V5 => "v5.channel.k8s.io",
        }
    }

    fn base64(self) -> bool {
        matches!(self, Self::V1Base64 | Self::V4Base64)
    }

    /// Whether the error channel carries a JSON `Status` (v4 on) rather than text.
    pub(super) fn status_json(self) -> bool {
        matches!(self, Self::V4 | Self::V4Base64 | Self::V5)
    }

    /// The protocol named `name`, among `offered`.
    fn of(name: &str, offered: &[Self]) -> Option<Self> {
        offered.iter().copied().find(|p| p.name(true) == name)
    }
}

/// The subprotocol to speak: the first the client lists that `supported` has; the plain channel
/// protocol when it lists none; `None` when it lists only others (the kubelet then refuses the
/// handshake with a bare 403).
pub(super) fn negotiate(headers: &HeaderMap, supported: &[Protocol]) -> Option<(Protocol, bool)> {
    let listed = upgrade::listed(headers, header::SEC_WEBSOCKET_PROTOCOL);
    if listed.is_empty() {
        return supported.contains(&Protocol::V1).then_some((Protocol::V1, false));
    }
    listed.iter().find_map(|p| Protocol::of(p, supported)).map(|p| (p, true))
}

/// The 403 a handshake gets when no subprotocol fits, with no body (Go's websocket server's).
pub(super) fn refused() -> Response<ResponseBody> {
    Response::builder()
        .status(403)
        .body(Empty::new().map_err(|e| match e {}).boxed_unsync())
        .expect("valid response")
}

/// Accepts the handshake for `protocol`: the 101 answer, and the upgrade to await for the
/// socket. A handshake missing its key or of another version is a 400.
pub(super) fn accept(
    parts: &http::request::Parts,
    protocol: Protocol,
    asked_protocol: bool,
) -> Result<(Response<ResponseBody>, OnUpgrade), ApiError> {
    let headers = &parts.headers;
    let version = headers.get(header::SEC_WEBSOCKET_VERSION).and_then(|v| v.to_str().ok());
    if version != Some("13") {
        return Err(ApiError::bad_request(
            "websocket: unsupported version (Sec-WebSocket-Version must be 13)",
        ));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).and_then(|v| v.to_str().ok()) else {
        return Err(ApiError::bad_request("websocket: the request has no Sec-WebSocket-Key"));
    };
    let on = upgrade::take(parts)?;
    let mut response = Response::builder()
        .status(101)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(header::SEC_WEBSOCKET_ACCEPT, accept_key(key));
    let name = protocol.name(asked_protocol);
    if !name.is_empty() {
        response = response.header(header::SEC_WEBSOCKET_PROTOCOL, name);
    }
    let body = Empty::new().map_err(|e| match e {}).boxed_unsync();
    Ok((response.body(body).expect("valid response"), on))
}

/// RFC 6455's `Sec-WebSocket-Accept` for `key`.
fn accept_key(key: &str) -> String {
    use base64::Engine;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.trim().as_bytes());
    ctx.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(ctx.finish())
}

type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// The server's end of an upgraded connection, split: frames written, frames read.
pub(super) async fn open(on: OnUpgrade, protocol: Protocol) -> Option<(Writer, Reader)> {
    let upgraded = on.await.ok()?;
    let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
    let (sink, stream) = socket.split();
    Some((Writer { sink, protocol }, Reader { stream, protocol }))
}

/// Writes channels' bytes as frames.
pub(super) struct Writer {
    sink: SplitSink<Socket, Message>,
    protocol: Protocol,
}

impl Writer {
    /// Sends `data` on `channel`; false when the connection is gone.
    pub(super) async fn send(&mut self, channel: u8, data: &[u8]) -> bool {
        let message = if self.protocol.base64() {
            use base64::Engine;
            let text = format!(
                "{}{}",
                char::from(b'0' + channel),
                base64::engine::general_purpose::STANDARD.encode(data)
            );
            Message::text(text)
        } else {
            let mut frame = Vec::with_capacity(data.len() + 1);
            frame.push(channel);
            frame.extend_from_slice(data);
            Message::binary(frame)
        };
        self.sink.send(message).await.is_ok()
    }

    /// Sends the close frame.
    pub(super) async fn close(&mut self) {
        // A normal closure, which clients read as the end of every stream; a close without
        // a code (1005) is an error to client-go.
        let frame = tokio_tungstenite::tungstenite::protocol::CloseFrame {
            code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Normal,
            reason: "".into(),
        };
        let _ = self.sink.send(Message::Close(Some(frame))).await;
        let _ = self.sink.flush().await;
    }
}

/// What a client sent.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// Bytes on a channel.
    Data(u8, Bytes),
    /// v5's close signal: the client will send nothing more on the channel.
    CloseChannel(u8),
    /// The client closed the connection, or it broke.
    Closed,
}

/// Reads a client's frames.
pub(super) struct Reader {
    stream: SplitStream<Socket>,
    protocol: Protocol,
}

impl Reader {
    /// The next frame; frames that name no channel (empty, or undecodable base64) are skipped,
    /// as the kubelet skips them.
    pub(super) async fn next(&mut self) -> Frame {
        loop {
            let data: Bytes = match self.stream.next().await {
                Some(Ok(Message::Binary(b))) => b,
                Some(Ok(Message::Text(t))) => Bytes::copy_from_slice(t.as_bytes()),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(_)) | Err(_)) | None => return Frame::Closed,
            };
            if let Some(frame) = decode(self.protocol, &data) {
                return frame;
            }
        }
    }
}

/// One message's channel and bytes.
fn decode(protocol: Protocol, data: &[u8]) -> Option<Frame> {
    let (&first, rest) = data.split_first()?;
    if protocol == Protocol::V5 && first == 255 {
        return rest.first().map(|c| Frame::CloseChannel(*c));
    }
    if protocol.base64() {
        use base64::Engine;
        let channel = first.checked_sub(b'0')?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(rest).ok()?;
        return Some(Frame::Data(channel, Bytes::from(bytes)));
    }
    Some(Frame::Data(first, Bytes::copy_from_slice(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::upgrade::tests::headers;

    #[test]
    fn the_handshake_picks_the_clients_first_supported_protocol() {
        let all = [Protocol::V5, Protocol::V4, Protocol::V4Base64, Protocol::V1, Protocol::V1Base64];
        let h = headers(&[("sec-websocket-protocol", "v5.channel.k8s.io, v4.channel.k8s.io")]);
        assert_eq!(negotiate(&h, &all), Some((Protocol::V5, true)));
        let h = headers(&[("sec-websocket-protocol", "foo, v4.base64.channel.k8s.io")]);
        assert_eq!(negotiate(&h, &all), Some((Protocol::V4Base64, true)));
        assert_eq!(negotiate(&headers(&[]), &all), Some((Protocol::V1, false)));
        assert_eq!(negotiate(&headers(&[("sec-websocket-protocol", "foo")]), &all), None);
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn frames_decode_per_protocol() {
        assert_eq!(decode(Protocol::V4, b"\x00hi"), Some(Frame::Data(0, Bytes::from_static(b"hi"))));
        assert_eq!(decode(Protocol::V5, b"\xff\x00"), Some(Frame::CloseChannel(0)));
        assert_eq!(decode(Protocol::V4, b"\xff\x00"), Some(Frame::Data(255, Bytes::from_static(b"\x00"))));
        assert_eq!(decode(Protocol::V4Base64, b"0aGk="), Some(Frame::Data(0, Bytes::from_static(b"hi"))));
        assert_eq!(decode(Protocol::V1Base64, b"0!!"), None);
        assert_eq!(decode(Protocol::V1, b""), None);
    }
}
