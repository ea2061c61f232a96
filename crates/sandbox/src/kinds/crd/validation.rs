//! `ValidateCustomResourceDefinition` / `ValidateCustomResourceDefinitionUpdate`
//! (apiextensions-apiserver `pkg/apis/apiextensions/validation/validation.go`), over a v1 CRD.
//!
//! Upstream validates the *internal* type, which the v1 object is first converted to, and that
//! shows in the field paths: `spec.versions[0].name` is also reported as `spec.version` (the
//! conversion copies the first version's name there), and a per-version `schema`,
//! `subresources` or `additionalPrinterColumns` that is identical in every version is hoisted to
//! `spec.validation`, `spec.subresources` or `spec.additionalPrinterColumns` — so the one schema
//! of a single-version CRD is checked at `spec.validation.openAPIV3Schema`, after the names. Webhook
//! conversion settings are at `spec.conversion.webhookClientConfig` and
//! `spec.conversion.conversionReviewVersions`.
//!
//! The causes come in upstream's order: `metadata.name`; the spec (group, scope, missing schemas,
//! defaults vs `preserveUnknownFields`, each version — name, deprecation warning, schema,
//! subresources, printer columns, selectable fields —, version uniqueness and the storage flag,
//! `spec.version`, required names, the names' syntax, the hoisted schema, subresources and
//! columns, conversion); on update, the immutable fields; `status.acceptedNames`;
//! `status.storedVersions`; the API-approval annotation; `preserveUnknownFields: true`.
//!
//! Values that are not strings, numbers or booleans are shown as Go prints them where the
//! sandbox can (string lists as `[]string{"v1"}`, the versions as below), else as JSON (a root
//! schema refused with the status subresource, which upstream prints with pointer addresses).
//!
//! Left out: the schema itself beyond its root (that is [`crate::schema::structural_errors`]'s,
//! called for each schema), CEL rules and their cost, the ratcheting of schema rules on update
//! (only the structural requirement ratchets here), Go's
//! `url.Parse` errors beyond control characters and a missing scheme; a `caBundle`'s certificates
//! are found, not parsed. `spec.versions` is printed
//! as Go prints the internal versions (`[]apiextensions.CustomResourceDefinitionVersion{…}`),
//! exactly when their hoisted-away fields are nil, as they are when every version has the same.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{API_APPROVED_ANNOTATION, NULL, arr_at, condition, get, is_true, str_at};
use crate::metadata::{dns1035_errors, subdomain_errors};
use crate::status::FieldError;

const COLUMN_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: &[&str] =
    &["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const URL_FORM: &str = "; desired format: https://host[/path]";
const NOT_WEBHOOK: &str = "should not be set when strategy is not set to Webhook";
/// The root fields a schema may not set when the status subresource is enabled (the fields of
/// `JSONSchemaProps` outside `allowedFieldsAtRootSchema`, by their JSON names).
const ROOT_FORBIDDEN: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "nullable",
    "default",
    "enum",
    "maxProperties",
    "minProperties",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];

/// A string as Go's `%q` shows it.
fn q(s: &str) -> String {
    crate::go_print::go_quote(s)
}

/// A string list as Go's `%#v` shows a `[]string`.
fn go_strings(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".to_owned(),
        Some(a) => {
            let items: Vec<&str> = a.iter().map(|s| s.as_str().unwrap_or("")).collect();
            crate::field_errors::go_string_slice(&items)
        }
    }
}

/// The causes found so far.
#[derive(Default)]
struct Errs(Vec<FieldError>);

impl Errs {
    fn invalid(&mut self, path: impl Into<String>, value: &str, detail: &str) {
        self.0.push(crate::field_errors::invalid_bare(path, value, detail));
    }
    fn required(&mut self, path: impl Into<String>, detail: &str) {
        self.0.push(crate::field_errors::required(path, detail));
    }
    fn forbidden(&mut self, path: impl Into<String>, detail: &str) {
        self.0.push(crate::field_errors::forbidden(path, detail));
    }
    /// `validateEnumStrings`: required, and one of `accepted`.
    fn one_of(&mut self, path: &str, value: &str, accepted: &[&str]) {
        if value.is_empty() {
            self.required(path, "");
        } else if !accepted.contains(&value) {
            self.0.push(crate::field_errors::not_supported(path, value, accepted));
        }
    }
}

/// One of `spec.versions`, with what the conversion to the internal type leaves in it.
struct Version<'a> {
    raw: &'a Value,
    name: &'a str,
    schema: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: &'a [Value],
    selectable: &'a [Value],
}

/// The spec's per-version fields once hoisted as the conversion to the internal type does:
/// a field identical in every version moves to the top level.
struct Hoisted<'a> {
    versions: Vec<Version<'a>>,
    validation: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: &'a [Value],
    selectable: &'a [Value],
}

