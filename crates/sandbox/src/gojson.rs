//! Why a body is not JSON, in the words of Go's `encoding/json` — which is what a client of a real
//! API server reads in a 400 for a malformed object or continue token. Go checks the whole input
//! with its scanner before decoding, so the first byte the scanner refuses decides the message:
//! `invalid character 'x' looking for beginning of value`, `unexpected end of JSON input`, …

use std::borrow::Cow;

/// Go's message for the first syntax error in `data`, or `None` when it is one valid JSON value.
#[must_use]
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut s = Scanner { data, at: 0 };
    match s.value().and_then(|()| s.end()) {
        Ok(()) => None,
        Err(Error::Eof) => Some("unexpected end of JSON input".into()),
        Err(Error::Invalid(c, context)) => Some(format!("invalid character {} {context}", quote_char(c))),
    }
}

/// Go's message for decoding a JSON value of the wrong type into a struct (the `apiVersion`
/// and `kind` an API server reads first): `json: cannot unmarshal array into Go value of type …`.
#[must_use]
pub fn not_an_object(value: &serde_json::Value) -> String {
    let found = match value {
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        _ => "bool",
    };
    format!(
        "json: cannot unmarshal {found} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
    )
}

enum Error {
    Eof,
    Invalid(u8, Cow<'static, str>),
}

/// A refused byte and what the scanner was doing.
fn invalid(c: u8, context: &'static str) -> Error {
    Error::Invalid(c, Cow::Borrowed(context))
}

/// How deep Go's scanner lets objects and arrays nest (`maxNestingDepth`).
pub(crate) const MAX_NESTING_DEPTH: usize = 10_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

struct Scanner<'a> {
    data: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Result<u8, Error> {
        self.data.get(self.at).copied().ok_or(Error::Eof)
    }

    fn next(&mut self) -> Result<u8, Error> {
        let c = self.peek()?;
        self.at += 1;
        Ok(c)
    }

