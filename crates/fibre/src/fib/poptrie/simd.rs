//! Bulk lookups in vector registers, stage by stage: every key of a group ([`GROUP`] keys, or
//! [`WIDE_GROUP`] for IPv4 on AVX-512: see [`FibFamily::AVX512_GROUP`]) reads
//! its root entry (scalar loads: the root is in L1), then every lane its chunk entry, then
//! every live lane its first node, and so on, and the lanes that end at a leaf read it last (a
//! lane whose chunk entry names a flat block has its leaf's cell at once: see `FLAT`).
//! A stage's gathers for the whole group are independent, so their cache misses overlap
//! without prefetches, and a lane costs a few vector instructions a level instead of the
//! scalar path's bookkeeping (callgrind: 68 instructions per IPv4 W1 lookup there, 172 per
//! IPv6 one since its 24 bits of direct pointing, 184 with 20).
//!
//! Lanes are 64 bits wide for both families here: a key is carried as its top 64 bits (`hi`)
//! and the 64 after them (`lo`, zero for IPv4), shifted left as levels consume them; node
//! words are gathered as 64-bit values. One kernel per instruction set serves both families,
//! but for AVX-512 IPv4 has its own since issue 15's thirty-third round (`simd4`: 16 lanes of
//! 32 bits, widened only at node levels; both take them through `simd_tables::node_step`).
#![cfg(target_arch = "x86_64")]
use super::leaves::with_leaves;
use super::lookup::{padded, top};
use super::simd4::avx512_v4;
use super::simd_tables::{node_step, Tables};
use super::{PoptrieView, FLAT, INDEX, LEAVES_ONLY};
use crate::addr::Bits;
use crate::fib::FibFamily;
use crate::fib::NO_ROUTE;
use core::arch::x86_64::*;

/// Keys per kernel call: 16 AVX2 vectors of lanes or 8 AVX-512 vectors (IPv4: 4 of 16 lanes),
/// and for AVX-512 a batch's last keys when they are this few.
pub(super) const GROUP: usize = 64;

/// Keys per AVX-512 kernel call of a family whose [`FibFamily::AVX512_GROUP`] is this (IPv4):
/// 8 vectors of 16 lanes (`simd4`). Each stage has twice the independent gathers of a
/// [`GROUP`] to overlap, and pays its loop's fixed work once for twice the keys.
pub(super) const WIDE_GROUP: usize = 128;

impl<A: FibFamily> PoptrieView<A> {
    /// `keys` (at most [`GROUP`]) into `hi`/`lo` lanes; the rest of the group looks up key 0.
    fn split(keys: &[A::Bits]) -> ([u64; GROUP], [u64; GROUP]) {
        let (mut hi, mut lo) = ([0u64; GROUP], [0u64; GROUP]);
        for (i, &k) in keys.iter().enumerate() {
            if A::WIDTH <= 64 {
                hi[i] = k.low_u64() << (64 - A::WIDTH as u32);
            } else {
                hi[i] = (k >> (A::WIDTH as u32 - 64)).low_u64();
                lo[i] = k.low_u64();
            }
        }
        (hi, lo)
    }

    /// Lookups of `keys` (at most [`FibFamily::AVX512_GROUP`]) into `out` (as many) with
    /// AVX-512: one kernel call of that many lanes, or of [`GROUP`] for at most that many keys
    /// (the lanes past the keys look up key 0).
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX512-VPOPCNTDQ.
    pub(super) unsafe fn group_avx512(&self, keys: &[A::Bits], out: &mut [u32]) {
        const { assert!(A::WIDTH == 32 || A::WIDTH == 128) };
        const { assert!(A::AVX512_GROUP == GROUP || A::AVX512_GROUP == WIDE_GROUP) };
        assert!(keys.len() == out.len() && keys.len() <= A::AVX512_GROUP);
        // SAFETY (both): the caller vouches for the CPU.
        if A::AVX512_GROUP == WIDE_GROUP && keys.len() > GROUP {
            unsafe {
                self.group_of_avx512::<WIDE_GROUP, { WIDE_GROUP / 8 }, { WIDE_GROUP / 16 }>(
                    keys, out,
                )
            }
        } else {
            unsafe { self.group_of_avx512::<GROUP, { GROUP / 8 }, { GROUP / 16 }>(keys, out) }
        }
    }

