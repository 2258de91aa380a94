//! Which direct-pointing slots hold longer prefixes: a bitmap in pages, a page made when a slot
//! in it is first set. IPv6's 2^24 slots would take 2 MiB flat, 13 bytes a prefix of its full
//! view; its routes lie in a few regions of 2000::/3, so it makes a few dozen pages of 4 KiB.
use smallvec::SmallVec;

/// Bits a page holds (4 KiB of them).
const PAGE_BITS: usize = 1 << 15;
const PAGE_WORDS: usize = PAGE_BITS / 64;

#[derive(Clone, Default)]
pub(super) struct Occupied {
    pages: Vec<Option<Box<[u64; PAGE_WORDS]>>>,
}

impl Occupied {
    /// Marks `slot` of `slots` (a power of two).
    pub(super) fn set(&mut self, slot: u32, slots: usize) {
        if self.pages.is_empty() {
            self.pages = vec![None; slots.div_ceil(PAGE_BITS)];
        }
        let (page, bit) = (slot as usize / PAGE_BITS, slot as usize % PAGE_BITS);
        let words = self.pages[page].get_or_insert_with(|| Box::new([0; PAGE_WORDS]));
        words[bit / 64] |= 1 << (bit % 64);
    }

    /// Unmarks `slot` (its page stays: a slot marked once tends to be marked again).
    pub(super) fn clear(&mut self, slot: u32) {
        let (page, bit) = (slot as usize / PAGE_BITS, slot as usize % PAGE_BITS);
        if let Some(Some(words)) = self.pages.get_mut(page) {
            words[bit / 64] &= !(1 << (bit % 64));
        }
    }

    /// The marked slots from `first` up to `end` (excluded), ascending, pushed to `out`.
    pub(super) fn marked_in(&self, first: usize, end: usize, out: &mut SmallVec<[u32; 1]>) {
        let end = end.min(self.pages.len() * PAGE_BITS);
        let mut at = first;
        while at < end {
            let page_end = (at / PAGE_BITS + 1) * PAGE_BITS;
            let Some(words) = &self.pages[at / PAGE_BITS] else {
                at = page_end;
                continue;
            };
            let base = at - at % PAGE_BITS;
            while at < end.min(page_end) {
                // The bits of this word from `at` on, and no further than `end`.
                let in_page = at - base;
                let n = (64 - in_page % 64).min(end - at);
                let mut bits = (words[in_page / 64] >> (in_page % 64)) & (u64::MAX >> (64 - n));
                while bits != 0 {
                    out.push((at + bits.trailing_zeros() as usize) as u32);
                    bits &= bits - 1;
                }
                at += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeSet;

    /// The marked slots from `first` to `end`, read both ways.
    fn check(bitmap: &Occupied, model: &BTreeSet<u32>, first: usize, end: usize, slots: usize) {
        let mut got = SmallVec::new();
        bitmap.marked_in(first, end, &mut got);
        let want: Vec<u32> = model
            .range(first as u32..end.min(slots) as u32)
            .copied()
            .collect();
        assert_eq!(got.to_vec(), want, "slots {first}..{end} of {slots}");
    }

    /// Against a set of the marked slots: random marks and unmarks, then random ranges (page
    /// edges, word edges, empty ranges and the whole space among them). Two phases: marks in
    /// a few pages (the rest never made, as IPv6's routes leave them), then everywhere.
    #[test]
    fn marks_read_back_as_a_sorted_set() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(15);
        for slots in [1usize << 18, 1 << 24] {
            let (mut bitmap, mut model) = (Occupied::default(), BTreeSet::new());
            // Nothing marked: no page, nothing read back.
            check(&bitmap, &model, 0, slots, slots);
            let pages = slots / PAGE_BITS;
            let few = [1, pages / 2, pages - 1];
            for phase in 0..2 {
                let near_edges = |rng: &mut rand::rngs::SmallRng| {
                    let page = if phase == 0 {
                        few[rng.gen_range(0..few.len())]
                    } else {
                        rng.gen_range(0..pages)
                    };
                    let off = [0, 1, 63, 64, 65, PAGE_BITS - 1, rng.gen_range(0..PAGE_BITS)];
                    page * PAGE_BITS + off[rng.gen_range(0..off.len())]
                };
                for _ in 0..20_000 {
                    let slot = near_edges(&mut rng) as u32;
                    if rng.gen_bool(0.7) {
                        bitmap.set(slot, slots);
                        model.insert(slot);
                    } else {
                        bitmap.clear(slot);
                        model.remove(&slot);
                    }
                }
                if phase == 0 {
                    let made = bitmap.pages.iter().filter(|p| p.is_some()).count();
                    assert_eq!(made, few.len(), "a page only where a slot was marked");
                }
                for i in 0..2_000 {
                    // Ranges from anywhere (pages never made among them) as well as near marks.
                    let at = |rng: &mut rand::rngs::SmallRng| {
                        if rng.gen_bool(0.3) {
                            rng.gen_range(0..slots)
                        } else {
                            near_edges(rng)
                        }
                    };
                    let (a, b) = (at(&mut rng), at(&mut rng) + 1);
                    let (first, end) = if i == 0 {
                        (0, slots)
                    } else {
                        (a.min(b), a.max(b))
                    };
                    check(&bitmap, &model, first, end, slots);
                }
            }
            // Every mark cleared: the pages stay, and read back nothing.
            for &slot in &model {
                bitmap.clear(slot);
            }
            check(&bitmap, &BTreeSet::new(), 0, slots, slots);
        }
    }
}
