//! A connection's switch to another protocol, for the kubelet's streams: what a request asks
//! (upstream's `IsUpgradeRequest`, then WebSocket or SPDY by its `Upgrade` header), and the
//! connection's upgrade, which the HTTP server leaves in the request for the stream's handler
//! to take. The protocols themselves are [`super::websocket`]'s and [`super::spdy`]'s.

use std::sync::Arc;

use http::{HeaderMap, header};
use hyper::upgrade::OnUpgrade;
use parking_lot::Mutex;

use crate::status::ApiError;

/// The connection's upgrade, held in the request's extensions until a handler takes it.
#[derive(Clone, Default)]
pub struct Upgrade(Arc<Mutex<Option<OnUpgrade>>>);

impl Upgrade {
    /// Holds `on`, the connection's upgrade.
    pub fn new(on: OnUpgrade) -> Self {
        Self(Arc::new(Mutex::new(Some(on))))
    }
}

/// Takes the request's connection upgrade; a 400 for a request that came over no connection
/// that can switch (an in-process client).
pub(super) fn take(parts: &http::request::Parts) -> Result<OnUpgrade, ApiError> {
    parts.extensions.get::<Upgrade>().and_then(|u| u.0.lock().take()).ok_or_else(|| {
        ApiError::bad_request(
            "the connection cannot be upgraded: streams are served over the sandbox's HTTPS server (Sandbox::serve)",
        )
    })
}

/// What a request asks of its connection.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Asked {
    /// No upgrade: a plain request.
    Nothing,
    /// A WebSocket.
    WebSocket,
    /// SPDY/3.1.
    Spdy,
    /// Another protocol, by its `Upgrade` header.
    Other(String),
}

/// What `headers` ask: upstream's `IsUpgradeRequest` (a `Connection` header naming `upgrade`),
/// then the protocol its `Upgrade` header names.
pub(super) fn asked(headers: &HeaderMap) -> Asked {
    let connection_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade"))));
    if !connection_upgrade {
        return Asked::Nothing;
    }
    let upgrade = headers.get(header::UPGRADE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if upgrade.eq_ignore_ascii_case("websocket") {
        Asked::WebSocket
    } else if upgrade.eq_ignore_ascii_case("SPDY/3.1") {
        Asked::Spdy
    } else {
        Asked::Other(upgrade.to_owned())
    }
}

/// The protocols a header lists, comma-separated across its values (the WebSocket
/// subprotocols, SPDY's stream protocol versions).
pub(super) fn listed(headers: &HeaderMap, name: impl header::AsHeaderName) -> Vec<&str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A request's headers, for the upgrade's and the handshakes' tests.
    pub(in crate::rest) fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), http::HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn what_a_request_asks_of_its_connection() {
        let ws = headers(&[("connection", "keep-alive, Upgrade"), ("upgrade", "websocket")]);
        assert_eq!(asked(&ws), Asked::WebSocket);
        let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert_eq!(asked(&spdy), Asked::Spdy);
        let h2c = headers(&[("connection", "Upgrade"), ("upgrade", "h2c")]);
        assert_eq!(asked(&h2c), Asked::Other("h2c".into()));
        assert_eq!(asked(&headers(&[("upgrade", "websocket")])), Asked::Nothing);
        let listed_twice = headers(&[("x-stream-protocol-version", "v4.channel.k8s.io, v3.channel.k8s.io")]);
        assert_eq!(
            listed(&listed_twice, "x-stream-protocol-version"),
            ["v4.channel.k8s.io", "v3.channel.k8s.io"]
        );
    }
}
