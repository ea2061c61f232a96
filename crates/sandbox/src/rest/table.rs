//! Server-side printing: `meta.k8s.io/v1` Tables, which kubectl asks for (`Accept: ...;as=Table`)
//! to print `kubectl get` columns such as a Deployment's READY.

use serde_json::{Value, json};

use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::selector::format_label_selector;

mod workloads;

/// A column: header, type, priority (1: shown by `kubectl get -o wide` only; the server sends
/// every column, as upstream's table convertor prints with `Wide: true`), and its cell.
struct Column {
    name: &'static str,
    kind: &'static str,
    priority: u8,
    cell: fn(&Value) -> Value,
}

const fn col(name: &'static str, kind: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column { name, kind, priority: 0, cell }
}

const fn wide(name: &'static str, cell: fn(&Value) -> Value) -> Column {
    Column { name, kind: "string", priority: 1, cell }
}

fn name(o: &Value) -> Value {
    json!(meta_str(o, "name"))
}

/// `translateTimestampSince`: the human duration since the time at `ptr`, `<unknown>` without one.
fn since(o: &Value, ptr: &str) -> Value {
    let Some(t) = o.pointer(ptr).and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok())
    else {
        return json!("<unknown>");
    };
    json!(crate::rest::printer_columns::human_duration(jiff::Timestamp::now().duration_since(t).as_secs()))
}

fn age(o: &Value) -> Value {
    since(o, "/metadata/creationTimestamp")
}

fn int_at(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn str_at<'a>(o: &'a Value, ptr: &str) -> &'a str {
    o.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The first of `ptrs` that holds a non-empty string (a core Event's field or its
/// events.k8s.io name).
fn first_str<'a>(o: &'a Value, ptrs: &[&str]) -> &'a str {
    ptrs.iter().map(|p| str_at(o, p)).find(|s| !s.is_empty()).unwrap_or("")
}

/// An IntOrString field as kubectl prints it; `N/A` when unset.
fn int_or_string(o: &Value, ptr: &str) -> String {
    match o.pointer(ptr) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

fn len_at(o: &Value, key: &str) -> usize {
    o.get(key).and_then(Value::as_object).map_or(0, serde_json::Map::len)
}

/// `labels.FormatLabels`: `k=v` pairs sorted and joined by `,`; `<none>` for none.
fn format_labels(m: Option<&Value>) -> String {
    let Some(m) = m.and_then(Value::as_object).filter(|m| !m.is_empty()) else { return "<none>".into() };
    let mut pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.join(",")
}

/// A pod template's containers' names or images, joined by `,` (`layoutContainerCells`).
fn containers(o: &Value, field: &str) -> Value {
    workloads::joined(o, "/spec/template/spec/containers", field)
}

/// `getServiceExternalIP` (wide): by the Service's type.
fn service_external_ip(o: &Value) -> String {
    let external: Vec<&str> = o
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match str_at(o, "/spec/type") {
        "ClusterIP" | "NodePort" | "" => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let mut ips: Vec<&str> = o
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).and_then(Value::as_str))
                .collect();
            ips.extend(external);
            if ips.is_empty() { "<pending>".into() } else { ips.join(",") }
        }
        "ExternalName" => str_at(o, "/spec/externalName").to_owned(),
        _ => "<unknown>".into(),
    }
}

/// `makePortString`: `port[:nodePort]/protocol`, joined by `,`; `<none>` for none.
fn service_ports(o: &Value) -> String {
    let ports = o.pointer("/spec/ports").and_then(Value::as_array);
    let shown: Vec<String> = ports
        .into_iter()
        .flatten()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64).filter(|n| *n != 0) {
                Some(node) => format!("{}:{node}/{proto}", int_at(p, "/port")),
                None => format!("{}/{proto}", int_at(p, "/port")),
            }
        })
        .collect();
    if shown.is_empty() { "<none>".into() } else { shown.join(",") }
}

