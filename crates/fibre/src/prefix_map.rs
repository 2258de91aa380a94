//! A map from [`Prefix`] keys to values: the RIB's destinations (and IPv6 source prefixes).
//!
//! An index and the values apart. The index is a B-tree (`std`'s `BTreeMap`) from the prefix
//! packed into a small key ([`crate::packed`]: 8 bytes for IPv4, 17 for IPv6) to the index of
//! the value's slot. The values live in an arena of slots (pages of 4,096), without their
//! prefixes (the index has them: 8 bytes a value for IPv4, 32 for IPv6, where `Prefix<Ipv6Addr>`
//! is a `u128` and a length); a slot's index stays its prefix's while the prefix is stored, so a
//! compiled FIB keeps it to reach the value without a search ([`PrefixMap::index_of`],
//! [`PrefixMap::at`]).
//!
//! Iteration is in [`Prefix`] order (by address, shorter first: a trie's pre-order), and every
//! question a prefix map is asked is an ordered range of the index: what `p` covers, the
//! prefixes from `p` on, and (through [`crate::packed::covering_before`]) what covers `p`.
//!
//! Until issue 15's fourth round this was a path-compressed binary trie (Patricia). On the
//! IPv4 full view it had 1.65 million nodes of 20 bytes (36 bytes a prefix, where the index takes
//! 12 to 24) and a search passed 23 nodes on average, most of them cache misses: 1.8 µs a search
//! with the table cold, against 0.5 µs for the B-tree (200,000 random prefixes of the view, on
//! the machine kind of issue 15, by a throwaway program not in the repository). What a command
//! reproduces: `fibre bench --scenarios full-view --engines fibre-rib`, whose W1 lookups are a
//! search each, took 1.6-1.8 µs with the trie and 0.75-0.81 µs with the B-tree. A route change
//! searches the RIB once or twice.
use crate::addr::Address;
use crate::packed::{self, PackedPrefix};
use crate::prefix::Prefix;
use std::collections::btree_map::{self, Entry};
use std::collections::BTreeMap;

/// Entries per page of a [`Paged`] arena.
const PAGE: usize = 4096;

/// An arena of fixed-size pages: it grows a page at a time, so a large map never holds twice
/// its size while a `Vec` doubles, and never copies its entries to grow (a full table's
/// slots are 30-90 MB: a doubling `Vec` copied that much inside one insert).
#[derive(Clone, Debug)]
struct Paged<T> {
    pages: Vec<Vec<T>>,
    len: usize,
}

impl<T> Paged<T> {
    fn new() -> Self {
        Paged {
            pages: Vec::new(),
            len: 0,
        }
    }
    /// Appends `v`; returns its index.
    fn push(&mut self, v: T) -> u32 {
        match self.pages.last_mut() {
            Some(page) if page.len() < PAGE => page.push(v),
            _ => {
                let mut page = Vec::with_capacity(PAGE);
                page.push(v);
                self.pages.push(page);
            }
        }
        self.len += 1;
        (self.len - 1) as u32
    }
    #[inline]
    fn get(&self, i: usize) -> Option<&T> {
        self.pages.get(i / PAGE)?.get(i % PAGE)
    }
}

impl<T> std::ops::Index<usize> for Paged<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.pages[i / PAGE][i % PAGE]
    }
}

impl<T> std::ops::IndexMut<usize> for Paged<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.pages[i / PAGE][i % PAGE]
    }
}

