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
//! use kube_informer::version::numeric;
//!
//! assert_eq!(numeric("1042"), Some(1042));
//! assert!(numeric("1042") > numeric("999")); // later, though "999" sorts after "1042"
//! assert_eq!(numeric("0x2a"), None); // cannot tell
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
}
