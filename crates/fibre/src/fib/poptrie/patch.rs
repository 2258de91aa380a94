//! Updates: the nodes a change touches re-encoded, their ancestors copied up to the
//! direct-pointing entry (path copying), the chunks written copied once per batch.
use super::repaint::Repaint;
use super::*;

impl<A: FibFamily> Poptrie<A> {
    /// The chunk of root entry `ri`, copied (or made from a uniform entry) the first time this
    /// batch writes it. `fresh` lists the chunks made in this batch, ascending.
    pub(super) fn chunk_for_write(
        &mut self,
        ri: usize,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<u32> {
        let e = self.root[ri];
        if fresh.last() == Some(&ri) {
            return Some(e & !INDEX);
        }
        debug_assert!(
            fresh.last().is_none_or(|&l| l < ri),
            "chunks are written in ascending order"
        );
        let len = self.chunk_len() as u32;
        let off = self.chunks.alloc(len)?;
        let ar = &self.arenas.chunks;
        // SAFETY: `off` is a block allocated just now: no published version reaches it.
        if e & INDEX == 0 {
            unsafe { ar.fill(off, len, e) };
        } else {
            let old = e & !INDEX;
            unsafe { ar.copy(old, off, len) };
            retired.push(Block::new(Kind::Chunk, old, len));
        }
        self.root[ri] = INDEX | off;
        fresh.push(ri);
        Some(off)
    }

    /// The direct-pointing entry of `slot` (as edited so far in this batch).
    pub(super) fn entry(&self, slot: usize) -> u32 {
        let chunk = self.chunk_len();
        let r = self.root[slot / chunk];
        if r & INDEX == 0 {
            return r;
        }
        self.arenas.chunks.get((r & !INDEX) + (slot % chunk) as u32)
    }

    /// The chunk entry for top node `node`, placed at `cell` in this batch: the node's
    /// ([`top_entry`]), or, where it has no child and [`flat_pays`], a flat block of its 64
    /// leaves made now ([`FLAT`]), the node's cell and leaves retired (never published, they go
    /// back with this version's blocks). `None`: the leaf arena is full.
    pub(super) fn entry_for(
        &mut self,
        cell: u32,
        node: Node,
        retired: &mut Vec<Block>,
    ) -> Option<u32> {
        let ar = self.arenas.clone();
        if node.vector != 0 || !flat_pays(ar.leaves.width(), node.leafvec.count_ones()) {
            return Some(top_entry(cell, &node));
        }
        let ids = expand_runs(node.leafvec, |k| ar.leaves.get(node.base0 + k));
        let entry = self.place_flat(&ids)?;
        retire_joined(retired, Block::new(Kind::Node, cell, 1));
        retire_own(&ar, node, retired);
        Some(entry)
    }

    /// A flat block of `ids` (and its pad cells) in a fresh block; its chunk entry. `None`:
    /// the leaf arena is full.
    fn place_flat(&mut self, ids: &[u32; 64]) -> Option<u32> {
        let leaves = &self.arenas.leaves;
        let pad = leaves.pad() as usize;
        let first = self.leaves.alloc((64 + pad) as u32)?;
        // The block, then its pad cells: copies of its last leaf (at most 3, see `leaves`).
        let mut cells = [ids[63]; 67];
        cells[..64].copy_from_slice(ids);
        // SAFETY: `first` was allocated just now: no published version reaches it.
        unsafe { leaves.set_all(first, &cells[..64 + pad]) };
        Some(INDEX | FLAT | first)
    }

    /// Sets the direct-pointing entry of `slot`, copying its chunk first if this batch has not.
    pub(super) fn set_entry(
        &mut self,
        slot: usize,
        entry: u32,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<()> {
        let len = self.chunk_len();
        let chunk = self.chunk_for_write(slot / len, fresh, retired)?;
        // SAFETY: the chunk was made in this batch (`chunk_for_write`): unpublished.
        unsafe { self.arenas.chunks.set(chunk + (slot % len) as u32, entry) };
        Some(())
    }

    /// Copies the subtree in `scratch` (top node at 0) into fresh blocks: the top's cell too when
    /// `with_top` (then it is the first cell of the block returned), else only what is below it.
    /// The scratch nodes listed in `kept` (ascending, not the top: [`Scratch::kept`] after a
    /// [`Repaint`], else none) are cells of the arenas, copied as they are. Returns the top
    /// node relocated and the first cell. `None`: an arena is full.
    pub(super) fn place(
        nodes: &mut BlockAlloc,
        leaves: &mut BlockAlloc,
        ar: &Arenas,
        scratch: &Scratch<A::Bits>,
        kept: &[u32],
        with_top: bool,
    ) -> Option<(Node, u32)> {
        let skip = u32::from(!with_top);
        let n = scratch.nodes.len() as u32 - skip;
        let node_off = if n > 0 { nodes.alloc(n)? } else { 0 };
        let l = scratch.leaves.len() as u32;
        let leaf_off = if l > 0 { leaves.alloc(l)? } else { 0 };
        // Scratch node `i` goes to cell `node_off + i - skip`. (A node without children keeps a
        // base1 that is never followed.)
        let reloc = |n: &Node| Node {
            base0: n.base0.wrapping_add(leaf_off),
            base1: n.base1.wrapping_add(node_off).wrapping_sub(skip),
            ..*n
        };
        debug_assert!(kept.windows(2).all(|w| w[0] < w[1]) && kept.first() != Some(&0));
        let mut kept = kept.iter().peekable();
        // SAFETY: both blocks were allocated just now: no published version reaches them.
        for (i, n) in scratch.nodes.iter().enumerate().skip(skip as usize) {
            let n = match kept.next_if_eq(&&(i as u32)) {
                Some(_) => *n,
                None => reloc(n),
            };
            unsafe { ar.nodes.set(node_off + i as u32 - skip, n) };
        }
        unsafe { ar.leaves.set_all(leaf_off, &scratch.leaves) };
        Some((reloc(&scratch.nodes[0]), node_off))
    }

    /// Re-encodes every direct-pointing slot under `p` (at most the direct-pointing step long)
    /// from `routes`, in one pass over the prefixes `p` covers: leaf pushing put `p`'s id (or
    /// what covered it) in all of them. `alone`: nothing else under `p` changed, and only
    /// where `p`'s id shows is encoded again (see `repaint.rs`; a flat block is encoded again
    /// whole unless a longer prefix answers its slot).
    pub(super) fn reencode_span(
        &mut self,
        routes: &PrefixSet<A>,
        p: Prefix<A>,
        alone: bool,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<()> {
        self.cover_memo = None;
        let s = Self::S;
        let first = top(p.bits(), s);
        let n = 1usize << (s - p.len() as u32);
        let default = self.cover_of(routes, p);
        self.scratch.prefixes.clear();
        self.scratch.prefixes.extend(
            routes
                .covered(&p)
                .map(|(q, &id)| (q.bits(), q.len(), stored(id))),
        );
        // What each slot holds above its subtree (trie order: covering prefixes paint first),
        // and whether a prefix longer than `p` painted it (`deep`: as before the change).
        let mut fill = vec![(default, false); n];
        for &(key, len, id) in self.scratch.prefixes.iter().filter(|q| q.1 as u32 <= s) {
            let f = top(key, s) - first;
            fill[f..f + (1 << (s - len as u32))].fill((id, len > p.len()));
        }
        let mut long = 0;
        for (i, &(fill, deep)) in fill.iter().enumerate() {
            let slot = first + i;
            let old = self.entry(slot);
            let Scratch {
                nodes,
                leaves,
                kept,
                prefixes,
                sub,
            } = &mut self.scratch;
            sub.clear();
            // The slot's long prefixes are contiguous in trie order, slots ascending.
            while long < prefixes.len() && top(prefixes[long].0, s) <= slot {
                if prefixes[long].1 as u32 > s {
                    sub.push(prefixes[long]);
                }
                long += 1;
            }
            if alone && deep && old & (INDEX | FLAT) == INDEX | FLAT {
                // A longer prefix answers the whole slot: its flat block did not change.
                continue;
            }
            let repaint = alone && old & INDEX != 0 && old & FLAT == 0 && !sub.is_empty();
            let leaf = if repaint {
                if deep {
                    // A longer prefix answers the whole slot: nothing in it changed.
                    continue;
                }
                // Encoded again only where the slot's fill shows, over the old subtree.
                let was = node_cell(old);
                retire_joined(retired, Block::new(Kind::Node, was, 1));
                let repaint = Repaint {
                    ar: &self.arenas,
                    nodes,
                    leaves,
                    kept,
                    retired,
                };
                let top = repaint.subtree(self.arenas.nodes.get(was), sub, s, fill);
                (top.vector == 0 && top.leafvec.count_ones() == 1).then(|| leaves[0])
            } else {
                retire_entry(&self.arenas, old, retired);
                encode_slot(nodes, (leaves, self.arenas.leaves.pad()), sub, s, fill)
            };
            let entry = match leaf {
                Some(leaf) => leaf,
                None => {
                    let kept: &[u32] = if repaint { &self.scratch.kept } else { &[] };
                    let (top, cell) = Self::place(
                        &mut self.nodes,
                        &mut self.leaves,
                        &self.arenas,
                        &self.scratch,
                        kept,
                        true,
                    )?;
                    self.entry_for(cell, top, retired)?
                }
            };
            self.set_entry(slot, entry, fresh, retired)?;
        }
        Some(())
    }

    /// The stored id of the longest prefix in `routes` that covers `region` and is shorter
    /// than it ([`NO_ROUTE`] for none). A delete's patch goes up its path while nodes vanish,
    /// asking this of each level's region, which covers the last: the last answer holds for
    /// the new region when it is shorter than that region, or when there was none (whatever
    /// covers the new region and is shorter covers the last one too).
    fn cover_of(&mut self, routes: &PrefixSet<A>, region: Prefix<A>) -> u32 {
        if let Some((last, cover)) = self.cover_memo {
            if region.covers(&last) && cover.is_none_or(|(len, _)| len < region.len()) {
                return cover.map_or(NO_ROUTE, |(_, id)| id);
            }
        }
        let cover = routes
            .covering_shorter(&region)
            .map(|(q, &id)| (q.len(), stored(id)));
        self.cover_memo = Some((region, cover));
        cover.map_or(NO_ROUTE, |(_, id)| id)
    }

    /// Re-encodes node `old`, which covers bits `off..off + 6` of the keys under the first `off`
    /// bits of `region`, after a change inside `region` (`off < region.len() <= off + 6`): the slots
    /// `region` covers are encoded afresh from `routes`; the other slots keep their leaves, and
    /// their children move by their cells (nothing below them is touched). The new node is not
    /// placed: its cell is the caller's. `alone`: `region` is the changed prefix and nothing
    /// else under it changed; its children are then encoded again only where the region's id
    /// shows (see `repaint.rs`).
    pub(super) fn reencode_node(
        &mut self,
        routes: &PrefixSet<A>,
        old: Node,
        off: u32,
        region: Prefix<A>,
        alone: bool,
        retired: &mut Vec<Block>,
    ) -> Option<Outcome> {
        let span = Prefix::new(region.addr(), off as u8);
        let top_level = off == Self::S;
        let ar = self.arenas.clone();
        let mut leaf = [NO_ROUTE; 64];
        let mut child = [Node::default(); 64];
        // Each run's id read once (the width chosen once: a width dispatch per slot was 4% of a
        // router change, callgrind) and filled from its start to the next run's (a run of
        // leaves goes on across children, whose slots are set apart below): a branch per run,
        // where a branch on each slot's bits mispredicted with the node's shape, and a count
        // of run starts per slot took 5 instructions a slot (that loop was 3% of an IPv6 router
        // change's instructions, callgrind).
        // Run starts are only ever marked at leaf slots (`leaf_runs`).
        debug_assert_eq!(old.leafvec & old.vector, 0, "run starts at child slots");
        with_leaves!(&ar.leaves, cells => {
            let (mut starts, mut cell) = (old.leafvec, old.base0);
            while starts != 0 {
                let from = starts.trailing_zeros() as usize;
                starts &= starts - 1;
                let to = if starts == 0 { 64 } else { starts.trailing_zeros() as usize };
                leaf[from..to].fill(cells.get(cell).unpack());
                cell += 1;
            }
        });
        let (mut with_child, mut next_child) = (old.vector, old.base1);
        while with_child != 0 {
            let v = with_child.trailing_zeros() as usize;
            with_child &= with_child - 1;
            leaf[v] = NO_ROUTE;
            child[v] = ar.nodes.get(next_child);
            next_child += 1;
        }
        // The region's slots, from scratch: what covers the region, then what it covers.
        let first = stride(region.bits(), off) as usize;
        let width = 1usize << (off + 6 - region.len() as u32);
        let region_mask = (u64::MAX >> (64 - width)) << first;
        self.scratch.prefixes.clear();
        self.scratch.prefixes.extend(
            routes
                .covered(&region)
                .map(|(p, &id)| (p.bits(), p.len(), stored(id))),
        );
        // What covers the region, unless the region is a stored prefix (it comes first, and
        // paints every slot of it below): the search is skipped for an added or changed prefix
        // at its own level (it was 8% of a router change, callgrind).
        let region_stored = self
            .scratch
            .prefixes
            .first()
            .is_some_and(|&(key, len, _)| len == region.len() && key == region.bits());
        if !region_stored {
            let default = self.cover_of(routes, region);
            leaf[first..first + width].fill(default);
        }
        // Where a value can differ from the slot before (see `leaf_runs`): the old runs' starts
        // (outside the region the old leaves stay), the region's edges, and the edges of the
        // spans painted in it.
        let mut edges = old.leafvec | span_edges(first, width);
        let mut fresh_children = 0u64;
        // The slots a prefix longer than the region painted.
        let mut deep = 0u64;
        let prefixes = &self.scratch.prefixes;
        let mut i = 0;
        while let Some(&(key, len, id)) = prefixes.get(i) {
            let v = stride(key, off);
            if len <= (off + 6) as u8 {
                // Trie order: a more specific prefix is painted after the ones covering it.
                let (v, slots) = (v as usize, 1 << (off + 6 - len as u32));
                leaf[v..v + slots].fill(id);
                edges |= span_edges(v, slots);
                if len > region.len() {
                    deep |= (u64::MAX >> (64 - slots)) << v;
                }
                i += 1;
            } else {
                fresh_children |= 1 << v;
                i = block_end(prefixes, i, off, v);
            }
        }
        let vector = (old.vector & !region_mask) | fresh_children;
        if vector == 0 {
            if top_level {
                // A slot's top node that is one leaf throughout is stored as that leaf.
                if leaf.iter().all(|&x| x == leaf[0]) {
                    return Some(Outcome::Leaf(leaf[0]));
                }
            } else if !routes.covered(&span).any(|(q, _)| q.len() as u32 > off) {
                // A node exists only while a prefix below its parent's slot is longer than the
                // parent's step.
                return Some(Outcome::Gone);
            }
        }
        // The region's children, encoded afresh (their subtrees into fresh blocks), each one's
        // prefixes found in one pass (`children`: a scan of all the region's prefixes per
        // child made a change of a prefix covering thousands, an IPv6 /24 or /32, cost up to
        // 250 µs). With `alone`, an old child is kept where a longer prefix paints its slot
        // and encoded again over the old one elsewhere; either way its slot is left out of
        // the retiring below.
        let mut repainted = 0u64;
        for (_, v, below) in children(&self.scratch.prefixes, off, 0) {
            debug_assert!(fresh_children & (1 << v) != 0);
            let (default, over) = (leaf[v as usize], alone && old.has_child(v));
            let kept: &[u32] = if over {
                repainted |= 1 << v;
                let was = ar.nodes.get(old.child(v));
                if deep & (1 << v) != 0 {
                    child[v as usize] = was;
                    continue;
                }
                let repaint = Repaint {
                    ar: &ar,
                    nodes: &mut self.scratch.nodes,
                    leaves: &mut self.scratch.leaves,
                    kept: &mut self.scratch.kept,
                    retired,
                };
                repaint.subtree(was, below, off + 6, default);
                &self.scratch.kept
            } else {
                let (nodes, leaves) = (&mut self.scratch.nodes, &mut self.scratch.leaves);
                nodes.clear();
                leaves.clear();
                nodes.push(Node::default());
                encode_node(nodes, (leaves, ar.leaves.pad()), below, off + 6, default, 0);
                &[]
            };
            let (top, _) = Self::place(
                &mut self.nodes,
                &mut self.leaves,
                &ar,
                &self.scratch,
                kept,
                false,
            )?;
            child[v as usize] = top;
        }
        // The node: leaves in runs over the slots without a child, children in slot order.
        // At most 64 runs, and 3 pad cells after them (see `leaves`).
        let mut runs = [0u32; 67];
        let mut n_runs = 0;
        let leafvec = leaf_runs(&leaf, vector, edges, ar.leaves.pad(), |id| {
            runs[n_runs] = id;
            n_runs += 1;
        });
        let kids = vector.count_ones();
        let base0 = if n_runs > 0 {
            self.leaves.alloc(n_runs as u32)?
        } else {
            0
        };
        let base1 = if kids > 0 { self.nodes.alloc(kids)? } else { 0 };
        // SAFETY: `base0` and `base1` were allocated just now: no published version reaches
        // them.
        unsafe { ar.leaves.set_all(base0, &runs[..n_runs]) };
        let mut at = base1;
        let mut set = vector;
        while set != 0 {
            let v = set.trailing_zeros();
            set &= set - 1;
            unsafe { ar.nodes.set(at, child[v as usize]) };
            at += 1;
        }
        // What the old node reached and the new one does not.
        retire_own(&ar, old, retired);
        let mut replaced = old.vector & region_mask & !repainted;
        while replaced != 0 {
            let v = replaced.trailing_zeros();
            replaced &= replaced - 1;
            retire_below(&ar, ar.nodes.get(old.child(v)), retired);
        }
        Some(Outcome::Node(Node {
            vector,
            leafvec,
            base0,
            base1,
        }))
    }

    /// Follows a change of `p` (longer than the direct-pointing step) in `slot`, whose entry
    /// `entry` is a flat block ([`FLAT`]): a copy of the block with `p`'s slots painted again
    /// (what covers `p`, then what `p` covers), or the slot's one leaf where they all agree.
    /// `None`: the slot is flat no more (a prefix below it is longer than the block's level, or
    /// its runs are too few to pay, [`flat_pays`]) and is encoded again; `Some(None)`: an arena
    /// is full.
    fn patch_flat(
        &mut self,
        routes: &PrefixSet<A>,
        p: Prefix<A>,
        slot: usize,
        entry: u32,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<Option<()>> {
        let level = Self::S + 6;
        if p.len() as u32 > level {
            return None;
        }
        let ar = self.arenas.clone();
        let old = node_cell(entry);
        let mut ids = ar.leaves.get_block(old);
        // `p`'s slots: what covers `p` unless it is stored (it paints them all, first in trie
        // order), then what it covers.
        let (first, n) = (
            stride(p.bits(), Self::S) as usize,
            1usize << (level - p.len() as u32),
        );
        if routes.get(&p).is_none() {
            let cover = self.cover_of(routes, p);
            ids[first..first + n].fill(cover);
        }
        for (q, &id) in routes.covered(&p) {
            if q.len() as u32 > level {
                return None;
            }
            let (v, n) = (
                stride(q.bits(), Self::S) as usize,
                1usize << (level - q.len() as u32),
            );
            ids[v..v + n].fill(stored(id));
        }
        let runs = runs_of(&ids);
        if runs == 1 {
            retire_entry(&ar, entry, retired);
            return Some(self.set_entry(slot, ids[0], fresh, retired));
        }
        if !flat_pays(ar.leaves.width(), runs) {
            return None;
        }
        let Some(block) = self.place_flat(&ids) else {
            return Some(None);
        };
        retire_entry(&ar, entry, retired);
        Some(self.set_entry(slot, block, fresh, retired))
    }

    /// Follows a change of `p` (longer than the direct-pointing step): re-encodes the node at
    /// `p`'s level (or the deepest existing node on its path), going up while nodes vanish, then
    /// copies the ancestors' children blocks up to the direct-pointing entry. A slot stored
    /// flat is painted again in a copy of its block ([`Poptrie::patch_flat`]), or re-encoded
    /// whole; a slot without a subtree is encoded.
    pub(super) fn patch_long(
        &mut self,
        routes: &PrefixSet<A>,
        p: Prefix<A>,
        alone: bool,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<()> {
        self.cover_memo = None;
        let s = Self::S;
        let slot = top(p.bits(), s);
        let entry = self.entry(slot);
        if entry & INDEX != 0 && entry & FLAT != 0 {
            if let Some(done) = self.patch_flat(routes, p, slot, entry, fresh, retired) {
                return done;
            }
        }
        if entry & INDEX == 0 || entry & FLAT != 0 {
            // No subtree yet, or a flat block that is one no more: it is at most `p` and what
            // shares its slot, encoded again.
            return self.reencode_span(
                routes,
                Self::slot_prefix(slot as u32),
                false,
                fresh,
                retired,
            );
        }
        let top_cell = node_cell(entry);
        let level = (p.len() as u32 - s - 1) / 6;
        // The path: (node, its cell), from the slot's top node down to `p`'s level at most.
        let mut path = [(Node::default(), 0u32); 32];
        let mut depth = 0usize;
        path[0] = (self.arenas.nodes.get(top_cell), top_cell);
        let mut off = s;
        while (depth as u32) < level {
            let node = path[depth].0;
            let v = stride(p.bits(), off);
            if !node.has_child(v) {
                break;
            }
            let cell = node.child(v);
            depth += 1;
            off += 6;
            path[depth] = (self.arenas.nodes.get(cell), cell);
        }
        // `p` itself at its level; above it, the slot of the deepest node that holds `p`.
        let mut region = if depth as u32 == level {
            p
        } else {
            Prefix::new(p.addr(), (off + 6) as u8)
        };
        loop {
            let span = Prefix::new(p.addr(), off as u8);
            let (node, _) = path[depth];
            match self.reencode_node(routes, node, off, region, alone && region == p, retired)? {
                Outcome::Gone => {
                    region = span;
                    depth -= 1;
                    off -= 6;
                }
                Outcome::Leaf(id) => {
                    // The top node folded into a leaf: its cell and everything below it go
                    // (no child of it survives: a leaf top has none).
                    retire_subtree(&self.arenas, top_cell, retired);
                    return self.set_entry(slot, id, fresh, retired);
                }
                Outcome::Node(mut new) => {
                    // Path copying: each ancestor's children block, with the new child in.
                    for j in (0..depth).rev() {
                        let (parent, _) = path[j];
                        let kids = parent.vector.count_ones();
                        let block = self.nodes.alloc(kids)?;
                        // SAFETY: `block` was allocated just now: unpublished.
                        unsafe {
                            self.arenas.nodes.copy(parent.base1, block, kids);
                            self.arenas
                                .nodes
                                .set(block + (path[j + 1].1 - parent.base1), new);
                        }
                        retired.push(Block::new(Kind::Node, parent.base1, kids));
                        new = Node {
                            base1: block,
                            ..parent
                        };
                    }
                    let cell = self.nodes.alloc(1)?;
                    // SAFETY: `cell` was allocated just now: unpublished.
                    unsafe { self.arenas.nodes.set(cell, new) };
                    retired.push(Block::new(Kind::Node, top_cell, 1));
                    let entry = self.entry_for(cell, new, retired)?;
                    return self.set_entry(slot, entry, fresh, retired);
                }
            }
        }
    }

    /// Follows the changes at `changed` (in trie order), then publishes once: a prefix at most
    /// the direct-pointing step long re-encodes the slots it covers (and the changes under it
    /// come with them), a longer one its node's path. Slots are visited in ascending order, so
    /// each chunk is copied once. `None`: an arena ran out of room (nothing was published; the
    /// caller rebuilds).
    pub(super) fn patch(&mut self, routes: &PrefixSet<A>, changed: &[Prefix<A>]) -> Option<()> {
        let mut retired = self.retired_list();
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        let mut done: Option<Prefix<A>> = None;
        for (i, &p) in changed.iter().enumerate() {
            if done.is_some_and(|d| d.covers(&p)) {
                continue;
            }
            // Trie order: what `p` covers comes right after it.
            let alone = changed.get(i + 1).is_none_or(|q| !p.covers(q));
            if p.len() as u32 <= Self::S {
                self.reencode_span(routes, p, alone, &mut fresh, &mut retired)?;
                done = Some(p);
            } else {
                self.patch_long(routes, p, alone, &mut fresh, &mut retired)?;
            }
        }
        // A chunk that became one leaf goes back into its root entry; it was never published.
        for &ri in &fresh {
            let off = self.root[ri] & !INDEX;
            if let Some(answer) = self.one_answer(off) {
                self.root[ri] = answer;
                self.chunks.free(off, self.chunk_len() as u32);
            }
        }
        self.fresh = fresh;
        self.publish(retired, true);
        Some(())
    }
}

/// Retires `b`, joined to the last block of its kind retired when it continues it (looking
/// back two entries: while a subtree is retired, the list ends in its open block of leaves and
/// its open block of nodes).
///
/// Why: a subtree encoded afresh is placed as one block of nodes and one of leaves
/// ([`Poptrie::place`]), in the order a retiring walk visits it (a node's leaves, its children,
/// then each child's, depth first: `encode_node`'s order). Retired node by node, it went back
/// as hundreds of blocks (431 for a /32 over 300 /48s, the test
/// `a_fresh_subtree_is_retired_in_a_few_blocks`), which the allocator merged again one by one:
/// for 2001:7c0::/32 (146 prefixes under it) 358,000 of the 640,000 instructions of a change
/// (callgrind, `router_profile` with `FIBRE_PROFILE_REPEAT`). Joined, it goes back as a few.
fn retire_joined(retired: &mut Vec<Block>, b: Block) {
    let n = retired.len();
    for last in retired[n.saturating_sub(2)..].iter_mut().rev() {
        if last.kind == b.kind && last.off + last.len == b.off {
            last.len += b.len;
            return;
        }
    }
    retired.push(b);
}

/// Retires node `n`'s own blocks: its leaves (with their pad cells: see `leaves`) and its
/// children's cells.
pub(super) fn retire_own(ar: &Arenas, n: Node, retired: &mut Vec<Block>) {
    let leaves = n.leafvec.count_ones();
    if leaves > 0 {
        let cells = leaves + ar.leaves.pad();
        retire_joined(retired, Block::new(Kind::Leaf, n.base0, cells));
    }
    let kids = n.vector.count_ones();
    if kids > 0 {
        retire_joined(retired, Block::new(Kind::Node, n.base1, kids));
    }
}

/// Retires what chunk entry `e` holds: a flat block ([`FLAT`]) or a subtree; a leaf holds none.
pub(super) fn retire_entry(ar: &Arenas, e: u32, retired: &mut Vec<Block>) {
    // A leaf's id may have the tags' bits (no route has all of them): `INDEX` first.
    if e & INDEX == 0 {
        return;
    }
    if e & FLAT != 0 {
        let cells = 64 + ar.leaves.pad();
        retire_joined(retired, Block::new(Kind::Leaf, node_cell(e), cells));
    } else {
        retire_subtree(ar, node_cell(e), retired);
    }
}

/// Retires a slot's subtree: its top node's cell `cell` and every block below it.
pub(super) fn retire_subtree(ar: &Arenas, cell: u32, retired: &mut Vec<Block>) {
    retire_joined(retired, Block::new(Kind::Node, cell, 1));
    retire_below(ar, ar.nodes.get(cell), retired);
}

/// Retires every block below node `n`: its leaves, its children, theirs (not `n`'s cell).
pub(super) fn retire_below(ar: &Arenas, n: Node, retired: &mut Vec<Block>) {
    retire_own(ar, n, retired);
    for k in 0..n.vector.count_ones() {
        retire_below(ar, ar.nodes.get(n.base1 + k), retired);
    }
}

/// What re-encoding a node gave.
pub(super) enum Outcome {
    /// The new node (not placed yet).
    Node(Node),
    /// A slot's top node became one leaf.
    Leaf(u32),
    /// The node is no longer needed: its parent's slot is a leaf now.
    Gone,
}
