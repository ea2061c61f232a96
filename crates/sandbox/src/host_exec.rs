//! A container runtime that runs execs as processes on this machine: `kubectl exec web -- ls`
//! runs `ls` here, in a working directory of the container's own. The command-line sandbox
//! offers it behind a flag, off by default, for a demo or a test that needs a real program
//! (`curl`, `psql`) where the built-in shell has none. Everything else — containers' own
//! commands, logs, probes of images — stays as the default runtime simulates it.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::container_runtime::{Container, ContainerRun, ContainerRuntime, DefaultRuntime, ExecFuture, Exit};
use crate::process::{Output, Process};

/// Runs each exec as a local process, in `dir/<namespace>/<pod>/<container>` (made on first
/// use), with the machine's environment and the container's variables over it; its stdin,
/// stdout and stderr are the exec's, its exit code the exec's. A command that cannot be started
/// (not found, not executable) exits 127 with the reason on stderr, as a shell says it.
///
/// ```
/// use std::sync::Arc;
/// use kube_sandbox::{HostExec, SandboxConfig};
/// let config = SandboxConfig {
///     container_runtime: Arc::new(HostExec::new(std::env::temp_dir().join("sandbox-execs"))),
///     ..SandboxConfig::default()
/// };
/// # let _ = config;
/// ```
///
/// ## Warning
///
/// The processes run as the sandbox's own user, with its rights: anyone who may exec into a
/// pod may run anything here. Serve such a sandbox on loopback only.
#[derive(Debug, Clone)]
pub struct HostExec {
    dir: PathBuf,
}

impl HostExec {
    /// Execs run under `dir`.
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The working directory of `container`'s execs.
    #[must_use]
    pub fn dir_of(&self, container: &Container) -> PathBuf {
        self.dir.join(&container.namespace).join(&container.pod).join(&container.name)
    }
}

impl ContainerRuntime for HostExec {
    fn started(&self, container: &Container, run: &ContainerRun) -> Vec<String> {
        DefaultRuntime.started(container, run)
    }

    fn exited(&self, container: &Container, run: &ContainerRun, exit: &Exit) -> Vec<String> {
        DefaultRuntime.exited(container, run, exit)
    }

    fn exec(&self, container: &Container, process: Process) -> Result<ExecFuture, Process> {
        let dir = self.dir_of(container);
        let env = container.env.clone();
        Ok(Box::pin(run(dir, env, process)))
    }
}

/// Runs `process` here, in `dir`; its exit code.
async fn run(dir: PathBuf, env: Vec<(String, String)>, mut process: Process) -> i32 {
    let Some((program, args)) = process.command.split_first() else {
        process.stderr.write("exec: no command\n").await;
        return 127;
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        process.stderr.write(format!("{}: {e}\n", dir.display())).await;
        return 126;
    }
    let spawned = tokio::process::Command::new(program)
        .args(args)
        .envs(env)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            process.stderr.write(format!("{program}: {}\n", reason(&e, &dir))).await;
            return if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return 126;
    };
    let feed = async {
        while let Some(bytes) = process.stdin.read().await {
            if stdin.write_all(&bytes).await.is_err() {
                break;
            }
        }
        // The client's end of stdin is the process's.
        drop(stdin);
    };
    let out = relay(stdout, &process.stdout);
    let err = relay(stderr, &process.stderr);
    // Stdin may stay open after the process ends (the client never closes it): the exit does
    // not wait for it.
    let done = async {
        let ((), ()) = tokio::join!(out, err);
        child.wait().await
    };
    tokio::pin!(done);
    tokio::pin!(feed);
    let status = tokio::select! {
        status = &mut done => status,
        () = &mut feed => done.await,
    };
    match status {
        Ok(s) => s.code().unwrap_or_else(|| 128 + signal(&s)),
        Err(_) => 1,
    }
}

/// Copies what a process writes to an exec's stream, as it comes.
async fn relay(mut from: impl tokio::io::AsyncRead + Unpin, to: &Output) {
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || !to.write(buf[..n].to_vec()).await {
            break;
        }
    }
}

/// Why a command could not start, as a shell words it.
fn reason(e: &std::io::Error, dir: &Path) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "command not found".to_owned(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_owned(),
        _ => format!("{e} (in {})", dir.display()),
    }
}

/// The signal that ended a process, if one did.
fn signal(status: &std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal().unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        0
    }
}
