//! v1 Service, as upstream's `pkg/registry/core/service` strategy and `ValidateService` in the
//! parts a user meets first: the port defaults, the cluster IP an update leaves out kept (the
//! allocator, [`super::service_allocation`], gives new ones); ports required (except for ExternalName and headless Services),
//! each in 1–65535 with a known protocol and a target port in range, named when there are
//! several; a known type; `clusterIP` immutable.

use serde_json::{Value, json};

use crate::go_print::go_quote;
use crate::status::FieldError;

/// The ports of a spec, each as an object.
fn ports_mut(
    spec: &mut serde_json::Map<String, Value>,
) -> impl Iterator<Item = &mut serde_json::Map<String, Value>> {
    spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

/// The service range a single-stack IPv4 cluster allocates from (`--service-cluster-ip-range`).
const SERVICE_RANGE: &str = "10.96.0.0/12";

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings_at(v: &Value, pointer: &str) -> Option<Vec<String>> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|s| s.as_str().unwrap_or("").to_owned()).collect())
}

fn absent(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty))
}

/// The defaults the API server fills in for a v1 Service (`SetDefaults_Service`), with what the
/// strategy and the registry's allocator add before validating (`NormalizeClusterIPs`, the IP
/// family fields); the addresses and node ports themselves are given under the store's lock
/// ([`super::service_allocation`]).
pub fn default(svc: &mut Value) {
    // A Go Service always has a spec to default, given or not.
    let Some(spec) =
        svc.as_object_mut().and_then(|o| o.entry("spec").or_insert_with(|| json!({})).as_object_mut())
    else {
        return;
    };
    let ty = spec.entry("type").or_insert_with(|| json!("ClusterIP")).as_str().unwrap_or("").to_owned();
    let affinity =
        spec.entry("sessionAffinity").or_insert_with(|| json!("None")).as_str().unwrap_or("").to_owned();
    match affinity.as_str() {
        "ClientIP" => {
            let config = spec.entry("sessionAffinityConfig").or_insert_with(|| json!({}));
            if let Some(c) = config.as_object_mut() {
                let client = c.entry("clientIP").or_insert_with(|| json!({}));
                if let Some(ci) = client.as_object_mut() {
                    ci.entry("timeoutSeconds").or_insert(json!(10800));
                }
            }
        }
        "None" => {
            spec.remove("sessionAffinityConfig");
        }
        _ => {}
    }
    // `NormalizeClusterIPs` on create: the singular field fills the plural one.
    if !absent(spec.get("clusterIP")) && absent(spec.get("clusterIPs")) {
        let ip = spec["clusterIP"].clone();
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    if ty != "ExternalName" {
        let ips: Vec<String> = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|s| s.as_str().unwrap_or("").to_owned()).collect())
            .unwrap_or_default();
        // The allocator infers the families of the IPs it was given; an IPv6 one is left for it
        // to refuse (the cluster is IPv4 only).
        if absent(spec.get("ipFamilies")) && ips.iter().all(|ip| ip == "None" || !crate::netaddr::is_ipv6(ip))
        {
            spec.insert("ipFamilies".into(), json!(["IPv4"]));
        }
        spec.entry("ipFamilyPolicy").or_insert_with(|| json!("SingleStack"));
        spec.entry("internalTrafficPolicy").or_insert_with(|| json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts").or_insert(json!(true));
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") && absent(spec.get("externalTrafficPolicy")) {
        spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
    }
    for p in ports_mut(spec) {
        p.entry("protocol").or_insert_with(|| json!("TCP"));
        if let Some(port) = p.get("port").cloned() {
            let unset = p
                .get("targetPort")
                .is_none_or(|t| t.is_null() || t.as_i64() == Some(0) || t.as_str() == Some(""));
            if unset {
                p.insert("targetPort".into(), port);
            }
        }
    }
    let status = svc.as_object_mut().expect("an object").entry("status").or_insert_with(|| json!({}));
    if let Some(s) = status.as_object_mut() {
        let lb = s.entry("loadBalancer").or_insert_with(|| json!({}));
        if ty == "LoadBalancer" {
            for ing in lb.get_mut("ingress").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(i) = ing.as_object_mut()
                    && i.get("ip").and_then(Value::as_str).is_some_and(|ip| !ip.is_empty())
                    && i.get("ipMode").is_none_or(Value::is_null)
                {
                    i.insert("ipMode".into(), json!("VIP"));
                }
            }
        }
    }
}

