//! IPv4's AVX-512 kernel: 16 lanes of 32 bits a vector, where [`super::simd`]'s kernel for
//! both families carries 8 of 64. An IPv4 key, a chunk entry, a leaf's cell and an answer all
//! fit in 32 bits, so the root, chunk and leaf stages (all an IPv4 W1 key usually takes: most
//! end in a flat block) take half the vectors and half the gathers. Only node levels need
//! 64-bit lanes (a node's words are 64 bits): the few lanes that reach a node go through them
//! in halves of 8, widened, and come back narrowed.
#![cfg(target_arch = "x86_64")]
use super::simd_tables::{node_step, Tables};
use super::{FLAT, INDEX, LEAVES_ONLY};
use crate::fib::NO_ROUTE;
use core::arch::x86_64::*;

/// What a group's first stages leave its leaf stage: each lane's answer so far, and the
/// lanes at a leaf with its cell.
struct Front<const V: usize> {
    answer: [__m512i; V],
    leaf_at: [__m512i; V],
    at_leaf: [__mmask16; V],
}

/// The kernel on one group: [`front`], then [`back`].
///
/// # Safety
/// As [`front`]; `out` has room for `N` answers.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub(super) unsafe fn avx512_v4<const N: usize, const V: usize>(
    t: &Tables,
    keys: *const u32,
    roots: &[u32; N],
    out: *mut u32,
) {
    // SAFETY: the caller's contract.
    unsafe { back(t, &front::<N, V>(t, keys, roots), out) }
}

/// A group's root, chunk and node stages: `V` vectors of 16 lanes, `N` keys.
///
/// `roots` holds each key's root entry (read by the caller). Reads as [`super::simd`]'s
/// `avx512`: every gather reads cells of the published version that belong to what the lane
/// reached, and lanes that have their answer are masked off and read nothing. Cells of every
/// arena are below [`FLAT`] (2^29: their allocators stop there), so a cell, a chunk entry's
/// cell plus the slot's place in its chunk, or a leaf's byte offset (at most 4 bytes a cell:
/// below 2^31), is a non-negative 32-bit gather index.
///
/// # Safety
/// The CPU has AVX-512F and AVX512-VPOPCNTDQ; `t` is a published version's; `keys` and `roots`
/// hold `N` entries each.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn front<const N: usize, const V: usize>(
    t: &Tables,
    keys: *const u32,
    roots: &[u32; N],
) -> Front<V> {
    const { assert!(N == 16 * V && FLAT == 1 << 29) };
    debug_assert!(t.leaf_shift <= 2);
    let zero = _mm512_setzero_si512();
    let index = _mm512_set1_epi32(INDEX as i32);
    let leaves_only = _mm512_set1_epi32(LEAVES_ONLY as i32);
    let flat_tag = _mm512_set1_epi32(FLAT as i32);
    let tags = _mm512_set1_epi32((INDEX | LEAVES_ONLY | FLAT) as i32);
    let shift = |n: u32| _mm_cvtsi64_si128(n as i64);
    let (r, s) = (t.r, t.s);
    let mut key = [zero; V];
    let mut cell = [zero; V];
    let mut live = [0 as __mmask16; V];
    let mut branching = [0 as __mmask16; V];
    let mut f = Front {
        answer: [zero; V],
        leaf_at: [zero; V],
        at_leaf: [0; V],
    };
    // SAFETY (the whole body): loads of keys and roots are 16 lanes at 16j, j < V (the
    // caller's contract); gathers read published cells (above).
    unsafe {
        // The root entries, then the chunk entries.
        for j in 0..V {
            let k = _mm512_loadu_si512(keys.add(16 * j) as *const _);
            let e = _mm512_loadu_si512(roots.as_ptr().add(16 * j) as *const _);
            key[j] = k;
            f.answer[j] = e;
            live[j] = _mm512_test_epi32_mask(e, index);
            let chunk = _mm512_srl_epi32(_mm512_sll_epi32(k, shift(r)), shift(32 - (s - r)));
            cell[j] = _mm512_add_epi32(_mm512_andnot_si512(index, e), chunk);
        }
        for j in 0..V {
            let m = live[j];
            if m == 0 {
                continue; // a gather costs its microcode even with no lane on
            }
            let e = _mm512_mask_i32gather_epi32::<4>(zero, m, cell[j], t.chunks);
            let node = _mm512_mask_test_epi32_mask(m, e, index);
            f.answer[j] = _mm512_mask_mov_epi32(f.answer[j], m & !node, e);
            let c = _mm512_andnot_si512(tags, e);
            cell[j] = c;
            // A flat block's lanes have their leaf's cell: the block's first plus the next 6
            // bits.
            let flat = _mm512_mask_test_epi32_mask(node, e, flat_tag);
            let next6 = _mm512_srli_epi32::<26>(_mm512_sll_epi32(key[j], shift(s)));
            f.leaf_at[j] = _mm512_mask_add_epi32(f.leaf_at[j], flat, c, next6);
            f.at_leaf[j] = flat;
            live[j] = node & !flat;
            branching[j] = live[j] & !_mm512_mask_test_epi32_mask(live[j], e, leaves_only);
        }
        if live.iter().any(|&m| m != 0) {
            node_levels::<V>(t, &key, &cell, &live, &branching, &mut f);
        }
    }
    f
}

