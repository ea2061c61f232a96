//! The controllers every sandbox runs, with a simulated cluster or without: the garbage
//! collector, the namespace controller, the PVC and PV protection controllers, the resource quota
//! controller, the ClusterRole aggregation controller, the ValidatingAdmissionPolicy status
//! controller — and, with no simulated Deployment controller, the Deployment controller's
//! status-only mode.
//!
//! Like the simulation's other parts they follow the store's changes (each change is taken as it
//! comes, so a queue's "since when" is the write's) and act through the API's verbs, validated
//! and recorded in `managedFields` under `kube-controller-manager`, as a cluster shows them; a
//! write that finds its object changed since it was read is left to the next pass. They act on a
//! tick: the sandbox's [`Rollout`] pace (10 ms for `Instant`), on the wall clock.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use super::api::{Api, Defs};
use super::deployment::StatusOnly;
use super::garbage_collector::GarbageCollector;
use super::namespace::Namespaces;
use super::policy_status::{self, PolicyStatus};
use super::protection::Protection;
use super::quota::Quotas;
use super::role_aggregation::{self, RoleAggregation};
use crate::Rollout;
use crate::clock::Clock;
use crate::store::{ChangeType, Followed, Store};

/// The core controllers' queues.
pub(crate) struct CoreControllers {
    garbage_collector: Option<GarbageCollector>,
    namespaces: Namespaces,
    protection: Protection,
    quotas: Quotas,
    roles: RoleAggregation,
    policies: PolicyStatus,
    deployments: Option<StatusOnly>,
}

impl CoreControllers {
    /// The controllers for `store`; `deployments` when the Deployments' status is theirs.
    pub(crate) fn new(store: &Store, deployments: Option<StatusOnly>) -> Self {
        Self {
            garbage_collector: store.collects_garbage().then(GarbageCollector::default),
            namespaces: Namespaces::default(),
            protection: Protection::default(),
            quotas: Quotas::default(),
            roles: RoleAggregation::default(),
            policies: PolicyStatus::default(),
            deployments,
        }
    }

    /// A change in the store: who must look at it.
    fn observe(&mut self, store: &Store, change: &Followed) {
        let c = &change.retained;
        let gone = c.kind == ChangeType::Deleted;
        match c.key.0 {
            "namespaces." => self.namespaces.observe(&c.key.2, (!gone).then(|| change.object()).as_deref()),
            "deployments.apps" => {
                if let Some(d) = self.deployments.as_mut() {
                    d.observe(&c.key.1, &c.key.2, (!gone).then(|| change.object()).as_deref());
                }
            }
            role_aggregation::STORAGE => self.roles.observe(),
            policy_status::STORAGE if !gone => self.policies.observe(&c.key.2),
            storage if crate::admission::protection_finalizer(storage).is_some() => {
                self.protection.observe(&c.key, (!gone).then(|| change.object()).as_deref());
            }
            _ => {}
        }
        self.quotas.observe(&c.key, c.kind);
        if let Some(gc) = self.garbage_collector.as_mut() {
            gc.observe(store, change);
        }
    }

    /// One pass of each, in the order the sandbox has always run them.
    fn sync(&mut self, api: &Api<'_>) {
        if let Some(d) = self.deployments.as_mut() {
            d.sync(api);
        }
        self.namespaces.sync(api);
        if let Some(gc) = self.garbage_collector.as_mut() {
            gc.sync(api);
        }
        self.protection.sync(api);
        self.quotas.sync(api);
        self.roles.sync(api);
        self.policies.sync(api);
    }
}

