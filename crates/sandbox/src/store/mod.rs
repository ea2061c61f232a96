//! The store: the API's rules for every verb, over the storage that holds the objects.
//!
//! Like etcd, the storage has a single revision counter: every write takes the next number and it
//! becomes the object's `metadata.resourceVersion`. Each change is appended to its resource's
//! history (for watches that resume from a version), kept as upstream's watch cache keeps it, and
//! broadcast to open watches. Every verb runs under one lock and checks everything before it
//! writes, so a rejected request leaves nothing changed.
//!
//! | module | what it is |
//! |---|---|
//! | `mod.rs` (this one) | reads (get, list with `continue`, watch start) and writes (create, update, patch) |
//! | `storage.rs` | objects, revision counter, indexes, history, watch fan-out |
//! | `frozen.rs` | the form objects are kept in (their JSON), and the last ones written, parsed |
//! | `deletion.rs` | finalizers, propagation, dependents a delete cascades to, namespace finalize |
//! | `apply.rs` | server-side apply |
//! | `crd.rs` | the CRD controllers: names, establishing, finalizing |
//! | `admission.rs` | what admission's plugins (`crate::admission`) read of the state, and their warnings |

mod admission;
mod allocations;
mod apply;
mod continuation;
use continuation::Continue;
mod crd;
mod deletion;
mod frozen;
mod quota;
mod storage;

use apply::server_side_apply;
pub use frozen::Frozen;
pub use storage::{Change, ChangeType, Followed, Key, Retained};
use storage::{State, key_of};

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::admission::Operation;
use crate::managed_fields::{record_apply, record_update};
use crate::object_meta::{finalizers, is_deleting, meta_mut, meta_str, name_suffix, new_uid, now_rfc3339};
use crate::patch::{self, PatchType};
use crate::registry::Registry;
use crate::resource::{MetadataOrder, ResourceDef, Subresource};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;

/// `propagationPolicy` of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// Delete now; the garbage collector deletes dependents afterwards.
    #[default]
    Background,
    /// Delete dependents first; the owner waits with the `foregroundDeletion` finalizer.
    Foreground,
    /// Delete the owner; dependents lose their owner reference and stay.
    Orphan,
}

/// Options of a delete: propagation and preconditions.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `propagationPolicy` (or `orphanDependents`); `None` leaves it to the object's finalizers
    /// and then to its kind, as upstream's `DefaultGarbageCollectionPolicy`: batch/v1 Jobs and
    /// v1 ReplicationControllers orphan their dependents, every other kind deletes them in the
    /// background.
    pub(crate) propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub(crate) uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub(crate) resource_version: Option<String>,
    /// `gracePeriodSeconds`: how long a pod on a node is given to stop (its
    /// `terminationGracePeriodSeconds` when `None`); other kinds go at once.
    pub(crate) grace_period: Option<i64>,
}

/// `ValidateDryRun`: `All` is the only value; any other names them all, as Go prints a slice.
#[must_use]
pub fn dry_run_causes(values: &[String]) -> Vec<(String, String)> {
    if values.iter().all(|v| v == "All") {
        return Vec::new();
    }
    let quoted: Vec<String> = values.iter().map(|v| crate::go_print::go_quote(v)).collect();
    vec![(
        "dryRun".into(),
        format!("Unsupported value: []string{{{}}}: supported values: \"All\"", quoted.join(", ")),
    )]
}

impl DeleteOptions {
    /// The options a `DeleteOptions` body gives (`propagationPolicy`, `orphanDependents`,
    /// `preconditions`), the body's policy before the query's `propagation`, checked as
    /// `ValidateDeleteOptions` checks them with the request's `dry_run` values.
    ///
    /// # Errors
    ///
    /// 422 on `DeleteOptions.meta.k8s.io` for an unknown propagation policy, one given beside
    /// `orphanDependents`, or a dry-run value other than `All`.
    pub(crate) fn from_body(
        body: &Value,
        propagation: Option<&str>,
        dry_run: &[String],
    ) -> Result<Self, ApiError> {
        let policy = body.get("propagationPolicy").and_then(Value::as_str).or(propagation);
        let mut causes = Vec::new();
        if let Some(p) = policy.filter(|_| body.get("orphanDependents").is_some_and(|o| !o.is_null())) {
            causes.push((
                "propagationPolicy".into(),
                format!(
                    "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                    crate::go_print::go_quote(p)
                ),
            ));
        }
        let propagation = match policy {
            None => None,
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some("Orphan") => Some(Propagation::Orphan),
            Some(other) => {
                causes.push((
                    "propagationPolicy".into(),
                    format!(
                        "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        crate::go_print::go_quote(other)
                    ),
                ));
                None
            }
        };
        causes.extend(dry_run_causes(dry_run));
        if !causes.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "DeleteOptions", "", &causes));
        }
        // `orphanDependents: false` asks for the dependents to go, in the background.
        let orphan = body.get("orphanDependents").and_then(Value::as_bool);
        Ok(Self {
            propagation: match orphan {
                Some(true) => Some(Propagation::Orphan),
                Some(false) => Some(Propagation::Background),
                None => propagation,
            },
            uid: body.pointer("/preconditions/uid").and_then(Value::as_str).map(str::to_owned),
            resource_version: body
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_owned),
            grace_period: body.get("gracePeriodSeconds").and_then(Value::as_i64),
        })
    }
}

/// The list parameters the store understands.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// `labelSelector`.
    pub(crate) labels: LabelSelector,
    /// `fieldSelector`.
    pub(crate) fields: FieldSelector,
    /// `limit`; 0 means no limit.
    pub(crate) limit: usize,
    /// `continue`.
    pub(crate) continue_token: Option<String>,
    /// `resourceVersion`.
    pub(crate) resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub(crate) resource_version_match: Option<String>,
    /// `shardSelector` (KEP-5866).
    pub(crate) shard: Option<crate::shard::ShardSelector>,
}

impl ListQuery {
    /// Upstream's `ValidateListOptions` (`apimachinery/pkg/apis/meta/internalversion/validation`)
    /// for a list: `resourceVersionMatch` needs a `resourceVersion`, no `continue`, a known value,
    /// and not `Exact` with `"0"`. A 422 on `ListOptions.meta.k8s.io`.
    ///
    /// # Errors
    ///
    /// The 422 with one cause per rule broken.
    pub(crate) fn validate(&self) -> Result<(), ApiError> {
        let Some(m) = self.resource_version_match.as_deref().filter(|m| !m.is_empty()) else { return Ok(()) };
        let rv = self.resource_version.as_deref().unwrap_or("");
        let field = "resourceVersionMatch".to_owned();
        let mut causes = Vec::new();
        if rv.is_empty() {
            causes.push((
                field.clone(),
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".to_owned(),
            ));
        }
        if self.continue_token.as_deref().is_some_and(|c| !c.is_empty()) {
            causes.push((
                field.clone(),
                "Forbidden: resourceVersionMatch is forbidden when continue is provided".to_owned(),
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            causes.push((
                field.clone(),
                format!("Unsupported value: {m:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""),
            ));
        }
        if m == "Exact" && rv == "0" {
            causes.push((
                field,
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".to_owned(),
            ));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", &causes))
        }
    }

    /// Whether this query selects every object (it has no selector to look into one with).
    #[must_use]
    pub(crate) fn selects_all(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty() && self.shard.is_none()
    }

    /// Whether `obj` is selected by the labels, fields and shard of this query.
    #[must_use]
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj)
            && self.fields.matches(obj)
            && self.shard.as_ref().is_none_or(|s| s.matches(obj))
    }
}

/// The start of a watch: what to send first, and the live feed after it.
pub struct WatchStart {
    /// Events to send before the live feed (replayed history or the initial state), frozen:
    /// each is thawed as it is sent.
    pub(crate) initial: Vec<Retained>,
    /// Whether to follow the initial events with the initial-events-end bookmark.
    pub(crate) initial_events_end: bool,
    /// Version the initial events bring the client to.
    pub(crate) rv: u64,
    /// The live feed; changes with `rv` at or below [`WatchStart::rv`] are to be skipped.
    pub(crate) feed: broadcast::Receiver<Arc<Change>>,
}

/// Changes an open watch may fall behind the store before it is ended (and its client resumes
/// from the history), as upstream's watch cache ends a watcher too slow to keep up. The feed
/// holds the changes' objects parsed, so it is kept short; the history holds them frozen.
pub const WATCH_BUFFER: usize = 2048;

/// How many of the objects written last stay parsed beside their frozen form ([`frozen`]'s
/// `Recent`). A writer reads back what it wrote a little earlier — the simulated scheduler a
/// pod created since its last round, the kubelet the pod bound since its — and each write of a
/// pod is three or four writes behind the next; at 100,000 pods the simulation's rounds lag by
/// thousands of writes, and what fell out is parsed again (and freed again). Four times the
/// watch buffer brought every pod Ready after 85 s instead of 110 s in the cluster bench (one run
/// each), for 100 MiB more peak memory (a fifth of what the pods weigh as JSON).
const KEPT_PARSED: usize = 4 * WATCH_BUFFER;

/// A consistent list snapshot, kept for `continue` tokens.
struct Snapshot {
    rv: u64,
    items: Vec<Arc<Frozen>>,
    made: Instant,
}

const SNAPSHOT_TTL: Duration = Duration::from_secs(300);

/// The 410 of a continue token past its snapshot, as the etcd3 store words it.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";
const MAX_SNAPSHOTS: usize = 64;

/// Settings of a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The most changes kept per resource for watches resuming from an older version (upstream's
    /// watch cache holds up to 100 × 1024). A watch from before what is kept gets 410 Expired.
    pub history_limit: usize,
    /// Changes younger than this are kept (up to `history_limit`); older ones go once a resource
    /// has more than 100. Upstream's watch cache sizes itself to hold 75 s
    /// (`eventFreshDuration`), so a watcher that was cut off and resumes within that gets the
    /// changes it missed rather than a relist.
    pub history_window: Duration,
    /// Whether deleting an owner deletes its dependents (the cluster's garbage collector). Off, it
    /// behaves like an API server with no controller-manager (envtest).
    pub garbage_collection: bool,
    /// Where the Services that webhooks (admission and CRD conversion) name listen, by namespace
    /// and name: a webhook's `service` reference is called at this address (its port is the
    /// address's), its certificate checked for `<name>.<namespace>.svc` — what envtest does by
    /// rewriting the configuration to a local URL, with the configuration left as written. A
    /// Service not named here is looked up by its cluster name, which a sandbox cannot resolve.
    pub webhook_services: BTreeMap<(String, String), std::net::SocketAddr>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            history_limit: 100 * 1024,
            history_window: Duration::from_secs(75),
            garbage_collection: true,
            webhook_services: BTreeMap::new(),
        }
    }
}

