//! Small helpers over JSON objects: metadata fields, names, uids and timestamps.

use serde_json::{Map, Value, json};

/// `metadata.<field>` as a string, or `""`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// `metadata`, created if missing (the object must be a JSON object).
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"].as_object_mut().expect("metadata is an object")
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The uids named by `metadata.ownerReferences`.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// The current time as `metav1.Time` (RFC 3339, seconds).
pub fn now_rfc3339() -> String {
    rfc3339(jiff::Timestamp::now())
}

/// `t` as `metav1.Time` writes it: RFC 3339 in whole seconds, the fraction cut off (Go's
/// formatting truncates; rounding up would put a time in the future).
pub fn rfc3339(t: jiff::Timestamp) -> String {
    let cut = jiff::TimestampRound::new().smallest(jiff::Unit::Second).mode(jiff::RoundMode::Trunc);
    t.round(cut).map(|t| t.to_string()).unwrap_or_default()
}

/// A random RFC 4122 version-4 uid.
pub fn new_uid() -> String {
    let mut b: [u8; 16] = fastrand::u128(..).to_le_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The five-character suffix the API server appends to `generateName`.
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char).collect()
}

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
    (!errs.is_empty()).then(|| errs.join(", "))
}

/// Checks a DNS-1123 label (namespace and container names), as `IsDNS1123Label`.
pub fn check_label(name: &str) -> Option<String> {
    let mut errs = Vec::new();
    if name.len() > 63 {
        errs.push("must be no more than 63 characters".to_owned());
    }
    if !label_shaped(name) {
        errs.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            LABEL_REGEX,
            &["my-name", "123-abc"],
        ));
    }
    (!errs.is_empty()).then(|| errs.join(", "))
}

/// Checks a DNS-1035 label (a Service's name, `ValidateServiceName`), as `IsDNS1035Label`.
pub fn check_dns1035(name: &str) -> Option<String> {
    let errs = crate::kinds::crd::validation::dns1035_errors(name);
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

/// Sets `obj[key]` to `value` when it is absent or null (a default).
pub(crate) fn set_default(obj: &mut Map<String, Value>, key: &str, value: Value) {
    if obj.get(key).is_none_or(Value::is_null) {
        obj.insert(key.to_owned(), value);
    }
}

/// `obj[key]`, made an object if it is not one.
pub(crate) fn object_at<'a>(v: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !v.get(key).is_some_and(Value::is_object) {
        v[key] = json!({});
    }
    v[key].as_object_mut().expect("just made an object")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_v4_shaped() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, new_uid());
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
