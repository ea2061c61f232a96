//! Reading a request's body: within the size the server accepts, then decoded as its
//! `Content-Type` declares — JSON, YAML (as `sigs.k8s.io/yaml` converts it) or the protobuf
//! kubectl sends — with upstream's words when it does not decode.

use bytes::Bytes;
use http::header;
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use super::BoxError;
use crate::status::ApiError;

/// The largest request body the API server accepts (3 MiB, as kube-apiserver).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The request's body, within the size its `Content-Length` announces and the server accepts.
pub(super) async fn read_request_body<B>(parts: &http::request::Parts, body: B) -> Result<Bytes, ApiError>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let content_length =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    read_body(body, content_length).await
}

/// Reads the body, refusing more than [`MAX_BODY`] with 413.
///
/// A body somewhat over the limit is still read (and dropped) before answering, so the client,
/// still sending, gets the 413 instead of a broken pipe; past 4× the limit the connection is cut.
async fn read_body<B>(body: B, content_length: Option<usize>) -> Result<Bytes, ApiError>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    const DRAIN: usize = 4 * MAX_BODY;
    if let Some(len) = content_length.filter(|l| *l > DRAIN) {
        return Err(ApiError::too_large(len, MAX_BODY));
    }
    match Limited::new(body, DRAIN).collect().await {
        Ok(c) => {
            let bytes = c.to_bytes();
            if bytes.len() > MAX_BODY { Err(ApiError::too_large(bytes.len(), MAX_BODY)) } else { Ok(bytes) }
        }
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            Err(ApiError::too_large(DRAIN, MAX_BODY))
        }
        Err(e) => Err(ApiError::bad_request(format!("reading the request body failed: {e}"))),
    }
}

/// A create or update body in its declared encoding: JSON (also when no type is given, as
/// upstream defaults to it), protobuf for the kinds the sandbox decodes, or YAML, converted to
/// JSON first as upstream's YAML serializer does (`sigs.k8s.io/yaml`'s `YAMLToJSON`); any other
/// type is 415. YAML that does not parse is upstream's decode error (`transformDecodeError`):
/// a 400 naming the kind the URL wants.
pub(super) fn parse_object(
    bytes: &[u8],
    content_type: &str,
    what: &str,
    kind: &str,
) -> Result<Value, ApiError> {
    let unrecognized = |why: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {why} ({})",
            summarize(bytes)
        ))
    };
    // The serializer reads the apiVersion and kind first, into a struct, with Go's decoder: a
    // body that is not JSON, or not an object, fails there in its words.
    let kind_of = |value: Value| {
        if value.is_object() || value.is_null() {
            Ok(value)
        } else {
            Err(unrecognized(format!(
                "couldn't get version/kind; json parse error: {}",
                crate::gojson::not_an_object(&value)
            )))
        }
    };
    match content_type.split(';').next().unwrap_or("").trim() {
        "" | "application/json" => {
            if !bytes.iter().all(u8::is_ascii_whitespace)
                && let Some(why) = crate::gojson::syntax_error(bytes)
            {
                return Err(unrecognized(format!("couldn't get version/kind; json parse error: {why}")));
            }
            kind_of(parse_json(bytes, what)?)
        }
        crate::rest::protobuf::CONTENT_TYPE => crate::rest::protobuf::to_json(bytes),
        "application/yaml" => kind_of(yaml_to_json(bytes).map_err(unrecognized)?),
        other => Err(ApiError::unsupported_body(other)),
    }
}

/// How deep a decoded body may nest: `serde_json`'s recursion limit, which YAML is held to as
/// well, so that every walk over a stored object (pruning, defaults, managed fields, printing)
/// stays well within a thread's stack. Upstream's decoders allow 10,000.
const MAX_DECODED_DEPTH: usize = 128;

/// YAML (1.1, as go-yaml v2 reads it: `yes`/`no` booleans, `0755` octal) as the JSON value it
/// stands for; the first document of a stream. An empty document is `null`. The error is worded
/// as `sigs.k8s.io/yaml`'s `YAMLToJSON` words it (`yaml: line 1: …`).
pub(crate) fn yaml_to_json(bytes: &[u8]) -> Result<Value, String> {
    let first = first_yaml_document(bytes).map_err(|why| format!("yaml: {why}"))?;
    let text =
        std::str::from_utf8(&bytes[..first]).map_err(|_| "yaml: invalid leading UTF-8 octet".to_owned())?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    let mut options = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DECODED_DEPTH;
    options.budget = Some(budget);
    options.with_snippet = false;
    options.legacy_octal_numbers = true;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    let mut docs: Vec<Value> =
        serde_saphyr::from_str_multiple_with_options(text, options).map_err(|e| format!("yaml: {e}"))?;
    Ok(if docs.is_empty() { Value::Null } else { docs.swap_remove(0) })
}

