//! The JSONPath dialect of `k8s.io/client-go/util/jsonpath`, as CRDs'
//! `additionalPrinterColumns[].jsonPath` use it.
//!
//! When kubectl asks for a custom resource as a Table (`Accept:
//! application/json;as=Table;v=v1;g=meta.k8s.io`), the server prints each printer column by
//! evaluating its `jsonPath` against the object ([`crate::rest::printer_columns`]). Upstream's
//! apiextensions `tableconvertor` wraps the path in `{…}`, parses it with `jsonpath.New(name)
//! .Parse(...)`, sets `AllowMissingKeys(true)`, and reads the first value of the first result
//! list. [`JsonPath`] does exactly that: [`JsonPath::parse`] takes the bare path and reports
//! upstream's parse error words; [`JsonPath::find`] returns the values of the first `{…}` block.
//!
//! Followed: `staging/src/k8s.io/client-go/util/jsonpath/parser.go` (grammar, error words) and
//! `jsonpath.go` (evaluation), and `third_party/forked/golang/template/funcs.go` (the filter
//! comparisons). Upstream's dialect, quirks included:
//!
//! - `.a.b` fields; `\.` escapes a dot inside a name (`.metadata.labels.app\.kubernetes\.io/name`);
//!   a missing field selects nothing (never an error).
//! - `['a']` is the same as `.a` — the quoted text is re-read as a field path, so `['a.b']` is
//!   `.a.b` (two fields), as upstream's parser test `arraydict` has it. Only single quotes:
//!   `["a"]` is `invalid array index "a"`, as upstream.
//! - `[0]`, `[-1]`, slices `[1:3]`, `[::2]`, `[*]` (= `[:]`), unions `[0,1]`, `['a','b']`. An index
//!   out of bounds is an evaluation error, so the whole path selects nothing (the cell is empty).
//! - `.*` wildcard (an object's member values, an array's elements, a string's bytes as numbers),
//!   `..` recursive descent (every non-empty object, array or string, in pre-order).
//! - Filters `[?(@.type=="Ready")]` with `==`, `!=`, `<`, `>`, `<=`, `>=` between strings, integers,
//!   floats or booleans of the same kind (`@.n == 1` is an error when `n` is `1.0`: Go's `int`
//!   vs `float64`), and existence `[?(@.x)]`. The right side may be a literal or a path from
//!   `@`. Comparing different kinds, or `null`, objects or arrays, is an evaluation error.
//! - Literals (`"text"`, `'text'`, `3`, `1.5`, `true`) and text outside braces, as in a template
//!   (`.a}-{.b` is two blocks and a text: [`JsonPath::find`] answers the first block, and nothing
//!   when any block fails to evaluate, as `FindResults` does).
//!
//! Left out: `range` / `end` (parsed, but a path using them selects nothing: upstream's loop
//! rewrites the parsed template on first use), the `=~` operator of some forks. Object members come
//! in `serde_json`'s order (upstream: Go's map order, which is random). Non-ASCII letters and
//! digits are told apart by Rust's Unicode tables, which differ from Go's at the margins.

use std::sync::LazyLock;

use serde_json::Value;

/// How deep expressions may nest (unions, filters and quoted keys are parsed as sub-expressions).
const MAX_DEPTH: usize = 32;

/// A parsed JSONPath expression (the bare `jsonPath` of a printer column, without braces).
#[derive(Debug, Clone)]
pub struct JsonPath {
    /// The template's top-level blocks: each `{…}` action, and the text between them as a
    /// one-node list.
    blocks: Vec<Vec<Node>>,
}

/// One step of an action (upstream's node types).
#[derive(Debug, Clone)]
enum Node {
    /// `.name`: the member of each object.
    Field(String),
    /// `.*`: every child.
    Wildcard,
    /// `..`: every value with children, in pre-order.
    Recursive,
    /// `[start:end:step]`, `[i]`, `[*]`.
    Array([Param; 3]),
    /// `[?(…)]`.
    Filter(Box<Filter>),
    /// `[a,b]`: the results of each list, concatenated.
    Union(Vec<Vec<Node>>),
    /// A quoted string: itself, whatever the input.
    Text(Value),
    /// A number or boolean literal: itself once per input value.
    Scalar(Value),
    /// A bare word other than `true`/`false` (upstream knows `range` and `end`).
    Identifier(String),
}

