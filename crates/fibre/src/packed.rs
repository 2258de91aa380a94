//! Prefixes packed into small keys whose order is [`Prefix`]'s order (by address, shorter
//! first: a trie's pre-order), and the questions an ordered map of them answers.
//!
//! The RIB's [`crate::prefix_map::PrefixMap`] is a `BTreeMap` keyed this way, and so are the
//! FIB's [`crate::fib::PrefixSet`]'s prefixes at most a direct-pointing slot long (a slot's
//! longer prefixes are keyed within it: `FibFamily::SlotKey`). Every question they ask is an
//! ordered range:
//!
//! - what `p` covers is the run from `p` to `(p's last address)/width`;
//! - the longest prefix covering `p` is found from `p`'s predecessors
//!   ([`covering_before`]), in a step or two on real tables.
use crate::addr::Address;
use crate::prefix::Prefix;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Bound;

/// A prefix packed into a key whose order is [`Prefix`]'s order, as small as the family allows.
pub trait PackedPrefix<A: Address>: Ord + Copy + Send + Sync + std::fmt::Debug + 'static {
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

/// An IPv6 prefix packed: the address's top and bottom 64 bits (each in the machine's byte
/// order), then the length. 17 bytes with an alignment of 1, where `Prefix<Ipv6Addr>` takes 32
/// (a `u128` is aligned to 16). Compared as the two words and the length, without a `memcmp`
/// call per comparison (a B-tree search makes dozens) and, since issue 15's seventeenth
/// round, without swapping bytes (the words were stored big-endian: 90 instructions more an
/// IPv6 router change, callgrind).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PackedV6([u8; 17]);

impl PackedV6 {
    #[inline]
    fn words(&self) -> (u64, u64, u8) {
        let hi = u64::from_ne_bytes(self.0[..8].try_into().expect("8 bytes"));
        let lo = u64::from_ne_bytes(self.0[8..16].try_into().expect("8 bytes"));
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

impl PackedV6 {
    /// The prefix packed, a length past 128 cut to it (a key not made by `pack` gives some
    /// prefix, never a panic).
    #[inline]
    pub(crate) fn to_prefix(self) -> Prefix<Ipv6Addr> {
        let (hi, lo, _) = self.words();
        let bits = (u128::from(hi) << 64) | u128::from(lo);
        Prefix::new(Ipv6Addr::from_bits(bits), self.0[16].min(128))
    }
}

impl PackedPrefix<Ipv6Addr> for PackedV6 {
    #[inline]
    fn pack(p: Prefix<Ipv6Addr>) -> PackedV6 {
        let mut k = [0u8; 17];
        k[..8].copy_from_slice(&((p.bits() >> 64) as u64).to_ne_bytes());
        k[8..16].copy_from_slice(&(p.bits() as u64).to_ne_bytes());
        k[16] = p.len();
        PackedV6(k)
    }
    #[inline]
    fn unpack(self) -> Prefix<Ipv6Addr> {
        self.to_prefix()
    }
}

/// What [`longest_covering`] and [`covering_before`] ask of an ordered map: its last key up to
/// a bound, and its first key. A `BTreeMap` answers both; so does a
/// [`crate::prefix_map::PrefixMap`]'s index with the run of new prefixes in a gap of it.
pub trait OrderedKeys<K, T> {
    /// The last entry whose key is within `bound` (`..=k`, `..k`, or any).
    fn last_upto(&self, bound: Bound<K>) -> Option<(&K, &T)>;
    /// The first key.
    fn first_key(&self) -> Option<&K>;
}

impl<K: Ord, T> OrderedKeys<K, T> for BTreeMap<K, T> {
    #[inline]
    fn last_upto(&self, bound: Bound<K>) -> Option<(&K, &T)> {
        self.range((Bound::Unbounded, bound)).next_back()
    }
    #[inline]
    fn first_key(&self) -> Option<&K> {
        self.first_key_value().map(|(k, _)| k)
    }
}

/// The longest prefix in `map` that covers `p` and is shorter than it.
pub fn covering_before<'m, A: Address, T, M: OrderedKeys<A::Packed, T> + ?Sized>(
    map: &'m M,
    p: &Prefix<A>,
) -> Option<(Prefix<A>, &'m T)> {
    covering_upto(map, p, Bound::Excluded(A::Packed::pack(*p)))
}

/// The longest prefix in `map` that covers `p`, `p` itself included.
pub fn longest_covering<'m, A: Address, T, M: OrderedKeys<A::Packed, T> + ?Sized>(
    map: &'m M,
    p: &Prefix<A>,
) -> Option<(Prefix<A>, &'m T)> {
    covering_upto(map, p, Bound::Included(A::Packed::pack(*p)))
}

/// The longest prefix in `map` covering `p`, among those up to `bound` in order.
///
/// Walks `p`'s predecessors in order. The last one up to the bound either covers `p` (then it
/// is the longest that does: the prefixes covering `p` all come before it, the longer later) or
/// it does not; then every prefix covering `p` that comes before it covers it too, so is no
/// longer than what the two have in common, and the search goes on from that common prefix
/// (itself included). Each step shortens the bound: a new descent each, one or two on real
/// tables.
fn covering_upto<'m, A: Address, T, M: OrderedKeys<A::Packed, T> + ?Sized>(
    map: &'m M,
    p: &Prefix<A>,
    mut bound: Bound<A::Packed>,
) -> Option<(Prefix<A>, &'m T)> {
    let mut first: Option<A::Packed> = None;
    loop {
        let (k, v) = map.last_upto(bound)?;
        let q = k.unpack();
        if q.covers(p) {
            return Some((q, v));
        }
        // What `q` and `p` have in common comes before `q` (it covers `q` and is not `q`,
        // which does not cover `p`): the bound moves back at every step.
        let common = A::Packed::pack(q.common(p));
        // Nothing before the first key: a miss ends here, not in one more search (an IPv6
        // address outside 2000::/3 shares a bit or two with the table; the leftmost path
        // is the one every such miss reads, so it stays cached).
        let first = *first.get_or_insert_with(|| *map.first_key().expect("q is a key"));
        if common < first {
            return None;
        }
        bound = Bound::Included(common);
    }
}

/// The keys of the prefixes that `p` covers (`p` included): from `p` to its last address.
pub fn covered_bounds<A: Address>(p: &Prefix<A>) -> (A::Packed, A::Packed) {
    let last = Prefix::host(p.last());
    (A::Packed::pack(*p), A::Packed::pack(last))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let v4: Vec<Prefix<Ipv4Addr>> = [
            "0.0.0.0/0",
            "0.0.0.0/1",
            "10.0.0.0/8",
            "10.0.0.0/16",
            "10.128.0.0/9",
            "255.255.255.255/32",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        for w in v4.windows(2) {
            assert!(<u64 as PackedPrefix<Ipv4Addr>>::pack(w[0]) < PackedPrefix::pack(w[1]));
            assert_eq!(<u64 as PackedPrefix<Ipv4Addr>>::pack(w[1]).unpack(), w[1]);
        }
    }
}
