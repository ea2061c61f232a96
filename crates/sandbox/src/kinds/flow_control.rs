//! flowcontrol.apiserver.k8s.io/v1 (API Priority and Fairness): FlowSchemas and
//! PriorityLevelConfigurations, with v1's defaults (`pkg/apis/flowcontrol/v1/defaults.go`) and
//! `pkg/apis/flowcontrol/validation`'s rules in its order. The sandbox stores these objects and
//! queues no request by them; the rules are what a client writing them meets.
//!
//! The mandatory objects' fixed-spec checks (`exempt`, `catch-all`) are not made: their message
//! prints the whole internal spec with its pointers' addresses.

use serde_json::{Map, Value, json};

use crate::field_errors::{forbidden, go_string_slice, invalid_bare, invalid_str, not_supported, required};
use crate::object_meta::{object_at, set_default};
use crate::status::FieldError;

use super::crd::{get as given, str_at};

/// The verbs a rule may name besides `*`, sorted as Go's `sets.List` gives them.
const VERBS: [&str; 9] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];
/// The highest matching precedence.
const MAX_PRECEDENCE: i64 = 10_000;
/// The most queues a priority level may have.
const MAX_QUEUES: i64 = 10_000_000;
/// The hash bits shuffle sharding draws a hand from.
const MAX_HASH_BITS: f64 = 60.0;
/// What each member of a rule's namespaces is told before the label's own reason.
const NS_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

fn int_at(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// `SetDefaults_FlowSchemaSpec`: an unset (zero) matching precedence is 1000.
pub fn default_flow_schema(fs: &mut Value) {
    if !fs.is_object() {
        return;
    }
    let spec = object_at(fs, "spec");
    if spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0) == 0 {
        spec.insert("matchingPrecedence".into(), json!(1000));
    }
}

/// v1's priority level defaults: a limited level's shares 30 when unset (a zero is kept),
/// lendable percents 0, an exempt level's shares 0, a queue's hand of 8 of 64 queues of 50.
pub fn default_priority_level(pl: &mut Value) {
    if !pl.is_object() {
        return;
    }
    let spec = object_at(pl, "spec");
    if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
        set_default(limited, "nominalConcurrencyShares", json!(30));
        set_default(limited, "lendablePercent", json!(0));
        let queuing = limited
            .get_mut("limitResponse")
            .and_then(Value::as_object_mut)
            .and_then(|r| r.get_mut("queuing"))
            .and_then(Value::as_object_mut);
        if let Some(q) = queuing {
            default_zero(q, "handSize", 8);
            default_zero(q, "queues", 64);
            default_zero(q, "queueLengthLimit", 50);
        }
    }
    if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
        set_default(exempt, "nominalConcurrencyShares", json!(0));
        set_default(exempt, "lendablePercent", json!(0));
    }
}

/// Sets `key` when it is unset or Go's zero (a plain `int32` field).
fn default_zero(obj: &mut Map<String, Value>, key: &str, value: i64) {
    if obj.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
        obj.insert(key.into(), json!(value));
    }
}

