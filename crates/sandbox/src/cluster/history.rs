//! Controller history: the ControllerRevisions a StatefulSet or a DaemonSet keeps of its pod
//! templates, which `kubectl rollout history` lists and `kubectl rollout undo` applies back.

use std::sync::Arc;

use serde_json::{Value, json};

use super::api::{Api, controller_ref};
use super::deployment::template_hash;
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The label holding a revision's hash.
const HASH: &str = "controller.kubernetes.io/hash";

fn revisions_def() -> &'static ResourceDef {
    crate::catalog::find("apps", "v1", "controllerrevisions").expect("controllerrevisions")
}

/// The revision of `owner`'s current template — found by its content, else made one above the
/// highest — as its name, its hash and its number. Revisions beyond `keep` (the oldest first,
/// never the current one) are deleted.
pub(crate) fn current(
    api: &Api<'_>,
    def: &ResourceDef,
    owner: &Value,
    keep: usize,
) -> Result<(String, String, i64), ApiError> {
    let template = owner.pointer("/spec/template").cloned().unwrap_or_default();
    let mut template_patch = template.clone();
    template_patch["$patch"] = json!("replace");
    let data = json!({ "spec": { "template": template_patch } });
    let collisions = owner.pointer("/status/collisionCount").and_then(Value::as_i64).unwrap_or(0);
    let hash = template_hash(&template, collisions);
    let mut all: Vec<Arc<Value>> = api.owned(revisions_def(), owner);
    all.sort_by_key(|r| r["revision"].as_i64().unwrap_or(0));
    let highest = all.last().and_then(|r| r["revision"].as_i64()).unwrap_or(0);
    let (name, number) = match all.iter().find(|r| r.get("data") == Some(&data)) {
        Some(r) if r["revision"].as_i64().unwrap_or(0) == highest => {
            (meta_str(r, "name").to_owned(), highest)
        }
        Some(r) => {
            // A rollback: the old revision becomes the newest again.
            let mut copy = (**r).clone();
            copy["revision"] = json!(highest + 1);
            api.update(revisions_def(), copy, "kube-controller-manager")?;
            (meta_str(r, "name").to_owned(), highest + 1)
        }
        None => {
            let name = format!("{}-{hash}", meta_str(owner, "name"));
            let mut labels =
                owner.pointer("/spec/selector/matchLabels").cloned().unwrap_or_else(|| json!({}));
            labels[HASH] = json!(hash);
            let revision = json!({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": { "name": name, "namespace": meta_str(owner, "namespace"), "labels": labels,
                              "ownerReferences": [controller_ref(def, owner)] },
                "data": data,
                "revision": highest + 1,
            });
            match api.create(
                revisions_def(),
                meta_str(owner, "namespace"),
                revision,
                "kube-controller-manager",
            ) {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
            (name, highest + 1)
        }
    };
    let stale: Vec<&Arc<Value>> = all.iter().filter(|r| meta_str(r, "name") != name).collect();
    for r in stale.iter().take(stale.len().saturating_sub(keep)) {
        let _ = api.delete(revisions_def(), r, None);
    }
    Ok((name, hash, number))
}
