//! Fixed-capacity arrays that never move, shared between one writer and many readers.
//!
//! A published FIB version points into these arrays by index. The writer only ever writes cells
//! that no published version reaches (fresh blocks, or blocks whose last reader has gone), and
//! publishes through an `ArcSwap` store (release) that readers load (acquire): the writes of a
//! block happen-before every read of it. That is the whole safety argument; it is why the arrays
//! are raw allocations rather than `Vec`s (a `Vec` would reallocate, and `&mut Vec` would claim
//! the cells readers are reading).
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4096;

/// Bytes of arenas mapped straight from the kernel (see [`map_fresh`]) and touched, which a
/// counting global allocator does not see.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes of the FIB arenas mapped from the kernel rather than taken from the heap, and backed
/// by memory now (an arena reserves more address space than it touches, which is not counted):
/// what a measurement of memory through the global allocator adds.
pub fn mapped_bytes() -> usize {
    MAPPED.load(Ordering::Relaxed)
}

/// Whether huge pages are asked for: not where `FIBRE_NO_THP` is set (any value), to measure
/// what they bring.
fn want_huge_pages() -> bool {
    std::env::var_os("FIBRE_NO_THP").is_none()
}

/// `len` bytes (a multiple of 4 KiB) of fresh zeroed address space from the kernel (no memory
/// behind it until a page is touched), aligned to 2 MiB and advised
/// `MADV_HUGEPAGE` *before* any page is touched. Why not the heap: an allocator hands out
/// memory it has used before (a freed 8 MiB vector, once glibc has raised its mmap threshold),
/// whose pages are already mapped 4 KiB at a time, and the advice only applies to pages faulted
/// after it. Measured: built from the heap, the same arenas got 0% to 57% huge pages from one
/// build to the next; mapped fresh, every full 2 MiB of them does (where the kernel has huge
/// pages to give). The part past the last full 2 MiB gets 4 KiB pages: builds place the
/// structure from the start and leave the spare room at the end, so that tail is mostly spare
/// room lookups do not read. (Rounding every arena up to whole huge pages, as before, mapped
/// 10 MiB for the 2.8 MB of the IPv6 full view's structure.) Only the first `backed` bytes
/// are advised so, in whole huge pages; the rest is advised `MADV_NOHUGEPAGE` until it is
/// touched ([`advise_huge`]): the first touch of a page in an advised 2 MiB would fault in
/// all of it, behind the arena's count of what it touched. `None` where the kernel refuses
/// the mapping.
#[cfg(target_os = "linux")]
fn map_fresh(len: usize, backed: usize) -> Option<*mut u8> {
    let span = len + HUGE_PAGE;
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing; it touches
    // no memory of ours.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            // Reserved, not committed: the pages past what the arena touches cost nothing.
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let start = raw as usize;
    let aligned = (start + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
    let end = start + span;
    debug_assert_eq!(len % PAGE, 0);
    let keep_end = aligned + len;
    // SAFETY: the head and tail trimmed are ours (inside the mapping just made) and unused.
    unsafe {
        if aligned > start {
            libc::munmap(start as *mut libc::c_void, aligned - start);
        }
        if end > keep_end {
            libc::munmap(keep_end as *mut libc::c_void, end - keep_end);
        }
        if want_huge_pages() {
            libc::madvise(
                aligned as *mut libc::c_void,
                keep_end - aligned,
                libc::MADV_NOHUGEPAGE,
            );
        }
    }
    advise_huge(aligned as *mut u8, 0, backed.min(len));
    Some(aligned as *mut u8)
}

/// Advises huge pages on the whole 2 MiB pages of `ptr[..to]` past those of `ptr[..from]`
/// (`ptr` is 2 MiB-aligned), before their pages are touched, where huge pages are wanted.
#[cfg(target_os = "linux")]
fn advise_huge(ptr: *mut u8, from: usize, to: usize) {
    let (lo, hi) = (from / HUGE_PAGE * HUGE_PAGE, to / HUGE_PAGE * HUGE_PAGE);
    if hi > lo && want_huge_pages() {
        // SAFETY: advice on pages of a mapping of ours; it changes no content.
        unsafe {
            libc::madvise(
                ptr.add(lo) as *mut libc::c_void,
                hi - lo,
                libc::MADV_HUGEPAGE,
            )
        };
    }
}

/// Touches every page of a fresh zeroed allocation, so the writer's first use of spare room
/// during an update does not take a page fault (or, with huge pages, the clearing of 2 MiB) on
/// the update's critical path; the build pays it once instead.
fn prefault(ptr: *mut u8, len: usize) {
    for off in (0..len).step_by(PAGE) {
        // SAFETY: in the allocation; it is zeroed, so writing a zero changes nothing but makes
        // the kernel back the page now. Volatile, so the write is not optimised away.
        unsafe { ptr.add(off).write_volatile(0) }
    }
}

/// An array of `cap` zero-initialised `T`s at a fixed address.
pub(crate) struct RawArena<T: Copy> {
    ptr: *mut T,
    cap: usize,
    /// Mapped from the kernel ([`map_fresh`]) rather than allocated from the heap.
    mapped: bool,
    /// Bytes from the start known to be backed by memory (touched at build, or by
    /// [`RawArena::touch_past`]); the whole allocation for a heap one. Only the writer changes it.
    touched: AtomicUsize,
}

// SAFETY: see the module comment: cells are written only while unreachable by readers, and the
// publication that makes them reachable is a release/acquire pair.
unsafe impl<T: Copy + Send> Send for RawArena<T> {}
// SAFETY: as for Send: shared readers only read cells the writer no longer writes.
unsafe impl<T: Copy + Sync> Sync for RawArena<T> {}

impl<T: Copy> RawArena<T> {
    /// `T` must be valid when all-zero (plain integers and structs of them). Arenas of a
    /// megabyte or more are mapped fresh from the kernel on huge pages ([`map_fresh`]); smaller
    /// ones come from the heap.
    #[cfg(test)]
    pub(crate) fn new(cap: usize) -> Self {
        Self::reserving(cap, cap)
    }
    /// An arena of `cap` cells backed by memory, and, where it is mapped from the kernel, room to
    /// grow to `reserve` cells in address space that takes no memory until
    /// [`RawArena::touch_past`] touches it. Growing in place keeps every offset: a full arena
    /// no longer means re-encoding everything (a 30-70 ms stall on the full view).
    pub(crate) fn reserving(cap: usize, reserve: usize) -> Self {
        let cap = cap.max(1);
        let layout = Self::layout(cap);
        #[cfg(target_os = "linux")]
        if layout.size() >= HUGE_PAGE / 2 {
            // Whole 4 KiB pages: the tail of the last one becomes spare room.
            let len = layout.size().next_multiple_of(PAGE);
            let reserved = Self::layout(reserve.max(cap)).size().next_multiple_of(PAGE);
            if let Some(ptr) = map_fresh(reserved, len) {
                prefault(ptr, len);
                MAPPED.fetch_add(len, Ordering::Relaxed);
                return RawArena {
                    ptr: ptr as *mut T,
                    cap: reserved / std::mem::size_of::<T>().max(1),
                    mapped: true,
                    touched: AtomicUsize::new(len),
                };
            }
        }
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) } as *mut T;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        prefault(ptr as *mut u8, layout.size());
        RawArena {
            ptr,
            cap,
            mapped: false,
            touched: AtomicUsize::new(layout.size()),
        }
    }

    /// Backs cells up to `want` with memory ahead of their use, so that the writer's next
    /// blocks take no page fault on an update's critical path (with huge pages, a fault clears
    /// 2 MiB). Pages are touched by writing a zero into them, so only pages wholly at or past
    /// cell `free_from` are touched: the writer's bump pointer, past which no cell is in use.
    ///
    /// # Safety
    /// Only the writer calls it, and no cell from `free_from` on is reachable by a published
    /// version or in use by the writer (the cells past the bump pointer of the arena's
    /// allocator).
    pub(crate) unsafe fn touch_past(&self, free_from: usize, want: usize) {
        let size = std::mem::size_of::<T>().max(1);
        let reserved = self.cap * size;
        let want = (want.min(self.cap) * size)
            .next_multiple_of(PAGE)
            .min(reserved);
        let touched = self.touched.load(Ordering::Relaxed);
        if !self.mapped || want <= touched {
            return;
        }
        // Whole huge pages from here on: the part past `touched` was never advised so.
        #[cfg(target_os = "linux")]
        advise_huge(self.ptr as *mut u8, touched, want);
        // Pages below the bump pointer were written when their cells were handed out.
        let from = (free_from * size).next_multiple_of(PAGE).max(touched);
        if want > from {
            prefault(
                // SAFETY: `from < want <= reserved`: inside the mapping.
                unsafe { (self.ptr as *mut u8).add(from) },
                want - from,
            );
        }
        MAPPED.fetch_add(want - touched, Ordering::Relaxed);
        self.touched.store(want, Ordering::Relaxed);
    }

    /// The arena's size and alignment (a huge page's for a mapped one).
    fn layout(cap: usize) -> Layout {
        Layout::array::<T>(cap).expect("arena size")
    }
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }
    /// The address and size in bytes of the part backed by memory (which pages back it is a
    /// diagnostic).
    pub(crate) fn region(&self) -> (usize, usize) {
        (self.ptr as usize, self.touched.load(Ordering::Relaxed))
    }
    /// Reads cell `i` (checked: the writer's side and the walks).
    #[inline]
    pub(crate) fn get(&self, i: u32) -> T {
        assert!((i as usize) < self.cap, "arena index out of range");
        // SAFETY: in range. A cell the caller reads is one no one writes at the same time: the
        // writer reads its own cells, and readers only cells of published versions.
        unsafe { self.ptr.add(i as usize).read() }
    }
    /// Reads cell `i` without a bounds check: the lookups' path.
    ///
    /// # Safety
    /// `i` is below the capacity, and the cell belongs to a version published before the read
    /// (so no writer writes it now). An index taken from a published version of a structure
    /// whose indexes the writer kept inside the capacity is such a cell.
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked(&self, i: u32) -> T {
        debug_assert!((i as usize) < self.cap);
        // SAFETY: the caller's contract.
        unsafe { self.ptr.add(i as usize).read() }
    }
    /// The address of cell `i`, for prefetching.
    #[inline(always)]
    pub(crate) fn addr(&self, i: u32) -> *const T {
        self.ptr.wrapping_add(i as usize)
    }
    /// Copies `len` cells from `src` to `dst` (ranges apart; checked).
    ///
    /// # Safety
    /// Only the writer calls it, and no published version reaches `dst..dst + len` (a fresh
    /// block, or one whose last reader has gone): a reader could otherwise read a cell while it
    /// is written.
    pub(crate) unsafe fn copy(&self, src: u32, dst: u32, len: u32) {
        let (s, d, n) = (src as usize, dst as usize, len as usize);
        assert!(s + n <= self.cap && d + n <= self.cap && (s + n <= d || d + n <= s));
        // SAFETY: both ranges are in the allocation and do not overlap; `dst` is unreachable by
        // readers (module comment).
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(s), self.ptr.add(d), n) }
    }
    /// Sets `len` cells from `dst` on to `v` (checked).
    ///
    /// # Safety
    /// As for [`RawArena::copy`]: the writer's side, on cells no published version reaches.
    pub(crate) unsafe fn fill(&self, dst: u32, len: u32, v: T) {
        assert!(dst as usize + len as usize <= self.cap);
        for i in dst..dst + len {
            // SAFETY: in range (asserted above); unreachable by readers.
            unsafe { self.ptr.add(i as usize).write(v) }
        }
    }
    /// Writes cell `i` (checked).
    ///
    /// # Safety
    /// As for [`RawArena::copy`]: the writer's side, on a cell no published version reaches.
    #[inline]
    pub(crate) unsafe fn set(&self, i: u32, v: T) {
        assert!((i as usize) < self.cap, "arena index out of range");
        // SAFETY: in range; unreachable by readers (module comment).
        unsafe { self.ptr.add(i as usize).write(v) }
    }
}

