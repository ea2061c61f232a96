//! The ValidatingAdmissionPolicy plugin: every ValidatingAdmissionPolicyBinding's policy,
//! evaluated on the writes it matches, as upstream's dispatcher
//! (`k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go`) does it.
//!
//! For each policy with bindings (by name, then each binding by name):
//! 1. the policy's `matchConstraints` must select the write ([`matching`]); a `paramKind` that
//!    names no served kind is a configuration error;
//! 2. each binding's `matchResources`, when it has them, must select it too;
//! 3. its params are collected (`paramRef` by name or selector, in the request's namespace
//!    unless it names one; none found: `parameterNotFoundAction`);
//! 4. the policy is evaluated once per param ([`compiled`]), and each failed validation is
//!    acted on as the binding says: `Deny` refuses the write, `Warn` adds a Warning header,
//!    `Audit` an audit annotation on the request's record.
//!
//! Configuration and evaluation errors follow the policy's `failurePolicy`. The first denial
//! refuses the request, worded as upstream's (`ValidatingAdmissionPolicy 'p' with binding 'b'
//! denied request: …`), with the validation's reason and its code.
//!
//! The `authorizer` variable asks the request's authorizer (`schema::cel::authz`).
//!
//! Its expressions' costs are budgeted as upstream's ([`compiled`]), and a policy's type
//! checking is [`type_check`] (the status controller writes it).
//!
//! Not as upstream: an object is not converted to the version a rule matched under `Equivalent`;
//! subresource writes (`/status`, `/scale`) are not admitted.

mod bound;
mod compiled;
pub(crate) mod type_check;

use std::cell::OnceCell;
use std::sync::{Arc, OnceLock};

use kube_cel::cel::Value as Cel;

use serde_json::{Value, json};

use self::bound::{Bound, in_force};
use self::compiled::{Annotation, Decision, Inputs};
use super::expression::typed;
use super::matching::{self, Target};
use super::{Effects, FailurePolicy, Operation, Plugin, Request, attributes, exempt};
use crate::invocation::{self, Invocation};
use crate::kinds::admission_match::strs;
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::schema::cel::untyped;
use crate::status::ApiError;

/// The group of the admission configuration kinds.
const GROUP: &str = "admissionregistration.k8s.io";
/// The audit annotation of a validation an `Audit` binding saw fail.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";
/// The longest audit annotation value kept.
const MAX_ANNOTATION_VALUE: usize = 10 * 1024;

/// The plugin.
pub(crate) struct ValidatingAdmissionPolicy;

impl Plugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }

    /// Every write but those of the admission configuration itself ([`exempt`]).
    fn handles(&self, _op: Operation, def: &ResourceDef) -> bool {
        !exempt(def)
    }

    fn validate(&self, req: &Request<'_>, obj: &Value, _effects: &mut Effects) -> Result<(), ApiError> {
        // Every write comes here: the two resources are looked up once.
        static KINDS: OnceLock<(&ResourceDef, &ResourceDef)> = OnceLock::new();
        let (policy_def, binding_def) = KINDS.get_or_init(|| {
            let find = |plural| crate::catalog::find(GROUP, "v1", plural).expect("a built-in resource");
            (find("validatingadmissionpolicies"), find("validatingadmissionpolicybindings"))
        });
        let bound = in_force(req.objects, policy_def, binding_def);
        if bound.is_empty() {
            return Ok(());
        }
        let obj = (req.op != Operation::Delete).then_some(obj);
        invocation::current(|inv| Dispatch::new(req, obj, inv).run(&bound))
    }
}

/// One write's pass through the policies.
struct Dispatch<'a> {
    req: &'a Request<'a>,
    /// The new object; none for a delete.
    obj: Option<&'a Value>,
    name: &'a str,
    inv: Option<&'a Invocation>,
    /// The first refusal: the policy's name, the binding's, and the decision's message and reason.
    denied: Option<(String, Option<String>, String, Option<String>)>,
    /// What every evaluation of this write reads but its params, made once when first needed.
    inputs: OnceCell<Inputs>,
}

impl<'a> Dispatch<'a> {
    fn new(req: &'a Request<'a>, obj: Option<&'a Value>, inv: Option<&'a Invocation>) -> Self {
        let name = obj.or(req.old).map_or("", |o| meta_str(o, "name"));
        Self { req, obj, name, inv, denied: None, inputs: OnceCell::new() }
    }

