//! What a served resource is: [`ResourceDef`], its [`Strategy`], how it answers ([`Answer`]),
//! the subresources that act on its objects ([`Action`]) and the part of an object a request
//! addresses ([`Subresource`]). The built-in kinds are listed in
//! [`crate::catalog`], one file per API group: adding one is an entry naming its k8s-openapi type
//! (which gives its shape, unknown fields and schema), plus its strategy's hooks from
//! [`crate::kinds`] (defaults, validation). Kinds defined at run time by
//! CustomResourceDefinitions join them in the [`Registry`](crate::registry::Registry).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::status::{ApiError, FieldError};

/// One API resource: where it lives in the URL space and what the server does to it.
///
/// Built-in kinds are entries of the crate's catalog ([`builtin_resource`](crate::builtin_resource));
/// a CustomResourceDefinition adds one per served version at run time, with a strategy driven
/// by its schema ([`Store::find`](crate::Store::find)). Both are served by the same store,
/// watches, patches and garbage collector.
#[derive(Debug, Clone)]
pub struct ResourceDef {
    /// API group; `""` for the core group.
    pub group: &'static str,
    /// Version, e.g. `v1`.
    pub version: &'static str,
    /// Plural name, as in URLs.
    pub plural: &'static str,
    /// Singular name, for discovery.
    pub(crate) singular: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Kind of the list, `<Kind>List` for every built-in kind.
    pub(crate) list_kind: &'static str,
    /// Short names for kubectl, e.g. `cm`.
    pub(crate) short_names: &'static [&'static str],
    /// Discovery categories, e.g. `all` (what `kubectl get all` lists).
    pub(crate) categories: &'static [&'static str],
    /// Field selector labels beyond `metadata.name` and `metadata.namespace`, as
    /// `(label, JSON pointer into the stored object)`.
    pub(crate) field_labels: &'static [(&'static str, &'static str)],
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `status` subresource: the main endpoint ignores status, `/status` changes only status.
    pub(crate) status_subresource: bool,
    /// Has a `scale` subresource, and where its fields are.
    pub(crate) scale: Option<ScalePaths>,
    /// `metadata.generation` counts spec changes.
    pub(crate) has_generation: bool,
    /// Storage this resource's objects live in; two resources may share one (the two Event APIs,
    /// the versions of a custom resource).
    pub(crate) storage: &'static str,
    /// What the server does to this resource's objects beyond the generic rules.
    pub(crate) strategy: Strategy,
}

/// Where a `scale` subresource reads and writes, as `.`-separated paths (a CRD's
/// `subresources.scale`; `.spec.replicas`, `.status.replicas` and `.spec.selector` for Deployments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`: what `spec.replicas` of the Scale reads and writes.
    pub(crate) spec_replicas: &'static str,
    /// `statusReplicasPath`: what `status.replicas` of the Scale reads.
    pub(crate) status_replicas: &'static str,
    /// `labelSelectorPath`: what `status.selector` of the Scale reads (a selector string, or a
    /// `LabelSelector` object as a Deployment's `spec.selector`).
    pub(crate) label_selector: Option<&'static str>,
}

