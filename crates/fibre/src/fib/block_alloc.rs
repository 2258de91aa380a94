//! The writer's allocator of cells in one arena ([`super::arena::RawArena`]): blocks of cells
//! handed out and given back, merged with their free neighbours so memory does not creep.
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// The writer's bookkeeping of one arena: a bump pointer and free blocks, merged with their free
/// neighbours.
///
/// Most blocks are one node's children or leaves (at most 64 cells), a subtree's top cell, or a
/// direct-pointing chunk; a subtree encoded afresh is placed as one block of its nodes and one of
/// its leaves, and given back in the blocks that still join up when it is retired (a few, or
/// one per node once changes inside it replaced parts). A freed block is merged with the free blocks on
/// either side of it (and given back to the bump pointer when it ends there), so freed cells
/// come back as long runs and the high-water mark does not creep: before issue 15 blocks were
/// never merged, the arenas' spare eighth filled up after some 40,000 changes of the full view,
/// and the compaction that followed (a full rebuild) stalled one change for 48 ms.
///
/// - A request of at most 64 cells takes the shortest free block at least as long from the
///   short lists (a bitmap finds it in one instruction), splitting it; the lists are checked
///   lazily against the map of free blocks (a merged block leaves a stale entry behind).
/// - A longer request, or a short one no short block fits, takes the best fit among the long
///   free blocks (ordered by length), then the bump pointer.
/// - A short block freed is kept by length, unmerged, and the next request of that length takes
///   it back first, the last freed first (so are long blocks of one length: chunks, or a
///   retired subtree's joined blocks), as an
///   allocator's per-size caches (glibc's tcache and fastbins). Such blocks are merged some at
///   a time, the oldest of each length in turn: [`OVERFLOW_MERGE`] when they pass
///   [`QUICK_CELLS`] cells, [`MERGE_STEP`] before the bump pointer would grow, all of them
///   before the arena says it is full. A block freed at the bump pointer goes back to it at once.
/// - When the arena is full the FIB is rebuilt into fresh arenas (compaction).
#[derive(Default, Debug)]
pub(crate) struct BlockAlloc {
    top: u32,
    cap: u32,
    live: usize,
    /// Free blocks: offset -> length.
    starts: OffsetMap,
    /// Free blocks: end (offset + length) -> offset.
    ends: OffsetMap,
    /// Candidate free blocks of length 1..=SMALL, by length (checked against `starts` when
    /// taken); `small_map` bit `n` says list `n` is non-empty.
    small: Vec<Vec<u32>>,
    small_map: u128,
    /// Entries in `small`, stale ones included (they are purged when they outnumber the rest).
    small_entries: usize,
    /// Free blocks longer than SMALL, as (length, offset).
    large: BTreeSet<(u32, u32)>,
    /// Blocks freed and not merged yet, by length: the next request of that length takes one
    /// back with no bookkeeping at all (see [`BlockAlloc::alloc`]). List `n <= SMALL` holds
    /// blocks `n` long; the last, `LONG`, blocks `quick_long_len` long (the chunk arena's
    /// blocks are all one chunk long; in the others, the length of the first long block freed
    /// while the list was empty, a retired subtree's). Each list is taken from at the back, merged from the
    /// front; `quick_map` bit `i` says list `i` is non-empty.
    quick: Vec<VecDeque<u32>>,
    quick_map: u128,
    quick_long_len: u32,
    /// Cells in `quick`.
    quick_cells: usize,
    /// The list the next bounded merge starts from.
    merge_cursor: u32,
}

/// The list of kept blocks longer than [`SMALL`].
const LONG: u32 = SMALL + 1;

/// Longest block length kept in the split-able lists (a node has at most 64 children or leaves).
const SMALL: u32 = 64;

/// Cells kept in freed blocks before a free merges a burst of them (a few changes' worth; eight
/// IPv4 chunks). A soft limit: a burst merges blocks, not cells, so the kept cells can pass it
/// by about one long block.
const QUICK_CELLS: usize = 1 << 12;

/// Blocks kept unmerged that are merged, the oldest of each length in turn, when they pass
/// [`QUICK_CELLS`]. Merging them all (some 850 blocks, four hash map operations each) stalled
/// one change in 1,000 for 50-300 µs (84 times in one run of `router_profile 6 200000`, some
/// 86,500 changes) and set the router's p99.9 (issue 15). Merging one block
/// per free instead cost 4% of the median change and 2.5% of the mean: a burst finds the hash
/// maps' lines it just touched. 64 gave the best mean; 256 brought the stalls back (router
/// p99.9 for IPv6 20-22 µs against 14-15). All from `router_profile 6 200000`, three pairs.
const OVERFLOW_MERGE: usize = 64;

