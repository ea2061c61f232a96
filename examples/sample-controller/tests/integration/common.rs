//! What the sample-controller's test modules share: a sandbox with the Foo CRD, a client with its
//! own `User-Agent` (and fence), and the wait for a condition.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, PostParams};
use kube_sandbox::{Rollout, Sandbox, SandboxConfig};
use sample_controller::{Foo, foo};

/// A hang guard, not a deadline: every wait ends on the condition, long before this.
pub const LIMIT: Duration = Duration::from_secs(120);

/// Polls `check` until it gives a value, failing with `what` after [`LIMIT`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within {LIMIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A sandbox whose rollouts finish at once, with the Foo CRD established.
pub async fn sandbox_with_crd() -> Sandbox {
    let sb = Sandbox::with_config(SandboxConfig { rollout: Rollout::Instant, ..SandboxConfig::default() });
    let crds: Api<CustomResourceDefinition> = Api::all(sb.client());
    crds.create(&PostParams::default(), &foo::crd()).await.expect("the CRD is accepted");
    let foos: Api<Foo> = Api::default_namespaced(sb.client());
    eventually("the Foo CRD is served", || async { foos.list(&Default::default()).await.ok() }).await;
    sb
}

/// Waits until `check` holds (see [`eventually`]).
pub async fn until<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    eventually(what, || {
        let done = check();
        async move { done.await.then_some(()) }
    })
    .await;
}

/// A client of `sb` sending `User-Agent: <agent>`, its writes through `fence` when given.
pub fn client_as(sb: &Sandbox, agent: &str, fence: Option<kube_lease_election::Fence>) -> Client {
    let agent = http::HeaderValue::from_str(agent).unwrap();
    let service = tower::ServiceBuilder::new()
        .option_layer(fence.map(kube_lease_election::FenceLayer::new))
        .map_request(move |mut r: http::Request<kube::client::Body>| {
            r.headers_mut().insert(http::header::USER_AGENT, agent.clone());
            r
        })
        .service(sb.service());
    Client::new(service, "default")
}
