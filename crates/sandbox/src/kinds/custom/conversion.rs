//! How a custom resource moves between the versions of its CRD (`spec.conversion`), as
//! apiextensions-apiserver's `pkg/apiserver/conversion` converts it.
//!
//! Objects are stored in the version marked `storage` at the time they are written and read in
//! the version a request names. With strategy `None` only the `apiVersion` changes. With
//! `Webhook` the CRD's webhook is sent a `ConversionReview` of the objects not yet in the
//! version wanted — one review for a whole list — and its answer is checked as upstream checks
//! it: the review's uid, a `Success` result, as many objects as were sent, each in the version
//! and of the kind asked for, with the same name, namespace and uid. Of the metadata a webhook
//! returns only labels and annotations are kept; the rest is the object's own.
//!
//! A failure is a 500 worded as upstream's (`conversion webhook for <group/version>,
//! Kind=<kind> failed: …`), on whatever read or write needed the conversion.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::status::ApiError;
use crate::webhook_client::{Answer, Endpoint, Services, post, post_all};

/// How long a conversion webhook is given to answer: the webhook client's timeout, which the
/// CRD cannot change.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A CRD's conversion between its versions, shared by the resources of its versions.
#[derive(Debug)]
pub struct Conversion {
    /// The kind, as the errors name it.
    kind: String,
    /// The `apiVersion` objects are written in: the version marked `storage`.
    storage: String,
    /// `Some` for strategy `Webhook`.
    webhook: Option<Webhook>,
}

/// A conversion webhook: where it is and which reviews it reads.
#[derive(Debug)]
struct Webhook {
    /// `spec.conversion.webhook.clientConfig`.
    client_config: Value,
    /// `spec.conversion.webhook.conversionReviewVersions`.
    review_versions: Vec<String>,
    /// Where the sandbox's Services listen, as the store was told.
    services: Services,
}

/// A review on its way to the webhook.
struct Call {
    endpoint: Endpoint,
    body: Vec<u8>,
    sent: Sent,
}

/// What a review asked, to check its answer against.
struct Sent {
    uid: String,
    /// `v1` or `v1beta1`.
    version: &'static str,
    /// Which of the objects were sent, in the order sent.
    indexes: Vec<usize>,
}

