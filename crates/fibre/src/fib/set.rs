//! The FIB's own `(prefix, id)` set: what its encoding is built and patched from.
//!
//! A B-tree (`std`'s `BTreeMap`) keyed by the prefix packed into a few bytes
//! ([`crate::packed`]), in [`Prefix`] order. Before issue 15 this was a binary trie of up to
//! `2n` nodes of 24 bytes (IPv4) or 48 bytes (IPv6), whose walk to one prefix of the full view
//! passes about 20 nodes. The B-tree keeps 11 keys a node (about 12 bytes a prefix for IPv4, 21
//! for IPv6, when built from sorted input) and reaches any prefix in four or five nodes.
//!
//! Beside it, one entry per direct-pointing slot (the first [`FibFamily::DP_BITS`] bits) that
//! holds longer prefixes: the slot's cover (the longest prefix at most the slot long that
//! covers it) and the lengths it holds. The longest prefix covering a long one is then found
//! inside its slot, without walking back across the slots before it (see
//! [`PrefixSet::covering_shorter`]): an update asks this once per change.
use super::FibFamily;
use crate::addr::Bits;
use crate::packed::{self, PackedPrefix};
use crate::prefix::Prefix;
use std::collections::BTreeMap;
use std::ops::Bound;

/// A map from prefixes to FIB ids, ordered as [`Prefix`] orders (see the module docs).
#[derive(Clone)]
pub struct PrefixSet<A: FibFamily> {
    map: BTreeMap<A::Packed, u32>,
    /// The direct-pointing slots (the first [`FibFamily::DP_BITS`] bits) that hold a longer
    /// prefix, by slot number: what [`PrefixSet::covering_shorter`] needs to stop at the slot.
    slots: BTreeMap<u32, SlotCover>,
}

/// What a direct-pointing slot holding longer prefixes knows of the rest of the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotCover {
    /// How many prefixes longer than the slot it holds (the entry goes with the last).
    longer: u32,
    /// The length of the longest prefix covering the slot (at most the slot long);
    /// [`NO_COVER`] for none.
    len: u8,
    /// That prefix's id.
    id: u32,
    /// Bit `l - DP_BITS - 1` is set if a prefix of length `l` was stored in the slot since
    /// the entry was made (never cleared before: a length whose last prefix went stays, and
    /// costs a probe that finds nothing). The lengths [`PrefixSet::covering_shorter`] probes.
    /// Four words, not a `u128`: its alignment would pad every entry.
    lengths: [u32; 4],
}

impl SlotCover {
    fn new(len: u8, id: u32) -> Self {
        SlotCover {
            longer: 0,
            len,
            id,
            lengths: [0; 4],
        }
    }
    /// One more prefix of length `len` (longer than the slot) in the slot.
    fn add<A: FibFamily>(&mut self, len: u8) {
        self.longer += 1;
        let bit = len as u32 - A::DP_BITS - 1;
        self.lengths[bit as usize / 32] |= 1 << (bit % 32);
    }
    /// The lengths of [`SlotCover::lengths`] of at most `most`, longest first.
    fn lengths_upto<A: FibFamily>(&self, most: u8) -> impl Iterator<Item = u8> {
        let all = self
            .lengths
            .iter()
            .rev()
            .fold(0u128, |acc, &w| (acc << 32) | u128::from(w));
        // Lengths DP_BITS + 1 ..= most: bits 0 .. most - DP_BITS.
        let keep = (most as u32).saturating_sub(A::DP_BITS);
        let mut rest = if keep >= 128 {
            all
        } else {
            all & ((1u128 << keep) - 1)
        };
        std::iter::from_fn(move || {
            let bit = 127u32.checked_sub(rest.leading_zeros())?;
            rest &= !(1u128 << bit);
            Some((bit + A::DP_BITS + 1) as u8)
        })
    }
}

/// Predecessors [`PrefixSet::covering_shorter`] walks in one range before it searches by length.
const WALK: usize = 4;

/// [`SlotCover::len`] when no prefix covers the slot.
const NO_COVER: u8 = u8::MAX;