/// A group's leaf stage (a stage of its own, as in `simd::avx512`: a leaf is read as the 4
/// bytes from its first), and its answers written.
///
/// # Safety
/// The CPU has AVX-512F; `f` is [`front`]'s on `t`, a published version that is still held;
/// `out` has room for `16 V` answers.
#[target_feature(enable = "avx512f")]
unsafe fn back<const V: usize>(t: &Tables, f: &Front<V>, out: *mut u32) {
    let zero = _mm512_setzero_si512();
    let leaf_bits = _mm512_set1_epi32(t.leaf_bits as i32);
    let no_route = _mm512_set1_epi32(NO_ROUTE as i32);
    // SAFETY: gathers of published leaves (above), stores of 16 answers at 16j, j < V.
    unsafe {
        for j in 0..V {
            let m = f.at_leaf[j];
            let mut answer = f.answer[j];
            if m != 0 {
                let at = _mm512_sll_epi32(f.leaf_at[j], _mm_cvtsi64_si128(t.leaf_shift as i64));
                let cells = _mm512_mask_i32gather_epi32::<1>(zero, m, at, t.leaves as *const i32);
                let id = _mm512_and_si512(cells, leaf_bits);
                let none = _mm512_cmpeq_epi32_mask(id, leaf_bits);
                let id = _mm512_mask_mov_epi32(id, none, no_route);
                answer = _mm512_mask_mov_epi32(answer, m, id);
            }
            _mm512_storeu_si512(out.add(16 * j) as *mut _, answer);
        }
    }
}

/// The node levels of the lanes at a node (`live`, starting at node `cell`), in halves of 8
/// lanes widened to 64 bits, level by level over all of them: each ends at a leaf, whose cell
/// and lane go into `f` at the level it ends.
///
/// # Safety
/// As [`front`]; each live lane's `cell` is a node of the published version.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn node_levels<const V: usize>(
    t: &Tables,
    key: &[__m512i; V],
    cell: &[__m512i; V],
    live: &[__mmask16; V],
    branching: &[__mmask16; V],
    f: &mut Front<V>,
) {
    let zero = _mm512_setzero_si512();
    let past_slot = _mm_cvtsi64_si128(32 + t.s as i64);
    let widen = |v: __m512i, half: usize| {
        _mm512_cvtepu32_epi64(if half == 0 {
            _mm512_castsi512_si256(v)
        } else {
            _mm512_extracti64x4_epi64::<1>(v)
        })
    };
    // Each vector's two halves (made in place: arrays of vectors set to zero first cost a
    // `memset` a group): its node cells, its keys past the bits resolved (at the top of 64
    // bits), its live lanes and those whose node may have a child.
    let mut c: [[__m512i; 2]; V] = core::array::from_fn(|j| [widen(cell[j], 0), widen(cell[j], 1)]);
    let mut h: [[__m512i; 2]; V] = core::array::from_fn(|j| {
        [0, 1].map(|half| _mm512_sll_epi64(widen(key[j], half), past_slot))
    });
    let halves = |m: __mmask16| [m as __mmask8, (m >> 8) as __mmask8];
    let mut on: [[__mmask8; 2]; V] = core::array::from_fn(|j| halves(live[j]));
    let mut br: [[__mmask8; 2]; V] = core::array::from_fn(|j| halves(branching[j]));
    // SAFETY (every gather): node words of published nodes, for live lanes only.
    unsafe {
        loop {
            let mut any: __mmask8 = 0;
            for j in 0..V {
                for half in 0..2 {
                    let m = on[j][half];
                    if m == 0 {
                        continue;
                    }
                    // Lanes all at top nodes without a child skip a gather (as in
                    // `simd::avx512`).
                    let step = node_step(t, m, c[j][half], h[j][half], br[j][half] == 0);
                    let leaf = step.leaf;
                    if leaf != 0 {
                        // Narrowed into the lanes of the half: a cell fits in 32 bits.
                        let at = _mm512_cvtepi64_epi32(step.leaf_at);
                        let (cells, lanes) = if half == 0 {
                            (_mm512_castsi256_si512(at), leaf as __mmask16)
                        } else {
                            (_mm512_inserti64x4::<1>(zero, at), (leaf as __mmask16) << 8)
                        };
                        f.leaf_at[j] = _mm512_mask_mov_epi32(f.leaf_at[j], lanes, cells);
                        f.at_leaf[j] |= lanes;
                    }
                    c[j][half] = step.next;
                    h[j][half] = _mm512_slli_epi64::<6>(h[j][half]);
                    on[j][half] = step.child;
                    br[j][half] = step.child;
                    any |= step.child;
                }
            }
            if any == 0 {
                break;
            }
        }
    }
}
