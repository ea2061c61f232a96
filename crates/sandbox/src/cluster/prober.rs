//! The kubelet's prober: the startup, liveness and readiness probes of running containers, as
//! upstream's probe workers run them.
//!
//! Each probe of each container run has a worker. It probes at the run's start and every
//! `periodSeconds` after, skipping the ticks before `initialDelaySeconds` (and, for liveness and
//! readiness, those before the startup probe succeeded). A result counts once
//! `successThreshold` successes or `failureThreshold` failures come in a row: readiness starts
//! failed, liveness succeeded, startup unknown. A failed liveness or startup probe has the
//! kubelet kill the container; the worker then waits for the next run.
//!
//! What a probe does ([`run`]): an exec probe runs its command in the container as an exec does
//! (a fault may hang it; `timeoutSeconds` on the sandbox's clock ends it, in upstream's words).
//! An HTTP, TCP or gRPC probe connects to the port's local address when a test
//! [forwarded](crate::Sandbox::forward_port) it, and fails as upstream's prober words a refused
//! connection or a bad status. A probe of what nothing simulates — an image's own command, a
//! port with no local address — succeeds: the image's program is taken to be healthy. A
//! [`ContainerFault::ProbeFails`](crate::ContainerFault::ProbeFails) fails it whatever it is.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::container_runtime::{Container, Containers};
use crate::faults::Probe;
use crate::go_print::go_quote;
use crate::process::{Output, Process, Stdin};

/// What a probe checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Handler {
    /// `exec.command`.
    Exec(Vec<String>),
    /// `httpGet`: its scheme, port, path and (when set) host.
    Http { https: bool, port: u16, path: String, host: Option<String> },
    /// `tcpSocket`.
    Tcp { port: u16 },
    /// `grpc`.
    Grpc { port: u16 },
}

/// A probe as a container's spec declares it (defaults applied by the pod's strategy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProbeSpec {
    pub(crate) handler: Handler,
    initial_delay: SignedDuration,
    period: SignedDuration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
}

impl ProbeSpec {
    /// The container's `probe`, if it declares one with a handler the prober knows.
    pub(crate) fn of(container: &Value, probe: Probe) -> Option<Self> {
        let p = container.get(probe.field())?;
        let secs = |k: &str, default: i64| p[k].as_i64().unwrap_or(default).max(0);
        let port = |action: &Value| named_port(container, &action["port"]);
        let handler = if let Some(cmd) = p.pointer("/exec/command").and_then(Value::as_array) {
            Handler::Exec(cmd.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        } else if let Some(http) = p.get("httpGet") {
            Handler::Http {
                https: http["scheme"] == "HTTPS",
                port: port(http)?,
                path: http["path"].as_str().unwrap_or("/").to_owned(),
                host: http["host"].as_str().filter(|h| !h.is_empty()).map(str::to_owned),
            }
        } else if let Some(tcp) = p.get("tcpSocket") {
            Handler::Tcp { port: port(tcp)? }
        } else {
            Handler::Grpc { port: u16::try_from(p.pointer("/grpc/port")?.as_i64()?).ok()? }
        };
        Some(Self {
            handler,
            initial_delay: SignedDuration::from_secs(secs("initialDelaySeconds", 0)),
            period: SignedDuration::from_secs(secs("periodSeconds", 10).max(1)),
            timeout: Duration::from_secs(secs("timeoutSeconds", 1).max(1).unsigned_abs()),
            success_threshold: u32::try_from(secs("successThreshold", 1).max(1)).unwrap_or(1),
            failure_threshold: u32::try_from(secs("failureThreshold", 3).max(1)).unwrap_or(3),
        })
    }

    /// The first tick of a worker that began at `base` (a period apart from then) that is at
    /// or after `not_before` and the initial delay since the run `started`.
    fn first_tick(&self, base: Timestamp, started: Timestamp, not_before: Timestamp) -> Timestamp {
        let from = started.saturating_add(self.initial_delay).unwrap_or(started).max(not_before);
        let waited = from.duration_since(base).max(SignedDuration::ZERO);
        let period = self.period.as_nanos().max(1);
        let ticks = (waited.as_nanos() + period - 1) / period;
        let ticks = i32::try_from(ticks).unwrap_or(i32::MAX);
        base.saturating_add(self.period * ticks).unwrap_or(Timestamp::MAX)
    }
}

/// A port given by number, or by the name of one of the container's ports.
fn named_port(container: &Value, port: &Value) -> Option<u16> {
    if let Some(n) = port.as_i64() {
        return u16::try_from(n).ok();
    }
    let name = port.as_str()?;
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    let ports = container["ports"].as_array()?;
    let p = ports.iter().find(|p| p["name"] == name)?;
    u16::try_from(p["containerPort"].as_i64()?).ok()
}

/// How one probe went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    /// Failed, with the output the kubelet puts in its `Unhealthy` event.
    Failure(String),
}