/// An update keeps what the old Service was allocated when the new one leaves it out, as
/// upstream's service storage does before validating (`patchAllocatedValues`): its cluster IP and
/// cluster IPs, each on its own, when both types need one; its node ports and health-check node
/// port when both types use them; then `NormalizeClusterIPs`
/// brings the plural field in line with a changed singular one.
pub fn prepare_update(new: &mut Value, old: &Value) {
    let needs_ip = |s: &Value| s.pointer("/spec/type").and_then(Value::as_str) != Some("ExternalName");
    let both_need_ip = needs_ip(new) && needs_ip(old);
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let empty = |v: Option<&Value>| v.is_none_or(|ip| ip.as_str().is_some_and(str::is_empty) || ip.is_null());
    let no_ips = |v: Option<&Value>| v.is_none_or(|ips| ips.as_array().is_none_or(Vec::is_empty));
    if both_need_ip {
        // Each of the two is restored on its own when the request leaves it out.
        if empty(spec.get("clusterIP"))
            && let Some(v) = old.pointer("/spec/clusterIP")
        {
            spec.insert("clusterIP".into(), v.clone());
        }
        if no_ips(spec.get("clusterIPs"))
            && let Some(v) = old.pointer("/spec/clusterIPs").filter(|v| !no_ips(Some(v)))
        {
            spec.insert("clusterIPs".into(), v.clone());
        }
    }
    // `NormalizeClusterIPs` on update: the singular field changed and the plural did not.
    if spec.get("clusterIP") != old.pointer("/spec/clusterIP")
        && spec.get("clusterIPs") == old.pointer("/spec/clusterIPs")
    {
        match spec.get("clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()) {
            Some(ip) => {
                let ip = json!([ip]);
                spec.insert("clusterIPs".into(), ip);
            }
            None => {
                spec.remove("clusterIPs");
            }
        }
    }
    let new_spec = Value::Object(spec.clone());
    let old_spec = old.get("spec").cloned().unwrap_or_default();
    let old_ports = old_spec.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    if needs_node_ports(&old_spec) && needs_node_ports(&new_spec) {
        for p in ports_mut(spec) {
            if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let was = old_ports.iter().find(|o| {
                o.get("port") == p.get("port")
                    && o.get("protocol") == p.get("protocol").or(Some(&json!("TCP")))
            });
            if let Some(np) = was.and_then(|o| o.get("nodePort")).filter(|n| n.as_i64().unwrap_or(0) != 0) {
                p.insert("nodePort".into(), np.clone());
            }
        }
    }
    if needs_health_check(&old_spec)
        && needs_health_check(&new_spec)
        && spec.get("healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0) == 0
        && let Some(h) = old_spec.get("healthCheckNodePort")
    {
        spec.insert("healthCheckNodePort".into(), h.clone());
    }
    drop_type_dependent_fields(spec, &old_spec);
}

/// Whether a spec's type allocates node ports (`needsNodePort`).
pub(super) fn needs_node_ports(spec: &Value) -> bool {
    match str_at(spec, "/type") {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    }
}

/// Whether a spec needs a health-check node port (`NeedsHealthCheck`): a LoadBalancer with the
/// `Local` external policy.
pub(super) fn needs_health_check(spec: &Value) -> bool {
    str_at(spec, "/type") == "LoadBalancer" && str_at(spec, "/externalTrafficPolicy") == "Local"
}

/// The strategy's `dropTypeDependentFields`: a change of type drops what the old type had
/// allocated or defaulted and the new one does not use, when the request left it as it was
/// (cluster IPs and IP families for ExternalName, node ports, the health-check node port,
/// `allocateLoadBalancerNodePorts`, `loadBalancerClass`, the external traffic policy).
fn drop_type_dependent_fields(spec: &mut serde_json::Map<String, Value>, old: &Value) {
    let new = Value::Object(spec.clone());
    let same = |key: &str| new.get(key) == old.get(key);
    let needs_ip = |s: &Value| str_at(s, "/type") != "ExternalName";
    if needs_ip(old) && !needs_ip(&new) {
        if same("clusterIP") && same("clusterIPs") {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        for key in ["ipFamilies", "ipFamilyPolicy"] {
            if same(key) {
                spec.remove(key);
            }
        }
    }
    let node_ports = |s: &Value| -> Vec<Value> {
        s.get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| p.get("nodePort").cloned().unwrap_or(json!(0)))
            .collect()
    };
    if needs_node_ports(old) && !needs_node_ports(&new) && node_ports(old) == node_ports(&new) {
        for p in ports_mut(spec) {
            p.remove("nodePort");
        }
    }
    if needs_health_check(old) && !needs_health_check(&new) && same("healthCheckNodePort") {
        spec.remove("healthCheckNodePort");
    }
    let was_lb = str_at(old, "/type") == "LoadBalancer";
    if was_lb && str_at(&new, "/type") != "LoadBalancer" {
        for key in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if same(key) {
                spec.remove(key);
            }
        }
    }
    let external = |s: &Value| {
        matches!(str_at(s, "/type"), "LoadBalancer" | "NodePort")
            || (str_at(s, "/type") == "ClusterIP"
                && s.get("externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
    };
    if external(old) && !external(&new) && same("externalTrafficPolicy") {
        spec.remove("externalTrafficPolicy");
    }
}

/// The types a Service may have (`supportedServiceType`, sorted).
const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// The kubelet's port, which a LoadBalancer may not expose (`ports.KubeletPort`).
const KUBELET_PORT: i64 = 10250;

/// A Service's rules, as upstream's registry and strategy apply them: on a `/status` write (the
/// only one that changes the status) `ValidateServiceStatusUpdate`; otherwise the allocator's
/// checks first (they refuse alone), then `ValidateServiceUpdate`'s and `ValidateService`'s.
pub fn validate(new: &Value, old: Option<&Value>) -> Vec<FieldError> {
    if let Some(old) = old
        && new.get("status") != old.get("status")
    {
        return load_balancer_status_errors(new);
    }
    let alloc = allocator_errors(new, old);
    if !alloc.is_empty() {
        return alloc;
    }
    let mut errs = Vec::new();
    if let Some(old) = old {
        errs.extend(upgrade_downgrade_cluster_ips(old, new));
        errs.extend(load_balancer_class_errors(Some(old), new));
        errs.extend(external_traffic_fields_update(old, new));
    }
    errs.extend(validate_service(new));
    errs
}

fn is_headless(spec: &Value) -> bool {
    str_at(spec, "/clusterIP") == "None"
}

/// `ValidateService`, in upstream's order.
fn validate_service(svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let annotations = svc.pointer("/metadata/annotations");
    let hints =
        annotations.and_then(|a| a.get("service.kubernetes.io/topology-aware-hints")).and_then(Value::as_str);
    let mode = annotations.and_then(|a| a.get("service.kubernetes.io/topology-mode")).and_then(Value::as_str);
    if let (Some(hints), Some(mode)) = (hints, mode)
        && hints != mode
    {
        errs.push((
            "metadata.annotations[service.kubernetes.io/topology-mode]".into(),
            format!(
                "Invalid value: {}: must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified",
                go_quote(mode)
            ),
        ));
    }
    let spec = svc.get("spec").cloned().unwrap_or_default();
    let ports = spec.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let headless = is_headless(&spec);
    let ty = str_at(&spec, "/type");
    if ports.is_empty() && ty != "ExternalName" && !headless {
        errs.push(("spec.ports".into(), "Required value".into()));
    }
    let first_ip = spec.pointer("/clusterIPs/0").and_then(Value::as_str).unwrap_or("None");
    match ty {
        "LoadBalancer" => {
            for (i, p) in ports.iter().enumerate() {
                if p.get("port").and_then(Value::as_i64) == Some(KUBELET_PORT) {
                    errs.push((
                        format!("spec.ports[{i}]"),
                        format!("Invalid value: {KUBELET_PORT}: may not expose port {KUBELET_PORT} externally since it is used by kubelet"),
                    ));
                }
            }
            if headless {
                errs.push((
                    "spec.clusterIPs[0]".into(),
                    format!(
                        "Invalid value: {}: may not be set to 'None' for LoadBalancer services",
                        go_quote(first_ip)
                    ),
                ));
            }
        }
        "NodePort" if headless => errs.push((
            "spec.clusterIPs[0]".into(),
            format!("Invalid value: {}: may not be set to 'None' for NodePort services", go_quote(first_ip)),
        )),
        "ExternalName" => {
            if !absent(spec.get("clusterIPs")) {
                errs.push((
                    "spec.clusterIPs".into(),
                    "Forbidden: may not be set for ExternalName services".into(),
                ));
            }
            if !absent(spec.get("ipFamilies")) {
                errs.push((
                    "spec.ipFamilies".into(),
                    "Forbidden: may not be set for ExternalName services".into(),
                ));
            }
            if spec.get("ipFamilyPolicy").is_some_and(|p| !p.is_null()) {
                errs.push((
                    "spec.ipFamilyPolicy".into(),
                    "Forbidden: may not be set for ExternalName services".into(),
                ));
            }
            let name = str_at(&spec, "/externalName");
            let cname = name.strip_suffix('.').unwrap_or(name);
            if cname.is_empty() {
                errs.push(("spec.externalName".into(), "Required value".into()));
            } else {
                errs.extend(crate::names::subdomain_field("spec.externalName", cname));
            }
        }
        _ => {}
    }
    let mut names = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        errs.extend(port_errors(p, ports.len() > 1, &mut names, &format!("spec.ports[{i}]")));
    }
    if spec.get("selector").is_some_and(|s| !s.is_null()) {
        errs.extend(crate::label_rules::label_map_errors(spec.get("selector"), "spec.selector"));
    }
    let affinity = str_at(&spec, "/sessionAffinity");
    match affinity {
        "" => errs.push(("spec.sessionAffinity".into(), "Required value".into())),
        "ClientIP" | "None" => {}
        other => errs.push(crate::field_errors::not_supported(
            "spec.sessionAffinity",
            other,
            &["ClientIP", "None"],
        )),
    }
    if affinity == "ClientIP" {
        errs.extend(client_ip_affinity_errors(spec.get("sessionAffinityConfig")));
    } else if affinity == "None" && spec.get("sessionAffinityConfig").is_some_and(|c| !c.is_null()) {
        errs.push((
            "spec.sessionAffinityConfig".into(),
            "Forbidden: must not be set when session affinity is None".into(),
        ));
    }
    errs.extend(cluster_ips_related_errors(&spec));
    for (i, ip) in spec.get("externalIPs").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        let at = format!("spec.externalIPs[{i}]");
        let bad = crate::netaddr::ip_errors(&at, ip);
        if bad.is_empty() {
            errs.extend(crate::netaddr::non_special_ip_errors(&at, ip));
        } else {
            errs.extend(bad);
        }
    }
    if ty.is_empty() {
        errs.push(("spec.type".into(), "Required value".into()));
    } else if !TYPES.contains(&ty) {
        errs.push(crate::field_errors::not_supported("spec.type", ty, &TYPES));
    }
    let node_port = |p: &Value| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if node_port(p) != 0 {
                errs.push((
                    format!("spec.ports[{i}].nodePort"),
                    "Forbidden: may not be used when `type` is 'ClusterIP'".into(),
                ));
            }
        }
    }
    let protocol = |p: &Value| p.get("protocol").and_then(Value::as_str).unwrap_or("").to_owned();
    let mut seen_node_ports = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        if node_port(p) != 0 && !seen_node_ports.insert((protocol(p), node_port(p))) {
            errs.push((format!("spec.ports[{i}].nodePort"), format!("Duplicate value: {}", node_port(p))));
        }
    }
    let mut seen_ports = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        let proto = protocol(p);
        if !seen_ports.insert((proto.clone(), port)) {
            errs.push((
                format!("spec.ports[{i}]"),
                format!(
                    "Duplicate value: core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    go_quote(&proto)
                ),
            ));
        }
    }
    errs.extend(source_range_errors(svc, &spec, ty));
    if spec.get("allocateLoadBalancerNodePorts").is_some_and(|a| !a.is_null()) && ty != "LoadBalancer" {
        errs.push((
            "spec.allocateLoadBalancerNodePorts".into(),
            "Forbidden: may only be used when `type` is 'LoadBalancer'".into(),
        ));
    }
    if ty == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none_or(Value::is_null) {
        errs.push(("allocateLoadBalancerNodePorts".into(), "Required value".into()));
    }
    errs.extend(load_balancer_class_errors(None, svc));
    errs.extend(external_traffic_policy_errors(&spec));
    match spec.get("internalTrafficPolicy").filter(|p| !p.is_null()) {
        None if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP") => {
            errs.push(("spec.internalTrafficPolicy".into(), "Required value".into()));
        }
        Some(p) if !matches!(p.as_str(), Some("Cluster" | "Local")) => {
            errs.push(crate::field_errors::not_supported(
                "spec.internalTrafficPolicy",
                p.as_str().unwrap_or(""),
                &["Cluster", "Local"],
            ))
        }
        _ => {}
    }
    if let Some(d) = spec.get("trafficDistribution").and_then(Value::as_str)
        && d != "PreferClose"
    {
        errs.push(crate::field_errors::not_supported("spec.trafficDistribution", d, &["PreferClose"]));
    }
    errs
}

