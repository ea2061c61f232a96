//! Just enough of Kubernetes' protobuf encoding to read what kubectl sends.
//!
//! kubectl's `create namespace|configmap|secret|serviceaccount|quota|token|deployment` send their objects as
//! `application/vnd.kubernetes.protobuf`: the bytes `k8s\0`, then a `runtime.Unknown` envelope
//! (type meta + the object's own protobuf bytes). This module decodes those kinds into the JSON
//! the rest of the sandbox works with, from small field tables taken from the API's
//! `generated.proto` numbering. Responses are always JSON, which kubectl accepts as well.
//!
//! A Deployment's tables cover what `kubectl create deployment` sends (and a little more); a field
//! they do not know is refused with a 415 naming it, never dropped — unless it holds a zero value,
//! which Go's encoder writes for every unset non-pointer field. Other kinds sent as protobuf
//! get a 415 that says to send JSON.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// How one protobuf field maps to JSON.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    /// An int that is a pointer in Go: present when set, 0 included.
    Int,
    /// An int that is not a pointer in Go (`omitempty` in JSON): 0 means absent.
    IntOrZero,
    /// A bool that is not a pointer in Go: false means absent.
    BoolOrFalse,
    Bool,
    Bytes,
    Msg(&'static [Field]),
    RepStr,
    RepMsg(&'static [Field]),
    MapStr,
    MapBytes,
    /// `map<string, Quantity>`, a Quantity being `{ string = 1 }`.
    MapQuantity,
    /// `IntOrString`: `{ type = 1, intVal = 2, strVal = 3 }`, a number or a string in JSON.
    IntOrString,
    Time,
}

#[derive(Clone, Copy)]
struct Field(u32, &'static str, Kind);

const OWNER_REFERENCE: &[Field] = &[
    Field(1, "kind", Kind::Str),
    Field(3, "name", Kind::Str),
    Field(4, "uid", Kind::Str),
    Field(5, "apiVersion", Kind::Str),
    Field(6, "controller", Kind::Bool),
    Field(7, "blockOwnerDeletion", Kind::Bool),
];

const OBJECT_META: &[Field] = &[
    Field(1, "name", Kind::Str),
    Field(2, "generateName", Kind::Str),
    Field(3, "namespace", Kind::Str),
    Field(5, "uid", Kind::Str),
    Field(6, "resourceVersion", Kind::Str),
    Field(7, "generation", Kind::IntOrZero),
    Field(8, "creationTimestamp", Kind::Time),
    Field(11, "labels", Kind::MapStr),
    Field(12, "annotations", Kind::MapStr),
    Field(13, "ownerReferences", Kind::RepMsg(OWNER_REFERENCE)),
    Field(14, "finalizers", Kind::RepStr),
];

const NAMESPACE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(2, "spec", Kind::Msg(&[Field(1, "finalizers", Kind::RepStr)])),
    Field(3, "status", Kind::Msg(&[Field(1, "phase", Kind::Str)])),
];

const CONFIG_MAP: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(2, "data", Kind::MapStr),
    Field(3, "binaryData", Kind::MapBytes),
    Field(4, "immutable", Kind::Bool),
];

const SECRET: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(2, "data", Kind::MapBytes),
    Field(3, "type", Kind::Str),
    Field(4, "stringData", Kind::MapStr),
    Field(5, "immutable", Kind::Bool),
];

const SERVICE_ACCOUNT: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "secrets",
        Kind::RepMsg(&[
            Field(1, "kind", Kind::Str),
            Field(2, "namespace", Kind::Str),
            Field(3, "name", Kind::Str),
            Field(4, "uid", Kind::Str),
            Field(5, "apiVersion", Kind::Str),
            Field(6, "resourceVersion", Kind::Str),
            Field(7, "fieldPath", Kind::Str),
        ]),
    ),
    Field(3, "imagePullSecrets", Kind::RepMsg(&[Field(1, "name", Kind::Str)])),
    Field(4, "automountServiceAccountToken", Kind::Bool),
];

const TOKEN_REQUEST: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "audiences", Kind::RepStr),
            Field(
                3,
                "boundObjectRef",
                Kind::Msg(&[
                    Field(1, "kind", Kind::Str),
                    Field(2, "apiVersion", Kind::Str),
                    Field(3, "name", Kind::Str),
                    Field(4, "uid", Kind::Str),
                ]),
            ),
            Field(4, "expirationSeconds", Kind::Int),
        ]),
    ),
    Field(3, "status", Kind::Msg(&[])),
];

