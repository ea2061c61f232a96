//! Protobuf's wire format: varints, tags and length-delimited fields, read from a slice and
//! written to a buffer. Nothing here knows a message; [`decode`](super::decode) and
//! [`encode`](super::encode) walk the schema over it.

use super::Error;

/// How a field's value is laid out (the low three bits of its tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    Varint,
    Fixed64,
    Bytes,
    Fixed32,
}

/// A cursor over the bytes of one message.
pub(super) struct Reader<'a> {
    pub buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn varint(&mut self) -> Result<u64, Error> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first().ok_or(Error::Malformed("a varint is cut short"))?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(Error::Malformed("a varint is longer than ten bytes"))
    }

    /// A field's number and layout.
    pub fn tag(&mut self) -> Result<(u32, Wire), Error> {
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).map_err(|_| Error::Malformed("a field number is too large"))?;
        if number == 0 {
            return Err(Error::Malformed("a field is numbered 0"));
        }
        let wire = match tag & 7 {
            0 => Wire::Varint,
            1 => Wire::Fixed64,
            2 => Wire::Bytes,
            5 => Wire::Fixed32,
            _ => return Err(Error::Malformed("a field has a wire type protobuf 2 does not use (groups)")),
        };
        Ok((number, wire))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let len = usize::try_from(self.varint()?).map_err(|_| Error::Malformed("a length is too large"))?;
        if len > self.buf.len() {
            return Err(Error::Malformed("a length runs past the end of the body"));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    pub fn fixed<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        if self.buf.len() < N {
            return Err(Error::Malformed("a fixed-width value is cut short"));
        }
        let (head, rest) = self.buf.split_at(N);
        self.buf = rest;
        Ok(head.try_into().expect("N bytes"))
    }

    /// Skips a value of a field the schema does not know, as Go's decoder does.
    pub fn skip(&mut self, wire: Wire) -> Result<(), Error> {
        match wire {
            Wire::Varint => self.varint().map(drop),
            Wire::Fixed64 => self.fixed::<8>().map(drop),
            Wire::Bytes => self.bytes().map(drop),
            Wire::Fixed32 => self.fixed::<4>().map(drop),
        }
    }
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_tag(out: &mut Vec<u8>, number: u32, wire: Wire) {
    let low = match wire {
        Wire::Varint => 0,
        Wire::Fixed64 => 1,
        Wire::Bytes => 2,
        Wire::Fixed32 => 5,
    };
    put_varint(out, (u64::from(number) << 3) | low);
}

pub(super) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, Wire::Bytes);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub(super) fn put_uint(out: &mut Vec<u8>, number: u32, v: u64) {
    put_tag(out, number, Wire::Varint);
    put_varint(out, v);
}

/// A length-delimited field whose body `write` appends: the body is written in place and its
/// length put in front after, so nested messages are not copied up level by level.
pub(super) fn put_nested<E>(
    out: &mut Vec<u8>,
    number: u32,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    put_tag(out, number, Wire::Bytes);
    let start = out.len();
    write(out)?;
    let len = (out.len() - start) as u64;
    let mut prefix = Vec::with_capacity(10);
    put_varint(&mut prefix, len);
    out.splice(start..start, prefix);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_including_negative_int32s_as_ten_bytes() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX, (-1i64).cast_unsigned()] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(Reader::new(&out).varint().unwrap(), v);
        }
        let mut out = Vec::new();
        put_varint(&mut out, i64::from(-1i32).cast_unsigned());
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn nested_fields_get_their_length_in_front() {
        let mut out = Vec::new();
        put_nested::<()>(&mut out, 2, |o| {
            o.extend_from_slice(&[7u8; 200]);
            Ok(())
        })
        .unwrap();
        let mut r = Reader::new(&out);
        assert_eq!(r.tag().unwrap(), (2, Wire::Bytes));
        assert_eq!(r.bytes().unwrap().len(), 200);
        assert!(r.is_empty());
    }

    #[test]
    fn bad_bytes_are_refused_not_panicked_on() {
        assert!(Reader::new(&[0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        assert!(Reader::new(&[0x05, 1]).bytes().is_err());
        assert!(Reader::new(&[0x03]).tag().is_err(), "wire type 3 (a group)");
        assert!(Reader::new(&[0x00]).tag().is_err(), "field 0");
    }
}
