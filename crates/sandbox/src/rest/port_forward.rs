//! `pods/portforward` once upgraded: the kubelet's WebSocket port-forward protocol. Each port
//! asked (`ports=8080,9090`) has a data channel (2i) and an error channel (2i+1); the server
//! first sends the port number (two bytes, little-endian) on both, then relays the data
//! channel to one connection to that port of the pod. Where the connection goes is the
//! sandbox's: a local address a test or the user mapped ([`crate::Sandbox::forward_port`]),
//! else an echo for a port a container declares; a port no container declares is refused on
//! its error channel, as a connection refused in the pod. Over SPDY (`portforward.k8s.io`, what
//! kubectl port-forward speaks) the client opens an error and a data stream per connection
//! instead, the port in their headers; the connections are the same.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use hyper::upgrade::OnUpgrade;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::spdy::{self, Frame as SpdyFrame};
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

/// What one forwarded connection sends back: bytes from the pod's port, the error that ended
/// it, or its end.
#[derive(Debug)]
enum Out {
    Data(Bytes),
    Error(String),
    End,
}

/// Runs one WebSocket port-forward session over the upgraded connection: a connection per
/// port asked, each on its pair of channels.
pub(super) async fn session(
    shared: Arc<SandboxState>,
    pod: Value,
    ports: Vec<u16>,
    protocol: Protocol,
    on: OnUpgrade,
) {
    let Some((mut writer, mut reader)) = websocket::open(on, protocol).await else { return };
    let channel = |i: usize| u8::try_from(i * 2).unwrap_or(u8::MAX - 1);
    for (i, port) in ports.iter().enumerate() {
        let bytes = port.to_le_bytes();
        if !writer.send(channel(i), &bytes).await || !writer.send(channel(i) + 1, &bytes).await {
            return;
        }
    }
    // Each port's connection writes into one queue the socket drains.
    let (out_tx, mut out_rx) = mpsc::channel::<(usize, Out)>(64);
    let mut inputs = Vec::new();
    for (i, &port) in ports.iter().enumerate() {
        let (in_tx, in_rx) = mpsc::unbounded_channel::<Bytes>();
        inputs.push(in_tx);
        tokio::spawn(connection(Arc::clone(&shared), pod.clone(), port, i, in_rx, out_tx.clone()));
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
            out = out_rx.recv() => {
                let sent = match out {
                    Some((i, Out::Data(bytes))) => writer.send(channel(i), &bytes).await,
                    Some((i, Out::Error(text))) => writer.send(channel(i) + 1, text.as_bytes()).await,
                    // A port's channels stay open until the session ends, as a kubelet's.
                    Some((_, Out::End)) => true,
                    // Every connection has ended: the session ends with them.
                    None => {
                        writer.close().await;
                        return;
                    }
                };
                if !sent {
                    return;
                }
            }
        }
    }
}

/// A SPDY connection's streams of one forwarded connection: the client opens an error stream
/// and a data stream with the same `requestID`.
#[derive(Default)]
struct Pair {
    error: Option<u32>,
    data: Option<u32>,
    input: Option<mpsc::UnboundedSender<Bytes>>,
}

