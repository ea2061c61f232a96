//! kube-scheduler: each pending pod is bound, through `pods/binding`, to a node that fits it.
//!
//! The filters are upstream's default ones a simulated node can fail, in upstream's order, each
//! with upstream's reason: `NodeUnschedulable` (a cordoned node), `TaintToleration`
//! (`NoSchedule`/`NoExecute` taints the pod does not tolerate), `NodeAffinity` (`nodeSelector`
//! and required node affinity), `NodePorts` (host ports a pod on the node holds) and
//! `NodeResourcesFit` (requests against what is left of allocatable cpu, memory and pods). Of the nodes that fit, the least allocated wins. A pod that
//! fits nowhere stays Pending with `PodScheduled=False`/`Unschedulable` and upstream's message
//! (`0/3 nodes are available: 3 Insufficient cpu. preemption: …`) and a `FailedScheduling`
//! Event, and is tried again when a node or a pod changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use serde_json::{Map, Value, json};

use super::api::{Api, pod_active};
use super::{Controller, Queue, log_failure};
use crate::object_meta::meta_str;
use crate::quantity::Quantity;
use crate::quota::{ResourceList, pod_requests};
use crate::store::ChangeType;

/// What the scheduler knows of a node.
struct NodeInfo {
    name: String,
    allocatable: ResourceList,
    labels: Map<String, Value>,
    taints: Vec<Value>,
    unschedulable: bool,
    requested: ResourceList,
    pods: usize,
    /// The host ports its pods hold.
    ports: Vec<HostPort>,
}

/// Why a node does not fit a pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Misfit {
    Unschedulable,
    Taint(String, String),
    Affinity,
    Ports,
    Insufficient(Vec<String>),
}

impl Misfit {
    fn reasons(&self) -> Vec<String> {
        match self {
            Self::Unschedulable => vec!["node(s) were unschedulable".into()],
            Self::Taint(k, v) => vec![format!("node(s) had untolerated taint {{{k}: {v}}}")],
            Self::Affinity => vec!["node(s) didn't match Pod's node affinity/selector".into()],
            Self::Ports => vec![NODE_PORTS_MISFIT.into()],
            Self::Insufficient(r) => r.clone(),
        }
    }

    /// Whether preempting pods could help (a lack of resources, or of free ports).
    fn preemption_may_help(&self) -> bool {
        matches!(self, Self::Insufficient(_) | Self::Ports)
    }
}

/// The scheduler's cache: nodes, where pods are and what they ask, who is waiting.
#[derive(Default)]
pub(crate) struct Scheduler {
    nodes: BTreeMap<String, NodeInfo>,
    placed: HashMap<(String, String), (String, ResourceList, Vec<HostPort>)>,
    unschedulable: BTreeSet<(String, String)>,
    retry: bool,
    turn: usize,
    /// The node names in order, kept while the set of nodes stays the same.
    order: Vec<String>,
}

