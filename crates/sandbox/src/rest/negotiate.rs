//! Content negotiation (upstream's `endpoints/handlers/negotiation` and `response.go`): which
//! shape the `Accept` header asks an answer in — the object itself, a Table, or its metadata
//! alone — and the transformation of a read's (or a write's) answer into it.

use serde_json::{Value, json};

use super::query::Query;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The shape a response is transformed into, from the `Accept` clause negotiated
/// (`endpoints/handlers/response.go`, `doTransformObject`): the object itself, a
/// `meta.k8s.io` Table, or `PartialObjectMetadata` / `PartialObjectMetadataList`, each in the
/// `meta.k8s.io` version the clause named (`v1` or `v1beta1`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) enum Render {
    #[default]
    Object,
    Table(&'static str),
    Partial(&'static str),
    PartialList(&'static str),
}

/// The first clause of `accept` the server can answer, as upstream's
/// `negotiation.NegotiateOutputMediaType` with the endpoint's transforms
/// (`AllowsMediaTypeTransform`): a served media type (or a wildcard) with no `as=`, or one
/// whose `as=` is a `meta.k8s.io/v1|v1beta1` Table (JSON or YAML) or `PartialObjectMetadata[List]`.
/// `None` when no clause can be served (406); an empty header is the object itself.
pub(super) fn negotiate(accept: &str) -> Option<Render> {
    if accept.trim().is_empty() {
        return Some(Render::Object);
    }
    accept.split(',').find_map(|clause| {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let served = matches!(media.as_str(), "*/*" | "application/*")
            || crate::status::SERVED_MEDIA_TYPES.contains(&media.as_str());
        if !served {
            return None;
        }
        let (mut as_, mut g, mut v) = ("", "", "");
        for param in parts {
            match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        if as_.is_empty() {
            return Some(Render::Object);
        }
        let version = match (g, v) {
            ("meta.k8s.io", "v1") => "meta.k8s.io/v1",
            ("meta.k8s.io", "v1beta1") => "meta.k8s.io/v1beta1",
            _ => return None,
        };
        match as_ {
            "Table" if media != "application/vnd.kubernetes.protobuf" => Some(Render::Table(version)),
            "PartialObjectMetadata" => Some(Render::Partial(version)),
            "PartialObjectMetadataList" => Some(Render::PartialList(version)),
            _ => None,
        }
    })
}

/// A read transformed as the request's `Accept` asked (`endpoints/handlers/response.go`,
/// `doTransformObject`): a Table (rows carrying the object as `includeObject` says:
/// `PartialObjectMetadata` by default, the object, or nothing), or the object's metadata alone
/// (`PartialObjectMetadata`, `PartialObjectMetadataList`). Asking a list for
/// `PartialObjectMetadata`, or one object for the list, is a 406.
pub(super) fn transform(
    def: &ResourceDef,
    q: &Query,
    value: Value,
    is_list: bool,
) -> Result<Value, ApiError> {
    let partial = |o: &Value, version: &str| json!({ "kind": "PartialObjectMetadata", "apiVersion": version, "metadata": o.get("metadata").cloned().unwrap_or(json!({})) });
    let items =
        || if is_list { value["items"].as_array().cloned().unwrap_or_default() } else { vec![value.clone()] };
    match &q.render {
        Render::Object => Ok(value),
        Render::Table(version) => {
            let items = items();
            let rv = if is_list {
                value["metadata"]["resourceVersion"].as_str()
            } else {
                value.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            };
            let mut table = crate::rest::table::table(def, &items, rv.unwrap_or(""), true);
            if is_list {
                table["metadata"] = value["metadata"].clone();
            }
            table["apiVersion"] = json!(version);
            let include = q.include_object.as_deref().unwrap_or("");
            if let Some(rows) = table["rows"].as_array_mut() {
                for (row, obj) in rows.iter_mut().zip(&items) {
                    row["object"] = match include {
                        "" | "Metadata" => partial(obj, version),
                        "Object" => obj.clone(),
                        "None" => Value::Null,
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "unrecognized includeObject value: {other:?}"
                            )));
                        }
                    };
                }
            }
            Ok(table)
        }
        Render::Partial(version) if !is_list => Ok(partial(&value, version)),
        Render::PartialList(version) if is_list => Ok(json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": version,
            "metadata": value["metadata"].clone(),
            "items": items().iter().map(|o| partial(o, version)).collect::<Vec<_>>(),
        })),
        Render::Partial(_) => Err(ApiError::not_acceptable_because(
            "you requested PartialObjectMetadata, but the requested object is a list",
        )),
        Render::PartialList(_) => Err(ApiError::not_acceptable_because(
            "you requested PartialObjectMetadataList, but the requested object is not a list",
        )),
    }
}
