//! The decision table: from what the caches hold to what to do. Pure — no I/O, no clock — so
//! every row is tested directly; the controller only executes the [`Action`].
//!
//! | ConfigMap | Deployment | action |
//! |---|---|---|
//! | gone | ours | [`Action::Delete`] |
//! | gone | not ours / none / already deleting | [`Action::Nothing`] |
//! | no annotation (cached, or only known to exist) | any | [`Action::Nothing`] |
//! | invalid annotation | any | [`Action::Invalid`] (error, retry, Warning Event) |
//! | valid | none | [`Action::Create`] — executed only for a ConfigMap still there (below) |
//! | valid | not ours | [`Action::NotOurs`] (error, retry, Warning Event `ResourceExists`) |
//! | valid | ours, being deleted | [`Action::Nothing`] (create again once it is gone) |
//! | valid | ours, replicas equal | [`Action::Nothing`] |
//! | valid | ours, replicas differ | [`Action::Scale`] |
//!
//! A Deployment is *ours* when it carries `managed-by=counter-controller` and, if it has a
//! controller ownerReference, that reference names this ConfigMap (by name, and by uid when the
//! ConfigMap is known).
//!
//! Create is the one action taken on the ConfigMap's presence alone, and each informer has its
//! own watch: a Deployment event (its delete, when the garbage collector follows the ConfigMap's
//! delete) can arrive before the ConfigMap's. So before a create the controller asks the
//! coordinator whether the ConfigMap cache has caught up with every event that enqueued the key
//! ([`kube_coordination::freshness`]): compared by `resourceVersion` where the versions are numbers;
//! where they are not, or the Deployment's delete was found at a relist (its order cannot be
//! known), a consistent read of the ConfigMap decides. Scale and Delete need no such check:
//! each carries the version it was decided from, and a newer ConfigMap event decides again.
//!
//! The ConfigMap cache holds only annotated ConfigMaps; of the others it knows only that they
//! exist ([`Presence::Uncached`]). That is "no annotation", never "gone": only an absent
//! ConfigMap may lead to a delete.

pub use kube_informer::Presence;

use crate::annotation::{InvalidCount, parse_desired};
use crate::cached::{CachedConfigMap as ConfigMap, CachedDeployment as Deployment};

/// The label that marks Deployments this controller manages.
pub const MANAGED_BY: (&str, &str) = ("managed-by", "counter-controller");

/// What to do about one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do; the reason says why (for logs and tests).
    Nothing(Why),
    /// Create the Deployment with this many replicas.
    Create {
        /// Desired replicas.
        replicas: i32,
    },
    /// Set the Deployment's replicas.
    Scale {
        /// Current `spec.replicas`.
        from: i32,
        /// Desired.
        to: i32,
    },
    /// Delete the Deployment (its ConfigMap is gone).
    Delete,
    /// The annotation is not a count.
    Invalid(InvalidCount),
    /// A same-named Deployment exists that this controller does not manage.
    NotOurs,
}

/// Why nothing needs doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The ConfigMap has no annotation.
    NoAnnotation,
    /// The Deployment already has the desired replicas.
    Converged,
    /// The ConfigMap is gone and there is no Deployment of ours to delete.
    NothingToDelete,
    /// The ConfigMap is gone and the same-named Deployment is not ours: it stays.
    NotOursToDelete,
    /// The Deployment is being deleted; act again when it is gone.
    DeploymentTerminating,
}

/// Whether `d` is managed by this controller on behalf of the ConfigMap `cm_name` (`cm_uid` when
/// known).
#[must_use]
pub fn is_ours(d: &Deployment, cm_name: &str, cm_uid: Option<&str>) -> bool {
    let labelled = d.is_managed();
    let controller = d.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true));
    let owner_ok = controller.is_none_or(|r| {
        r.kind == "ConfigMap"
            && r.api_version == "v1"
            && r.name == cm_name
            && cm_uid.is_none_or(|uid| r.uid == uid)
    });
    labelled && owner_ok
}

