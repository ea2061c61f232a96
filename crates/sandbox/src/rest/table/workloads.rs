//! The columns of the kinds a cluster runs workloads with — Pods, Nodes, the workload
//! controllers' kinds, storage, autoscalers, ingresses, priority classes — as upstream's
//! printers declare them (`pkg/printers/internalversion/printers.go`), in the same
//! [`Column`] form as the rest of [`super`].

use serde_json::{Value, json};

use super::{Column, age, col, format_label_selector, format_labels, int_at, name, since, str_at, wide};

fn or_none(s: &str) -> Value {
    json!(if s.is_empty() { "<none>" } else { s })
}

/// The `field` of each object in the list at `ptr`, joined by `,` (`layoutContainerCells`).
pub(super) fn joined(o: &Value, ptr: &str, field: &str) -> Value {
    let list = o.pointer(ptr).and_then(Value::as_array);
    json!(list.into_iter().flatten().map(|c| c[field].as_str().unwrap_or("")).collect::<Vec<_>>().join(","))
}

/// A Pod's STATUS (`printPod`): the phase, or the reason a container waits or ended, or
/// `Terminating`.
fn pod_status(o: &Value) -> Value {
    if o.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return json!("Terminating");
    }
    let mut reason = match str_at(o, "/status/reason") {
        "" => str_at(o, "/status/phase").to_owned(),
        r => r.to_owned(),
    };
    for c in o.pointer("/status/containerStatuses").and_then(Value::as_array).into_iter().flatten().rev() {
        if let Some(r) = c.pointer("/state/waiting/reason").and_then(Value::as_str).filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        } else if let Some(r) =
            c.pointer("/state/terminated/reason").and_then(Value::as_str).filter(|r| !r.is_empty())
        {
            reason = r.to_owned();
        }
    }
    json!(reason)
}

fn pod_ready(o: &Value) -> Value {
    let total = o.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
    let ready = o
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["ready"] == true)
        .count();
    json!(format!("{ready}/{total}"))
}

fn restarts(o: &Value) -> Value {
    let n: i64 = o
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum();
    json!(n.to_string())
}

/// A Node's STATUS: its Ready condition, and `SchedulingDisabled` when cordoned.
fn node_status(o: &Value) -> Value {
    let ready = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| if c["status"] == "True" { "Ready" } else { "NotReady" });
    let mut status = ready.unwrap_or("Unknown").to_owned();
    if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    json!(status)
}

fn node_roles(o: &Value) -> Value {
    let mut roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort_unstable();
    or_none(&roles.join(","))
}

fn node_address(o: &Value, kind: &str) -> Value {
    let found = o
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|a| a["type"] == kind)
        .and_then(|a| a["address"].as_str())
        .unwrap_or("");
    or_none(found)
}

/// A Job's STATUS (1.32's column): from its conditions, `Running` while none holds.
fn job_status(o: &Value) -> Value {
    let holds = |t: &str| {
        o.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == t && c["status"] == "True")
    };
    let status = ["Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"]
        .into_iter()
        .find(|t| holds(t))
        .unwrap_or("Running");
    json!(status)
}

fn job_completions(o: &Value) -> Value {
    let succeeded = int_at(o, "/status/succeeded");
    match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => json!(format!("{succeeded}/{c}")),
        None => match o.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1) {
            p if p > 1 => json!(format!("{succeeded}/1 of {p}")),
            _ => json!(format!("{succeeded}/1")),
        },
    }
}

fn job_duration(o: &Value) -> Value {
    let at = |p: &str| o.pointer(p).and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let Some(start) = at("/status/startTime") else { return json!("") };
    let end = at("/status/completionTime").unwrap_or_else(jiff::Timestamp::now);
    json!(crate::rest::printer_columns::human_duration(end.duration_since(start).as_secs()))
}

fn access_modes(o: &Value, ptr: &str) -> Value {
    let short: Vec<&str> = o
        .pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|m| match m {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            other => other,
        })
        .collect();
    json!(short.join(","))
}

/// An HPA's TARGETS: each metric as `current/target` (`<unknown>` with no status).
fn hpa_targets(o: &Value) -> Value {
    let metrics = o.pointer("/spec/metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    if metrics.is_empty() {
        return json!("<none>");
    }
    let shown: Vec<String> = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let kind = m["type"].as_str().unwrap_or("").to_ascii_lowercase();
            let target = m.pointer(&format!("/{kind}/target")).cloned().unwrap_or_default();
            let current =
                o.pointer(&format!("/status/currentMetrics/{i}/{kind}/current")).cloned().unwrap_or_default();
            let name =
                m.pointer(&format!("/{kind}/name")).and_then(Value::as_str).unwrap_or(&kind).to_owned();
            let fmt = |v: &Value| match (
                v.get("averageUtilization"),
                v.get("averageValue").or_else(|| v.get("value")),
            ) {
                (Some(u), _) => format!("{u}%"),
                (None, Some(x)) => x.as_str().map_or_else(|| x.to_string(), str::to_owned),
                _ => "<unknown>".into(),
            };
            format!("{name}: {}/{}", fmt(&current), fmt(&target))
        })
        .collect();
    json!(shown.join(", "))
}