/// The sandbox's object store and API rules.
pub struct Store {
    /// Unique among the stores of the process (a dry run's copy has its own).
    id: u64,
    state: Mutex<State>,
    /// The served resources, shared with the state, which changes them as CRDs change; read
    /// without the state's lock to route requests.
    registry: Arc<RwLock<Registry>>,
}

/// A list's `resourceVersion`: as [`parse_rv`], but Events, which kube-apiserver keeps out of its
/// watch cache (`DefaultWatchCacheSizes`: size 0), are listed by etcd3's store itself, which
/// calls the error a bad request (`invalid resource version: …`, 400).
fn parse_list_rv(def: &ResourceDef, rv: &str) -> Result<u64, ApiError> {
    parse_rv(rv).map_err(|e| {
        if !def.watch_cached() {
            ApiError::bad_request(format!("invalid resource version: {}", e.message))
        } else {
            e
        }
    })
}

/// A list's or watch's `resourceVersion`, parsed as upstream's versioner does
/// (`storage.APIObjectVersioner.ParseResourceVersion`): what is not a `uint64` is a
/// `storage.InvalidError` that nothing classifies, so the client gets a 500 with no reason.
fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse().map_err(|_| {
        let why = if !rv.is_empty() && rv.bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        let quoted = crate::go_print::go_quote(rv);
        ApiError::unclassified(format!(
            "resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"
        ))
    })
}

/// The `resourceVersion` of a PUT's body, which must be a number (`ObjectResourceVersion`'s
/// ParseUint error is not classified: a 500).
fn check_body_version(body: &Value) -> Result<(), ApiError> {
    let rv = meta_str(body, "resourceVersion");
    if !rv.is_empty() && rv.parse::<u64>().is_err() {
        return Err(ApiError::unclassified(format!("strconv.ParseUint: parsing {rv:?}: invalid syntax")));
    }
    Ok(())
}

/// A new object's name refused as upstream's `ValidateObjectMeta` refuses it: a generateName
/// checked as a prefix (a trailing `-` masked, `maskTrailingDash`) with the kind's name rule,
/// then the name — required, and held to the rule.
fn name_errors(def: &ResourceDef, name: &str, generate: &str) -> Vec<crate::status::FieldError> {
    let name_rule = def.name_rule();
    let mut bad = Vec::new();
    if !generate.is_empty() {
        let masked = match generate.strip_suffix('-') {
            Some(rest) if !rest.is_empty() => format!("{rest}a"),
            _ => generate.to_owned(),
        };
        if let Some(why) = name_rule(&masked) {
            bad.push(("metadata.generateName".to_owned(), format!("Invalid value: {generate:?}: {why}")));
        }
    }
    if name.is_empty() {
        bad.push(("metadata.name".into(), "Required value: name or generateName is required".into()));
    } else if let Some(why) = name_rule(name) {
        bad.push(("metadata.name".to_owned(), format!("Invalid value: {name:?}: {why}")));
    }
    bad
}

/// A created object as the request and its kind's strategy make it, before any other object is
/// looked at: named (a generated name is tried against the store at [`ValidObject::admit`]),
/// metadata filled in, prepared and defaulted, its `managedFields` recorded.
struct NewObject {
    obj: Value,
    name_errors: Vec<crate::status::FieldError>,
    /// The prefix of a generated name.
    generated: Option<String>,
}

/// A [`NewObject`] its strategy found valid.
struct ValidObject(NewObject);

impl NewObject {
    fn prepare(def: &ResourceDef, ns: &str, body: Value, manager: Option<&str>) -> Result<Self, ApiError> {
        let mut obj = check_body(def, ns, body)?;
        // The decoder reads the body before anything works on it: defaults and admission find
        // each field of the type it has.
        decode(def, &obj)?;
        let mut name = meta_str(&obj, "name").to_owned();
        let generate = meta_str(&obj, "generateName").to_owned();
        let mut generated = None;
        if name.is_empty() && !generate.is_empty() {
            // As `names.SimpleNameGenerator`: the prefix is cut so that the name fits 63
            // characters with the 5 random ones.
            let prefix = generate.char_indices().nth(58).map_or(generate.as_str(), |(i, _)| &generate[..i]);
            name = format!("{prefix}{}", name_suffix());
            generated = Some(prefix.to_owned());
        } else if name.is_empty()
            && let Some(given) = def.name_unnamed()
        {
            name = given;
        }
        let name_errors = name_errors(def, &name, &generate);
        let meta = meta_mut(&mut obj);
        meta.insert("name".into(), json!(name));
        if def.namespaced {
            meta.insert("namespace".into(), json!(ns));
        }
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        for f in ["deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"] {
            meta.remove(f);
        }
        if def.has_generation {
            meta.insert("generation".into(), json!(1));
        }
        if def.create_drops_status() {
            obj.as_object_mut().expect("object").remove("status");
        }
        def.prepare_create(&mut obj);
        def.apply_defaults(&mut obj);
        if let Some(m) = manager {
            record_update(def, &mut obj, None, m, Subresource::Main);
        }
        Ok(Self { obj, name_errors, generated })
    }

    /// The strategy's validation (after admission has changed the object): 422 for what its
    /// rules refuse.
    fn validate(self, def: &ResourceDef) -> Result<ValidObject, ApiError> {
        let mut meta = self.name_errors.clone();
        meta.extend(crate::metadata::validate(&self.obj, def.metadata_rules()));
        let errs = object_errors(def, &self.obj, None, meta);
        if !errs.is_empty() {
            return Err(ApiError::invalid(
                def.internal_group(),
                def.kind,
                meta_str(&self.obj, "name"),
                &errs,
            ));
        }
        Ok(ValidObject(self))
    }
}

impl ValidObject {
    /// What comes after the strategy's validation upstream (validating admission, then
    /// storage), against the store as it is now: a CRD being deleted takes no new instances
    /// (405), a generated name is drawn again while it is taken, the validating phase of
    /// [admission](crate::admission) must let it through (the namespace must exist and not be
    /// terminating, PodSecurity and the quota must allow it), and the name must be free (409).
    /// Returns the object to store and what it charges to quotas.
    fn admit(
        self,
        st: &State,
        def: &ResourceDef,
        ns: &str,
    ) -> Result<(Value, crate::quota::Charges), ApiError> {
        let NewObject { mut obj, generated, .. } = self.0;
        if st.crd_terminating(def.storage) {
            return Err(ApiError::method_not_supported(
                def.group,
                def.plural,
                "create not allowed while custom resource definition is terminating",
            ));
        }
        if let Some(prefix) = generated {
            // Another suffix has the same shape, so what was validated holds for it.
            while st.objects.contains_key(&key_of(def, ns, meta_str(&obj, "name"))) {
                meta_mut(&mut obj).insert("name".into(), json!(format!("{prefix}{}", name_suffix())));
            }
        }
        // The ranges' allocator, upstream's before validation: under the lock here, so that no
        // two Services are given one address or port.
        if def.storage == allocations::SERVICE_STORAGE {
            st.allocations.allocate(ns, &mut obj, None)?;
        }
        // Validating admission comes before storage, so a full quota answers 403 even for a
        // name that is taken.
        let effects =
            crate::admission::validate(&st.admission_request(Operation::Create, def, ns, None), &obj)?;
        let name = meta_str(&obj, "name");
        if st.objects.contains_key(&key_of(def, ns, name)) {
            return Err(ApiError::already_exists(def.group, def.plural, name));
        }
        def.stamp(&mut obj);
        Ok((obj, effects.charges))
    }
}

/// An object's errors in the order upstream's strategy finds them ([`MetadataOrder`]): `meta`
/// (the metadata's) and the kind's; an update's twice where the strategy validates twice.
fn object_errors(
    def: &ResourceDef,
    obj: &Value,
    old: Option<&Value>,
    mut meta: Vec<crate::status::FieldError>,
) -> Vec<crate::status::FieldError> {
    let mut kind = def.validate(obj, old);
    if old.is_some() && def.update_validates_twice() {
        kind.splice(0..0, def.validate(obj, None));
    }
    match def.metadata_order() {
        MetadataOrder::First => {
            meta.append(&mut kind);
            meta
        }
        MetadataOrder::AfterKind => {
            if kind.is_empty() {
                meta
            } else {
                kind
            }
        }
        MetadataOrder::After(first) => {
            let mut errs = first(obj);
            errs.append(&mut meta);
            errs.append(&mut kind);
            errs
        }
    }
}

