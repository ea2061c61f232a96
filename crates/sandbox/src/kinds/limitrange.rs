//! v1 LimitRange (`pkg/apis/core/validation/validation.go`: `ValidateLimitRange`, the same on
//! create and update). Its defaults are [`super::workload::default_limit_range`]; admission
//! applies it to pods in [`crate::admission`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::go_print::go_quote;
use crate::quantity::Quantity;
use crate::resource_name::{container_resource_errors, overcommit_allowed, resource_errors};
use crate::status::FieldError;

/// The limit types the API knows (`IsStandardLimitRangeType`).
const TYPES: [&str; 3] = ["Pod", "Container", "PersistentVolumeClaim"];

/// Each limit of a known type, once; its resource names valid for its type; `Pod` limits
/// without defaults, `PersistentVolumeClaim` ones with a storage bound; per resource, min ≤
/// default request ≤ default ≤ max, a ratio of at least 1 and at most max/min, and, for what
/// may not be overcommitted, the default request equal to the default.
#[must_use]
pub fn validate(range: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let limits = range.pointer("/spec/limits").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, limit) in limits.iter().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = limit.get("type").and_then(Value::as_str).unwrap_or("");
        errs.extend(type_errors(kind, &format!("{at}.type")));
        if !seen.insert(kind) {
            errs.push((format!("{at}.type"), format!("Duplicate value: {}", go_quote(kind))));
        }
        errs.extend(limit_errors(limit, kind, &at));
    }
    errs
}

/// `validateLimitRangeTypeName`: a qualified name, a standard type when unqualified.
fn type_errors(kind: &str, field: &str) -> Vec<FieldError> {
    let invalid = |why: &str| (field.to_owned(), format!("Invalid value: {}: {why}", go_quote(kind)));
    let errs: Vec<FieldError> =
        crate::metadata::qualified_name_errors(kind).iter().map(|w| invalid(w)).collect();
    if errs.is_empty() && !kind.contains('/') && !TYPES.contains(&kind) {
        return vec![invalid("must be a standard limit type or fully qualified")];
    }
    errs
}

/// `validateLimitRangeResourceName`: container rules for `Pod` and `Container` limits.
fn name_errors(kind: &str, name: &str, field: &str) -> Vec<FieldError> {
    if matches!(kind, "Pod" | "Container") {
        container_resource_errors(name, field)
    } else {
        resource_errors(name, field)
    }
}

/// One list of a limit (`max`, `min`, …): its names checked, its amounts parsed.
fn list(
    limit: &Value,
    which: &str,
    kind: &str,
    at: &str,
    errs: &mut Vec<FieldError>,
) -> BTreeMap<String, Quantity> {
    let mut amounts = BTreeMap::new();
    for (name, amount) in limit.get(which).and_then(Value::as_object).into_iter().flatten() {
        errs.extend(name_errors(kind, name, &format!("{at}.{which}[{name}]")));
        if let Some(q) = amount.as_str().and_then(|t| Quantity::parse(t).ok()) {
            amounts.insert(name.clone(), q);
        }
    }
    amounts
}

/// Whether a limit's list has entries.
fn has_entries(limit: &Value, which: &str) -> bool {
    limit.get(which).and_then(Value::as_object).is_some_and(|m| !m.is_empty())
}

