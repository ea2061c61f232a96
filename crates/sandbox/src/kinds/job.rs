//! batch/v1 Jobs and the Job spec a CronJob's template holds (`pkg/apis/batch/validation`):
//! counts, completion modes, the per-index backoff, the pod failure and success policies, the
//! pod replacement policy, `managedBy`, the generated selector, what an update may change and
//! the status a controller may write.

use serde_json::{Value, json};

use crate::kinds::pod_template;
use crate::label_rules::{label_name_errors, label_selector_errors, nonnegative};
use crate::status::FieldError;

/// The most pod failure policy rules, success policy rules and condition patterns a Job holds.
const MAX_RULES: usize = 20;
/// The most exit codes one `onExitCodes` lists.
const MAX_EXIT_CODES: usize = 255;
/// An Indexed Job's most parallelism, and its most failed indexes.
const MAX_INDEXED: i64 = 100_000;
/// Above this many completions with a per-index backoff, the tighter limits below apply.
const HIGH_COMPLETIONS: i64 = 100_000;
const HIGH_COMPLETIONS_LIMIT: i64 = 10_000;

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn given<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn quote(s: &str) -> String {
    crate::go_print::go_quote(s)
}

/// `IsDomainPrefixedPath`: `host/path`, the host a DNS subdomain, the path of URL characters.
fn domain_prefixed_path_errors(v: &str, field: &str) -> Vec<FieldError> {
    if v.is_empty() {
        return vec![(field.to_owned(), "Required value".into())];
    }
    let Some((host, path)) = v.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        return vec![(
            field.to_owned(),
            format!("Invalid value: {}: must be a domain-prefixed path (such as \"acme.io/foo\")", quote(v)),
        )];
    };
    let mut errs = Vec::new();
    if let Some(why) = crate::metadata::check_subdomain(host) {
        errs.push((field.to_owned(), format!("Invalid value: {}: {why}", quote(host))));
    }
    let path_ok = path.chars().all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !path_ok {
        errs.push((
            field.to_owned(),
            format!(
                "Invalid value: {}: Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
                quote(path)
            ),
        ));
    }
    errs
}

/// `parseIndexInterval`: `x` or `x-y`, each below `completions`, increasing.
fn index_interval(s: &str, completions: i64) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            quote(s)
        ));
    }
    let number = |p: &str| -> Result<i64, String> {
        let n: i64 =
            p.parse().map_err(|_| format!("cannot convert string to integer for index: {}", quote(p)))?;
        if n >= completions {
            return Err(format!("too large index: {}", quote(p)));
        }
        Ok(n)
    };
    let x = number(parts[0])?;
    if let Some(y) = parts.get(1) {
        let y = number(y)?;
        if x >= y {
            return Err(format!("non-increasing order, previous: {x}, current: {y}"));
        }
        return Ok((x, y));
    }
    Ok((x, x))
}