/// An update worked out, to commit: the new object, the stored one it was made from (and that
/// object in the request's version), and the new one in the storage form when that was made
/// already (with the lock let go, where a conversion webhook converts it).
struct Update<'a> {
    new: Value,
    old: Arc<Value>,
    old_view: &'a Value,
    stored: Option<Value>,
}

/// A page of a LIST: its metadata and its objects, still frozen ([`Store::list_page`]), or
/// already presented when presenting them took a conversion webhook's call.
pub struct ListPage<'d> {
    def: &'d ResourceDef,
    metadata: Value,
    items: Vec<Arc<Frozen>>,
    presented: Option<Vec<Value>>,
}

impl<'d> ListPage<'d> {
    /// The page; a custom resource's objects stored in another version than the one listed are
    /// converted now, with one call to the CRD's conversion webhook for them all.
    fn new(def: &'d ResourceDef, metadata: Value, items: Vec<Arc<Frozen>>) -> Result<Self, ApiError> {
        let presented = match def.conversion_webhook() {
            Some(_) => Some(def.present_all(items.iter().map(|o| o.thaw()).collect())?),
            None => None,
        };
        Ok(Self { def, metadata, items, presented })
    }

    /// About how many bytes the page's JSON takes: its objects' stored text and a little more
    /// (a buffer this large is written without growing, and copied, as it goes).
    #[must_use]
    pub(crate) fn json_len_hint(&self) -> usize {
        self.items.iter().map(|o| o.json_len() + 64).sum::<usize>() + 512
    }

    /// Its objects as presented, one at a time as they are asked for.
    fn each(&self) -> Box<dyn Iterator<Item = std::borrow::Cow<'_, Value>> + '_> {
        match &self.presented {
            Some(items) => Box::new(items.iter().map(std::borrow::Cow::Borrowed)),
            // Presenting a stored object fails only for a conversion webhook's call, which
            // `presented` has made.
            None => Box::new(
                self.items
                    .iter()
                    .filter_map(|o| self.def.present_owned(o.thaw()).ok())
                    .map(std::borrow::Cow::Owned),
            ),
        }
    }

    /// The list's kind, `apiVersion` and metadata, and its objects thawed as presented, one at
    /// a time as they are asked for (what a writer of another encoding than JSON walks).
    pub(crate) fn parts(&self) -> (String, String, &Value, impl Iterator<Item = Value> + '_) {
        let items = self.each().map(std::borrow::Cow::into_owned);
        (format!("{}List", self.def.kind), self.def.api_version(), &self.metadata, items)
    }

    /// The list as one value, every object thawed into it as it is (no copy).
    #[must_use]
    pub(crate) fn into_value(self) -> Value {
        let items: Vec<Value> = match self.presented {
            Some(items) => items,
            None => self.items.iter().filter_map(|o| self.def.present_owned(o.thaw()).ok()).collect(),
        };
        let mut list = Map::new();
        list.insert("kind".into(), Value::String(format!("{}List", self.def.kind)));
        list.insert("apiVersion".into(), Value::String(self.def.api_version()));
        list.insert("metadata".into(), self.metadata);
        list.insert("items".into(), Value::Array(items));
        Value::Object(list)
    }
}

impl serde::Serialize for ListPage<'_> {
    /// As [`into_value`](ListPage::into_value) serializes, in Go's order (`kind`, `apiVersion`,
    /// `metadata`, `items`), each object thawed only as it is written.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Items<'a, 'd>(&'a ListPage<'d>);
        impl serde::Serialize for Items<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.items.len()))?;
                for item in self.0.each() {
                    seq.serialize_element(&crate::go_order::GoOrdered::object(&item))?;
                }
                seq.end()
            }
        }
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("kind", &format!("{}List", self.def.kind))?;
        m.serialize_entry("apiVersion", &self.def.api_version())?;
        m.serialize_entry("metadata", &self.metadata)?;
        m.serialize_entry("items", &Items(self))?;
        m.end()
    }
}

/// Fields the server owns: a client's values for them are replaced by the stored ones. As
/// upstream's `BeforeUpdate`, the deletion's fields are the stored ones only once set (an
/// update can neither remove nor change them; setting them is refused by
/// [`metadata_update_errors`]).
fn keep_server_fields(new: &mut Value, old: &Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let meta = meta_mut(new);
    for f in ["uid", "creationTimestamp", "generation", "namespace", "name"] {
        match old_meta.get(f) {
            Some(v) => meta.insert(f.to_owned(), v.clone()),
            None => meta.remove(f),
        };
    }
    if let Some(t) = old_meta.get("deletionTimestamp").filter(|t| !t.is_null()) {
        meta.insert("deletionTimestamp".into(), t.clone());
    }
    if let Some(g) = old_meta.get("deletionGracePeriodSeconds").filter(|g| !g.is_null())
        && meta.get("deletionGracePeriodSeconds").is_none_or(Value::is_null)
    {
        meta.insert("deletionGracePeriodSeconds".into(), g.clone());
    }
    if !meta.contains_key("managedFields")
        && let Some(mf) = old_meta.get("managedFields")
    {
        meta.insert("managedFields".into(), mf.clone());
    }
}

/// The mutating webhooks' changes to `obj` (over `old`), then what becomes of a changed body
/// upstream: it is decoded as the kind and defaulted.
fn mutate_by_webhooks(
    def: &ResourceDef,
    calls: &crate::admission::WebhookCalls,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if calls.mutates() {
        calls.mutate(obj, old)?;
        decode(def, obj)?;
        def.apply_defaults(obj);
    }
    Ok(())
}

/// Whether two versions of an object are the same but for their resourceVersion, the
/// `apiVersion`/`kind` stamp (which the endpoint decides) and the times of otherwise unchanged
/// `managedFields` entries (upstream's `IgnoreManagedFieldsTimestampsTransformer`: re-applying
/// the same configuration a second later is no write) — without copying either.
fn same_but_version(a: &Value, b: &Value) -> bool {
    fn same_except(a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]) -> bool {
        let kept = |m: &Map<String, Value>| m.iter().filter(|(k, _)| !skip.contains(&k.as_str())).count();
        kept(a) == kept(b)
            && a.iter().filter(|(k, _)| !skip.contains(&k.as_str())).all(|(k, v)| b.get(k) == Some(v))
    }
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    let empty = Map::new();
    let (ma, mb) = (
        a.get("metadata").and_then(Value::as_object).unwrap_or(&empty),
        b.get("metadata").and_then(Value::as_object).unwrap_or(&empty),
    );
    fn entries(m: &Map<String, Value>) -> &[Value] {
        m.get("managedFields").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
    let (ea, eb) = (entries(ma), entries(mb));
    let same_entries = ea.len() == eb.len()
        && ea.iter().zip(eb).all(|(x, y)| match (x.as_object(), y.as_object()) {
            (Some(x), Some(y)) => same_except(x, y, &["time"]),
            _ => x == y,
        });
    same_entries
        && same_except(ma, mb, &["resourceVersion", "managedFields"])
        && same_except(a, b, &["apiVersion", "kind", "metadata"])
}

