//! The desired count: the `counter.example.com/desired` annotation, parsed strictly.
//!
//! A valid count is the value with surrounding whitespace trimmed, written as Go's `strconv.Atoi`
//! accepts it (ASCII digits, an optional sign), and within `0..=2147483647`. Everything else is
//! rejected with the value and the reason — the seed's Go code silently wraps `99999999999` into a
//! wrong `int32`; this does not.

/// The annotation that holds the desired replica count.
pub const ANNOTATION: &str = "counter.example.com/desired";

/// Why an annotation value is not a count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation {ANNOTATION}={value:?} is not a valid count: {reason}")]
pub struct InvalidCount {
    /// The value as written on the ConfigMap.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parses an annotation value into a replica count.
///
/// ```
/// use counter_controller::annotation::parse_desired;
/// assert_eq!(parse_desired(" 3 "), Ok(3));
/// assert_eq!(parse_desired("+5"), Ok(5));
/// assert!(parse_desired("-1").is_err());
/// assert!(parse_desired("99999999999").is_err());
/// ```
///
/// # Errors
///
/// [`InvalidCount`] naming the value: empty, not a whole number, negative, or above 2147483647.
pub fn parse_desired(raw: &str) -> Result<i32, InvalidCount> {
    let invalid = |reason| InvalidCount { value: raw.to_owned(), reason };
    let s = raw.trim();
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(invalid("empty; want a whole number such as \"3\""));
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid("not a whole number"));
    }
    // All digits: the only way parsing fails now is size.
    let n: u64 = digits.parse().unwrap_or(u64::MAX);
    if negative && n != 0 {
        return Err(invalid("negative; a replica count is 0 or more"));
    }
    i32::try_from(n).map_err(|_| invalid("too large; the most a Deployment allows is 2147483647"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_counts() {
        for (raw, want) in
            [("3", 3), ("0", 0), (" 7\n", 7), ("+5", 5), ("-0", 0), ("007", 7), ("2147483647", i32::MAX)]
        {
            assert_eq!(parse_desired(raw), Ok(want), "{raw:?}");
        }
    }

    #[test]
    fn every_bad_value_names_itself() {
        for raw in [
            "-1",
            "3.5",
            "abc",
            "",
            "   ",
            "99999999999",
            "2147483648",
            "1e3",
            "0x10",
            "3 4",
            "+",
            "-",
            "٣",
            "1_000",
            "not-a-number",
        ] {
            let err = parse_desired(raw).unwrap_err();
            assert_eq!(err.value, raw);
            assert!(err.to_string().contains(&format!("{raw:?}")), "{err}");
        }
    }
}
