//! networking.k8s.io/v1 Ingresses, IngressClasses and NetworkPolicies: upstream's defaults
//! (`pkg/apis/networking/v1/defaults.go`) and the validation a user meets first.

use serde_json::{Value, json};

use crate::object_meta::set_default;
use crate::status::FieldError;

/// An Ingress has no spec defaults in v1 (a path's `pathType` is required); its status starts
/// with an empty load balancer, as Go writes the struct.
pub fn default_ingress(ingress: &mut Value) {
    if ingress.is_object() {
        let status = crate::object_meta::object_at(ingress, "status");
        status.entry("loadBalancer").or_insert_with(|| json!({}));
    }
}

/// Each HTTP path of an Ingress has a `pathType` upstream supports, and a backend.
pub fn validate_ingress(ingress: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = ingress.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default();
    if rules.is_empty() && ingress.pointer("/spec/defaultBackend").is_none_or(Value::is_null) {
        let shown = if ingress.pointer("/spec/rules").is_some_and(|r| !r.is_null()) {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        errs.push((
            "spec".into(),
            format!("Invalid value: {shown}: either `defaultBackend` or `rules` must be specified"),
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let paths = rule.pointer("/http/paths").and_then(Value::as_array).cloned().unwrap_or_default();
        for (j, path) in paths.iter().enumerate() {
            let at = format!("spec.rules[{i}].http.paths[{j}]");
            match path.get("pathType").and_then(Value::as_str) {
                None => errs.push((format!("{at}.pathType"), "Required value: pathType must be specified".into())),
                Some(t) if !matches!(t, "Exact" | "Prefix" | "ImplementationSpecific") => errs.push((
                    format!("{at}.pathType"),
                    format!("Unsupported value: {t:?}: supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""),
                )),
                Some(_) => {}
            }
            if path.get("backend").is_none_or(|b| b.get("service").is_none() && b.get("resource").is_none()) {
                errs.push((format!("{at}.backend"), "Invalid value: \"\": must specify a backend".into()));
            }
        }
    }
    errs
}

/// An IngressClass names its controller, which never changes.
pub fn validate_ingress_class(class: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let controller = class.pointer("/spec/controller").and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if controller.is_empty() {
        errs.push(("spec.controller".into(), "Required value".into()));
    }
    if let Some(old) = old
        && old.pointer("/spec/controller") != class.pointer("/spec/controller")
    {
        errs.push(("spec.controller".into(), format!("Invalid value: {controller:?}: field is immutable")));
    }
    errs
}

/// A NetworkPolicy's policy types follow its rules (`SetDefaults_NetworkPolicy`): `Ingress`
/// always, `Egress` when egress rules are given; ports are TCP unless said otherwise.
pub fn default_network_policy(np: &mut Value) {
    if !np.is_object() {
        return;
    }
    let spec = crate::object_meta::object_at(np, "spec");
    spec.entry("podSelector").or_insert_with(|| json!({}));
    for direction in ["ingress", "egress"] {
        for rule in spec.get_mut(direction).and_then(Value::as_array_mut).into_iter().flatten() {
            for port in rule.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = port.as_object_mut() {
                    set_default(p, "protocol", json!("TCP"));
                }
            }
        }
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
        let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
        spec.insert("policyTypes".into(), types);
    }
}

/// A NetworkPolicy's policy types are `Ingress` or `Egress`.
pub fn validate_network_policy(np: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let types = np.pointer("/spec/policyTypes").and_then(Value::as_array).cloned().unwrap_or_default();
    types
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let t = t.as_str().unwrap_or("");
            (!matches!(t, "Ingress" | "Egress")).then(|| {
                (
                    format!("spec.policyTypes[{i}]"),
                    format!("Unsupported value: {t:?}: supported values: \"Ingress\", \"Egress\""),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_types_follow_the_rules() {
        let mut np = json!({ "spec": { "podSelector": {}, "egress": [{ "ports": [{ "port": 53 }] }] } });
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        assert!(validate_network_policy(&np, None).is_empty());
    }

    #[test]
    fn an_ingress_path_needs_a_type() {
        let ing = json!({ "spec": { "rules": [{ "http": { "paths": [{ "path": "/", "backend": { "service": { "name": "web", "port": { "number": 80 } } } }] } }] } });
        assert_eq!(validate_ingress(&ing, None)[0].0, "spec.rules[0].http.paths[0].pathType");
    }
}
