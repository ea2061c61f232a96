//! `pods/log`'s HTTP side: the registry's checks in its order (options, pod, container, node),
//! then the kubelet's answer as `text/plain` — whole, or followed as the container writes until
//! it exits or the pod goes. What is decided is [`crate::pod_log`]'s. An attach
//! ([`attach`]) follows the same log from the moment it connects.

use std::convert::Infallible;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::Value;
use tokio::sync::mpsc;

use super::ResponseBody;
use super::call::Call;
use super::response::no_content;
use crate::SandboxState;
use crate::container_runtime::{Container, ExecFuture};
use crate::object_meta::meta_str;
use crate::pod_log::{self, LogOptions};
use crate::process::Process;
use crate::resource::{ResourceDef, Subresource};
use crate::status::ApiError;
use crate::store::Store;

/// How often a followed log is read again when no scripted line woke it: the status changes
/// (an exit, a deletion) that end it come from the kubelet, not from a test.
const FOLLOW_POLL: Duration = Duration::from_millis(20);

/// Answers `GET pods/<name>/log`.
pub(super) fn log(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let name = c.req.name();
    let opts = LogOptions::parse(c.parts.uri.query())?;
    opts.validate(name)?;
    let pod = c.store.get(&c.req.def, c.req.ns(), name, Subresource::Main)?;
    let container = pod_log::container_name(&pod, opts.container.as_deref())?;
    // No node yet: upstream's `LogLocation` has no location, and the answer is empty.
    if !assigned_node(c.store, &pod)? {
        return Ok(no_content());
    }
    // The kubelet's own refusals come back through the API server as 400s.
    let found = pod_log::find_run(&pod, &container, opts.previous)?;
    let spec = pod_log::container(&pod, &container);
    let containers = &c.shared.containers;
    let all = pod_log::lines(containers, &pod, &spec, &found);
    let mut budget = opts.limit_bytes.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let first = pod_log::render(&all, &opts, true, containers.clock.now(), &mut budget);
    if !opts.follow || found.exit.is_some() || budget == Some(0) {
        return Ok(text(Full::new(Bytes::from(first)).boxed_unsync()));
    }
    let (tx, rx) = mpsc::channel(16);
    let followed = Followed {
        shared: Arc::downgrade(c.shared),
        def: Arc::clone(&c.req.def),
        uid: meta_str(&pod, "uid").to_owned(),
        spec,
        restart: found.restart,
        sent: all.len(),
        opts,
        budget,
    };
    tokio::spawn(followed.run(first, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    Ok(text(StreamBody::new(stream).boxed_unsync()))
}

/// What an attach to `container` shows: the lines its current run writes from now on, until
/// it exits or the pod goes. What the client types is read and dropped — the simulated
/// container's process reads no input.
/// How many times, 10 ms apart, an attach looks for the stdin of a container whose process is
/// starting.
const STDIN_WAITS: usize = 500;

pub(super) fn attach(
    shared: &Arc<SandboxState>,
    pods: Arc<ResourceDef>,
    pod: &Value,
    container: &Container,
    mut process: Process,
) -> ExecFuture {
    let restart = pod_log::current_run(pod, &container.name);
    let sent = pod_log::run_numbered(pod, &container.name, restart)
        .map_or(0, |run| pod_log::lines(&shared.containers, pod, container, &run).len());
    let followed = Followed {
        shared: Arc::downgrade(shared),
        def: pods,
        uid: meta_str(pod, "uid").to_owned(),
        spec: container.clone(),
        restart,
        sent,
        opts: LogOptions::default(),
        budget: None,
    };
    let containers = shared.containers.clone();
    let spec = container.clone();
    Box::pin(async move {
        // A container that keeps its stdin open (`stdin: true`) reads what the client sends,
        // once its process has started: a client that saw the container running may attach
        // the moment before the kubelet starts it.
        let mut stdin = None;
        if spec.stdin && containers.runs_program(&spec) {
            for _ in 0..STDIN_WAITS {
                stdin = containers.stdin_of(&spec);
                if stdin.is_some() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        let (tx, mut rx) = mpsc::channel(16);
        let follow = tokio::spawn(followed.run(Vec::new(), tx));
        let drain = async {
            while let Some(bytes) = process.stdin.read().await {
                if let Some(to) = &stdin {
                    let _ = to.send(bytes);
                }
            }
            // The client closed its stdin: with `stdinOnce`, the container's closes too (this
            // session's handle on it included).
            if stdin.take().is_some() && spec.stdin_once {
                containers.close_stdin(&spec);
            }
            std::future::pending::<()>().await;
        };
        let relay = async {
            while let Some(bytes) = rx.recv().await {
                if !process.stdout.write(bytes).await {
                    break;
                }
            }
        };
        tokio::select! {
            () = relay => {}
            () = drain => {}
        }
        follow.abort();
        0
    })
}

/// Whether the pod has a node; a node it names must exist (its connection info is read from
/// its object, so a missing one is its 404). Logs and streams locate the kubelet this way.
pub(super) fn assigned_node(store: &Store, pod: &Value) -> Result<bool, ApiError> {
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() {
        return Ok(false);
    }
    let nodes = crate::catalog::find("", "v1", "nodes").expect("nodes are built in");
    store.get(nodes, "", node, Subresource::Main).map(|_| true)
}

fn text(body: ResponseBody) -> Response<ResponseBody> {
    Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(body)
        .expect("valid response")
}

/// A log being followed: one run of one container, and what was sent of it.
struct Followed {
    shared: Weak<SandboxState>,
    def: Arc<ResourceDef>,
    uid: String,
    spec: Container,
    restart: i64,
    sent: usize,
    opts: LogOptions,
    budget: Option<usize>,
}

impl Followed {
    async fn run(mut self, first: Vec<u8>, tx: mpsc::Sender<Bytes>) {
        if !first.is_empty() && tx.send(Bytes::from(first)).await.is_err() {
            return;
        }
        loop {
            let Some(shared) = self.shared.upgrade() else { return };
            let wrote = Arc::clone(&shared.containers.wrote);
            drop(shared);
            tokio::select! {
                () = wrote.notified() => {}
                () = tokio::time::sleep(FOLLOW_POLL) => {}
                () = tx.closed() => return,
            }
            let Some((bytes, done)) = self.next() else { return };
            if !bytes.is_empty() && tx.send(Bytes::from(bytes)).await.is_err() {
                return;
            }
            if done {
                return;
            }
        }
    }

    /// The lines written since the last read, and whether the log has ended; `None` when the
    /// pod went (deleted, or another pod under its name) or the run is no longer kept.
    fn next(&mut self) -> Option<(Vec<u8>, bool)> {
        let shared = self.shared.upgrade()?;
        let pod =
            shared.store.get(&self.def, &self.spec.namespace, &self.spec.pod, Subresource::Main).ok()?;
        if meta_str(&pod, "uid") != self.uid {
            return None;
        }
        let found = pod_log::run_numbered(&pod, &self.spec.name, self.restart)?;
        let all = pod_log::lines(&shared.containers, &pod, &self.spec, &found);
        let fresh = all.get(self.sent..).unwrap_or_default();
        self.sent = all.len();
        let bytes =
            pod_log::render(fresh, &self.opts, false, shared.containers.clock.now(), &mut self.budget);
        Some((bytes, found.exit.is_some() || self.budget == Some(0)))
    }
}