    fn skip_space(&mut self) {
        while matches!(self.data.get(self.at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// After the top-level value only space may follow.
    fn end(&mut self) -> Result<(), Error> {
        self.skip_space();
        match self.data.get(self.at) {
            None => Ok(()),
            Some(&c) => Err(invalid(c, "after top-level value")),
        }
    }

    /// One value, nested containers included. Iterative, with Go's own bound on nesting
    /// (`maxNestingDepth`), so no input can exhaust the stack.
    fn value(&mut self) -> Result<(), Error> {
        let mut open: Vec<Container> = Vec::new();
        'value: loop {
            self.skip_space();
            match self.next()? {
                c @ (b'{' | b'[') => {
                    if open.len() >= MAX_NESTING_DEPTH {
                        return Err(invalid(c, "exceeded max depth"));
                    }
                    self.skip_space();
                    let (container, close) =
                        if c == b'{' { (Container::Object, b'}') } else { (Container::Array, b']') };
                    if self.peek()? == close {
                        self.at += 1;
                    } else {
                        open.push(container);
                        if container == Container::Object {
                            self.key()?;
                        }
                        continue 'value;
                    }
                }
                b'"' => self.string()?,
                b'-' => {
                    let c = self.next()?;
                    if !c.is_ascii_digit() {
                        return Err(invalid(c, "in numeric literal"));
                    }
                    self.number(c)?;
                }
                c @ b'0'..=b'9' => self.number(c)?,
                b't' => self.literal(b"rue", "in literal true (expecting '")?,
                b'f' => self.literal(b"alse", "in literal false (expecting '")?,
                b'n' => self.literal(b"ull", "in literal null (expecting '")?,
                c => return Err(invalid(c, "looking for beginning of value")),
            }
            // A value ended: what follows it closes its container or starts the next member.
            while let Some(&container) = open.last() {
                self.skip_space();
                match (container, self.next()?) {
                    (Container::Object, b',') => {
                        self.key()?;
                        continue 'value;
                    }
                    (Container::Array, b',') => continue 'value,
                    (Container::Object, b'}') | (Container::Array, b']') => {
                        open.pop();
                    }
                    (Container::Object, c) => return Err(invalid(c, "after object key:value pair")),
                    (Container::Array, c) => return Err(invalid(c, "after array element")),
                }
            }
            return Ok(());
        }
    }

    /// An object member's key and its colon.
    fn key(&mut self) -> Result<(), Error> {
        self.skip_space();
        match self.next()? {
            b'"' => self.string()?,
            c => return Err(invalid(c, "looking for beginning of object key string")),
        }
        self.skip_space();
        match self.next()? {
            b':' => Ok(()),
            c => Err(invalid(c, "after object key")),
        }
    }

    fn string(&mut self) -> Result<(), Error> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(invalid(c, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(invalid(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    /// A number whose first digit `first` was read; what follows it is the caller's to judge.
    fn number(&mut self, first: u8) -> Result<(), Error> {
        if first != b'0' {
            while self.data.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
        }
        if self.data.get(self.at) == Some(&b'.') {
            self.at += 1;
            let c = self.next()?;
            if !c.is_ascii_digit() {
                return Err(invalid(c, "after decimal point in numeric literal"));
            }
            while self.data.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
        }
        if matches!(self.data.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            let mut c = self.next()?;
            if matches!(c, b'+' | b'-') {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(invalid(c, "in exponent of numeric literal"));
            }
            while self.data.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
        }
        Ok(())
    }

    fn literal(&mut self, rest: &[u8], context: &'static str) -> Result<(), Error> {
        for &want in rest {
            let c = self.next()?;
            if c != want {
                // Go's context names the byte it expected: `in literal true (expecting 'r')`.
                return Err(Error::Invalid(c, Cow::Owned(format!("{context}{}')", char::from(want)))));
            }
        }
        Ok(())
    }
}

/// `quoteChar`: a byte as Go quotes it in a syntax error, the byte read as a rune.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".into(),
        b'"' => "'\"'".into(),
        b'\\' => r"'\\'".into(),
        b'\n' => r"'\n'".into(),
        b'\r' => r"'\r'".into(),
        b'\t' => r"'\t'".into(),
        0x07 => r"'\a'".into(),
        0x08 => r"'\b'".into(),
        0x0c => r"'\f'".into(),
        0x0b => r"'\v'".into(),
        0x20..=0x7e => format!("'{}'", char::from(c)),
        // Latin-1 letters and signs Go prints as they are; controls, NBSP and the soft hyphen not.
        0xa1..=0xff if c != 0xad => format!("'{}'", char::from(c)),
        0x00..=0x1f | 0x7f => format!("'\\x{c:02x}'"),
        _ => format!("'\\u{:04x}'", u32::from(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_read_as_gos() {
        for (input, message) in [
            (r#"{"metadata": {"name": "obj""#, "unexpected end of JSON input"),
            ("", "unexpected end of JSON input"),
            ("nope", "invalid character 'o' in literal null (expecting 'u')"),
            ("{a}", "invalid character 'a' looking for beginning of object key string"),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (r#"{"a": 1 "b"}"#, "invalid character '\"' after object key:value pair"),
            ("[1 2]", "invalid character '2' after array element"),
            ("[1,]", "invalid character ']' looking for beginning of value"),
            ("01", "invalid character '1' after top-level value"),
            ("-x", "invalid character 'x' in numeric literal"),
            ("1.e", "invalid character 'e' after decimal point in numeric literal"),
            ("1e+x", "invalid character 'x' in exponent of numeric literal"),
            ("\"a\\q\"", "invalid character 'q' in string escape code"),
            ("\"\t\"", "invalid character '\\t' in string literal"),
            ("{} {}", "invalid character '{' after top-level value"),
        ] {
            assert_eq!(syntax_error(input.as_bytes()).as_deref(), Some(message), "{input:?}");
        }
        assert_eq!(
            syntax_error(b"\x81"),
            Some("invalid character '\\u0081' looking for beginning of value".into())
        );
        assert_eq!(syntax_error(br#" {"a": [1, 2.5e3, true, null, "x\u0041"]} "#), None);
        assert_eq!(syntax_error(br#"[{}, [], {"a": {"b": [[1], {"c": null}]}}, "x"]"#), None);
    }

    #[test]
    fn nesting_is_bounded_as_gos_and_never_exhausts_the_stack() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(syntax_error(nested(MAX_NESTING_DEPTH).as_bytes()), None);
        let refused = Some("invalid character '[' exceeded max depth".to_owned());
        assert_eq!(syntax_error(nested(MAX_NESTING_DEPTH + 1).as_bytes()), refused);
        assert_eq!(syntax_error(nested(1_000_000).as_bytes()), refused);
        let objects =
            format!("{}1{}", r#"{"a":"#.repeat(MAX_NESTING_DEPTH + 1), "}".repeat(MAX_NESTING_DEPTH + 1));
        assert_eq!(
            syntax_error(objects.as_bytes()),
            Some("invalid character '{' exceeded max depth".to_owned())
        );
    }
}
