//! Whether a CRD version's `openAPIV3Schema` is one the API server accepts, as upstream's
//! `validateCustomResourceDefinitionValidation` (`apis/apiextensions/validation/validation.go`)
//! checks it, in its order:
//!
//! 1. `nullable` at the root is forbidden;
//! 2. the schema must be structural (`pkg/apiserver/schema/validation.go`, `ValidateStructural`,
//!    and `complete.go`): a `type` on every node but under `x-kubernetes-int-or-string` or
//!    `x-kubernetes-preserve-unknown-fields`, `items` for arrays, only value validations under
//!    `allOf`/`anyOf`/`oneOf`/`not` and every field they name specified outside them, `metadata`
//!    at the root restricting nothing but `name` and `generateName`, no `additionalProperties` at
//!    the root; these errors are sorted, as upstream sorts them;
//! 3. when it is, every `default` must be pruned (`must not have unknown fields`) and valid
//!    against its own schema (`defaulting/validation.go`, `ValidateDefaults`), errors under
//!    `….default` (a failure at the default's own level names the default with kube-openapi's
//!    empty field name: `….default: Invalid value: 20:  in body should be less than or equal to
//!    10`, two spaces, as upstream prints it);
//! 4. the OpenAPI checks (`ValidateCustomResourceDefinitionOpenAPISchema`): unsupported keywords
//!    (`$ref`, `id`, `patternProperties`, `definitions`, `dependencies`, `additionalItems`, `items`
//!    as an array, `type: null`), `uniqueItems: true`, `properties` with `additionalProperties`,
//!    defaults in the root's `metadata`/`apiVersion`/`kind`, the list and map types and their keys.
//!
//! Paths use upstream's `field.Path` rendering: `….properties[spec].items.type`, `….anyOf[0]`.
//! `x-kubernetes-validations` rules are parsed (a syntax error refuses the CRD), their field
//! selections checked, and, in a structural schema, their cost estimated: a rule above 10,000,000
//! (times how often its node may occur, from its ancestors' `maxItems` and `maxProperties`), a
//! message expression above it, or a schema's rules above 100,000,000 together refuse the CRD,
//! as upstream's `ValidateCustomResourceDefinitionOpenAPISchema` does. Their other fields are
//! checked (a rule given, messages not blank, a known reason, a `fieldPath` in the schema).

use serde_json::{Map, Value};

use super::node::{Node, compile};
use super::{prune, validate};
use crate::field_errors::{forbidden, invalid_bare as invalid, not_supported, required};
use crate::go_print::{bad_value, go_quote};
use crate::status::FieldError;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn obj<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    m.get(k).and_then(Value::as_object)
}

