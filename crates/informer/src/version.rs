//! Comparing `resourceVersion`s: how a controller tells whether one cache has caught up with an
//! event another informer delivered.
//!
//! Kubernetes calls a `resourceVersion` opaque, but an etcd-backed API server (and the sandbox)
//! writes the decimal number of a revision of its storage, one sequence shared by every kind
//! stored together: a larger number is later. A caller compares versions only as a fast path,
//! and when a version is not such a number it cannot tell, and must find out another way (a
//! consistent read).
//!
//! ```
//! use informer::version::{is_at_least, numeric};
//!
//! assert_eq!(numeric("1042"), Some(1042));
//! assert_eq!(numeric("0x2a"), None);
//! assert_eq!(is_at_least(Some(1042), "999"), Some(true));
//! assert_eq!(is_at_least(Some(1042), "1043"), Some(false));
//! assert_eq!(is_at_least(None, "1043"), Some(false)); // nothing seen yet
//! assert_eq!(is_at_least(Some(1042), "abc"), None); // cannot tell
//! ```

/// `version` as a number, when it is one as upstream's comparable versions are: decimal digits,
/// no sign, no leading zero, within 64 bits (etcd's revisions are).
#[must_use]
pub fn numeric(version: &str) -> Option<u64> {
    let digits = version.bytes().all(|b| b.is_ascii_digit());
    let leading_zero = version.len() > 1 && version.starts_with('0');
    if version.is_empty() || !digits || leading_zero {
        return None;
    }
    version.parse().ok()
}

/// Whether a cache that has seen up to `seen` (`None`: nothing yet) is at least as new as
/// `version`; `None` when `version` cannot be compared.
#[must_use]
pub fn is_at_least(seen: Option<u64>, version: &str) -> Option<bool> {
    let wanted = numeric(version)?;
    Some(seen.is_some_and(|s| s >= wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_decimal_numbers_compare() {
        for ok in ["1", "0", "18446744073709551615", "42"] {
            assert!(numeric(ok).is_some(), "{ok}");
        }
        for bad in ["", "01", "-1", "+1", "1.0", " 1", "abc", "18446744073709551616", "１"] {
            assert_eq!(numeric(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn at_least_compares_numbers_not_strings() {
        assert_eq!(is_at_least(Some(10), "9"), Some(true));
        assert_eq!(is_at_least(Some(9), "10"), Some(false));
        assert_eq!(is_at_least(Some(10), "10"), Some(true));
    }
}
