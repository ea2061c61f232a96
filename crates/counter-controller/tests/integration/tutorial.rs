//! Keeps the tutorials (`docs/tutorial.md`, `docs/tutorial.zh-CN.md`) and the Chinese README
//! true as the code changes under them. The Markdown is parsed and checked against the tree and
//! the real binary:
//!
//! * every relative link exists (a `#L<n>` anchor within the file's length); every repository
//!   path written in code (`examples/cm-web.yaml`, a file name or a path ending in `/`) exists;
//! * a link whose text is one code span `` `KIND NAME` `` (`fn`, `struct`, `enum`, `trait`,
//!   `const`, `type`; `fn Type::method` for a method) names a declaration in the linked file;
//!   the other code spans' `snake_case` names and `A::B` paths occur in the workspace's Rust
//!   sources; a bare `` `fn name` `` outside such a link is refused, since nothing says where
//!   to look for it;
//! * a ```` ```rust PATH ```` block is an excerpt: its lines, trimmed, occur in that order in
//!   `PATH` (a `// ...` line is an elision);
//! * every flag given to `counter-controller` (in a shell block or a code span, by
//!   `cargo run -p counter-controller -- …` or the binary itself) is in that subcommand's
//!   `--help`, and a code span that is a flag (`--demo`) is in some subcommand's `--help`;
//! * every ```` ```sh runnable ```` block runs, in order, with `bash -e -o pipefail` from the
//!   workspace root against a `counter-controller sandbox` started for that document;
//! * both tutorials have the same sections, runnable blocks (comments aside) and named items, and
//!   `README.zh-CN.md` shares `README.md`'s first two commands.

use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const TUTORIALS: [&str; 2] = ["docs/tutorial.md", "docs/tutorial.zh-CN.md"];
/// Checked for links, names and flags (it has no runnable blocks).
const CHINESE_README: &str = "README.zh-CN.md";
const KINDS: [&str; 6] = ["fn", "struct", "enum", "trait", "const", "type"];
/// A runnable block longer than this is stuck: every wait in the tutorials has its own timeout.
const BLOCK_LIMIT: Duration = Duration::from_secs(180);

// ---- The Markdown, as far as these checks read it ----

struct Block {
    line: usize,
    info: String,
    text: String,
}

struct Link {
    line: usize,
    target: String,
    /// The code of the text when the text is exactly one code span.
    code: Option<String>,
}

struct Span {
    line: usize,
    code: String,
}

struct Doc {
    rel: String,
    blocks: Vec<Block>,
    links: Vec<Link>,
    /// Code spans outside link texts.
    spans: Vec<Span>,
    headings: Vec<String>,
    /// Malformed Markdown the checks would misread.
    errors: Vec<String>,
}

impl Doc {
    fn parse(rel: &str) -> Self {
        let text =
            std::fs::read_to_string(workspace_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let mut doc = Doc {
            rel: rel.to_owned(),
            blocks: Vec::new(),
            links: Vec::new(),
            spans: Vec::new(),
            headings: Vec::new(),
            errors: Vec::new(),
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let trimmed = line.trim_start();
            if let Some(info) = trimmed.strip_prefix("```") {
                let indent = line.len() - trimmed.len();
                let start = i + 1;
                let mut body = Vec::new();
                i += 1;
                while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                    let l = lines[i];
                    let strip = l.len() - l.trim_start().len();
                    body.push(&l[strip.min(indent)..]);
                    i += 1;
                }
                if i == lines.len() {
                    doc.errors.push(format!("{rel}:{start}: a fenced block that never closes"));
                }
                doc.blocks.push(Block { line: start, info: info.trim().to_owned(), text: body.join("\n") });
            } else {
                if line.starts_with("## ") {
                    doc.headings.push(line.to_owned());
                }
                doc.inline(line, i + 1);
            }
            i += 1;
        }
        doc
    }

