//! RBAC's escalation checks (upstream's policy-based RBAC storage): a user may write a Role or
//! ClusterRole only with rules it holds itself, and bind a role only when it holds the role's
//! rules — unless it may `escalate` that role (or `bind` it), or is in `system:masters`.
//!
//! The check is made in two steps, so that the second can run where the store holds its lock:
//! [`Escalation::prepare`] reads what the writer holds (and a binding's role) from the store,
//! [`Escalation::confirm`] judges the object about to be written against it.

use serde_json::{Value, json};

use super::{Auth, Authorization, rbac};
use crate::access::Attributes;
use crate::go_print::go_quote;
use crate::object_meta::meta_str;
use crate::store::Store;
use crate::user::{MASTERS, UserInfo};

const GROUP: &str = "rbac.authorization.k8s.io";

/// What a write of an RBAC object must not exceed.
pub(crate) struct Escalation {
    user: UserInfo,
    plural: &'static str,
    /// The writer's own rules, and what could not be resolved of them.
    held: Vec<Value>,
    resolution_errors: Vec<String>,
    /// For a binding: the rules of the role it binds (fixed: `roleRef` cannot change).
    bound: Option<Vec<Value>>,
    /// The stored object an update changes.
    old: Option<Value>,
}

impl Escalation {
    /// The check a write of `plural` (`name` in `ns`) by `user` needs: `None` when it needs
    /// none (not an RBAC object, RBAC off, the superuser group, `escalate` or `bind` allowed).
    /// `body` is a create's or a PUT's object; `old` reads the stored one a PUT or PATCH
    /// changes (only for an RBAC object: other writes pay nothing).
    ///
    /// # Errors
    ///
    /// A binding whose role cannot be read (403, as upstream's).
    pub(crate) fn prepare(
        auth: &Auth,
        store: &Store,
        user: &UserInfo,
        (group, plural, ns, name): (&str, &str, &str, &str),
        body: Option<&Value>,
        old: impl FnOnce() -> Option<std::sync::Arc<Value>>,
    ) -> Result<Option<Self>, crate::status::ApiError> {
        let plural: &'static str = match (group, plural) {
            (GROUP, "roles") => "roles",
            (GROUP, "clusterroles") => "clusterroles",
            (GROUP, "rolebindings") => "rolebindings",
            (GROUP, "clusterrolebindings") => "clusterrolebindings",
            _ => return Ok(None),
        };
        if auth.mode != Authorization::Rbac || user.in_group(MASTERS) {
            return Ok(None);
        }
        let old = old();
        let old = old.as_deref();
        let index = auth.rbac_index(store);
        let allowed = |verb: &str, resource: &str, name: &str| {
            let attrs = Attributes {
                user: user.clone(),
                verb: verb.to_owned(),
                resource_request: true,
                group: GROUP.to_owned(),
                resource: resource.to_owned(),
                namespace: ns.to_owned(),
                name: name.to_owned(),
                ..Attributes::default()
            };
            rbac::authorize(&index, &attrs).allowed()
        };
        let bound = if plural.ends_with("bindings") {
            let role_ref = old.or(body).and_then(|b| b.get("roleRef")).cloned().unwrap_or(Value::Null);
            let field = |k: &str| role_ref.get(k).and_then(Value::as_str).unwrap_or("");
            let resource = if field("kind") == "Role" { "roles" } else { "clusterroles" };
            if allowed("bind", resource, field("name")) {
                return Ok(None);
            }
            let rules = rbac::role_rules(&index, (field("kind"), field("name")), ns)
                .map_err(|e| forbidden(plural, name, &e))?;
            Some(rules)
        } else {
            if allowed("escalate", plural, name) {
                return Ok(None);
            }
            None
        };
        let (held, error) = rbac::rules_for_each(&index, user, ns);
        Ok(Some(Self {
            user: user.clone(),
            plural,
            held,
            resolution_errors: error,
            bound,
            old: old.cloned(),
        }))
    }

    /// Whether `obj`, about to be written, grants only what the writer holds.
    ///
    /// # Errors
    ///
    /// 403 naming the rights it lacks, as upstream words it.
    pub(crate) fn confirm(&self, obj: &Value) -> Result<(), crate::status::ApiError> {
        let name = meta_str(obj, "name");
        if let Some(old) = &self.old
            && only_gc_fields_change(obj, old)
        {
            return Ok(());
        }
        let granted = match &self.bound {
            Some(rules) => rules.clone(),
            None => {
                // An aggregation rule gathers anything: only a writer who holds everything may set one.
                if self.plural == "clusterroles" && obj.get("aggregationRule").is_some_and(|a| !a.is_null()) {
                    let everything = [
                        json!({ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }),
                        json!({ "verbs": ["*"], "nonResourceURLs": ["*"] }),
                    ];
                    if !missing(&self.held, &everything).is_empty() {
                        return Err(forbidden(
                            self.plural,
                            name,
                            "must have cluster-admin privileges to use the aggregationRule",
                        ));
                    }
                    return Ok(());
                }
                obj.get("rules").and_then(Value::as_array).cloned().unwrap_or_default()
            }
        };
        let lacking = missing(&self.held, &granted);
        if lacking.is_empty() {
            return Ok(());
        }
        let groups: Vec<String> = self.user.groups.iter().map(|g| go_quote(g)).collect();
        let mut why = format!(
            "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&self.user.name),
            groups.join(" "),
            compact(&lacking).join("\n")
        );
        if !self.resolution_errors.is_empty() {
            why.push_str(&format!("; resolution errors: [{}]", self.resolution_errors.join(" ")));
        }
        Err(forbidden(self.plural, name, &why))
    }
}

