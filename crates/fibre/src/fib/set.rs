//! The FIB's own `(prefix, id)` set: what its encoding is built and patched from.
//!
//! A B-tree (`std`'s `BTreeMap`) keyed by the prefix packed into a few bytes, in [`Prefix`]
//! order (by address, shorter first: a trie's pre-order). Before issue 15 this was a
//! [`crate::trie::PrefixTrie`], a binary trie of up to `2n` nodes of 24 bytes (IPv4) or 48 bytes
//! (IPv6), whose walk to one prefix of the full view passes about 20 nodes. The B-tree keeps 11
//! keys a node (about 12 bytes a prefix for IPv4, 21 for IPv6, when built from sorted input) and
//! reaches any prefix in four or five nodes. Every question the encodings ask of the set is an
//! ordered range:
//!
//! - what `p` covers is the run from `p` to `(p's last address)/width`;
//! - the longest prefix covering `p` is found from `p`'s predecessors (see
//!   [`PrefixSet::covering_shorter`]), in a step or two on real tables.
use super::FibFamily;
use crate::prefix::Prefix;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Bound;

/// A prefix packed into a key whose order is [`Prefix`]'s order, as small as the family allows.
pub trait PackedPrefix<A: FibFamily>: Ord + Copy + Send + Sync + std::fmt::Debug + 'static {
    /// `p` packed.
    fn pack(p: Prefix<A>) -> Self;
    /// The prefix packed in `self`.
    fn unpack(self) -> Prefix<A>;
}

/// IPv4: the address above the length, in one `u64` (8 bytes, where `Prefix` also takes 8 but
/// compares two fields).
impl PackedPrefix<Ipv4Addr> for u64 {
    #[inline]
    fn pack(p: Prefix<Ipv4Addr>) -> u64 {
        (u64::from(p.bits()) << 8) | u64::from(p.len())
    }
    #[inline]
    fn unpack(self) -> Prefix<Ipv4Addr> {
        Prefix::from_bits((self >> 8) as u32, self as u8).expect("packed from a prefix")
    }
}

/// An IPv6 prefix packed: the address's 16 bytes big-endian, then the length. 17 bytes with an
/// alignment of 1, where `Prefix<Ipv6Addr>` takes 32 (a `u128` is aligned to 16). Compared as
/// two big-endian words and the length (byte order, without a `memcmp` call per comparison:
/// a B-tree search makes dozens).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PackedV6([u8; 17]);

impl PackedV6 {
    #[inline]
    fn words(&self) -> (u64, u64, u8) {
        let hi = u64::from_be_bytes(self.0[..8].try_into().expect("8 bytes"));
        let lo = u64::from_be_bytes(self.0[8..16].try_into().expect("8 bytes"));
        (hi, lo, self.0[16])
    }
}

