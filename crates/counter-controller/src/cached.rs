//! What the informer caches hold: only what the decision and the Events read.
//!
//! A real Deployment is mostly its pod template, status and `managedFields`; the controller reads
//! its name, uid, labels, owner references, deletion timestamp and `spec.replicas`. A
//! k8s-openapi `Deployment` is 2.4 KB before any of its strings, even with the template empty, so
//! the Deployment informer decodes straight into [`CachedDeployment`], which has nothing else
//! (the rest of the JSON is skipped while parsing). ConfigMaps keep their k8s-openapi type (it is
//! small) and pass through [`slim_configmap`], which drops what the controller never reads.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::annotation::ANNOTATION;

/// An `apps/v1` Deployment as the controller caches it: metadata and `spec.replicas`.
///
/// ```
/// let d: counter_controller::cached::CachedDeployment = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "web", "labels": { "app": "web" } },
///     "spec": { "replicas": 3, "template": { "spec": { "containers": [{ "name": "nginx" }] } } },
///     "status": { "readyReplicas": 3 },
/// })).unwrap();
/// assert_eq!(d.spec.replicas, Some(3));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CachedDeployment {
    /// Its metadata (without `managedFields` and annotations once cached: [`slim_deployment`]).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Of its spec, the replicas.
    #[serde(default)]
    pub spec: CachedDeploymentSpec,
}

/// The part of a Deployment's spec the controller reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CachedDeploymentSpec {
    /// `spec.replicas` (the API server defaults an absent value to 1).
    #[serde(default)]
    pub replicas: Option<i32>,
}

impl k8s_openapi::Resource for CachedDeployment {
    const API_VERSION: &'static str = "apps/v1";
    const GROUP: &'static str = "apps";
    const KIND: &'static str = "Deployment";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "deployments";
    type Scope = NamespaceResourceScope;
}

impl k8s_openapi::Metadata for CachedDeployment {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// What the Deployment cache keeps of the metadata: no `managedFields`, no annotations.
#[must_use]
pub fn slim_deployment(mut d: CachedDeployment) -> CachedDeployment {
    d.metadata.managed_fields = None;
    d.metadata.annotations = None;
    d
}

/// What the ConfigMap cache keeps: name, namespace, uid, resourceVersion, our annotation, and of
/// `data` only `app` (the exercise's log line). A real ConfigMap carries kubectl's last-applied
/// copy of itself, labels, `managedFields` and whole files in `data`; the controller reads none.
#[must_use]
pub fn slim_configmap(mut cm: ConfigMap) -> ConfigMap {
    let m = &mut cm.metadata;
    m.managed_fields = None;
    m.labels = None;
    if let Some(a) = m.annotations.as_mut() {
        a.retain(|k, _| k == ANNOTATION);
    }
    if let Some(d) = cm.data.as_mut() {
        d.retain(|k, _| k == "app");
    }
    cm.binary_data = None;
    cm
}
