//! Validation of an object against its schema, as a v1.32 API server validates a custom resource
//! (`registry/customresource/strategy.go`, `Validate`): kube-openapi's schema validator
//! (`kube-openapi/pkg/validation/validate`: `schema.go`, `type.go`, `validator.go`,
//! `object_validator.go`, `slice_validator.go`, `schema_props.go`, `values.go`), its results
//! turned into field errors as apiextensions-apiserver does (`pkg/apiserver/validation/validation.go`,
//! `kubeOpenAPIResultToFieldErrors`), then the embedded resources' `apiVersion`, `kind` and
//! `metadata` (`pkg/apiserver/schema/objectmeta/validation.go`), then `x-kubernetes-list-type`
//! `set` and `map` uniqueness (`pkg/apiserver/schema/listtype/validation.go`).
//!
//! kube-openapi names a field `spec.items[0].name` and a map value `spec.labels.key` (dots, no
//! brackets); a missing required field at the root is `spec`. Errors that are not about one value
//! (`anyOf`, `oneOf`, `allOf`, `not`) carry upstream's nil path, printed `<nil>`. Where upstream
//! walks a Go map (random order) this walks keys in sorted order.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::node::{Additional, Node};
use crate::go_print::{Num, bad_value, go_json, go_quote};
use crate::status::FieldError;

/// kube-openapi's error codes the conversion to field errors tells apart.
#[derive(Debug, Clone)]
enum Code {
    Required,
    Enum(Vec<String>),
    TooLong(i64),
    TooMany { actual: i64, max: i64 },
    InvalidType,
    Other,
}

/// One kube-openapi error: a `*errors.Validation` (`name` set) or a plain composite message.
#[derive(Debug, Clone)]
struct OpenApiError {
    code: Code,
    /// The path kube-openapi names (`.spec` for a missing root field, `""` for the root); `None`
    /// for the `anyOf`/`oneOf`/`allOf`/`not` messages, which are not `*errors.Validation`.
    name: Option<String>,
    /// The bad value, already printed as `ErrorBody` prints it.
    bad: String,
    /// kube-openapi's own message (`spec.size in body should be less than or equal to 10`).
    message: String,
}

/// kube-openapi's `in`: always `body` for a schema.
const IN: &str = "body";

fn invalid_type(path: &str, type_name: &str, found: &str) -> OpenApiError {
    OpenApiError {
        code: Code::InvalidType,
        name: Some(path.to_owned()),
        bad: go_quote(found),
        message: format!("{path} in {IN} must be of type {type_name}: {}", go_quote(found)),
    }
}

fn other(path: &str, bad: String, message: String) -> OpenApiError {
    OpenApiError { code: Code::Other, name: Some(path.to_owned()), bad, message }
}

fn composite(message: String) -> OpenApiError {
    OpenApiError { code: Code::Other, name: None, bad: go_quote(""), message }
}

/// The JSON type kube-openapi infers for a value (`schemaInfoForType`) and its format.
fn json_type(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Number(_) => match Num::of(v) {
            Some(Num::Int(_)) => ("integer", "int64"),
            _ => ("number", "float64"),
        },
    }
}

/// go-openapi's `swag.IsFloat64AJSONInteger`.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f.fract() == 0.0 {
        return true;
    }
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    if g == 0.0 {
        return false;
    }
    (f - g).abs() / (f + g) < 1e-9
}

/// Go's `int64(f)` (truncation; saturating where Go's is undefined).
#[allow(clippy::cast_possible_truncation)]
fn trunc(f: f64) -> i64 {
    f as i64
}

/// Whether `data` matches one enum value as kube-openapi's `basicCommonValidator` does: `data`
/// converted to the enum value's Go type (integers and floats convert into each other, an
/// integer into a string as a rune), then compared deeply. A `null` never matches.
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (Num::of(data), Num::of(e)) {
        (Some(Num::Int(a)), Some(Num::Int(b))) => return a == b,
        (Some(Num::Float(a)), Some(Num::Int(b))) => return trunc(a) == b,
        (Some(a), Some(Num::Float(b))) => return a.as_f64() == b,
        _ => {}
    }
    match (data, e) {
        (_, Value::Null) | (Value::Null, _) => false,
        (Value::Number(_), Value::String(s)) => match Num::of(data) {
            Some(Num::Int(i)) => {
                let c = u32::try_from(i).ok().and_then(char::from_u32).unwrap_or('\u{fffd}');
                s.chars().eq(std::iter::once(c))
            }
            _ => false,
        },
        _ => data == e,
    }
}

