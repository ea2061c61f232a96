//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) of every built-in kind,
//! both ways: request bodies read into the JSON the rest of the sandbox works with, and answers
//! written from it, so a Go client on protobuf (kube-controller-manager, the e2e framework,
//! many operators) talks to the sandbox as to a cluster. Custom resources stay JSON-only, as
//! upstream's.
//!
//! An object is the bytes `k8s\0`, then a `runtime.Unknown` envelope: its `apiVersion` and
//! `kind`, and the object's own message. A watch event is a `meta/v1` `WatchEvent` written bare
//! (no magic, no envelope), its object embedded as a whole enveloped object, each event framed
//! by its length as four big-endian bytes — upstream's raw stream serializer and
//! length-delimited framer.
//!
//! | module | what it is |
//! |---|---|
//! | `schema` | every message's fields, numbers and Go semantics, from `schema.json` |
//! | `wire` | varints, tags, length-delimited fields |
//! | `decode` | protobuf to JSON over the schema |
//! | `encode` | JSON to protobuf over the schema, as Go's marshallers write |
//! | `well_known` | times, durations, int-or-strings, quantities, embedded JSON, schema either-ors |

mod decode;
mod encode;
mod schema;
mod well_known;
mod wire;

use serde_json::{Map, Value};

use crate::status::ApiError;
use wire::{Reader, Wire, put_bytes, put_nested};

/// The media type of Kubernetes' protobuf encoding.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const STREAM_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// What every protobuf-encoded object starts with.
const MAGIC: &[u8] = b"k8s\0";

/// Why bytes are not a protobuf object, or an object cannot be written as one.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes break protobuf's wire format or the message's types.
    #[error("{0}")]
    Malformed(&'static str),
    /// A JSON value is not of the type its field is.
    #[error("{value} is not {want}")]
    Mismatch {
        /// The value, as JSON (cut short).
        value: String,
        /// What the field holds.
        want: &'static str,
    },
    /// No built-in kind is this `apiVersion` and `kind`.
    #[error("no built-in kind is {api_version} {kind}")]
    UnknownKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
    /// The error of a field, named by its JSON path.
    #[error("{path}: {source}")]
    In {
        /// The field's path, dot-separated.
        path: String,
        /// What was wrong there.
        source: Box<Error>,
    },
}

impl Error {
    fn mismatch(value: &Value, want: &'static str) -> Self {
        let mut text = value.to_string();
        if text.len() > 64 {
            let cut = (0..=64).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            text.truncate(cut);
            text.push('…');
        }
        Self::Mismatch { value: text, want }
    }

    /// This error, inside the field `name`.
    fn within(self, name: &str) -> Self {
        if name.is_empty() {
            return self;
        }
        match self {
            Self::In { path, source } => Self::In { path: format!("{name}.{path}"), source },
            other => Self::In { path: name.to_owned(), source: Box::new(other) },
        }
    }
}

/// The `apiVersion`, `kind` and object bytes of an envelope (after the magic).
fn open_envelope(inner: &[u8]) -> Result<(String, String, &[u8]), Error> {
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let mut r = Reader::new(inner);
    while !r.is_empty() {
        match r.tag()? {
            (1, Wire::Bytes) => {
                let mut t = Reader::new(r.bytes()?);
                while !t.is_empty() {
                    let text = |b: &[u8]| {
                        std::str::from_utf8(b)
                            .map(str::to_owned)
                            .map_err(|_| Error::Malformed("the envelope's type is not UTF-8"))
                    };
                    match t.tag()? {
                        (1, Wire::Bytes) => api_version = text(t.bytes()?)?,
                        (2, Wire::Bytes) => kind = text(t.bytes()?)?,
                        (_, wire) => t.skip(wire)?,
                    }
                }
            }
            (2, Wire::Bytes) => raw = r.bytes()?,
            (_, wire) => r.skip(wire)?,
        }
    }
    Ok((api_version, kind, raw))
}

