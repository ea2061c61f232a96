//! A webhook server of a test's own: HTTPS on a loopback port with a certificate of a CA made
//! for it, answering each review as the test decides and keeping every review it was sent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{Value, json};

/// What the test's webhook answers to a review's request.
type Decide = dyn Fn(&str, &Value) -> Value + Send + Sync;

/// A webhook server of the test: HTTPS on a loopback port, its CA's certificate for the
/// configuration, every review it was sent.
pub struct Webhook {
    pub addr: SocketAddr,
    pub ca: String,
    pub seen: Arc<Mutex<Vec<(String, Value)>>>,
    /// How many connections it accepted.
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl Webhook {
    /// Serves `decide` for an admission webhook (given the path called and the review's
    /// request, it answers the response's fields but uid) with a certificate for `names`.
    pub async fn start(
        names: &[&str],
        decide: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        Self::start_for("AdmissionReview", names, decide).await
    }

    /// As [`start`](Self::start), for reviews of `kind` (`AdmissionReview`, `ConversionReview`).
    pub async fn start_for(
        kind: &'static str,
        names: &[&str],
        decide: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let cert = CertificateParams::new(names).unwrap().signed_by(&key, &issuer).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let decide: Arc<Decide> = Arc::new(decide);
        let (kept, decide_all) = (Arc::clone(&seen), Arc::clone(&decide));
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (acceptor, seen, decide) = (acceptor.clone(), Arc::clone(&kept), Arc::clone(&decide_all));
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service =
                        hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                            let (seen, decide) = (Arc::clone(&seen), Arc::clone(&decide));
                            async move {
                                use http_body_util::BodyExt;
                                let path = req.uri().to_string();
                                let body = req.into_body().collect().await.unwrap().to_bytes();
                                let review: Value = serde_json::from_slice(&body).unwrap();
                                seen.lock().push((path.clone(), review.clone()));
                                let mut response = decide(&path, &review["request"]);
                                if let Some(delay) = response.get("delaySeconds").and_then(Value::as_u64) {
                                    tokio::time::sleep(Duration::from_secs(delay)).await;
                                    response.as_object_mut().unwrap().remove("delaySeconds");
                                }
                                response["uid"] = review["request"]["uid"].clone();
                                let answer = json!({ "apiVersion": review["apiVersion"], "kind": kind,
                                "response": response });
                                Ok::<_, std::convert::Infallible>(http::Response::new(
                                    http_body_util::Full::new(bytes::Bytes::from(answer.to_string())),
                                ))
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self { addr, ca, seen, connections }
    }

    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca)
    }

    /// A `clientConfig` calling `path` by URL.
    pub fn url(&self, path: &str) -> Value {
        json!({ "url": format!("https://{}{path}", self.addr), "caBundle": self.ca_bundle() })
    }

    /// The reviews sent to `path`.
    pub fn reviews(&self, path: &str) -> Vec<Value> {
        self.seen.lock().iter().filter(|(p, _)| p.starts_with(path)).map(|(_, r)| r.clone()).collect()
    }
}
