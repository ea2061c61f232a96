//! The simulated container runtime: what a container of a simulated pod runs and writes over its
//! life. A container's life is its status (the kubelet's `containerStatuses`: started, exited
//! with a code, restarted). When its command is one the runtime or the built-in shell runs
//! (`sh -c '…'`, `sleep 30`, `echo hi`), the kubelet starts it as a process when the container
//! starts ([`Containers::start`]): its output is the container's log, and its exit is the
//! container's, with its code. Any other container runs its image's entrypoint, which nothing
//! simulates: it runs until stopped, and its log is what the runtime says of its life
//! ([`ContainerRuntime::started`], [`ContainerRuntime::exited`]).
//!
//! A test adds lines to either log ([`ContainerLog::write_line`]) and may script one
//! container's execs ([`Sandbox::container_exec`](crate::Sandbox::container_exec)); what the
//! runtime does not run, the sandbox's built-in shell does ([`ContainerRuntime::exec`]).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use jiff::Timestamp;
use parking_lot::Mutex;

use crate::clock::Clock;
use crate::faults::{ContainerFaults, Target};
use crate::go_print::go_quote;
use crate::process::{Output, Process, Stdin};

/// A container as the runtime is asked to run it: where it is and what its spec says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Container {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container's name in the pod.
    pub name: String,
    /// `image`, as the spec gives it.
    pub image: String,
    /// `command` (the image's entrypoint when empty).
    pub command: Vec<String>,
    /// `args`.
    pub args: Vec<String>,
    /// `env`: the variables given by value or from a field of the pod, in order (those from a
    /// ConfigMap, a Secret or a resource are not resolved).
    pub env: Vec<(String, String)>,
    /// The pod's IP (`status.podIP`), empty before it has one.
    pub pod_ip: String,
    /// This run's `containerID` from the pod's status: a restarted container has a new one.
    pub id: String,
    /// Which run it is: its `restartCount`.
    pub restart: i64,
    /// The pod's labels.
    pub labels: std::collections::BTreeMap<String, String>,
    /// `stdin`: its command's stdin stays open for attached clients to write to.
    pub stdin: bool,
    /// `stdinOnce`: its stdin closes when the first attached client closes its own.
    pub stdin_once: bool,
    /// `tty`: its command runs on a terminal.
    pub tty: bool,
    /// The volumes it mounts whose files the built-in shell keeps beyond a run: (mount path,
    /// the volume's key — `emptyDir/<namespace>/<pod>/<volume>` or `hostPath/<node>/<path>`).
    pub volumes: Vec<(String, String)>,
}

impl Container {
    /// Where a runtime fault may strike: this container, by its pod's namespace, name and
    /// labels.
    pub(crate) fn fault_target(&self) -> Target<'_> {
        Target { namespace: &self.namespace, pod: &self.pod, container: &self.name, labels: &self.labels }
    }

    /// What the container runs: `command` then `args`.
    #[must_use]
    pub fn argv(&self) -> Vec<String> {
        self.command.iter().chain(&self.args).cloned().collect()
    }
}

/// What an exec comes to: the process's exit code.
pub type ExecFuture = Pin<Box<dyn Future<Output = i32> + Send>>;

/// A test's own exec for one container: given the container and the process, its exit code.
pub type ExecFn = Arc<dyn Fn(&Container, Process) -> ExecFuture + Send + Sync>;

/// One run of a container: from its start to its exit, when it has exited. A restarted
/// container has had several; the kubelet keeps the current one and the one before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRun {
    /// Which run it is: 0 for the first, the container's `restartCount` for the current one.
    pub restart: i64,
    /// When it started (`startedAt`, whole seconds as the status has it).
    pub started: Timestamp,
    /// How it ended, if it has.
    pub exit: Option<Exit>,
}

/// How a run of a container ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// When (`finishedAt`).
    pub at: Timestamp,
    /// Its exit code.
    pub code: i32,
}

/// One line of a container's log and the time it was written, on the sandbox's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// When the container wrote it.
    pub time: Timestamp,
    /// The line, without its newline.
    pub text: String,
}

