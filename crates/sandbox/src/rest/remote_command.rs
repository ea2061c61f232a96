//! `pods/exec` and `pods/attach` once upgraded: the remote command protocol, over a WebSocket
//! (channels in one connection; an empty frame on the first of stdout, stderr, the error
//! channel tells the client the streams are open) or over SPDY/3.1 (a stream per channel, which
//! the client opens and names by its `streamType` header, the server waiting for all it asked
//! for). Either way the server feeds stdin and terminal sizes to the process, sends its output as
//! it comes, and at its end writes the status on the error channel — a `Status` as JSON from v4
//! on (`NonZeroExitCode` with the code as the `ExitCode` cause), the failure's text before —
//! then ends the streams and waits for the client to close.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::upgrade::OnUpgrade;
use serde_json::Value;
use tokio::sync::mpsc;

use super::spdy::{self, Frame as SpdyFrame};
use super::websocket::{self, Frame, Protocol};
use crate::SandboxState;
use crate::container_runtime::Container;
use crate::process::{Output, Process, Stdin, TerminalSize};
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::terminal::{self, LineDiscipline};

/// How long the server waits for the client to close once it has sent the status.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// The channels of the remote command protocol.
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;

/// `PodExecOptions` / `PodAttachOptions`, from the query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Options {
    pub(super) container: Option<String>,
    /// Empty for an attach.
    pub(super) command: Vec<String>,
    pub(super) stdin: bool,
    pub(super) stdout: bool,
    pub(super) stderr: bool,
    pub(super) tty: bool,
    exec: bool,
}

impl Options {
    /// Reads the query as the parameter codec does: a bool is true unless `false` or `0`.
    pub(super) fn parse(query: Option<&str>, exec: bool) -> Result<Self, ApiError> {
        let mut o = Self { exec, ..Self::default() };
        let truth = |v: &str| !(v == "0" || v.eq_ignore_ascii_case("false"));
        let mut seen = std::collections::HashSet::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            // A repeated scalar takes its first value.
            let first = seen.insert(k.clone().into_owned());
            match k.as_ref() {
                "command" if exec => o.command.push(v.into_owned()),
                "container" if first => o.container = Some(v.into_owned()).filter(|c| !c.is_empty()),
                "stdin" if first => o.stdin = truth(&v),
                "stdout" if first => o.stdout = truth(&v),
                "stderr" if first => o.stderr = truth(&v),
                "tty" if first => o.tty = truth(&v),
                _ => {}
            }
        }
        Ok(o)
    }

    /// The kubelet's own check of the streams asked (with a terminal, stderr is stdout's).
    pub(super) fn check(&self) -> Result<(), ApiError> {
        let streams = self.stdin || self.stdout || (self.stderr && !self.tty);
        if !streams {
            return Err(ApiError::bad_request("you must specify at least 1 of stdin, stdout, stderr"));
        }
        Ok(())
    }
}

/// What a session runs in: the pod (as read, with its resource) and the container.
pub(super) struct Target {
    pub(super) def: Arc<ResourceDef>,
    pub(super) pod: Value,
    pub(super) container: Container,
}

/// The connection a session speaks over: a WebSocket's channels, or the SPDY streams the client
/// opened, one per channel.
enum Wire {
    WebSocket {
        writer: websocket::Writer,
        reader: websocket::Reader,
    },
    /// `stdin_ended`: stdin's last data came with `FIN`; its end is the next input.
    Spdy {
        writer: Box<spdy::Writer>,
        reader: Box<spdy::Reader>,
        streams: Streams,
        stdin_ended: bool,
    },
}

/// The SPDY streams of a session, by channel, as the client's `streamType` headers name them.
#[derive(Debug, Default, Clone, Copy)]
struct Streams([Option<u32>; 5]);

impl Streams {
    fn channel(kind: &str) -> Option<u8> {
        Some(match kind {
            "stdin" => STDIN,
            "stdout" => STDOUT,
            "stderr" => STDERR,
            "error" => ERROR,
            "resize" => RESIZE,
            _ => return None,
        })
    }

    fn id(&self, channel: u8) -> Option<u32> {
        self.0.get(usize::from(channel)).copied().flatten()
    }

    fn of(&self, id: u32) -> Option<u8> {
        (0u8..5).find(|c| self.id(*c) == Some(id))
    }
}

/// What the client sent.
enum Input {
    Stdin(Bytes),
    StdinEnd,
    Resize(Bytes),
    /// A SPDY control frame to answer: a ping, or a stream the session refuses.
    Answer(SpdyAnswer),
    Gone,
    Nothing,
}