/// A child's path as kube-openapi builds it for a property: the name alone at the root.
fn push_property(path: &mut String, name: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(name);
}

/// One validation run: the errors found, in kube-openapi's order.
struct Run {
    errs: Vec<OpenApiError>,
}

impl Run {
    /// `SchemaValidator.Validate`; returns kube-openapi's match count (how much of the schema
    /// applied), which picks the `anyOf`/`oneOf` branch whose errors are reported.
    fn node(&mut self, n: &Node, data: &Value, path: &mut String) -> usize {
        if data.is_null() {
            let mut count = 0;
            if !n.types.is_empty() && !n.nullable {
                self.errs.push(invalid_type(path, &n.types.join(","), "null"));
            } else {
                count += 1;
            }
            self.enumeration(n, data, path);
            return count;
        }
        let mut count = 0;
        if !n.types.is_empty() || !n.format.is_empty() {
            count += usize::from(self.type_check(n, data, path)) + 1;
        }
        count += self.schema_props(n, data, path) + 1;
        if let Value::String(s) = data {
            self.string(n, s, path);
            count += 1;
            if let Some(f) = n.string_format {
                if !f.check(s) {
                    self.errs.push(invalid_type(path, &n.format, s));
                }
                count += 1;
            }
        }
        if let Some(num) = Num::of(data) {
            self.number(n, num, path);
            count += 2;
        }
        if let Value::Array(items) = data {
            count += self.slice(n, items, path) + 1;
        }
        self.enumeration(n, data, path);
        count += 1;
        if let Value::Object(map) = data {
            count += self.object(n, map, path) + 1;
        }
        count + 1
    }

    /// `typeValidator.Validate` for a value that is not null; whether it passed.
    fn type_check(&mut self, n: &Node, data: &Value, path: &str) -> bool {
        let (found, found_format) = json_type(data);
        let has = |t: &str| n.types.iter().any(|x| x == t);
        let text_or_list = data.is_string() || data.is_array();
        let float_int =
            found == "number" && Num::of(data).is_some_and(|x| is_json_integer(x.as_f64())) && has("integer");
        let int_float = found == "integer" && has("number");
        if !(text_or_list
            || n.format.is_empty()
            || has(found)
            || found_format == n.format
            || float_int
            || int_float)
        {
            self.errs.push(invalid_type(path, &n.format, found_format));
            return false;
        }
        if text_or_list && !(has("number") || has("integer") || n.format.is_empty()) {
            return true;
        }
        if !(has(found) || float_int || int_float) {
            self.errs.push(invalid_type(path, &n.types.join(","), found));
            return false;
        }
        true
    }

