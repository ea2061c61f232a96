//! The commands a container has: each a small built-in with the options the clients' tests and
//! the sandbox's docs use, written as busybox's behave (its messages, its exit codes). Anything
//! else is not found (127), as a shell says.

use std::time::Duration;

use super::parse::{self, ParseError};
use super::{Flow, Io, Shell};

/// The commands, as `/bin` lists them.
pub(crate) const COMMANDS: [&str; 38] = [
    "[", "[[", "ash", "bash", "cat", "cd", "date", "echo", "env", "exec", "exit", "export", "expr", "false",
    "head", "hostname", "id", "ls", "mkdir", "printenv", "printf", "pwd", "read", "rm", "seq", "sh", "sleep",
    "test", "touch", "true", "uname", "unset", "wc", "whoami", "yes", ":", "dash", "nproc",
];

/// Runs `argv` in `shell`.
pub(crate) async fn call(shell: &mut Shell, argv: &[String], io: &mut Io<'_>) -> Flow {
    let name = program(&argv[0]);
    let args = &argv[1..];
    let status = match name {
        ":" | "true" => 0,
        "false" => 1,
        "echo" => echo(args, io).await,
        "printf" => printf(args, io).await,
        "cat" => cat(shell, args, io).await,
        "head" => head(shell, args, io).await,
        "wc" => wc(shell, args, io).await,
        "ls" => ls(shell, args, io).await,
        "date" => date(shell, args, io).await,
        "env" | "printenv" => env(shell, name, args, io).await,
        "seq" => seq(args, io).await,
        "expr" => expr(args, io).await,
        "sleep" => sleep(shell, args, io).await,
        "yes" => yes(args, io).await,
        "exit" => {
            let code = args.first().map_or(Ok(shell.status), |a| a.parse::<i32>());
            return match code {
                Ok(c) => Flow::Exit(c & 0xff),
                Err(_) => {
                    io.stderr.write(format!("sh: exit: Illegal number: {}\n", args[0])).await;
                    Flow::Exit(2)
                }
            };
        }
        "exec" => {
            if args.is_empty() {
                return Flow::Go(0);
            }
            let status = Box::pin(call(shell, args, io)).await.status();
            return Flow::Exit(status);
        }
        "pwd" => write(io, format!("{}\n", shell.cwd)).await,
        "cd" => {
            let to = shell.absolute(args.first().map_or("/root", String::as_str));
            if shell.machine.files.is_dir(&to) {
                shell.cwd = to;
                0
            } else {
                io.stderr
                    .write(format!("sh: cd: can't cd to {}: No such file or directory\n", args[0]))
                    .await;
                2
            }
        }
        "hostname" => write(io, format!("{}\n", shell.machine.hostname)).await,
        "whoami" => write(io, "root\n".to_owned()).await,
        "id" => write(io, "uid=0(root) gid=0(root) groups=0(root)\n".to_owned()).await,
        "nproc" => write(io, "1\n".to_owned()).await,
        "uname" => {
            let text = if args.iter().any(|a| a == "-a") {
                format!("Linux {} 6.1.0-sandbox #1 SMP x86_64 GNU/Linux\n", shell.machine.hostname)
            } else {
                "Linux\n".to_owned()
            };
            write(io, text).await
        }
        "test" => test(shell, args),
        "[" => match args.split_last() {
            Some((last, rest)) if last == "]" => test(shell, rest),
            _ => {
                io.stderr.write("sh: [: missing ]\n").await;
                2
            }
        },
        // Busybox's `[[`: `test` to a closing `]]`.
        "[[" => match args.split_last() {
            Some((last, rest)) if last == "]]" => test(shell, rest),
            _ => {
                io.stderr.write("sh: [[: missing ]]\n").await;
                2
            }
        },
        "sh" | "ash" | "bash" | "dash" => return Flow::Go(sh(shell, name, args, io).await),
        "export" => {
            for a in args {
                let (n, v) = a.split_once('=').map_or((a.as_str(), None), |(n, v)| (n, Some(v)));
                if let Some(v) = v {
                    shell.vars.insert(n.to_owned(), v.to_owned());
                }
                shell.exported.insert(n.to_owned());
            }
            0
        }
        "unset" => {
            for a in args {
                shell.vars.remove(a);
                shell.exported.remove(a);
            }
            0
        }
        "read" => read(shell, args, io).await,
        "mkdir" | "rm" | "touch" => files(shell, name, args, io).await,
        _ => {
            io.stderr.write(format!("sh: {}: command not found\n", argv[0])).await;
            127
        }
    };
    Flow::Go(status)
}