/// This side's answer to a SPDY control frame. It is written by the session loop, not while
/// reading: a read can be cancelled by output winning the loop's race, and a frame cut off
/// half written would corrupt the connection.
enum SpdyAnswer {
    Pong(u32),
    Reset(u32),
}

impl Wire {
    /// The client's next input.
    async fn next(&mut self) -> Input {
        match self {
            Self::WebSocket { reader, .. } => match reader.next().await {
                Frame::Data(STDIN, bytes) => Input::Stdin(bytes),
                Frame::Data(RESIZE, bytes) => Input::Resize(bytes),
                Frame::CloseChannel(STDIN) => Input::StdinEnd,
                Frame::Data(..) | Frame::CloseChannel(_) => Input::Nothing,
                Frame::Closed => Input::Gone,
            },
            Self::Spdy { stdin_ended, .. } if *stdin_ended => {
                *stdin_ended = false;
                Input::StdinEnd
            }
            Self::Spdy { reader, streams, stdin_ended, .. } => match reader.next().await {
                SpdyFrame::Data { id, bytes, fin } => match streams.of(id) {
                    Some(STDIN) if fin && bytes.is_empty() => Input::StdinEnd,
                    Some(STDIN) => {
                        *stdin_ended = fin;
                        Input::Stdin(bytes)
                    }
                    Some(RESIZE) => Input::Resize(bytes),
                    _ => Input::Nothing,
                },
                SpdyFrame::Reset(id) if streams.of(id) == Some(STDIN) => Input::StdinEnd,
                SpdyFrame::Ping(ping) => Input::Answer(SpdyAnswer::Pong(ping)),
                SpdyFrame::SynStream { id, .. } => Input::Answer(SpdyAnswer::Reset(id)),
                SpdyFrame::Reset(_) | SpdyFrame::Other => Input::Nothing,
                SpdyFrame::Closed => Input::Gone,
            },
        }
    }

    /// Answers a SPDY control frame; false when the client has gone.
    async fn answer(&mut self, answer: SpdyAnswer) -> bool {
        let Self::Spdy { writer, .. } = self else { return true };
        match answer {
            SpdyAnswer::Pong(ping) => writer.pong(ping).await,
            SpdyAnswer::Reset(id) => writer.reset(id).await,
        }
    }

    /// Sends `bytes` on `channel`; false when the client has gone.
    async fn send(&mut self, channel: u8, bytes: &[u8]) -> bool {
        match self {
            Self::WebSocket { writer, .. } => writer.send(channel, bytes).await,
            Self::Spdy { writer, streams, .. } => match streams.id(channel) {
                Some(id) => writer.data(id, bytes, false).await,
                None => true,
            },
        }
    }

    /// Ends the session with `status` on the error channel (nothing when empty), and waits a
    /// while for the client to close.
    async fn finish(self, status: &str) {
        match self {
            Self::WebSocket { mut writer, mut reader } => {
                if !status.is_empty() {
                    writer.send(ERROR, status.as_bytes()).await;
                }
                writer.close().await;
                let _ =
                    tokio::time::timeout(CLOSE_WAIT, async { while reader.next().await != Frame::Closed {} })
                        .await;
            }
            Self::Spdy { mut writer, mut reader, streams, .. } => {
                // Each output stream ends, then the status ends the error stream.
                for channel in [STDOUT, STDERR] {
                    if let Some(id) = streams.id(channel) {
                        writer.data(id, &[], true).await;
                    }
                }
                if let Some(id) = streams.id(ERROR) {
                    writer.data(id, status.as_bytes(), true).await;
                }
                let _ = tokio::time::timeout(CLOSE_WAIT, async {
                    while reader.next().await != SpdyFrame::Closed {}
                })
                .await;
                writer.shutdown().await;
            }
        }
    }
}