/// Blocks kept unmerged that are merged before the bump pointer grows. Two cost the fewest
/// instructions per router change (17,365 for IPv6, against 17,534 for 8: blocks merged early
/// are not there to be taken back; callgrind on `router_profile 6 20000`,
/// `--toggle-collect='router_profile::updates*'`). The arenas' high-water marks did not creep
/// over 400,000 FIB updates of the full views (IPv4's leaves: 998,420 cells after 80,000,
/// 1,013,834 after 400,000, with 994,470 in use; `router_profile 4 1000000` with a throwaway
/// print of `top` and `live`).
const MERGE_STEP: usize = 2;

/// One multiply: cell offsets are small distinct integers, and the map's writer runs on every
/// update (the default hasher costs more than the rest of a small allocation).
#[derive(Default, Clone, Copy)]
struct OffsetHasher(u64);

impl Hasher for OffsetHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Free blocks by one of their ends, in [`SHARDS`] hash maps chosen by the offset.
///
/// A hash map rehashes all at once, and not only when it grows: removals leave tombstones,
/// and once those use up the spare room the map rehashes in place. In one run of
/// `router_profile 6 200000` (some 86,500 changes), each insert timed by a throwaway patch,
/// one map per end took 15-105 µs inside a change six times (growing past 3,500 and 6,700
/// entries, and in place at 5,700); sixteen shards fill evenly and rehash one at a time, in
/// different changes, each a sixteenth as long: at most 3 µs. The router's IPv6 p99.9 went
/// from 19.1-24.3 to 18.6-19.4 µs, its median level (three runs each of `fibre bench
/// --scenarios full-view --sizes 1000000 --engines none --updates 20000 --runs 1`).
#[derive(Default, Debug)]
struct OffsetMap {
    shards: [HashMap<u32, u32, BuildHasherDefault<OffsetHasher>>; SHARDS],
}

const SHARDS: usize = 16;

impl OffsetMap {
    /// The shard of `key`: other bits than the ones the maps hash with (a different
    /// multiplier's top bits), so each shard's keys still spread over its map.
    fn shard(key: u32) -> usize {
        ((u64::from(key.wrapping_mul(0x85EB_CA6B)) * SHARDS as u64) >> 32) as usize
    }
    fn get(&self, key: &u32) -> Option<&u32> {
        self.shards[Self::shard(*key)].get(key)
    }
    fn insert(&mut self, key: u32, value: u32) {
        self.shards[Self::shard(key)].insert(key, value);
    }
    fn remove(&mut self, key: &u32) {
        self.shards[Self::shard(*key)].remove(key);
    }
    fn len(&self) -> usize {
        self.shards.iter().map(HashMap::len).sum()
    }
    fn iter(&self) -> impl Iterator<Item = (&u32, &u32)> + '_ {
        self.shards.iter().flatten()
    }
}

