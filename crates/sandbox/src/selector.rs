//! Label and field selectors, parsed from the `labelSelector` / `fieldSelector` query parameters,
//! and the `LabelSelector` objects of specs (`matchLabels` + `matchExpressions`): whether one
//! selects a set of labels ([`selector_matches`]) and how it prints.
//!
//! Label selectors support every operator of the API: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
//! `k notin (a,b)`, `k` (exists) and `!k` (does not exist), joined by commas (AND). Field
//! selectors support `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`.

use serde_json::{Map, Value};

use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
    Gt(String, i64),
    Lt(String, i64),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Whether it selects everything.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A token of upstream's label selector lexer (`labels.Lexer`).
#[derive(Debug, Clone, PartialEq)]
enum Token {
    End,
    /// A run of characters the lexer could not make a symbol of.
    Error(String),
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier(String),
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

impl Token {
    /// The literal the parser's messages quote.
    fn literal(&self) -> String {
        match self {
            Self::End => String::new(),
            Self::Error(l) | Self::Identifier(l) => l.clone(),
            Self::ClosedPar => ")".into(),
            Self::Comma => ",".into(),
            Self::DoesNotExist => "!".into(),
            Self::DoubleEquals => "==".into(),
            Self::Equals => "=".into(),
            Self::GreaterThan => ">".into(),
            Self::In => "in".into(),
            Self::LessThan => "<".into(),
            Self::NotEquals => "!=".into(),
            Self::NotIn => "notin".into(),
            Self::OpenPar => "(".into(),
        }
    }
}

const SYMBOLS: [(&str, Token); 9] = [
    (")", Token::ClosedPar),
    (",", Token::Comma),
    ("!", Token::DoesNotExist),
    ("==", Token::DoubleEquals),
    ("=", Token::Equals),
    (">", Token::GreaterThan),
    ("<", Token::LessThan),
    ("!=", Token::NotEquals),
    ("(", Token::OpenPar),
];

/// `labels.Lexer`: whitespace separates, `=!(),><` make symbols (the longest that matches), any
/// other run is an identifier, `in` and `notin` keywords.
fn lex(input: &str) -> Vec<Token> {
    let special = |c: char| "=!(),><".contains(c);
    let chars: Vec<char> = input.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i >= chars.len() {
            out.push(Token::End);
            return out;
        }
        if special(chars[i]) {
            let mut buffer = String::new();
            let mut found = None;
            while i < chars.len() && special(chars[i]) {
                let next = format!("{buffer}{}", chars[i]);
                if !SYMBOLS.iter().any(|(sym, _)| sym.starts_with(&next)) {
                    break;
                }
                buffer = next;
                i += 1;
                if let Some((_, t)) = SYMBOLS.iter().find(|(sym, _)| *sym == buffer) {
                    found = Some(t.clone());
                }
            }
            match found {
                Some(t) => out.push(t),
                None => {
                    if buffer.is_empty() {
                        buffer.push(chars[i]);
                        i += 1;
                    }
                    out.push(Token::Error(format!("error expected: keyword found '{buffer}'")));
                }
            }
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !special(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word),
            });
        }
    }
}

