//! Admission webhooks: upstream's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! plugins (`admission/plugin/webhook`), which call the webhooks of the
//! Mutating- and ValidatingWebhookConfigurations over HTTPS with an `AdmissionReview`.
//!
//! Unlike the other plugins they run with the store's lock let go: a call may take up to its
//! `timeoutSeconds`, and a webhook may read the API while it decides. The store asks, under its
//! lock, which webhooks a write may call ([`select`]: their rules, with `matchPolicy`, and
//! namespace selectors); then, unlocked, the mutating webhooks change the object before the
//! strategy validates it ([`Calls::mutate`]) and the validating ones judge it after
//! ([`Calls::validate`]), before the in-process validating plugins run under the lock at commit.
//!
//! For each webhook, when it is reached: its object selector (the new object's labels, or the
//! old one's), its `matchConditions` (an error refuses the write with 403 under `Fail`), the
//! dry-run rule of its `sideEffects`, then the call ([`crate::webhook_client`], [`review`]). A call that fails
//! refuses the write with 500 under `failurePolicy: Fail` and is skipped under `Ignore` (an audit
//! annotation says so); a refusal is the webhook's status, worded as upstream's. Warnings and
//! audit annotations it answers reach the request's answer and record.
//!
//! Mutating webhooks are called one after another, configurations by name; a JSON patch is
//! applied to the object in the request's version. One whose `reinvocationPolicy` is `IfNeeded`
//! is called once more when a later webhook changed the object. Validating webhooks are called
//! all at once, and the first refusal (in their order) is the answer.
//!
//! Not as upstream: an object is sent in the request's version, not converted to the version a
//! rule matched under `Equivalent`; subresource writes are not admitted; match conditions read
//! a custom resource untyped; the in-process mutating plugins are not run again after a
//! reinvocation.

mod review;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube_cel::cel::Value as Cel;
use serde_json::{Value, json};

use self::review::Response;
use super::expression::{MatchConditions, VariableCosts};
use super::in_force::InForce;
use super::matching::{Target, labels_select, namespace_matches, rules_match};
use super::{FailurePolicy, Objects, Request, attributes, exempt};
use crate::go_print::go_quote;
use crate::invocation::{self, Invocation};
use crate::kinds::admission_match::strs;
use crate::object_meta::{meta_str, new_uid};
use crate::resource::ResourceDef;
use crate::schema::cel::{functions, untyped};
use crate::status::ApiError;
use crate::webhook_client::{Answer, Endpoint, post_all};

/// One webhook of a configuration, as read.
struct Hook {
    configuration: String,
    name: String,
    rules: Value,
    namespace_selector: Option<Value>,
    object_selector: Option<Value>,
    /// `matchPolicy: Equivalent` (the default).
    equivalent: bool,
    failure: FailurePolicy,
    side_effects: Option<String>,
    timeout: Duration,
    client_config: Value,
    review_versions: Vec<String>,
    conditions: MatchConditions,
    /// `reinvocationPolicy: IfNeeded` (a mutating webhook's).
    reinvoke: bool,
}

impl Hook {
    fn new(configuration: &str, w: &Value) -> Self {
        let text = |k: &str| w.get(k).and_then(Value::as_str);
        let selector = |k: &str| w.get(k).filter(|s| s.is_object()).cloned();
        Self {
            configuration: configuration.to_owned(),
            name: text("name").unwrap_or("").to_owned(),
            rules: w.get("rules").cloned().unwrap_or(Value::Null),
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
            equivalent: text("matchPolicy") != Some("Exact"),
            failure: FailurePolicy::of(w),
            side_effects: text("sideEffects").map(str::to_owned),
            timeout: Duration::from_secs(w.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10)),
            client_config: w.get("clientConfig").cloned().unwrap_or(Value::Null),
            review_versions: strs(w.get("admissionReviewVersions")).into_iter().map(str::to_owned).collect(),
            conditions: MatchConditions::new(w.get("matchConditions")),
            reinvoke: text("reinvocationPolicy") == Some("IfNeeded"),
        }
    }
}

/// The webhooks configured, each kind's configurations by name and their webhooks in order.
struct Configured {
    mutating: Vec<Hook>,
    validating: Vec<Hook>,
}