impl BlockAlloc {
    pub(crate) fn new(top: u32, cap: usize) -> Self {
        BlockAlloc {
            top,
            cap: cap.min(u32::MAX as usize) as u32,
            live: top as usize,
            small: vec![Vec::new(); SMALL as usize + 1],
            quick: vec![VecDeque::new(); LONG as usize + 1],
            ..Default::default()
        }
    }
    /// A block of `len` cells (`len > 0`), or `None` when the arena is full.
    ///
    /// A short block freed earlier with the same length comes back first, unmerged: an update
    /// frees the blocks of the nodes it copied and allocates their copies, mostly of the same
    /// lengths, and the merging bookkeeping (four to eight hash map operations a block) was an
    /// eighth of a route change (callgrind). The oldest blocks kept so are merged a few at a
    /// time before the bump pointer grows, and all of them before the arena says it is full.
    pub(crate) fn alloc(&mut self, len: u32) -> Option<u32> {
        debug_assert!(len > 0);
        if let Some(list) = self.quick_list(len) {
            if let Some(off) = self.quick[list as usize].pop_back() {
                self.quick_taken(list, len);
                self.live += len as usize;
                return Some(off);
            }
        }
        if let Some(off) = self.alloc_merged(len) {
            return Some(off);
        }
        if self.quick_cells > 0 {
            self.merge_some(MERGE_STEP);
            if let Some(off) = self.alloc_merged(len) {
                return Some(off);
            }
        }
        if let Some(off) = self.bump(len) {
            return Some(off);
        }
        if self.quick_cells == 0 {
            return None;
        }
        // Merging can give cells back to the bump pointer (a kept block just below it).
        self.merge_quick();
        self.alloc_merged(len).or_else(|| self.bump(len))
    }
    /// The list of kept blocks `len` long, if blocks of that length are kept.
    fn quick_list(&self, len: u32) -> Option<u32> {
        if len <= SMALL {
            Some(len)
        } else if len == self.quick_long_len {
            Some(LONG)
        } else {
            None
        }
    }
    /// Accounts for a block `len` long just taken out of list `list`.
    fn quick_taken(&mut self, list: u32, len: u32) {
        self.quick_cells -= len as usize;
        if self.quick[list as usize].is_empty() {
            self.quick_map &= !(1 << list);
        }
    }
    /// A block from the merged free blocks, if one is long enough.
    fn alloc_merged(&mut self, len: u32) -> Option<u32> {
        if len <= SMALL {
            loop {
                // The shortest non-empty list of blocks at least `len` long.
                let fits = self.small_map & (u128::MAX << len);
                if fits == 0 {
                    break;
                }
                let have = fits.trailing_zeros();
                let off = self.pop_small(have);
                if self.starts.get(&off) == Some(&have) {
                    return Some(self.take(off, have, len));
                }
            }
        }
        if let Some(&(have, off)) = self.large.range((len, 0)..).next() {
            self.large.remove(&(have, off));
            return Some(self.take(off, have, len));
        }
        None
    }
    /// A block from the bump pointer, if the arena has room.
    fn bump(&mut self, len: u32) -> Option<u32> {
        let end = self.top.checked_add(len)?;
        if end > self.cap {
            return None;
        }
        let off = self.top;
        self.top = end;
        self.live += len as usize;
        Some(off)
    }
    /// Hands out the first `len` cells of the free block `off` (`have` long, already out of the
    /// length lists); the rest stays free. Its right neighbour is in use or a block kept unmerged
    /// (merged free neighbours are one block), so the rest needs no merging now.
    fn take(&mut self, off: u32, have: u32, len: u32) -> u32 {
        self.starts.remove(&off);
        self.ends.remove(&(off + have));
        if have > len {
            self.put(off + len, have - len);
        }
        self.live += len as usize;
        off
    }
    /// Gives back the block `off` (`len` long): a short one, or a long one as long as the long
    /// ones kept (any long one when none is kept), is kept for the next request of that length
    /// and merged later (in a burst here once the kept cells pass [`QUICK_CELLS`], or by
    /// [`BlockAlloc::alloc`]); another long one is merged with its free neighbours now.
    pub(crate) fn free(&mut self, off: u32, len: u32) {
        if len == 0 {
            return;
        }
        self.live -= len as usize;
        if off + len == self.top {
            // Back to the bump pointer at once (with the free blocks before it).
            return self.merge_free(off, len);
        }
        if len > SMALL && self.quick[LONG as usize].is_empty() {
            self.quick_long_len = len;
        }
        let Some(list) = self.quick_list(len) else {
            return self.merge_free(off, len);
        };
        self.quick[list as usize].push_back(off);
        self.quick_map |= 1 << list;
        self.quick_cells += len as usize;
        if self.quick_cells > QUICK_CELLS {
            self.merge_some(OVERFLOW_MERGE);
        }
    }
    /// Merges the oldest block of the non-empty list `list`.
    fn merge_oldest(&mut self, list: u32) {
        let off = self.quick[list as usize]
            .pop_front()
            .expect("the map says non-empty");
        let len = if list == LONG {
            self.quick_long_len
        } else {
            list
        };
        self.quick_taken(list, len);
        self.merge_free(off, len);
    }
    /// Merges up to `budget` kept blocks, the oldest of each list, the lists in turn.
    fn merge_some(&mut self, budget: usize) {
        for _ in 0..budget {
            if self.quick_map == 0 {
                return;
            }
            let after = self.quick_map & (u128::MAX << self.merge_cursor);
            let list = if after != 0 { after } else { self.quick_map }.trailing_zeros();
            self.merge_cursor = (list + 1) % (LONG + 1);
            self.merge_oldest(list);
        }
    }
    /// Merges every block kept unmerged ([`BlockAlloc::alloc`]) into the free blocks.
    fn merge_quick(&mut self) {
        self.merge_some(usize::MAX);
        debug_assert_eq!(self.quick_cells, 0);
    }
    /// Frees a block (already out of `live`) into the merged free blocks.
    fn merge_free(&mut self, off: u32, len: u32) {
        let (mut off, mut len) = (off, len);
        if let Some(left) = self.ends.get(&off).copied() {
            self.unlink(left, off - left);
            len += off - left;
            off = left;
        }
        if let Some(right) = self.starts.get(&(off + len)).copied() {
            self.unlink(off + len, right);
            len += right;
        }
        if off + len == self.top {
            self.top = off;
        } else {
            self.put(off, len);
        }
    }
    /// Takes the free block `off` (`len` long) out of the bookkeeping (a short one's list
    /// entry goes stale).
    fn unlink(&mut self, off: u32, len: u32) {
        self.starts.remove(&off);
        self.ends.remove(&(off + len));
        if len > SMALL {
            self.large.remove(&(len, off));
        }
    }
    fn put(&mut self, off: u32, len: u32) {
        self.starts.insert(off, len);
        self.ends.insert(off + len, off);
        if len > SMALL {
            self.large.insert((len, off));
            return;
        }
        if self.small_entries > 2 * self.starts.len() + 1024 {
            self.purge_small();
        }
        self.small[len as usize].push(off);
        self.small_map |= 1 << len;
        self.small_entries += 1;
    }
    fn pop_small(&mut self, len: u32) -> u32 {
        let list = &mut self.small[len as usize];
        let off = list.pop().expect("bitmap says non-empty");
        if list.is_empty() {
            self.small_map &= !(1 << len);
        }
        self.small_entries -= 1;
        off
    }
    /// Rebuilds the short lists from the free blocks, dropping stale entries.
    fn purge_small(&mut self) {
        for list in &mut self.small {
            list.clear();
        }
        self.small_map = 0;
        self.small_entries = 0;
        for (&off, &len) in self.starts.iter() {
            if len <= SMALL {
                self.small[len as usize].push(off);
                self.small_map |= 1 << len;
                self.small_entries += 1;
            }
        }
    }
    /// Cells in blocks that are handed out (or retired and not yet reclaimed).
    pub(crate) fn live(&self) -> usize {
        self.live
    }
    /// Cells below the bump pointer: the high-water mark.
    pub(crate) fn top(&self) -> u32 {
        self.top
    }
    /// Cells past the bump pointer that the arena can still hand out.
    pub(crate) fn headroom(&self) -> usize {
        (self.cap - self.top) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_cells_serve_other_lengths() {
        let mut a = BlockAlloc::new(0, 100);
        let x = a.alloc(10).unwrap();
        let y = a.alloc(90).unwrap();
        assert_eq!((x, y), (0, 10));
        assert_eq!(a.alloc(1), None, "full");
        a.free(x, 10);
        // Split: 3 then 7 from the freed 10, nothing from the bump pointer.
        assert_eq!(a.alloc(3), Some(0));
        assert_eq!(a.alloc(7), Some(3));
        assert_eq!(a.alloc(1), None);
        assert_eq!(a.live(), 100);
        a.free(y, 90);
        assert_eq!(
            a.top(),
            10,
            "a block freed at the top goes back to the bump pointer"
        );
        assert_eq!(a.alloc(90), Some(10));
    }

    /// Neighbours merge: blocks freed in any order come back as one run, so a long request
    /// fits where short ones were, and the high-water mark stays put. (The arena is full: the
    /// blocks kept unmerged are all merged before it says so.)
    #[test]
    fn free_neighbours_merge() {
        let mut a = BlockAlloc::new(0, 201);
        let blocks: Vec<u32> = (0..10).map(|_| a.alloc(20).unwrap()).collect();
        let _guard = a.alloc(1).unwrap(); // keeps the run off the bump pointer
        for &i in &[3usize, 1, 2, 5, 4] {
            a.free(blocks[i], 20);
        }
        assert_eq!(a.alloc(100), Some(20), "blocks 1..=5 are one run of 100");
        assert_eq!(a.top(), 201);
        a.free(20, 100);
        assert_eq!(a.alloc(64), Some(20), "a short request splits the long run");
        assert_eq!(a.alloc(36), Some(84), "and the rest serves the next");
        assert_eq!(a.top(), 201);
    }

    /// A freed block comes back to the next request of its length, short or long (a chunk),
    /// unmerged; blocks kept so merge before the bump pointer would grow, and once they pass
    /// [`QUICK_CELLS`].
    #[test]
    fn freed_blocks_serve_their_length_first() {
        let mut a = BlockAlloc::new(0, 100_000);
        let short = a.alloc(20).unwrap();
        let chunk = a.alloc(512).unwrap();
        let _guard = a.alloc(1).unwrap();
        a.free(short, 20);
        a.free(chunk, 512);
        assert_eq!(a.live(), 1);
        assert_eq!(a.alloc(512), Some(chunk));
        assert_eq!(a.alloc(20), Some(short));
        // Two neighbours kept unmerged serve a longer request once merged, not the bump pointer
        // (`MERGE_STEP` merges two before it grows).
        let (x, y) = (a.alloc(30).unwrap(), a.alloc(30).unwrap());
        let _guard = a.alloc(1).unwrap();
        let top = a.top();
        a.free(x, 30);
        a.free(y, 30);
        assert_eq!(a.alloc(60), Some(x));
        assert_eq!(a.top(), top);
        // Kept chunks never pass the limit: past it a burst merges them (all, here: there are
        // never more than nine).
        let chunks: Vec<u32> = (0..20).map(|_| a.alloc(512).unwrap()).collect();
        let _guard = a.alloc(1).unwrap();
        let top = a.top();
        for &c in &chunks {
            a.free(c, 512);
            assert!(a.quick_cells <= QUICK_CELLS, "{} cells kept", a.quick_cells);
        }
        // A request longer than a chunk takes the merged run, not the bump pointer (the last two
        // chunks were still kept: `MERGE_STEP` merges them).
        assert_eq!(a.alloc(20 * 512), Some(chunks[0]));
        assert_eq!(a.top(), top);
    }

    /// Past the limit, a free merges a bounded burst of kept blocks, not all of them (merging
    /// some 850 at once stalled a route change for up to 300 µs), and the oldest first.
    #[test]
    fn a_free_past_the_limit_merges_a_bounded_burst() {
        let mut a = BlockAlloc::new(0, 100_000);
        let ones: Vec<u32> = (0..2 * QUICK_CELLS).map(|_| a.alloc(1).unwrap()).collect();
        let _guard = a.alloc(1).unwrap();
        for (i, &b) in ones.iter().enumerate() {
            a.free(b, 1);
            let kept = a.quick_cells;
            assert!(kept <= QUICK_CELLS, "free {i}: {kept} cells kept");
            assert!(
                kept + OVERFLOW_MERGE >= QUICK_CELLS.min(i + 1),
                "free {i}: {kept} kept"
            );
        }
        // The oldest were merged, into one run; the newest is taken back first.
        let merged = (ones.len() - a.quick_cells) as u32;
        assert_eq!(a.starts.get(&ones[0]), Some(&merged));
        assert_eq!(a.alloc(1), Some(ones[ones.len() - 1]));
    }

    /// A bounded merge takes the oldest kept block of each length in turn, the long list among
    /// them, and goes on where the last one stopped; the long length kept follows the blocks
    /// freed once the long list is empty.
    #[test]
    fn merges_take_the_oldest_of_each_length_in_turn() {
        let mut a = BlockAlloc::new(0, 10_000);
        // Each block with a cell in use after it, so that none merges with another.
        let mut apart = |len| {
            let b = a.alloc(len).unwrap();
            a.alloc(1).unwrap();
            b
        };
        let twos: Vec<u32> = (0..3).map(|_| apart(2)).collect();
        let fives: Vec<u32> = (0..3).map(|_| apart(5)).collect();
        let longs: Vec<u32> = (0..2).map(|_| apart(100)).collect();
        for (blocks, len) in [(&twos, 2), (&fives, 5), (&longs, 100)] {
            for &b in blocks {
                a.free(b, len);
            }
        }
        let merged = |a: &BlockAlloc, b: u32| a.starts.get(&b).copied();
        a.merge_some(3);
        assert_eq!(merged(&a, twos[0]), Some(2));
        assert_eq!(merged(&a, fives[0]), Some(5));
        assert_eq!(merged(&a, longs[0]), Some(100));
        assert_eq!(merged(&a, twos[1]), None);
        a.merge_some(2);
        assert_eq!(
            merged(&a, twos[1]),
            Some(2),
            "past the long list, back to the first"
        );
        assert_eq!(merged(&a, fives[1]), Some(5));
        assert_eq!(merged(&a, longs[1]), None);
        assert_eq!(
            a.alloc(100),
            Some(longs[1]),
            "the kept long block, newest first"
        );
        assert_eq!(a.alloc(2), Some(twos[2]));
        // The long list is empty: the next long block freed sets the long length.
        let b = a.alloc(300).unwrap();
        a.alloc(300).unwrap(); // keeps `b` off the bump pointer
        a.free(b, 300);
        assert_eq!(a.quick_long_len, 300);
        assert_eq!(a.alloc(300), Some(b));
    }

    /// Random allocations and frees (at most `max_held` blocks held) in an arena of `cap` cells,
    /// against a model of the cells in use: no cell is handed out twice, every freed cell comes
    /// back (all merge into the bump pointer at the end), and a request is refused only when no
    /// run of that many free cells is left. Returns the high-water mark before the end and the
    /// requests refused.
    fn churn_against_a_model(cap: u32, max_held: usize, steps: usize) -> (u32, usize) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut a = BlockAlloc::new(0, cap as usize);
        let mut used = vec![false; cap as usize];
        let mut held: Vec<(u32, u32)> = Vec::new();
        let mut refused = 0;
        for step in 0..steps {
            if held.len() < max_held && (held.is_empty() || rng.gen_bool(0.5)) {
                let len = if rng.gen_bool(0.05) {
                    rng.gen_range(65..600)
                } else {
                    rng.gen_range(1..=64)
                };
                let Some(off) = a.alloc(len) else {
                    let run = used.split(|&u| u).map(<[bool]>::len).max().unwrap_or(0);
                    assert!(
                        run < len as usize,
                        "step {step}: {len} refused, {run} free in a run"
                    );
                    refused += 1;
                    continue;
                };
                for c in off..off + len {
                    assert!(!used[c as usize], "step {step}: cell {c} handed out twice");
                    used[c as usize] = true;
                }
                held.push((off, len));
            } else {
                let (off, len) = held.swap_remove(rng.gen_range(0..held.len()));
                for c in off..off + len {
                    used[c as usize] = false;
                }
                a.free(off, len);
            }
            let live: usize = held.iter().map(|b| b.1 as usize).sum();
            assert_eq!(a.live(), live);
        }
        let mark = a.top();
        for (off, len) in held.drain(..) {
            a.free(off, len);
        }
        a.merge_quick();
        assert_eq!(
            a.top(),
            0,
            "everything freed merges back into the bump pointer"
        );
        assert!(a.starts.len() == 0 && a.large.is_empty());
        (mark, refused)
    }