/// `validateServicePort`: a name (required when there are several) that is a unique DNS
/// label, a port in range, a known protocol, a target port number or name, a qualified
/// `appProtocol`.
fn port_errors(
    p: &Value,
    require_name: bool,
    names: &mut std::collections::HashSet<String>,
    at: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match p.get("name").and_then(Value::as_str).unwrap_or("") {
        "" if require_name => errs.push((format!("{at}.name"), "Required value".into())),
        "" => {}
        name => {
            errs.extend(crate::names::label_field(&format!("{at}.name"), name));
            if !names.insert(name.to_owned()) {
                errs.push((format!("{at}.name"), format!("Duplicate value: {}", go_quote(name))));
            }
        }
    }
    errs.extend(crate::names::port_num_field(
        &format!("{at}.port"),
        p.get("port").and_then(Value::as_i64).unwrap_or(0),
    ));
    match p.get("protocol").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push((format!("{at}.protocol"), "Required value".into())),
        "SCTP" | "TCP" | "UDP" => {}
        other => errs.push(crate::field_errors::not_supported(
            format!("{at}.protocol"),
            other,
            &["SCTP", "TCP", "UDP"],
        )),
    }
    if let Some(t) = p.get("targetPort") {
        errs.extend(crate::names::port_num_or_name(&format!("{at}.targetPort"), t));
    }
    if let Some(a) = p.get("appProtocol").and_then(Value::as_str) {
        errs.extend(crate::names::qualified_field(&format!("{at}.appProtocol"), a));
    }
    errs
}