    /// Code spans and links of one line (neither spans lines in these documents).
    fn inline(&mut self, line: &str, n: usize) {
        // Code spans are replaced by numbered placeholders, so brackets inside code do not read
        // as links.
        let mut codes: Vec<String> = Vec::new();
        let mut masked = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '`' {
                masked.push(chars[i]);
                i += 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|&&c| c == '`').count();
            let open_end = i + run;
            let mut j = open_end;
            let close = loop {
                if j >= chars.len() {
                    break None;
                }
                if chars[j] == '`' {
                    let r = chars[j..].iter().take_while(|&&c| c == '`').count();
                    if r == run {
                        break Some(j);
                    }
                    j += r;
                } else {
                    j += 1;
                }
            };
            let Some(close) = close else {
                self.errors.push(format!("{}:{n}: a code span that does not close on its line", self.rel));
                return;
            };
            let raw: String = chars[open_end..close].iter().collect();
            let code = if raw.len() > 1 && raw.starts_with(' ') && raw.ends_with(' ') {
                raw[1..raw.len() - 1].to_owned()
            } else {
                raw
            };
            masked.push_str(&format!("\u{e000}{}\u{e001}", codes.len()));
            codes.push(code);
            i = close + run;
        }
        let placeholder =
            |s: &str| -> Option<usize> { s.strip_prefix('\u{e000}')?.strip_suffix('\u{e001}')?.parse().ok() };
        let mut in_link = HashSet::new();
        let m: Vec<char> = masked.chars().collect();
        let mut k = 0;
        while k < m.len() {
            let Some((text, target, end)) = link_at(&m, k) else {
                k += 1;
                continue;
            };
            let code = placeholder(&text).map(|p| codes[p].clone());
            for piece in text.split('\u{e000}').skip(1) {
                if let Some(p) = piece.split('\u{e001}').next().and_then(|d| d.parse::<usize>().ok()) {
                    in_link.insert(p);
                }
            }
            self.links.push(Link { line: n, target, code });
            k = end + 1;
        }
        for (p, code) in codes.into_iter().enumerate() {
            if !in_link.contains(&p) {
                self.spans.push(Span { line: n, code });
            }
        }
    }

    fn dir(&self) -> PathBuf {
        workspace_root().join(&self.rel).parent().unwrap().to_path_buf()
    }

    fn runnable(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter().filter(|b| b.info == "sh runnable")
    }

    fn shell(&self) -> impl Iterator<Item = &Block> {
        self.blocks.iter().filter(|b| b.info == "sh" || b.info == "sh runnable")
    }

    /// The `(kind name, file)` items its links name.
    fn items(&self) -> BTreeSet<(String, PathBuf)> {
        self.links
            .iter()
            .filter_map(|l| {
                let code = l.code.as_ref()?;
                item_of(code)?;
                let file = self.dir().join(l.target.split('#').next().unwrap());
                Some((code.clone(), file.canonicalize().unwrap_or(file)))
            })
            .collect()
    }
}

/// The link `[text](target)` starting at `k`, and where it ends.
fn link_at(m: &[char], k: usize) -> Option<(String, String, usize)> {
    if m[k] != '[' {
        return None;
    }
    let close = k + m[k..].iter().position(|&c| c == ']')?;
    if m.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = close + m[close..].iter().position(|&c| c == ')')?;
    Some((m[k + 1..close].iter().collect(), m[close + 2..end].iter().collect(), end))
}

fn all_docs() -> Vec<Doc> {
    TUTORIALS.iter().chain([&CHINESE_README]).map(|d| Doc::parse(d)).collect()
}

fn tutorials() -> Vec<Doc> {
    TUTORIALS.iter().map(|d| Doc::parse(d)).collect()
}

fn assert_none(what: &str, errors: Vec<String>) {
    assert!(errors.is_empty(), "{what}:\n  {}", errors.join("\n  "));
}

