//! The `AdmissionReview` a webhook is sent and what it answers, as upstream's
//! `webhook/request/admissionreview.go` makes one and verifies the other.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::kinds::admission_match::strs;
use crate::webhook_client::Answer;

/// The review versions the sandbox speaks, as a webhook's `admissionReviewVersions` names them.
const KNOWN: [&str; 2] = ["v1", "v1beta1"];

/// The first of `accepted` the sandbox speaks.
///
/// # Errors
///
/// The call error when there is none.
pub(super) fn version(accepted: &[String]) -> Result<&'static str, String> {
    accepted.iter().find_map(|v| KNOWN.iter().find(|k| **k == v.as_str()).copied()).ok_or_else(|| {
        "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
            .to_owned()
    })
}

/// The review of `request` (an `AdmissionRequest` without `uid`, object or old object) with
/// `uid`, `object` and `oldObject` (`null` where there is none), as JSON.
pub(super) fn request(
    version: &str,
    uid: &str,
    base: &Value,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> Vec<u8> {
    let mut request = base.clone();
    request["uid"] = json!(uid);
    request["object"] = obj.cloned().unwrap_or(Value::Null);
    request["oldObject"] = old.cloned().unwrap_or(Value::Null);
    let review = json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": request,
    });
    serde_json::to_vec(&review).expect("JSON")
}

/// What a webhook answered, verified.
#[derive(Debug, Default)]
pub(super) struct Response {
    pub allowed: bool,
    /// The `status` of a refusal.
    pub status: Option<Value>,
    /// A mutating webhook's JSON patch, decoded.
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
    /// Its `auditAnnotations`.
    pub annotations: Vec<(String, String)>,
}

/// Reads and verifies the answer to the review `uid` of `version`.
///
/// # Errors
///
/// The call error, in upstream's words after `failed calling webhook "<name>": `.
pub(super) fn response(
    version: &str,
    uid: &str,
    mutating: bool,
    answer: &Answer,
) -> Result<Response, String> {
    let review = answer.decoded().map_err(|e| format!("failed to call webhook: {e}"))?;
    let invalid = |why: String| format!("received invalid webhook response: {why}");
    let Some(r) = review.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent".into()));
    };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let patch_type = r.get("patchType").and_then(Value::as_str);
    let patch = r.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty());
    if version == "v1" {
        if text(r, "uid") != uid {
            return Err(invalid(format!("expected response.uid={uid:?}, got {:?}", text(r, "uid"))));
        }
        let (api_version, kind) = (text(&review, "apiVersion"), text(&review, "kind"));
        if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
            let gv = if api_version.contains('/') { api_version } else { format!("/{api_version}") };
            return Err(invalid(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {gv}, Kind={kind}"
            )));
        }
        match (mutating, patch.is_some(), patch_type) {
            (true, true, None) => {
                return Err(invalid("webhook returned response.patch but not response.patchType".into()));
            }
            (true, false, Some(_)) => {
                return Err(invalid("webhook returned response.patchType but not response.patch".into()));
            }
            (true, true, Some("")) => {
                return Err(invalid("webhook returned invalid response.patchType of \"\"".into()));
            }
            (false, true, _) => {
                return Err(invalid("validating webhook may not return response.patch".into()));
            }
            (false, false, Some(_)) => {
                return Err(invalid("validating webhook may not return response.patchType".into()));
            }
            _ => {}
        }
    }
    let patch = match patch.filter(|_| mutating) {
        None => None,
        Some(p) => {
            if let Some(t) = patch_type.filter(|t| *t != "JSONPatch") {
                return Err(format!("unsupported patch type {t:?}"));
            }
            let undecodable = |e: String| format!("received undecodable patch in webhook response: {e}");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| undecodable(e.to_string()))?;
            let ops: Value = serde_json::from_slice(&bytes).map_err(|e| undecodable(e.to_string()))?;
            if !ops.is_array() {
                return Err(undecodable(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into(),
                ));
            }
            Some(ops)
        }
    };
    Ok(Response {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: r.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings: strs(r.get("warnings")).into_iter().map(str::to_owned).collect(),
        annotations: r
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn answer(review: &Value) -> Answer {
        Answer { status: 200, body: Bytes::from(review.to_string()) }
    }

    #[test]
    fn a_response_is_verified_as_upstream_verifies_it() {
        let ok = json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": { "uid": "u1", "allowed": true, "warnings": ["w"], "auditAnnotations": { "k": "v" } } });
        let r = response("v1", "u1", false, &answer(&ok)).unwrap();
        assert!(r.allowed);
        assert_eq!(r.warnings, ["w"]);
        assert_eq!(r.annotations, [("k".to_owned(), "v".to_owned())]);
        assert_eq!(
            response("v1", "u2", false, &answer(&ok)).unwrap_err(),
            "received invalid webhook response: expected response.uid=\"u2\", got \"u1\""
        );
        let wrong = json!({ "apiVersion": "v1", "kind": "Status", "response": { "uid": "u1" } });
        assert_eq!(
            response("v1", "u1", false, &answer(&wrong)).unwrap_err(),
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /v1, Kind=Status"
        );
        let patch =
            base64::engine::general_purpose::STANDARD.encode(br#"[{"op":"add","path":"/a","value":1}]"#);
        let patched = json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": { "uid": "u1", "allowed": true, "patch": patch } });
        assert_eq!(
            response("v1", "u1", true, &answer(&patched)).unwrap_err(),
            "received invalid webhook response: webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            response("v1", "u1", false, &answer(&patched)).unwrap_err(),
            "received invalid webhook response: validating webhook may not return response.patch"
        );
        let mut typed = patched.clone();
        typed["response"]["patchType"] = json!("JSONPatch");
        let r = response("v1", "u1", true, &answer(&typed)).unwrap();
        assert_eq!(r.patch.unwrap()[0]["path"], "/a");
        assert!(
            response("v1", "u1", false, &answer(&json!({})))
                .unwrap_err()
                .ends_with("webhook response was absent")
        );
        let failed = Answer { status: 500, body: Bytes::from_static(b"boom\n") };
        assert_eq!(
            response("v1", "u1", false, &failed).unwrap_err(),
            "failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert!(version(&["v2".into()]).is_err());
        assert_eq!(version(&["v2".into(), "v1beta1".into(), "v1".into()]), Ok("v1beta1"));
    }
}
