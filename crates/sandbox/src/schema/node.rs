//! The parsed form of a `JSONSchemaProps`: one [`Node`] per schema node, every keyword read once
//! (numbers as numbers, `pattern` compiled, formats normalized) so that validating, pruning and
//! defaulting an object never looks at the schema's JSON again. Malformed keywords (a `maxLength`
//! that is a string, a `properties` that is an array) are ignored here; [`super::structural_errors`]
//! is what refuses them.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::format::Format;

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub(crate) enum Additional {
    /// `additionalProperties: true` or `false`.
    Allows(bool),
    /// `additionalProperties: {…}`.
    Schema(Box<Node>),
}

/// One schema node.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    /// The types kube-openapi checks: `[type]`, `["integer", "string"]` under
    /// `x-kubernetes-int-or-string`, none when neither is given.
    pub types: Vec<String>,
    /// `format` as written, when upstream keeps it (`StripUnsupportedFormatsPostProcess`).
    pub format: String,
    /// The string format checked, when `format` is one of the registry's.
    pub string_format: Option<Format>,
    pub nullable: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub properties: BTreeMap<String, Node>,
    pub additional: Option<Additional>,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    /// `pattern` as written, and compiled (`None` when it does not compile).
    pub pattern: Option<(String, Option<Regex>)>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    pub default: Option<Value>,
    /// Whether this node or one under it (properties, map values, items) is a
    /// `x-kubernetes-list-type` `set` or `map`: where the list-type walk must go.
    pub has_list_types: bool,
    /// Whether this node or one under it is an embedded resource: where the embedded-resource
    /// walk must go.
    pub has_embedded: bool,
    /// Its `x-kubernetes-validations`, compiled.
    pub rules: Option<std::sync::Arc<super::cel::Rules>>,
    /// Whether this node or one under it has CEL rules: where the rules' walk must go.
    pub has_rules: bool,
}

/// An integer keyword (`maxLength: 3`; `3.0` is read as 3).
fn int(m: &Map<String, Value>, key: &str) -> Option<i64> {
    let v = m.get(key)?;
    v.as_i64().or_else(|| {
        v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18).map(|f| {
            #[allow(clippy::cast_possible_truncation)]
            let i = f as i64;
            i
        })
    })
}