/// The command a path names: `/bin/sh` is `sh`; a path elsewhere names nothing.
fn program(arg: &str) -> &str {
    for dir in ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/"] {
        if let Some(name) = arg.strip_prefix(dir) {
            return name;
        }
    }
    if arg.contains('/') { "" } else { arg }
}

/// Whether `arg` is a command the container has.
pub(crate) fn exists(arg: &str) -> bool {
    COMMANDS.contains(&program(arg))
}

async fn write(io: &Io<'_>, text: String) -> i32 {
    io.stdout.write(text).await;
    0
}

async fn echo(args: &[String], io: &Io<'_>) -> i32 {
    let (mut newline, mut escapes) = (true, false);
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        let flags = first.strip_prefix('-').filter(|f| !f.is_empty() && f.chars().all(|c| "neE".contains(c)));
        let Some(flags) = flags else { break };
        newline &= !flags.contains('n');
        escapes = flags.contains('e') || (escapes && !flags.contains('E'));
        rest = tail;
    }
    let mut text = rest.join(" ");
    if escapes {
        let (t, stop) = unescape(&text);
        text = t;
        newline &= !stop;
    }
    if newline {
        text.push('\n');
    }
    write(io, text).await
}

/// Backslash escapes as `echo -e` and `printf` read them; true when `\c` stops the output.
fn unescape(s: &str) -> (String, bool) {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('c') => return (out, true),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    (out, false)
}

async fn printf(args: &[String], io: &Io<'_>) -> i32 {
    let Some((format, mut values)) = args.split_first() else {
        io.stderr.write("printf: usage: printf FORMAT [ARGUMENT...]\n").await;
        return 1;
    };
    let (format, _) = unescape(format);
    let mut out = String::new();
    loop {
        let mut chars = format.chars().peekable();
        let mut used = 0;
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some(spec @ ('s' | 'd' | 'i' | 'u')) => {
                    let v = values.get(used).map_or("", String::as_str);
                    used += 1;
                    if spec == 's' {
                        out.push_str(v);
                    } else {
                        out.push_str(&v.trim().parse::<i64>().unwrap_or(0).to_string());
                    }
                }
                Some(o) => {
                    out.push('%');
                    out.push(o);
                }
                None => out.push('%'),
            }
        }
        // The format is used again while arguments are left.
        if used == 0 || used >= values.len() {
            break;
        }
        values = &values[used..];
    }
    write(io, out).await
}

/// Reads the named files (or stdin, for none or `-`), handing each chunk to `each`; false when a
/// file could not be read (its error written).
async fn inputs(
    shell: &Shell,
    cmd: &str,
    paths: &[&String],
    io: &mut Io<'_>,
    each: &mut (dyn FnMut(&[u8]) + Send),
) -> bool {
    let mut ok = true;
    if paths.is_empty() {
        while let Some(chunk) = io.stdin.read().await {
            each(&chunk);
        }
        return ok;
    }
    for p in paths {
        if *p == "-" {
            while let Some(chunk) = io.stdin.read().await {
                each(&chunk);
            }
            continue;
        }
        match shell.machine.files.read(&shell.absolute(p)) {
            Ok(data) => each(&data),
            Err(e) => {
                io.stderr.write(format!("{cmd}: can't open '{p}': {e}\n")).await;
                ok = false;
            }
        }
    }
    ok
}

async fn cat(shell: &Shell, args: &[String], io: &mut Io<'_>) -> i32 {
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-') || *a == "-").collect();
    // Stdin is copied as it comes: `cat` in an exec echoes each line the client sends.
    if paths.is_empty() || paths == ["-"] {
        while let Some(chunk) = io.stdin.read().await {
            if !io.stdout.write(chunk).await {
                break;
            }
        }
        return 0;
    }
    let mut out = Vec::new();
    let ok = inputs(shell, "cat", &paths, io, &mut |d| out.extend_from_slice(d)).await;
    io.stdout.write(out).await;
    i32::from(!ok)
}

