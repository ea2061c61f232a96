//! Continue tokens, encoded as upstream's storage encodes them — URL-safe base64 of
//! `{"v":"meta.k8s.io/v1","rv":…,"start":…}` — so that a client's token reads as a real server's
//! and a token that is not one is refused in upstream's words (`DecodeContinue`). The start key
//! is the sandbox's own: the list snapshot it continues and the offset in it.

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::status::ApiError;

/// The token for page `offset` onwards of snapshot `id`, taken at version `rv`.
pub(super) fn encode(id: u64, offset: usize, rv: u64) -> String {
    URL_SAFE_NO_PAD
        .encode(json!({ "v": "meta.k8s.io/v1", "rv": rv, "start": format!("{id}/{offset}") }).to_string())
}

/// The snapshot and offset a token names.
///
/// # Errors
///
/// 400 `invalid continue token: …` as the etcd3 store words it: not base64, not JSON, an
/// encoding version it does not know, or a start it did not write.
pub(super) fn decode(token: &str) -> Result<(u64, usize), ApiError> {
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
    if c.get("rv").and_then(Value::as_i64).unwrap_or(0) == 0 {
        return Err(refuse("incorrect encoded start resourceVersion (version meta.k8s.io/v1)".to_owned()));
    }
    let start = c.get("start").and_then(Value::as_str).unwrap_or("");
    if start.is_empty() {
        return Err(refuse("encoded start key empty (version meta.k8s.io/v1)".to_owned()));
    }
    start
        .split_once('/')
        .and_then(|(id, offset)| Some((id.parse().ok()?, offset.parse().ok()?)))
        .ok_or_else(|| invalid(format!("start key {start:?} was not written by this server")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused_as_upstream() {
        assert_eq!(decode(&encode(7, 500, 42)).unwrap(), (7, 500));
        let e = decode("garbage").unwrap_err();
        assert_eq!(
            e.message,
            "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value"
        );
        assert!(decode("!!").unwrap_err().message.contains("illegal base64 data at input byte 0"));
    }
}
