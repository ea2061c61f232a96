//! The codec against bodies as Go clients write them, and round trips of realistic objects.

use serde_json::json;

use super::*;

fn field(num: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    wire::put_bytes(&mut out, num, bytes);
    out
}

#[test]
fn decodes_a_configmap_like_kubectl_sends() {
    let meta = [field(1, b"x"), field(11, &[field(1, b"app"), field(2, b"web")].concat())].concat();
    let cm = [field(1, &meta), field(2, &[field(1, b"a"), field(2, b"b")].concat())].concat();
    let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &cm)].concat();
    let v = to_json(&body).unwrap();
    assert_eq!(
        v,
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "x", "labels": { "app": "web" } }, "data": { "a": "b" } })
    );
}

#[test]
fn decodes_a_quota_like_kubectl_create_quota_sends() {
    let hard = field(1, &[field(1, b"pods"), field(2, &field(1, b"10"))].concat());
    let spec = [hard, field(2, b"BestEffort")].concat();
    let quota = [field(1, &field(1, b"q")), field(2, &spec), field(3, b"")].concat();
    let type_meta = [field(1, b"v1"), field(2, b"ResourceQuota")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &quota)].concat();
    assert_eq!(
        to_json(&body).unwrap(),
        json!({ "apiVersion": "v1", "kind": "ResourceQuota", "metadata": { "name": "q" },
                "spec": { "hard": { "pods": "10" }, "scopes": ["BestEffort"] }, "status": {} })
    );
}

#[test]
fn decodes_a_budget_like_kubectl_create_pdb_sends() {
    // minAvailable 5 as an IntOrString of type Int (its type 0 written, as Go writes it),
    // maxUnavailable "20%" of type String.
    let five = [vec![1 << 3, 0], vec![2 << 3, 5]].concat();
    let percent = [vec![1 << 3, 1], field(3, b"20%")].concat();
    let selector = field(1, &[field(1, b"app"), field(2, b"web")].concat());
    let spec = [field(1, &five), field(2, &selector), field(3, &percent)].concat();
    let pdb = [field(1, &field(1, b"web")), field(2, &spec), field(3, b"")].concat();
    let type_meta = [field(1, b"policy/v1"), field(2, b"PodDisruptionBudget")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &pdb)].concat();
    assert_eq!(
        to_json(&body).unwrap()["spec"],
        json!({ "minAvailable": 5, "maxUnavailable": "20%", "selector": { "matchLabels": { "app": "web" } } })
    );
}

#[test]
fn malformed_and_unsupported_bodies_are_named() {
    assert_eq!(to_json(b"nope").unwrap_err().code, 400);
    assert_eq!(to_json(b"k8s\0\x0a\x05ab").unwrap_err().code, 400);
    let type_meta = [field(1, b"example.com/v1"), field(2, b"Foo")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta)].concat();
    let e = to_json(&body).unwrap_err();
    assert_eq!(e.code, 415);
    assert!(e.message.contains("example.com/v1 Foo"), "{}", e.message);
    // A string that is not UTF-8, deep in a pod: refused, and the field named.
    let pod = field(2, &field(2, &field(1, b"\xff")));
    let type_meta = [field(1, b"v1"), field(2, b"Pod")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &pod)].concat();
    let e = to_json(&body).unwrap_err();
    assert_eq!(e.code, 400);
    assert!(e.message.contains("spec.containers.name: a string is not UTF-8"), "{}", e.message);
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = u8::try_from(v & 0x7f).unwrap();
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn varint_field(num: u32, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(num) << 3, &mut out);
    varint(v, &mut out);
    out
}

fn deployment_body(container_extra: &[u8]) -> Vec<u8> {
    let labels = field(11, &[field(1, b"app"), field(2, b"x")].concat());
    let container =
        [field(1, b"nginx"), field(2, b"nginx:1.27"), field(8, b""), container_extra.to_vec()].concat();
    let template = [field(1, &labels), field(2, &field(2, &container))].concat();
    let selector = field(1, &[field(1, b"app"), field(2, b"x")].concat());
    let spec = [varint_field(1, 2), field(2, &selector), field(3, &template), field(4, b"")].concat();
    let deployment =
        [field(1, &[field(1, b"x"), labels.clone()].concat()), field(2, &spec), field(3, b"")].concat();
    let type_meta = [field(1, b"apps/v1"), field(2, b"Deployment")].concat();
    [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &deployment)].concat()
}