/// Whether bit `i` of `bits` is set (bits past the end are not).
#[inline]
fn is_set(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

/// A map from prefixes to values, in prefix order (see the module docs).
#[derive(Clone, Debug)]
pub struct PrefixMap<A: Address, V> {
    /// Prefix -> the index of its slot.
    index: BTreeMap<A::Packed, u32>,
    /// The values, by slot index; a vacant slot holds `V::default()` and is on `free_slots`.
    /// Which slots hold values is a bitmap apart (`live`), so a slot needs no `Option` tag.
    slots: Paged<V>,
    free_slots: Vec<u32>,
    /// Bit `i` is set while slot `i` holds a value.
    live: Vec<u64>,
}

impl<A: Address, V: Default> Default for PrefixMap<A, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Address, V: Default> PrefixMap<A, V> {
    /// An empty map.
    pub fn new() -> Self {
        PrefixMap {
            index: BTreeMap::new(),
            slots: Paged::new(),
            free_slots: Vec::new(),
            live: Vec::new(),
        }
    }

    /// Packs the index: the B-tree is built again from its entries in order, every node full.
    /// Slots, and so the indexes a compiled FIB keeps, do not move.
    ///
    /// Why: keys inserted in order (a table loaded from a dump, a change set in prefix order)
    /// split every B-tree node at its middle and leave it about half full for good. Packed,
    /// the RIB of the full view took 86.2 bytes a route instead of 98.7 (IPv4), 187 instead
    /// of 208 (IPv6), with routes still stored whole (the `fibre-rib` engine's memory; see
    /// docs/fib.md). Packing visits every entry once (about 330 instructions an entry, a
    /// vector of all of them on the way): a caller packs after a load, not after a change.
    pub fn pack(&mut self) {
        // `collect` of a sorted run bulk-builds the tree (`BTreeMap`'s `FromIterator`).
        self.index = std::mem::take(&mut self.index).into_iter().collect();
    }
    /// Number of prefixes holding a value.
    pub fn len(&self) -> usize {
        self.index.len()
    }
    /// Whether no prefix holds a value.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    #[inline]
    fn is_live(&self, s: u32) -> bool {
        is_set(&self.live, s as usize)
    }
    /// Puts `value` in a free slot; returns its index.
    fn new_slot(
        slots: &mut Paged<V>,
        free_slots: &mut Vec<u32>,
        live: &mut Vec<u64>,
        value: V,
    ) -> u32 {
        let s = match free_slots.pop() {
            Some(s) => {
                slots[s as usize] = value;
                s
            }
            None => slots.push(value),
        };
        set_live(live, s, true);
        s
    }
    /// Frees slot `s`; returns its value.
    fn free_slot(&mut self, s: u32) -> V {
        self.free_slots.push(s);
        set_live(&mut self.live, s, false);
        std::mem::take(&mut self.slots[s as usize])
    }

    /// The value stored at exactly `p`.
    pub fn get(&self, p: &Prefix<A>) -> Option<&V> {
        let &s = self.index.get(&A::Packed::pack(*p))?;
        Some(&self.slots[s as usize])
    }
    /// The value stored at exactly `p`, mutably.
    pub fn get_mut(&mut self, p: &Prefix<A>) -> Option<&mut V> {
        let &s = self.index.get(&A::Packed::pack(*p))?;
        Some(&mut self.slots[s as usize])
    }
    /// The index of `p`'s value while it holds one. It stays `p`'s while `p` is stored (other
    /// inserts and removals, and edits of `p`'s value, do not move it): a compiled FIB keeps it
    /// to reach the value without a search, and checks it with [`PrefixMap::at`].
    pub fn index_of(&self, p: &Prefix<A>) -> Option<u32> {
        self.index.get(&A::Packed::pack(*p)).copied()
    }
    /// The value at an index from [`PrefixMap::index_of`], if it holds one.
    #[inline]
    pub fn at(&self, i: u32) -> Option<&V> {
        if !self.is_live(i) {
            return None;
        }
        self.slots.get(i as usize)
    }
    /// Whether a value is stored at exactly `p`.
    pub fn contains_key(&self, p: &Prefix<A>) -> bool {
        self.index.contains_key(&A::Packed::pack(*p))
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, p: Prefix<A>, value: V) -> Option<V> {
        match self.index.entry(A::Packed::pack(p)) {
            Entry::Occupied(e) => {
                Some(std::mem::replace(&mut self.slots[*e.get() as usize], value))
            }
            Entry::Vacant(e) => {
                let s =
                    Self::new_slot(&mut self.slots, &mut self.free_slots, &mut self.live, value);
                e.insert(s);
                None
            }
        }
    }

    /// The value at `p`, created with `make` if absent.
    pub fn get_or_insert_with(&mut self, p: Prefix<A>, make: impl FnOnce() -> V) -> &mut V {
        let s = match self.index.entry(A::Packed::pack(p)) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => *e.insert(Self::new_slot(
                &mut self.slots,
                &mut self.free_slots,
                &mut self.live,
                make(),
            )),
        };
        &mut self.slots[s as usize]
    }

    /// Runs `f` on the value slot of `p` (`None` if absent) in one search: a value it puts in
    /// an absent slot is inserted, and a value it takes out is removed. A value it leaves in
    /// place keeps its index.
    pub fn update<R>(&mut self, p: Prefix<A>, f: impl FnOnce(&mut Option<V>) -> R) -> R {
        match self.index.entry(A::Packed::pack(p)) {
            Entry::Occupied(e) => {
                let s = *e.get();
                let mut value = Some(std::mem::take(&mut self.slots[s as usize]));
                let r = f(&mut value);
                match value {
                    Some(v) => self.slots[s as usize] = v,
                    None => {
                        e.remove();
                        self.free_slot(s);
                    }
                }
                r
            }
            Entry::Vacant(e) => {
                let mut value = None;
                let r = f(&mut value);
                if let Some(v) = value {
                    e.insert(Self::new_slot(
                        &mut self.slots,
                        &mut self.free_slots,
                        &mut self.live,
                        v,
                    ));
                }
                r
            }
        }
    }

    /// Removes the value at `p`.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<V> {
        let s = self.index.remove(&A::Packed::pack(*p))?;
        Some(self.free_slot(s))
    }

    /// Calls `f` on every stored prefix containing `addr`, longest first, until it returns `Some`.
    ///
    /// This is the shape of every kernel lookup: find the longest match, and if its routes do not
    /// qualify, fall back to shorter prefixes.
    #[inline]
    pub fn find_map_matches<'s, R>(
        &'s self,
        addr: A,
        mut f: impl FnMut(Prefix<A>, &'s V) -> Option<R>,
    ) -> Option<R> {
        self.matches(addr).find_map(|(p, v)| f(p, v))
    }

    /// The stored prefixes containing `addr`, longest first. Each is found when asked for: a
    /// search for the first, and one for each step back ([`packed::covering_before`]).
    pub fn matches(&self, addr: A) -> Matches<'_, A, V> {
        self.covering_longest_first(Prefix::host(addr))
    }

    /// The stored prefixes covering `p` (`p` itself included), longest first, found as
    /// [`PrefixMap::matches`] finds them.
    fn covering_longest_first(&self, p: Prefix<A>) -> Matches<'_, A, V> {
        Matches {
            map: self,
            from: Some((p, true)),
        }
    }

    /// The longest stored prefix containing `addr`.
    pub fn longest_match(&self, addr: A) -> Option<(Prefix<A>, &V)> {
        self.matches(addr).next()
    }

    /// Stored prefixes covering `p` (its supernets and `p` itself), shortest first.
    pub fn covering(&self, p: &Prefix<A>) -> Vec<(Prefix<A>, &V)> {
        let mut out: Vec<(Prefix<A>, &V)> = self.covering_longest_first(*p).collect();
        out.reverse();
        out
    }

    /// Stored prefixes covered by `p` (its subnets and `p` itself), in order.
    pub fn covered(&self, p: &Prefix<A>) -> Iter<'_, A, V> {
        Iter {
            map: self,
            range: packed::covered(&self.index, p),
        }
    }

    /// All stored prefixes in order.
    pub fn iter(&self) -> Iter<'_, A, V> {
        Iter {
            map: self,
            range: self.index.range(..),
        }
    }

    /// Stored prefixes from the first one `>= start` on, in order: SNMP GETNEXT is `range_from`
    /// then skip `start` itself.
    pub fn range_from(&self, start: &Prefix<A>) -> Iter<'_, A, V> {
        Iter {
            map: self,
            range: self.index.range(A::Packed::pack(*start)..),
        }
    }

    /// Keeps only the values for which `f` returns true; `f` may also edit them.
    pub fn retain(&mut self, mut f: impl FnMut(&Prefix<A>, &mut V) -> bool) {
        let mut doomed = Vec::new();
        for (k, &s) in &self.index {
            let p = k.unpack();
            if !f(&p, &mut self.slots[s as usize]) {
                doomed.push(p);
            }
        }
        for p in doomed {
            self.remove(&p);
        }
    }
}