/// A slice bound as upstream's parser leaves it.
#[derive(Debug, Clone, Copy, Default)]
struct Param {
    value: i64,
    known: bool,
    /// The end of `[i]`, computed as `i + 1` at parse time.
    derived: bool,
}

#[derive(Debug, Clone)]
struct Filter {
    left: Vec<Node>,
    right: Vec<Node>,
    /// `None` for an existence filter.
    op: Option<String>,
}

impl JsonPath {
    /// Parses `expr` (`.spec.size`, `.status.conditions[?(@.type=="Ready")].status`) as upstream's
    /// tableconvertor does: as the template `{expr}`.
    ///
    /// An empty `expr` parses (`{}` selects the whole object); whether a CRD may say so is CRD
    /// validation's business.
    ///
    /// # Errors
    ///
    /// Upstream's parser's words for what is wrong: `unclosed action`, `unterminated array`,
    /// `invalid array index "a"`, `unrecognized character in action: U+002A '*'`, ….
    pub fn parse(expr: &str) -> Result<Self, String> {
        let blocks = parse_template(&format!("{{{expr}}}"), 0)?;
        Ok(Self { blocks })
    }

    /// The values the first `{…}` block selects in `obj` (with missing keys allowed): what
    /// upstream's `FindResults` puts first, and nothing when any block fails to evaluate (an index
    /// out of bounds, a filter on a non-array, an incomparable filter operand).
    ///
    /// Values may borrow from `self` (a literal in the path) as well as from `obj`.
    #[must_use]
    pub fn find<'a>(&'a self, obj: &'a Value) -> Vec<&'a Value> {
        let mut eval = Evaluator::default();
        let mut first = None;
        for block in &self.blocks {
            match eval.list(vec![obj], block) {
                Ok(values) => {
                    first.get_or_insert(values);
                }
                Err(_) => return Vec::new(),
            }
        }
        if eval.unsupported {
            return Vec::new();
        }
        first.unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing (parser.go).

/// Parses a template into its top-level blocks.
fn parse_template(text: &str, depth: usize) -> Result<Vec<Vec<Node>>, String> {
    if depth > MAX_DEPTH {
        return Err("jsonpath expression nested too deeply".into());
    }
    let mut p = Parser { input: text, pos: 0, start: 0, width: 0, depth };
    let mut blocks = Vec::new();
    loop {
        let Some(brace) = p.input[p.pos..].find('{') else {
            if p.input.len() > p.start {
                blocks.push(vec![Node::Text(Value::String(p.input[p.start..].to_owned()))]);
            }
            return Ok(blocks);
        };
        p.pos += brace;
        if p.pos > p.start {
            blocks.push(vec![Node::Text(Value::String(p.consume().to_owned()))]);
        }
        p.pos += 1;
        p.consume();
        let mut action = Vec::new();
        p.inside_action(&mut action)?;
        blocks.push(action);
    }
}

/// Parses `text` as the inside of one action (upstream's `parseAction`: `{text}`, first block).
fn parse_action(text: &str, depth: usize) -> Result<Vec<Node>, String> {
    Ok(parse_template(&format!("{{{text}}}"), depth + 1)?.into_iter().next().unwrap_or_default())
}

struct Parser<'s> {
    input: &'s str,
    pos: usize,
    start: usize,
    width: usize,
    depth: usize,
}

impl<'s> Parser<'s> {
    /// The next character (`None` at the end), consumed.
    fn next(&mut self) -> Option<char> {
        let Some(c) = self.input[self.pos..].chars().next() else {
            self.width = 0;
            return None;
        };
        self.width = c.len_utf8();
        self.pos += self.width;
        Some(c)
    }

    /// Steps back over the character [`Self::next`] returned.
    fn backup(&mut self) {
        self.pos -= self.width;
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.next();
        self.backup();
        c
    }

    /// The text read since the last call.
    fn consume(&mut self) -> &'s str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    /// Whether the character before the one just read is a backslash (upstream's escape test).
    fn escaped(&self) -> bool {
        self.pos >= 2 && self.input.as_bytes()[self.pos - 2] == b'\\'
    }