#[test]
fn decodes_a_deployment_like_kubectl_create_deployment_sends() {
    let v = to_json(&deployment_body(&[])).unwrap();
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "name": "x", "labels": { "app": "x" } },
            "spec": {
                "replicas": 2,
                "selector": { "matchLabels": { "app": "x" } },
                "template": {
                    "metadata": { "labels": { "app": "x" } },
                    "spec": { "containers": [{ "name": "nginx", "image": "nginx:1.27", "resources": {} }] },
                },
                "strategy": {},
            },
            "status": {},
        })
    );
}

#[test]
fn a_field_the_schema_does_not_know_is_skipped_as_go_skips_it_and_known_ones_are_read() {
    // Container field 10 is the liveness probe; field 999 no version has.
    let probe = field(10, &[field(1, &field(1, &field(1, b"true"))), varint_field(6, 3)].concat());
    let v = to_json(&deployment_body(&[probe, varint_field(999, 1)].concat())).unwrap();
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["livenessProbe"],
        json!({ "exec": { "command": ["true"] }, "failureThreshold": 3 })
    );
}

/// Every leaf of `want` is in `got`; what `got` has beyond it is Go's zero (`{}`, `0`, `false`,
/// `""`), which Go writes for every non-pointer field.
fn assert_contains(want: &Value, got: &Value, path: &str) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let gv = g.get(k).unwrap_or_else(|| panic!("{path}.{k} was lost: {got}"));
                assert_contains(wv, gv, &format!("{path}.{k}"));
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    assert!(go_zero(gv), "{path}.{k} was added: {gv}");
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            assert_eq!(w.len(), g.len(), "{path}");
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                assert_contains(wv, gv, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(want, got, "{path}"),
    }
}

fn go_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Null => true,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Object(o) => o.values().all(go_zero),
        Value::Array(_) => false,
    }
}

fn round_trip(obj: &Value) -> Value {
    let bytes = from_json(obj).unwrap_or_else(|e| panic!("{}: {e}", obj["kind"]));
    let back = to_json(&bytes).unwrap_or_else(|e| panic!("{}: {}", obj["kind"], e.message));
    assert_contains(obj, &back, "");
    // What Go writes for what it read is what it read: a second trip changes nothing.
    assert_eq!(from_json(&back).unwrap(), bytes, "{}", obj["kind"]);
    back
}

