//! `pods/log`'s decisions, as the API server and the kubelet make them: the query's options
//! (`PodLogOptions`) and their validation, which container is read, which run of it the
//! kubelet finds in the pod's status, and which of its lines are sent and how. All of it pure:
//! the HTTP side (`rest/log.rs`) reads the pod and streams.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::container_runtime::{Container, ContainerRun, Containers, Exit, LogLine};
use crate::object_meta::meta_str;
use crate::status::ApiError;

/// The query of a `pods/log` request (`PodLogOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LogOptions {
    pub(crate) container: Option<String>,
    pub(crate) follow: bool,
    pub(crate) previous: bool,
    pub(crate) since_seconds: Option<i64>,
    pub(crate) since_time: Option<Timestamp>,
    pub(crate) timestamps: bool,
    pub(crate) tail_lines: Option<i64>,
    pub(crate) limit_bytes: Option<i64>,
}

impl LogOptions {
    /// Reads the query as the parameter codec converts it: a boolean is true unless `false`
    /// or `0`; a number that does not parse is a 400 naming it.
    pub(crate) fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let mut o = Self::default();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let truthy = v != "false" && v != "0";
            let int = |name: &str| {
                v.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "{name}: strconv.ParseInt: parsing {}: invalid syntax",
                        crate::go_print::go_quote(&v)
                    ))
                })
            };
            match k.as_ref() {
                "container" if !v.is_empty() => o.container = Some(v.clone().into_owned()),
                "follow" => o.follow = truthy,
                "previous" => o.previous = truthy,
                "timestamps" => o.timestamps = truthy,
                "sinceSeconds" => o.since_seconds = Some(int("sinceSeconds")?),
                "tailLines" => o.tail_lines = Some(int("tailLines")?),
                "limitBytes" => o.limit_bytes = Some(int("limitBytes")?),
                "sinceTime" if !v.is_empty() => {
                    o.since_time = Some(v.parse::<Timestamp>().map_err(|_| {
                        ApiError::bad_request(format!(
                            "sinceTime: parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse",
                            crate::go_print::go_quote(&v)
                        ))
                    })?);
                }
                _ => {}
            }
        }
        Ok(o)
    }

    /// `ValidatePodLogOptions`: a 422 `PodLogOptions "<pod>" is invalid`.
    pub(crate) fn validate(&self, pod: &str) -> Result<(), ApiError> {
        let mut causes: Vec<(String, String)> = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            causes.push((
                "tailLines".into(),
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            causes.push(("limitBytes".into(), format!("Invalid value: {n}: must be greater than 0")));
        }
        match (self.since_seconds, self.since_time) {
            (Some(_), Some(_)) => causes.push((
                String::new(),
                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
            )),
            (Some(n), None) if n < 1 => {
                causes.push(("sinceSeconds".into(), format!("Invalid value: {n}: must be greater than 0")));
            }
            _ => {}
        }
        if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid("", "PodLogOptions", pod, &causes)) }
    }

    /// The earliest time a line may have to be sent, `now` for `sinceSeconds`.
    fn since(&self, now: Timestamp) -> Option<Timestamp> {
        self.since_time.or_else(|| {
            let secs = self.since_seconds?;
            Some(now.saturating_sub(SignedDuration::from_secs(secs)).unwrap_or(Timestamp::MIN))
        })
    }
}

/// The pod's containers of every kind, in upstream's visiting order: init, regular, ephemeral.
fn specs(pod: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| pod["spec"][k].as_array().into_iter().flatten())
}