/// A new store's [`Store::id`].
fn next_store_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Store {
    /// A store holding what a new cluster has: the namespaces `default`, `kube-system`,
    /// `kube-public` and `kube-node-lease`, the two system PriorityClasses, the `kubernetes`
    /// Service and the `cluster-admin` ClusterRole with its binding (the API server's
    /// post-start objects).
    #[must_use]
    pub(crate) fn new(config: StoreConfig) -> Self {
        let (tx, _) = broadcast::channel(WATCH_BUFFER);
        let registry = Arc::new(RwLock::new(Registry::new()));
        let id = next_store_id();
        let store = Self {
            id,
            registry: Arc::clone(&registry),
            state: Mutex::new(State {
                id,
                objects: BTreeMap::new(),
                recent: frozen::Recent::new(KEPT_PARSED),
                dictionaries: frozen::Dictionaries::default(),
                rv: 0,
                history: HashMap::new(),
                floor: 0,
                services: Arc::new(RwLock::new(config.webhook_services.clone())),
                config,
                uids: HashMap::new(),
                dependents: HashMap::new(),
                quota_namespaces: HashMap::new(),
                allocations: allocations::Allocations::default(),
                snapshots: HashMap::new(),
                next_snapshot: 0,
                tx,
                sent: VecDeque::new(),
                sent_cap: WATCH_BUFFER.next_power_of_two(),
                garbage: storage::Garbage::default(),
                followers: Vec::new(),
                registry,
            }),
        };
        for (def, ns, obj) in crate::post_start::objects() {
            store.create(def, ns, obj, None).expect("a post-start object");
        }
        store
    }

    /// A throwaway copy for a `dryRun=All` request: the same objects and rules, its own version
    /// counter, no history and no watchers, so whatever is done to it is seen by nobody.
    #[must_use]
    pub(crate) fn scratch(&self) -> Self {
        let st = self.lock();
        const SCRATCH_BUFFER: usize = 16;
        let (tx, _) = broadcast::channel(SCRATCH_BUFFER);
        // A dry-run CRD is established in the copy only.
        let registry = Arc::new(RwLock::new(st.registry.read().clone()));
        let id = next_store_id();
        Self {
            id,
            registry: Arc::clone(&registry),
            state: Mutex::new(State {
                id,
                objects: st.objects.clone(),
                recent: frozen::Recent::new(0),
                dictionaries: st.dictionaries.clone(),
                rv: st.rv,
                history: HashMap::new(),
                floor: st.rv,
                config: st.config.clone(),
                services: Arc::clone(&st.services),
                uids: st.uids.clone(),
                dependents: st.dependents.clone(),
                quota_namespaces: st.quota_namespaces.clone(),
                allocations: st.allocations.clone(),
                snapshots: HashMap::new(),
                next_snapshot: 0,
                tx,
                sent: VecDeque::new(),
                sent_cap: SCRATCH_BUFFER,
                garbage: storage::Garbage::default(),
                followers: Vec::new(),
                registry,
            }),
        }
    }

    /// This store's identity: no other store of the process has it.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The version of the last write to each of `storages` (0 for none): what a cache of their
    /// objects is keyed on.
    pub(crate) fn last_writes<const N: usize>(&self, storages: [&str; N]) -> [u64; N] {
        let st = self.lock();
        storages.map(|s| st.last_write(s))
    }

    /// The state, locked (what it lets go of is freed after, see [`storage::Locked`]).
    fn lock(&self) -> storage::Locked<'_> {
        storage::Locked::new(&self.state)
    }

    /// The resource served at `/apis/<group>/<version>/<plural>` (`/api/v1/<plural>`), built-in or
    /// defined by an established CRD.
    #[must_use]
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.registry.read().find(group, version, plural)
    }

    /// A resource serving the objects kept in `storage` ([`Registry::find_storage`]).
    #[must_use]
    pub(crate) fn find_storage(&self, storage: &str) -> Option<Arc<ResourceDef>> {
        self.registry.read().find_storage(storage)
    }

    /// The resources served now.
    #[must_use]
    pub(crate) fn registry(&self) -> Registry {
        self.registry.read().clone()
    }

    /// The latest resourceVersion.
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    /// A new receiver of every change from now on.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.lock().tx.subscribe()
    }

    /// A follower of every change from now on that is never cut off, for an in-process part
    /// that must see them all (the simulated cluster): what it has not taken yet waits for it.
    ///
    /// ## Warning
    ///
    /// A follower that stops taking changes keeps them all; drop the receiver to stop.
    #[must_use]
    pub(crate) fn follow(&self) -> mpsc::UnboundedReceiver<Followed> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().followers.push(tx);
        rx
    }

    /// GET one object.
    ///
    /// # Errors
    ///
    /// 404 when it does not exist.
    pub(crate) fn get(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Subresource,
    ) -> Result<Value, ApiError> {
        let obj = self.lock().get(def, ns, name).map_err(|e| missing_scale(def, sub, name, e))?;
        match sub {
            Subresource::Scale => Ok(scale_of(def, &obj)),
            _ => def.present(&obj),
        }
    }

    /// The stored objects of `def` (in `ns`, or all namespaces) as they are, shared, with the
    /// resourceVersion they were read at: no copies, for harnesses that follow the store.
    #[must_use]
    pub fn snapshot(&self, def: &ResourceDef, ns: Option<&str>) -> (u64, Vec<Arc<Value>>) {
        let (rv, items): (u64, Vec<_>) = {
            let st = self.lock();
            (st.rv, st.in_range(def, ns).filter_map(|(k, _)| st.read(k)).collect())
        };
        (rv, items.into_iter().map(storage::Read::value).collect())
    }

    /// One stored object as it is, shared (no copy), for harnesses that follow the store.
    #[must_use]
    pub fn stored(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<Arc<Value>> {
        let key = key_of(def, ns, name);
        let frozen = match self.lock().read(&key)? {
            storage::Read::Parsed(v) => return Some(v),
            storage::Read::Frozen(f) => f,
        };
        let obj = Arc::new(frozen.thaw());
        // Read through: a harness reads an object to write it, and the write reads it again.
        let mut locked = self.lock();
        let st: &mut State = &mut locked;
        if st.is_current(&key, &frozen) {
            let rv = meta_str(&obj, "resourceVersion").parse().unwrap_or(0);
            st.recent.put(&key, rv, &obj, &mut st.garbage.objects);
        }
        Some(obj)
    }

    /// The stored objects of `def` whose `ownerReferences` name the owner `uid`, shared: what a
    /// controller's informer finds by its owner index.
    #[must_use]
    pub(crate) fn dependents(&self, def: &ResourceDef, uid: &str) -> Vec<Arc<Value>> {
        let reads: Vec<_> = {
            let st = self.lock();
            let keys = st.dependents.get(uid).into_iter().flatten();
            keys.filter(|k| k.0 == def.storage).filter_map(|k| st.read(k)).collect()
        };
        reads.into_iter().map(storage::Read::value).collect()
    }

    /// LIST, in one namespace or (with `None`) across all, with selectors and pagination.
    ///
    /// # Errors
    ///
    /// 400 for a bad continue token or resourceVersion; 410 for an expired continue token or an
    /// exact version no longer available; 504 for a version newer than the store's.
    pub fn list(&self, def: &ResourceDef, ns: Option<&str>, q: &ListQuery) -> Result<Value, ApiError> {
        self.list_page(def, ns, q).map(ListPage::into_value)
    }

    /// LIST as [`list`](Self::list), the page's objects left frozen: serialized, each is thawed
    /// and written in turn, so a list of every pod of a large cluster costs its JSON text, not
    /// a parsed copy of each object at once.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    pub(crate) fn list_page<'d>(
        &self,
        def: &'d ResourceDef,
        ns: Option<&str>,
        q: &ListQuery,
    ) -> Result<ListPage<'d>, ApiError> {
        let mut st = self.lock();
        let (rv, items, offset, snapshot) =
            if let Some(token) = q.continue_token.as_deref().filter(|t| !t.is_empty()) {
                // etcd3's GetList: a continue token carries its own version.
                if q.resource_version.as_deref().is_some_and(|v| !v.is_empty() && v != "0") {
                    return Err(ApiError::bad_request(
                        "specifying resource version is not allowed when using continue",
                    ));
                }
                st.snapshots.retain(|_, s| s.made.elapsed() < SNAPSHOT_TTL);
                match continuation::decode(token)? {
                    Continue::Snapshot { id, offset, after } => {
                        // A snapshot let go is upstream's revision compacted away: a 410 carrying
                        // the token that goes on at the latest version (`handleCompactedErrorForPaging`).
                        let snap = st.snapshots.get(&id).ok_or_else(|| {
                            ApiError::expired(INCONSISTENT_CONTINUE)
                                .with_continue(continuation::encode_latest(&after))
                        })?;
                        (snap.rv, snap.items.clone(), offset, Some(id))
                    }
                    Continue::Latest { after } => {
                        let after = after
                            .split_once('/')
                            .map_or((ns.unwrap_or(""), after.as_str()), |(n, name)| (n, name));
                        let items = st
                            .in_range(def, ns)
                            .filter(|((_, n, name), o)| {
                                (n.as_str(), name.as_str()) > after && storage::selected(q, o)
                            })
                            .map(|(_, o)| Arc::clone(o))
                            .collect();
                        (st.rv, items, 0, None)
                    }
                }
            } else {
                if let Some(asked) = q.resource_version.as_deref().filter(|v| !v.is_empty() && *v != "0") {
                    let asked = parse_list_rv(def, asked)?;
                    if asked > st.rv {
                        return Err(ApiError::too_large_resource_version(asked, st.rv));
                    }
                    if q.resource_version_match.as_deref() == Some("Exact") && asked != st.rv {
                        // etcd serves a list at any revision it has not compacted; the sandbox
                        // rebuilds it from the resource's history, as one consistent snapshot.
                        let items = st.list_items_at(def, ns, q, asked).ok_or_else(|| {
                            ApiError::expired("The resourceVersion for the provided list is too old.")
                        })?;
                        (asked, items, 0, None)
                    } else {
                        (st.rv, st.list_frozen(def, ns, q), 0, None)
                    }
                } else {
                    (st.rv, st.list_frozen(def, ns, q), 0, None)
                }
            };
        let end = if q.limit == 0 { items.len() } else { (offset + q.limit).min(items.len()) };
        let page: Vec<Arc<Frozen>> = items.get(offset..end).unwrap_or_default().to_vec();
        let mut metadata = json!({ "resourceVersion": rv.to_string() });
        if let Some(shard) = &q.shard {
            metadata["shardInfo"] = json!({ "selector": shard.raw });
        }
        if end < items.len() {
            // Later pages read the snapshot the first page took.
            let id = match snapshot {
                Some(id) => id,
                None => {
                    if st.snapshots.len() >= MAX_SNAPSHOTS
                        && let Some(oldest) = st.snapshots.iter().min_by_key(|(_, s)| s.made).map(|(k, _)| *k)
                    {
                        st.snapshots.remove(&oldest);
                    }
                    st.next_snapshot += 1;
                    let id = st.next_snapshot;
                    st.snapshots.insert(id, Snapshot { rv, items: items.clone(), made: Instant::now() });
                    id
                }
            };
            let last = page.last().map(|o| o.thaw()).unwrap_or_default();
            let name = crate::object_meta::meta_str(&last, "name");
            let after = match (ns, crate::object_meta::meta_str(&last, "namespace")) {
                (None, namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
                _ => name.to_owned(),
            };
            metadata["continue"] = json!(continuation::encode(id, end, rv, &after));
            // Upstream counts what remains only for a list without selectors.
            if q.labels.is_empty() && q.fields.is_empty() {
                metadata["remainingItemCount"] = json!(items.len() - end);
            }
        }
        drop(st);
        ListPage::new(def, metadata, page)
    }

    /// Starts a WATCH: the events to send first, then the live feed.
    ///
    /// * no version, `"0"`, or `sendInitialEvents`: every current object as ADDED first;
    /// * a version: the retained changes after it, or 410 Expired when it is older than the history.
    ///
    /// # Errors
    ///
    /// 410 when the version is older than the retained history; 400 for a malformed version.
    pub(crate) fn watch(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        q: &ListQuery,
        send_initial_events: bool,
    ) -> Result<WatchStart, ApiError> {
        let st = self.lock();
        let feed = st.tx.subscribe();
        let from = q.resource_version.as_deref().filter(|v| !v.is_empty() && *v != "0");
        if send_initial_events || from.is_none() {
            let initial = st
                .in_range(def, ns)
                .filter(|(_, o)| storage::selected(q, o))
                .map(|(key, o)| Retained {
                    rv: st.rv,
                    key: key.clone(),
                    kind: ChangeType::Added,
                    object: Arc::clone(o),
                    old: None,
                })
                .collect();
            return Ok(WatchStart { initial, initial_events_end: send_initial_events, rv: st.rv, feed });
        }
        let from = parse_rv(from.unwrap_or("0"))?;
        let history = st.history.get(def.storage);
        let compacted = history.map_or(0, |h| h.compacted).max(st.floor);
        if from < compacted {
            return Err(ApiError::expired(format!("too old resource version: {from} ({})", compacted + 1)));
        }
        let initial = history
            .map(|h| h.changes.iter().filter(|(_, c)| c.rv > from).map(|(_, c)| c.clone()).collect())
            .unwrap_or_default();
        Ok(WatchStart { initial, initial_events_end: false, rv: st.rv, feed })
    }

    /// CREATE.
    ///
    /// # Errors
    ///
    /// 400 when the body's kind, apiVersion or namespace disagree with the URL; 404 when the
    /// namespace does not exist; 403 when it is terminating; 409 AlreadyExists; 422 for an invalid
    /// name or object.
    ///
    /// `manager` is who writes, for `managedFields`; `None`
    /// records nothing (an object put in place, not written through the API).
    pub fn create(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        manager: Option<&str>,
    ) -> Result<Value, ApiError> {
        def.present(&*self.create_stored(def, ns, body, manager)?)
    }

    /// [`create`](Self::create), answered with the object as stored, shared: for a writer that
    /// reads no answer, or writes it out without a copy.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create).
    pub(crate) fn create_stored(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        manager: Option<&str>,
    ) -> Result<Arc<Value>, ApiError> {
        // What looks at no other object is done without the lock, so that creates (and the
        // simulated cluster's writes) are prepared side by side and only stored one at a time;
        // admission reads what it needs under the lock, as upstream's plugins read their
        // informers' caches — what changes in between is seen by the next create.
        let mut new = NewObject::prepare(def, ns, body, manager)?;
        let webhooks = {
            let st = self.lock();
            let req = st.admission_request(Operation::Create, def, ns, None);
            if crate::admission::mutates(Operation::Create, def) {
                crate::admission::admit(&req, &mut new.obj)?;
            }
            let mut calls = crate::admission::webhooks(
                &req,
                meta_str(&new.obj, "name"),
                Some(&new.obj),
                &st.services.read(),
            );
            if let Some(c) = calls.as_mut().filter(|_| new.generated.is_some()) {
                c.name_generated();
            }
            calls
        };
        // Webhooks are called with the lock let go: mutating ones before the strategy
        // validates, validating ones after.
        if let Some(calls) = &webhooks {
            mutate_by_webhooks(def, calls, &mut new.obj, None)?;
        }
        let new = new.validate(def)?;
        if let Some(calls) = &webhooks {
            calls.validate(Some(&new.0.obj), None)?;
        }
        // A custom resource's conversion webhook converts it to the storage version now, not
        // under the lock.
        let converted = def.conversion_webhook().map(|_| def.to_storage(new.0.obj.clone())).transpose()?;
        let mut st = self.lock();
        let (obj, charges) = new.admit(&st, def, ns)?;
        st.charge(ns, charges);
        let key = key_of(def, ns, meta_str(&obj, "name"));
        let stored = match converted {
            Some(mut stored) => {
                // The one thing admission changes of it: a generated name taken meanwhile.
                meta_mut(&mut stored).insert("name".into(), json!(meta_str(&obj, "name")));
                stored
            }
            None => def.to_storage(obj)?,
        };
        Ok(st.commit(key, ChangeType::Added, stored, None))
    }

    /// UPDATE (PUT) of the object or one of its subresources.
    ///
    /// # Errors
    ///
    /// 404 when it does not exist; 409 Conflict on a stale resourceVersion; 400 when the body
    /// disagrees with the URL; 422 for an invalid object.
    pub(crate) fn update(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        body: Value,
        sub: Subresource,
        manager: Option<&str>,
    ) -> Result<Value, ApiError> {
        self.update_or_create(def, ns, name, body, sub, manager).map(|(obj, _)| obj)
    }

    /// A `/status` update whose answer nobody reads (the simulated cluster's writes): as
    /// [`update`](Self::update) of [`Subresource::Status`], without building the answer.
    pub(crate) fn update_status_unanswered(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        body: Value,
        manager: Option<&str>,
    ) -> Result<(), ApiError> {
        let sub = Subresource::Status;
        let body = update_body(def, ns, name, body, sub)?;
        if meta_str(&body, "resourceVersion").is_empty() {
            // Unconditional: whatever is stored when the lock is held is what it updates.
            return self.apply_update(&mut self.lock(), def, ns, name, body, sub, manager).map(drop);
        }
        // Conditional on the version read: worked out with no lock held, committed only if
        // nothing was written since — else the version is stale, the answer the locked path
        // would give. The simulation's writes are prepared side by side this way.
        let key = key_of(def, ns, name);
        let (frozen, old) = self.read_pinned(def, &key)?;
        let old_view = def.view(&old)?;
        let Some(new) = Self::prepare_update(def, name, body, sub, manager, &old_view, &mut |_| Ok(()))?
        else {
            return Ok(());
        };
        let mut st = self.lock();
        if !st.is_current(&key, &frozen) {
            return Err(if st.objects.contains_key(&key) {
                stale(def, name)
            } else {
                ApiError::not_found(def.group, def.plural, name)
            });
        }
        Self::commit_update(
            &mut st,
            def,
            ns,
            name,
            Update { new, old: Arc::clone(&old), old_view: &old_view, stored: None },
            sub,
        )
        .map(drop)
    }

    /// PUT: an update, or for the kinds whose upstream strategy allows it
    /// ([`ResourceDef::creates_on_update`]), a create when the object does not exist; `true` when created.
    ///
    /// # Errors
    ///
    /// As [`update`](Self::update) and [`create`](Self::create).
    pub(crate) fn update_or_create(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        body: Value,
        sub: Subresource,
        manager: Option<&str>,
    ) -> Result<(Value, bool), ApiError> {
        {
            let mut st = self.lock();
            let creates = sub == Subresource::Main
                && def.creates_on_update()
                && st.get(def, ns, name).is_err_and(|e| e.code == 404);
            if !creates {
                let calls = if sub == Subresource::Main { st.update_webhooks(def, ns, name) } else { None };
                if calls.is_some() || def.conversion_webhook().is_some() {
                    drop(st);
                    let mut make = |_: &Value| Ok(body.clone());
                    let key = key_of(def, ns, name);
                    let (obj, _) = self.update_calling(def, &key, sub, &mut make, manager, calls.as_ref())?;
                    return Ok((
                        if sub == Subresource::Scale { scale_of(def, &obj) } else { def.present(&obj)? },
                        false,
                    ));
                }
                let (obj, _) = self.apply_update(&mut st, def, ns, name, body, sub, manager)?;
                drop(st);
                return Ok((
                    if sub == Subresource::Scale { scale_of(def, &obj) } else { def.present(&obj)? },
                    false,
                ));
            }
        }
        check_name(&body, name)?;
        // Upstream's update reads the body's version before it turns into a create.
        check_body_version(&body)?;
        self.create(def, ns, body, manager).map(|obj| (obj, true))
    }

    /// An update under the lock: the object read, the update worked out and committed.
    #[allow(clippy::too_many_arguments)]
    fn apply_update(
        &self,
        st: &mut State,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        body: Value,
        sub: Subresource,
        manager: Option<&str>,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let body = update_body(def, ns, name, body, sub)?;
        let old = st.get(def, ns, name).map_err(|e| missing_scale(def, sub, name, e))?;
        // Borrowed when it is stored in the request's version: an update copies nothing more.
        let old_view = def.view(&old)?;
        match Self::prepare_update(def, name, body, sub, manager, &old_view, &mut |_| Ok(()))? {
            None => Ok((old, false)),
            Some(new) => {
                let update = Update { new, old: Arc::clone(&old), old_view: &old_view, stored: None };
                Self::commit_update(st, def, ns, name, update, sub).map(|stored| (stored, true))
            }
        }
    }

    /// The object an update of `old` makes, or `None` when it changes nothing (a no-op write does
    /// not take a new version): preconditions, the strategy, defaults, `mutate` (admission's
    /// webhooks), validation and `managedFields`. It looks at no other object, so it needs no
    /// lock.
    fn prepare_update(
        def: &ResourceDef,
        name: &str,
        body: Value,
        sub: Subresource,
        manager: Option<&str>,
        old_view: &Value,
        mutate: &mut dyn FnMut(&mut Value) -> Result<(), ApiError>,
    ) -> Result<Option<Value>, ApiError> {
        // As upstream's storage: the body's uid is a precondition, checked before its
        // resourceVersion, which must be a number (`ObjectResourceVersion`'s ParseUint error is
        // not classified: a 500).
        if matches!(sub, Subresource::Main | Subresource::Status) {
            decode(def, &body)?;
        }
        let (body_uid, old_uid) = (meta_str(&body, "uid"), meta_str(old_view, "uid"));
        if !body_uid.is_empty() && body_uid != old_uid {
            return Err(ApiError::conflict(
                def.group,
                def.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {old_uid}"
                ),
            ));
        }
        let body_rv = meta_str(&body, "resourceVersion");
        check_body_version(&body)?;
        // `Store.Update`: a strategy without `AllowUnconditionalUpdate` wants a version to update
        // from, named as the resource (a Scale without one updates from the stored version).
        if body_rv.is_empty() && sub != Subresource::Scale && !def.allows_unconditional_update() {
            return Err(ApiError::invalid(
                def.group,
                def.plural,
                name,
                &[(
                    "metadata.resourceVersion".into(),
                    "Invalid value: 0x0: must be specified for an update".into(),
                )],
            ));
        }
        if !body_rv.is_empty() && body_rv != meta_str(old_view, "resourceVersion") {
            return Err(stale(def, name));
        }
        let mut new = match sub {
            // The main endpoint keeps the stored status; `/status` changes nothing else.
            Subresource::Main if def.status_subresource => with_status(body, old_view.get("status")),
            Subresource::Main => body,
            // A custom resource's status strategy keeps everything but the status; a built-in
            // one the stored spec (and what `prepare_status_update` restores), the metadata being
            // the request's.
            Subresource::Status if def.custom().is_some() => {
                with_status(old_view.clone(), body.get("status"))
            }
            Subresource::Status => {
                let mut n = with_status(old_view.clone(), body.get("status"));
                if let (Some(m), Some(o)) = (body.get("metadata"), n.as_object_mut()) {
                    o.insert("metadata".into(), m.clone());
                }
                n
            }
            Subresource::Scale => {
                let mut n = old_view.clone();
                let replicas = body.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
                let path = def.scale.map_or(".spec.replicas", |s| s.spec_replicas);
                set_path(&mut n, path, replicas);
                n
            }
            // The stored object with the request's values of the parts (or without them).
            Subresource::Action(_) => {
                let mut n = old_view.clone();
                for part in sub.parts() {
                    set_pointer(&mut n, part, body.pointer(part).cloned());
                }
                n
            }
        };
        keep_server_fields(&mut new, old_view);
        match sub {
            Subresource::Main => def.prepare_update(&mut new, old_view),
            Subresource::Status => def.prepare_status_update(&mut new, old_view),
            Subresource::Scale | Subresource::Action(_) => {}
        }
        def.apply_defaults(&mut new);
        def.stamp(&mut new);
        if !matches!(sub, Subresource::Main | Subresource::Status) {
            decode(def, &new)?;
        }
        mutate(&mut new)?;
        let mut meta = metadata_update_errors(&new, old_view);
        meta.extend(crate::metadata::validate_update(&new, def.metadata_rules()));
        let mut errs = object_errors(def, &new, Some(old_view), meta);
        if sub == Subresource::Status {
            errs.extend(def.validate_status_update(&new, old_view));
        }
        if !errs.is_empty() {
            return Err(ApiError::invalid(def.internal_group(), def.kind, name, &errs));
        }
        if let Some(m) = manager {
            record_update(def, &mut new, Some(old_view), m, sub);
        }
        // A status strategy's `PrepareForUpdate` never moves the generation.
        if matches!(sub, Subresource::Main | Subresource::Scale) && def.generation_changes(&new, old_view) {
            let g = old_view.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
            meta_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        Ok((!same_but_version(&new, old_view)).then_some(new))
    }

    /// Stores `new`, prepared from `old` (the object stored now): quota for the main resource,
    /// the commit, and the removal of an object whose last finalizer went.
    fn commit_update(
        st: &mut State,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        update: Update<'_>,
        sub: Subresource,
    ) -> Result<Arc<Value>, ApiError> {
        let Update { mut new, old, old_view, stored } = update;
        let key = key_of(def, ns, name);
        if sub == Subresource::Main {
            if def.storage == allocations::SERVICE_STORAGE {
                st.allocations.allocate(ns, &mut new, Some(&old))?;
            }
            let req = st.admission_request(Operation::Update, def, ns, Some(old_view));
            let effects = crate::admission::validate(&req, &new)?;
            st.charge(ns, effects.charges);
        }
        let finalized = is_deleting(&new) && finalizers(&new).is_empty();
        let stored = match stored {
            Some(stored) => stored,
            None => def.to_storage(new)?,
        };
        let stored = st.commit(key.clone(), ChangeType::Modified, stored, Some(old));
        if finalized {
            st.remove(&key);
        }
        Ok(stored)
    }

    /// PATCH with any of the four patch types; apply creates the object when it is missing.
    ///
    /// Returns the object and whether it was created.
    ///
    /// # Errors
    ///
    /// As [`update`](Self::update), plus 400 for a patch that cannot be applied, 409 for an apply
    /// conflict, and 422 for an apply without a field manager.
    ///
    /// `manager`: for an apply, the `fieldManager` it requires; for the other patch types, who
    /// writes (the `fieldManager` or the User-Agent's), as for [`create`](Self::create).
    /// `check` sees the patched object before it is validated — an apply's once its configuration
    /// is merged — for the request's `fieldValidation` (see
    /// [`crate::field_validation::check_patched`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        ptype: PatchType,
        body: &Value,
        sub: Subresource,
        manager: Option<&str>,
        force: bool,
        check: &mut dyn FnMut(&mut Value) -> Result<(), ApiError>,
    ) -> Result<(Value, bool), ApiError> {
        let present =
            |o: &Value| if sub == Subresource::Scale { Ok(scale_of(def, o)) } else { def.present(o) };
        // An apply records its manager itself; the other types record who writes.
        let recorded = if ptype == PatchType::Apply {
            if manager.is_none_or(str::is_empty) {
                return Err(ApiError::invalid(
                    def.group,
                    def.kind,
                    name,
                    &[("fieldManager".into(), "Required value: is required for apply patch".into())],
                ));
            }
            check_applied(def, name, body)?;
            None
        } else {
            if ptype == PatchType::Strategic && def.custom().is_some() {
                // Custom resources have no patch strategies to merge by (upstream's CRD handler
                // lists the other three types only).
                return Err(ApiError::unsupported_media_type(PatchType::CUSTOM_RESOURCE_TYPES));
            }
            manager
        };
        let key = key_of(def, ns, name);
        loop {
            let mut st = self.lock();
            let Some(current) = st.object(&key) else {
                if ptype != PatchType::Apply {
                    return Err(missing_scale(
                        def,
                        sub,
                        name,
                        ApiError::not_found(def.group, def.plural, name),
                    ));
                }
                drop(st);
                let mut obj = body.clone();
                meta_mut(&mut obj).insert("name".into(), json!(name));
                let applied = manager.unwrap_or_default();
                record_apply(&mut obj, applied, &patch::leaf_paths(body), &def.api_version());
                check(&mut obj)?;
                match self.create_stored(def, ns, obj, None) {
                    // Created meanwhile: the apply is an update of it.
                    Err(e) if e.reason == "AlreadyExists" => continue,
                    created => return Ok((def.present(&*created?)?, true)),
                };
            };
            let calls = if sub == Subresource::Main { st.update_webhooks(def, ns, name) } else { None };
            if calls.is_some() || def.conversion_webhook().is_some() {
                drop(st);
                let mut make = |stored: &Value| {
                    Self::patched(def, ptype, body, sub, manager, force, &mut *check, stored)
                };
                let (obj, _) = self.update_calling(def, &key, sub, &mut make, recorded, calls.as_ref())?;
                return Ok((present(&obj)?, false));
            }
            let target = Self::patched(def, ptype, body, sub, manager, force, check, &current)?;
            let (obj, _) = self.apply_update(&mut st, def, ns, name, target, sub, recorded)?;
            drop(st);
            return Ok((present(&obj)?, false));
        }
    }

    /// What a patch makes of `stored`: an apply's configuration merged onto the live object,
    /// or the patch applied to the object (or its scale) and checked.
    #[allow(clippy::too_many_arguments)]
    fn patched(
        def: &ResourceDef,
        ptype: PatchType,
        body: &Value,
        sub: Subresource,
        manager: Option<&str>,
        force: bool,
        check: &mut dyn FnMut(&mut Value) -> Result<(), ApiError>,
        stored: &Value,
    ) -> Result<Value, ApiError> {
        if ptype == PatchType::Apply {
            let live = def.present(stored)?;
            let mut merged = server_side_apply(def, &live, body, manager.unwrap_or_default(), force)?;
            // The applied configuration is merged onto the live object, whose resourceVersion it
            // keeps unless it names one: an apply is never refused for want of a version.
            if meta_str(&merged, "resourceVersion").is_empty() {
                meta_mut(&mut merged)
                    .insert("resourceVersion".into(), json!(meta_str(&live, "resourceVersion")));
            }
            check(&mut merged)?;
            return Ok(merged);
        }
        let mut target = if sub == Subresource::Scale { scale_of(def, stored) } else { def.present(stored)? };
        match ptype {
            PatchType::Merge => patch::merge_patch(&mut target, body),
            PatchType::Strategic => patch::strategic_merge(&mut target, body)?,
            PatchType::Json => patch::json_patch(&mut target, body)?,
            PatchType::Apply => unreachable!("handled above"),
        }
        if !target.is_object() {
            // The patched bytes are read for their kind first, into a struct: Go's decoder names
            // what it found instead of an object.
            let why = format!(
                "Invalid value: {}: couldn't get version/kind; json parse error: {}",
                crate::go_print::go_quote(&target.to_string()),
                crate::gojson::not_an_object(&target)
            );
            return Err(ApiError::invalid("", "", "", &[("patch".into(), why)]));
        }
        // The patched object is decoded into the kind's type at once (`endpoints/handlers/
        // patch.go`): what it cannot hold is a 422 on the field `patch`, with no kind, its value
        // the patched JSON (a strategic merge's: the patched map, printed by Go).
        if sub == Subresource::Main
            && let Err(e) = def.decode(&target)
        {
            let shown = if ptype == PatchType::Strategic {
                crate::go_print::go_print(&target)
            } else {
                target.to_string()
            };
            return Err(ApiError::invalid(
                "",
                "",
                "",
                &[("patch".into(), format!("Invalid value: {}: {e}", crate::go_print::go_quote(&shown)))],
            ));
        }
        if sub == Subresource::Main {
            check(&mut target)?;
        }
        Ok(target)
    }

    /// An update whose admission calls webhooks (`calls`), as upstream's `GuaranteedUpdate`:
    /// worked out with the lock let go, from the body `make` gives for the object stored then,
    /// and committed only if it was not written meanwhile — else worked out again.
    fn update_calling(
        &self,
        def: &ResourceDef,
        key: &Key,
        sub: Subresource,
        make: &mut dyn FnMut(&Value) -> Result<Value, ApiError>,
        manager: Option<&str>,
        calls: Option<&crate::admission::WebhookCalls>,
    ) -> Result<(Arc<Value>, bool), ApiError> {
        let (ns, name) = (key.1.as_str(), key.2.as_str());
        loop {
            let (frozen, old) = self.read_pinned(def, key)?;
            let body = update_body(def, ns, name, make(&old)?, sub)?;
            let old_view = def.view(&old)?;
            let mut mutate = |new: &mut Value| match calls {
                Some(calls) => mutate_by_webhooks(def, calls, new, Some(&old_view)),
                None => Ok(()),
            };
            let Some(new) = Self::prepare_update(def, name, body, sub, manager, &old_view, &mut mutate)?
            else {
                return Ok((old, false));
            };
            if let Some(calls) = calls {
                calls.validate(Some(&new), Some(&old_view))?;
            }
            // A custom resource's conversion webhook is called here too, not under the lock.
            let stored = def.conversion_webhook().map(|_| def.to_storage(new.clone())).transpose()?;
            let mut st = self.lock();
            if st.is_current(key, &frozen) {
                let update = Update { new, old: Arc::clone(&old), old_view: &old_view, stored };
                return Self::commit_update(&mut st, def, ns, name, update, sub).map(|stored| (stored, true));
            }
        }
    }

    /// A JSON merge patch of the object itself, made in place rather than through the API: no
    /// manager recorded, no `fieldValidation`.
    ///
    /// # Errors
    ///
    /// As a PATCH request does.
    pub fn merge(&self, def: &ResourceDef, ns: &str, name: &str, patch: &Value) -> Result<Value, ApiError> {
        self.patch(def, ns, name, PatchType::Merge, patch, Subresource::Main, None, false, &mut |_| Ok(()))
            .map(|(obj, _)| obj)
    }

    /// The object at `key` and the frozen form it was read from, thawed (if need be) after the
    /// lock is let go: what a write worked out unlocked commits against ([`State::is_current`]).
    fn read_pinned(&self, def: &ResourceDef, key: &Key) -> Result<(Arc<Frozen>, Arc<Value>), ApiError> {
        let (frozen, read) =
            self.lock().read_pinned(key).ok_or_else(|| ApiError::not_found(def.group, def.plural, &key.2))?;
        Ok((frozen, read.value()))
    }

    /// Changes a stored object in place, as the server's own subresources do (a binding sets a
    /// pod's node and its `PodScheduled` condition in one write): no validation, no manager
    /// recorded, one new version — none when `change` leaves it as it was.
    ///
    /// As upstream's `GuaranteedUpdate`: `change` works on the object as read, with no lock
    /// held, and the result is stored only if nothing was written since; otherwise `change` runs
    /// again on what is stored now.
    ///
    /// # Errors
    ///
    /// 404 when it does not exist; whatever `change` refuses with.
    pub(crate) fn modify(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        mut change: impl FnMut(&mut Value) -> Result<(), ApiError>,
    ) -> Result<(), ApiError> {
        let key = key_of(def, ns, name);
        loop {
            let (frozen, old) = self.read_pinned(def, &key)?;
            let view = def.view(&old)?;
            let mut new = view.clone().into_owned();
            change(&mut new)?;
            if new == *view {
                return Ok(());
            }
            let new = def.to_storage(new)?;
            let mut st = self.lock();
            if st.is_current(&key, &frozen) {
                st.commit(key, ChangeType::Modified, new, Some(old));
                return Ok(());
            }
        }
    }

    /// How many objects the store holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().objects.len()
    }

    /// Whether the store holds no objects.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Go's `time.Time.String()` of a `metav1.Time` as the server decodes it (in UTC):
