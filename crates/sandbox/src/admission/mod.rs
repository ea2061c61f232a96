//! Admission: the chain of plugins a write passes through between the kind's strategy and
//! storage, as kube-apiserver's (`k8s.io/apiserver/pkg/admission`).
//!
//! Each plugin is one file here and one line in [`PLUGINS`], in the order upstream runs them
//! (`AllOrderedPlugins` of `pkg/kubeapiserver/options/plugins.go`). The store runs the chain in
//! two phases, as upstream's handlers do:
//!
//! 1. **mutating** ([`admit`]): after the strategy's `PrepareForCreate` and defaults (and after
//!    `managedFields` are recorded: what admission adds belongs to no manager), before the
//!    strategy's validation — every plugin's [`Plugin::admit`], in order;
//! 2. **validating** ([`validate`]): after the strategy's validation, under the store's lock
//!    just before the object is stored — every plugin's [`Plugin::validate`], in order.
//!
//! A plugin reads other objects through [`Objects`] (the store's state, as upstream's plugins
//! read their informers' caches) and refuses with the [`ApiError`] a client gets. A plugin that
//! warns (PodSecurity's `warn` level) answers [`Plugin::warnings`] after the write.
//!
//! What a plugin knows of the request beyond the object — who makes it, whether it is a dry
//! run — and what it leaves on the answer (Warning headers, audit annotations) is the request's
//! [`invocation`](crate::invocation), which the HTTP layer sets around the handler.
//!
//! The webhook plugins ([`webhook`]) are not in [`PLUGINS`]: a call waits on the network, so the
//! store runs them with its lock let go, between its phases — the mutating webhooks after the
//! in-process mutating plugins, as upstream; the validating webhooks before the in-process
//! validating plugins (upstream calls them after the policies, before ResourceQuota), so that
//! when both refuse a write, the webhook's refusal is the one answered.
//!
//! Not run: MutatingAdmissionPolicy, and the plugins upstream has off by default.

mod attributes;
mod default_storage_class;
mod default_toleration_seconds;
mod expression;
mod in_force;
mod limit_ranger;
mod matching;
mod namespace_lifecycle;
mod pod_security;
mod priority;
mod resource_quota;
mod runtime_class;
mod service_account;
mod storage_object_in_use_protection;
mod validating_policy;
pub(crate) use validating_policy::type_check::expression_warnings;
mod webhook;

pub(crate) use storage_object_in_use_protection::protection_finalizer;
pub(crate) use webhook::{
    Calls as WebhookCalls, configuration_kinds as webhook_configuration_kinds, select as webhooks,
};

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::quota::Charges;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugins, in the order upstream runs them; each phase runs them in this order.
pub(crate) static PLUGINS: &[&dyn Plugin] = &[
    &namespace_lifecycle::NamespaceLifecycle,
    &limit_ranger::LimitRanger,
    &service_account::ServiceAccount,
    &pod_security::PodSecurity,
    &priority::Priority,
    &default_toleration_seconds::DefaultTolerationSeconds,
    &default_storage_class::DefaultStorageClass,
    &storage_object_in_use_protection::StorageObjectInUseProtection,
    &runtime_class::RuntimeClass,
    &validating_policy::ValidatingAdmissionPolicy,
    &resource_quota::ResourceQuota,
];

/// What an admission policy or webhook does when it cannot decide: its `failurePolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailurePolicy {
    /// An error refuses the request (the default).
    Fail,
    /// An error lets the request through.
    Ignore,
}

impl FailurePolicy {
    /// The `failurePolicy` of `spec` (a policy's spec, a webhook).
    fn of(spec: &Value) -> Self {
        match spec.get("failurePolicy").and_then(Value::as_str) {
            Some("Ignore") => Self::Ignore,
            _ => Self::Fail,
        }
    }
}

