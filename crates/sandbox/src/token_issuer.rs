//! The service account token issuer: the key that signs the tokens `serviceaccounts/<name>/token`
//! hands out, and the two documents that let anyone verify them without asking the API server
//! (`/.well-known/openid-configuration` and `/openid/v1/jwks`, upstream's service account
//! issuer discovery).
//!
//! Tokens are JWTs signed as upstream signs them by default: RS256, with a `kid` header naming
//! the key (the SHA-256 of its DER-encoded public key, base64url, as `keyIDFromPublicKey`). The
//! key is an RSA 2048-bit key made the first time a token is signed or verified, once per
//! process; it is kept in memory only, so a token from one process does not verify in another.
//!
//! [`crate::actions`] signs the claims and checks what they name (the account, its uid, the
//! expiry); this module knows only the key and the JWT's compact form.

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, RsaKeyPair};
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey};
use rsa::traits::PublicKeyParts;
use serde_json::{Value, json};

/// The issuer of service account tokens (`--service-account-issuer`), and their default audience.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The only algorithm the issuer signs with.
const ALGORITHM: &str = "RS256";

/// The process's signing key, its key ID and its public half as a JSON Web Key.
struct Key {
    pair: RsaKeyPair,
    kid: String,
    jwk: Jwk,
}

/// A public key as go-jose writes it into a key set, fields in its order.
#[derive(serde::Serialize)]
struct Jwk {
    #[serde(rename = "use")]
    usage: &'static str,
    kty: &'static str,
    kid: String,
    alg: &'static str,
    n: String,
    e: String,
}

/// The discovery document, fields in upstream's order (`openIDMetadata`).
#[derive(serde::Serialize)]
struct Discovery<'a> {
    issuer: &'a str,
    jwks_uri: String,
    response_types_supported: [&'a str; 1],
    subject_types_supported: [&'a str; 1],
    id_token_signing_alg_values_supported: [&'a str; 1],
}

/// The process's key, made on first use.
fn key() -> &'static Key {
    static KEY: OnceLock<Key> = OnceLock::new();
    KEY.get_or_init(|| {
        let private = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("the system's randomness");
        let pkcs8 = private.to_pkcs8_der().expect("an RSA key encodes as PKCS#8");
        let pair = RsaKeyPair::from_pkcs8(pkcs8.as_bytes()).expect("a 2048-bit key with exponent 65537");
        let public = private.to_public_key();
        let spki = public.to_public_key_der().expect("an RSA public key encodes as SPKI");
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, spki.as_bytes()));
        let unsigned = |n: Vec<u8>| {
            let first = n.iter().position(|b| *b != 0).unwrap_or(n.len());
            URL_SAFE_NO_PAD.encode(&n[first..])
        };
        let jwk = Jwk {
            usage: "sig",
            kty: "RSA",
            kid: kid.clone(),
            alg: ALGORITHM,
            n: unsigned(public.n().to_be_bytes().into_vec()),
            e: unsigned(public.e().to_be_bytes().into_vec()),
        };
        Key { pair, kid, jwk }
    })
}

/// `claims` as a compact JWS: `{"alg":"RS256","kid":…}`, the claims, the signature.
pub(crate) fn sign(claims: &Value) -> String {
    let key = key();
    let header = json!({ "alg": ALGORITHM, "kid": key.kid });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut sig = vec![0; key.pair.public().modulus_len()];
    key.pair
        .sign(&signature::RSA_PKCS1_SHA256, &SystemRandom::new(), input.as_bytes(), &mut sig)
        .expect("signing with a valid key");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

/// The claims of `token` when this process's key signed it with RS256 (a token naming another
/// algorithm or key ID is not this issuer's, whatever its signature).
pub(crate) fn verify(token: &str) -> Option<Value> {
    let (input, sig) = token.rsplit_once('.')?;
    let (header, payload) = input.split_once('.')?;
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    let key = key();
    if header.get("alg").and_then(Value::as_str) != Some(ALGORITHM)
        || header.get("kid").is_some_and(|kid| kid.as_str() != Some(&key.kid))
    {
        return None;
    }
    let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
    signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, key.pair.public().as_ref())
        .verify(input.as_bytes(), &sig)
        .ok()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

/// `/.well-known/openid-configuration`: the issuer, where its keys are (`host` is the API
/// server's address as the client reached it, as upstream uses its external address when no
/// `--service-account-jwks-uri` is given), and what it signs with. As upstream's, written by
/// `json.Marshal`: Go's field order, no newline at the end.
pub(crate) fn openid_configuration(host: &str) -> Vec<u8> {
    let doc = Discovery {
        issuer: ISSUER,
        jwks_uri: format!("https://{host}/openid/v1/jwks"),
        response_types_supported: ["id_token"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: [ALGORITHM],
    };
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// `/openid/v1/jwks`: the public key tokens verify with, as a JSON Web Key Set, written as
/// [`openid_configuration`] is.
pub(crate) fn jwks() -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Set<'a> {
        keys: [&'a Jwk; 1],
    }
    serde_json::to_vec(&Set { keys: [&key().jwk] }).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(token: &str, i: usize) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').nth(i).unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn a_signed_token_verifies_and_a_changed_one_does_not() {
        let token = sign(&json!({ "sub": "system:serviceaccount:default:app" }));
        assert_eq!(verify(&token).unwrap()["sub"], "system:serviceaccount:default:app");
        let (head, _) = token.rsplit_once('.').unwrap();
        let forged = format!("{head}.{}", URL_SAFE_NO_PAD.encode([0u8; 256]));
        assert!(verify(&forged).is_none());
        assert!(verify("not-a-token").is_none());
    }

    #[test]
    fn a_token_names_its_key_and_the_key_set_holds_it() {
        let token = sign(&json!({}));
        let header = part(&token, 0);
        assert_eq!(header["alg"], "RS256");
        let set: Value = serde_json::from_slice(&jwks()).unwrap();
        let jwk = &set["keys"][0];
        assert_eq!(header["kid"], jwk["kid"]);
        assert_eq!((jwk["kty"].as_str(), jwk["e"].as_str()), (Some("RSA"), Some("AQAB")));
        // A 2048-bit modulus, without a leading zero: 256 bytes, 342 base64url characters.
        assert_eq!(jwk["n"].as_str().map(str::len), Some(342));
    }

    #[test]
    fn another_algorithm_or_key_id_is_not_this_issuers() {
        let token = sign(&json!({ "sub": "x" }));
        let (_, rest) = token.split_once('.').unwrap();
        for header in [json!({ "alg": "ES256", "kid": key().kid }), json!({ "alg": "RS256", "kid": "other" })]
        {
            let changed = format!("{}.{rest}", URL_SAFE_NO_PAD.encode(header.to_string()));
            assert!(verify(&changed).is_none(), "{header}");
        }
    }

    #[test]
    fn the_discovery_document_points_at_the_key_set() {
        let doc = String::from_utf8(openid_configuration("127.0.0.1:6443")).unwrap();
        assert_eq!(
            doc,
            r#"{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://127.0.0.1:6443/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["RS256"]}"#
        );
        assert!(
            String::from_utf8(jwks()).unwrap().starts_with(r#"{"keys":[{"use":"sig","kty":"RSA","kid":""#)
        );
    }
}