impl<T: Copy> Drop for RawArena<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.cap);
        #[cfg(target_os = "linux")]
        if self.mapped {
            let len = layout.size().next_multiple_of(PAGE);
            // SAFETY: mapped in `reserving` (`map_fresh`) with this length (the capacity fills
            // whole pages but for less than a cell); no view reaches it any more (the arenas go
            // with the last version that uses them).
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, len) };
            MAPPED.fetch_sub(self.touched.load(Ordering::Relaxed), Ordering::Relaxed);
            return;
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr as *mut u8, layout) }
    }
}

/// The writer's bookkeeping of one arena: a bump pointer and free blocks, merged with their free
/// neighbours.
///
/// Most blocks are one node's children or leaves (at most 64 cells), a subtree's top cell, or a
/// direct-pointing chunk; a subtree encoded afresh is placed as one block of its nodes and one of
/// its leaves, and later freed node by node. A freed block is merged with the free blocks on
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
///   it back first (so are long blocks of one length: chunks); such blocks are merged once they
///   pass [`QUICK_CELLS`] cells, or before the bump pointer would grow (as an allocator's
///   per-size caches: glibc's tcache and fastbins). A block freed at the bump pointer goes back
///   to it at once.
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
    /// Short blocks freed and not merged yet, by length: the next request of that length takes
    /// one back with no bookkeeping at all (see [`BlockAlloc::alloc`]).
    quick: Vec<Vec<u32>>,
    /// Long blocks freed and not merged yet, all `quick_long_len` long: the chunk arena's
    /// blocks are all one chunk long.
    quick_long: Vec<u32>,
    quick_long_len: u32,
    /// Cells in `quick` and `quick_long`.
    quick_cells: usize,
}