    /// `schemaPropsValidator.Validate`: `anyOf`, `oneOf`, `allOf`, `not`.
    fn schema_props(&mut self, n: &Node, data: &Value, path: &mut String) -> usize {
        if n.any_of.is_empty() && n.one_of.is_empty() && n.all_of.is_empty() && n.not.is_none() {
            return 1;
        }
        let quoted = go_quote(path);
        let mut count = 0;
        if !n.any_of.is_empty() {
            let mut best: Option<(usize, Vec<OpenApiError>)> = None;
            let mut succeeded = false;
            for branch in &n.any_of {
                let (c, errs) = self.sub(branch, data, path);
                if errs.is_empty() {
                    succeeded = true;
                    best = None;
                    count += c;
                    break;
                }
                if best.as_ref().is_none_or(|(bc, _)| c > *bc) {
                    best = Some((c, errs));
                }
            }
            if !succeeded {
                self.errs.push(composite(format!("{quoted} must validate at least one schema (anyOf)")));
            }
            if let Some((c, errs)) = best {
                count += c;
                self.errs.extend(errs);
            }
        }
        if !n.one_of.is_empty() {
            let mut best: Option<(usize, Vec<OpenApiError>)> = None;
            let mut first_success = None;
            let mut validated = 0;
            for branch in &n.one_of {
                let (c, errs) = self.sub(branch, data, path);
                if errs.is_empty() {
                    validated += 1;
                    best = None;
                    first_success.get_or_insert(c);
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|(bc, _)| c > *bc) {
                    best = Some((c, errs));
                }
            }
            if validated == 1 {
                count += first_success.unwrap_or(0);
            } else {
                let more = if validated == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                self.errs.push(composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {more}"
                )));
                if let Some((c, errs)) = best {
                    count += c;
                    self.errs.extend(errs);
                }
            }
        }
        if !n.all_of.is_empty() {
            let mut validated = 0;
            for branch in &n.all_of {
                let (c, errs) = self.sub(branch, data, path);
                validated += usize::from(errs.is_empty());
                count += c;
                self.errs.extend(errs);
            }
            if validated != n.all_of.len() {
                let more = if validated == 0 { ". None validated" } else { "" };
                self.errs.push(composite(format!("{quoted} must validate all the schemas (allOf){more}")));
            }
        }
        if let Some(not) = &n.not {
            let (_, errs) = self.sub(not, data, path);
            if errs.is_empty() {
                self.errs.push(composite(format!("{quoted} must not validate the schema (not)")));
            }
        }
        count + 1
    }

    /// Validates against a sub-schema on its own, for `anyOf` and the like to weigh.
    fn sub(&mut self, n: &Node, data: &Value, path: &mut String) -> (usize, Vec<OpenApiError>) {
        let saved = std::mem::take(&mut self.errs);
        let count = self.node(n, data, path);
        (count, std::mem::replace(&mut self.errs, saved))
    }

    /// `stringValidator.Validate`: the first of `maxLength`, `minLength`, `pattern` to fail.
    fn string(&mut self, n: &Node, s: &str, path: &str) {
        if n.max_length.is_none() && n.min_length.is_none() && n.pattern.is_none() {
            return;
        }
        let chars = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = n.max_length.filter(|&max| chars > max) {
            self.errs.push(OpenApiError {
                code: Code::TooLong(max),
                name: Some(path.to_owned()),
                bad: go_quote(s),
                message: format!("{path} in {IN} should be at most {max} chars long"),
            });
            return;
        }
        if let Some(min) = n.min_length.filter(|&min| chars < min) {
            let message = format!("{path} in {IN} should be at least {min} chars long");
            self.errs.push(other(path, go_quote(s), message));
            return;
        }
        if let Some((pattern, re)) = &n.pattern {
            let message = match re {
                Some(re) if re.is_match(s) => return,
                Some(_) => format!("{path} in {IN} should match '{pattern}'"),
                None => {
                    let why = super::node::compile(pattern).err().map(|e| e.to_string()).unwrap_or_default();
                    format!("{path} in {IN} should match '{pattern}, but pattern is invalid: {why}'")
                }
            };
            self.errs.push(other(path, go_quote(s), message));
        }
    }

    /// `numberValidator.Validate`: `multipleOf`, `minimum`, `maximum`, each on the value's own
    /// Go type (an integer value compares with the limit truncated to an integer).
    fn number(&mut self, n: &Node, num: Num, path: &str) {
        let bad = num.go();
        if let Some(factor) = n.multiple_of {
            match num {
                Num::Int(v) if trunc(factor) != 0 => {
                    let f = trunc(factor);
                    if f < 0 {
                        let message = format!("factor MultipleOf declared for {path} must be positive: {f}");
                        self.errs.push(other(path, f.to_string(), message));
                    } else if v % f != 0 {
                        self.errs.push(other(
                            path,
                            bad.clone(),
                            format!("{path} in {IN} should be a multiple of {f}"),
                        ));
                    }
                }
                _ => {
                    let v = num.as_f64();
                    let shown = Num::Float(factor).go();
                    if factor < 0.0 {
                        let message =
                            format!("factor MultipleOf declared for {path} must be positive: {shown}");
                        self.errs.push(other(path, shown, message));
                    } else {
                        let mult = if factor < 1.0 { 1.0 / factor * v } else { v / factor };
                        if !is_json_integer(mult) {
                            let message = format!("{path} in {IN} should be a multiple of {shown}");
                            self.errs.push(other(path, bad.clone(), message));
                        }
                    }
                }
            }
        }
        if let Some(min) = n.minimum {
            let (fails, shown) = match num {
                Num::Int(v) => {
                    let m = trunc(min);
                    (if n.exclusive_minimum { v <= m } else { v < m }, m.to_string())
                }
                Num::Float(v) => (if n.exclusive_minimum { v <= min } else { v < min }, Num::Float(min).go()),
            };
            if fails {
                let op = if n.exclusive_minimum { "greater than" } else { "greater than or equal to" };
                self.errs.push(other(path, bad.clone(), format!("{path} in {IN} should be {op} {shown}")));
            }
        }
        if let Some(max) = n.maximum {
            let (fails, shown) = match num {
                Num::Int(v) => {
                    let m = trunc(max);
                    (if n.exclusive_maximum { v >= m } else { v > m }, m.to_string())
                }
                Num::Float(v) => (if n.exclusive_maximum { v >= max } else { v > max }, Num::Float(max).go()),
            };
            if fails {
                let op = if n.exclusive_maximum { "less than" } else { "less than or equal to" };
                self.errs.push(other(path, bad, format!("{path} in {IN} should be {op} {shown}")));
            }
        }
    }

    /// `schemaSliceValidator.Validate`: the items, then `minItems`, `maxItems`, `uniqueItems`.
    fn slice(&mut self, n: &Node, items: &[Value], path: &mut String) -> usize {
        let mut count = 0;
        if let Some(item_schema) = &n.items {
            let len = path.len();
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                count += self.node(item_schema, item, path);
                path.truncate(len);
            }
        }
        count += 1;
        let size = i64::try_from(items.len()).unwrap_or(i64::MAX);
        if let Some(min) = n.min_items.filter(|&min| size < min) {
            self.errs.push(other(
                path,
                size.to_string(),
                format!("{path} in {IN} should have at least {min} items"),
            ));
        }
        if let Some(max) = n.max_items.filter(|&max| size > max) {
            self.errs.push(OpenApiError {
                code: Code::TooMany { actual: size, max },
                name: Some(path.clone()),
                bad: size.to_string(),
                message: format!("{path} in {IN} should have at most {max} items"),
            });
        }
        if n.unique_items && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
            self.errs.push(other(path, go_quote(""), format!("{path} in {IN} shouldn't contain duplicates")));
        }
        count
    }

    /// `basicCommonValidator.Validate`: `enum`.
    fn enumeration(&mut self, n: &Node, data: &Value, path: &str) {
        let Some(values) = n.enumeration.as_ref().filter(|v| !v.is_empty()) else { return };
        if values.iter().any(|e| enum_matches(data, e)) {
            return;
        }
        let shown: Vec<String> =
            values.iter().map(|v| v.as_str().map_or_else(|| go_json(v), str::to_owned)).collect();
        let listed: Vec<String> = values.iter().map(crate::go_print::go_sharp_v).collect();
        self.errs.push(OpenApiError {
            code: Code::Enum(shown),
            name: Some(path.to_owned()),
            bad: bad_value(data),
            message: format!("{path} in {IN} should be one of [{}]", listed.join(" ")),
        });
    }

    /// `objectValidator.Validate`: `minProperties`/`maxProperties` (alone when they fail),
    /// `additionalProperties`, the properties, `required`.
    fn object(&mut self, n: &Node, map: &Map<String, Value>, path: &mut String) -> usize {
        let size = i64::try_from(map.len()).unwrap_or(i64::MAX);
        if let Some(min) = n.min_properties.filter(|&min| size < min) {
            let message = format!("{path} in {IN} should have at least {min} properties");
            self.errs.push(other(path, size.to_string(), message));
            return 0;
        }
        if let Some(max) = n.max_properties.filter(|&max| size > max) {
            self.errs.push(OpenApiError {
                code: Code::TooMany { actual: size, max },
                name: Some(path.clone()),
                bad: size.to_string(),
                message: format!("{path} in {IN} should have at most {max} properties"),
            });
            return 0;
        }
        let mut count = 0;
        let len = path.len();
        match &n.additional {
            Some(Additional::Allows(false)) => {
                for key in map.keys().filter(|k| !n.properties.contains_key(*k)) {
                    let message = format!("{path}.{key} in {IN} is a forbidden property");
                    self.errs.push(other(path, go_quote(key), message));
                }
            }
            Some(Additional::Schema(values)) => {
                for (key, value) in map.iter().filter(|(k, _)| !n.properties.contains_key(*k)) {
                    path.push('.');
                    path.push_str(key);
                    count += self.node(values, value, path);
                    path.truncate(len);
                }
            }
            _ => {}
        }
        for (name, prop) in &n.properties {
            if let Some(value) = map.get(name) {
                push_property(path, name);
                count += self.node(prop, value, path);
                path.truncate(len);
            }
        }
        for name in n.required.iter().filter(|k| !map.contains_key(*k)) {
            let missing = format!("{path}.{name}");
            self.errs.push(OpenApiError {
                code: Code::Required,
                name: Some(missing.clone()),
                bad: go_quote(""),
                message: format!("{missing} in {IN} is required"),
            });
        }
        count
    }
}

