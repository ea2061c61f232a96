//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`): a request is allowed when a rule of a
//! role bound to its user allows it — a ClusterRole through a ClusterRoleBinding anywhere, a Role
//! or ClusterRole through a RoleBinding in the request's namespace. RBAC never denies: without a
//! rule, it has no opinion, and the request is forbidden because no authorizer allowed it.
//!
//! Roles and bindings are read from an [`Index`] of the store's, made again after any of them
//! is written (as upstream's authorizer reads them from its informers' caches), so a binding is
//! in force once it is written.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::access::Attributes;
use crate::catalog::find;
use crate::go_print::go_quote;
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::store::Store;
use crate::user::{MASTERS, UserInfo};

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, and by what (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to
    /// User "z"`; empty for the superuser group).
    Allow(String),
    /// No rule allows it; why, when something could not be read (a binding's missing role).
    NoOpinion(String),
}

impl Decision {
    /// Whether it allows.
    #[must_use]
    pub fn allowed(&self) -> bool {
        matches!(self, Self::Allow(_))
    }

    /// Its reason, possibly empty.
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            Self::Allow(r) | Self::NoOpinion(r) => r,
        }
    }
}

/// The RBAC objects of a store as the authorizer reads them: bindings by namespace, roles by
/// name.
#[derive(Debug, Default)]
pub struct Index {
    cluster_bindings: Vec<Arc<Value>>,
    bindings: HashMap<String, Vec<Arc<Value>>>,
    cluster_roles: HashMap<String, Arc<Value>>,
    roles: HashMap<(String, String), Arc<Value>>,
}

/// The storages an [`Index`] reads.
pub(crate) const STORAGES: [&str; 4] = [
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
];

impl Index {
    /// The RBAC objects `store` holds now.
    #[must_use]
    pub fn of(store: &Store) -> Self {
        let all = |plural: &str| store.snapshot(def(plural), None).1;
        let mut index = Self { cluster_bindings: all("clusterrolebindings"), ..Self::default() };
        for b in all("rolebindings") {
            index.bindings.entry(meta_str(&b, "namespace").to_owned()).or_default().push(b);
        }
        for r in all("clusterroles") {
            index.cluster_roles.insert(meta_str(&r, "name").to_owned(), r);
        }
        for r in all("roles") {
            index.roles.insert((meta_str(&r, "namespace").to_owned(), meta_str(&r, "name").to_owned()), r);
        }
        index
    }
}

/// What RBAC and the superuser group decide for `attrs`.
#[must_use]
pub fn authorize(index: &Index, attrs: &Attributes) -> Decision {
    // kube-apiserver's privileged-group authorizer, ahead of RBAC.
    if attrs.user.in_group(MASTERS) {
        return Decision::Allow(String::new());
    }
    let mut errors = Vec::new();
    let mut allowed_by = None;
    visit(index, &attrs.user, &attrs.namespace, &mut errors, &mut |source, rules| {
        if rules.iter().any(|r| allows(attrs, r)) {
            allowed_by = Some(format!("RBAC: allowed by {}", source()));
            return false;
        }
        true
    });
    match allowed_by {
        Some(reason) => Decision::Allow(reason),
        None if errors.is_empty() => Decision::NoOpinion(String::new()),
        None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
    }
}

/// Every rule that applies to `user` in `namespace` (the cluster's alone for an empty one), and
/// what could not be read, as Go's aggregate error prints it (a SelfSubjectRulesReview's
/// `evaluationError`).
#[must_use]
pub fn rules_for(index: &Index, user: &UserInfo, namespace: &str) -> (Vec<Value>, Option<String>) {
    let (rules, errors) = rules_for_each(index, user, namespace);
    (rules, (!errors.is_empty()).then(|| aggregate(&errors)))
}

/// [`rules_for`], with each error apart.
pub(crate) fn rules_for_each(index: &Index, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<String>) {
    let (mut rules, mut errors) = (Vec::new(), Vec::new());
    visit(index, user, namespace, &mut errors, &mut |_, found| {
        rules.extend(found.iter().cloned());
        true
    });
    (rules, errors)
}

/// `utilerrors.NewAggregate(errs).Error()`: one error alone, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// An RBAC resource of the v1 API.
fn def(plural: &str) -> &'static ResourceDef {
    find("rbac.authorization.k8s.io", "v1", plural).expect("RBAC is built in")
}

/// What [`visit`] calls with a binding's description (made on demand) and its role's rules;
/// `false` stops the visit.
type Visitor<'a> = dyn FnMut(&dyn Fn() -> String, &[Value]) -> bool + 'a;