/// Runs the core controllers until the sandbox is dropped: `feed` (the store's changes, followed
/// before anything was written) is taken as it comes, and each controller makes a pass every
/// tick of `pace`. `clock` is the simulated cluster's, when there is one.
pub(crate) async fn run(
    shared: Weak<crate::SandboxState>,
    mut feed: UnboundedReceiver<Followed>,
    mut controllers: CoreControllers,
    pace: Rollout,
    clock: Clock,
) {
    let every = match pace {
        Rollout::Paced(d) => d.max(Duration::from_millis(1)),
        Rollout::Instant => Duration::from_millis(10),
    };
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let defs = Defs::get();
    loop {
        tokio::select! {
            got = feed.recv() => {
                let Some(change) = got else { return };
                let Some(strong) = shared.upgrade() else { return };
                controllers.observe(&strong.store, &change);
                while let Ok(change) = feed.try_recv() {
                    controllers.observe(&strong.store, &change);
                }
            }
            _ = tick.tick() => {
                let Some(strong) = shared.upgrade() else { return };
                // What was written before the tick is looked at in this pass.
                while let Ok(change) = feed.try_recv() {
                    controllers.observe(&strong.store, &change);
                }
                let api = Api { store: &strong.store, clock: &clock, defs: &defs, orphans: &super::api::NO_ORPHANS };
                controllers.sync(&api);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use crate::{Rollout, Sandbox, SandboxConfig};

    /// The managers and subresources of an object's `managedFields`.
    fn managers(obj: &Value) -> Vec<(String, String)> {
        let entries = obj.pointer("/metadata/managedFields").and_then(Value::as_array).cloned();
        entries
            .unwrap_or_default()
            .iter()
            .map(|e| {
                let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                (field("manager"), field("subresource"))
            })
            .collect()
    }

    /// Waits (up to 10 s) until `ready` holds of the object `plural` `name` in `default`.
    async fn until(
        sb: &Sandbox,
        group: &str,
        plural: &str,
        name: &str,
        ready: impl Fn(&Value) -> bool,
    ) -> Value {
        let def = crate::catalog::find(group, "v1", plural).expect("built in");
        for _ in 0..1000 {
            if let Some(obj) = sb.store().stored(def, "default", name).filter(|o| ready(o)) {
                return (*obj).clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{plural}/{name} never got there: {:?}", sb.store().stored(def, "default", name));
    }

    #[tokio::test]
    async fn the_core_controllers_write_through_the_verbs_as_kube_controller_manager() {
        let sb = Sandbox::with_config(SandboxConfig { rollout: Rollout::Instant, ..SandboxConfig::bare() });
        let kcm = |sub: &str| ("kube-controller-manager".to_owned(), sub.to_owned());
        // The Deployment controller's status-only mode, through the status verb.
        sb.seed(json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web" }, "spec": {
            "replicas": 2, "selector": { "matchLabels": { "app": "web" } },
            "template": { "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } }))
        .expect("created");
        let d = until(&sb, "apps", "deployments", "web", |d| {
            d.pointer("/status/readyReplicas") == Some(&json!(2))
        })
        .await;
        assert!(managers(&d).contains(&kcm("status")), "{d}");
        // The garbage collector's removal of a reference to a missing owner, through update.
        let owner = sb
            .seed(json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "owner" } }))
            .expect("created");
        let real = json!({ "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"] });
        let ghost = json!({ "apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000001" });
        sb.seed(json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "half", "ownerReferences": [ghost, real.clone()] } }))
            .expect("created");
        let half = until(&sb, "", "configmaps", "half", |o| {
            o.pointer("/metadata/ownerReferences") == Some(&json!([real]))
        })
        .await;
        assert!(managers(&half).contains(&kcm("")), "{half}");
        // The quota controller's recount, through the status verb.
        sb.seed(json!({ "apiVersion": "v1", "kind": "ResourceQuota", "metadata": { "name": "q" }, "spec": { "hard": { "configmaps": "10" } } }))
            .expect("created");
        let q =
            until(&sb, "", "resourcequotas", "q", |q| q.pointer("/status/used/configmaps").is_some()).await;
        assert!(managers(&q).contains(&kcm("status")), "{q}");
    }
}
