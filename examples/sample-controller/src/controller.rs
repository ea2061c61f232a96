//! The controller, in upstream's `controller.go` order: constants, the type, its constructor and
//! handlers, `run`, the worker (the [`kube_coordination`] part's), `sync`, and the Deployment builder.
//!
//! * Two informers: Foos (the desired state), and Deployments (the actual state). A Foo event
//!   enqueues the Foo's key; a Deployment event enqueues the key of the Foo that controls it, and
//!   nothing for a Deployment no Foo controls.
//! * One rate-limited queue (client-go's default controller limiter), `workers` workers.
//! * `sync` reads both caches — never GET from the API server — and writes only what differs:
//!   create the Deployment, set its replicas, report its available replicas in the Foo's status.
//! * Who may work — alone, the leader only, or each replica on its shard of the keys — is the
//!   [`kube_coordination`] part's; every write goes through the client's fence.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{EventType, Reporter};
use kube::{Client, Resource, ResourceExt};
pub use kube_coordination::Coordination;
use kube_coordination::{Conflict, Coordinator, ReadVersion, Reconcile, Settings, Watched};
use kube_informer::{
    Config as InformerConfig, Deleted, EnqueueKey, EventHandler, Expect, Expectations, Informer, Lister,
    ObjectKey,
};
use kube_manager::Scope;
use kube_manager::client::Agent;
use kube_manager::events::EventRecorder;
use kube_workqueue::prometheus::PrometheusMetrics;
use kube_workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};
use prometheus_client::registry::Registry;
use serde_json::json;

use crate::foo::Foo;

/// The name this controller reports in Events, field managers, metrics and its Lease.
pub const CONTROLLER_NAME: &str = "sample-controller";
/// Who its requests say they are, and what a namespace-sharded replica lists and watches.
pub const AGENT: Agent =
    Agent { name: CONTROLLER_NAME, version: env!("CARGO_PKG_VERSION"), watched: &["foos", "deployments"] };
/// The Event reason after a Foo synced (upstream's `SuccessSynced`).
pub const SUCCESS_SYNCED: &str = "Synced";
/// The Event reason when the Foo's Deployment belongs to someone else.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// The note of the [`SUCCESS_SYNCED`] Event.
pub const MESSAGE_RESOURCE_SYNCED: &str = "Foo synced successfully";
/// The image of the Deployments it creates, as upstream's.
pub const IMAGE: &str = "nginx:latest";
/// How long after a Deployment of a Foo is deleted its Foo is synced: the garbage collector
/// deletes it right after the Foo, and the Foo informer's watch may deliver the Foo's delete a
/// moment later than the Deployment informer's, when a sync would recreate the Deployment.
pub const DELETED_SYNC_DELAY: Duration = Duration::from_secs(1);

/// Controller settings: those of every controller of these parts (its resync is the Foo
/// informer's).
pub use kube_manager::Options;

/// A sync that did not converge; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Deployment the Foo names exists and no Foo — or another Foo — controls it.
    #[error("Resource {name:?} already exists and is not managed by Foo")]
    ResourceExists {
        /// The Deployment's name.
        name: String,
    },
    /// The API server refused a write because the object had changed since it was read (a
    /// precondition): requeued once the cache holds the newer version, not a failure.
    #[error("{0}")]
    Conflict(Box<Conflict>),
    /// An API call failed.
    #[error("{action} for Foo {key}: {source}")]
    Api {
        /// What was being done: `create Deployment`, `scale Deployment`, `update status`.
        action: &'static str,
        /// The Foo.
        key: ObjectKey,
        /// The API error.
        source: kube::Error,
    },
}

impl Error {
    /// Whether the write was withheld by the leader-election fence (this replica stopped leading
    /// or owning the key): the coordinator requeues the key instead of counting a failure.
    #[must_use]
    pub fn is_fenced(&self) -> bool {
        matches!(self, Self::Api { source, .. } if kube_lease_election::is_fenced(source))
    }
}

/// The sample-controller.
pub struct Controller {
    client: Client,
    foos: Informer<Foo>,
    deployments: Informer<Deployment>,
    foo_lister: Lister<Foo>,
    deploy_lister: Lister<Deployment>,
    created: Expectations,
    events: EventRecorder,
    /// Runs the informers and the workers, alone, elected or sharded.
    coordinator: Arc<Coordinator>,
    options: Options,
}

