//! What a served resource is: [`ResourceDef`], its [`Strategy`], and the built-in kinds. Adding a
//! built-in kind is a [`ResourceDef`] entry in [`RESOURCES`] naming its k8s-openapi type (which
//! gives its shape, unknown fields and schema), plus its strategy's hooks from [`crate::kinds`]
//! (defaults, validation). Kinds defined at run time by CustomResourceDefinitions join them in
//! the [`Registry`](crate::registry::Registry).

use serde::de::DeserializeOwned;
use serde_json::Value;

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::kinds::{deployment, rbac, service};

/// A field error: `(path, message)`, e.g. `("spec.replicas", "must be greater than or equal to 0")`.
pub type FieldError = (String, String);

/// One API resource: where it lives in the URL space and what the server does to it.
///
/// Built-in kinds are entries of [`RESOURCES`]; a CustomResourceDefinition adds one per served
/// version at run time (see [`crate::registry`]), with a [`Strategy::Custom`] driven by its
/// schema. Both are served by the same store, watches, patches and garbage collector.
#[derive(Debug, Clone)]
pub struct ResourceDef {
    /// API group; `""` for the core group.
    pub group: &'static str,
    /// Version, e.g. `v1`.
    pub version: &'static str,
    /// Plural name, as in URLs.
    pub plural: &'static str,
    /// Singular name, for discovery.
    pub singular: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Kind of the list, `<Kind>List` for every built-in kind.
    pub list_kind: &'static str,
    /// Short names for kubectl, e.g. `cm`.
    pub short_names: &'static [&'static str],
    /// Discovery categories, e.g. `all` (what `kubectl get all` lists).
    pub categories: &'static [&'static str],
    /// Field selector labels beyond `metadata.name` and `metadata.namespace`, as
    /// `(label, JSON pointer into the stored object)`.
    pub field_labels: &'static [(&'static str, &'static str)],
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `status` subresource: the main endpoint ignores status, `/status` changes only status.
    pub status_subresource: bool,
    /// Has a `scale` subresource, and where its fields are.
    pub scale: Option<ScalePaths>,
    /// `metadata.generation` counts spec changes.
    pub has_generation: bool,
    /// Storage this resource's objects live in; two resources may share one (the two Event APIs,
    /// the versions of a custom resource).
    pub storage: &'static str,
    /// What the server does to this resource's objects beyond the generic rules.
    pub strategy: Strategy,
}

/// Where a `scale` subresource reads and writes, as `.`-separated paths (a CRD's
/// `subresources.scale`; `.spec.replicas`, `.status.replicas` and `.spec.selector` for Deployments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`: what `spec.replicas` of the Scale reads and writes.
    pub spec_replicas: &'static str,
    /// `statusReplicasPath`: what `status.replicas` of the Scale reads.
    pub status_replicas: &'static str,
    /// `labelSelectorPath`: what `status.selector` of the Scale reads (a selector string, or a
    /// `LabelSelector` object as a Deployment's `spec.selector`).
    pub label_selector: Option<&'static str>,
}

/// A kind's strategy: upstream's `pkg/registry/<group>/<kind>/strategy.go` for built-in kinds,
/// apiextensions-apiserver's schema-driven one for custom resources.
#[derive(Debug, Clone)]
pub enum Strategy {
    /// A built-in kind: its k8s-openapi type and its hooks in [`crate::kinds`].
    BuiltIn(BuiltIn),
    /// A custom resource of one served version of a CRD.
    Custom(std::sync::Arc<crate::kinds::custom::CustomStrategy>),
}

