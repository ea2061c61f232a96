//! The reviews a client creates and the server answers without storing (`authorization.k8s.io`'s
//! SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview and
//! SelfSubjectRulesReview, `authentication.k8s.io`'s TokenReview): what their REST storages
//! refuse before they answer. The answers themselves are [`crate::actions::review`]'s.
//!
//! The access reviews' spec holds exactly one of resource and non-resource attributes, a
//! subject (for the reviews that name one), and selector attributes that say something; a local
//! review stays in its namespace. A rules review names a namespace; a token review a token.

use serde_json::Value;

use crate::field_errors::{invalid, invalid_str, required};
use crate::go_print::{go_quote, go_string_map};
use crate::status::{ApiError, FieldError};

/// What the review of kind `kind`, posted in namespace `ns` (empty for the cluster-wide ones),
/// is refused for, as its REST storage refuses it: a 422 of the validation's causes, or the
/// 400 of a check of its own.
///
/// # Errors
///
/// The refusal, when there is one.
pub fn check(kind: &str, ns: &str, review: &Value) -> Result<(), ApiError> {
    let spec = review.get("spec").unwrap_or(&Value::Null);
    let text = |field: &str| spec.get(field).and_then(Value::as_str).unwrap_or("");
    let errs = match kind {
        "SubjectAccessReview" => [access_spec(spec, true), empty_metadata(review, false)].concat(),
        "SelfSubjectAccessReview" => [access_spec(spec, false), empty_metadata(review, false)].concat(),
        "LocalSubjectAccessReview" => local(spec, review, ns),
        "SelfSubjectRulesReview" if text("namespace").is_empty() => {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        "TokenReview" if text("token").is_empty() => {
            return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
        }
        _ => Vec::new(),
    };
    if errs.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("authorization.k8s.io", kind, "", &errs))
}

/// A present, non-null field of `v`.
fn given<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    v.get(field).filter(|f| !f.is_null())
}

/// The non-resource attributes as Go's `%#v` prints the internal type.
fn non_resource_go(attrs: &Value) -> String {
    let text = |f: &str| go_quote(attrs.get(f).and_then(Value::as_str).unwrap_or(""));
    format!("authorization.NonResourceAttributes{{Path:{}, Verb:{}}}", text("path"), text("verb"))
}

/// `ValidateSubjectAccessReviewSpec` (`subject`: a user or a group is required) and
/// `ValidateSelfSubjectAccessReviewSpec`.
fn access_spec(spec: &Value, subject: bool) -> Vec<FieldError> {
    const ONE: &str = "exactly one of nonResourceAttributes or resourceAttributes must be specified";
    let mut errs = Vec::new();
    let resource = given(spec, "resourceAttributes");
    let non_resource = given(spec, "nonResourceAttributes");
    match (resource, non_resource) {
        (Some(_), Some(n)) => {
            errs.push(("spec".into(), format!("Invalid value: {}: {ONE}", non_resource_go(n))))
        }
        (None, None) => errs.push(invalid("spec", &Value::Null, ONE)),
        _ => {}
    }
    let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let no_groups = spec.get("groups").and_then(Value::as_array).is_none_or(Vec::is_empty);
    if subject && user.is_empty() && no_groups {
        errs.push(invalid_str("spec.user", user, "at least one of user or group must be specified"));
    }
    if let Some(r) = resource {
        for selector in ["fieldSelector", "labelSelector"] {
            errs.extend(selector_attributes(r, selector));
        }
    }
    errs
}