/// A kind's strategy: upstream's `pkg/registry/<group>/<kind>/strategy.go` for built-in kinds,
/// apiextensions-apiserver's schema-driven one for custom resources.
// A built-in strategy is a table of hooks held inline: the defs are made once, and read by
// reference; boxing it would cost every hook call an indirection for no memory saved.
#[allow(clippy::large_enum_variant)]
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
    pub(crate) to_storage: fn(Value) -> Value,
    /// Converts a stored object into this resource's version; `None` when the stored form is
    /// this version's (so it is written out without a copy).
    pub(crate) from_storage: Option<fn(Value) -> Value>,
    /// Checks that the object decodes as the kind's type (a failure is a 400 naming the field).
    pub(crate) decode: fn(&Value) -> Result<(), String>,
    /// The object as the kind's schema keeps it (decoded as the typed kind and encoded again), to
    /// find the fields the schema does not declare (`fieldValidation`); `None` for kinds served
    /// without a schema.
    pub(crate) known: Option<fn(&Value) -> Option<Value>>,
    /// The kind's OpenAPI schema, registered with the generator (a reference to its definition),
    /// for the OpenAPI documents.
    pub(crate) schema: Option<fn(&mut schemars::SchemaGenerator) -> schemars::Schema>,
    /// What the strategy's `PrepareForCreate` sets beyond the generic rules (a CRD's initial
    /// status).
    pub(crate) prepare_create: fn(&mut Value),
    /// What the strategy's `PrepareForUpdate` sets on an update of the main resource, from the
    /// stored object (a CRD's stored versions).
    pub(crate) prepare_update: fn(&mut Value, &Value),
    /// What the *status* strategy's `PrepareForUpdate` restores from the stored object beyond the
    /// spec, on a `/status` write (which otherwise takes the request's metadata and status): a
    /// Deployment's labels.
    pub(crate) prepare_status_update: fn(&mut Value, &Value),
    /// What the *status* strategy's `ValidateUpdate` checks beyond the kind's `validate`, from
    /// the stored object to `new` (a CertificateSigningRequest's `/status` may not add or change
    /// its Approved and Denied conditions, which its `approval` subresource may).
    pub(crate) validate_status_update: fn(&Value, &Value) -> Vec<FieldError>,
    /// The strategy's `AllowUnconditionalUpdate`: a PUT without `metadata.resourceVersion` is
    /// accepted (most kinds); `false` refuses it with 422 (Leases, CRDs).
    pub(crate) allow_unconditional_update: bool,
    /// The group of the internal type the registry validates, when it is not the resource's:
    /// an `Invalid` error names the internal kind (events.k8s.io Events are stored and validated
    /// as core Events, so their 422s have no group).
    pub(crate) internal_group: Option<&'static str>,
    /// Fills in the API server's defaults.
    pub(crate) default: fn(&mut Value),
    /// Validates `new` (and, on update, against `old`).
    pub(crate) validate: fn(&Value, Option<&Value>) -> Vec<FieldError>,
    /// The rule a name is held to (`ValidateObjectMeta`'s name function): why a name is not one,
    /// or `None`.
    pub(crate) name_rule: fn(&str) -> Option<String>,
    /// Where the metadata's errors stand among the kind's.
    pub(crate) metadata_order: MetadataOrder,
    /// The strategy's `ValidateUpdate` validates the new object as on a create, then as an
    /// update — which validates it again: each error of the object is reported twice.
    pub(crate) update_validates_twice: bool,
    /// The strategy's `DefaultGarbageCollectionPolicy`: what a delete without a propagation
    /// policy does to the object's dependents.
    pub(crate) gc_policy: GcPolicy,
    /// The registry's `ReturnDeletedObject`: a DELETE that removes an object answers with it
    /// rather than a `Status`.
    pub(crate) returns_deleted_object: bool,
    /// Whether objects are stored, or each request is answered without storing anything.
    pub(crate) answer: Answer,
    /// The subresources beyond `status` and `scale`.
    pub(crate) actions: &'static [Action],
    /// The streaming subresources the object's kubelet serves (a Pod's `exec`, `attach`,
    /// `portforward`); not in discovery. The sandbox runs no container: a request to one of an
    /// existing object is refused as a request that did not upgrade its connection.
    pub(crate) kubelet_streams: &'static [&'static str],
    /// The warning the registry gives on a delete that names neither a propagation policy nor
    /// `orphanDependents` (a Job's: its pods are preserved).
    pub(crate) orphaning_warning: Option<&'static str>,
    /// The warning every answer about the resource carries, a refusal too (upstream's
    /// deprecated resources: `v1 ComponentStatus is deprecated in v1.19+`).
    pub(crate) deprecation: Option<&'static str>,
    /// The verbs a stored kind's objects and collection answer, for discovery and routing
    /// ([`STORED_VERBS`] for most; a Namespace has no `deletecollection`).
    pub(crate) verbs: &'static [&'static str],
    /// The name the strategy's `PrepareForCreate` gives an object created with neither a name
    /// nor a `generateName` (a LimitRange is named with a fresh uid); `None`: the name is
    /// required.
    pub(crate) name_unnamed: Option<fn() -> String>,
    /// The strategy's `AllowCreateOnUpdate`: a PUT to a missing object creates it (Leases,
    /// Events, Services, Endpoints, LimitRanges, RBAC's roles and bindings); most kinds answer
    /// 404.
    pub(crate) create_on_update: bool,
    /// A create keeps the request's `status` though the kind has a status subresource (the
    /// Namespace strategy's `PrepareForCreate` keeps the phase); other such kinds drop it.
    pub(crate) create_keeps_status: bool,
    /// Whether a spec change takes a new `metadata.generation`, from the stored object `old` to
    /// `new` (the kind's `PrepareForUpdate`): [`spec_changed`](crate::kinds::spec_changed) for most kinds.
    pub(crate) generation_changes: fn(&Value, &Value) -> bool,
    /// What a DELETE does to an object of this kind before the generic rules.
    pub(crate) deletion: Deletion,
    /// Whether the kind has upstream's watch cache (`DefaultWatchCacheSizes`); Events have none,
    /// so their lists are served by etcd3's store and a bad `resourceVersion` is its 400.
    pub(crate) watch_cached: bool,
    /// How a field selector naming an unknown label is refused, when the kind's conversion has
    /// its own words (batch/v1 Job's); `None`: the common words (see
    /// [`ResourceDef::label_refusal`]).
    pub(crate) label_refusal: Option<crate::selector::LabelRefusal>,
    /// Where the kind holds a pod template, as a JSON pointer (Deployments' `/spec/template`,
    /// PodTemplates' `/template`): what PodSecurity admission checks of it.
    pub(crate) pod_template: Option<&'static str>,
    /// Its objects are few, small and read under the store's lock by admission on every create
    /// in their namespace (namespaces, service accounts, priority classes, limit ranges, storage
    /// classes, quotas): the store keeps them parsed for good.
    pub(crate) read_by_admission: bool,
}