/// `labels.Parser`, for the errors a client reads: every message is upstream's.
struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    /// The next token; in a value's place the keywords are identifiers (`Values` context).
    fn lookahead(&self, values: bool) -> Token {
        let t = self.tokens.get(self.at).cloned().unwrap_or(Token::End);
        match t {
            Token::In | Token::NotIn if values => Token::Identifier(t.literal()),
            t => t,
        }
    }

    fn consume(&mut self, values: bool) -> Token {
        let t = self.lookahead(values);
        self.at = (self.at + 1).min(self.tokens.len());
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        loop {
            match self.lookahead(true) {
                Token::Identifier(_) | Token::DoesNotExist => {
                    out.push(self.requirement().map_err(|e| format!("unable to parse requirement: {e}"))?);
                    match self.consume(true) {
                        Token::End => return Ok(out),
                        Token::Comma => match self.lookahead(true) {
                            Token::Identifier(_) | Token::DoesNotExist => {}
                            t => {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.literal()
                                ));
                            }
                        },
                        t => {
                            return Err(format!("found '{}', expected: ',' or 'end of string'", t.literal()));
                        }
                    }
                }
                Token::End => return Ok(out),
                t => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.literal()
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut negated = false;
        let mut t = self.consume(true);
        if t == Token::DoesNotExist {
            negated = true;
            t = self.consume(true);
        }
        let Token::Identifier(key) = t else {
            return Err(format!("found '{}', expected: identifier", t.literal()));
        };
        let key_errors = crate::metadata::qualified_name_errors(&key);
        if !key_errors.is_empty() {
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                crate::go_print::go_quote(&key),
                key_errors.join("; ")
            ));
        }
        // `!key` is whole as it is: whatever follows is the next token's to explain.
        if negated {
            return Ok(Requirement::NotExists(key));
        }
        if matches!(self.lookahead(true), Token::End | Token::Comma) {
            return Ok(Requirement::Exists(key));
        }
        let op = self.consume(false);
        let values = match op {
            Token::In | Token::NotIn => self.values()?,
            Token::Equals | Token::DoubleEquals | Token::NotEquals | Token::GreaterThan | Token::LessThan => {
                self.exact_value()?
            }
            t => {
                return Err(format!("found '{}', expected: in, notin, =, ==, !=, gt, lt", t.literal()));
            }
        };
        // `NewRequirement`'s checks, on the values as a sorted set.
        let mut errs = Vec::new();
        let shown = || {
            format!(
                "[]string{{{}}}",
                values.iter().map(|v| crate::go_print::go_quote(v)).collect::<Vec<_>>().join(", ")
            )
        };
        match op {
            Token::In | Token::NotIn if values.is_empty() => {
                errs.push(format!(
                    "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                    shown()
                ));
            }
            Token::GreaterThan | Token::LessThan => {
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(format!(
                            "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                            crate::go_print::go_quote(v)
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let why = crate::metadata::label_value_errors(v);
            if !why.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    crate::go_print::go_quote(v),
                    why.join("; ")
                ));
            }
        }
        match errs.len() {
            0 => {}
            1 => return Err(errs.remove(0)),
            _ => return Err(format!("[{}]", errs.join(", "))),
        }
        let one = || values.first().cloned().unwrap_or_default();
        Ok(match op {
            Token::In => Requirement::In(key, values),
            Token::NotIn => Requirement::NotIn(key, values),
            Token::NotEquals => Requirement::NotEq(key, one()),
            Token::GreaterThan => Requirement::Gt(key, one().parse().unwrap_or(0)),
            Token::LessThan => Requirement::Lt(key, one().parse().unwrap_or(0)),
            _ => Requirement::Eq(key, one()),
        })
    }

    /// `parseValues`: `(a, b)`, sorted and without repeats, as upstream's string set lists them.
    fn values(&mut self) -> Result<Vec<String>, String> {
        let t = self.consume(true);
        if t != Token::OpenPar {
            return Err(format!("found '{}' expected: '('", t.literal()));
        }
        let mut set = std::collections::BTreeSet::new();
        match self.lookahead(true) {
            Token::Identifier(_) | Token::Comma => {
                loop {
                    match self.consume(true) {
                        Token::Identifier(v) => {
                            set.insert(v);
                            match self.lookahead(true) {
                                Token::Comma => {}
                                Token::ClosedPar => break,
                                t => return Err(format!("found '{}', expected: ',' or ')'", t.literal())),
                            }
                        }
                        Token::Comma => {
                            if set.is_empty() {
                                set.insert(String::new());
                            }
                            match self.lookahead(true) {
                                Token::ClosedPar => {
                                    set.insert(String::new());
                                    break;
                                }
                                Token::Comma => {
                                    self.consume(true);
                                    set.insert(String::new());
                                }
                                _ => {}
                            }
                        }
                        t => return Err(format!("found '{}', expected: ',', or identifier", t.literal())),
                    }
                }
                let t = self.consume(true);
                if t != Token::ClosedPar {
                    return Err(format!("found '{}', expected: ')'", t.literal()));
                }
            }
            Token::ClosedPar => {
                self.consume(true);
                set.insert(String::new());
            }
            t => return Err(format!("found '{}', expected: ',', ')' or identifier", t.literal())),
        }
        Ok(set.into_iter().collect())
    }

    /// `parseExactValue`: one value, empty when none is written.
    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        if matches!(self.lookahead(true), Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.consume(true) {
            Token::Identifier(v) => Ok(vec![v]),
            t => Err(format!("found '{}', expected: identifier", t.literal())),
        }
    }
}

