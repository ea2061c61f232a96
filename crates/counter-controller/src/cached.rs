//! What the informer caches hold: only what the decision and the Events read.
//!
//! A real Deployment is mostly its pod template, status and `managedFields`; the controller reads
//! its name, uid, labels, owner references, deletion timestamp and `spec.replicas`. A
//! k8s-openapi `Deployment` is 2.4 KB before any of its strings, even with the template empty, so
//! the Deployment informer decodes straight into [`CachedDeployment`], which has nothing else
//! (the rest of the JSON is skipped while parsing). A ConfigMap decodes into [`CachedConfigMap`],
//! whose [`slim_configmap`] lifts the two values read — the desired annotation and `data.app` —
//! out of their maps and drops the maps (and labels).
//!
//! Both skip `managedFields`, every annotation but ours and every `data` key but `app` *while
//! parsing* (`cached_metadata`): on a real cluster those are most of an object's bytes, and each
//! watch event would otherwise build them only for the transform to drop them.

use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

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
    #[serde(default, deserialize_with = "cached_metadata")]
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
    #[serde(default, deserialize_with = "cached_metadata")]
    pub metadata: ObjectMeta,
    /// Of `data`, the `app` key as decoded; `None` once cached.
    #[serde(default, deserialize_with = "only_app")]
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

/// Decodes the metadata the caches keep and skips the rest *while parsing*: `managedFields` is
/// never built, and of the annotations only ours is (a real object's
/// `kubectl.kubernetes.io/last-applied-configuration` is a copy of the whole object). Dropping
/// them after decoding, as the slim functions also do, would still allocate them on every watch
/// event.
fn cached_metadata<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct Kept {
        name: Option<String>,
        namespace: Option<String>,
        uid: Option<String>,
        resource_version: Option<String>,
        generation: Option<i64>,
        creation_timestamp: Option<Time>,
        deletion_timestamp: Option<Time>,
        deletion_grace_period_seconds: Option<i64>,
        owner_references: Option<Vec<OwnerReference>>,
        finalizers: Option<Vec<String>>,
        labels: Option<BTreeMap<String, String>>,
        #[serde(deserialize_with = "only_ours")]
        annotations: Option<BTreeMap<String, String>>,
    }
    let k = Option::<Kept>::deserialize(d)?.unwrap_or_default();
    Ok(ObjectMeta {
        name: k.name,
        namespace: k.namespace,
        uid: k.uid,
        resource_version: k.resource_version,
        generation: k.generation,
        creation_timestamp: k.creation_timestamp,
        deletion_timestamp: k.deletion_timestamp,
        deletion_grace_period_seconds: k.deletion_grace_period_seconds,
        owner_references: k.owner_references,
        finalizers: k.finalizers,
        labels: k.labels,
        annotations: k.annotations,
        ..ObjectMeta::default()
    })
}

fn only_ours<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    d.deserialize_option(OneKey(ANNOTATION))
}

fn only_app<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    d.deserialize_option(OneKey("app"))
}

/// A string map of which only one key is kept; the other values are skipped unbuilt.
struct OneKey(&'static str);

impl<'de> Visitor<'de> for OneKey {
    type Value = Option<BTreeMap<String, String>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = BTreeMap::new();
        while let Some(wanted) = map.next_key_seed(IsKey(self.0))? {
            if wanted {
                kept.insert(self.0.to_owned(), map.next_value::<String>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Some(kept))
    }
}

/// A map key compared with the wanted one without being allocated.
struct IsKey(&'static str);

impl<'de> DeserializeSeed<'de> for IsKey {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for IsKey {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_keeps_only_what_the_caches_keep() {
        let cm: CachedConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "web", "namespace": "default", "uid": "u", "resourceVersion": "7",
                "labels": { "app": "web" },
                "annotations": { ANNOTATION: "3", "kubectl.kubernetes.io/last-applied-configuration": "{\"big\":1}" },
                "managedFields": [{ "manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                                    "fieldsV1": { "f:data": { "f:app": {} } } }],
                "ownerReferences": [{ "apiVersion": "v1", "kind": "X", "name": "x", "uid": "x" }],
            },
            "data": { "app": "web", "settings.yaml": "a: 1" },
        }))
        .unwrap();
        let m = &cm.metadata;
        assert!(m.managed_fields.is_none());
        assert_eq!(
            m.annotations.as_ref().map(|a| a.keys().collect::<Vec<_>>()),
            Some(vec![&ANNOTATION.to_owned()])
        );
        assert_eq!(cm.data.as_ref().map(BTreeMap::len), Some(1));
        assert_eq!((m.name.as_deref(), m.resource_version.as_deref()), (Some("web"), Some("7")));
        assert_eq!(m.owner_references.as_ref().map(Vec::len), Some(1));
        let none: CachedConfigMap =
            serde_json::from_value(serde_json::json!({ "metadata": null, "data": null })).unwrap();
        assert_eq!(none, CachedConfigMap::default());
    }
}
