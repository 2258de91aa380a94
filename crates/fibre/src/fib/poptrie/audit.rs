//! The walk of a version in key order, and what it gives: stats, the image that patched and
//! fresh encodings are compared by, and the audit of the arenas' accounts.
use super::*;

impl<A: FibFamily> Poptrie<A> {
    /// Walks the structure in key order; `f` gets each cell's content in a canonical form
    /// (no arena offsets), what it is, and its node depth.
    pub(super) fn walk(&self, mut f: impl FnMut(Cell, usize)) {
        let ar = &*self.arenas;
        fn node<F: FnMut(Cell, usize)>(ar: &Arenas, i: u32, depth: usize, f: &mut F) {
            let n = ar.nodes.get(i);
            f(Cell::Node(n.vector), depth);
            f(Cell::Node(n.leafvec), depth);
            for k in 0..n.leafvec.count_ones() {
                f(Cell::Leaf(ar.leaves.get(n.base0 + k)), depth);
            }
            for k in 0..n.vector.count_ones() {
                node(ar, n.base1 + k, depth + 1, f);
            }
        }
        let chunk = self.chunk_len();
        for &r in &self.root {
            if r & INDEX == 0 {
                f(Cell::Answer(r, chunk), 0);
                continue;
            }
            for i in 0..chunk as u32 {
                let e = ar.chunks.get((r & !INDEX) + i);
                if e & INDEX == 0 {
                    f(Cell::Answer(e, 1), 0);
                } else if e & FLAT != 0 {
                    f(Cell::Flat, 0);
                    for id in ar.leaves.get_block(node_cell(e)) {
                        f(Cell::Leaf(id), 1);
                    }
                } else {
                    f(Cell::Subtree, 0);
                    node(ar, node_cell(e), 1, &mut f);
                }
            }
        }
    }

    /// [`LpmAlgorithm::stats`].
    pub(super) fn shape(&self) -> FibStats {
        // Depth and counts from what a version reaches; bytes from the arenas (blocks waiting
        // for their last reader included).
        let (mut max_depth, mut nodes, mut leaves, mut depths, mut answers) = (0, 0, 0, 0, 0);
        self.walk(|cell, d| {
            max_depth = max_depth.max(d);
            match cell {
                Cell::Node(_) => nodes += 1,
                Cell::Leaf(_) => {
                    leaves += 1;
                    answers += 1;
                    depths += d;
                }
                Cell::Answer(..) => answers += 1,
                Cell::Subtree | Cell::Flat => {}
            }
        });
        FibStats {
            bytes: self.root.len() * 4
                + self.chunks.live() * 4
                + self.nodes.live() * std::mem::size_of::<Node>()
                + self.leaves.live() * self.arenas.leaves.width(),
            nodes: nodes / 2, // two words a node
            leaves,
            max_depth,
            mean_depth: depths as f64 / answers.max(1) as f64,
            rebuilds: self.rebuilds,
        }
    }

    /// The answer every entry of the chunk at `off` gives, if they are one answer (no subtree):
    /// such a chunk belongs in its root entry.
    pub(super) fn one_answer(&self, off: u32) -> Option<u32> {
        let ar = &self.arenas.chunks;
        let first = ar.get(off);
        let len = self.chunk_len() as u32;
        (first & INDEX == 0 && (1..len).all(|i| ar.get(off + i) == first)).then_some(first)
    }

    /// [`LpmAlgorithm::image`]. Answers of the root and the chunks come as runs over the
    /// slots, an id and a count, and chunks are not marked: the image is the same whatever
    /// the root's size (a fresh build may size it otherwise than the one updates patched).
    pub(super) fn words(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut run: Option<(u32, usize)> = None;
        self.walk(|cell, _| match (cell, &mut run) {
            (Cell::Answer(id, n), Some((last, slots))) if id == *last => *slots += n,
            (Cell::Answer(id, n), _) => {
                if let Some((last, slots)) = run.replace((id, n)) {
                    out.extend([u64::from(last), slots as u64]);
                }
            }
            _ => {
                if let Some((last, slots)) = run.take() {
                    out.extend([u64::from(last), slots as u64]);
                }
                out.push(cell.word());
            }
        });
        if let Some((last, slots)) = run {
            out.extend([u64::from(last), slots as u64]);
        }
        out
    }

