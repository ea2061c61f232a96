//! Server-side sharded list and watch (Kubernetes v1.36 alpha, KEP-5866): a `shardSelector` such as
//! `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')` keeps only the
//! objects whose 64-bit FNV-1a hash of the named field lies in `[start, end)`; several ranges over
//! the same field are OR-ed with `||`. A list that applied one echoes it in
//! `metadata.shardInfo.selector`, so a client knows the server filtered (a server that ignores
//! the parameter sends everything and no `shardInfo`).

use serde_json::Value;

use crate::status::ApiError;

/// The fields a shard selector may hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardField {
    /// `object.metadata.uid`.
    Uid,
    /// `object.metadata.namespace`.
    Namespace,
}

/// A parsed `shardSelector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSelector {
    /// The hashed field.
    pub field: ShardField,
    /// `[start, end)` ranges of the hash; `end` may be 2^64.
    pub ranges: Vec<(u64, u128)>,
    /// The selector as given, echoed in `shardInfo`.
    pub raw: String,
}

/// FNV-1a, 64-bit.
#[must_use]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn bad(input: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("invalid shardSelector {input:?}: {why}"))
}

fn hex_bound(s: &str, input: &str) -> Result<u128, ApiError> {
    let s = s.trim();
    let quoted = s
        .strip_prefix('\'')
        .and_then(|x| x.strip_suffix('\''))
        .ok_or_else(|| bad(input, "bounds are quoted '0x…' strings"))?;
    let digits = quoted.strip_prefix("0x").ok_or_else(|| bad(input, "bounds start with 0x"))?;
    let v =
        u128::from_str_radix(digits, 16).map_err(|_| bad(input, &format!("{quoted} is not a hex number")))?;
    if v > 1 << 64 {
        return Err(bad(input, &format!("{quoted} is above 0x10000000000000000")));
    }
    Ok(v)
}

impl ShardSelector {
    /// Parses `shardRange(field, 'start', 'end') || shardRange(...)`.
    ///
    /// # Errors
    ///
    /// A 400 naming what is wrong.
    pub fn parse(input: &str) -> Result<Self, ApiError> {
        let mut field = None;
        let mut ranges = Vec::new();
        for part in input.split("||") {
            let body = part
                .trim()
                .strip_prefix("shardRange(")
                .and_then(|x| x.strip_suffix(')'))
                .ok_or_else(|| bad(input, "expected shardRange(field, 'start', 'end')"))?;
            let args: Vec<&str> = body.split(',').collect();
            let [f, start, end] = args.as_slice() else {
                return Err(bad(input, "shardRange takes 3 arguments"));
            };
            let f = match f.trim() {
                "object.metadata.uid" => ShardField::Uid,
                "object.metadata.namespace" => ShardField::Namespace,
                other => {
                    return Err(bad(
                        input,
                        &format!(
                            "unsupported field {other} (object.metadata.uid, object.metadata.namespace)"
                        ),
                    ));
                }
            };
            if field.is_some_and(|x| x != f) {
                return Err(bad(input, "all ranges must hash the same field"));
            }
            field = Some(f);
            let (start, end) = (hex_bound(start, input)?, hex_bound(end, input)?);
            if start >= end || start > u128::from(u64::MAX) {
                return Err(bad(input, "a range needs start < end"));
            }
            ranges.push((start as u64, end));
        }
        Ok(Self { field: field.ok_or_else(|| bad(input, "empty"))?, ranges, raw: input.to_owned() })
    }

    /// Whether `obj`'s hash falls in one of the ranges.
    #[must_use]
    pub fn matches(&self, obj: &Value) -> bool {
        let value = match self.field {
            ShardField::Uid => crate::object_meta::meta_str(obj, "uid"),
            ShardField::Namespace => crate::object_meta::meta_str(obj, "namespace"),
        };
        let h = fnv1a64(value.as_bytes());
        self.ranges.iter().any(|(s, e)| h >= *s && u128::from(h) < *e)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn halves_partition_the_objects() {
        let lo = ShardSelector::parse(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        )
        .unwrap();
        let hi = ShardSelector::parse(
            "shardRange(object.metadata.uid,'0x8000000000000000','0x10000000000000000')",
        )
        .unwrap();
        let both = ShardSelector::parse(
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
        )
        .unwrap();
        let (mut a, mut b) = (0, 0);
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..1000 {
            // Shaped like the API server's uids (random UUIDs): FNV-1a is the plain hash upstream
            // uses, and it spreads such values well (not so names differing in a last digit).
            let uid = format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                rng.u32(..),
                rng.u16(..),
                rng.u16(..0xfff),
                rng.u16(..),
                rng.u64(..1 << 48)
            );
            let o = json!({ "metadata": { "uid": uid } });
            assert_ne!(lo.matches(&o), hi.matches(&o), "exactly one half");
            assert!(both.matches(&o));
            if lo.matches(&o) { a += 1 } else { b += 1 }
        }
        assert!(a > 400 && b > 400, "{a} / {b}");
    }

    #[test]
    fn bad_selectors_are_named() {
        for (s, why) in [
            ("shardRange(object.metadata.name, '0x0', '0x1')", "unsupported field"),
            ("shardRange(object.metadata.uid, '0x1', '0x1')", "start < end"),
            ("shardRange(object.metadata.uid, 0x0, '0x1')", "quoted"),
            ("shardRange(object.metadata.uid, '0x0', '0x20000000000000000')", "above"),
            ("range(object.metadata.uid, '0x0', '0x1')", "expected shardRange"),
            (
                "shardRange(object.metadata.uid, '0x0', '0x1') || shardRange(object.metadata.namespace, '0x1', '0x2')",
                "same field",
            ),
        ] {
            let e = ShardSelector::parse(s).unwrap_err();
            assert_eq!(e.code, 400);
            assert!(e.message.contains(why), "{s}: {}", e.message);
        }
    }
}
