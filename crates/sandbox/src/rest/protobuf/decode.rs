//! Protobuf to JSON: a message's bytes read over its schema into the JSON Go would write for
//! the struct they decode into. A field the schema does not know is skipped, as Go's decoder
//! skips it; a zero scalar Go writes for an unset `omitempty` field is left out, as Go's JSON
//! leaves it out; a pointer's zero stays (`replicas: 0`).

use base64::Engine;
use serde_json::{Map, Value};

use super::Error;
use super::schema::{Arity, Field, Scalar, Schema, Special, Type};
use super::well_known;
use super::wire::{Reader, Wire};

/// How deep the JSON a body decodes into may nest (each message, list and map a level): what
/// the JSON and YAML decoders allow, so every walk over a stored object stays within a stack.
const MAX_DEPTH: usize = 127;

/// Decodes the message `index` from `bytes`.
pub(super) fn message(s: &Schema, index: usize, bytes: &[u8], depth: usize) -> Result<Value, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::Malformed("the object nests deeper than 128 levels"));
    }
    let m = &s.messages[index];
    match m.special {
        Some(Special::RawJson) => return raw_json(bytes),
        Some(special) => {
            let mut fields = Vec::new();
            let mut r = Reader::new(bytes);
            while !r.is_empty() {
                let (number, wire) = r.tag()?;
                match m.field(number) {
                    Some(f) => fields.push((number, value(s, f.ty, wire, &mut r, depth)?)),
                    None => r.skip(wire)?,
                }
            }
            return Ok(well_known::from_fields(special, bytes.is_empty(), &fields));
        }
        None => {}
    }
    let mut obj = Map::new();
    let mut r = Reader::new(bytes);
    while !r.is_empty() {
        let (number, wire) = r.tag()?;
        let Some(f) = m.field(number) else {
            r.skip(wire)?;
            continue;
        };
        field(s, f, wire, &mut r, &mut obj, depth).map_err(|e| e.within(&f.json))?;
    }
    Ok(Value::Object(obj))
}

/// Bytes that are JSON (`RawExtension`, `FieldsV1`, a schema's `JSON`): field 1, the last one
/// written; none is null. An object a Go client embedded in protobuf (its magic first) is
/// decoded as any.
fn raw_json(bytes: &[u8]) -> Result<Value, Error> {
    let mut r = Reader::new(bytes);
    let mut raw: &[u8] = &[];
    while !r.is_empty() {
        match r.tag()? {
            (1, Wire::Bytes) => raw = r.bytes()?,
            (_, wire) => r.skip(wire)?,
        }
    }
    if raw.is_empty() {
        Ok(Value::Null)
    } else if raw.starts_with(super::MAGIC) {
        super::decode_envelope(raw)
    } else {
        serde_json::from_slice(raw).map_err(|_| Error::Malformed("embedded bytes are not JSON"))
    }
}

