//! The part of cel-go's type checking a rule gets when its CRD is written: every field a rule
//! selects on a declared object must be one of the object's declared fields, as apiextensions'
//! `SchemaDeclType` declares them — an undefined one refuses the CRD with cel-go's
//! `undefined field 'x'` — and every operator (`+`, `==`, `<`, `&&`, `!`, `?:`, `in`, `[]`, …)
//! and the common functions (`size`, `matches`, CEL's string methods, Kubernetes' list
//! `indexOf`, `join`) must have an overload for their operands' types, else `found no matching
//! overload for '_==_' applied to '(int, string)'` (`'int.(string)'` for a method); each error's
//! place in the rule shown as cel-go shows it.
//!
//! The parser keeps no positions, so places are found in the text: selections' dots, operators'
//! symbols and calls' parentheses are read from it in order and paired with the AST's, read in the order
//! they are written (a macro's expansion read back to what its caller wrote); where the two do
//! not agree, the error is not reported.
//!
//! The types are the schema's: an object with `properties` declares them (with their CEL escapes,
//! `a-b` as `a__dash__b`; at a resource's root `apiVersion`, `kind` and `metadata` with only
//! `name` and `generateName`), an object with `additionalProperties` is a map, any key allowed;
//! an array's items are its elements' type, also through the macros (`all`, `exists`, `map`,
//! `filter`) and an index. What the checker cannot type — a function's result, an
//! int-or-string, a value it does not follow — it lets through, as a check it cannot fail: no
//! rule that upstream accepts is refused here, some it refuses are accepted (a wrong overload of
//! a function not listed above, an operator on an object or a list literal, a field of a
//! scalar).

use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::{Map, Value};

use super::size;

/// The kind of a value, as far as cost needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    Null,
    List,
    Map,
    Object,
    /// A Kubernetes library value: a quantity, an IP, a CIDR, a URL, a semver.
    Opaque,
    /// `dyn`: an int-or-string.
    Dyn,
}

impl Kind {
    /// Whether cel-go sizes a value of this kind as one.
    pub(super) fn scalar(self) -> bool {
        matches!(self, Self::Bool | Self::Int | Self::Uint | Self::Double | Self::Duration | Self::Timestamp)
    }
}

/// What the checker knows of a value's type.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ty<'a> {
    /// A value a schema node declares, reached through `self` by a path of fields, items and
    /// values (`root`: a resource's root or an embedded resource): its sizes are the node's.
    Declared { schema: &'a Map<String, Value>, root: bool },
    /// A value of this kind that no schema node declares: a literal, a function's result.
    Plain(Kind),
    /// A list of values of this kind that no schema node declares (`split`'s).
    ListOf(Kind),
    /// Anything: not checked.
    Unknown,
}

impl<'a> Ty<'a> {
    /// The type a schema node declares (`root`: a resource's root or an embedded resource).
    fn declared(schema: &'a Map<String, Value>, root: bool) -> Self {
        if size::typed(schema) { Self::Declared { schema, root } } else { Self::Unknown }
    }

    /// Its kind, when known.
    pub(super) fn kind(self) -> Option<Kind> {
        match self {
            Self::Declared { schema, .. } => Some(declared_kind(schema)),
            Self::Plain(k) => Some(k),
            Self::ListOf(_) => Some(Kind::List),
            Self::Unknown => None,
        }
    }

    /// The type of its elements: a list's items, a map's keys (what a comprehension ranges over).
    pub(super) fn element(self) -> Self {
        match self {
            Self::Declared { schema, .. } => match declared_kind(schema) {
                Kind::List => size::items(schema).map_or(Self::Unknown, |i| Self::declared(i, embedded(i))),
                Kind::Map => Self::Declared { schema: &MAP_KEY, root: false },
                _ => Self::Unknown,
            },
            Self::ListOf(k) => Self::Plain(k),
            _ => Self::Unknown,
        }
    }

    /// The type of what `_[_]` reads: a list's item, a map's value.
    fn indexed(self) -> Self {
        match self {
            Self::Declared { schema, .. } if declared_kind(schema) == Kind::Map => {
                size::values(schema).map_or(Self::Unknown, |v| Self::declared(v, embedded(v)))
            }
            other => other.element(),
        }
    }
}

fn embedded(schema: &Map<String, Value>) -> bool {
    schema.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true)
}

/// The kind of a value its schema node declares.
fn declared_kind(schema: &Map<String, Value>) -> Kind {
    if schema.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Kind::Dyn;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => Kind::List,
        Some("object") if size::values(schema).is_some() => Kind::Map,
        Some("object") => Kind::Object,
        Some("integer") => Kind::Int,
        Some("number") => Kind::Double,
        Some("boolean") => Kind::Bool,
        Some("string") => match schema.get("format").and_then(Value::as_str) {
            Some("byte") => Kind::Bytes,
            Some("duration") => Kind::Duration,
            Some("date" | "date-time") => Kind::Timestamp,
            _ => Kind::String,
        },
        _ => Kind::Dyn,
    }
}