    /// The steps of an action, up to and including its closing brace.
    fn inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            let rest = &self.input[self.pos..];
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return Err("unclosed action".into()),
                Some(' ' | '@' | '$') => {
                    self.consume();
                }
                Some('[') => self.array(cur)?,
                Some(quote @ ('"' | '\'')) => self.quote(cur, quote)?,
                Some('.') => self.field(cur),
                Some(c) if c == '+' || c == '-' || is_digit(c) => {
                    self.backup();
                    self.number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.identifier(cur);
                }
                Some(c) => return Err(format!("unrecognized character in action: {}", go_unicode(c))),
            }
        }
    }

    fn identifier(&mut self, cur: &mut Vec<Node>) {
        while let Some(c) = self.next() {
            if is_terminator(c) {
                self.backup();
                break;
            }
        }
        cur.push(match self.consume() {
            "true" => Node::Scalar(Value::Bool(true)),
            "false" => Node::Scalar(Value::Bool(false)),
            word => Node::Identifier(word.to_owned()),
        });
    }

    fn recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err("invalid multiple recursive descent".into());
        }
        self.pos += 2;
        self.consume();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.field(cur);
        }
        Ok(())
    }

    fn number(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || is_digit(c) => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let text = self.consume();
        if let Ok(i) = text.parse::<i64>() {
            cur.push(Node::Scalar(Value::from(i)));
            return Ok(());
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => {
                cur.push(Node::Scalar(Value::from(f)));
                Ok(())
            }
            _ => Err(format!("cannot parse number {text}")),
        }
    }

    /// `[…]`: a union, a quoted key, or an index or slice.
    fn array(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let text = self.consume();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }
        if text.contains(',') {
            let lists = text
                .split(',')
                .map(|part| parse_action(&format!("[{}]", part.trim_matches(' ')), self.depth))
                .collect::<Result<_, _>>()?;
            cur.push(Node::Union(lists));
            return Ok(());
        }
        if let Some(key) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\''))
            && !key.contains('\'')
        {
            cur.extend(parse_action(&format!(".{key}"), self.depth)?);
            return Ok(());
        }
        let params = parse_slice(text).ok_or_else(|| format!("invalid array index {text}"))??;
        cur.push(Node::Array(params));
        Ok(())
    }

    fn filter(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        self.pos += 3;
        self.consume();
        let (mut begin, mut end, mut pair) = (false, false, '"');
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(quote @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = quote;
                    } else if !self.escaped() && quote == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let text = self.consume();
        let text = &text[..text.len() - 2];
        let filter = match split_comparison(text) {
            None => Filter { left: parse_action(text, self.depth)?, right: Vec::new(), op: None },
            Some((left, op, right)) => Filter {
                left: parse_action(left, self.depth)?,
                right: parse_action(right, self.depth)?,
                op: Some(op.to_owned()),
            },
        };
        cur.push(Node::Filter(Box::new(filter)));
        Ok(())
    }

    fn quote(&mut self, cur: &mut Vec<Node>, quote: char) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(c) if c == quote && !self.escaped() => break,
                Some(_) => {}
            }
        }
        let text = self.consume();
        let value = unquote(text).ok_or_else(|| format!("unquote string {text} error invalid syntax"))?;
        cur.push(Node::Text(Value::String(value)));
        Ok(())
    }

    /// `.name` (the dot already read) or `.*`.
    fn field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            match self.next() {
                Some('\\') => {
                    self.next();
                }
                Some(c) if !is_terminator(c) => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        cur.push(match self.consume() {
            "*" => Node::Wildcard,
            name => Node::Field(name.replace('\\', "")),
        });
    }
}

