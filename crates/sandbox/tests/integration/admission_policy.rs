//! ValidatingAdmissionPolicy, enforced as a cluster enforces it: a binding's policy refuses,
//! warns of or audits the writes it matches, with its params, variables, match conditions and
//! failure policy — through a real `kube::Client` in-process, and over HTTPS with kubectl.

use http::Method;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_sandbox::{Sandbox, SandboxConfig, UserInfo};
use serde_json::{Value, json};

use super::upstream::call_with_headers;

const GROUP: &str = "admissionregistration.k8s.io/v1";

async fn seed(sb: &Sandbox, obj: Value) {
    sb.seed(obj.clone()).unwrap_or_else(|e| panic!("{obj}: {e:?}"));
}

/// The policy of the tests: a Deployment may have at most its params' `data.max` replicas.
fn max_replicas_policy() -> Value {
    json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy",
        "metadata": { "name": "max-replicas" },
        "spec": {
            "paramKind": { "apiVersion": "v1", "kind": "ConfigMap" },
            "matchConstraints": { "resourceRules": [{ "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"] }] },
            "variables": [{ "name": "replicas", "expression": "object.spec.replicas" }],
            "validations": [{
                "expression": "variables.replicas <= int(params.data.max)",
                "messageExpression": "'replicas ' + string(variables.replicas) + ' > ' + params.data.max",
                "reason": "Forbidden",
            }],
            "auditAnnotations": [{ "key": "replicas", "valueExpression": "string(variables.replicas)" }],
        } })
}

/// A binding of `policy` named `name`, for namespaces labelled `env: <env>`.
fn binding(name: &str, policy: &str, env: &str, actions: &[&str], param_ref: Value) -> Value {
    json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": { "name": name },
        "spec": { "policyName": policy, "validationActions": actions, "paramRef": param_ref,
            "matchResources": { "namespaceSelector": { "matchLabels": { "env": env } } } } })
}

fn namespace(name: &str, env: &str) -> Value {
    json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name, "labels": { "env": env } } })
}

fn limits(ns: &str, max: u32) -> Value {
    json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "limits", "namespace": ns },
        "data": { "max": max.to_string() } })
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({ "metadata": { "name": name }, "spec": { "replicas": replicas,
        "selector": { "matchLabels": { "app": name } },
        "template": { "metadata": { "labels": { "app": name } },
            "spec": { "containers": [{ "name": "c", "image": "nginx" }] } } } }))
    .expect("a Deployment")
}

/// A refusal's code, reason and message.
struct Refusal {
    code: u16,
    reason: String,
    message: String,
}

/// The ValidatingAdmissionPolicies, through a dynamic `Api`.
fn policies(sb: &Sandbox) -> Api<kube::api::DynamicObject> {
    let gvk =
        kube::api::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy");
    Api::all_with(
        sb.client(),
        &kube::api::ApiResource::from_gvk_with_plural(&gvk, "validatingadmissionpolicies"),
    )
}

fn api_error(e: kube::Error) -> Refusal {
    match e {
        kube::Error::Api(s) => Refusal { code: s.code, reason: s.reason.clone(), message: s.message.clone() },
        other => panic!("not a Status: {other}"),
    }
}