/// The fields at a resource's root that every rule may read, whatever the schema says.
const ROOT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// CEL's reserved words: no variable may be so named, and a property so named is read as
/// `__<name>__`.
pub(crate) const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `apiservercel.Escape`: a property's name as a rule reads it; `None` for a name a rule
/// cannot read.
fn escaped(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = r;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c == '_' || c.is_ascii_alphanumeric() => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    let first = out.chars().next()?;
    (first == '_' || first.is_ascii_alphabetic()).then_some(out)
}

/// The type of field `field` (as a rule names it) of an object, `Err` when it declares none.
fn field_of<'a>(schema: &'a Map<String, Value>, root: bool, field: &str) -> Result<Ty<'a>, ()> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if root && ROOT_FIELDS.contains(&field) && !declares_type_and_meta(properties) {
        // `WithTypeAndObjectMeta`: unless the schema declares them all, the root's `apiVersion`
        // and `kind` are strings and its `metadata` has `name` and `generateName` only.
        let schema: &'static Map<String, Value> = if field == "metadata" { &ROOT_METADATA } else { &STRING };
        return Ok(Ty::Declared { schema, root: false });
    }
    for (name, prop) in properties.into_iter().flatten() {
        if escaped(name).as_deref() == Some(field) {
            return Ok(prop.as_object().map_or(Ty::Unknown, |p| Ty::declared(p, embedded(p))));
        }
    }
    Err(())
}

/// A string no `maxLength` bounds.
static STRING: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(|| {
    serde_json::json!({ "type": "string" }).as_object().cloned().unwrap_or_default()
});

/// A map's key: a string with no size of its own (upstream's shared `StringType`).
static MAP_KEY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(|| {
    serde_json::json!({ "type": "string", "maxLength": 0 }).as_object().cloned().unwrap_or_default()
});

/// The metadata a rule at a resource's root reads.
static ROOT_METADATA: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(|| {
    serde_json::json!({ "type": "object", "properties": {
        "name": { "type": "string" }, "generateName": { "type": "string" } } })
    .as_object()
    .cloned()
    .unwrap_or_default()
});

/// Whether a root's properties already declare `kind` and `apiVersion` strings and a `metadata`
/// with `name` and `generateName` strings (then they are read as declared).
fn declares_type_and_meta(properties: Option<&Map<String, Value>>) -> bool {
    let is = |v: Option<&Value>, ty: &str| v.and_then(|v| v.get("type")).and_then(Value::as_str) == Some(ty);
    let Some(p) = properties else { return false };
    let meta = p.get("metadata").and_then(|m| m.get("properties"));
    is(p.get("kind"), "string")
        && is(p.get("apiVersion"), "string")
        && is(p.get("metadata"), "object")
        && is(meta.and_then(|m| m.get("name")), "string")
        && is(meta.and_then(|m| m.get("generateName")), "string")
}

/// A rule parsed and typed against its schema: the checked AST cost is estimated over.
pub(super) struct Checked<'a, 'e> {
    /// The parsed rule.
    pub(super) ast: &'e IdedExpr,
    /// Every expression's type, by its id.
    pub(super) types: HashMap<u64, Ty<'a>>,
    /// The type errors (undefined fields, operators applied to types they have no overload
    /// for), as cel-go reports them; `None` when there are none.
    pub(super) errors: Option<String>,
}

/// Types `ast` (`text` parsed) against `schema` (the rule's node; `root`: a resource's root or
/// an embedded resource; `old_self`: `oldSelf` has the node's type, it is not optional).
pub(super) fn check<'a, 'e>(
    text: &str,
    ast: &'e IdedExpr,
    schema: &'a Map<String, Value>,
    root: bool,
    old_self: bool,
) -> Checked<'a, 'e> {
    let own = Ty::declared(schema, root);
    let mut scope = vec![("self".to_owned(), own)];
    if old_self {
        scope.push(("oldSelf".to_owned(), own));
    }
    check_in(text, ast, scope)
}

/// Types `ast` (`text` parsed) with `variables` in scope: each a resource's root of its schema,
/// or anything (`None`).
pub(super) fn check_variables<'a, 'e>(
    text: &str,
    ast: &'e IdedExpr,
    variables: &[(&str, Option<&'a Map<String, Value>>)],
) -> Checked<'a, 'e> {
    let scope = variables
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.map_or(Ty::Unknown, |s| Ty::declared(s, true))))
        .collect();
    check_in(text, ast, scope)
}

fn check_in<'a, 'e>(text: &str, ast: &'e IdedExpr, scope: Vec<(String, Ty<'a>)>) -> Checked<'a, 'e> {
    let mut walk =
        Walk { scope, selections: 0, undefined: Vec::new(), mismatches: Vec::new(), types: HashMap::new() };
    walk.ty(ast);
    let errors = walk.report(text, ast);
    Checked { ast, types: walk.types, errors }
}

/// The checker's walk of one rule.
struct Walk<'a> {
    /// The variables in scope and their types, innermost last.
    scope: Vec<(String, Ty<'a>)>,
    /// How many field selections were walked (in the order they are written).
    selections: usize,
    /// The undefined fields: each selection's number, its name, and whether it is `has()`'s.
    undefined: Vec<(usize, String, bool)>,
    /// The operators applied to types no overload of theirs takes: the call's id and cel-go's
    /// words.
    mismatches: Vec<(u64, String)>,
    /// Every expression's type, by its id.
    types: HashMap<u64, Ty<'a>>,
}