/// `ValidateFlowSchema` (create and update alike; a `/status` write's spec is the stored one):
/// precedence, distinguisher, the priority level named, each rule; then the status's conditions.
pub fn validate_flow_schema(fs: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = fs.get("spec").cloned().unwrap_or_else(|| json!({}));
    let name = crate::object_meta::meta_str(fs, "name");
    let mut errs = Vec::new();
    let precedence = int_at(&spec, "matchingPrecedence");
    let at = "spec.matchingPrecedence";
    if precedence <= 0 {
        errs.push(invalid_bare(at, precedence, "must be a positive value"));
    }
    if precedence > MAX_PRECEDENCE {
        errs.push(invalid_bare(at, precedence, &format!("must not be greater than {MAX_PRECEDENCE}")));
    }
    if precedence == 1 && name != "exempt" {
        errs.push(invalid_bare(
            at,
            precedence,
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = given(&spec, "distinguisherMethod") {
        let kind = str_at(method, "type");
        if !matches!(kind, "ByNamespace" | "ByUser") {
            // Go prints the internal struct with `%#v`.
            let shown =
                format!("flowcontrol.FlowDistinguisherMethod{{Type:{}}}", crate::go_print::go_quote(kind));
            let list = ["ByNamespace", "ByUser"].map(crate::go_print::go_quote).join(", ");
            errs.push((
                "spec.distinguisherMethod.type".into(),
                format!("Unsupported value: {shown}: supported values: {list}"),
            ));
        }
    }
    let level = spec.pointer("/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or("");
    if level.is_empty() {
        errs.push(required("spec.priorityLevelConfiguration.name", "must reference a priority level"));
    } else {
        errs.extend(crate::names::subdomain_field("spec.priorityLevelConfiguration.name", level));
    }
    for (i, rule) in spec.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        errs.extend(rule_errors(rule, &format!("spec.rules[{i}]")));
    }
    errs.extend(condition_errors(fs));
    errs
}

/// `ValidateFlowSchemaPolicyRulesWithSubjects`: subjects, then at least one kind of rule, then
/// each rule.
fn rule_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let subjects = rule.get("subjects").and_then(Value::as_array).cloned().unwrap_or_default();
    if subjects.is_empty() {
        errs.push(required(format!("{at}.subjects"), "subjects must contain at least one value"));
    }
    for (i, s) in subjects.iter().enumerate() {
        errs.extend(subject_errors(s, &format!("{at}.subjects[{i}]")));
    }
    let resource = rule.get("resourceRules").and_then(Value::as_array).cloned().unwrap_or_default();
    let non_resource = rule.get("nonResourceRules").and_then(Value::as_array).cloned().unwrap_or_default();
    if resource.is_empty() && non_resource.is_empty() {
        errs.push(required(at, "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, r) in resource.iter().enumerate() {
        errs.extend(resource_rule_errors(r, &format!("{at}.resourceRules[{i}]")));
    }
    for (i, r) in non_resource.iter().enumerate() {
        errs.extend(non_resource_rule_errors(r, &format!("{at}.nonResourceRules[{i}]")));
    }
    errs
}

/// `ValidateFlowSchemaSubject`: the member of the subject's kind, and no other.
fn subject_errors(s: &Value, at: &str) -> Vec<FieldError> {
    const NOT_USER: &str = "user is forbidden when subject kind is not 'User'";
    const NOT_GROUP: &str = "group is forbidden when subject kind is not 'Group'";
    const NOT_SA: &str = "serviceAccount is forbidden when subject kind is not 'ServiceAccount'";
    let mut errs = Vec::new();
    let (own, others): (&str, [(&str, &str); 2]) = match str_at(s, "kind") {
        "ServiceAccount" => ("serviceAccount", [("user", NOT_USER), ("group", NOT_GROUP)]),
        "User" => ("user", [("serviceAccount", NOT_SA), ("group", NOT_GROUP)]),
        "Group" => ("group", [("serviceAccount", NOT_SA), ("user", NOT_USER)]),
        other => {
            return vec![not_supported(format!("{at}.kind"), other, &["Group", "ServiceAccount", "User"])];
        }
    };
    let own_at = format!("{at}.{own}");
    match given(s, own) {
        None => {
            let kind = str_at(s, "kind");
            errs.push(required(&own_at, &format!("{own} is required when subject kind is '{kind}'")));
        }
        Some(member) => {
            let name = str_at(member, "name");
            if name.is_empty() {
                errs.push(required(format!("{own_at}.name"), ""));
            } else if own == "serviceAccount" && name != "*" {
                errs.extend(crate::names::subdomain_field(&format!("{own_at}.name"), name));
            }
            if own == "serviceAccount" {
                let ns = str_at(member, "namespace");
                if ns.is_empty() {
                    errs.push(required(
                        format!("{own_at}.namespace"),
                        "must specify namespace for service account",
                    ));
                } else {
                    errs.extend(crate::names::label_field(&format!("{own_at}.namespace"), ns));
                }
            }
        }
    }
    for (field, why) in others {
        if given(s, field).is_some() {
            errs.push(forbidden(format!("{at}.{field}"), why));
        }
    }
    errs
}

/// A rule's verbs: given, `*` alone, or supported ones.
fn verb_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let verbs = strings(rule, "verbs");
    let refs: Vec<&str> = verbs.iter().map(String::as_str).collect();
    let field = format!("{at}.verbs");
    if verbs.is_empty() {
        vec![required(field, "verbs must contain at least one value")]
    } else if refs.contains(&"*") {
        if verbs.len() > 1 {
            vec![invalid_bare(
                field,
                go_string_slice(&refs),
                "if '*' is present, must not specify other verbs",
            )]
        } else {
            Vec::new()
        }
    } else if refs.iter().any(|v| !VERBS.contains(v)) {
        let list = VERBS.map(crate::go_print::go_quote).join(", ");
        vec![(field, format!("Unsupported value: {}: supported values: {list}", go_string_slice(&refs)))]
    } else {
        Vec::new()
    }
}

/// A list that must be given and, holding `*`, hold nothing else.
fn wildcard_list(rule: &Value, key: &str, at: &str, missing: &str, what: &str) -> Option<FieldError> {
    let items = strings(rule, key);
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    if items.is_empty() {
        Some(required(format!("{at}.{key}"), missing))
    } else if items.len() > 1 && refs.contains(&"*") {
        Some(invalid_bare(
            format!("{at}.{key}"),
            go_string_slice(&refs),
            &format!("if '*' is present, must not specify other {what}"),
        ))
    } else {
        None
    }
}

/// `ValidateFlowSchemaResourcePolicyRule`.
fn resource_rule_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = verb_errors(rule, at);
    errs.extend(wildcard_list(
        rule,
        "apiGroups",
        at,
        "resource rules must supply at least one api group",
        "api groups",
    ));
    errs.extend(wildcard_list(
        rule,
        "resources",
        at,
        "resource rules must supply at least one resource",
        "resources",
    ));
    let namespaces = strings(rule, "namespaces");
    let cluster = rule.get("clusterScope").and_then(Value::as_bool).unwrap_or(false);
    if namespaces.is_empty() && !cluster {
        errs.push(required(
            format!("{at}.namespaces"),
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.iter().any(|n| n == "*") {
        errs.extend(wildcard_list(rule, "namespaces", at, "", "namespaces"));
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for why in crate::metadata::label_errors(ns) {
                errs.push(invalid_str(format!("{at}.namespaces[{i}]"), ns, &format!("{NS_INTRO}{why}")));
            }
        }
    }
    errs
}

/// `ValidateFlowSchemaNonResourcePolicyRule`.
fn non_resource_rule_errors(rule: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = verb_errors(rule, at);
    let urls = strings(rule, "nonResourceURLs");
    if urls.iter().any(|u| u == "*") || urls.is_empty() {
        errs.extend(wildcard_list(
            rule,
            "nonResourceURLs",
            at,
            "nonResourceURLs must contain at least one value",
            "non-resource URLs",
        ));
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(why) = url_error(url) {
                errs.push(invalid_str(format!("{at}.nonResourceURLs[{i}]"), url, why));
            }
        }
    }
    errs
}

/// `ValidateNonResourceURLPath`: `/`, or a slash-led path without spaces or `//`, whose one
/// wildcard, if any, is a final `/*`.
fn url_error(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = path.matches('*').count();
    (stars > 1 || (stars == 1 && !path.ends_with("/*"))).then_some("wildcard can only do suffix matching")
}

/// The status's conditions: each type given and once (both kinds' status rule).
fn condition_errors(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let kind = str_at(c, "type");
        if !seen.insert(kind) {
            errs.push(crate::field_errors::duplicate(format!("status.conditions[{i}].type"), kind));
        }
        if kind.is_empty() {
            errs.push(required(format!("status.conditions[{i}].type"), "must not be empty"));
        }
    }
    errs
}

/// The annotation v1beta3 used to keep a zero `nominalConcurrencyShares` through a round trip;
/// conversion from v1beta3 drops it, so an object that still has it was not sent as v1beta3.
const PRESERVE_ZERO_SHARES: &str = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";

/// `ValidatePriorityLevelConfiguration` (v1 allows zero shares): no v1beta3 round-trip
/// annotation, the type matches the name `exempt`, its configuration is the type's, then the
/// status's conditions.
pub fn validate_priority_level(pl: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let spec = pl.get("spec").cloned().unwrap_or_else(|| json!({}));
    let name = crate::object_meta::meta_str(pl, "name");
    let kind = str_at(&spec, "type");
    let mut errs = Vec::new();
    if pl.pointer("/metadata/annotations").and_then(|a| a.get(PRESERVE_ZERO_SHARES)).is_some() {
        errs.push(forbidden(
            "metadata.annotations",
            &format!("annotation '{PRESERVE_ZERO_SHARES}' is forbidden"),
        ));
    }
    if (name == "exempt") != (kind == "Exempt") {
        errs.push(invalid_str("spec.type", kind, "type must be 'Exempt' if and only if name is 'exempt'"));
    }
    match kind {
        "Exempt" => {
            if given(&spec, "limited").is_some() {
                errs.push(forbidden("spec.limited", "must be nil if the type is not Limited"));
            }
            if let Some(exempt) = given(&spec, "exempt") {
                errs.extend(shares_and_lending(exempt, "spec.exempt"));
            }
        }
        "Limited" => {
            if given(&spec, "exempt").is_some() {
                errs.push(forbidden("spec.exempt", "must be nil if the type is Limited"));
            }
            match given(&spec, "limited") {
                None => errs.push(required("spec.limited", "must not be empty when type is Limited")),
                Some(limited) => errs.extend(limited_errors(limited)),
            }
        }
        other => errs.push(not_supported("spec.type", other, &["Exempt", "Limited"])),
    }
    errs.extend(condition_errors(pl));
    errs
}

/// The shares (not negative) and the lendable percent (0–100) of an exempt level.
fn shares_and_lending(cfg: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(n) = cfg.get("nominalConcurrencyShares").and_then(Value::as_i64)
        && n < 0
    {
        errs.push(invalid_bare(
            format!("{at}.nominalConcurrencyShares"),
            n,
            "must be a non-negative integer",
        ));
    }
    errs.extend(lendable(cfg, at));
    errs
}

fn lendable(cfg: &Value, at: &str) -> Option<FieldError> {
    let p = cfg.get("lendablePercent").and_then(Value::as_i64)?;
    (!(0..=100).contains(&p)).then(|| {
        invalid_bare(format!("{at}.lendablePercent"), p, &crate::field_errors::inclusive_range(0, 100))
    })
}

/// `ValidateLimitedPriorityLevelConfiguration`: shares, the limit response, lending and
/// borrowing.
fn limited_errors(limited: &Value) -> Vec<FieldError> {
    const AT: &str = "spec.limited";
    let mut errs = Vec::new();
    let shares = int_at(limited, "nominalConcurrencyShares");
    if shares < 0 {
        errs.push(invalid_bare(
            format!("{AT}.nominalConcurrencyShares"),
            shares,
            "must be a non-negative integer",
        ));
    }
    let response = limited.get("limitResponse").cloned().unwrap_or_else(|| json!({}));
    let rat = format!("{AT}.limitResponse");
    match str_at(&response, "type") {
        "Reject" => {
            if given(&response, "queuing").is_some() {
                errs.push(forbidden(
                    format!("{rat}.queuing"),
                    "must be nil if limited.limitResponse.type is not Limited",
                ));
            }
        }
        "Queue" => match given(&response, "queuing") {
            None => errs.push(required(
                format!("{rat}.queuing"),
                "must not be empty if limited.limitResponse.type is Limited",
            )),
            Some(q) => errs.extend(queuing_errors(q, &format!("{rat}.queuing"))),
        },
        other => errs.push(not_supported(format!("{rat}.type"), other, &["Queue", "Reject"])),
    }
    errs.extend(lendable(limited, AT));
    if let Some(b) = limited.get("borrowingLimitPercent").and_then(Value::as_i64)
        && b < 0
    {
        errs.push(invalid_bare(
            format!("{AT}.borrowingLimitPercent"),
            b,
            "if specified, must be a non-negative integer",
        ));
    }
    errs
}

/// `ValidatePriorityLevelQueuingConfiguration`: positive sizes, at most 10⁷ queues, a hand no
/// bigger than the deck and within the hash's bits.
fn queuing_errors(q: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (limit, queues, hand) = (int_at(q, "queueLengthLimit"), int_at(q, "queues"), int_at(q, "handSize"));
    if limit <= 0 {
        errs.push(invalid_bare(format!("{at}.queueLengthLimit"), limit, "must be positive"));
    }
    if queues <= 0 {
        errs.push(invalid_bare(format!("{at}.queues"), queues, "must be positive"));
    } else if queues > MAX_QUEUES {
        errs.push(invalid_bare(
            format!("{at}.queues"),
            queues,
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hat = format!("{at}.handSize");
    if hand <= 0 {
        errs.push(invalid_bare(hat, hand, "must be positive"));
    } else if hand > queues {
        errs.push(invalid_bare(hat, hand, &format!("should not be greater than queues ({queues})")));
    } else {
        // Shuffle sharding's `RequiredEntropyBits`: ⌈log₂(deck) × hand⌉.
        #[allow(clippy::cast_precision_loss)]
        let bits = ((queues as f64).log2() * hand as f64).ceil();
        if bits > MAX_HASH_BITS {
            errs.push(invalid_bare(
                hat,
                hand,
                &format!("required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_slash_led_paths_with_a_final_wildcard() {
        assert_eq!(url_error("/"), None);
        assert_eq!(url_error("/healthz/*"), None);
        assert_eq!(url_error("healthz"), Some("must start with slash"));
        assert_eq!(url_error("/a*"), Some("wildcard can only do suffix matching"));
    }

    #[test]
    fn a_limited_level_is_defaulted_to_be_valid() {
        let mut pl = json!({ "metadata": { "name": "p" }, "spec": { "type": "Limited", "limited": {
            "limitResponse": { "type": "Queue", "queuing": {} } } } });
        default_priority_level(&mut pl);
        assert_eq!(pl["spec"]["limited"]["nominalConcurrencyShares"], 30);
        assert!(validate_priority_level(&pl, None).is_empty());
    }
}