/// `-n N` or `-N`: a count option's value, and the other arguments.
fn count_option(args: &[String], default: usize) -> (usize, Vec<&String>) {
    let (mut n, mut rest, mut i) = (default, Vec::new(), 0);
    while i < args.len() {
        let a = &args[i];
        if a == "-n" {
            n = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(default);
            i += 1;
        } else if let Some(v) =
            a.strip_prefix("-n").or_else(|| a.strip_prefix('-')).and_then(|v| v.parse().ok())
        {
            n = v;
        } else {
            rest.push(a);
        }
        i += 1;
    }
    (n, rest)
}

async fn head(shell: &Shell, args: &[String], io: &mut Io<'_>) -> i32 {
    let (n, paths) = count_option(args, 10);
    let mut data = Vec::new();
    let ok = inputs(shell, "head", &paths, io, &mut |d| data.extend_from_slice(d)).await;
    let kept: Vec<&[u8]> = data.split_inclusive(|b| *b == b'\n').take(n).collect();
    io.stdout.write(kept.concat()).await;
    i32::from(!ok)
}

async fn wc(shell: &Shell, args: &[String], io: &mut Io<'_>) -> i32 {
    let flags: String = args.iter().filter_map(|a| a.strip_prefix('-')).collect();
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut data = Vec::new();
    let ok = inputs(shell, "wc", &paths, io, &mut |d| data.extend_from_slice(d)).await;
    let lines = data.iter().filter(|b| **b == b'\n').count();
    let words = String::from_utf8_lossy(&data).split_whitespace().count();
    let counts: Vec<String> = match flags.as_str() {
        "l" => vec![lines.to_string()],
        "w" => vec![words.to_string()],
        "c" => vec![data.len().to_string()],
        _ => vec![format!("{lines:>7}"), format!("{words:>7}"), format!("{:>7}", data.len())],
    };
    io.stdout.write(format!("{}\n", counts.join(" "))).await;
    i32::from(!ok)
}

async fn ls(shell: &Shell, args: &[String], io: &mut Io<'_>) -> i32 {
    let mut paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let cwd = shell.cwd.clone();
    if paths.is_empty() {
        paths.push(&cwd);
    }
    let (mut out, mut status) = (String::new(), 0);
    let many = paths.len() > 1;
    for p in paths {
        match shell.machine.files.list(&shell.absolute(p)) {
            Ok(names) => {
                if many {
                    out.push_str(&format!("{p}:\n"));
                }
                for n in names {
                    // A file given by its path lists as given.
                    let shown = if shell.machine.files.is_dir(&shell.absolute(p)) { n } else { p.clone() };
                    out.push_str(&shown);
                    out.push('\n');
                }
            }
            Err(e) => {
                io.stderr.write(format!("ls: {p}: {e}\n")).await;
                status = 1;
            }
        }
    }
    io.stdout.write(out).await;
    status
}

async fn date(shell: &Shell, args: &[String], io: &Io<'_>) -> i32 {
    let now = shell.machine.clock.now();
    let format = args.iter().find_map(|a| a.strip_prefix('+')).unwrap_or("%a %b %e %H:%M:%S UTC %Y");
    match jiff::fmt::strtime::format(format, &now.to_zoned(jiff::tz::TimeZone::UTC)) {
        Ok(text) => write(io, format!("{text}\n")).await,
        Err(_) => {
            io.stderr.write(format!("date: invalid format '{format}'\n")).await;
            1
        }
    }
}

async fn env(shell: &mut Shell, name: &str, args: &[String], io: &mut Io<'_>) -> i32 {
    if name == "printenv" && !args.is_empty() {
        let mut status = 0;
        for a in args {
            match shell.environment().into_iter().find(|(k, _)| k == a) {
                Some((_, v)) => {
                    io.stdout.write(format!("{v}\n")).await;
                }
                None => status = 1,
            }
        }
        return status;
    }
    // `env NAME=value … COMMAND`: the command with those added.
    let assigns: Vec<&String> = args.iter().take_while(|a| a.contains('=')).collect();
    let rest = &args[assigns.len()..];
    let mut child = shell.clone();
    for a in &assigns {
        let (k, v) = a.split_once('=').unwrap_or((a, ""));
        child.vars.insert(k.to_owned(), v.to_owned());
        child.exported.insert(k.to_owned());
    }
    if !rest.is_empty() {
        return Box::pin(call(&mut child, rest, io)).await.status();
    }
    let text: String = child.environment().into_iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    write(io, text).await
}

