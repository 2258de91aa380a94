//! The prefixes of one direct-pointing slot that are longer than the slot, in prefix order.
use super::super::FibFamily;
use crate::prefix::Prefix;
use std::collections::BTreeMap;
use std::ops::Bound;

/// A slot holding more prefixes than this keeps them in a B-tree; one falling below
/// [`FEW`] goes back to an array.
const MANY: usize = 512;
/// See [`MANY`] (apart from it, so that a slot at the edge does not convert at every change).
const FEW: usize = 256;

/// Predecessors [`SlotPrefixes::covering`] walks in a B-tree before it searches by length.
const WALK: usize = 4;

/// A slot's prefixes (each longer than the slot), in prefix order, with their ids.
#[derive(Clone, Debug)]
pub(super) enum SlotPrefixes<A: FibFamily> {
    /// A sorted array, searched from its start: nearly every slot (the IPv4 view's hold at
    /// most 126 prefixes, 7 at the median, 8 bytes each). A change reads the lines up to its
    /// prefix and moves those after it: every line of the slot once, in order, which the
    /// hardware prefetches (a binary search's reads each wait for the last).
    Few(Vec<(A::SlotKey, u32)>),
    /// A B-tree past [`MANY`]: an IPv6 slot of /48s holds thousands (11,690 in the view), and
    /// an insert into an array would move up to 280 KB.
    Many(Box<Many<A>>),
}

/// A large slot: its B-tree, and the lengths it has held.
#[derive(Clone, Debug)]
pub(super) struct Many<A: FibFamily> {
    map: BTreeMap<A::SlotKey, u32>,
    /// Bit `l - DP_BITS - 1` is set if a prefix of length `l` was stored since the slot went
    /// to a B-tree (never cleared before it goes back: a length whose last prefix went costs
    /// a probe). The lengths [`SlotPrefixes::covering`] probes.
    lengths: u128,
}

impl<A: FibFamily> Many<A> {
    fn add_length(&mut self, len: u8) {
        self.lengths |= 1 << (len as u32 - A::DP_BITS - 1);
    }
    /// Of [`Many::lengths`], the longest of at most `most`.
    fn longest_upto(&self, most: u8) -> Option<u8> {
        // Lengths DP_BITS + 1 ..= most: bits 0 .. most - DP_BITS.
        let keep = (most as u32).saturating_sub(A::DP_BITS);
        let held = if keep >= 128 {
            self.lengths
        } else {
            self.lengths & ((1u128 << keep) - 1)
        };
        let bit = 127u32.checked_sub(held.leading_zeros())?;
        Some((bit + A::DP_BITS + 1) as u8)
    }
}

/// Arrays up to this long are searched from the start, longer ones by halving.
const SCANNED: usize = 64;

/// Where `k` is or would go in the sorted `v`.
#[inline]
fn position<K: Ord, T>(v: &[(K, T)], k: &K) -> Result<usize, usize> {
    let i = if v.len() <= SCANNED {
        v.iter().position(|(x, _)| x >= k).unwrap_or(v.len())
    } else {
        v.partition_point(|(x, _)| x < k)
    };
    match v.get(i) {
        Some((x, _)) if x == k => Ok(i),
        _ => Err(i),
    }
}

impl<A: FibFamily> SlotPrefixes<A> {
    /// From pairs sorted by key and distinct, all in slot `slot`.
    pub(super) fn from_sorted(slot: u32, pairs: Vec<(A::SlotKey, u32)>) -> Self {
        if pairs.len() <= MANY {
            return SlotPrefixes::Few(pairs);
        }
        let mut many = Many {
            map: BTreeMap::new(),
            lengths: 0,
        };
        for &(k, _) in &pairs {
            many.add_length(A::from_slot_key(slot, k).len());
        }
        many.map = pairs.into_iter().collect();
        SlotPrefixes::Many(Box::new(many))
    }

    /// Prefetches the first line a search reads: the array's first, or a B-tree's header (its
    /// root pointer: the root node itself is one read further, which `BTreeMap` does not give
    /// without that read).
    pub(super) fn prefetch(&self) {
        let first: *const u8 = match self {
            SlotPrefixes::Few(v) => v.as_ptr().cast(),
            SlotPrefixes::Many(m) => (&**m as *const Many<A>).cast(),
        };
        crate::fib::prefetch_line(first);
    }

    pub(super) fn len(&self) -> usize {
        match self {
            SlotPrefixes::Few(v) => v.len(),
            SlotPrefixes::Many(m) => m.map.len(),
        }
    }

    #[inline]
    pub(super) fn get(&self, k: &A::SlotKey) -> Option<&u32> {
        match self {
            SlotPrefixes::Few(v) => position(v, k).ok().map(|i| &v[i].1),
            SlotPrefixes::Many(m) => m.map.get(k),
        }
    }

