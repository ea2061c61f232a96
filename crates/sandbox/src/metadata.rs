//! Object metadata rules every kind shares, checked on create and update before the kind's own
//! (upstream's `ValidateObjectMeta` in apimachinery's `api/validation/objectmeta.go`, with the
//! in-tree API's extra finalizer rule from `pkg/apis/core/validation`): the shapes a name may
//! take (DNS-1123 subdomain or label, DNS-1035 label, path segment, as apimachinery's
//! `util/validation`; a kind picks one), label keys and values, annotation keys, and finalizer
//! names.

use serde_json::Value;

/// upstream's `RegexError`: the message, examples, and the regex (`apimachinery/pkg/util/validation`).
pub(crate) fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{msg} (e.g. {}regex used for validation is '{regex}')", examples.join(" or "))
}

/// Whether `part` is a DNS-1123 label's shape: lowercase alphanumerics and '-', alphanumeric at
/// both ends.
fn label_shaped(part: &str) -> bool {
    !part.is_empty()
        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && part.starts_with(|c: char| c.is_ascii_alphanumeric())
        && part.ends_with(|c: char| c.is_ascii_alphanumeric())
}

const LABEL_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

/// Checks a DNS-1123 subdomain (most object names), as `IsDNS1123Subdomain`: the reasons it is
/// not one, joined as upstream's causes are (length first).
pub fn check_subdomain(name: &str) -> Option<String> {
    let errs = subdomain_errors(name);
    (!errs.is_empty()).then(|| errs.join(", "))
}

/// Why `name` is not a DNS-1123 subdomain (`IsDNS1123Subdomain`), one message per cause.
#[must_use]
pub fn subdomain_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 253 {
        errs.push("must be no more than 253 characters".to_owned());
    }
    if !name.split('.').all(label_shaped) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            &format!("{LABEL_REGEX}(\\.{LABEL_REGEX})*"),
            &["example.com"],
        ));
    }
    errs
}

/// Checks a DNS-1123 label (namespace and container names), as `IsDNS1123Label`.
pub fn check_label(name: &str) -> Option<String> {
    let errs = label_errors(name);
    (!errs.is_empty()).then(|| errs.join(", "))
}

/// Why `name` is not a DNS-1123 label (`IsDNS1123Label`), one message per cause: a name that
/// would be a subdomain is told it has dots.
#[must_use]
pub fn label_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !label_shaped(name) {
        if name.split('.').all(label_shaped) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                LABEL_REGEX,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Why `port` is not an IANA service name (a named port, `IsValidPortName`), in upstream's order.
#[must_use]
pub fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_owned());
    }
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned());
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// Checks a DNS-1035 label (a Service's name, `ValidateServiceName`), as `IsDNS1035Label`.
pub fn check_dns1035(name: &str) -> Option<String> {
    let errs = dns1035_errors(name);
    (!errs.is_empty()).then(|| errs.join(", "))
}

/// Checks a path segment name (RBAC's roles and bindings, `ValidatePathSegmentName`): anything
/// but `.`, `..` and what holds `/` or `%`.
pub fn check_path_segment(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    let errs: Vec<String> =
        ["/", "%"].iter().filter(|c| name.contains(**c)).map(|c| format!("may not contain '{c}'")).collect();
    (!errs.is_empty()).then(|| errs.join(", "))
}

/// Why `v` is not a DNS-1035 label (`IsDNS1035Label`).
pub(crate) fn dns1035_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    let b = v.as_bytes();
    let shaped = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.last() != Some(&b'-');
    if !shaped {
        errs.push(regex_error(DNS1035_MSG, DNS1035_FMT, &["my-name", "abc-123"]));
    }
    errs
}

const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

