//! Server-side printing: `meta.k8s.io/v1` Tables, which kubectl asks for (`Accept: ...;as=Table`)
//! to print `kubectl get` columns such as a Deployment's READY.

use serde_json::{Value, json};

use crate::object::meta_str;
use crate::resource::ResourceDef;

/// A column: header, type, and how to compute its cell.
struct Column {
    name: &'static str,
    kind: &'static str,
    cell: fn(&Value) -> Value,
}

fn name(o: &Value) -> Value {
    json!(meta_str(o, "name"))
}

fn age(o: &Value) -> Value {
    let created = meta_str(o, "creationTimestamp");
    let Ok(t) = created.parse::<jiff::Timestamp>() else { return json!("<unknown>") };
    json!(crate::endpoints::printer_columns::human_duration(
        jiff::Timestamp::now().duration_since(t).as_secs()
    ))
}

fn int_at(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// An IntOrString field as kubectl prints it; `N/A` when unset.
fn int_or_string(o: &Value, ptr: &str) -> String {
    match o.pointer(ptr) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

fn columns(def: &ResourceDef) -> Vec<Column> {
    let mut cols = vec![Column { name: "Name", kind: "string", cell: name }];
    match def.kind {
        "Deployment" => cols.extend([
            Column {
                name: "Ready",
                kind: "string",
                cell: |o| {
                    json!(format!(
                        "{}/{}",
                        int_at(o, "/status/readyReplicas"),
                        o.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
                    ))
                },
            },
            Column {
                name: "Up-to-date",
                kind: "integer",
                cell: |o| json!(int_at(o, "/status/updatedReplicas")),
            },
            Column {
                name: "Available",
                kind: "integer",
                cell: |o| json!(int_at(o, "/status/availableReplicas")),
            },
        ]),
        "ConfigMap" | "Secret" => cols.push(Column {
            name: "Data",
            kind: "integer",
            cell: |o| {
                json!(
                    ["data", "binaryData", "stringData"]
                        .iter()
                        .filter_map(|k| o.get(*k).and_then(Value::as_object))
                        .map(serde_json::Map::len)
                        .sum::<usize>()
                )
            },
        }),
        "Service" => cols.extend([
            Column { name: "Type", kind: "string", cell: |o| json!(str_at(o, "/spec/type")) },
            Column { name: "Cluster-IP", kind: "string", cell: |o| json!(str_at(o, "/spec/clusterIP")) },
            Column {
                name: "External-IP",
                kind: "string",
                cell: |o| {
                    let ips = o
                        .pointer("/spec/externalIPs")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","));
                    json!(ips.filter(|s| !s.is_empty()).unwrap_or_else(|| "<none>".into()))
                },
            },
            Column {
                name: "Port(s)",
                kind: "string",
                cell: |o| {
                    let ports =
                        o.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
                    let shown: Vec<String> = ports
                        .iter()
                        .map(|p| {
                            format!("{}/{}", int_at(p, "/port"), p["protocol"].as_str().unwrap_or("TCP"))
                        })
                        .collect();
                    json!(if shown.is_empty() { "<none>".to_owned() } else { shown.join(",") })
                },
            },
        ]),
        "PodDisruptionBudget" => cols.extend([
            Column {
                name: "Min Available",
                kind: "string",
                cell: |o| json!(int_or_string(o, "/spec/minAvailable")),
            },
            Column {
                name: "Max Unavailable",
                kind: "string",
                cell: |o| json!(int_or_string(o, "/spec/maxUnavailable")),
            },
            Column {
                name: "Allowed Disruptions",
                kind: "integer",
                cell: |o| json!(int_at(o, "/status/disruptionsAllowed")),
            },
        ]),
        "CustomResourceDefinition" => {
            return vec![
                Column { name: "Name", kind: "string", cell: name },
                Column {
                    name: "Created At",
                    kind: "date",
                    cell: |o| json!(meta_str(o, "creationTimestamp")),
                },
            ];
        }
        "Namespace" => cols.push(Column {
            name: "Status",
            kind: "string",
            cell: |o| json!(o.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Active")),
        }),
        "Event" => {
            return vec![
                Column { name: "Last Seen", kind: "string", cell: age },
                Column {
                    name: "Type",
                    kind: "string",
                    cell: |o| json!(o.get("type").and_then(Value::as_str).unwrap_or("")),
                },
                Column {
                    name: "Reason",
                    kind: "string",
                    cell: |o| json!(o.get("reason").and_then(Value::as_str).unwrap_or("")),
                },
                Column {
                    name: "Object",
                    kind: "string",
                    cell: |o| {
                        let r = o
                            .get("involvedObject")
                            .or_else(|| o.get("regarding"))
                            .cloned()
                            .unwrap_or(Value::Null);
                        json!(format!(
                            "{}/{}",
                            r.get("kind").and_then(Value::as_str).unwrap_or("").to_lowercase(),
                            r.get("name").and_then(Value::as_str).unwrap_or("")
                        ))
                    },
                },
                Column {
                    name: "Message",
                    kind: "string",
                    cell: |o| {
                        json!(
                            o.get("message").or_else(|| o.get("note")).and_then(Value::as_str).unwrap_or("")
                        )
                    },
                },
            ];
        }
        _ => {}
    }
    cols.push(Column { name: "Age", kind: "string", cell: age });
    cols
}

/// A Table of `objects` (in `def`'s presentation); `headers` false omits the column
/// definitions, as the API server does after the first event of a watch.
///
/// A custom resource is printed with its CRD version's `additionalPrinterColumns` (see
/// [`printer_columns`](crate::endpoints::printer_columns)).
#[must_use]
pub fn table(def: &ResourceDef, objects: &[Value], resource_version: &str, headers: bool) -> Value {
    if let Some(custom) = def.custom() {
        let columns = crate::endpoints::printer_columns::from_crd_version(&custom.version);
        return crate::endpoints::printer_columns::table(&columns, objects, resource_version, headers);
    }
    let cols = columns(def);
    let definitions: Vec<Value> = if headers {
        cols.iter()
            .map(|c| json!({ "name": c.name, "type": c.kind, "format": if c.name == "Name" { "name" } else { "" }, "description": c.name, "priority": 0 }))
            .collect()
    } else {
        Vec::new()
    };
    assemble(definitions, objects, |o| cols.iter().map(|c| (c.cell)(o)).collect(), resource_version)
}

/// The `meta.k8s.io/v1` Table of `objects`: the column definitions, and a row per object with
/// its `cells` and the object as `PartialObjectMetadata`.
pub(crate) fn assemble(
    definitions: Vec<Value>,
    objects: &[Value],
    cells: impl Fn(&Value) -> Vec<Value>,
    resource_version: &str,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            json!({
                "cells": cells(o),
                "object": { "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata").cloned().unwrap_or(Value::Null) },
            })
        })
        .collect();
    json!({ "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": { "resourceVersion": resource_version }, "columnDefinitions": definitions, "rows": rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_ready_column() {
        let def = crate::resource::find("apps", "v1", "deployments").unwrap();
        let d = json!({ "metadata": { "name": "web", "creationTimestamp": "2020-01-01T00:00:00Z" }, "spec": { "replicas": 3 }, "status": { "readyReplicas": 2 } });
        let t = table(def, &[d], "7", true);
        assert_eq!(t["rows"][0]["cells"][0], "web");
        assert_eq!(t["rows"][0]["cells"][1], "2/3");
        assert_eq!(t["columnDefinitions"][1]["name"], "Ready");
    }
}
