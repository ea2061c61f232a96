//! The sandbox's modules form layers: no top-level module of `src/` depends, through any chain
//! of `crate::` and `super::` paths, on one that depends on it; nor does a sub-module of one
//! (`kinds/`, `cluster/`, `schema/`, …) on a sibling that depends on it.
//!
//! The check reads the sources, not the compiler's view: it blanks comments (doc links are not
//! dependencies), strings and `#[cfg(test)]` code, collects every path that starts with `crate`
//! or `super` (the groups of a `use crate::{a, b::{c}}` included), resolves each to the module
//! it names (a re-export at the crate root counts as the module it comes from) and looks for
//! strongly connected components. A failure prints each cycle, one edge a line, with the file
//! and line of the path that makes the edge.
//!
//! With `--nocapture` it also prints the layers, lowest first, with each top-level module's
//! lines and `pub` items: the figures the module table of `lib.rs` is kept against.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Sub-module groups whose siblings still depend on each other, and the siblings allowed to:
/// the store's storage keeps what the CRD and quota code define (their `impl State` blocks live
/// beside the code that uses them), and the HTTP layer's tables and printer columns call each
/// other. A new member or a new group
/// fails the test.
const KNOWN_SUBMODULE_CYCLES: &[(&str, &[&str])] =
    &[("store", &["crd", "frozen", "quota", "storage"]), ("rest", &["printer_columns", "table"])];

#[test]
fn the_sandboxs_modules_have_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src);

    let top = graph.top_level();
    let top_cycles = cycles(&top);
    let mut failures = String::new();
    for cycle in &top_cycles {
        let _ = writeln!(failures, "an import cycle between top-level modules:\n{}", describe(&top, cycle));
    }
    for (parent, siblings) in graph.sub_modules() {
        for cycle in cycles(&siblings) {
            let allowed =
                KNOWN_SUBMODULE_CYCLES.iter().find(|(p, _)| *p == parent).map_or(&[][..], |(_, m)| *m);
            if cycle.iter().all(|m| allowed.contains(&m.as_str())) {
                println!(
                    "known cycle in {parent}/: {}",
                    cycle.iter().cloned().collect::<Vec<_>>().join(", ")
                );
                continue;
            }
            let _ = writeln!(
                failures,
                "an import cycle between the sub-modules of {parent}/:\n{}",
                describe(&siblings, &cycle)
            );
        }
    }

    print_layers(&graph, &top, top_cycles.is_empty());
    assert!(failures.is_empty(), "{failures}");
}

/// A test that this test fails: two modules that name each other are a cycle, reported with
/// the places that make it.
#[test]
fn a_cycle_is_found_and_located() {
    let mut deps = Deps::default();
    deps.add("a", "b", "a.rs", 3);
    deps.add("b", "c", "b.rs", 7);
    deps.add("c", "a", "c.rs", 9);
    deps.add("c", "d", "c.rs", 10);
    let found = cycles(&deps);
    assert_eq!(found, [BTreeSet::from(["a".to_owned(), "b".to_owned(), "c".to_owned()])]);
    let text = describe(&deps, &found[0]);
    assert!(text.contains("a -> b (a.rs:3)") && text.contains("c -> a (c.rs:9)"), "{text}");
    assert!(!text.contains("-> d"), "{text}");
}