fn hoist(spec: &Value) -> Hoisted<'_> {
    let raw = arr_at(spec, "versions");
    let mut versions: Vec<Version<'_>> = raw
        .iter()
        .map(|v| Version {
            raw: v,
            name: str_at(v, "name"),
            schema: get(v, "schema"),
            subresources: get(v, "subresources"),
            columns: arr_at(v, "additionalPrinterColumns"),
            selectable: arr_at(v, "selectableFields"),
        })
        .collect();
    let mut h =
        Hoisted { versions: Vec::new(), validation: None, subresources: None, columns: &[], selectable: &[] };
    if let Some(first) = versions.first() {
        let (schema, sub, cols, sel) = (first.schema, first.subresources, first.columns, first.selectable);
        if versions.iter().all(|v| v.schema == schema) {
            h.validation = schema;
            versions.iter_mut().for_each(|v| v.schema = None);
        }
        if versions.iter().all(|v| v.subresources == sub) {
            h.subresources = sub;
            versions.iter_mut().for_each(|v| v.subresources = None);
        }
        if versions.iter().all(|v| v.columns == cols) {
            h.columns = cols;
            versions.iter_mut().for_each(|v| v.columns = &[]);
        }
        if versions.iter().all(|v| v.selectable == sel) {
            h.selectable = sel;
            versions.iter_mut().for_each(|v| v.selectable = &[]);
        }
    }
    h.versions = versions;
    h
}

/// Whether `pred` holds for `schema` or any schema nested in it (`SchemaHas`).
fn schema_has(schema: &Value, pred: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    let Some(s) = schema.as_object() else { return false };
    if pred(s) {
        return true;
    }
    let one = |k: &str| s.get(k).is_some_and(|v| v.is_object() && schema_has(v, pred));
    let list =
        |k: &str| s.get(k).and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| schema_has(v, pred)));
    let map = |k: &str| {
        s.get(k).and_then(Value::as_object).is_some_and(|m| m.values().any(|v| schema_has(v, pred)))
    };
    one("items")
        || list("items")
        || list("allOf")
        || list("anyOf")
        || list("oneOf")
        || one("not")
        || map("properties")
        || one("additionalProperties")
        || map("patternProperties")
        || one("additionalItems")
        || map("definitions")
        || map("dependencies")
}

/// Every `openAPIV3Schema` of the spec.
fn schemas(spec: &Value) -> impl Iterator<Item = &Value> {
    arr_at(spec, "versions").iter().filter_map(|v| v.get("schema").and_then(|s| get(s, "openAPIV3Schema")))
}

fn spec_has(spec: &Value, pred: &dyn Fn(&Map<String, Value>) -> bool) -> bool {
    schemas(spec).any(|s| schema_has(s, pred))
}

fn has_default(s: &Map<String, Value>) -> bool {
    s.get("default").is_some_and(|d| !d.is_null())
}

fn has_kubernetes_extension(s: &Map<String, Value>) -> bool {
    let set = |k: &str| s.get(k).is_some_and(|v| !v.is_null());
    let yes = |k: &str| s.get(k).and_then(Value::as_bool) == Some(true);
    let nonempty = |k: &str| s.get(k).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    yes("x-kubernetes-embedded-resource")
        || set("x-kubernetes-preserve-unknown-fields")
        || yes("x-kubernetes-int-or-string")
        || nonempty("x-kubernetes-list-map-keys")
        || set("x-kubernetes-list-type")
        || nonempty("x-kubernetes-validations")
}

/// The options upstream derives from the old object (`validationOptions`).
struct Opts {
    require_openapi_schema: bool,
    require_structural: bool,
    require_recognized_review_version: bool,
    immutable_names: bool,
    /// A conversion webhook's `caBundle` is not checked: on create, before the CRD is
    /// established, or while the stored one is itself invalid (`allowInvalidCABundle`).
    allow_invalid_ca_bundle: bool,
}

impl Opts {
    fn new(old: Option<&Value>) -> Self {
        let Some(old) = old else {
            return Self {
                require_openapi_schema: true,
                require_structural: true,
                require_recognized_review_version: true,
                immutable_names: false,
                allow_invalid_ca_bundle: true,
            };
        };
        let spec = old.get("spec").unwrap_or(&NULL);
        let all_have_schema = arr_at(spec, "versions")
            .iter()
            .all(|v| v.get("schema").and_then(|s| get(s, "openAPIV3Schema")).is_some());
        let non_structural = schemas(spec).any(|s| !crate::schema::structural_errors(s, "").is_empty());
        let review = spec.pointer("/conversion/webhook/conversionReviewVersions").and_then(Value::as_array);
        Self {
            require_openapi_schema: all_have_schema,
            require_structural: !non_structural,
            require_recognized_review_version: review.is_none_or(|r| {
                r.is_empty() || r.iter().any(|v| v.as_str().is_some_and(|v| REVIEW_VERSIONS.contains(&v)))
            }),
            immutable_names: super::is_condition_true(old, condition::ESTABLISHED),
            allow_invalid_ca_bundle: !super::is_condition_true(old, condition::ESTABLISHED)
                || ca_bundle(old.pointer("/spec/conversion/webhook/clientConfig"))
                    .is_some_and(|b| ca_bundle_error(&b).is_some()),
        }
    }
}