/// A probe that finished, reported back to the kubelet.
#[derive(Debug, Clone)]
pub(crate) struct ProbeResult {
    pub(crate) namespace: String,
    pub(crate) pod: String,
    pub(crate) container: String,
    /// The run it probed: a result for an earlier run is dropped.
    pub(crate) id: String,
    pub(crate) probe: Probe,
    pub(crate) outcome: Outcome,
}

/// One probe of one container run.
#[derive(Debug, Clone)]
struct Worker {
    /// The run (`containerID`) it probes.
    id: String,
    spec: ProbeSpec,
    /// When the worker began: it probes then (after the initial delay) and a period apart.
    base: Timestamp,
    /// When the run started.
    started: Timestamp,
    /// When it probes next.
    next: Timestamp,
    /// A probe is running.
    in_flight: bool,
    /// The last outcome and how many times in a row it came.
    last_success: bool,
    run: u32,
    /// The result the kubelet acts on: `None` until one counts (startup's initial unknown).
    result: Option<bool>,
}

impl Worker {
    fn new(probe: Probe, id: &str, spec: ProbeSpec, started: Timestamp, now: Timestamp) -> Self {
        let result = initial(probe);
        let next = spec.first_tick(now, started, now);
        Self {
            id: id.to_owned(),
            spec,
            base: now,
            started,
            next,
            in_flight: false,
            last_success: false,
            run: 0,
            result,
        }
    }

    /// Counts an outcome, as upstream's `doProbe`: the result changes once the outcome came
    /// its threshold's times in a row. Whether the result changed.
    fn count(&mut self, success: bool) -> bool {
        if self.run > 0 && self.last_success == success {
            self.run += 1;
        } else {
            self.last_success = success;
            self.run = 1;
        }
        let threshold = if success { self.spec.success_threshold } else { self.spec.failure_threshold };
        if self.run < threshold {
            return false;
        }
        let changed = self.result != Some(success);
        self.result = Some(success);
        changed
    }
}

/// A probe's result before one counts: readiness failed, liveness succeeded, startup unknown.
fn initial(probe: Probe) -> Option<bool> {
    match probe {
        Probe::Startup => None,
        Probe::Liveness => Some(true),
        Probe::Readiness => Some(false),
    }
}

/// What the prober knows of a container run this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Verdict {
    /// Its startup probe succeeded, or it has none.
    pub(crate) started: bool,
    /// Its readiness probe's result, when it has one.
    pub(crate) ready: Option<bool>,
    /// The probe whose failure kills it, if one failed.
    pub(crate) kill: Option<Probe>,
}

/// The prober's workers, by namespace and pod, then by container and probe.
#[derive(Default)]
pub(crate) struct Prober {
    workers: HashMap<(String, String), HashMap<(String, Probe), Worker>>,
}

/// A probe to start now.
pub(crate) struct Due {
    pub(crate) probe: Probe,
    pub(crate) handler: Handler,
    pub(crate) timeout: Duration,
}