fn list<'a>(m: &'a Map<String, Value>, k: &str) -> &'a [Value] {
    m.get(k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn props(m: &Map<String, Value>) -> Vec<(&String, &Map<String, Value>)> {
    obj(m, "properties")
        .map(|p| p.iter().filter_map(|(k, v)| v.as_object().map(|o| (k, o))).collect())
        .unwrap_or_default()
}

/// Go's `%#v` of a `[]string`.
fn go_strings(v: &[Value]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.as_str().map_or_else(|| bad_value(x), go_quote)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// Go's regexp error wording, as near as the `regex` crate's lets it be.
fn regex_error(pattern: &str, err: &regex::Error) -> String {
    let text = err.to_string();
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let why = last.strip_prefix("error: ").unwrap_or(last);
    // The `regex` crate's words for the faults Go's `regexp/syntax` names otherwise, with the
    // part of the pattern Go quotes (the open class for a missing `]`).
    let (why, quoted) = match why {
        "unclosed character class" => {
            ("missing closing ]", pattern.rfind('[').map_or(pattern, |i| &pattern[i..]))
        }
        "unclosed group" => ("missing closing )", pattern),
        "unopened group" => ("unexpected )", pattern),
        other => (other, pattern),
    };
    format!("error parsing regexp: {why}: `{quoted}`")
}

/// Why `schema` (at `field`, e.g. `spec.versions[0].schema.openAPIV3Schema`) is refused.
pub(crate) fn errors(schema: &Value, field: &str) -> Vec<FieldError> {
    let Some(root) = schema.as_object() else {
        return vec![required(format!("{field}.type"), "must not be empty at the root")];
    };
    let mut errs = Vec::new();
    if flag(root, "nullable") {
        errs.push(forbidden(format!("{field}.nullable"), "nullable cannot be true at the root"));
    }
    let mut structural = Vec::new();
    invariants(root, Level::Root, field, &mut structural);
    completeness(root, root, field, field, &mut structural);
    structural.sort_by(|a, b| format!("{}: {}", a.0, a.1).cmp(&format!("{}: {}", b.0, b.1)));
    let structural_ok = structural.is_empty();
    if structural_ok {
        let node = Node::parse(schema);
        defaults(&node, field, true, false, &mut errs);
    } else {
        errs.extend(structural);
    }
    // Rules are costed only in a structural schema, as upstream compiles them only there.
    let cardinality = if structural_ok { Cardinality::Bounded(1) } else { Cardinality::Off };
    let mut total = CostTotal::default();
    openapi(root, field, &Ssv::default(), true, cardinality, &mut total, &mut errs);
    if total.total > CRD_COST_LIMIT {
        for (path, _) in &total.most {
            errs.push(forbidden(
                path.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(forbidden(
            field.to_owned(),
            &cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total.total,
                CRD_COST_LIMIT,
            ),
        ));
    }
    errs
}

/// The most one rule or message expression may be estimated to cost (`StaticEstimatedCostLimit`).
const RULE_COST_LIMIT: u64 = 10_000_000;
/// The most all of one schema's rules may be estimated to cost (`StaticEstimatedCRDCostLimit`).
const CRD_COST_LIMIT: u64 = 100_000_000;

/// How many times a node's rules may run in one object (`CELSchemaContext.MaxCardinality`):
/// the product of its ancestors' `maxItems` and `maxProperties`.
#[derive(Clone, Copy)]
enum Cardinality {
    /// Not costed: the schema is not structural, or the node is under `not`, `allOf`, `anyOf`
    /// or `oneOf` (where no rule may be).
    Off,
    /// At most this many.
    Bounded(u64),
    /// An ancestor list or map has no bound: as many as fit in a request.
    Unbounded,
}

impl Cardinality {
    /// The cardinality of a child (property, items, values) of `parent`, this node.
    fn child(self, parent: &Map<String, Value>) -> Self {
        match (self, super::cel::max_children(parent)) {
            (Self::Bounded(n), Some(m)) => Self::Bounded(n.saturating_mul(m)),
            (Self::Off, _) => Self::Off,
            _ => Self::Unbounded,
        }
    }
}

/// The estimated costs of one schema's rules (`TotalCost`): their sum, and the dearest four
/// of those that cost a hundredth of the limit or more, dearest first.
#[derive(Default)]
struct CostTotal {
    total: u64,
    most: Vec<(String, u64)>,
}

impl CostTotal {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < CRD_COST_LIMIT / 100 {
            return;
        }
        self.most.push((path, cost));
        self.most.sort_by_key(|m| std::cmp::Reverse(m.1));
        self.most.truncate(4);
    }
}

/// `getCostErrorMessage`: by how much a cost exceeds its limit.
fn cost_message(name: &str, cost: u64, limit: u64) -> String {
    let f = cost as f64 / limit as f64;
    let factor = if f > 100.0 {
        "more than 100x".to_owned()
    } else if f < 1.5 {
        format!("{f:.6}x")
    } else {
        format!("{f:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, \
         maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// Whether `anyOf` is exactly `[{type: integer}, {type: string}]`.
fn int_or_string_any_of(m: &Map<String, Value>) -> bool {
    let any_of = list(m, "anyOf");
    any_of.len() == 2
        && any_of[0] == serde_json::json!({"type": "integer"})
        && any_of[1] == serde_json::json!({"type": "string"})
}

/// `validateStructuralInvariants`.
fn invariants(m: &Map<String, Value>, lvl: Level, p: &str, errs: &mut Vec<FieldError>) {
    let ty = s(m, "type");
    if ty == "array" && !m.contains_key("items") {
        errs.push(required(format!("{p}.items"), "must be specified"));
    }
    if let Some(items) = obj(m, "items") {
        invariants(items, Level::Item, &format!("{p}.items"), errs);
    }
    for (k, v) in props(m) {
        invariants(v, Level::Field, &format!("{p}.properties[{k}]"), errs);
    }
    let embedded = flag(m, "x-kubernetes-embedded-resource");
    let preserve = flag(m, "x-kubernetes-preserve-unknown-fields");
    let int_or_string = flag(m, "x-kubernetes-int-or-string");
    let additional = m.get("additionalProperties").filter(|a| !a.is_null());
    if let Some(a) = additional {
        if lvl == Level::Root {
            errs.push(forbidden(format!("{p}.additionalProperties"), "must not be used at the root"));
        }
        if let Some(a) = a.as_object() {
            invariants(a, Level::Field, &format!("{p}.additionalProperties"), errs);
        }
    }
    if int_or_string && preserve {
        errs.push(invalid(
            format!("{p}.x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(invalid(
            format!("{p}.x-kubernetes-embedded-resource"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = int_or_string_any_of(m);
    let skip_first_all_of_any_of =
        list(m, "allOf").first().and_then(Value::as_object).is_some_and(int_or_string_any_of);
    value_validation(m, skip_any_of, skip_first_all_of_any_of, lvl, p, errs);
    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        if ty.is_empty() {
            errs.push(required(
                format!("{p}.type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(invalid(
                format!("{p}.type"),
                go_quote(ty),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(format!("{p}.type"), detail));
    }
    if embedded && additional.is_some() {
        errs.push(forbidden(
            format!("{p}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(invalid(format!("{p}.type"), go_quote(ty), "must be object at the root"));
    }
    let properties = obj(m, "properties");
    for meta in ["kind", "apiVersion"] {
        if let Some(prop) =
            properties.and_then(|ps| ps.get(meta)).and_then(Value::as_object).filter(|_| check_metadata)
        {
            let t = s(prop, "type");
            if t != "string" {
                errs.push(invalid(format!("{p}.properties[{meta}].type"), go_quote(t), "must be string"));
            }
        }
    }
    if let Some(meta) = properties.and_then(|ps| ps.get("metadata")).and_then(Value::as_object) {
        metadata_invariants(meta, check_metadata, lvl, &format!("{p}.properties[metadata]"), errs);
    }
    if embedded && !preserve && properties.is_none_or(Map::is_empty) {
        errs.push(required(
            format!("{p}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `validateStructuralMetadataInvariants`.
fn metadata_invariants(m: &Map<String, Value>, check: bool, lvl: Level, p: &str, errs: &mut Vec<FieldError>) {
    let ty = s(m, "type");
    if check && ty != "object" {
        errs.push(invalid(format!("{p}.type"), go_quote(ty), "must be object"));
    }
    if lvl != Level::Root {
        return;
    }
    let mut rest = m.clone();
    rest.remove("type");
    rest.remove("default");
    if let Some(Value::Object(ps)) = rest.get("properties") {
        let only_names = !ps.is_empty() && ps.keys().all(|k| k == "name" || k == "generateName");
        if only_names {
            rest.remove("properties");
        }
    }
    // Zero values are as good as absent (Go's `reflect.DeepEqual` against the empty schema).
    rest.retain(|_, v| match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) | Value::Number(_) => true,
    });
    if !rest.is_empty() {
        errs.push(forbidden(
            p.to_owned(),
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `validateValueValidation`: the logic junctors' contents, and `pattern`.
fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    p: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, v) in list(m, "anyOf").iter().enumerate() {
            if let Some(v) = v.as_object() {
                nested(v, false, lvl, &format!("{p}.anyOf[{i}]"), errs);
            }
        }
    }
    for (i, v) in list(m, "allOf").iter().enumerate() {
        if let Some(v) = v.as_object() {
            nested(v, skip_first_all_of_any_of && i == 0, lvl, &format!("{p}.allOf[{i}]"), errs);
        }
    }
    for (i, v) in list(m, "oneOf").iter().enumerate() {
        if let Some(v) = v.as_object() {
            nested(v, false, lvl, &format!("{p}.oneOf[{i}]"), errs);
        }
    }
    if let Some(not) = obj(m, "not") {
        nested(not, false, lvl, &format!("{p}.not"), errs);
    }
    if let Some(pattern) = m.get("pattern").and_then(Value::as_str).filter(|p| !p.is_empty())
        && let Err(e) = compile(pattern)
    {
        errs.push(invalid(
            format!("{p}.pattern"),
            go_quote(pattern),
            &format!("must be a valid regular expression, but isn't: {}", regex_error(pattern, &e)),
        ));
    }
}

/// `validateNestedValueValidation`: under a logic junctor, only value validations.
fn nested(m: &Map<String, Value>, skip_any_of: bool, lvl: Level, p: &str, errs: &mut Vec<FieldError>) {
    value_validation(m, skip_any_of, false, lvl, p, errs);
    if let Some(items) = obj(m, "items") {
        nested(items, false, lvl, &format!("{p}.items"), errs);
    }
    for (k, v) in props(m) {
        nested(v, false, Level::Field, &format!("{p}.properties[{k}]"), errs);
    }
    let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    if !s(m, "type").is_empty() {
        errs.push(forbidden(format!("{p}.type"), "must be empty to be structural"));
    }
    if present("additionalProperties") {
        errs.push(forbidden(format!("{p}.additionalProperties"), "must be undefined to be structural"));
    }
    if present("default") {
        errs.push(forbidden(format!("{p}.default"), "must be undefined to be structural"));
    }
    for k in ["title", "description"] {
        if !s(m, k).is_empty() {
            errs.push(forbidden(format!("{p}.{k}"), "must be empty to be structural"));
        }
    }
    if flag(m, "nullable") {
        errs.push(forbidden(format!("{p}.nullable"), "must be false to be structural"));
    }
    // `externalDocs` is not among the generics a nested schema keeps: upstream drops it there.
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(m, k) {
            errs.push(forbidden(format!("{p}.{k}"), "must be false to be structural"));
        }
    }
    if !list(m, "x-kubernetes-list-map-keys").is_empty() {
        errs.push(forbidden(format!("{p}.x-kubernetes-list-map-keys"), "must be empty to be structural"));
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if present(k) {
            errs.push(forbidden(format!("{p}.{k}"), "must be undefined to be structural"));
        }
    }
    if !list(m, "x-kubernetes-validations").is_empty() {
        errs.push(forbidden(format!("{p}.x-kubernetes-validations"), "must be empty to be structural"));
    }
    if obj(m, "properties").is_some_and(|ps| ps.contains_key("metadata")) {
        errs.push(forbidden(
            format!("{p}.properties[metadata]"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: every field the root's junctors name is specified outside.
fn completeness(
    v: &Map<String, Value>,
    s_node: &Map<String, Value>,
    sp: &str,
    vp: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = obj(v, "not") {
        nested_completeness(not, Some(s_node), sp, &format!("{vp}.not"), errs);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, x) in list(v, junctor).iter().enumerate() {
            if let Some(x) = x.as_object() {
                nested_completeness(x, Some(s_node), sp, &format!("{vp}.{junctor}[{i}]"), errs);
            }
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s_node: Option<&Map<String, Value>>,
    sp: &str,
    vp: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s_node) = s_node else {
        errs.push(required(sp.to_owned(), &format!("because it is defined in {vp}")));
        return;
    };
    completeness(v, s_node, sp, vp, errs);
    if let Some(items) = obj(v, "items") {
        nested_completeness(
            items,
            obj(s_node, "items"),
            &format!("{sp}.items"),
            &format!("{vp}.items"),
            errs,
        );
    }
    let s_props = obj(s_node, "properties");
    for (k, v_field) in props(v) {
        let sp_k = format!("{sp}.properties[{k}]");
        let vp_k = format!("{vp}.properties[{k}]");
        match s_props.and_then(|ps| ps.get(k)).and_then(Value::as_object) {
            None => errs.push(required(sp_k, &format!("because it is defined in {vp_k}"))),
            Some(s_field) => nested_completeness(v_field, Some(s_field), &sp_k, &vp_k, errs),
        }
    }
}

/// `ValidateDefaults`: each default pruned, its embedded resources valid, and valid against its
/// own schema. `inside_meta` marks the root's or an embedded resource's `metadata`, `apiVersion`
/// and `kind`, whose defaults are checked against the schema alone.
fn defaults(n: &Node, p: &str, embedded_root: bool, inside_meta: bool, errs: &mut Vec<FieldError>) {
    let embedded = embedded_root || n.embedded;
    let inside_meta = inside_meta && !n.embedded;
    if let Some(d) = &n.default {
        let at = format!("{p}.default");
        if !inside_meta {
            let mut pruned = d.clone();
            prune::prune_unknown(n, &mut pruned, embedded);
            if pruned != *d {
                errs.push(invalid(at.clone(), bad_value(d), "must not have unknown fields"));
            }
        }
        let mut meta_errs = Vec::new();
        if !inside_meta {
            validate::embedded::validate(Some(&at), d, n, &mut meta_errs);
        }
        if meta_errs.is_empty() {
            errs.extend(validate::openapi_errors(n, d, Some(&at)));
        } else {
            errs.extend(meta_errs);
        }
    }
    if let Some(items) = &n.items {
        defaults(items, &format!("{p}.items"), false, inside_meta, errs);
    }
    for (k, prop) in &n.properties {
        let meta = embedded && matches!(k.as_str(), "metadata" | "apiVersion" | "kind");
        defaults(prop, &format!("{p}.properties[{k}]"), false, inside_meta || meta, errs);
    }
}

/// What upstream's `specStandardValidatorV3` carries down the schema.
#[derive(Clone, Default)]
struct Ssv {
    /// Why defaults are forbidden here, when they are.
    no_defaults: Option<String>,
    inside_resource_meta: bool,
}

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// `ValidateCustomResourceDefinitionOpenAPISchema`.
#[allow(clippy::too_many_arguments)]
fn openapi(
    m: &Map<String, Value>,
    p: &str,
    ssv: &Ssv,
    is_root: bool,
    cel: Cardinality,
    total: &mut CostTotal,
    errs: &mut Vec<FieldError>,
) {
    let ty = s(m, "type");
    let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    // specStandardValidatorV3.validate
    if !ty.is_empty() && !TYPES.contains(&ty) {
        errs.push(not_supported(format!("{p}.type"), ty, &TYPES));
    }
    if present("default")
        && let Some(why) = &ssv.no_defaults
    {
        errs.push(forbidden(format!("{p}.default"), &format!("must not be set {why}")));
    }
    if !s(m, "id").is_empty() {
        errs.push(forbidden(format!("{p}.id"), "id is not supported"));
    }
    if present("additionalItems") {
        errs.push(forbidden(format!("{p}.additionalItems"), "additionalItems is not supported"));
    }
    for k in ["patternProperties", "definitions"] {
        if obj(m, k).is_some_and(|o| !o.is_empty()) {
            errs.push(forbidden(format!("{p}.{k}"), &format!("{k} is not supported")));
        }
    }
    if present("dependencies") {
        errs.push(forbidden(format!("{p}.dependencies"), "dependencies is not supported"));
    }
    if present("$ref") {
        errs.push(forbidden(format!("{p}.$ref"), "$ref is not supported"));
    }
    if ty == "null" {
        errs.push(forbidden(
            format!("{p}.type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if m.get("items").is_some_and(|i| i.as_array().is_some_and(|a| !a.is_empty())) {
        errs.push(forbidden(format!("{p}.items"), "items must be a schema object and not an array"));
    }
    if ssv.inside_resource_meta && flag(m, "x-kubernetes-embedded-resource") {
        errs.push(forbidden(
            format!("{p}.x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }

    if flag(m, "uniqueItems") {
        errs.push(forbidden(
            format!("{p}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let properties = props(m);
    if let Some(a) = m.get("additionalProperties").filter(|a| !a.is_null()) {
        if !properties.is_empty() && (a == &Value::Bool(false) || a.is_object()) {
            errs.push(forbidden(
                format!("{p}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(a) = a.as_object() {
            let mut sub = ssv.clone();
            if ssv.inside_resource_meta {
                sub.no_defaults = Some("inside additionalProperties applying to object metadata".to_owned());
            }
            openapi(a, &format!("{p}.additionalProperties"), &sub, false, cel.child(m), total, errs);
        }
    }
    let embedded = flag(m, "x-kubernetes-embedded-resource");
    for (k, v) in &properties {
        let mut sub = ssv.clone();
        if (is_root || embedded) && matches!(k.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_resource_meta = true;
            if is_root {
                sub.no_defaults = Some(format!("in top-level {k}"));
            }
        }
        openapi(v, &format!("{p}.properties[{k}]"), &sub, false, cel.child(m), total, errs);
    }
    if let Some(not) = obj(m, "not") {
        openapi(not, &format!("{p}.not"), ssv, false, Cardinality::Off, total, errs);
    }
    for junctor in ["allOf", "oneOf", "anyOf"] {
        for (i, x) in list(m, junctor).iter().enumerate() {
            if let Some(x) = x.as_object() {
                openapi(x, &format!("{p}.{junctor}[{i}]"), ssv, false, Cardinality::Off, total, errs);
            }
        }
    }
    let items = m.get("items");
    if let Some(i) = items.and_then(Value::as_object) {
        openapi(i, &format!("{p}.items"), ssv, false, cel.child(m), total, errs);
    }
    if let Some(a) = items.and_then(Value::as_array) {
        for (i, x) in a.iter().enumerate() {
            if let Some(x) = x.as_object() {
                openapi(x, &format!("{p}.items[{i}]"), ssv, false, cel.child(m), total, errs);
            }
        }
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(invalid(
            format!("{p}.x-kubernetes-preserve-unknown-fields"),
            "false",
            "must be true or undefined",
        ));
    }
    list_and_map_types(m, ty, p, errs);
    rule_errors(m, p, is_root || flag(m, "x-kubernetes-embedded-resource"), cel, total, errs);
}

/// The reasons an `x-kubernetes-validations` rule may give (`supportedValidationReason`, sorted).
const RULE_REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// A line break as CEL's grammar knows one.
fn has_newlines(text: &str) -> bool {
    text.contains(['\n', '\r'])
}

/// The checks of `x-kubernetes-validations`: a rule is given, a message or
/// message expression that is set is not blank, a multi-line rule has a message, the reason is
/// one of four, a `fieldPath` names a field of this schema, and the rule and message expression
/// compile (parse, and select only declared fields: see `cel::check`); `root` says the node is
/// a resource's root or an embedded resource.
fn rule_errors(
    m: &Map<String, Value>,
    p: &str,
    root: bool,
    cel: Cardinality,
    total: &mut CostTotal,
    errs: &mut Vec<FieldError>,
) {
    for (i, rule) in list(m, "x-kubernetes-validations").iter().enumerate() {
        let Some(r) = rule.as_object() else { continue };
        let at = format!("{p}.x-kubernetes-validations[{i}]");
        let (text, message) = (s(r, "rule"), s(r, "message"));
        let (text_t, message_t) = (text.trim(), message.trim());
        if text_t.is_empty() {
            errs.push(required(format!("{at}.rule"), "rule is not specified"));
        } else if !message.is_empty() && message_t.is_empty() {
            errs.push(invalid(
                format!("{at}.message"),
                go_quote(message),
                "message must be non-empty if specified",
            ));
        } else if has_newlines(message_t) {
            errs.push(invalid(
                format!("{at}.message"),
                go_quote(message),
                "message must not contain line breaks",
            ));
        } else if has_newlines(text_t) && message_t.is_empty() {
            errs.push(required(
                format!("{at}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let expression = s(r, "messageExpression");
        if !expression.is_empty() && expression.trim().is_empty() {
            errs.push(required(
                format!("{at}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = r.get("reason").and_then(Value::as_str)
            && !RULE_REASONS.contains(&reason)
        {
            errs.push(not_supported(format!("{at}.reason"), reason, &RULE_REASONS));
        }
        let path = s(r, "fieldPath");
        if !path.is_empty() && path.trim().is_empty() {
            errs.push(invalid(
                format!("{at}.fieldPath"),
                go_quote(path),
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newlines(path) {
            errs.push(invalid(
                format!("{at}.fieldPath"),
                go_quote(path),
                "fieldPath must not contain line breaks",
            ));
        }
        if !path.is_empty() && super::field_path::resolve(m, path, true).is_err() {
            errs.push(invalid(format!("{at}.fieldPath"), go_quote(path), "fieldPath must be a valid path"));
        }
        let old_self = r.get("optionalOldSelf").and_then(Value::as_bool) != Some(true);
        let times = match cel {
            Cardinality::Off => None,
            Cardinality::Bounded(n) => Some(n),
            Cardinality::Unbounded => Some(super::cel::max_cardinality(m)),
        };
        // The rule, then its message expression: evaluated once, where the rule fails, so its
        // cost is not multiplied.
        for (field, text, multiplied, failed) in [
            ("rule", text, true, "compilation failed"),
            ("messageExpression", expression, false, "messageExpression compilation failed"),
        ] {
            if text.trim().is_empty() {
                continue;
            }
            let path = format!("{at}.{field}");
            match super::cel::estimated_cost(text, m, root, old_self) {
                Ok(cost) => {
                    if let Some(times) = times {
                        let cost = if multiplied { cost.saturating_mul(times) } else { cost };
                        if cost > RULE_COST_LIMIT {
                            let why = cost_message(&format!("estimated {field} cost"), cost, RULE_COST_LIMIT);
                            errs.push(forbidden(path.clone(), &why));
                        }
                        total.observe(path, cost);
                    }
                }
                Err(e) => errs.push(invalid(path, rule_go(r), &format!("{failed}: {e}"))),
            }
        }
    }
}

/// A rule as Go's `%#v` prints the internal `apiextensions.ValidationRule` (a set pointer is
/// an address in Go; a fixed one here).
fn rule_go(r: &Map<String, Value>) -> String {
    let pointer = |k: &str, ty: &str| match r.get(k) {
        Some(v) if !v.is_null() => format!("(*{ty})(0xc000000000)"),
        _ => format!("(*{ty})(nil)"),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        go_quote(s(r, "rule")),
        go_quote(s(r, "message")),
        go_quote(s(r, "messageExpression")),
        pointer("reason", "apiextensions.FieldValueErrorReason"),
        go_quote(s(r, "fieldPath")),
        pointer("optionalOldSelf", "bool"),
    )
}

/// The `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` checks.
fn list_and_map_types(m: &Map<String, Value>, ty: &str, p: &str, errs: &mut Vec<FieldError>) {
    let map_type = m.get("x-kubernetes-map-type").and_then(Value::as_str);
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys = list(m, "x-kubernetes-list-map-keys");
    let items = obj(m, "items");
    let type_error = |errs: &mut Vec<FieldError>, want: &str, why: &str| {
        if ty.is_empty() {
            errs.push(required(format!("{p}.type"), &format!("must be {want} if {why} is specified")));
        } else {
            errs.push(invalid(
                format!("{p}.type"),
                go_quote(ty),
                &format!("must be {want} if {why} is specified"),
            ));
        }
    };
    if map_type.is_some() && ty != "object" {
        type_error(errs, "object", "x-kubernetes-map-type");
    }
    if let Some(mt) = map_type.filter(|mt| *mt != "atomic" && *mt != "granular") {
        errs.push(not_supported(format!("{p}.x-kubernetes-map-type"), mt, &["atomic", "granular"]));
    }
    if list_type.is_some() && ty != "array" {
        type_error(errs, "array", "x-kubernetes-list-type");
    } else if let (Some("set"), Some(is)) = (list_type, items) {
        match s(is, "type") {
            "array" => {
                if let Some(lt) =
                    is.get("x-kubernetes-list-type").and_then(Value::as_str).filter(|lt| *lt != "atomic")
                {
                    errs.push(invalid(
                        format!("{p}.items.x-kubernetes-list-type"),
                        go_quote(lt),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
            }
            "object" if s(is, "x-kubernetes-map-type") != "atomic" => {
                // Upstream reports the items' list type here, which an object does not have.
                let shown = is
                    .get("x-kubernetes-list-type")
                    .and_then(Value::as_str)
                    .map_or_else(|| "\"null\"".to_owned(), go_quote);
                errs.push(invalid(
                    format!("{p}.items.x-kubernetes-map-type"),
                    &shown,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type.filter(|lt| !matches!(*lt, "atomic" | "set" | "map")) {
        errs.push(not_supported(format!("{p}.x-kubernetes-list-type"), lt, &["atomic", "set", "map"]));
    }
    if !keys.is_empty() {
        match list_type {
            None => errs.push(required(
                format!("{p}.x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(lt) => errs.push(invalid(
                format!("{p}.x-kubernetes-list-type"),
                go_quote(lt),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(required(
                format!("{p}.x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match m.get("items") {
            None | Some(Value::Null) => {
                errs.push(required(
                    format!("{p}.items"),
                    "must have a schema if x-kubernetes-list-type is map",
                ));
            }
            Some(v @ Value::Array(_)) => {
                errs.push(invalid(
                    format!("{p}.items"),
                    bad_value(v),
                    "must only have a single schema if x-kubernetes-list-type is map",
                ));
            }
            _ => {}
        }
        if let Some(is) = items {
            let it = s(is, "type");
            if it != "object" {
                errs.push(invalid(
                    format!("{p}.items.type"),
                    go_quote(it),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let mut seen = Vec::new();
                for k in keys.iter().filter_map(Value::as_str) {
                    match obj(is, "properties").and_then(|ps| ps.get(k)).and_then(Value::as_object) {
                        Some(prop) if matches!(s(prop, "type"), "array" | "object") => errs.push(invalid(
                            format!("{p}.items.properties[{k}].type"),
                            go_quote(it),
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        )),
                        Some(_) => {}
                        None => errs.push(invalid(
                            format!("{p}.x-kubernetes-list-map-keys"),
                            go_strings(keys),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(&k) {
                        errs.push(invalid(
                            format!("{p}.x-kubernetes-list-map-keys"),
                            go_strings(keys),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(k);
                }
            }
        }
    }
    // validateMapListKeysMapSet
    if let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, items) {
        if flag(is, "nullable") {
            errs.push(forbidden(
                format!("{p}.items.nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required_keys = list(is, "required");
            for k in keys.iter().filter_map(Value::as_str) {
                let Some(prop) = obj(is, "properties").and_then(|ps| ps.get(k)).and_then(Value::as_object)
                else {
                    continue;
                };
                let is_required = required_keys.iter().any(|r| r.as_str() == Some(k));
                if !is_required && prop.get("default").is_none() {
                    errs.push(required(
                        format!("{p}.items.properties[{k}].default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if flag(prop, "nullable") {
                    errs.push(forbidden(
                        format!("{p}.items.properties[{k}].nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}