impl Scheduler {
    pub(crate) fn observe_node(&mut self, node: &Value, kind: ChangeType) {
        let name = meta_str(node, "name").to_owned();
        if kind == ChangeType::Deleted {
            self.nodes.remove(&name);
            self.order.clear();
            return;
        }
        if !self.nodes.contains_key(&name) {
            self.order.clear();
        }
        let allocatable: ResourceList = node
            .pointer("/status/allocatable")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?).ok()?)))
            .collect();
        let (requested, pods, ports) =
            self.nodes.get(&name).map(|n| (n.requested.clone(), n.pods, n.ports.clone())).unwrap_or_default();
        self.nodes.insert(
            name.clone(),
            NodeInfo {
                name,
                allocatable,
                labels: node
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
                taints: node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default(),
                unschedulable: node.pointer("/spec/unschedulable") == Some(&Value::Bool(true)),
                requested,
                pods,
                ports,
            },
        );
        self.retry = true;
    }

    /// Pod `key` changed: on `node` (empty: not bound), `finished` or not. `demand` reads what
    /// it asks for (its requests and host ports), when the scheduler did not place it itself.
    pub(crate) fn observe_pod(
        &mut self,
        key: (String, String),
        node: &str,
        finished: bool,
        kind: ChangeType,
        demand: impl FnOnce() -> (ResourceList, Vec<HostPort>),
    ) {
        let holds = kind != ChangeType::Deleted && !node.is_empty() && !finished;
        if holds {
            self.unschedulable.remove(&key);
            if !self.placed.contains_key(&key) {
                let (wants, ports) = demand();
                self.place(key, node, wants, ports);
            }
        } else {
            if kind == ChangeType::Deleted {
                self.unschedulable.remove(&key);
            }
            if let Some((node, wants, ports)) = self.placed.remove(&key) {
                if let Some(n) = self.nodes.get_mut(&node) {
                    n.requested = add(&n.requested, &wants, -1);
                    n.pods = n.pods.saturating_sub(1);
                    for p in &ports {
                        if let Some(i) = n.ports.iter().position(|q| q == p) {
                            n.ports.swap_remove(i);
                        }
                    }
                }
                self.retry = true;
            }
        }
    }

    /// Counts the pod's requests and host ports against its node.
    fn place(&mut self, key: (String, String), node: &str, wants: ResourceList, ports: Vec<HostPort>) {
        if let Some(n) = self.nodes.get_mut(node) {
            n.requested = add(&n.requested, &wants, 1);
            n.pods += 1;
            n.ports.extend(ports.iter().cloned());
        }
        self.placed.insert(key, (node.to_owned(), wants, ports));
    }

    /// Whether waiting pods should be tried again (something freed room or a node changed).
    pub(crate) fn retry_due(&mut self) -> bool {
        std::mem::take(&mut self.retry) && !self.unschedulable.is_empty()
    }

    pub(crate) fn unschedulable(&self) -> Vec<(String, String)> {
        self.unschedulable.iter().cloned().collect()
    }

    /// Schedules each queued pod that still waits.
    pub(crate) fn schedule(&mut self, api: &Api<'_>, queue: &Queue) {
        for (ns, name) in queue {
            let Some(pod) = api.get(api.defs.pods, ns, name) else { continue };
            let scheduler = pod.pointer("/spec/schedulerName").and_then(Value::as_str).unwrap_or("");
            let gated =
                pod.pointer("/spec/schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty());
            let bound = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
            if bound
                || gated
                || !pod_active(&pod)
                || !(scheduler.is_empty() || scheduler == "default-scheduler")
            {
                continue;
            }
            let wants = pod_requests(pod.get("spec").unwrap_or(&Value::Null));
            match self.pick(&pod, &wants) {
                Ok(node) => {
                    let binding =
                        json!({ "metadata": { "name": name }, "target": { "kind": "Node", "name": node } });
                    match crate::actions::bind(api.store, ns, name, &binding) {
                        Ok(_) => {
                            // Assumed on its node at once, as upstream's scheduler cache does:
                            // the next pod of this round must not be offered the same room.
                            let key = (ns.clone(), name.clone());
                            self.unschedulable.remove(&key);
                            self.place(key, &node, wants, host_ports(&pod));
                            api.event(
                                api.defs.pods,
                                &pod,
                                false,
                                "Scheduled",
                                &format!("Successfully assigned {ns}/{name} to {node}"),
                                "default-scheduler",
                            );
                        }
                        Err(e) => log_failure(Controller::Scheduler, name, &e),
                    }
                }
                Err(message) => {
                    self.unschedulable.insert((ns.clone(), name.clone()));
                    self.refuse(api, &pod, &message);
                }
            }
        }
    }

    /// The node for the pod, or upstream's message of why there is none.
    fn pick(&mut self, pod: &Value, wants: &ResourceList) -> Result<String, String> {
        let total = self.nodes.len();
        if total == 0 {
            return Err("no nodes available to schedule pods".into());
        }
        // Upstream stops looking once it has enough feasible nodes (`percentageOfNodesToScore`).
        let adaptive = 50usize.saturating_sub(total / 125).max(5);
        let enough = (total * adaptive / 100).max(100);
        if self.order.len() != total {
            self.order = self.nodes.keys().cloned().collect();
        }
        // What the pod asks of a node is read once, not once per node looked at.
        let placement = Placement::of(pod);
        let start = self.turn % total;
        let mut best: Option<(f64, &String)> = None;
        let mut feasible = 0;
        let mut misfits: BTreeMap<String, usize> = BTreeMap::new();
        let mut helpless = 0;
        // From the node whose turn it is, round the ring, without a lookup per node.
        let first = self.order[start].as_str();
        let from = (Bound::Included(first), Bound::Unbounded);
        let before = (Bound::Unbounded, Bound::Excluded(first));
        let ring = self.nodes.range::<str, _>(from).chain(self.nodes.range::<str, _>(before));
        for (name, node) in ring {
            match fits(&placement, wants, node) {
                Ok(score) => {
                    feasible += 1;
                    if best.is_none_or(|(s, _)| score > s) {
                        best = Some((score, name));
                    }
                    if feasible >= enough {
                        break;
                    }
                }
                Err(m) => {
                    helpless += usize::from(!m.preemption_may_help());
                    for r in m.reasons() {
                        *misfits.entry(r).or_default() += 1;
                    }
                }
            }
        }
        self.turn = self.turn.wrapping_add(1);
        if let Some((_, name)) = best {
            return Ok(name.clone());
        }
        let mut reasons: Vec<String> = misfits.iter().map(|(r, n)| format!("{n} {r}")).collect();
        reasons.sort();
        let mut preemption = Vec::new();
        if helpless > 0 {
            preemption.push(format!("{helpless} Preemption is not helpful for scheduling"));
        }
        if total > helpless {
            preemption.push(format!("{} No preemption victims found for incoming pod", total - helpless));
        }
        preemption.sort();
        Err(format!(
            "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {}.",
            reasons.join(", "),
            preemption.join(", ")
        ))
    }

    /// Writes `PodScheduled=False` and a `FailedScheduling` Event, once per message.
    fn refuse(&self, api: &Api<'_>, pod: &Value, message: &str) {
        let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c["type"] == "PodScheduled" && c["status"] == "False" && c["message"] == message)
        {
            return;
        }
        let mut kept: Vec<Value> = conditions.into_iter().filter(|c| c["type"] != "PodScheduled").collect();
        kept.push(json!({
            "type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": api.clock.rfc3339(), "reason": "Unschedulable", "message": message,
        }));
        status["conditions"] = json!(kept);
        match api.write_status(api.defs.pods, pod, status, "kube-scheduler") {
            Ok(()) => api.event(api.defs.pods, pod, true, "FailedScheduling", message, "default-scheduler"),
            Err(e) => log_failure(Controller::Scheduler, meta_str(pod, "name"), &e),
        }
    }
}