/// `validateIndexesFormat`: comma-separated intervals in increasing order; how many indexes
/// they hold.
fn indexes_format(s: &str, completions: i64) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for part in s.split(',') {
        let (x, y) = index_interval(part, completions)?;
        if let Some(l) = last
            && l >= x
        {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// `validateFailedIndexesNotOverlapCompleted`: the first index both lists hold.
fn overlap(completed: &str, failed: &str, completions: i64) -> Option<i64> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let parse = |s: &str| -> Vec<(i64, i64)> {
        s.split(',').filter_map(|p| index_interval(p, completions).ok()).collect()
    };
    let (c, f) = (parse(completed), parse(failed));
    let (mut i, mut j) = (0, 0);
    while i < c.len() && j < f.len() {
        let ((cx, cy), (fx, fy)) = (c[i], f[j]);
        if cx <= fy && fx <= cy {
            return Some(cx.max(fx));
        }
        if cx <= fx {
            i += 1;
        } else {
            j += 1;
        }
    }
    None
}

/// `[]int32{…}` as Go's `%#v` prints it.
fn go_int32s(values: &[Value]) -> String {
    let items: Vec<String> = values.iter().map(|v| v.as_i64().unwrap_or(0).to_string()).collect();
    format!("[]int32{{{}}}", items.join(", "))
}

/// `validatePodFailurePolicyRuleOnExitCodes`.
fn on_exit_codes_errors(on: &Value, at: &str, containers: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let op = on.get("operator").and_then(Value::as_str).unwrap_or("");
    match op {
        "" => {
            errs.push((format!("{at}.operator"), "Required value: valid values: [\"In\" \"NotIn\"]".into()))
        }
        "In" | "NotIn" => {}
        other => errs.push((
            format!("{at}.operator"),
            format!("Unsupported value: {}: supported values: \"In\", \"NotIn\"", quote(other)),
        )),
    }
    if let Some(name) = on.get("containerName").and_then(Value::as_str)
        && !containers.contains(&name)
    {
        errs.push((
            format!("{at}.containerName"),
            format!(
                "Invalid value: {}: must be one of the container or initContainer names in the pod template",
                quote(name)
            ),
        ));
    }
    let values = on.get("values").and_then(Value::as_array).cloned().unwrap_or_default();
    if values.is_empty() {
        errs.push((
            format!("{at}.values"),
            "Invalid value: []int32{}: at least one value is required".into(),
        ));
    } else if values.len() > MAX_EXIT_CODES {
        errs.push((
            format!("{at}.values"),
            format!("Too many: {}: must have at most {MAX_EXIT_CODES} items", values.len()),
        ));
    } else {
        let mut seen = Vec::new();
        let mut ordered = true;
        for (j, v) in values.iter().enumerate() {
            let n = v.as_i64().unwrap_or(0);
            if op == "In" && n == 0 {
                errs.push((
                    format!("{at}.values[{j}]"),
                    "Invalid value: 0: must not be 0 for the In operator".into(),
                ));
            }
            if seen.contains(&n) {
                errs.push((format!("{at}.values[{j}]"), format!("Duplicate value: {n}")));
            } else {
                seen.push(n);
            }
            if j > 0 && values[j - 1].as_i64().unwrap_or(0) > n {
                ordered = false;
            }
        }
        if !ordered {
            errs.push((
                format!("{at}.values"),
                format!("Invalid value: {}: must be ordered", go_int32s(&values)),
            ));
        }
    }
    errs
}

/// `validatePodFailurePolicyRuleOnPodConditions`.
fn on_pod_conditions_errors(patterns: &[Value], at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if patterns.len() > MAX_RULES {
        errs.push((
            at.to_owned(),
            format!("Too many: {}: must have at most {MAX_RULES} items", patterns.len()),
        ));
    }
    for (j, p) in patterns.iter().enumerate() {
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
        errs.extend(label_name_errors(ty, &format!("{at}[{j}].type")));
        match p.get("status").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push((
                format!("{at}[{j}].status"),
                "Required value: valid values: [\"False\" \"True\" \"Unknown\"]".into(),
            )),
            "True" | "False" | "Unknown" => {}
            other => errs.push((
                format!("{at}[{j}].status"),
                format!(
                    "Unsupported value: {}: supported values: \"False\", \"True\", \"Unknown\"",
                    quote(other)
                ),
            )),
        }
    }
    errs
}

/// `validatePodFailurePolicy` and `validatePodFailurePolicyRule`.
fn pod_failure_policy_errors(spec: &Value, policy: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = policy.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    if rules.len() > MAX_RULES {
        errs.push((
            format!("{at}.rules"),
            format!("Too many: {}: must have at most {MAX_RULES} items", rules.len()),
        ));
    }
    let mut containers = Vec::new();
    for list in ["containers", "initContainers"] {
        let found = spec.pointer(&format!("/template/spec/{list}")).and_then(Value::as_array);
        containers.extend(found.into_iter().flatten().filter_map(|c| c.get("name").and_then(Value::as_str)));
    }
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{at}.rules[{i}]");
        match rule.get("action").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push((
                format!("{at}.action"),
                "Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]".into(),
            )),
            "FailIndex" => {
                if given(spec, "backoffLimitPerIndex").is_none() {
                    errs.push((
                        format!("{at}.action"),
                        "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set".into(),
                    ));
                }
            }
            "Count" | "FailJob" | "Ignore" => {}
            other => errs.push((
                format!("{at}.action"),
                format!(
                    "Unsupported value: {}: supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                    quote(other)
                ),
            )),
        }
        let exit_codes = given(rule, "onExitCodes");
        let conditions = rule.get("onPodConditions").and_then(Value::as_array).filter(|c| !c.is_empty());
        if let Some(on) = exit_codes {
            errs.extend(on_exit_codes_errors(on, &format!("{at}.onExitCodes"), &containers));
        }
        if let Some(c) = conditions {
            errs.extend(on_pod_conditions_errors(c, &format!("{at}.onPodConditions")));
        }
        match (exit_codes.is_some(), conditions.is_some()) {
            (true, true) => errs.push((
                at.clone(),
                "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported".into(),
            )),
            (false, false) => errs.push((
                at.clone(),
                "Invalid value: specifying one of OnExitCodes and OnPodConditions is required".into(),
            )),
            _ => {}
        }
    }
    errs
}