/// Runs one SPDY port-forward session (`portforward.k8s.io`): each pair of streams the client
/// opens is one connection to the port its headers name.
pub(super) async fn spdy_session(shared: Arc<SandboxState>, pod: Value, on: OnUpgrade) {
    let Some((mut reader, mut writer)) = spdy::open(on).await else { return };
    let (out_tx, mut out_rx) = mpsc::channel::<(usize, Out)>(64);
    let mut pairs: Vec<Pair> = Vec::new();
    let mut requests: HashMap<String, usize> = HashMap::new();
    loop {
        tokio::select! {
            frame = reader.next() => match frame {
                SpdyFrame::SynStream { id, headers, .. } => {
                    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
                    let (kind, port) = (get("streamtype"), get("port").and_then(|p| p.parse::<u16>().ok()));
                    let (Some(kind @ ("data" | "error")), Some(port)) = (kind, port) else {
                        if !writer.reset(id).await {
                            return;
                        }
                        continue;
                    };
                    if !writer.reply(id).await {
                        return;
                    }
                    let request = get("requestid").unwrap_or("").to_owned();
                    let i = *requests.entry(request).or_insert_with(|| {
                        pairs.push(Pair::default());
                        pairs.len() - 1
                    });
                    let pair = &mut pairs[i];
                    if kind == "error" {
                        pair.error = Some(id);
                    } else {
                        pair.data = Some(id);
                        let (in_tx, in_rx) = mpsc::unbounded_channel::<Bytes>();
                        pair.input = Some(in_tx);
                        tokio::spawn(connection(Arc::clone(&shared), pod.clone(), port, i, in_rx, out_tx.clone()));
                    }
                }
                SpdyFrame::Data { id, bytes, fin } => {
                    if let Some(pair) = pairs.iter_mut().find(|p| p.data == Some(id)) {
                        if let Some(input) = &pair.input && !bytes.is_empty() {
                            let _ = input.send(bytes);
                        }
                        if fin {
                            pair.input = None;
                        }
                    }
                }
                SpdyFrame::Reset(id) => {
                    if let Some(pair) = pairs.iter_mut().find(|p| p.data == Some(id)) {
                        pair.input = None;
                    }
                }
                SpdyFrame::Ping(ping) => {
                    if !writer.pong(ping).await {
                        return;
                    }
                }
                SpdyFrame::Other => {}
                SpdyFrame::Closed => return,
            },
            Some((i, out)) = out_rx.recv() => {
                let pair = &pairs[i];
                let sent = match out {
                    Out::Data(bytes) => match pair.data {
                        Some(id) => writer.data(id, &bytes, false).await,
                        None => true,
                    },
                    Out::Error(text) => match pair.error {
                        Some(id) => writer.data(id, text.as_bytes(), false).await,
                        None => true,
                    },
                    // The kubelet closes both streams when the connection ends.
                    Out::End => {
                        let mut ok = true;
                        for id in [pair.data, pair.error].into_iter().flatten() {
                            ok = ok && writer.data(id, &[], true).await;
                        }
                        ok
                    }
                };
                if !sent {
                    return;
                }
            }
        }
    }
}

/// One connection to `port` of the pod, the `index`th of its session: what it reads from the
/// port goes to `out`, what the client sends arrives on `input`.
async fn connection(
    shared: Arc<SandboxState>,
    pod: Value,
    port: u16,
    index: usize,
    mut input: mpsc::UnboundedReceiver<Bytes>,
    out: mpsc::Sender<(usize, Out)>,
) {
    let (ns, name) = (meta_str(&pod, "namespace"), meta_str(&pod, "name"));
    let failed = |why: String| {
        format!("error forwarding port {port} to pod {name}_{ns}, uid {}: {why}", meta_str(&pod, "uid"))
    };
    if let Some(addr) = shared.containers.forwarded(ns, name, port) {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(stream) => relay(stream, index, &mut input, &out).await,
            Err(e) => {
                let _ =
                    out.send((index, Out::Error(failed(format!("failed to connect to {addr}: {e}"))))).await;
            }
        }
    } else if declared(&pod, port) {
        // The built-in answer: what is sent to the port comes back.
        while let Some(b) = input.recv().await {
            if out.send((index, Out::Data(b))).await.is_err() {
                return;
            }
        }
    } else {
        let why = format!("failed to connect to localhost:{port} inside the pod: connection refused");
        let _ = out.send((index, Out::Error(failed(why)))).await;
    }
    let _ = out.send((index, Out::End)).await;
}

/// Relays a connection to a local address until that side closes it, as the pod's socket
/// closing ends a kubelet's copy; the client finishing its writes only half-closes it.
async fn relay(
    stream: tokio::net::TcpStream,
    index: usize,
    input: &mut mpsc::UnboundedReceiver<Bytes>,
    out: &mpsc::Sender<(usize, Out)>,
) {
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
                    if out.send((index, Out::Data(Bytes::copy_from_slice(&buf[..n])))).await.is_err() {
                        break;
                    }
                }
            }
        }
    };
    tokio::pin!(from_local);
    tokio::select! {
        () = &mut from_local => {}
        () = to_local => from_local.await,
    }
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
