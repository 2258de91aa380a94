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
//! A load in prefix order does not go through the B-tree key by key: after a streak of keys in
//! order, new keys are pushed onto a sorted *run* that sits in a gap of the index, and the run
//! goes into the index in one bulk merge (see [`PrefixMap::pack`] and the private `start_run`).
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
use crate::packed::{self, OrderedKeys, PackedPrefix};
use crate::prefix::Prefix;
use std::collections::btree_map::{self, Entry};
use std::collections::BTreeMap;
use std::ops::Bound;

/// New keys in a row, each above the one before, after which the next starts a run (see
/// [`PrefixMap::start_run`]): keys in no order make such a streak about once in 16! inserts.
const RUN_AFTER: u32 = 16;

/// Most indexed keys a run moves onto itself to grow past them (see `PrefixMap::absorb_upto`).
const ABSORB_MOST: usize = 8;

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
    /// New prefixes a load put in order, with their slots' indexes, not yet in `index`
    /// (see [`PrefixMap::start_run`]).
    run: Vec<(A::Packed, u32)>,
    /// The first key of `index` above the run (`None`: none), found when the run started or
    /// took in keys in its way; the run grows up to it. A removal can only make it lower than
    /// the truth, which is safe.
    run_limit: Option<A::Packed>,
    /// Indexed keys the run took in (see `PrefixMap::absorb_upto`).
    run_absorbed: usize,
    /// The last key stored new, and how many new keys in a row came each above the one
    /// before (a run starts after [`RUN_AFTER`]).
    last_new: Option<A::Packed>,
    ascending: u32,
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
            run: Vec::new(),
            run_limit: None,
            run_absorbed: 0,
            last_new: None,
            ascending: 0,
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
    /// A map holding a run (see the module docs) gets it merged in, which packs too. The count
    /// of new keys in order starts over.
    pub fn pack(&mut self) {
        self.last_new = None;
        self.ascending = 0;
        if self.run.is_empty() {
            // `collect` of a sorted run bulk-builds the tree (`BTreeMap`'s `FromIterator`).
            self.index = std::mem::take(&mut self.index).into_iter().collect();
        } else {
            self.merge_run(true);
        }
    }
    /// Keys in the run (see the module docs).
    #[cfg(test)]
    pub(crate) fn run_len(&self) -> usize {
        self.run.len()
    }
    /// Number of prefixes holding a value.
    pub fn len(&self) -> usize {
        self.index.len() + self.run.len()
    }
    /// Whether no prefix holds a value.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty() && self.run.is_empty()
    }

    /// Whether `k` lies within the run's first and last keys (where the index has none).
    #[inline]
    fn in_run_span(&self, k: &A::Packed) -> bool {
        match (self.run.first(), self.run.last()) {
            (Some((first, _)), Some((last, _))) => first <= k && k <= last,
            _ => false,
        }
    }
    /// Where `k` is in the run, if it is there.
    #[inline]
    fn run_position(&self, k: &A::Packed) -> Option<usize> {
        if !self.in_run_span(k) {
            return None;
        }
        self.run.binary_search_by(|(x, _)| x.cmp(k)).ok()
    }
    /// The slot of `k`, in the run or the index.
    #[inline]
    fn slot_of(&self, k: &A::Packed) -> Option<u32> {
        if self.in_run_span(k) {
            return self.run_position(k).map(|i| self.run[i].1);
        }
        self.index.get(k).copied()
    }
    /// Whether new key `k` extends the run: above its last key, below the index's next.
    #[inline]
    fn extends_run(&self, k: &A::Packed) -> bool {
        self.run.last().is_some_and(|(last, _)| k > last)
            && self.run_limit.is_none_or(|limit| *k < limit)
    }
    /// Counts new key `k` into the streak of new keys each above the one before; returns
    /// whether the streak is long enough for `k` to start a run. (On the fields: a caller
    /// holds an entry of the index.)
    fn note_new(last_new: &mut Option<A::Packed>, ascending: &mut u32, k: A::Packed) -> bool {
        if last_new.is_some_and(|last| k > last) {
            *ascending = ascending.saturating_add(1);
        } else {
            *ascending = 0;
        }
        *last_new = Some(k);
        *ascending >= RUN_AFTER
    }
    /// Whether new key `k`, found vacant in the index, starts a run: it extends a streak of
    /// new keys in order ([`PrefixMap::note_new`]) and comes after the current run (a load goes
    /// on past an indexed key). (On the fields: a caller holds an entry of the index.)
    fn starts_run(
        last_new: &mut Option<A::Packed>,
        ascending: &mut u32,
        run: &[(A::Packed, u32)],
        k: A::Packed,
    ) -> bool {
        Self::note_new(last_new, ascending, k) && run.last().is_none_or(|(last, _)| k > *last)
    }
    /// Starts a run with new key `k` at slot `s` (the run before merged into the index).
    ///
    /// Why runs: a load in prefix order inserts every key just above the one before, and
    /// `std`'s B-tree searches each from its root (about 240 instructions a key for a million,
    /// a scan of every node down the right edge) and then splits its nodes half full. A run
    /// takes such a key in a push. It sits in a gap of the index: no indexed key lies between
    /// its first and its last, nor between its last and `run_limit`, so a key in that range is
    /// found (or known absent) by a binary search of the run alone. It goes into the index
    /// (see [`PrefixMap::merge_run`]) when the map is packed or settled (a router does one or
    /// the other at every commit), when a key lands inside its span, or when the next run
    /// starts. Keys arriving in no order never make a
    /// run (the streak), so single changes pay a comparison or two for it.
    fn start_run(&mut self, k: A::Packed, s: u32) {
        self.merge_run(false);
        self.run_absorbed = 0;
        self.run_limit = self
            .index
            .range((Bound::Excluded(k), Bound::Unbounded))
            .next()
            .map(|(x, _)| *x);
        self.run.push((k, s));
    }
    /// During a load (a streak of new keys in order), lets the run grow past a few indexed keys
    /// in its way: when `k` lies beyond the run's limit and at most [`ABSORB_MOST`] indexed keys
    /// lie between the run and `k` (and the run holds at least 16 keys for each key it took in,
    /// these included), they move from the index onto the run. Why: a table loaded
    /// after its connected routes holds a few keys among the loaded ones (the bench's main
    /// table, one subnet; a router's, its links'), and without this each one ended the run
    /// there, which merged it into the index in bulk before starting the next.
    fn absorb_upto(&mut self, k: &A::Packed) {
        let Some(limit) = self.run_limit else {
            return;
        };
        if self.ascending < RUN_AFTER
            || *k < limit
            || self.run.last().is_none_or(|(last, _)| k <= last)
        {
            return;
        }
        let mut in_way = [(limit, 0u32); ABSORB_MOST + 1];
        let mut n = 0;
        for (x, s) in self.index.range(limit..=*k).take(ABSORB_MOST + 1) {
            in_way[n] = (*x, *s);
            n += 1;
        }
        // At most one taken in for every 16 keys of the run: keys in order among as many
        // stored ones (changes stepping through a table) make no load, and would cost three
        // searches each.
        if n > ABSORB_MOST || (self.run_absorbed + n) * 16 > self.run.len() {
            return;
        }
        self.run_absorbed += n;
        for &(x, s) in &in_way[..n] {
            self.index.remove(&x);
            self.run.push((x, s));
        }
        self.run_limit = self
            .index
            .range((Bound::Excluded(*k), Bound::Unbounded))
            .next()
            .map(|(x, _)| *x);
    }
    /// Ends a run that key `k` neither lands in nor extends while it is shorter than a streak:
    /// it was no load (keys in order but far apart, as a router's changes stepping through a
    /// table), so it goes into the index and the streak starts over. Without this, such keys
    /// started a run each, a search for its limit and a merge more than an insert needs.
    fn end_short_run(&mut self, k: &A::Packed) {
        if !self.run.is_empty()
            && self.run.len() < RUN_AFTER as usize
            && !self.in_run_span(k)
            && !self.extends_run(k)
        {
            self.merge_run(false);
            self.ascending = 0;
        }
    }
    /// Puts new key `k`, in the run's span or extending it, with a new slot holding `value`:
    /// at the end of the run, or (inside its span) in the index once the run is merged into
    /// it. Returns the slot.
    fn place_near_run(&mut self, k: A::Packed, value: V) -> u32 {
        let s = Self::new_slot(&mut self.slots, &mut self.free_slots, &mut self.live, value);
        Self::note_new(&mut self.last_new, &mut self.ascending, k);
        if self.extends_run(&k) {
            self.run.push((k, s));
        } else {
            self.merge_run_for(&k);
            self.index.insert(k, s);
        }
        s
    }
    /// Merges the run into the index if `k` lies within its span (so that `k` can be put in or
    /// taken out of the index): below or above the run, the index holds `k`'s place already.
    fn merge_run_for(&mut self, k: &A::Packed) {
        if self.in_run_span(k) {
            self.merge_run(false);
        }
    }
    /// Moves a run into the index (see the module docs), so that searches read the index
    /// alone, and starts the count of new keys in order over: a router does it at every commit
    /// too small to pack, so that no run outlives its change set. (A run kept across commits
    /// would grow a key a commit while single changes arrive in order, and one later change
    /// would then merge all of it into the index.)
    pub fn settle(&mut self) {
        self.merge_run(false);
        self.last_new = None;
        self.ascending = 0;
    }
    /// Moves the run into the index: in one bulk build (every node full) when the run is an
    /// eighth of the index or more, or when `packing`; else key by key. Each key of the run
    /// moves once, so either way a key costs a bounded amount.
    fn merge_run(&mut self, packing: bool) {
        if self.run.is_empty() {
            return;
        }
        if packing || self.run.len() * 8 >= self.index.len() {
            // One bulk build: `collect` gathers the entries in the run's own room (a `Vec`
            // collected from itself keeps its allocation: no fresh pages for a load's run),
            // sorts them (two sorted runs: merged in one pass) and builds the tree with
            // every node full.
            let mut all = std::mem::take(&mut self.run);
            all.extend(std::mem::take(&mut self.index));
            self.index = all.into_iter().collect();
        } else {
            self.index.extend(self.run.drain(..));
        }
        // A load's run held 16 or 32 bytes a key: its room goes (a map keeps no more than a
        // page of it).
        if self.run.capacity() > 256 {
            self.run = Vec::new();
        }
    }
    /// Takes entry `i` out of the run: the last one in a pop, another after the run moved into
    /// the index (no shifting of a long run).
    fn remove_from_run(&mut self, i: usize) {
        if i + 1 == self.run.len() {
            self.run.pop();
        } else {
            let (k, _) = self.run[i];
            self.merge_run(false);
            self.index.remove(&k);
        }
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
        let s = self.slot_of(&A::Packed::pack(*p))?;
        Some(&self.slots[s as usize])
    }
    /// The value stored at exactly `p`, mutably.
    pub fn get_mut(&mut self, p: &Prefix<A>) -> Option<&mut V> {
        let s = self.slot_of(&A::Packed::pack(*p))?;
        Some(&mut self.slots[s as usize])
    }
    /// The index of `p`'s value while it holds one. It stays `p`'s while `p` is stored (other
    /// inserts and removals, and edits of `p`'s value, do not move it): a compiled FIB keeps it
    /// to reach the value without a search, and checks it with [`PrefixMap::at`].
    pub fn index_of(&self, p: &Prefix<A>) -> Option<u32> {
        self.slot_of(&A::Packed::pack(*p))
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
        self.slot_of(&A::Packed::pack(*p)).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, p: Prefix<A>, value: V) -> Option<V> {
        self.update(p, |slot| slot.replace(value))
    }

    /// The value at `p`, created with `make` if absent.
    pub fn get_or_insert_with(&mut self, p: Prefix<A>, make: impl FnOnce() -> V) -> &mut V {
        let k = A::Packed::pack(p);
        self.absorb_upto(&k);
        self.end_short_run(&k);
        if self.in_run_span(&k) || self.extends_run(&k) {
            let s = match self.run_position(&k) {
                Some(i) => self.run[i].1,
                None => self.place_near_run(k, make()),
            };
            return &mut self.slots[s as usize];
        }
        let (s, start) = match self.index.entry(k) {
            Entry::Occupied(e) => (*e.get(), false),
            Entry::Vacant(e) => {
                let s = Self::new_slot(
                    &mut self.slots,
                    &mut self.free_slots,
                    &mut self.live,
                    make(),
                );
                let start = Self::starts_run(&mut self.last_new, &mut self.ascending, &self.run, k);
                if !start {
                    e.insert(s);
                }
                (s, start)
            }
        };
        if start {
            self.start_run(k, s);
        }
        &mut self.slots[s as usize]
    }

    /// Runs `f` on the value slot of `p` (`None` if absent) in one search: a value it puts in
    /// an absent slot is inserted, and a value it takes out is removed. A value it leaves in
    /// place keeps its index.
    pub fn update<R>(&mut self, p: Prefix<A>, f: impl FnOnce(&mut Option<V>) -> R) -> R {
        self.update_indexed(p, f).0
    }

    /// [`PrefixMap::update`], and the index of `p`'s value after it (`None`: none stored), as
    /// [`PrefixMap::index_of`] would give it.
    pub fn update_indexed<R>(
        &mut self,
        p: Prefix<A>,
        f: impl FnOnce(&mut Option<V>) -> R,
    ) -> (R, Option<u32>) {
        let k = A::Packed::pack(p);
        self.absorb_upto(&k);
        self.end_short_run(&k);
        if self.in_run_span(&k) || self.extends_run(&k) {
            // The run answers, without a search of the index.
            let Some(i) = self.run_position(&k) else {
                let mut value = None;
                let r = f(&mut value);
                let s = value.map(|v| self.place_near_run(k, v));
                return (r, s);
            };
            let s = self.run[i].1;
            let mut value = Some(std::mem::take(&mut self.slots[s as usize]));
            let r = f(&mut value);
            return match value {
                Some(v) => {
                    self.slots[s as usize] = v;
                    (r, Some(s))
                }
                None => {
                    self.remove_from_run(i);
                    self.free_slot(s);
                    (r, None)
                }
            };
        }
        let (r, at, started) = match self.index.entry(k) {
            Entry::Occupied(e) => {
                let s = *e.get();
                let mut value = Some(std::mem::take(&mut self.slots[s as usize]));
                let r = f(&mut value);
                match value {
                    Some(v) => {
                        self.slots[s as usize] = v;
                        (r, Some(s), false)
                    }
                    None => {
                        e.remove();
                        self.free_slots.push(s);
                        set_live(&mut self.live, s, false);
                        (r, None, false)
                    }
                }
            }
            Entry::Vacant(e) => {
                let mut value = None;
                let r = f(&mut value);
                let Some(v) = value else {
                    return (r, None);
                };
                let s = Self::new_slot(&mut self.slots, &mut self.free_slots, &mut self.live, v);
                let start = Self::starts_run(&mut self.last_new, &mut self.ascending, &self.run, k);
                if !start {
                    e.insert(s);
                }
                (r, Some(s), start)
            }
        };
        if let (Some(s), true) = (at, started) {
            self.start_run(k, s);
        }
        (r, at)
    }

    /// Removes the value at `p`.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<V> {
        let k = A::Packed::pack(*p);
        if let Some(i) = self.run_position(&k) {
            let s = self.run[i].1;
            self.remove_from_run(i);
            return Some(self.free_slot(s));
        }
        let s = self.index.remove(&k)?;
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
        let (from, to) = packed::covered_bounds(p);
        let lo = self.run.partition_point(|(k, _)| *k < from);
        let hi = self.run.partition_point(|(k, _)| *k <= to);
        Iter {
            map: self,
            range: self.index.range(from..=to).peekable(),
            run: self.run[lo..hi.max(lo)].iter().peekable(),
        }
    }

    /// All stored prefixes in order.
    pub fn iter(&self) -> Iter<'_, A, V> {
        Iter {
            map: self,
            range: self.index.range(..).peekable(),
            run: self.run.iter().peekable(),
        }
    }

    /// Stored prefixes from the first one `>= start` on, in order: SNMP GETNEXT is `range_from`
    /// then skip `start` itself.
    pub fn range_from(&self, start: &Prefix<A>) -> Iter<'_, A, V> {
        let k = A::Packed::pack(*start);
        let lo = self.run.partition_point(|(x, _)| *x < k);
        Iter {
            map: self,
            range: self.index.range(k..).peekable(),
            run: self.run[lo..].iter().peekable(),
        }
    }

    /// Keeps only the values for which `f` returns true; `f` may also edit them.
    pub fn retain(&mut self, mut f: impl FnMut(&Prefix<A>, &mut V) -> bool) {
        self.merge_run(false);
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
        let map = self.map;
        // The index with the run (an empty run leaves the index's answer as it is).
        let keys = IndexAndRun {
            index: &map.index,
            run: &map.run,
        };
        let (q, &s) = if itself {
            packed::longest_covering(&keys, &p)
        } else {
            packed::covering_before(&keys, &p)
        }?;
        self.from = Some((q, false));
        Some((q, &self.map.slots[s as usize]))
    }
}

