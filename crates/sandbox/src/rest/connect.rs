//! The `connect` verb: a pod's `exec`, `attach` and `portforward`, which the API server hands to
//! the pod's kubelet. The registry's checks come first, in its order (the options, the pod, the
//! container, the node); then the upgrade: a plain request is refused as upstream refuses it
//! (`Upgrade request required`), a WebSocket is accepted with the subprotocol negotiated, and
//! the session runs in a task of its own ([`super::remote_command`], [`super::port_forward`]).

use std::sync::Arc;

use http::Response;
use serde_json::Value;

use super::ResponseBody;
use super::remote_command::{Carrier, SPDY_PROTOCOLS};
use super::request::Request;
use super::spdy;
use super::upgrade::{self, Asked};
use super::websocket::{self, Protocol};
use crate::SandboxState;
use crate::object_meta::meta_str;
use crate::pod_log;
use crate::resource::Subresource;
use crate::status::ApiError;

/// The remote command protocols a kubelet (and, for v5, the API server) speaks.
const REMOTE_COMMAND: [Protocol; 5] =
    [Protocol::V5, Protocol::V4, Protocol::V4Base64, Protocol::V1, Protocol::V1Base64];

/// The port-forward protocols a kubelet speaks over WebSocket.
const PORT_FORWARD: [Protocol; 3] = [Protocol::V4, Protocol::V4Base64, Protocol::V1];

/// Answers a request to one of a pod's streams.
pub(super) fn connect(
    shared: &Arc<SandboxState>,
    parts: &http::request::Parts,
    req: &Request,
    stream: &'static str,
) -> Result<Response<ResponseBody>, ApiError> {
    let query = parts.uri.query();
    let pod = || shared.store.get(&req.def, req.ns(), req.name(), Subresource::Main);
    match stream {
        "portforward" => {
            let pod = pod()?;
            node(shared, &pod)?;
            if upgrade::asked(&parts.headers) == Asked::Spdy {
                let (response, on) = spdy::accept(parts, &["portforward.k8s.io"]);
                if let Some(on) = on {
                    tokio::spawn(super::port_forward::spdy_session(Arc::clone(shared), pod, on));
                }
                return Ok(response);
            }
            let Some((protocol, asked)) = websocket_upgrade(parts, &PORT_FORWARD)? else {
                return Ok(websocket::refused());
            };
            // The kubelet reads the ports, once the API server has found the pod's node.
            let ports = super::port_forward::ports(query)?;
            let (response, on) = websocket::accept(parts, protocol, asked)?;
            tokio::spawn(super::port_forward::session(Arc::clone(shared), pod, ports, protocol, on));
            Ok(response)
        }
        _ => {
            let exec = stream == "exec";
            let opts = super::remote_command::Options::parse(query, exec)?;
            let pod = pod()?;
            let container = pod_log::container_name(&pod, opts.container.as_deref())?;
            node(shared, &pod)?;
            let spdy = upgrade::asked(&parts.headers) == Asked::Spdy;
            let websocket = if spdy { None } else { websocket_upgrade(parts, &REMOTE_COMMAND)? };
            if !spdy && websocket.is_none() {
                return Ok(websocket::refused());
            }
            opts.check()?;
            // The kubelet finds no running container to connect to: its error, passed through.
            if !running(&pod, &container) {
                return Err(ApiError::unclassified(format!(
                    "container not found ({})",
                    crate::go_print::go_quote(&container)
                )));
            }
            let (response, on, carrier) = match websocket {
                Some((protocol, asked)) => {
                    let (response, on) = websocket::accept(parts, protocol, asked)?;
                    (response, Some(on), Carrier::WebSocket(protocol))
                }
                None => {
                    let (response, on) = spdy::accept(parts, &SPDY_PROTOCOLS);
                    let chosen = response
                        .headers()
                        .get("x-stream-protocol-version")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    let version = super::remote_command::spdy_version(chosen);
                    (response, on, Carrier::Spdy(version))
                }
            };
            if let Some(on) = on {
                let spec = pod_log::container(&pod, &container);
                let target =
                    super::remote_command::Target { def: Arc::clone(&req.def), pod, container: spec };
                tokio::spawn(super::remote_command::session(Arc::clone(shared), target, opts, carrier, on));
            }
            Ok(response)
        }
    }
}

/// The pod's node, which must be assigned and exist (the registry's `streamLocation`).
fn node(shared: &SandboxState, pod: &Value) -> Result<(), ApiError> {
    if super::log::assigned_node(&shared.store, pod)? {
        return Ok(());
    }
    Err(ApiError::bad_request(format!("pod {} does not have a host assigned", meta_str(pod, "name"))))
}

/// The subprotocol of a WebSocket request; `None` when the client offers only others; an error
/// for a request that does not upgrade, or upgrades to a protocol not served here.
fn websocket_upgrade(
    parts: &http::request::Parts,
    supported: &[Protocol],
) -> Result<Option<(Protocol, bool)>, ApiError> {
    let other = |p: &str| {
        ApiError::bad_request(format!(
            "unable to upgrade connection to {p:?}: the sandbox serves this stream over WebSocket ({})",
            supported.iter().map(|p| p.name(true)).collect::<Vec<_>>().join(", ")
        ))
    };
    match upgrade::asked(&parts.headers) {
        Asked::Nothing => Err(ApiError::bad_request("Upgrade request required")),
        Asked::Spdy => Err(other("SPDY/3.1")),
        Asked::Other(p) => Err(other(&p)),
        Asked::WebSocket => Ok(websocket::negotiate(&parts.headers, supported)),
    }
}

/// Whether the container (regular, init or ephemeral) is running.
fn running(pod: &Value, name: &str) -> bool {
    pod_log::status(pod, name).is_some_and(|s| s.pointer("/state/running").is_some())
}