/// `[start:end:step]` as upstream's `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$` and what follows it: `None`
/// when it does not match, `Some(Err)` when a bound is not a number.
fn parse_slice(text: &str) -> Option<Result<[Param; 3], String>> {
    /// `-?[0-9]*` at the start of `s`: its length.
    fn bound(s: &str) -> usize {
        let sign = usize::from(s.starts_with('-'));
        sign + s[sign..].bytes().take_while(u8::is_ascii_digit).count()
    }
    let first_len = bound(text);
    let (first, mut rest) = text.split_at(first_len);
    let mut groups: [Option<&str>; 2] = [None, None];
    for group in &mut groups {
        if let Some(after) = rest.strip_prefix(':') {
            let len = bound(after);
            *group = Some(&after[..len]);
            rest = &after[len..];
        }
    }
    if !rest.is_empty() {
        return None;
    }
    let number = |s: &str| s.parse::<i64>().map_err(|_| format!("array index {s} is not a number"));
    let mut params = [Param::default(); 3];
    if !first.is_empty() {
        params[0] = match number(first) {
            Ok(value) => Param { value, known: true, derived: false },
            Err(e) => return Some(Err(e)),
        };
    }
    match groups[0] {
        None => params[1] = Param { value: params[0].value.wrapping_add(1), known: true, derived: true },
        Some("") => {}
        Some(s) => match number(s) {
            Ok(value) => params[1] = Param { value, known: true, derived: false },
            Err(e) => return Some(Err(e)),
        },
    }
    if let Some(s) = groups[1].filter(|s| !s.is_empty()) {
        match number(s) {
            Ok(value) => params[2] = Param { value, known: true, derived: false },
            Err(e) => return Some(Err(e)),
        }
    }
    Some(Ok(params))
}

/// A filter's text as upstream's `^([^!<>=]+)([!<>=]+)(.+?)$`: left side, operator, right side.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let left_end = text.find(is_op).filter(|&i| i > 0)?;
    let op_len = text[left_end..].find(|c| !is_op(c)).unwrap_or(text.len() - left_end);
    let mut op_end = left_end + op_len;
    if op_end == text.len() {
        // The right side needs a character: the operator gives one back.
        if op_len < 2 {
            return None;
        }
        op_end -= 1;
    }
    Some((&text[..left_end], &text[left_end..op_end], &text[op_end..]))
}