    /// `keys` (at most `N`) as one group of `N`: whole, or padded with key 0 and the answers
    /// past them dropped.
    ///
    /// # Safety
    /// As [`PoptrieView::group_avx512`].
    #[inline(always)]
    unsafe fn group_of_avx512<const N: usize, const V: usize, const W: usize>(
        &self,
        keys: &[A::Bits],
        out: &mut [u32],
    ) {
        // SAFETY (both): the caller vouches for the CPU.
        match (keys.try_into(), out.try_into()) {
            (Ok(k), Ok(o)) => unsafe { self.whole_group_avx512::<N, V, W>(k, o) },
            _ => {
                let mut answers = [0u32; N];
                unsafe { self.whole_group_avx512::<N, V, W>(&padded(keys), &mut answers) };
                out.copy_from_slice(&answers[..out.len()]);
            }
        }
    }

    /// [`PoptrieView::group_avx512`] on a whole group. Where at most
    /// [`FibFamily::FEW_PAST_ROOT`] keys go past the root, they walk one at a time as
    /// [`PoptrieView::lookup`] does and the vector kernel is not run: its stages cost their
    /// gathers' microcode however few lanes they carry. `N` is [`GROUP`] or [`WIDE_GROUP`], in
    /// `V` vectors of 8 lanes of 64 bits, or for IPv4 (`simd4`'s kernel) `W` of 16 of 32.
    ///
    /// # Safety
    /// As [`PoptrieView::group_avx512`].
    #[inline(always)]
    unsafe fn whole_group_avx512<const N: usize, const V: usize, const W: usize>(
        &self,
        keys: &[A::Bits; N],
        out: &mut [u32; N],
    ) {
        let roots = self.roots(keys);
        if A::FEW_PAST_ROOT > 0 {
            // SAFETY: the caller vouches for the CPU.
            let mut walking = unsafe { index_lanes(&roots) };
            // The threshold is a count per 64 keys (doubled for 128 as the scalar path scales
            // it for 16; no family has both yet: IPv4's is 0, IPv6 takes 64).
            if walking.count_ones() <= A::FEW_PAST_ROOT * (N / 64) as u32 {
                *out = roots;
                with_leaves!(&self.arenas.leaves, leaves => {
                    while walking != 0 {
                        let i = walking.trailing_zeros() as usize;
                        walking &= walking - 1;
                        // SAFETY: `roots[i]` is the root entry of `keys[i]` in this published
                        // version.
                        out[i] = unsafe { self.past_root(leaves, roots[i], keys[i]) };
                    }
                });
                return;
            }
        }
        // SAFETY: the caller vouches for the CPU; the tables are this published version's; the
        // kernel reads N keys and N root entries, and writes N answers (IPv4's reads a key as
        // the u32 it is).
        unsafe {
            if A::WIDTH == 32 {
                const { assert!(A::WIDTH != 32 || std::mem::size_of::<A::Bits>() == 4) };
                // `simd4` skips the top nodes' `vector` gather by the tag, as the IPv4 setting
                // says.
                const { assert!(A::WIDTH != 32 || A::LEAVES_ONLY_TOPS) };
                let keys = keys.as_ptr() as *const u32;
                avx512_v4::<N, W>(&self.tables(), keys, &roots, out.as_mut_ptr())
            } else {
                avx512::<A, N, V>(&self.tables(), keys, &roots, out.as_mut_ptr())
            }
        }
    }

    /// The root entry of each key, read one at a time: the root is small and in L1, and N
    /// scalar loads cost less than N / 8 gathers (N = 64, AVX-512, Zen 4, `fib_profile`, six
    /// pairs in turn: IPv4 W1 bulk 4.0-4.5 -> 3.7-4.1 ns, W2 3.4-3.9 -> 3.1-3.3; IPv6 W2 1.6 ->
    /// 1.4-1.5). The chunk entries read so too (two passes, the first prefetching) were slower: IPv4 W1
    /// 3.6-3.9 -> 3.9-4.1, IPv6 W2 1.4-1.5 -> 1.7-1.9.
    #[inline(always)]
    fn roots<const N: usize>(&self, keys: &[A::Bits; N]) -> [u32; N] {
        let mut roots = [0u32; N];
        for (r, &k) in roots.iter_mut().zip(keys) {
            *r = self.root_entry(top(k, A::DP_BITS) as u32);
        }
        roots
    }

