//! kube-runtime's own `Controller` — the framework most Rust operators are built on, not this
//! repository's workqueue and informer — runs against the sandbox with a CRD-backed kind: users
//! who write their controllers kube-runtime's way get the same in-process test bed as the
//! repository's own parts.
//!
//! A kube-derive `Gizmo` (namespaced, with a status subresource) is installed as a CRD and
//! awaited as established (`kube::runtime::wait`). The controller watches Gizmos and `owns()`
//! ConfigMaps; its reconcile goes through `kube::runtime::finalizer`: on Apply it server-side
//! applies a ConfigMap controlled by the Gizmo and applies the Gizmo's status, on Cleanup it
//! records the cleanup and lets the finalizer go. The test then follows the object's life:
//! created (finalizer added, status and ConfigMap land), scaled (status and ConfigMap follow),
//! its ConfigMap deleted by hand (the `owns()` watch brings it back), deleted (cleanup runs, the
//! finalizer is removed, the Gizmo is gone and the sandbox's garbage collector takes the
//! ConfigMap), and the controller shut down gracefully.
//!
//! The life runs twice: for a bare Gizmo, and for one already holding another controller's
//! finalizer (the finalizer helper appends its own, removes only its own, and the Gizmo waits for
//! the other). Two small tests pin what the bare run needs the sandbox to answer as upstream
//! does: a JSON patch `test` of an absent member against `null` passes, and a server-side apply
//! that changes nothing is no new version a second later.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::finalizer::{self, Event, finalizer};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use kube_sandbox::Sandbox;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A kube-derive custom resource, as a kube-runtime user writes one.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "test.example.com", version = "v1", kind = "Gizmo", namespaced, status = "GizmoStatus")]
pub struct GizmoSpec {
    /// How many the gizmo wants.
    pub replicas: i32,
}

/// What the gizmo controller reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct GizmoStatus {
    /// The spec.replicas last reconciled.
    pub observed: i32,
    /// Whether the owned ConfigMap is in place.
    pub ready: bool,
}

const FINALIZER: &str = "gizmos.test.example.com/cleanup";
const MANAGER: &str = "gizmo-controller";

/// What the reconciler shares with the test.
struct Ctx {
    client: Client,
    /// `namespace/name` of every Gizmo whose cleanup ran.
    cleanups: Mutex<Vec<String>>,
    /// Every error the controller's stream or error_policy saw, for the failure messages.
    errors: Mutex<Vec<String>>,
    /// How many reconciles ran.
    reconciles: Mutex<usize>,
}

type ReconcileError = finalizer::Error<kube::Error>;

fn config_map_name(gizmo: &Gizmo) -> String {
    format!("{}-config", gizmo.name_any())
}

async fn reconcile(gizmo: Arc<Gizmo>, ctx: Arc<Ctx>) -> Result<Action, ReconcileError> {
    *ctx.reconciles.lock().unwrap() += 1;
    let ns = gizmo.namespace().expect("a namespaced Gizmo");
    let gizmos: Api<Gizmo> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&gizmos, FINALIZER, gizmo, |event| async {
        match event {
            Event::Apply(gizmo) => apply(&gizmo, &gizmos, &ctx).await,
            Event::Cleanup(gizmo) => {
                ctx.cleanups.lock().unwrap().push(format!("{ns}/{}", gizmo.name_any()));
                Ok(Action::await_change())
            }
        }
    })
    .await
}

/// The ConfigMap the controller applies for `gizmo`: controlled by it, with its replicas.
fn applied_config_map(gizmo: &Gizmo) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(gizmo)),
            namespace: gizmo.namespace(),
            owner_references: Some(vec![gizmo.controller_owner_ref(&()).expect("a Gizmo has a uid")]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("replicas".to_owned(), gizmo.spec.replicas.to_string())])),
        ..ConfigMap::default()
    }
}

