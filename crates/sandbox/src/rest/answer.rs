//! The requests answered rather than stored: the subresources that act on an object
//! (`pods/binding`, `pods/eviction`, `serviceaccounts/token`, `pods/log`), the reviews,
//! computed objects (`componentstatuses`) and resource metrics (`metrics.k8s.io`). What each does
//! is [`crate::actions`]'; this is its HTTP side.

use http::Response;
use serde_json::json;

use super::ResponseBody;
use super::body::parse_object;
use super::call::Call;
use super::request::Request;
use super::response::{json_response, no_content};
use crate::resource::Action;
use crate::resource::Run;
use crate::resource::{Metrics, Review};
use crate::status::ApiError;

/// Runs an acting subresource on its object with the request's body.
pub(super) fn act(c: &Call, action: &Action) -> Result<Response<ResponseBody>, ApiError> {
    if action.run == Run::Log {
        return super::log::log(c);
    }
    super::write::options(c)?;
    let body = parse_object(&c.bytes, c.content_type(), c.req.verb.name(), action.kind.2)?;
    same_namespace(c, &body)?;
    let (code, answer) =
        crate::actions::run(c.store, &c.req.def, action.run, c.req.ns(), c.req.name(), &body)?;
    Ok(if code == 204 { no_content() } else { json_response(code, &answer) })
}

/// Answers a review (or a `bindings` create) from its body, for the request's user.
pub(super) fn review(c: &Call, review: Review) -> Result<Response<ResponseBody>, ApiError> {
    super::write::options(c)?;
    let def = &c.req.def;
    let body = parse_object(&c.bytes, c.content_type(), "create", def.kind)?;
    same_namespace(c, &body)?;
    crate::kinds::access_review::check(def.kind, c.req.ns(), &body)?;
    let (code, mut answer) = crate::actions::review(
        c.store,
        &c.shared.auth,
        &c.requester(),
        (review, def.kind),
        c.req.ns(),
        body,
    )?;
    def.stamp(&mut answer);
    Ok(json_response(code, &answer))
}

/// The create handler's `EnsureObjectNamespaceMatchesRequestNamespace`: a body may name the
/// request's namespace or none (a cluster-scoped resource's namespace is dropped).
fn same_namespace(c: &Call, body: &serde_json::Value) -> Result<(), ApiError> {
    let given = crate::object_meta::meta_str(body, "namespace");
    if c.req.def.namespaced && !given.is_empty() && given != c.req.ns() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Gets one of the objects the server makes up, or lists them.
pub(super) fn compute(
    req: &Request,
    objects: fn() -> Vec<serde_json::Value>,
    one: bool,
) -> Result<Response<ResponseBody>, ApiError> {
    let objects = objects();
    if one {
        let name = req.name();
        // The component status storage's own error, unclassified: a 500.
        return objects
            .into_iter()
            .find(|o| crate::object_meta::meta_str(o, "name") == name)
            .map(|o| json_response(200, &o))
            .ok_or_else(|| ApiError::unclassified(format!("Component not found: {name}")));
    }
    let def = &req.def;
    Ok(json_response(
        200,
        &json!({ "kind": def.list_kind, "apiVersion": def.api_version(), "metadata": {}, "items": objects }),
    ))
}

/// Answers a get (`one`) or list of resource metrics, from the stored pods (and nodes) and what
/// their containers use now; the list's label and field selectors pick the pods (nodes) as
/// metrics-server's do.
pub(super) fn metrics(c: &Call, of: Metrics, one: bool) -> Result<Response<ResponseBody>, ApiError> {
    let find = |plural| crate::catalog::find("", "v1", plural).expect("pods and nodes are built in");
    let (pods_def, nodes_def) = (find("pods"), find("nodes"));
    let now = c.shared.containers.clock.now();
    let containers = &c.shared.containers;
    let told = |ns: &str, pod: &str, container: &str| containers.usage(ns, pod, container);
    let namespace = c.req.namespace.as_deref();
    let name = c.req.name.as_deref();
    let picked = |obj: &serde_json::Value| {
        name.is_none_or(|n| crate::object_meta::meta_str(obj, "name") == n)
            && c.req.query.list.labels.matches(obj)
            && c.req.query.list.fields.matches(obj)
    };
    let (_, pods) = c.store.snapshot(pods_def, if of == Metrics::Pods { namespace } else { None });
    let all_pods: Vec<&serde_json::Value> = pods.iter().map(AsRef::as_ref).collect();
    let items = match of {
        Metrics::Pods => {
            let picked_pods: Vec<&serde_json::Value> =
                all_pods.iter().copied().filter(|p| picked(p)).collect();
            if one && picked_pods.is_empty() {
                // The pod's own 404, as metrics-server's pod lister words it.
                return Err(ApiError::not_found("", "pod", name.unwrap_or("")));
            }
            crate::metrics::pod_metrics(&told, &picked_pods, now)
        }
        Metrics::Nodes => {
            let (_, nodes) = c.store.snapshot(nodes_def, None);
            let picked_nodes: Vec<&serde_json::Value> =
                nodes.iter().map(AsRef::as_ref).filter(|n| picked(n)).collect();
            if one && picked_nodes.is_empty() {
                return Err(ApiError::not_found("", "node", name.unwrap_or("")));
            }
            crate::metrics::node_metrics(&told, &picked_nodes, &all_pods, now)
        }
    };
    let def = &c.req.def;
    if one {
        let shown = match (of, namespace) {
            (Metrics::Pods, Some(ns)) => format!("{ns}/{}", name.unwrap_or("")),
            _ => name.unwrap_or("").to_owned(),
        };
        return items
            .into_iter()
            .next()
            .map(|o| json_response(200, &o))
            .ok_or_else(|| ApiError::not_found(def.group, def.plural, &shown));
    }
    Ok(json_response(
        200,
        &json!({ "kind": def.list_kind, "apiVersion": def.api_version(), "metadata": {}, "items": items }),
    ))
}