    /// [`LpmAlgorithm::audit`].
    pub(super) fn check_accounts(&mut self) -> Result<(), String> {
        // Blocks retired by versions nobody holds are back; what remains handed out must be
        // exactly what the current version reaches (the nodes and leaves `stats` walks, and a
        // whole chunk per root entry that points to one).
        self.reclaim();
        let reached = self.stats();
        let chunks = self.root.iter().filter(|&&r| r & INDEX != 0).count() * self.chunk_len();
        // Each node with leaves has its pad cells too (see `leaves`), apart from every other
        // node's.
        let pad = self.arenas.leaves.pad();
        let mut blocks = self.leaf_blocks();
        blocks.sort_unstable();
        if let Some(w) = blocks.windows(2).find(|w| w[0].0 + w[0].1 + pad > w[1].0) {
            return Err(format!(
                "leaves and pad cells overlap: {w:?}, {pad} pad cells"
            ));
        }
        let (nodes, leaves) = (reached.nodes, reached.leaves + pad as usize * blocks.len());
        let live = (self.chunks.live(), self.nodes.live(), self.leaves.live());
        if live != (chunks, nodes, leaves) {
            return Err(format!(
                "cells handed out (chunks, nodes, leaves) {live:?}, reachable {:?}",
                (chunks, nodes, leaves)
            ));
        }
        // A chunk stored holds more than one answer (else its root entry holds the answer, as
        // a fresh build makes it; the image does not show where chunks are).
        for &r in self.root.iter().filter(|&&r| r & INDEX != 0) {
            if let Some(answer) = self.one_answer(r & !INDEX) {
                return Err(format!(
                    "root entry {r:#x}: a chunk of one answer, {answer}"
                ));
            }
        }
        let ar = &*self.arenas;
        // Each chunk entry's `LEAVES_ONLY` tag says whether its top node has a child (the
        // vector lookups trust it), and a top node without one is flat exactly where
        // `flat_pays` (as a fresh build of the same leaf width makes it).
        let width = ar.leaves.width();
        for e in self.subtree_entries() {
            if e & FLAT != 0 {
                // A flat block is one only where it pays, and is not one leaf throughout.
                let ids = ar.leaves.get_block(node_cell(e));
                let runs = runs_of(&ids);
                if e & LEAVES_ONLY != 0 || runs == 1 || !flat_pays(width, runs) {
                    return Err(format!("chunk entry {e:#x}: a flat block of {runs} runs"));
                }
                continue;
            }
            let top = ar.nodes.get(node_cell(e));
            if (e & LEAVES_ONLY != 0) != (top.vector == 0) {
                return Err(format!(
                    "chunk entry {e:#x}: its LEAVES_ONLY tag disagrees with its top node"
                ));
            }
            if top.vector == 0 && flat_pays(width, top.leafvec.count_ones()) {
                return Err(format!(
                    "chunk entry {e:#x}: a top node that pays to be flat"
                ));
            }
        }
        Ok(())
    }

    /// The chunk entries of the current version that hold a subtree or a flat block ([`INDEX`]
    /// set).
    fn subtree_entries(&self) -> impl Iterator<Item = u32> + '_ {
        let ar = &*self.arenas;
        let chunk = self.chunk_len() as u32;
        self.root
            .iter()
            .filter(|&&r| r & INDEX != 0)
            .flat_map(move |&r| (0..chunk).map(move |i| (r & !INDEX) + i))
            .map(|c| ar.chunks.get(c))
            .filter(|&e| e & INDEX != 0)
    }

    /// The first leaf and the number of leaves of every node the current version reaches that
    /// has leaves, and of every flat block (64).
    pub(super) fn leaf_blocks(&self) -> Vec<(u32, u32)> {
        let ar = &*self.arenas;
        let mut out = Vec::new();
        let mut stack = Vec::new();
        for e in self.subtree_entries() {
            match e & FLAT {
                0 => stack.push(node_cell(e)),
                _ => out.push((node_cell(e), 64)),
            }
        }
        while let Some(i) = stack.pop() {
            let n = ar.nodes.get(i);
            if n.leafvec != 0 {
                out.push((n.base0, n.leafvec.count_ones()));
            }
            stack.extend((0..n.vector.count_ones()).map(|k| n.base1 + k));
        }
        out
    }
}

/// What [`Poptrie::walk`] reports, in key order.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Cell {
    /// A root or chunk entry that answers itself (an id or no route), and the slots it
    /// covers.
    Answer(u32, usize),
    /// A chunk entry pointing to a subtree (its nodes follow).
    Subtree,
    /// A chunk entry pointing to a flat block (its 64 leaves follow).
    Flat,
    /// One word of a node: its child vector, then its leaf vector.
    Node(u64),
    /// A leaf.
    Leaf(u32),
}

impl Cell {
    /// The cell as a word of [`LpmAlgorithm::image`]: pointers become markers, so that equal
    /// structures give equal images wherever their blocks lie.
    fn word(self) -> u64 {
        match self {
            Cell::Answer(id, _) | Cell::Leaf(id) => id as u64,
            Cell::Subtree => u64::MAX - 1,
            Cell::Flat => u64::MAX - 2,
            Cell::Node(w) => w,
        }
    }
}