// ---- Names ----

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `("fn", ["Controller", "sync"])` from `fn Controller::sync`.
fn item_of(code: &str) -> Option<(&str, Vec<&str>)> {
    let (kind, name) = code.split_once(' ')?;
    if !KINDS.contains(&kind) {
        return None;
    }
    let path: Vec<&str> = name.split("::").collect();
    path.iter().all(|s| !s.is_empty() && s.chars().all(is_ident)).then_some((kind, path))
}

/// Whether `src` has `kind name` as whole words (`fn sync(`, `struct Item<'q`, `const ANNOTATION:`).
fn declares(src: &str, kind: &str, name: &str) -> bool {
    let needle = format!("{kind} {name}");
    src.match_indices(&needle).any(|(at, _)| {
        let before = src[..at].chars().next_back();
        let after = src[at + needle.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !is_ident(c)).any(|w| w == word)
}

/// Whether `owner` is a type or trait of `src`, or has an `impl` there.
fn owns(src: &str, owner: &str) -> bool {
    ["struct", "enum", "trait"].iter().any(|k| declares(src, k, owner))
        || src.lines().any(|l| l.trim_start().starts_with("impl") && has_word(l, owner))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every identifier in the workspace's Rust sources.
fn source_words() -> HashSet<String> {
    let mut files = Vec::new();
    for d in ["crates", "examples"] {
        rust_files(&workspace_root().join(d), &mut files);
    }
    let mut words = HashSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        words.extend(text.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty()).map(str::to_owned));
    }
    words
}

fn is_snake_case(s: &str) -> bool {
    let s = s.strip_suffix("()").unwrap_or(s);
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.contains('_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The `A::B::c` paths in a piece of code.
fn rust_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if is_ident(c) {
            word.push(c);
            continue;
        }
        if c == ':' && chars.peek() == Some(&':') && !word.is_empty() {
            chars.next();
            current.push(std::mem::take(&mut word));
            continue;
        }
        if !current.is_empty() && !word.is_empty() {
            current.push(std::mem::take(&mut word));
            paths.push(std::mem::take(&mut current));
        }
        current.clear();
        word.clear();
    }
    if !current.is_empty() && !word.is_empty() {
        current.push(word);
        paths.push(current);
    }
    paths
}

// ---- Shell words and our binary's invocations ----

/// Shell words of one logical line, `#` comments dropped; quotes and backslashes handled as the
/// shell does for the simple commands these documents hold.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                started = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                started = true;
                word.extend(chars.next());
            }
            '#' if !started => break,
            c if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// The logical lines of a shell block (backslash continuations joined).
fn shell_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
        } else {
            pending.push_str(line);
            out.push(std::mem::take(&mut pending));
        }
    }
    if !pending.is_empty() {
        out.push(pending);
    }
    out
}

/// The simple commands of a line's words, split at `|`, `&&`, `||`, `;` and `&`.
fn commands(words: &[String]) -> Vec<&[String]> {
    words.split(|w| ["|", "&&", "||", ";", "&"].contains(&w.as_str())).filter(|c| !c.is_empty()).collect()
}

/// The arguments given to `counter-controller` by `command`, if it runs it: `cargo run … -p
/// counter-controller … -- ARGS`, or the binary (by any path) itself. `strict` when the command
/// is certainly a command (a shell block); a code span starting with the name may be a log line.
fn our_args(command: &[String], strict: bool) -> Option<Vec<String>> {
    let start = command.iter().position(|w| !w.contains('=') || w.starts_with('-'))?;
    let command = &command[start..];
    if command.first()? == "cargo" && command.get(1).is_some_and(|w| w == "run") {
        let ours = command
            .windows(2)
            .any(|w| ["-p", "--package", "--bin"].contains(&w[0].as_str()) && w[1] == "counter-controller")
            || command.iter().any(|w| w == "--package=counter-controller");
        let dashes = command.iter().position(|w| w == "--");
        return match (ours, dashes) {
            (true, Some(d)) => Some(command[d + 1..].to_vec()),
            (true, None) => Some(Vec::new()),
            _ => None,
        };
    }
    let program = command.first()?;
    if program.rsplit('/').next() != Some("counter-controller") {
        return None;
    }
    let args = command[1..].to_vec();
    let plausible =
        args.first().is_none_or(|a| a.starts_with('-') || ["run", "sandbox", "help"].contains(&a.as_str()));
    (strict || plausible).then_some(args)
}