impl<'a> Walk<'a> {
    fn ty(&mut self, e: &IdedExpr) -> Ty<'a> {
        let ty = self.type_of(e);
        self.types.insert(e.id, ty);
        ty
    }

    fn type_of(&mut self, e: &IdedExpr) -> Ty<'a> {
        match &e.expr {
            Expr::Ident(name) => {
                self.scope.iter().rev().find(|(n, _)| n == name).map_or(Ty::Unknown, |(_, t)| *t)
            }
            Expr::Literal(l) => Ty::Plain(match l {
                LiteralValue::Boolean(_) => Kind::Bool,
                LiteralValue::Bytes(_) => Kind::Bytes,
                LiteralValue::Double(_) => Kind::Double,
                LiteralValue::Int(_) => Kind::Int,
                LiteralValue::Null => Kind::Null,
                LiteralValue::String(_) => Kind::String,
                LiteralValue::UInt(_) => Kind::Uint,
            }),
            Expr::Select(s) => {
                let operand = self.ty(&s.operand);
                let at = self.selections;
                self.selections += 1;
                if s.test {
                    // `has()`'s field must still be declared; its result is a boolean.
                    self.select(operand, &s.field, at, true);
                    return Ty::Plain(Kind::Bool);
                }
                self.select(operand, &s.field, at, false)
            }
            Expr::Call(c) => {
                let target = c.target.as_ref().map(|t| self.ty(t));
                let args: Vec<Ty<'a>> = c.args.iter().map(|a| self.ty(a)).collect();
                let mismatch = match target {
                    None => no_overload(&c.func_name, &args),
                    Some(target) => no_member_overload(&c.func_name, target, &args),
                };
                if let Some(signature) = mismatch {
                    let name = &c.func_name;
                    self.mismatches.push((
                        e.id,
                        format!("found no matching overload for '{name}' applied to '{signature}'"),
                    ));
                    // As cel-go's error type, it is not checked again where it is used.
                    return Ty::Unknown;
                }
                result_type(&c.func_name, &args)
            }
            Expr::Comprehension(c) => {
                let range = self.ty(&c.iter_range);
                let element = if c.iter_var2.is_none() { range.element() } else { Ty::Unknown };
                let accu = self.ty(&c.accu_init);
                self.scope.push((c.iter_var.clone(), element));
                if let Some(v) = &c.iter_var2 {
                    self.scope.push((v.clone(), Ty::Unknown));
                }
                self.scope.push((c.accu_var.clone(), accu));
                self.ty(&c.loop_cond);
                self.ty(&c.loop_step);
                let result = self.ty(&c.result);
                self.scope.truncate(self.scope.len() - if c.iter_var2.is_some() { 3 } else { 2 });
                result
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.ty(x);
                }
                Ty::Plain(Kind::List)
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    self.entry(&entry.expr);
                }
                Ty::Plain(Kind::Map)
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    self.entry(&entry.expr);
                }
                Ty::Unknown
            }
            Expr::Unspecified => Ty::Unknown,
        }
    }

    /// The type of field `field` of a value of type `operand`, the selection numbered `at`.
    fn select(&mut self, operand: Ty<'a>, field: &str, at: usize, test: bool) -> Ty<'a> {
        let Ty::Declared { schema, root } = operand else { return Ty::Unknown };
        match declared_kind(schema) {
            Kind::Object => field_of(schema, root, field).unwrap_or_else(|()| {
                self.undefined.push((at, field.to_owned(), test));
                Ty::Unknown
            }),
            Kind::Map => operand.indexed(),
            _ => Ty::Unknown,
        }
    }

    fn entry(&mut self, e: &EntryExpr) {
        match e {
            EntryExpr::MapEntry(m) => {
                self.ty(&m.key);
                self.ty(&m.value);
            }
            EntryExpr::StructField(f) => {
                self.ty(&f.value);
            }
        }
    }

    /// The type errors as cel-go reports them, in the order of their places in the text:
    /// `ERROR: <input>:L:C: <what>` and the line with a caret under the place — a selection's
    /// dot (`has(`'s parenthesis for a `has()`), an operator's symbol; `None` when there are
    /// none. An error whose place cannot be found in the text is not reported: no place is
    /// guessed, and nothing is refused for it.
    fn report(&self, text: &str, ast: &IdedExpr) -> Option<String> {
        if self.undefined.is_empty() && self.mismatches.is_empty() {
            return None;
        }
        let tokens = tokens(text);
        let mut located: Vec<(usize, String)> = Vec::new();
        let dots: Vec<usize> = tokens.iter().filter(|(_, t)| *t == Token::Dot).map(|(at, _)| *at).collect();
        // The walk meets selections in the order they are written; were they not found alike in
        // the text, no place is known.
        if dots.len() == self.selections {
            for (n, field, test) in &self.undefined {
                let dot = dots[*n];
                let offset = if *test { text[..dot].rfind("has(").map_or(dot, |h| h + 3) } else { dot };
                located.push((offset, format!("undefined field '{field}'")));
            }
        }
        if !self.mismatches.is_empty() {
            let places = operator_places(ast, &tokens);
            for (id, what) in &self.mismatches {
                if let Some(offset) = places.get(id) {
                    located.push((*offset, what.clone()));
                }
            }
        }
        if located.is_empty() {
            return None;
        }
        located.sort_by_key(|(offset, _)| *offset);
        let errors: Vec<String> = located
            .iter()
            .map(|(offset, what)| {
                let offset = *offset;
                let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
                let line_no = text[..offset].matches('\n').count() + 1;
                let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
                let column = text[line_start..offset].chars().count();
                format!(
                    "ERROR: <input>:{line_no}:{}: {what}\n | {}\n | {}^",
                    column + 1,
                    &text[line_start..line_end],
                    ".".repeat(column)
                )
            })
            .collect();
        Some(errors.join("\n"))
    }
}

