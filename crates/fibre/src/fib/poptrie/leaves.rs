//! Leaf cells as narrow as the ids they hold: 1, 2 or 4 bytes, chosen per generation (a full
//! build and the updates after it) by the largest id stored.
//!
//! Why: leaves are most of a full view's structure (989,465 of them for 901,899 IPv4
//! prefixes: 4 MB of 6.4 at 4 bytes), and how much of the structure the last-level cache holds
//! decides the lookups' speed. On this machine kind a process gets 4-8 MB of the shared L3
//! (16 chains of random loads: 1.7-2.0 ns a load up to 4 MB, 2.1-2.8 ns at 8 MB, 11-14 ns
//! from 16 MB on), so 6.4 MB sat on the edge and the lookups swung from run to run (W1
//! dependent lookups 114-300 ns over five runs at 4 bytes, 69-84 ns at one, in a quiet
//! period; see docs/fib.md).
//! A FIB of next-hop indexes (the bench's 16, DPDK's `nh_sz`) needs a byte a leaf; the
//! router's FIB ids (a table's position and a destination's index) need four.
//!
//! All ones stands for [`NO_ROUTE`] in a narrow cell. An update that stores an id wider than
//! the generation's cells rebuilds into wider ones; ids that shrink narrow the cells at the
//! next full build.
//!
//! The vector paths read a leaf of any width as the four bytes from its first one (a gather's
//! elements are 4 bytes at least) and keep its width's low bytes. So that this read never
//! reaches a cell the writer may be writing, each node's leaves are followed by
//! [`Leaves::pad`] cells of the node's own (copies of its last leaf): placed, written and
//! retired with its leaves. A flat block's 64 leaves (see `FLAT`) are followed by as many.
use super::super::arena::RawArena;
use super::super::{MAX_ID, NO_ROUTE};

/// An integer a leaf is stored as.
pub(super) trait Cell: Copy + Send + Sync + 'static {
    /// The largest id the cell holds.
    const MAX: u32;
    /// The cell for `id`: itself up to [`Cell::MAX`], no route for [`NO_ROUTE`] and for a
    /// wider id.
    fn pack(id: u32) -> Self;
    /// The id a cell holds.
    fn unpack(self) -> u32;
}

macro_rules! narrow_cell {
    ($t:ty) => {
        impl Cell for $t {
            /// All ones stands for [`NO_ROUTE`].
            const MAX: u32 = <$t>::MAX as u32 - 1;
            #[inline(always)]
            fn pack(id: u32) -> Self {
                // Wider ids reach here only through a change `update` was not told of (its
                // contract: answers unspecified, never unsound); they read as no route.
                if id <= <Self as Cell>::MAX {
                    id as $t
                } else {
                    <$t>::MAX
                }
            }
            #[inline(always)]
            fn unpack(self) -> u32 {
                if self == <$t>::MAX {
                    NO_ROUTE
                } else {
                    self as u32
                }
            }
        }
    };
}
narrow_cell!(u8);
narrow_cell!(u16);

impl Cell for u32 {
    const MAX: u32 = MAX_ID;
    #[inline(always)]
    fn pack(id: u32) -> Self {
        id
    }
    #[inline(always)]
    fn unpack(self) -> u32 {
        self
    }
}

/// The leaf arena of a generation, in cells of one width.
pub(super) enum Leaves {
    Byte(RawArena<u8>),
    Half(RawArena<u16>),
    Word(RawArena<u32>),
}

/// Runs `$body` with `$arena` bound to the leaf arena at its width (a generic body, compiled
/// once per width: lookups choose the width once per call, not per leaf).
macro_rules! with_leaves {
    ($leaves:expr, $arena:ident => $body:expr) => {
        match $leaves {
            $crate::fib::poptrie::leaves::Leaves::Byte($arena) => $body,
            $crate::fib::poptrie::leaves::Leaves::Half($arena) => $body,
            $crate::fib::poptrie::leaves::Leaves::Word($arena) => $body,
        }
    };
}
pub(super) use with_leaves;