const RESOURCE_QUOTA: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "hard", Kind::MapQuantity),
            Field(2, "scopes", Kind::RepStr),
            Field(
                3,
                "scopeSelector",
                Kind::Msg(&[Field(
                    1,
                    "matchExpressions",
                    Kind::RepMsg(&[
                        Field(1, "scopeName", Kind::Str),
                        Field(2, "operator", Kind::Str),
                        Field(3, "values", Kind::RepStr),
                    ]),
                )]),
            ),
        ]),
    ),
    // Status is the server's to write; a create's is empty.
    Field(3, "status", Kind::Msg(&[])),
];

const LABEL_SELECTOR: &[Field] = &[
    Field(1, "matchLabels", Kind::MapStr),
    Field(
        2,
        "matchExpressions",
        Kind::RepMsg(&[
            Field(1, "key", Kind::Str),
            Field(2, "operator", Kind::Str),
            Field(3, "values", Kind::RepStr),
        ]),
    ),
];

const CONTAINER_PORT: &[Field] = &[
    Field(1, "name", Kind::Str),
    Field(2, "hostPort", Kind::IntOrZero),
    Field(3, "containerPort", Kind::Int),
    Field(4, "protocol", Kind::Str),
    Field(5, "hostIP", Kind::Str),
];

const CONTAINER: &[Field] = &[
    Field(1, "name", Kind::Str),
    Field(2, "image", Kind::Str),
    Field(3, "command", Kind::RepStr),
    Field(4, "args", Kind::RepStr),
    Field(5, "workingDir", Kind::Str),
    Field(6, "ports", Kind::RepMsg(CONTAINER_PORT)),
    Field(7, "env", Kind::RepMsg(&[Field(1, "name", Kind::Str), Field(2, "value", Kind::Str)])),
    // ResourceRequirements; `kubectl create deployment` sends it empty.
    Field(8, "resources", Kind::Msg(&[])),
    Field(14, "imagePullPolicy", Kind::Str),
];

const POD_TEMPLATE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(2, "containers", Kind::RepMsg(CONTAINER)),
            Field(3, "restartPolicy", Kind::Str),
            Field(4, "terminationGracePeriodSeconds", Kind::Int),
            Field(8, "serviceAccountName", Kind::Str),
        ]),
    ),
];

const DEPLOYMENT: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "replicas", Kind::Int),
            Field(2, "selector", Kind::Msg(LABEL_SELECTOR)),
            Field(3, "template", Kind::Msg(POD_TEMPLATE)),
            Field(4, "strategy", Kind::Msg(&[Field(1, "type", Kind::Str)])),
            Field(5, "minReadySeconds", Kind::IntOrZero),
            Field(6, "revisionHistoryLimit", Kind::Int),
            Field(7, "paused", Kind::BoolOrFalse),
            Field(9, "progressDeadlineSeconds", Kind::Int),
        ]),
    ),
    // Status is the server's to write; a create's is empty.
    Field(3, "status", Kind::Msg(&[])),
];

const JOB: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "parallelism", Kind::Int),
            Field(2, "completions", Kind::Int),
            Field(3, "activeDeadlineSeconds", Kind::Int),
            Field(4, "selector", Kind::Msg(LABEL_SELECTOR)),
            Field(5, "manualSelector", Kind::Bool),
            Field(6, "template", Kind::Msg(POD_TEMPLATE)),
            Field(7, "backoffLimit", Kind::Int),
            Field(8, "ttlSecondsAfterFinished", Kind::Int),
            Field(9, "completionMode", Kind::Str),
            Field(10, "suspend", Kind::Bool),
        ]),
    ),
    // Status is the server's to write; a create's is empty.
    Field(3, "status", Kind::Msg(&[])),
];

const POD_DISRUPTION_BUDGET: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META)),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "minAvailable", Kind::IntOrString),
            Field(2, "selector", Kind::Msg(LABEL_SELECTOR)),
            Field(3, "maxUnavailable", Kind::IntOrString),
            Field(4, "unhealthyPodEvictionPolicy", Kind::Str),
        ]),
    ),
    Field(3, "status", Kind::Msg(&[])),
];

const UNKNOWN: &[Field] = &[
    Field(1, "typeMeta", Kind::Msg(&[Field(1, "apiVersion", Kind::Str), Field(2, "kind", Kind::Str)])),
    Field(2, "raw", Kind::Bytes),
];