/// `validateFieldSelectorAttributes` and `validateLabelSelectorAttributes`: a raw selector or
/// requirements, not both and not neither, and each requirement well formed.
fn selector_attributes(resource: &Value, selector: &str) -> Vec<FieldError> {
    let Some(s) = given(resource, selector) else { return Vec::new() };
    let at = format!("spec.resourceAttributes.{selector}");
    let raw = s.get("rawSelector").and_then(Value::as_str).unwrap_or("");
    let requirements = s.get("requirements").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut errs = match (raw.is_empty(), requirements.is_empty()) {
        (false, false) => {
            vec![invalid_str(
                format!("{at}.rawSelector"),
                raw,
                "may not specified at the same time as requirements",
            )]
        }
        (true, true) => vec![required(
            format!("{at}.requirements"),
            &format!("when {at} is specified, requirements or rawSelector is required"),
        )],
        _ => Vec::new(),
    };
    // A newer client's operators are let through: the authorizer may know them.
    for (i, req) in requirements.iter().enumerate() {
        let at = format!("{at}.requirements[{i}]");
        errs.extend(if selector == "fieldSelector" {
            crate::label_rules::field_requirement_errors(req, &at, true)
        } else {
            crate::label_rules::label_requirement_errors(req, &at, true)
        });
    }
    errs
}

/// The access reviews' metadata must be empty but for the field manager's entries (and, for a
/// local review, its namespace). Upstream prints the whole `ObjectMeta` with `%#v`, managed
/// fields and their time pointers included: that part is not reproduced (it holds an address).
fn empty_metadata(review: &Value, local: bool) -> Vec<FieldError> {
    let meta = review.get("metadata").and_then(Value::as_object);
    let set = meta.into_iter().flatten().any(|(k, v)| {
        !v.is_null() && k != "managedFields" && k != "creationTimestamp" && !(local && k == "namespace")
    });
    if !set {
        return Vec::new();
    }
    let why = if local { "must be empty except for namespace" } else { "must be empty" };
    vec![("metadata".into(), format!("Invalid value: {}: {why}", go_object_meta(review)))]
}

/// An object's metadata as Go's `%#v` prints a `metav1.ObjectMeta` (managed fields left out).
fn go_object_meta(obj: &Value) -> String {
    let m = |f: &str| obj.pointer(&format!("/metadata/{f}"));
    let text = |f: &str| go_quote(m(f).and_then(Value::as_str).unwrap_or(""));
    let finalizers: Option<Vec<&str>> =
        m("finalizers").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect());
    format!(
        "v1.ObjectMeta{{Name:{}, GenerateName:{}, Namespace:{}, SelfLink:{}, UID:{}, ResourceVersion:{}, Generation:{}, CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), DeletionTimestamp:<nil>, DeletionGracePeriodSeconds:(*int64)(nil), Labels:{}, Annotations:{}, OwnerReferences:[]v1.OwnerReference(nil), Finalizers:{}, ManagedFields:[]v1.ManagedFieldsEntry(nil)}}",
        text("name"),
        text("generateName"),
        text("namespace"),
        text("selfLink"),
        text("uid"),
        text("resourceVersion"),
        m("generation").and_then(Value::as_i64).unwrap_or(0),
        go_string_map(m("labels").and_then(Value::as_object)),
        go_string_map(m("annotations").and_then(Value::as_object)),
        finalizers.map_or_else(|| "[]string(nil)".to_owned(), |f| crate::field_errors::go_string_slice(&f)),
    )
}

/// `ValidateLocalSubjectAccessReview`: a subject access review whose resource attributes name
/// the review's own namespace (the request's, when the body names none) and that has no
/// non-resource attributes.
fn local(spec: &Value, review: &Value, ns: &str) -> Vec<FieldError> {
    let mut errs = access_spec(spec, true);
    errs.extend(empty_metadata(review, true));
    let own =
        review.pointer("/metadata/namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(ns);
    if let Some(r) = given(spec, "resourceAttributes") {
        let asked = r.get("namespace").and_then(Value::as_str).unwrap_or("");
        if asked != own {
            errs.push(invalid_str(
                "spec.resourceAttributes.namespace",
                asked,
                "must match metadata.namespace",
            ));
        }
    }
    if let Some(n) = given(spec, "nonResourceAttributes") {
        errs.push((
            "spec.nonResourceAttributes".into(),
            format!("Invalid value: {}: disallowed on this kind of request", non_resource_go(n)),
        ));
    }
    errs
}