/// Opens a session's SPDY connection and waits for the streams the options ask for (stdin,
/// stdout, stderr without a terminal, the error stream, and from v3 on the resize stream with
/// one), replying to each, as the kubelet's `waitForStreams` does.
async fn spdy_streams(on: OnUpgrade, opts: &Options, version: u8) -> Option<Wire> {
    let (mut reader, mut writer) = spdy::open(on).await?;
    let mut streams = Streams::default();
    let mut wanted = vec![ERROR];
    wanted.extend(opts.stdin.then_some(STDIN));
    wanted.extend(opts.stdout.then_some(STDOUT));
    wanted.extend((opts.stderr && !opts.tty).then_some(STDERR));
    wanted.extend((opts.tty && version >= 3).then_some(RESIZE));
    let wait = async {
        while wanted.iter().any(|c| streams.id(*c).is_none()) {
            match reader.next().await {
                SpdyFrame::SynStream { id, headers, .. } => {
                    let kind = headers.iter().find(|(k, _)| k == "streamtype").map(|(_, v)| v.as_str());
                    match kind.and_then(Streams::channel) {
                        Some(c) if streams.id(c).is_none() => {
                            streams.0[usize::from(c)] = Some(id);
                            if !writer.reply(id).await {
                                return false;
                            }
                        }
                        _ => {
                            if !writer.reset(id).await {
                                return false;
                            }
                        }
                    }
                }
                SpdyFrame::Ping(ping) if !writer.pong(ping).await => return false,
                SpdyFrame::Closed => return false,
                _ => {}
            }
        }
        true
    };
    // The kubelet's `streamCreationTimeout`.
    match tokio::time::timeout(Duration::from_secs(30), wait).await {
        Ok(true) => Some(Wire::Spdy {
            writer: Box::new(writer),
            reader: Box::new(reader),
            streams,
            stdin_ended: false,
        }),
        _ => None,
    }
}

/// How a session is carried: a WebSocket subprotocol, or a SPDY stream protocol's version
/// (1 for `channel.k8s.io`, 4 for `v4.channel.k8s.io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Carrier {
    WebSocket(Protocol),
    Spdy(u8),
}

impl Carrier {
    /// The WebSocket protocol whose status encoding the session's is: JSON from v4 on.
    fn status_protocol(self) -> Protocol {
        match self {
            Self::WebSocket(p) => p,
            Self::Spdy(v) if v >= 4 => Protocol::V4,
            Self::Spdy(_) => Protocol::V1,
        }
    }
}

/// The SPDY stream protocols of the remote command protocol a kubelet speaks, newest first (v5
/// over SPDY is v4: its channel close is a WebSocket's).
pub(super) const SPDY_PROTOCOLS: [&str; 5] =
    ["v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"];