#[tokio::test]
async fn a_binding_denies_what_its_policy_refuses_with_its_params() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    seed(&sb, max_replicas_policy()).await;
    let by_name = json!({ "name": "limits", "parameterNotFoundAction": "Deny" });
    seed(&sb, binding("max-replicas-prod", "max-replicas", "prod", &["Deny"], by_name)).await;
    for (ns, env) in [("prod", "prod"), ("prod-new", "prod"), ("dev", "dev")] {
        seed(&sb, namespace(ns, env)).await;
    }
    seed(&sb, limits("prod", 3)).await;
    let prod: Api<Deployment> = Api::namespaced(sb.client(), "prod");

    let e = api_error(prod.create(&PostParams::default(), &deployment("web", 5)).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding \
         'max-replicas-prod' denied request: replicas 5 > 3"
    );
    prod.create(&PostParams::default(), &deployment("web", 3)).await.expect("within the limit");
    // An update is held to it too.
    let scale = Patch::Merge(json!({ "spec": { "replicas": 4 } }));
    let e = api_error(prod.patch("web", &PatchParams::default(), &scale).await.unwrap_err());
    assert!(e.message.ends_with("denied request: replicas 4 > 3"), "{}", e.message);

    // No binding matches a namespace without the label.
    let dev: Api<Deployment> = Api::namespaced(sb.client(), "dev");
    dev.create(&PostParams::default(), &deployment("web", 9)).await.expect("not bound in dev");

    // The params are missing and the binding says Deny: a configuration error, Invalid.
    let fresh: Api<Deployment> = Api::namespaced(sb.client(), "prod-new");
    let e = api_error(fresh.create(&PostParams::default(), &deployment("web", 1)).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(
        e.message.ends_with(
            "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-prod' denied request: \
             failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        e.message
    );
    // Once the params exist, the policy holds there too.
    seed(&sb, limits("prod-new", 2)).await;
    fresh.create(&PostParams::default(), &deployment("web", 2)).await.expect("the params now exist");
}

#[tokio::test]
async fn warn_and_audit_bindings_let_the_write_through_and_say_why() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    seed(&sb, max_replicas_policy()).await;
    let by_selector =
        json!({ "selector": { "matchLabels": { "limits": "yes" } }, "parameterNotFoundAction": "Allow" });
    seed(&sb, binding("max-replicas-staging", "max-replicas", "staging", &["Warn", "Audit"], by_selector))
        .await;
    seed(&sb, namespace("staging", "staging")).await;
    let mut params = limits("staging", 1);
    params["metadata"]["labels"] = json!({ "limits": "yes" });
    seed(&sb, params).await;

    let body = serde_json::to_value(deployment("web", 2)).unwrap();
    sb.requests().clear();
    let (code, _, warnings, v) =
        call_with_headers(&sb, Method::POST, "/apis/apps/v1/namespaces/staging/deployments", &[], Some(body))
            .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        warnings,
        [
            r#"299 - "Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-staging': replicas 2 > 1""#
        ]
    );
    let record = sb.requests().all().into_iter().find(|r| r.verb == "create").expect("the create's record");
    assert_eq!(record.annotations["max-replicas/replicas"], "2");
    let failure: Value =
        serde_json::from_str(&record.annotations["validation.policy.admission.k8s.io/validation_failure"])
            .unwrap();
    assert_eq!(
        failure,
        json!([{ "message": "replicas 2 > 1", "policy": "max-replicas", "binding": "max-replicas-staging",
                 "expressionIndex": 0, "validationActions": ["Warn", "Audit"] }])
    );
}