/// A quoted literal's value, as upstream's `UnquoteExtend` (Go's escapes, either quote).
fn unquote(text: &str) -> Option<String> {
    let quote = text.chars().next()?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    if !inner.contains(['\\', quote]) {
        return Some(inner.to_owned());
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let simple = match chars.next()? {
            'a' => Some(0x07),
            'b' => Some(0x08),
            'f' => Some(0x0c),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(0x0b),
            '\\' => Some(b'\\'),
            q @ ('\'' | '"') if q == quote => Some(q as u8),
            kind @ ('x' | 'u' | 'U') => {
                let digits = match kind {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value = 0u32;
                for _ in 0..digits {
                    value = value << 4 | chars.next()?.to_digit(16)?;
                }
                if kind == 'x' {
                    Some(u8::try_from(value).ok()?)
                } else {
                    let c = char::from_u32(value)?;
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    None
                }
            }
            first @ '0'..='7' => {
                let mut value = first.to_digit(8)?;
                for _ in 0..2 {
                    value = value << 3 | chars.next()?.to_digit(8)?;
                }
                Some(u8::try_from(value).ok()?)
            }
            _ => return None,
        };
        out.extend(simple);
    }
    // `\xff` makes bytes that are not UTF-8 (a Go string allows that, a Rust one does not).
    Some(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// Where a field name or identifier ends.
fn is_terminator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
}

/// Go's `unicode.IsDigit`, near enough.
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// Upstream's `isAlphaNumeric`: a letter, a digit or `_`.
fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || is_digit(c)
}

/// Go's `%#U`: `U+002A '*'` (without the quoted character when it is not printable).
fn go_unicode(c: char) -> String {
    let code = u32::from(c);
    if c.is_control() || (c.is_whitespace() && c != ' ') {
        format!("U+{code:04X}")
    } else {
        format!("U+{code:04X} '{c}'")
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation (jsonpath.go).

/// A string's bytes, for `.*` over a string (Go indexes a string by byte).
static BYTES: LazyLock<Vec<Value>> = LazyLock::new(|| (0..=u8::MAX).map(Value::from).collect());

/// A step's values, or — on an evaluation error — the values upstream returns beside the error
/// (which an existence filter still counts).
type Step<'a> = Result<Vec<&'a Value>, Vec<&'a Value>>;

#[derive(Default)]
struct Evaluator {
    /// `range` or `end` was evaluated.
    unsupported: bool,
}

impl Evaluator {
    fn list<'a>(&mut self, input: Vec<&'a Value>, nodes: &'a [Node]) -> Step<'a> {
        nodes.iter().try_fold(input, |values, node| self.walk(values, node))
    }

    fn walk<'a>(&mut self, input: Vec<&'a Value>, node: &'a Node) -> Step<'a> {
        match node {
            Node::Field(name) => {
                Ok(input.iter().filter_map(|v| v.as_object().and_then(|m| m.get(name))).collect())
            }
            Node::Wildcard => Ok(input.iter().flat_map(|v| children(v)).collect()),
            Node::Recursive => {
                let mut out = Vec::new();
                let mut stack: Vec<&Value> = input.into_iter().rev().collect();
                while let Some(v) = stack.pop() {
                    let kids = children(v);
                    if !kids.is_empty() {
                        out.push(v);
                        stack.extend(kids.into_iter().rev());
                    }
                }
                Ok(out)
            }
            Node::Array(params) => match slice(&input, params) {
                Some(values) => Ok(values),
                None => Err(input),
            },
            Node::Filter(filter) => self.filter(input, filter),
            Node::Union(lists) => {
                let mut out = Vec::new();
                for list in lists {
                    match self.list(input.clone(), list) {
                        Ok(values) => out.extend(values),
                        Err(_) => return Err(input),
                    }
                }
                Ok(out)
            }
            Node::Text(text) => Ok(vec![text]),
            Node::Scalar(value) => Ok(vec![value; input.len()]),
            Node::Identifier(name) => {
                self.unsupported |= name == "range" || name == "end";
                Err(input)
            }
        }
    }

    fn filter<'a>(&mut self, input: Vec<&'a Value>, filter: &'a Filter) -> Step<'a> {
        let mut out = Vec::new();
        for i in 0..input.len() {
            let Value::Array(items) = input[i] else { return Err(input) };
            for item in items {
                let lefts = self.list(vec![item], &filter.left);
                let Some(op) = &filter.op else {
                    if !lefts.unwrap_or_else(|partial| partial).is_empty() {
                        out.push(item);
                    }
                    continue;
                };
                let left = match lefts.as_deref() {
                    Ok([]) => continue,
                    Ok([one]) => *one,
                    _ => return Err(input),
                };
                let right = match self.list(vec![item], &filter.right).as_deref() {
                    Ok([]) => continue,
                    Ok([one]) => *one,
                    _ => return Err(input),
                };
                match compare(op, left, right) {
                    Some(true) => out.push(item),
                    Some(false) => {}
                    None => return Err(out),
                }
            }
        }
        Ok(out)
    }
}

/// A value's children: an object's member values, an array's elements, a string's bytes.
fn children(v: &Value) -> Vec<&Value> {
    match v {
        Value::Object(m) => m.values().collect(),
        Value::Array(a) => a.iter().collect(),
        Value::String(s) => s.bytes().map(|b| &BYTES[usize::from(b)]).collect(),
        _ => Vec::new(),
    }
}

/// `[start:end:step]` over each array of `input` (`null`s skipped); `None` on upstream's errors
/// (not an array, out of bounds, start after end, step not positive).
fn slice<'a>(input: &[&'a Value], params: &[Param; 3]) -> Option<Vec<&'a Value>> {
    let mut out = Vec::new();
    for v in input {
        let items = match v {
            Value::Null => continue,
            Value::Array(items) => items,
            _ => return None,
        };
        let len = i64::try_from(items.len()).ok()?;
        let mut start = if params[0].known { params[0].value } else { 0 };
        if start < 0 {
            start = start.wrapping_add(len);
        }
        let mut end = if params[1].known { params[1].value } else { len };
        if end < 0 || (end == 0 && params[1].derived) {
            end = end.wrapping_add(len);
        }
        if start == end {
            // Zero elements: upstream returns what it has, without looking at the other inputs.
            return Some(out);
        }
        if start < 0 || start >= len || end < 0 || end > len || start > end {
            return None;
        }
        let step = if params[2].known {
            if params[2].value <= 0 {
                return None;
            }
            usize::try_from(params[2].value).unwrap_or(usize::MAX)
        } else {
            1
        };
        let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
        out.extend(items[start..end].iter().step_by(step));
    }
    Some(out)
}

