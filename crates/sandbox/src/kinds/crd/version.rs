//! Kube-aware ordering of version names (`k8s.io/apimachinery/pkg/version`,
//! `CompareKubeAwareVersionStrings`), which discovery uses to list a group's versions and pick
//! the preferred one.

use std::cmp::Ordering;

/// The stability of a kube-like version; the derived order is its priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stability {
    Alpha,
    Beta,
    Ga,
}

/// `v<major>`, `v<major>alpha<minor>` or `v<major>beta<minor>` (ASCII digits, as Go's `\d`),
/// parsed; `None` for any other name or a number past `i64`.
fn parse(v: &str) -> Option<(i64, Stability, i64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let major: i64 = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, Stability::Ga, 0));
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (Stability::Alpha, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (Stability::Beta, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, stability, minor.parse().ok()?))
}

/// Which of two version names has the higher priority, as upstream's
/// `CompareKubeAwareVersionStrings`: `Greater` when `a` comes first. Kube-like names
/// (`v2`, `v1beta1`) come before any other; among them GA before beta before alpha, then the
/// higher major, then the higher minor; other names follow in ascending alphabetical order.
#[must_use]
pub fn compare_kube_aware_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse(a), parse(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sa.cmp(&sb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
    }
}

/// Sorts version names highest priority first (`v2, v1, v1beta2, v1beta1, v1alpha1, foo1,
/// foo2`), as discovery lists a custom resource's served versions; the first is the group's
/// preferred version.
#[cfg(test)]
pub fn version_priority_sort(versions: &mut [String]) {
    versions.sort_by(|a, b| compare_kube_aware_versions(b, a));
}