fn ingress_hosts(o: &Value) -> Value {
    let hosts: Vec<&str> = o
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r["host"].as_str())
        .collect();
    json!(if hosts.is_empty() { "*".to_owned() } else { hosts.join(",") })
}

fn ingress_address(o: &Value) -> Value {
    let addrs: Vec<&str> = o
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).and_then(Value::as_str))
        .collect();
    json!(addrs.join(","))
}

fn endpoints(o: &Value) -> Value {
    let mut shown = Vec::new();
    for subset in o.get("subsets").and_then(Value::as_array).into_iter().flatten() {
        let ports: Vec<i64> =
            subset["ports"].as_array().into_iter().flatten().map(|p| int_at(p, "/port")).collect();
        for a in subset["addresses"].as_array().into_iter().flatten() {
            let ip = a["ip"].as_str().unwrap_or("");
            if ports.is_empty() {
                shown.push(ip.to_owned());
            }
            shown.extend(ports.iter().map(|p| format!("{ip}:{p}")));
        }
    }
    or_none(&shown.join(","))
}

/// Every column of `kind`, `Name` first; `None` for a kind this module does not print.
#[allow(clippy::too_many_lines)]
pub(super) fn columns(kind: &str) -> Option<Vec<Column>> {
    let name_col = Column { name: "Name", kind: "string", priority: 0, cell: name };
    let rest: Vec<Column> = match kind {
        "Pod" => vec![
            col("Ready", "string", pod_ready),
            col("Status", "string", pod_status),
            col("Restarts", "string", restarts),
            col("Age", "string", age),
            wide("IP", |o| or_none(str_at(o, "/status/podIP"))),
            wide("Node", |o| or_none(str_at(o, "/spec/nodeName"))),
            wide("Nominated Node", |o| or_none(str_at(o, "/status/nominatedNodeName"))),
            wide("Readiness Gates", |o| match o.pointer("/spec/readinessGates").and_then(Value::as_array) {
                Some(g) if !g.is_empty() => json!(format!("0/{}", g.len())),
                _ => json!("<none>"),
            }),
        ],
        "Node" => vec![
            col("Status", "string", node_status),
            col("Roles", "string", node_roles),
            col("Age", "string", age),
            col("Version", "string", |o| json!(str_at(o, "/status/nodeInfo/kubeletVersion"))),
            wide("Internal-IP", |o| node_address(o, "InternalIP")),
            wide("External-IP", |o| node_address(o, "ExternalIP")),
            wide("OS-Image", |o| json!(str_at(o, "/status/nodeInfo/osImage"))),
            wide("Kernel-Version", |o| json!(str_at(o, "/status/nodeInfo/kernelVersion"))),
            wide("Container-Runtime", |o| json!(str_at(o, "/status/nodeInfo/containerRuntimeVersion"))),
        ],
        "ReplicaSet" | "ReplicationController" => vec![
            col("Desired", "integer", |o| json!(int_at(o, "/spec/replicas"))),
            col("Current", "integer", |o| json!(int_at(o, "/status/replicas"))),
            col("Ready", "integer", |o| json!(int_at(o, "/status/readyReplicas"))),
            col("Age", "string", age),
            wide("Containers", |o| joined(o, "/spec/template/spec/containers", "name")),
            wide("Images", |o| joined(o, "/spec/template/spec/containers", "image")),
            wide("Selector", |o| match o.pointer("/spec/selector") {
                Some(s) if s.get("matchLabels").is_some() || s.get("matchExpressions").is_some() => {
                    json!(format_label_selector(Some(s)))
                }
                other => json!(format_labels(other)),
            }),
        ],
        "StatefulSet" => vec![
            col("Ready", "string", |o| {
                json!(format!("{}/{}", int_at(o, "/status/readyReplicas"), int_at(o, "/spec/replicas")))
            }),
            col("Age", "string", age),
            wide("Containers", |o| joined(o, "/spec/template/spec/containers", "name")),
            wide("Images", |o| joined(o, "/spec/template/spec/containers", "image")),
        ],
        "DaemonSet" => vec![
            col("Desired", "integer", |o| json!(int_at(o, "/status/desiredNumberScheduled"))),
            col("Current", "integer", |o| json!(int_at(o, "/status/currentNumberScheduled"))),
            col("Ready", "integer", |o| json!(int_at(o, "/status/numberReady"))),
            col("Up-to-date", "integer", |o| json!(int_at(o, "/status/updatedNumberScheduled"))),
            col("Available", "integer", |o| json!(int_at(o, "/status/numberAvailable"))),
            col("Node Selector", "string", |o| {
                json!(format_labels(o.pointer("/spec/template/spec/nodeSelector")))
            }),
            col("Age", "string", age),
            wide("Containers", |o| joined(o, "/spec/template/spec/containers", "name")),
            wide("Images", |o| joined(o, "/spec/template/spec/containers", "image")),
            wide("Selector", |o| json!(format_label_selector(o.pointer("/spec/selector")))),
        ],
        "Job" => vec![
            col("Status", "string", job_status),
            col("Completions", "string", job_completions),
            col("Duration", "string", job_duration),
            col("Age", "string", age),
            wide("Containers", |o| joined(o, "/spec/template/spec/containers", "name")),
            wide("Images", |o| joined(o, "/spec/template/spec/containers", "image")),
            wide("Selector", |o| json!(format_label_selector(o.pointer("/spec/selector")))),
        ],
        "CronJob" => vec![
            col("Schedule", "string", |o| json!(str_at(o, "/spec/schedule"))),
            col("Timezone", "string", |o| or_none(str_at(o, "/spec/timeZone"))),
            col("Suspend", "boolean", |o| json!(o.pointer("/spec/suspend") == Some(&json!(true)))),
            col("Active", "integer", |o| {
                json!(o.pointer("/status/active").and_then(Value::as_array).map_or(0, Vec::len))
            }),
            col("Last Schedule", "string", |o| match o.pointer("/status/lastScheduleTime") {
                Some(Value::String(_)) => since(o, "/status/lastScheduleTime"),
                _ => json!("<none>"),
            }),
            col("Age", "string", age),
            wide("Containers", |o| joined(o, "/spec/jobTemplate/spec/template/spec/containers", "name")),
            wide("Images", |o| joined(o, "/spec/jobTemplate/spec/template/spec/containers", "image")),
            wide("Selector", |o| json!(format_label_selector(o.pointer("/spec/jobTemplate/spec/selector")))),
        ],
        "PersistentVolumeClaim" => vec![
            col("Status", "string", |o| json!(str_at(o, "/status/phase"))),
            col("Volume", "string", |o| json!(str_at(o, "/spec/volumeName"))),
            col("Capacity", "string", |o| json!(str_at(o, "/status/capacity/storage"))),
            col("Access Modes", "string", |o| access_modes(o, "/status/accessModes")),
            col("StorageClass", "string", |o| json!(str_at(o, "/spec/storageClassName"))),
            col("VolumeAttributesClass", "string", |o| json!(str_at(o, "/spec/volumeAttributesClassName"))),
            col("Age", "string", age),
            wide("VolumeMode", |o| json!(str_at(o, "/spec/volumeMode"))),
        ],
        "PersistentVolume" => vec![
            col("Capacity", "string", |o| json!(str_at(o, "/spec/capacity/storage"))),
            col("Access Modes", "string", |o| access_modes(o, "/spec/accessModes")),
            col("Reclaim Policy", "string", |o| json!(str_at(o, "/spec/persistentVolumeReclaimPolicy"))),
            col("Status", "string", |o| json!(str_at(o, "/status/phase"))),
            col("Claim", "string", |o| {
                let (ns, n) = (str_at(o, "/spec/claimRef/namespace"), str_at(o, "/spec/claimRef/name"));
                json!(if n.is_empty() { String::new() } else { format!("{ns}/{n}") })
            }),
            col("StorageClass", "string", |o| json!(str_at(o, "/spec/storageClassName"))),
            col("VolumeAttributesClass", "string", |o| json!(str_at(o, "/spec/volumeAttributesClassName"))),
            col("Reason", "string", |o| json!(str_at(o, "/status/reason"))),
            col("Age", "string", age),
            wide("VolumeMode", |o| json!(str_at(o, "/spec/volumeMode"))),
        ],
        "HorizontalPodAutoscaler" => vec![
            col("Reference", "string", |o| {
                json!(format!(
                    "{}/{}",
                    str_at(o, "/spec/scaleTargetRef/kind"),
                    str_at(o, "/spec/scaleTargetRef/name")
                ))
            }),
            col("Targets", "string", hpa_targets),
            col("MinPods", "string", |o| {
                json!(o.pointer("/spec/minReplicas").and_then(Value::as_i64).unwrap_or(1))
            }),
            col("MaxPods", "integer", |o| json!(int_at(o, "/spec/maxReplicas"))),
            col("Replicas", "integer", |o| json!(int_at(o, "/status/currentReplicas"))),
            col("Age", "string", age),
        ],
        "Ingress" => vec![
            col("Class", "string", |o| or_none(str_at(o, "/spec/ingressClassName"))),
            col("Hosts", "string", ingress_hosts),
            col("Address", "string", ingress_address),
            col("Ports", "string", |o| {
                let tls = o.pointer("/spec/tls").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
                json!(if tls { "80, 443" } else { "80" })
            }),
            col("Age", "string", age),
        ],
        "StorageClass" => vec![
            col("Provisioner", "string", |o| json!(str_at(o, "/provisioner"))),
            col("ReclaimPolicy", "string", |o| json!(str_at(o, "/reclaimPolicy"))),
            col("VolumeBindingMode", "string", |o| json!(str_at(o, "/volumeBindingMode"))),
            col("AllowVolumeExpansion", "string", |o| {
                json!(o.get("allowVolumeExpansion") == Some(&json!(true)))
            }),
            col("Age", "string", age),
        ],
        "PriorityClass" => vec![
            col("Value", "integer", |o| json!(int_at(o, "/value"))),
            col("Global-Default", "boolean", |o| json!(o.get("globalDefault") == Some(&json!(true)))),
            col("Age", "string", age),
            col("PreemptionPolicy", "string", |o| json!(str_at(o, "/preemptionPolicy"))),
        ],
        "Endpoints" => vec![col("Endpoints", "string", endpoints), col("Age", "string", age)],
        "NetworkPolicy" => vec![
            col("Pod-Selector", "string", |o| json!(format_label_selector(o.pointer("/spec/podSelector")))),
            col("Age", "string", age),
        ],
        "ComponentStatus" => vec![
            col("Status", "string", |o| {
                let healthy = o.pointer("/conditions/0/status") == Some(&json!("True"));
                json!(if healthy { "Healthy" } else { "Unhealthy" })
            }),
            col("Message", "string", |o| json!(str_at(o, "/conditions/0/message"))),
            col("Error", "string", |o| json!(str_at(o, "/conditions/0/error"))),
        ],
        "ControllerRevision" => vec![
            col("Controller", "string", |o| {
                let owner = o
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .and_then(|l| l.iter().find(|r| r["controller"] == true));
                json!(owner.map_or_else(
                    || "<none>".to_owned(),
                    |r| format!(
                        "{}/{}",
                        r["kind"].as_str().unwrap_or("").to_lowercase(),
                        r["name"].as_str().unwrap_or("")
                    )
                ))
            }),
            col("Revision", "integer", |o| json!(int_at(o, "/revision"))),
            col("Age", "string", age),
        ],
        _ => return None,
    };
    Some(std::iter::once(name_col).chain(rest).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(kind: &str, o: &Value) -> Vec<Value> {
        columns(kind).unwrap().iter().map(|c| (c.cell)(o)).collect()
    }

    #[test]
    fn a_pod_row_shows_readiness_status_and_node() {
        let pod = json!({ "metadata": { "name": "web-0" }, "spec": { "containers": [{}, {}], "nodeName": "node-1" },
                          "status": { "phase": "Running", "podIP": "10.244.0.5", "containerStatuses": [{ "ready": true, "restartCount": 2 }, { "ready": false, "restartCount": 1 }] } });
        let row = cells("Pod", &pod);
        assert_eq!(row[..4], [json!("web-0"), json!("1/2"), json!("Running"), json!("3")]);
        assert_eq!(row[5..7], [json!("10.244.0.5"), json!("node-1")]);
    }

    #[test]
    fn a_job_row_counts_completions() {
        let job = json!({ "metadata": { "name": "pi" }, "spec": { "completions": 3 }, "status": { "succeeded": 1 } });
        assert_eq!(cells("Job", &job)[1..3], [json!("Running"), json!("1/3")]);
        let done = json!({ "metadata": { "name": "pi" }, "spec": {}, "status": { "conditions": [{ "type": "Complete", "status": "True" }] } });
        assert_eq!(cells("Job", &done)[1], "Complete");
    }

    #[test]
    fn a_node_row_shows_cordoning() {
        let node = json!({ "metadata": { "name": "n", "labels": { "node-role.kubernetes.io/control-plane": "" } },
                           "spec": { "unschedulable": true }, "status": { "conditions": [{ "type": "Ready", "status": "True" }] } });
        assert_eq!(cells("Node", &node)[1..3], [json!("Ready,SchedulingDisabled"), json!("control-plane")]);
    }
}