    /// Stores `p -> id` (`p` in slot `slot`), giving back the id it replaces.
    pub(super) fn insert(&mut self, slot: u32, p: Prefix<A>, id: u32) -> Option<u32> {
        let k = A::slot_key(p);
        match self {
            SlotPrefixes::Few(v) => match position(v, &k) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, id)),
                Err(i) => {
                    v.insert(i, (k, id));
                    if v.len() > MANY {
                        *self = Self::from_sorted(slot, std::mem::take(v));
                    }
                    None
                }
            },
            SlotPrefixes::Many(m) => {
                m.add_length(p.len());
                m.map.insert(k, id)
            }
        }
    }

    /// Removes the prefix keyed `k`, giving back its id.
    pub(super) fn remove(&mut self, k: &A::SlotKey) -> Option<u32> {
        match self {
            SlotPrefixes::Few(v) => {
                let i = position(v, k).ok()?;
                Some(v.remove(i).1)
            }
            SlotPrefixes::Many(m) => {
                let old = m.map.remove(k)?;
                if m.map.len() < FEW {
                    *self = SlotPrefixes::Few(std::mem::take(&mut m.map).into_iter().collect());
                }
                Some(old)
            }
        }
    }

    /// The entries from `from` to `to` (both included; all when `None`), in order.
    pub(super) fn range(&self, bounds: Option<(A::SlotKey, A::SlotKey)>) -> Range<'_, A> {
        match self {
            SlotPrefixes::Few(v) => {
                let v = match bounds {
                    None => &v[..],
                    Some((from, to)) => {
                        let start = position(v, &from).unwrap_or_else(|i| i);
                        let end = start + v[start..].partition_point(|(x, _)| *x <= to);
                        &v[start..end]
                    }
                };
                Range::Few(v.iter())
            }
            // One search, from `from` on, stopping past `to` by comparing keys: a range of two
            // bounds searches both (an update asks this of every region it re-encodes).
            SlotPrefixes::Many(m) => match bounds {
                None => Range::Many(m.map.range(..), None),
                Some((from, to)) => Range::Many(m.map.range(from..), Some(to)),
            },
        }
    }

    /// The longest prefix here that covers `p` and is shorter than it (`p` lies in slot
    /// `slot`).
    ///
    /// The prefixes covering `p` come before it, the longer later: the nearest predecessor
    /// covering `p` is the answer. A predecessor `q` that does not cover `p` bounds the rest:
    /// whatever covers `p` and comes before `q` covers `q` too, so is no longer than what the
    /// two share. An array goes on from that common prefix (a search each step, one or two on
    /// real tables, as [`crate::packed::covering_before`]). A B-tree is walked back a few steps
    /// (a sibling's cover is often among them), then searched for the predecessor of `p` cut to
    /// the longest length the slot has held up to the bound (the cut itself included), which
    /// lowers the bound as a
    /// walked predecessor does: a slot of IPv6 /48s, whose shared bits shorten a step at a
    /// time, would otherwise take a descent per step. (Probing each held length for `p` cut to
    /// it, without the bound from what the search found, took three times the searches on the
    /// IPv6 view: 10.3 a query against 3.5, by a throwaway counter. What a command reproduces:
    /// an IPv6 router change's 14,784 -> 14,518 instructions, `valgrind --tool=callgrind
    /// --toggle-collect='router_profile::updates*' router_profile 6 20000` / 4,000 changes.)
    pub(super) fn covering(&self, slot: u32, p: &Prefix<A>) -> Option<(Prefix<A>, &u32)> {
        let k = A::slot_key(*p);
        let m = match self {
            SlotPrefixes::Few(v) => {
                let mut end = position(v, &k).unwrap_or_else(|i| i);
                loop {
                    let (q, id) = v[..end].last()?;
                    let q = A::from_slot_key(slot, *q);
                    if q.covers(p) {
                        return Some((q, id));
                    }
                    let common = q.common(p);
                    if common.len() as u32 <= A::DP_BITS {
                        // Nothing in the slot covers `q` and `p` both: the slot's cover does.
                        return None;
                    }
                    end = match position(&v[..end], &A::slot_key(common)) {
                        Ok(i) => i + 1,
                        Err(i) => i,
                    };
                }
            }
            SlotPrefixes::Many(m) => m,
        };
        let inside = m.map.range((Bound::Unbounded, Bound::Excluded(k))).rev();
        let mut most = p.len() - 1;
        let mut walked = 0;
        for (q, id) in inside.take(WALK) {
            walked += 1;
            let q = A::from_slot_key(slot, *q);
            // `q` comes before `p`, so is not `p`: covering it, it is shorter.
            if q.covers(p) {
                return Some((q, id));
            }
            most = most.min(q.common(p).len());
        }
        if walked < WALK {
            return None;
        }
        // Each probe asks for the predecessor of `p` cut to a length the slot holds: it is
        // the answer if it covers `p`, and otherwise bounds the rest as above.
        loop {
            let len = m.longest_upto(most)?;
            let cut = A::slot_key(Prefix::new(p.addr(), len));
            let (q, id) = m.map.range(..=cut).next_back()?;
            let q = A::from_slot_key(slot, *q);
            if q.covers(p) {
                return Some((q, id));
            }
            most = (len - 1).min(q.common(p).len());
            if most as u32 <= A::DP_BITS {
                return None;
            }
        }
    }

    /// Checks order, and that the B-tree's length marks cover every length held (tests).
    #[cfg(test)]
    pub(super) fn audit(&self, slot: u32) {
        let keys: Vec<A::SlotKey> = self.range(None).map(|(k, _)| *k).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        assert!(
            !keys.is_empty(),
            "a slot without longer prefixes is not kept"
        );
        if let SlotPrefixes::Many(m) = self {
            for k in keys {
                let len = A::from_slot_key(slot, k).len();
                assert!(m.lengths & (1 << (len as u32 - A::DP_BITS - 1)) != 0);
            }
        }
    }
}

/// [`SlotPrefixes::range`]'s entries.
pub(super) enum Range<'a, A: FibFamily> {
    Few(std::slice::Iter<'a, (A::SlotKey, u32)>),
    /// The entries from the first bound on, and the last bound.
    Many(
        std::collections::btree_map::Range<'a, A::SlotKey, u32>,
        Option<A::SlotKey>,
    ),
}

impl<'a, A: FibFamily> Iterator for Range<'a, A> {
    type Item = (&'a A::SlotKey, &'a u32);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Range::Few(it) => it.next().map(|(k, id)| (k, id)),
            Range::Many(it, to) => it.next().filter(|(k, _)| to.is_none_or(|to| **k <= to)),
        }
    }
}