/// The names cel-go gives a type in its messages; `None` for one this checker does not name
/// (an object, a library type, `dyn`, a list or map of unknown elements).
fn type_name(ty: Ty<'_>) -> Option<String> {
    let scalar = |k: Kind| -> Option<&'static str> {
        Some(match k {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Uint => "uint",
            Kind::Double => "double",
            Kind::String => "string",
            Kind::Bytes => "bytes",
            Kind::Duration => DURATION,
            Kind::Timestamp => TIMESTAMP,
            Kind::Null => "null_type",
            Kind::List | Kind::Map | Kind::Object | Kind::Opaque | Kind::Dyn => return None,
        })
    };
    match ty {
        Ty::Plain(k) => scalar(k).map(str::to_owned),
        Ty::ListOf(k) => scalar(k).map(|e| format!("list({e})")),
        Ty::Declared { schema, .. } => match declared_kind(schema) {
            Kind::List => type_name(ty.element()).map(|e| format!("list({e})")),
            Kind::Map => type_name(ty.indexed()).map(|v| format!("map(string, {v})")),
            k => scalar(k).map(str::to_owned),
        },
        Ty::Unknown => None,
    }
}

const DURATION: &str = "google.protobuf.Duration";
const TIMESTAMP: &str = "google.protobuf.Timestamp";

/// When no overload of operator `func` takes arguments of types `args`, their signature as
/// cel-go words it (`(int, string)`). Only what is certain is told: an argument whose type is
/// not named (see [`type_name`]) or is `null` lets the call through, as do functions other than
/// the operators. The overloads are cel-go's standard ones with Kubernetes' options (ordering
/// across int, uint and double is allowed; equality is not).
fn no_overload(func: &str, args: &[Ty<'_>]) -> Option<String> {
    const NUMBERS: [&str; 3] = ["int", "uint", "double"];
    let names: Vec<String> = args.iter().map(|t| type_name(*t)).collect::<Option<_>>()?;
    if names.iter().any(|n| n == "null_type") {
        return None;
    }
    let n: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = |t: &str| t.starts_with("list(");
    let ok = match (func, n.as_slice()) {
        ("_+_", [a, b]) => {
            (a == b && (["int", "uint", "double", "string", "bytes", DURATION].contains(a) || list(a)))
                || (*a == TIMESTAMP && *b == DURATION)
                || (*a == DURATION && *b == TIMESTAMP)
        }
        ("_-_", [a, b]) => {
            (a == b && ["int", "uint", "double", TIMESTAMP, DURATION].contains(a))
                || (*a == TIMESTAMP && *b == DURATION)
        }
        ("_*_" | "_/_", [a, b]) => a == b && NUMBERS.contains(a),
        ("_%_", [a, b]) => a == b && ["int", "uint"].contains(a),
        ("-_", [a]) => ["int", "double"].contains(a),
        ("!_", [a]) => *a == "bool",
        ("_&&_" | "_||_", [a, b]) => *a == "bool" && *b == "bool",
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) => {
            (a == b && ["bool", "int", "uint", "double", "string", "bytes", TIMESTAMP, DURATION].contains(a))
                || (NUMBERS.contains(a) && NUMBERS.contains(b))
        }
        ("_==_" | "_!=_", [a, b]) => a == b,
        ("_?_:_", [c, a, b]) => *c == "bool" && a == b,
        ("@in", [a, b]) => {
            b.strip_prefix("list(").and_then(|e| e.strip_suffix(')')) == Some(a)
                || (b.starts_with("map(string, ") && *a == "string")
        }
        ("_[_]", [a, b]) => {
            (list(a) && NUMBERS.contains(b)) || (a.starts_with("map(string, ") && *b == "string")
        }
        ("size", [a]) => ["string", "bytes"].contains(a) || list(a) || a.starts_with("map("),
        ("matches", [a, b]) => *a == "string" && *b == "string",
        _ => return None,
    };
    (!ok).then(|| format!("({})", n.join(", ")))
}