/// A value `expr` computes with: an integer when it reads as one.
#[derive(Debug, Clone, PartialEq)]
enum ExprValue {
    Int(i64),
    Text(String),
}

impl ExprValue {
    fn of(token: &str) -> Self {
        token.parse().map_or_else(|_| Self::Text(token.to_owned()), Self::Int)
    }

    /// Null or zero: what `|` and `&` pass over, and exit status 1.
    fn is_null(&self) -> bool {
        match self {
            Self::Int(n) => *n == 0,
            Self::Text(t) => t.is_empty() || t.parse::<i64>() == Ok(0),
        }
    }

    fn int(&self) -> Result<i64, &'static str> {
        match self {
            Self::Int(n) => Ok(*n),
            Self::Text(t) => t.parse().map_err(|_| "non-numeric argument"),
        }
    }

    fn text(&self) -> String {
        match self {
            Self::Int(n) => n.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// `expr`'s grammar, loosest first: `|`, `&`, comparisons, `+ -`, `* / %`, parentheses.
struct ExprParser<'a> {
    args: &'a [String],
    at: usize,
}

impl ExprParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.at).map(String::as_str)
    }

    fn or(&mut self) -> Result<ExprValue, &'static str> {
        let mut left = self.and()?;
        while self.peek() == Some("|") {
            self.at += 1;
            let right = self.and()?;
            if left.is_null() {
                left = if right.is_null() { ExprValue::Int(0) } else { right };
            }
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<ExprValue, &'static str> {
        let mut left = self.compare()?;
        while self.peek() == Some("&") {
            self.at += 1;
            let right = self.compare()?;
            if left.is_null() || right.is_null() {
                left = ExprValue::Int(0);
            }
        }
        Ok(left)
    }

    fn compare(&mut self) -> Result<ExprValue, &'static str> {
        let mut left = self.sum()?;
        while let Some(op @ ("<" | "<=" | "=" | "==" | "!=" | ">=" | ">")) = self.peek() {
            let op = op.to_owned();
            self.at += 1;
            let right = self.sum()?;
            let order = match (left.int(), right.int()) {
                (Ok(a), Ok(b)) => a.cmp(&b),
                _ => left.text().cmp(&right.text()),
            };
            let holds = match op.as_str() {
                "<" => order.is_lt(),
                "<=" => order.is_le(),
                "=" | "==" => order.is_eq(),
                "!=" => order.is_ne(),
                ">=" => order.is_ge(),
                _ => order.is_gt(),
            };
            left = ExprValue::Int(i64::from(holds));
        }
        Ok(left)
    }

    fn sum(&mut self) -> Result<ExprValue, &'static str> {
        let mut left = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek() {
            let plus = op == "+";
            self.at += 1;
            let (a, b) = (left.int()?, self.product()?.int()?);
            left = ExprValue::Int(if plus { a.wrapping_add(b) } else { a.wrapping_sub(b) });
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<ExprValue, &'static str> {
        let mut left = self.primary()?;
        while let Some(op @ ("*" | "/" | "%")) = self.peek() {
            let op = op.to_owned();
            self.at += 1;
            let (a, b) = (left.int()?, self.primary()?.int()?);
            left = ExprValue::Int(match op.as_str() {
                "*" => a.wrapping_mul(b),
                _ if b == 0 => return Err("division by zero"),
                "/" => a.wrapping_div(b),
                _ => a.wrapping_rem(b),
            });
        }
        Ok(left)
    }

    fn primary(&mut self) -> Result<ExprValue, &'static str> {
        let token = self.peek().ok_or("syntax error")?.to_owned();
        self.at += 1;
        if token == "(" {
            let inner = self.or()?;
            if self.peek() != Some(")") {
                return Err("syntax error");
            }
            self.at += 1;
            return Ok(inner);
        }
        Ok(ExprValue::of(&token))
    }
}

/// `expr`: integer arithmetic, comparisons and `|`/`&` over its arguments, as busybox's: the
/// result printed, status 1 when it is null or zero, 2 on an error.
async fn expr(args: &[String], io: &Io<'_>) -> i32 {
    let mut parser = ExprParser { args, at: 0 };
    let result = parser.or().and_then(|v| if parser.at == args.len() { Ok(v) } else { Err("syntax error") });
    match result {
        Ok(v) => {
            let status = i32::from(v.is_null());
            write(io, format!("{}\n", v.text())).await;
            status
        }
        Err(why) => {
            io.stderr.write(format!("expr: {why}\n")).await;
            2
        }
    }
}