fn set_live(live: &mut Vec<u64>, s: u32, on: bool) {
    let w = s as usize / 64;
    if live.len() <= w {
        live.resize(w + 1, 0);
    }
    if on {
        live[w] |= 1 << (s % 64);
    } else {
        live[w] &= !(1 << (s % 64));
    }
}

/// The prefixes containing an address, longest first; see [`PrefixMap::matches`].
pub struct Matches<'a, A: Address, V> {
    map: &'a PrefixMap<A, V>,
    /// Where the next search starts: a prefix, and whether it may be the answer itself (the
    /// first search) or only what covers it (after each match). `None` once a search found
    /// nothing.
    from: Option<(Prefix<A>, bool)>,
}

impl<'a, A: Address, V> Iterator for Matches<'a, A, V> {
    type Item = (Prefix<A>, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        let (p, itself) = self.from.take()?;
        let index = &self.map.index;
        let (q, &s) = if itself {
            packed::longest_covering(index, &p)
        } else {
            packed::covering_before(index, &p)
        }?;
        self.from = Some((q, false));
        Some((q, &self.map.slots[s as usize]))
    }
}

/// In-order iterator; see [`PrefixMap::iter`].
pub struct Iter<'a, A: Address, V> {
    map: &'a PrefixMap<A, V>,
    range: btree_map::Range<'a, A::Packed, u32>,
}

