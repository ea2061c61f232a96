//! Continue tokens, encoded as upstream's storage encodes them — URL-safe base64 of
//! `{"v":"meta.k8s.io/v1","rv":…,"start":…}` — so that a client's token reads as a real server's
//! and a token that is not one is refused in upstream's words (`DecodeContinue`). The start key
//! is the sandbox's own: the list snapshot it continues, the offset in it, and the key of the last
//! object the page before gave (what a token whose snapshot expired continues from, as upstream
//! continues a list whose revision was compacted away: at the latest version, `rv` -1).

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::status::ApiError;

/// Where a token continues a list.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Continue {
    /// At `offset` in snapshot `id`, whose page before ended at `after`.
    Snapshot { id: u64, offset: usize, after: String },
    /// After the key `after`, at the latest version: the token of an expired snapshot.
    Latest { after: String },
}

/// The token for page `offset` onwards of snapshot `id`, taken at version `rv`; `after` is the
/// key (`name`, or `namespace/name` across namespaces) of the last object already given.
pub(super) fn encode(id: u64, offset: usize, rv: u64, after: &str) -> String {
    token(json!({ "v": "meta.k8s.io/v1", "rv": rv, "start": format!("{id}/{offset}/{after}\u{0}") }))
}

/// The token that continues after `after` at the latest version (upstream's `rv` -1), which a
/// 410 for an expired token carries.
pub(super) fn encode_latest(after: &str) -> String {
    token(json!({ "v": "meta.k8s.io/v1", "rv": -1, "start": format!("{after}\u{0}") }))
}

fn token(content: Value) -> String {
    URL_SAFE_NO_PAD.encode(content.to_string())
}

/// The snapshot and offset a token names.
///
/// # Errors
///
/// 400 `invalid continue token: …` as the etcd3 store words it: not base64, not JSON, an
/// encoding version it does not know, or a start it did not write.
pub(super) fn decode(token: &str) -> Result<Continue, ApiError> {
    let refuse = |why: String| ApiError::bad_request(format!("invalid continue token: {why}"));
    let invalid = |why: String| refuse(format!("continue key is not valid: {why}"));
    // Go's `RawURLEncoding` is not strict: bits left over in the last character are ignored.
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireNone),
    );
    let data = LENIENT.decode(token).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
            _ => token.len().saturating_sub(1),
        };
        invalid(format!("illegal base64 data at input byte {at}"))
    })?;
    if let Some(why) = crate::gojson::syntax_error(&data) {
        return Err(invalid(why));
    }
    let c: Value = serde_json::from_slice(&data).map_err(|e| invalid(e.to_string()))?;
    match c.get("v").and_then(Value::as_str).unwrap_or("") {
        "meta.k8s.io/v1" => {}
        other => {
            return Err(refuse(format!(
                "continue key is not valid server does not recognize this encoded version {other:?}"
            )));
        }
    }
    let rv = c.get("rv").and_then(Value::as_i64).unwrap_or(0);
    if rv == 0 {
        return Err(refuse("incorrect encoded start resourceVersion (version meta.k8s.io/v1)".to_owned()));
    }
    let start = c.get("start").and_then(Value::as_str).unwrap_or("");
    if start.is_empty() {
        return Err(refuse("encoded start key empty (version meta.k8s.io/v1)".to_owned()));
    }
    let not_ours = || invalid(format!("start key {start:?} was not written by this server"));
    let key = start.strip_suffix('\u{0}').ok_or_else(not_ours)?;
    if rv == -1 {
        return Ok(Continue::Latest { after: key.to_owned() });
    }
    let (id, rest) = key.split_once('/').ok_or_else(not_ours)?;
    let (offset, after) = rest.split_once('/').ok_or_else(not_ours)?;
    let (id, offset) = id.parse().ok().zip(offset.parse().ok()).ok_or_else(not_ours)?;
    Ok(Continue::Snapshot { id, offset, after: after.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused_as_upstream() {
        assert_eq!(
            decode(&encode(7, 500, 42, "ns/pod-0499")).unwrap(),
            Continue::Snapshot { id: 7, offset: 500, after: "ns/pod-0499".into() }
        );
        assert_eq!(
            decode(&encode_latest("pod-0499")).unwrap(),
            Continue::Latest { after: "pod-0499".into() }
        );
        let e = decode("garbage").unwrap_err();
        assert_eq!(
            e.message,
            "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value"
        );
        assert!(decode("!!").unwrap_err().message.contains("illegal base64 data at input byte 0"));
    }
}
