//! Label and field selectors, parsed from the `labelSelector` / `fieldSelector` query parameters.
//!
//! Label selectors support every operator of the API: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
//! `k notin (a,b)`, `k` (exists) and `!k` (does not exist), joined by commas (AND). Field
//! selectors support `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`.

use serde_json::Value;

use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
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

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn valid_label_key(k: &str) -> bool {
    let name = k.rsplit('/').next().unwrap_or(k);
    !name.is_empty()
        && name.len() <= 63
        && k.split('/').count() <= 2
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn valid_label_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && (v.is_empty()
            || (v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.ends_with(|c: char| c.is_ascii_alphanumeric())))
}

impl LabelSelector {
    /// Parses a selector string.
    ///
    /// # Errors
    ///
    /// A 400 naming the selector and the part that could not be parsed.
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        let bad = |why: &str| {
            ApiError::bad_request(format!(
                "unable to parse requirement: invalid label selector {input:?}: {why}"
            ))
        };
        let mut reqs = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in split_top_level(input) {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad("empty requirement"));
            }
            let check_key = |k: &str| {
                if valid_label_key(k) { Ok(k.to_owned()) } else { Err(bad(&format!("invalid key {k:?}"))) }
            };
            let check_val = |v: &str| {
                if valid_label_value(v) {
                    Ok(v.to_owned())
                } else {
                    Err(bad(&format!("invalid value {v:?}")))
                }
            };
            let set = |rest: &str| -> Result<Vec<String>, ApiError> {
                let rest = rest.trim();
                let inner = rest
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| bad("expected a parenthesised set of values"))?;
                inner.split(',').map(|v| check_val(v.trim())).collect()
            };
            let req = if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(check_key(k.trim())?)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEq(check_key(k.trim())?, check_val(v.trim())?)
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Eq(check_key(k.trim())?, check_val(v.trim())?)
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Eq(check_key(k.trim())?, check_val(v.trim())?)
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                Requirement::NotIn(check_key(k.trim())?, set(rest)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                Requirement::In(check_key(k.trim())?, set(rest)?)
            } else if part.contains(['(', ')', ' ', '<', '>']) {
                return Err(bad(&format!("unknown operator in {part:?}")));
            } else {
                Requirement::Exists(check_key(part)?)
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k) == Some(v),
            Requirement::NotEq(k, v) => get(k) != Some(v),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
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
    /// Parses a selector string over the metadata fields only.
    ///
    /// # Errors
    ///
    /// A 400 naming the field when it is not one the server can select on.
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        Self::parse_for(input, &[])
    }

    /// Parses a selector string for a kind whose extra field labels are `labels`
    /// (`(label, JSON pointer into the stored object)`).
    ///
    /// # Errors
    ///
    /// A 400 naming the field when it is not one the server can select on.
    pub fn parse_for(input: &str, labels: &'static [(&'static str, &'static str)]) -> Result<Self, ApiError> {
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
                    // A kind with field labels of its own refuses in its conversion function's
                    // words; the others in `DefaultMetaV1FieldSelectorConversion`'s.
                    None if labels.is_empty() => {
                        return Err(ApiError::bad_request(format!(
                            "{other:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                        )));
                    }
                    None => return Err(ApiError::bad_request(format!("field label not supported: {other}"))),
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
            let actual = object.pointer(ptr).and_then(Value::as_str).unwrap_or("");
            (actual == value) == *equal
        })
    }
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
        for sel in ["app in web", "a=b=c d", "=x", "app in (a,b", "app=-bad-"] {
            let err = LabelSelector::parse(sel).unwrap_err();
            assert_eq!(err.code, 400, "{sel}");
            assert!(err.message.contains(sel), "{sel}: {}", err.message);
        }
        assert!(FieldSelector::parse("spec.replicas=3").unwrap_err().message.contains("spec.replicas"));
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
            FieldSelector::parse_for("involvedObject.name=web,reason=Scaled", LABELS).unwrap().matches(&ev)
        );
        assert!(!FieldSelector::parse_for("reason!=Scaled", LABELS).unwrap().matches(&ev));
        let e = FieldSelector::parse_for("spec.x=1", LABELS).unwrap_err().message;
        assert!(
            e.contains("supported: metadata.name, metadata.namespace, involvedObject.name, reason"),
            "{e}"
        );
    }
}