fn field(
    s: &Schema,
    f: &Field,
    wire: Wire,
    r: &mut Reader<'_>,
    obj: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), Error> {
    match f.arity {
        Arity::One if f.inline => {
            if let Value::Object(inner) = value(s, f.ty, wire, r, depth)? {
                obj.extend(inner);
            }
        }
        Arity::One => {
            let v = value(s, f.ty, wire, r, depth)?;
            let zero_left_out = matches!(f.ty, Type::Scalar(_)) && !f.pointer && f.omitempty && is_zero(&v);
            if v.is_null() || zero_left_out {
                obj.remove(&f.json);
            } else {
                obj.insert(f.json.clone(), v);
            }
        }
        Arity::Repeated => {
            let list = obj.entry(f.json.clone()).or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(list) = list else { unreachable!("only arrays are put here") };
            let packable = matches!(f.ty, Type::Scalar(s) if !matches!(s, Scalar::String | Scalar::Bytes));
            if packable && wire == Wire::Bytes {
                // A packed run of numbers: what proto3 encoders write, accepted as Go accepts it.
                let element = match f.ty {
                    Type::Scalar(Scalar::Double) => Wire::Fixed64,
                    Type::Scalar(Scalar::Float) => Wire::Fixed32,
                    _ => Wire::Varint,
                };
                let mut packed = Reader::new(r.bytes()?);
                while !packed.is_empty() {
                    list.push(value(s, f.ty, element, &mut packed, depth + 1)?);
                }
            } else {
                list.push(value(s, f.ty, wire, r, depth + 1)?);
            }
        }
        Arity::Map(key_type) => {
            let entry = expect_bytes(wire, r)?;
            let mut e = Reader::new(entry);
            let (mut key, mut val) = (None, None);
            while !e.is_empty() {
                match e.tag()? {
                    (1, w) => key = Some(value(s, Type::Scalar(key_type), w, &mut e, depth)?),
                    (2, w) => val = Some(value(s, f.ty, w, &mut e, depth + 1)?),
                    (_, w) => e.skip(w)?,
                }
            }
            let key = match key {
                Some(Value::String(k)) => k,
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let val = match val {
                Some(v) => v,
                None => zero(s, f.ty, depth)?,
            };
            let map = obj.entry(f.json.clone()).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = map {
                map.insert(key, val);
            }
        }
    }
    Ok(())
}

/// The JSON of a value Go decodes from nothing: what a map entry without a value holds.
fn zero(s: &Schema, ty: Type, depth: usize) -> Result<Value, Error> {
    match ty {
        Type::Scalar(Scalar::String | Scalar::Bytes) => Ok(Value::String(String::new())),
        Type::Scalar(Scalar::Bool) => Ok(Value::Bool(false)),
        Type::Scalar(_) => Ok(Value::from(0)),
        Type::Message(m) => message(s, m, &[], depth + 1),
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn expect_bytes<'a>(wire: Wire, r: &mut Reader<'a>) -> Result<&'a [u8], Error> {
    if wire != Wire::Bytes {
        return Err(Error::Malformed("a message field is not length-delimited"));
    }
    r.bytes()
}

/// One value of type `ty` laid out as `wire`.
pub(super) fn value(
    s: &Schema,
    ty: Type,
    wire: Wire,
    r: &mut Reader<'_>,
    depth: usize,
) -> Result<Value, Error> {
    let scalar = match ty {
        Type::Message(m) => return message(s, m, expect_bytes(wire, r)?, depth + 1),
        Type::Scalar(scalar) => scalar,
    };
    Ok(match (scalar, wire) {
        (Scalar::String, Wire::Bytes) => Value::String(
            std::str::from_utf8(r.bytes()?)
                .map_err(|_| Error::Malformed("a string is not UTF-8"))?
                .to_owned(),
        ),
        (Scalar::Bytes, Wire::Bytes) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(r.bytes()?))
        }
        (Scalar::Bool, Wire::Varint) => Value::Bool(r.varint()? != 0),
        // Go keeps the low 32 bits of an int32's varint (a negative one arrives sign-extended).
        (Scalar::Int32, Wire::Varint) => Value::from(r.varint()? as u32 as i32),
        (Scalar::Int64, Wire::Varint) => Value::from(r.varint()?.cast_signed()),
        (Scalar::Uint32, Wire::Varint) => Value::from(r.varint()? as u32),
        (Scalar::Uint64, Wire::Varint) => Value::from(r.varint()?),
        (Scalar::Uint32, Wire::Fixed32) => Value::from(u32::from_le_bytes(r.fixed()?)),
        (Scalar::Uint64, Wire::Fixed64) => Value::from(u64::from_le_bytes(r.fixed()?)),
        (Scalar::Double, Wire::Fixed64) => number(f64::from_le_bytes(r.fixed()?))?,
        (Scalar::Float, Wire::Fixed32) => number(f64::from(f32::from_le_bytes(r.fixed()?)))?,
        _ => return Err(Error::Malformed("a field's wire type does not match its type")),
    })
}

/// A float as Go's JSON writes it: a whole one without a fraction (`0`, not `0.0`).
fn number(f: f64) -> Result<Value, Error> {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        return Ok(Value::from(f as i64));
    }
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .ok_or(Error::Malformed("a number is not finite (JSON cannot hold it)"))
}