/// A comparable value, as Go's text/template sorts them.
#[derive(PartialEq, PartialOrd)]
enum Basic<'a> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
}

impl<'a> Basic<'a> {
    /// `None` for `null`, objects and arrays (`invalid type for comparison`).
    fn of(v: &'a Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(Self::Bool(*b)),
            // Upstream decodes integers beyond int64 as float64.
            Value::Number(n) => {
                Some(n.as_i64().map_or_else(|| Self::Float(n.as_f64().unwrap_or(0.0)), Self::Int))
            }
            Value::String(s) => Some(Self::Str(s)),
            _ => None,
        }
    }
}

/// `left op right` as upstream's template functions: `None` on an error (kinds differ, an
/// ordering of booleans, an unknown operator).
fn compare(op: &str, left: &Value, right: &Value) -> Option<bool> {
    let (a, b) = (Basic::of(left)?, Basic::of(right)?);
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
        return None;
    }
    let less = || if matches!(a, Basic::Bool(_)) { None } else { Some(a < b) };
    match op {
        "==" => Some(a == b),
        "!=" => Some(a != b),
        "<" => less(),
        ">=" => less().map(|l| !l),
        "<=" => less().map(|l| l || a == b),
        ">" => less().map(|l| !(l || a == b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! Expectations from upstream's `parser_test.go` and `jsonpath_test.go`
    //! (`staging/src/k8s.io/client-go/util/jsonpath`), evaluated with missing keys allowed.

    use serde_json::json;

    use super::*;

    fn find(expr: &str, obj: &Value) -> Vec<Value> {
        JsonPath::parse(expr).unwrap().find(obj).into_iter().cloned().collect()
    }

    fn err(expr: &str) -> String {
        JsonPath::parse(expr).unwrap_err()
    }

    fn pod() -> Value {
        json!({
            "metadata": { "name": "web", "labels": { "app.kubernetes.io/name": "web", "tier": "front" } },
            "spec": { "replicas": 3, "ratio": 1.5, "paused": false, "containers": [
                { "name": "a", "image": "nginx", "port": 80 },
                { "name": "b", "image": "redis", "port": 6379 },
                { "name": "c", "image": "busybox" },
            ] },
            "status": { "conditions": [
                { "type": "Available", "status": "True" },
                { "type": "Ready", "status": "False", "reason": null },
            ] },
        })
    }

    #[test]
    fn fields_and_escaped_dots() {
        let p = pod();
        assert_eq!(find(".spec.replicas", &p), [json!(3)]);
        assert_eq!(find(".metadata.labels.app\\.kubernetes\\.io/name", &p), [json!("web")]);
        assert_eq!(find(".spec.missing.deeper", &p), Vec::<Value>::new());
        assert_eq!(find("$.spec.replicas", &p), [json!(3)]);
        // A field of a scalar selects nothing.
        assert_eq!(find(".spec.replicas.x", &p), Vec::<Value>::new());
        // `{}` is the whole object.
        assert_eq!(find("", &p), std::slice::from_ref(&p));
    }

    #[test]
    fn quoted_keys_are_field_paths() {
        let p = pod();
        assert_eq!(find("['spec']['replicas']", &p), [json!(3)]);
        // parser_test.go `arraydict`: `['book.price']` is `.book.price`.
        assert_eq!(find("['spec.replicas']", &p), [json!(3)]);
        assert_eq!(find(".metadata.labels['app\\.kubernetes\\.io/name']", &p), [json!("web")]);
        assert_eq!(err("[\"spec\"]"), "invalid array index \"spec\"");
    }

    #[test]
    fn indexes_slices_and_unions() {
        let p = pod();
        let names = |e: &str| find(&format!(".spec.containers{e}.name"), &p);
        assert_eq!(names("[0]"), [json!("a")]);
        assert_eq!(names("[-1]"), [json!("c")]);
        assert_eq!(names("[-2]"), [json!("b")]);
        assert_eq!(names("[1:3]"), [json!("b"), json!("c")]);
        assert_eq!(names("[1:]"), [json!("b"), json!("c")]);
        assert_eq!(names("[:-1]"), [json!("a"), json!("b")]);
        assert_eq!(names("[::2]"), [json!("a"), json!("c")]);
        assert_eq!(names("[*]"), [json!("a"), json!("b"), json!("c")]);
        assert_eq!(names("[2,0]"), [json!("c"), json!("a")]);
        // `[]` is `[0]` upstream (the end is derived from an absent start).
        assert_eq!(names("[]"), [json!("a")]);
        // Out of bounds is an error: nothing at all.
        assert_eq!(names("[3]"), Vec::<Value>::new());
        assert_eq!(names("[1:5]"), Vec::<Value>::new());
        assert_eq!(names("[-4]"), Vec::<Value>::new());
        assert_eq!(names("[::0]"), Vec::<Value>::new());
        // Zero elements is fine.
        assert_eq!(names("[1:1]"), Vec::<Value>::new());
        // Indexing an object is an error; a union with an error fails whole.
        assert_eq!(find(".spec[0]", &p), Vec::<Value>::new());
        assert_eq!(find(".spec.containers[0,9].name", &p), Vec::<Value>::new());
        assert_eq!(find("['spec.replicas', 'metadata.name']", &p), [json!(3), json!("web")]);
        // A field missing from some elements is skipped.
        assert_eq!(find(".spec.containers[*].port", &p), [json!(80), json!(6379)]);
    }

    #[test]
    fn wildcard_and_recursive_descent() {
        let obj = json!({ "a": { "x": 1, "y": [2, { "x": 3 }] }, "b": "hi", "c": "" });
        assert_eq!(find(".a.*", &obj), [json!(1), json!([2, { "x": 3 }])]);
        assert_eq!(find("..x", &obj), [json!(1), json!(3)]);
        assert_eq!(find(".a..x", &obj), [json!(1), json!(3)]);
        // Pre-order, only values with children (so the non-empty string, not `""` or `1`).
        assert_eq!(
            find("..", &obj),
            [obj.clone(), obj["a"].clone(), obj["a"]["y"].clone(), json!({ "x": 3 }), json!("hi")]
        );
        // A string's wildcard is its bytes.
        assert_eq!(find(".b.*", &obj), [json!(104), json!(105)]);
        assert_eq!(err("....a"), "invalid multiple recursive descent");
    }

    #[test]
    fn filters() {
        let p = pod();
        let conditions = |f: &str| find(&format!(".status.conditions[?({f})].status"), &p);
        assert_eq!(conditions("@.type==\"Ready\""), [json!("False")]);
        assert_eq!(conditions("@.type == 'Ready'"), [json!("False")]);
        assert_eq!(conditions("@.type!=\"Ready\""), [json!("True")]);
        assert_eq!(conditions("@.type<\"B\""), [json!("True")]);
        assert_eq!(conditions("@.reason"), [json!("False")]);
        assert_eq!(conditions("@.missing"), Vec::<Value>::new());
        // Comparing to the element's own field.
        assert_eq!(conditions("@.type==@.type"), [json!("True"), json!("False")]);
        let ports = |f: &str| find(&format!(".spec.containers[?({f})].name"), &p);
        assert_eq!(ports("@.port>100"), [json!("b")]);
        assert_eq!(ports("@.port<=80"), [json!("a")]);
        assert_eq!(ports("@.port>=80"), [json!("a"), json!("b")]);
        assert_eq!(ports("@.port<-1"), Vec::<Value>::new());
        // Elements without the field are skipped; int against float or string is an error.
        assert_eq!(ports("@.port==80.0"), Vec::<Value>::new());
        assert_eq!(ports("@.port==\"80\""), Vec::<Value>::new());
        // A parsed but unknown operator fails at evaluation.
        assert_eq!(ports("@.port=80"), Vec::<Value>::new());
        // Floats and booleans.
        let obj = json!({ "l": [{ "f": 1.5, "b": true }, { "f": 2.5, "b": false }] });
        assert_eq!(find(".l[?(@.f>2.0)].f", &obj), [json!(2.5)]);
        assert_eq!(find(".l[?(@.b==true)].f", &obj), [json!(1.5)]);
        assert_eq!(find(".l[?(@.b<true)].f", &obj), Vec::<Value>::new());
        // Parentheses and quotes inside the literal (parser_test.go).
        let obj = json!({ "l": [{ "s": "())(" }, { "s": "{[()]}" }] });
        assert_eq!(find(".l[?(@.s == \"())(\")].s", &obj), [json!("())(")]);
        assert_eq!(find(".l[?(@.s == \"{[()]}\")].s", &obj), [json!("{[()]}")]);
        // A filter on an object is an error.
        assert_eq!(find(".spec[?(@.x)]", &p), Vec::<Value>::new());
    }

    #[test]
    fn literals_and_blocks() {
        let p = pod();
        assert_eq!(find(".spec.replicas \"x\"", &p), [json!("x")]);
        assert_eq!(find(".metadata.name}-{.spec.replicas", &p), [json!("web")]);
        // A later block's error empties the answer.
        assert_eq!(find(".metadata.name}{.spec[0]", &p), Vec::<Value>::new());
        // `range` is not supported; other identifiers are evaluation errors.
        assert_eq!(find("range .spec.containers}{.name}{end", &p), Vec::<Value>::new());
        assert_eq!(find(".spec foo", &p), Vec::<Value>::new());
    }

    #[test]
    fn parse_errors_use_upstreams_words() {
        // parser_test.go TestFailParser, without the braces tableconvertor adds.
        assert_eq!(err("*"), "unrecognized character in action: U+002A '*'");
        assert_eq!(err("+12.3.0"), "cannot parse number +12.3.0");
        assert_eq!(err("[1"), "unterminated array");
        assert_eq!(err("[?(.price]"), "unterminated filter");
        assert_eq!(err(".a\n"), "unclosed action");
        assert_eq!(err(".a{"), "unrecognized character in action: U+007B '{'");
        assert_eq!(err(".a\t"), "unrecognized character in action: U+0009");
        assert_eq!(err(".a[x]"), "invalid array index x");
        assert_eq!(err(".a[1:x]"), "invalid array index 1:x");
        assert_eq!(err(".a[-]"), "array index - is not a number");
        assert_eq!(err(".a[99999999999999999999]"), "array index 99999999999999999999 is not a number");
        assert_eq!(err(".a[?(@.x)"), "unclosed array expect ]");
        assert_eq!(err(".a \"x"), "unterminated quoted string");
        assert_eq!(err(".a \"\\q\""), "unquote string \"\\q\" error invalid syntax");
        assert_eq!(err(".a[?(@.x==)]"), "unrecognized character in action: U+003D '='");
    }

    #[test]
    fn unquoting() {
        assert_eq!(unquote(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(unquote(r"'a\'b'").as_deref(), Some("a'b"));
        assert_eq!(unquote(r#"'a\"b'"#), None);
        assert_eq!(unquote(r#""\x41\u00e9\101\n""#).as_deref(), Some("Aé\u{41}\n"));
        assert_eq!(unquote(r#""\ud800""#), None);
    }

    #[test]
    fn no_panics_on_odd_input() {
        let p = pod();
        for expr in [
            "[",
            "]",
            "[?(",
            "[?()]",
            "[?(@)]",
            "..",
            "...",
            ".",
            "'",
            "\"",
            "\\",
            ".\\",
            "[::]",
            "[:::]",
            "[,]",
            "[',']",
            "['",
            "[''']",
            "[?(==)]",
            "[?(@.a==\"\\\")]",
            "é",
            ".é[é]",
            "[9223372036854775807]",
            "[-9223372036854775808]",
            "[?(a<'b')]",
            "}{",
            "{",
            "}",
            "-",
            "+",
            "1.",
            ".5",
            "[0][0]",
            "..[0]",
            "[?(@.x[?(@.y)])]",
            "[?(\"))\")]",
        ] {
            if let Ok(path) = JsonPath::parse(expr) {
                let _ = path.find(&p);
            }
        }
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let _ = JsonPath::parse(&deep);
        let filters = "[?(".repeat(5_000);
        let _ = JsonPath::parse(&filters);
    }
}