/// `field.Path.Child` on a possibly nil path.
fn child(root: Option<&str>, name: &str) -> String {
    match root {
        Some(r) => format!("{r}.{name}"),
        None => name.to_owned(),
    }
}

/// The field errors of a kube-openapi result, as `kubeOpenAPIResultToFieldErrors` words them,
/// under `root` (upstream's `fldPath`; `None` for a custom resource, printed `<nil>` when an
/// error names no field).
fn to_field_errors(errs: Vec<OpenApiError>, root: Option<&str>) -> Vec<FieldError> {
    let root_field = || root.unwrap_or("<nil>").to_owned();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in errs {
        if !seen.insert(e.message.clone()) {
            continue; // `Result.AddErrors` keeps one of each message.
        }
        let field = match e.name.as_deref() {
            Some(name) if !name.is_empty() && name != "." => {
                child(root, name.strip_prefix('.').unwrap_or(name))
            }
            _ => root_field(),
        };
        let message = match e.code {
            _ if e.name.is_none() => format!("Invalid value: {}: {}", e.bad, e.message),
            Code::Required => "Required value".to_owned(),
            Code::Enum(values) if values.is_empty() => format!("Unsupported value: {}", e.bad),
            Code::Enum(values) => {
                let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
                format!("Unsupported value: {}: supported values: {}", e.bad, quoted.join(", "))
            }
            Code::TooLong(max) if max < 0 => "Too long: value is too long".to_owned(),
            Code::TooLong(max) => {
                format!("Too long: may not be more than {max} {}", if max == 1 { "byte" } else { "bytes" })
            }
            Code::TooMany { actual, max } => {
                format!(
                    "Too many: {actual}: must have at most {max} {}",
                    if max == 1 { "item" } else { "items" }
                )
            }
            Code::InvalidType | Code::Other => format!("Invalid value: {}: {}", e.bad, e.message),
        };
        out.push((field, message));
    }
    out
}