impl Conversion {
    /// The conversion `crd` declares, its webhook's Services found in `services`.
    #[must_use]
    pub fn of(crd: &Value, services: &Services) -> Self {
        let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
        let storage = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .and_then(|v| v.get("name").and_then(Value::as_str))
            .unwrap_or("");
        let conversion = crd.pointer("/spec/conversion");
        let webhook = conversion
            .filter(|c| c.get("strategy").and_then(Value::as_str) == Some("Webhook"))
            .map(|c| Webhook {
                client_config: c.pointer("/webhook/clientConfig").cloned().unwrap_or(Value::Null),
                review_versions: c
                    .pointer("/webhook/conversionReviewVersions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                services: Services::clone(services),
            });
        Self {
            kind: crd.pointer("/status/acceptedNames/kind").and_then(Value::as_str).unwrap_or("").to_owned(),
            storage: if group.is_empty() { storage.to_owned() } else { format!("{group}/{storage}") },
            webhook,
        }
    }

    /// The `apiVersion` objects are written in.
    #[must_use]
    pub fn storage_version(&self) -> &str {
        &self.storage
    }

    /// Whether reading or writing in another version than an object's calls a webhook.
    #[must_use]
    pub fn calls_webhook(&self) -> bool {
        self.webhook.is_some()
    }

    /// Converts `objects` (each with its `apiVersion`) to the version `to`, in place; those in
    /// it already are left alone. `list` says they are a list's items (one review for them all,
    /// and upstream's wording for a list's).
    ///
    /// ## Warning
    ///
    /// A webhook call blocks the calling thread (see [`crate::webhook_client`]).
    ///
    /// # Errors
    ///
    /// The webhook's failure, as a 500 worded as upstream's.
    pub fn convert(&self, objects: &mut [Value], to: &str, list: bool) -> Result<(), ApiError> {
        let Some(Call { endpoint, body, sent }) = self.plan(objects, to)? else { return Ok(()) };
        let answer = post_all(vec![(endpoint, body, TIMEOUT)]).pop();
        let answer = answer.unwrap_or_else(|| Err("no answer".to_owned()));
        self.finish(&sent, &answer, objects, to, list)
    }

    /// [`convert`](Self::convert), awaited rather than blocking.
    ///
    /// # Errors
    ///
    /// As [`convert`](Self::convert)'s.
    pub async fn convert_async(&self, objects: &mut [Value], to: &str, list: bool) -> Result<(), ApiError> {
        let Some(Call { endpoint, body, sent }) = self.plan(objects, to)? else { return Ok(()) };
        let answer = post(endpoint, body, TIMEOUT).await;
        self.finish(&sent, &answer, objects, to, list)
    }

    /// What converting `objects` to `to` takes: nothing, the `apiVersion` rewritten (strategy
    /// `None`, done here), or a review to send.
    fn plan(&self, objects: &mut [Value], to: &str) -> Result<Option<Call>, ApiError> {
        let sent: Vec<usize> = (0..objects.len()).filter(|&i| api_version(&objects[i]) != to).collect();
        let Some(&first) = sent.first() else { return Ok(None) };
        let Some(webhook) = &self.webhook else {
            for &i in &sent {
                set_api_version(&mut objects[i], to);
            }
            return Ok(None);
        };
        let failed = |why: &str| self.error(&objects[first], &format!("failed: {why}"));
        let Some(version) = webhook.review_versions.iter().find_map(|v| match v.as_str() {
            "v1" => Some("v1"),
            "v1beta1" => Some("v1beta1"),
            _ => None,
        }) else {
            return Err(ApiError::unclassified("no supported conversion review versions"));
        };
        let endpoint = Endpoint::new(&webhook.client_config, TIMEOUT, &webhook.services.read())
            .map_err(|why| failed(&why))?;
        let uid = crate::object_meta::new_uid();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{version}"),
            "kind": "ConversionReview",
            "request": {
                "uid": uid,
                "desiredAPIVersion": to,
                "objects": sent.iter().map(|&i| &objects[i]).collect::<Vec<_>>(),
            },
        });
        let body = serde_json::to_vec(&review).map_err(|e| failed(&e.to_string()))?;
        Ok(Some(Call { endpoint, body, sent: Sent { uid, version, indexes: sent } }))
    }

    /// Checks the webhook's answer to `call` and puts the objects it converted in their places.
    fn finish(
        &self,
        sent: &Sent,
        answer: &Result<Answer, String>,
        objects: &mut [Value],
        to: &str,
        list: bool,
    ) -> Result<(), ApiError> {
        let first = &objects[sent.indexes[0]];
        let converted = answer
            .as_ref()
            .map_err(String::clone)
            .and_then(|a| a.decoded())
            .and_then(|review| converted_objects(&review, sent))
            .map_err(|why| self.error(first, &format!("failed: {why}")))?;
        if converted.len() != sent.indexes.len() {
            let why = format!("returned {} objects, expected {}", converted.len(), sent.indexes.len());
            return Err(self.error(first, &why));
        }
        let mut results = Vec::with_capacity(converted.len());
        for (n, (&i, mut out)) in sent.indexes.iter().zip(converted).enumerate() {
            let original = &objects[i];
            // Upstream numbers a list's items from 1 in these messages (it counts before it
            // words them), a single object's as 0.
            let at = |what: &str, why: &str| {
                if list {
                    self.error(original, &format!("returned invalid {what} at index {}: {why}", n + 1))
                } else {
                    self.error(original, &format!("returned invalid {what}: {why}"))
                }
            };
            if !out.is_object() {
                return Err(at(
                    "converted object",
                    &format!("cannot unmarshal {} into an object", go_type(&out)),
                ));
            }
            let object = if list { "converted object" } else { "object at index 0" };
            if api_version(&out) != to {
                let why = format!("invalid groupVersion (expected {to}, received {})", api_version(&out));
                return Err(at(object, &why));
            }
            let kind = |o: &Value| o.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
            if kind(&out) != kind(original) {
                let why = format!("invalid kind (expected {}, received {})", kind(original), kind(&out));
                return Err(at(object, &why));
            }
            if let Some(why) = changed_identity(original, &out) {
                return Err(at(if list { "converted object" } else { "object" }, &why));
            }
            if let Err(why) = restore_metadata(original, &mut out) {
                return Err(if list {
                    self.error(
                        original,
                        &format!("returned invalid metadata in object at index {}: {why}", n + 1),
                    )
                } else {
                    self.error(original, &format!("returned invalid metadata: {why}"))
                });
            }
            results.push((i, out));
        }
        for (i, out) in results {
            objects[i] = out;
        }
        Ok(())
    }

    /// A 500 saying `what` of the conversion of `object`, named by its version and kind.
    fn error(&self, object: &Value, what: &str) -> ApiError {
        ApiError::unclassified(format!(
            "conversion webhook for {}, Kind={} {what}",
            api_version(object),
            self.kind
        ))
    }
}

