//! The record of every request, so tests can assert what a client did (client-go's fake
//! `Actions()`).

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// One request as the sandbox saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or the
    /// lower-cased HTTP method for paths that are not resources.
    pub verb: String,
    /// API group; empty for the core group and for non-resource paths.
    pub group: String,
    /// Resource plural (`configmaps`); empty for non-resource paths.
    pub resource: String,
    /// `status` or `scale`; empty for the object itself.
    pub subresource: String,
    /// Namespace; empty for cluster-wide requests.
    pub namespace: String,
    /// Object name; for a create, the created object's; empty for other collection requests.
    pub name: String,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// The HTTP status code answered; 0 when the connection was dropped without an answer.
    pub code: u16,
    /// The audit annotations admission added, as upstream's audit event carries them: a
    /// ValidatingAdmissionPolicy's `auditAnnotations` (`<policy>/<key>`), and the validations
    /// an `Audit` binding saw fail (`validation.policy.admission.k8s.io/validation_failure`).
    pub annotations: std::collections::BTreeMap<String, String>,
    /// When the request arrived (before any injected latency).
    pub at: Instant,
    /// From arrival until the answer was ready (its head, for a watch), injected latency
    /// included: the server's share of the request's time, as a client would see it less the
    /// network.
    pub took: Duration,
}

impl RequestRecord {
    /// Whether this request could change state.
    #[must_use]
    pub fn is_write(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }
}

/// The request log: what each client asked and what it was answered, in order.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let sandbox = kube_sandbox::Sandbox::with_config(kube_sandbox::SandboxConfig::bare());
/// let cms: kube::Api<ConfigMap> = kube::Api::default_namespaced(sandbox.client());
/// assert!(cms.get("missing").await.is_err());
/// let asked = sandbox.requests().all();
/// let last = asked.last().unwrap();
/// assert_eq!((last.verb.as_str(), last.resource.as_str(), last.name.as_str(), last.code), ("get", "configmaps", "missing", 404));
/// assert!(!last.is_write());
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Requests(Mutex<Vec<RequestRecord>>);

impl Requests {
    pub(crate) fn push(&self, r: RequestRecord) {
        self.0.lock().push(r);
    }

    /// Every request so far.
    #[must_use]
    pub fn all(&self) -> Vec<RequestRecord> {
        self.0.lock().clone()
    }

    /// Forgets the requests so far.
    pub fn clear(&self) {
        self.0.lock().clear();
    }

    /// Requests with this verb on this resource.
    #[must_use]
    pub fn count(&self, verb: &str, resource: &str) -> usize {
        self.0.lock().iter().filter(|r| r.verb == verb && r.resource == resource).count()
    }
}
