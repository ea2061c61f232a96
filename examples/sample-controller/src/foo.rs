//! The `Foo` kind (`samplecontroller.k8s.io/v1alpha1`), as upstream's
//! `pkg/apis/samplecontroller/v1alpha1/types.go` declares it: a Deployment's name and replica
//! count in its spec, the Deployment's available replicas in its status.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResource, CustomResourceExt, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation an API group under `k8s.io` needs (KEP-1111); upstream's sample carries this
/// value, which says the API was never approved.
pub const API_APPROVED: (&str, &str) = ("api-approved.kubernetes.io", "unapproved, experimental-only");

/// What a Foo asks for: a Deployment named `deploymentName` with `replicas` replicas.
// Three `printcolumn(type_ = ...)`s are three columns, not a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, KubeSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    doc = "A Foo names a Deployment and its replica count; its status reports the Deployment's available replicas.",
    printcolumn(name = "Deployment", type_ = "string", json_path = ".spec.deploymentName"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Available", type_ = "integer", json_path = ".status.availableReplicas")
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The Deployment's name, in the Foo's namespace. It cannot change: the Deployment of the
    /// old name would be left behind, still owned by the Foo.
    #[schemars(length(min = 1))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("deploymentName is immutable"))]
    pub deployment_name: String,
    /// How many replicas the Deployment runs.
    #[schemars(range(min = 0))]
    pub replicas: i32,
}

/// What the controller observed of the Foo's Deployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// The Deployment's `status.availableReplicas`.
    pub available_replicas: i32,
}

/// The Foo CRD: kube-derive's, with the [`API_APPROVED`] annotation its `k8s.io` group needs
/// (on the CRD only, not on every Foo, which is why it is not a `#[kube(annotation)]`).
#[must_use]
pub fn crd() -> CustomResourceDefinition {
    let mut crd = Foo::crd();
    crd.metadata
        .annotations
        .get_or_insert_default()
        .insert(API_APPROVED.0.to_owned(), API_APPROVED.1.to_owned());
    crd
}

/// `samplecontroller.k8s.io/v1`: the same Foo with the Deployment's name and replicas under
/// `spec.deployment`. Foos are stored in `v1alpha1`, the version the controller reads; a cluster
/// serves `v1` through the example's conversion webhook ([`crate::conversion`]), with the CRD
/// [`crd_with_conversion`] makes.
pub mod v1 {
    use kube::{CustomResource, KubeSchema};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// What a `v1` Foo asks for.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, KubeSchema)]
    #[kube(
        group = "samplecontroller.k8s.io",
        version = "v1",
        kind = "Foo",
        namespaced,
        status = "super::FooStatus",
        doc = "A Foo names a Deployment and its replica count; its status reports the Deployment's available replicas."
    )]
    #[serde(rename_all = "camelCase")]
    pub struct FooSpec {
        /// The Deployment this Foo runs.
        pub deployment: DeploymentRef,
    }

    /// A Deployment's name and replica count.
    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct DeploymentRef {
        /// The Deployment's name, in the Foo's namespace.
        #[schemars(length(min = 1))]
        pub name: String,
        /// How many replicas it runs.
        #[schemars(range(min = 0))]
        pub replicas: i32,
    }
}

/// The Foo CRD with both versions, `v1alpha1` stored, converted by the webhook `client_config`
/// names (`spec.conversion.webhook.clientConfig`: a `url` or a `service`, and its `caBundle`).
///
/// # Panics
///
/// Never: the two versions are of one kind, group and scope.
#[must_use]
pub fn crd_with_conversion(
    client_config: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig,
) -> CustomResourceDefinition {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceConversion, WebhookConversion,
    };
    let mut crd = kube::core::crd::merge_crds(vec![crd(), v1::Foo::crd()], "v1alpha1")
        .expect("the versions of one kind merge");
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(client_config),
            conversion_review_versions: vec!["v1".into()],
        }),
    });
    crd
}