/// A container runtime: what a container writes as it runs. The sandbox asks it for a run's
/// log whenever a client reads `pods/log`; its answers must depend only on its arguments, so
/// the same life gives the same log on every read (and a `follow` sees only new lines).
///
/// A test may install its own ([`SandboxConfig::container_runtime`](crate::SandboxConfig::container_runtime)):
///
/// ```
/// use std::sync::Arc;
/// use kube_sandbox::{Container, ContainerRun, ContainerRuntime, Exit, SandboxConfig};
///
/// /// A runtime whose containers greet on start and say nothing when they exit.
/// #[derive(Debug)]
/// struct Greeter;
///
/// impl ContainerRuntime for Greeter {
///     fn started(&self, container: &Container, _run: &ContainerRun) -> Vec<String> {
///         vec![format!("hello from {}", container.name)]
///     }
///     fn exited(&self, _: &Container, _: &ContainerRun, _: &Exit) -> Vec<String> {
///         Vec::new()
///     }
/// }
///
/// let config = SandboxConfig { container_runtime: Arc::new(Greeter), ..SandboxConfig::default() };
/// # let _ = config;
/// ```
///
/// ## Warning
///
/// The log is computed from the pod's status each time it is read, not kept: a runtime whose
/// answers change between reads (a counter, the wall clock) makes `follow` repeat or skip lines.
pub trait ContainerRuntime: fmt::Debug + Send + Sync {
    /// The lines `container` writes when `run` starts, stamped with its start time.
    fn started(&self, container: &Container, run: &ContainerRun) -> Vec<String>;

    /// The lines it writes as `run` ends with `exit`, stamped with the exit's time.
    fn exited(&self, container: &Container, run: &ContainerRun, exit: &Exit) -> Vec<String>;

    /// The whole log of `run`: its start lines, then `written` (the lines a test scripted for
    /// this run, in order), then its exit lines if it has exited.
    fn log(&self, container: &Container, run: &ContainerRun, written: &[LogLine]) -> Vec<LogLine> {
        let stamp = |time: Timestamp| move |text: String| LogLine { time, text };
        let mut lines: Vec<LogLine> =
            self.started(container, run).into_iter().map(stamp(run.started)).collect();
        lines.extend_from_slice(written);
        if let Some(exit) = &run.exit {
            lines.extend(self.exited(container, run, exit).into_iter().map(stamp(exit.at)));
        }
        lines
    }

    /// Runs `process` (an exec: its command, stdin, stdout and stderr) in `container`, to its
    /// exit code; or hands the process back (`Err`), as the default does, for the sandbox's
    /// built-in shell to run: `echo`, `cat`, `ls`, `date`, `env`, `sh -c` over them, `exit N`
    /// and the rest the sandbox's README lists; any other command exits 127, `command not
    /// found`.
    ///
    /// # Errors
    ///
    /// The process, untouched, when this runtime does not run it.
    fn exec(&self, container: &Container, process: Process) -> Result<ExecFuture, Process> {
        let _ = container;
        Err(process)
    }

    /// What `container` runs as its own command, when this runtime runs it: the process's
    /// output (stdout and stderr) is the container's log, and its exit code the container's.
    /// `None`, the default, leaves it to the built-in shell when the command's first word is
    /// one of its commands (`sh`, `sleep`, `echo`, …); otherwise the container runs its image's
    /// entrypoint, which is not simulated: its log is [`started`](Self::started) and
    /// [`exited`](Self::exited)'s lines, and it runs until it is stopped (a pod that does not
    /// restart, for the simulation's run time).
    ///
    /// ## Warning
    ///
    /// It is asked each time the sandbox needs to know whether the container runs a program
    /// (a log read, a kubelet round), so its answer must depend on the container only.
    fn program(&self, container: &Container) -> Option<ExecFn> {
        let _ = container;
        None
    }
}

/// The sandbox's runtime unless a test installs another: each container says when it started,
/// with what image and command, and when it exited, with what code.
///
/// ```
/// use kube_sandbox::{Container, ContainerRun, ContainerRuntime, DefaultRuntime, Exit};
/// let main = Container { name: "main".into(), image: "busybox".into(), command: vec!["true".into()], ..Container::default() };
/// let at: jiff::Timestamp = "2025-01-02T03:04:05Z".parse().unwrap();
/// let run = ContainerRun { restart: 0, started: at, exit: Some(Exit { at, code: 3 }) };
/// let log = DefaultRuntime.log(&main, &run, &[]);
/// assert_eq!(log[0].text, r#"container "main" started at 2025-01-02T03:04:05Z: image "busybox", command ["true"]"#);
/// assert_eq!(log[1].text, r#"container "main" exited with code 3 at 2025-01-02T03:04:05Z"#);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRuntime;