/// Validates a CRD on create (`old` is `None`) or update, in upstream's words, field paths and
/// order (see the module docs). As upstream, it expects the strategy to have run first:
/// [`super::prepare_create`] / [`super::prepare_update`] set the `status.storedVersions` it checks.
/// The generic metadata rules (the name a DNS-1123 subdomain, immutable on update) are not
/// repeated here; the CRD-specific one (`<plural>.<group>`) is.
#[must_use]
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut e = Errs::default();
    // A `/status` write keeps the stored spec; a main update keeps the stored status (but for
    // a new storage version, which changes the spec). So a write that changes the status alone
    // is a status write, which upstream's status strategy checks for the accepted names only
    // (`ValidateUpdateCustomResourceDefinitionStatus`).
    if let Some(old) = old
        && new.get("spec") == old.get("spec")
        && new.get("status") != old.get("status")
    {
        names_errors(&mut e, new.pointer("/status/acceptedNames").unwrap_or(&NULL), "status.acceptedNames");
        return e.0;
    }
    let spec = new.get("spec").unwrap_or(&NULL);
    let names = spec.get("names").unwrap_or(&NULL);
    let (group, plural) = (str_at(spec, "group"), str_at(names, "plural"));
    if old.is_none() {
        let name = crate::object_meta::meta_str(new, "name");
        if !name.is_empty() && name != format!("{plural}.{group}") {
            e.invalid("metadata.name", &q(name), "must be spec.names.plural+\".\"+spec.group");
        }
    }
    let opts = Opts::new(old);
    spec_errors(&mut e, spec, &opts);
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&NULL);
        let old_names = old_spec.get("names").unwrap_or(&NULL);
        let mut immutable = |path: &str, new: &str, old: &str| {
            if new != old {
                e.invalid(path, &q(new), "field is immutable");
            }
        };
        if opts.immutable_names {
            immutable("spec.scope", str_at(spec, "scope"), str_at(old_spec, "scope"));
            immutable("spec.names.kind", str_at(names, "kind"), str_at(old_names, "kind"));
        }
        immutable("spec.group", group, str_at(old_spec, "group"));
        immutable("spec.names.plural", plural, str_at(old_names, "plural"));
    }
    let accepted = new.pointer("/status/acceptedNames").unwrap_or(&NULL);
    names_errors(&mut e, accepted, "status.acceptedNames");
    stored_versions_errors(&mut e, new);
    approval_errors(&mut e, new, old);
    let puf = |o: &Value| o.pointer("/spec/preserveUnknownFields").and_then(Value::as_bool) == Some(true);
    if !old.is_some_and(puf) && puf(new) {
        e.invalid(
            "spec.preserveUnknownFields",
            "true",
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        );
    }
    e.0
}