/// `2026-01-01 00:00:00 +0000 UTC`, a fraction only when there is one.
fn go_time(text: &str) -> String {
    let Ok(t) = text.parse::<jiff::Timestamp>() else { return text.to_owned() };
    let utc = t.to_zoned(jiff::tz::TimeZone::UTC);
    let mut out = utc.strftime("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = utc.subsec_nanosecond();
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}

/// Upstream's `ValidateObjectMetaAccessorUpdate` rules that reach validation here (the name,
/// namespace, uid, creation time and generation are the stored ones by then): an object being
/// deleted takes no new finalizers, and the deletion's time and grace period are not set by an
/// update.
fn metadata_update_errors(new: &Value, old: &Value) -> Vec<(String, String)> {
    let mut errs = Vec::new();
    if is_deleting(old) {
        let before = finalizers(old);
        let mut added: Vec<String> = finalizers(new).into_iter().filter(|f| !before.contains(f)).collect();
        if !added.is_empty() {
            added.sort();
            added.dedup();
            let go_list = added.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
            errs.push((
                "metadata.finalizers".into(),
                format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{go_list}}}"
                ),
            ));
        }
    }
    let field = |o: &Value, f: &str| o.pointer(&format!("/metadata/{f}")).filter(|v| !v.is_null()).cloned();
    let (new_t, old_t) = (field(new, "deletionTimestamp"), field(old, "deletionTimestamp"));
    let instant =
        |v: &Option<Value>| v.as_ref().map(|t| t.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok()));
    if instant(&new_t) != instant(&old_t) {
        let shown = new_t.as_ref().and_then(Value::as_str).map_or_else(|| "null".to_owned(), go_time);
        errs.push((
            "metadata.deletionTimestamp".into(),
            format!("Invalid value: {shown}: field is immutable"),
        ));
    }
    let (new_g, old_g) = (field(new, "deletionGracePeriodSeconds"), field(old, "deletionGracePeriodSeconds"));
    if new_g != old_g {
        let shown = new_g.map_or_else(|| "null".to_owned(), |g| g.to_string());
        errs.push((
            "metadata.deletionGracePeriodSeconds".into(),
            format!("Invalid value: {shown}: field is immutable"),
        ));
    }
    errs
}

