//! Lookups: one key at a time, and in bulk with the memory accesses of a group of keys
//! overlapped.
use super::*;
use crate::fib::arena::RawArena;
use crate::fib::LookupPath;
use core::hint::select_unpredictable;

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

/// `keys` (at most `N`) as a whole group of `N`, padded with key 0 (whose answers the caller
/// drops): bulk paths run whole groups, so their loops have constant bounds.
pub(super) fn padded<K: Bits, const N: usize>(keys: &[K]) -> [K; N] {
    let mut group = [K::ZERO; N];
    group[..keys.len()].copy_from_slice(keys);
    group
}

pub(super) use crate::fib::prefetch_line as prefetch;

/// The lanes of a bulk stage whose entry names a node (`INDEX` set, `FLAT` clear), a bit each.
#[inline(always)]
pub(super) fn at_node(entry: &[u32; LANES]) -> u32 {
    // A node's entry has `INDEX` (the sign bit) set and `FLAT` (bit 29) clear: the sign bit
    // of `e & !(e << 2)`. SSE2, part of every x86-64, gathers four lanes' sign bits in one
    // instruction (`movmskps`): with the portable loop (kept for other CPUs) in its place, the
    // compiler's own vectorising cost an IPv4 W1 bulk lookup 1.1 instructions more and IPv6
    // 1.5 (callgrind, `fib_profile 4|6`).
    const { assert!(INDEX == 1 << 31 && FLAT == 1 << 29 && LANES.is_multiple_of(4)) };
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut mask = 0u32;
        for q in 0..LANES / 4 {
            // SAFETY: SSE2 is part of x86-64; the load reads lanes 4q..4q+4 of the array.
            let signs = unsafe {
                let v = _mm_loadu_si128(entry.as_ptr().add(4 * q).cast::<__m128i>());
                _mm_movemask_ps(_mm_castsi128_ps(_mm_andnot_si128(
                    _mm_slli_epi32::<2>(v),
                    v,
                )))
            };
            mask |= (signs as u32) << (4 * q);
        }
        mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    (0..LANES).fold(0, |m, i| {
        m | (u32::from(entry[i] & (INDEX | FLAT) == INDEX) << i)
    })
}

impl<A: FibFamily> PoptrieView<A> {
    const S: u32 = A::DP_BITS;

    /// Bits of a slot its chunk resolves: direct pointing's less the root's. A constant where
    /// the family's roots are all one size (IPv4).
    #[inline(always)]
    pub(super) fn chunk_bits(&self) -> u32 {
        if A::MIN_ROOT_BITS == A::MAX_ROOT_BITS {
            A::DP_BITS - A::MIN_ROOT_BITS
        } else {
            self.chunk_bits
        }
    }

    /// The root entry of direct-pointing slot `slot` (its bits past direct pointing's are
    /// ignored).
    #[inline(always)]
    pub(super) fn root_entry(&self, slot: u32) -> u32 {
        // SAFETY: an entry of the root (see `root_entry_addr`), which this view holds.
        unsafe { self.root_entry_addr(slot).read() }
    }

    /// Where the root entry of slot `slot` lies (its bits past direct pointing's are ignored):
    /// always inside the root.
    #[inline(always)]
    fn root_entry_addr(&self, slot: u32) -> *const u32 {
        // Every caller's slot is a key's top `S` bits: the mask costs nothing there, and a
        // bounds check cost 2.8 instructions of an IPv4 bulk lookup's 68.2 (callgrind).
        const { assert!(A::MAX_ROOT_BITS <= A::DP_BITS && A::DP_BITS < 32) };
        let i = ((slot & ((1 << Self::S) - 1)) >> self.chunk_bits()) as usize;
        debug_assert!(i < self.root.len());
        // `i` < 2^(S - chunk_bits), the root's length: `new` asserts the root is 2^R entries
        // for R within the family's bounds, and `chunk_bits` is S - R.
        self.root.as_ptr().wrapping_add(i)
    }

