//! Who a request is and whether it may do what it asks: upstream's authentication,
//! impersonation and authorization filters, which run before any handler.
//!
//! 1. The HTTPS server authenticates the bearer token (`tokens`): the sandbox's own (its
//!    administrator, in `system:masters`), a token [`Sandbox::issue_token`](crate::Sandbox::issue_token)
//!    issued for a user, or a live service account token. In-process clients are the
//!    administrator, or the user [`Sandbox::client_as`](crate::Sandbox::client_as) names.
//! 2. `Impersonate-*` headers make it another user, when it may impersonate it (`impersonation`).
//! 3. The request's attributes are read from its path (`attributes`), and the authorizer the
//!    sandbox was made with decides ([`Authorization`]): every request allowed, by default, or
//!    RBAC (`rbac`) with upstream's bootstrap roles. A refusal is upstream's 403.
//!
//! The user found is the request's from then on: the reviews that ask "who am I" and "may I"
//! answer for it.

pub(crate) mod escalation;
mod impersonation;
pub mod rbac;
mod tokens;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use crate::access::Attributes;
pub use crate::user::UserInfo;
pub use tokens::new_token;
pub(crate) use tokens::{authenticate, token_user};

use crate::status::ApiError;
use crate::store::Store;

/// How the sandbox authorizes requests (kube-apiserver's `--authorization-mode`).
///
/// ```
/// use kube_sandbox::{Authorization, Sandbox, SandboxConfig, UserInfo};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let sandbox = Sandbox::with_config(SandboxConfig { authorization: Authorization::Rbac, ..SandboxConfig::bare() });
/// let alice: kube::Api<ConfigMap> = kube::Api::default_namespaced(sandbox.client_as(UserInfo::new("alice", ["devs"])));
/// let err = alice.list(&Default::default()).await.unwrap_err();
/// assert!(err.to_string().contains(r#"User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#), "{err}");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Authorization {
    /// Every authenticated request is allowed, and every access review says so (`AlwaysAllow`).
    #[default]
    AlwaysAllow,
    /// RBAC, as a cluster enforces it: Roles, ClusterRoles (aggregated ones too) and their
    /// bindings, the bootstrap roles (`cluster-admin`, `admin`, `edit`, `view`, the `system:`
    /// ones), `system:masters` allowed everything. A request without credentials is
    /// `system:anonymous`, allowed what `system:unauthenticated` is bound to.
    Rbac,
}

impl std::str::FromStr for Authorization {
    type Err = String;

    /// kube-apiserver's `--authorization-mode` names: `AlwaysAllow`, `RBAC`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "AlwaysAllow" => Ok(Self::AlwaysAllow),
            "RBAC" => Ok(Self::Rbac),
            other => {
                Err(format!("{other:?} is not an authorization mode the sandbox has (AlwaysAllow or RBAC)"))
            }
        }
    }
}

/// The sandbox's authentication and authorization settings, the tokens it issued, and the
/// RBAC index its authorizer reads.
#[derive(Debug, Default)]
pub(crate) struct Auth {
    pub(crate) mode: Authorization,
    /// Token → the user it authenticates.
    issued: Mutex<HashMap<String, UserInfo>>,
    /// The last index made, with the store and the versions of its last RBAC writes it reflects.
    index: Mutex<Option<(IndexKey, Arc<rbac::Index>)>>,
}

/// A store's identity and the versions of its last write to each RBAC storage.
type IndexKey = (u64, [u64; 4]);

impl Auth {
    pub(crate) fn new(mode: Authorization) -> Self {
        Self { mode, ..Self::default() }
    }