/// A built-in kind's hooks.
#[derive(Debug, Clone, Copy)]
pub struct BuiltIn {
    /// Converts an object of this resource's version into the storage form.
    pub to_storage: fn(Value) -> Value,
    /// Converts a stored object into this resource's version; `None` when the stored form is
    /// this version's (so it is written out without a copy).
    pub from_storage: Option<fn(Value) -> Value>,
    /// Checks that the object decodes as the kind's type (a failure is a 400 naming the field).
    pub decode: fn(&Value) -> Result<(), String>,
    /// The object as the kind's schema keeps it (decoded as the typed kind and encoded again), to
    /// find the fields the schema does not declare (`fieldValidation`); `None` for kinds served
    /// without a schema.
    pub known: Option<fn(&Value) -> Option<Value>>,
    /// The kind's OpenAPI schema, registered with the generator (a reference to its definition),
    /// for the OpenAPI documents.
    pub schema: Option<fn(&mut schemars::SchemaGenerator) -> schemars::Schema>,
    /// What the strategy's `PrepareForCreate` sets beyond the generic rules (a CRD's initial
    /// status).
    pub prepare_create: fn(&mut Value),
    /// What the strategy's `PrepareForUpdate` sets on an update of the main resource, from the
    /// stored object (a CRD's stored versions).
    pub prepare_update: fn(&mut Value, &Value),
    /// What the *status* strategy's `PrepareForUpdate` restores from the stored object beyond the
    /// spec, on a `/status` write (which otherwise takes the request's metadata and status): a
    /// Deployment's labels.
    pub prepare_status_update: fn(&mut Value, &Value),
    /// The strategy's `AllowUnconditionalUpdate`: a PUT without `metadata.resourceVersion` is
    /// accepted (most kinds); `false` refuses it with 422 (Leases, CRDs).
    pub allow_unconditional_update: bool,
    /// The group of the internal type the registry validates, when it is not the resource's:
    /// an `Invalid` error names the internal kind (events.k8s.io Events are stored and validated
    /// as core Events, so their 422s have no group).
    pub internal_group: Option<&'static str>,
    /// Fills in the API server's defaults.
    pub default: fn(&mut Value),
    /// Validates `new` (and, on update, against `old`).
    pub validate: fn(&Value, Option<&Value>) -> Vec<FieldError>,
}

impl BuiltIn {
    /// A kind with no rules of its own: any shape, no defaults, no validation, no schema.
    pub const PLAIN: Self = Self {
        to_storage: same,
        from_storage: None,
        decode: any_shape,
        known: None,
        schema: None,
        prepare_create: no_defaults,
        prepare_update: no_update_rules,
        prepare_status_update: no_update_rules,
        allow_unconditional_update: true,
        internal_group: None,
        default: no_defaults,
        validate: no_validation,
    };
}

impl ResourceDef {
    /// `v1` or `apps/v1`.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The custom strategy, for a resource a CRD defines.
    #[must_use]
    pub fn custom(&self) -> Option<&crate::kinds::custom::CustomStrategy> {
        match &self.strategy {
            Strategy::Custom(c) => Some(c),
            Strategy::BuiltIn(_) => None,
        }
    }