impl<'a, A: Address, V> Iter<'a, A, V> {
    /// The next stored prefix with its value's index ([`PrefixMap::index_of`]).
    pub fn next_indexed(&mut self) -> Option<(u32, Prefix<A>, &'a V)> {
        let (k, &s) = self.range.next()?;
        Some((s, k.unpack(), &self.map.slots[s as usize]))
    }
}

impl<'a, A: Address, V> Iterator for Iter<'a, A, V> {
    type Item = (Prefix<A>, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        self.next_indexed().map(|(_, p, v)| (p, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn p4(s: &str) -> Prefix<Ipv4Addr> {
        s.parse().unwrap()
    }

    #[test]
    fn insert_lookup_remove() {
        let mut t = PrefixMap::new();
        for (i, s) in [
            "10.0.0.0/8",
            "10.0.0.0/16",
            "10.128.0.0/9",
            "11.0.0.0/8",
            "0.0.0.0/0",
        ]
        .iter()
        .enumerate()
        {
            assert!(t.insert(p4(s), i).is_none());
        }
        assert_eq!(t.len(), 5);
        assert_eq!(
            t.longest_match(Ipv4Addr::new(10, 0, 1, 1)).unwrap().0,
            p4("10.0.0.0/16")
        );
        assert_eq!(
            t.longest_match(Ipv4Addr::new(10, 200, 1, 1)).unwrap().0,
            p4("10.128.0.0/9")
        );
        assert_eq!(
            t.longest_match(Ipv4Addr::new(12, 0, 0, 1)).unwrap().0,
            p4("0.0.0.0/0")
        );
        let order: Vec<_> = t.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(
            order,
            [
                "0.0.0.0/0",
                "10.0.0.0/8",
                "10.0.0.0/16",
                "10.128.0.0/9",
                "11.0.0.0/8"
            ]
        );
        assert_eq!(t.remove(&p4("10.0.0.0/8")), Some(0));
        assert_eq!(t.remove(&p4("10.0.0.0/8")), None);
        assert_eq!(
            t.longest_match(Ipv4Addr::new(10, 1, 1, 1)).unwrap().0,
            p4("0.0.0.0/0")
        );
        for s in ["10.0.0.0/16", "10.128.0.0/9", "11.0.0.0/8", "0.0.0.0/0"] {
            t.remove(&p4(s)).unwrap();
        }
        assert!(t.is_empty());
    }

    /// Packing the index after a load keeps every prefix, its value and its slot, and the map
    /// goes on working (against the model) through churn after it.
    #[test]
    fn pack_keeps_entries_and_slots() {
        let mut t = PrefixMap::new();
        let mut model = BTreeMap::new();
        // A load in order, of more slots than a page: /24s and the /16s above some of them.
        for i in 0..6000u32 {
            let p = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24);
            t.insert(p, i);
            model.insert(p, i);
            if i % 256 == 0 {
                let q = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 16);
                t.insert(q, i + 100_000);
                model.insert(q, i + 100_000);
            }
        }
        let slots: Vec<_> = model.keys().map(|p| t.index_of(p)).collect();
        t.pack();
        let after: Vec<_> = model.keys().map(|p| t.index_of(p)).collect();
        assert_eq!(slots, after, "every prefix keeps its slot");
        let probes: Vec<Ipv4Addr> = (0..64u32)
            .map(|i| Ipv4Addr::from(0x0a00_0000 + i * 0x5_8123))
            .collect();
        check_against_model(&t, &model, &probes);
        for i in (0..6000u32).step_by(7) {
            let p = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24);
            assert_eq!(t.remove(&p), model.remove(&p));
            let q = Prefix::new(Ipv4Addr::from(0x0b00_0000 + (i << 8)), 23);
            assert_eq!(t.insert(q, i), model.insert(q, i));
        }
        check_against_model(&t, &model, &probes);
        t.pack();
        check_against_model(&t, &model, &probes);
    }

