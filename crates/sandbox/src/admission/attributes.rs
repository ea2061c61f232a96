//! A write as admission describes it to what judges it from outside the store: upstream's
//! `AdmissionRequest` (`admission/v1`), which a policy's expressions read as `request` and a
//! webhook receives in its `AdmissionReview`.

use serde_json::{Value, json};

use super::matching::operation_name;
use super::{Operation, Request};
use crate::access::Attributes;
use crate::invocation::Invocation;
use crate::schema::cel::authz;

/// The `AdmissionRequest` of `req` on the object named `name`, as `CreateAdmissionRequest`
/// fills it, its empty optional fields left out and its `uid` empty (a webhook's review sets
/// one). The requester and the dry run are the invocation's.
pub(super) fn admission_request(req: &Request<'_>, name: &str, inv: Option<&Invocation>) -> Value {
    let def = req.def;
    let kind = json!({ "group": def.group, "version": def.version, "kind": def.kind });
    let resource = json!({ "group": def.group, "version": def.version, "resource": def.plural });
    let options = match req.op {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut r = json!({
        "uid": "",
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": operation_name(req.op),
        "userInfo": inv.and_then(|i| i.user.as_ref()).map_or_else(|| json!({}), |u| {
            let mut u = u.to_json();
            if u["username"] == "" {
                u.as_object_mut().map(|m| m.remove("username"));
            }
            u
        }),
        "dryRun": inv.is_some_and(Invocation::dry_run),
        "options": { "kind": options, "apiVersion": "meta.k8s.io/v1" },
    });
    if !name.is_empty() {
        r["name"] = json!(name);
    }
    if !req.ns.is_empty() {
        r["namespace"] = json!(req.ns);
    }
    r
}

/// The `authorizer` variable of the write `request` (an `AdmissionRequest`) describes, made by
/// the invocation's user and asking its authorizer; `authorizer.requestResource` is the written
/// resource, at its version.
pub(super) fn authorizer(request: &Value, inv: Option<&Invocation>) -> kube_cel::cel::Value {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let resource = &request["resource"];
    let target = Attributes {
        user: inv.and_then(|i| i.user.clone()).unwrap_or_default(),
        group: text(resource, "group"),
        version: text(resource, "version"),
        resource: text(resource, "resource"),
        subresource: text(request, "subResource"),
        namespace: text(request, "namespace"),
        name: text(request, "name"),
        ..Attributes::default()
    };
    authz::variable(inv.and_then(|i| i.authorizer.clone()), target)
}