/// The `convertedObjects` of a `ConversionReview` answering `call`, checked as upstream's
/// `getConvertedObjectsFromResponse` (a `v1beta1` review's uid and kind are not checked).
fn converted_objects(review: &Value, sent: &Sent) -> Result<Vec<Value>, String> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    if sent.version == "v1" {
        let (api_version, kind) = (text(review, "apiVersion"), text(review, "kind"));
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            let gv = if api_version.contains('/') { api_version } else { format!("/{api_version}") };
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {gv}, Kind={kind}"
            ));
        }
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".to_owned());
    };
    if sent.version == "v1" && text(response, "uid") != sent.uid {
        return Err(format!("expected response.uid={:?}, got {:?}", sent.uid, text(response, "uid")));
    }
    let result = response.get("result").cloned().unwrap_or(Value::Null);
    let status = text(&result, "status");
    if status != "Success" {
        let message = text(&result, "message");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message
        });
    }
    Ok(response.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// `validateConvertedObject`: the name, namespace and uid must be the original's (its kind
/// check is made before, worded as the caller's).
fn changed_identity(original: &Value, out: &Value) -> Option<String> {
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) =
            (crate::object_meta::meta_str(original, field), crate::object_meta::meta_str(out, field));
        if a != b {
            return Some(format!("must have the same {what}: {a} != {b}"));
        }
    }
    None
}

/// `restoreObjectMeta`: the converted object's metadata becomes the original's, but for the
/// labels and annotations the webhook returned, which must be maps of strings and, when they
/// changed, valid.
fn restore_metadata(original: &Value, out: &mut Value) -> Result<(), String> {
    let returned = match out.get("metadata") {
        None => return Err("missing metadata in converted object".to_owned()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!("invalid metadata of type {} in converted object", go_type(other)));
        }
    };
    let mut meta: Map<String, Value> =
        original.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        let given = match returned.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        let before = meta.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != given.len();
        for (k, v) in given {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= before.and_then(|b| b.get(k)) != Some(v);
        }
        if changed {
            let map = Value::Object(given.clone());
            let errs = if field == "labels" {
                crate::label_rules::label_map_errors(Some(&map), "metadata.labels")
            } else {
                crate::label_rules::annotation_map_errors(Some(&map), "metadata.annotation")
            };
            if !errs.is_empty() {
                return Err(crate::status::aggregate(&errs));
            }
        }
        meta.insert(field.to_owned(), Value::Object(given.clone()));
    }
    out["metadata"] = Value::Object(meta);
    Ok(())
}

/// An object's `apiVersion`.
fn api_version(o: &Value) -> &str {
    o.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn set_api_version(o: &mut Value, to: &str) {
    if let Some(m) = o.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(to.to_owned()));
    }
}