const QUALIFIED_NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_SHAPE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_REGEX: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// Finalizers the API itself understands; any other must be qualified with a `/`.
pub const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// `[A-Za-z0-9]` at both ends, `[-A-Za-z0-9_.]` between (a qualified name's name part, and a
/// non-empty label value).
fn name_shaped(s: &str) -> bool {
    let edge = |c: char| c.is_ascii_alphanumeric();
    s.starts_with(edge)
        && s.ends_with(edge)
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Why `value` is not a qualified name (`[prefix/]name`: label and annotation keys, finalizers),
/// as upstream's `IsQualifiedName` words it; empty when it is one.
#[must_use]
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let shape = || regex_error(QUALIFIED_NAME_SHAPE, QUALIFIED_NAME_REGEX, &["MyName", "my.name", "123-abc"]);
    let name = match value.split('/').collect::<Vec<_>>()[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else if let Some(why) = check_subdomain(prefix) {
                errs.push(format!("prefix part {why}"));
            }
            name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                shape()
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_owned());
    }
    if !name_shaped(name) {
        errs.push(format!("name part {}", shape()));
    }
    errs
}

/// Why `value` is not a label value (`IsValidLabelValue`); empty when it is one.
#[must_use]
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !value.is_empty() && !name_shaped(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_REGEX,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// A metadata map's entries, borrowed (annotations can hold a copy of the whole object).
fn string_map<'a>(obj: &'a Value, field: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_object).into_iter().flatten()
}

/// The largest total of the annotations' keys and values (`TotalAnnotationSizeLimitB`).
const ANNOTATIONS_LIMIT: usize = 256 * 1024;
/// The longest field manager name (`FieldManagerMaxLength`).
const FIELD_MANAGER_LIMIT: usize = 128;
/// The longest subresource name in a managed fields entry (`MaxSubresourceNameLength`).
const SUBRESOURCE_LIMIT: usize = 256;

/// `Invalid value: "<value>": <why>`, the value quoted as Go's `%q`.
fn invalid(value: &str, why: &str) -> String {
    format!("Invalid value: {}: {why}", crate::go_print::go_quote(value))
}

/// `ValidateNonnegativeField` of `metadata.generation`.
fn generation_errors(obj: &Value) -> Vec<(String, String)> {
    match obj.pointer("/metadata/generation").and_then(Value::as_i64) {
        Some(g) if g < 0 => vec![(
            "metadata.generation".to_owned(),
            format!("Invalid value: {g}: must be greater than or equal to 0"),
        )],
        _ => Vec::new(),
    }
}

/// `ValidateLabels`: each key a qualified name, each value a label value; both name the
/// labels as a whole.
fn labels_errors(obj: &Value) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    for (key, value) in string_map(obj, "labels") {
        for why in qualified_name_errors(key) {
            errs.push(("metadata.labels".to_owned(), invalid(key, &why)));
        }
        let value = value.as_str().unwrap_or("");
        for why in label_value_errors(value) {
            errs.push(("metadata.labels".to_owned(), invalid(value, &why)));
        }
    }
    errs
}

/// `ValidateAnnotations`: keys qualified names (checked lower-cased, as upper case is allowed
/// in them), keys and values at most 256 KiB together.
fn annotation_errors(obj: &Value) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let mut size = 0;
    for (key, value) in string_map(obj, "annotations") {
        for why in qualified_name_errors(&key.to_lowercase()) {
            errs.push(("metadata.annotations".to_owned(), invalid(key, &why)));
        }
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_LIMIT {
        errs.push((
            "metadata.annotations".to_owned(),
            format!("Too long: may not be more than {ANNOTATIONS_LIMIT} bytes"),
        ));
    }
    errs
}

/// An owner reference as Go's `%#v` prints a `v1.OwnerReference`.
fn go_owner_reference(r: &Value) -> String {
    let text = |f: &str| crate::go_print::go_quote(r.get(f).and_then(Value::as_str).unwrap_or(""));
    let flag = |f: &str| match r.get(f).and_then(Value::as_bool) {
        // A set pointer prints as its address, which no client can know.
        Some(_) => "(*bool)(0x…)".to_owned(),
        None => "(*bool)(nil)".to_owned(),
    };
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        text("apiVersion"),
        text("kind"),
        text("name"),
        text("uid"),
        flag("controller"),
        flag("blockOwnerDeletion")
    )
}

