//! A process a container runs for a client: what `pods/exec` and `pods/attach` connect to. Its
//! command, its standard streams as the client's channels feed and drain them, whether it has a
//! terminal and the terminal's size. The runtime ([`crate::ContainerRuntime::exec`]) runs it;
//! the streaming session (`rest/stream.rs`) wires it to the connection.

use std::fmt;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

/// A process to run: what an exec asks for, with its streams.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use kube_sandbox::{Output, Process, Stdin};
/// let (stdout, written) = Output::buffer();
/// let mut process = Process::new(vec!["echo".into(), "hi".into()], Stdin::from_bytes("in"), stdout);
/// assert_eq!(process.stdin.read_to_end().await, b"in");
/// process.stdout.write("hi\n").await;
/// assert_eq!(written.take(), b"hi\n");
/// # }
/// ```
#[derive(Debug)]
pub struct Process {
    /// `command`, as the exec request gives it (argv; empty for an attach).
    pub command: Vec<String>,
    /// What the client sends on stdin; closed at once when the request did not ask for stdin.
    pub stdin: Stdin,
    /// Where the process writes its output; discarded when the request did not ask for it.
    pub stdout: Output,
    /// Where it writes errors; discarded when not asked for (with a terminal, stderr is stdout).
    pub stderr: Output,
    /// Whether a terminal was asked for (`tty=true`).
    pub tty: bool,
    /// The terminal's size, as the client last sent it on the resize channel.
    pub size: TerminalSize,
}

impl Process {
    /// A process running `command` with `stdin` and `stdout`, stderr discarded, no terminal.
    pub fn new(command: Vec<String>, stdin: Stdin, stdout: Output) -> Self {
        let (_, size) = TerminalSize::channel();
        Self { command, stdin, stdout, stderr: Output::null(), tty: false, size }
    }
}

/// The size of a process's terminal, as the resize channel says it (`{"Width":…,"Height":…}`).
#[derive(Debug, Clone)]
pub struct TerminalSize(watch::Receiver<(u16, u16)>);

impl TerminalSize {
    /// A size the returned sender changes; (0, 0) until it does.
    pub fn channel() -> (watch::Sender<(u16, u16)>, Self) {
        let (tx, rx) = watch::channel((0, 0));
        (tx, Self(rx))
    }

    /// The latest (width, height); (0, 0) when the client sent none.
    pub fn get(&self) -> (u16, u16) {
        *self.0.borrow()
    }
}

/// A process's standard input: the chunks the client sends, until it closes the stream.
#[derive(Debug)]
pub struct Stdin {
    rx: Option<mpsc::UnboundedReceiver<Bytes>>,
    pending: BytesMut,
}

impl Stdin {
    /// A stdin that is already at its end.
    pub fn closed() -> Self {
        Self { rx: None, pending: BytesMut::new() }
    }

    /// A stdin holding `data`, then at its end.
    pub fn from_bytes(data: impl Into<Bytes>) -> Self {
        Self { rx: None, pending: BytesMut::from(&data.into()[..]) }
    }

    /// A stdin fed by the returned sender; it ends when the sender is dropped. What the client
    /// sends is kept until the process reads it: a process that reads nothing does not hold up
    /// the connection's other channels.
    pub fn channel() -> (mpsc::UnboundedSender<Bytes>, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, Self { rx: Some(rx), pending: BytesMut::new() })
    }

    /// The next chunk, or `None` at the end.
    pub async fn read(&mut self) -> Option<Bytes> {
        if !self.pending.is_empty() {
            return Some(self.pending.split().freeze());
        }
        loop {
            let chunk = self.rx.as_mut()?.recv().await;
            match chunk {
                Some(c) if c.is_empty() => {}
                Some(c) => return Some(c),
                None => {
                    self.rx = None;
                    return None;
                }
            }
        }
    }

    /// The next line with its newline (the last may lack one), or `None` at the end.
    pub async fn read_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = self.pending.iter().position(|b| *b == b'\n') {
                return Some(self.pending.split_to(i + 1).to_vec());
            }
            let more = match self.rx.as_mut() {
                Some(rx) => rx.recv().await,
                None => None,
            };
            match more {
                Some(c) => self.pending.extend_from_slice(&c),
                None => {
                    self.rx = None;
                    return (!self.pending.is_empty()).then(|| self.pending.split().to_vec());
                }
            }
        }
    }

    /// Everything until the end.
    pub async fn read_to_end(&mut self) -> Vec<u8> {
        let mut all = Vec::new();
        while let Some(c) = self.read().await {
            all.extend_from_slice(&c);
        }
        all
    }
}

/// Where a process writes: a client's channel, a buffer, or nowhere.
#[derive(Clone, Default)]
pub struct Output(Sink);

#[derive(Clone, Default)]
enum Sink {
    #[default]
    Null,
    Channel(mpsc::Sender<Bytes>),
    Buffer(Arc<Mutex<Vec<u8>>>),
}

impl fmt::Debug for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Sink::Null => "Output(null)",
            Sink::Channel(_) => "Output(channel)",
            Sink::Buffer(_) => "Output(buffer)",
        })
    }
}

/// What an [`Output::buffer`] collected.
#[derive(Debug, Clone)]
pub struct Written(Arc<Mutex<Vec<u8>>>);

impl Written {
    /// Takes what was written so far.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.0.lock())
    }
}

impl Output {
    /// An output that discards what is written.
    pub fn null() -> Self {
        Self(Sink::Null)
    }

    /// An output whose writes the returned receiver gets, in order.
    pub fn channel() -> (Self, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(64);
        (Self(Sink::Channel(tx)), rx)
    }

    /// An output collected in memory.
    pub fn buffer() -> (Self, Written) {
        let buf = Arc::default();
        (Self(Sink::Buffer(Arc::clone(&buf))), Written(buf))
    }

    /// Writes `data`; waits while the client is behind. Returns false when the reader has gone.
    pub async fn write(&self, data: impl Into<Bytes>) -> bool {
        let data = data.into();
        if data.is_empty() {
            return true;
        }
        match &self.0 {
            Sink::Null => true,
            Sink::Channel(tx) => tx.send(data).await.is_ok(),
            Sink::Buffer(buf) => {
                buf.lock().extend_from_slice(&data);
                true
            }
        }
    }

    /// Whether what is written goes somewhere.
    pub fn is_null(&self) -> bool {
        matches!(self.0, Sink::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stdin_reads_lines_across_chunks_and_ends_when_its_sender_goes() {
        let (tx, mut stdin) = Stdin::channel();
        tx.send(Bytes::from_static(b"ab")).unwrap();
        tx.send(Bytes::from_static(b"c\nd")).unwrap();
        drop(tx);
        assert_eq!(stdin.read_line().await.unwrap(), b"abc\n");
        assert_eq!(stdin.read_line().await.unwrap(), b"d");
        assert_eq!(stdin.read_line().await, None);
        assert_eq!(stdin.read().await, None);
    }

    #[tokio::test]
    async fn a_channel_output_reports_its_reader_gone() {
        let (out, rx) = Output::channel();
        assert!(out.write("x").await);
        drop(rx);
        assert!(!out.write("y").await);
    }
}
