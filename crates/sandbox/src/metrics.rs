//! Resource metrics: what metrics-server serves as `metrics.k8s.io/v1beta1`, for `kubectl top`
//! and the HorizontalPodAutoscaler. There is nothing to measure, so each running container
//! uses what it is said to use ([`usage`]): what a test set
//! ([`Sandbox::set_container_usage`](crate::Sandbox::set_container_usage)), else its pod's
//! annotation `usage.sandbox.counter.example.com/<container>` (`cpu=250m,memory=64Mi`), else
//! its requests. A pod's metrics are its running containers'; a node's, the sum of the running
//! pods bound to it. Pods that run nothing (pending, finished) have none, as metrics-server
//! reports none for them.
//!
//! Read on every request, from the stored pods: the HTTP layer answers `get` and `list` with
//! [`pod_metrics`] and [`node_metrics`].

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::object_meta::meta_str;
use crate::quantity::{Format, Quantity};

/// The annotation prefix that sets a container's usage: the container's name follows the `/`.
pub const USAGE_ANNOTATION: &str = "usage.sandbox.counter.example.com";

/// What a test set a container to use, by namespace, pod and container (the container
/// runtime keeps it).
pub(crate) type Told<'a> = &'a dyn Fn(&str, &str, &str) -> Option<Usage>;

/// The window metrics-server reports a usage over.
const WINDOW: &str = "15s";

/// What a container uses: CPU in cores and memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// CPU, in cores (`250m`).
    pub cpu: Quantity,
    /// Memory, in bytes (`64Mi`).
    pub memory: Quantity,
}

impl Usage {
    /// Nothing used.
    #[must_use]
    pub fn zero() -> Self {
        Self { cpu: Quantity::zero(), memory: Quantity::zero() }
    }

    /// The amount of `resource` (`cpu` or `memory`; zero for any other).
    pub(crate) fn of(self, resource: &str) -> Quantity {
        match resource {
            "cpu" => self.cpu,
            "memory" => self.memory,
            _ => Quantity::zero(),
        }
    }

    /// As metrics-server writes it: CPU in decimal units (`250m`), memory in binary (`64Mi`).
    fn to_json(self) -> Value {
        json!({
            "cpu": self.cpu.in_format(Format::DecimalSI).to_string(),
            "memory": self.memory.ceil().in_format(Format::BinarySI).to_string(),
        })
    }
}

impl std::ops::Add for Usage {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self { cpu: self.cpu + other.cpu, memory: self.memory + other.memory }
    }
}

/// Why an annotation's usage was not read: the text and the part of it that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation {key}: {value:?} is not a usage: {why} (expected `cpu=250m,memory=64Mi`)")]
pub struct UsageError {
    key: String,
    value: String,
    why: String,
}

/// Reads `cpu=250m,memory=64Mi` (either part may be left out: it is then zero).
///
/// ```
/// use kube_sandbox::parse_usage;
/// let u = parse_usage("usage.sandbox.counter.example.com/main", "cpu=250m, memory=64Mi").unwrap();
/// assert_eq!((u.cpu.to_string(), u.memory.to_string()), ("250m".into(), "64Mi".into()));
/// assert!(parse_usage("k", "cpu=lots").unwrap_err().to_string().contains("\"cpu=lots\""));
/// ```
///
/// # Errors
///
/// A part that is not `cpu=` or `memory=` with a quantity, named with the annotation's key.
pub fn parse_usage(key: &str, value: &str) -> Result<Usage, UsageError> {
    let refuse = |why: String| UsageError { key: key.to_owned(), value: value.to_owned(), why };
    let mut usage = Usage::zero();
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, amount) = part.split_once('=').ok_or_else(|| refuse(format!("{part:?} has no `=`")))?;
        let q = Quantity::parse(amount.trim()).map_err(|e| refuse(format!("{name}: {e}")))?;
        if q.is_negative() {
            return Err(refuse(format!("{name} is negative")));
        }
        match name.trim() {
            "cpu" => usage.cpu = q,
            "memory" => usage.memory = q,
            other => return Err(refuse(format!("{other:?} is not cpu or memory"))),
        }
    }
    Ok(usage)
}

