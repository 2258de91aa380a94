//! Fixed-capacity arrays that never move, shared between one writer and many readers.
//!
//! A published FIB version points into these arrays by index. The writer only ever writes cells
//! that no published version reaches (fresh blocks, or blocks whose last reader has gone), and
//! publishes through an `ArcSwap` store (release) that readers load (acquire): the writes of a
//! block happen-before every read of it. That is the whole safety argument; it is why the arrays
//! are raw allocations rather than `Vec`s (a `Vec` would reallocate, and `&mut Vec` would claim
//! the cells readers are reading).
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::marker::PhantomData;
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

/// The cells of a [`RawArena`] as a value of their own, which the compiler keeps in a
/// register: the arena's unchecked reads and addresses go through it. A prefetch counts for the
/// compiler as a possible write through its pointer, which might be the arena's own fields, so
/// a loop that prefetched read `RawArena::ptr` from memory again at every step (two loads of
/// each IPv6 bulk lookup's node stages); the bulk lookups take their arenas' `Cells` once. It
/// borrows the arena, so it cannot outlive it, and carries its capacity for the debug builds'
/// bounds check.
#[derive(Clone, Copy)]
pub(crate) struct Cells<'a, T: Copy> {
    ptr: *const T,
    #[cfg(debug_assertions)]
    cap: usize,
    _arena: PhantomData<&'a RawArena<T>>,
}

impl<T: Copy> Cells<'_, T> {
    /// Reads cell `i` without a bounds check: the lookups' path.
    ///
    /// # Safety
    /// `i` is below the arena's capacity, and the cell belongs to a version published before
    /// the read (so no writer writes it now). An index taken from a published version of a
    /// structure whose indexes the writer kept inside the capacity is such a cell.
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked(self, i: u32) -> T {
        #[cfg(debug_assertions)]
        debug_assert!((i as usize) < self.cap);
        // SAFETY: the caller's contract.
        unsafe { self.ptr.add(i as usize).read() }
    }
    /// The address of cell `i`, for prefetching.
    #[inline(always)]
    pub(crate) fn addr(self, i: u32) -> *const T {
        self.ptr.wrapping_add(i as usize)
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
    /// [`Cells::get_unchecked`].
    ///
    /// # Safety
    /// As for [`Cells::get_unchecked`].
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked(&self, i: u32) -> T {
        // SAFETY: the caller's contract.
        unsafe { self.cells().get_unchecked(i) }
    }
    /// [`Cells::addr`].
    #[inline(always)]
    pub(crate) fn addr(&self, i: u32) -> *const T {
        self.cells().addr(i)
    }
    /// The cells, for loops that prefetch (see [`Cells`]).
    #[inline(always)]
    pub(crate) fn cells(&self) -> Cells<'_, T> {
        Cells {
            ptr: self.ptr,
            #[cfg(debug_assertions)]
            cap: self.cap,
            _arena: PhantomData,
        }
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
    /// Reads the `N` cells from `first` (checked), in one bounds check where `N` calls of
    /// [`RawArena::get`] take `N`.
    #[inline]
    pub(crate) fn get_array<const N: usize>(&self, first: u32) -> [T; N] {
        assert!(first as usize + N <= self.cap, "arena index out of range");
        // SAFETY: in range; the cells are read as by `get` (the writer's own, or published).
        unsafe {
            self.ptr
                .add(first as usize)
                .cast::<[T; N]>()
                .read_unaligned()
        }
    }
    /// Writes `src` to the cells from `dst` (checked).
    ///
    /// # Safety
    /// As for [`RawArena::copy`]: the writer's side, on cells no published version reaches;
    /// `src` is not in the arena.
    #[inline]
    pub(crate) unsafe fn write_slice(&self, dst: u32, src: &[T]) {
        assert!(
            dst as usize + src.len() <= self.cap,
            "arena index out of range"
        );
        // SAFETY: in range; `src` is not in the arena (a `&[T]` the caller owns while the
        // arena's cells are only written through raw pointers); unreachable by readers.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(dst as usize), src.len())
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