/// Whether `def` is one of the admission configuration kinds, which neither policies nor
/// webhooks judge (`IsExemptAdmissionConfigurationResource`: a configuration cannot lock itself
/// in place).
fn exempt(def: &ResourceDef) -> bool {
    def.custom().is_none()
        && def.group == "admissionregistration.k8s.io"
        && matches!(
            def.plural,
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// The verb of a write admission sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A create (POST, or a PUT or apply that creates).
    Create,
    /// An update of the object itself (PUT, PATCH, apply).
    Update,
    /// A delete (of one object, or each of a collection's): only the validating phase runs,
    /// with no new object.
    Delete,
}

/// What plugins read of the store, as it is when the phase runs.
pub(crate) trait Objects {
    /// The objects of `def` in `ns` (every namespace for `None`).
    fn list(&self, def: &ResourceDef, ns: Option<&str>) -> Vec<Arc<Value>>;
    /// One object of `def`.
    fn get(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<Arc<Value>>;
    /// A namespace, if it exists.
    fn namespace(&self, name: &str) -> Option<Arc<Value>>;
    /// Whether `ns` holds a ResourceQuota (an index the store keeps, so that a write in a
    /// namespace without one costs the quota plugin nothing).
    fn has_quotas(&self, ns: &str) -> bool;
    /// What a cache of `def`'s objects is keyed on: the store's identity and the version of its
    /// last write to them (no other store of the process has the identity, so the pair changes
    /// whenever what a list of them gives could).
    fn written(&self, def: &ResourceDef) -> (u64, u64);
    /// The served resource whose objects have this `apiVersion` and `kind`.
    fn find_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>>;
    /// The versions `plural` of `group` is served in.
    fn versions_of(&self, group: &str, plural: &str) -> Vec<&'static str>;
}

/// One write, as a plugin sees it (upstream's `admission.Attributes`).
pub(crate) struct Request<'a> {
    /// What is done.
    pub op: Operation,
    /// The resource written.
    pub def: &'a ResourceDef,
    /// Its namespace (empty for cluster-scoped resources).
    pub ns: &'a str,
    /// The stored object an update changes, in the request's version.
    pub old: Option<&'a Value>,
    /// The store's objects.
    pub objects: &'a dyn Objects,
}

/// What the validating phase leaves for the store to write with the object: the quotas it
/// charged, with their new `status.used`.
#[derive(Default)]
pub(crate) struct Effects {
    /// The ResourceQuota plugin's charges.
    pub charges: Charges,
}

/// An admission plugin: upstream's `admission.Interface` with its `MutationInterface` and
/// `ValidationInterface`. The default methods do nothing, so a plugin writes only its phases.
pub(crate) trait Plugin: Sync {
    /// Its name, as `--enable-admission-plugins` spells it.
    #[allow(dead_code)]
    fn name(&self) -> &'static str;

    /// Whether it acts on `op` of `def` in any phase (upstream's `Handles`, narrowed to the
    /// resources it looks at): the chain asks before it reads the store for it.
    fn handles(&self, op: Operation, def: &ResourceDef) -> bool;

    /// Whether it has a mutating phase ([`admit`](Self::admit)).
    fn mutates(&self) -> bool {
        false
    }

    /// The mutating phase: changes `obj`, or refuses the write.
    ///
    /// # Errors
    ///
    /// The refusal, as the client gets it.
    fn admit(&self, _req: &Request<'_>, _obj: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }

    /// The validating phase: refuses the write, or lets it through (leaving in `effects` what
    /// must be written with it).
    ///
    /// # Errors
    ///
    /// The refusal, as the client gets it.
    fn validate(&self, _req: &Request<'_>, _obj: &Value, _effects: &mut Effects) -> Result<(), ApiError> {
        Ok(())
    }

    /// Whether a write of `op` on `def` may draw warnings from it, before any object is read
    /// (so that a writer reads the object as it was first only then).
    fn warns(&self, _op: Operation, _def: &ResourceDef) -> bool {
        false
    }

    /// Whether this write draws its warnings, as far as the store's state tells before it.
    fn may_warn(&self, _req: &Request<'_>) -> bool {
        false
    }

    /// The Warning headers it adds to a write that was allowed, of `new` (and `req.old`).
    fn warnings(&self, _req: &Request<'_>, _new: &Value) -> Vec<String> {
        Vec::new()
    }
}

/// Whether the mutating phase has anything to do for `op` of `def` (the store takes its lock
/// for it only then).
pub(crate) fn mutates(op: Operation, def: &ResourceDef) -> bool {
    PLUGINS.iter().any(|p| p.mutates() && p.handles(op, def))
}

/// The mutating phase: every plugin that handles the write changes `obj`, in order.
///
/// # Errors
///
/// The first refusal.
pub(crate) fn admit(req: &Request<'_>, obj: &mut Value) -> Result<(), ApiError> {
    for p in PLUGINS.iter().filter(|p| p.mutates() && p.handles(req.op, req.def)) {
        p.admit(req, obj)?;
    }
    Ok(())
}

/// The validating phase: every plugin that handles the write checks `obj` (`null` for a
/// delete), in order; what they leave to write with it.
///
/// # Errors
///
/// The first refusal.
pub(crate) fn validate(req: &Request<'_>, obj: &Value) -> Result<Effects, ApiError> {
    let mut effects = Effects::default();
    for p in PLUGINS.iter().filter(|p| p.handles(req.op, req.def)) {
        p.validate(req, obj, &mut effects)?;
    }
    Ok(effects)
}

/// Whether some plugin may warn of a write of `op` on `def` (no state read).
pub(crate) fn warns(op: Operation, def: &ResourceDef) -> bool {
    PLUGINS.iter().any(|p| p.warns(op, def))
}

/// Whether some plugin warns of this write, as far as the store's state tells.
pub(crate) fn may_warn(req: &Request<'_>) -> bool {
    PLUGINS.iter().any(|p| p.warns(req.op, req.def) && p.may_warn(req))
}

/// The Warning headers the plugins add to a write of `new` that was allowed.
pub(crate) fn warnings(req: &Request<'_>, new: &Value) -> Vec<String> {
    PLUGINS.iter().filter(|p| p.warns(req.op, req.def)).flat_map(|p| p.warnings(req, new)).collect()
}

/// Whether `def` is the built-in `plural` of the core group.
fn is_core(def: &ResourceDef, plural: &str) -> bool {
    def.custom().is_none() && def.group.is_empty() && def.plural == plural
}

/// The objects of a built-in `plural.group` (v1) in `ns`.
fn list(objects: &dyn Objects, group: &str, plural: &str, ns: Option<&str>) -> Vec<Arc<Value>> {
    let def = crate::catalog::find(group, "v1", plural).expect("a built-in resource");
    objects.list(def, ns)
}

/// An object's `spec`, made an object if it is not one.
fn spec(obj: &mut Value) -> &mut Map<String, Value> {
    crate::object_meta::object_at(obj, "spec")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugins_run_in_upstreams_order() {
        // `AllOrderedPlugins`, kept to the plugins the sandbox runs.
        let upstream = [
            "NamespaceLifecycle",
            "LimitRanger",
            "ServiceAccount",
            "PodSecurity",
            "Priority",
            "DefaultTolerationSeconds",
            "DefaultStorageClass",
            "StorageObjectInUseProtection",
            "RuntimeClass",
            "ValidatingAdmissionPolicy",
            "ResourceQuota",
        ];
        let names: Vec<&str> = PLUGINS.iter().map(|p| p.name()).collect();
        assert_eq!(names, upstream);
    }

    #[test]
    fn only_the_plugins_that_mutate_make_a_create_read_the_store() {
        let find = |group, plural| crate::catalog::find(group, "v1", plural).expect("built in");
        assert!(mutates(Operation::Create, find("", "pods")));
        assert!(mutates(Operation::Create, find("", "persistentvolumeclaims")));
        assert!(mutates(Operation::Create, find("", "persistentvolumes")));
        assert!(!mutates(Operation::Create, find("", "configmaps")));
        assert!(!mutates(Operation::Update, find("", "pods")));
    }
}
