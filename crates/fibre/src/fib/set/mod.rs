//! The FIB's own `(prefix, id)` set: what its encoding is built and patched from.
//!
//! Split by direct-pointing slot (the first [`FibFamily::DP_BITS`] bits), as the encoding is:
//! - the prefixes at most a slot long in a B-tree (`std`'s `BTreeMap`) keyed by the prefix
//!   packed into a few bytes ([`crate::packed`]), in [`Prefix`] order: few of them (39,876 of
//!   the IPv4 view's 901,899; 18 of IPv6's 160,147);
//! - the longer ones in their slot's entry of a hash map: a sorted array keyed without the
//!   slot's bits ([`FibFamily::SlotKey`]; a B-tree once the slot holds hundreds, see
//!   [`slot::SlotPrefixes`]), with the slot's cover (the longest prefix at most the slot long
//!   that covers it).
//!
//! A change of a long prefix reaches its slot in one hash probe and its neighbours in a few
//! lines read in order. A search of one B-tree of the whole view went through five or six
//! nodes, two or three cache lines each: on a change of a cold route, 11.5 of the 29
//! last-level misses of a router delete (callgrind's cache simulation). The longest prefix
//! covering a long one is in its slot or is the slot's cover
//! ([`PrefixSet::covering_shorter`]).
use super::{check_ids, FibFamily, IdOutOfRange, MAX_ID};
use crate::addr::Bits;
use crate::packed::{self, PackedPrefix};
use crate::prefix::Prefix;
use occupied::Occupied;
use slot::SlotPrefixes;
use smallvec::SmallVec;
use std::collections::{btree_map, BTreeMap, HashMap};
use std::iter::Peekable;

mod occupied;
mod slot;
#[cfg(test)]
mod tests;

/// A map from prefixes to FIB ids, ordered as [`Prefix`] orders (see the module docs).
#[derive(Clone)]
pub struct PrefixSet<A: FibFamily> {
    /// The prefixes at most [`FibFamily::DP_BITS`] long.
    short: BTreeMap<A::Packed, u32>,
    /// The slots holding longer prefixes, by slot number.
    slots: HashMap<u32, Slot<A>, foldhash::fast::RandomState>,
    /// Slot `s` is marked when it has an entry in `slots`: the slots under a short prefix,
    /// or all of them in order, without a probe per slot number or a sort (32 KiB for IPv4;
    /// for IPv6 a page of 4 KiB for each region of 2^15 slots that holds any; nothing for a
    /// set without long prefixes, as most tables but the main one are).
    occupied: Occupied,
    /// Prefixes stored, short and long.
    len: usize,
    /// No id stored is above it (the largest ever stored; a removal leaves it): a build checks
    /// the ids against [`crate::fib::MAX_ID`] without a walk of the set when it is below
    /// (a walk was 65 million instructions of the IPv4 view's load, callgrind).
    id_bound: u32,
    /// The prefix last inserted or removed, with its id now (`None`: removed): a FIB's update
    /// asks for it right after [`crate::fib::Fib::set`] stored it (the last prefix set before a
    /// publication: a route change's only one), and finds it here without a search (225
    /// instructions of an IPv4 router change, 440 of an IPv6 one, callgrind).
    last: Option<(Prefix<A>, Option<u32>)>,
}

/// A direct-pointing slot holding prefixes longer than it.
#[derive(Clone, Debug)]
struct Slot<A: FibFamily> {
    /// The length of the longest prefix covering the slot (at most the slot long);
    /// [`NO_COVER`] for none.
    cover_len: u8,
    /// That prefix's id.
    cover_id: u32,
    /// Never empty: a slot whose last long prefix goes is removed.
    prefixes: SlotPrefixes<A>,
}

impl<A: FibFamily> Slot<A> {
    fn cover(&self, slot: u32) -> Option<(Prefix<A>, &u32)> {
        (self.cover_len != NO_COVER)
            .then(|| (slot_prefix::<A>(slot, self.cover_len), &self.cover_id))
    }
}

