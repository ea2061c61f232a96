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
    jiff::Timestamp::now().round(jiff::Unit::Second).map(|t| t.to_string()).unwrap_or_default()
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

/// Checks a DNS-1123 name: at most `max` characters of lowercase alphanumerics and `extra`,
/// starting and ending with an alphanumeric. Returns the reason it is not one.
fn check_dns1123(name: &str, max: usize, extra: &[char], what: &str) -> Option<String> {
    if name.len() > max {
        return Some(format!("must be no more than {max} characters"));
    }
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(&c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    (!ok).then(|| {
        format!("a lowercase RFC 1123 {what}, and must start and end with an alphanumeric character")
    })
}

/// Checks a DNS-1123 subdomain (most object names); returns the reason it is not one.
pub fn check_subdomain(name: &str) -> Option<String> {
    check_dns1123(
        name,
        253,
        &['-', '.'],
        "subdomain must consist of lower case alphanumeric characters, '-' or '.'",
    )
}

/// Checks a DNS-1123 label (namespace names); returns the reason it is not one.
pub fn check_label(name: &str) -> Option<String> {
    check_dns1123(name, 63, &['-'], "label must consist of lower case alphanumeric characters or '-'")
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