impl ContainerRuntime for DefaultRuntime {
    fn started(&self, container: &Container, run: &ContainerRun) -> Vec<String> {
        let argv = container.argv();
        let command = if argv.is_empty() {
            "the image's entrypoint".to_owned()
        } else {
            serde_json::to_string(&argv).unwrap_or_default()
        };
        let what =
            if run.restart == 0 { "started".to_owned() } else { format!("restarted ({})", run.restart) };
        vec![format!(
            "container {} {what} at {}: image {}, command {command}",
            go_quote(&container.name),
            run.started,
            go_quote(&container.image),
        )]
    }

    fn exited(&self, container: &Container, _run: &ContainerRun, exit: &Exit) -> Vec<String> {
        vec![format!("container {} exited with code {} at {}", go_quote(&container.name), exit.code, exit.at)]
    }
}

/// Which container a line is for: namespace, pod, container.
type Key = (String, String, String);

/// Where input to a process's stdin is sent.
pub(crate) type StdinSender = tokio::sync::mpsc::UnboundedSender<bytes::Bytes>;

/// Scripted lines per container, each with the run (`restartCount`) current when written.
type Written = HashMap<Key, Vec<(i64, LogLine)>>;

/// Where ports are forwarded: (namespace, pod, port) to a local address.
type Forwarded = HashMap<(String, String, u16), std::net::SocketAddr>;

/// How many container runs keep their built-in shell's files at most. A run's machine goes when
/// the run ends; this bounds those no kubelet ends (a sandbox without a simulated cluster, whose
/// pods' statuses a test writes), the oldest going first.
const MACHINES_KEPT: usize = 16_384;

/// The built-in shell's machines, by container id (with its pod's namespace and name), oldest
/// first in `order`.
#[derive(Default)]
struct Machines {
    by_id: HashMap<String, ((String, String), Arc<crate::shell::Machine>)>,
    order: std::collections::VecDeque<String>,
}

/// The processes containers run as their own command, by container: the run's id and its task.
type Processes = HashMap<Key, (String, tokio::task::AbortHandle)>;

/// The sandbox's runtime and what tests scripted, which every handle shares.
#[derive(Clone)]
pub(crate) struct Containers {
    pub(crate) runtime: Arc<dyn ContainerRuntime>,
    pub(crate) clock: Clock,
    /// Where containers' processes run: the sandbox's runtime (the kubelets start them from
    /// the simulation's thread).
    tokio: tokio::runtime::Handle,
    /// The process each container runs as its own command, while it runs.
    processes: Arc<Mutex<Processes>>,
    /// The lines tests scripted, each with the run (`restartCount`) that was current then.
    written: Arc<Mutex<Written>>,
    /// Woken on every scripted line, for the logs being followed.
    pub(crate) wrote: Arc<tokio::sync::Notify>,
    /// The execs tests scripted, per container.
    execs: Arc<Mutex<HashMap<Key, ExecFn>>>,
    /// The built-in shell's machine per container run (by container id), so what one exec
    /// writes the next one reads; the oldest are dropped beyond [`MACHINES_KEPT`].
    machines: Arc<Mutex<Machines>>,
    /// The files of the volumes containers mount, by key: an `emptyDir`'s for its pod's life,
    /// a `hostPath`'s for the sandbox's.
    volumes: Arc<Mutex<HashMap<String, Arc<crate::shell::Files>>>>,
    /// Where a pod's ports are forwarded to: (namespace, pod, port) to a local address.
    ports: Arc<Mutex<Forwarded>>,
    /// What containers use, as tests set it, for the resource metrics.
    usage: Arc<Mutex<HashMap<Key, crate::metrics::Usage>>>,
    /// The stdin of each process that keeps one open (`stdin: true`), by container: the run's
    /// id and where attached clients' input goes.
    stdins: Arc<Mutex<HashMap<Key, (String, StdinSender)>>>,
    /// The runtime's faults, as tests add them.
    pub(crate) faults: Arc<ContainerFaults>,
}