impl Controller {
    /// Assembles the parts and registers the handlers. Nothing runs until [`run`](Self::run).
    /// The queue's metrics go into `registry` under client-go's `workqueue_*{name="sample-controller"}`,
    /// the reconciles' under `controller_runtime_*{controller="sample-controller"}`, the shard
    /// metrics under `sample_controller_*`.
    ///
    /// ## Warning
    /// With leader election or sharding, `client` must carry the membership's fence
    /// ([`kube_manager::client::build_for`]): the fence is what stops a replica that lost its
    /// Lease from writing.
    #[must_use]
    pub fn new(client: Client, options: Options, registry: &mut Registry) -> Arc<Self> {
        let (foo_api, deploy_api, list_path) = match &options.scope {
            Scope::Namespace(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
                format!("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/{ns}/foos"),
            ),
            Scope::All => (
                Api::all(client.clone()),
                Api::all(client.clone()),
                "/apis/samplecontroller.k8s.io/v1alpha1/foos".to_owned(),
            ),
        };
        let foos = Informer::new(foo_api, InformerConfig::default().resync(options.resync));
        foos.set_transform(Arc::new(slim));
        // Every Deployment in scope, as upstream: which are ours is in their ownerReferences,
        // which a label selector cannot ask for.
        let deployments = Informer::new(deploy_api, InformerConfig::default().resync(Duration::ZERO));
        deployments.set_transform(Arc::new(slim));
        let metrics = Arc::new(PrometheusMetrics::register(registry));
        let queue = RateLimitingQueue::with_config(
            default_controller_rate_limiter(),
            QueueConfig::named(CONTROLLER_NAME).metrics(metrics),
        );
        // Every Foo event enqueues the Foo (upstream's `enqueueFoo`).
        let q = queue.clone();
        foos.add_handler(Arc::new(EnqueueKey::new(move |key| {
            q.add(key);
        })));
        let created = Expectations::default();
        deployments.add_handler(Arc::new(EnqueueOwner { queue: queue.clone(), created: created.clone() }));

        let coordinator = Coordinator::new(
            queue.clone(),
            // Foos first: their keys are the work keys.
            vec![
                Watched::source(foos.clone(), "Foo", ObjectKey::of),
                Watched::source(deployments.clone(), "Deployment", owner_key),
            ],
            Settings::new(CONTROLLER_NAME, options.workers, &options.identity)
                .shard_probe(client.clone(), list_path),
            registry,
        );
        let reporter =
            Reporter { controller: CONTROLLER_NAME.into(), instance: Some(options.identity.clone()) };
        Arc::new(Self {
            foo_lister: foos.lister(),
            deploy_lister: deployments.lister(),
            events: EventRecorder::new(client.clone(), reporter, options.events.clone(), registry),
            client,
            foos,
            deployments,
            created,
            coordinator,
            options,
        })
    }

