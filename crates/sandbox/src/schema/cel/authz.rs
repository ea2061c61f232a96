//! CEL's authorizer library (apiserver's `pkg/cel/library/authz.go`): what an admission policy's
//! or a webhook's match condition asks of the server's authorizer through the `authorizer`
//! variable — may the request's user, or a service account it names, do a verb on a resource or
//! a path — and `authorizer.requestResource`, the check of the request's own resource.
//!
//! `authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('delete')`
//! builds the attributes one step at a time and asks the authorizer the request carries (the
//! sandbox's: every request allowed, or RBAC); the decision answers `allowed()`, `reason()`,
//! `errored()` and `error()`. The values are opaque to CEL, as upstream's types are.

use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Opaque, Value as Cel};
use kube_cel::cel::{Context, ExecutionError, ResolveResult};

use crate::access::Attributes;
use crate::invocation::Authorizer;
use crate::user::UserInfo;

/// The key of the `authorizer` variable's map that holds the authorizer: no CEL selection can
/// name it, so `authorizer.requestResource` is the only field an expression reads.
const AUTHORIZER: &str = "@authorizer";

/// Who asks, and whom: the request's user (or the service account `serviceAccount` named).
struct Authz {
    user: UserInfo,
    /// `None`: no request carries one (a write of the sandbox's own controllers), every check
    /// allowed.
    authorizer: Option<Authorizer>,
}

impl std::fmt::Debug for Authz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Authorizer({})", self.user.name)
    }
}

impl PartialEq for Authz {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Authz {}

/// The `authorizer` variable's authorizer, as CEL holds it.
#[derive(Debug, PartialEq, Eq)]
struct Held(Arc<Authz>);

impl Opaque for Held {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

/// `authorizer.path(p)`, or a resource with what has been named of it: the attributes a check
/// asks, but its verb and user.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Check {
    authz: Arc<Authz>,
    attrs: Attributes,
}

impl Opaque for Check {
    fn runtime_type_name(&self) -> &str {
        if self.attrs.resource_request {
            "kubernetes.authorization.ResourceCheck"
        } else {
            "kubernetes.authorization.PathCheck"
        }
    }
}

/// `authorizer.group(g)`: a group, before its resource is named.
#[derive(Debug, PartialEq, Eq)]
struct GroupCheck {
    authz: Arc<Authz>,
    group: String,
}

impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.GroupCheck"
    }
}

/// The authorizer's answer.
#[derive(Debug, PartialEq, Eq)]
struct Decision {
    allowed: bool,
    reason: String,
}

impl Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// The `authorizer` variable of `request` (its user and the resource it writes, at its
/// version: `authorizer.requestResource`), asking `authorizer` (none: every check allowed).
pub(crate) fn variable(authorizer: Option<Authorizer>, mut request: Attributes) -> Cel {
    let user = std::mem::take(&mut request.user);
    let authz = Arc::new(Authz { user, authorizer });
    request.resource_request = true;
    let request = Check { authz: Arc::clone(&authz), attrs: request };
    let mut map = std::collections::HashMap::new();
    map.insert("requestResource".to_owned(), Cel::Opaque(Arc::new(request)));
    map.insert(AUTHORIZER.to_owned(), Cel::Opaque(Arc::new(Held(authz))));
    Cel::from(map)
}

/// Registers the library's functions.
pub(super) fn register(ctx: &mut Context<'_>) {
    ctx.add_function("path", path);
    ctx.add_function("group", group);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", |this: This<Cel>, v: Arc<String>| {
        with(this, "subresource", |a| a.subresource = v.to_string())
    });
    ctx.add_function("namespace", |this: This<Cel>, v: Arc<String>| {
        with(this, "namespace", |a| a.namespace = v.to_string())
    });
    ctx.add_function("name", |this: This<Cel>, v: Arc<String>| {
        with(this, "name", |a| a.name = v.to_string())
    });
    ctx.add_function("check", check);
    ctx.add_function("allowed", |This(this): This<Cel>| {
        decision(&this, "allowed").map(|d| Cel::Bool(d.allowed))
    });
    ctx.add_function("reason", |This(this): This<Cel>| {
        decision(&this, "reason").map(|d| Cel::String(Arc::new(d.reason.clone())))
    });
    // The sandbox's authorizers do not fail: no decision is an error.
    ctx.add_function("errored", |This(this): This<Cel>| decision(&this, "errored").map(|_| Cel::Bool(false)));
    ctx.add_function("error", |This(this): This<Cel>| {
        decision(&this, "error").map(|_| Cel::String(Arc::default()))
    });
}

fn opaque<'a, T: Opaque>(v: &'a Cel, function: &str) -> Result<&'a T, ExecutionError> {
    match v {
        Cel::Opaque(o) => o.downcast_ref::<T>(),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error(function, "no such overload"))
}

/// The authorizer behind the `authorizer` variable.
fn authorizer(v: &Cel, function: &str) -> Result<Arc<Authz>, ExecutionError> {
    let held = match v {
        Cel::Map(m) => m.map.get(&kube_cel::cel::objects::Key::from(AUTHORIZER)),
        _ => None,
    };
    match held {
        Some(Cel::Opaque(o)) => o.downcast_ref::<Held>().map(|h| Arc::clone(&h.0)),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error(function, "no such overload"))
}

