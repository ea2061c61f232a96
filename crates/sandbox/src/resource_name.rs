//! Resource names (`cpu`, `requests.memory`, `hugepages-2Mi`, `example.com/gpu`) as upstream's
//! in-tree validation judges them (`pkg/apis/core/validation`: `validateResourceName`,
//! `validateContainerResourceName`, `ValidateResourceQuotaResourceName`, with the sets of
//! `pkg/apis/core/helper`): which are standard, which are extended, which count in whole units.
//! LimitRanges and ResourceQuotas check their keys with these.

use crate::status::FieldError;

/// The resources `IsStandardResourceName` knows (besides the huge pages').
const STANDARD: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// The resources a quota may limit (`IsStandardQuotaResourceName`, besides the huge pages').
const QUOTA: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// The resources counted in whole units (`IsIntegerResourceName`, besides the extended ones).
const INTEGER: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// `IsHugePageResourceName`.
#[must_use]
pub fn is_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `IsQuotaHugePageResourceName`: huge pages, or requests of them.
fn is_quota_huge_pages(name: &str) -> bool {
    is_huge_pages(name) || name.starts_with("requests.hugepages-")
}

/// `IsNativeResource`: unqualified, or in the `kubernetes.io/` domain.
#[must_use]
pub fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: qualified outside `kubernetes.io/`, not a request, and still a
/// qualified name once `requests.` is put before it (as a quota names it).
#[must_use]
pub fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && crate::metadata::qualified_name_errors(&format!("requests.{name}")).is_empty()
}

/// `IsStandardQuotaResourceName`.
#[must_use]
pub fn is_quota_resource(name: &str) -> bool {
    QUOTA.contains(&name) || is_quota_huge_pages(name)
}

/// `IsIntegerResourceName`: object counts and extended resources.
#[must_use]
pub fn is_integer(name: &str) -> bool {
    INTEGER.contains(&name) || is_extended(name)
}

/// `IsOvercommitAllowed`: native resources but huge pages (a request of the others must equal
/// their limit).
#[must_use]
pub fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_huge_pages(name)
}

/// `field.Invalid` of a resource name: a `core.ResourceName`, printed by its `String()`, so
/// unquoted.
fn invalid(field: &str, name: &str, why: &str) -> FieldError {
    crate::field_errors::invalid_bare(field, name, why)
}

/// `ValidateResourceQuantityValue`: not negative, and whole for a resource counted in units.
#[must_use]
pub fn quantity_value_errors(name: &str, q: crate::quantity::Quantity, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if q.is_negative() {
        errs.push((
            field.to_owned(),
            format!(
                "Invalid value: {}: must be greater than or equal to 0",
                crate::go_print::go_quote(&q.to_string())
            ),
        ));
    }
    if is_integer(name) && q.ceil() != q {
        errs.push((field.to_owned(), format!("Invalid value: {q}: must be an integer")));
    }
    errs
}

/// `validateResourceName`: a qualified name, and a standard resource when unqualified.
#[must_use]
pub fn resource_errors(name: &str, field: &str) -> Vec<FieldError> {
    let errs: Vec<FieldError> =
        crate::metadata::qualified_name_errors(name).iter().map(|why| invalid(field, name, why)).collect();
    if !errs.is_empty() {
        return errs;
    }
    if !(name.contains('/') || STANDARD.contains(&name) || is_quota_huge_pages(name)) {
        return vec![invalid(field, name, "must be a standard resource type or fully qualified")];
    }
    errs
}

/// `validateContainerResourceName`: [`resource_errors`], then, unqualified, one of a
/// container's (cpu, memory, ephemeral storage, huge pages), and qualified outside
/// `kubernetes.io/`, an extended resource's name.
#[must_use]
pub fn container_resource_errors(name: &str, field: &str) -> Vec<FieldError> {
    let mut errs = resource_errors(name, field);
    if !name.contains('/') {
        if !(matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_huge_pages(name)) {
            errs.push(invalid(field, name, "must be a standard resource for containers"));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(invalid(field, name, "doesn't follow extended resource name standard"));
    }
    errs
}

/// `ValidateResourceQuotaResourceName`: [`resource_errors`], then, unqualified, a resource a
/// quota may limit.
#[must_use]
pub fn quota_resource_errors(name: &str, field: &str) -> Vec<FieldError> {
    let mut errs = resource_errors(name, field);
    if !name.contains('/') && !is_quota_resource(name) {
        errs.push(invalid(field, name, "must be a standard resource for quota"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_judged_as_upstream_does() {
        assert!(resource_errors("requests.cpu", "f").is_empty());
        assert!(resource_errors("hugepages-2Mi", "f").is_empty());
        assert!(resource_errors("example.com/gpu", "f").is_empty());
        assert_eq!(
            resource_errors("foo", "f")[0].1,
            "Invalid value: foo: must be a standard resource type or fully qualified"
        );
        assert!(container_resource_errors("example.com/gpu", "f").is_empty());
        assert_eq!(container_resource_errors("pods", "f").len(), 1);
        assert_eq!(container_resource_errors("requests.example.com/foo", "f").len(), 1);
        assert_eq!(quota_resource_errors("storage", "f").len(), 1);
        assert!(quota_resource_errors("count/pods", "f").is_empty());
        assert!(is_integer("count/pods") && is_integer("pods") && !is_integer("cpu"));
        assert!(!overcommit_allowed("hugepages-2Mi") && !overcommit_allowed("example.com/gpu"));
        assert!(overcommit_allowed("cpu"));
    }
}
