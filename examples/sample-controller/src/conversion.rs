//! The Foo's conversion webhook: a `ConversionReview` answered over HTTPS, converting Foos between
//! `v1alpha1` (upstream's shape, the stored version) and `v1` (the Deployment under
//! `spec.deployment`), as a CRD with [`crd_with_conversion`](crate::foo::crd_with_conversion)
//! asks the API server to call it.
//!
//! The conversion itself is [`convert`], a pure function of one object; [`review`] answers a
//! whole review with it; [`serve`] is the HTTPS server (`sample-controller webhook`). The API
//! server restores all metadata but labels and annotations from the object it sent, so only the
//! spec and the `apiVersion` are the webhook's business.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// `samplecontroller.k8s.io/v1alpha1`, the stored version.
pub const V1ALPHA1: &str = "samplecontroller.k8s.io/v1alpha1";
/// `samplecontroller.k8s.io/v1`.
pub const V1: &str = "samplecontroller.k8s.io/v1";

/// Why a Foo or a review could not be converted, or the server not started.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The desired version is neither of the Foo's.
    #[error("cannot convert Foo {name:?} to {to:?}: not a version of Foo")]
    UnknownVersion {
        /// The Foo's name.
        name: String,
        /// The version asked for.
        to: String,
    },
    /// The object is not a Foo of a known version.
    #[error("cannot convert Foo {name:?} from {from:?}: not a version of Foo")]
    UnknownSource {
        /// The Foo's name.
        name: String,
        /// Its `apiVersion`.
        from: String,
    },
    /// The object has no `spec` object.
    #[error("cannot convert Foo {name:?}: its spec is not an object")]
    NoSpec {
        /// The Foo's name.
        name: String,
    },
    /// The certificate or key could not be read.
    #[error("cannot read the webhook's {what}: {why}")]
    Tls {
        /// `certificate` or `private key`.
        what: &'static str,
        /// What the TLS library said.
        why: String,
    },
}

/// Converts one Foo (its JSON, with its `apiVersion`) to the version `to`.
///
/// ```
/// use sample_controller::conversion::{V1, convert};
/// let foo = serde_json::json!({ "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
///     "metadata": { "name": "example-foo" }, "spec": { "deploymentName": "example-foo", "replicas": 1 } });
/// let v1 = convert(foo, V1).unwrap();
/// assert_eq!(v1["spec"], serde_json::json!({ "deployment": { "name": "example-foo", "replicas": 1 } }));
/// ```
///
/// # Errors
///
/// An unknown source or target version, or no spec.
pub fn convert(mut foo: Value, to: &str) -> Result<Value, ConversionError> {
    let name = foo.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
    let from = foo.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_owned();
    if to != V1 && to != V1ALPHA1 {
        return Err(ConversionError::UnknownVersion { name, to: to.to_owned() });
    }
    if from != V1 && from != V1ALPHA1 {
        return Err(ConversionError::UnknownSource { name, from });
    }
    if from != to {
        let Some(spec) = foo.get_mut("spec").and_then(Value::as_object_mut) else {
            return Err(ConversionError::NoSpec { name });
        };
        let moved = if to == V1 { to_v1(spec) } else { to_v1alpha1(spec) };
        *spec = moved;
        foo["apiVersion"] = json!(to);
    }
    Ok(foo)
}

/// `v1alpha1`'s spec as `v1`'s: `deploymentName` and `replicas` under `deployment`.
fn to_v1(spec: &mut Map<String, Value>) -> Map<String, Value> {
    let mut deployment = Map::new();
    if let Some(name) = spec.remove("deploymentName") {
        deployment.insert("name".into(), name);
    }
    if let Some(replicas) = spec.remove("replicas") {
        deployment.insert("replicas".into(), replicas);
    }
    let mut out = std::mem::take(spec);
    out.insert("deployment".into(), Value::Object(deployment));
    out
}

/// `v1`'s spec as `v1alpha1`'s.
fn to_v1alpha1(spec: &mut Map<String, Value>) -> Map<String, Value> {
    let mut out = std::mem::take(spec);
    if let Some(Value::Object(mut deployment)) = out.remove("deployment") {
        if let Some(name) = deployment.remove("name") {
            out.insert("deploymentName".into(), name);
        }
        if let Some(replicas) = deployment.remove("replicas") {
            out.insert("replicas".into(), replicas);
        }
    }
    out
}