    fn run(mut self, bound: &[Bound]) -> Result<(), ApiError> {
        let target = Target::new(self.req, self.name, self.obj);
        for Bound { policy, compiled, bindings } in bound {
            let policy_name = meta_str(policy, "name");
            let spec = &policy["spec"];
            match matching::matches(&spec["matchConstraints"], &target) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    self.configuration_error(policy_name, None, compiled.failure_policy, &e);
                    continue;
                }
            }
            let param_def = match param_kind(spec) {
                None => None,
                Some((api_version, kind)) => match self.req.objects.find_kind(api_version, kind) {
                    Some(def) => Some(def),
                    None => {
                        let gv = if api_version.contains('/') {
                            api_version.to_owned()
                        } else {
                            format!("/{api_version}")
                        };
                        let e =
                            format!("failed to find resource referenced by paramKind: '{gv}, Kind={kind}'");
                        self.configuration_error(policy_name, None, compiled.failure_policy, &e);
                        continue;
                    }
                },
            };
            let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
            for binding in bindings {
                let binding_name = meta_str(binding, "name");
                let params = match self.binding_params(binding, &target, param_def.as_deref()) {
                    Ok(Some(p)) => p,
                    Ok(None) => continue,
                    Err(e) => {
                        self.configuration_error(
                            policy_name,
                            Some(binding_name),
                            compiled.failure_policy,
                            &e,
                        );
                        continue;
                    }
                };
                let actions = strs(binding.pointer("/spec/validationActions"));
                for param in params {
                    let outcome =
                        compiled.evaluate(self.inputs(&target, param.as_deref(), param_def.as_deref()));
                    for (i, decision) in outcome.decisions.into_iter().enumerate() {
                        if let Decision::Deny { message, reason } = decision {
                            self.act(policy_name, binding_name, &actions, i, message, reason);
                        }
                    }
                    for a in outcome.annotations {
                        match a {
                            Annotation::Publish { key, mut value } => {
                                truncate(&mut value, MAX_ANNOTATION_VALUE);
                                let values = match annotations.iter_mut().find(|(k, _)| *k == key) {
                                    Some((_, v)) => v,
                                    None => {
                                        annotations.push((key, Vec::new()));
                                        &mut annotations.last_mut().expect("just pushed").1
                                    }
                                };
                                if !values.contains(&value) {
                                    values.push(value);
                                }
                            }
                            Annotation::Error(message) => {
                                self.deny(policy_name, Some(binding_name), message, None);
                            }
                        }
                    }
                }
            }
            if let Some(inv) = self.inv {
                for (key, values) in annotations {
                    inv.annotate(format!("{policy_name}/{key}"), values.join(", "));
                }
            }
        }
        match self.denied {
            None => Ok(()),
            Some((policy, binding, message, reason)) => {
                let message = match binding {
                    Some(b) => format!(
                        "ValidatingAdmissionPolicy '{policy}' with binding '{b}' denied request: {message}"
                    ),
                    None => format!("ValidatingAdmissionPolicy '{policy}' denied request: {message}"),
                };
                let def = self.req.def;
                Err(ApiError::policy_denied(
                    def.group,
                    def.plural,
                    self.name,
                    &message,
                    reason.as_deref().unwrap_or(""),
                ))
            }
        }
    }

    /// Keeps the first refusal.
    fn deny(&mut self, policy: &str, binding: Option<&str>, message: String, reason: Option<String>) {
        if self.denied.is_none() {
            self.denied = Some((policy.to_owned(), binding.map(str::to_owned), message, reason));
        }
    }

    /// A policy or binding that cannot be applied: refused under `Fail`, skipped under `Ignore`.
    fn configuration_error(&mut self, policy: &str, binding: Option<&str>, failure: FailurePolicy, e: &str) {
        if failure == FailurePolicy::Ignore {
            return;
        }
        let what = if binding.is_some() { "binding" } else { "policy" };
        self.deny(policy, binding, format!("failed to configure {what}: {e}"), None);
    }

    /// A failed validation, acted on as the binding's `validationActions` say.
    fn act(
        &mut self,
        policy: &str,
        binding: &str,
        actions: &[&str],
        index: usize,
        message: String,
        reason: Option<String>,
    ) {
        for action in actions {
            match *action {
                "Deny" => self.deny(policy, Some(binding), message.clone(), reason.clone()),
                "Warn" => {
                    if let Some(inv) = self.inv {
                        inv.warn(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{binding}': {message}"
                        ));
                    }
                }
                "Audit" => {
                    if let Some(inv) = self.inv {
                        let value = json!([{
                            "message": message,
                            "policy": policy,
                            "binding": binding,
                            "expressionIndex": index,
                            "validationActions": actions,
                        }]);
                        inv.annotate(VALIDATION_FAILURE.to_owned(), value.to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// The params `binding` evaluates its policy with, if it selects the write (its
    /// `matchResources`); `Err` for a configuration error.
    fn binding_params(
        &self,
        binding: &Value,
        target: &Target<'_>,
        param_def: Option<&ResourceDef>,
    ) -> Result<Option<Vec<Option<Arc<Value>>>>, String> {
        if let Some(criteria) = binding.pointer("/spec/matchResources").filter(|m| m.is_object())
            && !matching::matches(criteria, target)?
        {
            return Ok(None);
        }
        self.params(param_def, binding.pointer("/spec/paramRef")).map(Some)
    }

    /// upstream's `CollectParams`: the param objects a binding evaluates its policy with (`None`
    /// once, without a `paramKind` or a `paramRef`).
    fn params(
        &self,
        def: Option<&ResourceDef>,
        param_ref: Option<&Value>,
    ) -> Result<Vec<Option<Arc<Value>>>, String> {
        let (Some(def), Some(param_ref)) = (def, param_ref.filter(|r| r.is_object())) else {
            return Ok(vec![None]);
        };
        let named_ns = param_ref.get("namespace").and_then(Value::as_str).unwrap_or("");
        let ns = if def.namespaced {
            let ns = if named_ns.is_empty() { self.req.ns } else { named_ns };
            if ns.is_empty() {
                return Err(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                        .into(),
                );
            }
            ns
        } else if !named_ns.is_empty() {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
        } else {
            ""
        };
        let name = param_ref.get("name").and_then(Value::as_str).unwrap_or("");
        let found: Vec<Arc<Value>> = if !name.is_empty() {
            self.req.objects.get(def, ns, name).into_iter().collect()
        } else if let Some(selector) = param_ref.get("selector").filter(|s| s.is_object()) {
            let scope = def.namespaced.then_some(ns);
            self.req
                .objects
                .list(def, scope)
                .into_iter()
                .filter(|p| {
                    let labels =
                        p.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
                    crate::selector::selector_matches(selector, &labels)
                })
                .collect()
        } else {
            return Err("one of name or selector must be provided".into());
        };
        if found.is_empty()
            && param_ref.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny")
        {
            return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
        }
        Ok(found.into_iter().map(Some).collect())
    }

    /// The variables an expression reads for this write and `param`: the write's are converted
    /// once, whatever the number of bindings and params.
    fn inputs(&self, target: &Target<'_>, param: Option<&Value>, param_def: Option<&ResourceDef>) -> Inputs {
        let def = self.req.def;
        let mut inputs = self
            .inputs
            .get_or_init(|| {
                let request = attributes::admission_request(self.req, self.name, self.inv);
                Inputs {
                    object: self.obj.map_or(Cel::Null, |o| typed(def, o)),
                    old_object: self.req.old.map_or(Cel::Null, |o| typed(def, o)),
                    request: untyped(&request),
                    params: Cel::Null,
                    namespace_object: self.namespace_object(target).map_or(Cel::Null, |n| untyped(&n)),
                    authorizer: attributes::authorizer(&request, self.inv),
                }
            })
            .clone();
        if let (Some(p), Some(d)) = (param, param_def) {
            inputs.params = typed(d, p);
        }
        inputs
    }

    /// `namespaceObject`: the write's namespace (its metadata, spec and status); none for a
    /// cluster-scoped object or a namespace itself.
    fn namespace_object(&self, target: &Target<'_>) -> Option<Value> {
        let def = self.req.def;
        if self.req.ns.is_empty() || (def.group.is_empty() && def.plural == "namespaces") {
            return None;
        }
        let ns = target.stored_namespace()?;
        let mut out = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": {} });
        for k in ["spec", "status"] {
            if let Some(v) = ns.get(k) {
                out[k] = v.clone();
            }
        }
        if let Some(meta) = ns.get("metadata").and_then(Value::as_object) {
            for k in [
                "name",
                "generateName",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "labels",
                "annotations",
                "finalizers",
            ] {
                if let Some(v) = meta.get(k) {
                    out["metadata"][k] = v.clone();
                }
            }
        }
        Some(out)
    }
}

/// A policy's `paramKind`: its apiVersion and kind.
fn param_kind(spec: &Value) -> Option<(&str, &str)> {
    let pk = spec.get("paramKind").filter(|p| p.is_object())?;
    Some((pk.get("apiVersion").and_then(Value::as_str)?, pk.get("kind").and_then(Value::as_str)?))
}

/// Cuts `s` to at most `max` bytes, at a character boundary.
fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut at = max;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
    }
}