/// The registry's `validateContainer`: the container asked, which must be the pod's; or its
/// only regular container.
pub(crate) fn container_name(pod: &Value, asked: Option<&str>) -> Result<String, ApiError> {
    let name = meta_str(pod, "name");
    if let Some(asked) = asked {
        if !specs(pod).any(|c| c["name"] == asked) {
            return Err(ApiError::bad_request(format!("container {asked} is not valid for pod {name}")));
        }
        return Ok(asked.to_owned());
    }
    let regular = pod["spec"]["containers"].as_array().map_or(&[][..], Vec::as_slice);
    match regular {
        [one] => Ok(one["name"].as_str().unwrap_or("").to_owned()),
        [] => Err(ApiError::bad_request(format!("a container name must be specified for pod {name}"))),
        _ => {
            let all: Vec<&str> = specs(pod).filter_map(|c| c["name"].as_str()).collect();
            Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            )))
        }
    }
}

/// The container `name` of the pod as the runtime is asked to run it.
pub(crate) fn container(pod: &Value, name: &str) -> Container {
    let spec = specs(pod).find(|c| c["name"] == name).cloned().unwrap_or_default();
    let strings = |k: &str| -> Vec<String> {
        spec[k].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect()
    };
    Container {
        namespace: meta_str(pod, "namespace").to_owned(),
        pod: meta_str(pod, "name").to_owned(),
        name: name.to_owned(),
        image: spec["image"].as_str().unwrap_or("").to_owned(),
        command: strings("command"),
        args: strings("args"),
        env: spec["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let name = e["name"].as_str()?.to_owned();
                match e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
                    Some(path) => Some((name, pod_field(pod, path)?)),
                    None => Some((name, e["value"].as_str()?.to_owned())),
                }
            })
            .collect(),
        pod_ip: pod.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("").to_owned(),
        id: status(pod, name).and_then(|s| s["containerID"].as_str()).unwrap_or("").to_owned(),
        restart: current_run(pod, name),
        labels: crate::faults::labels_of(pod),
        stdin: spec["stdin"] == true,
        stdin_once: spec["stdinOnce"] == true,
        tty: spec["tty"] == true,
        volumes: volume_mounts(pod, &spec),
    }
}

/// The container's mounts of volumes whose files outlive a run: an `emptyDir` (its pod's), a
/// `hostPath` (its node's), as (mount path, key).
fn volume_mounts(pod: &Value, spec: &Value) -> Vec<(String, String)> {
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    spec["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let (vol, at) = (m["name"].as_str()?, m["mountPath"].as_str()?);
            let v = volumes?.iter().find(|v| v["name"] == vol)?;
            let key = if v.get("emptyDir").is_some_and(|e| !e.is_null()) {
                format!("emptyDir/{ns}/{name}/{vol}")
            } else {
                let path = v.pointer("/hostPath/path")?.as_str()?;
                format!("hostPath/{node}/{}", crate::shell::join("/", path))
            };
            Some((crate::shell::join("/", at), key))
        })
        .collect()
}

/// The value of a pod field a container's variable is given from (the kubelet's
/// `podFieldSelectorRuntimeValue`): the pod's name, namespace, uid, a label or an annotation
/// (`metadata.labels['k']`), its node and service account, its host and pod addresses (the
/// plural ones comma-joined). `None` for a field the pod has not (yet) got.
fn pod_field(pod: &Value, path: &str) -> Option<String> {
    let text = |pointer: &str| pod.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
    let ips = |pointer: &str| {
        let all: Vec<&str> =
            pod.pointer(pointer)?.as_array()?.iter().filter_map(|i| i["ip"].as_str()).collect();
        Some(all.join(","))
    };
    let keyed = |prefix: &str, map: &str| {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        pod.pointer(&format!("/metadata/{map}"))?.get(key)?.as_str().map(str::to_owned)
    };
    match path {
        "metadata.name" => text("/metadata/name"),
        "metadata.namespace" => text("/metadata/namespace"),
        "metadata.uid" => text("/metadata/uid"),
        "spec.nodeName" => text("/spec/nodeName"),
        "spec.serviceAccountName" => text("/spec/serviceAccountName"),
        "status.hostIP" => text("/status/hostIP"),
        "status.podIP" => text("/status/podIP"),
        "status.hostIPs" => ips("/status/hostIPs"),
        "status.podIPs" => ips("/status/podIPs"),
        _ => keyed("metadata.labels['", "labels").or_else(|| keyed("metadata.annotations['", "annotations")),
    }
}