impl Containers {
    /// ## Panics
    ///
    /// Outside a Tokio runtime.
    pub(crate) fn new(
        runtime: Arc<dyn ContainerRuntime>,
        clock: Clock,
        faults: Arc<ContainerFaults>,
    ) -> Self {
        Self {
            runtime,
            clock,
            tokio: tokio::runtime::Handle::current(),
            processes: Arc::default(),
            written: Arc::default(),
            wrote: Arc::default(),
            execs: Arc::default(),
            machines: Arc::default(),
            volumes: Arc::default(),
            ports: Arc::default(),
            usage: Arc::default(),
            stdins: Arc::default(),
            faults,
        }
    }

    pub(crate) fn script_exec(&self, key: Key, exec: ExecFn) {
        self.execs.lock().insert(key, exec);
    }

    pub(crate) fn forward_port(&self, namespace: &str, pod: &str, port: u16, to: std::net::SocketAddr) {
        self.ports.lock().insert((namespace.to_owned(), pod.to_owned(), port), to);
    }

    /// Sets what a container uses, for the resource metrics.
    pub(crate) fn set_usage(&self, key: Key, usage: crate::metrics::Usage) {
        self.usage.lock().insert(key, usage);
    }

    /// What a test said a container uses, if it did.
    pub(crate) fn usage(&self, namespace: &str, pod: &str, container: &str) -> Option<crate::metrics::Usage> {
        self.usage.lock().get(&(namespace.to_owned(), pod.to_owned(), container.to_owned())).copied()
    }

    /// The local address a pod's port is forwarded to, if one was mapped.
    pub(crate) fn forwarded(&self, namespace: &str, pod: &str, port: u16) -> Option<std::net::SocketAddr> {
        self.ports.lock().get(&(namespace.to_owned(), pod.to_owned(), port)).copied()
    }

    /// Runs an exec in `c`: the test's script for it, else the runtime's, else the built-in
    /// shell on a machine made for the container (which answers a command it does not know
    /// as a shell does, 127).
    pub(crate) fn exec(&self, c: &Container, process: Process) -> ExecFuture {
        self.try_exec(c, process)
            .unwrap_or_else(|process| Box::pin(crate::shell::exec(self.machine(c), process)))
    }

    /// Runs an exec in `c` when something simulates its command: a fault that hangs it, the
    /// test's script, the runtime, or the built-in shell when it has the command's first word.
    /// Else the process comes back: the command is the image's, which nothing simulates.
    pub(crate) fn try_exec(&self, c: &Container, process: Process) -> Result<ExecFuture, Process> {
        if self.faults.exec_hangs(&c.fault_target()) {
            // Held until the caller gives up on it; its streams stay open meanwhile.
            return Ok(Box::pin(async move {
                let _streams = process;
                std::future::pending().await
            }));
        }
        let key = (c.namespace.clone(), c.pod.clone(), c.name.clone());
        let scripted = self.execs.lock().get(&key).cloned();
        if let Some(f) = scripted {
            return Ok(f(c, process));
        }
        match self.runtime.exec(c, process) {
            Ok(f) => Ok(f),
            Err(process) if crate::shell::runs(&process.command) => {
                Ok(Box::pin(crate::shell::exec(self.machine(c), process)))
            }
            Err(process) => Err(process),
        }
    }