/// Longest block length kept in the split-able lists (a node has at most 64 children or leaves).
const SMALL: u32 = 64;

/// Cells kept in freed blocks before they are merged (a few changes' worth; eight IPv4 chunks).
const QUICK_CELLS: usize = 1 << 12;

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

type OffsetMap = HashMap<u32, u32, BuildHasherDefault<OffsetHasher>>;

impl BlockAlloc {
    pub(crate) fn new(top: u32, cap: usize) -> Self {
        BlockAlloc {
            top,
            cap: cap.min(u32::MAX as usize) as u32,
            live: top as usize,
            small: vec![Vec::new(); SMALL as usize + 1],
            quick: vec![Vec::new(); SMALL as usize + 1],
            ..Default::default()
        }
    }
    /// A block of `len` cells (`len > 0`), or `None` when the arena is full.
    ///
    /// A short block freed earlier with the same length comes back first, unmerged: an update
    /// frees the blocks of the nodes it copied and allocates their copies, mostly of the same
    /// lengths, and the merging bookkeeping (four to eight hash map operations a block) was an
    /// eighth of a route change (callgrind). Blocks kept so are merged before the bump pointer
    /// would grow, and once they pass [`QUICK_CELLS`]: the high-water mark rises only when the
    /// merged free blocks cannot serve, as before.
    pub(crate) fn alloc(&mut self, len: u32) -> Option<u32> {
        debug_assert!(len > 0);
        let quick = if len <= SMALL {
            self.quick[len as usize].pop()
        } else if len == self.quick_long_len {
            self.quick_long.pop()
        } else {
            None
        };
        if let Some(off) = quick {
            self.quick_cells -= len as usize;
            self.live += len as usize;
            return Some(off);
        }
        if let Some(off) = self.alloc_merged(len) {
            return Some(off);
        }
        if self.quick_cells == 0 {
            return self.bump(len);
        }
        self.merge_quick();
        self.alloc_merged(len).or_else(|| self.bump(len))
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
    /// ones kept, is kept for the next request of that length and merged later
    /// ([`BlockAlloc::alloc`]); another long one is merged with its free neighbours now.
    pub(crate) fn free(&mut self, off: u32, len: u32) {
        if len == 0 {
            return;
        }
        self.live -= len as usize;
        if off + len == self.top {
            // Back to the bump pointer at once (with the free blocks before it).
            return self.merge_free(off, len);
        }
        if len <= SMALL {
            self.quick[len as usize].push(off);
        } else if self.quick_long.is_empty() || len == self.quick_long_len {
            self.quick_long_len = len;
            self.quick_long.push(off);
        } else {
            return self.merge_free(off, len);
        }
        self.quick_cells += len as usize;
        if self.quick_cells > QUICK_CELLS {
            self.merge_quick();
        }
    }
    /// Merges the blocks kept unmerged ([`BlockAlloc::alloc`]) into the free blocks.
    pub(crate) fn merge_quick(&mut self) {
        let mut quick = std::mem::take(&mut self.quick);
        for (len, offs) in quick.iter_mut().enumerate() {
            for off in offs.drain(..) {
                self.merge_free(off, len as u32);
            }
        }
        self.quick = quick;
        let long = std::mem::take(&mut self.quick_long);
        for &off in &long {
            self.merge_free(off, self.quick_long_len);
        }
        self.quick_long = long;
        self.quick_long.clear();
        self.quick_cells = 0;
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
        for (&off, &len) in &self.starts {
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
    /// fits where short ones were, and the high-water mark stays put.
    #[test]
    fn free_neighbours_merge() {
        let mut a = BlockAlloc::new(0, 1000);
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
        // Two neighbours kept unmerged serve a longer request once merged, not the bump pointer.
        let (x, y) = (a.alloc(30).unwrap(), a.alloc(30).unwrap());
        let _guard = a.alloc(1).unwrap();
        let top = a.top();
        a.free(x, 30);
        a.free(y, 30);
        assert_eq!(a.alloc(60), Some(x));
        assert_eq!(a.top(), top);
        // Kept blocks never pass the limit: past it they are merged.
        let chunks: Vec<u32> = (0..20).map(|_| a.alloc(512).unwrap()).collect();
        let _guard = a.alloc(1).unwrap();
        let top = a.top();
        for &c in &chunks {
            a.free(c, 512);
            assert!(a.quick_cells <= QUICK_CELLS, "{} cells kept", a.quick_cells);
        }
        // A request longer than a chunk takes the merged run, not the bump pointer.
        assert_eq!(a.alloc(20 * 512), Some(chunks[0]));
        assert_eq!(a.top(), top);
    }

    /// Random allocations and frees against a model of the cells in use: no cell is handed out
    /// twice, every freed cell comes back, and the high-water mark never exceeds the peak of
    /// live cells by more than the fragmentation a 64-cell request can meet.
    #[test]
    fn allocations_match_a_model_of_cells() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut a = BlockAlloc::new(0, 1 << 20);
        let mut used = vec![false; 1 << 20];
        let mut held: Vec<(u32, u32)> = Vec::new();
        for step in 0..200_000 {
            if held.len() < 2000 && (held.is_empty() || rng.gen_bool(0.5)) {
                let len = if rng.gen_bool(0.05) {
                    rng.gen_range(65..600)
                } else {
                    rng.gen_range(1..=64)
                };
                let off = a.alloc(len).expect("room");
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
        // At most 2000 blocks of at most 600 cells are held at once (under 1.2M cells at the
        // worst, about 70,000 on average): the mark stays within a few times that.
        assert!(a.top() < 400_000, "high-water mark {}", a.top());
        for (off, len) in held.drain(..) {
            a.free(off, len);
        }
        a.merge_quick();
        assert_eq!(
            a.top(),
            0,
            "everything freed merges back into the bump pointer"
        );
        assert!(a.starts.is_empty() && a.large.is_empty());
    }

    /// A large arena is its own mapping: aligned to a huge page, whole 4 KiB pages long (the
    /// spare tail becomes capacity), zeroed, writable to its last cell, and counted in
    /// `mapped_bytes` while it lives. A small one comes from the heap.
    #[test]
    #[cfg(target_os = "linux")]
    fn large_arenas_are_mapped_from_a_huge_page_boundary() {
        let a = RawArena::<u64>::new(300_000);
        let (start, len) = a.region();
        assert_eq!(start % HUGE_PAGE, 0);
        assert_eq!(len, (300_000 * 8usize).next_multiple_of(PAGE));
        assert!(
            len < HUGE_PAGE + HUGE_PAGE / 4,
            "not rounded up to whole huge pages"
        );
        assert_eq!(a.cap(), len / 8);
        assert!(mapped_bytes() >= len);
        for i in [0, 1, 299_999, a.cap() as u32 - 1] {
            assert_eq!(a.get(i), 0);
        }
        let last = a.cap() as u32 - 1;
        // SAFETY: no reader exists.
        unsafe { a.set(last, 7) };
        assert_eq!(a.get(last), 7);
        drop(a);
        let small = RawArena::<u64>::new(1000);
        assert_eq!(small.cap(), 1000);
        assert_eq!(small.region().1, 8000);
    }

    /// A mapped arena reserves address space past what it backs: its capacity is the
    /// reservation, `touch_past` backs more of it without touching cells in use (below the bump
    /// pointer it is given) and never past the reservation, and every reserved cell is writable.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_mapped_arena_grows_in_place() {
        let page_end = |cells: usize| (cells * 8).next_multiple_of(PAGE);
        let a = RawArena::<u64>::reserving(300_000, 1_200_000);
        assert_eq!(a.region().1, page_end(300_000));
        assert_eq!(a.cap(), page_end(1_200_000) / 8);
        // SAFETY: no reader exists; the cells are the test's.
        unsafe {
            a.set(10, 5);
            // Past the backed part: the write itself takes the page.
            a.set(400_000, 6);
            a.touch_past(400_001, 600_000);
        }
        assert_eq!(a.region().1, page_end(600_000));
        assert_eq!(a.get(10), 5, "cells in use are left alone");
        assert_eq!(a.get(400_000), 6, "cells in use are left alone");
        // SAFETY: as above.
        unsafe {
            a.touch_past(0, 10);
            assert_eq!(a.region().1, page_end(600_000), "never shrinks");
            a.touch_past(600_000, usize::MAX / 16);
        }
        assert_eq!(a.region().1, a.cap() * 8, "at most the reservation");
        let last = a.cap() as u32 - 1;
        // SAFETY: as above.
        unsafe { a.set(last, 9) };
        assert_eq!(a.get(last), 9);
    }
}