/// `validateSuccessPolicy` and `validateSuccessPolicyRule` (an Indexed Job's).
fn success_policy_errors(spec: &Value, policy: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = policy.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    if rules.is_empty() {
        errs.push((
            format!("{at}.rules"),
            "Required value: at least one rules must be specified when the successPolicy is specified".into(),
        ));
    }
    if rules.len() > MAX_RULES {
        errs.push((
            format!("{at}.rules"),
            format!("Too many: {}: must have at most {MAX_RULES} items", rules.len()),
        ));
    }
    let completions = int(spec, "completions").unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{at}.rules[{i}]");
        let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
        let count = int(rule, "succeededCount");
        if indexes.is_none() && count.is_none() {
            errs.push((
                at.clone(),
                "Required value: at least one of succeededCount or succeededIndexes must be specified".into(),
            ));
        }
        let mut total = 0;
        if let Some(s) = indexes {
            if s.len() > 64 * 1024 {
                errs.push((
                    format!("{at}.succeededIndexes"),
                    "Too long: may not be more than 65536 bytes".into(),
                ));
            }
            match indexes_format(s, completions) {
                Ok(n) => total = n,
                Err(why) => errs.push((
                    format!("{at}.succeededIndexes"),
                    format!("Invalid value: {}: error parsing succeededIndexes: {why}", quote(s)),
                )),
            }
        }
        if let Some(n) = count {
            let field = format!("{at}.succeededCount");
            errs.extend(nonnegative(rule.get("succeededCount"), &field));
            if n > completions {
                errs.push((
                    field.clone(),
                    format!("Invalid value: {n}: must be less than or equal to {completions} (the number of specified completions)"),
                ));
            }
            if indexes.is_some() && n > total {
                errs.push((
                    field,
                    format!("Invalid value: {n}: must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                ));
            }
        }
    }
    errs
}

/// A success policy as Go's `%#v` prints it (its rules' pointers as placeholders).
fn go_success_policy(policy: &Value) -> String {
    let rules = policy.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
    let items: Vec<String> = rules
        .iter()
        .map(|r| {
            let ptr = |k: &str, ty: &str| {
                if given(r, k).is_some() { format!("(*{ty})(0xc000000000)") } else { format!("(*{ty})(nil)") }
            };
            format!(
                "batch.SuccessPolicyRule{{SucceededIndexes:{}, SucceededCount:{}}}",
                ptr("succeededIndexes", "string"),
                ptr("succeededCount", "int32")
            )
        })
        .collect();
    format!("batch.SuccessPolicy{{Rules:[]batch.SuccessPolicyRule{{{}}}}}", items.join(", "))
}

/// `validateJobSpec`: what a Job's spec and a CronJob's Job template hold alike, under `at`.
pub(crate) fn spec_errors(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for f in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        errs.extend(nonnegative(spec.get(f), &format!("{at}.{f}")));
    }
    let per_index = given(spec, "backoffLimitPerIndex");
    let max_failed = int(spec, "maxFailedIndexes");
    if given(spec, "maxFailedIndexes").is_some() {
        errs.extend(nonnegative(spec.get("maxFailedIndexes"), &format!("{at}.maxFailedIndexes")));
        if per_index.is_none() {
            errs.push((
                format!("{at}.backoffLimitPerIndex"),
                "Required value: when maxFailedIndexes is specified".into(),
            ));
        }
    }
    if let Some(m) = given(spec, "managedBy").and_then(Value::as_str) {
        errs.extend(domain_prefixed_path_errors(m, &format!("{at}.managedBy")));
        if m.len() > 63 {
            errs.push((format!("{at}.managedBy"), "Too long: may not be more than 63 bytes".into()));
        }
    }
    let mode = given(spec, "completionMode").and_then(Value::as_str);
    let completions = int(spec, "completions");
    let parallelism = int(spec, "parallelism");
    if let Some(m) = mode {
        if !matches!(m, "NonIndexed" | "Indexed") {
            errs.push((
                format!("{at}.completionMode"),
                format!("Unsupported value: {}: supported values: \"NonIndexed\", \"Indexed\"", quote(m)),
            ));
        }
        if m == "Indexed" {
            if completions.is_none() {
                errs.push((
                    format!("{at}.completions"),
                    "Required value: when completion mode is Indexed".into(),
                ));
            }
            if let Some(p) = parallelism.filter(|p| *p > MAX_INDEXED) {
                errs.push((
                    format!("{at}.parallelism"),
                    format!("Invalid value: {p}: must be less than or equal to {MAX_INDEXED} when completion mode is Indexed"),
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed)
                && m > c
            {
                errs.push((
                    format!("{at}.maxFailedIndexes"),
                    format!("Invalid value: {m}: must be less than or equal to completions"),
                ));
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_INDEXED) {
                errs.push((
                    format!("{at}.maxFailedIndexes"),
                    format!("Invalid value: {m}: must be less than or equal to {MAX_INDEXED}"),
                ));
            }
            if completions.is_some_and(|c| c > HIGH_COMPLETIONS) && per_index.is_some() {
                if max_failed.is_none() {
                    errs.push((
                        format!("{at}.maxFailedIndexes"),
                        format!(
                            "Required value: must be specified when completions is above {HIGH_COMPLETIONS}"
                        ),
                    ));
                }
                let high = format!(
                    "must be less than or equal to {HIGH_COMPLETIONS_LIMIT} when completions are above {HIGH_COMPLETIONS} and used with backoff limit per index"
                );
                if let Some(p) = parallelism.filter(|p| *p > HIGH_COMPLETIONS_LIMIT) {
                    errs.push((format!("{at}.parallelism"), format!("Invalid value: {p}: {high}")));
                }
                if let Some(m) = max_failed.filter(|m| *m > HIGH_COMPLETIONS_LIMIT) {
                    errs.push((format!("{at}.maxFailedIndexes"), format!("Invalid value: {m}: {high}")));
                }
            }
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        if let Some(b) = per_index {
            errs.push((
                format!("{at}.backoffLimitPerIndex"),
                format!("Invalid value: {}: requires indexed completion mode", b.as_i64().unwrap_or(0)),
            ));
        }
        if let Some(m) = max_failed {
            errs.push((
                format!("{at}.maxFailedIndexes"),
                format!("Invalid value: {m}: requires indexed completion mode"),
            ));
        }
    }
    let failure_policy = given(spec, "podFailurePolicy");
    if let Some(p) = failure_policy {
        errs.extend(pod_failure_policy_errors(spec, p, &format!("{at}.podFailurePolicy")));
    }
    if let Some(r) = given(spec, "podReplacementPolicy").and_then(Value::as_str) {
        let field = format!("{at}.podReplacementPolicy");
        if failure_policy.is_some() {
            if r != "Failed" {
                errs.push((field, format!("Unsupported value: {}: supported values: \"Failed\"", quote(r))));
            }
        } else if !matches!(r, "Failed" | "TerminatingOrFailed") {
            errs.push((
                field,
                format!(
                    "Unsupported value: {}: supported values: \"Failed\", \"TerminatingOrFailed\"",
                    quote(r)
                ),
            ));
        }
    }
    if let Some(p) = given(spec, "successPolicy") {
        if mode == Some("Indexed") {
            errs.extend(success_policy_errors(spec, p, &format!("{at}.successPolicy")));
        } else {
            errs.push((
                format!("{at}.successPolicy"),
                format!("Invalid value: {}: requires indexed completion mode", go_success_policy(p)),
            ));
        }
    }
    let template = spec.get("template").cloned().unwrap_or_default();
    errs.extend(pod_template::errors(
        &template,
        &format!("{at}.template"),
        &["Always", "OnFailure", "Never"],
    ));
    let restart_at = format!("{at}.template.spec.restartPolicy");
    match template.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("") {
        "" | "Always" => {
            errs.push((restart_at, "Required value: valid values: \"OnFailure\", \"Never\"".into()))
        }
        "OnFailure" if failure_policy.is_some() => errs.push((
            restart_at,
            "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"
                .into(),
        )),
        "OnFailure" | "Never" => {}
        other => errs.push((
            restart_at,
            format!("Unsupported value: {}: supported values: \"OnFailure\", \"Never\"", quote(other)),
        )),
    }
    errs
}

/// The labels a Job's pods carry and its generated selector matches (`generateSelector`).
const JOB_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
const LEGACY_UID_LABEL: &str = "controller-uid";
const LEGACY_NAME_LABEL: &str = "job-name";

/// A Job's generated selector and template labels (the Job strategy's `PrepareForCreate`,
/// without `manualSelector`): its pods are selected by the Job's uid. Labels the user set are
/// kept (validation then tells them apart), and a given selector gains the uid.
pub fn prepare_job(job: &mut Value) {
    if job.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let uid = crate::object_meta::meta_str(job, "uid").to_owned();
    let name = crate::object_meta::meta_str(job, "name").to_owned();
    let spec = crate::object_meta::object_at(job, "spec");
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if !selector.is_object() {
        *selector = json!({});
    }
    let match_labels = crate::object_meta::object_at(selector, "matchLabels");
    match_labels.entry(JOB_UID_LABEL).or_insert_with(|| json!(uid));
    crate::object_meta::object_at(&mut job["spec"], "template");
    let meta = crate::object_meta::object_at(&mut job["spec"]["template"], "metadata");
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        for (k, v) in [
            (LEGACY_UID_LABEL, &uid),
            (LEGACY_NAME_LABEL, &name),
            (JOB_UID_LABEL, &uid),
            (JOB_NAME_LABEL, &name),
        ] {
            l.entry(k).or_insert_with(|| json!(v));
        }
    }
}

/// `validateGeneratedSelector`: a generated selector's labels are on the template, as the
/// Job's uid and name, and the selector selects them.
fn generated_selector_errors(job: &Value) -> Vec<FieldError> {
    let spec = job.get("spec").cloned().unwrap_or_default();
    if spec.get("manualSelector") == Some(&json!(true)) {
        return Vec::new();
    }
    let Some(selector) = given(&spec, "selector") else { return Vec::new() };
    let uid = crate::object_meta::meta_str(job, "uid");
    let name = crate::object_meta::meta_str(job, "name");
    let mut errs = Vec::new();
    if uid.is_empty() {
        errs.push(("metadata.uid".into(), "Required value".into()));
    }
    let labels = spec.pointer("/template/metadata/labels").and_then(Value::as_object);
    for (key, want) in
        [(LEGACY_UID_LABEL, uid), (LEGACY_NAME_LABEL, name), (JOB_UID_LABEL, uid), (JOB_NAME_LABEL, name)]
    {
        let field = format!("spec.template.metadata.labels[{key}]");
        match labels.and_then(|l| l.get(key)).and_then(Value::as_str) {
            None => errs.push((field, format!("Required value: {want}"))),
            Some(v) if v != want => errs.push((
                field,
                format!("Invalid value: {}: must be '{want}'", crate::go_print::go_string_map(labels)),
            )),
            Some(_) => {}
        }
    }
    let expected: serde_json::Map<String, Value> =
        [(LEGACY_UID_LABEL, uid), (LEGACY_NAME_LABEL, name), (JOB_UID_LABEL, uid), (JOB_NAME_LABEL, name)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
    if label_selector_errors(Some(selector), "spec.selector").is_empty()
        && !crate::selector::selector_matches(selector, &expected)
    {
        errs.push((
            "spec.selector".into(),
            format!(
                "Invalid value: {}: `selector` not auto-generated",
                crate::go_print::go_label_selector(selector)
            ),
        ));
    }
    errs
}

/// `ValidateJobSpec`: the spec, then a selector that is given, valid and selects the template.
fn job_spec_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = spec_errors(spec, "spec");
    let selector = given(spec, "selector");
    let rules = label_selector_errors(selector, "spec.selector");
    let parses = rules.is_empty();
    if selector.is_none() {
        errs.push(("spec.selector".into(), "Required value".into()));
    }
    errs.extend(rules);
    let labels = spec.pointer("/template/metadata/labels").and_then(Value::as_object);
    let matches =
        selector.is_some_and(|s| crate::selector::selector_matches(s, &labels.cloned().unwrap_or_default()));
    if parses && !matches {
        errs.push((
            "spec.template.metadata.labels".into(),
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                crate::go_print::go_string_map(labels)
            ),
        ));
    }
    errs
}

/// `field is immutable` as `ValidateImmutableField` words it for a Job spec field.
fn immutable_field(new: &Value, old: &Value, key: &str) -> Option<FieldError> {
    let (n, o) = (given(new, key), given(old, key));
    if n == o {
        return None;
    }
    let shown = match n {
        None => "null".to_owned(),
        Some(v) if key == "selector" => crate::go_print::go_label_selector(v),
        Some(Value::String(s)) => quote(s),
        Some(v) => crate::go_print::go_json(v),
    };
    Some((format!("spec.{key}"), format!("Invalid value: {shown}: field is immutable")))
}

/// `ValidateJobSpecUpdate` beyond the spec's own rules: completions (an Indexed Job's change
/// in step with its parallelism), the selector, the template, the completion mode, the
/// policies, the per-index backoff and `managedBy` do not change.
fn update_errors(spec: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let indexed = given(spec, "completionMode").and_then(Value::as_str) == Some("Indexed");
    if indexed {
        let c = int(spec, "completions");
        if c != int(old, "completions")
            && let Some(c) = c
            && Some(c) != int(spec, "parallelism")
        {
            errs.push((
                "spec.completions".into(),
                format!("Invalid value: {c}: can only be modified in tandem with spec.parallelism"),
            ));
        }
    } else {
        errs.extend(immutable_field(spec, old, "completions"));
    }
    errs.extend(immutable_field(spec, old, "selector"));
    errs.extend(crate::kinds::workload::immutable(
        &json!({ "spec": spec }),
        Some(&json!({ "spec": old })),
        &[("spec.template", "/spec/template")],
    ));
    for key in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"] {
        errs.extend(immutable_field(spec, old, key));
    }
    errs
}

/// A condition of `type` is `True` in `status`.
fn condition(status: &Value, ty: &str) -> bool {
    status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == ty && c["status"] == "True")
}

