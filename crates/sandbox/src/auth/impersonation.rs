//! Impersonation (`Impersonate-User`, `-Uid`, `-Group`, `-Extra-<key>`), upstream's
//! `WithImpersonation` filter: a request may act as another user when its own user is allowed
//! the `impersonate` verb on each thing it asks to be — the user (or service account), each
//! group, the uid, each extra value.

use http::HeaderMap;

use super::{Auth, Authorization, forbidden};
use crate::access::Attributes;
use crate::status::ApiError;
use crate::store::Store;
use crate::user::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo};

/// The user `requester` acts as: itself without impersonation headers, else the one they name
/// once every part of it is authorized.
///
/// # Errors
///
/// 500 for groups, uid or extras asked without a user (as upstream answers it); 403 for a part
/// the requester may not impersonate.
pub(super) fn acting_as(
    auth: &Auth,
    store: &Store,
    requester: UserInfo,
    headers: &HeaderMap,
    path: &str,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
    };
    let user = values("impersonate-user").into_iter().next();
    let uid = values("impersonate-uid").into_iter().next();
    let groups = values("impersonate-group");
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-") {
            let key = percent_decoded(key);
            extra.entry(key).or_default().extend(value.to_str().ok().map(str::to_owned));
        }
    }
    let Some(user) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::internal(format!(
            "Internal Server Error: {path:?}: requested impersonation of groups, a uid or extra attributes without impersonating a user"
        )));
    };
    // What must be allowed, each as an `impersonate` of its resource.
    let mut asked: Vec<(&str, &str, String, String, String)> = Vec::new();
    let mut acting = UserInfo { name: user.clone(), groups: groups.clone(), ..UserInfo::default() };
    match acting.as_service_account().map(|(ns, name)| (ns.to_owned(), name.to_owned())) {
        Some((ns, name)) => {
            asked.push(("", "serviceaccounts", String::new(), ns.clone(), name.clone()));
            if groups.is_empty() {
                acting.groups = UserInfo::service_account(&ns, &name).groups;
                acting.groups.retain(|g| g != AUTHENTICATED);
            }
        }
        None => asked.push(("", "users", String::new(), String::new(), user.clone())),
    }
    for g in &groups {
        asked.push(("", "groups", String::new(), String::new(), g.clone()));
    }
    if let Some(uid) = &uid {
        asked.push(("authentication.k8s.io", "uids", String::new(), String::new(), uid.clone()));
        acting.uid.clone_from(uid);
    }
    for (key, values) in &extra {
        for v in values {
            asked.push(("authentication.k8s.io", "userextras", key.clone(), String::new(), v.clone()));
        }
    }
    if auth.mode == Authorization::Rbac {
        let index = auth.rbac_index(store);
        for (group, resource, subresource, namespace, name) in asked {
            let attrs = Attributes {
                user: requester.clone(),
                verb: "impersonate".to_owned(),
                resource_request: true,
                group: group.to_owned(),
                resource: resource.to_owned(),
                subresource,
                namespace,
                name,
                ..Attributes::default()
            };
            let decision = super::rbac::authorize(&index, &attrs);
            if !decision.allowed() {
                return Err(forbidden(&attrs, decision.reason()));
            }
        }
    }
    acting.extra = extra;
    let always = if acting.name == ANONYMOUS { UNAUTHENTICATED } else { AUTHENTICATED };
    if !acting.in_group(always) {
        acting.groups.push(always.to_owned());
    }
    Ok(acting)
}

/// A header name's `%XX` escapes decoded (an extra's key may hold characters a header name cannot).
fn percent_decoded(key: &str) -> String {
    // A form decodes `+` as a space; a path segment (upstream's `url.PathUnescape`) does not.
    form_urlencoded::parse(format!("k={}", key.replace('+', "%2B")).as_bytes())
        .next()
        .map_or_else(|| key.to_owned(), |(_, v)| v.into_owned())
}
