//! Which member of a ring of replicas owns a key: rendezvous (highest-random-weight) hashing.
//!
//! Every replica computes the same owner from the same member list, with no coordination beyond
//! agreeing on the members (the live shard Leases). Each key goes to the member with the highest
//! score `mix(fnv1a64(member) ^ fnv1a64(key))`, so when a member joins, only the keys it now wins
//! move (about 1/N of them), and when one leaves, only its own keys move, spread over the others.
//!
//! The hash is FNV-1a 64 — the function Kubernetes' sharded list and watch (KEP-5866) uses — with a
//! 64-bit finalizer so that similar names (`shop-00001`, `shop-00002`) spread evenly.
//!
//! ```
//! use election::ring::Ring;
//! let ring = Ring::new(["replica-a", "replica-b", "replica-c"]);
//! let owner = ring.owner("default/web").unwrap();
//! assert!(ring.members().iter().any(|m| m == owner));
//! assert_eq!(Ring::new(["replica-c", "replica-a", "replica-b"]).owner("default/web"), Some(owner));
//! ```

/// FNV-1a, 64-bit.
#[must_use]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A 64-bit finalizer (splitmix64's): every input bit affects every output bit.
#[must_use]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The members of a ring, in a canonical order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ring {
    members: Vec<String>,
    hashes: Vec<u64>,
}

impl Ring {
    /// A ring of `members` (duplicates ignored; order does not matter).
    #[must_use]
    pub fn new<S: Into<String>>(members: impl IntoIterator<Item = S>) -> Self {
        let mut members: Vec<String> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        let hashes = members.iter().map(|m| fnv1a64(m.as_bytes())).collect();
        Self { members, hashes }
    }

    /// The members, sorted.
    #[must_use]
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// Whether the ring has no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The member that owns `key`; `None` for an empty ring.
    #[must_use]
    pub fn owner(&self, key: &str) -> Option<&str> {
        let k = fnv1a64(key.as_bytes());
        self.hashes.iter().zip(&self.members).max_by_key(|(h, m)| (mix(**h ^ k), *m)).map(|(_, m)| m.as_str())
    }

    /// A fingerprint of the member set: two replicas that agree on it agree on every owner.
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        self.members.iter().fold(fnv1a64(b""), |acc, m| mix(acc ^ fnv1a64(m.as_bytes())))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("ns-{}/shop-{i:05}", i % 7)).collect()
    }

    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn keys_spread_evenly() {
        let ring = Ring::new(["a", "b", "c"]);
        let mut count: HashMap<&str, usize> = HashMap::new();
        for k in keys(30_000) {
            *count.entry(ring.owner(&k).unwrap()).or_default() += 1;
        }
        for (m, n) in &count {
            assert!((9_000..=11_000).contains(n), "{m} owns {n} of 30000");
        }
    }

    #[test]
    fn a_joining_member_takes_about_a_quarter_and_only_for_itself() {
        let (three, four) = (Ring::new(["a", "b", "c"]), Ring::new(["a", "b", "c", "d"]));
        let all = keys(20_000);
        let moved: Vec<&String> = all.iter().filter(|k| three.owner(k) != four.owner(k)).collect();
        assert!((4_400..=5_600).contains(&moved.len()), "{} of 20000 moved", moved.len());
        assert!(moved.iter().all(|k| four.owner(k) == Some("d")), "keys move only to the new member");
    }

    #[test]
    fn a_leaving_member_gives_up_only_its_own_keys() {
        let (three, two) = (Ring::new(["a", "b", "c"]), Ring::new(["a", "c"]));
        for k in keys(10_000) {
            if three.owner(&k) != Some("b") {
                assert_eq!(three.owner(&k), two.owner(&k), "{k} moved though its owner stayed");
            }
        }
    }

    #[test]
    fn the_fingerprint_is_the_member_set() {
        assert_eq!(Ring::new(["a", "b"]).fingerprint(), Ring::new(["b", "a", "a"]).fingerprint());
        assert_ne!(Ring::new(["a", "b"]).fingerprint(), Ring::new(["a", "b", "c"]).fingerprint());
        assert_eq!(Ring::new(Vec::<String>::new()).owner("x"), None);
    }
}