impl Ord for PackedV6 {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for PackedV6 {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PackedPrefix<Ipv6Addr> for PackedV6 {
    #[inline]
    fn pack(p: Prefix<Ipv6Addr>) -> PackedV6 {
        let mut k = [0u8; 17];
        k[..16].copy_from_slice(&p.bits().to_be_bytes());
        k[16] = p.len();
        PackedV6(k)
    }
    #[inline]
    fn unpack(self) -> Prefix<Ipv6Addr> {
        let bits = u128::from_be_bytes(self.0[..16].try_into().expect("16 bytes"));
        Prefix::from_bits(bits, self.0[16]).expect("packed from a prefix")
    }
}

/// A map from prefixes to FIB ids, ordered as [`Prefix`] orders (see the module docs).
#[derive(Clone)]
pub struct PrefixSet<A: FibFamily> {
    map: BTreeMap<A::Packed, u32>,
}

impl<A: FibFamily> Default for PrefixSet<A> {
    fn default() -> Self {
        PrefixSet {
            map: BTreeMap::new(),
        }
    }
}

impl<A: FibFamily> std::fmt::Debug for PrefixSet<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Built from pairs in any order; a later pair for the same prefix wins. Sorted input (what
/// the router's builds give) is placed without a sort's moves, nodes filled.
impl<A: FibFamily> FromIterator<(Prefix<A>, u32)> for PrefixSet<A> {
    fn from_iter<I: IntoIterator<Item = (Prefix<A>, u32)>>(pairs: I) -> Self {
        PrefixSet {
            map: pairs
                .into_iter()
                .map(|(p, id)| (A::Packed::pack(p), id))
                .collect(),
        }
    }
}

impl<A: FibFamily> PrefixSet<A> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Prefixes stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// Whether no prefix is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The id stored for exactly `p`.
    #[inline]
    pub fn get(&self, p: &Prefix<A>) -> Option<&u32> {
        self.map.get(&A::Packed::pack(*p))
    }
    /// Stores `p -> id`, giving back the id it replaces.
    pub fn insert(&mut self, p: Prefix<A>, id: u32) -> Option<u32> {
        self.map.insert(A::Packed::pack(p), id)
    }
    /// Removes exactly `p`, giving back its id.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<u32> {
        self.map.remove(&A::Packed::pack(*p))
    }
    /// Every `(prefix, id)`, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (Prefix<A>, &u32)> + '_ {
        self.map.iter().map(|(k, id)| (k.unpack(), id))
    }
    /// The stored prefixes `p` covers (`p` itself included), in order: a covering prefix
    /// before those it covers.
    pub fn covered(&self, p: &Prefix<A>) -> impl DoubleEndedIterator<Item = (Prefix<A>, &u32)> {
        let last = Prefix::host(p.last());
        self.map
            .range(A::Packed::pack(*p)..=A::Packed::pack(last))
            .map(|(k, id)| (k.unpack(), id))
    }
    /// The longest stored prefix that covers `p` and is shorter than it.
    ///
    /// Walks `p`'s predecessors in order. The one just before `p` either covers `p` (then it is
    /// the longest that does: the prefixes covering `p` all come before it, the longer later)
    /// or it does not; then every prefix covering `p` that comes before it covers it too, so is
    /// no longer than what the two have in common, and the search goes on from that common
    /// prefix (itself included). Each step shortens the bound, and on real tables one or two
    /// steps find the answer.
    pub fn covering_shorter(&self, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        let mut bound = Bound::Excluded(A::Packed::pack(*p));
        loop {
            let (k, id) = self.map.range((Bound::Unbounded, bound)).next_back()?;
            let q = k.unpack();
            // `q` comes before `p`, so is not `p`: covering it, it is shorter.
            if q.covers(p) {
                return Some((q, id));
            }
            // What `q` and `p` have in common comes before `q` (it covers `q` and is not `q`,
            // which does not cover `p`): the bound moves back at every step.
            bound = Bound::Included(A::Packed::pack(q.common(p)));
        }
    }
    /// The longest stored prefix covering `p`, `p` itself included.
    pub fn longest_covering(&self, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        match self.map.get_key_value(&A::Packed::pack(*p)) {
            Some((_, id)) => Some((*p, id)),
            None => self.covering_shorter(p),
        }
    }
    /// The stored prefixes covering `p` (`p` itself included), longest first.
    pub fn covering(&self, p: &Prefix<A>) -> impl Iterator<Item = (Prefix<A>, &u32)> {
        std::iter::successors(self.longest_covering(p), |(q, _)| self.covering_shorter(q))
    }
    /// The longest stored prefix containing `addr`.
    pub fn longest_match(&self, addr: A) -> Option<(Prefix<A>, &u32)> {
        self.longest_covering(&Prefix::host(addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Bits;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The model: every prefix covering `p`, checked one by one.
    fn model_covering<A: FibFamily>(
        model: &BTreeMap<Prefix<A>, u32>,
        p: &Prefix<A>,
        strictly: bool,
    ) -> Option<(Prefix<A>, u32)> {
        model
            .iter()
            .filter(|(q, _)| q.covers(p) && (!strictly || q.len() < p.len()))
            .max_by_key(|(q, _)| q.len())
            .map(|(q, &id)| (*q, id))
    }

    /// Prefixes within a few bits of each other (so that covering, covered and neighbours
    /// happen often), at any length.
    fn near<A: FibFamily>(top: u64, len: u8) -> Prefix<A> {
        let width = A::WIDTH as u32;
        // The low six bits again past the middle: long IPv6 prefixes differ in the low word.
        let bits = (A::Bits::from_u64(top) << (width - 12))
            | (A::Bits::from_u64(top & 0x3f) << (width / 2 - 6));
        Prefix::from_bits(bits, len.min(A::WIDTH)).expect("length clipped")
    }

    fn check<A: FibFamily>(ops: &[(bool, u64, u8, u32)], probes: &[(u64, u8)]) {
        let mut set = PrefixSet::<A>::new();
        let mut model = BTreeMap::new();
        for &(add, top, len, id) in ops {
            let p = near::<A>(top, len);
            if add {
                assert_eq!(set.insert(p, id), model.insert(p, id));
            } else {
                assert_eq!(set.remove(&p), model.remove(&p));
            }
        }
        assert_eq!(set.len(), model.len());
        let all: Vec<(Prefix<A>, u32)> = set.iter().map(|(p, &id)| (p, id)).collect();
        let want: Vec<(Prefix<A>, u32)> = model.iter().map(|(p, &id)| (*p, id)).collect();
        assert_eq!(all, want, "in prefix order");
        for &(top, len) in probes {
            let p = near::<A>(top, len);
            assert_eq!(set.get(&p), model.get(&p));
            let got = set.covering_shorter(&p).map(|(q, &id)| (q, id));
            assert_eq!(
                got,
                model_covering(&model, &p, true),
                "covering {p} strictly"
            );
            let got = set.longest_covering(&p).map(|(q, &id)| (q, id));
            assert_eq!(got, model_covering(&model, &p, false), "covering {p}");
            let got: Vec<(Prefix<A>, u32)> = set.covering(&p).map(|(q, &id)| (q, id)).collect();
            let want: Vec<(Prefix<A>, u32)> = model
                .iter()
                .rev()
                .filter(|(q, _)| q.covers(&p))
                .map(|(q, &id)| (*q, id))
                .collect();
            assert_eq!(got, want, "covering {p}, longest first");
            let got: Vec<(Prefix<A>, u32)> = set.covered(&p).map(|(q, &id)| (q, id)).collect();
            let want: Vec<(Prefix<A>, u32)> = model
                .iter()
                .filter(|(q, _)| p.covers(q))
                .map(|(q, &id)| (*q, id))
                .collect();
            assert_eq!(got, want, "covered by {p}");
        }
        let rebuilt: PrefixSet<A> = want.iter().rev().copied().collect();
        assert_eq!(
            rebuilt.iter().count(),
            set.len(),
            "built from pairs in any order"
        );
        for &(top, len) in probes {
            let p = near::<A>(top, len);
            let got = rebuilt.covering_shorter(&p).map(|(q, &id)| (q, id));
            assert_eq!(got, model_covering(&model, &p, true), "covering {p}, built");
        }
    }

    fn ops(width: u8) -> impl Strategy<Value = Vec<(bool, u64, u8, u32)>> {
        prop::collection::vec(
            (prop::bool::weighted(0.8), 0u64..4096, 0..=width, 0u32..1000),
            0..120,
        )
    }

    fn probes(width: u8) -> impl Strategy<Value = Vec<(u64, u8)>> {
        prop::collection::vec((0u64..4096, 0..=width), 1..40)
    }

    proptest! {
        #[test]
        fn agrees_with_a_model_v4(ops in ops(32), probes in probes(32)) {
            check::<Ipv4Addr>(&ops, &probes);
        }
        #[test]
        fn agrees_with_a_model_v6(ops in ops(128), probes in probes(128)) {
            check::<Ipv6Addr>(&ops, &probes);
        }
    }

    #[test]
    fn a_later_pair_wins() {
        let p: Prefix<Ipv4Addr> = "10.0.0.0/8".parse().unwrap();
        let set: PrefixSet<Ipv4Addr> = [(p, 1), (p, 2)].into_iter().collect();
        assert_eq!(set.get(&p), Some(&2));
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn packing_keeps_the_order() {
        let v6: Vec<Prefix<Ipv6Addr>> = ["::/0", "::/1", "::1/128", "8000::/1", "ffff::/16"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for w in v6.windows(2) {
            assert!(PackedV6::pack(w[0]) < PackedV6::pack(w[1]));
            assert_eq!(PackedV6::pack(w[1]).unpack(), w[1]);
        }
    }
}