/// Apply: the owned ConfigMap, then the status.
async fn apply(gizmo: &Gizmo, gizmos: &Api<Gizmo>, ctx: &Ctx) -> Result<Action, kube::Error> {
    let ns = gizmo.namespace().expect("a namespaced Gizmo");
    let replicas = gizmo.spec.replicas;
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let cm = applied_config_map(gizmo);
    cms.patch(&config_map_name(gizmo), &PatchParams::apply(MANAGER).force(), &Patch::Apply(&cm)).await?;

    let status = json!({
        "apiVersion": Gizmo::api_version(&()),
        "kind": Gizmo::kind(&()),
        "status": GizmoStatus { observed: replicas, ready: true },
    });
    gizmos
        .patch_status(&gizmo.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(status))
        .await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn error_policy(gizmo: Arc<Gizmo>, error: &ReconcileError, ctx: Arc<Ctx>) -> Action {
    ctx.errors.lock().unwrap().push(format!("error_policy for {}: {error}", gizmo.name_any()));
    Action::requeue(Duration::from_millis(200))
}

/// Polls `probe` until it gives a value, failing after a minute with what was awaited.
async fn eventually<T, Fut>(what: &str, ctx: &Ctx, mut probe: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            let errors = ctx.errors.lock().unwrap();
            panic!(
                "timed out after 60 s waiting until {what}; the controller saw {} errors, the last: {:#?}",
                errors.len(),
                errors.last()
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Creates the Gizmo CRD and waits until it is established.
async fn install(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Gizmo::crd()).await.expect("the CRD is created");
    let established = await_condition(crds, Gizmo::crd_name(), conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(60), established)
        .await
        .expect("the CRD is established within 60 s")
        .expect("watching the CRD")
        .expect("the CRD exists");
}

fn is_404(result: &Result<impl Sized, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(s)) if s.code == 404)
}

