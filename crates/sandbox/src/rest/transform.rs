//! An answer turned into the shape the request negotiated (upstream's `endpoints/handlers/response.go`):
//! the object, a Table, or its metadata alone.

use serde_json::{Value, json};

use super::negotiate::Render;
use super::query::Query;
use crate::resource::ResourceDef;
use crate::status::ApiError;

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
