//! Lookups: one key at a time, and in bulk with the memory accesses of a group of keys
//! overlapped.
use super::*;
use crate::fib::LookupPath;

/// The 6 bits of `key` from bit `off` on (most significant first), zero-padded past the end.
#[inline(always)]
pub(super) fn stride<K: Bits>(key: K, off: u32) -> u32 {
    ((key << off) >> (K::WIDTH as u32 - 6)).low_u64() as u32
}

/// The top `n` bits of `key` (0 < n < width).
#[inline(always)]
pub(super) fn top<K: Bits>(key: K, n: u32) -> usize {
    (key >> (K::WIDTH as u32 - n)).low_u64() as usize
}

/// Bits `from..to` of `key`.
#[inline(always)]
pub(super) fn bits<K: Bits>(key: K, from: u32, to: u32) -> u32 {
    ((key << from) >> (K::WIDTH as u32 - (to - from))).low_u64() as u32
}

#[inline(always)]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl<A: FibFamily> PoptrieView<A> {
    const S: u32 = A::DP_BITS;
    const R: u32 = A::ROOT_BITS;

    /// The top 6 bits of `rest` (a key shifted left past the bits already resolved).
    #[inline(always)]
    fn next6(rest: A::Bits) -> u32 {
        // A constant shift: for u128 one instruction on the high word, where `stride`'s
        // variable shift of a 128-bit key costs a branchy sequence on every level.
        (rest >> (A::WIDTH as u32 - 6)).low_u64() as u32
    }

    /// The id of the longest prefix containing `key`, or [`NO_ROUTE`].
    #[inline(always)]
    pub fn lookup(&self, key: A::Bits) -> u32 {
        let r = self.root[top(key, Self::R)];
        if r & INDEX == 0 {
            return r;
        }
        let ar = &*self.arenas;
        // SAFETY (every read below): this version is published, and every index it holds is a
        // cell of its arenas that the writer filled before publishing it (see `Poptrie`).
        let e = unsafe {
            ar.chunks
                .get_unchecked((r & !INDEX) + bits(key, Self::R, Self::S))
        };
        if e & INDEX == 0 {
            return e;
        }
        let mut node = unsafe { ar.nodes.get_unchecked(e & !INDEX) };
        let mut rest = key << Self::S;
        loop {
            let v = Self::next6(rest);
            // Written out rather than through `Node::child` / `Node::leaf`: with the helpers the
            // compiler lays this loop out differently, 7% slower on IPv6 W1 single lookups
            // (fibre bench, same run, old and new binaries in turn).
            let below = u64::MAX >> (63 - v);
            if node.vector & (1u64 << v) != 0 {
                node = unsafe {
                    ar.nodes
                        .get_unchecked(node.base1 + (node.vector & below).count_ones() - 1)
                };
                rest = rest << 6;
            } else {
                return unsafe {
                    ar.leaves
                        .get_unchecked(node.base0 + (node.leafvec & below).count_ones() - 1)
                };
            }
        }
    }

    /// Lookups of `keys` into `out` on the [`LookupPath::chosen`] path. No allocation, no lock.
    pub fn lookup_bulk(&self, keys: &[A::Bits], out: &mut [u32]) {
        self.lookup_bulk_on(LookupPath::chosen(A::WIDTH), keys, out)
    }

    /// Lookups of `keys` into `out` on `path`, or on the scalar path where the CPU cannot run
    /// it. The scalar path takes `LANES` (16) keys at a time: each step of every lane issues a
    /// prefetch for its next cell before any lane reads it, so the cache misses of one group
    /// overlap instead of queueing; the vector paths go stage by stage (see `simd`).
    pub fn lookup_bulk_on(&self, path: LookupPath, keys: &[A::Bits], out: &mut [u32]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        #[cfg(target_arch = "x86_64")]
        match path {
            // SAFETY: `supported` checked the CPU's features.
            LookupPath::Avx512 if path.supported() => {
                for (k, o) in keys.chunks(simd::GROUP).zip(out.chunks_mut(simd::GROUP)) {
                    unsafe { self.group_avx512(k, o) }
                }
                return;
            }
            LookupPath::Avx2 if path.supported() => {
                for (k, o) in keys.chunks(simd::GROUP).zip(out.chunks_mut(simd::GROUP)) {
                    unsafe { self.group_avx2(k, o) }
                }
                return;
            }
            _ => {}
        }
        let _ = path;
        for (k, o) in keys.chunks(LANES).zip(out.chunks_mut(LANES)) {
            self.lookup_group(k, o);
        }
    }

    /// One group of at most [`LANES`] lookups in lock step. Lanes still walking are kept packed
    /// at the front of the state arrays (a finished lane takes the last one's place), so a step
    /// touches only live lanes, without an index array.
    #[inline(always)]
    fn lookup_group(&self, keys: &[A::Bits], out: &mut [u32]) {
        /// A lane's next cell is a leaf (not a node).
        const LEAF: u32 = 1 << 31;
        /// Lane indexes are masked with this: always in bounds, so the compiler drops the
        /// bounds checks it cannot otherwise prove (lanes <= LANES, a power of two).
        const M: usize = LANES - 1;
        const _: () = assert!(LANES.is_power_of_two() && LANES <= 256);
        let ar = &*self.arenas;
        let mut cell = [0u32; LANES];
        let mut rest = [A::Bits::ZERO; LANES];
        let mut slot = [0u8; LANES];
        // Direct pointing: the root (small, cached), then each lane's chunk entry, prefetched.
        let mut lanes = 0;
        for (i, &k) in keys.iter().enumerate() {
            let r = self.root[top(k, Self::R)];
            if r & INDEX == 0 {
                out[i] = r;
            } else {
                let c = (r & !INDEX) + bits(k, Self::R, Self::S);
                prefetch(ar.chunks.addr(c));
                cell[lanes & M] = c;
                rest[lanes & M] = k << Self::S;
                slot[lanes & M] = i as u8;
                lanes += 1;
            }
        }
        // SAFETY (every read below): as in `lookup`, each index is a cell of this published
        // version.
        let mut j = 0;
        while j < lanes {
            let e = unsafe { ar.chunks.get_unchecked(cell[j & M]) };
            if e & INDEX == 0 {
                out[slot[j & M] as usize] = e;
                lanes -= 1;
                cell[j & M] = cell[lanes & M];
                rest[j & M] = rest[lanes & M];
                slot[j & M] = slot[lanes & M];
            } else {
                cell[j & M] = e & !INDEX;
                prefetch(ar.nodes.addr(e & !INDEX));
                j += 1;
            }
        }
        // Node levels: each step reads the cell prefetched by the step before.
        while lanes > 0 {
            let mut j = 0;
            while j < lanes {
                let c = cell[j & M];
                if c & LEAF != 0 {
                    out[slot[j & M] as usize] = unsafe { ar.leaves.get_unchecked(c & !LEAF) };
                    lanes -= 1;
                    cell[j & M] = cell[lanes & M];
                    rest[j & M] = rest[lanes & M];
                    slot[j & M] = slot[lanes & M];
                    continue;
                }
                let node = unsafe { ar.nodes.get_unchecked(c) };
                let r = rest[j & M];
                let v = Self::next6(r);
                if node.has_child(v) {
                    let next = node.child(v);
                    prefetch(ar.nodes.addr(next));
                    cell[j & M] = next;
                    rest[j & M] = r << 6;
                } else {
                    let leaf = node.leaf(v);
                    prefetch(ar.leaves.addr(leaf));
                    cell[j & M] = leaf | LEAF;
                }
                j += 1;
            }
        }
    }
}

impl<A: FibFamily> LpmView<A> for PoptrieView<A> {
    fn version(&self) -> u64 {
        self.version
    }
    #[inline(always)]
    fn lookup(&self, key: A::Bits) -> u32 {
        PoptrieView::lookup(self, key)
    }
    fn lookup_bulk(&self, keys: &[A::Bits], out: &mut [u32]) {
        PoptrieView::lookup_bulk(self, keys, out)
    }
    fn lookup_bulk_on(&self, path: LookupPath, keys: &[A::Bits], out: &mut [u32]) {
        PoptrieView::lookup_bulk_on(self, path, keys, out)
    }
}