/// `validateClientIPAffinityConfig` and `validateAffinityTimeout`.
fn client_ip_affinity_errors(config: Option<&Value>) -> Vec<FieldError> {
    let why = "Required value: when session affinity type is ClientIP";
    let at = "spec.sessionAffinityConfig";
    let Some(config) = config.filter(|c| !c.is_null()) else { return vec![(at.into(), why.into())] };
    let Some(client) = config.get("clientIP").filter(|c| !c.is_null()) else {
        return vec![(format!("{at}.clientIP"), why.into())];
    };
    match client.get("timeoutSeconds").and_then(Value::as_i64) {
        None => vec![(format!("{at}.clientIP.timeoutSeconds"), why.into())],
        Some(t) if t <= 0 || t > 86400 => vec![(
            format!("{at}.clientIP.timeoutSeconds"),
            format!("Invalid value: {t}: must be greater than 0 and less than 86400"),
        )],
        Some(_) => Vec::new(),
    }
}

/// `ValidateServiceClusterIPsRelatedFields`: `clusterIP` and `clusterIPs` agree, families and
/// the policy are known ones, the IPs are IPs (at most two, one per family) of their families.
fn cluster_ips_related_errors(spec: &Value) -> Vec<FieldError> {
    if str_at(spec, "/type") == "ExternalName" {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let ips = strings_at(spec, "/clusterIPs").filter(|v| !v.is_empty());
    let shown = crate::netaddr::go_strings(ips.as_deref());
    let ips = ips.unwrap_or_default();
    let cluster_ip = str_at(spec, "/clusterIP");
    if cluster_ip.is_empty() {
        if !ips.is_empty() {
            errs.push((
                "spec.clusterIPs".into(),
                format!("Invalid value: {shown}: must be empty when `clusterIP` is not specified"),
            ));
        }
    } else if ips.is_empty() {
        errs.push(("spec.clusterIPs".into(), "Required value".into()));
    } else if ips[0] != cluster_ip {
        errs.push((
            "spec.clusterIPs".into(),
            format!("Invalid value: {shown}: first value must match `clusterIP`"),
        ));
    }
    let families = strings_at(spec, "/ipFamilies").unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (i, f) in families.iter().enumerate() {
        if !matches!(f.as_str(), "IPv4" | "IPv6") {
            errs.push(crate::field_errors::not_supported(
                format!("spec.ipFamilies[{i}]"),
                f,
                &["IPv4", "IPv6"],
            ));
        }
        if !seen.insert(f.clone()) {
            errs.push((format!("spec.ipFamilies[{i}]"), format!("Duplicate value: {}", go_quote(f))));
        }
    }
    if let Some(p) = spec.get("ipFamilyPolicy").filter(|p| !p.is_null()) {
        let p = p.as_str().unwrap_or("");
        if !matches!(p, "PreferDualStack" | "RequireDualStack" | "SingleStack") {
            errs.push(crate::field_errors::not_supported(
                "spec.ipFamilyPolicy",
                p,
                &["PreferDualStack", "RequireDualStack", "SingleStack"],
            ));
        }
    }
    let mut invalid_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                invalid_ips = true;
                errs.push((
                    "spec.clusterIPs".into(),
                    format!("Invalid value: {shown}: 'None' must be the first and only value"),
                ));
            }
            continue;
        }
        let bad = crate::netaddr::ip_errors(&format!("spec.clusterIPs[{i}]"), ip);
        invalid_ips |= !bad.is_empty();
        errs.extend(bad);
    }
    if ips.len() > 2 {
        errs.push((
            "spec.clusterIPs".into(),
            format!("Invalid value: {shown}: may only hold up to 2 values"),
        ));
    }
    if invalid_ips {
        return errs;
    }
    if ips.len() > 1 {
        let v6 = ips.iter().filter(|ip| crate::netaddr::is_ipv6(ip)).count();
        let dual = ips.len() == 2 && v6 == 1;
        if !dual {
            errs.push((
                "spec.clusterIPs".into(),
                format!("Invalid value: {shown}: may specify no more than one IP for each IP family"),
            ));
        }
    }
    if !is_headless(spec) {
        for (i, (ip, family)) in ips.iter().zip(&families).enumerate() {
            let v6 = crate::netaddr::is_ipv6(ip);
            if family == "IPv4" && v6 {
                errs.push((
                    format!("spec.clusterIPs[{i}]"),
                    format!(
                        "Invalid value: {}: expected an IPv4 value as indicated by `ipFamilies[{i}]`",
                        go_quote(ip)
                    ),
                ));
            }
            if family == "IPv6" && !v6 {
                errs.push((
                    format!("spec.clusterIPs[{i}]"),
                    format!(
                        "Invalid value: {}: expected an IPv6 value as indicated by `ipFamilies[{i}]`",
                        go_quote(ip)
                    ),
                ));
            }
        }
    }
    errs
}