/// What a DELETE does first, by kind (upstream's `rest.RESTDeleteStrategy` and the registries
/// that override `Delete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Finalizers and propagation decide (most kinds).
    Immediate,
    /// The Pod strategy's `CheckGracefulDelete`: a pod bound to a node and not finished is given
    /// its grace period and left for its kubelet.
    Graceful,
    /// The Namespace registry's `Delete`: the namespace turns `Terminating` and is emptied and
    /// removed by the namespace controller.
    Terminating,
    /// The object always goes through its finalizer and is answered marked with it (a
    /// CustomResourceDefinition: its instances go first).
    Finalized,
}

/// The verbs of a stored kind.
pub const STORED_VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// Where a strategy's validation puts the metadata's errors.
#[derive(Debug, Clone, Copy)]
pub enum MetadataOrder {
    /// First, then the kind's (`ValidateObjectMeta` opens most kinds' validation).
    First,
    /// Not at all in the strategy: the generic `ValidateObjectMetaAccessor` checks them after
    /// it, only when the kind's rules pass (core/v1 Events, PodDisruptionBudgets).
    AfterKind,
    /// After the rules this function gives, before the rest of the kind's (events.k8s.io/v1
    /// Events: the legacy Event rules first).
    After(fn(&Value) -> Vec<FieldError>),
}

/// A strategy's `DefaultGarbageCollectionPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are deleted, in the background unless asked otherwise (most kinds).
    DeleteDependents,
    /// Dependents are orphaned unless asked otherwise (batch/v1 Jobs and v1
    /// ReplicationControllers, for old clients).
    OrphanDependents,
    /// Neither orphaning nor foreground deletion (Events).
    Unsupported,
}