/// Calls `visitor` with each binding that applies to `user` (its description, made on demand)
/// and the rules of its role, ClusterRoleBindings first, until it answers `false`; a binding
/// whose role is missing adds an error instead.
fn visit(
    index: &Index,
    user: &UserInfo,
    namespace: &str,
    errors: &mut Vec<String>,
    visitor: &mut Visitor<'_>,
) {
    for binding in &index.cluster_bindings {
        let Some(subject) = applying_subject(binding, user, "") else { continue };
        let role = role_ref(binding);
        let describe = || {
            format!(
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(meta_str(binding, "name")),
                role.0,
                go_quote(role.1),
                describe_subject(subject, "")
            )
        };
        match role_rules(index, role, "") {
            Ok(rules) => {
                if !visitor(&describe, &rules) {
                    return;
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if namespace.is_empty() {
        return;
    }
    for binding in index.bindings.get(namespace).into_iter().flatten() {
        let Some(subject) = applying_subject(binding, user, namespace) else { continue };
        let role = role_ref(binding);
        let describe = || {
            format!(
                "RoleBinding {} of {} {} to {}",
                go_quote(&format!("{}/{namespace}", meta_str(binding, "name"))),
                role.0,
                go_quote(role.1),
                describe_subject(subject, namespace)
            )
        };
        match role_rules(index, role, namespace) {
            Ok(rules) => {
                if !visitor(&describe, &rules) {
                    return;
                }
            }
            Err(e) => errors.push(e),
        }
    }
}

/// A binding's `roleRef`: kind and name.
fn role_ref(binding: &Value) -> (&str, &str) {
    let field = |k: &str| binding.pointer(&format!("/roleRef/{k}")).and_then(Value::as_str).unwrap_or("");
    (field("kind"), field("name"))
}

/// The rules of the role a binding in `namespace` refers to (a ClusterRole, or a Role of that
/// namespace), or the error upstream's resolver reports for a missing one.
pub(crate) fn role_rules(
    index: &Index,
    (kind, name): (&str, &str),
    namespace: &str,
) -> Result<Vec<Value>, String> {
    let role = match kind {
        "Role" => index.roles.get(&(namespace.to_owned(), name.to_owned())),
        _ => index.cluster_roles.get(name),
    };
    let singular = if kind == "Role" { "role" } else { "clusterrole" };
    let role =
        role.ok_or_else(|| format!("{singular}.rbac.authorization.k8s.io {} not found", go_quote(name)))?;
    Ok(role.get("rules").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// The first of a binding's subjects that is `user` (`appliesTo`); a service account subject
/// without a namespace is in the binding's.
fn applying_subject<'a>(binding: &'a Value, user: &UserInfo, namespace: &str) -> Option<&'a Value> {
    binding.get("subjects")?.as_array()?.iter().find(|s| {
        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        match field("kind") {
            "User" => field("name") == user.name,
            "Group" => user.in_group(field("name")),
            "ServiceAccount" => {
                let ns = if field("namespace").is_empty() { namespace } else { field("namespace") };
                !ns.is_empty() && user.as_service_account() == Some((ns, field("name")))
            }
            _ => false,
        }
    })
}

/// A subject as the allowed reason names it: `User "alice"`, `ServiceAccount "name/ns"`.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let field = |k: &str| subject.get(k).and_then(Value::as_str).unwrap_or("");
    match field("kind") {
        "ServiceAccount" => {
            let ns = if field("namespace").is_empty() { binding_namespace } else { field("namespace") };
            format!("ServiceAccount {}", go_quote(&format!("{}/{ns}", field("name"))))
        }
        kind => format!("{kind} {}", go_quote(field("name"))),
    }
}

/// Whether `rule` allows `attrs` (`RuleAllows`).
#[must_use]
pub fn allows(attrs: &Attributes, rule: &Value) -> bool {
    let list = |k: &str| -> Vec<&str> {
        rule.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    if !list("verbs").iter().any(|v| *v == "*" || *v == attrs.verb) {
        return false;
    }
    if !attrs.resource_request {
        return list("nonResourceURLs").iter().any(|url| {
            *url == "*"
                || *url == attrs.path
                || url.strip_suffix('*').is_some_and(|p| attrs.path.starts_with(p))
        });
    }
    let combined = attrs.combined_resource();
    let names = list("resourceNames");
    list("apiGroups").iter().any(|g| *g == "*" || *g == attrs.group)
        && list("resources").iter().any(|r| {
            *r == "*"
                || *r == combined
                || (!attrs.subresource.is_empty() && r.strip_prefix("*/") == Some(attrs.subresource.as_str()))
        })
        && (names.is_empty() || names.contains(&attrs.name.as_str()))
}

#[cfg(test)]
mod tests {
    use http::Method;
    use serde_json::json;

    use super::*;

    fn attrs(method: Method, path: &str) -> Attributes {
        Attributes::of(UserInfo::new("alice", ["devs"]), &method, path, None)
    }

    #[test]
    fn rules_match_as_upstreams() {
        let rule = json!({ "apiGroups": ["apps"], "resources": ["deployments", "*/scale"], "verbs": ["get", "patch"] });
        assert!(allows(&attrs(Method::GET, "/apis/apps/v1/namespaces/d/deployments/web"), &rule));
        assert!(allows(&attrs(Method::PATCH, "/apis/apps/v1/namespaces/d/replicasets/web/scale"), &rule));
        assert!(!allows(&attrs(Method::GET, "/apis/apps/v1/namespaces/d/deployments"), &rule), "list");
        assert!(!allows(&attrs(Method::GET, "/apis/apps/v1/namespaces/d/deployments/web/status"), &rule));
        assert!(!allows(&attrs(Method::GET, "/apis/batch/v1/namespaces/d/deployments/web"), &rule));
        let named = json!({ "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app"], "verbs": ["*"] });
        assert!(allows(&attrs(Method::PUT, "/api/v1/namespaces/d/configmaps/app"), &named));
        assert!(!allows(&attrs(Method::PUT, "/api/v1/namespaces/d/configmaps/other"), &named));
        let paths = json!({ "nonResourceURLs": ["/healthz", "/api/*"], "verbs": ["get"] });
        assert!(allows(&attrs(Method::GET, "/healthz"), &paths));
        assert!(allows(&attrs(Method::GET, "/api/v1"), &paths));
        assert!(!allows(&attrs(Method::GET, "/version"), &paths));
        assert!(!allows(&attrs(Method::POST, "/healthz"), &paths));
    }
}