#[tokio::test]
async fn match_conditions_users_and_the_failure_policy_decide_as_upstream() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let policy = |name: &str, failure: &str| {
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": { "name": name },
            "spec": {
                "failurePolicy": failure,
                "matchConstraints": { "resourceRules": [{ "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"] }] },
                "matchConditions": [{ "name": "not-exempt",
                    "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)" }],
                "validations": [
                    { "expression": "request.userInfo.username != 'mallory'", "message": "not mallory" },
                    { "expression": "object.data.size() < 3" },
                ] } })
    };
    seed(&sb, policy("small-configmaps", "Fail")).await;
    seed(
        &sb,
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": { "name": "small" },
            "spec": { "policyName": "small-configmaps", "validationActions": ["Deny"] } }),
    )
    .await;
    let cm = |name: &str, data: Value, labels: Value| -> ConfigMap {
        serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels }, "data": data }))
            .unwrap()
    };
    let admin: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let e = api_error(
        admin
            .create(&PostParams::default(), &cm("big", json!({"a": "1", "b": "2", "c": "3"}), json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(
        e.message.ends_with("denied request: failed expression: object.data.size() < 3"),
        "{}",
        e.message
    );
    // A match condition that is false skips the policy.
    admin
        .create(
            &PostParams::default(),
            &cm("big", json!({"a": "1", "b": "2", "c": "3"}), json!({ "exempt": "yes" })),
        )
        .await
        .expect("exempt");
    // The user making the request is `request.userInfo`.
    let mallory: Api<ConfigMap> = Api::default_namespaced(sb.client_as(UserInfo::new("mallory", ["devs"])));
    let e =
        api_error(mallory.create(&PostParams::default(), &cm("m", json!({}), json!({}))).await.unwrap_err());
    assert!(e.message.ends_with("denied request: not mallory"), "{}", e.message);
    // An expression that fails to evaluate refuses the write under `Fail`...
    let e = api_error(
        admin.create(&PostParams::default(), &cm("no-data", Value::Null, json!({}))).await.unwrap_err(),
    );
    assert!(
        e.message.ends_with(
            "denied request: expression 'object.data.size() < 3' resulted in error: no such key: data"
        ),
        "{}",
        e.message
    );
    // ...and is let through under `Ignore`.
    let mut ignore = policy("small-configmaps", "Ignore");
    let stored = policies(&sb);
    let rv = stored.get("small-configmaps").await.unwrap().metadata.resource_version;
    ignore["metadata"]["resourceVersion"] = json!(rv);
    stored
        .replace("small-configmaps", &PostParams::default(), &serde_json::from_value(ignore).unwrap())
        .await
        .expect("a policy's own writes are never held to a policy");
    admin.create(&PostParams::default(), &cm("no-data", Value::Null, json!({}))).await.expect("ignored");
}

#[tokio::test]
async fn a_policy_that_cannot_be_applied_and_an_expression_that_does_not_compile() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let policies = policies(&sb);
    let mut bad = max_replicas_policy();
    bad["spec"]["validations"][0]["expression"] = json!("object.spec.replicas <");
    let e = api_error(
        policies.create(&PostParams::default(), &serde_json::from_value(bad).unwrap()).await.unwrap_err(),
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains(
            "spec.validations[0].expression: Invalid value: \"object.spec.replicas <\": compilation failed: ERROR: <input>:1:"
        ),
        "{}",
        e.message
    );
    // A paramKind that names no served kind: every write it matches is refused (Fail).
    let mut unknown = max_replicas_policy();
    unknown["spec"]["paramKind"] = json!({ "apiVersion": "example.com/v1", "kind": "Nope" });
    seed(&sb, unknown).await;
    seed(
        &sb,
        binding(
            "b",
            "max-replicas",
            "prod",
            &["Deny"],
            json!({ "name": "limits", "parameterNotFoundAction": "Allow" }),
        ),
    )
    .await;
    seed(&sb, namespace("prod", "prod")).await;
    let prod: Api<Deployment> = Api::namespaced(sb.client(), "prod");
    let e = api_error(prod.create(&PostParams::default(), &deployment("web", 1)).await.unwrap_err());
    assert!(
        e.message.ends_with(
            "ValidatingAdmissionPolicy 'max-replicas' denied request: failed to configure policy: \
             failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'"
        ),
        "{}",
        e.message
    );
}

#[test]
fn kubectl_meets_a_policy_over_https() {
    let Some(k) = crate::kubectl::Kubectl::start("admission-policy") else { return };
    let manifest = k.path("policy.yaml");
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": [
        max_replicas_policy(),
        binding("max-replicas-default", "max-replicas", "dev", &["Deny"], json!({ "name": "limits", "parameterNotFoundAction": "Allow" })),
        binding("max-replicas-warn", "max-replicas", "dev", &["Warn"], json!({ "name": "limits", "parameterNotFoundAction": "Allow" })),
        limits("default", 2),
    ] });
    std::fs::write(&manifest, list.to_string()).unwrap();
    k.ok(&["label", "namespace", "default", "env=dev"]);
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    let err = k.fails(&["create", "deployment", "web", "--image=nginx", "--replicas=3"]);
    assert!(err.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-warn': replicas 3 > 2"), "{err}");
    assert!(
        err.contains(
            "error: failed to create deployment: deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy \
             'max-replicas' with binding 'max-replicas-default' denied request: replicas 3 > 2"
        ),
        "{err}"
    );
    k.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2"]);
}

