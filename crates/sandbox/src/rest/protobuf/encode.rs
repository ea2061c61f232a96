//! JSON to protobuf: an object written over its schema as Go's generated marshallers write the
//! struct it stands for — fields in number order, map entries by key, and every non-pointer
//! field written even when unset (Go cannot tell it from its zero), so a Go client decodes what
//! it would from a real server.

use base64::Engine;
use serde_json::Value;

use super::Error;
use super::schema::{Arity, Field, Scalar, Schema, Type};
use super::wire::{Wire, put_bytes, put_nested, put_tag, put_uint};

const MAX_DEPTH: usize = 256;

/// Writes `v` as the message `index`.
pub(super) fn message(
    s: &Schema,
    index: usize,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::Malformed("the object nests more than 256 deep"));
    }
    let m = &s.messages[index];
    if let Some(special) = m.special {
        let mut nested = |n: u32, item: &Value, out: &mut Vec<u8>| {
            let f = m.field(n).ok_or(Error::Malformed("the schema lacks a field"))?;
            value(s, n, f.ty, item, out, depth)
        };
        return super::well_known::encode(special, v, out, &mut nested);
    }
    let empty = serde_json::Map::new();
    let obj = match v {
        Value::Object(o) => o,
        Value::Null => &empty,
        _ => return Err(Error::mismatch(v, "an object")),
    };
    for f in &m.fields {
        // An inline struct's fields are this object's own.
        let here = if f.inline { v } else { obj.get(&f.json).unwrap_or(&Value::Null) };
        field(s, f, here, out, depth).map_err(|e| e.within(&f.json))?;
    }
    Ok(())
}

fn field(s: &Schema, f: &Field, v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), Error> {
    match (f.arity, v) {
        (Arity::One, Value::Null) if f.pointer => Ok(()),
        // Go writes a non-pointer field whatever it holds: its zero when unset.
        (Arity::One, _) => value(s, f.number, f.ty, v, out, depth),
        (Arity::Repeated | Arity::Map(_), Value::Null) => Ok(()),
        (Arity::Repeated, Value::Array(items)) => {
            items.iter().try_for_each(|item| value(s, f.number, f.ty, item, out, depth))
        }
        (Arity::Map(key), Value::Object(entries)) => entries.iter().try_for_each(|(k, item)| {
            put_nested(out, f.number, |out| {
                let key_value = match key {
                    Scalar::String => Value::String(k.clone()),
                    _ => k
                        .parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| Error::mismatch(&Value::String(k.clone()), "a number"))?,
                };
                value(s, 1, Type::Scalar(key), &key_value, out, depth)?;
                value(s, 2, f.ty, item, out, depth).map_err(|e| e.within(k))
            })
        }),
        (Arity::Repeated, _) => Err(Error::mismatch(v, "a list")),
        (Arity::Map(_), _) => Err(Error::mismatch(v, "an object")),
    }
}

/// Writes one value as field `number`; null is the type's zero.
pub(super) fn value(
    s: &Schema,
    number: u32,
    ty: Type,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    let scalar = match ty {
        Type::Message(m) => return put_nested(out, number, |out| message(s, m, v, out, depth + 1)),
        Type::Scalar(scalar) => scalar,
    };
    match scalar {
        Scalar::String => match v {
            Value::String(t) => put_bytes(out, number, t.as_bytes()),
            Value::Null => put_bytes(out, number, b""),
            _ => return Err(Error::mismatch(v, "a string")),
        },
        Scalar::Bytes => match v {
            Value::String(t) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(t)
                    .map_err(|_| Error::mismatch(v, "base64 bytes"))?;
                put_bytes(out, number, &bytes);
            }
            Value::Null => put_bytes(out, number, b""),
            _ => return Err(Error::mismatch(v, "base64 bytes")),
        },
        Scalar::Bool => {
            let b = match v {
                Value::Bool(b) => *b,
                Value::Null => false,
                _ => return Err(Error::mismatch(v, "a bool")),
            };
            put_uint(out, number, u64::from(b));
        }
        Scalar::Int32 | Scalar::Int64 | Scalar::Uint32 | Scalar::Uint64 => {
            let n = integer(v)?;
            // A negative int32 is written sign-extended to ten bytes, as Go writes it.
            put_uint(out, number, n.cast_unsigned());
        }
        Scalar::Double => {
            put_tag(out, number, Wire::Fixed64);
            out.extend_from_slice(&float(v)?.to_le_bytes());
        }
        Scalar::Float => {
            put_tag(out, number, Wire::Fixed32);
            out.extend_from_slice(&(float(v)? as f32).to_le_bytes());
        }
    }
    Ok(())
}

fn integer(v: &Value) -> Result<i64, Error> {
    match v {
        Value::Null => Ok(0),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(u64::cast_signed))
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| Error::mismatch(v, "an integer")),
        _ => Err(Error::mismatch(v, "an integer")),
    }
}

fn float(v: &Value) -> Result<f64, Error> {
    match v {
        Value::Null => Ok(0.0),
        Value::Number(n) => n.as_f64().ok_or_else(|| Error::mismatch(v, "a number")),
        _ => Err(Error::mismatch(v, "a number")),
    }
}