/// The version of a SPDY stream protocol.
pub(super) fn spdy_version(protocol: &str) -> u8 {
    protocol.strip_prefix('v').and_then(|v| v.split('.').next()).and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// Runs one exec or attach session over the upgraded connection.
pub(super) async fn session(
    shared: Arc<SandboxState>,
    target: Target,
    opts: Options,
    carrier: Carrier,
    on: OnUpgrade,
) {
    let Target { def, pod, container } = target;
    let mut wire = match carrier {
        Carrier::WebSocket(protocol) => {
            let Some((mut writer, reader)) = websocket::open(on, protocol).await else { return };
            // An empty frame on the first stream the client reads says the streams are open.
            let first = if opts.stdout {
                STDOUT
            } else if opts.stderr && !opts.tty {
                STDERR
            } else {
                ERROR
            };
            if !writer.send(first, &[]).await {
                return;
            }
            Wire::WebSocket { writer, reader }
        }
        Carrier::Spdy(version) => {
            let Some(wire) = spdy_streams(on, &opts, version).await else { return };
            wire
        }
    };
    let (mut stdin_tx, stdin) = if opts.stdin {
        let (tx, rx) = Stdin::channel();
        (Some(tx), rx)
    } else {
        (None, Stdin::closed())
    };
    let (stdout, mut out_rx) = output(opts.stdout);
    // On a terminal, what the process writes to stderr shows on the same screen.
    let (stderr, mut err_rx) = output(opts.stderr && !opts.tty);
    let stderr = if opts.tty { stdout.clone() } else { stderr };
    let (size_tx, size) = TerminalSize::channel();
    let process = Process { command: opts.command.clone(), stdin, stdout, stderr, tty: opts.tty, size };
    let run = if opts.exec {
        shared.containers.exec(&container, process)
    } else {
        super::log::attach(&shared, def, &pod, &container, process)
    };
    let mut run = tokio::spawn(run);
    let mut tty = opts.tty.then(LineDiscipline::default);
    // On a terminal, output lines end as a terminal ends them.
    let shown = |bytes: Bytes| if opts.tty { Bytes::from(terminal::output(&bytes)) } else { bytes };
    let mut client_gone = false;
    let code = loop {
        tokio::select! {
            input = wire.next(), if !client_gone => match input {
                Input::Stdin(bytes) => {
                    let Some(tx) = stdin_tx.as_ref() else { continue };
                    match tty.as_mut() {
                        Some(ld) => {
                            let typed = ld.input(&bytes);
                            if !typed.echo.is_empty() && !wire.send(STDOUT, &typed.echo).await {
                                client_gone = true;
                            }
                            for line in typed.lines {
                                let _ = tx.send(Bytes::from(line));
                            }
                            if typed.end {
                                stdin_tx = None;
                            }
                        }
                        None => {
                            let _ = tx.send(bytes);
                        }
                    }
                }
                Input::Resize(bytes) => {
                    // A SPDY resize stream carries one JSON object after another.
                    for v in serde_json::Deserializer::from_slice(&bytes).into_iter::<Value>().flatten() {
                        let dim = |k: &str| v[k].as_u64().and_then(|n| u16::try_from(n).ok()).unwrap_or(0);
                        let _ = size_tx.send((dim("Width"), dim("Height")));
                    }
                }
                Input::StdinEnd => stdin_tx = None,
                Input::Answer(answer) => {
                    if !wire.answer(answer).await {
                        client_gone = true;
                    }
                }
                Input::Nothing => {}
                Input::Gone => client_gone = true,
            },
            Some(bytes) = out_rx.recv() => {
                if !wire.send(STDOUT, &shown(bytes)).await {
                    client_gone = true;
                }
            }
            Some(bytes) = err_rx.recv() => {
                if !wire.send(STDERR, &bytes).await {
                    client_gone = true;
                }
            }
            code = &mut run => break code.unwrap_or(1),
        }
        // A client that has gone ends its process: nothing will read what it writes.
        if client_gone {
            run.abort();
            return;
        }
    };
    // What the process wrote before it ended, then its status.
    while let Some(bytes) = out_rx.recv().await {
        wire.send(STDOUT, &shown(bytes)).await;
    }
    while let Some(bytes) = err_rx.recv().await {
        wire.send(STDERR, &bytes).await;
    }
    wire.finish(&status(carrier.status_protocol(), &opts.command, code)).await;
}

/// A channel output when the stream was asked for; else one that discards.
fn output(asked: bool) -> (Output, mpsc::Receiver<Bytes>) {
    if asked {
        Output::channel()
    } else {
        let (_, rx) = mpsc::channel(1);
        (Output::null(), rx)
    }
}

/// What the error channel carries at the end: a `Status` as JSON from v4 on; before, only a
/// failure's message. The exit code's wording is the container runtime's (`error executing
/// command [sh -c exit 3], exit code 3`).
pub(super) fn status(protocol: Protocol, command: &[String], code: i32) -> String {
    if code == 0 {
        return if protocol.status_json() {
            r#"{"metadata":{},"status":"Success"}"#.to_owned()
        } else {
            String::new()
        };
    }
    let message = format!(
        "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
        command.join(" ")
    );
    if !protocol.status_json() {
        return message;
    }
    format!(
        r#"{{"metadata":{{}},"status":"Failure","message":{},"reason":"NonZeroExitCode","details":{{"causes":[{{"reason":"ExitCode","message":"{code}"}}]}}}}"#,
        serde_json::Value::String(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_as_the_parameter_codec_reads_them() {
        let o = Options::parse(Some("command=sh&command=-c&command=exit%203&stdout=true&stderr=1&stdin=false&tty=0&container=main"), true).unwrap();
        assert_eq!(o.command, ["sh", "-c", "exit 3"]);
        assert!(o.stdout && o.stderr && !o.stdin && !o.tty);
        assert_eq!(o.container.as_deref(), Some("main"));
        assert!(o.check().is_ok());
        let none = Options::parse(Some("command=ls&stderr=true&tty=true"), true).unwrap();
        assert_eq!(none.check().unwrap_err().message, "you must specify at least 1 of stdin, stdout, stderr");
        assert!(Options::parse(Some("command=ls"), false).unwrap().command.is_empty());
    }

    #[test]
    fn the_status_as_each_protocol_writes_it() {
        let cmd = ["sh".to_owned(), "-c".to_owned(), "exit 3".to_owned()];
        assert_eq!(status(Protocol::V4, &cmd, 0), r#"{"metadata":{},"status":"Success"}"#);
        assert_eq!(status(Protocol::V1, &cmd, 0), "");
        let failed: Value = serde_json::from_str(&status(Protocol::V5, &cmd, 3)).unwrap();
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"][0], serde_json::json!({"reason": "ExitCode", "message": "3"}));
        assert_eq!(
            status(Protocol::V1Base64, &cmd, 3),
            "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"
        );
    }
}