impl LabelSelector {
    /// Parses a selector string as upstream's `labels.Parse` does.
    ///
    /// # Errors
    ///
    /// A 400 with upstream's words (`unable to parse requirement: found '', expected: ',' or ')'`).
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        let mut parser = Parser { tokens: lex(input), at: 0 };
        parser.parse().map(Self).map_err(ApiError::bad_request)
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
        self.matches_by(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }

    /// Whether `labels` satisfy every requirement.
    #[must_use]
    pub fn matches_labels(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.matches_by(|k| labels.get(k).map(String::as_str))
    }

    fn matches_by<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k) == Some(v),
            Requirement::NotEq(k, v) => get(k) != Some(v),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::Gt(k, n) => get(k).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => get(k).and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
        })
    }
}

/// A parsed field selector over `metadata.name`, `metadata.namespace` and the kind's own field
/// labels (for core Events, `involvedObject.name`, `reason`, `type`, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(&'static str, bool, String)>);

impl FieldSelector {
    /// Whether it selects everything.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FieldSelector {
    /// A selector over the metadata fields only.
    #[cfg(test)]
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        Self::parse_converted(input, &[], LabelRefusal::Default)
    }

    /// Parses a selector string for a kind whose extra field labels are `labels`
    /// (`(label, JSON pointer into the stored object)`), refusing an unknown label in the words
    /// of the kind's field label conversion (`refusal`).
    ///
    /// # Errors
    ///
    /// A 400 naming the field when it is not one the server can select on.
    pub fn parse_converted(
        input: &str,
        labels: &'static [(&'static str, &'static str)],
        refusal: LabelRefusal,
    ) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in input.split(',') {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector {input:?}: {part:?} has no operator"
                )));
            };
            let pointer = match field.trim() {
                "metadata.name" => "/metadata/name",
                "metadata.namespace" => "/metadata/namespace",
                other => match labels.iter().find(|(l, _)| *l == other) {
                    Some((_, p)) => p,
                    None => return Err(ApiError::bad_request(refusal.words(other))),
                },
            };
            reqs.push((pointer, equal, value.trim().to_owned()));
        }
        Ok(Self(reqs))
    }

    /// Whether the object satisfies every requirement.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(ptr, equal, value)| {
            // The API server's selectable fields are strings: a bool is `FormatBool` of the Go
            // field (an unset one is "false"), a number its decimal.
            let actual = match object.pointer(ptr) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                None if BOOL_FIELDS.contains(ptr) => "false".to_owned(),
                _ => String::new(),
            };
            (actual == *value) == *equal
        })
    }
}

/// Field labels over Go bools (not pointers): absent reads as "false".
const BOOL_FIELDS: &[&str] = &["/spec/unschedulable"];

/// How a kind's field label conversion refuses a label it does not know: upstream, each
/// conversion function (`AddFieldLabelConversionFunc`) words its own refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelRefusal {
    /// No conversion of its own: `DefaultMetaV1FieldSelectorConversion`, which knows only
    /// `metadata.name` and `metadata.namespace` and says so.
    #[default]
    Default,
    /// `field label not supported: X`, as most conversions (and custom resources') say it.
    NotSupported,
    /// `field label "X" not supported for Kind`, as batch/v1's Job conversion says it.
    NotSupportedFor(&'static str),
}

impl LabelRefusal {
    /// The refusal of `label`, as its 400's message.
    #[must_use]
    pub fn words(self, label: &str) -> String {
        match self {
            Self::Default => format!(
                "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            ),
            Self::NotSupported => format!("field label not supported: {label}"),
            Self::NotSupportedFor(kind) => format!("field label {label:?} not supported for {kind}"),
        }
    }
}

/// Whether a `LabelSelector` (matchLabels + matchExpressions) selects `labels`.
#[must_use]
pub fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    let match_labels = selector.get("matchLabels").and_then(Value::as_object);
    let labels_ok = match_labels.is_none_or(|m| m.iter().all(|(k, v)| get(k) == v.as_str()));
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    let exprs_ok = exprs.is_none_or(|es| {
        es.iter().all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => get(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => get(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => get(key).is_some(),
                Some("DoesNotExist") => get(key).is_none(),
                _ => false,
            }
        })
    });
    labels_ok && exprs_ok
}