struct Help {
    root: String,
    run: String,
    sandbox: String,
}

impl Help {
    fn of_binary() -> Self {
        let help = |args: &[&str]| {
            let out = Command::new(BIN).args(args).output().expect("the binary runs");
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        Self { root: help(&["--help"]), run: help(&["run", "--help"]), sandbox: help(&["sandbox", "--help"]) }
    }

    fn has(text: &str, flag: &str) -> bool {
        text.match_indices(flag).any(|(at, _)| {
            !text[at + flag.len()..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    }

    /// Problems with one invocation's arguments.
    fn check(&self, args: &[String]) -> Vec<String> {
        let (help, name, rest) = match args.first().map(String::as_str) {
            Some("run") => (&self.run, "run", &args[1..]),
            Some("sandbox") => (&self.sandbox, "sandbox", &args[1..]),
            Some("help") => return Vec::new(),
            Some(a) if !a.starts_with('-') => return vec![format!("no subcommand {a:?}")],
            _ => (&self.root, "(no subcommand)", args),
        };
        rest.iter()
            .filter(|a| a.starts_with("--") && a.len() > 2)
            .map(|a| a.split('=').next().unwrap())
            .filter(|flag| !Self::has(help, flag))
            .map(|flag| format!("{flag} is not in the --help of {name}"))
            .collect()
    }

    fn any_has(&self, flag: &str) -> bool {
        [&self.root, &self.run, &self.sandbox].iter().any(|h| Self::has(h, flag))
    }
}

// ---- Paths ----

/// The workspace's top-level entries a path written in a document may start with.
fn top_level() -> HashSet<String> {
    std::fs::read_dir(workspace_root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "target")
        .collect()
}

/// `word`, if it reads as a repository path: it starts with a top-level entry and names a file
/// (an extension) or a directory (a trailing `/`). `deploy/web` (kubectl's kind/name) is neither.
fn repo_path<'a>(word: &'a str, top: &HashSet<String>) -> Option<&'a str> {
    let word = word.trim_end_matches([',', '.', ';', ':', ')']);
    let word = word.strip_prefix("./").unwrap_or(word);
    let (first, _) = word.split_once('/')?;
    let last = word.rsplit('/').next().unwrap();
    let file = last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    (top.contains(first) && (file || word.ends_with('/'))).then_some(word)
}

// ---- The checks ----

#[test]
fn every_link_and_path_in_the_tutorials_exists() {
    let root = workspace_root();
    let top = top_level();
    let mut errors = Vec::new();
    for doc in all_docs() {
        errors.extend(doc.errors.iter().cloned());
        for l in &doc.links {
            let t = l.target.as_str();
            if t.starts_with("http://") || t.starts_with("https://") || t.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = t.split_once('#').unwrap_or((t, ""));
            let file = doc.dir().join(path);
            if path.is_empty() || !file.exists() {
                errors.push(format!("{}:{}: link to {t:?}: no such file", doc.rel, l.line));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            // Only line anchors can be checked reliably; headings' anchors differ by renderer.
            let lines: Option<Vec<usize>> =
                anchor.split('-').map(|a| a.strip_prefix('L')?.parse().ok()).collect();
            match lines {
                Some(lines) if !lines.is_empty() => {
                    let have = std::fs::read_to_string(&file).unwrap_or_default().lines().count();
                    if lines.iter().any(|&n| n == 0 || n > have) {
                        errors.push(format!("{}:{}: {t:?}: the file has {have} lines", doc.rel, l.line));
                    }
                }
                _ => errors.push(format!("{}:{}: {t:?}: only #L<n> anchors are allowed", doc.rel, l.line)),
            }
        }
        let words_of_spans =
            doc.spans.iter().map(|s| (s.line, s.code.split_whitespace().map(str::to_owned).collect()));
        let words_of_blocks = doc
            .shell()
            .flat_map(|b| shell_lines(&b.text).into_iter().map(move |l| (b.line, shell_words(&l))))
            .collect::<Vec<_>>();
        for (line, words) in words_of_spans.chain(words_of_blocks) {
            let words: Vec<String> = words;
            for w in &words {
                if let Some(p) = repo_path(w, &top)
                    && !root.join(p).exists()
                {
                    errors.push(format!("{}:{line}: {p}: no such file or directory", doc.rel));
                }
            }
        }
    }
    assert_none("paths the documents name that do not exist", errors);
}

#[test]
fn every_name_the_tutorials_mention_is_declared_where_they_say() {
    let words = source_words();
    let mut errors = Vec::new();
    for doc in all_docs() {
        for l in &doc.links {
            let Some(code) = &l.code else { continue };
            let Some((kind, path)) = item_of(code) else { continue };
            let file = doc.dir().join(l.target.split('#').next().unwrap());
            let Ok(src) = std::fs::read_to_string(&file) else {
                errors.push(format!("{}:{}: `{code}` links to {:?}, not a file", doc.rel, l.line, l.target));
                continue;
            };
            let (name, owner) = (path[path.len() - 1], path.len().checked_sub(2).map(|i| path[i]));
            if !declares(&src, kind, name) {
                errors.push(format!("{}:{}: no `{kind} {name}` in {}", doc.rel, l.line, l.target));
            }
            if let Some(owner) = owner
                && !owns(&src, owner)
            {
                errors
                    .push(format!("{}:{}: no type, trait or impl {owner} in {}", doc.rel, l.line, l.target));
            }
        }
        for s in &doc.spans {
            if item_of(&s.code).is_some() {
                errors.push(format!(
                    "{}:{}: `{}`: name an item as a link to its file, [`{}`](path)",
                    doc.rel, s.line, s.code, s.code
                ));
                continue;
            }
            if is_snake_case(&s.code) && !words.contains(s.code.trim_end_matches("()")) {
                errors
                    .push(format!("{}:{}: `{}` occurs nowhere in the Rust sources", doc.rel, s.line, s.code));
            }
            for p in rust_paths(&s.code) {
                if let Some(missing) = p.iter().find(|seg| !words.contains(seg.as_str())) {
                    errors.push(format!(
                        "{}:{}: `{}`: {missing} occurs nowhere in the Rust sources",
                        doc.rel,
                        s.line,
                        p.join("::")
                    ));
                }
            }
        }
    }
    assert_none("names the documents mention that the code does not have", errors);
}

#[test]
fn every_excerpt_is_quoted_from_its_file() {
    let mut errors = Vec::new();
    for doc in all_docs() {
        for b in doc.blocks.iter().filter(|b| b.info.split_whitespace().next() == Some("rust")) {
            let Some(path) = b.info.split_whitespace().nth(1) else {
                errors.push(format!("{}:{}: a rust block names no file (```rust PATH)", doc.rel, b.line));
                continue;
            };
            let Ok(src) = std::fs::read_to_string(workspace_root().join(path)) else {
                errors.push(format!("{}:{}: {path}: no such file", doc.rel, b.line));
                continue;
            };
            let source: Vec<&str> = src.lines().map(str::trim).collect();
            let mut at = 0;
            for (i, line) in b.text.lines().enumerate() {
                let want = line.trim();
                if want.is_empty() || want == "// ..." || want == "// …" {
                    continue;
                }
                match source[at..].iter().position(|l| *l == want) {
                    Some(p) => at += p + 1,
                    None => {
                        errors.push(format!(
                            "{}:{}: excerpt line not in {path} (after the lines before it): {want}",
                            doc.rel,
                            b.line + i
                        ));
                        break;
                    }
                }
            }
        }
    }
    assert_none("excerpts that are not the code", errors);
}

#[test]
fn every_flag_the_tutorials_mention_is_in_the_help() {
    let help = Help::of_binary();
    let mut errors = Vec::new();
    for doc in all_docs() {
        for b in doc.shell() {
            for line in shell_lines(&b.text) {
                let words = shell_words(&line);
                for c in commands(&words) {
                    if let Some(args) = our_args(c, true) {
                        errors.extend(
                            help.check(&args).into_iter().map(|e| format!("{}:{}: {e}", doc.rel, b.line)),
                        );
                    }
                }
            }
        }
        for s in &doc.spans {
            let words = shell_words(&s.code);
            if let Some(flag) = words.first().filter(|w| w.starts_with("--") && w.len() > 2) {
                let flag = flag.split('=').next().unwrap();
                if !help.any_has(flag) {
                    errors.push(format!("{}:{}: {flag} is in no subcommand's --help", doc.rel, s.line));
                }
                continue;
            }
            for c in commands(&words) {
                if let Some(args) = our_args(c, false) {
                    errors.extend(
                        help.check(&args).into_iter().map(|e| format!("{}:{}: {e}", doc.rel, s.line)),
                    );
                }
            }
        }
    }
    assert_none("flags the documents give that the binary does not have", errors);
}

/// A runnable block's commands without comments or layout: what must agree across languages.
fn commands_of(b: &Block) -> Vec<Vec<String>> {
    shell_lines(&b.text).iter().map(|l| shell_words(l)).filter(|w| !w.is_empty()).collect()
}

#[test]
fn both_languages_say_the_same() {
    let docs = tutorials();
    let (en, zh) = (&docs[0], &docs[1]);
    let mut errors = Vec::new();
    if en.headings.len() != zh.headings.len() {
        errors.push(format!(
            "{} has {} sections, {} has {}",
            en.rel,
            en.headings.len(),
            zh.rel,
            zh.headings.len()
        ));
    }
    let (a, b): (Vec<_>, Vec<_>) = (en.runnable().collect(), zh.runnable().collect());
    if a.len() != b.len() {
        errors.push(format!("{} has {} runnable blocks, {} has {}", en.rel, a.len(), zh.rel, b.len()));
    }
    for (x, y) in a.iter().zip(&b) {
        if commands_of(x) != commands_of(y) {
            errors.push(format!("runnable blocks differ: {}:{} and {}:{}", en.rel, x.line, zh.rel, y.line));
        }
    }
    let (ia, ib) = (en.items(), zh.items());
    for (code, file) in ia.difference(&ib) {
        errors.push(format!("`{code}` ({}) is named in {} only", file.display(), en.rel));
    }
    for (code, file) in ib.difference(&ia) {
        errors.push(format!("`{code}` ({}) is named in {} only", file.display(), zh.rel));
    }
    for d in &docs {
        if d.runnable().count() < 5 {
            errors.push(format!("{}: fewer than 5 runnable blocks; were the markers lost?", d.rel));
        }
    }
    assert_none("the two tutorials disagree", errors);
}

#[test]
fn the_readmes_link_the_tutorials_and_share_the_first_two_commands() {
    let readme = Doc::parse("README.md");
    let zh = Doc::parse(CHINESE_README);
    let mut errors = Vec::new();
    let linked: HashSet<&str> = readme.links.iter().map(|l| l.target.as_str()).collect();
    for want in ["docs/tutorial.md", "docs/tutorial.zh-CN.md", CHINESE_README] {
        if !linked.contains(want) {
            errors.push(format!("README.md does not link {want}"));
        }
    }
    let zh_lines: Vec<Vec<String>> =
        zh.shell().flat_map(|b| shell_lines(&b.text)).map(|l| shell_words(&l)).collect();
    for b in readme.shell().take(2) {
        let first = shell_lines(&b.text).iter().map(|l| shell_words(l)).find(|w| !w.is_empty());
        if let Some(first) = first
            && !zh_lines.contains(&first)
        {
            errors.push(format!("{CHINESE_README} lacks README.md's command `{}`", first.join(" ")));
        }
    }
    if !zh.links.iter().any(|l| l.target == "docs/tutorial.zh-CN.md") {
        errors.push(format!("{CHINESE_README} does not link docs/tutorial.zh-CN.md"));
    }
    assert_none("the READMEs", errors);
}

// ---- Running the runnable blocks ----

/// Refuses what cannot run unattended: a watch never ends, and the test sets KUBECONFIG and
/// must not start cargo inside cargo.
fn unattended(b: &Block) -> Result<(), String> {
    for words in commands_of(b) {
        if let Some(w) = words.iter().find(|w| ["-w", "--watch", "edit"].contains(&w.as_str())) {
            return Err(format!("`{w}` does not end by itself: `{}`", words.join(" ")));
        }
        if words.iter().any(|w| w.contains("KUBECONFIG") || w == "cargo") {
            return Err(format!(
                "runnable blocks run kubectl with the test's KUBECONFIG: `{}`",
                words.join(" ")
            ));
        }
    }
    Ok(())
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Starts `counter-controller sandbox` for one document; its kubeconfig once it is listening.
fn start_sandbox(dir: &Path) -> (KillOnDrop, PathBuf, PathBuf) {
    let kubeconfig = dir.join("sandbox.kubeconfig");
    let log = dir.join("sandbox.log");
    let mut child = Command::new(BIN)
        .args(["sandbox", "--listen", "127.0.0.1:0", "--pod-ready", "50ms", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines.by_ref().map_while(Result::ok).any(|l| l.starts_with("export KUBECONFIG="));
    // Keep reading so the sandbox never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let process = KillOnDrop(child);
    assert!(listening, "the sandbox never printed its export line; its log:\n{}", tail(&log, 40));
    (process, kubeconfig, log)
}

/// Runs one block in its own process group (so a stuck kubectl is killed with it).
fn run_block(
    doc: &Doc,
    b: &Block,
    index: usize,
    dir: &Path,
    kubeconfig: &Path,
    log: &Path,
) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let (out, err) = (dir.join(format!("block-{index}.out")), dir.join(format!("block-{index}.err")));
    let mut child = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &b.text])
        .env("KUBECONFIG", kubeconfig)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .expect("bash starts");
    let deadline = Instant::now() + BLOCK_LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if status.is_some_and(|s| s.success()) {
        return Ok(());
    }
    let why = status.map_or_else(|| format!("still running after {BLOCK_LIMIT:?}"), |s| s.to_string());
    Err(format!(
        "{}:{}: runnable block failed ({why}):\n{}\n--- stdout\n{}\n--- stderr\n{}\n--- sandbox log (last 40 lines)\n{}",
        doc.rel,
        b.line,
        b.text,
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default(),
        tail(log, 40)
    ))
}

/// Runs a document's runnable blocks in order on a fresh sandbox; the first failure.
fn run_document(doc: &Doc) -> Result<(), String> {
    let blocks: Vec<&Block> = doc.runnable().collect();
    for b in &blocks {
        unattended(b).map_err(|e| format!("{}:{}: {e}", doc.rel, b.line))?;
    }
    let name = doc.rel.replace(['/', '.'], "-");
    let dir = temp_dir(&name);
    let (sandbox, kubeconfig, log) = start_sandbox(&dir);
    for (i, b) in blocks.iter().enumerate() {
        run_block(doc, b, i, &dir, &kubeconfig, &log)?;
    }
    drop(sandbox);
    // Kept on failure: its files are what the message quotes.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// kubectl's client minor version (`32` of 1.32).
fn kubectl_minor(kubectl: &Path) -> Option<u32> {
    let out = Command::new(kubectl).args(["version", "--client", "-o", "json"]).output().ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["clientVersion"]["minor"].as_str()?.trim_end_matches('+').parse().ok()
}

#[test]
fn the_runnable_blocks_run_on_the_sandbox() {
    let Some(kubectl) = kubectl() else { return };
    // The tutorials ask for 1.31 (`kubectl wait --for=create`): an older one would fail the
    // blocks with less telling messages.
    let minor = kubectl_minor(&kubectl);
    assert!(
        minor.is_some_and(|m| m >= 31),
        "the tutorials need kubectl 1.31 or later; {kubectl:?} is {}",
        minor.map_or_else(|| "of an unknown version".to_owned(), |m| format!("1.{m}"))
    );
    let docs = tutorials();
    // One sandbox per document, side by side: each language's blocks run from a clean start.
    let failures: Vec<String> = std::thread::scope(|s| {
        let running: Vec<_> = docs.iter().map(|d| s.spawn(|| run_document(d))).collect();
        running.into_iter().filter_map(|r| r.join().expect("no panic").err()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---- The checks catch what they are for ----

#[test]
fn the_checks_tell_right_from_wrong() {
    let src = "pub struct Item<'q, T> {}\nimpl<T> Item<'_, T> {\n    pub fn done(self) {}\n}\nconst ANNOTATION: &str = \"\";";
    assert!(
        declares(src, "fn", "done")
            && declares(src, "struct", "Item")
            && declares(src, "const", "ANNOTATION")
    );
    assert!(!declares(src, "fn", "don") && !declares(src, "struct", "Ite") && !declares(src, "fn", "undone"));
    assert!(owns(src, "Item") && !owns(src, "Queue"));
    assert_eq!(item_of("fn Controller::sync"), Some(("fn", vec!["Controller", "sync"])));
    assert_eq!(item_of("kubectl get deploy"), None);

    let top: HashSet<String> = ["examples", "deploy", "crates"].map(String::from).into();
    assert_eq!(repo_path("examples/cm-web.yaml", &top), Some("examples/cm-web.yaml"));
    assert_eq!(repo_path("deploy/", &top), Some("deploy/"));
    assert_eq!(repo_path("deploy/web", &top), None, "kubectl's kind/name is not a path");
    assert_eq!(repo_path("counter.example.com/desired", &top), None);

    let words = shell_words("HOSTNAME=a cargo run -p counter-controller -- run --leader-elect  # a comment");
    assert_eq!(words.last().map(String::as_str), Some("--leader-elect"));
    assert_eq!(our_args(&words, true), Some(vec!["run".to_owned(), "--leader-elect".to_owned()]));
    let quoted = shell_words("kubectl wait --for=jsonpath='{.spec.replicas}'=5 deploy/web");
    assert_eq!(quoted[2], "--for=jsonpath={.spec.replicas}=5");
    assert_eq!(our_args(&quoted, true), None);
    let log_line = shell_words("counter-controller started: watching ConfigMaps");
    assert_eq!(our_args(&log_line, false), None, "a log line in prose is not a command");
    assert!(our_args(&log_line, true).is_some(), "in a shell block it is, and fails as one");

    let help = Help::of_binary();
    assert!(help.check(&["sandbox".into(), "--demo".into(), "--listen=127.0.0.1:0".into()]).is_empty());
    assert_eq!(help.check(&["sandbox".into(), "--leader-elect".into()]).len(), 1, "a run flag on sandbox");
    assert_eq!(help.check(&["serve".into()]).len(), 1);
    assert!(!Help::has("--leader-elect-lease-duration", "--leader-elect"), "a prefix is not the flag");

    assert_eq!(
        rust_paths("Action::Nothing(Why::Converged)"),
        [vec!["Action", "Nothing"], vec!["Why", "Converged"]]
    );
    assert!(is_snake_case("add_rate_limited") && !is_snake_case("decide") && !is_snake_case("data.app"));

    let block = Block { line: 1, info: "sh runnable".into(), text: "kubectl get deploy web -w".into() };
    assert!(unattended(&block).is_err());
}
