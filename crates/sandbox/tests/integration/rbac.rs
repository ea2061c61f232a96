//! RBAC, opt-in: what a user may do is what its bindings grant, refused with upstream's 403,
//! and the access reviews say so truthfully — through a real `kube::Client` in-process, and
//! over HTTPS with kubectl.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{SelfSubjectRulesReview, SubjectAccessReview};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube_sandbox::{Authorization, Sandbox, SandboxConfig, UserInfo};
use serde_json::{Value, json};

fn rbac_sandbox() -> Sandbox {
    Sandbox::with_config(SandboxConfig { authorization: Authorization::Rbac, ..SandboxConfig::bare() })
}

fn alice() -> UserInfo {
    UserInfo::new("alice", ["devs"])
}

/// Creates `obj` as the administrator.
async fn seed(sb: &Sandbox, obj: Value) {
    sb.seed(obj.clone()).unwrap_or_else(|e| panic!("{obj}: {e:?}"));
}

/// User `name` as a binding's subject.
fn user(name: &str) -> Value {
    json!({ "kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io" })
}

/// RoleBinding `name` in `default` of `role` (its kind and name) to `subject`.
async fn bind(sb: &Sandbox, name: &str, (kind, role): (&str, &str), subject: Value) {
    seed(
        sb,
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": { "name": name, "namespace": "default" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role },
        "subjects": [subject] }),
    )
    .await;
}

/// A Role in `default` granting `verbs` on configmaps, bound to `subject`.
async fn grant_configmaps(sb: &Sandbox, verbs: &[&str], subject: Value) {
    seed(
        sb,
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": { "name": "cm", "namespace": "default" },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": verbs }] }),
    )
    .await;
    bind(sb, "cm", ("Role", "cm"), subject).await;
}

fn api_error(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("not a Status: {other}"),
    }
}