/// kube-openapi's validation of `value` against `n` alone (no embedded-resource or list-type
/// checks), as field errors under `root`.
pub(crate) fn openapi_errors(n: &Node, value: &Value, root: Option<&str>) -> Vec<FieldError> {
    let mut run = Run { errs: Vec::new() };
    let mut path = String::new();
    run.node(n, value, &mut path);
    to_field_errors(run.errs, root)
}

/// Everything upstream's strategy checks against the schema: kube-openapi's validation, the
/// embedded resources, the list types.
pub(crate) fn validate(root: &Node, obj: &Value) -> Vec<FieldError> {
    let mut errs = openapi_errors(root, obj, None);
    if root.has_embedded {
        embedded::validate(None, obj, root, &mut errs);
    }
    if root.has_list_types {
        list_types(root, obj, &mut errs);
    }
    errs
}

/// `field.Path` rendering: `Child` joins with a dot, `Key` and `Index` bracket.
fn path_child(p: Option<&str>, name: &str) -> String {
    child(p, name)
}

fn path_key(p: Option<&str>, key: &str) -> String {
    format!("{}[{key}]", p.unwrap_or(""))
}

/// `listtype.ValidateListSetsAndMaps` from the root.
fn list_types(root: &Node, obj: &Value, errs: &mut Vec<FieldError>) {
    if let Value::Object(map) = obj {
        list_types_object(None, root, map, errs);
    }
}

