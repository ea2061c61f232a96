//! What the API server does for the requests that are not a stored object's CRUD: the
//! subresources that act on an object ([`Run`]: `pods/binding`, `pods/eviction`, `pods/log`,
//! `serviceaccounts/token`, and the ones that write one part of an object, such as
//! `certificatesigningrequests/approval`), and the create-only resources answered from the
//! request alone ([`Review`]: access and token reviews, `bindings`).
//!
//! An access review answers what the sandbox's authorizer ([`crate::auth`]) decides: everything
//! allowed by default, RBAC's decision when it is on. Service account tokens are JWTs the
//! [`token_issuer`](crate::token_issuer) signs; a [`Review::Token`] accepts them while they are
//! unexpired and their account exists, and the tokens the sandbox issued for its users.

use serde_json::{Map, Value, json};

use crate::auth::{Attributes, Auth, Authorization, UserInfo};
use crate::go_print::go_quote;
use crate::object_meta::{meta_str, now_rfc3339};
use crate::resource::{ResourceDef, Review, Run, Subresource};
use crate::status::ApiError;
use crate::store::{DeleteOptions, Store};
use crate::token_issuer::{ISSUER, sign};

/// The answer to a `create` of a [`Review`] resource of kind `kind`, made by `requester`: the
/// request's object with its status.
///
/// # Errors
///
/// As the binding's for [`Review::Bind`]; a review itself is never refused.
pub fn review(
    store: &Store,
    auth: &Auth,
    requester: &UserInfo,
    (review, kind): (Review, &str),
    ns: &str,
    mut body: Value,
) -> Result<(u16, Value), ApiError> {
    let status = match review {
        Review::Access => access_review(store, auth, (requester, kind == "SelfSubjectAccessReview"), &body),
        Review::Rules => rules_review(store, auth, requester, &body),
        Review::SelfSubject => json!({ "userInfo": requester.to_json() }),
        Review::Token => {
            token_review(store, auth, body.pointer("/spec/token").and_then(Value::as_str).unwrap_or(""))
        }
        Review::Bind => {
            let pod = meta_str(&body, "name").to_owned();
            return bind(store, ns, &pod, &body);
        }
    };
    let meta = crate::object_meta::meta_mut(&mut body);
    meta.insert("creationTimestamp".into(), Value::Null);
    body["status"] = status;
    Ok((201, body))
}

/// Runs an action subresource other than [`Run::Owns`] (which the store serves as a part of the
/// object). `body` is the request's, `Null` for a GET.
///
/// # Errors
///
/// 404 for a missing object; the action's own refusals (a pod already bound, a token with too
/// short a life).
pub fn run(
    store: &Store,
    def: &ResourceDef,
    run: Run,
    ns: &str,
    name: &str,
    body: &Value,
) -> Result<(u16, Value), ApiError> {
    match run {
        Run::Bind => bind(store, ns, name, body),
        Run::Evict => evict(store, def, ns, name, body),
        // A stream, not an object: the HTTP layer serves it with `pod_log`'s decisions.
        Run::Log => Err(ApiError::bad_request(format!("{}/log is served as a stream", def.plural))),
        Run::Token => token_request(store, ns, name, body),
        Run::Owns(_) => Err(ApiError::bad_request(format!("{} is served by the store", def.plural))),
    }
}

fn success(code: u16) -> Value {
    json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code })
}