#[tokio::test]
async fn a_delete_is_admitted_with_the_stored_object_as_old_object() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    seed(
        &sb,
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": { "name": "keep-protected" },
            "spec": {
                "matchConstraints": { "resourceRules": [{ "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["DELETE"], "resources": ["configmaps"] }] },
                "validations": [{
                    "expression": "object == null && !(has(oldObject.metadata.labels) && oldObject.metadata.labels.exists(k, k == 'protected' && oldObject.metadata.labels[k] == 'true'))",
                    "messageExpression": "oldObject.metadata.name + ' is protected'",
                }] } }),
    )
    .await;
    seed(
        &sb,
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": { "name": "keep-protected" },
            "spec": { "policyName": "keep-protected", "validationActions": ["Deny"] } }),
    )
    .await;
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client());
    for (name, protected) in [("keep", "true"), ("scratch", "false"), ("other", "true")] {
        let cm: ConfigMap = serde_json::from_value(
            json!({ "metadata": { "name": name, "labels": { "protected": protected } } }),
        )
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.expect("creates are not matched");
    }
    let e = api_error(cms.delete("keep", &Default::default()).await.unwrap_err());
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            422,
            "configmaps \"keep\" is forbidden: ValidatingAdmissionPolicy 'keep-protected' with binding \
             'keep-protected' denied request: keep is protected"
        )
    );
    cms.delete("scratch", &Default::default()).await.expect("not protected");
    // A collection's delete admits each item: the protected ones stay.
    let e = api_error(cms.delete_collection(&Default::default(), &Default::default()).await.unwrap_err());
    assert!(e.message.ends_with("denied request: keep is protected"), "{}", e.message);
    assert!(cms.get_opt("keep").await.unwrap().is_some());
}

/// A policy's `authorizer` asks the sandbox's authorizer (RBAC here) what the request's user,
/// or a service account it names, may do: on another resource, on the request's own
/// (`authorizer.requestResource`), as upstream's authorizer library.
#[tokio::test]
async fn the_authorizer_variable_asks_rbac_for_the_requests_user_and_for_service_accounts() {
    let sb = Sandbox::with_config(SandboxConfig {
        authorization: kube_sandbox::Authorization::Rbac,
        ..SandboxConfig::bare()
    });
    let role = |name: &str, resources: &[&str], verbs: &[&str]| {
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": { "name": name, "namespace": "default" },
            "rules": [{ "apiGroups": [""], "resources": resources, "verbs": verbs }] })
    };
    let bind = |name: &str, role: (&str, &str), subject: Value| {
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": { "name": name, "namespace": "default" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role.0, "name": role.1 },
            "subjects": [subject] })
    };
    let user = |name: &str| json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name });
    seed(&sb, role("cm-writer", &["configmaps"], &["create", "update"])).await;
    seed(&sb, role("cm-creator", &["configmaps"], &["create"])).await;
    seed(&sb, role("cm-reader", &["configmaps"], &["get"])).await;
    seed(&sb, role("keeper", &["configmaps", "secrets"], &["create", "update", "delete"])).await;
    seed(&sb, bind("bob", ("Role", "cm-writer"), user("bob"))).await;
    seed(&sb, bind("carol", ("Role", "cm-creator"), user("carol"))).await;
    seed(&sb, bind("alice", ("Role", "keeper"), user("alice"))).await;
    let builder = json!({ "kind": "ServiceAccount", "name": "builder", "namespace": "default" });
    seed(&sb, bind("builder", ("Role", "cm-reader"), builder)).await;
    seed(
        &sb,
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": { "name": "who-may" },
            "spec": {
                "matchConstraints": { "resourceRules": [{ "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"] }] },
                "validations": [
                    { "expression": "!has(object.metadata.labels) || !('sensitive' in object.metadata.labels) || authorizer.group('').resource('secrets').namespace(request.namespace).check('delete').allowed()",
                      "message": "only who may delete secrets here labels a ConfigMap sensitive" },
                    { "expression": "authorizer.requestResource.check('update').allowed()",
                      "message": "who creates a ConfigMap must be able to update it" },
                    { "expression": "authorizer.serviceAccount(request.namespace, 'builder').group('').resource('configmaps').namespace(request.namespace).name(object.metadata.name).check('get').allowed()",
                      "message": "the builder service account must be able to read it" },
                ] } }),
    )
    .await;
    seed(
        &sb,
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": { "name": "who-may" },
            "spec": { "policyName": "who-may", "validationActions": ["Deny"] } }),
    )
    .await;
    let cm = |name: &str, sensitive: bool| -> ConfigMap {
        let labels = if sensitive { json!({ "sensitive": "yes" }) } else { json!({}) };
        serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels } })).unwrap()
    };
    let as_user = |name: &str| -> Api<ConfigMap> {
        Api::default_namespaced(sb.client_as(UserInfo::new(name, Vec::<String>::new())))
    };
    let denied = |e: kube::Error| {
        let e = api_error(e);
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{}", e.message);
        e.message
    };
    let create = PostParams::default();

    as_user("bob").create(&create, &cm("plain", false)).await.expect("bob may create and update");
    let message = denied(as_user("bob").create(&create, &cm("bobs", true)).await.unwrap_err());
    assert!(
        message.ends_with("denied request: only who may delete secrets here labels a ConfigMap sensitive"),
        "{message}"
    );
    as_user("alice").create(&create, &cm("alices", true)).await.expect("alice may delete secrets");
    let message = denied(as_user("carol").create(&create, &cm("carols", false)).await.unwrap_err());
    assert!(
        message.ends_with("denied request: who creates a ConfigMap must be able to update it"),
        "{message}"
    );

    // The service account is asked about, not the user: without its binding even the
    // administrator is refused.
    let bindings: Api<kube::api::DynamicObject> = Api::namespaced_with(
        sb.client(),
        "default",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            "rolebindings",
        ),
    );
    bindings.delete("builder", &Default::default()).await.expect("the binding goes");
    let admin: Api<ConfigMap> = Api::default_namespaced(sb.client());
    let message = denied(admin.create(&create, &cm("admins", false)).await.unwrap_err());
    assert!(
        message.ends_with("denied request: the builder service account must be able to read it"),
        "{message}"
    );
}