fn list_types_object(p: Option<&str>, n: &Node, map: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    if let Some(values) = n.additional_schema().filter(|s| s.has_list_types) {
        for (k, v) in map {
            list_types_value(&path_key(p, k), values, v, errs);
        }
    }
    for (k, v) in map {
        if let Some(prop) = n.properties.get(k).filter(|s| s.has_list_types) {
            list_types_value(&path_child(p, k), prop, v, errs);
        }
    }
}

fn list_types_value(p: &str, n: &Node, v: &Value, errs: &mut Vec<FieldError>) {
    if !n.has_list_types {
        return;
    }
    match v {
        Value::Object(map) => list_types_object(Some(p), n, map, errs),
        Value::Array(items) => {
            match n.list_type.as_deref() {
                Some("set") => {
                    for i in first_repeats(items.iter().map(identity)) {
                        errs.push((
                            format!("{p}[{i}]"),
                            format!("Duplicate value: {}", bad_value(&items[i])),
                        ));
                    }
                }
                Some("map") => list_map(p, n, items, errs),
                _ => {}
            }
            if let Some(item) = n.items.as_deref().filter(|s| s.has_list_types) {
                for (i, x) in items.iter().enumerate() {
                    list_types_value(&format!("{p}[{i}]"), item, x, errs);
                }
            }
        }
        _ => {}
    }
}

/// How `validateListSet` tells values apart: scalars by Go value (an integer is not the float
/// of the same value), compound values by their JSON.
fn identity(v: &Value) -> String {
    match v {
        Value::Null => "n".to_owned(),
        Value::Bool(b) => format!("b{b}"),
        Value::String(s) => format!("s{s}"),
        Value::Number(_) => match Num::of(v) {
            Some(Num::Int(i)) => format!("i{i}"),
            Some(Num::Float(f)) => format!("f{}", f.to_bits()),
            None => String::new(),
        },
        Value::Array(_) | Value::Object(_) => format!("c{}", go_json(v)),
    }
}