fn spec_errors(e: &mut Errs, spec: &Value, opts: &Opts) {
    let group = str_at(spec, "group");
    let group_errs = subdomain_errors(group);
    if group.is_empty() {
        e.required("spec.group", "");
    } else if !group_errs.is_empty() {
        e.invalid("spec.group", &q(group), &group_errs.join(","));
    } else if !group.contains('.') {
        e.invalid("spec.group", &q(group), "should be a domain with at least one dot");
    }
    e.one_of("spec.scope", str_at(spec, "scope"), &["Cluster", "Namespaced"]);

    let puf = is_true(spec, "preserveUnknownFields");
    let mut require_structural = opts.require_structural || !puf;
    let versions = arr_at(spec, "versions");
    let missing_schema = |v: &Value| v.get("schema").and_then(|s| get(s, "openAPIV3Schema")).is_none();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        if opts.require_openapi_schema {
            if missing_schema(v) {
                e.required(path, "schemas are required");
            }
        } else if !puf && is_true(v, "served") && missing_schema(v) {
            e.required(path, "because otherwise all fields are pruned");
        }
    }
    if spec_has(spec, &has_default) {
        require_structural = true;
        if puf {
            e.invalid(
                "spec.preserveUnknownFields",
                "true",
                "must be false in order to use defaults in the schema",
            );
        }
    }
    if spec_has(spec, &has_kubernetes_extension) {
        require_structural = true;
    }

    let h = hoist(spec);
    let any_status = has_status(h.subresources) || h.versions.iter().any(|v| has_status(v.subresources));
    let mut storage = 0;
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, v) in h.versions.iter().enumerate() {
        if is_true(v.raw, "storage") {
            storage += 1;
        }
        unique &= seen.insert(v.name);
        let errs = dns1035_errors(v.name);
        if !errs.is_empty() {
            e.invalid(format!("spec.versions[{i}].name"), &q(v.name), &errs.join(","));
        }
        // `getSubresourcesForVersion`: the hoisted ones unless some version has its own.
        let subresources =
            if h.versions.iter().any(|v| v.subresources.is_some()) { v.subresources } else { h.subresources };
        version_errors(e, i, v, has_status(subresources), require_structural);
    }
    if !unique {
        e.invalid(
            "spec.versions",
            &go_versions(&h.versions, spec.get("versions").is_some_and(Value::is_array)),
            "must contain unique version names",
        );
    }
    if storage != 1 {
        e.invalid(
            "spec.versions",
            &go_versions(&h.versions, spec.get("versions").is_some_and(Value::is_array)),
            "must have exactly one version marked as storage version",
        );
    }
    // The conversion sets `spec.version` to the first version's name, which is checked again.
    if let Some(first) = h.versions.first() {
        let errs = dns1035_errors(first.name);
        if !errs.is_empty() {
            e.invalid("spec.version", &q(first.name), &errs.join(","));
        }
    }
    let names = spec.get("names").unwrap_or(&NULL);
    for field in ["plural", "singular", "kind", "listKind"] {
        if str_at(names, field).is_empty() {
            e.required(format!("spec.names.{field}"), "");
        }
    }
    names_errors(e, names, "spec.names");
    schema_errors(e, h.validation, any_status, "spec.validation", require_structural);
    subresources_errors(e, h.subresources, "spec.subresources");
    for (i, col) in h.columns.iter().enumerate() {
        column_errors(e, col, &format!("spec.additionalPrinterColumns[{i}]"));
    }
    if !h.selectable.is_empty() {
        if h.validation.is_none() {
            e.invalid(
                "spec.selectableFields",
                "\"\"",
                "selectableFields may only be set when validations.schema is included",
            );
        } else {
            selectable_errors(e, h.selectable, h.validation, "spec.selectableFields");
        }
    }

    let conversion = get(spec, "conversion");
    if let Some(c) = conversion
        && str_at(c, "strategy") != "None"
        && puf
    {
        e.invalid(
            "spec.conversion.strategy",
            &q(str_at(c, "strategy")),
            "must be None if spec.preserveUnknownFields is true",
        );
    }
    if let Some(c) = conversion {
        conversion_errors(e, c, opts);
    }
}

/// The internal versions as Go's `%#v` prints a `[]apiextensions.CustomResourceDefinitionVersion`,
/// which `field.Invalid` does with `spec.versions`. A field left set after hoisting is a pointer
/// (or a slice of structs) upstream prints with a memory address; it is shown here as the Go
/// form of a non-nil pointer to nothing in particular, since no client can expect its address.
fn go_versions(versions: &[Version<'_>], present: bool) -> String {
    const SET: &str = "(0xc000000000)";
    if !present {
        // No `versions` at all converts to a nil slice.
        return "[]apiextensions.CustomResourceDefinitionVersion(nil)".to_owned();
    }
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            let warning = if v.raw.get("deprecationWarning").is_some_and(Value::is_string) { SET } else { "(nil)" };
            let pointer = |set: bool| if set { SET } else { "(nil)" };
            let slice = |set: bool| if set { "{...}" } else { "(nil)" };
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:(*string){warning}, Schema:(*apiextensions.CustomResourceValidation){}, Subresources:(*apiextensions.CustomResourceSubresources){}, AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition{}, SelectableFields:[]apiextensions.SelectableField{}}}",
                q(v.name),
                is_true(v.raw, "served"),
                is_true(v.raw, "storage"),
                is_true(v.raw, "deprecated"),
                pointer(v.schema.is_some()),
                pointer(v.subresources.is_some()),
                slice(!v.columns.is_empty()),
                slice(!v.selectable.is_empty()),
            )
        })
        .collect();
    format!("[]apiextensions.CustomResourceDefinitionVersion{{{}}}", items.join(", "))
}

fn has_status(subresources: Option<&Value>) -> bool {
    subresources.is_some_and(|s| get(s, "status").is_some())
}

fn version_errors(e: &mut Errs, i: usize, v: &Version<'_>, status_enabled: bool, require_structural: bool) {
    let prefix = format!("spec.versions[{i}]");
    if let Some(warning) = v.raw.get("deprecationWarning").and_then(Value::as_str) {
        for why in deprecation_warning_errors(is_true(v.raw, "deprecated"), warning) {
            e.invalid(format!("{prefix}.deprecationWarning"), &q(warning), &why);
        }
    }
    schema_errors(e, v.schema, status_enabled, &format!("{prefix}.schema"), require_structural);
    subresources_errors(e, v.subresources, &format!("{prefix}.subresources"));
    for (j, col) in v.columns.iter().enumerate() {
        column_errors(e, col, &format!("{prefix}.additionalPrinterColumns[{j}]"));
    }
    if !v.selectable.is_empty() {
        // As upstream, this looks at the version's own schema, which the conversion hoisted
        // away when every version has the same one.
        if v.schema.and_then(|s| get(s, "openAPIV3Schema")).is_none() {
            e.invalid(
                format!("{prefix}.selectableFields"),
                "\"\"",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            );
        } else {
            selectable_errors(e, v.selectable, v.schema, &format!("{prefix}.selectableFields"));
        }
    }
}