#[test]
fn realistic_objects_of_many_kinds_round_trip() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-0", "namespace": "default", "uid": "0b4b3c3e-6a55-4e0f-9d3c-3a7b1a1d1e01",
            "resourceVersion": "42", "creationTimestamp": "2026-12-04T10:00:00Z",
            "labels": { "app": "web" }, "annotations": { "a": "" },
            "ownerReferences": [{ "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u", "controller": true, "blockOwnerDeletion": true }],
            "managedFields": [{ "manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2026-12-04T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } } }],
        },
        "spec": {
            "containers": [{
                "name": "web", "image": "nginx:1.27", "command": ["nginx", "-g", "daemon off;"],
                "ports": [{ "containerPort": 80, "protocol": "TCP", "name": "http" }],
                "env": [{ "name": "MODE", "valueFrom": { "configMapKeyRef": { "name": "cfg", "key": "mode", "optional": false } } }],
                "resources": { "limits": { "cpu": "500m", "memory": "128Mi" }, "requests": { "cpu": "250m" } },
                "livenessProbe": { "httpGet": { "path": "/healthz", "port": "http" }, "periodSeconds": 5, "failureThreshold": 3 },
                "readinessProbe": { "exec": { "command": ["cat", "/tmp/ready"] }, "initialDelaySeconds": 2 },
                "startupProbe": { "tcpSocket": { "port": 80 } },
                "volumeMounts": [{ "name": "data", "mountPath": "/data" }],
                "securityContext": { "runAsNonRoot": true, "runAsUser": 0, "allowPrivilegeEscalation": false },
            }],
            "volumes": [
                { "name": "data", "emptyDir": { "sizeLimit": "1Gi" } },
                { "name": "cfg", "configMap": { "name": "cfg", "defaultMode": 420 } },
                { "name": "tok", "projected": { "sources": [{ "serviceAccountToken": { "path": "token", "expirationSeconds": 3607 } }] } },
            ],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": "node-1", "priority": 0, "enableServiceLinks": true,
            "tolerations": [{ "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 }],
            "affinity": { "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{ "weight": 100, "podAffinityTerm": { "topologyKey": "kubernetes.io/hostname", "labelSelector": { "matchExpressions": [{ "key": "app", "operator": "In", "values": ["web"] }] } } }] } },
        },
        "status": {
            "phase": "Running", "podIP": "10.244.0.5", "podIPs": [{ "ip": "10.244.0.5" }], "startTime": "2026-12-04T10:00:01Z",
            "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": "2026-12-04T10:00:03Z" }],
            "containerStatuses": [{ "name": "web", "ready": true, "restartCount": 2, "image": "nginx:1.27", "imageID": "", "started": true,
                "state": { "running": { "startedAt": "2026-12-04T10:00:02Z" } },
                "lastState": { "terminated": { "exitCode": 137, "reason": "Error", "startedAt": "2026-12-04T09:59:00Z", "finishedAt": "2026-12-04T10:00:00Z" } } }],
            "qosClass": "Burstable",
        },
    });
    let back = round_trip(&pod);
    // A pointer's zero stays; a named port stays a string, a numbered one a number.
    assert_eq!(back["spec"]["containers"][0]["securityContext"]["runAsUser"], json!(0));
    assert_eq!(back["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"], json!("http"));
    assert_eq!(back["spec"]["containers"][0]["startupProbe"]["tcpSocket"]["port"], json!(80));

    let others = [
        json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "web", "generation": 3 },
            "spec": { "replicas": 0, "selector": { "matchLabels": { "app": "web" } }, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 1 } },
                "template": { "metadata": { "labels": { "app": "web" } }, "spec": { "containers": [{ "name": "web", "image": "nginx" }] } } },
            "status": { "observedGeneration": 3, "replicas": 2, "conditions": [{ "type": "Available", "status": "True", "lastUpdateTime": "2026-12-04T10:00:00Z", "lastTransitionTime": "2026-12-04T10:00:00Z", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability." }] } }),
        json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "web" },
            "spec": { "selector": { "app": "web" }, "ports": [{ "port": 80, "targetPort": 8080, "protocol": "TCP" }, { "name": "m", "port": 9090, "targetPort": "metrics" }],
                "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"], "type": "ClusterIP", "sessionAffinity": "None" } }),
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "s" }, "type": "Opaque", "data": { "k": "aGVsbG8=" }, "immutable": false }),
        json!({ "apiVersion": "v1", "kind": "Event", "metadata": { "name": "e.1" }, "involvedObject": { "kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{web}" },
            "reason": "Unhealthy", "message": "Liveness probe failed", "count": 3, "type": "Warning",
            "firstTimestamp": "2026-12-04T10:00:00Z", "lastTimestamp": "2026-12-04T10:00:10Z", "source": { "component": "kubelet", "host": "node-1" } }),
        json!({ "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": { "name": "e.2" }, "eventTime": "2026-12-04T10:00:00.123456Z",
            "reportingController": "counter", "reportingInstance": "counter-0", "action": "Scaled", "reason": "Scaled", "type": "Normal",
            "regarding": { "kind": "Deployment", "name": "web" }, "series": { "count": 2, "lastObservedTime": "2026-12-04T10:00:05.000001Z" } }),
        json!({ "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": { "name": "leader" },
            "spec": { "holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-12-04T10:00:00.500000Z", "leaseTransitions": 0 } }),
        json!({ "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": { "name": "web-5d" }, "revision": 2,
            "data": { "spec": { "template": { "$patch": "replace", "spec": { "containers": [{ "name": "c", "image": "i" }] } } } } }),
        json!({ "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
            "spec": { "user": "alice", "groups": ["dev"], "extra": { "scopes": ["a", "b"] }, "resourceAttributes": { "verb": "get", "resource": "pods", "namespace": "default" } },
            "status": { "allowed": true, "reason": "RBAC" } }),
        json!({ "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "message": "pods \"x\" not found", "reason": "NotFound",
            "details": { "name": "x", "kind": "pods", "retryAfterSeconds": 1 }, "code": 404 }),
        json!({ "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": { "resourceVersion": "7", "continue": "x" },
            // A list's items carry no type in protobuf, as in Go.
            "items": [{ "metadata": { "name": "a", "labels": { "k": "v" } } }] }),
        json!({ "apiVersion": "v1", "kind": "ConfigMapList", "metadata": { "resourceVersion": "9" },
            "items": [{ "metadata": { "name": "a" }, "data": { "k": "v" }, "binaryData": { "b": "AAEC" } }] }),
        json!({ "apiVersion": "batch/v1", "kind": "CronJob", "metadata": { "name": "c" },
            "spec": { "schedule": "*/1 * * * *", "concurrencyPolicy": "Replace", "suspend": false,
                "jobTemplate": { "spec": { "backoffLimit": 6, "podFailurePolicy": { "rules": [{ "action": "FailJob", "onExitCodes": { "operator": "In", "values": [1, -2, 42] } }] },
                    "template": { "spec": { "restartPolicy": "OnFailure", "containers": [{ "name": "c", "image": "busybox" }] } } } } } }),
        json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": { "name": "h" },
            "spec": { "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" }, "minReplicas": 1, "maxReplicas": 5,
                "metrics": [{ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } } }] } }),
        json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": { "name": "v" },
            "webhooks": [{ "name": "v.example.com", "clientConfig": { "url": "https://127.0.0.1:9443/validate", "caBundle": "AAEC" }, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*" }], "timeoutSeconds": 10 }] }),
        json!({ "apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground", "gracePeriodSeconds": 0, "dryRun": ["All"],
            "preconditions": { "uid": "u", "resourceVersion": "5" } }),
    ];
    for obj in &others {
        round_trip(obj);
    }
}