/// A status time as Go's `time.Time` prints itself (`2026-01-01 00:00:00 +0000 UTC`).
fn go_time(s: &str) -> String {
    s.parse::<jiff::Timestamp>()
        .map_or_else(|_| s.to_owned(), |t| t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string())
}

/// `batch.UncountedTerminatedPods` as Go's `%#v` prints it.
fn go_uncounted(u: &Value) -> String {
    let list = |k: &str| match u.get(k).and_then(Value::as_array) {
        None => "[]types.UID(nil)".to_owned(),
        Some(a) => {
            let items: Vec<String> = a.iter().map(|v| quote(v.as_str().unwrap_or(""))).collect();
            format!("[]types.UID{{{}}}", items.join(", "))
        }
    };
    format!("batch.UncountedTerminatedPods{{Succeeded:{}, Failed:{}}}", list("succeeded"), list("failed"))
}

/// `validateJobStatus` with the options the status strategy derives from the stored Job: each
/// transition rule applies when the fields it reads changed.
fn status_errors(job: &Value, old: &Value) -> Vec<FieldError> {
    let empty = json!({});
    let status = job.get("status").unwrap_or(&empty);
    let before = old.get("status").unwrap_or(&empty);
    let spec = job.get("spec").unwrap_or(&empty);
    let changed = |k: &str| given(status, k) != given(before, k);
    let mut errs = Vec::new();
    for f in ["active", "succeeded", "failed", "ready", "terminating"] {
        errs.extend(nonnegative(status.get(f), &format!("status.{f}")));
    }
    let uncounted = given(status, "uncountedTerminatedPods");
    if let Some(u) = uncounted {
        let mut seen: Vec<&str> = Vec::new();
        for list in ["succeeded", "failed"] {
            for (i, uid) in u.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
                let field = format!("status.uncountedTerminatedPods.{list}[{i}]");
                let uid = uid.as_str().unwrap_or("");
                if uid.is_empty() {
                    errs.push((field, "Invalid value: \"\": must not be empty".into()));
                } else if seen.contains(&uid) {
                    errs.push((field, format!("Duplicate value: {}", quote(uid))));
                } else {
                    seen.push(uid);
                }
            }
        }
    }
    let (complete, failed) = (condition(status, "Complete"), condition(status, "Failed"));
    let failure_target = condition(status, "FailureTarget");
    let criteria_met = condition(status, "SuccessCriteriaMet");
    let was = |ty: &str| condition(before, ty);
    let complete_changed = complete != was("Complete");
    let failed_changed = failed != was("Failed");
    let finished = complete || failed;
    let finished_changed = finished != (was("Complete") || was("Failed"));
    let conditions = |why: &str| ("status.conditions".to_owned(), format!("Invalid value: {why}"));
    if (complete_changed || failed_changed) && complete && failed {
        errs.push(conditions("cannot set Complete=True and Failed=true conditions"));
    }
    if (complete_changed || failure_target != was("FailureTarget")) && complete && failure_target {
        errs.push(conditions("cannot set Complete=True and FailureTarget=true conditions"));
    }
    let start = given(status, "startTime").and_then(Value::as_str);
    let completion = given(status, "completionTime").and_then(Value::as_str);
    let times_changed = complete_changed || changed("completionTime");
    if times_changed
        && !complete
        && let Some(c) = completion
    {
        errs.push((
            "status.completionTime".into(),
            format!(
                "Invalid value: {}: cannot set completionTime when there is no Complete=True condition",
                go_time(c)
            ),
        ));
    }
    if times_changed && complete && completion.is_none() {
        errs.push((
            "status.completionTime".into(),
            "Required value: completionTime is required for Complete jobs".into(),
        ));
    }
    if (changed("startTime") || changed("completionTime"))
        && let (Some(s), Some(c)) = (start, completion)
        && let (Ok(st), Ok(ct)) = (s.parse::<jiff::Timestamp>(), c.parse::<jiff::Timestamp>())
        && ct < st
    {
        errs.push((
            "status.completionTime".into(),
            format!("Invalid value: {}: completionTime cannot be set before startTime", go_time(c)),
        ));
    }
    if (failed_changed || changed("failedIndexes")) && failed && !failure_target {
        errs.push(conditions("cannot set Failed=True condition without the FailureTarget=true condition"));
    }
    if (complete_changed || criteria_met != was("SuccessCriteriaMet")) && complete && !criteria_met {
        errs.push(conditions(
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ));
    }
    let active = int(status, "active").unwrap_or(0);
    if (finished_changed || changed("active")) && finished && active > 0 {
        errs.push((
            "status.active".into(),
            format!("Invalid value: {active}: active>0 is invalid for finished job"),
        ));
    }
    if (finished_changed || changed("startTime")) && finished && start.is_none() {
        errs.push((
            "status.startTime".into(),
            "Required value: startTime is required for finished job".into(),
        ));
    }
    if (finished_changed || changed("uncountedTerminatedPods"))
        && finished
        && let Some(u) = uncounted
        && ["succeeded", "failed"]
            .iter()
            .any(|k| u.get(*k).and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
    {
        errs.push((
            "status.uncountedTerminatedPods".into(),
            format!(
                "Invalid value: {}: uncountedTerminatedPods needs to be empty for finished job",
                go_uncounted(u)
            ),
        ));
    }
    let completions = int(spec, "completions");
    let completed = status.get("completedIndexes").and_then(Value::as_str).unwrap_or("");
    let failed_indexes = given(status, "failedIndexes").and_then(Value::as_str);
    let completed_changed = changed("completedIndexes");
    let failed_indexes_changed = changed("failedIndexes");
    if completed_changed
        && let Some(c) = completions
        && let Err(why) = indexes_format(completed, c)
    {
        errs.push((
            "status.completedIndexes".into(),
            format!("Invalid value: {}: error parsing completedIndexes: {why}", quote(completed)),
        ));
    }
    if failed_indexes_changed
        && let (Some(c), Some(_), Some(f)) =
            (completions, given(spec, "backoffLimitPerIndex"), failed_indexes)
        && let Err(why) = indexes_format(f, c)
    {
        errs.push((
            "status.failedIndexes".into(),
            format!("Invalid value: {}: error parsing failedIndexes: {why}", quote(f)),
        ));
    }
    let indexed = given(spec, "completionMode").and_then(Value::as_str) == Some("Indexed");
    if completed_changed && !completed.is_empty() && !indexed {
        errs.push((
            "status.completedIndexes".into(),
            format!(
                "Invalid value: {}: cannot set non-empty completedIndexes when non-indexed completion mode",
                quote(completed)
            ),
        ));
    }
    if failed_indexes_changed
        && given(spec, "backoffLimitPerIndex").is_none()
        && let Some(f) = failed_indexes
    {
        errs.push((
            "status.failedIndexes".into(),
            format!(
                "Invalid value: {}: cannot set non-null failedIndexes when backoffLimitPerIndex is null",
                quote(f)
            ),
        ));
    }
    if (failed_indexes_changed || completed_changed)
        && let (Some(c), Some(f)) = (completions, failed_indexes)
        && let Some(at) = overlap(completed, f, c)
    {
        errs.push((
            "status.failedIndexes".into(),
            format!("Invalid value: {}: failedIndexes and completedIndexes overlap at index: {at}", quote(f)),
        ));
    }
    if (finished_changed || changed("terminating"))
        && finished
        && let Some(t) = int(status, "terminating").filter(|t| *t > 0)
    {
        errs.push((
            "status.terminating".into(),
            format!("Invalid value: {t}: terminating>0 is invalid for finished job"),
        ));
    }
    if (changed("ready") || changed("active"))
        && let Some(r) = int(status, "ready").filter(|r| *r > active)
    {
        errs.push((
            "status.ready".into(),
            format!("Invalid value: {r}: cannot set more ready pods than active"),
        ));
    }
    if criteria_met && failed {
        errs.push(conditions("cannot set SuccessCriteriaMet=True and Failed=true conditions"));
    }
    if criteria_met && failure_target {
        errs.push(conditions("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"));
    }
    errs.extend(status_update_errors(spec, status, before));
    errs
}