/// What container `spec` of `pod` uses now: a test's setting, its annotation, or its requests.
/// An annotation that does not read is logged and the requests are used.
pub(crate) fn usage(told: Told<'_>, pod: &Value, spec: &Value) -> Usage {
    let name = spec["name"].as_str().unwrap_or("");
    if let Some(u) = told(meta_str(pod, "namespace"), meta_str(pod, "name"), name) {
        return u;
    }
    let key = format!("{USAGE_ANNOTATION}/{name}");
    if let Some(text) = pod.pointer("/metadata/annotations").and_then(|a| a.get(&key)).and_then(Value::as_str)
    {
        match parse_usage(&key, text) {
            Ok(u) => return u,
            Err(e) => {
                tracing::warn!(pod = meta_str(pod, "name"), error = %e, "a usage annotation is ignored")
            }
        }
    }
    let requested = |r: &str| {
        spec.pointer(&format!("/resources/requests/{r}"))
            .and_then(Value::as_str)
            .and_then(|q| Quantity::parse(q).ok())
            .unwrap_or_else(Quantity::zero)
    };
    Usage { cpu: requested("cpu"), memory: requested("memory") }
}

/// The containers of `pod` that run now, with their usage; none when the pod runs nothing (it
/// then has no metrics). What `PodMetrics` reports, and what the autoscaler reads.
pub(crate) fn pod_usage(told: Told<'_>, pod: &Value) -> Vec<(String, Usage)> {
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return Vec::new();
    }
    let statuses = pod.pointer("/status/containerStatuses").and_then(Value::as_array);
    let runs = |name: &str| {
        statuses.into_iter().flatten().any(|s| s["name"] == name && s.pointer("/state/running").is_some())
    };
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|spec| {
            let name = spec["name"].as_str()?;
            runs(name).then(|| (name.to_owned(), usage(told, pod, spec)))
        })
        .collect()
}

/// metrics-server's metadata for an object it reports on: its name, namespace and labels, made
/// now.
fn metadata(obj: &Value, now: &str) -> Value {
    let mut meta = json!({ "name": meta_str(obj, "name"), "creationTimestamp": now });
    if let Some(ns) = obj.pointer("/metadata/namespace") {
        meta["namespace"] = ns.clone();
    }
    if let Some(labels) = obj.pointer("/metadata/labels") {
        meta["labels"] = labels.clone();
    }
    meta
}

/// The `PodMetrics` of `pods` that run something, in their order.
pub(crate) fn pod_metrics(told: Told<'_>, pods: &[&Value], now: Timestamp) -> Vec<Value> {
    let stamp = crate::clock::seconds(now);
    pods.iter()
        .filter_map(|pod| {
            let running = pod_usage(told, pod);
            (!running.is_empty()).then(|| {
                let list: Vec<Value> =
                    running.into_iter().map(|(name, u)| json!({ "name": name, "usage": u.to_json() })).collect();
                json!({ "kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                    "metadata": metadata(pod, &stamp), "timestamp": stamp, "window": WINDOW, "containers": list })
            })
        })
        .collect()
}

/// The `NodeMetrics` of `nodes`: each the sum of the running pods of `pods` bound to it.
pub(crate) fn node_metrics(told: Told<'_>, nodes: &[&Value], pods: &[&Value], now: Timestamp) -> Vec<Value> {
    let stamp = crate::clock::seconds(now);
    let mut used: BTreeMap<&str, Usage> = BTreeMap::new();
    for pod in pods {
        let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) else { continue };
        for (_, u) in pod_usage(told, pod) {
            let total = used.entry(node).or_insert_with(Usage::zero);
            *total = *total + u;
        }
    }
    nodes
        .iter()
        .map(|node| {
            let u = used.get(meta_str(node, "name")).copied().unwrap_or_else(Usage::zero);
            json!({ "kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": metadata(node, &stamp), "timestamp": stamp, "window": WINDOW, "usage": u.to_json() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_written_as_metrics_server_writes_it() {
        let u = parse_usage("k", "cpu=0.25,memory=64000000").unwrap();
        assert_eq!(u.to_json(), json!({ "cpu": "250m", "memory": "62500Ki" }));
        assert_eq!(Usage::zero().to_json(), json!({ "cpu": "0", "memory": "0" }));
        assert!(parse_usage("k", "gpu=1").unwrap_err().to_string().contains("\"gpu\" is not cpu or memory"));
        assert!(parse_usage("k", "cpu=-1").is_err());
        assert!(parse_usage("k", "cpu").is_err());
    }
}