    /// Lookups of `keys` (at most [`GROUP`]) into `out` with AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2.
    pub(super) unsafe fn group_avx2(&self, keys: &[A::Bits], out: &mut [u32]) {
        let (hi, lo) = Self::split(keys);
        let mut roots = [0u32; GROUP];
        for (r, &h) in roots.iter_mut().zip(&hi) {
            *r = self.root_entry((h >> (64 - A::DP_BITS)) as u32);
        }
        let mut answers = [0u32; GROUP];
        // SAFETY: as above.
        unsafe { avx2(&self.tables(), &hi, &lo, &roots, &mut answers) };
        out.copy_from_slice(&answers[..out.len()]);
    }
}

/// Bit `i` set where `roots[i]` holds a chunk's index ([`INDEX`]): the keys that go on.
///
/// # Safety
/// The CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn index_lanes<const N: usize>(roots: &[u32; N]) -> u128 {
    const { assert!(N.is_multiple_of(16) && N <= 128) };
    let index = _mm512_set1_epi32(INDEX as i32);
    let mut lanes = 0u128;
    for q in 0..N / 16 {
        // SAFETY: 16 entries from 16q, q < N / 16: in the array.
        let v = unsafe { _mm512_loadu_si512(roots.as_ptr().add(16 * q) as *const _) };
        lanes |= u128::from(_mm512_test_epi32_mask(v, index)) << (16 * q);
    }
    lanes
}

/// Keys 8j..8j + 8 as lanes: their top 64 bits and the 64 after them (zero for IPv4), read
/// straight from the keys (a scalar copy into two arrays first cost a tenth of an IPv4 bulk
/// lookup).
///
/// # Safety
/// The CPU has AVX-512F; `j < N / 8`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load_keys<A: FibFamily, const N: usize>(
    keys: &[A::Bits; N],
    j: usize,
) -> (__m512i, __m512i) {
    // The reads below take a key as WIDTH / 8 bytes.
    const { assert!(std::mem::size_of::<A::Bits>() * 8 == A::WIDTH as usize) };
    debug_assert!(j < N / 8);
    let p = keys.as_ptr() as *const u8;
    // SAFETY: 8 keys from 8j, j < N / 8: in the array.
    unsafe {
        if A::WIDTH == 32 {
            let k = _mm512_cvtepu32_epi64(_mm256_loadu_si256(p.add(32 * j) as *const _));
            (_mm512_slli_epi64::<32>(k), _mm512_setzero_si512())
        } else {
            // A u128 in memory is its low 64 bits, then its high 64 (little-endian x86-64).
            let a = _mm512_loadu_si512(p.add(128 * j) as *const _);
            let b = _mm512_loadu_si512(p.add(128 * j + 64) as *const _);
            let high = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
            let low = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
            (
                _mm512_permutex2var_epi64(a, high, b),
                _mm512_permutex2var_epi64(a, low, b),
            )
        }
    }
}