impl Prober {
    /// Counts a finished probe. The failure's output when it failed (the kubelet records it),
    /// and whether the result changed.
    pub(crate) fn record(&mut self, r: &ProbeResult) -> Option<(Option<String>, bool)> {
        let pod = self.workers.get_mut(&(r.namespace.clone(), r.pod.clone()))?;
        let w = pod.get_mut(&(r.container.clone(), r.probe)).filter(|w| w.id == r.id)?;
        w.in_flight = false;
        let (success, output) = match &r.outcome {
            Outcome::Success => (true, None),
            Outcome::Failure(output) => (false, Some(output.clone())),
        };
        let changed = w.count(success);
        Some((output, changed))
    }

    /// Looks at run `id` of `container` (its spec `spec`, running since `started`): the
    /// probes due now (each marked running) and the time its next one is due. Workers of
    /// earlier runs are replaced.
    pub(crate) fn look(
        &mut self,
        (ns, pod, container): (&str, &str, &str),
        spec: &Value,
        id: &str,
        started: Timestamp,
        now: Timestamp,
    ) -> (Verdict, Vec<Due>, Option<Timestamp>) {
        let mut due = Vec::new();
        let mut next: Option<Timestamp> = None;
        let mut verdict = Verdict { started: true, ready: None, kill: None };
        for probe in [Probe::Startup, Probe::Liveness, Probe::Readiness] {
            let key = (container.to_owned(), probe);
            let Some(probe_spec) = ProbeSpec::of(spec, probe) else {
                if let Some(workers) = self.workers.get_mut(&(ns.to_owned(), pod.to_owned())) {
                    workers.remove(&key);
                }
                continue;
            };
            let workers = self.workers.entry((ns.to_owned(), pod.to_owned())).or_default();
            let w = workers
                .entry(key)
                .or_insert_with(|| Worker::new(probe, id, probe_spec.clone(), started, now));
            if w.id != id {
                *w = Worker::new(probe, id, probe_spec, started, now);
            }
            match probe {
                Probe::Startup => verdict.started = w.result == Some(true),
                Probe::Readiness => verdict.ready = Some(w.result == Some(true)),
                Probe::Liveness => {}
            }
            if w.result == Some(false) && probe != Probe::Readiness {
                // On hold until the next run, as upstream's worker after a kill.
                verdict.kill = verdict.kill.or(Some(probe));
                continue;
            }
            // The startup probe stops once it succeeded; the others wait for it.
            let active = match probe {
                Probe::Startup => w.result.is_none(),
                _ => verdict.started,
            };
            if !active {
                continue;
            }
            if w.next <= now {
                if !w.in_flight {
                    w.in_flight = true;
                    due.push(Due { probe, handler: w.spec.handler.clone(), timeout: w.spec.timeout });
                }
                let after_now = now.saturating_add(SignedDuration::from_nanos(1)).unwrap_or(now);
                w.next = w.spec.first_tick(w.base, w.started, after_now);
            }
            next = Some(next.map_or(w.next, |n| n.min(w.next)));
        }
        (verdict, due, next)
    }

    /// What the workers of run `id` of `container` (its spec `spec`) say, without probing: a
    /// probe without a worker for the run yet has its initial result.
    pub(crate) fn verdict(
        &self,
        (ns, pod, container): (&str, &str, &str),
        spec: &Value,
        id: &str,
    ) -> Verdict {
        let workers = self.workers.get(&(ns.to_owned(), pod.to_owned()));
        let result = |probe: Probe| {
            let key = (container.to_owned(), probe);
            let worker = workers.and_then(|w| w.get(&key)).filter(|w| w.id == id);
            spec.get(probe.field()).is_some().then(|| worker.map_or(initial(probe), |w| w.result))
        };
        let started = result(Probe::Startup).is_none_or(|r| r == Some(true));
        let ready = result(Probe::Readiness).map(|r| r == Some(true));
        let kill = [Probe::Startup, Probe::Liveness].into_iter().find(|p| result(*p) == Some(Some(false)));
        Verdict { started, ready, kill }
    }