#[test]
fn paths_are_read_as_the_compiler_reads_them() {
    let src = r#"
        //! [`crate::ignored`] in a doc comment
        use crate::{a::{b, c::D}, e};
        use super::sibling::Thing;
        const S: &str = "crate::in_a_string";
        fn f<'a>(x: &'a str) -> char { let _ = crate::f::g(x); 'c' }
        #[cfg(test)]
        mod tests { use crate::only_in_tests; }
        mod inline { use super::super::up; }
    "#;
    let modules: BTreeSet<Vec<String>> =
        [&["a"][..], &["a", "c"], &["e"], &["f"], &["m"], &["m", "n"], &["m", "sibling"]]
            .iter()
            .map(|m| m.iter().map(|s| (*s).to_owned()).collect())
            .collect();
    let refs = references(&path(&["m", "n"]), src, &modules, &BTreeMap::new());
    let named: BTreeSet<(Vec<String>, Vec<String>)> = refs.into_iter().map(|r| (r.from, r.to)).collect();
    let expected: BTreeSet<(Vec<String>, Vec<String>)> = [
        (&["m", "n"][..], &["a"][..]),
        (&["m", "n"], &["a", "c"]),
        (&["m", "n"], &["e"]),
        (&["m", "n"], &["m", "sibling"]),
        (&["m", "n"], &["f"]),
        (&["m", "n", "inline"], &["m"]),
    ]
    .iter()
    .map(|(f, t)| (path(f), path(t)))
    .collect();
    assert_eq!(named, expected);
}

fn path(segments: &[&str]) -> Vec<String> {
    segments.iter().map(|s| (*s).to_owned()).collect()
}

/// The modules of the crate and the references between them.
struct Graph {
    /// Every reference from one module to another.
    references: Vec<Reference>,
    /// Per top-level module: lines outside `#[cfg(test)]` code, all lines, `pub` items.
    sizes: BTreeMap<String, Size>,
}

#[derive(Default)]
struct Size {
    code_lines: usize,
    lines: usize,
    public: usize,
    crate_public: usize,
}

/// A path in `from` that names an item of `to`, at `file:line`.
#[derive(Debug, Clone)]
struct Reference {
    from: Vec<String>,
    to: Vec<String>,
    file: String,
    line: usize,
}

impl Graph {
    fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        walk(src, &mut files);
        files.sort();
        let module_of = |file: &Path| -> Vec<String> {
            let rel = file.strip_prefix(src).expect("under src").with_extension("");
            let mut segments: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if segments.last().is_some_and(|s| s == "mod" || s == "lib") {
                segments.pop();
            }
            segments
        };
        let sources: Vec<(PathBuf, Vec<String>, String)> = files
            .into_iter()
            .map(|f| {
                let text = std::fs::read_to_string(&f).expect("readable source");
                let module = module_of(&f);
                (f, module, text)
            })
            .collect();

        // Files that only `#[cfg(test)] mod x;` declares are test code as a whole.
        let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
        for (_, module, text) in &sources {
            let code = blank_comments_and_literals(text);
            for child in test_module_declarations(&code) {
                let mut m = module.clone();
                m.push(child);
                test_only.insert(m);
            }
        }
        let is_test = |m: &[String]| test_only.iter().any(|t| m.starts_with(t));

        let mut modules: BTreeSet<Vec<String>> = BTreeSet::new();
        for (_, module, text) in &sources {
            if is_test(module) {
                continue;
            }
            modules.insert(module.clone());
            let code = without_test_items(&blank_comments_and_literals(text));
            for inline in inline_modules(module, &code) {
                modules.insert(inline);
            }
        }
        let lib = sources.iter().find(|(_, m, _)| m.is_empty()).map(|(_, _, t)| t.as_str()).unwrap_or("");
        let aliases = root_reexports(&without_test_items(&blank_comments_and_literals(lib)));