    /// Runs `task` on the runtime's Tokio runtime (the kubelets call from the simulation's
    /// thread).
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.tokio.spawn(task);
    }

    /// The built-in shell's machine for this run of `c`, made on its first exec.
    fn machine(&self, c: &Container) -> Arc<crate::shell::Machine> {
        let new = || {
            let mut volumes = self.volumes.lock();
            let mounts = c
                .volumes
                .iter()
                .map(|(at, key)| {
                    let fs =
                        volumes.entry(key.clone()).or_insert_with(|| Arc::new(crate::shell::Files::volume()));
                    (at.clone(), Arc::clone(fs))
                })
                .collect();
            Arc::new(
                crate::shell::Machine::new(&c.pod, &c.pod_ip, c.env.clone(), self.clock.clone())
                    .mounting(mounts),
            )
        };
        if c.id.is_empty() {
            return new();
        }
        let mut machines = self.machines.lock();
        if let Some((_, m)) = machines.by_id.get(&c.id) {
            return Arc::clone(m);
        }
        let machine = new();
        machines.by_id.insert(c.id.clone(), ((c.namespace.clone(), c.pod.clone()), Arc::clone(&machine)));
        let Machines { by_id, order } = &mut *machines;
        order.push_back(c.id.clone());
        // Ids of runs that ended are dropped from the order now and then.
        if order.len() > 2 * by_id.len() + 64 {
            order.retain(|id| by_id.contains_key(id));
        }
        while by_id.len() > MACHINES_KEPT {
            let Some(oldest) = order.pop_front() else { break };
            by_id.remove(&oldest);
        }
        machine
    }

    /// Whether `c`'s own command runs as a process (the runtime's program or the built-in
    /// shell's), rather than an image's entrypoint nothing simulates.
    pub(crate) fn runs_program(&self, c: &Container) -> bool {
        self.runtime.program(c).is_some() || crate::shell::runs(&c.argv())
    }

    /// Starts run `c.restart` of container `c` as its command's process, when it
    /// [runs one](Self::runs_program): its output becomes the run's log, line by line as it
    /// is written, and `exited` is told its exit code once the output is all in the log —
    /// unless the run is [stopped](Self::stop) first. A process already running for the
    /// container (an earlier run) is stopped.
    pub(crate) fn start(&self, c: &Container, exited: impl FnOnce(i32) + Send + 'static) {
        let argv = c.argv();
        let run: ExecFn = match self.runtime.program(c) {
            Some(program) => program,
            None if crate::shell::runs(&argv) => {
                let machine = self.machine(c);
                Arc::new(move |_, process| Box::pin(crate::shell::exec(Arc::clone(&machine), process)))
            }
            None => return,
        };
        let key = (c.namespace.clone(), c.pod.clone(), c.name.clone());
        let (out, mut rx) = Output::channel();
        let stdin = if c.stdin {
            let (tx, stdin) = Stdin::channel();
            self.stdins.lock().insert(key.clone(), (c.id.clone(), tx));
            stdin
        } else {
            Stdin::closed()
        };
        let mut process = Process::new(argv, stdin, out.clone());
        process.stderr = out;
        process.tty = c.tty;
        let running = run(c, process);
        let this = self.clone();
        let (k, restart, id) = (key.clone(), c.restart, c.id.clone());
        let task = self.tokio.spawn(async move {
            let log = async {
                let mut partial = Vec::new();
                while let Some(chunk) = rx.recv().await {
                    partial.extend_from_slice(&chunk);
                    let Some(end) = partial.iter().rposition(|b| *b == b'\n') else { continue };
                    let rest = partial.split_off(end + 1);
                    this.append(&k, restart, lines(&partial[..end]));
                    partial = rest;
                }
                if !partial.is_empty() {
                    this.append(&k, restart, lines(&partial));
                }
            };
            let (code, ()) = tokio::join!(running, log);
            {
                let mut processes = this.processes.lock();
                if processes.get(&k).is_some_and(|(i, _)| *i == id) {
                    processes.remove(&k);
                }
            }
            exited(code);
        });
        let before = self.processes.lock().insert(key, (c.id.clone(), task.abort_handle()));
        if let Some((_, before)) = before {
            before.abort();
        }
    }

    /// Where an attached client's input to run `c.id` of container `c` goes, while its
    /// process keeps its stdin open.
    pub(crate) fn stdin_of(&self, c: &Container) -> Option<StdinSender> {
        let key = (c.namespace.clone(), c.pod.clone(), c.name.clone());
        self.stdins.lock().get(&key).filter(|(id, _)| *id == c.id).map(|(_, tx)| tx.clone())
    }

    /// Closes the stdin of run `c.id` of container `c` (`stdinOnce`): its process reads the end.
    pub(crate) fn close_stdin(&self, c: &Container) {
        let key = (c.namespace.clone(), c.pod.clone(), c.name.clone());
        let mut stdins = self.stdins.lock();
        if stdins.get(&key).is_some_and(|(id, _)| *id == c.id) {
            stdins.remove(&key);
        }
    }

    /// Stops the process of run `id` of container `name` in pod `namespace/pod`, if it still
    /// runs; its exit is not reported.
    pub(crate) fn stop(&self, namespace: &str, pod: &str, name: &str, id: &str) {
        let key = (namespace.to_owned(), pod.to_owned(), name.to_owned());
        // The run's files go with it.
        self.machines.lock().by_id.remove(id);
        {
            let mut stdins = self.stdins.lock();
            if stdins.get(&key).is_some_and(|(i, _)| i == id) {
                stdins.remove(&key);
            }
        }
        let mut processes = self.processes.lock();
        if processes.get(&key).is_some_and(|(i, _)| i == id)
            && let Some((_, task)) = processes.remove(&key)
        {
            task.abort();
        }
    }

    /// Stops every process of pod `namespace/pod`: it is being deleted.
    pub(crate) fn stop_pod(&self, namespace: &str, pod: &str) {
        self.machines.lock().by_id.retain(|_, ((ns, p), _)| ns != namespace || p != pod);
        // Its emptyDir volumes go with it.
        let prefix = format!("emptyDir/{namespace}/{pod}/");
        self.volumes.lock().retain(|key, _| !key.starts_with(&prefix));
        self.stdins.lock().retain(|(ns, p, _), _| ns != namespace || p != pod);
        self.processes.lock().retain(|(ns, p, _), (_, task)| {
            let of_pod = ns == namespace && p == pod;
            if of_pod {
                task.abort();
            }
            !of_pod
        });
    }

    fn write(&self, key: &Key, run: i64, text: &str) {
        self.append(key, run, text.lines().map(str::to_owned));
    }

    /// Adds `lines` to run `run` of the container's log, stamped now, and wakes its followers.
    fn append(&self, key: &Key, run: i64, lines: impl IntoIterator<Item = String>) {
        let time = self.clock.now();
        {
            let mut all = self.written.lock();
            let written = all.entry(key.clone()).or_default();
            written.extend(lines.into_iter().map(|text| (run, LogLine { time, text })));
        }
        self.wrote.notify_waiters();
    }

    /// The scripted lines `run` of `c` shows: those written while it was the container's
    /// current run, since the pod was created (`created`; an older pod of the same name wrote
    /// the others).
    pub(crate) fn lines_of(
        &self,
        c: &Container,
        run: &ContainerRun,
        created: Option<Timestamp>,
    ) -> Vec<LogLine> {
        let key = (c.namespace.clone(), c.pod.clone(), c.name.clone());
        let all = self.written.lock();
        all.get(&key)
            .into_iter()
            .flatten()
            .filter(|(r, l)| *r == run.restart && created.is_none_or(|t| l.time >= t))
            .map(|(_, l)| l.clone())
            .collect()
    }
}