/// How a resource answers: most store their objects; a few are answered from the request alone
/// (upstream's `rest.Creater`-only storages, such as the access reviews) or from the server's
/// own state (`componentstatuses`).
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// Objects are stored, listed and watched: every verb (a Namespace has no
    /// `deletecollection`).
    Stored,
    /// `create` only: the request's object comes back with its `status` filled in, and nothing
    /// is stored (`SelfSubjectAccessReview`, `TokenReview`, …; a `Binding` binds its Pod).
    Review(Review),
    /// `get` and `list` only, of objects the server makes up on each request.
    Computed(fn() -> Vec<Value>),
    /// `get` and `list` only: resource metrics, from the pods and their containers' usage now
    /// (`metrics.k8s.io`, metrics-server's API; the answers are in `crate::metrics`).
    Metrics(Metrics),
}

/// Whose resource metrics an [`Answer::Metrics`] resource reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metrics {
    /// `PodMetrics`: each running container's usage.
    Pods,
    /// `NodeMetrics`: the sum of a node's pods'.
    Nodes,
}

/// A subresource that does something to an object rather than store a part of it as `status`
/// and `scale` do: `pods/binding`, `pods/eviction`, `serviceaccounts/token`,
/// `certificatesigningrequests/approval`, `namespaces/finalize`…
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// The name after the object's, as in `pods/<name>/binding`.
    pub(crate) name: &'static str,
    /// What its requests and answers are: `(group, version, kind)`.
    pub(crate) kind: (&'static str, &'static str, &'static str),
    /// The verbs it answers, for discovery; a request with another is a 405.
    pub(crate) verbs: &'static [&'static str],
    /// What it does.
    pub(crate) run: Run,
}

/// What an [`Action`] subresource does (the answers are in [`crate::actions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// `pods/binding`: assigns the pod to the Binding's target node, once.
    Bind,
    /// `pods/eviction`: deletes the pod, with the Eviction's delete options, when its
    /// PodDisruptionBudget allows it.
    Evict,
    /// `pods/log`: the container's log as the simulated runtime writes it (empty for a pod on
    /// no node), streamed by the HTTP layer (see `crate::pod_log`).
    Log,
    /// `serviceaccounts/token`: a TokenRequest answered with a signed token.
    Token,
    /// Reads the whole object and writes only these parts of it (JSON pointers), as `status`
    /// writes only the status: `ephemeralcontainers`, `approval`, `finalize`.
    Owns(&'static [&'static str]),
}

/// How a create-only resource ([`Answer::Review`]) answers (the answers are in
/// [`crate::actions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `SubjectAccessReview`, `SelfSubjectAccessReview`, `LocalSubjectAccessReview`: allowed.
    Access,
    /// `SelfSubjectRulesReview`: every verb on everything.
    Rules,
    /// `SelfSubjectReview`: the administrator.
    SelfSubject,
    /// `TokenReview`: who a token belongs to, if anyone.
    Token,
    /// `bindings`: binds the Pod the Binding names.
    Bind,
}

/// Which part of an object a request addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// The object itself.
    Main,
    /// `/status`.
    Status,
    /// `/scale`.
    Scale,
    /// One of the resource's [`Action`]s. The store serves those that write only their parts of
    /// the object ([`Run::Owns`]: `ephemeralcontainers`, `approval`, `finalize`);
    /// [`crate::actions`] the others.
    Action(&'static Action),
}

impl Subresource {
    /// Its name in a URL, as a request record names it; empty for the object itself.
    #[must_use]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Main => "",
            Self::Status => "status",
            Self::Scale => "scale",
            Self::Action(a) => a.name,
        }
    }

    /// The parts an [`Action`](Self::Action) writes.
    pub(crate) fn parts(self) -> &'static [&'static str] {
        match self {
            Self::Action(Action { run: Run::Owns(parts), .. }) => parts,
            _ => &[],
        }
    }
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
        validate_status_update: no_status_rules,
        allow_unconditional_update: true,
        internal_group: None,
        default: no_defaults,
        validate: no_validation,
        name_rule: crate::metadata::check_subdomain,
        metadata_order: MetadataOrder::First,
        update_validates_twice: false,
        gc_policy: GcPolicy::DeleteDependents,
        returns_deleted_object: false,
        answer: Answer::Stored,
        actions: &[],
        kubelet_streams: &[],
        orphaning_warning: None,
        deprecation: None,
        verbs: STORED_VERBS,
        name_unnamed: None,
        create_on_update: false,
        create_keeps_status: false,
        generation_changes: crate::kinds::spec_changed,
        deletion: Deletion::Immediate,
        watch_cached: true,
        label_refusal: None,
        pod_template: None,
        read_by_admission: false,
    };
}

