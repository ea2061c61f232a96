//! admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration: their webhooks' v1 defaults
//! (`pkg/apis/admissionregistration/v1/defaults.go`) and upstream's rules for them
//! (`validateMutatingWebhookConfiguration`, `validateValidatingWebhookConfiguration` and their
//! update forms). The two kinds differ only in a mutating webhook's `reinvocationPolicy`. What
//! the webhooks match is in [`super::admission_match`], where they are called in
//! [`super::webhook_client`].

use serde_json::{Value, json};

use super::admission_match::{
    FAILURE_POLICIES, MATCH_POLICIES, default_rules, given, match_conditions_errors,
    rule_with_operations_errors, same, strs,
};
use crate::field_errors::{duplicate, go_string_slice, invalid_bare, invalid_str, not_supported, required};
use crate::object_meta::set_default;
use crate::status::FieldError;

/// The side effects a new webhook may declare (`noSideEffectClasses`).
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
/// Every side-effect class (`supportedSideEffectClasses`), for an object that already had others.
const ANY_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
/// The reinvocation policies of a mutating webhook.
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
/// The `AdmissionReview` versions this server (and the one before it) understands.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// `SetDefaults_MutatingWebhook` for each webhook.
pub fn default_mutating(config: &mut Value) {
    default_webhooks(config, true);
}

/// `SetDefaults_ValidatingWebhook` for each webhook.
pub fn default_validating(config: &mut Value) {
    default_webhooks(config, false);
}

/// A webhook fails closed, matches equivalent versions, every namespace and object, and waits
/// 10 seconds; a mutating one is not called again. Its rules' scope and its Service's port have
/// their defaults too.
fn default_webhooks(config: &mut Value, mutating: bool) {
    let hooks = config.get_mut("webhooks").and_then(Value::as_array_mut);
    for hook in hooks.into_iter().flatten() {
        let Some(h) = hook.as_object_mut() else { continue };
        set_default(h, "failurePolicy", json!("Fail"));
        set_default(h, "matchPolicy", json!("Equivalent"));
        set_default(h, "namespaceSelector", json!({}));
        set_default(h, "objectSelector", json!({}));
        set_default(h, "timeoutSeconds", json!(10));
        if mutating {
            set_default(h, "reinvocationPolicy", json!("Never"));
        }
        default_rules(h.get_mut("rules"));
        super::webhook_client::default_client_config(h.get_mut("clientConfig"));
    }
}

/// A MutatingWebhookConfiguration's rules (create, and update against the old object).
#[must_use]
pub fn validate_mutating(config: &Value, old: Option<&Value>) -> Vec<FieldError> {
    config_errors(config, &Options::from_old(old, config), true)
}

/// A ValidatingWebhookConfiguration's rules (create, and update against the old object).
#[must_use]
pub fn validate_validating(config: &Value, old: Option<&Value>) -> Vec<FieldError> {
    config_errors(config, &Options::from_old(old, config), false)
}

/// An update's generation moves when the webhooks change (the strategies' `PrepareForUpdate`):
/// these kinds have no `spec`.
#[must_use]
pub fn webhooks_changed(new: &Value, old: &Value) -> bool {
    !same(new.get("webhooks"), old.get("webhooks"))
}

/// What upstream's `validationOptions` hold for webhooks: a create is held to every rule; an
/// update lets through what the old object already broke.
struct Options {
    /// Skip the match conditions: an update that leaves them as they were.
    ignore_match_conditions: bool,
    /// Only `None` and `NoneOnDryRun` side effects.
    require_no_side_effects: bool,
    /// At least one known `AdmissionReview` version a webhook.
    require_recognized_version: bool,
    /// Webhook names unique.
    require_unique_names: bool,
}

impl Options {
    /// The options of a create (`old` is `None`) or of an update from `old` to `new`.
    fn from_old(old: Option<&Value>, new: &Value) -> Self {
        let Some(old) = old else {
            return Self {
                ignore_match_conditions: false,
                require_no_side_effects: true,
                require_recognized_version: true,
                require_unique_names: true,
            };
        };
        let (old_hooks, new_hooks) = (webhooks(old), webhooks(new));
        let mut names: Vec<&str> = Vec::new();
        let unique = old_hooks.iter().all(|h| {
            let name = h.get("name").and_then(Value::as_str).unwrap_or("");
            let fresh = !names.contains(&name);
            names.push(name);
            fresh
        });
        Self {
            ignore_match_conditions: old_hooks.len() == new_hooks.len()
                && old_hooks
                    .iter()
                    .zip(new_hooks)
                    .all(|(o, n)| same(o.get("matchConditions"), n.get("matchConditions"))),
            require_no_side_effects: old_hooks.iter().all(|h| {
                h.get("sideEffects").and_then(Value::as_str).is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))
            }),
            require_recognized_version: old_hooks.iter().all(|h| {
                let versions = strs(h.get("admissionReviewVersions"));
                versions.is_empty() || versions.iter().any(|v| REVIEW_VERSIONS.contains(v))
            }),
            require_unique_names: unique,
        }
    }
}