/// `ValidateJobStatusUpdate`'s rules against the stored status: terminal conditions stay,
/// counters do not decrease, the completion time does not change, the start time of a running
/// Job stays.
fn status_update_errors(spec: &Value, status: &Value, before: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let conditions = |why: String| ("status.conditions".to_owned(), format!("Invalid value: {why}"));
    for ty in ["Failed", "Complete"] {
        if condition(before, ty) && !condition(status, ty) {
            errs.push(conditions(format!("cannot disable the terminal {ty}=True condition")));
        }
    }
    let count = |s: &Value, k: &str| int(s, k).unwrap_or(0);
    if count(status, "failed") < count(before, "failed") {
        errs.push((
            "status.failed".into(),
            format!("Invalid value: {}: cannot decrease the failed counter", count(status, "failed")),
        ));
    }
    let indexed = given(spec, "completionMode").and_then(Value::as_str) == Some("Indexed");
    let scalable = indexed && int(spec, "completions") == int(spec, "parallelism");
    if !scalable && count(status, "succeeded") < count(before, "succeeded") {
        errs.push((
            "status.succeeded".into(),
            format!("Invalid value: {}: cannot decrease the succeeded counter", count(status, "succeeded")),
        ));
    }
    let time = |s: &Value, k: &str| given(s, k).and_then(Value::as_str).map(str::to_owned);
    if let (Some(was), Some(now)) = (time(before, "completionTime"), time(status, "completionTime"))
        && was.parse::<jiff::Timestamp>().ok() != now.parse::<jiff::Timestamp>().ok()
    {
        errs.push((
            "status.completionTime".into(),
            format!("Invalid value: {}: completionTime cannot be mutated", go_time(&now)),
        ));
    }
    if time(before, "startTime").is_some()
        && time(before, "startTime") != time(status, "startTime")
        && spec.get("suspend") != Some(&json!(true))
    {
        errs.push((
            "status.startTime".into(),
            "Required value: startTime cannot be removed for unsuspended job".into(),
        ));
    }
    if condition(before, "SuccessCriteriaMet") && !condition(status, "SuccessCriteriaMet") {
        errs.push(conditions("cannot disable the SuccessCriteriaMet=True condition".into()));
    }
    errs
}