    /// Where `slot` lies in its chunk.
    #[inline(always)]
    fn in_chunk(&self, slot: u32) -> u32 {
        slot & ((1 << self.chunk_bits()) - 1)
    }

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
        with_leaves!(&self.arenas.leaves, leaves => self.lookup_in(leaves, key))
    }

    /// [`PoptrieView::lookup`] with the leaf cells at their width.
    #[inline(always)]
    fn lookup_in<C: Cell>(&self, leaves: &RawArena<C>, key: A::Bits) -> u32 {
        let r = self.root_entry(top(key, Self::S) as u32);
        if r & INDEX == 0 {
            return r;
        }
        // SAFETY: `r` is the key's root entry in this published version.
        unsafe { self.past_root(leaves, r, key) }
    }

    /// The answer for `key` from its root entry `r`, which holds a chunk's index ([`INDEX`]).
    ///
    /// # Safety
    /// `r` is the root entry of `key` in this published version.
    #[inline(always)]
    pub(super) unsafe fn past_root<C: Cell>(
        &self,
        leaves: &RawArena<C>,
        r: u32,
        key: A::Bits,
    ) -> u32 {
        let ar = &*self.arenas;
        // SAFETY (both): this version is published, and every index it holds is a cell of its
        // arenas that the writer filled before publishing it (see `Poptrie`).
        let e = unsafe {
            ar.chunks
                .get_unchecked((r & !INDEX) + self.in_chunk(top(key, Self::S) as u32))
        };
        if e & INDEX == 0 {
            return e;
        }
        if e & FLAT != 0 {
            let leaf = node_cell(e) + bits(key, Self::S, Self::S + 6);
            return unsafe { leaves.get_unchecked(leaf) }.unpack();
        }
        unsafe { self.walk(leaves, node_cell(e), key << Self::S) }
    }

    /// The leaf a key ends at, from node `top`; `rest` is the key shifted past the bits above
    /// that node.
    ///
    /// # Safety
    /// `top` is a node of this published version (a chunk entry's index): every index the walk
    /// then follows is one of its cells.
    #[inline(always)]
    unsafe fn walk<C: Cell>(&self, leaves: &RawArena<C>, top: u32, mut rest: A::Bits) -> u32 {
        let ar = &*self.arenas;
        // SAFETY (every read): the caller's contract.
        let mut node = unsafe { ar.nodes.get_unchecked(top) };
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
                    leaves
                        .get_unchecked(node.base0 + (node.leafvec & below).count_ones() - 1)
                        .unpack()
                };
            }
        }
    }

    /// Lookups of `keys` into `out` on the [`LookupPath::chosen`] path. No allocation, no lock.
    pub fn lookup_bulk(&self, keys: &[A::Bits], out: &mut [u32]) {
        self.lookup_bulk_on(LookupPath::chosen(), keys, out)
    }

    /// Lookups of `keys` into `out` on `path`, or on the scalar path where the CPU cannot run
    /// it. The scalar path takes `LANES` (16) keys at a time, direct pointing and the first node
    /// levels prefetched stage by stage (see `lookup_group`); the vector paths go stage by stage
    /// to the leaves (see `simd`).
    pub fn lookup_bulk_on(&self, path: LookupPath, keys: &[A::Bits], out: &mut [u32]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        #[cfg(target_arch = "x86_64")]
        match path {
            // SAFETY: `supported` checked the CPU's features.
            LookupPath::Avx512 if path.supported() => {
                let group = A::AVX512_GROUP;
                for (k, o) in keys.chunks(group).zip(out.chunks_mut(group)) {
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
        with_leaves!(&self.arenas.leaves, leaves => {
            let mut outs = out.chunks_exact_mut(LANES);
            for (k, o) in keys.chunks_exact(LANES).zip(&mut outs) {
                // A full group has constant bounds: every stage's loop unrolls.
                let (k, o) = (k.try_into().expect("LANES keys"), o.try_into().expect("LANES"));
                self.lookup_group(leaves, k, o);
            }
            let (tail, out) = (keys.chunks_exact(LANES).remainder(), outs.into_remainder());
            if !tail.is_empty() {
                let mut o = [0u32; LANES];
                self.lookup_group(leaves, &padded(tail), &mut o);
                out.copy_from_slice(&o[..tail.len()]);
            }
        })
    }

    /// One group of [`LANES`] lookups (a batch's tail padded), stage by stage for the first
    /// levels: every lane's root entry (cached) gives its chunk entry, prefetched; every lane's
    /// chunk entry its top node, prefetched (or, for a flat block, its leaf); then
    /// [`FibFamily::BULK_NODE_STAGES`] node levels the same way,
    /// a lane that ends in a leaf prefetching it; the leaves are read last, and lanes still
    /// walking go on one at a time as [`PoptrieView::lookup`] does (the out-of-order core
    /// overlapping them). A group with few keys past the root finishes them one at a time
    /// after the root stage ([`FibFamily::FEW_PAST_ROOT`]).
    ///
    /// Chosen by measurement, in turns in one process (`fib_profile`): one prefetched node
    /// stage took 0.83-0.89 of the time of walking every lane from its top node (IPv4 and
    /// IPv6); three stages took 0.85 of one on IPv6 and 1.0-1.2 on IPv4; five took 1.1 of three
    /// on IPv6. A stage-wise walk of every level (lists of walking lanes advanced by conditions,
    /// not branches) took 131 instructions a W1 IPv4 lookup against 77 for walking from the top
    /// node (87 with the node stage), and 1.5x the time; the per-lane state machine before them
    /// took 100. Groups of 32 lanes were no faster than 16.
    ///
    /// The root and chunk stages take no branch per lane (issue 15, ninth round): in W2
    /// (uniform addresses) lanes end at the root, a chunk entry or a node at random, and the
    /// branches there mispredicted. IPv4 W2 bulk went from 9.1-11.7 to 6.3-7.9 ns, W1 did not
    /// move (4.2-5.5 against 4.1-5.1), five pairs in turn (`fib_profile 4 1000000 time`, AMD
    /// Zen 4). Branch-free node stages too (a lane not walking reads a static node) took W2 to
    /// the same 6.9-7.9 ns but W1 to 5.3-5.9, and were dropped. Groups are whole: the tail of
    /// a batch is padded, so every loop has constant bounds and unrolls (W1 4.5 -> 4.2 ns).
    #[inline(always)]
    fn lookup_group<C: Cell>(
        &self,
        leaves: &RawArena<C>,
        keys: &[A::Bits; LANES],
        out: &mut [u32; LANES],
    ) {
        /// Lane indexes are masked with this: always in bounds, so the compiler drops the
        /// bounds checks it cannot otherwise prove.
        const M: usize = LANES - 1;
        const _: () = assert!(LANES.is_power_of_two());
        // The shifts below stay inside the key.
        const { assert!(A::DP_BITS + 6 * A::BULK_NODE_STAGES < A::WIDTH as u32) };
        let ar = &*self.arenas;
        let (chunks, nodes, leaf_cells) = (ar.chunks.cells(), ar.nodes.cells(), leaves.cells());
        // Where each lane's chunk stage reads: its chunk entry, or, where the root entry holds
        // the answer, that root entry again (the chunk stage then reads an answer, without a
        // choice between two places to read; with the leaf tags below, 4.2 of the 65.4
        // instructions of an IPv4 W1 lookup); with `FEW_PAST_ROOT`, a copy of it in `roots`.
        let mut at = [core::ptr::null::<u32>(); LANES];
        // The lanes past the root and each lane's root entry (for `FEW_PAST_ROOT`).
        let mut past = 0u32;
        let mut roots = [0u32; LANES];
        for i in 0..LANES {
            let k = keys[i];
            let slot = top(k, Self::S) as u32;
            let root_at = self.root_entry_addr(slot);
            // SAFETY: an entry of the root (see `root_entry_addr`), which this view holds.
            let r = unsafe { root_at.read() };
            let c = chunks.addr((r & !INDEX).wrapping_add(self.in_chunk(slot)));
            // Prefetching a lane that has its answer reads nothing (a hint never faults).
            prefetch(c);
            if A::FEW_PAST_ROOT > 0 {
                // The choice of where to read waits for the few-keys test (IPv6 W2 bulk
                // 2.1 -> 2.6 ns when made here).
                past |= (r >> 31) << i;
                roots[i & M] = r;
                at[i & M] = c;
            } else {
                at[i & M] = select_unpredictable(r & INDEX != 0, c, root_at);
            }
        }
        // Few keys past the root (IPv6 W2: 2000::/3 at random ended there 94.5% of the time
        // with 20 bits of direct pointing and a root of 10): they finish one at a time, the
        // other stages skipped (`FibFamily::FEW_PAST_ROOT`, a count per 64 keys; IPv6 W2 bulk
        // 2.65-2.83 -> 1.61-1.67 ns on this path, three pairs).
        if A::FEW_PAST_ROOT > 0 {
            if past.count_ones() <= A::FEW_PAST_ROOT * LANES as u32 / 64 {
                while past != 0 {
                    let i = past.trailing_zeros() as usize & M;
                    past &= past - 1;
                    // SAFETY: the key's root entry in this published version.
                    roots[i] = unsafe { self.past_root(leaves, roots[i], keys[i]) };
                }
                *out = roots;
                return;
            }
            for i in 0..LANES {
                let r = &roots[i & M];
                at[i & M] = select_unpredictable(*r & INDEX != 0, at[i & M], r as *const u32);
            }
        }
        // A lane's answer, or ([`INDEX`] set) the node it reads next, or (`AT_LEAF`: `INDEX`
        // and `FLAT`) its leaf's cell, read last: a flat block's entry plus the key's next 6
        // bits is its leaf's cell, tagged so (a cell and 63 more are below 2^29, `FLAT`).
        const AT_LEAF: u32 = INDEX | FLAT;
        let mut entry = [0u32; LANES];
        // SAFETY (every read below): `at[i]` is a chunk cell or a root entry of this published
        // version, or `roots[i]`; after it, as in `lookup`, each index is a cell of this
        // version (no branch: in W2 lanes end at the root, a chunk or a node at random).
        for i in 0..LANES {
            let e = unsafe { at[i & M].read() };
            let flat = e & AT_LEAF == AT_LEAF;
            let v = Self::next6(keys[i] << Self::S);
            prefetch(select_unpredictable(
                flat,
                leaf_cells.addr(node_cell(e).wrapping_add(v)) as *const u8,
                nodes.addr(node_cell(e)) as *const u8,
            ));
            entry[i & M] = select_unpredictable(flat, e.wrapping_add(v), e);
        }
        // Node levels: each lane's node gives a leaf (its cell in `entry`, read last) or a
        // child. Only the lanes at a node are visited, from a mask of them (issue 15,
        // twenty-sixth round): most W1 IPv4 lanes end in a flat block (a /24), and testing
        // every lane's entry took 8 instructions a lane a level. IPv4 W1 bulk 59.3 -> 53.6
        // instructions a lookup, IPv6 158.7 -> 158.2 (callgrind, `fib_profile 4|6`).
        let mut walking = at_node(&entry);
        for level in 0..A::BULK_NODE_STAGES {
            let mut lanes = walking;
            while lanes != 0 {
                let i = lanes.trailing_zeros() as usize & M;
                lanes &= lanes - 1;
                let e = entry[i];
                let node = unsafe { nodes.get_unchecked(node_cell(e)) };
                let v = Self::next6(keys[i] << (Self::S + 6 * level));
                if node.has_child(v) {
                    let child = node.child(v);
                    prefetch(nodes.addr(child));
                    entry[i] = child | INDEX;
                } else {
                    let cell = node.leaf(v);
                    prefetch(leaf_cells.addr(cell));
                    entry[i] = cell | AT_LEAF;
                    walking &= !(1 << i);
                }
            }
        }
        let rest = Self::S + 6 * A::BULK_NODE_STAGES;
        for i in 0..LANES {
            let e = entry[i & M];
            out[i] = if e & AT_LEAF == AT_LEAF {
                unsafe { leaf_cells.get_unchecked(node_cell(e)) }.unpack()
            } else if e & INDEX == 0 {
                e
            } else {
                unsafe { self.walk(leaves, node_cell(e), keys[i] << rest) }
            };
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