/// A binding's subjects of one kind, joined by `, ` (`rbac.SubjectsStrings`; service accounts as
/// `namespace:name`).
fn subjects(o: &Value, kind: &str) -> Value {
    let list = o.get("subjects").and_then(Value::as_array);
    json!(
        list.into_iter()
            .flatten()
            .filter(|s| s["kind"] == kind)
            .map(|s| match kind {
                "ServiceAccount" =>
                    format!("{}:{}", s["namespace"].as_str().unwrap_or(""), s["name"].as_str().unwrap_or("")),
                _ => s["name"].as_str().unwrap_or("").to_owned(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// An Event's first and last times as `printEvent` works them out (a core Event's or, from
/// events.k8s.io, its deprecated fields, `eventTime` and `series`).
fn event_times(o: &Value) -> (Value, Value) {
    let first = if o
        .get("firstTimestamp")
        .or_else(|| o.get("deprecatedFirstTimestamp"))
        .is_some_and(Value::is_string)
    {
        since(
            o,
            if o.get("firstTimestamp").is_some_and(Value::is_string) {
                "/firstTimestamp"
            } else {
                "/deprecatedFirstTimestamp"
            },
        )
    } else {
        since(o, "/eventTime")
    };
    let last_ptr = ["/lastTimestamp", "/deprecatedLastTimestamp"]
        .into_iter()
        .find(|p| o.pointer(p).is_some_and(Value::is_string));
    let last = if o.get("series").is_some_and(Value::is_object) {
        since(o, "/series/lastObservedTime")
    } else {
        last_ptr.map_or_else(|| first.clone(), |p| since(o, p))
    };
    (first, last)
}

/// The columns of a built-in kind, as upstream's printers declare them
/// (`pkg/printers/internalversion/printers.go`, `AddHandlers`): names, types (a count in a
/// `string` column stays an integer cell, as upstream's does), priorities, and cells.
fn columns(def: &ResourceDef) -> Vec<Column> {
    if let Some(cols) = workloads::columns(def.kind) {
        return cols;
    }
    let mut cols = vec![Column { name: "Name", kind: "string", priority: 0, cell: name }];
    match def.kind {
        "Deployment" => {
            cols.extend([
                col("Ready", "string", |o| {
                    json!(format!(
                        "{}/{}",
                        int_at(o, "/status/readyReplicas"),
                        o.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
                    ))
                }),
                col("Up-to-date", "string", |o| json!(int_at(o, "/status/updatedReplicas"))),
                col("Available", "string", |o| json!(int_at(o, "/status/availableReplicas"))),
                col("Age", "string", age),
                wide("Containers", |o| containers(o, "name")),
                wide("Images", |o| containers(o, "image")),
                wide("Selector", |o| json!(format_label_selector(o.pointer("/spec/selector")))),
            ]);
            return cols;
        }
        "ConfigMap" => {
            cols.push(col("Data", "string", |o| json!(len_at(o, "data") + len_at(o, "binaryData"))))
        }
        "Secret" => cols.extend([
            col("Type", "string", |o| json!(str_at(o, "/type"))),
            col("Data", "string", |o| {
                let mut keys: std::collections::BTreeSet<&String> = std::collections::BTreeSet::new();
                for field in ["data", "stringData"] {
                    keys.extend(
                        o.get(field).and_then(Value::as_object).into_iter().flat_map(serde_json::Map::keys),
                    );
                }
                json!(keys.len())
            }),
        ]),
        "ServiceAccount" => cols.push(col("Secrets", "string", |o| {
            json!(o.get("secrets").and_then(Value::as_array).map_or(0, Vec::len))
        })),
        "Lease" => cols.push(col("Holder", "string", |o| json!(str_at(o, "/spec/holderIdentity")))),
        "Service" => {
            cols.extend([
                col("Type", "string", |o| json!(str_at(o, "/spec/type"))),
                col("Cluster-IP", "string", |o| {
                    json!(o.pointer("/spec/clusterIPs/0").and_then(Value::as_str).unwrap_or_else(|| {
                        Some(str_at(o, "/spec/clusterIP")).filter(|s| !s.is_empty()).unwrap_or("<none>")
                    }))
                }),
                col("External-IP", "string", |o| json!(service_external_ip(o))),
                col("Port(s)", "string", |o| json!(service_ports(o))),
                col("Age", "string", age),
                wide("Selector", |o| json!(format_labels(o.pointer("/spec/selector")))),
            ]);
            return cols;
        }
        "PodDisruptionBudget" => cols.extend([
            col("Min Available", "string", |o| json!(int_or_string(o, "/spec/minAvailable"))),
            col("Max Unavailable", "string", |o| json!(int_or_string(o, "/spec/maxUnavailable"))),
            col("Allowed Disruptions", "integer", |o| json!(int_at(o, "/status/disruptionsAllowed"))),
        ]),
        "Role" | "ClusterRole" => {
            cols.push(col("Created At", "date", |o| json!(meta_str(o, "creationTimestamp"))));
            return cols;
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            cols.extend([
                col("Role", "string", |o| {
                    json!(format!("{}/{}", str_at(o, "/roleRef/kind"), str_at(o, "/roleRef/name")))
                }),
                col("Age", "string", age),
                wide("Users", |o| subjects(o, "User")),
                wide("Groups", |o| subjects(o, "Group")),
                wide("ServiceAccounts", |o| subjects(o, "ServiceAccount")),
            ]);
            return cols;
        }
        "CustomResourceDefinition" => {
            cols.push(col("Created At", "date", |o| json!(meta_str(o, "creationTimestamp"))));
            return cols;
        }
        "Namespace" => cols.push(col("Status", "string", |o| json!(str_at(o, "/status/phase")))),
        "Event" => {
            return vec![
                col("Last Seen", "string", |o| event_times(o).1),
                col("Type", "string", |o| json!(str_at(o, "/type"))),
                col("Reason", "string", |o| json!(str_at(o, "/reason"))),
                col("Object", "string", |o| {
                    let kind = first_str(o, &["/involvedObject/kind", "/regarding/kind"]).to_lowercase();
                    let name = first_str(o, &["/involvedObject/name", "/regarding/name"]);
                    json!(if name.is_empty() { kind } else { format!("{kind}/{name}") })
                }),
                wide("Subobject", |o| {
                    json!(first_str(o, &["/involvedObject/fieldPath", "/regarding/fieldPath"]))
                }),
                wide("Source", |o| {
                    let component = first_str(
                        o,
                        &[
                            "/source/component",
                            "/deprecatedSource/component",
                            "/reportingComponent",
                            "/reportingController",
                        ],
                    );
                    let instance =
                        first_str(o, &["/source/host", "/deprecatedSource/host", "/reportingInstance"]);
                    json!(if instance.is_empty() {
                        component.to_owned()
                    } else {
                        format!("{component}, {instance}")
                    })
                }),
                col("Message", "string", |o| json!(first_str(o, &["/message", "/note"]).trim())),
                wide("First Seen", |o| event_times(o).0),
                wide("Count", |o| {
                    let count = match o.pointer("/series/count") {
                        Some(c) => c.as_i64().unwrap_or(0),
                        None => o
                            .get("count")
                            .or_else(|| o.get("deprecatedCount"))
                            .and_then(Value::as_i64)
                            .unwrap_or(0),
                    };
                    json!(if count == 0 { 1 } else { count })
                }),
                Column { name: "Name", kind: "string", priority: 1, cell: name },
            ];
        }
        _ => {}
    }
    cols.push(col("Age", "string", age));
    cols
}

/// A Table of `objects` (in `def`'s presentation); `headers` false omits the column
/// definitions, as the API server does after the first event of a watch.
///
/// A custom resource is printed with its CRD version's `additionalPrinterColumns` (see
/// [`printer_columns`](crate::rest::printer_columns)).
#[must_use]
pub fn table(def: &ResourceDef, objects: &[Value], resource_version: &str, headers: bool) -> Value {
    if let Some(custom) = def.custom() {
        let columns = crate::rest::printer_columns::from_crd_version(&custom.version);
        return crate::rest::printer_columns::table(&columns, objects, resource_version, headers);
    }
    let cols = columns(def);
    let definitions: Vec<Value> = if headers {
        cols.iter()
            .map(|c| json!({ "name": c.name, "type": c.kind, "format": if c.name == "Name" { "name" } else { "" }, "description": c.name, "priority": c.priority }))
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
        let def = crate::catalog::find("apps", "v1", "deployments").unwrap();
        let d = json!({ "metadata": { "name": "web", "creationTimestamp": "2020-01-01T00:00:00Z" }, "spec": { "replicas": 3 }, "status": { "readyReplicas": 2 } });
        let t = table(def, &[d], "7", true);
        assert_eq!(t["rows"][0]["cells"][0], "web");
        assert_eq!(t["rows"][0]["cells"][1], "2/3");
        assert_eq!(t["columnDefinitions"][1]["name"], "Ready");
    }
}