/// The index of the second appearance of every value that appears more than once.
fn first_repeats(ids: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids.enumerate() {
        let times = seen.entry(id).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// `validateListMap`: items must be objects (or null); no two may share their key values.
fn list_map(p: &str, n: &Node, items: &[Value], errs: &mut Vec<FieldError>) {
    if let Some((i, x)) = items.iter().enumerate().find(|(_, x)| !x.is_null() && !x.is_object()) {
        errs.push((
            format!("{p}[{i}]"),
            format!("Invalid value: {}: must be an object for an array of list-type map", bad_value(x)),
        ));
        return;
    }
    if items.len() <= 1 {
        return;
    }
    let keys: Vec<Option<Value>> = items
        .iter()
        .map(|x| {
            let m = x.as_object();
            if let [key] = n.list_map_keys.as_slice() {
                // One key: the key's value, or "unspecified".
                m.and_then(|m| m.get(key)).cloned()
            } else {
                let mut k = Map::new();
                for key in &n.list_map_keys {
                    if let Some(v) = m.and_then(|m| m.get(key)) {
                        k.insert(key.clone(), v.clone());
                    }
                }
                Some(Value::Object(k))
            }
        })
        .collect();
    let ids = keys.iter().map(|k| k.as_ref().map_or_else(|| "u".to_owned(), identity));
    for i in first_repeats(ids) {
        let shown = match (&keys[i], n.list_map_keys.as_slice()) {
            (None, _) => json!({}),
            (Some(v), [key]) => json!({ key.clone(): v.clone() }),
            (Some(v), _) => v.clone(),
        };
        errs.push((format!("{p}[{i}]"), format!("Duplicate value: {}", bad_value(&shown))));
    }
}

/// Embedded resources (`x-kubernetes-embedded-resource`): `apiVersion` and `kind` required and
/// well-formed, `metadata` an ObjectMeta whose name, namespace, labels, annotations and
/// finalizers are valid (`objectmeta/validation.go`, apimachinery's `ValidateObjectMeta` with
/// `path.ValidatePathSegmentName` for names).
pub(crate) mod embedded {
    use serde_json::{Value, json};

    use super::{Node, bad_value, path_child, path_key};
    use crate::metadata::regex_error;
    use crate::status::FieldError;

    /// `objectmeta.Validate` walking `x` under the path `p`.
    pub(crate) fn validate(p: Option<&str>, x: &Value, n: &Node, errs: &mut Vec<FieldError>) {
        if !n.has_embedded {
            return;
        }
        match x {
            Value::Object(map) => {
                if n.embedded {
                    resource(p, map, errs);
                }
                for (k, v) in map {
                    if let Some(prop) = n.properties.get(k) {
                        if prop.has_embedded {
                            validate(Some(&path_child(p, k)), v, prop, errs);
                        }
                    } else if let Some(values) = n.additional_schema().filter(|s| s.has_embedded) {
                        validate(Some(&path_key(p, k)), v, values, errs);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = &n.items {
                    for (i, v) in items.iter().enumerate() {
                        validate(Some(&format!("{}[{i}]", p.unwrap_or(""))), v, item, errs);
                    }
                }
            }
            _ => {}
        }
    }

    /// `validateEmbeddedResource`.
    fn resource(p: Option<&str>, x: &serde_json::Map<String, Value>, errs: &mut Vec<FieldError>) {
        let at = |f: &str| path_child(p, f);
        for f in ["apiVersion", "kind"] {
            if !x.contains_key(f) {
                errs.push((at(f), "Required value".to_owned()));
            }
        }
        for (k, v) in x {
            match k.as_str() {
                "apiVersion" => match v.as_str() {
                    None => errs.push((at(k), format!("Invalid value: {}: must be a string", bad_value(v)))),
                    Some("") => errs.push((at(k), "Required value".to_owned())),
                    Some(gv) if gv != "/" && gv.matches('/').count() > 1 => errs.push((
                        at(k),
                        format!("Invalid value: {}: unexpected GroupVersion string: {gv}", bad_value(v)),
                    )),
                    Some(_) => {}
                },
                "kind" => match v.as_str() {
                    None => errs.push((at(k), format!("Invalid value: {}: must be a string", bad_value(v)))),
                    Some("") => errs.push((at(k), "Required value".to_owned())),
                    Some(kind) => {
                        let why = dns1035_label(&kind.to_lowercase());
                        if !why.is_empty() {
                            errs.push((
                                at(k),
                                format!(
                                    "Invalid value: {}: may have mixed case, but should otherwise match: {}",
                                    bad_value(v),
                                    why.join(",")
                                ),
                            ));
                        }
                    }
                },
                "metadata" => metadata(&at("metadata"), v, errs),
                _ => {}
            }
        }
    }

    /// `IsDNS1035Label`.
    fn dns1035_label(s: &str) -> Vec<String> {
        let mut errs = Vec::new();
        if s.len() > 63 {
            errs.push("must be no more than 63 characters".to_owned());
        }
        let b = s.as_bytes();
        let shaped = b.first().is_some_and(u8::is_ascii_lowercase)
            && b.last().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
        if !shaped {
            errs.push(regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
                "[a-z]([-a-z0-9]*[a-z0-9])?",
                &["my-name", "abc-123"],
            ));
        }
        errs
    }

    /// `IsDNS1123Label`, one message per fault.
    fn dns1123_label(s: &str) -> Vec<String> {
        let mut errs = Vec::new();
        if s.len() > 63 {
            errs.push("must be no more than 63 characters".to_owned());
        }
        let b = s.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        let shaped = b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter().all(|c| alnum(c) || *c == b'-');
        if !shaped {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                "[a-z0-9]([-a-z0-9]*[a-z0-9])?",
                &["my-name", "123-abc"],
            ));
        }
        errs
    }

    /// `path.ValidatePathSegmentName`.
    fn path_segment(name: &str, prefix: bool) -> Vec<String> {
        if !prefix {
            for bad in [".", ".."] {
                if name == bad {
                    return vec![format!("may not be '{bad}'")];
                }
            }
        }
        ["/", "%"].iter().filter(|c| name.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
    }

    /// Go's JSON type name of a value, as `json.UnmarshalTypeError` prints it.
    fn json_kind(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Why `metadata` does not decode into an ObjectMeta, as Go's JSON decoder words it (for the
    /// top-level fields' types; nested owner references and managed fields are not checked).
    pub(crate) fn decode_error(v: &Value) -> Option<String> {
        let Some(m) = v.as_object() else {
            return (!v.is_null()).then(|| {
                format!("json: cannot unmarshal {} into Go value of type v1.ObjectMeta", json_kind(v))
            });
        };
        let mismatch = |f: &str, v: &Value, ty: &str| {
            format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.{f} of type {ty}",
                json_kind(v)
            )
        };
        for (k, v) in m {
            if v.is_null() {
                continue;
            }
            let err = match k.as_str() {
                "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => {
                    (!v.is_string()).then(|| mismatch(k, v, "string"))
                }
                "generation" | "deletionGracePeriodSeconds" => (!(v.is_i64())).then(|| match v {
                    Value::Number(n) => format!(
                        "json: cannot unmarshal number {n} into Go struct field ObjectMeta.{k} of type int64"
                    ),
                    _ => mismatch(k, v, "int64"),
                }),
                "labels" | "annotations" => match v {
                    Value::Object(entries) => entries
                        .values()
                        .find(|e| !e.is_string() && !e.is_null())
                        .map(|e| mismatch(k, e, "string")),
                    _ => Some(mismatch(k, v, "map[string]string")),
                },
                "finalizers" => match v {
                    Value::Array(items) => items
                        .iter()
                        .find(|e| !e.is_string() && !e.is_null())
                        .map(|e| mismatch(k, e, "string")),
                    _ => Some(mismatch(k, v, "[]string")),
                },
                "ownerReferences" => (!v.is_array()).then(|| mismatch(k, v, "[]v1.OwnerReference")),
                "managedFields" => (!v.is_array()).then(|| mismatch(k, v, "[]v1.ManagedFieldsEntry")),
                "creationTimestamp" | "deletionTimestamp" => match v.as_str() {
                    Some(t) if super::super::format::Format::DateTime.check(t) => None,
                    Some(t) => Some(format!(
                        "parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {t:?} as \"2006\""
                    )),
                    None => Some(mismatch(k, v, "string")),
                },
                _ => None,
            };
            if err.is_some() {
                return err;
            }
        }
        None
    }

    /// `GetObjectMeta` then `ValidateObjectMeta` for an embedded resource's metadata at `p`.
    fn metadata(p: &str, v: &Value, errs: &mut Vec<FieldError>) {
        if let Some(why) = decode_error(v) {
            errs.push((p.to_owned(), format!("Invalid value: {}: {why}", bad_value(v))));
            return;
        }
        let Some(m) = v.as_object() else { return };
        let s = |f: &str| m.get(f).and_then(Value::as_str).unwrap_or("");
        let generate_name = s("generateName");
        for why in path_segment(generate_name, true) {
            errs.push((
                format!("{p}.generateName"),
                format!("Invalid value: {}: {why}", bad_value(&json!(generate_name))),
            ));
        }
        let name = if s("name").is_empty() { "fakename" } else { s("name") };
        for why in path_segment(name, false) {
            errs.push((format!("{p}.name"), format!("Invalid value: {}: {why}", bad_value(&json!(name)))));
        }
        let namespace = s("namespace");
        if !namespace.is_empty() {
            for why in dns1123_label(namespace) {
                errs.push((
                    format!("{p}.namespace"),
                    format!("Invalid value: {}: {why}", bad_value(&json!(namespace))),
                ));
            }
        }
        // The generation, labels, annotations, owner references, finalizers and managed fields
        // as the generic metadata rules word them.
        let prefix = p.strip_suffix("metadata").unwrap_or("");
        for (field, message) in
            crate::metadata::validate(&json!({ "metadata": v }), crate::metadata::Rules::Apimachinery)
        {
            errs.push((format!("{prefix}{field}"), message));
        }
    }
}

#[cfg(test)]
mod tests;
