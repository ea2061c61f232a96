//! How upstream's Go code prints values, so the sandbox's messages and printed cells are
//! upstream's byte for byte: `%v` of a decoded JSON value (a printer column's string cell, a
//! number inside a message), `%q` (`strconv.Quote`) of a string, `%#v` of a
//! decoded JSON object or array, and `encoding/json`'s rendering of enum values. The bad value of
//! a `field.Error` is printed by apimachinery's `ErrorBody`
//! (`apimachinery/pkg/util/validation/field/errors.go`): `int64`, `float64` and `bool` with `%v`,
//! strings with `%q`, `nil` as `"null"`, anything else with `%#v`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A JSON number as upstream's decoder holds it: `int64` when it is one, `float64` otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    /// An integer that fits `int64`.
    Int(i64),
    /// Anything else (fractions, exponents, integers past `int64`).
    Float(f64),
}

impl Num {
    /// The number of a JSON value; `None` for any other value.
    pub(crate) fn of(v: &Value) -> Option<Self> {
        let n = v.as_number()?;
        match n.as_i64() {
            Some(i) => Some(Self::Int(i)),
            None => n.as_f64().map(Self::Float),
        }
    }

    /// As `float64`.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }

    /// Go's `%v`.
    pub(crate) fn go(self) -> String {
        match self {
            Self::Int(i) => i.to_string(),
            Self::Float(f) => go_float(f),
        }
    }
}

/// The shortest decimal digits of `f` and its decimal exponent, as `1.2345e6` gives `("12345", 6)`.
fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// exponent form (`1e+06`, `1.5e-07`) when the decimal exponent is below -4 or at least 6 (the
/// precision `strconv` decides by for the shortest form).
pub(crate) fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".to_owned() } else { "0".to_owned() };
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".to_owned()
        } else if f > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        };
    }
    let (digits, exp) = shortest_digits(f);
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        return exponent_form(sign, &digits, exp, 2);
    }
    fixed(sign, &digits, exp)
}

/// `d.ddd` then `e±` and the exponent, at least `width` digits of it (`%v` pads to two, JSON
/// does not).
fn exponent_form(sign: &str, digits: &str, exp: i32, width: usize) -> String {
    let mut out = format!("{sign}{}", &digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let _ = write!(out, "e{}{:0width$}", if exp < 0 { '-' } else { '+' }, exp.abs());
    out
}

/// `digits × 10^(exp - len + 1)` in plain decimal notation.
fn fixed(sign: &str, digits: &str, exp: i32) -> String {
    let len = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if exp < 0 {
        let zeros = usize::try_from(-exp - 1).unwrap_or(0);
        format!("{sign}0.{}{digits}", "0".repeat(zeros))
    } else if exp + 1 >= len {
        let zeros = usize::try_from(exp + 1 - len).unwrap_or(0);
        format!("{sign}{digits}{}", "0".repeat(zeros))
    } else {
        let point = usize::try_from(exp + 1).unwrap_or(0);
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// `encoding/json`'s rendering of a `float64`: plain decimals for magnitudes in `[1e-6, 1e21)`,
/// exponent form (`1e+21`, `1e-7`) outside.
fn json_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return "0".to_owned();
    }
    let (digits, exp) = shortest_digits(f);
    let sign = if f < 0.0 { "-" } else { "" };
    if f.abs() < 1e-6 || f.abs() >= 1e21 {
        return exponent_form(sign, &digits, exp, 1);
    }
    fixed(sign, &digits, exp)
}

/// `strconv.Quote`: Go's double-quoted string with Go's escapes.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Close to Go's `strconv.IsPrint`: everything but control and format characters and the
/// non-ASCII spaces.
fn is_go_printable(c: char) -> bool {
    if c.is_control() {
        return false;
    }
    let u = c as u32;
    // Format characters (Cf) and separators Go does not print as is.
    !matches!(u, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f
        | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb | 0xa0 | 0x1680
        | 0x2000..=0x200a | 0x205f | 0x3000 | 0xe000..=0xf8ff | 0xf0000..)
        && !(0xd800..=0xdfff).contains(&u)
}

/// A field error's bad value, as apimachinery's `ErrorBody` prints it.
pub(crate) fn bad_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => Num::of(v).map_or_else(String::new, Num::go),
        Value::String(s) => go_quote(s),
        Value::Array(_) | Value::Object(_) => go_sharp_v(v),
    }
}

/// Go's `%#v` of a `map[string]string` (labels): `map[string]string{"app":"web"}`, keys sorted;
/// `map[string]string(nil)` for none.
pub(crate) fn go_string_map(m: Option<&serde_json::Map<String, Value>>) -> String {
    let Some(m) = m else { return "map[string]string(nil)".to_owned() };
    let pairs: Vec<String> = sorted(m)
        .into_iter()
        .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v.as_str().unwrap_or(""))))
        .collect();
    format!("map[string]string{{{}}}", pairs.join(", "))
}

