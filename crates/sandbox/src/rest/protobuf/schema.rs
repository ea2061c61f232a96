//! The protobuf messages of the built-in API, as `go-to-protobuf` numbers them, read once from
//! `schema.json`.
//!
//! `schema.json` holds, for every message of the built-in API's `generated.proto` files
//! (`k8s.io/api`, apimachinery's `meta/v1`, `runtime`, `intstr` and `resource`, the CRD and
//! APIService types, `metrics.k8s.io`), its fields as `[number, json name, type, flags]`: the
//! name the field has in JSON (the Go struct's `json` tag, which can differ from the proto name:
//! a schema's `x-kubernetes-*`), its type (a scalar, a message's full name, `[]T` repeated,
//! `{K}V` a map), and from the Go field `p` (a pointer, slice or map: present means set, zero
//! included), `o` (`omitempty`: a zero value is not written in JSON) and `i` (an embedded
//! struct whose fields JSON writes inline). Beside them, which
//! proto package each `apiVersion` is (`groups`) and which messages are Go slice types wrapped
//! in a message (`wrappers`: `ExtraValue`, `Verbs`), written as a bare list in JSON.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// A scalar field's protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Double,
    Float,
}

impl Scalar {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => Self::String,
            "bytes" => Self::Bytes,
            "bool" => Self::Bool,
            "int32" | "sint32" => Self::Int32,
            "int64" | "sint64" => Self::Int64,
            "uint32" | "fixed32" => Self::Uint32,
            "uint64" | "fixed64" => Self::Uint64,
            "double" => Self::Double,
            "float" => Self::Float,
            _ => return None,
        })
    }
}

/// What one value of a field is: a scalar or a message (by its index in the schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Type {
    Scalar(Scalar),
    Message(usize),
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arity {
    One,
    Repeated,
    /// `map<K, V>`: repeated entries `{ key = 1; value = 2; }`, a JSON object.
    Map(Scalar),
}

/// One field of a message.
#[derive(Debug)]
pub(super) struct Field {
    pub number: u32,
    pub json: String,
    pub ty: Type,
    pub arity: Arity,
    /// A Go pointer, slice or map: written when set, zero included.
    pub pointer: bool,
    /// Go's `omitempty`: a zero scalar is left out of JSON.
    pub omitempty: bool,
    /// An embedded struct without a JSON name: its fields are the enclosing object's in JSON
    /// (a probe's handler, a volume's source).
    pub inline: bool,
}

/// The types whose JSON is not their message's fields: each has its own form, written by
/// [`well_known`](super::well_known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    /// `meta/v1` Time: RFC 3339 to the second.
    Time,
    /// `meta/v1` MicroTime: RFC 3339 to the microsecond.
    MicroTime,
    /// `meta/v1` Duration: Go's duration text (`1h0m0s`).
    Duration,
    /// A number or a string.
    IntOrString,
    /// A quantity's canonical text.
    Quantity,
    /// Bytes that are JSON: `RawExtension`, `FieldsV1`, a CRD schema's `JSON`.
    RawJson,
    /// A CRD schema's `items`: a schema or a list of them.
    SchemaOrArray,
    /// `additionalProperties` and the like: a bool or a schema.
    SchemaOrBool,
    /// `dependencies`' values: a schema or a list of property names.
    SchemaOrStringArray,
    /// A Go slice type wrapped in a message (`{ repeated items = 1 }`): a bare list.
    Wrapper,
}

/// One message.
#[derive(Debug)]
pub(super) struct Message {
    /// In field-number order, as Go writes them.
    pub fields: Vec<Field>,
    pub special: Option<Special>,
    /// Field number → index in `fields`.
    by_number: HashMap<u32, usize>,
}

impl Message {
    /// The field numbered `n`.
    pub fn field(&self, n: u32) -> Option<&Field> {
        self.by_number.get(&n).map(|&i| &self.fields[i])
    }
}

/// Every message, and which package each `apiVersion` lives in.
#[derive(Debug)]
pub(super) struct Schema {
    pub messages: Vec<Message>,
    by_name: HashMap<String, usize>,
    groups: HashMap<String, String>,
}

impl Schema {
    /// The message named `full` (`k8s.io.api.core.v1.Pod`).
    pub fn message(&self, full: &str) -> Option<usize> {
        self.by_name.get(full).copied()
    }

    /// The message an object of `api_version` and `kind` is: none for a kind protobuf does not
    /// carry (a custom resource). `meta/v1`'s kinds are every group's (a `DeleteOptions` sent
    /// as `apps/v1`, a `Status` as `v1`), as upstream registers them in each.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        let package = self.groups.get(api_version)?;
        self.message(&format!("{package}.{kind}"))
            .or_else(|| self.message(&format!("k8s.io.apimachinery.pkg.apis.meta.v1.{kind}")))
    }
}