/// When no overload of method `func` takes a receiver of type `receiver` and arguments of
/// types `args`, their signature as cel-go words it (`int.(string)`). As [`no_overload`], only
/// what is certain: named types, and the methods of CEL's strings and Kubernetes' lists whose
/// overloads are known here.
fn no_member_overload(func: &str, receiver: Ty<'_>, args: &[Ty<'_>]) -> Option<String> {
    let receiver = type_name(receiver)?;
    let names: Vec<String> = args.iter().map(|t| type_name(*t)).collect::<Option<_>>()?;
    if receiver == "null_type" || names.iter().any(|n| n == "null_type") {
        return None;
    }
    let a: Vec<&str> = names.iter().map(String::as_str).collect();
    let r = receiver.as_str();
    let element = r.strip_prefix("list(").and_then(|e| e.strip_suffix(')'));
    let string_with = |overloads: &[&[&str]]| r == "string" && overloads.contains(&a.as_slice());
    let ok = match func {
        "size" => {
            a.is_empty() && (["string", "bytes"].contains(&r) || element.is_some() || r.starts_with("map("))
        }
        "startsWith" | "endsWith" | "contains" | "matches" => string_with(&[&["string"]]),
        "lowerAscii" | "upperAscii" | "trim" => string_with(&[&[]]),
        "split" => string_with(&[&["string"], &["string", "int"]]),
        "replace" => string_with(&[&["string", "string"], &["string", "string", "int"]]),
        "indexOf" | "lastIndexOf" => {
            string_with(&[&["string"], &["string", "int"]])
                || (element.is_some() && a.len() == 1 && element == Some(a[0]))
        }
        "substring" => string_with(&[&["int"], &["int", "int"]]),
        "charAt" => string_with(&[&["int"]]),
        "join" => r == "list(string)" && (a.is_empty() || a == ["string"]),
        _ => return None,
    };
    (!ok).then(|| format!("{r}.({})", a.join(", ")))
}

/// The symbol each operator is written with.
fn operator_symbol(func: &str) -> Option<&'static str> {
    Some(match func {
        "_+_" => "+",
        "_-_" | "-_" => "-",
        "_*_" => "*",
        "_/_" => "/",
        "_%_" => "%",
        "_<_" => "<",
        "_<=_" => "<=",
        "_>_" => ">",
        "_>=_" => ">=",
        "_==_" => "==",
        "_!=_" => "!=",
        "_&&_" => "&&",
        "_||_" => "||",
        "!_" => "!",
        "@in" => "in",
        "_?_:_" => "?",
        "_[_]" => "[",
        _ => return None,
    })
}

/// Where each operator call of `ast` is written (cel-go places an operator's errors at its
/// symbol): its operators and the text's, both in the order they are written, paired; empty
/// when the two do not agree.
fn operator_places(ast: &IdedExpr, tokens: &[(usize, Token)]) -> HashMap<u64, usize> {
    let mut written = Vec::new();
    if !in_text_order(ast, &mut written) {
        return HashMap::new();
    }
    let symbols: Vec<(usize, &str)> = tokens
        .iter()
        .filter_map(|(at, t)| match t {
            Token::Operator(op) => Some((*at, *op)),
            Token::Dot => None,
        })
        .collect();
    if symbols.len() != written.len() || symbols.iter().zip(&written).any(|((_, s), (_, w))| s != w) {
        return HashMap::new();
    }
    written.iter().zip(symbols).map(|((id, _), (at, _))| (*id, at)).collect()
}

