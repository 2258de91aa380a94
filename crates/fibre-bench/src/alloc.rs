//! Memory measured, not estimated: a global allocator that counts live heap bytes.
//!
//! The `fibre` binary installs [`CountingAlloc`] as its global allocator; an engine's memory is
//! the growth of live bytes across its build, with the input routes allocated beforehand. Without
//! the counting allocator installed (library users, unit tests) [`live_bytes`] stays 0 and
//! [`is_counting`] says so, and the study reports no memory figure rather than a wrong one.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// The system allocator, plus a count of live bytes (one relaxed atomic add per call).
pub struct CountingAlloc;

// SAFETY: every call is passed on unchanged to the system allocator, which upholds
// GlobalAlloc's contract; the counting beside it touches no memory it hands out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Live heap bytes, when [`CountingAlloc`] is the global allocator, plus the FIB arenas fibre
/// maps from the kernel itself (on huge pages, past the allocator).
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed) + fibre::fib::mapped_bytes()
}

/// Whether heap use is being counted: true once any allocation went through [`CountingAlloc`].
pub fn is_counting() -> bool {
    if !COUNTING.load(Ordering::Relaxed) {
        let probe = std::hint::black_box(Box::new(0u64));
        COUNTING.store(LIVE.load(Ordering::Relaxed) >= 8, Ordering::Relaxed);
        drop(probe);
    }
    COUNTING.load(Ordering::Relaxed)
}