#[tokio::test]
async fn a_user_may_do_what_its_bindings_grant_and_is_refused_as_upstream_refuses() {
    let sb = rbac_sandbox();
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client_as(alice()));
    let (code, message) = api_error(cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    grant_configmaps(
        &sb,
        &["get", "list", "create"],
        json!({ "kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io" }),
    )
    .await;
    let cm: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": "app" } })).unwrap();
    cms.create(&PostParams::default(), &cm).await.expect("create is granted");
    assert_eq!(cms.list(&ListParams::default()).await.unwrap().items.len(), 1);
    let (code, message) = api_error(cms.delete("app", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        r#"configmaps "app" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "default""#
    );
    // A Role grants nothing outside its namespace, nor on another resource.
    let elsewhere: Api<ConfigMap> = Api::namespaced(sb.client_as(alice()), "kube-system");
    assert_eq!(api_error(elsewhere.list(&ListParams::default()).await.unwrap_err()).0, 403);
    let pods: Api<Pod> = Api::default_namespaced(sb.client_as(alice()));
    let (_, message) = api_error(pods.get_opt("web").await.unwrap_err());
    assert!(
        message.starts_with(r#"pods "web" is forbidden: User "alice" cannot get resource "pods""#),
        "{message}"
    );
    // The administrator (system:masters) is never refused.
    let admin: Api<Pod> = Api::default_namespaced(sb.client());
    admin.list(&ListParams::default()).await.expect("the administrator may list pods");
}

#[tokio::test]
async fn a_binding_to_a_missing_role_is_the_reason_of_the_refusal() {
    let sb = rbac_sandbox();
    bind(&sb, "ghostly", ("Role", "ghost"), user("alice")).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(sb.client_as(alice()));
    let (_, message) = api_error(cms.list(&ListParams::default()).await.unwrap_err());
    assert!(message.ends_with(r#": RBAC: role.rbac.authorization.k8s.io "ghost" not found"#), "{message}");
}

#[tokio::test]
async fn service_accounts_are_bound_by_namespace_and_name() {
    let sb = rbac_sandbox();
    grant_configmaps(
        &sb,
        &["list"],
        json!({ "kind": "ServiceAccount", "name": "builder", "namespace": "default" }),
    )
    .await;
    let builder: Api<ConfigMap> =
        Api::default_namespaced(sb.client_as(UserInfo::service_account("default", "builder")));
    builder.list(&ListParams::default()).await.expect("granted to the account");
    let other: Api<ConfigMap> =
        Api::default_namespaced(sb.client_as(UserInfo::service_account("shop", "builder")));
    let (_, message) = api_error(other.list(&ListParams::default()).await.unwrap_err());
    assert!(message.contains(r#"User "system:serviceaccount:shop:builder" cannot list"#), "{message}");
}

#[tokio::test]
async fn aggregated_roles_gather_the_rules_of_the_roles_labelled_for_them() {
    let sb = rbac_sandbox();
    let roles: Api<ClusterRole> = Api::all(sb.client());
    // `view` starts empty and is filled by the aggregation controller.
    let view = until(&roles, "view", |r| !r.rules.clone().unwrap_or_default().is_empty()).await;
    let rules = serde_json::to_value(view.rules).unwrap();
    assert!(rules.to_string().contains("\"pods\""), "{rules}");
    seed(&sb, json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "widgets-view", "labels": { "rbac.authorization.k8s.io/aggregate-to-view": "true" } },
        "rules": [{ "apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"] }] }))
    .await;
    for role in ["view", "edit", "admin"] {
        until(&roles, role, |r| serde_json::to_string(&r.rules).unwrap().contains("widgets")).await;
    }
    // Bound to `view` in a namespace, a user may read pods there and not write them.
    bind(&sb, "alice-view", ("ClusterRole", "view"), user("alice")).await;
    let pods: Api<Pod> = Api::default_namespaced(sb.client_as(alice()));
    pods.list(&ListParams::default()).await.expect("view reads pods");
    let pod: Pod = serde_json::from_value(
        json!({ "metadata": { "name": "p" }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } }),
    )
    .unwrap();
    assert_eq!(api_error(pods.create(&PostParams::default(), &pod).await.unwrap_err()).0, 403);
}

/// Waits for ClusterRole `name` to satisfy `ready`, as a client would poll.
async fn until(roles: &Api<ClusterRole>, name: &str, ready: impl Fn(&ClusterRole) -> bool) -> ClusterRole {
    for _ in 0..500 {
        let role = roles.get(name).await.unwrap();
        if ready(&role) {
            return role;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("ClusterRole {name} never got there: {:?}", roles.get(name).await.unwrap());
}

#[tokio::test]
async fn access_reviews_answer_what_the_authorizer_decides() {
    let sb = rbac_sandbox();
    grant_configmaps(&sb, &["get", "list"], user("alice")).await;
    let reviews: Api<SubjectAccessReview> = Api::all(sb.client());
    let ask = |user: &str, verb: &str| -> SubjectAccessReview {
        serde_json::from_value(json!({ "spec": { "user": user, "groups": ["devs"], "resourceAttributes": {
            "namespace": "default", "verb": verb, "resource": "configmaps" } } }))
        .unwrap()
    };
    let yes = reviews.create(&PostParams::default(), &ask("alice", "list")).await.unwrap().status.unwrap();
    assert!(yes.allowed);
    assert_eq!(
        yes.reason.as_deref(),
        Some(r#"RBAC: allowed by RoleBinding "cm/default" of Role "cm" to User "alice""#)
    );
    let no = reviews.create(&PostParams::default(), &ask("alice", "delete")).await.unwrap().status.unwrap();
    assert!(!no.allowed && no.reason.is_none(), "{no:?}");
    let bob = reviews.create(&PostParams::default(), &ask("bob", "list")).await.unwrap().status.unwrap();
    assert!(!bob.allowed);
    // Discovery is every authenticated user's (system:discovery), by path.
    let path: SubjectAccessReview = serde_json::from_value(json!({ "spec": { "user": "bob",
        "groups": ["system:authenticated"], "nonResourceAttributes": { "path": "/apis", "verb": "get" } } }))
    .unwrap();
    let status = reviews.create(&PostParams::default(), &path).await.unwrap().status.unwrap();
    assert_eq!(
        status.reason.as_deref(),
        Some(
            r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
        )
    );
    // The requester's own rules.
    let rules: Api<SelfSubjectRulesReview> = Api::all(sb.client_as(alice()));
    let review: SelfSubjectRulesReview =
        serde_json::from_value(json!({ "spec": { "namespace": "default" } })).unwrap();
    let status = rules.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
    let resource_rules = serde_json::to_value(&status.resource_rules).unwrap();
    assert!(
        resource_rules
            .as_array()
            .unwrap()
            .contains(&json!({ "verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"] })),
        "{resource_rules}"
    );
    assert!(!status.incomplete);
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_acts_as_the_user() {
    let sb = rbac_sandbox();
    let get_as = |client: kube::Client, headers: Vec<(&'static str, &'static str)>| async move {
        let mut req = http::Request::get("/api/v1/namespaces/default/configmaps");
        for (k, v) in headers {
            req = req.header(k, v);
        }
        client.request_text(req.body(Vec::new()).unwrap()).await
    };
    // The administrator may impersonate anyone, and is then refused what alice is.
    let err = get_as(sb.client(), vec![("Impersonate-User", "alice"), ("Impersonate-Group", "devs")])
        .await
        .unwrap_err();
    let (_, message) = api_error(err);
    assert!(message.contains(r#"User "alice" cannot list resource "configmaps""#), "{message}");
    // Alice may not impersonate bob.
    let err = get_as(sb.client_as(alice()), vec![("Impersonate-User", "bob")]).await.unwrap_err();
    let (code, message) = api_error(err);
    assert_eq!(code, 403);
    assert_eq!(
        message,
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
}

#[test]
fn kubectl_over_https_is_authorized_as_on_a_cluster() {
    let config = SandboxConfig { authorization: Authorization::Rbac, ..SandboxConfig::bare() };
    let Some(k) = crate::kubectl::Kubectl::start_with("rbac", config) else { return };
    let (ok, out, _) = k.run(&["auth", "can-i", "list", "configmaps", "--as", "alice"]);
    assert!(!ok && out.trim() == "no", "{out}");
    for args in [
        &["create", "role", "cm", "--verb=list", "--resource=configmaps"][..],
        &["create", "rolebinding", "cm", "--role=cm", "--user=alice"],
    ] {
        let (ok, _, err) = k.run(args);
        assert!(ok, "{args:?}: {err}");
    }
    let (ok, out, _) = k.run(&["auth", "can-i", "list", "configmaps", "--as", "alice"]);
    assert!(ok && out.trim() == "yes", "{out}");
    // Alice's own token, as a kubeconfig of hers would hold it.
    let token = k.sandbox().issue_token(alice());
    let (ok, _, err) = k.run(&["--token", &token, "get", "configmaps"]);
    assert!(ok, "{err}");
    let (ok, _, err) = k.run(&["--token", &token, "get", "pods"]);
    assert!(!ok);
    assert!(
        err.contains(r#"Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#),
        "{err}"
    );
    let (ok, out, _) =
        k.run(&["--token", &token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert!(ok && out == "alice", "{out}");
    // No credentials at all (kubectl would prompt for a password; kube-rs sends none):
    // system:anonymous, who may read the version and nothing else.
    let anonymous = k.path("anonymous.kubeconfig");
    std::fs::write(&anonymous, kube_sandbox::kubeconfig(&k.server().url(), k.server().ca_pem(), "")).unwrap();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&anonymous).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let version = client.apiserver_version().await.expect("anyone may read the version");
        assert_eq!(version.major, "1");
        let cms: Api<ConfigMap> = Api::default_namespaced(client);
        let (code, message) = api_error(cms.list(&ListParams::default()).await.unwrap_err());
        assert_eq!(code, 403);
        assert!(
            message.contains(r#"User "system:anonymous" cannot list resource "configmaps""#),
            "{message}"
        );
    });
}

#[tokio::test]
async fn a_user_grants_only_what_it_holds_unless_it_may_escalate_or_bind() {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let sb = rbac_sandbox();
    // Alice may write Roles and RoleBindings, and read ConfigMaps.
    seed(&sb, json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": { "name": "rbac-writer", "namespace": "default" },
        "rules": [
            { "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "update"] },
            { "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"] },
        ] }))
    .await;
    bind(&sb, "rbac-writer", ("Role", "rbac-writer"), user("alice")).await;
    let roles: Api<Role> = Api::default_namespaced(sb.client_as(alice()));
    let role = |name: &str, rules: Value| -> Role {
        serde_json::from_value(json!({ "metadata": { "name": name }, "rules": rules })).unwrap()
    };
    roles
        .create(
            &PostParams::default(),
            &role("readers", json!([{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"] }])),
        )
        .await
        .expect("what she holds, she may grant");
    let more =
        json!([{ "apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "delete"] }]);
    let (code, message) =
        api_error(roles.create(&PostParams::default(), &role("more", more)).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "roles.rbac.authorization.k8s.io \"more\" is forbidden: user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}"
    );
    // Binding `view` is granting what it holds: refused, until she may `bind` it.
    let bindings: Api<RoleBinding> = Api::default_namespaced(sb.client_as(alice()));
    let binding: RoleBinding = serde_json::from_value(json!({ "metadata": { "name": "bob-view" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view" },
        "subjects": [{ "kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io" }] }))
    .unwrap();
    // (`view` is filled by the aggregation controller: wait until it has rules she lacks.)
    let cluster_roles: Api<ClusterRole> = Api::all(sb.client());
    until(&cluster_roles, "view", |r| !r.rules.clone().unwrap_or_default().is_empty()).await;
    let (code, message) = api_error(bindings.create(&PostParams::default(), &binding).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(
        message
            .starts_with("rolebindings.rbac.authorization.k8s.io \"bob-view\" is forbidden: user \"alice\""),
        "{message}"
    );
    seed(&sb, json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "bind-view" },
        "rules": [{ "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["view"], "verbs": ["bind"] }] }))
    .await;
    bind(&sb, "alice-binds-view", ("ClusterRole", "bind-view"), user("alice")).await;
    bindings.create(&PostParams::default(), &binding).await.expect("she may bind view in default");
}

#[tokio::test]
async fn a_certificate_signing_request_names_who_made_it() {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let pem = base64_pem();
    let csr: CertificateSigningRequest = serde_json::from_value(json!({ "metadata": { "name": "alice-client" },
        "spec": { "request": pem, "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
                  "username": "someone-else", "groups": ["system:masters"] } }))
    .unwrap();
    let mut as_alice = alice();
    as_alice.uid = "alice-uid".into();
    let csrs: Api<CertificateSigningRequest> = Api::all(sb.client_as(as_alice));
    let created = csrs.create(&PostParams::default(), &csr).await.unwrap();
    // What the body said of its requester is replaced by who made the request.
    let spec = created.spec;
    assert_eq!(spec.username.as_deref(), Some("alice"));
    assert_eq!(spec.uid.as_deref(), Some("alice-uid"));
    assert_eq!(spec.groups, Some(vec!["devs".to_owned(), "system:authenticated".to_owned()]));
}

/// A PEM certificate request block, base64 as a CSR's `spec.request` holds it.
fn base64_pem() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .encode(b"-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n")
}
