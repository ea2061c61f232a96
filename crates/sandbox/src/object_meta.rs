//! Reading and stamping an object's metadata, as the store and the strategies do on every
//! write: its fields (`metadata.<field>`, finalizers, owner references, deletion), the values the
//! API server stamps (uid, `generateName` suffix, timestamps), and the two field helpers the
//! kinds' defaults are written with. The rules metadata must follow are in [`crate::metadata`].

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
}
