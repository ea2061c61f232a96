//! The default admission plugins of kube-apiserver that change or refuse what a client creates,
//! run on a create after the strategy's defaults (and after `managedFields` are recorded: what
//! admission adds belongs to no manager, as upstream's) and before validation:
//!
//! - **ServiceAccount** (`plugin/pkg/admission/serviceaccount`): a pod runs as `default` unless it
//!   names an account, and gets the projected `kube-api-access-…` volume (token, CA, namespace)
//!   mounted in every container, unless it or its account opts out of the automount.
//! - **Priority** (`plugin/pkg/admission/priority`): a pod's `priority` and `preemptionPolicy` come
//!   from its PriorityClass, or the global default class; a missing class is a 403.
//! - **DefaultTolerationSeconds**: five minutes' toleration of not-ready and unreachable nodes.
//! - **DefaultStorageClass**: a claim that names no class gets the default one.
//! - **LimitRanger**: containers without requests or limits get the namespace's LimitRange
//!   defaults, and the pod says so in an annotation.
//! - **StorageObjectInUseProtection**: claims and volumes get the finalizer the store's
//!   protection tick removes once they are not in use.
//!
//! - **PodSecurity** ([`super::pod_security`]): the namespace's `enforce` level refuses the pods
//!   that break it (403).
//!
//! NamespaceLifecycle is the store's own check (404 and 403). Not run: ResourceQuota, and no
//! webhook is ever called.

use serde_json::{Map, Value, json};

use super::storage::State;
use crate::object::meta_str;
use crate::resource::{self, ResourceDef};
use crate::status::ApiError;

/// Where the ServiceAccount plugin mounts the token.
const TOKEN_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Whether a create of `def` has anything for the plugins to do (they read other objects, so
/// they run under the store's lock).
pub(super) fn reads_state(def: &ResourceDef) -> bool {
    def.custom().is_none()
        && def.group.is_empty()
        && matches!(def.plural, "pods" | "persistentvolumeclaims" | "persistentvolumes")
}

/// Runs the mutating and validating plugins for a create of `obj` in `ns`.
///
/// # Errors
///
/// 403 when a plugin refuses it (a missing PriorityClass, a priority set by hand).
pub(super) fn admit(st: &State, def: &ResourceDef, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
    if !reads_state(def) {
        return Ok(());
    }
    match def.plural {
        "pods" => {
            service_account(st, ns, obj);
            priority(st, obj)?;
            default_tolerations(obj);
            limit_ranges(st, ns, obj);
            pod_security(st, ns, obj)?;
        }
        "persistentvolumeclaims" => {
            default_storage_class(st, obj);
            protect(obj, super::PVC_PROTECTION);
        }
        "persistentvolumes" => protect(obj, super::PV_PROTECTION),
        _ => {}
    }
    Ok(())
}

/// PodSecurity: the namespace's `enforce` level refuses the pods that break it.
fn pod_security(st: &State, ns: &str, pod: &Value) -> Result<(), ApiError> {
    match st.namespace_state(ns).and_then(|n| super::pod_security::enforce_refusal(&n, pod)) {
        Some(why) => Err(ApiError::admission_forbidden("", "pods", meta_str(pod, "name"), &why)),
        None => Ok(()),
    }
}

fn list(st: &State, group: &str, plural: &str, ns: Option<&str>) -> Vec<std::sync::Arc<Value>> {
    let def = resource::find(group, "v1", plural).expect("a built-in resource");
    st.list_items(def, ns, &super::ListQuery::default())
}

fn spec(obj: &mut Value) -> &mut Map<String, Value> {
    crate::object::object_at(obj, "spec")
}

/// The five random characters of a generated volume name (`utilrand.String`'s alphabet).
fn suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())])).collect()
}