    /// Whether both informer caches have synced (readiness).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.foos.has_synced() && self.deployments.has_synced()
    }

    /// Runs alone until `shutdown` resolves: informers, the cache-sync gate, then the workers.
    /// On shutdown, workers stop taking keys and in-flight syncs finish. Returns `false` if
    /// shutdown came before the caches synced.
    pub async fn run(self: Arc<Self>, shutdown: impl Future) -> bool {
        self.run_coordinated(Coordination::Alone, shutdown).await
    }

    /// As [`run`](Self::run), with the work shared as `how` says (see [`kube_coordination`]; a
    /// [`Membership`](kube_coordination::Membership) gives it).
    pub async fn run_coordinated(self: Arc<Self>, how: Coordination, shutdown: impl Future) -> bool {
        let synced = self.coordinator.run(Arc::clone(&self), how, shutdown).await;
        self.events.close().await;
        synced
    }

    /// Compares the Foo `key` asks for with its Deployment, converges the two, and reports the
    /// Deployment's available replicas in the Foo's status (upstream's `syncHandler`).
    ///
    /// # Errors
    ///
    /// The Deployment belongs to someone else, or an API call failed.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(foo) = self.foo_lister.get(key) else {
            // Gone: its Deployment goes with it (the garbage collector follows the ownerReference).
            tracing::debug!(%key, "Foo no longer exists");
            return Ok(());
        };
        let name = foo.spec.deployment_name.as_str();
        if name.is_empty() {
            // The schema refuses it; should one get through, retrying would not help: the next
            // change of the Foo enqueues it again.
            tracing::error!(%key, "deployment name must be specified");
            return Ok(());
        }
        let ns = key.namespace();
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), ns);
        let api_err = |action| move |source| Error::Api { action, key: key.clone(), source };
        // A refused precondition is a conflict, anything else an API error.
        let write_err = |action, read: ReadVersion| {
            move |source| match read.conflict(&source) {
                Some(c) => Error::Conflict(Box::new(c)),
                None => Error::Api { action, key: key.clone(), source },
            }
        };
        let deployment_key = ObjectKey::new(ns, name);
        let deployment = match self.deploy_lister.get(&deployment_key) {
            Some(d) => d,
            None if self.created.pending(&deployment_key, Expect::Created) => {
                // Its add enqueues this Foo again.
                tracing::debug!(%key, "waiting for the informer to show the Deployment just created");
                return Ok(());
            }
            None => {
                // The Deployment's delete may have overtaken the Foo's (the garbage collector
                // follows the Foo's): create only for a Foo still there.
                let uid = foo.metadata.uid.as_deref().unwrap_or_default();
                let primary = self.coordinator.confirm_primary(key, uid).await.map_err(api_err("read"))?;
                if !primary.may_act() {
                    tracing::debug!(%key, "not creating: the Foo is gone, replaced or being deleted; its event follows");
                    return Ok(());
                }
                let params =
                    PostParams { field_manager: Some(CONTROLLER_NAME.into()), ..PostParams::default() };
                let created = match deployments.create(&params, &new_deployment(&foo)).await {
                    Ok(d) => d,
                    // Someone's Deployment the cache does not hold: not shown yet, or, sharded by
                    // name, filed under its own key, which another replica may own.
                    Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                        return Err(self.resource_exists(&foo, name));
                    }
                    Err(e) => return Err(api_err("create Deployment")(e)),
                };
                self.created.expect(&deployment_key, Expect::Created);
                tracing::info!(%key, deployment = name, replicas = foo.spec.replicas, "created Deployment");
                Arc::new(created)
            }
        };
        if !is_controlled_by(&deployment, &foo) {
            return Err(self.resource_exists(&foo, name));
        }
        let deployment = match deployment.spec.replicas {
            Some(r) if r == foo.spec.replicas => deployment,
            from => {
                let params =
                    PatchParams { field_manager: Some(CONTROLLER_NAME.into()), ..PatchParams::default() };
                // Only on the version decided from: a Deployment that changed since (its owner, its
                // replicas, its status) refuses it with 409, and the Foo is decided again.
                let read = ReadVersion::of(deployment.as_ref());
                let patch = Patch::<()>::Json(read.replace("/spec/replicas", foo.spec.replicas));
                let scaled = deployments
                    .patch(name, &params, &patch)
                    .await
                    .map_err(write_err("scale Deployment", read))?;
                tracing::info!(%key, deployment = name, ?from, to = foo.spec.replicas, "scaled Deployment");
                Arc::new(scaled)
            }
        };
        self.update_foo_status(&foo, &deployment)
            .await
            .map_err(write_err("update status", ReadVersion::of(foo.as_ref())))?;
        self.event(&foo, EventType::Normal, SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED.to_owned());
        Ok(())
    }

    /// The Deployment `name` exists and this Foo does not control it: upstream's Warning Event,
    /// and the error the key is retried with.
    fn resource_exists(&self, foo: &Foo, name: &str) -> Error {
        let err = Error::ResourceExists { name: name.to_owned() };
        self.event(foo, EventType::Warning, ERR_RESOURCE_EXISTS, err.to_string());
        err
    }

    /// Sets `status.availableReplicas` from the Deployment's, through the `/status` subresource,
    /// when it differs, on the version of the Foo it was decided from. A Foo deleted meanwhile is
    /// not an error.
    async fn update_foo_status(&self, foo: &Foo, deployment: &Deployment) -> Result<(), kube::Error> {
        let available = deployment.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
        if foo.status.as_ref().map(|s| s.available_replicas) == Some(available) {
            return Ok(());
        }
        let foos: Api<Foo> = Api::namespaced(self.client.clone(), &foo.namespace().unwrap_or_default());
        let params = PatchParams { field_manager: Some(CONTROLLER_NAME.into()), ..PatchParams::default() };
        let patch = ReadVersion::of(foo).merge_patch(json!({ "status": { "availableReplicas": available } }));
        match foos.patch_status(&foo.name_any(), &params, &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Queues an Event about `foo`; publishing happens off the sync path and never fails it.
    fn event(&self, foo: &Foo, type_: EventType, reason: &str, note: String) {
        self.events.publish(&foo.object_ref(&()), type_, reason, note);
    }
}

impl Reconcile for Controller {
    type Error = Error;

    fn reconcile(&self, key: &ObjectKey) -> impl Future<Output = Result<(), Error>> + Send {
        self.sync(key)
    }

    fn is_fenced(error: &Error) -> bool {
        error.is_fenced()
    }

    fn started(&self) {
        tracing::info!("{CONTROLLER_NAME} started: watching Foos in namespace={}", self.options.scope);
    }
}

/// What the caches keep of an object: all but `managedFields`, which nothing here reads.
fn slim<K: Resource>(mut obj: K) -> K {
    obj.meta_mut().managed_fields = None;
    obj
}

/// The Foo that controls `d`: its controller ownerReference of kind Foo in our group.
fn owner(d: &Deployment) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    d.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && r.kind == "Foo" && r.api_version == Foo::api_version(&()))
}