/// `validateDeprecationWarning`.
fn deprecation_warning_errors(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_owned()];
    }
    let mut errs = Vec::new();
    if warning.len() > 256 {
        errs.push("must be <= 256 characters long".to_owned());
    }
    if warning.is_empty() {
        errs.push("must not be an empty string".to_owned());
    }
    // Go's `unicode.IsPrint`: graphic characters and the ASCII space (a control character is not
    // printable either, so upstream's separate control-character message never shows).
    if let Some((at, _)) = warning
        .char_indices()
        .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' ') || is_format_char(*c))
    {
        errs.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {at}"
        ));
    }
    errs
}

/// The common invisible format characters (Unicode category Cf), which are not printable.
fn is_format_char(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{600}'..='\u{605}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// `validateCustomResourceDefinitionValidation` for one `CustomResourceValidation` at `prefix`:
/// the root restrictions of a schema whose status subresource is enabled, a nullable root, and
/// (when required) the structural-schema rules.
fn schema_errors(
    e: &mut Errs,
    validation: Option<&Value>,
    status_enabled: bool,
    prefix: &str,
    require_structural: bool,
) {
    let Some(schema) = validation.and_then(|v| get(v, "openAPIV3Schema")) else { return };
    let root = format!("{prefix}.openAPIV3Schema");
    if status_enabled && let Some(s) = schema.as_object() {
        // Upstream walks the fields in declaration order and stops at the first offender; only
        // `id`, `$schema` and `$ref` come before `type`.
        let zero = |v: &Value| matches!(v, Value::Null | Value::Bool(false)) || v.as_str() == Some("");
        let offends = |k: &String, v: &Value| !zero(v) && ROOT_FORBIDDEN.contains(&k.as_str());
        let early = s.iter().any(|(k, v)| ["id", "$schema", "$ref"].contains(&k.as_str()) && offends(k, v));
        let type_ = s.get("type").and_then(Value::as_str).unwrap_or("");
        const ONLY: &str =
            "fields are allowed at the root of the schema if the status subresource is enabled";
        let allowed = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";
        if early {
            e.invalid(root.clone(), &schema.to_string(), &format!("only {allowed} {ONLY}"));
        } else if !type_.is_empty() && type_ != "object" {
            e.invalid(
                format!("{root}.type"),
                &q(type_),
                "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
            );
        } else if s.iter().any(|(k, v)| offends(k, v)) {
            e.invalid(root.clone(), &schema.to_string(), &format!("only {allowed} {ONLY}"));
        }
    }
    // A nullable root is refused by the structural checks (`schema::structural_errors`).
    if require_structural {
        e.0.extend(crate::schema::structural_errors(schema, &root));
    }
}

/// `validateSimpleJSONPath`; whether it found a fault.
fn simple_json_path_errors(e: &mut Errs, s: &str, path: &str) -> bool {
    if s.is_empty() {
        e.invalid(path, &q(s), "must not be empty");
    } else if !s.starts_with('.') {
        e.invalid(path, &q(s), "must be a simple json path starting with .");
    } else {
        return false;
    }
    true
}

/// `ValidateCustomResourceDefinitionSubresources`.
fn subresources_errors(e: &mut Errs, subresources: Option<&Value>, prefix: &str) {
    let Some(scale) = subresources.and_then(|s| get(s, "scale")) else { return };
    for (field, under) in [("specReplicasPath", ".spec"), ("statusReplicasPath", ".status")] {
        let path = format!("{prefix}.scale.{field}");
        let value = str_at(scale, field);
        if value.is_empty() {
            e.required(path, "");
        } else if !simple_json_path_errors(e, value, &path) && !value.starts_with(&format!("{under}.")) {
            e.invalid(path, &q(value), &format!("should be a json path under {under}"));
        }
    }
    let selector = str_at(scale, "labelSelectorPath");
    let path = format!("{prefix}.scale.labelSelectorPath");
    if !selector.is_empty()
        && !simple_json_path_errors(e, selector, &path)
        && !selector.starts_with(".spec.")
        && !selector.starts_with(".status.")
    {
        e.invalid(path, &q(selector), "should be a json path under either .spec or .status");
    }
}

/// `ValidateCustomResourceColumnDefinition`. Beyond upstream, a `jsonPath` that
/// [`crate::jsonpath::JsonPath`] cannot parse is refused here (upstream accepts it and then
/// fails to build the CRD's table printer, so the resource is never served).
fn column_errors(e: &mut Errs, col: &Value, prefix: &str) {
    if str_at(col, "name").is_empty() {
        e.required(format!("{prefix}.name"), "");
    }
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    match str_at(col, "type") {
        "" => e.required(format!("{prefix}.type"), &types),
        t if !COLUMN_TYPES.contains(&t) => e.invalid(format!("{prefix}.type"), &q(t), &types),
        _ => {}
    }
    let format = str_at(col, "format");
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        e.invalid(
            format!("{prefix}.format"),
            &q(format),
            &format!("must be one of {}", COLUMN_FORMATS.join(",")),
        );
    }
    let path = format!("{prefix}.JSONPath");
    let json_path = str_at(col, "jsonPath");
    if json_path.is_empty() {
        e.required(path, "");
    } else if !simple_json_path_errors(e, json_path, &path)
        && let Err(why) = crate::jsonpath::JsonPath::parse(json_path)
    {
        e.invalid(path, &q(json_path), &why);
    }
}

