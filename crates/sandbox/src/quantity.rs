//! Resource quantities (`resource.Quantity` of apimachinery): parsed from `"500m"`, `"1Gi"` or
//! `"1e3"`, added, subtracted and compared exactly, and printed in upstream's canonical form — so a
//! ResourceQuota's usage and its `exceeded quota` message read as a real server writes them.
//!
//! A value is held in billionths (`n`, the finest precision upstream keeps; finer input is rounded
//! up, as `ParseQuantity` does) beside the format its text was written in: binary (`Ki`…`Ei`),
//! decimal (`m`, `k`…`E`, none) or a decimal exponent (`e3`). A sum takes the format of its left
//! side, or of the right side when the left is zero, as `Quantity.Add` does.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `Ki`, `Mi`… (falls back to decimal for values below 1024 or not whole).
    BinarySI,
    /// `m`, `k`, `M`… and no suffix.
    DecimalSI,
    /// `e3`, `e-3`.
    DecimalExponent,
}

/// An exact resource quantity: `1Gi + 512Mi` is `1536Mi`, `0.5` prints as `500m`, and `10GB` is
/// not a quantity.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

const NANOS: i128 = 1_000_000_000;

/// Why a text is not a quantity: upstream's one message for every grammar error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
pub struct ParseError;

impl Quantity {
    /// Zero, printed `0`.
    #[must_use]
    pub fn zero() -> Self {
        Self { nanos: 0, format: Format::DecimalSI }
    }

    /// A whole number, printed in decimal (`resource.NewQuantity(n, DecimalSI)`).
    #[must_use]
    pub fn count(n: i64) -> Self {
        Self { nanos: i128::from(n) * NANOS, format: Format::DecimalSI }
    }

    /// `resource.ParseQuantity`: a signed decimal number, then a binary suffix, a decimal one or
    /// a decimal exponent.
    ///
    /// # Errors
    ///
    /// [`ParseError`] for anything else (`10GB`, `1.2.3`, an empty text).
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let (negative, body) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let int_len = body.bytes().take_while(u8::is_ascii_digit).count();
        let (int, rest) = body.split_at(int_len);
        let (frac, suffix) = match rest.strip_prefix('.') {
            Some(after) => after.split_at(after.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", rest),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(ParseError);
        }
        let (base, exponent, format) = match suffix {
            "Ki" => (1024, 1, Format::BinarySI),
            "Mi" => (1024, 2, Format::BinarySI),
            "Gi" => (1024, 3, Format::BinarySI),
            "Ti" => (1024, 4, Format::BinarySI),
            "Pi" => (1024, 5, Format::BinarySI),
            "Ei" => (1024, 6, Format::BinarySI),
            "n" => (10, -9, Format::DecimalSI),
            "u" => (10, -6, Format::DecimalSI),
            "m" => (10, -3, Format::DecimalSI),
            "" => (10, 0, Format::DecimalSI),
            "k" => (10, 3, Format::DecimalSI),
            "M" => (10, 6, Format::DecimalSI),
            "G" => (10, 9, Format::DecimalSI),
            "T" => (10, 12, Format::DecimalSI),
            "P" => (10, 15, Format::DecimalSI),
            "E" => (10, 18, Format::DecimalSI),
            other => {
                let digits = other.strip_prefix(['e', 'E']).ok_or(ParseError)?;
                let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
                if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(ParseError);
                }
                let e: i32 = digits.parse().map_err(|_| ParseError)?;
                (10, e, Format::DecimalExponent)
            }
        };
        // The digits as one integer over 10^frac, scaled by the suffix, in billionths rounded up.
        let digits: String = [int, frac].concat();
        let digits = digits.trim_start_matches('0');
        if digits.len() > 36 {
            return Err(ParseError);
        }
        let mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().map_err(|_| ParseError)? };
        let mut numerator = mantissa;
        let mut denominator: i128 = 1;
        let mut scale10 = 9 - i32::try_from(frac.len()).map_err(|_| ParseError)?;
        if base == 1024 {
            numerator = numerator.checked_mul(1024_i128.pow(exponent.unsigned_abs())).ok_or(ParseError)?;
        } else {
            scale10 += exponent;
        }
        if scale10 >= 0 {
            numerator = numerator
                .checked_mul(10_i128.checked_pow(scale10.unsigned_abs()).ok_or(ParseError)?)
                .ok_or(ParseError)?;
        } else {
            denominator = 10_i128.checked_pow(scale10.unsigned_abs()).ok_or(ParseError)?;
        }
        let mut nanos = numerator / denominator + i128::from(numerator % denominator != 0);
        if negative {
            nanos = -nanos;
        }
        Ok(Self { nanos, format })
    }

    /// Whether it is zero.
    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether it is below zero.
    #[must_use]
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The amount as a float (for scores and ratios, never for sums).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn to_f64(self) -> f64 {
        self.nanos as f64 / NANOS as f64
    }

    /// `MilliValue()`: the amount in thousandths, rounded up (away from zero below it).
    #[must_use]
    pub fn milli_value(self) -> i128 {
        let per_milli = NANOS / 1000;
        let milli = self.nanos / per_milli;
        if self.nanos % per_milli > 0 {
            milli + 1
        } else if self.nanos % per_milli < 0 {
            milli - 1
        } else {
            milli
        }
    }

    /// The same amount, printed in `format`.
    #[must_use]
    pub fn in_format(self, format: Format) -> Self {
        Self { nanos: self.nanos, format }
    }

    /// Rounded up to a whole number (`RoundUp(0)`), keeping the format.
    #[must_use]
    pub fn ceil(self) -> Self {
        let whole = self.nanos.div_euclid(NANOS) + i128::from(self.nanos.rem_euclid(NANOS) != 0);
        Self { nanos: whole * NANOS, format: self.format }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl std::ops::Add for Quantity {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        let format = if self.is_zero() { other.format } else { self.format };
        Self { nanos: self.nanos + other.nanos, format }
    }
}

