//! The part of cel-go's type checking a rule gets when its CRD is written: every field a rule
//! selects on a declared object must be one of the object's declared fields, as apiextensions'
//! `SchemaDeclType` declares them — an undefined one refuses the CRD with cel-go's
//! `undefined field 'x'`, its place in the rule shown as cel-go shows it.
//!
//! The types are the schema's: an object with `properties` declares them (with their CEL escapes,
//! `a-b` as `a__dash__b`; at a resource's root `apiVersion`, `kind` and `metadata` with only
//! `name` and `generateName`), an object with `additionalProperties` is a map, any key allowed;
//! an array's items are its elements' type, also through the macros (`all`, `exists`, `map`,
//! `filter`) and an index. What the checker cannot type — a function's result, an
//! int-or-string, a value it does not follow — it lets through, as a check it cannot fail: no
//! rule that upstream accepts is refused here, some it refuses are accepted (a wrong overload, a
//! field of a scalar).

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
    /// The undefined fields, as cel-go reports them; `None` when there are none.
    pub(super) undefined: Option<String>,
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
    let mut walk = Walk { scope, selections: 0, undefined: Vec::new(), types: HashMap::new() };
    walk.ty(ast);
    let undefined = walk.report(text);
    Checked { ast, types: walk.types, undefined }
}

/// The checker's walk of one rule.
struct Walk<'a> {
    /// The variables in scope and their types, innermost last.
    scope: Vec<(String, Ty<'a>)>,
    /// How many field selections were walked (in the order they are written).
    selections: usize,
    /// The undefined fields: each selection's number, its name, and whether it is `has()`'s.
    undefined: Vec<(usize, String, bool)>,
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
                if let Some(t) = &c.target {
                    self.ty(t);
                }
                let args: Vec<Ty<'a>> = c.args.iter().map(|a| self.ty(a)).collect();
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

    /// The undefined fields as cel-go reports them: `ERROR: <input>:L:C: undefined field 'x'`
    /// and the line with a caret under the selection's dot (under `has(`'s parenthesis for a
    /// `has()`), one after the other; `None` when there are none.
    fn report(&self, text: &str) -> Option<String> {
        if self.undefined.is_empty() {
            return None;
        }
        let dots = selection_dots(text);
        // The walk meets selections in the order they are written; were they not found alike in
        // the text, no place is guessed and nothing is refused.
        if dots.len() != self.selections {
            return None;
        }
        let errors: Vec<String> = self
            .undefined
            .iter()
            .map(|(n, field, test)| {
                let dot = dots[*n];
                let offset = if *test { text[..dot].rfind("has(").map_or(dot, |h| h + 3) } else { dot };
                let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
                let line_no = text[..offset].matches('\n').count() + 1;
                let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
                let column = text[line_start..offset].chars().count();
                format!(
                    "ERROR: <input>:{line_no}:{}: undefined field '{field}'\n | {}\n | {}^",
                    column + 1,
                    &text[line_start..line_end],
                    ".".repeat(column)
                )
            })
            .collect();
        Some(errors.join("\n"))
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

/// The byte offsets of the dots of field selections in `text`, in order: `.name` not followed
/// by `(` (a method call), outside string literals and comments, and not `.?` or a number's.
fn selection_dots(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut dots = Vec::new();
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
            b'.' if !(i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit)) => {
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
                        dots.push(i);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    dots
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
        super::check(rule, program.expression(), &schema(), true, true).undefined
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
    fn property_names_are_escaped_as_upstreams() {
        assert_eq!(escaped("a-b").as_deref(), Some("a__dash__b"));
        assert_eq!(escaped("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escaped("x__y").as_deref(), Some("x__underscores__y"));
        assert_eq!(escaped("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escaped("a b"), None);
    }
}