async fn seq(args: &[String], io: &Io<'_>) -> i32 {
    let nums: Result<Vec<i64>, _> = args.iter().map(|a| a.parse::<i64>()).collect();
    let (first, step, last) = match nums.as_deref() {
        Ok([last]) => (1, 1, *last),
        Ok([first, last]) => (*first, 1, *last),
        Ok([first, step, last]) if *step != 0 => (*first, *step, *last),
        _ => {
            let bad = args.iter().find(|a| a.parse::<i64>().is_err());
            let msg = bad.map_or_else(
                || "seq: usage: seq [FIRST [INC]] LAST\n".to_owned(),
                |b| format!("seq: invalid number '{b}'\n"),
            );
            io.stderr.write(msg).await;
            return 1;
        }
    };
    let mut out = String::new();
    let mut i = first;
    while (step > 0 && i <= last) || (step < 0 && i >= last) {
        out.push_str(&format!("{i}\n"));
        i += step;
    }
    write(io, out).await
}

async fn sleep(shell: &Shell, args: &[String], io: &Io<'_>) -> i32 {
    let mut total = Duration::ZERO;
    for a in args {
        if a == "infinity" {
            std::future::pending::<()>().await;
        }
        let (num, unit) = match a.char_indices().last() {
            Some((i, c @ ('s' | 'm' | 'h' | 'd'))) => (&a[..i], c),
            _ => (a.as_str(), 's'),
        };
        let secs = match num.parse::<f64>() {
            Ok(n) if n >= 0.0 && n.is_finite() => n,
            _ => {
                io.stderr.write(format!("sleep: invalid number '{a}'\n")).await;
                return 1;
            }
        };
        let scale = match unit {
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => 1.0,
        };
        total += Duration::try_from_secs_f64(secs * scale).unwrap_or(Duration::MAX);
    }
    if args.is_empty() {
        io.stderr.write("sleep: missing operand\n").await;
        return 1;
    }
    shell.machine.clock.sleep(total).await;
    0
}

async fn yes(args: &[String], io: &Io<'_>) -> i32 {
    let line = if args.is_empty() { "y\n".to_owned() } else { format!("{}\n", args.join(" ")) };
    // Until the reader goes: `yes` in a pipeline is not supported (the pipeline runs in turn).
    while io.stdout.write(line.clone()).await && !io.stdout.is_null() {
        tokio::task::yield_now().await;
    }
    0
}