/// An enveloped object (magic included) as JSON.
fn decode_envelope(bytes: &[u8]) -> Result<Value, Error> {
    let inner = bytes.strip_prefix(MAGIC).ok_or(Error::Malformed("the body does not start with k8s\\0"))?;
    let (api_version, kind, raw) = open_envelope(inner)?;
    let s = schema::schema();
    let index = s
        .kind(&api_version, &kind)
        .ok_or_else(|| Error::UnknownKind { api_version: api_version.clone(), kind: kind.clone() })?;
    let mut obj = match decode::message(s, index, raw, 0)? {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(Value::Object(obj))
}

/// Decodes a protobuf body (`k8s\0` and the envelope) into the object's JSON, `apiVersion`
/// and `kind` included.
///
/// ```
/// let err = kube_sandbox::protobuf::to_json(b"{}").unwrap_err();
/// assert_eq!(err.code, 400);
/// ```
///
/// # Errors
///
/// 400 for bytes that are not a protobuf object, naming the field where they break; 415 for a
/// kind that is not built in (custom resources are JSON only, as upstream's).
pub fn to_json(body: &[u8]) -> Result<Value, ApiError> {
    decode_envelope(body).map_err(|e| match e {
        Error::UnknownKind { api_version, kind } => ApiError::unreadable_protobuf(format!(
            "{CONTENT_TYPE} for {api_version} {kind}: only built-in kinds are read as protobuf (send a custom resource as JSON)"
        )),
        other => ApiError::bad_request(format!("the protobuf body is malformed: {other}")),
    })
}

/// Writes an object (its `apiVersion` and `kind` name its message) enveloped, magic first.
///
/// ```
/// use serde_json::json;
/// let cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a" }, "data": { "k": "v" } });
/// let bytes = kube_sandbox::protobuf::from_json(&cm).unwrap();
/// assert!(bytes.starts_with(b"k8s\0"));
/// let back = kube_sandbox::protobuf::to_json(&bytes).unwrap();
/// assert_eq!(back["data"]["k"], "v");
/// ```
///
/// # Errors
///
/// [`Error::UnknownKind`] for a kind protobuf does not carry; a mismatch naming the field whose
/// value is not of its type.
pub fn from_json(obj: &Value) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(256);
    write_envelope(obj, &mut out)?;
    Ok(out)
}

fn write_envelope(obj: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    envelope(text("apiVersion"), text("kind"), out, |s, index, out| encode::message(s, index, obj, out, 0))
}

/// Writes the envelope of an object of `api_version` and `kind`, magic first, its body written
/// by `body` as the message `index` of the schema.
fn envelope(
    api_version: &str,
    kind: &str,
    out: &mut Vec<u8>,
    body: impl FnOnce(&schema::Schema, usize, &mut Vec<u8>) -> Result<(), Error>,
) -> Result<(), Error> {
    let s = schema::schema();
    let index = s
        .kind(api_version, kind)
        .ok_or_else(|| Error::UnknownKind { api_version: api_version.into(), kind: kind.into() })?;
    out.extend_from_slice(MAGIC);
    put_nested::<Error>(out, 1, |out| {
        put_bytes(out, 1, api_version.as_bytes());
        put_bytes(out, 2, kind.as_bytes());
        Ok(())
    })?;
    put_nested(out, 2, |out| body(s, index, out))?;
    // contentEncoding and contentType: Go writes its empty strings.
    put_bytes(out, 3, b"");
    put_bytes(out, 4, b"");
    Ok(())
}

/// A list written as its items come (each made only when it is written): the envelope of
/// `list_kind`, its `metadata`, then every item.
///
/// # Errors
///
/// As [`from_json`], for the list or an item.
pub(crate) fn list_from(
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    items: impl Iterator<Item = Value>,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(4096);
    envelope(api_version, list_kind, &mut out, |s, index, out| {
        let message = &s.messages[index];
        let field = |name: &str| {
            message
                .fields
                .iter()
                .find(|f| f.json == name)
                .ok_or(Error::Malformed("a list without metadata or items"))
        };
        let (meta_field, items_field) = (field("metadata")?, field("items")?);
        encode::value(s, meta_field.number, meta_field.ty, metadata, out, 0)
            .map_err(|e| e.within("metadata"))?;
        for item in items {
            encode::value(s, items_field.number, items_field.ty, &item, out, 0)
                .map_err(|e| e.within("items"))?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// One watch event as its frame on a protobuf stream: the length, then a bare `WatchEvent`
/// whose object is enveloped.
///
/// ```
/// use serde_json::json;
/// let frame = kube_sandbox::protobuf::watch_frame("ADDED", &json!({ "apiVersion": "v1", "kind": "Pod" })).unwrap();
/// let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
/// assert_eq!(len, frame.len() - 4);
/// ```
///
/// # Errors
///
/// As [`from_json`], for the event's object.
pub fn watch_frame(event_type: &str, obj: &Value) -> Result<Vec<u8>, Error> {
    let mut out = vec![0; 4];
    put_bytes(&mut out, 1, event_type.as_bytes());
    put_nested(&mut out, 2, |out| put_nested(out, 1, |out| write_envelope(obj, out)))?;
    let len = u32::try_from(out.len() - 4).map_err(|_| Error::Malformed("a watch event over 4 GiB"))?;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests;
