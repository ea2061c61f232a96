//! ServiceAccount (`plugin/pkg/admission/serviceaccount`): a pod runs as `default` unless it
//! names an account, and gets the projected `kube-api-access-…` volume (token, CA, namespace)
//! mounted in every container, unless it or its account opts out of the automount.

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core, spec};
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// Where the plugin mounts the token.
const TOKEN_MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The plugin.
pub(crate) struct ServiceAccount;

/// The five random characters of a generated volume name (`utilrand.String`'s alphabet).
fn suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())])).collect()
}

impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "pods")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let name = pod
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_owned();
        let pod_name = crate::object_meta::meta_str(pod, "name").to_owned();
        let s = spec(pod);
        s.insert("serviceAccountName".into(), json!(name));
        s.insert("serviceAccount".into(), json!(name));
        let accounts = crate::catalog::find("", "v1", "serviceaccounts").expect("serviceaccounts");
        let account = req.objects.get(accounts, req.ns, &name);
        // A named account must exist; `default` may not yet, as the namespace's own controller
        // creates it a moment after the namespace (upstream waits for it, and finds it).
        if account.is_none() && name != "default" {
            return Err(ApiError::admission_forbidden(
                "",
                "pods",
                &pod_name,
                &format!(
                    "error looking up service account {}/{name}: serviceaccount {name:?} not found",
                    req.ns
                ),
            ));
        }
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
            return Ok(());
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
        Ok(())
    }
}
