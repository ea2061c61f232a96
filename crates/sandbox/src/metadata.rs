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

/// The metadata's field errors, as `(field, message)` in upstream's order: labels, annotations,
/// finalizers.
#[must_use]
pub fn validate(obj: &Value) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    let invalid = |value: &str, why: &str| format!("Invalid value: {value:?}: {why}");
    for (key, value) in string_map(obj, "labels") {
        for why in qualified_name_errors(key) {
            errs.push(("metadata.labels".to_owned(), invalid(key, &why)));
        }
        let value = value.as_str().unwrap_or("");
        for why in label_value_errors(value) {
            errs.push((format!("metadata.labels[{key}]"), invalid(value, &why)));
        }
    }
    for (key, _) in string_map(obj, "annotations") {
        // Annotation keys are checked lower-cased (upper-case letters are allowed in them).
        for why in qualified_name_errors(&key.to_lowercase()) {
            errs.push(("metadata.annotations".to_owned(), invalid(key, &why)));
        }
    }
    let finalizers: Vec<String> = crate::object_meta::finalizers(obj);
    for f in &finalizers {
        for why in qualified_name_errors(f) {
            errs.push(("metadata.finalizers".to_owned(), invalid(f, &why)));
        }
    }
    if finalizers.iter().any(|f| f == "orphan") && finalizers.iter().any(|f| f == "foregroundDeletion") {
        let list = finalizers.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
        errs.push((
            "metadata.finalizers".to_owned(),
            format!(
                "Invalid value: []string{{{list}}}: finalizer orphan and foregroundDeletion cannot be both set"
            ),
        ));
    }
    for (i, f) in finalizers.iter().enumerate() {
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            errs.push((
                format!("metadata.finalizers[{i}]"),
                invalid(f, "name is neither a standard finalizer name nor is it fully qualified"),
            ));
        }
    }
    errs
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
        let fields: Vec<String> = validate(&obj).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            ["metadata.labels", "metadata.labels[k]", "metadata.finalizers", "metadata.finalizers[1]"]
        );
    }

    #[test]
    fn names() {
        assert!(check_subdomain("web-1.example").is_none());
        assert!(check_subdomain("Web").is_some());
        assert!(check_subdomain("-web").is_some());
        assert!(check_label("kube-system").is_none());
        assert!(check_label("a.b").is_some());
        assert!(check_label(&"a".repeat(64)).is_some());
    }
}