/// The answer to a `ConversionReview` (`apiextensions.k8s.io/v1`): every object converted, or a
/// `Failure` naming the first that could not be.
#[must_use]
pub fn review(review: &Value) -> Value {
    let request = &review["request"];
    let to = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Result<Vec<Value>, ConversionError> =
        objects.into_iter().map(|o| convert(o, to)).collect();
    let response = match converted {
        Ok(objects) => {
            json!({ "uid": request["uid"], "result": { "status": "Success" }, "convertedObjects": objects })
        }
        Err(e) => {
            json!({ "uid": request["uid"], "result": { "status": "Failure", "message": e.to_string() } })
        }
    };
    json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response })
}

/// A TLS server configuration from a PEM certificate chain and private key (what a cluster
/// mounts from the webhook's Secret).
///
/// # Errors
///
/// A certificate or key that cannot be read.
pub fn tls_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<rustls::ServerConfig>, ConversionError> {
    let tls = |what, why: String| ConversionError::Tls { what, why };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| tls("certificate", e.to_string()))?;
    if certs.is_empty() {
        return Err(tls("certificate", "no certificate in the PEM".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| tls("private key", e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls("certificate", e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls("certificate", e.to_string()))?;
    Ok(Arc::new(config))
}

/// Serves reviews at `POST /convert` over TLS on `listener` until `stop` is cancelled; any other
/// path is a 404, a body that is not a review a 400.
pub async fn serve(listener: TcpListener, tls: Arc<rustls::ServerConfig>, stop: CancellationToken) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "conversion webhook: accept failed");
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        let acceptor = acceptor.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(tcp).await else { return };
            let service = hyper::service::service_fn(answer);
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

/// One request's answer.
async fn answer(
    req: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<Full<Bytes>>, std::convert::Infallible> {
    let respond = |status: http::StatusCode, body: String| {
        let mut r = http::Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        Ok(r)
    };
    if req.method() != http::Method::POST || req.uri().path() != "/convert" {
        return respond(http::StatusCode::NOT_FOUND, json!({ "error": "not found" }).to_string());
    }
    let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return respond(
            http::StatusCode::BAD_REQUEST,
            json!({ "error": "the body could not be read" }).to_string(),
        );
    };
    match serde_json::from_slice::<Value>(&body) {
        Ok(r) if r["request"].is_object() => respond(http::StatusCode::OK, review(&r).to_string()),
        Ok(_) => {
            respond(http::StatusCode::BAD_REQUEST, json!({ "error": "not a ConversionReview" }).to_string())
        }
        Err(e) => respond(
            http::StatusCode::BAD_REQUEST,
            json!({ "error": format!("invalid JSON: {e}") }).to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alpha() -> Value {
        json!({ "apiVersion": V1ALPHA1, "kind": "Foo", "metadata": { "name": "f" },
            "spec": { "deploymentName": "d", "replicas": 2 }, "status": { "availableReplicas": 1 } })
    }

    #[test]
    fn a_foo_goes_to_v1_and_back_unchanged() {
        let v1 = convert(alpha(), V1).unwrap();
        assert_eq!(v1["spec"], json!({ "deployment": { "name": "d", "replicas": 2 } }));
        assert_eq!(v1["status"], json!({ "availableReplicas": 1 }));
        assert_eq!(convert(v1, V1ALPHA1).unwrap(), alpha());
        assert_eq!(convert(alpha(), V1ALPHA1).unwrap(), alpha());
    }

    #[test]
    fn a_review_is_answered_or_refused_naming_the_foo() {
        let ok = review(&json!({ "request": { "uid": "u", "desiredAPIVersion": V1, "objects": [alpha()] } }));
        assert_eq!(ok["response"]["uid"], "u");
        assert_eq!(ok["response"]["result"]["status"], "Success");
        assert_eq!(ok["response"]["convertedObjects"][0]["apiVersion"], V1);
        let bad =
            review(&json!({ "request": { "uid": "u", "desiredAPIVersion": "samplecontroller.k8s.io/v2",
            "objects": [alpha()] } }));
        assert_eq!(
            bad["response"]["result"]["message"],
            "cannot convert Foo \"f\" to \"samplecontroller.k8s.io/v2\": not a version of Foo"
        );
    }
}
