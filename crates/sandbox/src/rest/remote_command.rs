//! `pods/exec` and `pods/attach` once upgraded: the remote command protocol over a WebSocket.
//! The server opens the streams asked for (an empty frame on the first of stdout, stderr, the
//! error channel tells the client so), feeds stdin and terminal sizes to the process, sends its
//! output as it comes, and at its end writes the status on the error channel — a `Status` as
//! JSON from v4 on (`NonZeroExitCode` with the code as the `ExitCode` cause), the failure's
//! text before — then closes and waits for the client to close.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::upgrade::OnUpgrade;
use serde_json::Value;
use tokio::sync::mpsc;

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

/// Runs one exec or attach session over the upgraded connection.
pub(super) async fn session(
    shared: Arc<SandboxState>,
    target: Target,
    opts: Options,
    protocol: Protocol,
    on: OnUpgrade,
) {
    let Target { def, pod, container } = target;
    let Some((mut writer, mut reader)) = websocket::open(on, protocol).await else { return };
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
    let (mut stdin_tx, stdin) = if opts.stdin {
        let (tx, rx) = Stdin::channel();
        (Some(tx), rx)
    } else {
        (None, Stdin::closed())
    };
    let (stdout, mut out_rx) = output(opts.stdout);
    let (stderr, mut err_rx) = output(opts.stderr && !opts.tty);
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
            frame = reader.next(), if !client_gone => match frame {
                Frame::Data(STDIN, bytes) => {
                    let Some(tx) = stdin_tx.as_ref() else { continue };
                    match tty.as_mut() {
                        Some(ld) => {
                            let typed = ld.input(&bytes);
                            if !typed.echo.is_empty() && !writer.send(STDOUT, &typed.echo).await {
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
                Frame::Data(RESIZE, bytes) => {
                    if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                        let dim = |k: &str| v[k].as_u64().and_then(|n| u16::try_from(n).ok()).unwrap_or(0);
                        let _ = size_tx.send((dim("Width"), dim("Height")));
                    }
                }
                Frame::CloseChannel(STDIN) => stdin_tx = None,
                Frame::Data(..) | Frame::CloseChannel(_) => {}
                Frame::Closed => client_gone = true,
            },
            Some(bytes) = out_rx.recv() => {
                if !writer.send(STDOUT, &shown(bytes)).await {
                    client_gone = true;
                }
            }
            Some(bytes) = err_rx.recv() => {
                if !writer.send(STDERR, &bytes).await {
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
        writer.send(STDOUT, &shown(bytes)).await;
    }
    while let Some(bytes) = err_rx.recv().await {
        writer.send(STDERR, &bytes).await;
    }
    let status = status(protocol, &opts.command, code);
    if !status.is_empty() {
        writer.send(ERROR, status.as_bytes()).await;
    }
    writer.close().await;
    let _ = tokio::time::timeout(CLOSE_WAIT, async { while reader.next().await != Frame::Closed {} }).await;
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