/// `ValidateOwnerReferences`: each reference names a version, a kind, a name and a uid, and no
/// core/v1 Event (`BannedOwners`); at most one is the controller.
fn owner_reference_errors(obj: &Value) -> Vec<(String, String)> {
    const FIELD: &str = "metadata.ownerReferences";
    let Some(refs) = obj.pointer("/metadata/ownerReferences").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
        // `schema.FromAPIVersionAndKind`: the version is what follows the last '/', the whole
        // text without one.
        let api_version = text("apiVersion");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        if version.is_empty() {
            errs.push((format!("{FIELD}.apiVersion"), invalid(api_version, "version must not be empty")));
        }
        for (f, what) in [("kind", "kind"), ("name", "name"), ("uid", "uid")] {
            if text(f).is_empty() {
                errs.push((format!("{FIELD}.{f}"), invalid("", &format!("{what} must not be empty"))));
            }
        }
        if group.is_empty() && version == "v1" && text("kind") == "Event" {
            errs.push((
                FIELD.to_owned(),
                format!(
                    "Invalid value: {}: /v1, Kind=Event is disallowed from being an owner",
                    go_owner_reference(r)
                ),
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(go_owner_reference).collect();
                    errs.push((
                        FIELD.to_owned(),
                        format!(
                            "Invalid value: []v1.OwnerReference{{{}}}: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}",
                            all.join(", ")
                        ),
                    ));
                }
                None => first_controller = Some(this),
            }
        }
    }
    errs
}

/// Whose rules an object's metadata is held to: the in-tree API's (a built-in kind's) add
/// `validateKubeFinalizerName` to apimachinery's; a custom resource is held to apimachinery's
/// alone, an unqualified finalizer being only warned of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rules {
    /// A built-in kind's.
    InTree,
    /// A custom resource's (or an embedded resource's in its schema).
    Apimachinery,
}

/// `ValidateFinalizers` (on create only) with, under the in-tree rules, `validateKubeFinalizerName`
/// (on create and update): qualified names, not both `orphan` and `foregroundDeletion`, and an
/// unqualified one only when it is standard.
fn finalizer_errors(obj: &Value, create: bool, rules: Rules) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let finalizers: Vec<String> = crate::object_meta::finalizers(obj);
    for f in finalizers.iter().filter(|_| create) {
        for why in qualified_name_errors(f) {
            errs.push(("metadata.finalizers".to_owned(), invalid(f, &why)));
        }
    }
    if create
        && finalizers.iter().any(|f| f == "orphan")
        && finalizers.iter().any(|f| f == "foregroundDeletion")
    {
        let list = finalizers.iter().map(|f| crate::go_print::go_quote(f)).collect::<Vec<_>>().join(", ");
        errs.push((
            "metadata.finalizers".to_owned(),
            format!(
                "Invalid value: []string{{{list}}}: finalizer orphan and foregroundDeletion cannot be both set"
            ),
        ));
    }
    for (i, f) in finalizers.iter().enumerate().filter(|_| rules == Rules::InTree) {
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            errs.push((
                format!("metadata.finalizers[{i}]"),
                invalid(f, "name is neither a standard finalizer name nor is it fully qualified"),
            ));
        }
    }
    errs
}

