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
//! ## Keying
//!
//! [`Keying::Name`] hashes the whole `namespace/name` key: the finest spread, and only the
//! controller can tell which objects are a member's. [`Keying::Namespace`] gives every object of a
//! namespace to one member, so that an API server can filter for it: the raw FNV-1a hash of the
//! namespace (as the server computes it for `shardRange(object.metadata.namespace, …)`) is cut into
//! [`PARTITIONS`] equal slices, each slice goes to a member by the same rendezvous hashing, and a
//! member's share is a few hash ranges ([`Ring::ranges`]).
//!
//! ## Warning
//! Raw FNV-1a barely moves the top bits of the hash for a change in the last two characters, so
//! with [`Keying::Namespace`] namespaces that differ only there (`shop-01` … `shop-99`) land in
//! one slice, on one member. The namespace keying suits clusters with many, differently named
//! namespaces (`shop-prod`, `payments-staging`); the spread is only as even as they are varied.
//!
//! ```
//! use kube_lease_election::ring::Ring;
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

/// How many equal slices of the hash space [`Keying::Namespace`] hands out.
pub const PARTITIONS: u64 = 128;
const PARTITION_BITS: u32 = PARTITIONS.trailing_zeros();

/// What of a key the ring hashes (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Keying {
    /// The whole `namespace/name` key.
    #[default]
    Name,
    /// The namespace only, in hash ranges an API server can filter on.
    Namespace,
}

/// The namespace part of a `namespace/name` key (empty for a cluster-scoped `name`).
fn namespace_of(key: &str) -> &str {
    key.split_once('/').map_or("", |(ns, _)| ns)
}

/// The members of a ring, in a canonical order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ring {
    members: Vec<String>,
    hashes: Vec<u64>,
    keying: Keying,
}

impl Ring {
    /// A ring of `members` (duplicates ignored; order does not matter), keyed by name.
    #[must_use]
    pub fn new<S: Into<String>>(members: impl IntoIterator<Item = S>) -> Self {
        Self::with_keying(members, Keying::Name)
    }

    /// A ring of `members` that hashes keys as `keying` says.
    ///
    /// ```
    /// use kube_lease_election::ring::{Keying, Ring};
    /// let ring = Ring::with_keying(["a", "b"], Keying::Namespace);
    /// // A namespace is never split.
    /// assert_eq!(ring.owner("shop/web"), ring.owner("shop/db"));
    /// ```
    #[must_use]
    pub fn with_keying<S: Into<String>>(members: impl IntoIterator<Item = S>, keying: Keying) -> Self {
        let mut members: Vec<String> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        let hashes = members.iter().map(|m| fnv1a64(m.as_bytes())).collect();
        Self { members, hashes, keying }
    }

    /// How this ring hashes keys.
    #[must_use]
    pub fn keying(&self) -> Keying {
        self.keying
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

    /// The member that owns `key` (`namespace/name`); `None` for an empty ring.
    #[must_use]
    pub fn owner(&self, key: &str) -> Option<&str> {
        match self.keying {
            Keying::Name => self.highest(fnv1a64(key.as_bytes())),
            Keying::Namespace => {
                self.partition_owner(fnv1a64(namespace_of(key).as_bytes()) >> (64 - PARTITION_BITS))
            }
        }
    }

    /// The rendezvous winner for a key hashed to `k`.
    fn highest(&self, k: u64) -> Option<&str> {
        self.hashes.iter().zip(&self.members).max_by_key(|(h, m)| (mix(**h ^ k), *m)).map(|(_, m)| m.as_str())
    }

    /// The member owning slice `p` of the namespace hash space.
    fn partition_owner(&self, p: u64) -> Option<&str> {
        // Mixed so that neighbouring slices are unrelated keys.
        self.highest(mix(p.wrapping_add(0x9e37_79b9_7f4a_7c15)))
    }

    /// With [`Keying::Namespace`], the `[start, end)` ranges of the namespace hash that the rings
    /// give to `member` (any of them), merged and in order; `None` with [`Keying::Name`].
    ///
    /// ```
    /// use kube_lease_election::ring::{fnv1a64, Keying, Ring};
    /// let ring = Ring::with_keying(["a", "b"], Keying::Namespace);
    /// let ranges = Ring::ranges([&ring], "a").unwrap();
    /// let h = fnv1a64(b"shop");
    /// let in_range = ranges.iter().any(|(s, e)| h >= *s && u128::from(h) < *e);
    /// assert_eq!(in_range, ring.owner("shop/web") == Some("a"));
    /// ```
    #[must_use]
    pub fn ranges<'r>(
        rings: impl IntoIterator<Item = &'r Ring> + Clone,
        member: &str,
    ) -> Option<Vec<(u64, u128)>> {
        if rings.clone().into_iter().any(|r| r.keying != Keying::Namespace) {
            return None;
        }
        let width = 1u128 << (64 - PARTITION_BITS);
        let mut out: Vec<(u64, u128)> = Vec::new();
        for p in 0..PARTITIONS {
            if !rings.clone().into_iter().any(|r| r.partition_owner(p) == Some(member)) {
                continue;
            }
            let start = u128::from(p) * width;
            match out.last_mut() {
                Some((_, end)) if *end == start => *end = start + width,
                #[allow(clippy::cast_possible_truncation)]
                _ => out.push((start as u64, start + width)),
            }
        }
        Some(out)
    }