fn time(v: &Value, pointer: &str) -> Option<Timestamp> {
    v.pointer(pointer)?.as_str()?.parse().ok()
}

/// A run from a `terminated` state.
fn ended(state: &Value, restart: i64) -> Option<ContainerRun> {
    let t = state.get("terminated")?;
    let at = time(t, "/finishedAt")?;
    let code = t["exitCode"].as_i64().and_then(|c| i32::try_from(c).ok()).unwrap_or(0);
    Some(ContainerRun {
        restart,
        started: time(t, "/startedAt").unwrap_or(at),
        exit: Some(Exit { at, code }),
    })
}

/// The container's status in the pod, any kind.
pub(crate) fn status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"]
        .into_iter()
        .flat_map(|k| pod["status"][k].as_array().into_iter().flatten())
        .find(|s| s["name"] == name)
}

/// The kubelet's `validateContainerLogStatus`: the run of container `name` that is read — the
/// previous one, the running one, or the one that ended — or its 400 (a waiting container, no
/// previous run). A container with no status yet is being created, as the kubelet reports it.
pub(crate) fn find_run(pod: &Value, name: &str, previous: bool) -> Result<ContainerRun, ApiError> {
    let pod_name = meta_str(pod, "name");
    let refuse = |why: String| ApiError::bad_request(why);
    let q = crate::go_print::go_quote;
    let Some(s) = status(pod, name) else {
        return Err(refuse(format!(
            "container {} in pod {} is waiting to start: ContainerCreating",
            q(name),
            q(pod_name)
        )));
    };
    let restarts = s["restartCount"].as_i64().unwrap_or(0);
    // The last run that ended: the one before this run, or, while the container waits to
    // restart (`CrashLoopBackOff`), this one — both reads show it, as the kubelet's do.
    let waiting = s.pointer("/state/waiting").is_some();
    let last = if waiting { restarts } else { (restarts - 1).max(0) };
    if previous {
        return ended(&s["lastState"], last).ok_or_else(|| {
            refuse(format!("previous terminated container {} in pod {} not found", q(name), q(pod_name)))
        });
    }
    if let Some(started) = time(&s["state"], "/running/startedAt") {
        return Ok(ContainerRun { restart: restarts, started, exit: None });
    }
    if let Some(run) = ended(&s["state"], restarts).or_else(|| ended(&s["lastState"], last)) {
        return Ok(run);
    }
    let reason = s.pointer("/state/waiting/reason").and_then(Value::as_str).unwrap_or("");
    let why = match reason {
        "ErrImagePull" => "image can't be pulled".to_owned(),
        "ImagePullBackOff" => "trying and failing to pull image".to_owned(),
        "" => {
            return Err(refuse(format!(
                "container {} in pod {} is waiting to start - no logs yet",
                q(name),
                q(pod_name)
            )));
        }
        other => other.to_owned(),
    };
    Err(refuse(format!("container {} in pod {} is waiting to start: {why}", q(name), q(pod_name))))
}

/// Run `restart` of container `name` while the kubelet keeps it: the current run, or the
/// previous one once the container restarted; `None` after that (a followed log ends).
pub(crate) fn run_numbered(pod: &Value, name: &str, restart: i64) -> Option<ContainerRun> {
    let current = find_run(pod, name, false).ok()?;
    if current.restart == restart {
        return Some(current);
    }
    find_run(pod, name, true).ok().filter(|r| r.restart == restart)
}

/// The run of container `name` that is current: its `restartCount`, 0 before it has a status.
pub(crate) fn current_run(pod: &Value, name: &str) -> i64 {
    status(pod, name).and_then(|s| s["restartCount"].as_i64()).unwrap_or(0)
}

