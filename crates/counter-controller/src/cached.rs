//! What the informer caches hold: only what the decision and the Events read.
//!
//! A real Deployment is mostly its pod template, status and `managedFields`; the controller reads
//! its name, uid, labels, owner references, deletion timestamp and `spec.replicas`. A
//! k8s-openapi `Deployment` is 2.4 KB before any of its strings, even with the template empty, so
//! the Deployment informer decodes straight into [`CachedDeployment`], which has nothing else
//! (the rest of the JSON is skipped while parsing). A ConfigMap decodes into [`CachedConfigMap`],
//! whose [`slim_configmap`] lifts the two values read — the desired annotation and `data.app` —
//! out of their maps and drops the maps (and labels, and `managedFields`).

use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::annotation::ANNOTATION;

/// Makes a compact cached type a namespaced Kubernetes resource of `kind` (so `Api`, the watcher
/// and `object_ref` work with it), its metadata being its `metadata` field.
macro_rules! cached_kind {
    ($ty:ty, $api_version:literal, $group:literal, $kind:literal, $plural:literal) => {
        impl k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = "v1";
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = NamespaceResourceScope;
        }

        impl k8s_openapi::Metadata for $ty {
            type Ty = ObjectMeta;
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

/// An `apps/v1` Deployment as the controller caches it: metadata and `spec.replicas`.
///
/// ```
/// use counter_controller::cached::{CachedDeployment, slim_deployment};
/// let d: CachedDeployment = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "web", "labels": { "app": "web", "managed-by": "counter-controller" } },
///     "spec": { "replicas": 3, "template": { "spec": { "containers": [{ "name": "nginx" }] } } },
///     "status": { "readyReplicas": 3 },
/// })).unwrap();
/// assert_eq!(d.spec.replicas, Some(3));
/// let d = slim_deployment(d);
/// assert!(d.is_managed() && d.metadata.labels.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CachedDeployment {
    /// Its metadata (without `managedFields`, annotations and labels once cached:
    /// [`slim_deployment`]).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Of its spec, the replicas.
    #[serde(default)]
    pub spec: CachedDeploymentSpec,
    /// Whether its labels said `managed-by=counter-controller`, lifted out by [`slim_deployment`].
    #[serde(skip)]
    pub managed: bool,
}

impl CachedDeployment {
    /// Whether it carries our `managed-by` label (read from the labels, or from what
    /// [`slim_deployment`] lifted out of them).
    #[must_use]
    pub fn is_managed(&self) -> bool {
        let (key, value) = crate::decision::MANAGED_BY;
        self.managed || self.metadata.labels.as_ref().and_then(|l| l.get(key)).is_some_and(|v| v == value)
    }
}

/// The part of a Deployment's spec the controller reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CachedDeploymentSpec {
    /// `spec.replicas` (the API server defaults an absent value to 1).
    #[serde(default)]
    pub replicas: Option<i32>,
}

cached_kind!(CachedDeployment, "apps/v1", "apps", "Deployment", "deployments");

/// What the Deployment cache keeps of the metadata: no `managedFields`, no annotations, and of
/// the labels only whether ours is there (a label map costs over half a kilobyte per object).
#[must_use]
pub fn slim_deployment(mut d: CachedDeployment) -> CachedDeployment {
    d.managed = d.is_managed();
    d.metadata.managed_fields = None;
    d.metadata.annotations = None;
    d.metadata.labels = None;
    d
}

/// A v1 ConfigMap as the controller caches it.
///
/// ```
/// use counter_controller::cached::{CachedConfigMap, slim_configmap};
/// let cm: CachedConfigMap = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "web", "annotations": { "counter.example.com/desired": "3", "note": "x" } },
///     "data": { "app": "web", "settings.yaml": "big: file" },
/// })).unwrap();
/// let cm = slim_configmap(cm);
/// assert_eq!((cm.desired.as_deref(), cm.app.as_deref()), (Some("3"), Some("web")));
/// assert!(cm.metadata.annotations.is_none() && cm.data.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CachedConfigMap {
    /// Its metadata (without annotations, labels and `managedFields` once cached).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `data` as decoded; `None` once cached.
    #[serde(default)]
    pub data: Option<BTreeMap<String, String>>,
    /// The `counter.example.com/desired` annotation, lifted out by [`slim_configmap`].
    #[serde(skip)]
    pub desired: Option<String>,
    /// `data.app`, lifted out by [`slim_configmap`].
    #[serde(skip)]
    pub app: Option<String>,
}

cached_kind!(CachedConfigMap, "v1", "", "ConfigMap", "configmaps");

/// What the ConfigMap cache keeps: name, namespace, uid, resourceVersion, and the two values the
/// controller reads — our annotation and `data.app` (the exercise's log line) — lifted out of
/// their maps. A real ConfigMap carries kubectl's last-applied copy of itself, labels,
/// `managedFields` and whole files in `data`; the controller reads none of them.
#[must_use]
pub fn slim_configmap(mut cm: CachedConfigMap) -> CachedConfigMap {
    let m = &mut cm.metadata;
    m.managed_fields = None;
    m.labels = None;
    if let Some(mut a) = m.annotations.take() {
        cm.desired = a.remove(ANNOTATION).or(cm.desired);
    }
    if let Some(mut d) = cm.data.take() {
        cm.app = d.remove("app").or(cm.app);
    }
    cm
}