/// Appends the operators of `e` (call id and symbol) in the order they are written, a list
/// literal as its `[` and a negative number as its `-`; `false` for a shape whose order is
/// not known (a comprehension no macro makes).
fn in_text_order(e: &IdedExpr, out: &mut Vec<(u64, &'static str)>) -> bool {
    match &e.expr {
        Expr::Literal(LiteralValue::Int(n)) if *n.inner() < 0 => out.push((e.id, "-")),
        Expr::Literal(LiteralValue::Double(d)) if d.inner().is_sign_negative() => out.push((e.id, "-")),
        Expr::Literal(_) | Expr::Ident(_) | Expr::Unspecified => {}
        // `has(`'s parenthesis.
        Expr::Select(s) if s.test => {
            out.push((e.id, "("));
            return in_text_order(&s.operand, out);
        }
        Expr::Select(s) => return in_text_order(&s.operand, out),
        Expr::List(l) => {
            out.push((e.id, "["));
            return l.elements.iter().all(|x| in_text_order(x, out));
        }
        Expr::Map(m) => return m.entries.iter().all(|entry| entry_in_text_order(&entry.expr, out)),
        Expr::Struct(s) => return s.entries.iter().all(|entry| entry_in_text_order(&entry.expr, out)),
        Expr::Call(c) => {
            let symbol = if c.target.is_none() { operator_symbol(&c.func_name) } else { None };
            match (symbol, c.args.as_slice()) {
                (Some(symbol), [operand]) => {
                    out.push((e.id, symbol));
                    return in_text_order(operand, out);
                }
                (Some(symbol), [left, right]) => {
                    let left = in_text_order(left, out);
                    out.push((e.id, symbol));
                    return left && in_text_order(right, out);
                }
                (Some(symbol), [cond, yes, no]) => {
                    let cond = in_text_order(cond, out);
                    out.push((e.id, symbol));
                    return cond && in_text_order(yes, out) && in_text_order(no, out);
                }
                // A function: its receiver, its parenthesis, its arguments.
                _ => {
                    let target = c.target.as_deref().is_none_or(|t| in_text_order(t, out));
                    out.push((e.id, "("));
                    return target && c.args.iter().all(|a| in_text_order(a, out));
                }
            }
        }
        Expr::Comprehension(c) => {
            let Some(written) = macro_arguments(c) else { return false };
            let range = in_text_order(&c.iter_range, out);
            out.push((e.id, "("));
            return range && written.into_iter().all(|x| in_text_order(x, out));
        }
    }
    true
}

/// [`in_text_order`] of a map's or a struct's entry: its key, then its value.
fn entry_in_text_order(entry: &EntryExpr, out: &mut Vec<(u64, &'static str)>) -> bool {
    match entry {
        EntryExpr::MapEntry(m) => in_text_order(&m.key, out) && in_text_order(&m.value, out),
        EntryExpr::StructField(f) => in_text_order(&f.value, out),
    }
}

/// The expressions a macro's caller wrote (after its range), read back from its expansion:
/// `all`'s and `exists`'s predicate, `exists_one`'s, `map`'s transform (after its filter),
/// `filter`'s predicate.
fn macro_arguments(c: &kube_cel::cel::common::ast::ComprehensionExpr) -> Option<Vec<&IdedExpr>> {
    let accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if *n == c.accu_var);
    fn call(e: &IdedExpr) -> Option<(&str, &[IdedExpr])> {
        match &e.expr {
            Expr::Call(call) if call.target.is_none() => {
                Some((call.func_name.as_str(), call.args.as_slice()))
            }
            _ => None,
        }
    }
    // `@result + [x]`: the element appended.
    fn appended<'e>(e: &'e IdedExpr, accu: &dyn Fn(&IdedExpr) -> bool) -> Option<&'e IdedExpr> {
        match call(e) {
            Some(("_+_", [a, list])) if accu(a) => match &list.expr {
                Expr::List(l) if l.elements.len() == 1 => Some(&l.elements[0]),
                _ => None,
            },
            _ => None,
        }
    }
    match call(&c.loop_step)? {
        ("_&&_" | "_||_", [a, predicate]) if accu(a) => Some(vec![predicate]),
        ("_?_:_", [predicate, step, rest]) if accu(rest) => match (appended(step, &accu), call(step)) {
            (Some(x), _) => Some(vec![predicate, x]),
            (None, Some(("_+_", [a, _]))) if accu(a) => Some(vec![predicate]),
            _ => None,
        },
        _ => appended(&c.loop_step, &accu).map(|x| vec![x]),
    }
}

/// The type of a call's result, for the functions whose result cost reads: what is unknown is
/// left so (its cost is then estimated low, never high).
fn result_type<'a>(name: &str, args: &[Ty<'a>]) -> Ty<'a> {
    let first = args.first().copied().unwrap_or(Ty::Unknown);
    let kind = match name {
        "_[_]" => return first.indexed(),
        "_?_:_" => return args.get(1).copied().unwrap_or(Ty::Unknown),
        "_+_" | "_-_" | "_*_" | "_/_" | "_%_" | "-_" => return first.kind().map_or(Ty::Unknown, Ty::Plain),
        "split" | "findAll" => return Ty::ListOf(Kind::String),
        "size" | "int" | "indexOf" | "lastIndexOf" | "prefixLength" | "sign" | "asInteger" | "compareTo"
        | "major" | "minor" | "patch" => Kind::Int,
        "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "_&&_"
        | "_||_"
        | "!_"
        | "@in"
        | "@not_strictly_false"
        | "matches"
        | "startsWith"
        | "endsWith"
        | "contains"
        | "isSorted"
        | "isIP"
        | "isCIDR"
        | "isQuantity"
        | "isSemver"
        | "isURL"
        | "containsIP"
        | "containsCIDR"
        | "isCanonical"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "isInteger"
        | "isGreaterThan"
        | "isLessThan"
        | "hasValue"
        | "exists"
        | "all"
        | "sets.contains"
        | "sets.intersects"
        | "sets.equivalent" => Kind::Bool,
        "string" | "lowerAscii" | "upperAscii" | "trim" | "substring" | "replace" | "join" | "format"
        | "find" | "charAt" | "reverse" | "quote" | "strings.quote" | "getScheme" | "getHostname"
        | "getHost" | "getPort" | "getEscapedPath" | "family" => Kind::String,
        "bytes" => Kind::Bytes,
        "double" | "asApproximateFloat" => Kind::Double,
        "uint" => Kind::Uint,
        "duration" => Kind::Duration,
        "timestamp" => Kind::Timestamp,
        "quantity" | "ip" | "cidr" | "url" | "semver" | "masked" | "add" | "sub" => Kind::Opaque,
        _ => return Ty::Unknown,
    };
    Ty::Plain(kind)
}

/// Whether a `(` after `before` opens a call's arguments (it follows a name other than `in`),
/// not a group.
fn called(before: &str) -> bool {
    let before = before.trim_end();
    let name_start = before.rfind(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).map_or(0, |i| i + 1);
    let name = &before[name_start..];
    name.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic()) && name != "in"
}