/// What upstream's field manager checks of an apply configuration before merging it
/// (`managedfields/internal/structuredmerge.go`, `Apply`): its apiVersion is the request's (a
/// 400), it carries no `managedFields` (a 400), and it has a kind its type converter knows —
/// without one, the typed patch object cannot be made: an unclassified 500
/// (`failed to create typed patch object (ns/name; group/version, Kind=): no corresponding type
/// for …`). Its name must then be the URL's, as for an update (400).
fn check_applied(def: &ResourceDef, name: &str, body: &Value) -> Result<(), ApiError> {
    let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api_version != def.api_version() {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {api_version}, expected: {}",
            def.api_version()
        )));
    }
    if body.pointer("/metadata/managedFields").is_some_and(|m| !m.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = format!("{group}/{version}, Kind={kind}");
        return Err(ApiError::unclassified(format!(
            "failed to create typed patch object ({}/{}; {gvk}): no corresponding type for {gvk}",
            meta_str(body, "namespace"),
            meta_str(body, "name"),
        )));
    }
    match meta_str(body, "name") {
        "" => Ok(()),
        n if n != name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// The 409 of an update whose resourceVersion is not the stored one.
fn stale(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::conflict(
        def.group,
        def.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// An update's body, checked against the URL before the object is read: a Scale's shape, or the
/// kind, version, namespace and name.
fn update_body(
    def: &ResourceDef,
    ns: &str,
    name: &str,
    body: Value,
    sub: Subresource,
) -> Result<Value, ApiError> {
    if sub == Subresource::Scale {
        check_name(&body, name)?;
        same_namespace(def, ns, &body)?;
        return check_scale(&body, name);
    }
    let body = check_body(def, ns, body)?;
    check_name(&body, name)?;
    Ok(body)
}

/// The name check of upstream's update handler (`endpoints/handlers/rest.go`, `checkName`): the
/// body must name the object of the URL.
fn check_name(body: &Value, name: &str) -> Result<(), ApiError> {
    match meta_str(body, "name") {
        "" => Err(ApiError::bad_request(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        ))),
        n if n != name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// `target` with its `status` replaced by `status` (removed when `None`).
fn with_status(mut target: Value, status: Option<&Value>) -> Value {
    match (status, target.as_object_mut()) {
        (Some(s), Some(o)) => {
            o.insert("status".into(), s.clone());
        }
        (None, Some(o)) => {
            o.remove("status");
        }
        _ => {}
    }
    target
}

/// Checks that the body is an object whose kind, apiVersion and namespace agree with the URL.
fn check_body(def: &ResourceDef, ns: &str, body: Value) -> Result<Value, ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(format!(
            "the body of a {} request must be a JSON object",
            def.kind
        )));
    }
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let wrong_kind = !kind.is_empty() && kind != def.kind;
    let wrong_version = !api_version.is_empty() && api_version != def.api_version();
    if def.custom().is_some() {
        // The custom resource handler decodes anything, then checks what it decoded.
        if wrong_version {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                def.api_version()
            )));
        }
        if wrong_kind {
            return Err(ApiError::invalid(
                def.group,
                kind,
                meta_str(&body, "name"),
                &[(
                    "kind".into(),
                    format!("Invalid value: {}: must be {}", crate::go_print::go_quote(kind), def.kind),
                )],
            ));
        }
    } else if wrong_kind || wrong_version {
        // A built-in kind is decoded by the scheme, which knows no other kind at that version
        // (`transformDecodeError` over the scheme's `NotRegisteredErr`).
        let kind = if kind.is_empty() { def.kind } else { kind };
        let api_version = if api_version.is_empty() { def.api_version() } else { api_version.to_owned() };
        let version = api_version.rsplit('/').next().unwrap_or("");
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {}: no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/api/legacyscheme/scheme.go:31\"",
            def.kind
        )));
    }
    same_namespace(def, ns, &body)?;
    Ok(body)
}