    /// Sets `apiVersion` and `kind` on an object of this resource.
    pub fn stamp(&self, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), Value::String(self.api_version()));
            o.insert("kind".into(), Value::String(self.kind.to_owned()));
        }
    }

    /// An object of this resource's version in the storage form.
    #[must_use]
    pub fn to_storage(&self, obj: Value) -> Value {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.to_storage)(obj),
            Strategy::Custom(_) => obj,
        }
    }

    /// Whether a stored object must be converted to be read in this version (a copy is made).
    fn converts(&self) -> bool {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.from_storage.is_some(),
            Strategy::Custom(_) => true,
        }
    }

    /// A stored object in this resource's version (without `apiVersion` and `kind` stamped).
    #[must_use]
    pub fn in_version(&self, stored: &Value) -> Value {
        match &self.strategy {
            Strategy::BuiltIn(b) => {
                b.from_storage.map_or_else(|| stored.clone(), |convert| convert(stored.clone()))
            }
            Strategy::Custom(c) => c.read(stored),
        }
    }

    /// The stored object as this version sees it, borrowed when no conversion is needed.
    #[must_use]
    pub fn view<'a>(&self, stored: &'a Value) -> std::borrow::Cow<'a, Value> {
        if self.converts() {
            std::borrow::Cow::Owned(self.in_version(stored))
        } else {
            std::borrow::Cow::Borrowed(stored)
        }
    }

    /// A stored object as this resource presents it.
    #[must_use]
    pub fn present(&self, stored: &Value) -> Value {
        let mut v = self.in_version(stored);
        self.stamp(&mut v);
        v
    }

    /// Appends a stored object as this resource presents it, as JSON, to `out`: `kind` and
    /// `apiVersion` first, as the API server writes them (a client decoding a watch event or a
    /// list item meets them before the body), and without copying the object when it is stored
    /// in this version.
    pub fn write_presented(&self, stored: &Value, out: &mut Vec<u8>) {
        let obj = self.view(stored);
        // Serialising a `Value` into a Vec cannot fail.
        let _ = serde_json::to_writer(out, &Presented { def: self, obj: &obj });
    }

    /// Checks that the object decodes as the kind (a failure is a 400 naming the field).
    ///
    /// # Errors
    ///
    /// The decode error, naming the field.
    pub fn decode(&self, obj: &Value) -> Result<(), String> {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.decode)(obj),
            Strategy::Custom(c) => c.decode(obj),
        }
    }

    /// The object as the kind's schema keeps it, to find the fields the schema does not declare;
    /// `None` for kinds served without a schema.
    #[must_use]
    pub fn known(&self, obj: &Value) -> Option<Value> {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.known.and_then(|k| k(obj)),
            Strategy::Custom(c) => Some(c.known(obj)),
        }
    }

    /// What a create sets beyond the generic rules, before defaults.
    pub fn prepare_create(&self, obj: &mut Value) {
        if let Strategy::BuiltIn(b) = &self.strategy {
            (b.prepare_create)(obj);
        }
    }

    /// What an update of the main resource sets beyond the generic rules, from the stored object.
    pub fn prepare_update(&self, new: &mut Value, old: &Value) {
        if let Strategy::BuiltIn(b) = &self.strategy {
            (b.prepare_update)(new, old);
        }
    }

    /// What a `/status` write restores from the stored object beyond the spec (the status
    /// strategy's `PrepareForUpdate`). A custom resource's status strategy restores everything
    /// but the status (apiextensions' `customresource/status_strategy.go`): see the store.
    pub fn prepare_status_update(&self, new: &mut Value, old: &Value) {
        if let Strategy::BuiltIn(b) = &self.strategy {
            (b.prepare_status_update)(new, old);
        }
    }

    /// The strategy's `AllowUnconditionalUpdate`; custom resources' is `false`
    /// (apiextensions' `customresource/strategy.go`).
    #[must_use]
    pub fn allows_unconditional_update(&self) -> bool {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.allow_unconditional_update,
            Strategy::Custom(_) => false,
        }
    }

    /// The group a validation error (`Invalid`) names: the internal type's
    /// (`rest.BeforeCreate`/`BeforeUpdate` take it from `ObjectKinds` of the internal object).
    #[must_use]
    pub fn internal_group(&self) -> &'static str {
        match &self.strategy {
            Strategy::BuiltIn(BuiltIn { internal_group: Some(g), .. }) => g,
            _ => self.group,
        }
    }

    /// Fills in the API server's defaults.
    pub fn apply_defaults(&self, obj: &mut Value) {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.default)(obj),
            Strategy::Custom(c) => c.default(obj),
        }
    }

    /// Validates `new` (and, on update, against `old`).
    #[must_use]
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.validate)(new, old),
            Strategy::Custom(c) => c.validate(new, old),
        }
    }

    /// Whether an update from `old` to `new` takes a new `metadata.generation`.
    #[must_use]
    pub fn generation_changes(&self, new: &Value, old: &Value) -> bool {
        if !self.has_generation {
            return false;
        }
        if self.custom().is_some() {
            // apiextensions' strategy: anything but metadata (and status, when it is a
            // subresource) is spec.
            let skipped = |k: &str| {
                matches!(k, "metadata" | "apiVersion" | "kind") || (self.status_subresource && k == "status")
            };
            let (Some(n), Some(o)) = (new.as_object(), old.as_object()) else { return new != old };
            let spec = |m: &'_ serde_json::Map<String, Value>| m.iter().filter(|(k, _)| !skipped(k)).count();
            return spec(n) != spec(o)
                || n.iter().filter(|(k, _)| !skipped(k)).any(|(k, v)| o.get(k) != Some(v));
        }
        // As the Deployment strategy: a spec change bumps the generation, and so does an
        // annotation change (annotations are copied to the ReplicaSets).
        let annotations = |o: &Value| {
            o.pointer("/metadata/annotations")
                .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
                .cloned()
        };
        new.get("spec") != old.get("spec")
            || (self.plural == "deployments" && annotations(new) != annotations(old))
    }
}