    /// The oracle: a sorted map scanned linearly.
    fn check_against_model<A: Address>(
        trie: &PrefixMap<A, u32>,
        model: &BTreeMap<Prefix<A>, u32>,
        probes: &[A],
    ) {
        assert_eq!(trie.len(), model.len());
        let all: Vec<_> = trie.iter().map(|(p, v)| (p, *v)).collect();
        let want: Vec<_> = model.iter().map(|(p, v)| (*p, *v)).collect();
        assert_eq!(all, want, "ordered iteration is sorted and complete");
        for &a in probes {
            let best = model
                .iter()
                .filter(|(p, _)| p.contains(a))
                .max_by_key(|(p, _)| p.len());
            assert_eq!(
                trie.longest_match(a).map(|(p, v)| (p, *v)),
                best.map(|(p, v)| (*p, *v))
            );
            let matches: Vec<_> = trie.matches(a).map(|(p, v)| (p, *v)).collect();
            let mut want: Vec<_> = model
                .iter()
                .filter(|(p, _)| p.contains(a))
                .map(|(p, v)| (*p, *v))
                .collect();
            want.reverse();
            assert_eq!(matches, want, "every match, longest first");
            for len in [0, A::WIDTH / 4, A::WIDTH / 2, A::WIDTH - 3] {
                let q = Prefix::new(a, len);
                let covering: Vec<_> = trie.covering(&q).into_iter().map(|(p, _)| p).collect();
                let want: Vec<_> = model.keys().filter(|p| p.covers(&q)).copied().collect();
                assert_eq!(covering, want);
                let covered: Vec<_> = trie.covered(&q).map(|(p, _)| p).collect();
                let want: Vec<_> = model.keys().filter(|p| q.covers(p)).copied().collect();
                assert_eq!(covered, want);
                let from: Vec<_> = trie.range_from(&q).map(|(p, _)| p).collect();
                let want: Vec<_> = model.keys().filter(|p| **p >= q).copied().collect();
                assert_eq!(from, want);
            }
        }
    }