/// Whether a `LabelSelector` has no requirement (it selects everything).
pub(crate) fn selector_is_empty(selector: &Value) -> bool {
    let empty = |k: &str| {
        selector.get(k).is_none_or(|v| {
            v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty) || v.is_null()
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// `metav1.FormatLabelSelector`: match labels then expressions, as the selector's `String()`;
/// `<none>` for an empty selector.
pub(crate) fn format_label_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else { return "<none>".into() };
    let mut reqs: Vec<(String, String)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), format!("{k}={}", v.as_str().unwrap_or("")))).collect())
        .unwrap_or_default();
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or("").to_owned();
        let mut values: Vec<&str> =
            e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let text = match e["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        };
        reqs.push((key, text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    let text = reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(",");
    if text.is_empty() { "<none>".into() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({ "metadata": { "name": "web", "namespace": "default", "labels": labels } })
    }

    #[test]
    fn every_operator() {
        let o = obj(json!({ "app": "web", "tier": "front" }));
        for (sel, want) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("missing!=x", true),
            ("app=web,tier=back", false),
            ("example.com/role notin (x)", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&o), want, "{sel}");
        }
    }

    #[test]
    fn bad_selectors_name_the_problem() {
        // Each in `labels.Parse`'s words.
        for (sel, message) in [
            ("app in web", "unable to parse requirement: found 'web' expected: '('"),
            ("a=b=c d", "found '=', expected: ',' or 'end of string'"),
            ("=x", "found '=', expected: !, identifier, or 'end of string'"),
            ("app in (a,b", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
            ("a >= 1", "unable to parse requirement: found '=', expected: identifier"),
            (
                "a > x",
                "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
        ] {
            let err = LabelSelector::parse(sel).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (400, message), "{sel}");
        }
        assert!(LabelSelector::parse("app=-bad-").unwrap_err().message.starts_with(
            "unable to parse requirement: values[0][app]: Invalid value: \"-bad-\": a valid label must be"
        ));
        assert!(LabelSelector::parse("!a, b notin (x), c in (in, notin), d > 3").is_ok());
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        assert!(FieldSelector::parse("metadata.name=web").unwrap().matches(&o));
        assert!(!FieldSelector::parse("metadata.name!=web").unwrap().matches(&o));
        assert!(FieldSelector::parse("metadata.namespace==default,metadata.name=web").unwrap().matches(&o));
        // A kind's own field labels: what `kubectl describe` asks of core Events.
        const LABELS: &[(&str, &str)] =
            &[("involvedObject.name", "/involvedObject/name"), ("reason", "/reason")];
        let ev =
            json!({ "metadata": { "name": "e" }, "involvedObject": { "name": "web" }, "reason": "Scaled" });
        assert!(
            FieldSelector::parse_converted(
                "involvedObject.name=web,reason=Scaled",
                LABELS,
                LabelRefusal::NotSupported
            )
            .unwrap()
            .matches(&ev)
        );
        assert!(
            !FieldSelector::parse_converted("reason!=Scaled", LABELS, LabelRefusal::NotSupported)
                .unwrap()
                .matches(&ev)
        );
        let e = FieldSelector::parse_converted("spec.x=1", LABELS, LabelRefusal::NotSupported)
            .unwrap_err()
            .message;
        assert_eq!(e, "field label not supported: spec.x");
        let e = FieldSelector::parse("spec.x=1").unwrap_err().message;
        assert_eq!(
            e,
            "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        // batch/v1 Job's conversion words its refusal its own way.
        let e = FieldSelector::parse_converted("spec.x=1", LABELS, LabelRefusal::NotSupportedFor("Job"))
            .unwrap_err()
            .message;
        assert_eq!(e, "field label \"spec.x\" not supported for Job");
    }
}