    /// In a roomy arena the high-water mark never exceeds the peak of live cells by more than
    /// the fragmentation a 64-cell request can meet.
    #[test]
    fn allocations_match_a_model_of_cells() {
        let (mark, refused) = churn_against_a_model(1 << 20, 2000, 200_000);
        // At most 2000 blocks of at most 600 cells are held at once (under 1.2M cells at the
        // worst, about 70,000 on average): the mark stays within a few times that.
        assert!(mark < 400_000, "high-water mark {mark}");
        assert_eq!(refused, 0);
    }

    /// In a tight arena, requests are refused (the FIB then compacts) only when nothing free,
    /// kept blocks merged, could serve them.
    #[test]
    fn a_full_arena_refuses_only_what_no_free_run_holds() {
        let (_, refused) = churn_against_a_model(8_192, 400, 60_000);
        assert!(
            refused > 0,
            "the arena never filled: the test proves nothing"
        );
    }

    /// Merging the kept blocks of a full arena can give cells back to the bump pointer: the
    /// request is then served from there, not refused.
    #[test]
    fn merging_on_a_full_arena_can_give_cells_back_to_the_bump_pointer() {
        let mut a = BlockAlloc::new(0, 100);
        let ones: Vec<u32> = (0..5).map(|_| a.alloc(1).unwrap()).collect();
        let rest = a.alloc(95).unwrap();
        for &b in &[ones[0], ones[1], ones[4]] {
            a.free(b, 1);
        }
        a.free(rest, 95);
        assert_eq!(a.top(), 5, "cell 4 is kept unmerged below the bump pointer");
        assert_eq!(a.alloc(96), Some(4));
    }
}
