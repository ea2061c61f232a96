//! The built-in container's shell: what an exec runs, and what a container's command runs
//! when the default runtime runs it. A small POSIX-shell subset ([`parse`]) evaluated over a
//! process's streams ([`run`]), with the commands busybox images have that clients and tests
//! use ([`commands`]), on an in-memory file system ([`files`]). Nothing runs on the machine the
//! sandbox runs on.

pub(crate) mod commands;
pub(crate) mod files;
pub(crate) mod parse;
pub(crate) mod run;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::clock::Clock;
use crate::process::{Output, Process, Stdin};
pub(crate) use files::{Files, join};

/// How a command ended: with a status, or by `exit`, which ends the whole shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Go(i32),
    Exit(i32),
}

impl Flow {
    pub(crate) fn status(self) -> i32 {
        match self {
            Self::Go(s) | Self::Exit(s) => s,
        }
    }
}

/// A command's streams.
pub(crate) struct Io<'a> {
    pub(crate) stdin: &'a mut Stdin,
    pub(crate) stdout: Output,
    pub(crate) stderr: Output,
}

/// One shell: its variables, positional parameters, last status and working directory, on the
/// container's machine.
#[derive(Clone)]
pub(crate) struct Shell {
    pub(crate) vars: BTreeMap<String, String>,
    pub(crate) exported: BTreeSet<String>,
    /// `$0`, `$1`, …
    pub(crate) args: Vec<String>,
    pub(crate) status: i32,
    pub(crate) cwd: String,
    /// Whether it runs on a terminal: an interactive shell prompts.
    pub(crate) tty: bool,
    pub(crate) machine: Arc<Machine>,
}

/// What a container's processes share: its environment, files, host name and clock.
pub(crate) struct Machine {
    pub(crate) env: Vec<(String, String)>,
    pub(crate) files: Files,
    pub(crate) hostname: String,
    pub(crate) clock: Clock,
}

impl Machine {
    /// A container's machine: `env` (its spec's values), `/etc/hostname` and `/etc/hosts` for
    /// `hostname` at `ip`.
    pub(crate) fn new(hostname: &str, ip: &str, env: Vec<(String, String)>, clock: Clock) -> Self {
        let mut all = vec![
            ("PATH".to_owned(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned()),
            ("HOSTNAME".to_owned(), hostname.to_owned()),
            ("HOME".to_owned(), "/root".to_owned()),
        ];
        all.extend(env);
        let hosts =
            format!("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n{ip}\t{hostname}\n");
        let files = Files::new(
            &commands::COMMANDS,
            vec![
                ("/etc/hostname".to_owned(), format!("{hostname}\n").into_bytes()),
                ("/etc/hosts".to_owned(), hosts.into_bytes()),
            ],
        );
        Self { env: all, files, hostname: hostname.to_owned(), clock }
    }

    /// This machine with `volumes` (mount path, volume) mounted.
    #[must_use]
    pub(crate) fn mounting(self, volumes: Vec<(String, Arc<Files>)>) -> Self {
        if volumes.is_empty() {
            return self;
        }
        Self { files: self.files.with_mounts(volumes), ..self }
    }
}

impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine").field("hostname", &self.hostname).finish_non_exhaustive()
    }
}

/// Whether the shell runs `argv`: its first word is one of the shell's commands.
pub(crate) fn runs(argv: &[String]) -> bool {
    argv.first().is_some_and(|first| commands::exists(first))
}