/// `NewForbidden` of an RBAC resource.
fn forbidden(plural: &str, name: &str, why: &str) -> crate::status::ApiError {
    crate::status::ApiError::admission_forbidden(GROUP, plural, name, why)
}

/// The strings of `rule[key]`.
fn strings<'a>(rule: &'a Value, key: &str) -> Vec<&'a str> {
    rule.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One right: a group, resource, verb and name (or none), or a path and verb.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Right {
    Resource { group: String, resource: String, verb: String, name: Option<String> },
    Path { url: String, verb: String },
}

/// The rights of `granted` no rule of `held` covers, each once, in `granted`'s order
/// (`Covers`, over `BreakdownRule`'s single rights).
fn missing(held: &[Value], granted: &[Value]) -> Vec<Right> {
    let mut out: Vec<Right> = Vec::new();
    for rule in granted {
        for right in breakdown(rule) {
            if !held.iter().any(|h| covers(h, &right)) && !out.contains(&right) {
                out.push(right);
            }
        }
    }
    out
}

/// A rule as the single rights it grants (`BreakdownRule`).
fn breakdown(rule: &Value) -> Vec<Right> {
    let (verbs, names) = (strings(rule, "verbs"), strings(rule, "resourceNames"));
    let mut out = Vec::new();
    for group in strings(rule, "apiGroups") {
        for resource in strings(rule, "resources") {
            for verb in &verbs {
                let right = |name: Option<&str>| Right::Resource {
                    group: group.to_owned(),
                    resource: resource.to_owned(),
                    verb: (*verb).to_owned(),
                    name: name.map(str::to_owned),
                };
                if names.is_empty() {
                    out.push(right(None));
                } else {
                    out.extend(names.iter().map(|n| right(Some(n))));
                }
            }
        }
    }
    for url in strings(rule, "nonResourceURLs") {
        out.extend(verbs.iter().map(|v| Right::Path { url: url.to_owned(), verb: (*v).to_owned() }));
    }
    out
}

