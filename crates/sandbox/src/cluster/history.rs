//! Controller history: the ControllerRevisions a StatefulSet or a DaemonSet keeps of its pod
//! templates, which `kubectl rollout history` lists and `kubectl rollout undo` applies back.

use std::sync::Arc;

use serde_json::{Value, json};

use super::api::{Api, controller_ref};
use super::deployment::template_hash;
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The label holding a StatefulSet revision's hash (upstream's `ControllerRevisionHashLabel`).
const HASH: &str = "controller.kubernetes.io/hash";
/// The label holding a DaemonSet revision's hash, which its pods carry too (upstream's
/// `DefaultDaemonSetUniqueLabelKey`).
const DAEMON_HASH: &str = "controller-revision-hash";

fn revisions_def() -> &'static ResourceDef {
    crate::catalog::find("apps", "v1", "controllerrevisions").expect("controllerrevisions")
}

fn number(r: &Value) -> i64 {
    r["revision"].as_i64().unwrap_or(0)
}

/// The revision of `owner`'s current template as its name, its hash and its number, as
/// upstream's controllers keep their history: the revisions whose data is the current template
/// are its current ones — the newest kept, a DaemonSet's others deleted (upstream's
/// `dedupCurHistories`) — and the kept one is renumbered one above every other when it is not already (a rollback);
/// without one a revision is made one above the highest, named `<owner>-<hash>`, labelled with
/// the template's labels and the hash (and, a DaemonSet's, annotated as it is). Revisions beyond
/// `keep` (the oldest first, never the current one) are deleted. A DaemonSet's hash is its
/// current revision's `controller-revision-hash` label, which its pods carry.
pub(crate) fn current(
    api: &Api<'_>,
    def: &ResourceDef,
    owner: &Value,
    keep: usize,
) -> Result<(String, String, i64), ApiError> {
    let daemon = def.kind == "DaemonSet";
    let hash_label = if daemon { DAEMON_HASH } else { HASH };
    let template = owner.pointer("/spec/template").cloned().unwrap_or_default();
    let mut template_patch = template.clone();
    template_patch["$patch"] = json!("replace");
    let data = json!({ "spec": { "template": template_patch } });
    let collisions = owner.pointer("/status/collisionCount").and_then(Value::as_i64).unwrap_or(0);
    let computed = template_hash(&template, collisions);
    let mut all: Vec<Arc<Value>> = api.owned(revisions_def(), owner);
    all.sort_by_key(|r| number(r));
    let (matching, others): (Vec<Arc<Value>>, Vec<Arc<Value>>) =
        all.into_iter().partition(|r| r.get("data") == Some(&data));
    let next = others.iter().map(|r| number(r)).max().unwrap_or(0) + 1;
    let (name, hash, at_revision) = match matching.last() {
        Some(kept) => {
            // A DaemonSet's duplicates go; a StatefulSet keeps them (upstream's
            // `FindEqualRevisions` only picks the newest).
            for dup in matching[..matching.len() - 1].iter().filter(|_| daemon) {
                let _ = api.delete(revisions_def(), dup, None);
            }
            let hash = kept
                .pointer(&format!("/metadata/labels/{}", hash_label.replace('/', "~1")))
                .and_then(Value::as_str)
                .filter(|_| daemon)
                .unwrap_or(&computed)
                .to_owned();
            let mut at = number(kept);
            if at < next {
                // A rollback: the old revision becomes the newest again.
                let mut copy = (**kept).clone();
                copy["revision"] = json!(next);
                api.update(revisions_def(), copy, "kube-controller-manager")?;
                at = next;
            }
            (meta_str(kept, "name").to_owned(), hash, at)
        }
        None => {
            let name = format!("{}-{computed}", meta_str(owner, "name"));
            let mut labels = template.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
            labels[hash_label] = json!(computed);
            let mut meta = json!({ "name": name, "namespace": meta_str(owner, "namespace"), "labels": labels,
                                   "ownerReferences": [controller_ref(def, owner)] });
            if let Some(annotations) = owner.pointer("/metadata/annotations").filter(|_| daemon) {
                meta["annotations"] = annotations.clone();
            }
            let revision = json!({
                "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta,
                "data": data, "revision": next,
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
            (name, computed, next)
        }
    };
    let mut stale: Vec<&Arc<Value>> = others
        .iter()
        .chain(matching.iter().filter(|_| !daemon))
        .filter(|r| meta_str(r, "name") != name)
        .collect();
    stale.sort_by_key(|r| number(r));
    for r in stale.iter().take(stale.len().saturating_sub(keep)) {
        let _ = api.delete(revisions_def(), r, None);
    }
    Ok((name, hash, at_revision))
}