#[tokio::test]
async fn a_policys_expressions_stop_at_upstreams_cost_limits() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    // `s.matches(R)` on 99,000 characters costs ⌈99,001 × 0.1⌉ × ⌈400 × 0.25⌉ = 990,100, and
    // 3 for reading `object.data.s`: just under the per-call limit.
    let regex = "b*".repeat(200);
    let costly = format!("object.data.s.matches('{regex}')");
    let policy = |name: &str, spec: Value| {
        let mut spec = spec;
        spec["matchConstraints"] = json!({ "resourceRules": [{ "apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"] }] });
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": { "name": name },
            "spec": spec })
    };
    let many = |n: usize, e: &str| -> Vec<Value> { (0..n).map(|_| json!({ "expression": e })).collect() };
    let scenarios = [
        // One evaluation past 1,000,000 is an error.
        ("one", json!({ "validations": many(1, &costly) })),
        // Eleven validations of 990,103 each: the eleventh runs past 10,000,000.
        ("validations", json!({ "validations": many(11, &costly) })),
        // A variable is evaluated once and charged once, however many read it.
        (
            "variable",
            json!({ "variables": [{ "name": "ok", "expression": costly }],
            "validations": many(11, "variables.ok") }),
        ),
        // A variable past the per-call limit fails where it is read.
        (
            "big-variable",
            json!({ "variables": [{ "name": "big",
            "expression": format!("{costly} && {costly}") }], "validations": many(1, "variables.big") }),
        ),
        // Three match conditions share 2,500,000.
        (
            "conditions",
            json!({ "matchConditions": (0..3).map(|i| json!({ "name": format!("c{i}"),
            "expression": costly })).collect::<Vec<_>>(), "validations": many(1, "true") }),
        ),
        // Nine validations leave 1,089,073 for the message expressions: the second runs out,
        // and every validation is then an error, passed or not.
        (
            "messages",
            json!({ "validations": (0..9).map(|i| if i < 2 {
                json!({ "expression": costly, "messageExpression": format!("{costly} ? 'a' : 'b'") })
            } else {
                json!({ "expression": costly })
            }).collect::<Vec<_>>() }),
        ),
    ];
    for (name, spec) in scenarios {
        seed(&sb, policy(name, spec)).await;
        seed(
            &sb,
            json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicyBinding", "metadata": { "name": name },
                "spec": { "policyName": name, "validationActions": ["Deny"],
                    "matchResources": { "namespaceSelector": { "matchLabels": { "env": name } } } } }),
        )
        .await;
        seed(&sb, namespace(name, name)).await;
    }
    let create = |ns: &'static str, chars: usize| {
        let api: Api<ConfigMap> = Api::namespaced(sb.client(), ns);
        let cm: ConfigMap = serde_json::from_value(
            json!({ "metadata": { "name": "big" }, "data": { "s": "b".repeat(chars) } }),
        )
        .unwrap();
        async move { api.create(&PostParams::default(), &cm).await }
    };
    let denied = |ns: &str, why: &str| {
        format!(
            "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy '{ns}' with binding '{ns}' denied request: {why}"
        )
    };
    let out = "validation failed due to running out of cost budget, no further validation rules will be run";

    let e = api_error(create("one", 100_000).await.unwrap_err());
    let why =
        format!("expression '{costly}' resulted in error: operation cancelled: actual cost limit exceeded");
    assert_eq!(e.message, denied("one", &why));
    create("one", 99_000).await.expect("within the limit");

    let e = api_error(create("validations", 99_000).await.unwrap_err());
    assert_eq!(e.message, denied("validations", out));
    // Shorter strings cost less: all eleven fit.
    create("validations", 90_000).await.expect("within the budget");

    create("variable", 99_000).await.expect("the variable is charged once");

    let e = api_error(create("big-variable", 99_000).await.unwrap_err());
    assert_eq!(
        e.message,
        denied(
            "big-variable",
            "expression 'variables.big' resulted in error: composited variable \"big\" fails to evaluate: \
             operation cancelled: actual cost limit exceeded"
        )
    );

    let e = api_error(create("conditions", 99_000).await.unwrap_err());
    assert_eq!(e.message, denied("conditions", out));

    let e = api_error(create("messages", 99_000).await.unwrap_err());
    assert_eq!(e.message, denied("messages", &format!("failed messageExpression: {out}")));
}