fn path(This(this): This<Cel>, path: Arc<String>) -> ResolveResult {
    let authz = authorizer(&this, "path")?;
    let attrs = Attributes { path: path.to_string(), ..Attributes::default() };
    Ok(Cel::Opaque(Arc::new(Check { authz, attrs })))
}

fn group(This(this): This<Cel>, group: Arc<String>) -> ResolveResult {
    let authz = authorizer(&this, "group")?;
    Ok(Cel::Opaque(Arc::new(GroupCheck { authz, group: group.to_string() })))
}

/// `authorizer.serviceAccount(namespace, name)`: the same authorizer asked for a service
/// account, with the groups its tokens carry.
fn service_account(This(this): This<Cel>, namespace: Arc<String>, name: Arc<String>) -> ResolveResult {
    let authz = authorizer(&this, "serviceAccount")?;
    // `serviceaccount.UserInfo`: the account's name and its two groups, nothing more.
    let user = UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec!["system:serviceaccounts".to_owned(), format!("system:serviceaccounts:{namespace}")],
        ..UserInfo::default()
    };
    let held = Held(Arc::new(Authz { user, authorizer: authz.authorizer.clone() }));
    let mut map = std::collections::HashMap::new();
    map.insert(AUTHORIZER.to_owned(), Cel::Opaque(Arc::new(held)));
    Ok(Cel::from(map))
}

fn resource(This(this): This<Cel>, resource: Arc<String>) -> ResolveResult {
    let group = opaque::<GroupCheck>(&this, "resource")?;
    let attrs = Attributes {
        resource_request: true,
        group: group.group.clone(),
        version: "*".to_owned(),
        resource: resource.to_string(),
        ..Attributes::default()
    };
    Ok(Cel::Opaque(Arc::new(Check { authz: Arc::clone(&group.authz), attrs })))
}

/// A resource check with one more thing named.
fn with(This(this): This<Cel>, function: &str, set: impl FnOnce(&mut Attributes)) -> ResolveResult {
    let mut check = opaque::<Check>(&this, function)?.clone();
    if !check.attrs.resource_request {
        return Err(ExecutionError::function_error(function, "no such overload"));
    }
    set(&mut check.attrs);
    Ok(Cel::Opaque(Arc::new(check)))
}

/// `<check>.check(verb)`: the authorizer's decision on the path or resource.
fn check(This(this): This<Cel>, verb: Arc<String>) -> ResolveResult {
    let check = opaque::<Check>(&this, "check")?;
    let attrs = Attributes { user: check.authz.user.clone(), verb: verb.to_string(), ..check.attrs.clone() };
    let (allowed, reason) =
        check.authz.authorizer.as_ref().map_or((true, String::new()), |a| a.authorize(&attrs));
    Ok(Cel::Opaque(Arc::new(Decision { allowed, reason })))
}

fn decision<'a>(v: &'a Cel, function: &str) -> Result<&'a Decision, ExecutionError> {
    opaque::<Decision>(v, function)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Evaluates `text` with an `authorizer` whose authorizer records what it was asked and
    /// allows only `get`.
    fn run(text: &str) -> (Cel, Vec<Attributes>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        let authorizer = Authorizer(Arc::new(move |attrs: &Attributes| {
            seen.lock().unwrap().push(attrs.clone());
            (attrs.verb == "get", format!("asked to {}", attrs.verb))
        }));
        let request = Attributes {
            user: UserInfo::new("alice", ["devs"]),
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            namespace: "ns".into(),
            name: "web".into(),
            ..Attributes::default()
        };
        let mut ctx = super::super::functions().new_inner_scope();
        ctx.add_variable_from_value("authorizer", variable(Some(authorizer), request));
        let value = super::super::compile(text).unwrap().execute(&ctx).unwrap();
        let asked = asked.lock().unwrap().clone();
        (value, asked)
    }

    #[test]
    fn checks_build_the_attributes_they_ask_and_answer_the_decision() {
        let (v, asked) = run(
            "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('x').check('update').reason()",
        );
        assert_eq!(v, Cel::String(Arc::new("asked to update".into())));
        let a = &asked[0];
        assert_eq!((a.user.name.as_str(), a.verb.as_str(), a.resource_request), ("alice", "update", true));
        assert_eq!(
            (
                a.group.as_str(),
                a.version.as_str(),
                a.resource.as_str(),
                a.subresource.as_str(),
                a.namespace.as_str(),
                a.name.as_str()
            ),
            ("apps", "*", "deployments", "scale", "ns", "x")
        );
        let (v, asked) = run(
            "authorizer.path('/healthz').check('get').allowed() && !authorizer.path('/x').check('post').errored()",
        );
        assert_eq!(v, Cel::Bool(true));
        assert_eq!((asked[0].path.as_str(), asked[0].resource_request), ("/healthz", false));
        // The request's own resource, at its version.
        let (v, asked) = run("authorizer.requestResource.check('get').allowed()");
        assert_eq!(v, Cel::Bool(true));
        assert_eq!((asked[0].version.as_str(), asked[0].name.as_str()), ("v1", "web"));
        let (_, asked) = run(
            "authorizer.serviceAccount('kube-system', 'x').group('').resource('pods').check('list').allowed()",
        );
        assert_eq!(asked[0].user.name, "system:serviceaccount:kube-system:x");
        assert_eq!(asked[0].user.groups, ["system:serviceaccounts", "system:serviceaccounts:kube-system"]);
    }
}