        let mut references = Vec::new();
        let mut sizes: BTreeMap<String, Size> = BTreeMap::new();
        for (file, module, text) in &sources {
            let top = module.first().cloned().unwrap_or_else(|| "lib".to_owned());
            let size = sizes.entry(top).or_default();
            size.lines += text.lines().count();
            if is_test(module) {
                continue;
            }
            let code = without_test_items(&blank_comments_and_literals(text));
            size.code_lines += code.lines().filter(|l| !l.trim().is_empty()).count();
            let (public, crate_public) = pub_items(&code);
            size.public += public;
            size.crate_public += crate_public;
            let name = file.strip_prefix(src).expect("under src").display().to_string();
            for mut r in references_in(module, &code, &modules, &aliases) {
                r.file.clone_from(&name);
                references.push(r);
            }
        }
        Self { references, sizes }
    }

    /// The graph of top-level modules (the crate root's own items are left out: `lib.rs`
    /// assembles every layer, and what it defines for the HTTP layer and the simulation is
    /// listed apart).
    fn top_level(&self) -> Deps {
        let mut deps = Deps::default();
        for r in &self.references {
            let (Some(from), Some(to)) = (r.from.first(), r.to.first()) else { continue };
            if from != to {
                deps.add(from, to, &r.file, r.line);
            }
        }
        deps
    }

    /// Per module with sub-modules, the graph of its direct sub-modules (a parent's own file is
    /// their hub and is left out; a reference to it is no edge).
    fn sub_modules(&self) -> BTreeMap<String, Deps> {
        let mut groups: BTreeMap<String, Deps> = BTreeMap::new();
        for r in &self.references {
            let common = r.from.iter().zip(&r.to).take_while(|(a, b)| a == b).count();
            if common == 0 || r.from.len() <= common || r.to.len() <= common {
                continue;
            }
            let parent = r.from[..common].join("::");
            groups.entry(parent).or_default().add(&r.from[common], &r.to[common], &r.file, r.line);
        }
        groups
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Edges between modules, each with the places that make it.
#[derive(Default)]
struct Deps {
    edges: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

impl Deps {
    fn add(&mut self, from: &str, to: &str, file: &str, line: usize) {
        self.edges.entry(to.to_owned()).or_default();
        let places = self.edges.entry(from.to_owned()).or_default().entry(to.to_owned()).or_default();
        let place = format!("{file}:{line}");
        if !places.contains(&place) {
            places.push(place);
        }
    }

    fn targets(&self, from: &str) -> impl Iterator<Item = &String> {
        self.edges.get(from).into_iter().flat_map(BTreeMap::keys)
    }
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(deps: &Deps) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        deps: &'a Deps,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on_stack.insert(v);
        let deps = w.deps;
        for t in deps.targets(v) {
            if !w.index.contains_key(t.as_str()) {
                visit(w, t);
                let low = w.low[v].min(w.low[t.as_str()]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(t.as_str()) {
                let low = w.low[v].min(w.index[t.as_str()]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = BTreeSet::new();
            while let Some(m) = w.stack.pop() {
                w.on_stack.remove(m);
                component.insert(m.to_owned());
                if m == v {
                    break;
                }
            }
            if component.len() > 1 {
                w.found.push(component);
            }
        }
    }
    let mut w = Walk {
        deps,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in deps.edges.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

/// One cycle through the component, edge by edge with its first place, then every edge inside
/// the component with all its places.
fn describe(deps: &Deps, component: &BTreeSet<String>) -> String {
    let start = component.first().expect("a non-empty component");
    // Breadth-first from `start` inside the component, back to `start`.
    let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.as_str()]);
    let mut back = None;
    while let Some(v) = queue.pop_front() {
        for t in deps.targets(v).filter(|t| component.contains(*t)) {
            if t == start {
                back = Some(v);
                break;
            }
            if !previous.contains_key(t.as_str()) {
                previous.insert(t, v);
                queue.push_back(t);
            }
        }
        if back.is_some() {
            break;
        }
    }
    let mut chain = vec![start.as_str()];
    let mut at = back.expect("a component holds a cycle");
    while at != start {
        chain.push(at);
        at = previous[at];
    }
    chain.push(start);
    chain.reverse();
    let members = component.iter().cloned().collect::<Vec<_>>().join(", ");
    let mut text = format!("  {} modules depend on each other: {members}\n  cycle:\n", component.len());
    for pair in chain.windows(2) {
        let places = &deps.edges[pair[0]][pair[1]];
        let _ = writeln!(text, "    {} -> {} ({})", pair[0], pair[1], places[0]);
    }
    text.push_str("  every edge inside it:\n");
    for from in component {
        for (to, places) in deps.edges[from].iter().filter(|(t, _)| component.contains(*t)) {
            let shown = places.iter().take(6).cloned().collect::<Vec<_>>().join(", ");
            let more = places.len().saturating_sub(6);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            let _ = writeln!(text, "    {from} -> {to}: {shown}{more}");
        }
    }
    text
}

/// Prints the layers (a module's layer is one above the highest it depends on; all in one when
/// there is a cycle), with lines and `pub` items, and the crate root's items other modules use.
fn print_layers(graph: &Graph, deps: &Deps, acyclic: bool) {
    fn layer<'a>(deps: &'a Deps, m: &'a str, memo: &mut BTreeMap<&'a str, usize>) -> usize {
        if let Some(l) = memo.get(m) {
            return *l;
        }
        let l = deps.targets(m).map(|t| layer(deps, t, memo) + 1).max().unwrap_or(0);
        memo.insert(m, l);
        l
    }
    let mut memo = BTreeMap::new();
    let mut layers: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for m in graph.sizes.keys().filter(|m| *m != "lib") {
        let l = if acyclic { layer(deps, m, &mut memo) } else { 0 };
        layers.entry(l).or_default().push(m);
    }
    if acyclic {
        println!("layers, lowest first (a module uses only modules of lower layers):");
    } else {
        println!("no layers: the modules have an import cycle");
    }
    for (l, modules) in &layers {
        println!("  {l}: {}", modules.join(", "));
    }
    println!("lib.rs assembles them all.");
    println!("\n{:<18} {:>6} {:>11} {:>5} {:>11}", "module", "lines", "code lines", "pub", "pub(crate)");
    let mut total = Size::default();
    for modules in layers.values() {
        for m in modules {
            let s = &graph.sizes[*m];
            println!("{m:<18} {:>6} {:>11} {:>5} {:>11}", s.lines, s.code_lines, s.public, s.crate_public);
            total.lines += s.lines;
            total.code_lines += s.code_lines;
            total.public += s.public;
            total.crate_public += s.crate_public;
        }
    }
    let s = &graph.sizes["lib"];
    println!("{:<18} {:>6} {:>11} {:>5} {:>11}", "lib", s.lines, s.code_lines, s.public, s.crate_public);
    println!(
        "{:<18} {:>6} {:>11} {:>5} {:>11}",
        "total",
        total.lines + s.lines,
        total.code_lines + s.code_lines,
        total.public + s.public,
        total.crate_public + s.crate_public
    );
    let mut root_users: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in graph.references.iter().filter(|r| r.to.is_empty() && !r.from.is_empty()) {
        root_users.entry(r.from[0].as_str()).or_default().insert(r.file.as_str());
    }
    for (m, files) in root_users {
        println!(
            "{m} uses the crate root's own items (the sandbox's state) in {}",
            files.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
}

/// `text` with comments, string and character literals blanked out (newlines kept, so lines
/// still count).
fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_at(&chars, i) {
            for &c in &chars[i..i + len] {
                blank(&mut out, c);
            }
            i += len;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' && char_literal_len(&chars, i).is_some() {
            let len = char_literal_len(&chars, i).expect("just checked");
            for _ in 0..len {
                out.push(' ');
            }
            i += len;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The length of a raw (byte) string literal starting at `i` (`r"…"`, `r#"…"#`, `br"…"`).
fn raw_string_at(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|h| chars.get(j + h) == Some(&'#')) {
            return Some(j + 1 + hashes - i);
        }
        j += 1;
    }
    Some(chars.len() - i)
}

/// The length of a character literal at `i` (`'x'`, `'\n'`, `'\u{1F600}'`); `None` for a
/// lifetime (`'a`).
fn char_literal_len(chars: &[char], i: usize) -> Option<usize> {
    match chars.get(i + 1)? {
        '\\' => {
            // The escaped character may itself be a quote: `'\''`.
            let end = (i + 3..chars.len().min(i + 14)).find(|&j| chars[j] == '\'')?;
            Some(end + 1 - i)
        }
        _ => (chars.get(i + 2) == Some(&'\'')).then_some(3),
    }
}

/// `code` with every `#[cfg(test)]` item blanked out: the attribute and the item after it, to
/// its closing brace or semicolon.
fn without_test_items(code: &str) -> String {
    let mut chars: Vec<char> = code.chars().collect();
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attr.len() <= chars.len() {
        if chars[i..i + attr.len()] != attr[..] {
            i += 1;
            continue;
        }
        let mut j = i + attr.len();
        let mut depth = 0i32;
        while j < chars.len() {
            match chars[j] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ';' if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        let end = j.min(chars.len() - 1);
        for c in &mut chars[i..=end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = j + 1;
    }
    chars.into_iter().collect()
}

/// The modules a file declares as `#[cfg(test)] mod name;`.
fn test_module_declarations(code: &str) -> Vec<String> {
    let pattern = ["#", "[", "cfg", "(", "test", ")", "]", "mod"];
    let tokens = tokens(code);
    tokens
        .windows(pattern.len() + 2)
        .filter(|w| w.iter().zip(pattern).all(|(t, p)| t.text == p) && w[pattern.len() + 1].text == ";")
        .map(|w| w[pattern.len()].text.clone())
        .collect()
}

/// A token: an identifier or one punctuation character (`::` is one token), with its line.
#[derive(Debug, Clone)]
struct Token {
    text: String,
    line: usize,
}

fn tokens(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut iter = code.char_indices().peekable();
    while let Some((_, c)) = iter.next() {
        if c == '\n' {
            line += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let mut text = String::from(c);
            while let Some(&(_, n)) = iter.peek() {
                if n.is_alphanumeric() || n == '_' {
                    text.push(n);
                    iter.next();
                } else {
                    break;
                }
            }
            out.push(Token { text, line });
        } else if c == ':' && iter.peek().is_some_and(|&(_, n)| n == ':') {
            iter.next();
            out.push(Token { text: "::".into(), line });
        } else if !c.is_whitespace() {
            out.push(Token { text: c.to_string(), line });
        }
    }
    out
}

fn is_ident(t: &Token) -> bool {
    t.text.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The names the crate root re-exports from its modules (`pub use store::{Store, …};`), mapped
/// to the module they come from.
fn root_reexports(code: &str) -> BTreeMap<String, String> {
    let tokens = tokens(code);
    let mut out = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.text != "pub" || tokens.get(i + 1).is_none_or(|u| u.text != "use") {
            continue;
        }
        let Some(module) = tokens.get(i + 2) else { continue };
        let mut j = i + 3;
        while j < tokens.len() && tokens[j].text != ";" {
            let name = &tokens[j];
            let next = tokens.get(j + 1).map(|n| n.text.as_str());
            if is_ident(name) && matches!(next, Some(";" | "," | "}")) {
                out.insert(name.text.clone(), module.text.clone());
            }
            j += 1;
        }
    }
    out
}

/// The inline (non-test) modules a file's code declares: `mod name { … }`.
fn inline_modules(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    walk_modules(module, &tokens(code), |current, _| out.push(current.to_vec()));
    out.sort();
    out.dedup();
    out
}

/// Calls `f` with the module each token is in, following inline `mod name { … }` blocks.
fn walk_modules(module: &[String], tokens: &[Token], mut f: impl FnMut(&[String], usize)) {
    let mut current = module.to_vec();
    let mut opened: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate() {
        match t.text.as_str() {
            "{" => {
                depth += 1;
                if i >= 2 && tokens[i - 2].text == "mod" && is_ident(&tokens[i - 1]) {
                    current.push(tokens[i - 1].text.clone());
                    opened.push(depth);
                }
            }
            "}" => {
                if opened.last() == Some(&depth) {
                    opened.pop();
                    current.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        f(&current, i);
    }
}

/// Every module `code` (the file of `module`) names through a `crate::` or `super::` path.
fn references(
    module: &[String],
    code: &str,
    modules: &BTreeSet<Vec<String>>,
    aliases: &BTreeMap<String, String>,
) -> Vec<Reference> {
    let code = without_test_items(&blank_comments_and_literals(code));
    references_in(module, &code, modules, aliases)
}

fn references_in(
    module: &[String],
    code: &str,
    modules: &BTreeSet<Vec<String>>,
    aliases: &BTreeMap<String, String>,
) -> Vec<Reference> {
    let tokens = tokens(code);
    let mut at: Vec<Vec<String>> = vec![Vec::new(); tokens.len()];
    walk_modules(module, &tokens, |current, i| at[i] = current.to_vec());
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let starts = (t.text == "crate" || t.text == "super")
            && tokens.get(i + 1).is_some_and(|n| n.text == "::")
            && (i == 0 || tokens[i - 1].text != "::");
        if !starts {
            continue;
        }
        let here = &at[i];
        let mut base: Vec<String> = Vec::new();
        let mut j = i;
        if t.text == "crate" {
            j += 2;
        } else {
            base.clone_from(here);
            while tokens.get(j).is_some_and(|s| s.text == "super")
                && tokens.get(j + 1).is_some_and(|s| s.text == "::")
            {
                base.pop();
                j += 2;
            }
        }
        let mut paths = Vec::new();
        use_tree(&tokens, &mut j, base, &mut paths);
        for p in paths {
            let target = resolve(&p, modules, aliases);
            if target != *here {
                out.push(Reference { from: here.clone(), to: target, file: String::new(), line: t.line });
            }
        }
    }
    out
}

/// Reads a path or use tree at `tokens[*j]` (after its `crate::`/`super::` prefix), pushing the
/// full paths it names.
fn use_tree(tokens: &[Token], j: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        match tokens.get(*j) {
            Some(t) if t.text == "{" => {
                *j += 1;
                loop {
                    match tokens.get(*j).map(|t| t.text.as_str()) {
                        Some("}") => {
                            *j += 1;
                            return;
                        }
                        Some(",") => *j += 1,
                        Some("self") => {
                            out.push(prefix.clone());
                            *j += 1;
                        }
                        Some(_) => use_tree(tokens, j, prefix.clone(), out),
                        None => return,
                    }
                }
            }
            Some(t) if is_ident(t) => {
                prefix.push(t.text.clone());
                *j += 1;
                if tokens.get(*j).is_some_and(|t| t.text == "::") {
                    *j += 1;
                } else {
                    out.push(prefix);
                    return;
                }
            }
            _ => {
                out.push(prefix);
                return;
            }
        }
    }
}

/// The module a path names: its longest prefix that is a module (a name the crate root
/// re-exports stands for the module it comes from).
fn resolve(
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    aliases: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut path = path.to_vec();
    if let Some(first) = path.first().cloned()
        && !modules.contains(&path[..1])
        && let Some(module) = aliases.get(&first)
    {
        path[0].clone_from(module);
        if path.len() > 1 || !modules.contains(&path[..1]) {
            // `crate::ApiError` names an item of `status`; `crate::server` the module `endpoints::server`.
            let mut nested = vec![module.clone(), first.clone()];
            nested.extend(path.iter().skip(1).cloned());
            if modules.contains(&nested[..2]) {
                path = nested;
            }
        }
    }
    (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p)).unwrap_or_default()
}

/// The number of `pub` items and of `pub(crate)`/`pub(super)` items (fields and re-exports
/// included) in `code`.
fn pub_items(code: &str) -> (usize, usize) {
    let tokens = tokens(code);
    let mut public = 0;
    let mut restricted = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t.text != "pub" {
            continue;
        }
        if tokens.get(i + 1).is_some_and(|n| n.text == "(") {
            restricted += 1;
        } else {
            public += 1;
        }
    }
    (public, restricted)
}