/// `test` / `[ … ]`: 0 when the expression holds, 1 when not, 2 when it is malformed.
fn test(shell: &Shell, args: &[String]) -> i32 {
    fn eval(shell: &Shell, a: &[&str]) -> Option<bool> {
        let files = &shell.machine.files;
        Some(match a {
            [] => false,
            ["!", rest @ ..] => !eval(shell, rest)?,
            [s] => !s.is_empty(),
            ["-n", s] => !s.is_empty(),
            ["-z", s] => s.is_empty(),
            // As root: what exists can be read and written.
            ["-e" | "-r" | "-w", p] => files.exists(&shell.absolute(p)),
            ["-f", p] => files.file_size(&shell.absolute(p)).is_some(),
            ["-s", p] => files.file_size(&shell.absolute(p)).is_some_and(|n| n > 0),
            ["-d", p] => files.is_dir(&shell.absolute(p)),
            [l, "=" | "==", r] => l == r,
            [l, "!=", r] => l != r,
            [l, op, r] => {
                let (l, r) = (l.trim().parse::<i64>().ok()?, r.trim().parse::<i64>().ok()?);
                match *op {
                    "-eq" => l == r,
                    "-ne" => l != r,
                    "-lt" => l < r,
                    "-le" => l <= r,
                    "-gt" => l > r,
                    "-ge" => l >= r,
                    _ => return None,
                }
            }
            _ => return None,
        })
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match eval(shell, &a) {
        Some(true) => 0,
        Some(false) => 1,
        None => 2,
    }
}

async fn read(shell: &mut Shell, args: &[String], io: &mut Io<'_>) -> i32 {
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some(line) = io.stdin.read_line().await else { return 1 };
    let text = String::from_utf8_lossy(&line);
    let text = text.trim_end_matches('\n');
    let mut fields = text.split_whitespace();
    for (i, n) in names.iter().enumerate() {
        // The last name takes the rest of the line.
        let value = if i + 1 == names.len() {
            fields.by_ref().collect::<Vec<_>>().join(" ")
        } else {
            fields.next().unwrap_or_default().to_owned()
        };
        shell.vars.insert((*n).clone(), value);
    }
    if names.is_empty() {
        shell.vars.insert("REPLY".to_owned(), text.to_owned());
    }
    i32::from(!line.ends_with(b"\n"))
}

async fn files(shell: &Shell, name: &str, args: &[String], io: &Io<'_>) -> i32 {
    let flags: String = args.iter().filter_map(|a| a.strip_prefix('-')).collect();
    let mut status = 0;
    for p in args.iter().filter(|a| !a.starts_with('-')) {
        let path = shell.absolute(p);
        let fs = &shell.machine.files;
        let result = match name {
            "mkdir" if flags.contains('p') && fs.is_dir(&path) => Ok(()),
            "mkdir" => fs.mkdir(&path),
            "rm" => match fs.remove(&path) {
                Err(_) if flags.contains('f') => Ok(()),
                r => r,
            },
            _ => {
                if fs.exists(&path) {
                    Ok(())
                } else {
                    fs.write(&path, b"", true)
                }
            }
        };
        if let Err(e) = result {
            let verb = match name {
                "mkdir" => "can't create directory",
                "rm" => "can't remove",
                _ => "can't touch",
            };
            io.stderr.write(format!("{name}: {verb} '{p}': {e}\n")).await;
            status = 1;
        }
    }
    status
}

/// `sh -c SCRIPT [NAME [ARGS…]]`, `sh FILE`, or `sh` reading commands from stdin: each line run
/// when it completes a command, so a client that writes a line sees its output before the next.
async fn sh(shell: &mut Shell, name: &str, args: &[String], io: &mut Io<'_>) -> i32 {
    match args.first().map(String::as_str) {
        Some("-c") => {
            let Some(script) = args.get(1) else {
                io.stderr.write(format!("{name}: -c requires an argument\n")).await;
                return 2;
            };
            let mut positional: Vec<String> = args[2..].to_vec();
            if positional.is_empty() {
                positional.push(name.to_owned());
            }
            let mut child = shell.clone();
            child.args = positional;
            run_text(&mut child, name, script, io).await
        }
        Some(path) if !path.starts_with('-') => match shell.machine.files.read(&shell.absolute(path)) {
            Ok(data) => {
                let mut child = shell.clone();
                child.args = args.to_vec();
                run_text(&mut child, name, &String::from_utf8_lossy(&data), io).await
            }
            Err(e) => {
                io.stderr.write(format!("{name}: can't open '{path}': {e}\n")).await;
                127
            }
        },
        _ => {
            let mut child = shell.clone();
            child.args = vec![name.to_owned()];
            interactive(&mut child, name, io).await
        }
    }
}

async fn run_text(shell: &mut Shell, name: &str, text: &str, io: &mut Io<'_>) -> i32 {
    match parse::parse(text) {
        Ok(script) => shell.run(&script, io).await.status(),
        Err(e) => {
            io.stderr.write(format!("{name}: {e}\n")).await;
            2
        }
    }
}

/// Commands from stdin, line by line; with a terminal, a prompt before each.
async fn interactive(shell: &mut Shell, name: &str, io: &mut Io<'_>) -> i32 {
    let mut text = String::new();
    loop {
        if shell.tty {
            let prompt = if text.is_empty() { format!("{} # ", shell.cwd) } else { "> ".to_owned() };
            io.stderr.write(prompt).await;
        }
        let Some(line) = io.stdin.read_line().await else { return shell.status };
        text.push_str(&String::from_utf8_lossy(&line));
        let script = match parse::parse(&text) {
            Ok(s) => s,
            Err(ParseError::Incomplete) if line.ends_with(b"\n") => continue,
            Err(e) => {
                io.stderr.write(format!("{name}: {e}\n")).await;
                text.clear();
                shell.status = 2;
                continue;
            }
        };
        text.clear();
        if let Flow::Exit(code) = shell.run(&script, io).await {
            return code;
        }
    }
}