/// Every line of the run found, as the runtime writes it with the test's scripted lines.
pub(crate) fn lines(containers: &Containers, pod: &Value, c: &Container, run: &ContainerRun) -> Vec<LogLine> {
    let created = time(pod, "/metadata/creationTimestamp");
    let written = containers.lines_of(c, run, created);
    if containers.runs_program(c) {
        // A process's log is what it wrote.
        return written;
    }
    containers.runtime.log(c, run, &written)
}

/// What is sent of `lines`, the kubelet's way: the last `tailLines` (on a first read, `tail`),
/// those at or after `since`, each with its time first when `timestamps` is asked, cut at
/// `budget` bytes (what `limitBytes` leaves). The budget is lowered by what is sent.
pub(crate) fn render(
    lines: &[LogLine],
    opts: &LogOptions,
    tail: bool,
    now: Timestamp,
    budget: &mut Option<usize>,
) -> Vec<u8> {
    let skip = match (tail, opts.tail_lines) {
        (true, Some(n)) => lines.len().saturating_sub(usize::try_from(n).unwrap_or(0)),
        _ => 0,
    };
    let since = opts.since(now);
    let mut out = Vec::new();
    for l in lines.iter().skip(skip).filter(|l| since.is_none_or(|s| l.time >= s)) {
        if opts.timestamps {
            // RFC 3339 with as many fractional digits as needed, as Go's RFC3339Nano.
            out.extend_from_slice(format!("{} ", l.time).as_bytes());
        }
        out.extend_from_slice(l.text.as_bytes());
        out.push(b'\n');
    }
    if let Some(left) = budget {
        out.truncate(*left);
        *left -= out.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_are_validated_in_upstreams_order_and_words() {
        let o = LogOptions::parse(Some("tailLines=-1&limitBytes=0&sinceSeconds=0")).unwrap();
        let e = o.validate("web").unwrap_err();
        assert_eq!(
            e.message,
            "PodLogOptions \"web\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0, sinceSeconds: Invalid value: 0: must be greater than 0]"
        );
        let both = LogOptions::parse(Some("sinceSeconds=5&sinceTime=2025-01-01T00:00:00Z")).unwrap();
        assert_eq!(
            both.validate("web").unwrap_err().message,
            "PodLogOptions \"web\" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
        assert!(LogOptions::parse(Some("tailLines=x")).is_err());
    }

    #[test]
    fn tail_since_timestamps_and_limit_apply_in_the_kubelets_order() {
        let t = |s: &str| s.parse::<Timestamp>().unwrap();
        let lines = vec![
            LogLine { time: t("2025-01-01T00:00:00Z"), text: "a".into() },
            LogLine { time: t("2025-01-01T00:00:01.5Z"), text: "b".into() },
            LogLine { time: t("2025-01-01T00:00:02Z"), text: "c".into() },
        ];
        let now = t("2025-01-01T00:00:03Z");
        let o = LogOptions { tail_lines: Some(2), timestamps: true, ..LogOptions::default() };
        let out = render(&lines, &o, true, now, &mut None);
        assert_eq!(String::from_utf8(out).unwrap(), "2025-01-01T00:00:01.5Z b\n2025-01-01T00:00:02Z c\n");
        let o = LogOptions { since_seconds: Some(2), ..LogOptions::default() };
        assert_eq!(render(&lines, &o, true, now, &mut None), b"b\nc\n");
        let mut budget = Some(3);
        assert_eq!(render(&lines, &LogOptions::default(), true, now, &mut budget), b"a\nb");
        assert_eq!(budget, Some(0));
    }

    #[test]
    fn the_container_is_the_one_asked_or_the_only_one() {
        let pod = json!({ "metadata": { "name": "p" }, "spec": {
            "initContainers": [{ "name": "setup" }], "containers": [{ "name": "a" }, { "name": "b" }] } });
        assert_eq!(
            container_name(&pod, None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [setup a b]"
        );
        assert_eq!(
            container_name(&pod, Some("x")).unwrap_err().message,
            "container x is not valid for pod p"
        );
        assert_eq!(container_name(&pod, Some("setup")).unwrap(), "setup");
    }
}