/// [`Slot::cover_len`] when no prefix covers the slot.
const NO_COVER: u8 = u8::MAX;

impl<A: FibFamily> Default for PrefixSet<A> {
    fn default() -> Self {
        PrefixSet {
            short: BTreeMap::new(),
            slots: HashMap::default(),
            occupied: Occupied::default(),
            len: 0,
            id_bound: 0,
            last: None,
        }
    }
}

impl<A: FibFamily> std::fmt::Debug for PrefixSet<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Built from pairs in any order; a later pair for the same prefix wins. Sorted input (what
/// the router's builds give) is split without a sort's moves, the B-trees built with full
/// nodes.
impl<A: FibFamily> FromIterator<(Prefix<A>, u32)> for PrefixSet<A> {
    fn from_iter<I: IntoIterator<Item = (Prefix<A>, u32)>>(pairs: I) -> Self {
        let mut pairs: Vec<(A::Packed, u32)> = pairs
            .into_iter()
            .map(|(p, id)| (A::Packed::pack(p), id))
            .collect();
        // Stable: of equal keys the later stays later, and is the one kept.
        pairs.sort_by_key(|&(k, _)| k);
        let mut short = Vec::new();
        let mut set = PrefixSet::default();
        // One pass in order: `covers` holds the short prefixes covering the current one,
        // longest last (a trie's path), so a slot's cover is the last of them.
        let mut covers: Vec<(Prefix<A>, u32)> = Vec::new();
        let mut run: Vec<(A::SlotKey, u32)> = Vec::new();
        let mut run_slot = None;
        let mut len = 0usize;
        let mut id_bound = 0;
        let mut flush = |slot: Option<(u32, u8, u32)>, run: &mut Vec<(A::SlotKey, u32)>| {
            if let Some((slot, cover_len, cover_id)) = slot {
                // The run's capacity grew by doubling: the slot keeps only its length.
                let prefixes = SlotPrefixes::from_sorted(slot, run.to_vec());
                run.clear();
                set.put_slot(
                    slot,
                    Slot {
                        cover_len,
                        cover_id,
                        prefixes,
                    },
                );
            }
        };
        for (i, &(k, id)) in pairs.iter().enumerate() {
            if pairs.get(i + 1).is_some_and(|next| next.0 == k) {
                continue;
            }
            len += 1;
            id_bound = id_bound.max(id);
            let p = k.unpack();
            while covers.last().is_some_and(|(q, _)| !q.covers(&p)) {
                covers.pop();
            }
            if !is_long(&p) {
                covers.push((p, id));
                short.push((k, id));
                continue;
            }
            let slot = slot_of(&p);
            if run_slot.is_none_or(|(s, _, _)| s != slot) {
                flush(run_slot, &mut run);
                let (cover_len, cover_id) = covers
                    .last()
                    .map_or((NO_COVER, 0), |(q, id)| (q.len(), *id));
                run_slot = Some((slot, cover_len, cover_id));
            }
            run.push((A::slot_key(p), id));
        }
        flush(run_slot, &mut run);
        set.short = short.into_iter().collect();
        set.len = len;
        set.id_bound = id_bound;
        set
    }
}

/// Whether `p` is longer than a direct-pointing slot (it then lies inside one).
#[inline]
fn is_long<A: FibFamily>(p: &Prefix<A>) -> bool {
    p.len() as u32 > A::DP_BITS
}

/// The direct-pointing slot `p` lies in (for a prefix longer than the slot; for a shorter
/// one, the first slot under it).
#[inline]
fn slot_of<A: FibFamily>(p: &Prefix<A>) -> u32 {
    (p.bits() >> (A::WIDTH as u32 - A::DP_BITS)).low_u64() as u32
}

/// The prefix of length `len` (at most the slot long) covering `slot`.
#[inline]
fn slot_prefix<A: FibFamily>(slot: u32, len: u8) -> Prefix<A> {
    let bits = A::Bits::from_u64(u64::from(slot)) << (A::WIDTH as u32 - A::DP_BITS);
    Prefix::new(A::from_bits(bits), len)
}

impl<A: FibFamily> PrefixSet<A> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Prefixes stored.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether no prefix is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Refuses the set if an id stored is above [`crate::fib::MAX_ID`], naming the first such
    /// prefix in order; walks the set only when an id that large was ever stored.
    pub(crate) fn check_ids(&self) -> Result<(), IdOutOfRange> {
        if self.id_bound <= MAX_ID {
            return Ok(());
        }
        check_ids(self.iter().map(|(p, &id)| (p, id)))
    }
    /// The id stored for exactly `p`.
    #[inline]
    pub fn get(&self, p: &Prefix<A>) -> Option<&u32> {
        if let Some((last, id)) = &self.last {
            if last == p {
                return id.as_ref();
            }
        }
        if is_long(p) {
            self.slots.get(&slot_of(p))?.prefixes.get(&A::slot_key(*p))
        } else {
            self.short.get(&A::Packed::pack(*p))
        }
    }
    /// Asks the caches for `p`'s slot and the first line of its prefixes (a long prefix's; a
    /// short one's B-tree is not): what [`PrefixSet::insert`] and [`PrefixSet::remove`] of `p`
    /// read first. The slot's hash table entry is read now; its prefixes are prefetched.
    pub(crate) fn prefetch(&self, p: &Prefix<A>) {
        if is_long(p) {
            if let Some(s) = self.slots.get(&slot_of(p)) {
                s.prefixes.prefetch();
            }
        }
    }
    /// Stores `p -> id`, giving back the id it replaces.
    pub fn insert(&mut self, p: Prefix<A>, id: u32) -> Option<u32> {
        self.last = Some((p, Some(id)));
        self.id_bound = self.id_bound.max(id);
        let old = if is_long(&p) {
            let slot = slot_of(&p);
            if let Some(s) = self.slots.get_mut(&slot) {
                s.prefixes.insert(slot, p, id)
            } else {
                let (cover_len, cover_id) =
                    self.short_covering(&slot_prefix(slot, A::DP_BITS as u8));
                let prefixes = SlotPrefixes::from_sorted(slot, vec![(A::slot_key(p), id)]);
                let s = Slot {
                    cover_len,
                    cover_id,
                    prefixes,
                };
                self.put_slot(slot, s);
                None
            }
        } else {
            let old = self.short.insert(A::Packed::pack(p), id);
            // `p` is now the longest cover of every slot under it that had a shorter one.
            self.for_slots_under(&p, |s| {
                if s.cover_len == NO_COVER || s.cover_len <= p.len() {
                    s.cover_len = p.len();
                    s.cover_id = id;
                }
            });
            old
        };
        self.len += usize::from(old.is_none());
        old
    }
    /// Removes exactly `p`, giving back its id.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<u32> {
        self.last = Some((*p, None));
        let old = if is_long(p) {
            let slot = slot_of(p);
            let s = self.slots.get_mut(&slot)?;
            let old = s.prefixes.remove(&A::slot_key(*p))?;
            if s.prefixes.len() == 0 {
                self.slots.remove(&slot);
                self.occupied.clear(slot);
            }
            old
        } else {
            let old = self.short.remove(&A::Packed::pack(*p))?;
            // The slots `p` was the cover of fall back to what covers `p`, one answer for all.
            let (len, id) = packed::covering_before(&self.short, p)
                .map_or((NO_COVER, 0), |(q, &id)| (q.len(), id));
            self.for_slots_under(p, |s| {
                if s.cover_len == p.len() {
                    s.cover_len = len;
                    s.cover_id = id;
                }
            });
            old
        };
        self.len -= 1;
        Some(old)
    }
    /// Gives slot `slot` (not yet kept) its entry.
    fn put_slot(&mut self, slot: u32, s: Slot<A>) {
        self.slots.insert(slot, s);
        self.occupied.set(slot, 1 << A::DP_BITS);
    }
    /// Calls `f` on the entry of every slot under `p` (at most the slot long) that holds longer
    /// prefixes.
    fn for_slots_under(&mut self, p: &Prefix<A>, mut f: impl FnMut(&mut Slot<A>)) {
        for slot in self.slots_under(p) {
            f(self
                .slots
                .get_mut(&slot)
                .expect("occupied slots have entries"));
        }
    }
    /// The slots under `p` (at most the slot long) holding longer prefixes, ascending.
    fn slots_under(&self, p: &Prefix<A>) -> SmallVec<[u32; 1]> {
        let first = slot_of(p) as usize;
        let count = 1usize << (A::DP_BITS - p.len() as u32);
        self.occupied_in(first, first + count)
    }
    /// The occupied slots from `first` up to `end` (excluded), ascending.
    fn occupied_in(&self, first: usize, end: usize) -> SmallVec<[u32; 1]> {
        let mut out = SmallVec::new();
        if !self.slots.is_empty() {
            self.occupied.marked_in(first, end, &mut out);
        }
        out
    }
    /// The longest short prefix covering `p` (at most the slot long), `p` included:
    /// `(len, id)`, or [`NO_COVER`].
    fn short_covering(&self, p: &Prefix<A>) -> (u8, u32) {
        packed::longest_covering(&self.short, p).map_or((NO_COVER, 0), |(q, &id)| (q.len(), id))
    }
    /// Every `(prefix, id)`, in order.
    pub fn iter(&self) -> InOrder<'_, A> {
        let slots = self.occupied_in(0, 1 << A::DP_BITS);
        InOrder::new(self, Some(self.short.range(..)), slots)
    }
    /// The stored prefixes `p` covers (`p` itself included), in order: a covering prefix
    /// before those it covers.
    pub fn covered(&self, p: &Prefix<A>) -> InOrder<'_, A> {
        if is_long(p) {
            // Only its slot's prefixes, from `p` to its last address (one probe).
            let slot = slot_of(p);
            let bounds = (A::slot_key(*p), A::slot_key(Prefix::host(p.last())));
            let current = self
                .slots
                .get(&slot)
                .map(|s| (slot, s.prefixes.range(Some(bounds))));
            return InOrder {
                current,
                ..InOrder::new(self, None, SmallVec::new())
            };
        }
        let (from, to) = packed::covered_bounds(p);
        InOrder::new(self, Some(self.short.range(from..=to)), self.slots_under(p))
    }
    /// The longest stored prefix that covers `p` and is shorter than it.
    ///
    /// For `p` longer than a direct-pointing slot, the answer is in `p`'s slot or is the
    /// slot's cover, kept per slot (the slot's own search). Prefixes at most the
    /// slot long are covered only by such prefixes ([`packed::covering_before`]).
    pub fn covering_shorter(&self, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        if !is_long(p) {
            return packed::covering_before(&self.short, p);
        }
        let slot = slot_of(p);
        match self.slots.get(&slot) {
            Some(s) => s.prefixes.covering(slot, p).or_else(|| s.cover(slot)),
            // A slot without longer prefixes keeps no entry: its cover is searched for.
            None => packed::longest_covering(&self.short, &slot_prefix(slot, A::DP_BITS as u8)),
        }
    }
    /// The longest stored prefix covering `p`, `p` itself included.
    pub fn longest_covering(&self, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        match self.get(p) {
            Some(id) => Some((*p, id)),
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
    /// How many slots keep their prefixes in a B-tree (tests).
    #[cfg(test)]
    fn b_tree_slots(&self) -> usize {
        let many = |s: &Slot<A>| matches!(s.prefixes, SlotPrefixes::Many(_));
        self.slots.values().filter(|s| many(s)).count()
    }
    /// Checks the per-slot entries against the prefixes (tests).
    #[cfg(test)]
    fn audit(&self) {
        let mut count = self.short.len();
        for (&slot, s) in &self.slots {
            s.prefixes.audit(slot);
            count += s.prefixes.len();
            for (&k, _) in s.prefixes.range(None) {
                let p = A::from_slot_key(slot, k);
                assert!(is_long(&p) && slot_of(&p) == slot, "in its own slot");
                assert_eq!(A::slot_key(p), k, "keyed as its slot keys it");
            }
            let cover = self.short_covering(&slot_prefix(slot, A::DP_BITS as u8));
            assert_eq!((s.cover_len, s.cover_id), cover, "slot {slot}'s cover");
        }
        assert!(self.short.keys().all(|k| !is_long(&k.unpack())));
        assert_eq!(count, self.len, "counted");
        let occupied = self.occupied_in(0, 1 << A::DP_BITS);
        let mut kept: Vec<u32> = self.slots.keys().copied().collect();
        kept.sort_unstable();
        assert_eq!(occupied.to_vec(), kept, "occupied bits");
    }
}

/// The prefixes of a [`PrefixSet`] (or of a part of it), in order: the short ones and the
/// slots' merged, a slot's prefixes coming after every short prefix up to the slot's own
/// (those are before the slot or cover it) and before the rest (past the slot's addresses).
pub struct InOrder<'a, A: FibFamily> {
    set: &'a PrefixSet<A>,
    short: Option<Peekable<btree_map::Range<'a, A::Packed, u32>>>,
    slots: smallvec::IntoIter<[u32; 1]>,
    /// The next slot and its own prefix, packed.
    next_slot: Option<(u32, A::Packed)>,
    /// The slot being read, and what is left of it.
    current: Option<(u32, slot::Range<'a, A>)>,
}

impl<'a, A: FibFamily> InOrder<'a, A> {
    fn new(
        set: &'a PrefixSet<A>,
        short: Option<btree_map::Range<'a, A::Packed, u32>>,
        slots: SmallVec<[u32; 1]>,
    ) -> Self {
        let mut it = InOrder {
            set,
            short: short.map(Iterator::peekable),
            slots: slots.into_iter(),
            next_slot: None,
            current: None,
        };
        it.advance_slot();
        it
    }
    fn advance_slot(&mut self) {
        self.next_slot = self
            .slots
            .next()
            .map(|s| (s, A::Packed::pack(slot_prefix(s, A::DP_BITS as u8))));
    }

    /// [`Iterator::next`] past the end of the slot being read: the short prefixes before the
    /// next slot, then that slot. Out of line: see `next`.
    #[inline(never)]
    fn next_past_slot(&mut self) -> Option<(Prefix<A>, &'a u32)> {
        loop {
            if let Some((slot, range)) = &mut self.current {
                if let Some((&k, id)) = range.next() {
                    return Some((A::from_slot_key(*slot, k), id));
                }
            }
            self.current = None;
            if let Some(short) = &mut self.short {
                let before_slot = |k: &A::Packed| self.next_slot.is_none_or(|(_, s)| *k <= s);
                if let Some((k, id)) = short.next_if(|(k, _)| before_slot(k)) {
                    return Some((k.unpack(), id));
                }
            }
            let (slot, _) = self.next_slot?;
            let s = &self.set.slots[&slot];
            self.current = Some((slot, s.prefixes.range(None)));
            self.advance_slot();
        }
    }
}

impl<'a, A: FibFamily> Iterator for InOrder<'a, A> {
    type Item = (Prefix<A>, &'a u32);
    /// The next prefix of the slot being read; the rest out of line. With the loop in here,
    /// every call loaded the iterator's twenty-odd fields for it and saved six registers: 118
    /// instructions a prefix, 72 now (callgrind, `FIBRE_PROFILE_REPEAT=2409:8000::/20
    /// router_profile 6`: a change under which 9,916 prefixes are read in order).
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some((slot, range)) = &mut self.current {
            if let Some((&k, id)) = range.next() {
                return Some((A::from_slot_key(*slot, k), id));
            }
        }
        self.next_past_slot()
    }
}