fn service_account(st: &State, ns: &str, pod: &mut Value) {
    let name = pod
        .pointer("/spec/serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_owned();
    let s = spec(pod);
    s.insert("serviceAccountName".into(), json!(name));
    s.insert("serviceAccount".into(), json!(name));
    let accounts = resource::find("", "v1", "serviceaccounts").expect("serviceaccounts");
    let account = st.get(accounts, ns, &name).ok();
    let opted_out = match s.get("automountServiceAccountToken").and_then(Value::as_bool) {
        Some(given) => !given,
        None => {
            account.and_then(|a| a.get("automountServiceAccountToken").and_then(Value::as_bool))
                == Some(false)
        }
    };
    let mounted = s
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| c["volumeMounts"].as_array().into_iter().flatten())
        .any(|m| m["mountPath"] == TOKEN_MOUNT);
    if opted_out || mounted {
        return;
    }
    let volume = format!("kube-api-access-{}", suffix());
    let volumes = s.entry("volumes").or_insert_with(|| json!([]));
    if let Some(v) = volumes.as_array_mut() {
        v.push(json!({ "name": volume, "projected": { "defaultMode": 420, "sources": [
            { "serviceAccountToken": { "expirationSeconds": 3607, "path": "token" } },
            { "configMap": { "name": "kube-root-ca.crt", "items": [{ "key": "ca.crt", "path": "ca.crt" }] } },
            { "downwardAPI": { "items": [{ "path": "namespace", "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.namespace" } }] } },
        ] } }));
    }
    for list in ["initContainers", "containers"] {
        for c in s.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let mounts = c.as_object_mut().map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            if let Some(m) = mounts.and_then(Value::as_array_mut) {
                m.push(json!({ "name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT }));
            }
        }
    }
}

fn priority(st: &State, pod: &mut Value) -> Result<(), ApiError> {
    let name = meta_str(pod, "name").to_owned();
    let class_name = pod.pointer("/spec/priorityClassName").and_then(Value::as_str).unwrap_or("").to_owned();
    let classes = list(st, "scheduling.k8s.io", "priorityclasses", None);
    let class = if class_name.is_empty() {
        classes.iter().filter(|c| c["globalDefault"] == true).min_by_key(|c| c["value"].as_i64()).cloned()
    } else {
        let found = classes.iter().find(|c| meta_str(c, "name") == class_name).cloned();
        if found.is_none() {
            return Err(ApiError::admission_forbidden(
                "",
                "pods",
                &name,
                &format!("no PriorityClass with name {class_name} was found"),
            ));
        }
        found
    };
    let value = class.as_ref().and_then(|c| c["value"].as_i64()).unwrap_or(0);
    if let Some(given) = pod.pointer("/spec/priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(ApiError::admission_forbidden(
            "",
            "pods",
            &name,
            &format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
            ),
        ));
    }
    let s = spec(pod);
    s.insert("priority".into(), json!(value));
    if let Some(c) = &class {
        s.insert("priorityClassName".into(), json!(meta_str(c, "name")));
    }
    let policy = class
        .as_ref()
        .and_then(|c| c.get("preemptionPolicy").cloned())
        .unwrap_or(json!("PreemptLowerPriority"));
    s.entry("preemptionPolicy").or_insert(policy);
    Ok(())
}

