//! A policy's type checking (upstream's `validating/typechecking.go`): each validation's
//! expression and message expression is checked against the schema of every kind the policy's
//! `matchConstraints` name, `object` and `oldObject` typed by it and `params` by the
//! `paramKind`'s schema. What it finds becomes the policy's
//! `status.typeChecking.expressionWarnings`, written by kube-controller-manager's status
//! controller (`cluster::policy_status`); it never changes what the policy does.
//!
//! The kinds are those of `resourceRules` with no wildcard group or version, their resources
//! other than wildcards and subresources, resolved to kinds, at most ten, sorted by group,
//! version and kind. A kind whose schema is not found is not checked. Each warning is one line
//! per kind with errors: `apps/v1, Kind=Deployment: ` and cel-go's errors.
//!
//! What the checker finds is `schema::cel`'s: fields a schema does not declare and operators
//! applied to types they have no overload for. `request`, `namespaceObject`, `authorizer` and
//! `variables` are not typed (cel-go types them), so what reads them is not checked.

use serde_json::{Map, Value, json};

use crate::registry::Registry;
use crate::schema::cel::type_errors;

/// The most kinds a policy is checked against (`maxTypesToCheck`).
const MAX_TYPES: usize = 10;

/// A kind's group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl std::fmt::Display for Gvk {
    /// As Go's `schema.GroupVersionKind` prints itself.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// Resolves a kind's schema by group, version and kind (upstream's `SchemaResolver`): the
/// definition a resource's root is checked against, references inlined; `None` when not found.
pub(crate) type SchemaResolver<'r> = &'r dyn Fn(&str, &str, &str) -> Option<Value>;

/// The warnings of `policy`'s type checking, as `status.typeChecking.expressionWarnings` holds
/// them (`fieldRef`, `warning`); the kinds are resolved in `registry`, their schemas by
/// `resolve`.
pub(crate) fn expression_warnings(
    policy: &Value,
    registry: &Registry,
    resolve: SchemaResolver<'_>,
) -> Vec<Value> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let kinds: Vec<(Gvk, Value)> = types_to_check(spec, registry)
        .into_iter()
        .filter_map(|gvk| resolve(&gvk.group, &gvk.version, &gvk.kind).map(|schema| (gvk, schema)))
        .collect();
    let params = param_kind(spec).and_then(|(group, version, kind)| resolve(&group, &version, &kind));
    let params = params.as_ref().and_then(Value::as_object);
    let mut warnings = Vec::new();
    for (i, validation) in spec.get("validations").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        for field in ["expression", "messageExpression"] {
            let Some(text) = validation.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) else {
                continue;
            };
            let results: Vec<String> = kinds
                .iter()
                .filter_map(|(gvk, schema)| {
                    let object = schema.as_object();
                    let variables: [(&str, Option<&Map<String, Value>>); 3] =
                        [("object", object), ("oldObject", object), ("params", params)];
                    type_errors(text, &variables).map(|errors| format!("{gvk}: {errors}\n"))
                })
                .collect();
            if !results.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": results.join("\n"),
                }));
            }
        }
    }
    warnings
}

/// The kinds `spec.matchConstraints.resourceRules` name (`typesToCheck`).
fn types_to_check(spec: &Value, registry: &Registry) -> Vec<Gvk> {
    let rules = spec.pointer("/matchConstraints/resourceRules").and_then(Value::as_array);
    let mut found: Vec<Gvk> = Vec::new();
    let mut count = 0;
    for rule in rules.into_iter().flatten() {
        let strings = |field: &str| -> Vec<&str> {
            let mut all: Vec<&str> = rule
                .get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            all.sort_unstable();
            all
        };
        let (groups, versions) = (strings("apiGroups"), strings("apiVersions"));
        // A wildcard group or version gives up the rule; a wildcard resource or a
        // subresource is skipped.
        if groups.iter().chain(&versions).any(|s| s.contains('*')) {
            continue;
        }
        let resources: Vec<&str> =
            strings("resources").into_iter().filter(|r| !r.contains(['*', '/'])).collect();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some(def) = registry.find(group, version, resource) else { continue };
                    let gvk = Gvk {
                        group: def.group.to_owned(),
                        version: def.version.to_owned(),
                        kind: def.kind.to_owned(),
                    };
                    if !found.contains(&gvk) {
                        found.push(gvk);
                    }
                    count += 1;
                    if count == MAX_TYPES {
                        found.sort();
                        return found;
                    }
                }
            }
        }
    }
    found.sort();
    found
}

/// The `paramKind`'s group, version and kind.
fn param_kind(spec: &Value) -> Option<(String, String, String)> {
    let kind = spec.get("paramKind")?;
    let api_version = kind.get("apiVersion").and_then(Value::as_str)?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Some((group.to_owned(), version.to_owned(), kind.get("kind").and_then(Value::as_str)?.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_checked_are_the_rules_named_ones_sorted() {
        let registry = Registry::new();
        let spec = json!({ "matchConstraints": { "resourceRules": [
            { "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "replicasets/scale", "*"] },
            { "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps", "pods"] },
            { "apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["jobs"] },
        ] } });
        let kinds: Vec<String> = types_to_check(&spec, &registry).iter().map(ToString::to_string).collect();
        assert_eq!(kinds, ["/v1, Kind=ConfigMap", "/v1, Kind=Pod", "apps/v1, Kind=Deployment"]);
        assert_eq!(
            param_kind(&json!({ "paramKind": { "apiVersion": "v1", "kind": "ConfigMap" } })),
            Some((String::new(), "v1".into(), "ConfigMap".into()))
        );
    }
}