    /// Forgets the workers of `pod` whose runs are not among `running` (container, id).
    pub(crate) fn retain(&mut self, ns: &str, pod: &str, running: &[(&str, &str)]) {
        let key = (ns.to_owned(), pod.to_owned());
        let Some(workers) = self.workers.get_mut(&key) else { return };
        workers.retain(|(c, _), w| running.iter().any(|(rc, id)| rc == c && *id == w.id));
        if workers.is_empty() {
            self.workers.remove(&key);
        }
    }

    /// Forgets every worker of `pod`.
    pub(crate) fn forget(&mut self, ns: &str, pod: &str) {
        self.workers.remove(&(ns.to_owned(), pod.to_owned()));
    }
}

/// The output of a probe a fault fails: what a failing probe of its kind says.
pub(crate) fn failed_by_fault(handler: &Handler, pod_ip: &str) -> Outcome {
    Outcome::Failure(match handler {
        Handler::Exec(_) => String::new(),
        Handler::Http { .. } => "HTTP probe failed with statuscode: 503".to_owned(),
        Handler::Tcp { port } => format!("dial tcp {pod_ip}:{port}: connect: connection refused"),
        Handler::Grpc { .. } => "service unhealthy (responded with \"NOT_SERVING\")".to_owned(),
    })
}

/// Runs one probe of container `c`.
pub(crate) async fn run(
    containers: Containers,
    c: Container,
    handler: Handler,
    timeout: Duration,
) -> Outcome {
    match handler {
        Handler::Exec(command) => {
            let (out, written) = Output::buffer();
            let mut process = Process::new(command.clone(), Stdin::closed(), out.clone());
            process.stderr = out;
            let Ok(running) = containers.try_exec(&c, process) else {
                // The image's own command: nothing simulates it, so it is taken to pass.
                return Outcome::Success;
            };
            tokio::select! {
                code = running => if code == 0 {
                    Outcome::Success
                } else {
                    Outcome::Failure(String::from_utf8_lossy(&written.take()).into_owned())
                },
                () = containers.clock.sleep(timeout) => {
                    Outcome::Failure(format!("command {} timed out", go_quote(&command.join(" "))))
                }
            }
        }
        Handler::Http { https, port, path, host } => {
            let Some(to) = containers.forwarded(&c.namespace, &c.pod, port) else { return Outcome::Success };
            let host = host.unwrap_or_else(|| c.pod_ip.clone());
            let url = format!("{}://{host}:{port}{path}", if https { "https" } else { "http" });
            match tokio::time::timeout(timeout, http_status(to, &host, port, &path, https)).await {
                Err(_) => Outcome::Failure(format!(
                    "Get {}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    go_quote(&url)
                )),
                Ok(Err(())) => Outcome::Failure(format!(
                    "Get {}: dial tcp {host}:{port}: connect: connection refused",
                    go_quote(&url)
                )),
                Ok(Ok(None)) => Outcome::Success,
                Ok(Ok(Some(code))) if (200..400).contains(&code) => Outcome::Success,
                Ok(Ok(Some(code))) => Outcome::Failure(format!("HTTP probe failed with statuscode: {code}")),
            }
        }
        Handler::Tcp { port } | Handler::Grpc { port } => {
            let Some(to) = containers.forwarded(&c.namespace, &c.pod, port) else { return Outcome::Success };
            match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(to)).await {
                Ok(Ok(_)) => Outcome::Success,
                Ok(Err(_)) => {
                    Outcome::Failure(format!("dial tcp {}:{port}: connect: connection refused", c.pod_ip))
                }
                Err(_) => Outcome::Failure(format!("dial tcp {}:{port}: i/o timeout", c.pod_ip)),
            }
        }
    }
}