/// The protobuf content type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
    /// Refuse fields the tables do not know (instead of skipping them).
    strict: bool,
}

impl<'a> Reader<'a> {
    fn err(&self, why: &str) -> ApiError {
        ApiError::bad_request(format!("the protobuf {} body is malformed: {why}", self.what))
    }

    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first().ok_or_else(|| self.err("truncated varint"))?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(self.err("varint too long"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], ApiError> {
        let len = usize::try_from(self.varint()?).map_err(|_| self.err("length too large"))?;
        if len > self.buf.len() {
            return Err(self.err("length past the end"));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    fn skip(&mut self, wire: u64) -> Result<(), ApiError> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.take(8),
            2 => self.bytes().map(drop),
            5 => self.take(4),
            _ => Err(self.err(&format!("unsupported wire type {wire}"))),
        }
    }

    fn take(&mut self, n: usize) -> Result<(), ApiError> {
        if n > self.buf.len() {
            return Err(self.err("truncated"));
        }
        self.buf = &self.buf[n..];
        Ok(())
    }
}

fn text(bytes: &[u8], r: &Reader<'_>) -> Result<String, ApiError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| r.err("a string is not UTF-8"))
}

fn decode(
    buf: &[u8],
    schema: &[Field],
    what: &'static str,
    strict: bool,
    path: &str,
) -> Result<Value, ApiError> {
    let mut r = Reader { buf, what, strict };
    let mut obj = Map::new();
    while !r.buf.is_empty() {
        let tag = r.varint()?;
        let (num, wire) = (u32::try_from(tag >> 3).unwrap_or(0), tag & 7);
        let Some(&Field(_, name, kind)) = schema.iter().find(|f| f.0 == num) else {
            // Go's encoder writes every non-pointer field, set or not: a zero value (0, false, "",
            // an empty message) says nothing and is skipped even when strict.
            let zero = match wire {
                0 => r.varint()? == 0,
                2 => r.bytes()?.is_empty(),
                _ => {
                    r.skip(wire)?;
                    false
                }
            };
            if r.strict && !zero {
                return Err(ApiError::unreadable_protobuf(format!(
                    "{CONTENT_TYPE} for {what} with protobuf field {num} in {} (the sandbox does not read it; send JSON)",
                    if path.is_empty() { "the object" } else { path }
                )));
            }
            continue;
        };
        let here = if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
        let value = match kind {
            // int32/int64 fields: negative values arrive as 64-bit two's complement.
            Kind::Int => json!(r.varint()?.cast_signed()),
            Kind::IntOrZero | Kind::BoolOrFalse => {
                let v = r.varint()?;
                if v == 0 {
                    continue;
                }
                if matches!(kind, Kind::BoolOrFalse) { json!(true) } else { json!(v.cast_signed()) }
            }
            Kind::Bool => json!(r.varint()? != 0),
            Kind::Str => {
                // An empty string is how Go's encoder writes an unset non-pointer string: absent.
                let t = text(r.bytes()?, &r)?;
                if t.is_empty() {
                    continue;
                }
                json!(t)
            }
            Kind::RepStr => json!(text(r.bytes()?, &r)?),
            Kind::Bytes => json!(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)),
            Kind::Msg(s) | Kind::RepMsg(s) => decode(r.bytes()?, s, what, strict, &here)?,
            Kind::IntOrString => {
                let fields = [
                    Field(1, "type", Kind::Int),
                    Field(2, "intVal", Kind::Int),
                    Field(3, "strVal", Kind::Str),
                ];
                let v = decode(r.bytes()?, &fields, what, strict, &here)?;
                if v["type"].as_i64() == Some(1) {
                    json!(v["strVal"].as_str().unwrap_or(""))
                } else {
                    json!(v["intVal"].as_i64().unwrap_or(0))
                }
            }
            Kind::Time => {
                let t = decode(r.bytes()?, &[Field(1, "seconds", Kind::Int)], what, false, &here)?;
                let secs = t["seconds"].as_i64().unwrap_or(0);
                // The zero time is how Go encodes an unset one (`creationTimestamp: null` in a
                // pod template kubectl sends), and JSON shows it as null.
                if secs == 0 {
                    Value::Null
                } else {
                    json!(jiff::Timestamp::from_second(secs).map(|t| t.to_string()).unwrap_or_default())
                }
            }
            Kind::MapStr | Kind::MapBytes | Kind::MapQuantity => {
                let value_kind = match kind {
                    Kind::MapStr => Kind::Str,
                    Kind::MapBytes => Kind::Bytes,
                    _ => Kind::Msg(&[Field(1, "string", Kind::Str)]),
                };
                let entry = decode(
                    r.bytes()?,
                    &[Field(1, "k", Kind::Str), Field(2, "v", value_kind)],
                    what,
                    false,
                    &here,
                )?;
                let key = entry["k"].as_str().unwrap_or("").to_owned();
                let value = entry.get("v").cloned().unwrap_or(json!(""));
                let value = if matches!(kind, Kind::MapQuantity) { value["string"].clone() } else { value };
                let map = obj.entry(name).or_insert_with(|| json!({}));
                map[key] = value;
                continue;
            }
        };
        if matches!(kind, Kind::RepStr | Kind::RepMsg(_)) {
            obj.entry(name).or_insert_with(|| json!([])).as_array_mut().expect("array").push(value);
        } else {
            obj.insert(name.to_owned(), value);
        }
    }
    Ok(Value::Object(obj))
}