#[tokio::test]
async fn a_policys_status_tells_its_type_errors_per_kind() {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let policy = |validations: Value| {
        json!({ "apiVersion": GROUP, "kind": "ValidatingAdmissionPolicy", "metadata": { "name": "typed" },
            "spec": {
                "paramKind": { "apiVersion": "v1", "kind": "ConfigMap" },
                "matchConstraints": { "resourceRules": [
                    { "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                      "resources": ["deployments", "statefulsets"] }] },
                "validations": validations } })
    };
    seed(
        &sb,
        policy(json!([
            { "expression": "object.spec.replicas <= int(params.data.max)" },
            { "expression": "object.spec.replica > 0" },
            { "expression": "object.spec.replicas >= 0", "messageExpression": "'n: ' + object.spec.replicas" },
            { "expression": "params.date.size() > 0 && object.metadata.labels['a'] == 'b'" },
        ])),
    )
    .await;
    let policies = policies(&sb);
    let observed = |generation: i64| {
        let policies = policies.clone();
        async move {
            loop {
                let p = policies.get("typed").await.unwrap();
                let status = p.data["status"].clone();
                if status["observedGeneration"] == json!(generation) {
                    return (p, status);
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    };
    let (p, status) = observed(1).await;
    let per_kind = |error: &str| {
        ["apps/v1, Kind=Deployment", "apps/v1, Kind=StatefulSet"]
            .map(|k| format!("{k}: {error}\n"))
            .join("\n")
    };
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        json!([
            { "fieldRef": "spec.validations[1].expression", "warning": per_kind(
                "ERROR: <input>:1:12: undefined field 'replica'\n | object.spec.replica > 0\n | ...........^") },
            { "fieldRef": "spec.validations[2].messageExpression", "warning": per_kind(
                "ERROR: <input>:1:7: found no matching overload for '_+_' applied to '(string, int)'\n | 'n: ' + object.spec.replicas\n | ......^") },
            { "fieldRef": "spec.validations[3].expression", "warning": per_kind(
                "ERROR: <input>:1:7: undefined field 'date'\n | params.date.size() > 0 && object.metadata.labels['a'] == 'b'\n | ......^") },
        ])
    );
    // Written by kube-controller-manager's controller, through the status verb.
    let managers: Vec<(String, String)> = p
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|m| (m.manager.unwrap_or_default(), m.subresource.unwrap_or_default()))
        .collect();
    assert!(
        managers.contains(&("validatingadmissionpolicy-status-controller".to_owned(), "status".to_owned())),
        "{managers:?}"
    );
    // A new generation is checked again: fixed, it has no warnings.
    let mut fixed = policy(json!([{ "expression": "object.spec.replicas <= int(params.data.max)" }]));
    fixed["metadata"]["resourceVersion"] = json!(p.metadata.resource_version);
    policies.replace("typed", &PostParams::default(), &serde_json::from_value(fixed).unwrap()).await.unwrap();
    let (_, status) = observed(2).await;
    assert_eq!(status["typeChecking"], json!({}));
}
