//! Bearer token authentication: the tokens the sandbox accepts, and who each one is.

use std::io;

use serde_json::Value;

use super::{Auth, Authorization, UserInfo};
use crate::object_meta::meta_str;
use crate::resource::Subresource;
use crate::status::ApiError;
use crate::store::Store;
use crate::token_issuer::verify;

/// Who the `Authorization` header `header` is: the user of a token the sandbox issued (its
/// servers' own tokens are its administrator's), the service account of a live service account
/// token; `system:anonymous` for no header under RBAC (kube-apiserver's
/// anonymous authentication).
///
/// # Errors
///
/// 401 for a token the sandbox does not know, or none where every request is allowed (the
/// sandbox lets nobody in anonymously who would then be allowed everything).
pub(crate) fn authenticate(auth: &Auth, store: &Store, header: &str) -> Result<UserInfo, ApiError> {
    if header.is_empty() && auth.mode == Authorization::Rbac {
        return Ok(UserInfo::anonymous());
    }
    let token = header.strip_prefix("Bearer ").ok_or_else(ApiError::unauthorized)?;
    token_user(auth, store, token).map_err(|_| ApiError::unauthorized())
}

/// The user `token` authenticates, or the token authenticator's reason (what a TokenReview
/// reports).
///
/// # Errors
///
/// Why the token is not accepted.
pub(crate) fn token_user(auth: &Auth, store: &Store, token: &str) -> Result<UserInfo, &'static str> {
    if let Some(user) = auth.issued(token) {
        return Ok(user);
    }
    let claims = service_account_token(store, token)?;
    let claim = |k: &str| claims.pointer(k).and_then(Value::as_str).unwrap_or("");
    let mut user = UserInfo::service_account(
        claim("/kubernetes.io/namespace"),
        claim("/kubernetes.io/serviceaccount/name"),
    );
    claim("/kubernetes.io/serviceaccount/uid").clone_into(&mut user.uid);
    Ok(user)
}

/// A random bearer token from the operating system's randomness.
#[must_use]
pub fn new_token() -> String {
    let mut bytes = [0u8; 24];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| io::Read::read_exact(&mut f, &mut bytes)).is_err()
    {
        // No /dev/urandom (not Linux): fall back to the process RNG, seeded from the clock.
        let mut rng = fastrand::Rng::new();
        rng.fill(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Who a live service account token of this process is: its claims when it is unexpired and
/// names an account that still exists with the uid it was issued for; else why not, in the
/// authenticator's words.
///
/// # Errors
///
/// The TokenReview error: an invalid, expired or orphaned token.
fn service_account_token(store: &Store, token: &str) -> Result<Value, &'static str> {
    let claims = verify(token).ok_or("invalid bearer token")?;
    if claims["exp"].as_i64().is_none_or(|exp| exp <= jiff::Timestamp::now().as_second()) {
        return Err("[invalid bearer token, service account token has expired]");
    }
    let ns = claims.pointer("/kubernetes.io/namespace").and_then(Value::as_str).unwrap_or("");
    let name = claims.pointer("/kubernetes.io/serviceaccount/name").and_then(Value::as_str).unwrap_or("");
    let uid = claims.pointer("/kubernetes.io/serviceaccount/uid").and_then(Value::as_str).unwrap_or("");
    let accounts = crate::catalog::find("", "v1", "serviceaccounts").expect("serviceaccounts are built in");
    match store.get(accounts, ns, name, Subresource::Main) {
        Ok(a) if meta_str(&a, "uid") == uid => Ok(claims),
        _ => Err("[invalid bearer token, service account has been deleted or recreated]"),
    }
}