/// Runs the Gizmo's whole life under kube-runtime's `Controller`. With `foreign`, the Gizmo is
/// created carrying another controller's finalizer, which the test removes (playing that
/// controller) once the cleanup ran.
async fn gizmo_lifecycle(foreign: Option<&str>) {
    let sandbox = Sandbox::new();
    let client = sandbox.client();
    install(&client).await;
    let gizmos: Api<Gizmo> = Api::default_namespaced(client.clone());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());

    let ctx = Arc::new(Ctx {
        client: client.clone(),
        cleanups: Mutex::default(),
        errors: Mutex::default(),
        reconciles: Mutex::default(),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = Controller::new(gizmos.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .graceful_shutdown_on(async move {
            let _ = stopped.await;
        })
        .run(reconcile, error_policy, Arc::clone(&ctx))
        .for_each({
            let ctx = Arc::clone(&ctx);
            move |result| {
                match result {
                    // A trigger for an object already gone (the collected ConfigMap's delete maps
                    // to its deleted Gizmo): expected, kube-runtime's docs say.
                    Ok(_) | Err(controller::Error::ObjectNotFound(_)) => {}
                    Err(e) => ctx.errors.lock().unwrap().push(format!("controller stream: {e}")),
                }
                futures::future::ready(())
            }
        });
    let controller = tokio::spawn(controller);

    // Created: the finalizer goes on first, then the ConfigMap and the status.
    let mut new = Gizmo::new("g1", GizmoSpec { replicas: 1 });
    new.metadata.finalizers = foreign.map(|f| vec![f.to_owned()]);
    let created = gizmos.create(&PostParams::default(), &new).await.unwrap();
    let uid = created.uid().unwrap();
    let gizmo = eventually("g1's status is observed 1, ready", &ctx, || async {
        let g = gizmos.get("g1").await.unwrap();
        (g.status == Some(GizmoStatus { observed: 1, ready: true })).then_some(g)
    })
    .await;
    let expected: Vec<&str> = foreign.into_iter().chain([FINALIZER]).collect();
    assert_eq!(gizmo.finalizers(), expected, "the finalizer is appended to the Gizmo's");
    assert_eq!(gizmo.metadata.generation, Some(1), "status writes are not new generations");
    let cm = eventually("g1-config exists", &ctx, || async { cms.get_opt("g1-config").await.unwrap() }).await;
    let owners = cm.owner_references();
    assert_eq!(owners.len(), 1, "{owners:?}");
    let owner = &owners[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("test.example.com/v1", "Gizmo", "g1", uid.as_str())
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(cm.data.as_ref().and_then(|d| d.get("replicas")).map(String::as_str), Some("1"));
    let managers: Vec<_> = cm.managed_fields().iter().filter_map(|m| m.manager.as_deref()).collect();
    assert_eq!(managers, [MANAGER]);

    // Scaled: status and ConfigMap follow the spec.
    gizmos
        .patch("g1", &PatchParams::default(), &Patch::Merge(json!({ "spec": { "replicas": 3 } })))
        .await
        .unwrap();
    eventually("g1's status is observed 3", &ctx, || async {
        let g = gizmos.get("g1").await.unwrap();
        (g.status == Some(GizmoStatus { observed: 3, ready: true })).then_some(())
    })
    .await;
    let cm = eventually("g1-config's data says replicas=3", &ctx, || async {
        let cm = cms.get("g1-config").await.unwrap();
        (cm.data.as_ref().and_then(|d| d.get("replicas")).map(String::as_str) == Some("3")).then_some(cm)
    })
    .await;

    // The ConfigMap deleted by hand: the owns() watch maps it to its Gizmo, which puts it back.
    let old_uid = cm.uid().unwrap();
    cms.delete("g1-config", &DeleteParams::default()).await.unwrap();
    let recreated = eventually("g1-config is recreated", &ctx, || async {
        cms.get_opt("g1-config").await.unwrap().filter(|cm| cm.uid().as_deref() != Some(old_uid.as_str()))
    })
    .await;
    assert_eq!(recreated.data.as_ref().and_then(|d| d.get("replicas")).map(String::as_str), Some("3"));
    assert_eq!(recreated.owner_references()[0].uid, uid);

    // Deleted: the cleanup runs, the finalizer goes, the Gizmo is gone and its ConfigMap with it.
    gizmos.delete("g1", &DeleteParams::default()).await.unwrap();
    eventually("g1's cleanup ran", &ctx, || async {
        (*ctx.cleanups.lock().unwrap() == ["default/g1"]).then_some(())
    })
    .await;
    if let Some(foreign) = foreign {
        // Only the controller's own finalizer went; the other controller's holds the Gizmo.
        let held = eventually("g1 keeps only the other finalizer", &ctx, || async {
            gizmos.get_opt("g1").await.unwrap().filter(|g| g.finalizers() == [foreign])
        })
        .await;
        assert!(held.metadata.deletion_timestamp.is_some(), "g1 is being deleted");
        assert!(cms.get_opt("g1-config").await.unwrap().is_some(), "its ConfigMap waits for it");
        gizmos
            .patch(
                "g1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
            )
            .await
            .unwrap();
    }
    eventually("g1 is gone (404)", &ctx, || async { is_404(&gizmos.get("g1").await).then_some(()) }).await;
    eventually("g1-config is garbage-collected (404)", &ctx, || async {
        is_404(&cms.get("g1-config").await).then_some(())
    })
    .await;

    // Shut down gracefully: the controller's stream ends.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(60), controller)
        .await
        .expect("the controller stops within 60 s of its shutdown signal")
        .expect("the controller task does not panic");
    assert_eq!(*ctx.cleanups.lock().unwrap(), ["default/g1"], "one cleanup, once");
    let errors = ctx.errors.lock().unwrap();
    assert!(errors.is_empty(), "the controller ran without errors: {errors:#?}");
    // Every reconcile answers a change (the controller's no-op applies are not new versions, so
    // not events): a handful, not a hot loop.
    let reconciles = *ctx.reconciles.lock().unwrap();
    assert!(reconciles <= 30, "{reconciles} reconciles for a handful of changes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtimes_controller_reconciles_a_gizmo_through_its_life() {
    gizmo_lifecycle(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_runtimes_finalizer_shares_a_gizmo_with_another_controllers_finalizer() {
    gizmo_lifecycle(Some("other.example.com/hold")).await;
}

// The two sandbox behaviours the lifecycle above found, each on its own.

#[tokio::test]
async fn a_json_patch_test_of_an_absent_member_against_null_passes_as_upstream() {
    let sandbox = Sandbox::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(sandbox.client());
    let cm = ConfigMap {
        metadata: ObjectMeta { name: Some("plain".into()), ..ObjectMeta::default() },
        ..ConfigMap::default()
    };
    cms.create(&PostParams::default(), &cm).await.unwrap();
    // What kube-runtime's finalizer() sends for an object without finalizers: upstream's
    // json-patch (evanphx/json-patch v4, `Patch.test`) takes an absent member for null.
    let ops = json!([
        { "op": "test", "path": "/metadata/finalizers", "value": null },
        { "op": "add", "path": "/metadata/finalizers", "value": [FINALIZER] },
    ]);
    let patched = cms
        .patch("plain", &PatchParams::default(), &Patch::Json::<()>(serde_json::from_value(ops).unwrap()))
        .await
        .expect("the test of an absent member against null passes");
    assert_eq!(patched.finalizers(), [FINALIZER]);
}

#[tokio::test]
async fn a_no_op_apply_a_second_later_keeps_the_resource_version_as_upstream() {
    let sandbox = Sandbox::new();
    let cms: Api<ConfigMap> = Api::default_namespaced(sandbox.client());
    let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "same" }, "data": { "a": "1" } });
    let first = cms.patch("same", &PatchParams::apply(MANAGER), &Patch::Apply(&cm)).await.unwrap();
    // Setup, not an assertion: let the managedFields time (whole seconds) move on.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = cms.patch("same", &PatchParams::apply(MANAGER), &Patch::Apply(&cm)).await.unwrap();
    // Upstream's registry store reverts time-only managedFields changes
    // (`fieldmanager.IgnoreManagedFieldsTimestampsTransformer`): no new version, no watch event.
    assert_eq!(again.resource_version(), first.resource_version(), "a no-op apply is not a write");
}