/// `a + sign·b`, per resource.
fn add(a: &ResourceList, b: &ResourceList, sign: i64) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        let have = out.get(k).copied().unwrap_or_else(Quantity::zero);
        out.insert(k.clone(), if sign > 0 { have + *v } else { have - *v });
    }
    out
}

/// The filters, in upstream's order; the node's least-allocated score when it fits.
fn fits(placement: &Placement<'_>, wants: &ResourceList, node: &NodeInfo) -> Result<f64, Misfit> {
    let tolerations = &placement.tolerations;
    if node.unschedulable
        && !tolerates(
            tolerations,
            &json!({ "key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule" }),
        )
    {
        return Err(Misfit::Unschedulable);
    }
    if let Some(t) = node
        .taints
        .iter()
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .find(|t| !tolerates(tolerations, t))
    {
        let text = |k: &str| t[k].as_str().unwrap_or("").to_owned();
        return Err(Misfit::Taint(text("key"), text("value")));
    }
    if !placement.admits(&node.labels, &node.name) {
        return Err(Misfit::Affinity);
    }
    if placement.ports.iter().any(|p| ports_conflict(p, &node.ports)) {
        return Err(Misfit::Ports);
    }
    let mut short = Vec::new();
    let left = |r: &str| {
        let have = node.allocatable.get(r).copied().unwrap_or_else(Quantity::zero);
        have - node.requested.get(r).copied().unwrap_or_else(Quantity::zero)
    };
    let after = Quantity::count(i64::try_from(node.pods).unwrap_or(i64::MAX).saturating_add(1));
    if node.allocatable.get("pods").is_some_and(|allowed| after > *allowed) {
        short.push("Too many pods".to_owned());
    }
    for (r, q) in wants {
        if q.is_zero() || r == "pods" {
            continue;
        }
        if *q > left(r) {
            short.push(format!("Insufficient {r}"));
        }
    }
    if !short.is_empty() {
        return Err(Misfit::Insufficient(short));
    }
    // LeastAllocated over cpu and memory: the share of each left after the pod, averaged.
    let share = |r: &str| {
        let total = node.allocatable.get(r).map_or(0.0, |q| q.to_f64());
        if total <= 0.0 {
            return 0.0;
        }
        let after = left(r).to_f64() - wants.get(r).map_or(0.0, |q| q.to_f64());
        (after / total).max(0.0)
    };
    Ok(f64::midpoint(share("cpu"), share("memory")))
}