/// A configuration's webhooks (none when it has no list).
fn webhooks(config: &Value) -> &[Value] {
    config.get("webhooks").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Each webhook's rules, then its review versions, then its name's uniqueness.
fn config_errors(config: &Value, opts: &Options, mutating: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, hook) in webhooks(config).iter().enumerate() {
        let at = format!("webhooks[{i}]");
        errs.extend(webhook_errors(hook, opts, mutating, &at));
        errs.extend(review_versions_errors(
            &strs(hook.get("admissionReviewVersions")),
            opts.require_recognized_version,
            &format!("{at}.admissionReviewVersions"),
        ));
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        if opts.require_unique_names && !name.is_empty() {
            if names.contains(&name) {
                errs.push(duplicate(format!("{at}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
    errs
}

/// `validateMutatingWebhook` / `validateValidatingWebhook`, in their order.
fn webhook_errors(hook: &Value, opts: &Options, mutating: bool, at: &str) -> Vec<FieldError> {
    let text = |k: &str| hook.get(k).and_then(Value::as_str);
    let mut errs = fully_qualified_errors(text("name").unwrap_or(""), &format!("{at}.name"));
    let rules = hook.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        errs.extend(rule_with_operations_errors(rule, &format!("{at}.rules[{i}]")));
    }
    let one_of = |errs: &mut Vec<FieldError>, key: &str, allowed: &[&str]| {
        if let Some(v) = text(key)
            && !allowed.contains(&v)
        {
            errs.push(not_supported(format!("{at}.{key}"), v, allowed));
        }
    };
    one_of(&mut errs, "failurePolicy", FAILURE_POLICIES);
    one_of(&mut errs, "matchPolicy", MATCH_POLICIES);
    let side_effects = if opts.require_no_side_effects { NO_SIDE_EFFECTS } else { ANY_SIDE_EFFECTS };
    if given(hook.get("sideEffects")) {
        one_of(&mut errs, "sideEffects", side_effects);
    } else {
        errs.push(required(
            format!("{at}.sideEffects"),
            &format!("must specify one of {}", side_effects.join(", ")),
        ));
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        errs.push(invalid_bare(
            format!("{at}.timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        errs.extend(crate::label_rules::label_selector_errors(hook.get(key), &format!("{at}.{key}")));
    }
    if mutating {
        one_of(&mut errs, "reinvocationPolicy", REINVOCATION_POLICIES);
    }
    errs.extend(super::webhook_client::client_config_errors(
        hook.get("clientConfig"),
        &format!("{at}.clientConfig"),
    ));
    if !opts.ignore_match_conditions {
        errs.extend(match_conditions_errors(hook.get("matchConditions"), &format!("{at}.matchConditions")));
    }
    errs
}

/// `IsFullyQualifiedName`: given, a DNS-1123 subdomain, at least three dot-separated parts.
fn fully_qualified_errors(name: &str, at: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![required(at, "")];
    }
    let why = crate::metadata::subdomain_errors(name);
    if !why.is_empty() {
        return vec![invalid_str(at, name, &why.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![invalid_str(
            at,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

/// `validateAdmissionReviewVersions`: given, each once and a DNS-1035 label, one of them known
/// (unless the old object had none known).
fn review_versions_errors(versions: &[&str], require_recognized: bool, at: &str) -> Vec<FieldError> {
    if versions.is_empty() {
        return vec![required(at, &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")))];
    }
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(v) {
            errs.push(invalid_str(format!("{at}[{i}]"), v, "duplicate version"));
            continue;
        }
        seen.push(v);
        errs.extend(crate::names::invalid(&format!("{at}[{i}]"), v, crate::metadata::dns1035_errors(v)));
    }
    if require_recognized && !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        errs.push((
            at.to_owned(),
            format!(
                "Invalid value: {}: must include at least one of {}",
                go_string_slice(versions),
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> Value {
        json!({ "webhooks": [{ "name": "hook.example.com", "clientConfig": { "url": "https://hook.example.com/x" },
            "sideEffects": "None", "admissionReviewVersions": ["v1"] }] })
    }

    #[test]
    fn a_defaulted_webhook_is_valid() {
        let mut c = hook();
        default_mutating(&mut c);
        assert_eq!(c["webhooks"][0]["timeoutSeconds"], 10);
        assert_eq!(validate_mutating(&c, None), []);
    }

    #[test]
    fn an_update_lets_old_side_effects_stay() {
        let mut old = hook();
        old["webhooks"][0]["sideEffects"] = json!("Some");
        assert_eq!(validate_validating(&old, None).len(), 1);
        assert_eq!(validate_validating(&old, Some(&old)), []);
    }
}