/// The handlers' `EnsureObjectNamespaceMatchesRequestNamespace`: a namespaced object's body names
/// the request's namespace, or none.
fn same_namespace(def: &ResourceDef, ns: &str, body: &Value) -> Result<(), ApiError> {
    let body_ns = meta_str(body, "namespace");
    if def.namespaced && !body_ns.is_empty() && body_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
                .to_owned(),
        ));
    }
    Ok(())
}

/// The autoscaling/v1 Scale view of an object with a scale subresource: replicas and selector
/// read from where the kind keeps them (upstream's Deployment registry; apiextensions'
/// `scaleFromCustomResource` for custom resources, with 0 for a missing count).
fn scale_of(def: &ResourceDef, obj: &Value) -> Value {
    let paths = def.scale.unwrap_or(crate::resource::ScalePaths {
        spec_replicas: ".spec.replicas",
        status_replicas: ".status.replicas",
        label_selector: None,
    });
    let at = |path: &str| obj.pointer(&crate::kinds::custom::pointer_of(path));
    let selector = match paths.label_selector.and_then(at) {
        Some(Value::String(s)) => s.clone(),
        // A `LabelSelector` (`matchLabels`, `matchExpressions`), or a ReplicationController's
        // plain map of labels.
        Some(sel @ Value::Object(m))
            if m.contains_key("matchLabels") || m.contains_key("matchExpressions") =>
        {
            // An empty selector selects everything: no requirement to print.
            let text = crate::selector::format_label_selector(Some(sel));
            if text == "<none>" { String::new() } else { text }
        }
        Some(Value::Object(m)) => {
            let mut pairs: Vec<String> =
                m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
            pairs.sort();
            pairs.join(",")
        }
        _ => String::new(),
    };
    let mut status = json!({ "replicas": at(paths.status_replicas).cloned().unwrap_or(json!(0)) });
    if paths.label_selector.is_some() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta_str(obj, "name"), "namespace": meta_str(obj, "namespace"), "uid": meta_str(obj, "uid"),
            "resourceVersion": meta_str(obj, "resourceVersion"), "creationTimestamp": meta_str(obj, "creationTimestamp"),
        },
        "spec": { "replicas": at(paths.spec_replicas).cloned().unwrap_or(json!(0)) },
        "status": status,
    })
}