impl<A: FibFamily> Default for PrefixSet<A> {
    fn default() -> Self {
        PrefixSet {
            map: BTreeMap::new(),
            slots: BTreeMap::new(),
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
        let map: BTreeMap<A::Packed, u32> = pairs
            .into_iter()
            .map(|(p, id)| (A::Packed::pack(p), id))
            .collect();
        // One pass in order: `covers` holds the short prefixes covering the current one,
        // longest last (a trie's path), so a slot's cover is the last of them.
        let mut slots: Vec<(u32, SlotCover)> = Vec::new();
        let mut covers: Vec<(Prefix<A>, u32)> = Vec::new();
        let mut last: Option<(u32, SlotCover)> = None;
        for (k, &id) in &map {
            let p = k.unpack();
            while covers.last().is_some_and(|(q, _)| !q.covers(&p)) {
                covers.pop();
            }
            if !is_long(&p) {
                covers.push((p, id));
                continue;
            }
            let slot = slot_of(&p);
            match &mut last {
                Some((s, c)) if *s == slot => c.add::<A>(p.len()),
                _ => {
                    slots.extend(last.take());
                    let (len, id) = covers
                        .last()
                        .map_or((NO_COVER, 0), |(q, id)| (q.len(), *id));
                    let mut c = SlotCover::new(len, id);
                    c.add::<A>(p.len());
                    last = Some((slot, c));
                }
            }
        }
        slots.extend(last);
        // Collected from sorted pairs, a B-tree is built with full nodes (inserted one by one
        // in order, its nodes stay half full: 2.5 MB more for the IPv4 full view).
        PrefixSet {
            map,
            slots: slots.into_iter().collect(),
        }
    }
}

/// Whether `p` is longer than a direct-pointing slot (it then lies inside one).
#[inline]
fn is_long<A: FibFamily>(p: &Prefix<A>) -> bool {
    p.len() as u32 > A::DP_BITS
}

/// The direct-pointing slot `p` lies in (for a prefix longer than the slot).
#[inline]
fn slot_of<A: FibFamily>(p: &Prefix<A>) -> u32 {
    (p.bits() >> (A::WIDTH as u32 - A::DP_BITS)).low_u64() as u32
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
        let old = self.map.insert(A::Packed::pack(p), id);
        if is_long(&p) {
            if old.is_none() {
                let slot = slot_of(&p);
                match self.slots.get_mut(&slot) {
                    Some(c) => c.add::<A>(p.len()),
                    None => {
                        let (len, id) = self.slot_cover(&p);
                        let mut c = SlotCover::new(len, id);
                        c.add::<A>(p.len());
                        self.slots.insert(slot, c);
                    }
                }
            }
        } else {
            // `p` is now the longest cover of every slot under it that had a shorter one.
            for c in self.slots_under(&p) {
                if c.len == NO_COVER || c.len <= p.len() {
                    c.len = p.len();
                    c.id = id;
                }
            }
        }
        old
    }
    /// Removes exactly `p`, giving back its id.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<u32> {
        let old = self.map.remove(&A::Packed::pack(*p))?;
        if is_long(p) {
            let slot = slot_of(p);
            let c = self
                .slots
                .get_mut(&slot)
                .expect("a long prefix's slot is kept");
            c.longer -= 1;
            if c.longer == 0 {
                self.slots.remove(&slot);
            }
        } else {
            // The slots `p` was the cover of fall back to what covers `p`, one answer for all.
            let (len, id) = self
                .covering_before(p)
                .map_or((NO_COVER, 0), |(q, &id)| (q.len(), id));
            for c in self.slots_under(p) {
                if c.len == p.len() {
                    c.len = len;
                    c.id = id;
                }
            }
        }
        Some(old)
    }
    /// The entries of the slots under `p` (at most the slot long).
    fn slots_under(&mut self, p: &Prefix<A>) -> impl Iterator<Item = &mut SlotCover> {
        let first = slot_of(p);
        let last = slot_of(&Prefix::host(p.last()));
        self.slots.range_mut(first..=last).map(|(_, c)| c)
    }
    /// The longest prefix covering `p`'s slot, at most the slot long: `(len, id)`.
    fn slot_cover(&self, p: &Prefix<A>) -> (u8, u32) {
        let slot = Prefix::new(p.addr(), A::DP_BITS as u8);
        self.longest_covering(&slot)
            .map_or((NO_COVER, 0), |(q, &id)| (q.len(), id))
    }
    /// Every `(prefix, id)`, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (Prefix<A>, &u32)> + '_ {
        self.map.iter().map(|(k, id)| (k.unpack(), id))
    }
    /// The stored prefixes `p` covers (`p` itself included), in order: a covering prefix
    /// before those it covers.
    pub fn covered(&self, p: &Prefix<A>) -> impl Iterator<Item = (Prefix<A>, &u32)> {
        // One search, from `p` on, rather than a range's two (its end searched too): an update
        // asks this of every region it re-encodes, most of them holding a prefix or two.
        let (from, to) = packed::covered_bounds(p);
        self.map
            .range(from..)
            .take_while(move |&(k, _)| *k <= to)
            .map(|(k, id)| (k.unpack(), id))
    }
    /// The longest stored prefix that covers `p` and is shorter than it.
    ///
    /// For `p` longer than a direct-pointing slot, the answer is in `p`'s slot or is the
    /// slot's cover, kept per slot. First `p`'s nearest predecessors in the slot (one range):
    /// a sibling's cover is often among them. A predecessor that does not cover `p` bounds
    /// the rest (see [`packed::covering_before`]): nothing longer than what the two share.
    /// Then one exact search per length the slot holds, longest first, below that bound (a
    /// slot of IPv6 /48s can hold thousands, whose shared bits shorten a step at a time). For
    /// `p` at most the slot long, see [`packed::covering_before`].
    pub fn covering_shorter(&self, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        if !is_long(p) {
            return self.covering_before(p);
        }
        let slot = Prefix::new(p.addr(), A::DP_BITS as u8);
        let Some(c) = self.slots.get(&slot_of(p)) else {
            // A slot without longer prefixes keeps no entry: its cover is searched for.
            return self.longest_covering(&slot);
        };
        // After the slot's own prefix come only prefixes longer than the slot and inside it.
        // One search, back from `p` (a range's two bounds were two).
        let slot_key = A::Packed::pack(slot);
        let inside = self
            .map
            .range((Bound::Unbounded, Bound::Excluded(A::Packed::pack(*p))))
            .rev()
            .take_while(|&(k, _)| *k > slot_key);
        let mut most = p.len() - 1;
        let mut walked = 0;
        for (k, id) in inside.take(WALK) {
            walked += 1;
            let q = k.unpack();
            // `q` comes before `p`, so is not `p`: covering it, it is shorter.
            if q.covers(p) {
                return Some((q, id));
            }
            most = most.min(q.common(p).len());
        }
        if walked == WALK {
            for len in c.lengths_upto::<A>(most) {
                let q = Prefix::new(p.addr(), len);
                if let Some(id) = self.get(&q) {
                    return Some((q, id));
                }
            }
        }
        (c.len != NO_COVER).then(|| (Prefix::new(p.addr(), c.len), &c.id))
    }
    /// The longest stored prefix that covers `p` and is shorter than it, from the whole set
    /// ([`packed::covering_before`]: a descent for each step back).
    fn covering_before(&self, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        packed::covering_before(&self.map, p)
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
    /// Checks the per-slot entries against the prefixes (tests).
    #[cfg(test)]
    fn audit(&self) {
        let mut want: BTreeMap<u32, SlotCover> = BTreeMap::new();
        for (p, _) in self.iter().filter(|(p, _)| is_long(p)) {
            let (len, id) = self.slot_cover(&p);
            want.entry(slot_of(&p))
                .or_insert(SlotCover::new(len, id))
                .add::<A>(p.len());
        }
        // The lengths are a superset of what the slot holds (kept while the slot is).
        let mut got = self.slots.clone();
        for (slot, c) in got.iter_mut() {
            let w = want
                .get(slot)
                .expect("a slot without longer prefixes keeps no entry");
            assert_eq!(
                std::array::from_fn::<u32, 4, _>(|i| c.lengths[i] & w.lengths[i]),
                w.lengths,
                "every length held is listed"
            );
            c.lengths = w.lengths;
        }
        assert_eq!(got, want, "per-slot covers");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Bits;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::net::{Ipv4Addr, Ipv6Addr};

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

    /// Prefixes in a few direct-pointing slots, many to a slot: siblings, and covers at
    /// every depth below the slot (what `covering_shorter` searches by walking and by length).
    fn dense<A: FibFamily>(top: u64, len: u8) -> Prefix<A> {
        let width = A::WIDTH as u32;
        let low = (width - A::DP_BITS).min(20);
        let slot = A::Bits::from_u64(top >> 20) << (width - A::DP_BITS);
        let inside = top & ((1 << low) - 1);
        let bits = slot | (A::Bits::from_u64(inside) << (width - A::DP_BITS - low));
        // Lengths cluster past the slot, where the low bits differ.
        let len = (A::DP_BITS as u8 - 2 + len % (low as u8 + 4)).min(A::WIDTH);
        Prefix::from_bits(bits, len).expect("length clipped")
    }

    fn check<A: FibFamily>(ops: &[(bool, u64, u8, u32)], probes: &[(u64, u8)]) {
        check_with(ops, probes, near::<A>)
    }

    fn check_with<A: FibFamily>(
        ops: &[(bool, u64, u8, u32)],
        probes: &[(u64, u8)],
        near: fn(u64, u8) -> Prefix<A>,
    ) {
        let mut set = PrefixSet::<A>::new();
        let mut model = BTreeMap::new();
        for &(add, top, len, id) in ops {
            let p = near(top, len);
            if add {
                assert_eq!(set.insert(p, id), model.insert(p, id));
            } else {
                assert_eq!(set.remove(&p), model.remove(&p));
            }
        }
        assert_eq!(set.len(), model.len());
        set.audit();
        let all: Vec<(Prefix<A>, u32)> = set.iter().map(|(p, &id)| (p, id)).collect();
        let want: Vec<(Prefix<A>, u32)> = model.iter().map(|(p, &id)| (*p, id)).collect();
        assert_eq!(all, want, "in prefix order");
        for &(top, len) in probes {
            let p = near(top, len);
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
        // From pairs out of order, each prefix first with another id: the later pair wins.
        let stale = want.iter().map(|&(p, id)| (p, id.wrapping_add(1)));
        let rebuilt: PrefixSet<A> = stale.chain(want.iter().rev().copied()).collect();
        rebuilt.audit();
        let all: Vec<(Prefix<A>, u32)> = rebuilt.iter().map(|(p, &id)| (p, id)).collect();
        assert_eq!(
            all, want,
            "built from pairs in any order, the later winning"
        );
        for &(top, len) in probes {
            let p = near(top, len);
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

    /// Three slots, 2^20 addresses under each (fewer for IPv4: 14 bits past its slot).
    fn dense_ops() -> impl Strategy<Value = Vec<(bool, u64, u8, u32)>> {
        prop::collection::vec(
            (
                prop::bool::weighted(0.8),
                0u64..(3 << 20),
                0u8..40,
                0u32..1000,
            ),
            0..200,
        )
    }

    fn dense_probes() -> impl Strategy<Value = Vec<(u64, u8)>> {
        prop::collection::vec((0u64..(3 << 20), 0u8..40), 1..40)
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
        #[test]
        fn agrees_with_a_model_in_crowded_slots_v4(ops in dense_ops(), probes in dense_probes()) {
            check_with::<Ipv4Addr>(&ops, &probes, dense::<Ipv4Addr>);
        }
        #[test]
        fn agrees_with_a_model_in_crowded_slots_v6(ops in dense_ops(), probes in dense_probes()) {
            check_with::<Ipv6Addr>(&ops, &probes, dense::<Ipv6Addr>);
        }
    }

    #[test]
    fn a_later_pair_wins() {
        let p: Prefix<Ipv4Addr> = "10.0.0.0/8".parse().unwrap();
        let set: PrefixSet<Ipv4Addr> = [(p, 1), (p, 2)].into_iter().collect();
        assert_eq!(set.get(&p), Some(&2));
        assert_eq!(set.len(), 1);
    }
}