fn flag(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn string(m: &Map<String, Value>, key: &str) -> String {
    m.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn nodes(m: &Map<String, Value>, key: &str) -> Vec<Node> {
    m.get(key).and_then(Value::as_array).map(|a| a.iter().map(Node::parse).collect()).unwrap_or_default()
}

/// Go's regexp classes are ASCII (`\d` is `[0-9]`); the `regex` crate's are Unicode unless told.
fn go_regex(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('s') => out.push_str("[\\t\\n\\f\\r ]"),
            Some('S') => out.push_str("[^\\t\\n\\f\\r ]"),
            Some('b') => out.push_str("(?-u:\\b)"),
            Some('B') => out.push_str("(?-u:\\B)"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Compiles a `pattern` with Go's (RE2) semantics; the error when it does not compile.
pub(crate) fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&go_regex(pattern))
}

/// Which formats upstream keeps for a type (`StripUnsupportedFormatsPostProcess`, v1.32's list):
/// the string formats of the registry for strings (and untyped or int-or-string nodes),
/// `int32`/`int64` for integers, `float`/`double` for numbers, none for anything else.
fn kept_format(types: &[String], format: &str) -> (String, Option<Format>) {
    if format.is_empty() {
        return (String::new(), None);
    }
    let single = if types.len() == 1 { types[0].as_str() } else { "" };
    match single {
        "" | "string" => match Format::named(format) {
            Some(f) => (format.to_owned(), Some(f)),
            None => (String::new(), None),
        },
        "integer" if format == "int32" || format == "int64" => (format.to_owned(), None),
        "number" if format == "float" || format == "double" => (format.to_owned(), None),
        _ => (String::new(), None),
    }
}

impl Node {
    /// Reads one schema node and everything under it; anything that is not an object is an
    /// empty node.
    pub(crate) fn parse(v: &Value) -> Self {
        let Some(m) = v.as_object() else { return Self::default() };
        let ty = string(m, "type");
        let int_or_string = flag(m, "x-kubernetes-int-or-string");
        let types = if int_or_string {
            vec!["integer".to_owned(), "string".to_owned()]
        } else if ty.is_empty() {
            Vec::new()
        } else {
            vec![ty.clone()]
        };
        let (format, string_format) =
            kept_format(&types, m.get("format").and_then(Value::as_str).unwrap_or(""));
        let properties = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.clone(), Self::parse(v))).collect())
            .unwrap_or_default();
        let additional = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Additional::Allows(*b)),
            Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(Self::parse(v)))),
            _ => None,
        };
        let pattern = m.get("pattern").and_then(Value::as_str).map(|p| (p.to_owned(), compile(p).ok()));
        let mut node = Self {
            types,
            format,
            string_format,
            nullable: flag(m, "nullable"),
            preserve_unknown: flag(m, "x-kubernetes-preserve-unknown-fields"),
            embedded: flag(m, "x-kubernetes-embedded-resource"),
            list_type: m.get("x-kubernetes-list-type").and_then(Value::as_str).map(str::to_owned),
            list_map_keys: m
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            properties,
            additional,
            items: m.get("items").filter(|i| i.is_object()).map(|i| Box::new(Self::parse(i))),
            required: m
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default(),
            enumeration: m.get("enum").and_then(Value::as_array).cloned(),
            maximum: m.get("maximum").and_then(Value::as_f64),
            exclusive_maximum: flag(m, "exclusiveMaximum"),
            minimum: m.get("minimum").and_then(Value::as_f64),
            exclusive_minimum: flag(m, "exclusiveMinimum"),
            multiple_of: m.get("multipleOf").and_then(Value::as_f64),
            max_length: int(m, "maxLength"),
            min_length: int(m, "minLength"),
            pattern,
            max_items: int(m, "maxItems"),
            min_items: int(m, "minItems"),
            unique_items: flag(m, "uniqueItems"),
            max_properties: int(m, "maxProperties"),
            min_properties: int(m, "minProperties"),
            all_of: nodes(m, "allOf"),
            any_of: nodes(m, "anyOf"),
            one_of: nodes(m, "oneOf"),
            not: m.get("not").filter(|n| n.is_object()).map(|n| Box::new(Self::parse(n))),
            default: m.get("default").cloned(),
            has_list_types: false,
            has_embedded: false,
            rules: super::cel::Rules::parse(m),
            has_rules: false,
        };
        let below = node.properties.values().chain(node.additional_schema()).chain(node.items.as_deref());
        let (lists, embedded, rules) = below.fold((false, false, false), |(l, e, r), c| {
            (l || c.has_list_types, e || c.has_embedded, r || c.has_rules)
        });
        node.has_list_types = lists || matches!(node.list_type.as_deref(), Some("set" | "map"));
        node.has_embedded = embedded || node.embedded;
        node.has_rules = rules || node.rules.is_some();
        node
    }

    /// The schema for a map value (`additionalProperties: {…}`), when there is one.
    pub(crate) fn additional_schema(&self) -> Option<&Self> {
        match &self.additional {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema a field `key` of an object falls under: its property, or the map values'.
    pub(crate) fn field(&self, key: &str) -> Option<&Self> {
        self.properties.get(key).or_else(|| self.additional_schema())
    }
}

impl super::cel::Schema for Node {
    fn type_name(&self) -> &str {
        if self.types.len() == 1 { &self.types[0] } else { "" }
    }

    fn format(&self) -> &str {
        &self.format
    }

    fn field(&self, key: &str) -> Option<&Self> {
        Node::field(self, key)
    }

    fn items(&self) -> Option<&Self> {
        self.items.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_classes_are_ascii() {
        let re = compile(r"^\d+$").expect("compiles");
        assert!(re.is_match("123"));
        assert!(!re.is_match("١٢٣"), "Arabic-Indic digits are not \\d in Go");
        assert!(compile(r"^[\w.-]+$").expect("compiles").is_match("a_b.c-d"));
        assert!(compile("(").is_err());
    }

    #[test]
    fn formats_upstream_strips() {
        let n = Node::parse(&serde_json::json!({"type": "integer", "format": "uuid"}));
        assert_eq!(n.format, "");
        let n = Node::parse(&serde_json::json!({"type": "string", "format": "date-time"}));
        assert_eq!(n.format, "date-time");
        assert!(n.string_format.is_some());
        let n = Node::parse(&serde_json::json!({"type": "string", "format": "k8s-short-name"}));
        assert_eq!(n.format, "", "not a v1.32 format");
    }
}