/// The NotFound of an object addressed through `/scale`: a built-in kind's scale REST names the
/// subresource (`pkg/registry/apps/deployment/storage/storage.go`: `ScaleREST.Get` and
/// `scaleUpdatedObjectInfo` answer `deployments/scale`, as the ReplicaSet, StatefulSet and
/// ReplicationController ones do); a custom resource's passes the store's error on
/// (apiextensions' `customresource/etcd.go`).
fn missing_scale(def: &ResourceDef, sub: Subresource, name: &str, e: ApiError) -> ApiError {
    if sub == Subresource::Scale && e.code == 404 && def.custom().is_none() {
        ApiError::not_found(def.group, &format!("{}/scale", def.plural), name)
    } else {
        e
    }
}

/// Sets the value at a `.`-separated path, creating the objects on the way.
fn set_path(obj: &mut Value, path: &str, value: Value) {
    let mut at = obj;
    let mut segs = path.split('.').filter(|s| !s.is_empty()).peekable();
    while let Some(seg) = segs.next() {
        if !at.is_object() {
            *at = json!({});
        }
        let map = at.as_object_mut().expect("made an object");
        if segs.peek().is_none() {
            map.insert(seg.to_owned(), value);
            return;
        }
        at = map.entry(seg.to_owned()).or_insert_with(|| json!({}));
    }
}

/// Sets the value at a JSON pointer (`/spec/finalizers`), making the objects on the way; `None`
/// removes it.
fn set_pointer(obj: &mut Value, pointer: &str, value: Option<Value>) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let mut at = obj;
    for seg in parent.split('/').filter(|s| !s.is_empty()) {
        if !at.is_object() {
            *at = json!({});
        }
        at = at.as_object_mut().expect("made an object").entry(seg.to_owned()).or_insert_with(|| json!({}));
    }
    match (at.as_object_mut(), value) {
        (Some(map), Some(v)) => {
            map.insert(last.to_owned(), v);
        }
        (Some(map), None) => {
            map.remove(last);
        }
        (None, Some(v)) => *at = json!({ last: v }),
        (None, None) => {}
    }
}

fn check_scale(body: &Value, name: &str) -> Result<Value, ApiError> {
    // `ValidateScale`: the Scale's own metadata (its labels and annotations, which the parent
    // never takes), then the replicas.
    let meta = body.get("metadata").unwrap_or(&Value::Null);
    let mut errs = crate::label_rules::label_map_errors(meta.get("labels"), "metadata.labels");
    errs.extend(crate::label_rules::annotation_map_errors(meta.get("annotations"), "metadata.annotations"));
    match body.pointer("/spec/replicas") {
        Some(r) if r.as_i64().is_some_and(|n| n >= 0) => {}
        other => errs.push((
            "spec.replicas".into(),
            format!(
                "Invalid value: {}: must be greater than or equal to 0",
                other.map_or("null".into(), Value::to_string)
            ),
        )),
    }
    if errs.is_empty() {
        Ok(body.clone())
    } else {
        Err(ApiError::invalid("autoscaling", "Scale", name, &errs))
    }
}

/// A body the kind's type cannot hold is a 400, as the API server's decoder answers.
fn decode(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    def.decode(obj).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            def.kind, def.version, def.kind
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_maps() -> &'static ResourceDef {
        crate::catalog::find("", "v1", "configmaps").expect("built in")
    }

    fn store_with(name: &str) -> Store {
        let store = Store::new(StoreConfig::default());
        let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name }, "data": { "n": "0" } });
        store.create(config_maps(), "default", cm, Some("test")).unwrap();
        store
    }

    #[test]
    fn modify_works_on_the_object_unlocked_and_again_after_a_write_overtook_it() {
        let store = store_with("cas");
        let mut calls = 0;
        store
            .modify(config_maps(), "default", "cas", |cm| {
                calls += 1;
                if calls == 1 {
                    // A write lands between the read and the commit (it could not, were the lock
                    // held while `change` runs: it would wait forever).
                    store
                        .merge(config_maps(), "default", "cas", &json!({ "data": { "other": "x" } }))
                        .unwrap();
                }
                cm["data"]["n"] = json!(calls.to_string());
                Ok(())
            })
            .unwrap();
        assert_eq!(calls, 2, "the change ran again on what was stored");
        let cm = store.get(config_maps(), "default", "cas", Subresource::Main).unwrap();
        assert_eq!(cm["data"], json!({ "n": "2", "other": "x" }), "neither write lost");
    }

    #[test]
    fn an_unanswered_status_write_from_a_stale_read_is_a_conflict() {
        let pods = crate::catalog::find("", "v1", "pods").expect("built in");
        let store = Store::new(StoreConfig::default());
        let pod = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" },
            "spec": { "containers": [{ "name": "c", "image": "busybox" }] } });
        let read = store.create(pods, "default", pod, Some("test")).unwrap();
        let mut running = read.clone();
        running["status"] = json!({ "phase": "Running" });
        store.update_status_unanswered(pods, "default", "p", running.clone(), Some("kubelet")).unwrap();
        let stored = store.get(pods, "default", "p", Subresource::Main).unwrap();
        assert_eq!(stored["status"]["phase"], "Running");
        // The same read again: its version is no longer the stored one.
        running["status"]["phase"] = json!("Succeeded");
        let err = store.update_status_unanswered(pods, "default", "p", running, Some("kubelet")).unwrap_err();
        assert_eq!(err.code, 409);
        // Without a version it updates whatever is stored.
        let mut unconditional = stored.clone();
        meta_mut(&mut unconditional).remove("resourceVersion");
        unconditional["status"]["phase"] = json!("Succeeded");
        store.update_status_unanswered(pods, "default", "p", unconditional, Some("kubelet")).unwrap();
        let done = store.get(pods, "default", "p", Subresource::Main).unwrap();
        assert_eq!(done["status"]["phase"], "Succeeded");
        assert_eq!(done["spec"], stored["spec"], "a status write keeps the spec");
    }
}