/// The lines of `bytes` (a process's output up to a newline, or its unfinished last line).
fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes).split('\n').map(str::to_owned).collect()
}

impl fmt::Debug for Containers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Containers").field("runtime", &self.runtime).finish_non_exhaustive()
    }
}

/// The log of one container, for a test to script: [`Sandbox::container_log`](crate::Sandbox::container_log).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let sandbox = kube_sandbox::Sandbox::new();
/// sandbox.container_log("default", "web", "nginx").write_line("listening on :80");
/// # }
/// ```
///
/// ## Warning
///
/// A line belongs to the run of the container that its pod's status shows when it is written
/// (a line written just after [`Cluster::exit_pod`](crate::Cluster::exit_pod) but before the
/// kubelet restarted the container is the old run's), and to the pod of that name created
/// before it: a line written before the pod was created is never shown.
#[derive(Clone)]
pub struct ContainerLog {
    containers: Containers,
    key: Key,
    /// The container's current run, read from its pod's status when a line is written.
    current_run: Arc<dyn Fn() -> i64 + Send + Sync>,
}

impl fmt::Debug for ContainerLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContainerLog").field("container", &self.key).finish()
    }
}

impl ContainerLog {
    pub(crate) fn new(
        containers: Containers,
        key: (String, String, String),
        current_run: Arc<dyn Fn() -> i64 + Send + Sync>,
    ) -> Self {
        Self { containers, key, current_run }
    }

    /// Appends `text` to the container's log, stamped with the sandbox's time now, after its
    /// start line; a text of several lines is several lines. Clients following the log get it
    /// at once.
    pub fn write_line(&self, text: &str) {
        self.containers.write(&self.key, (self.current_run)(), text);
    }
}