    /// One operation on the trie and on the model: 0 insert, 1 remove, 2 `update` (which,
    /// by `v`, takes the value out, puts one in, or changes one in place).
    fn apply_op<A: Address>(
        t: &mut PrefixMap<A, u32>,
        m: &mut BTreeMap<Prefix<A>, u32>,
        op: u8,
        p: Prefix<A>,
        v: u32,
    ) {
        match op {
            0 => assert_eq!(t.insert(p, v), m.insert(p, v)),
            1 => assert_eq!(t.remove(&p), m.remove(&p)),
            _ => {
                let edit = |slot: &mut Option<u32>| {
                    let was = *slot;
                    match v % 3 {
                        0 => *slot = None,
                        1 => *slot = Some(v),
                        _ => {
                            if let Some(x) = slot.as_mut() {
                                *x = x.wrapping_add(1);
                            }
                        }
                    }
                    was
                };
                let mut model_slot = m.get(&p).copied();
                let want = edit(&mut model_slot);
                match model_slot {
                    Some(x) => m.insert(p, x),
                    None => m.remove(&p),
                };
                assert_eq!(t.update(p, edit), want);
            }
        }
    }

    /// [`apply_op`], checking that every prefix stored before and after the operation kept
    /// its index ([`PrefixMap::index_of`]), and that each index gives back its value
    /// ([`PrefixMap::at`]).
    fn apply_op_keeping_indexes<A: Address>(
        t: &mut PrefixMap<A, u32>,
        m: &mut BTreeMap<Prefix<A>, u32>,
        op: u8,
        p: Prefix<A>,
        v: u32,
    ) {
        let before: BTreeMap<Prefix<A>, u32> = m
            .keys()
            .map(|q| (*q, t.index_of(q).expect("stored prefixes have an index")))
            .collect();
        apply_op(t, m, op, p, v);
        for (q, value) in m.iter() {
            let i = t.index_of(q).expect("stored prefixes have an index");
            assert_eq!(t.at(i), Some(value), "the index gives the prefix's value");
            if let Some(&was) = before.get(q) {
                assert_eq!(i, was, "{q:?} kept its index");
            }
        }
        for (q, &was) in &before {
            if !m.contains_key(q) {
                // Free, or reused by a prefix stored since.
                assert!(
                    t.at(was).is_none() || m.keys().any(|k| t.index_of(k) == Some(was)),
                    "a removed prefix's index holds no value of its own"
                );
            }
        }
        let indexes: std::collections::BTreeSet<u32> =
            m.keys().filter_map(|q| t.index_of(q)).collect();
        assert_eq!(indexes.len(), m.len(), "indexes are distinct");
    }

    fn arb_prefix4() -> impl Strategy<Value = Prefix<Ipv4Addr>> {
        // Few distinct high bits so that prefixes nest and collide often.
        (0u32..16, 0u8..=32)
            .prop_map(|(hi, len)| Prefix::new(Ipv4Addr::from(hi.rotate_right(4) | (hi << 8)), len))
    }
    fn arb_prefix6() -> impl Strategy<Value = Prefix<Ipv6Addr>> {
        (0u128..16, 0u8..=128)
            .prop_map(|(hi, len)| Prefix::new(Ipv6Addr::from(hi.rotate_right(4) | (hi << 60)), len))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]
        #[test]
        fn map_matches_model_v4(ops in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..40),
                                 probes in prop::collection::vec(any::<u32>(), 1..8)) {
            let mut t = PrefixMap::new();
            let mut m = BTreeMap::new();
            for (op, p, v) in ops {
                apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
            }
            let probes: Vec<Ipv4Addr> = probes.into_iter().map(|x| Ipv4Addr::from(x & 0xf0f0_0fff)).collect();
            check_against_model(&t, &m, &probes);
        }

        #[test]
        fn map_matches_model_v6(ops in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..40),
                                 probes in prop::collection::vec(any::<u128>(), 1..8)) {
            let mut t = PrefixMap::new();
            let mut m = BTreeMap::new();
            for (op, p, v) in ops {
                apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
            }
            let probes: Vec<Ipv6Addr> = probes.into_iter().map(|x| Ipv6Addr::from(x & !(0x0fffu128 << 100))).collect();
            check_against_model(&t, &m, &probes);
        }

    }
}