/// Binds pod `name` to the Binding's target (`assignPod`): a 409 when it is bound already; the
/// Binding's annotations are copied onto the pod and `PodScheduled` becomes true.
pub(crate) fn bind(store: &Store, ns: &str, name: &str, binding: &Value) -> Result<(u16, Value), ApiError> {
    let pods = crate::catalog::find("", "v1", "pods").expect("pods are built in");
    let given = meta_str(binding, "name");
    // Upstream compares the two as they are: a body without a name does not match either.
    if given != name {
        return Err(ApiError::bad_request("name in URL does not match name in Binding object".to_owned()));
    }
    crate::kinds::binding::check(binding)?;
    let node = binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("").to_owned();
    let annotations = binding.pointer("/metadata/annotations").and_then(Value::as_object).cloned();
    store.modify(pods, ns, name, |pod| {
        // `setPodNodeAndMetadata`'s refusals, in its order.
        let refuse = |why: String| -> Result<(), ApiError> {
            Err(ApiError::conflict("", "pods/binding", name, &why))
        };
        if crate::object_meta::is_deleting(pod) {
            return refuse(format!("pod {name} is being deleted, cannot be assigned to a host"));
        }
        let bound = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if !bound.is_empty() {
            return refuse(format!("pod {name} is already assigned to node {}", go_quote(bound)));
        }
        if pod.pointer("/spec/schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
            return refuse(format!("pod {name} has non-empty .spec.schedulingGates"));
        }
        pod["spec"]["nodeName"] = json!(node);
        if let Some(a) = &annotations {
            let meta = crate::object_meta::meta_mut(pod);
            let into = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(into) = into.as_object_mut() {
                into.extend(a.clone());
            }
        }
        let status = crate::object_meta::object_at(pod, "status");
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            list.retain(|c| c["type"] != "PodScheduled");
            list.push(json!({ "type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now_rfc3339() }));
        }
        Ok(())
    })?;
    Ok((201, success(201)))
}

/// `pods/<name>/eviction` (`EvictionREST.Create`): a pod that is pending, finished or already
/// being deleted goes at once; one that a PodDisruptionBudget covers goes only while the budget
/// allows a disruption, which the eviction takes from it (`status.disruptionsAllowed` less one, the
/// pod in `status.disruptedPods`) in the same step as it checks it, so two evictions never take
/// the last one together.
fn evict(
    store: &Store,
    pods: &ResourceDef,
    ns: &str,
    name: &str,
    body: &Value,
) -> Result<(u16, Value), ApiError> {
    let given = meta_str(body, "name");
    // Upstream compares the two as they are: a body without a name does not match either.
    if given != name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object".to_owned()));
    }
    let mut opts = DeleteOptions::from_body(body.get("deleteOptions").unwrap_or(&Value::Null), None, &[])?;
    let pod = store.get(pods, ns, name, Subresource::Main)?;
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    if matches!(phase, "Succeeded" | "Failed" | "Pending") || deleting {
        disrupt(store, pods, ns, name)?;
        store.delete(pods, ns, name, &opts)?;
        return Ok((201, success(201)));
    }
    let budgets_def =
        crate::catalog::find("policy", "v1", "poddisruptionbudgets").expect("a built-in resource");
    let (_, budgets) = store.snapshot(budgets_def, Some(ns));
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    // A budget without a selector, or with an empty one, covers no pod here.
    let covering: Vec<_> = budgets
        .iter()
        .filter(|b| {
            b.pointer("/spec/selector").is_some_and(|s| {
                !s.is_null()
                    && !crate::selector::selector_is_empty(s)
                    && crate::selector::selector_matches(s, &labels)
            })
        })
        .collect();
    if covering.len() > 1 {
        return Err(ApiError::bare(
            500,
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    if let Some(budget) = covering.first() {
        let budget_name = meta_str(budget, "name").to_owned();
        let ready = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let count =
            |field: &str| budget.pointer(&format!("/status/{field}")).and_then(Value::as_i64).unwrap_or(0);
        let unhealthy_goes = !ready
            && (budget.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"))
                || (count("currentHealthy") >= count("desiredHealthy") && count("desiredHealthy") > 0));
        if unhealthy_goes {
            // An unready pod takes nothing from the budget, but only as it was read.
            let had_version = opts.resource_version.is_some();
            opts.resource_version.get_or_insert_with(|| meta_str(&pod, "resourceVersion").to_owned());
            // The condition goes on only while the pod is as read; a stale read is refused
            // by the delete's precondition below.
            let current = store.get(pods, ns, name, Subresource::Main)?;
            if opts.resource_version.as_deref() == Some(meta_str(&current, "resourceVersion")) {
                disrupt(store, pods, ns, name)?;
                opts.resource_version = None;
            }
            return match store.delete(pods, ns, name, &opts) {
                Err(e) if e.code == 409 && !had_version => Err(still_processing(&budget_name)),
                Err(e) => Err(e),
                Ok(_) => Ok((201, success(201))),
            };
        }
        store.modify(budgets_def, ns, &budget_name, |b| take_disruption(b, name))?;
    }
    disrupt(store, pods, ns, name)?;
    store.delete(pods, ns, name, &opts)?;
    Ok((201, success(201)))
}

/// Upstream's `addConditionAndDeletePod`: the evicted pod is told why it goes, a
/// `DisruptionTarget` condition, before it is deleted.
fn disrupt(store: &Store, pods: &ResourceDef, ns: &str, name: &str) -> Result<(), ApiError> {
    store.modify(pods, ns, name, |pod| {
        let status = crate::object_meta::object_at(pod, "status");
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut()
            && !list.iter().any(|c| c["type"] == "DisruptionTarget" && c["status"] == "True")
        {
            list.retain(|c| c["type"] != "DisruptionTarget");
            list.push(
                json!({ "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                              "message": "Eviction API: evicting", "lastTransitionTime": now_rfc3339() }),
            );
        }
        Ok(())
    })
}

fn still_processing(budget: &str) -> ApiError {
    ApiError::disruption_refused(
        format!("The disruption budget {budget} is still being processed by the server."),
        10,
    )
}

/// `checkAndDecrement`: takes one allowed disruption from `budget` for pod `pod`, or says why not.
fn take_disruption(budget: &mut Value, pod: &str) -> Result<(), ApiError> {
    let name = meta_str(budget, "name").to_owned();
    let int = |b: &Value, p: &str| b.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    if int(budget, "/status/observedGeneration") < int(budget, "/metadata/generation") {
        return Err(still_processing(&name));
    }
    let allowed = int(budget, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::admission_forbidden(
            "policy",
            "poddisruptionbudget",
            &name,
            "pdb disruptions allowed is negative",
        ));
    }
    let disrupted = budget.pointer("/status/disruptedPods").and_then(Value::as_object).map_or(0, Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(ApiError::admission_forbidden(
            "policy",
            "poddisruptionbudget",
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let why = format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            int(budget, "/status/desiredHealthy"),
            int(budget, "/status/currentHealthy"),
        );
        return Err(ApiError::disruption_refused(why, 0));
    }
    let status = crate::object_meta::object_at(budget, "status");
    status.insert("disruptionsAllowed".into(), json!(allowed - 1));
    let now = now_rfc3339();
    if allowed == 1 {
        // `UpdateDisruptionAllowedCondition`: no disruption left.
        let observed = status.get("observedGeneration").cloned().unwrap_or(json!(0));
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            let since = list
                .iter()
                .find(|c| c["type"] == "DisruptionAllowed" && c["status"] == "False")
                .map_or_else(|| json!(now), |c| c["lastTransitionTime"].clone());
            list.retain(|c| c["type"] != "DisruptionAllowed");
            list.push(json!({ "type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                              "message": "", "observedGeneration": observed, "lastTransitionTime": since }));
        }
    }
    let pods = status.entry("disruptedPods").or_insert_with(|| json!({}));
    if let Some(p) = pods.as_object_mut() {
        p.insert(pod.to_owned(), json!(now));
    }
    Ok(())
}

/// How many evictions a budget may hold unconfirmed by its controller (`MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// `serviceaccounts/<name>/token`: a token for the account, for the audiences asked (the
/// issuer's by default), for `expirationSeconds` (an hour by default, ten minutes at least).
fn token_request(store: &Store, ns: &str, name: &str, body: &Value) -> Result<(u16, Value), ApiError> {
    crate::kinds::token_request::check(body, name)?;
    let accounts = crate::catalog::find("", "v1", "serviceaccounts").expect("serviceaccounts are built in");
    let account = store.get(accounts, ns, name, Subresource::Main)?;
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let seconds = crate::kinds::token_request::seconds(body);
    if let Some(target) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        bound_object(store, ns, name, target)?;
    }
    let audiences = spec
        .get("audiences")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!(ISSUER)]);
    let now = unix_now();
    let claims = json!({
        "aud": audiences, "exp": now + seconds, "iat": now, "nbf": now, "iss": ISSUER,
        "jti": crate::object_meta::new_uid(),
        "sub": format!("system:serviceaccount:{ns}:{name}"),
        "kubernetes.io": { "namespace": ns, "serviceaccount": { "name": name, "uid": meta_str(&account, "uid") } },
    });
    let expires = jiff::Timestamp::from_second(now + seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    let mut spec = spec;
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(seconds);
    if spec.get("boundObjectRef").is_none() {
        spec["boundObjectRef"] = Value::Null;
    }
    Ok((
        201,
        json!({
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": { "creationTimestamp": null },
            "spec": spec,
            "status": { "token": sign(&claims), "expirationTimestamp": expires },
        }),
    ))
}

/// `TokenREST.Create`'s checks of the object a token is bound to: a Pod running as the account,
/// a Node or a Secret of the core group, which exists and, when the reference names a uid, has
/// it.
fn bound_object(store: &Store, ns: &str, account: &str, target: &Value) -> Result<(), ApiError> {
    let text = |f: &str| target.get(f).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let plural = match (group, kind) {
        ("", "Pod") => "pods",
        ("", "Node") => "nodes",
        ("", "Secret") => "secrets",
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let def = crate::catalog::find("", "v1", plural).expect("pods, nodes and secrets are built in");
    let object = store.get(def, if plural == "nodes" { "" } else { ns }, name, Subresource::Main)?;
    if plural == "pods" && object.pointer("/spec/serviceAccountName").and_then(Value::as_str) != Some(account)
    {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
            go_quote(account)
        )));
    }
    let uid = text("uid");
    if !uid.is_empty() && uid != meta_str(&object, "uid") {
        return Err(ApiError::conflict(
            group,
            kind,
            name,
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(())
}

/// A TokenReview's status: the user a token authenticates, or why it does not.
fn token_review(store: &Store, auth: &Auth, token: &str) -> Value {
    match crate::auth::token_user(auth, store, token) {
        Ok(user) => json!({ "authenticated": true, "user": user.to_json(), "audiences": [ISSUER] }),
        Err(why) => json!({ "user": {}, "error": why }),
    }
}

/// An access review's status: what the authorizer decides for the attributes of its spec, asked
/// for its subject (a SelfSubjectAccessReview's is the requester).
fn access_review(store: &Store, auth: &Auth, (requester, own): (&UserInfo, bool), body: &Value) -> Value {
    let spec = body.get("spec").unwrap_or(&Value::Null);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let user = if own {
        requester.clone()
    } else {
        let extra = spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(Some(v)))).collect());
        UserInfo {
            name: text(spec, "user"),
            uid: text(spec, "uid"),
            groups: strings(spec.get("groups")),
            extra: extra.unwrap_or_default(),
        }
    };
    let attrs = if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        Attributes {
            user,
            verb: text(r, "verb"),
            resource_request: true,
            group: text(r, "group"),
            version: text(r, "version"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
            path: String::new(),
        }
    } else {
        let r = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
        Attributes { user, verb: text(r, "verb"), path: text(r, "path"), ..Attributes::default() }
    };
    let decision = crate::auth::decide(auth, store, &attrs);
    let mut status = json!({ "allowed": decision.allowed() });
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    status
}

/// A SelfSubjectRulesReview's status: every rule that applies to the requester in the
/// namespace it names (everything, where everything is allowed).
fn rules_review(store: &Store, auth: &Auth, requester: &UserInfo, body: &Value) -> Value {
    if auth.mode == Authorization::AlwaysAllow {
        return json!({
            "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
            "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
            "incomplete": false,
        });
    }
    let ns = body.pointer("/spec/namespace").and_then(Value::as_str).unwrap_or("");
    let (rules, error) = crate::auth::rbac::rules_for(&auth.rbac_index(store), requester, ns);
    let (mut resource, mut non_resource) = (Vec::new(), Vec::new());
    for rule in rules {
        let has = |k: &str| rule.get(k).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
        let pick = |keys: &[&str]| {
            let mut r = Map::new();
            for k in keys {
                if let Some(v) = rule.get(*k).filter(|_| *k == "verbs" || has(k)) {
                    r.insert((*k).to_owned(), v.clone());
                }
            }
            Value::Object(r)
        };
        if has("resources") {
            resource.push(pick(&["verbs", "apiGroups", "resources", "resourceNames"]));
        }
        if has("nonResourceURLs") {
            non_resource.push(pick(&["verbs", "nonResourceURLs"]));
        }
    }
    let mut status =
        json!({ "resourceRules": resource, "nonResourceRules": non_resource, "incomplete": false });
    if let Some(e) = error {
        status["evaluationError"] = json!(e);
    }
    status
}