/// The AVX-512 kernel: `V` vectors of 8 lanes, `N` keys; `out` has room for `N` answers.
/// IPv6's: IPv4 takes `simd4`'s. It gathers every node's `vector`, as IPv6's
/// [`FibFamily::LEAVES_ONLY_TOPS`] says (the tag skip lives where IPv4 reads it: `simd4`, and
/// the AVX2 kernel).
///
/// `roots` holds each key's root entry (read by the caller). Every gather below reads cells of
/// a published version that belong to what the lane reached: a chunk entry at an index the
/// root holds, a node's words, a leaf at an index its node or flat block holds, read as the 4
/// bytes from its first, which are their own (see [`Tables::leaves`]); the same invariant as the
/// scalar path's unchecked reads (see `Poptrie`). Lanes that have their answer are masked off
/// and read nothing.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn avx512<A: FibFamily, const N: usize, const V: usize>(
    t: &Tables,
    keys: &[A::Bits; N],
    roots: &[u32; N],
    out: *mut u32,
) {
    const { assert!(N == 8 * V) };
    debug_assert!(
        !A::LEAVES_ONLY_TOPS,
        "a family with the tag skip takes another kernel"
    );
    let index = _mm512_set1_epi64(INDEX as i64);
    let flat_tag = _mm512_set1_epi64(FLAT as i64);
    let tags = _mm512_set1_epi64((INDEX | LEAVES_ONLY | FLAT) as i64);
    let leaf_bits = _mm512_set1_epi64(t.leaf_bits);
    let no_route = _mm512_set1_epi64(NO_ROUTE as i64);
    let shift = |n: u32| _mm_cvtsi64_si128(n as i64);
    let (r, s) = (t.r, t.s);
    let mut h = [_mm512_setzero_si512(); V];
    let mut l = [_mm512_setzero_si512(); V];
    let mut cell = [_mm512_setzero_si512(); V];
    let mut answer = [_mm512_setzero_si512(); V];
    let mut live = [0 as __mmask8; V];
    let mut leaf_at = [_mm512_setzero_si512(); V];
    let mut at_leaf = [0 as __mmask8; V];
    // SAFETY (the whole body): writes of `out` (N answers, the caller's contract) are in
    // bounds (8 lanes at 8j, j < V); gathers read published cells (above).
    unsafe {
        // The root entries, then the chunk entries.
        for j in 0..V {
            (h[j], l[j]) = load_keys::<A, N>(keys, j);
            let e =
                _mm512_cvtepu32_epi64(_mm256_loadu_si256(roots.as_ptr().add(8 * j) as *const _));
            let m = _mm512_test_epi64_mask(e, index);
            answer[j] = e;
            let chunk = _mm512_srl_epi64(_mm512_sll_epi64(h[j], shift(r)), shift(64 - (s - r)));
            cell[j] = _mm512_add_epi64(_mm512_andnot_si512(index, e), chunk);
            live[j] = m;
        }
        for j in 0..V {
            let m = live[j];
            if m == 0 {
                continue; // a gather costs its microcode even with no lane on
            }
            let e = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32::<4>(
                _mm256_setzero_si256(),
                m,
                cell[j],
                t.chunks,
            ));
            let node = _mm512_mask_test_epi64_mask(m, e, index);
            answer[j] = _mm512_mask_mov_epi64(answer[j], m & !node, e);
            cell[j] = _mm512_andnot_si512(tags, e);
            h[j] = _mm512_or_si512(
                _mm512_sll_epi64(h[j], shift(s)),
                _mm512_srl_epi64(l[j], shift(64 - s)),
            );
            l[j] = _mm512_sll_epi64(l[j], shift(s));
            // A flat block's lanes have their leaf's cell: the block's first plus the next 6
            // bits.
            let flat = _mm512_mask_test_epi64_mask(node, e, flat_tag);
            let at = _mm512_add_epi64(cell[j], _mm512_srli_epi64::<58>(h[j]));
            leaf_at[j] = _mm512_mask_mov_epi64(leaf_at[j], flat, at);
            at_leaf[j] |= flat;
            live[j] = node & !flat;
        }
        // Node levels until every lane has its leaf.
        loop {
            let mut any: __mmask8 = 0;
            for j in 0..V {
                let m = live[j];
                if m == 0 {
                    continue;
                }
                let step = node_step(t, m, cell[j], h[j], false);
                if step.leaf != 0 {
                    leaf_at[j] = _mm512_mask_mov_epi64(leaf_at[j], step.leaf, step.leaf_at);
                    at_leaf[j] |= step.leaf;
                }
                cell[j] = step.next;
                h[j] = _mm512_or_si512(_mm512_slli_epi64::<6>(h[j]), _mm512_srli_epi64::<58>(l[j]));
                l[j] = _mm512_slli_epi64::<6>(l[j]);
                live[j] = step.child;
                any |= step.child;
            }
            if any == 0 {
                break;
            }
        }
        // The leaves, a stage of their own: gathered in the node loop, each waited for its
        // node's gather, and fewer misses overlapped (IPv4 W1 4.1 -> 4.7 ns).
        for j in 0..V {
            let m = at_leaf[j];
            if m == 0 {
                continue;
            }
            let at = _mm512_sll_epi64(leaf_at[j], shift(t.leaf_shift));
            let cells = _mm512_cvtepu32_epi64(_mm512_mask_i64gather_epi32::<1>(
                _mm256_setzero_si256(),
                m,
                at,
                t.leaves as *const i32,
            ));
            let id = _mm512_and_si512(cells, leaf_bits);
            let none = _mm512_cmpeq_epi64_mask(id, leaf_bits);
            let id = _mm512_mask_mov_epi64(id, none, no_route);
            answer[j] = _mm512_mask_mov_epi64(answer[j], m, id);
        }
        for (j, a) in answer.iter().enumerate() {
            let ids = _mm512_cvtepi64_epi32(*a);
            _mm256_storeu_si256(out.add(8 * j) as *mut __m256i, ids);
        }
    }
}