fn default_tolerations(pod: &mut Value) {
    let tolerations = spec(pod).entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = tolerations.as_array_mut() else { return };
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let tolerated = list.iter().any(|t| {
            (t["key"] == key || (t.get("key").is_none_or(|k| k == "") && t["operator"] == "Exists"))
                && t.get("effect").is_none_or(|e| e == "NoExecute" || e == "")
        });
        if !tolerated {
            list.push(
                json!({ "key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 }),
            );
        }
    }
}

/// StorageObjectInUseProtection: the finalizer the protection controllers remove once the claim
/// or volume is no longer in use (`cluster/protection.rs`).
fn protect(obj: &mut Value, finalizer: &str) {
    let meta = crate::object::meta_mut(obj);
    let list = meta.entry("finalizers").or_insert_with(|| json!([]));
    if let Some(l) = list.as_array_mut()
        && !l.iter().any(|f| f == finalizer)
    {
        l.push(json!(finalizer));
    }
}

fn default_storage_class(st: &State, pvc: &mut Value) {
    if pvc.pointer("/spec/storageClassName").is_some_and(|c| !c.is_null()) {
        return;
    }
    let classes = list(st, "storage.k8s.io", "storageclasses", None);
    let default = classes
        .iter()
        .filter(|c| {
            c.pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
                == Some(&json!("true"))
        })
        .max_by_key(|c| meta_str(c, "creationTimestamp").to_owned());
    if let Some(c) = default {
        spec(pvc).insert("storageClassName".into(), json!(meta_str(c, "name")));
    }
}

fn limit_ranges(st: &State, ns: &str, pod: &mut Value) {
    let mut set = Vec::new();
    for range in list(st, "", "limitranges", Some(ns)) {
        for limit in range.pointer("/spec/limits").and_then(Value::as_array).into_iter().flatten() {
            if limit["type"] != "Container" {
                continue;
            }
            for list in ["initContainers", "containers"] {
                for c in spec(pod).get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    let cname = c["name"].as_str().unwrap_or("").to_owned();
                    for (from, into, word) in
                        [("defaultRequest", "requests", "request"), ("default", "limits", "limit")]
                    {
                        for (resource, value) in
                            limit.get(from).and_then(Value::as_object).into_iter().flatten()
                        {
                            let resources = crate::object::object_at(c, "resources");
                            let target = resources.entry(into).or_insert_with(|| json!({}));
                            if let Some(t) = target.as_object_mut()
                                && !t.contains_key(resource)
                            {
                                t.insert(resource.clone(), value.clone());
                                set.push(format!(
                                    "{resource} {word} for {} {cname}",
                                    if list == "containers" { "container" } else { "init container" }
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    if !set.is_empty() {
        let meta = crate::object::meta_mut(pod);
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                "kubernetes.io/limit-ranger".into(),
                json!(format!("LimitRanger plugin set: {}", set.join("; "))),
            );
        }
    }
}

impl super::Store {
    /// Whether a create (or an update) of `def` in `ns` may draw admission warnings — a
    /// namespace update (a new enforce level), a pod or workload write where the namespace has a
    /// `warn` level — so that a writer reads the object as it was first only then (a controller's
    /// writes to its workloads in an ordinary namespace pay nothing).
    #[must_use]
    pub fn may_warn(&self, def: &ResourceDef, ns: &str, update: bool) -> bool {
        if def.custom().is_some() {
            return false;
        }
        match (def.group, def.plural) {
            ("", "namespaces") => update,
            // A pod or a workload's template: only the namespace's `warn` level warns of them.
            (g, p) if p == "pods" && g.is_empty() || super::pod_security::template_path(g, p).is_some() => {
                self.namespace_warns(ns)
            }
            _ => false,
        }
    }

    fn namespace_warns(&self, ns: &str) -> bool {
        let st = self.lock();
        st.namespace_state(ns).and_then(|n| super::pod_security::policy(&n, "warn")).is_some()
    }

    /// The Warning headers admission adds to a write that was allowed: PodSecurity's `warn`
    /// level for a created pod, and for a workload's pod template when it is created or changed;
    /// for a namespace given a new `enforce` level, the pods already in it that break it.
    #[must_use]
    pub fn admission_warnings(
        &self,
        def: &ResourceDef,
        ns: &str,
        new: &Value,
        old: Option<&Value>,
    ) -> Vec<String> {
        if def.custom().is_some() {
            return Vec::new();
        }
        let st = self.lock();
        if (def.group, def.plural) == ("", "namespaces") {
            let Some(old) = old else { return Vec::new() };
            let policy = |n: &Value| super::pod_security::policy(n, "enforce");
            if policy(new).is_none() || policy(new) == policy(old) {
                return Vec::new();
            }
            let pods = list(&st, "", "pods", Some(meta_str(new, "name")));
            return super::pod_security::existing_pods_warnings(new, &pods);
        }
        let Some(namespace) = st.namespace_state(ns) else { return Vec::new() };
        let namespace = &namespace;
        if (def.group, def.plural) == ("", "pods") {
            return if old.is_none() { super::pod_security::warnings(namespace, new) } else { Vec::new() };
        }
        let Some(path) = super::pod_security::template_path(def.group, def.plural) else { return Vec::new() };
        let template = |o: &Value| o.pointer(path).cloned();
        match (template(new), old.map(template)) {
            (Some(t), None) => super::pod_security::warnings(namespace, &t),
            (Some(t), Some(before)) if before.as_ref() != Some(&t) => {
                super::pod_security::warnings(namespace, &t)
            }
            _ => Vec::new(),
        }
    }
}
