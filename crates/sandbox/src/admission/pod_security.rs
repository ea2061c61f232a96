//! PodSecurity (`plugin/pkg/admission/security/podsecurity`): the namespace's `enforce` level
//! refuses the pods that break it (403); its `warn` level warns of them, and of the pod templates
//! of workloads (the kinds whose strategy names a
//! [`pod_template`](crate::resource::ResourceDef::pod_template)); a namespace given a new
//! `enforce` level warns of the pods already in it that break it. The levels' checks are
//! [`levels`].

mod levels;

use serde_json::Value;

use super::{Effects, Operation, Plugin, Request, is_core, list};
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct PodSecurity;

impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "pods")
    }

    fn validate(&self, req: &Request<'_>, pod: &Value, _: &mut Effects) -> Result<(), ApiError> {
        match req.objects.namespace(req.ns).and_then(|n| levels::enforce_refusal(&n, pod)) {
            Some(why) => Err(ApiError::admission_forbidden("", "pods", meta_str(pod, "name"), &why)),
            None => Ok(()),
        }
    }

    /// A namespace update (a new enforce level), a pod or workload write.
    fn warns(&self, op: Operation, def: &ResourceDef) -> bool {
        if def.custom().is_some() {
            return false;
        }
        if is_core(def, "namespaces") {
            return op == Operation::Update;
        }
        is_core(def, "pods") || def.pod_template().is_some()
    }

    /// A namespace update always may; a pod or a workload's template only where the namespace
    /// has a `warn` level (a controller's writes to its workloads in an ordinary namespace pay
    /// nothing).
    fn may_warn(&self, req: &Request<'_>) -> bool {
        is_core(req.def, "namespaces")
            || req.objects.namespace(req.ns).and_then(|n| levels::policy(&n, "warn")).is_some()
    }

    /// The `warn` level's words for a created pod, and for a workload's pod template when it is
    /// created or changed; for a namespace given a new `enforce` level, the pods already in it
    /// that break it.
    fn warnings(&self, req: &Request<'_>, new: &Value) -> Vec<String> {
        let old = req.old;
        if is_core(req.def, "namespaces") {
            let Some(old) = old else { return Vec::new() };
            let policy = |n: &Value| levels::policy(n, "enforce");
            if policy(new).is_none() || policy(new) == policy(old) {
                return Vec::new();
            }
            let pods = list(req.objects, "", "pods", Some(meta_str(new, "name")));
            return levels::existing_pods_warnings(new, &pods);
        }
        let Some(namespace) = req.objects.namespace(req.ns) else { return Vec::new() };
        let namespace = &namespace;
        if is_core(req.def, "pods") {
            return if old.is_none() { levels::warnings(namespace, new) } else { Vec::new() };
        }
        let Some(path) = req.def.pod_template() else { return Vec::new() };
        let template = |o: &Value| o.pointer(path).cloned();
        match (template(new), old.map(template)) {
            (Some(t), None) => levels::warnings(namespace, &t),
            (Some(t), Some(before)) if before.as_ref() != Some(&t) => levels::warnings(namespace, &t),
            _ => Vec::new(),
        }
    }
}