/// The most selectable fields a version may have (`MaxSelectableFields`).
const MAX_SELECTABLE_FIELDS: usize = 8;

/// `ValidateCustomResourceSelectableFields`: each path names a string, boolean or integer field
/// of `schema` (the `openAPIV3Schema` in force) outside `metadata`, once; at most eight.
fn selectable_errors(e: &mut Errs, fields: &[Value], schema: Option<&Value>, prefix: &str) {
    let root = schema.and_then(|s| get(s, "openAPIV3Schema")).and_then(Value::as_object);
    let mut unique: Vec<&str> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let path = format!("{prefix}[{i}].jsonPath");
        let json_path = str_at(f, "jsonPath");
        if json_path.is_empty() {
            e.required(path, "");
            continue;
        }
        let Some(root) = root else { continue };
        let found = match crate::schema::field_path::resolve(root, json_path, false) {
            Ok(found) => found,
            Err(why) => {
                e.invalid(path, &q(json_path), &format!("is an invalid path: {why}"));
                continue;
            }
        };
        if found.root == "metadata" {
            e.invalid(path.clone(), &q(json_path), "must not point to fields in metadata");
        }
        let ty = found.schema.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("");
        if !matches!(ty, "string" | "boolean" | "integer") {
            e.invalid(
                path.clone(),
                &q(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            );
        }
        if unique.contains(&json_path) {
            e.0.push(crate::field_errors::duplicate(path, json_path));
        } else {
            unique.push(json_path);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        e.0.push(crate::field_errors::too_many(prefix, unique.len(), MAX_SELECTABLE_FIELDS));
    }
}

/// `ValidateCustomResourceDefinitionNames` for the names at `prefix`.
fn names_errors(e: &mut Errs, names: &Value, prefix: &str) {
    for field in ["plural", "singular"] {
        let v = str_at(names, field);
        let errs = dns1035_errors(v);
        if !v.is_empty() && !errs.is_empty() {
            e.invalid(format!("{prefix}.{field}"), &q(v), &errs.join(","));
        }
    }
    for field in ["kind", "listKind"] {
        let v = str_at(names, field);
        let errs = dns1035_errors(&v.to_lowercase());
        if !v.is_empty() && !errs.is_empty() {
            e.invalid(
                format!("{prefix}.{field}"),
                &q(v),
                &format!("may have mixed case, but should otherwise match: {}", errs.join(",")),
            );
        }
    }
    for (i, short) in arr_at(names, "shortNames").iter().enumerate() {
        let v = short.as_str().unwrap_or("");
        let errs = dns1035_errors(v);
        if !errs.is_empty() {
            e.invalid(format!("{prefix}.shortNames[{i}]"), &q(v), &errs.join(","));
        }
    }
    let (kind, list_kind) = (str_at(names, "kind"), str_at(names, "listKind"));
    if !kind.is_empty() && kind == list_kind {
        e.invalid(format!("{prefix}.listKind"), &q(list_kind), "kind and listKind may not be the same");
    }
    for (i, category) in arr_at(names, "categories").iter().enumerate() {
        let v = category.as_str().unwrap_or("");
        let errs = dns1035_errors(v);
        if !errs.is_empty() {
            e.invalid(format!("{prefix}.categories[{i}]"), &q(v), &errs.join(","));
        }
    }
}

/// `validateCustomResourceConversion` (the v1 `webhook` block is the internal
/// `webhookClientConfig` and `conversionReviewVersions`, which name the paths).
fn conversion_errors(e: &mut Errs, conversion: &Value, opts: &Opts) {
    let require_recognized = opts.require_recognized_review_version;
    let strategy = str_at(conversion, "strategy");
    e.one_of("spec.conversion.strategy", strategy, &["None", "Webhook"]);
    let webhook = get(conversion, "webhook").unwrap_or(&NULL);
    let client_config = get(webhook, "clientConfig");
    let review = get(webhook, "conversionReviewVersions");
    if strategy == "Webhook" {
        match client_config {
            None => {
                e.required("spec.conversion.webhookClientConfig", "required when strategy is set to Webhook")
            }
            Some(cc) => match (get(cc, "url"), get(cc, "service")) {
                (Some(_), Some(_)) | (None, None) => {
                    e.required(
                        "spec.conversion.webhookClientConfig",
                        "exactly one of url or service is required",
                    );
                }
                (Some(url), None) => {
                    webhook_url_errors(
                        e,
                        url.as_str().unwrap_or(""),
                        "spec.conversion.webhookClientConfig.url",
                    );
                }
                (None, Some(service)) => {
                    service_errors(e, service, "spec.conversion.webhookClientConfig.service")
                }
            },
        }
        if !opts.allow_invalid_ca_bundle
            && let Some(bundle) = ca_bundle(client_config)
            && let Some(why) = ca_bundle_error(&bundle)
        {
            e.invalid("spec.conversion.webhookClientConfig.caBundle", &go_bytes(&bundle), why);
        }
        review_versions_errors(e, review, require_recognized);
    } else {
        if client_config.is_some() {
            e.forbidden("spec.conversion.webhookClientConfig", NOT_WEBHOOK);
        }
        if review.and_then(Value::as_array).is_some_and(|r| !r.is_empty()) {
            e.forbidden("spec.conversion.conversionReviewVersions", NOT_WEBHOOK);
        }
    }
}

/// A client config's `caBundle`, decoded, when it holds any bytes.
fn ca_bundle(client_config: Option<&Value>) -> Option<Vec<u8>> {
    use base64::Engine;
    let text = client_config.map_or("", |c| str_at(c, "caBundle"));
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
    (!bytes.is_empty()).then_some(bytes)
}

/// Why client-go would not load `bundle` as root certificates (`webhook.ValidateCABundle`, through
/// `transport.TLSConfigFor`). A `CERTIFICATE` block is taken as a certificate without parsing
/// its DER: the sandbox calls no webhook.
fn ca_bundle_error(bundle: &[u8]) -> Option<&'static str> {
    const CERT: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const BEGIN: &[u8] = b"-----BEGIN ";
    const END: &[u8] = b"-----END ";
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    if find(bundle, CERT).is_some() {
        return None;
    }
    // `createErrorParsingCAData`: block after block; anything left that is no block is an error.
    let mut rest = bundle;
    while !rest.is_empty() {
        let Some(end) = find(rest, BEGIN).and_then(|b| find(&rest[b..], END).map(|e| b + e)) else {
            return Some("unable to load root certificates: unable to parse bytes as PEM block");
        };
        let after = &rest[end..];
        rest = after.iter().position(|&c| c == b'\n').map_or(&[][..], |nl| &after[nl + 1..]);
    }
    Some("unable to load root certificates: no valid certificate authority data seen")
}