/// What the checker places errors at in a rule's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A field selection's dot: `.name` not followed by `(` (a method call), not `.?`.
    Dot,
    /// An operator's symbol, a list's or an index's `[`, a ternary's `?`, `in`, a call's `(`.
    Operator(&'static str),
}

/// The places of `text`'s selection dots and operators, in order, outside string literals,
/// comments and numbers (a number's `.` and its exponent's sign are its own).
fn tokens(text: &str) -> Vec<(usize, Token)> {
    const TWO: [&str; 6] = ["&&", "||", "==", "!=", "<=", ">="];
    const ONE: [&str; 10] = ["+", "-", "*", "/", "%", "<", ">", "!", "?", "["];
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'"' | b'\'') => {
                let raw = i > 0 && matches!(b[i - 1], b'r' | b'R');
                let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
                let close = if triple { 3 } else { 1 };
                i += close;
                while i < b.len() {
                    if !raw && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) {
                        i += close;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            c if c.is_ascii_digit() => {
                let hex = c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X'));
                i += 1;
                while i < b.len() {
                    let exponent = !hex && matches!(b[i - 1], b'e' | b'E') && matches!(b[i], b'+' | b'-');
                    let fraction = b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
                    if !(b[i].is_ascii_alphanumeric() || exponent || fraction) {
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            c if c == b'_' || c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                if &text[start..i] == "in" {
                    out.push((start, Token::Operator("in")));
                }
                continue;
            }
            b'.' if !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                let start = j;
                while j < b.len() && (b[j] == b'_' || b[j].is_ascii_alphanumeric()) {
                    j += 1;
                }
                if j > start && !b[start].is_ascii_digit() {
                    let mut k = j;
                    while k < b.len() && b[k].is_ascii_whitespace() {
                        k += 1;
                    }
                    if b.get(k) != Some(&b'(') {
                        out.push((i, Token::Dot));
                    }
                }
            }
            _ => {
                let rest = &text[i..];
                if let Some(op) = TWO.iter().find(|op| rest.starts_with(**op)) {
                    out.push((i, Token::Operator(op)));
                    i += 2;
                    continue;
                }
                if b[i] == b'(' && called(&text[..i]) {
                    out.push((i, Token::Operator("(")));
                }
                // `.?` and `[?` are optional selection, not a ternary.
                let optional = b[i] == b'?' && i > 0 && matches!(b[i - 1], b'.' | b'[');
                if let Some(op) = ONE.iter().find(|op| rest.starts_with(**op))
                    && !optional
                {
                    out.push((i, Token::Operator(op)));
                }
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Map<String, Value> {
        json!({ "type": "object", "properties": {
            "spec": { "type": "object", "properties": {
                "replicas": { "type": "integer" },
                "image-name": { "type": "string" },
                "ports": { "type": "array", "items": { "type": "object", "properties": { "port": { "type": "integer" } } } },
                "labels": { "type": "object", "additionalProperties": { "type": "string" } },
                "any": { "x-kubernetes-int-or-string": true },
            } } } })
        .as_object()
        .unwrap()
        .clone()
    }

    fn check(rule: &str) -> Option<String> {
        let program = super::super::compile(rule).unwrap();
        super::check(rule, program.expression(), &schema(), true, true).errors
    }

    #[test]
    fn a_field_the_schema_lacks_is_undefined_where_cel_go_says() {
        assert_eq!(
            check("self.spec.replica > 0").unwrap(),
            "ERROR: <input>:1:10: undefined field 'replica'\n | self.spec.replica > 0\n | .........^"
        );
        // In `has()`, cel-go points at the macro's parenthesis; every undefined field is told.
        assert_eq!(
            check("self.spec.replicas > 0 && has(self.spec.imageName) && self.spec.tag != ''").unwrap(),
            "ERROR: <input>:1:30: undefined field 'imageName'\n | self.spec.replicas > 0 && has(self.spec.imageName) && self.spec.tag != ''\n | .............................^\n\
             ERROR: <input>:1:64: undefined field 'tag'\n | self.spec.replicas > 0 && has(self.spec.imageName) && self.spec.tag != ''\n | ...............................................................^"
        );
        assert!(check("self.spec.ports.all(p, p.prot > 0)").unwrap().contains("undefined field 'prot'"));
        assert!(check("self.spec.ports[0].prt == 1").unwrap().contains("undefined field 'prt'"));
        assert!(
            check("self.metadata.name == 'x' && self.metadata.labels.size() == 0")
                .unwrap()
                .contains("'labels'")
        );
        assert!(check("oldSelf.nope == self.spec").unwrap().contains("1:8: undefined field 'nope'"));
    }

    #[test]
    fn what_the_schema_declares_or_cannot_type_is_let_through() {
        for rule in [
            "self.spec.replicas > 0",
            "self.spec.image__dash__name.startsWith('a.b')",
            "self.spec.ports.all(p, p.port > 0) && self.spec.ports.map(p, p.port).size() >= 0",
            "self.spec.labels.foo == 'x' && self.spec.labels.all(k, k.size() > 0)",
            "self.spec.any.whatever == 1",
            "self.apiVersion == 'v1' && self.kind != '' && self.metadata.name.size() < 64",
            "'self.spec.nope' != '' && 1.5 > 0.0",
            "self.spec.ports.filter(p, p.port > 1).size() > 0",
        ] {
            assert_eq!(check(rule), None, "{rule}");
        }
    }

    #[test]
    fn an_operator_no_overload_takes_is_a_type_error_at_its_symbol() {
        assert_eq!(
            check("self.spec.replicas + 'a' > 0").unwrap(),
            "ERROR: <input>:1:20: found no matching overload for '_+_' applied to '(int, string)'\n | self.spec.replicas + 'a' > 0\n | ...................^"
        );
        // Equality is not across numbers, ordering is (Kubernetes' cross-type comparisons).
        assert!(check("self.spec.replicas == 1.5").unwrap().contains("'_==_' applied to '(int, double)'"));
        assert_eq!(check("self.spec.replicas > 1.5"), None);
        // Inside a macro, after a negative number, and with an undefined field before it: each
        // error at its place, in the order of the text.
        assert!(check("self.spec.ports.all(p, p.port == 'x')").unwrap().starts_with(
            "ERROR: <input>:1:31: found no matching overload for '_==_' applied to '(int, string)'"
        ));
        assert!(
            check("self.spec.replicas > -1 && self.spec.replicas - 1 == 'x'")
                .unwrap()
                .starts_with("ERROR: <input>:1:51: found no matching overload for '_==_'")
        );
        let both = check("self.spec.nope == 1 && self.spec.replicas == 'a'").unwrap();
        let lines: Vec<&str> = both.lines().filter(|l| l.starts_with("ERROR")).collect();
        assert_eq!(
            lines,
            [
                "ERROR: <input>:1:10: undefined field 'nope'",
                "ERROR: <input>:1:43: found no matching overload for '_==_' applied to '(int, string)'"
            ]
        );
        assert!(
            check("self.spec.replicas > 0 ? 'a' : 1")
                .unwrap()
                .contains("1:24: found no matching overload for '_?_:_' applied to '(bool, string, int)'")
        );
        assert!(check("self.spec.labels['a'] + 1 > 0").unwrap().contains("'_+_' applied to '(string, int)'"));
        assert!(check("!self.spec.replicas").unwrap().contains("'!_' applied to '(int)'"));
        // Functions, at their parenthesis: global, then a method on what it does not take.
        assert_eq!(
            check("size(self.spec.replicas) > 0").unwrap(),
            "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'\n | size(self.spec.replicas) > 0\n | ....^"
        );
        assert!(check("self.spec.replicas.startsWith('a')").unwrap().starts_with(
            "ERROR: <input>:1:30: found no matching overload for 'startsWith' applied to 'int.(string)'"
        ));
        assert!(
            check("has(self.spec.ports) && (self.metadata.name.startsWith(1) || true)").unwrap().starts_with(
                "ERROR: <input>:1:55: found no matching overload for 'startsWith' applied to 'string.(int)'"
            )
        );
    }

    #[test]
    fn what_an_overload_may_take_is_let_through() {
        for rule in [
            "self.spec.any == 1 && self.spec.any != 'a'",
            "self.spec.labels['a'] == 'b' && 'a' in self.spec.labels",
            "size(self.spec.ports) > 0 && self.spec.ports.map(p, p.port).exists(x, x > 0)",
            "self.spec.ports.filter(p, p.port > 1).all(p, p.port < 65536)",
            "has(self.spec.replicas) ? self.spec.replicas > 0 : true",
            "[1, 2].all(x, x > 0) && self.spec.image__dash__name in ['a', 'b']",
            "1e-3 < 2.0 && 0x1e-5 < 30 && int(self.spec.replicas) - 1 >= 0",
            "duration('1s') + duration('2s') > duration('0s')",
            "!(self.spec.replicas > 0) || self.spec.replicas % 2 == 0",
            "self.spec.replicas == null || self.spec.ports[0].port >= 1",
            "self.metadata.name.size() <= 63 && self.spec.image__dash__name.startsWith('a-b')",
            "'a+b' + \"c-d\" == 'a+bc-d' // a comment: 1 + 'x'",
            "self.spec.image__dash__name.split('-').size() > 0 && self.spec.labels.size() > 0",
            "(self.spec.replicas + 1) * 2 > 0 && self.spec.replicas in (self.spec.ports.map(p, p.port))",
            "has(self.spec.replicas) && size(self.spec.ports) > 0 && self.metadata.name.matches('^a')",
            "self.spec.ports.exists(p, p.port == 1) ? true : (1 > 0)",
            "self.spec.image__dash__name.substring(1).lowerAscii().indexOf('a') >= 0",
        ] {
            assert_eq!(check(rule), None, "{rule}");
        }
    }

    #[test]
    fn property_names_are_escaped_as_upstreams() {
        assert_eq!(escaped("a-b").as_deref(), Some("a__dash__b"));
        assert_eq!(escaped("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escaped("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escaped("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escaped("a b"), None);
    }
}
