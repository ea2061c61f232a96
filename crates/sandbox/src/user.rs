//! Who makes a request: upstream's `user.Info`, as the authenticator finds it and as the reviews
//! and the authorizer read it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of a request without credentials (RBAC on).
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The superuser group: allowed everything, whatever the bindings say.
pub const MASTERS: &str = "system:masters";
/// The user name of a request without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The prefix of a service account's user name, `system:serviceaccount:<ns>:<name>`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// A user as the API server knows it: name, uid, groups and extra attributes.
///
/// ```
/// use kube_sandbox::UserInfo;
/// let sa = UserInfo::service_account("shop", "builder");
/// assert_eq!(sa.name, "system:serviceaccount:shop:builder");
/// assert!(sa.groups.contains(&"system:serviceaccounts:shop".to_owned()));
/// assert_eq!(sa.as_service_account(), Some(("shop", "builder")));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (`alice`, `system:serviceaccount:ns:name`).
    pub name: String,
    /// A unique id, when the authenticator knows one (a service account's uid).
    pub uid: String,
    /// The groups the user is in.
    pub groups: Vec<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id`, an impersonator's extras).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user named `name` in `groups`, and in `system:authenticated` as every user a token
    /// names is.
    #[must_use]
    pub fn new(name: impl Into<String>, groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut groups: Vec<String> = groups.into_iter().map(Into::into).collect();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_owned());
        }
        Self { name: name.into(), groups, ..Self::default() }
    }

    /// The sandbox's administrator: the user of its own token and of in-process clients.
    #[must_use]
    pub fn admin() -> Self {
        Self::new("sandbox-admin", [MASTERS])
    }

    /// Service account `name` of namespace `ns`, with the groups upstream's token authenticator
    /// gives it.
    #[must_use]
    pub fn service_account(ns: &str, name: &str) -> Self {
        Self::new(
            format!("{SERVICE_ACCOUNT_PREFIX}{ns}:{name}"),
            ["system:serviceaccounts".to_owned(), format!("system:serviceaccounts:{ns}")],
        )
    }

    /// A request without credentials.
    #[must_use]
    pub fn anonymous() -> Self {
        Self { name: ANONYMOUS.to_owned(), groups: vec![UNAUTHENTICATED.to_owned()], ..Self::default() }
    }

    /// The namespace and name of the service account this user is, if it is one.
    #[must_use]
    pub fn as_service_account(&self) -> Option<(&str, &str)> {
        let rest = self.name.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
        rest.split_once(':').filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'))
    }

    /// Whether the user is in `group`.
    #[must_use]
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// As a review's `userInfo` (authentication.k8s.io/v1 `UserInfo`): empty fields left out.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "username": self.name });
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            v["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }
}