    /// A fingerprint of the member set and keying: two replicas that agree on it agree on every
    /// owner (replicas configured with different keyings never agree, so never settle).
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        let seed = match self.keying {
            Keying::Name => fnv1a64(b""),
            Keying::Namespace => fnv1a64(b"namespace"),
        };
        self.members.iter().fold(seed, |acc, m| mix(acc ^ fnv1a64(m.as_bytes())))
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
        assert_ne!(
            Ring::new(["a", "b"]).fingerprint(),
            Ring::with_keying(["a", "b"], Keying::Namespace).fingerprint(),
            "replicas keyed differently never settle together"
        );
    }

    fn namespaces(n: usize) -> Vec<String> {
        // Shaped like real namespace names, not only a trailing digit apart (see the module docs).
        (0..n).map(|i| format!("team-{i:03}-{}", ["apps", "data", "web", "ops"][i % 4])).collect()
    }

    #[test]
    fn by_namespace_a_namespace_stays_whole_and_namespaces_spread() {
        let ring = Ring::with_keying(["a", "b", "c"], Keying::Namespace);
        let mut count: HashMap<&str, usize> = HashMap::new();
        for ns in namespaces(3_000) {
            let owner = ring.owner(&format!("{ns}/x")).unwrap();
            assert_eq!(ring.owner(&format!("{ns}/y")), Some(owner));
            *count.entry(owner).or_default() += 1;
        }
        for (m, n) in &count {
            assert!((700..=1_300).contains(n), "{m} owns {n} of 3000 namespaces");
        }
    }

    #[test]
    fn by_namespace_ranges_are_exactly_the_owned_hashes() {
        let (three, four) = (
            Ring::with_keying(["a", "b", "c"], Keying::Namespace),
            Ring::with_keying(["a", "b", "c", "d"], Keying::Namespace),
        );
        let inside =
            |ranges: &[(u64, u128)], h: u64| ranges.iter().any(|(s, e)| h >= *s && u128::from(h) < *e);
        for m in ["a", "b", "c", "d"] {
            let now = Ring::ranges([&four], m).unwrap();
            let either = Ring::ranges([&three, &four], m).unwrap();
            assert!(now.windows(2).all(|w| u128::from(w[1].0) > w[0].1), "merged and ordered: {now:?}");
            for ns in namespaces(2_000) {
                let h = fnv1a64(ns.as_bytes());
                let key = format!("{ns}/cm");
                assert_eq!(inside(&now, h), four.owner(&key) == Some(m), "{m} {ns}");
                let owned = four.owner(&key) == Some(m) || three.owner(&key) == Some(m);
                assert_eq!(inside(&either, h), owned, "{m} {ns} (union)");
            }
        }
        // All members' ranges tile the whole hash space.
        let total: u128 = ["a", "b", "c", "d"]
            .iter()
            .flat_map(|m| Ring::ranges([&four], m).unwrap())
            .map(|(s, e)| e - u128::from(s))
            .sum();
        assert_eq!(total, 1u128 << 64);
        assert_eq!(Ring::ranges([&Ring::new(["a"])], "a"), None);
    }

    #[test]
    fn by_namespace_a_joining_member_takes_about_a_quarter() {
        let (three, four) = (
            Ring::with_keying(["a", "b", "c"], Keying::Namespace),
            Ring::with_keying(["a", "b", "c", "d"], Keying::Namespace),
        );
        let all = namespaces(4_000);
        let moved: Vec<&String> = all
            .iter()
            .filter(|ns| three.owner(&format!("{ns}/x")) != four.owner(&format!("{ns}/x")))
            .collect();
        assert!((600..=1_400).contains(&moved.len()), "{} of 4000 namespaces moved", moved.len());
        assert!(moved.iter().all(|ns| four.owner(&format!("{ns}/x")) == Some("d")));
    }
}