    /// The RBAC objects of `store` as they are now: the index made last, unless one of them was
    /// written since (or `store` is another, a dry run's copy).
    pub(crate) fn rbac_index(&self, store: &Store) -> Arc<rbac::Index> {
        let key = (store.id(), store.last_writes(rbac::STORAGES));
        let mut cached = self.index.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, index)) = cached.as_ref()
            && *at == key
        {
            return Arc::clone(index);
        }
        let index = Arc::new(rbac::Index::of(store));
        *cached = Some((key, Arc::clone(&index)));
        index
    }

    /// A new token that authenticates `user`.
    pub(crate) fn issue(&self, user: UserInfo) -> String {
        let token = tokens::new_token();
        self.accept(token.clone(), user);
        token
    }

    /// Makes `token` authenticate `user` (a server's own token, its administrator).
    pub(crate) fn accept(&self, token: String, user: UserInfo) {
        self.issued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(token, user);
    }

    /// The user an issued token authenticates.
    fn issued(&self, token: &str) -> Option<UserInfo> {
        self.issued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(token).cloned()
    }
}

/// The user the transport authenticated (the HTTPS server's bearer token, or an in-process
/// client's), carried in the request's extensions to [`admit`].
#[derive(Clone, Debug)]
pub(crate) struct Authenticated(pub(crate) UserInfo);

/// The user a request acts as once admitted, in its extensions for the handlers.
#[derive(Clone, Debug)]
pub(crate) struct Requester(pub(crate) UserInfo);

/// The authorizer admission's CEL `authorizer` asks during a request, in its extensions under
/// RBAC (none otherwise: every check allowed): RBAC over the objects the request was authorized
/// against (admission runs under the store's lock, which reading them again would wait for).
#[derive(Clone, Debug)]
pub(crate) struct RequestAuthorizer(pub(crate) crate::invocation::Authorizer);

/// Impersonation and authorization of a request that reached the server: the user it acts as
/// is left in its extensions ([`Requester`]).
///
/// # Errors
///
/// The impersonation's or the authorizer's refusal.
pub(crate) fn admit(auth: &Auth, store: &Store, parts: &mut http::request::Parts) -> Result<(), ApiError> {
    let requester = parts.extensions.remove::<Authenticated>().map_or_else(UserInfo::admin, |a| a.0);
    let user = impersonation::acting_as(auth, store, requester, &parts.headers, parts.uri.path())?;
    if auth.mode == Authorization::Rbac {
        let attrs = Attributes::of(user, &parts.method, parts.uri.path(), parts.uri.query());
        let index = auth.rbac_index(store);
        let decision = rbac::authorize(&index, &attrs);
        if !decision.allowed() {
            return Err(forbidden(&attrs, decision.reason()));
        }
        parts.extensions.insert(Requester(attrs.user));
        parts.extensions.insert(RequestAuthorizer(crate::invocation::Authorizer(Arc::new(move |attrs| {
            let decision = rbac::authorize(&index, attrs);
            (decision.allowed(), decision.reason().to_owned())
        }))));
    } else {
        parts.extensions.insert(Requester(user));
    }
    Ok(())
}

/// What a request's user may do, as an access review asks it: allowed, and why.
pub(crate) fn decide(auth: &Auth, store: &Store, attrs: &Attributes) -> rbac::Decision {
    match auth.mode {
        Authorization::AlwaysAllow => rbac::Decision::Allow(String::new()),
        Authorization::Rbac => rbac::authorize(&auth.rbac_index(store), attrs),
    }
}

/// The 403 of a request no authorizer allowed (`responsewriters.Forbidden`): what the user
/// cannot do, and the authorizer's reason after it.
pub(crate) fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    use crate::go_print::go_quote;
    let user = go_quote(&attrs.user.name);
    let verb = &attrs.verb;
    let what = if !attrs.resource_request {
        format!("User {user} cannot {verb} path {}", go_quote(&attrs.path))
    } else {
        let resource = go_quote(&attrs.combined_resource());
        let group = go_quote(&attrs.group);
        if attrs.namespace.is_empty() {
            format!("User {user} cannot {verb} resource {resource} in API group {group} at the cluster scope")
        } else {
            let ns = go_quote(&attrs.namespace);
            format!(
                "User {user} cannot {verb} resource {resource} in API group {group} in the namespace {ns}"
            )
        }
    };
    let why = if reason.is_empty() { what } else { format!("{what}: {reason}") };
    ApiError::admission_forbidden(&attrs.group, &attrs.resource, &attrs.name, &why)
}
