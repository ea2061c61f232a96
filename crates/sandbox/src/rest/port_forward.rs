//! `pods/portforward` once upgraded: the kubelet's WebSocket port-forward protocol. Each port
//! asked (`ports=8080,9090`) has a data channel (2i) and an error channel (2i+1); the server
//! first sends the port number (two bytes, little-endian) on both, then relays the data
//! channel to one connection to that port of the pod. Where the connection goes is the
//! sandbox's: a local address a test or the user mapped ([`crate::Sandbox::forward_port`]),
//! else an echo for a port a container declares; a port no container declares is refused on
//! its error channel, as a connection refused in the pod.

use std::sync::Arc;

use bytes::Bytes;
use hyper::upgrade::OnUpgrade;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::websocket::{self, Frame, Protocol};
use crate::SandboxState;
use crate::object_meta::meta_str;
use crate::status::ApiError;

/// The ports of a request (`ports`, repeated or comma-separated), as the kubelet reads them.
pub(super) fn ports(query: Option<&str>) -> Result<Vec<u16>, ApiError> {
    let mut ports = Vec::new();
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k != "ports" {
            continue;
        }
        if v.is_empty() {
            return Err(ApiError::bad_request("query parameter \"port\" cannot be empty"));
        }
        for p in v.split(',') {
            let port: u16 = p.parse().map_err(|_| {
                ApiError::bad_request(format!("unable to parse {v:?} as a port: invalid syntax"))
            })?;
            if port < 1 {
                return Err(ApiError::bad_request(format!("port {v:?} must be > 0")));
            }
            ports.push(port);
        }
    }
    if ports.is_empty() {
        return Err(ApiError::bad_request("query parameter \"port\" is required"));
    }
    Ok(ports)
}

/// Runs one port-forward session over the upgraded connection.
pub(super) async fn session(
    shared: Arc<SandboxState>,
    pod: Value,
    ports: Vec<u16>,
    protocol: Protocol,
    on: OnUpgrade,
) {
    let Some((mut writer, mut reader)) = websocket::open(on, protocol).await else { return };
    for (i, port) in ports.iter().enumerate() {
        let channel = u8::try_from(i * 2).unwrap_or(u8::MAX - 1);
        let bytes = port.to_le_bytes();
        if !writer.send(channel, &bytes).await || !writer.send(channel + 1, &bytes).await {
            return;
        }
    }
    // Each port's connection writes into one queue the socket drains.
    let (out_tx, mut out_rx) = mpsc::channel::<(u8, Bytes)>(64);
    let mut inputs = Vec::new();
    for (i, &port) in ports.iter().enumerate() {
        let channel = u8::try_from(i * 2).unwrap_or(u8::MAX - 1);
        let (in_tx, in_rx) = mpsc::unbounded_channel::<Bytes>();
        inputs.push(in_tx);
        tokio::spawn(connection(Arc::clone(&shared), pod.clone(), port, channel, in_rx, out_tx.clone()));
    }
    drop(out_tx);
    loop {
        tokio::select! {
            frame = reader.next() => match frame {
                Frame::Data(c, bytes) if c % 2 == 0 => {
                    if let Some(tx) = inputs.get(usize::from(c / 2)) {
                        let _ = tx.send(bytes);
                    }
                }
                Frame::Data(..) | Frame::CloseChannel(_) => {}
                Frame::Closed => return,
            },
            out = out_rx.recv() => match out {
                Some((c, bytes)) => {
                    if !writer.send(c, &bytes).await {
                        return;
                    }
                }
                // Every connection has ended: the session ends with them.
                None => {
                    writer.close().await;
                    return;
                }
            },
        }
    }
}

/// One connection to `port` of the pod, relayed on `channel` (its error channel next to it).
async fn connection(
    shared: Arc<SandboxState>,
    pod: Value,
    port: u16,
    channel: u8,
    mut input: mpsc::UnboundedReceiver<Bytes>,
    out: mpsc::Sender<(u8, Bytes)>,
) {
    let (ns, name) = (meta_str(&pod, "namespace"), meta_str(&pod, "name"));
    if let Some(addr) = shared.containers.forwarded(ns, name, port) {
        let stream = match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => s,
            Err(e) => {
                let message = format!(
                    "error forwarding port {port} to pod {name}_{ns}, uid {}: failed to connect to {addr}: {e}",
                    meta_str(&pod, "uid")
                );
                let _ = out.send((channel + 1, Bytes::from(message))).await;
                return;
            }
        };
        let (mut rd, mut wr) = stream.into_split();
        let to_local = async move {
            while let Some(b) = input.recv().await {
                if wr.write_all(&b).await.is_err() {
                    break;
                }
            }
            let _ = wr.shutdown().await;
        };
        let from_local = async {
            let mut buf = vec![0; 16 * 1024];
            loop {
                match rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if out.send((channel, Bytes::copy_from_slice(&buf[..n]))).await.is_err() {
                            break;
                        }
                    }
                }
            }
        };
        // The local side closing ends the connection, as the pod's socket closing ends a
        // kubelet's copy; the client finishing its writes only half-closes it.
        tokio::pin!(from_local);
        tokio::select! {
            () = &mut from_local => {}
            () = to_local => from_local.await,
        }
        return;
    }
    if declared(&pod, port) {
        // The built-in answer: what is sent to the port comes back.
        while let Some(b) = input.recv().await {
            if out.send((channel, b)).await.is_err() {
                return;
            }
        }
        return;
    }
    let message = format!(
        "error forwarding port {port} to pod {name}_{ns}, uid {}: failed to connect to localhost:{port} inside the pod: connection refused",
        meta_str(&pod, "uid")
    );
    let _ = out.send((channel + 1, Bytes::from(message))).await;
}

/// Whether a container of the pod declares `port` (`ports[].containerPort`).
fn declared(pod: &Value, port: u16) -> bool {
    pod["spec"]["containers"].as_array().into_iter().flatten().any(|c| {
        c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["containerPort"].as_u64() == Some(u64::from(port)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_as_the_kubelet_reads_them() {
        assert_eq!(ports(Some("ports=80,443&ports=8080")).unwrap(), [80, 443, 8080]);
        assert_eq!(ports(None).unwrap_err().message, "query parameter \"port\" is required");
        assert_eq!(
            ports(Some("ports=x")).unwrap_err().message,
            "unable to parse \"x\" as a port: invalid syntax"
        );
        assert_eq!(ports(Some("ports=0")).unwrap_err().message, "port \"0\" must be > 0");
    }
}