/// What the registry's allocator refuses before the strategy validates (`initIPFamilyFields`,
/// `allocIPs`, `initNodePorts` in `alloc.go`), on a single-stack IPv4 cluster with the service
/// range 10.96.0.0/12 and node ports 30000–32767. Each refusal stands alone.
fn allocator_errors(svc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = svc.get("spec").cloned().unwrap_or_default();
    let ty = str_at(&spec, "/type");
    if ty == "ExternalName" {
        return Vec::new();
    }
    let errs = cluster_ips_related_errors(&spec);
    if !errs.is_empty() {
        return errs;
    }
    let policy = spec.get("ipFamilyPolicy").and_then(Value::as_str).unwrap_or("SingleStack");
    let ips = strings_at(&spec, "/clusterIPs").unwrap_or_default();
    let families = strings_at(&spec, "/ipFamilies").unwrap_or_default();
    let one = |field: &str, msg: String| vec![(field.to_owned(), msg)];
    if ips.len() > 1 && policy == "SingleStack" {
        return one(
            "spec.ipFamilyPolicy",
            format!(
                "Invalid value: {}: must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
                go_quote(policy)
            ),
        );
    }
    if families.len() > 1 && policy == "SingleStack" {
        return one(
            "spec.ipFamilyPolicy",
            format!(
                "Invalid value: {}: must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
                go_quote(policy)
            ),
        );
    }
    if !is_headless(&spec) {
        for (i, ip) in ips.iter().enumerate() {
            if i >= families.len() && crate::netaddr::is_ipv6(ip) {
                return one(
                    &format!("spec.clusterIPs[{i}]"),
                    format!(
                        "Invalid value: {}: IPv6 is not configured on this cluster",
                        crate::netaddr::go_strings(Some(&ips))
                    ),
                );
            }
        }
    }
    if policy == "RequireDualStack" {
        return one(
            "spec.ipFamilyPolicy",
            format!(
                "Invalid value: {}: this cluster is not configured for dual-stack services",
                go_quote(policy)
            ),
        );
    }
    for (i, f) in families.iter().enumerate() {
        if f != "IPv4" {
            return one(
                &format!("spec.ipFamilies[{i}]"),
                format!("Invalid value: {}: not configured on this cluster", go_quote(f)),
            );
        }
    }
    if old.is_none() {
        let range = crate::netaddr::network(SERVICE_RANGE).expect("the service range is a CIDR");
        for ip in ips.iter().filter(|ip| *ip != "None") {
            let inside = crate::netaddr::network(&format!("{ip}/32"))
                .is_some_and(|(bits, _, v4)| v4 && (bits >> (32 - range.1)) == (range.0 >> (32 - range.1)));
            if !inside {
                return one(
                    "spec.clusterIPs",
                    format!(
                        "Invalid value: {}: failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {SERVICE_RANGE}",
                        crate::netaddr::go_strings(Some(&ips))
                    ),
                );
            }
        }
    }
    if old.is_none() && matches!(ty, "NodePort" | "LoadBalancer") {
        let mut taken: Vec<(i64, i64)> = Vec::new();
        for (i, p) in spec.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let np = p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            // An unset one is given later, by the allocator (`service_allocation`).
            if np == 0 {
                continue;
            }
            if taken.iter().any(|(q, n)| *q == port && *n == np) {
                continue;
            }
            let at = format!("spec.ports[{i}].nodePort");
            if !(30000..=32767).contains(&np) {
                return one(
                    &at,
                    format!(
                        "Invalid value: {np}: provided port is not in the valid range. The range of valid ports is 30000-32767"
                    ),
                );
            }
            if taken.iter().any(|(_, n)| *n == np) {
                return one(&at, format!("Invalid value: {np}: provided port is already allocated"));
            }
            taken.push((port, np));
        }
    }
    Vec::new()
}

