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

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use serde_json::{Map, Value};

/// What the checker knows of a value's type.
#[derive(Clone, Copy)]
enum Ty<'a> {
    /// An object whose fields are its schema's properties.
    Object { schema: &'a Map<String, Value>, root: bool },
    /// A map (`additionalProperties`) whose values have this schema.
    Map(&'a Map<String, Value>),
    /// A list whose items have this schema.
    List(&'a Map<String, Value>),
    /// Anything: not checked.
    Unknown,
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

/// The type a schema node declares (`root`: a resource's root or an embedded resource).
fn declared(schema: &Map<String, Value>, root: bool) -> Ty<'_> {
    if schema.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Ty::Unknown;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => schema.get("items").and_then(Value::as_object).map_or(Ty::Unknown, Ty::List),
        Some("object") => match schema.get("additionalProperties").and_then(Value::as_object) {
            Some(values) => Ty::Map(values),
            None => Ty::Object { schema, root },
        },
        _ => Ty::Unknown,
    }
}

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
        return Ok(if field == "metadata" {
            Ty::Object { schema: &ROOT_METADATA, root: false }
        } else {
            Ty::Unknown
        });
    }
    for (name, prop) in properties.into_iter().flatten() {
        if escaped(name).as_deref() == Some(field) {
            return Ok(prop.as_object().map_or(Ty::Unknown, |p| {
                declared(p, p.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true))
            }));
        }
    }
    Err(())
}

/// The metadata a rule at a resource's root reads.
static ROOT_METADATA: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(|| {
    let string = serde_json::json!({ "type": "string" });
    let mut properties = Map::new();
    properties.insert("name".into(), string.clone());
    properties.insert("generateName".into(), string);
    let mut m = Map::new();
    m.insert("type".into(), Value::String("object".into()));
    m.insert("properties".into(), Value::Object(properties));
    m
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

/// The checker's walk of one rule.
struct Walk<'a> {
    /// The variables in scope and their types, innermost last.
    scope: Vec<(String, Ty<'a>)>,
    /// How many field selections were walked (in the order they are written).
    selections: usize,
    /// The undefined fields: each selection's number, its name, and whether it is `has()`'s.
    undefined: Vec<(usize, String, bool)>,
}

impl<'a> Walk<'a> {
    fn ty(&mut self, e: &IdedExpr) -> Ty<'a> {
        match &e.expr {
            Expr::Ident(name) => {
                self.scope.iter().rev().find(|(n, _)| n == name).map_or(Ty::Unknown, |(_, t)| *t)
            }
            Expr::Select(s) => {
                let operand = self.ty(&s.operand);
                let at = self.selections;
                self.selections += 1;
                match operand {
                    Ty::Object { schema, root } => field_of(schema, root, &s.field).unwrap_or_else(|()| {
                        self.undefined.push((at, s.field.clone(), s.test));
                        Ty::Unknown
                    }),
                    Ty::Map(values) => declared(values, false),
                    Ty::List(_) | Ty::Unknown => Ty::Unknown,
                }
            }
            Expr::Call(c) => {
                let target = c.target.as_ref().map(|t| self.ty(t));
                let args: Vec<Ty<'a>> = c.args.iter().map(|a| self.ty(a)).collect();
                match (c.func_name.as_str(), target, args.as_slice()) {
                    ("_[_]", None, [Ty::List(items), _]) => declared(items, false),
                    ("_[_]", None, [Ty::Map(values), _]) => declared(values, false),
                    _ => Ty::Unknown,
                }
            }
            Expr::Comprehension(c) => {
                let element = match self.ty(&c.iter_range) {
                    Ty::List(items) if c.iter_var2.is_none() => declared(items, false),
                    _ => Ty::Unknown,
                };
                self.ty(&c.accu_init);
                self.scope.push((c.iter_var.clone(), element));
                if let Some(v) = &c.iter_var2 {
                    self.scope.push((v.clone(), Ty::Unknown));
                }
                self.scope.push((c.accu_var.clone(), Ty::Unknown));
                self.ty(&c.loop_cond);
                self.ty(&c.loop_step);
                self.ty(&c.result);
                self.scope.truncate(self.scope.len() - if c.iter_var2.is_some() { 3 } else { 2 });
                Ty::Unknown
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.ty(x);
                }
                Ty::Unknown
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    self.entry(&entry.expr);
                }
                Ty::Unknown
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    self.entry(&entry.expr);
                }
                Ty::Unknown
            }
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
}

/// The fields `text` (which parses) selects that its schema does not declare, as cel-go
/// reports them: `ERROR: <input>:L:C: undefined field 'x'` and the line with a caret under the
/// selection's dot (under `has(`'s parenthesis for a `has()`), one after the other; `None` when
/// there are none. `schema` is the rule's node; `root` says it is a resource's root (or an
/// embedded resource); `old_self` says `oldSelf` has the node's type (it is not optional).
pub(crate) fn undefined_field(
    text: &str,
    schema: &Map<String, Value>,
    root: bool,
    old_self: bool,
) -> Option<String> {
    let parsed = kube_cel::cel::parser::Parser::default().parse(text).ok()?;
    let own = declared(schema, root);
    let mut scope = vec![("self".to_owned(), own)];
    if old_self {
        scope.push(("oldSelf".to_owned(), own));
    }
    let mut walk = Walk { scope, selections: 0, undefined: Vec::new() };
    walk.ty(&parsed);
    if walk.undefined.is_empty() {
        return None;
    }
    let dots = selection_dots(text);
    // The walk meets selections in the order they are written; were they not found alike in
    // the text, no place is guessed and nothing is refused.
    if dots.len() != walk.selections {
        return None;
    }
    let errors: Vec<String> = walk
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
        undefined_field(rule, &schema(), true, true)
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
