//! Whether a policy's `matchConstraints` (or a binding's `matchResources`) select a write, as
//! upstream's `admission/plugin/policy/matching` and `webhook/predicates` decide it: the
//! namespace's labels, the object's (or the old object's) labels, the excluded rules, then the
//! resource rules — operation, group, version, resource with its subresource wildcards, scope and
//! names. Under `matchPolicy: Equivalent` a rule naming another served version of the same
//! resource matches too.

use std::cell::OnceCell;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Operation, Request};
use crate::kinds::admission_match::strs;
use crate::selector::{selector_is_empty, selector_matches};

/// `admission.Operation` as the rules name it.
pub(crate) fn operation_name(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

/// What a request is, for matching: its operation, resource and the objects' labels.
pub(super) struct Target<'a> {
    pub req: &'a Request<'a>,
    pub name: &'a str,
    /// The new object (none for a delete).
    pub obj: Option<&'a Value>,
    /// The namespace it names, as stored, read once when first asked for.
    namespace: OnceCell<Option<Arc<Value>>>,
}

impl<'a> Target<'a> {
    pub(super) fn new(req: &'a Request<'a>, name: &'a str, obj: Option<&'a Value>) -> Self {
        Self { req, name, obj, namespace: OnceCell::new() }
    }

    /// The stored namespace the request names (a namespace object's own).
    pub(super) fn stored_namespace(&self) -> Option<Arc<Value>> {
        self.namespace.get_or_init(|| self.req.objects.namespace(self.namespace())).clone()
    }

    fn is_namespace(&self) -> bool {
        self.req.def.group.is_empty() && self.req.def.plural == "namespaces"
    }

    /// The namespace attribute upstream's request carries: a namespace object's own name.
    fn namespace(&self) -> &str {
        if self.is_namespace() { self.name } else { self.req.ns }
    }
}

/// Whether `criteria` (a `MatchResources`) selects the write; `Err` when the namespace it
/// names cannot be read (upstream's configuration error: the failure policy decides).
pub(super) fn matches(criteria: &Value, t: &Target<'_>) -> Result<bool, String> {
    let namespaced = match namespace_matches(criteria.get("namespaceSelector"), t) {
        Ok(false) => return Ok(false),
        other => other,
    };
    if !object_matches(criteria.get("objectSelector"), t) {
        return Ok(false);
    }
    let equivalent = criteria.get("matchPolicy").and_then(Value::as_str) != Some("Exact");
    if rules_match(criteria.get("excludeResourceRules"), equivalent, t) {
        return Ok(false);
    }
    // A binding's resources without rules select every resource its policy does.
    let rules = criteria.get("resourceRules");
    if rules.and_then(Value::as_array).is_some_and(|r| !r.is_empty()) && !rules_match(rules, equivalent, t) {
        return Ok(false);
    }
    namespaced
}

/// `MatchNamespaceSelector`: a cluster-scoped resource (other than a namespace) always
/// matches; a namespace is judged by its own labels.
pub(super) fn namespace_matches(selector: Option<&Value>, t: &Target<'_>) -> Result<bool, String> {
    let Some(selector) = selector.filter(|s| !selector_is_empty(s)) else { return Ok(true) };
    let ns = t.namespace();
    if ns.is_empty() && !t.is_namespace() {
        return Ok(true);
    }
    // A namespace written is judged by its new labels; one deleted, by its stored ones.
    let labels = if let (true, Some(obj)) = (t.is_namespace(), t.obj) {
        labels_of(obj)
    } else {
        match t.stored_namespace() {
            Some(n) => labels_of(&n),
            None => return Err(format!("namespace \"{ns}\" not found")),
        }
    };
    Ok(selector_matches(selector, &labels))
}

/// `MatchObjectSelector`: the new object's labels, or the old object's.
fn object_matches(selector: Option<&Value>, t: &Target<'_>) -> bool {
    labels_select(selector, t.obj, t.req.old)
}

/// Whether `selector` selects `obj` or `old` by their labels (an empty one selects all).
pub(super) fn labels_select(selector: Option<&Value>, obj: Option<&Value>, old: Option<&Value>) -> bool {
    let Some(selector) = selector.filter(|s| !selector_is_empty(s)) else { return true };
    obj.is_some_and(|obj| selector_matches(selector, &labels_of(obj)))
        || old.is_some_and(|old| selector_matches(selector, &labels_of(old)))
}

fn labels_of(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// Whether one of `rules` (`NamedRuleWithOperations`) names the write.
pub(super) fn rules_match(rules: Option<&Value>, equivalent: bool, t: &Target<'_>) -> bool {
    let def = t.req.def;
    let versions: Vec<&str> =
        if equivalent { t.req.objects.versions_of(def.group, def.plural) } else { vec![def.version] };
    rules.and_then(Value::as_array).into_iter().flatten().any(|rule| {
        let names = strs(rule.get("resourceNames"));
        rule_matches(rule, t, &versions) && (names.is_empty() || names.contains(&t.name))
    })
}

/// upstream's `rules.Matcher`: operation, group, one of `versions`, resource and subresource
/// (only the object itself is admitted here), scope.
fn rule_matches(rule: &Value, t: &Target<'_>, versions: &[&str]) -> bool {
    let def = t.req.def;
    let any_of = |field: &str, value: &str| strs(rule.get(field)).iter().any(|v| *v == "*" || *v == value);
    let resource = strs(rule.get("resources")).iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == def.plural) && (sub == "*" || sub.is_empty())
    });
    let scope = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Namespaced" => !t.is_namespace() && !t.namespace().is_empty(),
        "Cluster" => t.is_namespace() || t.namespace().is_empty(),
        _ => true,
    };
    any_of("operations", operation_name(t.req.op))
        && any_of("apiGroups", def.group)
        && versions.iter().any(|v| any_of("apiVersions", v))
        && resource
        && scope
}