/// The two configuration resources: mutating, validating.
pub(crate) fn configuration_kinds() -> [&'static ResourceDef; 2] {
    static KINDS: OnceLock<[&ResourceDef; 2]> = OnceLock::new();
    *KINDS.get_or_init(|| {
        let find =
            |plural| crate::catalog::find("admissionregistration.k8s.io", "v1", plural).expect("built in");
        [find("mutatingwebhookconfigurations"), find("validatingwebhookconfigurations")]
    })
}

/// The webhooks configured in the store `objects` reads, kept between writes ([`InForce`]).
fn configured(objects: &dyn Objects) -> Arc<Configured> {
    static IN_FORCE: InForce<Configured> = InForce::new();
    let kinds = configuration_kinds();
    IN_FORCE.get(objects, kinds, || {
        let hooks = |def: &ResourceDef| -> Vec<Hook> {
            let mut configurations = objects.list(def, None);
            configurations.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
            configurations
                .iter()
                .flat_map(|c| {
                    let name = meta_str(c, "name");
                    c.get("webhooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(move |w| Hook::new(name, w))
                })
                .collect()
        };
        Configured { mutating: hooks(kinds[0]), validating: hooks(kinds[1]) }
    })
}

/// The webhooks a write may call, chosen under the store's lock, called with it let go.
pub(crate) struct Calls {
    configured: Arc<Configured>,
    /// The indexes of the mutating webhooks whose rules and namespace selector select the write.
    mutating: Vec<usize>,
    validating: Vec<usize>,
    /// The write's `AdmissionRequest`, but for its uid and objects.
    request: Value,
    /// The one mutating webhooks are sent: without the name when it is still to be generated.
    mutating_request: Value,
    group: &'static str,
    plural: &'static str,
    name: String,
    dry_run: bool,
    /// Where the sandbox's Services listen.
    services: BTreeMap<(String, String), SocketAddr>,
}

/// The webhooks that may be called for `req` on the object `name` (`obj` the new object, as
/// far as it is known now): those whose rules and namespace selector select it. `None` when
/// there are none.
pub(crate) fn select(
    req: &Request<'_>,
    name: &str,
    obj: Option<&Value>,
    services: &BTreeMap<(String, String), SocketAddr>,
) -> Option<Calls> {
    if exempt(req.def) {
        return None;
    }
    let configured = configured(req.objects);
    if configured.mutating.is_empty() && configured.validating.is_empty() {
        return None;
    }
    let target = Target::new(req, name, obj);
    // A namespace that cannot be read selects nothing: the write is refused for it by the
    // namespace's own plugin.
    let picked = |hooks: &[Hook]| -> Vec<usize> {
        hooks
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                rules_match(Some(&h.rules), h.equivalent, &target)
                    && namespace_matches(h.namespace_selector.as_ref(), &target) == Ok(true)
            })
            .map(|(i, _)| i)
            .collect()
    };
    let mutating = if req.op == super::Operation::Delete { Vec::new() } else { picked(&configured.mutating) };
    let validating = picked(&configured.validating);
    if mutating.is_empty() && validating.is_empty() {
        return None;
    }
    let (request, dry_run) = invocation::current(|inv| {
        (attributes::admission_request(req, name, inv), inv.is_some_and(Invocation::dry_run))
    });
    Some(Calls {
        configured: Arc::clone(&configured),
        mutating,
        validating,
        mutating_request: request.clone(),
        request,
        group: req.def.group,
        plural: req.def.plural,
        name: name.to_owned(),
        dry_run,
        services: services.clone(),
    })
}

impl Calls {
    /// Marks the write's name as generated (`generateName`): mutating webhooks, called before
    /// upstream generates it, are sent none.
    pub(crate) fn name_generated(&mut self) {
        if let Some(r) = self.mutating_request.as_object_mut() {
            r.remove("name");
        }
    }

    /// Whether a mutating webhook may be called.
    pub(crate) fn mutates(&self) -> bool {
        !self.mutating.is_empty()
    }

    /// The mutating webhooks, in order, each changing `obj` (over `old`, on an update) as its
    /// JSON patch says; those that ask for it called once more when a later one changed it.
    ///
    /// # Errors
    ///
    /// A webhook's refusal, or its failure under `failurePolicy: Fail`.
    pub(crate) fn mutate(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let mut invoked: Vec<usize> = Vec::new();
        let mut again: Vec<usize> = Vec::new();
        for &i in &self.mutating {
            if self.mutate_with(0, i, obj, old)? {
                for &j in &invoked {
                    if !again.contains(&j) {
                        again.push(j);
                    }
                }
            }
            if self.configured.mutating[i].reinvoke && !invoked.contains(&i) {
                invoked.push(i);
            }
        }
        for &i in self.mutating.iter().filter(|i| again.contains(i)) {
            self.mutate_with(1, i, obj, old)?;
        }
        Ok(())
    }