/// A map's index with its run (which sits in a gap of the index: see
/// [`PrefixMap::start_run`]), as one ordered map for the covering searches.
struct IndexAndRun<'a, K, T> {
    index: &'a BTreeMap<K, T>,
    run: &'a [(K, T)],
}

impl<K: Ord + Copy, T> OrderedKeys<K, T> for IndexAndRun<'_, K, T> {
    fn last_upto(&self, bound: Bound<K>) -> Option<(&K, &T)> {
        let within = self.run.partition_point(|(k, _)| match &bound {
            Bound::Included(b) => k <= b,
            Bound::Excluded(b) => k < b,
            Bound::Unbounded => true,
        });
        let in_run = within
            .checked_sub(1)
            .map(|i| (&self.run[i].0, &self.run[i].1));
        if within < self.run.len() && in_run.is_some() {
            // The bound falls inside the run's span, where the index has no key.
            return in_run;
        }
        let in_index = self.index.last_upto(bound);
        match (in_run, in_index) {
            (Some(r), Some(i)) => Some(if r.0 > i.0 { r } else { i }),
            (r, i) => r.or(i),
        }
    }
    fn first_key(&self) -> Option<&K> {
        let run = self.run.first().map(|(k, _)| k);
        match (self.index.first_key(), run) {
            (Some(i), Some(r)) => Some(i.min(r)),
            (i, r) => i.or(r),
        }
    }
}

/// In-order iterator; see [`PrefixMap::iter`].
pub struct Iter<'a, A: Address, V> {
    map: &'a PrefixMap<A, V>,
    range: std::iter::Peekable<btree_map::Range<'a, A::Packed, u32>>,
    /// The part of the map's run in range, merged in order with the index's.
    run: std::iter::Peekable<std::slice::Iter<'a, (A::Packed, u32)>>,
}

impl<'a, A: Address, V> Iter<'a, A, V> {
    /// The next stored prefix with its value's index ([`PrefixMap::index_of`]).
    pub fn next_indexed(&mut self) -> Option<(u32, Prefix<A>, &'a V)> {
        let from_run = match (self.range.peek(), self.run.peek()) {
            (Some((i, _)), Some((r, _))) => r < *i,
            (None, r) => r.is_some(),
            (Some(_), None) => false,
        };
        let (k, s) = if from_run {
            self.run.next().map(|(k, s)| (k, *s))?
        } else {
            self.range.next().map(|(k, s)| (k, *s))?
        };
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
mod tests;