/// Go's `unicode.IsPrint`, as near as the standard library tells: no control, format or
/// private-use character, and no space but the ASCII one.
fn go_printable(c: char) -> bool {
    let format = matches!(
        c,
        '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
            | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
    );
    let private = matches!(c, '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..);
    c == ' ' || !(c.is_control() || c.is_whitespace() || format || private)
}

/// Go's `%#U` of a character that is not printable: `U+0007`.
fn go_sharp_u(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// `ValidateManagedFields` (with `ValidateFieldManager`): each entry an `Apply` or an
/// `Update`, of `FieldsV1` when a type is given, by a manager of at most 128 printable
/// characters, for a subresource of at most 256 bytes.
fn managed_fields_errors(obj: &Value) -> Vec<(String, String)> {
    let Some(entries) = obj.pointer("/metadata/managedFields").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let at = format!("metadata.managedFields[{i}]");
        let text = |f: &str| e.get(f).and_then(Value::as_str).unwrap_or("");
        let operation = text("operation");
        if !matches!(operation, "Apply" | "Update") {
            errs.push((format!("{at}.operation"), invalid(operation, "must be `Apply` or `Update`")));
        }
        let fields_type = text("fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errs.push((format!("{at}.fieldsType"), invalid(fields_type, "must be `FieldsV1`")));
        }
        let manager = text("manager");
        if manager.len() > FIELD_MANAGER_LIMIT {
            errs.push((
                format!("{at}.manager"),
                format!("Too long: may not be more than {FIELD_MANAGER_LIMIT} bytes"),
            ));
        }
        for (pos, c) in manager.char_indices() {
            if !go_printable(c) {
                errs.push((
                    format!("{at}.manager"),
                    invalid(manager, &format!("invalid character {} (at position {pos})", go_sharp_u(c))),
                ));
            }
        }
        if text("subresource").len() > SUBRESOURCE_LIMIT {
            errs.push((
                format!("{at}.subresource"),
                format!("Too long: may not be more than {SUBRESOURCE_LIMIT} bytes"),
            ));
        }
    }
    errs
}

/// The metadata's field errors, as `(field, message)` in upstream's order
/// (`validateObjectMetaAccessorWithOptsCommon`): generation, labels, annotations, owner
/// references, finalizers, managed fields.
#[must_use]
pub fn validate(obj: &Value, rules: Rules) -> Vec<(String, String)> {
    let mut errs = generation_errors(obj);
    errs.extend(labels_errors(obj));
    errs.extend(annotation_errors(obj));
    errs.extend(owner_reference_errors(obj));
    errs.extend(finalizer_errors(obj, true, rules));
    errs.extend(managed_fields_errors(obj));
    errs
}

/// The metadata's field errors on update, in upstream's order (`ValidateObjectMetaAccessorUpdate`
/// and the in-tree API's `ValidateObjectMetaUpdate`): labels, annotations, owner references,
/// managed fields, then the unqualified finalizers that are not standard — the other finalizer
/// rules are for a new object only. The rules on what the stored object fixes are the store's.
#[must_use]
pub fn validate_update(obj: &Value, rules: Rules) -> Vec<(String, String)> {
    let mut errs = labels_errors(obj);
    errs.extend(annotation_errors(obj));
    errs.extend(owner_reference_errors(obj));
    errs.extend(managed_fields_errors(obj));
    errs.extend(finalizer_errors(obj, false, rules));
    errs
}

/// The warnings of finalizers `new` adds to `old` (all of them on a create) whose names a custom
/// resource may carry but should not (apiextensions' `generateWarningsFromObj`): what is not a
/// qualified name, and an unqualified name that is not standard. In name order.
#[must_use]
pub fn finalizer_warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    let before = old.map(crate::object_meta::finalizers).unwrap_or_default();
    let mut added: Vec<String> =
        crate::object_meta::finalizers(new).into_iter().filter(|f| !before.contains(f)).collect();
    added.sort();
    added.dedup();
    let mut warnings = Vec::new();
    for f in added {
        let quoted = crate::go_print::go_quote(&f);
        for why in qualified_name_errors(&f) {
            warnings.push(format!("metadata.finalizers: {quoted}: {why}"));
        }
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            warnings.push(format!(
                "metadata.finalizers: {quoted}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn qualified_names_as_upstream_words_them() {
        assert!(qualified_name_errors("example.com/my-finalizer").is_empty());
        assert!(qualified_name_errors("app.kubernetes.io/name").is_empty());
        assert_eq!(qualified_name_errors("/x"), ["prefix part must be non-empty"]);
        assert_eq!(
            qualified_name_errors("a/"),
            [
                "name part must be non-empty",
                &format!(
                    "name part {}",
                    regex_error(
                        QUALIFIED_NAME_SHAPE,
                        QUALIFIED_NAME_REGEX,
                        &["MyName", "my.name", "123-abc"]
                    )
                )
            ]
        );
        assert!(qualified_name_errors("a/b/c")[0].starts_with("a qualified name must consist of"));
        assert!(
            qualified_name_errors("Bad_Prefix/x")[0]
                .starts_with("prefix part a lowercase RFC 1123 subdomain")
        );
        assert_eq!(qualified_name_errors(&"x".repeat(64)), ["name part must be no more than 63 characters"]);
    }

    #[test]
    fn metadata_errors_name_the_field() {
        let obj = json!({ "metadata": {
            "labels": { "ok": "fine", "bad key!": "v", "k": "-bad-value" },
            "annotations": { "Example.com/Note": "upper case is fine in annotation keys" },
            "finalizers": ["example.com/ok", "cleanup", "orphan", "foregroundDeletion"],
        } });
        let fields: Vec<String> = validate(&obj, Rules::InTree).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            ["metadata.labels", "metadata.labels", "metadata.finalizers", "metadata.finalizers[1]"]
        );
        // A custom resource may carry `cleanup`: it is warned of, not refused.
        let fields: Vec<String> = validate(&obj, Rules::Apimachinery).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["metadata.labels", "metadata.labels", "metadata.finalizers"]);
        assert_eq!(
            finalizer_warnings(&obj, Some(&json!({ "metadata": { "finalizers": ["orphan"] } }))),
            [
                "metadata.finalizers: \"cleanup\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            ]
        );
    }

    #[test]
    fn owner_references_and_managed_fields_as_upstream_words_them() {
        let obj = json!({ "metadata": {
            "ownerReferences": [
                { "apiVersion": "v1", "kind": "Event", "name": "ev", "uid": "" },
                { "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "u1", "controller": true },
                { "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "u2", "controller": true },
            ],
            "managedFields": [{ "manager": "m\u{7}", "operation": "Patch" }],
        } });
        let got = validate(&obj, Rules::InTree);
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.ownerReferences.uid",
                "metadata.ownerReferences",
                "metadata.ownerReferences",
                "metadata.managedFields[0].operation",
                "metadata.managedFields[0].manager",
            ]
        );
        assert_eq!(got[0].1, "Invalid value: \"\": uid must not be empty");
        assert!(got[1].1.ends_with("UID:\"\", Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}: /v1, Kind=Event is disallowed from being an owner"));
        assert!(got[2].1.ends_with("Found \"true\" in references for ReplicaSet/a and ReplicaSet/b"));
        assert_eq!(got[4].1, "Invalid value: \"m\\a\": invalid character U+0007 (at position 1)");
    }

    #[test]
    fn an_update_checks_only_the_in_tree_finalizer_rule() {
        let obj =
            json!({ "metadata": { "finalizers": ["a/b/c", "orphan", "foregroundDeletion", "custom"] } });
        let fields: Vec<String> = validate_update(&obj, Rules::InTree).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["metadata.finalizers[3]"]);
        assert_eq!(validate(&obj, Rules::InTree).len(), 3);
    }

    #[test]
    fn printable_as_go_says() {
        assert!(go_printable('a') && go_printable(' ') && go_printable('é'));
        assert!(!go_printable('\u{7}') && !go_printable('\u{a0}') && !go_printable('\u{200b}'));
    }

    #[test]
    fn names() {
        assert!(check_subdomain("web-1.example").is_none());
        assert!(check_subdomain("Web").is_some());
        assert!(check_subdomain("-web").is_some());
        assert!(check_label("kube-system").is_none());
        assert!(check_label("a.b").is_some());
        assert!(check_label(&"a".repeat(64)).is_some());
        assert_eq!(check_label("bad.name").as_deref(), Some("must not contain dots"));
    }
}