/// `validateUpgradeDowngradeClusterIPs`: the primary cluster IP never changes (ExternalName and
/// headless Services aside).
fn upgrade_downgrade_cluster_ips(old: &Value, new: &Value) -> Vec<FieldError> {
    if str_at(new, "/spec/type") == "ExternalName" || str_at(old, "/spec/type") == "ExternalName" {
        return Vec::new();
    }
    let (Some(os), Some(ns)) = (old.get("spec"), new.get("spec")) else { return Vec::new() };
    if is_headless(os) && is_headless(ns) {
        return Vec::new();
    }
    let old_ips = strings_at(os, "/clusterIPs").unwrap_or_default();
    let new_list = strings_at(ns, "/clusterIPs").filter(|v| !v.is_empty());
    let shown = crate::netaddr::go_strings(new_list.as_deref());
    let new_ips = new_list.unwrap_or_default();
    let mut errs = Vec::new();
    if old_ips.len() == new_ips.len() {
        for (i, ip) in old_ips.iter().enumerate() {
            if *ip != new_ips[i] {
                errs.push((
                    format!("spec.clusterIPs[{i}]"),
                    format!("Invalid value: {shown}: may not change once set"),
                ));
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.push((
                "spec.clusterIPs[0]".into(),
                format!("Invalid value: {shown}: primary clusterIP can not be unset"),
            ));
        }
    } else if !old_ips.is_empty() && old_ips[0] != new_ips[0] {
        errs.push(("spec.clusterIPs[0]".into(), format!("Invalid value: {shown}: may not change once set")));
    }
    errs
}

/// `validateLoadBalancerClassField`: fixed once a LoadBalancer has it, a qualified name, only
/// on a LoadBalancer.
fn load_balancer_class_errors(old: Option<&Value>, svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let class = svc.pointer("/spec/loadBalancerClass").filter(|c| !c.is_null());
    let lb = |s: &Value| str_at(s, "/spec/type") == "LoadBalancer";
    if let Some(old) = old
        && lb(old)
        && lb(svc)
        && old.pointer("/spec/loadBalancerClass").filter(|c| !c.is_null()) != class
    {
        let shown = class.map_or_else(|| "\"null\"".to_owned(), crate::go_print::bad_value);
        errs.push((
            "spec.loadBalancerClass".into(),
            format!("Invalid value: {shown}: may not change once set"),
        ));
    }
    if let Some(class) = class {
        if lb(svc) {
            errs.extend(crate::names::qualified_field(
                "spec.loadBalancerClass",
                class.as_str().unwrap_or(""),
            ));
        } else {
            errs.push((
                "spec.loadBalancerClass".into(),
                "Forbidden: may only be used when `type` is 'LoadBalancer'".into(),
            ));
        }
    }
    errs
}

/// The `loadBalancerSourceRanges` field, or else its annotation: only on a LoadBalancer, each a
/// CIDR (space-trimmed).
fn source_range_errors(svc: &Value, spec: &Value, ty: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let forbidden = "Forbidden: may only be used when `type` is 'LoadBalancer'";
    let ranges = strings_at(spec, "/loadBalancerSourceRanges").unwrap_or_default();
    let key = "service.beta.kubernetes.io/load-balancer-source-ranges";
    if !ranges.is_empty() {
        let at = "spec.LoadBalancerSourceRanges";
        if ty != "LoadBalancer" {
            errs.push((at.into(), forbidden.into()));
        }
        for (i, r) in ranges.iter().enumerate() {
            errs.extend(crate::netaddr::cidr_errors(&format!("{at}[{i}]"), r.trim()));
        }
    } else if let Some(val) =
        svc.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
    {
        let at = format!("metadata.annotations[{key}]");
        if ty != "LoadBalancer" {
            errs.push((at.clone(), forbidden.into()));
        }
        let val = val.trim();
        if !val.is_empty() {
            for r in val.split(',') {
                errs.extend(crate::netaddr::cidr_errors(&at, r.trim()));
            }
        }
    }
    errs
}

/// `validateServiceExternalTrafficPolicy`: the policy only for externally-accessible Services
/// and then a known one; a health-check node port exactly for LoadBalancers with the `Local`
/// policy.
fn external_traffic_policy_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = str_at(spec, "/type");
    let external = matches!(ty, "LoadBalancer" | "NodePort")
        || (ty == "ClusterIP"
            && spec.get("externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty()));
    let policy = str_at(spec, "/externalTrafficPolicy");
    if !external {
        if !policy.is_empty() {
            errs.push((
                "spec.externalTrafficPolicy".into(),
                format!(
                    "Invalid value: {}: may only be set for externally-accessible services",
                    go_quote(policy)
                ),
            ));
        }
    } else if policy.is_empty() {
        errs.push(("spec.externalTrafficPolicy".into(), "Required value".into()));
    } else if !matches!(policy, "Cluster" | "Local") {
        errs.push(crate::field_errors::not_supported(
            "spec.externalTrafficPolicy",
            policy,
            &["Cluster", "Local"],
        ));
    }
    let hc = spec.get("healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0);
    if ty == "LoadBalancer" && policy == "Local" {
        // Unset, it is given by the allocator after this (upstream gives it before, so its
        // `Required` is never met).
        if hc != 0 {
            errs.extend(crate::names::port_num_field("spec.healthCheckNodePort", hc));
        }
    } else if hc != 0 {
        errs.push((
            "spec.healthCheckNodePort".into(),
            format!("Invalid value: {hc}: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"),
        ));
    }
    errs
}

/// `validateServiceExternalTrafficFieldsUpdate`: the health-check node port is fixed while the
/// Service needs one.
fn external_traffic_fields_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let needs = |s: &Value| {
        str_at(s, "/spec/type") == "LoadBalancer" && str_at(s, "/spec/externalTrafficPolicy") == "Local"
    };
    if needs(old)
        && needs(new)
        && old.pointer("/spec/healthCheckNodePort") != new.pointer("/spec/healthCheckNodePort")
    {
        return vec![("spec.healthCheckNodePort".into(), "Forbidden: field is immutable".into())];
    }
    Vec::new()
}

/// `ValidateLoadBalancerStatus` (the `/status` write): ingress points only on a LoadBalancer
/// (`AllowServiceLBStatusOnNonLB` off), each with an IP, an `ipMode` only with an IP and a
/// known one, a hostname a DNS name and not an IP.
fn load_balancer_status_errors(svc: &Value) -> Vec<FieldError> {
    let ingress =
        svc.pointer("/status/loadBalancer/ingress").and_then(Value::as_array).cloned().unwrap_or_default();
    if str_at(svc, "/spec/type") != "LoadBalancer" && !ingress.is_empty() {
        return vec![(
            "status.loadBalancer.ingress".into(),
            "Forbidden: may only be used when `spec.type` is 'LoadBalancer'".into(),
        )];
    }
    let mut errs = Vec::new();
    for (i, ing) in ingress.iter().enumerate() {
        let at = format!("status.loadBalancer.ingress[{i}]");
        let ip = str_at(ing, "/ip");
        if !ip.is_empty() {
            errs.extend(crate::netaddr::ip_errors(&format!("{at}.ip"), ip));
        }
        match ing.get("ipMode").filter(|m| !m.is_null()) {
            None if !ip.is_empty() => {
                errs.push((
                    format!("{at}.ipMode"),
                    "Required value: must be specified when `ip` is set".into(),
                ));
            }
            Some(_) if ip.is_empty() => {
                errs.push((
                    format!("{at}.ipMode"),
                    "Forbidden: may not be specified when `ip` is not set".into(),
                ));
            }
            Some(m) if !matches!(m.as_str(), Some("Proxy" | "VIP")) => {
                errs.push(crate::field_errors::not_supported(
                    format!("{at}.ipMode"),
                    m.as_str().unwrap_or(""),
                    &["Proxy", "VIP"],
                ));
            }
            _ => {}
        }
        errs.extend(hostname_errors(&format!("{at}.hostname"), str_at(ing, "/hostname")));
    }
    errs
}

/// A load-balancer ingress point's hostname: a DNS-1123 subdomain, not an IP.
pub(crate) fn hostname_errors(field: &str, hostname: &str) -> Vec<FieldError> {
    if hostname.is_empty() {
        return Vec::new();
    }
    let mut errs = crate::names::subdomain_field(field, hostname);
    if crate::netaddr::parse_ip(hostname).is_some() {
        errs.push((
            field.to_owned(),
            format!("Invalid value: {}: must be a DNS name, not an IP address", go_quote(hostname)),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_get_an_ip_and_port_defaults() {
        let mut svc = json!({ "spec": { "ports": [{ "port": 8080 }] } });
        default(&mut svc);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        svc["spec"]["clusterIP"] = json!("10.96.1.0");
        svc["spec"]["clusterIPs"] = json!(["10.96.1.0"]);
        assert_eq!(svc["spec"]["ports"][0], json!({ "port": 8080, "protocol": "TCP", "targetPort": 8080 }));
        assert!(validate(&svc, None).is_empty());
        let mut moved = svc.clone();
        moved["spec"]["clusterIP"] = json!("10.96.0.2");
        moved["spec"]["clusterIPs"] = json!(["10.96.0.2"]);
        assert_eq!(validate(&moved, Some(&svc))[0].0, "spec.clusterIPs[0]");
        let errs =
            validate(&json!({ "spec": { "ports": [{ "port": 0 }, { "port": 1, "name": "a" }] } }), None);
        let fields: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.ports[0].name",
                "spec.ports[0].port",
                "spec.ports[0].protocol",
                "spec.ports[1].protocol",
                "spec.sessionAffinity",
                "spec.type"
            ]
        );
        // An update that leaves the cluster IP out keeps the allocated one.
        let mut update = svc.clone();
        update["spec"].as_object_mut().unwrap().remove("clusterIP");
        update["spec"].as_object_mut().unwrap().remove("clusterIPs");
        prepare_update(&mut update, &svc);
        default(&mut update);
        assert!(validate(&update, Some(&svc)).is_empty());
        assert_eq!(update["spec"]["clusterIP"], svc["spec"]["clusterIP"]);
    }

    #[test]
    fn a_type_change_drops_what_the_old_type_allocated() {
        let mut svc = json!({ "spec": { "type": "NodePort", "ports": [{ "port": 80, "nodePort": 30086 }] } });
        default(&mut svc);
        let np = 30086;
        assert!(validate(&svc, None).is_empty(), "{:?}", validate(&svc, None));
        // Back to ClusterIP with the node port as it was: dropped, not refused.
        let mut back = svc.clone();
        back["spec"]["type"] = json!("ClusterIP");
        prepare_update(&mut back, &svc);
        default(&mut back);
        assert!(back["spec"]["ports"][0].get("nodePort").is_none());
        assert!(back["spec"].get("externalTrafficPolicy").is_none());
        assert!(validate(&back, Some(&svc)).is_empty(), "{:?}", validate(&back, Some(&svc)));
        // An update that leaves the node port out keeps it.
        let mut same = svc.clone();
        same["spec"]["ports"][0].as_object_mut().unwrap().remove("nodePort");
        prepare_update(&mut same, &svc);
        assert_eq!(same["spec"]["ports"][0]["nodePort"], json!(np));
    }
}