/// batch/v1 Job validation (`ValidateJob`, `ValidateJobUpdate` and the status strategy's
/// `validateJobStatus`): the generated selector, the spec; on create an Indexed Job's last pod
/// name a DNS label; on update what may not change; and the status a write brings.
pub fn validate_job(job: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = job.get("spec").cloned().unwrap_or_default();
    let mut errs = generated_selector_errors(job);
    errs.extend(job_spec_errors(&spec));
    match old {
        None => {
            if given(&spec, "completionMode").and_then(Value::as_str) == Some("Indexed")
                && let Some(c) = int(&spec, "completions").filter(|c| *c > 0)
            {
                let name = crate::object_meta::meta_str(job, "name");
                let last = format!("{name}-{}", c - 1);
                if crate::metadata::check_label(&last).is_some() {
                    errs.push((
                        "metadata.name".into(),
                        format!(
                            "Invalid value: {}: will not able to create pod with invalid DNS label: {last}",
                            quote(name)
                        ),
                    ));
                }
            }
        }
        Some(old) => {
            errs.extend(update_errors(&spec, old.get("spec").unwrap_or(&Value::Null)));
            errs.extend(status_errors(job, old));
        }
    }
    errs
}

/// `ValidateJobTemplateSpec`: a CronJob's Job spec, whose selector is generated for it.
pub(crate) fn template_spec_errors(template: &Value, at: &str) -> Vec<FieldError> {
    let spec = template.get("spec").cloned().unwrap_or_default();
    let mut errs = spec_errors(&spec, &format!("{at}.spec"));
    if let Some(s) = given(&spec, "selector") {
        errs.push((
            format!("{at}.spec.selector"),
            format!(
                "Invalid value: {}: `selector` will be auto-generated",
                crate::go_print::go_label_selector(s)
            ),
        ));
    }
    if spec.get("manualSelector") == Some(&json!(true)) {
        errs.push((
            format!("{at}.spec.manualSelector"),
            "Unsupported value: true: supported values: \"nil\", \"false\"".into(),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists_parse_as_upstream_reads_them() {
        assert_eq!(indexes_format("0-1,3", 4), Ok(3));
        assert_eq!(indexes_format("2,1", 3), Err("non-increasing order, previous: 2, current: 1".into()));
        assert_eq!(indexes_format("5", 3), Err("too large index: \"5\"".into()));
        assert_eq!(overlap("0-1", "1", 3), Some(1));
        assert_eq!(overlap("0", "2", 3), None);
    }
}