    /// Calls mutating webhook `i` in `round`: whether it changed `obj`.
    fn mutate_with(
        &self,
        round: u8,
        i: usize,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<bool, ApiError> {
        let hook = &self.configured.mutating[i];
        let Some(call) = self.prepare(hook, Some(obj), old, &self.mutating_request)? else {
            return Ok(false);
        };
        let call = call.map(|(review, post)| (review, post_all(vec![post]).remove(0)));
        let mutation = |mutated: bool| {
            format!(
                "{{\"configuration\":{},\"webhook\":{},\"mutated\":{mutated}}}",
                json!(hook.configuration),
                json!(hook.name)
            )
        };
        let key = format!("round_{round}_index_{i}");
        let response = match Self::read(call, true) {
            Err(failed) => {
                annotate(format!("mutation.webhook.admission.k8s.io/{key}"), mutation(false));
                self.failed(hook, &failed, format!("failed-open.mutation.webhook.admission.k8s.io/{key}"))?;
                return Ok(false);
            }
            Ok(r) => r,
        };
        self.pass_on(hook, &response);
        if !response.allowed {
            annotate(format!("mutation.webhook.admission.k8s.io/{key}"), mutation(false));
            return Err(ApiError::webhook_denied(&hook.name, response.status.as_ref()));
        }
        let mut changed = false;
        if let Some(ops) = response.patch.filter(|p| p.as_array().is_some_and(|a| !a.is_empty())) {
            let before = obj.clone();
            crate::patch::json_patch(obj, &ops).map_err(|e| ApiError::internal_error(&e.message))?;
            changed = *obj != before;
            annotate(
                format!("patch.webhook.admission.k8s.io/{key}"),
                format!(
                    "{{\"configuration\":{},\"webhook\":{},\"patch\":{ops},\"patchType\":\"JSONPatch\"}}",
                    json!(hook.configuration),
                    json!(hook.name)
                ),
            );
        }
        annotate(format!("mutation.webhook.admission.k8s.io/{key}"), mutation(changed));
        Ok(changed)
    }

    /// The validating webhooks, called all at once on `obj` (none for a delete) over `old`.
    ///
    /// # Errors
    ///
    /// The first refusal or failure under `failurePolicy: Fail`, in the webhooks' order.
    pub(crate) fn validate(&self, obj: Option<&Value>, old: Option<&Value>) -> Result<(), ApiError> {
        let mut errors = Vec::new();
        let mut calls = Vec::new();
        for &i in &self.validating {
            let hook = &self.configured.validating[i];
            match self.prepare(hook, obj, old, &self.request) {
                Ok(Some(call)) => calls.push((hook, call)),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if calls.is_empty() {
            return errors.into_iter().next().map_or(Ok(()), Err);
        }
        let (reviews, posts): (Vec<_>, Vec<_>) = calls
            .into_iter()
            .map(|(hook, call)| match call {
                Ok((review, post)) => ((hook, Ok(review)), Some(post)),
                Err(e) => ((hook, Err(e)), None),
            })
            .unzip();
        let mut answers = post_all(posts.into_iter().flatten().collect()).into_iter();
        for (index, (hook, review)) in reviews.into_iter().enumerate() {
            // A call was made for every review that could be sent, in order.
            let call = review.map(|r| (r, answers.next().expect("one answer per call")));
            match Self::read(call, false) {
                Err(failed) => {
                    let key =
                        format!("failed-open.validating.webhook.admission.k8s.io/round_0_index_{index}");
                    if let Err(e) = self.failed(hook, &failed, key) {
                        errors.push(e);
                    }
                }
                Ok(response) => {
                    self.pass_on(hook, &response);
                    if !response.allowed {
                        errors.push(ApiError::webhook_denied(&hook.name, response.status.as_ref()));
                    }
                }
            }
        }
        errors.into_iter().next().map_or(Ok(()), Err)
    }

    /// What calling `hook` on `obj` takes, if it is to be called: its object selector and
    /// match conditions select the write, and its side effects allow a dry run; `request` is
    /// the `AdmissionRequest` it is sent.
    ///
    /// # Errors
    ///
    /// A match condition that cannot be evaluated under `Fail` (403), a dry run the webhook
    /// cannot take (400).
    fn prepare(
        &self,
        hook: &Hook,
        obj: Option<&Value>,
        old: Option<&Value>,
        request: &Value,
    ) -> Result<Option<Ready>, ApiError> {
        if !labels_select(hook.object_selector.as_ref(), obj, old) {
            return Ok(None);
        }
        match conditions_hold(hook, obj, old, request) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(_) if hook.failure == FailurePolicy::Ignore => return Ok(None),
            Err(e) => return Err(ApiError::admission_forbidden(self.group, self.plural, &self.name, &e)),
        }
        if self.dry_run {
            match hook.side_effects.as_deref() {
                Some("None" | "NoneOnDryRun") => {}
                None => return Ok(Some(Err("Webhook SideEffects is nil".to_owned()))),
                Some(_) => {
                    return Err(ApiError::bad_request(format!(
                        "admission webhook {} does not support dry run",
                        go_quote(&hook.name)
                    )));
                }
            }
        }
        let made = review::version(&hook.review_versions).and_then(|version| {
            let endpoint = Endpoint::new(&hook.client_config, hook.timeout, &self.services)
                .map_err(|e| format!("could not get REST client: {e}"))?;
            let uid = new_uid();
            let body = review::request(version, &uid, request, obj, old);
            Ok((Review { version, uid }, (endpoint, body, hook.timeout)))
        });
        Ok(Some(made))
    }

    /// The answer to `review` (or why it could not be sent), verified; `Err` with why the call
    /// failed.
    fn read(
        call: Result<(Review, Result<Answer, String>), String>,
        mutating: bool,
    ) -> Result<Response, String> {
        let (review, answer) = call?;
        let answer = answer.map_err(|e| format!("failed to call webhook: {e}"))?;
        review::response(review.version, &review.uid, mutating, &answer)
    }

    /// A call that failed: refused under `Fail` (500), else noted as failed open under `key`.
    fn failed(&self, hook: &Hook, why: &str, key: String) -> Result<(), ApiError> {
        match hook.failure {
            FailurePolicy::Fail => Err(ApiError::internal_error(&format!(
                "failed calling webhook {}: {why}",
                go_quote(&hook.name)
            ))),
            FailurePolicy::Ignore => {
                annotate(key, hook.name.clone());
                Ok(())
            }
        }
    }

    /// The warnings and audit annotations a webhook answered, left on the request.
    fn pass_on(&self, hook: &Hook, response: &Response) {
        invocation::current(|inv| {
            if let Some(inv) = inv {
                for w in &response.warnings {
                    inv.warn(w.clone());
                }
                for (k, v) in &response.annotations {
                    inv.annotate(format!("{}/{k}", hook.name), v.clone());
                }
            }
        });
    }
}

/// A review about to be sent: its version and uid.
struct Review {
    version: &'static str,
    uid: String,
}

/// The request that sends it.
type Post = (Endpoint, Vec<u8>, Duration);

/// A call ready to make, or why it cannot be made (a call error).
type Ready = Result<(Review, Post), String>;

/// Whether `hook`'s match conditions all hold for the write, as `request` describes it.
fn conditions_hold(
    hook: &Hook,
    obj: Option<&Value>,
    old: Option<&Value>,
    request: &Value,
) -> Result<bool, String> {
    if hook.conditions.is_empty() {
        return Ok(true);
    }
    let mut ctx = functions().new_inner_scope();
    ctx.add_variable_from_value("object", obj.map_or(Cel::Null, untyped));
    ctx.add_variable_from_value("oldObject", old.map_or(Cel::Null, untyped));
    ctx.add_variable_from_value("request", untyped(request));
    ctx.add_variable_from_value(
        "authorizer",
        invocation::current(|inv| super::attributes::authorizer(request, inv)),
    );
    hook.conditions.all_true(&ctx, &HashMap::new(), &VariableCosts::new())
}

/// Leaves an audit annotation on the request.
fn annotate(key: String, value: String) {
    invocation::current(|inv| {
        if let Some(inv) = inv {
            inv.annotate(key, value);
        }
    });
}