#[test]
fn a_crd_schema_keeps_its_either_or_values_and_json_names() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "foos.example.com" },
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": { "plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList", "shortNames": ["fo"] },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": { "status": {}, "scale": { "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas" } },
                "additionalPrinterColumns": [{ "name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas" }],
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": [{ "rule": "self.spec.replicas <= 10", "message": "too many" }],
                    "properties": {
                        "spec": { "type": "object", "required": ["replicas"], "properties": {
                            "replicas": { "type": "integer", "minimum": 0, "default": 1, "format": "int32" },
                            "mode": { "type": "string", "enum": ["a", "b"], "pattern": "^[ab]$" },
                            "tags": { "type": "array", "items": { "type": "string" }, "x-kubernetes-list-type": "set" },
                            "labels": { "type": "object", "additionalProperties": { "type": "string" } },
                            "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": false },
                            "port": { "x-kubernetes-int-or-string": true, "anyOf": [{ "type": "integer" }, { "type": "string" }] },
                        } },
                        "status": { "type": "object", "properties": { "replicas": { "type": "integer" } } },
                    },
                } },
            }],
            "conversion": { "strategy": "None" },
        },
        "status": { "acceptedNames": { "plural": "foos", "kind": "Foo" }, "storedVersions": ["v1"],
            "conditions": [{ "type": "Established", "status": "True", "lastTransitionTime": "2026-12-04T10:00:00Z", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted" }] },
    });
    let back = round_trip(&crd);
    let props = &back["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(props["free"]["additionalProperties"], json!(false));
    assert_eq!(props["labels"]["additionalProperties"], json!({ "type": "string" }));
    assert_eq!(props["replicas"]["default"], json!(1));
    assert_eq!(props["tags"]["items"], json!({ "type": "string" }));
}

#[test]
fn go_writes_every_non_pointer_field_and_so_does_the_encoder() {
    // A ConfigMap named `a` with one key, as a v1.32 server's Go marshaller writes it: ObjectMeta's
    // strings and generation written empty, creationTimestamp an empty message; no pointers.
    let bytes = from_json(&json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" }, "data": { "k": "v" } })).unwrap();
    let meta = [
        field(1, b"a"),
        field(2, b""),
        field(3, b""),
        field(4, b""),
        field(5, b""),
        field(6, b""),
        varint_field(7, 0),
        field(8, b""),
    ]
    .concat();
    let cm = [field(1, &meta), field(2, &[field(1, b"k"), field(2, b"v")].concat())].concat();
    let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
    let want =
        [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &cm), &field(3, b""), &field(4, b"")].concat();
    assert_eq!(bytes, want);
}

#[test]
fn a_go_zero_int_or_string_and_a_zero_time_read_as_go_reads_them() {
    // A Service port whose targetPort Go left unset: { type 0, intVal 0, strVal "" } is 0.
    let port =
        [varint_field(3, 80), field(4, &[varint_field(1, 0), varint_field(2, 0), field(3, b"")].concat())]
            .concat();
    let meta = [field(1, b"s"), field(8, b"")].concat();
    let svc = [field(1, &meta), field(2, &field(1, &port))].concat();
    let type_meta = [field(1, b"v1"), field(2, b"Service")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &svc)].concat();
    let v = to_json(&body).unwrap();
    assert_eq!(v["spec"]["ports"][0], json!({ "port": 80, "targetPort": 0 }));
    assert!(v["metadata"].get("creationTimestamp").is_none(), "{v}");
}