/// An object serialised with this resource's `kind` and `apiVersion` first.
struct Presented<'a> {
    def: &'a ResourceDef,
    obj: &'a Value,
}

impl serde::Serialize for Presented<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Some(fields) = self.obj.as_object() else { return self.obj.serialize(s) };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", self.def.kind)?;
        m.serialize_entry("apiVersion", &self.def.api_version())?;
        for (k, v) in fields.iter().filter(|(k, _)| *k != "kind" && *k != "apiVersion") {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Checks that `obj` decodes as the k8s-openapi type `K`; the error names the field.
///
/// # Errors
///
/// The decode error, e.g. `spec.ports[0].port: invalid type: string "x", expected i32`.
pub fn decode_as<K: DeserializeOwned>(obj: &Value) -> Result<(), String> {
    serde_path_to_error::deserialize::<_, K>(obj).map(drop).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })
}

/// `obj` decoded as `K` and encoded again: what the kind's schema keeps of it (unknown fields
/// gone); `None` when it does not decode (the decode step reports why).
pub fn known_as<K: DeserializeOwned + serde::Serialize>(obj: &Value) -> Option<Value> {
    // Decoded from the borrowed value: no copy of the object on the way in.
    K::deserialize(obj).ok().and_then(|k| serde_json::to_value(k).ok())
}

/// Registers `K`'s schema with the generator.
fn schema_of<K: schemars::JsonSchema>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<K>()
}

fn same(v: Value) -> Value {
    v
}
fn no_defaults(_: &mut Value) {}
fn no_update_rules(_: &mut Value, _: &Value) {}
fn any_shape(_: &Value) -> Result<(), String> {
    Ok(())
}
fn no_validation(_: &Value, _: Option<&Value>) -> Vec<FieldError> {
    Vec::new()
}

/// Core v1 Event ↔ events.k8s.io/v1 Event field names; stored in the core form.
const EVENT_RENAMES: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn rename_fields(mut v: Value, to_new: bool) -> Value {
    if let Some(o) = v.as_object_mut() {
        for (core, new) in EVENT_RENAMES {
            let (from, to) = if to_new { (core, new) } else { (new, core) };
            if let Some(x) = o.remove(from) {
                o.insert(to.to_owned(), x);
            }
        }
    }
    v
}

fn event_to_core(v: Value) -> Value {
    rename_fields(v, false)
}
fn event_from_core(v: Value) -> Value {
    rename_fields(v, true)
}
/// An events.k8s.io/v1 Event stored as the core/v1 type writes it.
fn events_v1_to_storage(v: Value) -> Value {
    let mut core = event_to_core(v);
    crate::kinds::event::default_core(&mut core);
    core
}
/// A stored Event as the events.k8s.io/v1 type writes it.
fn events_v1_from_storage(v: Value) -> Value {
    let mut new = event_from_core(v);
    crate::kinds::event::default_events_v1(&mut new);
    new
}

/// The field labels of core v1 Events (what `kubectl describe` selects on).
const CORE_EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject.kind", "/involvedObject/kind"),
    ("involvedObject.namespace", "/involvedObject/namespace"),
    ("involvedObject.name", "/involvedObject/name"),
    ("involvedObject.uid", "/involvedObject/uid"),
    ("involvedObject.apiVersion", "/involvedObject/apiVersion"),
    ("involvedObject.resourceVersion", "/involvedObject/resourceVersion"),
    ("involvedObject.fieldPath", "/involvedObject/fieldPath"),
    ("reason", "/reason"),
    ("reportingComponent", "/reportingComponent"),
    ("source", "/source/component"),
    ("type", "/type"),
];

/// A Namespace's field labels beyond `metadata.name` (`pkg/registry/core/namespace/strategy.go`,
/// `NamespaceToSelectableFields`: `status.phase`, and `name`, kept for compatibility).
const NAMESPACE_FIELDS: &[(&str, &str)] = &[("status.phase", "/status/phase"), ("name", "/metadata/name")];

