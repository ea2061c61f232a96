//! The shell's evaluator: runs a parsed script against a process's streams. Words are expanded
//! (variables, substitutions, field splitting), redirections applied, and each command is a
//! built-in ([`super::commands`]); pipelines run their commands in turn, each reading what the
//! one before it wrote.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::parse::{AndOr, Command, Part, Pipeline, Redirect, RedirectTo, Script, Word};
use super::{Flow, Io, Machine, Shell};
use crate::process::{Output, Stdin};

/// A boxed future of the shell: its evaluation recurses.
pub(crate) type Step<'a> = Pin<Box<dyn Future<Output = Flow> + Send + 'a>>;

impl Shell {
    /// A shell with the container's environment, exported.
    pub(crate) fn new(machine: Arc<Machine>, args: Vec<String>) -> Self {
        let vars: BTreeMap<String, String> = machine.env.iter().cloned().collect();
        let exported = vars.keys().cloned().collect();
        Self { vars, exported, args, status: 0, cwd: "/".to_owned(), tty: false, machine }
    }

    /// The exported variables, as a child's environment.
    pub(crate) fn environment(&self) -> Vec<(String, String)> {
        self.vars
            .iter()
            .filter(|(k, _)| self.exported.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub(crate) fn run<'a>(&'a mut self, script: &'a Script, io: &'a mut Io<'_>) -> Step<'a> {
        Box::pin(async move {
            for and_or in script {
                match self.and_or(and_or, io).await {
                    Flow::Go(s) => self.status = s,
                    exit => return exit,
                }
            }
            Flow::Go(self.status)
        })
    }

    async fn and_or(&mut self, list: &AndOr, io: &mut Io<'_>) -> Flow {
        let mut flow = self.pipeline(&list.first, io).await;
        for (and, next) in &list.rest {
            let Flow::Go(s) = flow else { return flow };
            self.status = s;
            if (s == 0) == *and {
                flow = self.pipeline(next, io).await;
            }
        }
        flow
    }

    async fn pipeline(&mut self, p: &Pipeline, io: &mut Io<'_>) -> Flow {
        let flow = if let [only] = p.commands.as_slice() {
            self.command(only, io).await
        } else {
            // Each command runs to its end, its output the next one's input: no process runs
            // beside another, so `yes | head` would not end (and `yes` is not built in).
            let mut input: Option<Stdin> = None;
            let mut flow = Flow::Go(0);
            let last = p.commands.len() - 1;
            for (i, c) in p.commands.iter().enumerate() {
                let (stdout, written) = Output::buffer();
                let stdout = if i == last { io.stdout.clone() } else { stdout };
                let mut owned;
                let stdin: &mut Stdin = match input.as_mut() {
                    Some(s) => s,
                    None if i == 0 => io.stdin,
                    None => {
                        owned = Stdin::closed();
                        &mut owned
                    }
                };
                let mut sub = Io { stdin, stdout, stderr: io.stderr.clone() };
                // A pipeline's commands run in subshells.
                flow = Flow::Go(self.clone().command(c, &mut sub).await.status());
                input = Some(Stdin::from_bytes(written.take()));
            }
            flow
        };
        match flow {
            Flow::Go(s) if p.negated => Flow::Go(i32::from(s == 0)),
            f => f,
        }
    }

    fn command<'a>(&'a mut self, c: &'a Command, io: &'a mut Io<'_>) -> Step<'a> {
        Box::pin(async move {
            match c {
                Command::Simple { assigns, words, redirects } => {
                    self.simple(assigns, words, redirects, io).await
                }
                Command::For { name, items, body } => {
                    let mut values = Vec::new();
                    for w in items {
                        values.extend(self.expand(w, io).await);
                    }
                    let mut status = 0;
                    for v in values {
                        self.vars.insert(name.clone(), v);
                        match self.run(body, io).await {
                            Flow::Go(s) => status = s,
                            exit => return exit,
                        }
                    }
                    Flow::Go(status)
                }
                Command::While { until, cond, body } => {
                    let mut status = 0;
                    loop {
                        let held = match self.run(cond, io).await {
                            Flow::Go(s) => (s == 0) != *until,
                            exit => return exit,
                        };
                        if !held {
                            return Flow::Go(status);
                        }
                        match self.run(body, io).await {
                            Flow::Go(s) => status = s,
                            exit => return exit,
                        }
                    }
                }
                Command::If { branches, otherwise } => {
                    for (cond, body) in branches {
                        match self.run(cond, io).await {
                            Flow::Go(0) => return self.run(body, io).await,
                            Flow::Go(_) => {}
                            exit => return exit,
                        }
                    }
                    match otherwise {
                        Some(body) => self.run(body, io).await,
                        None => Flow::Go(0),
                    }
                }
                Command::Group(body) => self.run(body, io).await,
            }
        })
    }

    async fn simple(
        &mut self,
        assigns: &[(String, Word)],
        words: &[Word],
        redirects: &[Redirect],
        io: &mut Io<'_>,
    ) -> Flow {
        let mut argv = Vec::new();
        for w in words {
            argv.extend(self.expand(w, io).await);
        }
        let mut values = Vec::new();
        for (name, w) in assigns {
            let v = self.expand_one(w, io).await;
            values.push((name.clone(), v));
        }
        // Redirections, left to right, over the command's own streams.
        let (mut stdout, mut stderr) = (io.stdout.clone(), io.stderr.clone());
        let mut stdin_file: Option<Stdin> = None;
        let mut files = Vec::new();
        for r in redirects {
            let target = match &r.to {
                RedirectTo::Fd(1) => stdout.clone(),
                RedirectTo::Fd(2) => stderr.clone(),
                RedirectTo::Fd(n) => {
                    io.stderr.write(format!("sh: {n}: bad file descriptor\n")).await;
                    return Flow::Go(1);
                }
                RedirectTo::File { path, append, read } => {
                    let path = self.expand_one(path, io).await;
                    let path = self.absolute(&path);
                    if *read {
                        match self.machine.files.read(&path) {
                            Ok(data) => stdin_file = Some(Stdin::from_bytes(data)),
                            Err(e) => {
                                io.stderr.write(format!("sh: can't open '{path}': {e}\n")).await;
                                return Flow::Go(1);
                            }
                        }
                        continue;
                    }
                    if path == "/dev/null" {
                        Output::null()
                    } else {
                        if let Err(e) = self.machine.files.write(&path, b"", *append) {
                            io.stderr.write(format!("sh: can't create {path}: {e}\n")).await;
                            return Flow::Go(1);
                        }
                        let (out, written) = Output::buffer();
                        files.push((path, written));
                        out
                    }
                }
            };
            match r.fd {
                0 => {}
                2 => stderr = target,
                _ => stdout = target,
            }
        }
        if argv.is_empty() {
            for (name, v) in values {
                self.vars.insert(name, v);
            }
            return Flow::Go(0);
        }
        let mut owned;
        let stdin: &mut Stdin = match stdin_file {
            Some(s) => {
                owned = s;
                &mut owned
            }
            None => io.stdin,
        };
        let mut cio = Io { stdin, stdout, stderr };
        // `NAME=value cmd`: the values are the command's alone.
        let saved = self.clone();
        let prefixed = !values.is_empty();
        for (name, v) in values {
            self.exported.insert(name.clone());
            self.vars.insert(name, v);
        }
        let flow = super::commands::call(self, &argv, &mut cio).await;
        if prefixed {
            self.vars = saved.vars;
            self.exported = saved.exported;
        }
        for (path, written) in files {
            let _ = self.machine.files.write(&path, &written.take(), true);
        }
        flow
    }

    /// A path relative to the working directory, made absolute.
    pub(crate) fn absolute(&self, path: &str) -> String {
        super::files::join(&self.cwd, path)
    }

    /// A word expanded to one string (an assignment's value, a redirection's target).
    async fn expand_one(&mut self, w: &Word, io: &mut Io<'_>) -> String {
        let mut s = String::new();
        for p in w {
            match p {
                Part::Lit(t) | Part::Quoted(t) => s.push_str(t),
                Part::Var { name, .. } => s.push_str(&self.var(name)),
                Part::Subst { script, .. } => s.push_str(&self.substitute(script, io).await),
            }
        }
        s
    }

    /// A word expanded to its fields: unquoted expansions split on blanks.
    pub(crate) async fn expand(&mut self, w: &Word, io: &mut Io<'_>) -> Vec<String> {
        let mut fields = Vec::new();
        let mut current = String::new();
        let mut started = false;
        for p in w {
            let (text, split) = match p {
                Part::Lit(t) => (t.clone(), false),
                Part::Quoted(t) => {
                    started = true;
                    (t.clone(), false)
                }
                Part::Var { name, quoted } => (self.var(name), !quoted),
                Part::Subst { script, quoted } => (self.substitute(script, io).await, !quoted),
            };
            if !split {
                current.push_str(&text);
                started |= !text.is_empty();
                continue;
            }
            let pieces: Vec<&str> = text.split(|c: char| c.is_ascii_whitespace()).collect();
            for (i, piece) in pieces.iter().enumerate() {
                if i > 0 && started {
                    fields.push(std::mem::take(&mut current));
                    started = false;
                }
                if !piece.is_empty() {
                    current.push_str(piece);
                    started = true;
                }
            }
        }
        if started {
            fields.push(current);
        }
        fields
    }

    /// A variable's value; `""` when unset.
    fn var(&self, name: &str) -> String {
        match name {
            "?" => self.status.to_string(),
            "#" => self.args.len().saturating_sub(1).to_string(),
            "$" => "1".to_owned(),
            "@" | "*" => self.args.iter().skip(1).cloned().collect::<Vec<_>>().join(" "),
            n if n.chars().all(|c| c.is_ascii_digit()) => {
                n.parse::<usize>().ok().and_then(|i| self.args.get(i)).cloned().unwrap_or_default()
            }
            n => self.vars.get(n).cloned().unwrap_or_default(),
        }
    }

    /// `$(…)`: the script's output in a subshell, trailing newlines removed.
    async fn substitute(&mut self, script: &Script, io: &mut Io<'_>) -> String {
        let (stdout, written) = Output::buffer();
        let mut stdin = Stdin::closed();
        let mut sub = Io { stdin: &mut stdin, stdout, stderr: io.stderr.clone() };
        let mut shell = self.clone();
        self.status = shell.run(script, &mut sub).await.status();
        let mut text = String::from_utf8_lossy(&written.take()).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        text
    }
}