/// A host port a container asks for: (protocol, host IP, port).
pub(crate) type HostPort = (String, String, i64);

/// The `NodePorts` filter's reason, which the kubelet's admission gives too.
pub(crate) const NODE_PORTS_MISFIT: &str = "node(s) didn't have free ports for the requested pod ports";

/// The host ports a pod's containers ask for (upstream's `getContainerPorts`: its containers',
/// not its init containers'), as (protocol, host IP, port), the IP `0.0.0.0` when not given.
pub(crate) fn host_ports(pod: &Value) -> Vec<HostPort> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .filter_map(|p| {
            let port = p["hostPort"].as_i64().filter(|p| *p > 0)?;
            let protocol = p["protocol"].as_str().unwrap_or("TCP").to_owned();
            let ip = p["hostIP"].as_str().filter(|ip| !ip.is_empty()).unwrap_or("0.0.0.0").to_owned();
            Some((protocol, ip, port))
        })
        .collect()
}

/// Whether `want` conflicts with `used` (upstream's `HostPortInfo.CheckConflict`): the same
/// protocol and port on the same address, `0.0.0.0` taking every address.
pub(crate) fn ports_conflict(want: &HostPort, used: &[HostPort]) -> bool {
    let (protocol, ip, port) = want;
    used.iter().any(|(p, i, n)| p == protocol && n == port && (i == ip || i == "0.0.0.0" || ip == "0.0.0.0"))
}

/// Whether one of the tolerations tolerates the taint (`Toleration.ToleratesTaint`).
fn tolerates(tolerations: &[&Value], taint: &Value) -> bool {
    tolerations.iter().any(|t| {
        let effect_ok =
            t["effect"].as_str().is_none_or(|e| e.is_empty() || Some(e) == taint["effect"].as_str());
        let key = t["key"].as_str().unwrap_or("");
        let key_ok =
            key.is_empty() && t["operator"] == "Exists" || key == taint["key"].as_str().unwrap_or("");
        let value_ok = match t["operator"].as_str() {
            Some("Exists") => true,
            _ => t["value"].as_str().unwrap_or("") == taint["value"].as_str().unwrap_or(""),
        };
        effect_ok && key_ok && value_ok
    })
}