/// Decodes a `k8s\0`-prefixed protobuf body into the object's JSON.
///
/// # Errors
///
/// 400 for a malformed body; 415 for a kind the sandbox cannot read as protobuf.
pub fn to_json(body: &[u8]) -> Result<Value, ApiError> {
    let inner = body
        .strip_prefix(b"k8s\0")
        .ok_or_else(|| ApiError::bad_request("the protobuf body does not start with the k8s\\0 magic"))?;
    let unknown = decode(inner, UNKNOWN, "envelope", false, "")?;
    let api_version =
        unknown.pointer("/typeMeta/apiVersion").and_then(Value::as_str).unwrap_or("").to_owned();
    let kind = unknown.pointer("/typeMeta/kind").and_then(Value::as_str).unwrap_or("").to_owned();
    let raw = unknown.get("raw").and_then(Value::as_str).unwrap_or("");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|_| ApiError::bad_request("protobuf envelope"))?;
    let (schema, what, strict) = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => (NAMESPACE, "Namespace", false),
        ("v1", "ConfigMap") => (CONFIG_MAP, "ConfigMap", false),
        ("v1", "Secret") => (SECRET, "Secret", false),
        ("v1", "ServiceAccount") => (SERVICE_ACCOUNT, "ServiceAccount", true),
        ("v1", "ResourceQuota") => (RESOURCE_QUOTA, "ResourceQuota", true),
        ("authentication.k8s.io/v1", "TokenRequest") => (TOKEN_REQUEST, "TokenRequest", true),
        ("apps/v1", "Deployment") => (DEPLOYMENT, "apps/v1 Deployment", true),
        ("batch/v1", "Job") => (JOB, "batch/v1 Job", true),
        ("policy/v1", "PodDisruptionBudget") => {
            (POD_DISRUPTION_BUDGET, "policy/v1 PodDisruptionBudget", true)
        }
        _ => {
            return Err(ApiError::unreadable_protobuf(format!(
                "{CONTENT_TYPE} for {api_version} {kind} (the sandbox reads protobuf for v1 Namespace, ConfigMap, Secret, ServiceAccount, ResourceQuota, authentication.k8s.io/v1 TokenRequest, apps/v1 Deployment, batch/v1 Job and policy/v1 PodDisruptionBudget; send JSON)"
            )));
        }
    };
    let mut obj = decode(&raw, schema, what, strict, "")?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(num: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::try_from(num << 3 | 2).unwrap(), u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
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
        let type_meta = [field(1, b"apps/v1"), field(2, b"StatefulSet")].concat();
        let body = [b"k8s\0".as_slice(), &field(1, &type_meta)].concat();
        let e = to_json(&body).unwrap_err();
        assert_eq!(e.code, 415);
        assert!(e.message.contains("StatefulSet"), "{}", e.message);
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
    fn a_deployment_field_the_tables_do_not_know_is_refused_not_dropped() {
        // Container field 10 (a liveness probe) is not in the tables; empty, it says nothing.
        assert!(to_json(&deployment_body(&field(10, b""))).is_ok());
        assert!(to_json(&deployment_body(&varint_field(16, 0))).is_ok(), "stdin: false");
        let e = to_json(&deployment_body(&field(10, &field(1, b"x")))).unwrap_err();
        assert_eq!(e.code, 415);
        assert!(e.message.contains("field 10 in spec.template.spec.containers"), "{}", e.message);
    }
}