#[derive(Deserialize)]
struct Raw {
    groups: HashMap<String, String>,
    wrappers: Vec<String>,
    messages: HashMap<String, Vec<(u32, String, String, String)>>,
}

/// The schema, read on first use.
pub(super) fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| load(include_str!("schema.json")))
}

fn special(name: &str, wrappers: &[String]) -> Option<Special> {
    const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.";
    if wrappers.iter().any(|w| w == name) {
        return Some(Special::Wrapper);
    }
    if let Some(rest) = name.strip_prefix(META) {
        return match rest {
            "Time" => Some(Special::Time),
            "MicroTime" => Some(Special::MicroTime),
            "Duration" => Some(Special::Duration),
            "FieldsV1" => Some(Special::RawJson),
            _ => None,
        };
    }
    match name {
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => return Some(Special::IntOrString),
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => return Some(Special::Quantity),
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => return Some(Special::RawJson),
        _ => {}
    }
    if name.starts_with("k8s.io.apiextensions_apiserver.") {
        return match name.rsplit('.').next() {
            Some("JSON") => Some(Special::RawJson),
            Some("JSONSchemaPropsOrArray") => Some(Special::SchemaOrArray),
            Some("JSONSchemaPropsOrBool") => Some(Special::SchemaOrBool),
            Some("JSONSchemaPropsOrStringArray") => Some(Special::SchemaOrStringArray),
            _ => None,
        };
    }
    None
}

fn load(text: &str) -> Schema {
    let raw: Raw = serde_json::from_str(text).expect("schema.json is the schema");
    let mut names: Vec<&String> = raw.messages.keys().collect();
    names.sort();
    let by_name: HashMap<String, usize> = names.iter().enumerate().map(|(i, n)| ((*n).clone(), i)).collect();
    let ty = |t: &str| -> Type {
        Scalar::parse(t).map_or_else(
            || Type::Message(*by_name.get(t).unwrap_or_else(|| panic!("schema.json names {t}"))),
            Type::Scalar,
        )
    };
    let messages = names
        .iter()
        .map(|name| {
            let mut fields: Vec<Field> = raw.messages[*name]
                .iter()
                .map(|(number, json, t, flags)| {
                    let (arity, value) = if let Some(rest) = t.strip_prefix("[]") {
                        (Arity::Repeated, rest)
                    } else if let Some((key, value)) = t.strip_prefix('{').and_then(|r| r.split_once('}')) {
                        (Arity::Map(Scalar::parse(key).expect("a map's key is a scalar")), value)
                    } else {
                        (Arity::One, t.as_str())
                    };
                    Field {
                        number: *number,
                        json: json.clone(),
                        ty: ty(value),
                        arity,
                        pointer: flags.contains('p'),
                        omitempty: flags.contains('o'),
                        inline: flags.contains('i'),
                    }
                })
                .collect();
            fields.sort_by_key(|f| f.number);
            let by_number = fields.iter().enumerate().map(|(i, f)| (f.number, i)).collect();
            Message { fields, special: special(name, &raw.wrappers), by_number }
        })
        .collect();
    Schema { messages, by_name, groups: raw.groups }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_knows_every_served_built_in_kind() {
        // Its list too, where it has one: a Binding or a review is written, never listed.
        let s = schema();
        for def in crate::catalog::all() {
            if def.group == "metrics.k8s.io" {
                continue;
            }
            let api_version = def.api_version();
            if def.kind.ends_with("Review") || def.kind == "Binding" {
                assert!(s.kind(&api_version, def.kind).is_some(), "{api_version} {}", def.kind);
                continue;
            }
            assert!(s.kind(&api_version, def.list_kind).is_some(), "{api_version} {}", def.list_kind);
            assert!(
                s.kind(&api_version, def.kind).is_some(),
                "{api_version} {} has no protobuf message",
                def.kind
            );
        }
    }

    #[test]
    fn json_names_are_the_go_tags_not_the_proto_names() {
        let s = schema();
        let props = &s.messages
            [s.message("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps").unwrap()];
        assert!(props.fields.iter().any(|f| f.json == "x-kubernetes-preserve-unknown-fields"));
        assert!(props.fields.iter().any(|f| f.json == "$ref"));
        let spec = &s.messages[s.message("k8s.io.api.apps.v1.DeploymentSpec").unwrap()];
        let replicas = spec.field(1).unwrap();
        assert_eq!((replicas.json.as_str(), replicas.pointer), ("replicas", true));
        let paused = spec.field(7).unwrap();
        assert_eq!((paused.pointer, paused.omitempty), (false, true));
    }
}