/// The hooks of a kind served as the k8s-openapi type `K`: its shape (a body that does not
/// decode is a 400), the fields it knows (`fieldValidation`) and its OpenAPI schema, with no
/// rules of its own.
#[must_use]
pub const fn typed<K>() -> BuiltIn
where
    K: DeserializeOwned + serde::Serialize + schemars::JsonSchema,
{
    BuiltIn {
        decode: crate::kinds::decode_as::<K>,
        known: Some(known_as::<K>),
        schema: Some(schema_of::<K>),
        ..BuiltIn::PLAIN
    }
}

impl ResourceDef {
    /// `v1` or `apps/v1`.
    #[must_use]
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The verbs its objects and collection answer, as discovery lists them.
    #[must_use]
    pub(crate) fn verbs(&self) -> &'static [&'static str] {
        match &self.strategy {
            Strategy::BuiltIn(BuiltIn { answer: Answer::Review(_), .. }) => &["create"],
            Strategy::BuiltIn(BuiltIn { answer: Answer::Computed(_) | Answer::Metrics(_), .. }) => {
                &["get", "list"]
            }
            Strategy::BuiltIn(b) => b.verbs,
            Strategy::Custom(_) => STORED_VERBS,
        }
    }

    /// How it answers ([`Answer::Stored`] for custom resources).
    #[must_use]
    pub(crate) fn answer(&self) -> Answer {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.answer,
            Strategy::Custom(_) => Answer::Stored,
        }
    }

    /// Its subresources beyond `status` and `scale`.
    #[must_use]
    pub(crate) fn actions(&self) -> &'static [Action] {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.actions,
            Strategy::Custom(_) => &[],
        }
    }

    /// How a field selector naming a label this kind does not know is refused: in the words of
    /// its field label conversion — batch/v1 Job's own, the common ones of the other kinds that
    /// have a conversion (those with field labels, and custom resources), else the default's.
    #[must_use]
    pub(crate) fn label_refusal(&self) -> crate::selector::LabelRefusal {
        use crate::selector::LabelRefusal;
        if let Some(own) = self.built_in().label_refusal {
            own
        } else if !self.field_labels.is_empty() || self.custom().is_some() {
            LabelRefusal::NotSupported
        } else {
            LabelRefusal::Default
        }
    }

    /// The custom strategy, for a resource a CRD defines.
    #[must_use]
    /// Whose rules the kind's metadata is held to.
    pub(crate) fn metadata_rules(&self) -> crate::metadata::Rules {
        match &self.strategy {
            Strategy::Custom(_) => crate::metadata::Rules::Apimachinery,
            Strategy::BuiltIn(_) => crate::metadata::Rules::InTree,
        }
    }

    /// Whether the kind's strategy may warn of a write whose body is `body`
    /// (`WarningsOnCreate` / `WarningsOnUpdate`): a custom resource of the finalizers it adds,
    /// which a body can add only by naming `finalizers` (a field or a JSON patch's path).
    pub(crate) fn warns(&self, body: &[u8]) -> bool {
        const FIELD: &[u8] = b"finalizers";
        self.custom().is_some() && body.windows(FIELD.len()).any(|w| w == FIELD)
    }

    /// The strategy's warnings of a write of `new` over `old` (`None` on a create).
    pub(crate) fn warnings(&self, new: &Value, old: Option<&Value>) -> Vec<String> {
        if self.custom().is_some() { crate::metadata::finalizer_warnings(new, old) } else { Vec::new() }
    }

    pub(crate) fn custom(&self) -> Option<&crate::kinds::custom::CustomStrategy> {
        match &self.strategy {
            Strategy::Custom(c) => Some(c),
            Strategy::BuiltIn(_) => None,
        }
    }

    /// Sets `apiVersion` and `kind` on an object of this resource.
    pub(crate) fn stamp(&self, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.insert("apiVersion".into(), Value::String(self.api_version()));
            o.insert("kind".into(), Value::String(self.kind.to_owned()));
        }
    }

    /// An object of this resource's version in the storage form: a custom resource converted to
    /// its CRD's storage version (by its conversion webhook, when it has one).
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) fn to_storage(&self, obj: Value) -> Result<Value, ApiError> {
        match &self.strategy {
            Strategy::BuiltIn(b) => Ok((b.to_storage)(obj)),
            Strategy::Custom(c) => c.to_storage(obj),
        }
    }

    /// Whether a stored object must be converted to be read in this version (a copy is made).
    fn converts(&self) -> bool {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.from_storage.is_some(),
            Strategy::Custom(_) => true,
        }
    }

    /// The conversion webhook reading or writing this resource may call: that of a CRD whose
    /// conversion strategy is `Webhook`.
    #[must_use]
    pub(crate) fn conversion_webhook(&self) -> Option<&crate::kinds::custom::Conversion> {
        self.custom().map(|c| &*c.conversion).filter(|c| c.calls_webhook())
    }

    /// A stored object in this resource's version (without `apiVersion` and `kind` stamped).
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) fn in_version(&self, stored: &Value) -> Result<Value, ApiError> {
        self.in_version_owned(stored.clone())
    }

    /// [`in_version`](Self::in_version) of a stored object the caller owns: converted in place.
    fn in_version_owned(&self, stored: Value) -> Result<Value, ApiError> {
        match &self.strategy {
            Strategy::BuiltIn(b) => Ok(match b.from_storage {
                Some(convert) => convert(stored),
                None => stored,
            }),
            Strategy::Custom(c) => c.read_owned(stored),
        }
    }

    /// The stored object as this version sees it, borrowed when no conversion is needed.
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) fn view<'a>(&self, stored: &'a Value) -> Result<std::borrow::Cow<'a, Value>, ApiError> {
        Ok(if self.converts() {
            std::borrow::Cow::Owned(self.in_version(stored)?)
        } else {
            std::borrow::Cow::Borrowed(stored)
        })
    }

    /// A stored object as this resource presents it.
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) fn present(&self, stored: &Value) -> Result<Value, ApiError> {
        self.present_owned(stored.clone())
    }

    /// [`present`](Self::present) for a stored object the caller owns (one just thawed): it is
    /// converted and stamped in place, not copied.
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) fn present_owned(&self, stored: Value) -> Result<Value, ApiError> {
        let mut v = self.in_version_owned(stored)?;
        self.stamp(&mut v);
        Ok(v)
    }

    /// [`present_owned`](Self::present_owned) of several objects, with one call to a conversion
    /// webhook for those in another version (a list's items).
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) fn present_all(&self, mut stored: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        if let Some(conversion) = self.conversion_webhook() {
            conversion.convert(&mut stored, &self.api_version(), true)?;
        }
        stored.into_iter().map(|o| self.present_owned(o)).collect()
    }

    /// [`present_owned`](Self::present_owned), a conversion webhook's call awaited rather than
    /// blocking (for a watch stream).
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500).
    pub(crate) async fn present_async(&self, mut stored: Value) -> Result<Value, ApiError> {
        if let Some(conversion) = self.conversion_webhook() {
            conversion.convert_async(std::slice::from_mut(&mut stored), &self.api_version(), false).await?;
        }
        self.present_owned(stored)
    }

    /// Appends a stored object as this resource presents it, as JSON, to `out`: its fields in
    /// the order the API server writes them ([`go_order`](crate::go_order)), and without copying
    /// the object when it is stored in this version.
    ///
    /// # Errors
    ///
    /// A conversion webhook's failure (a 500); nothing is written then.
    pub(crate) fn write_presented(&self, stored: &Value, out: &mut Vec<u8>) -> Result<(), ApiError> {
        let obj = self.view(stored)?;
        // Serialising a `Value` into a Vec cannot fail.
        let api_version = self.api_version();
        let _ = serde_json::to_writer(
            out,
            &crate::go_order::Stamped { value: &obj, api_version: &api_version, kind: self.kind },
        );
        Ok(())
    }

    /// Checks that the object decodes as the kind (a failure is a 400 naming the field).
    ///
    /// # Errors
    ///
    /// The decode error, naming the field.
    pub(crate) fn decode(&self, obj: &Value) -> Result<(), String> {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.decode)(obj),
            Strategy::Custom(c) => c.decode(obj),
        }
    }

    /// The object as the kind's schema keeps it, to find the fields the schema does not declare;
    /// `None` for kinds served without a schema.
    #[must_use]
    pub(crate) fn known(&self, obj: &Value) -> Option<Value> {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.known.and_then(|k| k(obj)),
            Strategy::Custom(c) => Some(c.known(obj)),
        }
    }

    /// What a create sets beyond the generic rules, before defaults.
    pub(crate) fn prepare_create(&self, obj: &mut Value) {
        if let Strategy::BuiltIn(b) = &self.strategy {
            (b.prepare_create)(obj);
        }
    }

    /// What an update of the main resource sets beyond the generic rules, from the stored object.
    pub(crate) fn prepare_update(&self, new: &mut Value, old: &Value) {
        if let Strategy::BuiltIn(b) = &self.strategy {
            (b.prepare_update)(new, old);
        }
    }

    /// What a `/status` write restores from the stored object beyond the spec (the status
    /// strategy's `PrepareForUpdate`). A custom resource's status strategy restores everything
    /// but the status (apiextensions' `customresource/status_strategy.go`): see the store.
    pub(crate) fn prepare_status_update(&self, new: &mut Value, old: &Value) {
        if let Strategy::BuiltIn(b) = &self.strategy {
            (b.prepare_status_update)(new, old);
        }
    }

    /// What a `/status` write is held to beyond the kind's rules (the status strategy's own
    /// `ValidateUpdate` checks); none for custom resources.
    #[must_use]
    pub(crate) fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.validate_status_update)(new, old),
            Strategy::Custom(_) => Vec::new(),
        }
    }

    /// The strategy's `AllowUnconditionalUpdate`; custom resources' is `false`
    /// (apiextensions' `customresource/strategy.go`).
    #[must_use]
    pub(crate) fn allows_unconditional_update(&self) -> bool {
        match &self.strategy {
            Strategy::BuiltIn(b) => b.allow_unconditional_update,
            Strategy::Custom(_) => false,
        }
    }

    /// The strategy's rules a delete and validation follow (custom resources: the defaults).
    fn built_in(&self) -> &BuiltIn {
        match &self.strategy {
            Strategy::BuiltIn(b) => b,
            Strategy::Custom(_) => &BuiltIn::PLAIN,
        }
    }

    /// The rule a new object's name is held to.
    #[must_use]
    pub(crate) fn name_rule(&self) -> fn(&str) -> Option<String> {
        self.built_in().name_rule
    }

    /// Where the metadata's errors stand among the kind's.
    #[must_use]
    pub(crate) fn metadata_order(&self) -> MetadataOrder {
        self.built_in().metadata_order
    }

    /// Whether an update's errors are reported twice.
    #[must_use]
    pub(crate) fn update_validates_twice(&self) -> bool {
        self.built_in().update_validates_twice
    }

    /// What a delete without a propagation policy does to dependents.
    #[must_use]
    pub(crate) fn gc_policy(&self) -> GcPolicy {
        self.built_in().gc_policy
    }

    /// Whether a DELETE that removes an object answers with it.
    #[must_use]
    pub(crate) fn returns_deleted_object(&self) -> bool {
        self.built_in().returns_deleted_object
    }

    /// The streaming subresources its objects' kubelet would serve, refused here.
    #[must_use]
    pub(crate) fn kubelet_streams(&self) -> &'static [&'static str] {
        self.built_in().kubelet_streams
    }

    /// What a delete naming no propagation policy is warned of.
    #[must_use]
    pub(crate) fn orphaning_warning(&self) -> Option<&'static str> {
        self.built_in().orphaning_warning
    }

    /// The deprecation warning of every answer about it.
    #[must_use]
    pub(crate) fn deprecation(&self) -> Option<&'static str> {
        self.built_in().deprecation
    }

    /// The group a validation error (`Invalid`) names: the internal type's
    /// (`rest.BeforeCreate`/`BeforeUpdate` take it from `ObjectKinds` of the internal object).
    #[must_use]
    pub(crate) fn internal_group(&self) -> &'static str {
        match &self.strategy {
            Strategy::BuiltIn(BuiltIn { internal_group: Some(g), .. }) => g,
            _ => self.group,
        }
    }

    /// Fills in the API server's defaults.
    pub(crate) fn apply_defaults(&self, obj: &mut Value) {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.default)(obj),
            Strategy::Custom(c) => c.default(obj),
        }
    }

    /// Validates `new` (and, on update, against `old`).
    #[must_use]
    pub(crate) fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        match &self.strategy {
            Strategy::BuiltIn(b) => (b.validate)(new, old),
            Strategy::Custom(c) => c.validate(new, old),
        }
    }

    /// Whether an update from `old` to `new` takes a new `metadata.generation`.
    #[must_use]
    pub(crate) fn generation_changes(&self, new: &Value, old: &Value) -> bool {
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
        (self.built_in().generation_changes)(new, old)
    }

    /// The name a create with neither a name nor a `generateName` gets, if the kind gives one.
    #[must_use]
    pub(crate) fn name_unnamed(&self) -> Option<String> {
        self.built_in().name_unnamed.map(|name| name())
    }

    /// Whether a PUT to a missing object creates it (custom resources': no).
    #[must_use]
    pub(crate) fn creates_on_update(&self) -> bool {
        self.built_in().create_on_update
    }

    /// Whether a create drops the request's `status` (a kind with a status subresource whose
    /// strategy does not keep it).
    #[must_use]
    pub(crate) fn create_drops_status(&self) -> bool {
        self.status_subresource && !self.built_in().create_keeps_status
    }

    /// What a DELETE does first.
    #[must_use]
    pub(crate) fn deletion(&self) -> Deletion {
        self.built_in().deletion
    }

    /// Whether the kind has a watch cache (custom resources do).
    #[must_use]
    pub(crate) fn watch_cached(&self) -> bool {
        self.built_in().watch_cached
    }

    /// Whether admission reads its objects on every create (the store keeps them parsed).
    #[must_use]
    pub(crate) fn read_by_admission(&self) -> bool {
        self.built_in().read_by_admission
    }

    /// Where the kind holds a pod template, as a JSON pointer.
    #[must_use]
    pub(crate) fn pod_template(&self) -> Option<&'static str> {
        self.built_in().pod_template
    }
}

/// `obj` decoded as `K` and encoded again: what the kind's schema keeps of it (unknown fields
/// gone); `None` when it does not decode (the decode step reports why).
pub fn known_as<K: DeserializeOwned + serde::Serialize>(obj: &Value) -> Option<Value> {
    // Decoded from the borrowed value: no copy of the object on the way in.
    K::deserialize(obj).ok().and_then(|k| serde_json::to_value(k).ok())
}

/// Registers `K`'s schema with the generator.
pub(crate) fn schema_of<K: schemars::JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
) -> schemars::Schema {
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
fn no_status_rules(_: &Value, _: &Value) -> Vec<FieldError> {
    Vec::new()
}