/// A `LabelSelector` as Go's `%#v` prints it in a field error (an empty one, here).
pub(crate) fn go_label_selector(s: &Value) -> String {
    let labels = go_string_map(s.get("matchLabels").and_then(Value::as_object));
    let expressions = match s.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(reqs) => {
            let items: Vec<String> = reqs
                .iter()
                .map(|r| {
                    let text = |k: &str| go_quote(r.get(k).and_then(Value::as_str).unwrap_or(""));
                    let values = match r.get("values").and_then(Value::as_array) {
                        None => "[]string(nil)".to_owned(),
                        Some(vs) => {
                            let vs: Vec<String> =
                                vs.iter().map(|v| go_quote(v.as_str().unwrap_or(""))).collect();
                            format!("[]string{{{}}}", vs.join(", "))
                        }
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        text("key"),
                        text("operator")
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

/// Go's `%#v` of a decoded JSON value (`map[string]interface {}{"a":1}`, `[]interface {}{"x"}`).
pub(crate) fn go_sharp_v(v: &Value) -> String {
    let mut out = String::new();
    sharp_v(v, &mut out, true);
    out
}

fn sharp_v(v: &Value, out: &mut String, top: bool) {
    match v {
        Value::Null => out.push_str(if top { "<nil>" } else { "interface {}(nil)" }),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(_) => out.push_str(&Num::of(v).map_or_else(String::new, Num::go)),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Array(items) => {
            join(out, ("[]interface {}{", ", ", "}"), items, |out, item| sharp_v(item, out, false));
        }
        Value::Object(map) => {
            join(out, ("map[string]interface {}{", ", ", "}"), sorted(map), |out, (k, v)| {
                out.push_str(&go_quote(k));
                out.push(':');
                sharp_v(v, out, false);
            })
        }
    }
}

/// Writes `items` with `write` between `open` and `close`, separated by `sep`.
fn join<T>(
    out: &mut String,
    (open, sep, close): (&str, &str, &str),
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut String, T),
) {
    out.push_str(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        write(out, item);
    }
    out.push_str(close);
}

/// A map's members in key order, as Go prints and encodes maps.
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut members: Vec<_> = map.iter().collect();
    members.sort_by(|a, b| a.0.cmp(b.0));
    members
}

/// A value as Go's `fmt.Print` writes the `interface{}` it decodes to (what upstream's
/// `PrintResults` does for a `string` column): strings bare, `map[k:v …]` with sorted keys,
/// `[a b]`, `<nil>` for a nested `null`, floats in `%v` form.
pub(crate) fn go_print(v: &Value) -> String {
    let mut out = String::new();
    write_go(v, &mut out);
    out
}

fn write_go(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // Upstream decodes integers beyond int64 as float64.
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&go_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => join(out, ("[", " ", "]"), items, |out, item| write_go(item, out)),
        Value::Object(members) => join(out, ("map[", " ", "]"), sorted(members), |out, (key, value)| {
            out.push_str(key);
            out.push(':');
            write_go(value, out);
        }),
    }
}

/// `encoding/json.Marshal` of a decoded JSON value (sorted keys, no spaces, Go's number and
/// string rendering), as upstream turns non-string enum values into strings.
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    json_into(v, &mut out);
    out
}

fn json_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(_) => match Num::of(v) {
            Some(Num::Int(i)) => {
                let _ = write!(out, "{i}");
            }
            Some(Num::Float(f)) => out.push_str(&json_float(f)),
            None => {}
        },
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => join(out, ("[", ",", "]"), items, |out, item| json_into(item, out)),
        Value::Object(map) => join(out, ("{", ",", "}"), sorted(map), |out, (k, v)| {
            out.push_str(&json_string(k));
            out.push(':');
            json_into(v, out);
        }),
    }
}

/// `encoding/json`'s string: HTML-safe escapes for `<`, `>` and `&`, as Go's `Marshal` does.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    //! Go's `fmt` and `encoding/json` renderings the messages depend on.
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_as_go_prints_them() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(123_456_789.0), "1.23456789e+08");
        assert_eq!(go_float(-2.25), "-2.25");
    }

    #[test]
    fn values_as_fmt_print_writes_them() {
        assert_eq!(go_print(&json!({"b": [1, "x"], "a": null})), "map[a:<nil> b:[1 x]]");
        for (f, want) in [(1e6, "1e+06"), (1e21, "1e+21"), (1_234_567.0, "1.234567e+06"), (0.0, "0")] {
            assert_eq!(go_print(&json!(f)), want, "{f}");
        }
    }

    #[test]
    fn json_like_encoding_json() {
        assert_eq!(
            go_json(&json!({"b": 1, "a": [true, null, "<x>"]})),
            r#"{"a":[true,null,"\u003cx\u003e"],"b":1}"#
        );
        assert_eq!(go_json(&json!(1.5)), "1.5");
        assert_eq!(go_json(&json!(1e21)), "1e+21");
    }

    #[test]
    fn bad_values_as_error_body_prints_them() {
        assert_eq!(bad_value(&json!("a\"b\n")), r#""a\"b\n""#);
        assert_eq!(bad_value(&json!(null)), r#""null""#);
        assert_eq!(bad_value(&json!(11)), "11");
        assert_eq!(bad_value(&json!({"name": "a", "n": 1})), r#"map[string]interface {}{"n":1, "name":"a"}"#);
        assert_eq!(bad_value(&json!(["a", null])), r#"[]interface {}{"a", interface {}(nil)}"#);
    }
}