/// Population count of each 64-bit lane (AVX2 has none): nibble table lookups, summed per lane.
#[target_feature(enable = "avx2")]
fn popcnt64_avx2(x: __m256i) -> __m256i {
    let table = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let nibble = _mm256_set1_epi8(0x0f);
    let low = _mm256_shuffle_epi8(table, _mm256_and_si256(x, nibble));
    let high = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16::<4>(x), nibble));
    _mm256_sad_epu8(_mm256_add_epi8(low, high), _mm256_setzero_si256())
}

/// The low 32 bits of each 64-bit lane of a lane mask, as the mask of a 4 x 32-bit gather.
#[target_feature(enable = "avx2")]
fn narrow_mask(m: __m256i) -> __m128i {
    _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
        m,
        _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
    ))
}

/// The AVX2 kernel: 16 vectors of 4 lanes, masks as all-ones lanes. Reads as [`avx512`].
#[target_feature(enable = "avx2")]
unsafe fn avx2(
    t: &Tables,
    hi: &[u64; GROUP],
    lo: &[u64; GROUP],
    roots: &[u32; GROUP],
    out: &mut [u32; GROUP],
) {
    const V: usize = GROUP / 4;
    let index = _mm256_set1_epi64x(INDEX as i64);
    let leaves_only = _mm256_set1_epi64x(LEAVES_ONLY as i64);
    let flat_tag = _mm256_set1_epi64x(FLAT as i64);
    let tags = _mm256_set1_epi64x((INDEX | LEAVES_ONLY | FLAT) as i64);
    let ones = _mm256_set1_epi64x(-1);
    let one = _mm256_set1_epi64x(1);
    let low32 = _mm256_set1_epi64x(u32::MAX as i64);
    let leaf_bits = _mm256_set1_epi64x(t.leaf_bits);
    let no_route = _mm256_set1_epi64x(NO_ROUTE as i64);
    let zero = _mm256_setzero_si256();
    let shift = |n: u32| _mm_cvtsi64_si128(n as i64);
    let any = |m: __m256i| _mm256_movemask_pd(_mm256_castsi256_pd(m)) != 0;
    let (r, s) = (t.r, t.s);
    let mut h = [zero; V];
    let mut l = [zero; V];
    let mut cell = [zero; V];
    let mut answer = [zero; V];
    let mut live = [zero; V];
    // As in `avx512`: the live lanes whose node may have a child.
    let mut branching = [zero; V];
    let mut leaf_at = [zero; V];
    let mut at_leaf = [zero; V];
    // SAFETY (the whole body): as in `avx512`, 4 lanes at 4j, j < V.
    unsafe {
        for j in 0..V {
            h[j] = _mm256_loadu_si256(hi.as_ptr().add(4 * j) as *const __m256i);
            l[j] = _mm256_loadu_si256(lo.as_ptr().add(4 * j) as *const __m256i);
            let e = _mm256_cvtepu32_epi64(_mm_loadu_si128(roots.as_ptr().add(4 * j) as *const _));
            answer[j] = e;
            live[j] = _mm256_cmpeq_epi64(_mm256_and_si256(e, index), index);
            let chunk = _mm256_srl_epi64(_mm256_sll_epi64(h[j], shift(r)), shift(64 - (s - r)));
            cell[j] = _mm256_add_epi64(_mm256_andnot_si256(index, e), chunk);
        }
        for j in 0..V {
            let m = live[j];
            if !any(m) {
                continue;
            }
            let e = _mm256_cvtepu32_epi64(_mm256_mask_i64gather_epi32::<4>(
                _mm_setzero_si128(),
                t.chunks,
                cell[j],
                narrow_mask(m),
            ));
            let node = _mm256_and_si256(m, _mm256_cmpeq_epi64(_mm256_and_si256(e, index), index));
            let done = _mm256_andnot_si256(node, m);
            answer[j] = _mm256_blendv_epi8(answer[j], e, done);
            cell[j] = _mm256_andnot_si256(tags, e);
            h[j] = _mm256_or_si256(
                _mm256_sll_epi64(h[j], shift(s)),
                _mm256_srl_epi64(l[j], shift(64 - s)),
            );
            l[j] = _mm256_sll_epi64(l[j], shift(s));
            // As in `avx512`: a flat block's lanes have their leaf's cell.
            let tagged = |tag| _mm256_cmpeq_epi64(_mm256_and_si256(e, tag), tag);
            let flat = _mm256_and_si256(node, tagged(flat_tag));
            let at = _mm256_add_epi64(cell[j], _mm256_srli_epi64::<58>(h[j]));
            leaf_at[j] = _mm256_blendv_epi8(leaf_at[j], at, flat);
            at_leaf[j] = _mm256_or_si256(at_leaf[j], flat);
            live[j] = _mm256_andnot_si256(flat, node);
            branching[j] = _mm256_andnot_si256(tagged(leaves_only), live[j]);
        }
        loop {
            let mut more = false;
            for j in 0..V {
                let m = live[j];
                if !any(m) {
                    continue;
                }
                let w = _mm256_add_epi64(_mm256_add_epi64(cell[j], cell[j]), cell[j]);
                let vector = if t.leaves_only_tops && !any(branching[j]) {
                    zero
                } else {
                    _mm256_mask_i64gather_epi64::<8>(zero, t.words, w, m)
                };
                let leafvec = _mm256_mask_i64gather_epi64::<8>(zero, t.words.add(1), w, m);
                let bases = _mm256_mask_i64gather_epi64::<8>(zero, t.words.add(2), w, m);
                let v = _mm256_srli_epi64::<58>(h[j]);
                let below = _mm256_srlv_epi64(ones, _mm256_xor_si256(v, _mm256_set1_epi64x(63)));
                let bit = _mm256_sllv_epi64(one, v);
                let child =
                    _mm256_and_si256(m, _mm256_cmpeq_epi64(_mm256_and_si256(vector, bit), bit));
                let leaf = _mm256_andnot_si256(child, m);
                if any(leaf) {
                    let at = _mm256_add_epi64(
                        _mm256_and_si256(bases, low32),
                        popcnt64_avx2(_mm256_and_si256(leafvec, below)),
                    );
                    leaf_at[j] = _mm256_blendv_epi8(leaf_at[j], _mm256_sub_epi64(at, one), leaf);
                    at_leaf[j] = _mm256_or_si256(at_leaf[j], leaf);
                }
                let next = _mm256_add_epi64(
                    _mm256_srli_epi64::<32>(bases),
                    popcnt64_avx2(_mm256_and_si256(vector, below)),
                );
                cell[j] = _mm256_sub_epi64(next, one);
                h[j] = _mm256_or_si256(_mm256_slli_epi64::<6>(h[j]), _mm256_srli_epi64::<58>(l[j]));
                l[j] = _mm256_slli_epi64::<6>(l[j]);
                live[j] = child;
                branching[j] = child;
                more |= any(child);
            }
            if !more {
                break;
            }
        }
        // The leaves, a stage of their own, as in `avx512`.
        for j in 0..V {
            let m = at_leaf[j];
            if !any(m) {
                continue;
            }
            let at = _mm256_sll_epi64(leaf_at[j], shift(t.leaf_shift));
            let cells = _mm256_cvtepu32_epi64(_mm256_mask_i64gather_epi32::<1>(
                _mm_setzero_si128(),
                t.leaves as *const i32,
                at,
                narrow_mask(m),
            ));
            let id = _mm256_and_si256(cells, leaf_bits);
            let id = _mm256_blendv_epi8(id, no_route, _mm256_cmpeq_epi64(id, leaf_bits));
            answer[j] = _mm256_blendv_epi8(answer[j], id, m);
        }
        for (j, a) in answer.iter().enumerate() {
            // The low 32 bits of each lane, packed into the low 128 bits.
            let ids = narrow_mask(*a);
            _mm_storeu_si128(out.as_mut_ptr().add(4 * j) as *mut __m128i, ids);
        }
    }
}