/// The rules of one limit, in upstream's order.
fn limit_errors(limit: &Value, kind: &str, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let max = list(limit, "max", kind, at, &mut errs);
    let min = list(limit, "min", kind, at, &mut errs);
    let (mut default, mut request) = (BTreeMap::new(), BTreeMap::new());
    if kind == "Pod" {
        for which in ["default", "defaultRequest"] {
            if has_entries(limit, which) {
                errs.push((
                    format!("{at}.{which}"),
                    "Forbidden: may not be specified when `type` is 'Pod'".to_owned(),
                ));
            }
        }
    } else {
        default = list(limit, "default", kind, at, &mut errs);
        request = list(limit, "defaultRequest", kind, at, &mut errs);
    }
    if kind == "PersistentVolumeClaim" {
        let named = |which: &str| limit.get(which).and_then(|m| m.get("storage")).is_some();
        if !named("min") && !named("max") {
            errs.push((
                format!("{at}.limits"),
                "Required value: either minimum or maximum storage value is required, but neither was provided"
                    .to_owned(),
            ));
        }
    }
    let ratio = list(limit, "maxLimitRequestRatio", kind, at, &mut errs);
    let keys: BTreeSet<&String> = max
        .keys()
        .chain(min.keys())
        .chain(default.keys())
        .chain(request.keys())
        .chain(ratio.keys())
        .collect();
    for k in keys {
        let (mn, mx, def, req, r) = (min.get(k), max.get(k), default.get(k), request.get(k), ratio.get(k));
        let mut invalid = |which: &str, value: &Quantity, why: String| {
            errs.push((format!("{at}.{which}[{k}]"), format!("Invalid value: {value}: {why}")));
        };
        if let (Some(mn), Some(mx)) = (mn, mx)
            && mn > mx
        {
            invalid("min", mn, format!("min value {mn} is greater than max value {mx}"));
        }
        if let (Some(req), Some(mn)) = (req, mn)
            && mn > req
        {
            invalid(
                "defaultRequest",
                req,
                format!("min value {mn} is greater than default request value {req}"),
            );
        }
        if let (Some(req), Some(mx)) = (req, mx)
            && req > mx
        {
            invalid(
                "defaultRequest",
                req,
                format!("default request value {req} is greater than max value {mx}"),
            );
        }
        if let (Some(req), Some(def)) = (req, def)
            && req > def
        {
            invalid(
                "defaultRequest",
                req,
                format!("default request value {req} is greater than default limit value {def}"),
            );
        }
        if let (Some(def), Some(mn)) = (def, mn)
            && mn > def
        {
            invalid("default", mn, format!("min value {mn} is greater than default value {def}"));
        }
        if let (Some(def), Some(mx)) = (def, mx)
            && def > mx
        {
            invalid("default", mx, format!("default value {def} is greater than max value {mx}"));
        }
        if let Some(r) = r
            && *r < Quantity::count(1)
        {
            invalid("maxLimitRequestRatio", r, format!("ratio {r} is less than 1"));
        }
        if let (Some(r), Some(mn), Some(mx)) = (r, mn, mx)
            && let Some(limit) = ratio_limit(r, mn, mx)
            && ratio_value(r, mn, mx) > limit
        {
            invalid(
                "maxLimitRequestRatio",
                r,
                format!("ratio {r} is greater than max/min = {}", go_percent_f(limit)),
            );
        }
        if !overcommit_allowed(k)
            && let (Some(def), Some(req)) = (def, req)
            && def != req
        {
            invalid(
                "defaultRequest",
                req,
                format!("default value {def} must equal to defaultRequest value {req} in {k}"),
            );
        }
    }
    errs
}

/// The largest `MilliValue` that fits (`resource.MaxMilliValue`).
const MAX_MILLI: i128 = 9_223_372_036_854_775;

/// Whether upstream compares the ratio in thousandths (all three small enough).
fn in_millis(r: &Quantity, mn: &Quantity, mx: &Quantity) -> bool {
    [r, mn, mx].iter().all(|q| q.ceil().milli_value() / 1000 < MAX_MILLI)
}

/// The ratio as upstream compares it.
#[allow(clippy::cast_precision_loss)]
fn ratio_value(r: &Quantity, mn: &Quantity, mx: &Quantity) -> f64 {
    if in_millis(r, mn, mx) {
        r.milli_value() as f64 / 1000.0
    } else {
        (r.ceil().milli_value() / 1000) as f64
    }
}

/// max/min as upstream computes it (`None` when min is zero and the division is not finite
/// the way Go's is: Go's float division by zero gives an infinity, which no ratio exceeds).
#[allow(clippy::cast_precision_loss)]
fn ratio_limit(r: &Quantity, mn: &Quantity, mx: &Quantity) -> Option<f64> {
    let (mn, mx) = if in_millis(r, mn, mx) {
        (mn.milli_value() as f64, mx.milli_value() as f64)
    } else {
        ((mn.ceil().milli_value() / 1000) as f64, (mx.ceil().milli_value() / 1000) as f64)
    };
    let limit = mx / mn;
    limit.is_finite().then_some(limit)
}

/// Go's `%f`: six decimals.
fn go_percent_f(f: f64) -> String {
    format!("{f:.6}")
}