/// Bytes as Go's `%#v` prints a `[]byte`: `[]byte{0x0, 0x41}`.
fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("{b:#x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

fn review_versions_errors(e: &mut Errs, review: Option<&Value>, require_recognized: bool) {
    const PATH: &str = "spec.conversion.conversionReviewVersions";
    let list = review.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if list.is_empty() {
        e.required(PATH, "");
        return;
    }
    let mut seen = HashSet::new();
    let mut recognized = false;
    for (i, v) in list.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        if !seen.insert(v) {
            e.invalid(format!("{PATH}[{i}]"), &q(v), "duplicate version");
            continue;
        }
        for why in dns1035_errors(v) {
            e.invalid(format!("{PATH}[{i}]"), &q(v), &why);
        }
        recognized |= REVIEW_VERSIONS.contains(&v);
    }
    if require_recognized && !recognized {
        e.invalid(
            PATH,
            &go_strings(review),
            &format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        );
    }
}

/// `webhook.ValidateWebhookURL` with https required.
fn webhook_url_errors(e: &mut Errs, url: &str, path: &str) {
    if url.chars().any(|c| c.is_ascii_control()) {
        let why = format!(
            "url must be a valid URL: parse {}: net/url: invalid control character in URL{URL_FORM}",
            q(url)
        );
        e.required(path, &why);
        return;
    }
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    // `getScheme`: letters, then letters, digits, '+', '-', '.', up to a ':'.
    let mut scheme = "";
    let mut rest = rest;
    for (i, c) in rest.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => {
                let why =
                    format!("url must be a valid URL: parse {}: missing protocol scheme{URL_FORM}", q(url));
                e.required(path, &why);
                return;
            }
            ':' => {
                scheme = &rest[..i];
                rest = &rest[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let scheme = scheme.to_ascii_lowercase();
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (mut user, mut host) = (None, "");
    if let Some(after) = rest.strip_prefix("//")
        && (!scheme.is_empty() || !rest.starts_with("///"))
    {
        let authority = after.split('/').next().unwrap_or("");
        match authority.rsplit_once('@') {
            Some((u, h)) => (user, host) = (Some(u), h),
            None => host = authority,
        }
    }
    if scheme != "https" {
        e.invalid(path, &q(&scheme), &format!("'https' is the only allowed URL scheme{URL_FORM}"));
    }
    if host.is_empty() {
        e.invalid(path, &q(host), &format!("host must be specified{URL_FORM}"));
    }
    if let Some(user) = user {
        e.invalid(path, &q(user), "user information is not permitted in the URL");
    }
    if !fragment.is_empty() {
        e.invalid(path, &q(fragment), "fragments are not permitted in the URL");
    }
    if !query.is_empty() {
        e.invalid(path, &q(query), "query parameters are not permitted in the URL");
    }
}

/// `webhook.ValidateWebhookService`. Upstream passes the service's name where the function
/// takes the namespace and the other way round, so a missing name is reported as
/// `service.namespace: Required value: service namespace is required` (and vice versa); kept.
fn service_errors(e: &mut Errs, service: &Value, prefix: &str) {
    let (name, namespace) = (str_at(service, "name"), str_at(service, "namespace"));
    if namespace.is_empty() {
        e.required(format!("{prefix}.name"), "service name is required");
    }
    if name.is_empty() {
        e.required(format!("{prefix}.namespace"), "service namespace is required");
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        e.invalid(
            format!("{prefix}.port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        );
    }
    let Some(url_path) = service.get("path").and_then(Value::as_str) else { return };
    let path = format!("{prefix}.path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        e.invalid(path, &q(url_path), "segment[0] may not be empty");
        return;
    }
    if !url_path.starts_with('/') {
        e.invalid(path.clone(), &q(url_path), "must start with a '/'");
    }
    let mut check = url_path.get(1..).unwrap_or("");
    check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            e.invalid(path.clone(), &q(url_path), &format!("segment[{i}] may not be empty"));
            continue;
        }
        for why in subdomain_errors(step) {
            e.invalid(path.clone(), &q(url_path), &format!("segment[{i}]: {why}"));
        }
    }
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
fn stored_versions_errors(e: &mut Errs, crd: &Value) {
    const PATH: &str = "status.storedVersions";
    let raw = crd.pointer("/status/storedVersions").filter(|v| !v.is_null());
    let stored = raw.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if stored.is_empty() {
        e.invalid(PATH, &go_strings(raw), "must have at least one stored version");
        return;
    }
    let mut left: HashMap<&str, usize> = HashMap::new();
    for (i, v) in stored.iter().enumerate() {
        left.insert(v.as_str().unwrap_or(""), i);
    }
    for v in super::versions(crd) {
        let name = str_at(v, "name");
        let found = left.remove(name).is_some();
        if is_true(v, "storage") && !found {
            e.invalid(PATH, &go_strings(raw), &format!("must have the storage version {name}"));
        }
    }
    // Upstream walks a Go map here, in no fixed order; by index.
    let mut left: Vec<(&str, usize)> = left.into_iter().collect();
    left.sort_by_key(|(_, i)| *i);
    for (v, i) in left {
        e.invalid(format!("{PATH}[{i}]"), &q(v), "must appear in spec.versions");
    }
}

/// The API-approval states (`apihelpers.APIApprovalState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

/// Whether `group` is reserved for the Kubernetes community (`IsProtectedCommunityGroup`).
#[must_use]
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// Whether `s` is an absolute URL with a scheme and a host, as Go's `url.ParseRequestURI` accepts.
fn is_absolute_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else { return false };
    let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.strip_prefix("//").map(|a| a.split(['/', '?']).next().unwrap_or(""));
    let host = host.map(|h| h.rsplit_once('@').map_or(h, |(_, h)| h));
    scheme_ok
        && host.is_some_and(|h| !h.is_empty())
        && !s.chars().any(|c| c.is_control() || c == ' ' || c == '#')
}

/// `GetAPIApprovalState`: the state of the annotation and why.
fn approval_state(crd: &Value) -> (Approval, String) {
    let value = crd.pointer("/metadata/annotations").map_or("", |a| str_at(a, API_APPROVED_ANNOTATION));
    if value.is_empty() {
        let why = format!(
            "protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111",
            q(API_APPROVED_ANNOTATION)
        );
        (Approval::Missing, why)
    } else if value.starts_with("unapproved") {
        (Approval::Bypassed, format!("not approved: {}", q(value)))
    } else if is_absolute_url(value) {
        (Approval::Approved, format!("approved in {value}"))
    } else {
        let why = format!(
            "protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
            q(API_APPROVED_ANNOTATION)
        );
        (Approval::Invalid, why)
    }
}

/// `validateAPIApproval`: a CRD in a protected group needs the approval annotation; an update
/// that leaves its state as it was is never refused.
fn approval_errors(e: &mut Errs, new: &Value, old: Option<&Value>) {
    if !is_protected_group(new.get("spec").map_or("", |s| str_at(s, "group"))) {
        return;
    }
    let (state, why) = approval_state(new);
    if old.is_some_and(|o| approval_state(o).0 == state) {
        return;
    }
    let path = format!("metadata.annotations[{API_APPROVED_ANNOTATION}]");
    let value = new.pointer("/metadata/annotations").map_or("", |a| str_at(a, API_APPROVED_ANNOTATION));
    match state {
        Approval::Missing => e.required(path, &why),
        Approval::Invalid => e.invalid(path, &q(value), &why),
        Approval::Approved | Approval::Bypassed => {}
    }
}