/// Whether a pod of this spec may run on `node` as far as the node's labels and taints go
/// (what the DaemonSet controller asks before it makes a node's pod).
pub(crate) fn node_admits(pod: &Value, node: &Value) -> bool {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    let placement = Placement::of(pod);
    let taints = node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten();
    let tainted = taints
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .any(|t| !tolerates(&placement.tolerations, t));
    !tainted && placement.admits(&labels, meta_str(node, "name"))
}

/// What a pod asks of the node it runs on: the taints it tolerates, its `nodeSelector` and its
/// required node affinity terms.
struct Placement<'a> {
    ports: Vec<HostPort>,
    tolerations: Vec<&'a Value>,
    selector: Option<&'a Map<String, Value>>,
    terms: Option<&'a Vec<Value>>,
}

impl<'a> Placement<'a> {
    fn of(pod: &'a Value) -> Self {
        Self {
            ports: host_ports(pod),
            tolerations: pod
                .pointer("/spec/tolerations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect(),
            selector: pod.pointer("/spec/nodeSelector").and_then(Value::as_object),
            terms: pod
                .pointer(
                    "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
                )
                .and_then(Value::as_array),
        }
    }

    /// `nodeSelector` and `requiredDuringSchedulingIgnoredDuringExecution` node affinity: every
    /// selector label, and one of the terms (its label expressions and its `metadata.name`
    /// fields).
    fn admits(&self, labels: &Map<String, Value>, node: &str) -> bool {
        if self.selector.is_some_and(|s| s.iter().any(|(k, v)| labels.get(k) != Some(v))) {
            return false;
        }
        let Some(terms) = self.terms else { return true };
        let fields: Map<String, Value> = [("metadata.name".to_owned(), json!(node))].into_iter().collect();
        terms.iter().any(|term| {
            let exprs = term["matchExpressions"].as_array().into_iter().flatten();
            let by_field = term["matchFields"].as_array().into_iter().flatten();
            let given = exprs.clone().next().is_some() || by_field.clone().next().is_some();
            given
                && exprs.clone().all(|e| requirement_matches(e, labels))
                && by_field.clone().all(|e| requirement_matches(e, &fields))
        })
    }
}

/// One `NodeSelectorRequirement` over the node's labels.
fn requirement_matches(e: &Value, labels: &Map<String, Value>) -> bool {
    let key = e["key"].as_str().unwrap_or("");
    let have = labels.get(key).and_then(Value::as_str);
    let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let number = |s: &str| s.parse::<i64>().ok();
    match e["operator"].as_str().unwrap_or("") {
        "In" => have.is_some_and(|v| values.contains(&v)),
        "NotIn" => have.is_none_or(|v| !values.contains(&v)),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        "Gt" => {
            matches!((have.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((have.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpu: &str, pods: &str, labels: Value, taints: Value) -> NodeInfo {
        NodeInfo {
            name: "n".into(),
            allocatable: [("cpu", cpu), ("memory", "1Gi"), ("pods", pods)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), Quantity::parse(v).unwrap()))
                .collect(),
            labels: labels.as_object().cloned().unwrap_or_default(),
            taints: taints.as_array().cloned().unwrap_or_default(),
            unschedulable: false,
            requested: ResourceList::new(),
            pods: 0,
            ports: Vec::new(),
        }
    }

    fn pod(spec: Value) -> Value {
        json!({ "metadata": { "name": "p", "namespace": "default" }, "spec": spec })
    }

    #[test]
    fn a_pod_asking_more_cpu_than_any_node_has_is_told_so_as_upstream_words_it() {
        let mut s = Scheduler::default();
        for name in ["a", "b"] {
            s.nodes.insert(name.into(), node("1", "110", json!({}), json!([])));
        }
        s.nodes.insert(
            "c".into(),
            node("8", "110", json!({}), json!([{ "key": "gpu", "value": "yes", "effect": "NoSchedule" }])),
        );
        let p = pod(json!({ "containers": [{ "name": "c", "resources": { "requests": { "cpu": "2" } } }] }));
        let why = s.pick(&p, &pod_requests(&p["spec"])).unwrap_err();
        assert_eq!(
            why,
            "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: yes}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
    }

    #[test]
    fn selectors_affinity_and_tolerations_pick_the_one_node_that_fits() {
        let mut s = Scheduler::default();
        s.nodes.insert("plain".into(), node("4", "110", json!({ "zone": "a" }), json!([])));
        s.nodes.insert(
            "tainted".into(),
            node(
                "4",
                "110",
                json!({ "zone": "b", "disk": "ssd" }),
                json!([{ "key": "dedicated", "effect": "NoSchedule" }]),
            ),
        );
        let p = pod(json!({
            "nodeSelector": { "disk": "ssd" },
            "tolerations": [{ "key": "dedicated", "operator": "Exists" }],
            "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                { "matchExpressions": [{ "key": "zone", "operator": "In", "values": ["b"] }] }
            ] } } },
            "containers": [{ "name": "c" }],
        }));
        assert_eq!(s.pick(&p, &ResourceList::new()).unwrap(), "tainted");
    }

    #[test]
    fn host_ports_conflict_on_protocol_and_port_with_0_0_0_0_taking_every_address() {
        let port = |protocol: &str, ip: &str, n: i64| (protocol.to_owned(), ip.to_owned(), n);
        let used = [port("TCP", "0.0.0.0", 80), port("UDP", "10.0.0.1", 53)];
        assert!(ports_conflict(&port("TCP", "127.0.0.1", 80), &used));
        assert!(!ports_conflict(&port("UDP", "127.0.0.1", 80), &used));
        assert!(ports_conflict(&port("UDP", "0.0.0.0", 53), &used));
        assert!(!ports_conflict(&port("UDP", "10.0.0.2", 53), &used));
        let mut s = Scheduler::default();
        s.nodes.insert("n".into(), node("4", "110", json!({}), json!([])));
        s.nodes.get_mut("n").unwrap().ports = used.to_vec();
        let p = pod(
            json!({ "containers": [{ "name": "c", "ports": [{ "containerPort": 8080, "hostPort": 80 }] }] }),
        );
        assert_eq!(host_ports(&p), [port("TCP", "0.0.0.0", 80)]);
        assert_eq!(
            s.pick(&p, &ResourceList::new()).unwrap_err(),
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        );
    }

    #[test]
    fn a_full_node_has_too_many_pods_and_the_least_allocated_wins() {
        let mut s = Scheduler::default();
        s.nodes.insert("full".into(), node("4", "1", json!({}), json!([])));
        s.nodes.get_mut("full").unwrap().pods = 1;
        s.nodes.insert("busy".into(), node("4", "110", json!({}), json!([])));
        s.nodes.get_mut("busy").unwrap().requested.insert("cpu".into(), Quantity::parse("3").unwrap());
        s.nodes.insert("idle".into(), node("4", "110", json!({}), json!([])));
        let p =
            pod(json!({ "containers": [{ "name": "c", "resources": { "requests": { "cpu": "500m" } } }] }));
        assert_eq!(s.pick(&p, &pod_requests(&p["spec"])).unwrap(), "idle");
        let none = pod(json!({ "nodeSelector": { "x": "y" }, "containers": [{ "name": "c" }] }));
        let why = s.pick(&none, &ResourceList::new()).unwrap_err();
        assert_eq!(
            why,
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        );
        s.nodes.remove("idle");
        s.nodes.remove("busy");
        let why = s.pick(&p, &pod_requests(&p["spec"])).unwrap_err();
        assert!(why.starts_with("0/1 nodes are available: 1 Too many pods."), "{why}");
    }
}