/// GETs `path` from `to` as the kubelet's prober does (`User-Agent: kube-probe`): the response's
/// status code, or `None` for an HTTPS port, whose connection alone is checked. `Err` when the
/// connection is refused.
async fn http_status(
    to: SocketAddr,
    host: &str,
    port: u16,
    path: &str,
    https: bool,
) -> Result<Option<u16>, ()> {
    let mut conn = tokio::net::TcpStream::connect(to).await.map_err(drop)?;
    if https {
        return Ok(None);
    }
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: kube-probe/1.37\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    conn.write_all(request.as_bytes()).await.map_err(drop)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 8192 {
        let n = conn.read(&mut buf).await.map_err(drop)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    // `HTTP/1.1 200 OK`: the second word.
    let line = String::from_utf8_lossy(&head);
    let code = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or(())?;
    Ok(Some(code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(probe: Value) -> ProbeSpec {
        let container = json!({ "name": "c", "ports": [{ "name": "http", "containerPort": 8080 }], "livenessProbe": probe });
        ProbeSpec::of(&container, Probe::Liveness).unwrap()
    }

    #[test]
    fn a_named_port_is_the_containers_port_of_that_name() {
        let s = spec(json!({ "httpGet": { "port": "http", "path": "/healthz" }, "periodSeconds": 5 }));
        assert_eq!(
            s.handler,
            Handler::Http { https: false, port: 8080, path: "/healthz".into(), host: None }
        );
        let s = spec(json!({ "tcpSocket": { "port": 9000 } }));
        assert_eq!(s.handler, Handler::Tcp { port: 9000 });
    }

    #[test]
    fn ticks_are_periods_from_the_start_after_the_initial_delay() {
        let s =
            spec(json!({ "exec": { "command": ["true"] }, "initialDelaySeconds": 7, "periodSeconds": 5 }));
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let at = |secs: i64| t0 + SignedDuration::from_secs(secs);
        assert_eq!(s.first_tick(t0, t0, t0), at(10));
        assert_eq!(s.first_tick(t0, t0, at(10)), at(10));
        assert_eq!(s.first_tick(t0, t0, at(11)), at(15));
        // A worker that began after the run started ticks from its own start.
        assert_eq!(s.first_tick(at(3), t0, at(3)), at(8));
    }

    #[test]
    fn a_result_changes_after_its_threshold_in_a_row() {
        let s = spec(json!({ "exec": { "command": ["true"] }, "failureThreshold": 3 }));
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut w = Worker::new(Probe::Liveness, "id", s, t0, t0);
        assert!(!w.count(false));
        assert!(!w.count(true), "a success in between starts the count again");
        assert!(!w.count(false));
        assert!(!w.count(false));
        assert_eq!(w.result, Some(true));
        assert!(w.count(false));
        assert_eq!(w.result, Some(false));
    }

    #[test]
    fn readiness_starts_failed_and_startup_unknown() {
        let container = json!({ "name": "c",
            "readinessProbe": { "exec": { "command": ["true"] } },
            "startupProbe": { "exec": { "command": ["true"] } } });
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut prober = Prober::default();
        let (verdict, due, next) = prober.look(("ns", "p", "c"), &container, "id", t0, t0);
        assert_eq!(verdict, Verdict { started: false, ready: Some(false), kill: None });
        // Only the startup probe runs until it succeeds.
        assert_eq!(due.iter().map(|d| d.probe).collect::<Vec<_>>(), [Probe::Startup]);
        assert_eq!(next, Some(t0 + SignedDuration::from_secs(10)));
        let result = |probe, outcome| ProbeResult {
            namespace: "ns".into(),
            pod: "p".into(),
            container: "c".into(),
            id: "id".into(),
            probe,
            outcome,
        };
        assert_eq!(prober.record(&result(Probe::Startup, Outcome::Success)), Some((None, true)));
        let (verdict, due, _) = prober.look(("ns", "p", "c"), &container, "id", t0, t0);
        assert!(verdict.started);
        assert_eq!(due.iter().map(|d| d.probe).collect::<Vec<_>>(), [Probe::Readiness]);
        // A result for another run is not counted.
        let stale = ProbeResult { id: "old".into(), ..result(Probe::Readiness, Outcome::Success) };
        assert_eq!(prober.record(&stale), None);
    }
}