/// How many bytes a YAML stream's first document takes — go-yaml reads no further — or its
/// syntax error, as go-yaml v2's `parser.fail` words it: the problem, after `line N: ` when a
/// line is known — the problem's (one further on for a scanner error, which has not moved past
/// its line), else the context's.
fn first_yaml_document(bytes: &[u8]) -> Result<usize, String> {
    use libyaml_safer::{ErrorKind, EventData, Parser};
    let mut parser = Parser::new();
    parser.set_input(bytes);
    let mut depth = 0_usize;
    loop {
        match parser.parse() {
            Ok(event) => {
                // Refused here, before the parser's time grows with the square of the depth.
                match event.data {
                    EventData::SequenceStart { .. } | EventData::MappingStart { .. } => depth += 1,
                    EventData::SequenceEnd | EventData::MappingEnd => depth = depth.saturating_sub(1),
                    _ => {}
                }
                if depth > MAX_DECODED_DEPTH {
                    return Err(format!("exceeded max depth of {MAX_DECODED_DEPTH}"));
                }
                if matches!(event.data, EventData::DocumentEnd { .. } | EventData::StreamEnd) {
                    let end = usize::try_from(event.end_mark.index).unwrap_or(usize::MAX);
                    return Ok(end.min(bytes.len()));
                }
            }
            Err(e) => {
                let problem_line = e.problem_mark().map_or(0, |m| m.line);
                let line = if problem_line != 0 {
                    problem_line + u64::from(e.kind() == ErrorKind::Scanner)
                } else {
                    e.context_mark().map_or(0, |m| m.line)
                };
                let at = if line == 0 { String::new() } else { format!("line {line}: ") };
                return Err(format!("{at}{}", e.problem()));
            }
        }
    }
}

/// The keys a YAML body's first document sets twice in one mapping, as go-yaml v2's strict
/// decoding reports them (`line 11: key "foo" already set in map`, the line of the second).
pub(crate) fn yaml_duplicate_keys(bytes: &[u8]) -> Vec<String> {
    use libyaml_safer::{EventData, Parser};
    /// A collection being read: a mapping's keys so far and whether a key comes next.
    enum Frame {
        Mapping { keys: std::collections::HashSet<String>, key_next: bool },
        Sequence,
    }
    let mut parser = Parser::new();
    parser.set_input(bytes);
    let mut stack: Vec<Frame> = Vec::new();
    let mut duplicates = Vec::new();
    while let Ok(event) = parser.parse() {
        let starts_node = matches!(
            event.data,
            EventData::Scalar { .. }
                | EventData::Alias { .. }
                | EventData::MappingStart { .. }
                | EventData::SequenceStart { .. }
        );
        if starts_node && let Some(Frame::Mapping { keys, key_next }) = stack.last_mut() {
            if *key_next
                && let EventData::Scalar { value, .. } = &event.data
                && !keys.insert(value.clone())
            {
                let line = event.start_mark.line + 1;
                duplicates.push(format!(
                    "line {line}: key {} already set in map",
                    crate::go_print::go_quote(value)
                ));
            }
            *key_next = !*key_next;
        }
        match event.data {
            EventData::MappingStart { .. } => {
                stack.push(Frame::Mapping { keys: std::collections::HashSet::new(), key_next: true });
            }
            EventData::SequenceStart { .. } => stack.push(Frame::Sequence),
            EventData::MappingEnd | EventData::SequenceEnd => {
                stack.pop();
            }
            EventData::DocumentEnd { .. } | EventData::StreamEnd => break,
            _ => {}
        }
    }
    duplicates
}

/// The start of a body as upstream's `summarizeData` shows it in a decode error: the first 30
/// bytes (` ...` after them when there is more) as text when it starts with `{`, else in hex; or
/// `<empty>`.
fn summarize(bytes: &[u8]) -> String {
    let start = &bytes[..bytes.len().min(30)];
    let more = if bytes.len() > 30 { " ..." } else { "" };
    match bytes.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(start)),
        Some(_) => format!("{}{more}", start.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

/// The body, when it is JSON (for the duplicate-field check).
pub(super) fn json_bytes<'a>(bytes: &'a [u8], content_type: &str) -> Option<&'a [u8]> {
    matches!(content_type.split(';').next().unwrap_or("").trim(), "" | "application/json").then_some(bytes)
}

pub(super) fn parse_json(bytes: &[u8], what: &str) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the body of the {what} request is not valid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn yaml_syntax_errors_are_go_yamls() {
        let err = |y: &str| yaml_to_json(y.as_bytes()).unwrap_err();
        // A parser error names the line of the token it met (the end of the stream, on a new line).
        assert_eq!(err("metadata: [name: obj"), "yaml: line 1: did not find expected ',' or ']'");
        // A scanner error on the first line names none; on a later line, its own.
        assert_eq!(err("a: b: c"), "yaml: mapping values are not allowed in this context");
        assert_eq!(err("x: 1\na: b: c"), "yaml: line 2: mapping values are not allowed in this context");
        assert_eq!(err("k: \"open"), "yaml: found unexpected end of stream");
        // Only the first document is read, as go-yaml reads it.
        assert_eq!(yaml_to_json(b"a: 1\n---\nb: [").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn keys_set_twice_are_found_by_line() {
        let yaml = b"\nkind: X\nspec:\n  foo: 1\n  bar: [1, 1]\n  foo: 2\n  sub: {a: 1, a: 2}\nkind: Y\n";
        assert_eq!(
            yaml_duplicate_keys(yaml),
            [
                r#"line 6: key "foo" already set in map"#,
                r#"line 7: key "a" already set in map"#,
                r#"line 8: key "kind" already set in map"#
            ]
        );
        assert!(yaml_duplicate_keys(b"a: {a: {a: 1}}\nb: [{a: 1}, {a: 2}]").is_empty());
    }

    #[test]
    fn yaml_nests_as_deep_as_json_and_no_deeper() {
        let nested = |levels: usize| format!("x: {}1{}", "[".repeat(levels), "]".repeat(levels));
        assert!(yaml_to_json(nested(MAX_DECODED_DEPTH - 1).as_bytes()).is_ok());
        assert_eq!(
            yaml_to_json(nested(MAX_DECODED_DEPTH).as_bytes()).unwrap_err(),
            "yaml: exceeded max depth of 128"
        );
        // Refused as it is met, not after the rest of a long body is read.
        assert!(yaml_to_json(nested(1_000_000).as_bytes()).is_err());
    }
}