/// Runs `process`'s command on `machine` as a container runtime execs it: its first word is a
/// command the container has (`sh -c …` for a script), or it is not found (127). Returns the
/// exit code.
pub(crate) async fn exec(machine: Arc<Machine>, mut process: Process) -> i32 {
    let Some(first) = process.command.first() else {
        process.stderr.write("exec: no command given\n").await;
        return 127;
    };
    if !commands::exists(first) {
        process.stderr.write(format!("{first}: command not found\n")).await;
        return 127;
    }
    let mut shell = Shell::new(machine, vec!["sh".to_owned()]);
    shell.tty = process.tty;
    let mut io =
        Io { stdin: &mut process.stdin, stdout: process.stdout.clone(), stderr: process.stderr.clone() };
    commands::call(&mut shell, &process.command, &mut io).await.status()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{Output, Stdin};

    fn machine() -> Arc<Machine> {
        let clock = Clock::paused_at("2026-12-04T05:06:07Z".parse().unwrap());
        Arc::new(Machine::new("web-0", "10.244.0.5", vec![("GREETING".into(), "hi there".into())], clock))
    }

    /// Runs `argv` with `stdin`; its exit code, stdout and stderr.
    async fn run(m: &Arc<Machine>, argv: &[&str], stdin: &str) -> (i32, String, String) {
        let (stdout, out) = Output::buffer();
        let (stderr, err) = Output::buffer();
        let mut p = Process::new(
            argv.iter().map(|s| (*s).to_owned()).collect(),
            Stdin::from_bytes(stdin.to_owned()),
            stdout,
        );
        p.stderr = stderr;
        let code = exec(Arc::clone(m), p).await;
        (code, String::from_utf8(out.take()).unwrap(), String::from_utf8(err.take()).unwrap())
    }

    async fn sh(script: &str) -> (i32, String, String) {
        run(&machine(), &["sh", "-c", script], "").await
    }

    #[tokio::test]
    async fn test_reads_the_files_and_double_brackets_test_too() {
        let m = machine();
        let script =
            "touch /tmp/x; [ -f /tmp/x ] && [[ -r /tmp/x ]] && [ -d /tmp ] && ! [ -s /tmp/x ] && echo yes";
        assert_eq!(run(&m, &["sh", "-c", script], "").await.1, "yes\n");
        assert_eq!(run(&m, &["sh", "-c", "[[ -e /tmp/nope ]]"], "").await.0, 1);
        assert_eq!(run(&m, &["sh", "-c", "[[ -e /tmp/x"], "").await.0, 2);
    }

    #[tokio::test]
    async fn expr_computes_compares_and_exits_as_busybox() {
        assert_eq!(sh("expr 7 % 2").await, (0, "1\n".into(), String::new()));
        assert_eq!(sh("expr 2 + 3 \\* 4").await.1, "14\n");
        assert_eq!(sh("expr \\( 2 + 3 \\) \\* 4").await.1, "20\n");
        assert_eq!(sh("expr 4 % 2").await, (1, "0\n".into(), String::new()));
        assert_eq!(sh("expr 3 \\< 10").await.1, "1\n");
        assert_eq!(sh("expr 0 \\| 5").await.1, "5\n");
        assert_eq!(sh("expr 1 / 0").await, (2, String::new(), "expr: division by zero\n".into()));
        assert_eq!(sh("expr a + 1").await, (2, String::new(), "expr: non-numeric argument\n".into()));
        let odd = "if [ $(expr 3 % 2) -ne 0 ]; then exit 1; else exit 0; fi";
        assert_eq!(sh(odd).await.0, 1);
    }

    #[tokio::test]
    async fn loops_substitutions_and_variables() {
        assert_eq!(sh("for i in $(seq 1 3); do echo $i; done").await, (0, "1\n2\n3\n".into(), String::new()));
        assert_eq!(
            sh("for i in $(seq 1 5); do echo kube $i; sleep 0; done").await.1,
            "kube 1\nkube 2\nkube 3\nkube 4\nkube 5\n"
        );
        assert_eq!(
            sh(r#"X="a  b"; echo $X; echo "$X"; echo ${GREETING}!"#).await.1,
            "a b\na  b\nhi there!\n"
        );
        assert_eq!(sh("n=x; while [ $n != xxx ]; do n=${n}x; echo $n; done").await.1, "xx\nxxx\n");
        assert_eq!(sh("if [ -n \"$GREETING\" ]; then echo yes; else echo no; fi").await.1, "yes\n");
        assert_eq!(sh("false || echo fell; true && echo went; ! true; echo $?").await.1, "fell\nwent\n1\n");
    }

    #[tokio::test]
    async fn exit_codes_and_errors_as_a_shell_gives_them() {
        assert_eq!(sh("exit 3").await.0, 3);
        assert_eq!(sh("echo out; echo err >&2; exit 1").await, (1, "out\n".into(), "err\n".into()));
        assert_eq!(sh("nope").await, (127, String::new(), "sh: nope: command not found\n".into()));
        assert_eq!(
            sh("for i in; do").await,
            (2, String::new(), "sh: syntax error: unexpected end of file\n".into())
        );
        assert_eq!(
            run(&machine(), &["nope", "x"], "").await,
            (127, String::new(), "nope: command not found\n".into())
        );
        assert_eq!(
            sh("cat /nope").await,
            (1, String::new(), "cat: can't open '/nope': No such file or directory\n".into())
        );
    }

    #[tokio::test]
    async fn stdin_pipes_files_and_the_machine() {
        let m = machine();
        assert_eq!(run(&m, &["cat"], "a\nb\n").await.1, "a\nb\n");
        assert_eq!(
            run(&m, &["sh"], "echo one\nexit 4\necho never\n").await,
            (4, "one\n".into(), String::new())
        );
        assert_eq!(run(&m, &["sh", "-c", "echo hello > /tmp/f; cat /tmp/f | wc -l"], "").await.1, "1\n");
        assert_eq!(run(&m, &["cat", "/tmp/f"], "").await.1, "hello\n");
        assert_eq!(run(&m, &["ls", "/tmp"], "").await.1, "f\n");
        assert_eq!(run(&m, &["hostname"], "").await.1, "web-0\n");
        assert_eq!(run(&m, &["date"], "").await.1, "Fri Dec  4 05:06:07 UTC 2026\n");
        assert!(run(&m, &["env"], "").await.1.contains("GREETING=hi there\nHOME=/root\nHOSTNAME=web-0\n"));
        assert_eq!(run(&m, &["sh", "-c", "read a b; echo \"$b-$a\""], "x y z\n").await.1, "y z-x\n");
        assert_eq!(run(&m, &["/bin/echo", "-n", "a"], "").await.1, "a");
        assert_eq!(run(&m, &["printf", "%s=%d\\n", "a", "1", "b", "2"], "").await.1, "a=1\nb=2\n");
    }
}