impl Leaves {
    /// An arena (see [`RawArena::reserving`]) of the narrowest cells that hold `max_id` (an id
    /// stored, or [`NO_ROUTE`] for none).
    pub(super) fn reserving(max_id: u32, cap: usize, reserve: usize) -> Self {
        match Self::width_for(max_id) {
            1 => Leaves::Byte(RawArena::reserving(cap, reserve)),
            2 => Leaves::Half(RawArena::reserving(cap, reserve)),
            _ => Leaves::Word(RawArena::reserving(cap, reserve)),
        }
    }
    /// Bytes a leaf takes in the narrowest cells that hold `max_id` (an id stored, or
    /// [`NO_ROUTE`] for none).
    pub(super) fn width_for(max_id: u32) -> usize {
        let max_id = if max_id == NO_ROUTE { 0 } else { max_id };
        if max_id <= <u8 as Cell>::MAX {
            1
        } else if max_id <= <u16 as Cell>::MAX {
            2
        } else {
            4
        }
    }
    /// Cells of its own after a node's leaves, for leaves `width` bytes wide: a 4-byte read
    /// from its last leaf ends in them (see the module docs).
    pub(super) fn pad_for(width: usize) -> u32 {
        (4 / width - 1) as u32
    }
    /// [`Leaves::pad_for`] these cells.
    pub(super) fn pad(&self) -> u32 {
        Self::pad_for(self.width())
    }
    /// Bytes a leaf takes.
    pub(super) fn width(&self) -> usize {
        with_leaves!(self, a => size_of_cell(a))
    }
    /// The largest id these cells hold.
    pub(super) fn max_held(&self) -> u32 {
        with_leaves!(self, a => max_of(a))
    }
    /// Whether `id` (an id to store, or [`NO_ROUTE`]) fits these cells.
    pub(super) fn holds(&self, id: u32) -> bool {
        id == NO_ROUTE || id <= with_leaves!(self, a => max_of(a))
    }
    /// The id of leaf `i` (checked).
    pub(super) fn get(&self, i: u32) -> u32 {
        with_leaves!(self, a => a.get(i).unpack())
    }
    /// The first cell's address, for the vector paths' gathers, which read a leaf as the four
    /// bytes from it (its node's own: see [`Leaves::pad`]) and keep the low
    /// [`Leaves::width`] bytes.
    pub(super) fn bytes(&self) -> *const u8 {
        with_leaves!(self, a => a.addr(0).cast::<u8>())
    }
    /// The ids of the 64 leaves from `first` (checked): a flat block's.
    pub(super) fn get_block(&self, first: u32) -> [u32; 64] {
        with_leaves!(self, a => a.get_array::<64>(first).map(Cell::unpack))
    }
    /// Stores `ids` in the leaves from `first` on (checked): the width chosen once and the
    /// cells written 64 at a time, where a dispatch and a bounds check per cell took 12
    /// instructions a cell (callgrind, a router change in a flat slot).
    ///
    /// # Safety
    /// Only the writer, on cells no published version reaches (as [`RawArena::set`]). The
    /// ids fit ([`Leaves::holds`]); one that does not reads back as [`NO_ROUTE`].
    pub(super) unsafe fn set_all(&self, first: u32, ids: &[u32]) {
        // SAFETY: the caller's contract.
        with_leaves!(self, a => unsafe { write_ids(a, first, ids) })
    }
    pub(super) fn cap(&self) -> usize {
        with_leaves!(self, a => a.cap())
    }
    pub(super) fn region(&self) -> (usize, usize) {
        with_leaves!(self, a => a.region())
    }
    /// [`RawArena::touch_past`].
    ///
    /// # Safety
    /// As [`RawArena::touch_past`].
    pub(super) unsafe fn touch_past(&self, free_from: usize, want: usize) {
        // SAFETY: the caller's contract.
        with_leaves!(self, a => unsafe { a.touch_past(free_from, want) })
    }
}

/// [`Leaves::set_all`] at one width.
///
/// # Safety
/// As [`Leaves::set_all`].
unsafe fn write_ids<C: Cell>(a: &RawArena<C>, first: u32, ids: &[u32]) {
    let mut cells = [C::pack(NO_ROUTE); 64];
    let mut at = first;
    for part in ids.chunks(64) {
        for (c, &id) in cells.iter_mut().zip(part) {
            *c = C::pack(id);
        }
        // SAFETY: the caller's contract.
        unsafe { a.write_slice(at, &cells[..part.len()]) };
        at += part.len() as u32;
    }
}

fn size_of_cell<C: Cell>(_: &RawArena<C>) -> usize {
    std::mem::size_of::<C>()
}

fn max_of<C: Cell>(_: &RawArena<C>) -> u32 {
    C::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each width holds up to its largest id and keeps no route apart from every id.
    #[test]
    fn cells_round_trip_ids_up_to_their_width() {
        for id in [0, 1, 253, 254, NO_ROUTE] {
            assert_eq!(u8::pack(id).unpack(), id);
        }
        for id in [0, 255, 65_534, NO_ROUTE] {
            assert_eq!(u16::pack(id).unpack(), id);
        }
        for id in [0, 65_535, MAX_ID, NO_ROUTE] {
            assert_eq!(u32::pack(id).unpack(), id);
        }
        // A wider id (a change `update` was not told of) reads as no route, never as another.
        assert_eq!(u8::pack(255).unpack(), NO_ROUTE);
        assert_eq!(u16::pack(70_000).unpack(), NO_ROUTE);
        let widths = [
            (0, 1),
            (254, 1),
            (255, 2),
            (65_534, 2),
            (65_535, 4),
            (MAX_ID, 4),
        ];
        for (max, width) in widths {
            let l = Leaves::reserving(max, 16, 16);
            assert_eq!(l.width(), width, "cells for ids up to {max}");
            assert!(l.holds(max) && l.holds(NO_ROUTE));
            if max == 254 || max == 65_534 {
                assert!(!l.holds(max + 1), "an id past {max}");
            }
        }
        assert_eq!(Leaves::reserving(NO_ROUTE, 16, 16).width(), 1);
    }
}
