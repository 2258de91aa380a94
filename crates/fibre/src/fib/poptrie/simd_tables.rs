//! What the AVX-512 and AVX2 bulk kernels read, a published version's arrays and shape
//! ([`Tables`]), and the node level both AVX-512 kernels take ([`node_step`]): `simd`'s, for
//! both families in 8 lanes of 64 bits, and `simd4`'s, IPv4's in 16 lanes of 32 bits, which
//! widens the lanes at a node into halves of 8.
#![cfg(target_arch = "x86_64")]
use super::{Node, PoptrieView};
use crate::fib::FibFamily;
use core::arch::x86_64::*;

/// What a kernel reads: the published version's arrays and its shape.
pub(super) struct Tables {
    pub(super) chunks: *const i32,
    /// The node arena as 64-bit words: node `n`'s `vector`, `leafvec` and `base0 | base1 << 32`
    /// are words `3n`, `3n + 1` and `3n + 2`.
    pub(super) words: *const i64,
    /// The leaf arena's first byte: a leaf is read as the 4 bytes at byte offset cell x width,
    /// which are its node's or flat block's own (their pad cells: see `leaves`), and
    /// `leaf_bits` of them kept.
    pub(super) leaves: *const u8,
    /// Log2 of a leaf's width in bytes.
    pub(super) leaf_shift: u32,
    /// A leaf's bits, all ones in a lane of 64 bits; a narrow cell of all ones stands for
    /// [`NO_ROUTE`](crate::fib::NO_ROUTE) (a 4-byte one is never all ones: ids stop at
    /// `MAX_ID`).
    pub(super) leaf_bits: i64,
    /// Root bits, direct-pointing bits.
    pub(super) r: u32,
    pub(super) s: u32,
    /// [`FibFamily::LEAVES_ONLY_TOPS`].
    pub(super) leaves_only_tops: bool,
}

const _: () = assert!(std::mem::size_of::<Node>() == 24 && std::mem::align_of::<Node>() == 8);

impl<A: FibFamily> PoptrieView<A> {
    /// This version's tables, for a kernel call.
    pub(super) fn tables(&self) -> Tables {
        let ar = &*self.arenas;
        Tables {
            chunks: ar.chunks.addr(0) as *const i32,
            words: ar.nodes.addr(0) as *const i64,
            leaves: ar.leaves.bytes(),
            leaf_shift: ar.leaves.width().trailing_zeros(),
            leaf_bits: (u64::MAX >> (64 - 8 * ar.leaves.width())) as i64,
            r: A::DP_BITS - self.chunk_bits(),
            s: A::DP_BITS,
            leaves_only_tops: A::LEAVES_ONLY_TOPS,
        }
    }
}

/// What one node level gives 8 lanes of 64 bits ([`node_step`]).
pub(super) struct NodeStep {
    /// The lanes that go on to a child, and its cell.
    pub(super) child: __mmask8,
    pub(super) next: __m512i,
    /// The lanes that end at a leaf of the node, and its cell (zero where none ends).
    pub(super) leaf: __mmask8,
    pub(super) leaf_at: __m512i,
}

/// One node level of the AVX-512 kernels, on 8 lanes of 64 bits: lanes `m` at node `cell`, the
/// key's next 6 bits at the top of `h`. The node's three words are gathered (`vector` not
/// where `no_child` says that none of the lanes' nodes has a child: `LEAVES_ONLY`), and each
/// lane goes on to its slot's child or ends at its slot's leaf, found by counting the bits
/// below the slot.
///
/// # Safety
/// The CPU has AVX-512F and AVX512-VPOPCNTDQ; `t` holds a published version's tables, and
/// each lane of `m` is at one of its nodes.
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub(super) unsafe fn node_step(
    t: &Tables,
    m: __mmask8,
    cell: __m512i,
    h: __m512i,
    no_child: bool,
) -> NodeStep {
    let zero = _mm512_setzero_si512();
    let ones = _mm512_set1_epi64(-1);
    let one = _mm512_set1_epi64(1);
    let low32 = _mm512_set1_epi64(u32::MAX as i64);
    let w = _mm512_add_epi64(_mm512_add_epi64(cell, cell), cell);
    // SAFETY (the gathers): the words of published nodes, for the lanes of `m` only.
    let (vector, leafvec, bases) = unsafe {
        (
            if no_child {
                zero
            } else {
                _mm512_mask_i64gather_epi64::<8>(zero, m, w, t.words)
            },
            _mm512_mask_i64gather_epi64::<8>(zero, m, w, t.words.add(1)),
            _mm512_mask_i64gather_epi64::<8>(zero, m, w, t.words.add(2)),
        )
    };
    let v = _mm512_srli_epi64::<58>(h);
    let below = _mm512_srlv_epi64(ones, _mm512_xor_si512(v, _mm512_set1_epi64(63)));
    let child = _mm512_mask_test_epi64_mask(m, vector, _mm512_sllv_epi64(one, v));
    let leaf = m & !child;
    let leaf_at = if leaf != 0 {
        let at = _mm512_add_epi64(
            _mm512_and_si512(bases, low32),
            _mm512_popcnt_epi64(_mm512_and_si512(leafvec, below)),
        );
        _mm512_sub_epi64(at, one)
    } else {
        zero
    };
    let next = _mm512_add_epi64(
        _mm512_srli_epi64::<32>(bases),
        _mm512_popcnt_epi64(_mm512_and_si512(vector, below)),
    );
    NodeStep {
        child,
        next: _mm512_sub_epi64(next, one),
        leaf,
        leaf_at,
    }
}