/// Go's `%T` of a value decoded into an `interface{}` by the unstructured decoder.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversion(webhook: bool) -> Conversion {
        let mut crd = json!({ "spec": { "group": "example.com",
            "versions": [{ "name": "v1", "storage": false }, { "name": "v2", "storage": true }] },
            "status": { "acceptedNames": { "kind": "Widget" } } });
        if webhook {
            crd["spec"]["conversion"] = json!({ "strategy": "Webhook", "webhook": {
                "clientConfig": { "url": "https://127.0.0.1:1/convert" }, "conversionReviewVersions": ["v1"] } });
        }
        Conversion::of(&crd, &Services::default())
    }

    fn widget(version: &str, name: &str) -> Value {
        json!({ "apiVersion": format!("example.com/{version}"), "kind": "Widget",
            "metadata": { "name": name, "namespace": "default", "uid": "u-1", "labels": { "a": "1" } } })
    }

    #[test]
    fn strategy_none_rewrites_the_version_only() {
        let c = conversion(false);
        assert_eq!(c.storage_version(), "example.com/v2");
        let mut objs = vec![widget("v1", "a"), widget("v2", "b")];
        c.convert(&mut objs, "example.com/v2", true).unwrap();
        assert_eq!(objs[0]["apiVersion"], "example.com/v2");
        assert_eq!(objs[0]["metadata"]["name"], "a");
    }

    #[test]
    fn an_answer_is_checked_as_upstream_checks_it() {
        let c = conversion(true);
        let mut objs = vec![widget("v1", "a")];
        let call = c.plan(&mut objs, "example.com/v2").unwrap().expect("a call").sent;
        let answer = |response: Value| {
            let review = json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": response });
            Ok(Answer { status: 200, body: review.to_string().into() })
        };
        let ok = |objects: Value| json!({ "uid": call.uid, "result": { "status": "Success" }, "convertedObjects": objects });
        let finish = |a: &Result<Answer, String>, list: bool| {
            let mut objs = vec![widget("v1", "a")];
            c.finish(&call, a, &mut objs, "example.com/v2", list).map(|()| objs).map_err(|e| e.message)
        };
        let prefix = "conversion webhook for example.com/v1, Kind=Widget";

        // Labels and annotations are the webhook's; the rest of the metadata is the original's.
        let mut out = widget("v2", "a");
        out["metadata"]["labels"] = json!({ "b": "2" });
        out["metadata"]["generation"] = json!(9);
        out["spec"] = json!({ "size": 3 });
        let got = finish(&answer(ok(json!([out]))), false).unwrap();
        assert_eq!(got[0]["metadata"]["labels"], json!({ "b": "2" }));
        assert_eq!(got[0]["metadata"].get("generation"), None);
        assert_eq!(got[0]["spec"]["size"], 3);

        let failed =
            answer(json!({ "uid": call.uid, "result": { "status": "Failure", "message": "no v1 for you" } }));
        assert_eq!(finish(&failed, false).unwrap_err(), format!("{prefix} failed: no v1 for you"));
        let wrong_uid = answer(json!({ "uid": "x", "result": { "status": "Success" } }));
        assert_eq!(
            finish(&wrong_uid, false).unwrap_err(),
            format!("{prefix} failed: expected response.uid={:?}, got \"x\"", call.uid)
        );
        assert_eq!(
            finish(&answer(ok(json!([]))), false).unwrap_err(),
            format!("{prefix} returned 0 objects, expected 1")
        );
        let stale = widget("v1", "a");
        assert_eq!(
            finish(&answer(ok(json!([stale]))), false).unwrap_err(),
            format!(
                "{prefix} returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
            )
        );
        assert_eq!(
            finish(&answer(ok(json!([widget("v2", "b")]))), true).unwrap_err(),
            format!("{prefix} returned invalid converted object at index 1: must have the same name: a != b")
        );
        let mut bad_label = widget("v2", "a");
        bad_label["metadata"]["labels"] = json!({ "a": 1 });
        assert_eq!(
            finish(&answer(ok(json!([bad_label]))), false).unwrap_err(),
            format!(
                "{prefix} returned invalid metadata: metadata.labels[a] must be a string, but is int64 in converted object"
            )
        );
        let refused = Err("Post \"https://127.0.0.1:1/convert?timeout=30s\": dial tcp 127.0.0.1:1: connect: connection refused".to_owned());
        assert!(finish(&refused, false).unwrap_err().starts_with(&format!("{prefix} failed: Post ")));
    }
}