/// A Secret's field label beyond the metadata (`pkg/registry/core/secret/strategy.go`,
/// `SelectableFields`: `type`).
const SECRET_FIELDS: &[(&str, &str)] = &[("type", "/type")];

macro_rules! resource {
    ($group:literal, $version:literal, $plural:literal, $singular:literal, $kind:literal, [$($short:literal),*], namespaced: $ns:literal) => {
        ResourceDef {
            group: $group,
            version: $version,
            plural: $plural,
            singular: $singular,
            kind: $kind,
            list_kind: concat!($kind, "List"),
            short_names: &[$($short),*],
            categories: &[],
            field_labels: &[],
            namespaced: $ns,
            status_subresource: false,
            scale: None,
            has_generation: false,
            storage: concat!($plural, ".", $group),
            strategy: Strategy::BuiltIn(BuiltIn::PLAIN),
        }
    };
}

/// Where a Deployment's scale subresource reads and writes.
const DEPLOYMENT_SCALE: ScalePaths = ScalePaths {
    spec_replicas: ".spec.replicas",
    status_replicas: ".status.replicas",
    label_selector: Some(".spec.selector"),
};

/// Every built-in resource the sandbox serves.
pub static RESOURCES: &[ResourceDef] = &[
    ResourceDef {
        status_subresource: true,
        field_labels: NAMESPACE_FIELDS,
        strategy: Strategy::BuiltIn(BuiltIn {
            default: crate::kinds::namespace::default,
            prepare_update: crate::kinds::namespace::prepare_update,
            schema: Some(schema_of::<api::core::v1::Namespace>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("", "v1", "namespaces", "namespace", "Namespace", ["ns"], namespaced: false)
    },
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::core::v1::ConfigMap>,
            known: Some(known_as::<api::core::v1::ConfigMap>),
            validate: crate::kinds::configmap::validate,
            schema: Some(schema_of::<api::core::v1::ConfigMap>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("", "v1", "configmaps", "configmap", "ConfigMap", ["cm"], namespaced: true)
    },
    ResourceDef {
        field_labels: SECRET_FIELDS,
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::core::v1::Secret>,
            known: Some(known_as::<api::core::v1::Secret>),
            default: crate::kinds::secret::default,
            validate: crate::kinds::secret::validate,
            schema: Some(schema_of::<api::core::v1::Secret>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("", "v1", "secrets", "secret", "Secret", [], namespaced: true)
    },
    ResourceDef {
        storage: "events",
        field_labels: CORE_EVENT_FIELDS,
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: crate::kinds::event::decode_core,
            default: crate::kinds::event::default_core,
            validate: crate::kinds::event::validate_core,
            schema: Some(schema_of::<api::core::v1::Event>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("", "v1", "events", "event", "Event", ["ev"], namespaced: true)
    },
    ResourceDef {
        status_subresource: true,
        scale: Some(DEPLOYMENT_SCALE),
        has_generation: true,
        categories: &["all"],
        strategy: Strategy::BuiltIn(BuiltIn {
            default: deployment::default,
            validate: deployment::validate,
            prepare_status_update: deployment::prepare_status_update,
            known: Some(known_as::<api::apps::v1::Deployment>),
            schema: Some(schema_of::<api::apps::v1::Deployment>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("apps", "v1", "deployments", "deployment", "Deployment", ["deploy"], namespaced: true)
    },
    ResourceDef {
        storage: "events",
        strategy: Strategy::BuiltIn(BuiltIn {
            to_storage: events_v1_to_storage,
            from_storage: Some(events_v1_from_storage),
            decode: crate::kinds::event::decode_events_v1,
            default: crate::kinds::event::default_events_v1,
            validate: crate::kinds::event::validate_events_v1,
            schema: Some(schema_of::<api::events::v1::Event>),
            internal_group: Some(""),
            ..BuiltIn::PLAIN
        }),
        ..resource!("events.k8s.io", "v1", "events", "event", "Event", ["ev"], namespaced: true)
    },
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: crate::kinds::lease::decode,
            known: Some(known_as::<api::coordination::v1::Lease>),
            default: crate::kinds::lease::default,
            validate: crate::kinds::lease::validate,
            schema: Some(schema_of::<api::coordination::v1::Lease>),
            allow_unconditional_update: false,
            ..BuiltIn::PLAIN
        }),
        ..resource!("coordination.k8s.io", "v1", "leases", "lease", "Lease", [], namespaced: true)
    },
    // Built-in kinds a deployment of a controller uses.
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::core::v1::ServiceAccount>,
            known: Some(known_as::<api::core::v1::ServiceAccount>),
            schema: Some(schema_of::<api::core::v1::ServiceAccount>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", ["sa"], namespaced: true)
    },
    ResourceDef {
        status_subresource: true,
        categories: &["all"],
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::core::v1::Service>,
            known: Some(known_as::<api::core::v1::Service>),
            default: service::default,
            validate: service::validate,
            schema: Some(schema_of::<api::core::v1::Service>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("", "v1", "services", "service", "Service", ["svc"], namespaced: true)
    },
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::rbac::v1::Role>,
            known: Some(known_as::<api::rbac::v1::Role>),
            schema: Some(schema_of::<api::rbac::v1::Role>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", [], namespaced: true)
    },
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::rbac::v1::ClusterRole>,
            known: Some(known_as::<api::rbac::v1::ClusterRole>),
            schema: Some(schema_of::<api::rbac::v1::ClusterRole>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", [], namespaced: false)
    },
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::rbac::v1::RoleBinding>,
            known: Some(known_as::<api::rbac::v1::RoleBinding>),
            validate: rbac::validate_binding,
            schema: Some(schema_of::<api::rbac::v1::RoleBinding>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", [], namespaced: true)
    },
    ResourceDef {
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::rbac::v1::ClusterRoleBinding>,
            known: Some(known_as::<api::rbac::v1::ClusterRoleBinding>),
            validate: rbac::validate_binding,
            schema: Some(schema_of::<api::rbac::v1::ClusterRoleBinding>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", [], namespaced: false)
    },
    ResourceDef {
        status_subresource: true,
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<api::policy::v1::PodDisruptionBudget>,
            known: Some(known_as::<api::policy::v1::PodDisruptionBudget>),
            schema: Some(schema_of::<api::policy::v1::PodDisruptionBudget>),
            ..BuiltIn::PLAIN
        }),
        ..resource!("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", ["pdb"], namespaced: true)
    },
    // What custom resources are defined by.
    ResourceDef {
        status_subresource: true,
        has_generation: true,
        categories: &["api-extensions"],
        strategy: Strategy::BuiltIn(BuiltIn {
            decode: decode_as::<CustomResourceDefinition>,
            known: Some(known_as::<CustomResourceDefinition>),
            prepare_create: crate::kinds::crd::prepare_create,
            prepare_update: crate::kinds::crd::prepare_update,
            default: crate::kinds::crd::default,
            validate: crate::kinds::crd::validate,
            schema: Some(schema_of::<CustomResourceDefinition>),
            allow_unconditional_update: false,
            ..BuiltIn::PLAIN
        }),
        ..resource!("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", ["crd", "crds"], namespaced: false)
    },
];

/// Finds a built-in resource by group, version and plural (custom resources are found through
/// the [`Registry`](crate::registry::Registry)).
#[must_use]
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The CustomResourceDefinition resource.
#[must_use]
pub fn crds() -> &'static ResourceDef {
    find("apiextensions.k8s.io", "v1", "customresourcedefinitions").expect("CRDs are a built-in kind")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_body_that_does_not_decode_names_its_field() {
        use k8s_openapi::api::rbac::v1::Role;
        let ok = json!({ "metadata": { "name": "r" }, "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"] }] });
        assert_eq!(decode_as::<Role>(&ok), Ok(()));
        let bad = json!({ "metadata": { "name": "r" }, "rules": [{ "verbs": "get" }] });
        let e = decode_as::<Role>(&bad).unwrap_err();
        assert!(e.starts_with("rules[0].verbs: invalid type: string"), "{e}");
    }

    #[test]
    fn events_round_trip_between_the_two_apis() {
        let new = json!({ "regarding": { "name": "web" }, "note": "hi", "reason": "Created", "reportingController": "c" });
        let core = event_to_core(new.clone());
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "hi");
        assert_eq!(event_from_core(core), new);
    }
}