/// The work key a Deployment stands for: its Foo's, or (no Foo controls it) its own, which names
/// no Foo and so costs a sync that finds nothing.
fn owner_key(d: &Deployment) -> ObjectKey {
    let ns = d.metadata.namespace.as_deref().unwrap_or("");
    ObjectKey::new(ns, &owner(d).map_or_else(|| d.name_any(), |r| r.name.clone()))
}

/// Deployment events enqueue the Foo that controls the Deployment (upstream's `handleObject`),
/// and settle the creates the cache now shows.
struct EnqueueOwner {
    queue: RateLimitingQueue<ObjectKey>,
    created: Expectations,
}

impl EnqueueOwner {
    fn enqueue(&self, d: &Deployment) {
        self.created.seen(&ObjectKey::of(d));
        if owner(d).is_some() {
            self.queue.add(owner_key(d));
        }
    }
}

impl EventHandler<Deployment> for EnqueueOwner {
    fn on_add(&self, obj: &Arc<Deployment>, _initial: bool) {
        self.enqueue(obj);
    }
    fn on_update(&self, old: &Arc<Deployment>, new: &Arc<Deployment>) {
        // A relist that found it unchanged: two versions always differ in resourceVersion.
        if old.metadata.resource_version != new.metadata.resource_version {
            self.enqueue(new);
        }
    }
    fn on_delete(&self, obj: &Deleted<Deployment>) {
        // Recreated if its Foo still exists then (deleted by hand), after the Foo informer has
        // had the time to show a Foo the garbage collector deleted it for.
        if owner(obj.object()).is_some() {
            self.queue.add_after(owner_key(obj.object()), DELETED_SYNC_DELAY);
        }
    }
}

/// Whether `foo` is `d`'s controller (apimachinery's `metav1.IsControlledBy`: by uid).
#[must_use]
pub fn is_controlled_by(d: &Deployment, foo: &Foo) -> bool {
    owner(d).is_some_and(|r| Some(&r.uid) == foo.metadata.uid.as_ref())
}

/// The Deployment of a Foo (upstream's `newDeployment`): named `spec.deploymentName`, labels
/// `app=nginx` and `controller=<foo>` on it, its selector and its pods, `spec.replicas`, one
/// `nginx:latest` container, and a controller ownerReference to the Foo, so that the garbage
/// collector deletes it with the Foo.
#[must_use]
pub fn new_deployment(foo: &Foo) -> Deployment {
    let labels = json!({ "app": "nginx", "controller": foo.name_any() });
    let owner = foo.controller_owner_ref(&()).map(|mut r| {
        r.block_owner_deletion = Some(true);
        r
    });
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": foo.spec.deployment_name,
            "namespace": foo.namespace(),
            "labels": labels,
            "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
        },
        "spec": {
            "replicas": foo.spec.replicas,
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": { "containers": [{ "name": "nginx", "image": IMAGE }] },
            },
        },
    }))
    .expect("a well-formed Deployment")
}