#[test]
fn watch_events_are_length_prefixed_bare_watch_events_around_enveloped_objects() {
    let obj = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" } });
    let frame = watch_frame("ADDED", &obj).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let mut r = wire::Reader::new(&frame[4..]);
    assert_eq!(r.tag().unwrap(), (1, Wire::Bytes));
    assert_eq!(r.bytes().unwrap(), b"ADDED");
    assert_eq!(r.tag().unwrap(), (2, Wire::Bytes));
    let mut raw_ext = wire::Reader::new(r.bytes().unwrap());
    assert_eq!(raw_ext.tag().unwrap(), (1, Wire::Bytes));
    assert_eq!(raw_ext.bytes().unwrap(), from_json(&obj).unwrap());
}

#[test]
fn a_value_of_the_wrong_type_is_named_by_its_path() {
    let e = from_json(&json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "x" }, "spec": { "replicas": "two" } })).unwrap_err();
    assert_eq!(e.to_string(), "spec.replicas: \"two\" is not an integer");
    let e = from_json(&json!({ "apiVersion": "example.com/v1", "kind": "Foo" })).unwrap_err();
    assert!(matches!(e, Error::UnknownKind { .. }), "{e}");
}

#[test]
fn a_body_nested_past_json_depth_is_refused() {
    // A CRD schema nested 200 levels through `not`.
    let mut schema: Vec<u8> = Vec::new();
    for _ in 0..200 {
        schema = [field(5, b"object"), field(28, &schema)].concat();
    }
    let version = [field(1, b"v1"), field(4, &field(1, &schema))].concat();
    let crd = [field(1, &field(1, b"a")), field(2, &field(7, &version))].concat();
    let type_meta = [field(1, b"apiextensions.k8s.io/v1"), field(2, b"CustomResourceDefinition")].concat();
    let body = [b"k8s\0".as_slice(), &field(1, &type_meta), &field(2, &crd)].concat();
    let e = to_json(&body).unwrap_err();
    assert_eq!(e.code, 400);
    assert!(e.message.contains("deeper than 128"), "{}", e.message);
}