/// Decides what to do for a ConfigMap key, given what the caches hold under that key: the
/// ConfigMap (cached, known to exist uncached — it has no annotation — or absent) and the
/// Deployment.
#[must_use]
pub fn decide(cm: Presence<&ConfigMap>, deployment: Option<&Deployment>, name: &str) -> Action {
    let cm = match cm {
        Presence::Cached(cm) => cm,
        Presence::Uncached => return Action::Nothing(Why::NoAnnotation),
        Presence::Absent => {
            return match deployment {
                None => Action::Nothing(Why::NothingToDelete),
                Some(d) if d.metadata.deletion_timestamp.is_some() => {
                    Action::Nothing(Why::DeploymentTerminating)
                }
                Some(d) if is_ours(d, name, None) => Action::Delete,
                Some(_) => Action::Nothing(Why::NotOursToDelete),
            };
        }
    };
    let Some(raw) = cm.desired.as_ref() else {
        return Action::Nothing(Why::NoAnnotation);
    };
    let desired = match parse_desired(raw) {
        Ok(n) => n,
        Err(e) => return Action::Invalid(e),
    };
    let Some(d) = deployment else {
        return Action::Create { replicas: desired };
    };
    if !is_ours(d, name, cm.metadata.uid.as_deref()) {
        return Action::NotOurs;
    }
    if d.metadata.deletion_timestamp.is_some() {
        return Action::Nothing(Why::DeploymentTerminating);
    }
    // The API server defaults an absent replicas to 1.
    let current = d.spec.replicas.unwrap_or(1);
    if current == desired {
        Action::Nothing(Why::Converged)
    } else {
        Action::Scale { from: current, to: desired }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::annotation::ANNOTATION;

    fn cm(annotation: Option<&str>) -> ConfigMap {
        let mut v = json!({ "metadata": { "name": "web", "namespace": "default", "uid": "cm-uid" } });
        if let Some(a) = annotation {
            v["metadata"]["annotations"] = json!({ ANNOTATION: a });
        }
        crate::cached::slim_configmap(serde_json::from_value(v).unwrap())
    }

    fn deploy(replicas: i32, labelled: bool, owner: Option<(&str, &str)>) -> Deployment {
        let mut v = json!({ "metadata": { "name": "web", "namespace": "default" }, "spec": { "replicas": replicas, "selector": {}, "template": {} } });
        if labelled {
            v["metadata"]["labels"] = json!({ "managed-by": "counter-controller" });
        }
        if let Some((name, uid)) = owner {
            v["metadata"]["ownerReferences"] = json!([{ "apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid, "controller": true }]);
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn configmap_gone() {
        assert_eq!(decide(Presence::Absent, None, "web"), Action::Nothing(Why::NothingToDelete));
        assert_eq!(
            decide(Presence::Absent, Some(&deploy(3, true, Some(("web", "x")))), "web"),
            Action::Delete
        );
        assert_eq!(decide(Presence::Absent, Some(&deploy(3, true, None)), "web"), Action::Delete);
        assert_eq!(
            decide(Presence::Absent, Some(&deploy(3, false, None)), "web"),
            Action::Nothing(Why::NotOursToDelete)
        );
        assert_eq!(
            decide(Presence::Absent, Some(&deploy(3, true, Some(("other", "x")))), "web"),
            Action::Nothing(Why::NotOursToDelete)
        );
        let mut terminating = deploy(3, true, None);
        terminating.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff_now()));
        assert_eq!(
            decide(Presence::Absent, Some(&terminating), "web"),
            Action::Nothing(Why::DeploymentTerminating)
        );
    }

    fn jiff_now() -> k8s_openapi::jiff::Timestamp {
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH
    }

    #[test]
    fn configmap_present() {
        assert_eq!(decide(Presence::Cached(&cm(None)), None, "web"), Action::Nothing(Why::NoAnnotation));
        assert_eq!(decide(Presence::Cached(&cm(Some("3"))), None, "web"), Action::Create { replicas: 3 });
        let ours = deploy(3, true, Some(("web", "cm-uid")));
        assert_eq!(
            decide(Presence::Cached(&cm(Some("3"))), Some(&ours), "web"),
            Action::Nothing(Why::Converged)
        );
        assert_eq!(
            decide(Presence::Cached(&cm(Some("5"))), Some(&ours), "web"),
            Action::Scale { from: 3, to: 5 }
        );
        assert_eq!(
            decide(Presence::Cached(&cm(Some("0"))), Some(&ours), "web"),
            Action::Scale { from: 3, to: 0 }
        );
        assert_eq!(
            decide(Presence::Cached(&cm(Some("5"))), Some(&deploy(3, false, None)), "web"),
            Action::NotOurs
        );
        assert_eq!(
            decide(Presence::Cached(&cm(Some("5"))), Some(&deploy(3, true, Some(("web", "old-uid")))), "web"),
            Action::NotOurs
        );
        assert!(
            matches!(decide(Presence::Cached(&cm(Some("abc"))), Some(&ours), "web"), Action::Invalid(e) if e.value == "abc")
        );
    }

    #[test]
    fn a_configmap_known_only_to_exist_has_no_annotation_whatever_the_deployment() {
        for d in [
            None,
            Some(deploy(3, true, Some(("web", "cm-uid")))),
            Some(deploy(3, true, None)),
            Some(deploy(3, false, None)),
        ] {
            assert_eq!(decide(Presence::Uncached, d.as_ref(), "web"), Action::Nothing(Why::NoAnnotation));
        }
    }

    #[test]
    fn every_bad_annotation_is_invalid_whatever_the_deployment() {
        for bad in ["-1", "3.5", "abc", "", "99999999999", "not-a-number"] {
            for d in [None, Some(deploy(3, true, None))] {
                assert!(
                    matches!(decide(Presence::Cached(&cm(Some(bad))), d.as_ref(), "web"), Action::Invalid(_)),
                    "{bad:?}"
                );
            }
        }
    }
}