impl std::ops::Sub for Quantity {
    type Output = Self;

    fn sub(self, other: Self) -> Self {
        self + Self { nanos: -other.nanos, format: other.format }
    }
}

impl fmt::Display for Quantity {
    /// `Quantity.String()`: the canonical form of the value in its format.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let whole = self.nanos % NANOS == 0;
        let small = self.nanos.abs() < 1024 * NANOS;
        if self.format == Format::BinarySI && whole && !small {
            let mut amount = self.nanos / NANOS;
            let mut power = 0;
            while power < 6 && amount % 1024 == 0 {
                amount /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return write!(f, "{amount}{suffix}");
        }
        // Every factor of ten into the exponent, then back out until it is a multiple of three.
        let mut amount = self.nanos;
        let mut exponent: i32 = -9;
        while amount % 10 == 0 {
            amount /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                amount *= 10;
                exponent -= 1;
            }
            2 => {
                amount *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let suffix = match (self.format, exponent) {
            (Format::DecimalExponent, 0) => String::new(),
            (Format::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 0) => String::new(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        write!(f, "{amount}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_print_in_the_largest_exact_unit() {
        let sum = Quantity::parse("1Gi").unwrap() + Quantity::parse("512Mi").unwrap();
        assert_eq!(sum.to_string(), "1536Mi");
        assert_eq!(Quantity::parse("0.5").unwrap().to_string(), "500m");
        assert!(Quantity::parse("10GB").is_err());
    }

    fn canonical(s: &str) -> String {
        Quantity::parse(s).unwrap().to_string()
    }

    #[test]
    fn prints_as_upstream_canonicalizes() {
        for (given, printed) in [
            ("1", "1"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("100m", "100m"),
            ("0.1m", "100u"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("100Ki", "100Ki"),
            ("512", "512"),
            ("0.5Ki", "512"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("1.5e3", "1500"),
            ("12e1", "120"),
            ("1k", "1k"),
            ("2000M", "2G"),
            ("0", "0"),
            ("-1", "-1"),
            ("-500m", "-500m"),
            ("0.0000000001", "1n"),
        ] {
            assert_eq!(canonical(given), printed, "{given}");
        }
    }

    #[test]
    fn sums_keep_the_first_nonzero_format() {
        let q = |s| Quantity::parse(s).unwrap();
        assert_eq!((Quantity::zero() + q("1Gi")).to_string(), "1Gi");
        assert_eq!((q("1Gi") + q("1G")).to_string(), "2073741824");
        assert_eq!((q("1") + q("500m")).to_string(), "1500m");
        assert_eq!((q("2Gi") - q("1Gi")).to_string(), "1Gi");
        assert!(q("1Gi") > q("1G"));
        assert_eq!(q("1.5").ceil().to_string(), "2");
        assert_eq!(Quantity::count(3).to_string(), "3");
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        for bad in ["", ".", "10GB", "1.2.3", "e3", "1e", "1e+", "Mi", "1 Gi", "--1"] {
            assert_eq!(Quantity::parse(bad), Err(ParseError), "{bad:?}");
        }
    }
}