/// Whether `rule` covers `right` (`ruleCovers`).
fn covers(rule: &Value, right: &Right) -> bool {
    let has = |key: &str, v: &str| strings(rule, key).iter().any(|s| *s == "*" || *s == v);
    match right {
        Right::Resource { group, resource, verb, name } => {
            let resources = strings(rule, "resources");
            let resource_ok = resources.iter().any(|r| *r == "*" || r == resource)
                || resource
                    .split_once('/')
                    .is_some_and(|(_, sub)| resources.contains(&format!("*/{sub}").as_str()));
            let names = strings(rule, "resourceNames");
            let name_ok = names.is_empty() || name.as_deref().is_some_and(|n| names.contains(&n));
            has("verbs", verb) && has("apiGroups", group) && resource_ok && name_ok
        }
        Right::Path { url, verb } => {
            let urls = strings(rule, "nonResourceURLs");
            let url_ok =
                urls.iter().any(|u| u == url || u.strip_suffix('*').is_some_and(|p| url.starts_with(p)));
            has("verbs", verb) && url_ok
        }
    }
}

/// The lacking rights as upstream lists them: a group and resource's verbs together
/// (`CompactRules`), each as `CompactString` prints it, sorted.
fn compact(rights: &[Right]) -> Vec<String> {
    let quoted =
        |items: &[&str]| format!("[{}]", items.iter().map(|s| go_quote(s)).collect::<Vec<_>>().join(" "));
    let mut merged: Vec<(Right, Vec<&str>)> = Vec::new();
    for right in rights {
        match right {
            Right::Resource { group, resource, verb, name: None } => {
                let found = merged.iter_mut().find(|(r, _)| {
                    matches!(r, Right::Resource { group: g, resource: res, name: None, .. } if g == group && res == resource)
                });
                match found {
                    Some((_, verbs)) => verbs.push(verb),
                    None => merged.push((right.clone(), vec![verb])),
                }
            }
            Right::Resource { verb, .. } | Right::Path { verb, .. } => {
                merged.push((right.clone(), vec![verb]))
            }
        }
    }
    let mut out: Vec<String> = merged
        .iter()
        .map(|(right, verbs)| match right {
            Right::Resource { group, resource, name, .. } => {
                let names =
                    name.as_deref().map(|n| format!(", ResourceNames:{}", quoted(&[n]))).unwrap_or_default();
                format!(
                    "{{APIGroups:{}, Resources:{}{names}, Verbs:{}}}",
                    quoted(&[group]),
                    quoted(&[resource]),
                    quoted(verbs)
                )
            }
            Right::Path { url, .. } => {
                format!("{{NonResourceURLs:{}, Verbs:{}}}", quoted(&[url]), quoted(verbs))
            }
        })
        .collect();
    out.sort();
    out
}

/// Whether an update changes only what the garbage collector writes (owner references and
/// finalizers), which needs no check (`IsOnlyMutatingGCFields`).
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in ["ownerReferences", "finalizers", "managedFields", "resourceVersion"] {
                meta.remove(k);
            }
        }
        v
    };
    strip(new) == strip(old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lacking_rights_are_listed_compacted_as_upstream_lists_them() {
        let held = [
            json!({ "apiGroups": ["apps"], "resources": ["deployments", "*/scale"], "verbs": ["get", "list"] }),
        ];
        let granted = [
            json!({ "apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch", "delete"] }),
            json!({ "apiGroups": ["apps"], "resources": ["replicasets/scale"], "verbs": ["get"] }),
            json!({ "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["token"], "verbs": ["get"] }),
            json!({ "nonResourceURLs": ["/metrics"], "verbs": ["get"] }),
        ];
        let lacking = missing(&held, &granted);
        assert_eq!(
            compact(&lacking),
            [
                r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["token"], Verbs:["get"]}"#,
                r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["patch" "delete"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
        assert!(
            missing(&[json!({ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] })], &granted[..3])
                .is_empty()
        );
    }
}
