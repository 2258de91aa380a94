//! A full encoding: every route, from scratch, into fresh arenas (the first build, and the
//! rebuild after a short prefix or a full arena).
use super::*;

/// Nodes and leaves of one subtree under construction, indexes relative to the subtree.
#[derive(Default)]
pub(super) struct Scratch<K> {
    pub(super) nodes: Vec<Node>,
    pub(super) leaves: Vec<u32>,
    /// The nodes of `nodes` that are cells of the arenas as they are (a subtree kept whole
    /// under a re-encoded node, see `repaint.rs`), ascending: [`Poptrie::place`] is handed
    /// them and does not relocate them.
    pub(super) kept: Vec<u32>,
    pub(super) prefixes: Vec<(K, u8, u32)>,
    /// The prefixes below one slot, while `prefixes` holds a region's.
    pub(super) sub: Vec<(K, u8, u32)>,
}

/// What painting a node's slots found besides the slots' ids (see [`paint`]).
pub(super) struct Painted {
    /// The slots with a child: a prefix longer than the node's level below them.
    pub(super) vector: u64,
    /// Where a run of leaves can start besides slot 0 and after a child (see `leaf_runs`).
    pub(super) edges: u64,
    /// The slots a prefix of `prefixes` painted (the others hold the default).
    pub(super) painted: u64,
}

/// Paints the 64 slots of a node covering bits `off..off + 6` from `prefixes` (those under
/// the node, in trie order): each slot gets the id of the longest prefix ending at the node's
/// level that covers it, else `default`. (Into the caller's array: returned by value, it was
/// copied by a call to `memcpy` per node.)
#[inline(always)]
pub(super) fn paint<K: Bits>(
    prefixes: &[(K, u8, u32)],
    off: u32,
    default: u32,
    slot: &mut [u32; 64],
) -> Painted {
    *slot = [default; 64];
    let mut out = Painted {
        vector: 0,
        edges: 0,
        painted: 0,
    };
    let mut i = 0;
    while let Some(&(key, len, id)) = prefixes.get(i) {
        let first = stride(key, off);
        let len = len as u32;
        if len <= off + 6 {
            // Trie order: a more specific prefix is painted after the ones covering it.
            let (first, span) = (first as usize, 1usize << (off + 6 - len));
            slot[first..first + span].fill(id);
            out.edges |= span_edges(first, span);
            out.painted |= (u64::MAX >> (64 - span)) << first;
            i += 1;
        } else {
            // A child: its prefixes are passed over, not read one by one.
            out.vector |= 1u64 << first;
            i = block_end(prefixes, i, off, first);
        }
    }
    out
}

/// The end of the prefixes from `i` on under slot `v` of a node covering bits `off..off + 6`
/// (`prefixes[i]` is one of them; they are contiguous, keys ascending), found by galloping
/// from `i`: a probe or two for the few prefixes most slots hold, a binary search for the
/// thousands under an IPv6 /20 or /32. (Read one by one, painting a node cost every prefix
/// below it, and encoding a subtree its prefixes times its depth.)
#[inline(always)]
pub(super) fn block_end<K: Bits>(prefixes: &[(K, u8, u32)], i: usize, off: u32, v: u32) -> usize {
    let under = |p: &(K, u8, u32)| stride(p.0, off) <= v;
    let (mut known, mut step) = (i, 1);
    let bound = loop {
        let probe = known + step;
        if probe >= prefixes.len() || !under(&prefixes[probe]) {
            break probe.min(prefixes.len());
        }
        known = probe;
        step *= 2;
    };
    known + 1 + prefixes[known + 1..bound].partition_point(under)
}

/// Encodes the node at `at` covering bits `off..off + 6` of `prefixes` (in trie order: a prefix
/// before the prefixes it covers), every one longer than `off`; `default` answers where none
/// does. Its leaves go in one block (with `pad` cells after them: see `leaves`), its children
/// in one block, then each child recursively.
pub(super) fn encode_node<K: Bits>(
    nodes: &mut Vec<Node>,
    (leaves, pad): (&mut Vec<u32>, u32),
    prefixes: &[(K, u8, u32)],
    off: u32,
    default: u32,
    at: usize,
) {
    let mut slot = [0; 64];
    let (_, first) = encode_own(nodes, (leaves, pad), prefixes, off, default, at, &mut slot);
    for (child, v, below) in children(prefixes, off, first) {
        encode_node(
            nodes,
            (leaves, pad),
            below,
            off + 6,
            slot[v as usize],
            child,
        );
    }
}

/// Encodes node `at` itself, as [`encode_node`] does: its slots painted into `slot`, its runs
/// of leaves pushed onto `leaves` and then `pad` copies of the last (the node's own cells: see
/// `leaves`), room made in `nodes` for its children (the caller fills it, slots ascending).
/// Returns what painting found and the first child's index.
#[inline(always)]
pub(super) fn encode_own<K: Bits>(
    nodes: &mut Vec<Node>,
    (leaves, pad): (&mut Vec<u32>, u32),
    prefixes: &[(K, u8, u32)],
    off: u32,
    default: u32,
    at: usize,
    slot: &mut [u32; 64],
) -> (Painted, usize) {
    let painted = paint(prefixes, off, default, slot);
    let base0 = leaves.len() as u32;
    let leafvec = leaf_runs(slot, painted.vector, painted.edges, pad, |id| {
        leaves.push(id)
    });
    let base1 = nodes.len();
    nodes.resize(
        base1 + painted.vector.count_ones() as usize,
        Node::default(),
    );
    nodes[at] = Node {
        vector: painted.vector,
        leafvec,
        base0,
        base1: base1 as u32,
    };
    (painted, base1)
}

/// The children of a node covering bits `off..off + 6`, the first at index `first`: each
/// child's index, its slot (ascending) and its prefixes (those of `prefixes` longer than
/// `off + 6` under the slot: contiguous in trie order).
pub(super) fn children<K: Bits>(
    prefixes: &[(K, u8, u32)],
    off: u32,
    first: usize,
) -> Children<'_, K> {
    Children {
        rest: prefixes,
        off,
        next: first,
    }
}

/// See [`children`]. (An iterator of its own, counting the children itself: as a closure
/// behind `from_fn`, or zipped with a range, its step stopped being inlined into the
/// encoding's loops, 3% of a covering change's instructions.)
pub(super) struct Children<'a, K> {
    rest: &'a [(K, u8, u32)],
    off: u32,
    next: usize,
}

impl<'a, K: Bits> Iterator for Children<'a, K> {
    type Item = (usize, u32, &'a [(K, u8, u32)]);
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let (rest, off) = (self.rest, self.off);
        let start = rest.iter().position(|p| p.1 as u32 > off + 6)?;
        let v = stride(rest[start].0, off);
        let end = block_end(rest, start, off, v);
        self.rest = &rest[end..];
        self.next += 1;
        Some((self.next - 1, v, &rest[start..end]))
    }
}

/// The bits of slots `first` and `first + slots` (if there is one): the edges of a span
/// painted over `slots` slots from `first`.
pub(super) fn span_edges(first: usize, slots: usize) -> u64 {
    let end = if first + slots < 64 {
        1u64 << (first + slots)
    } else {
        0
    };
    1u64 << first | end
}

/// The runs of leaves of a node whose slots hold `slot` and whose children are at `vector`:
/// hands each run's leaf to `push`, in slot order, and returns the leaf vector (a bit at each
/// run's first slot; a run goes on across children). `edges` lists the other slots whose value
/// can differ from the slot before (the edges of the spans painted): elsewhere a leaf slot
/// holds what the slot before it holds, a leaf too unless a child, so only slot 0, `edges`
/// and the slots after a child need a look. (A look at all 64 slots was half of the encoding,
/// and a quarter of the change, of an IPv6 prefix covering 146 others: some 360 nodes.) After
/// the runs, `pad` more copies of the last: the node's pad cells (see `leaves`).
pub(super) fn leaf_runs(
    slot: &[u32; 64],
    vector: u64,
    edges: u64,
    pad: u32,
    mut push: impl FnMut(u32),
) -> u64 {
    let mut leafvec = 0u64;
    let mut prev = None;
    let mut starts = (1 | edges | vector << 1) & !vector;
    while starts != 0 {
        let v = starts.trailing_zeros() as usize;
        starts &= starts - 1;
        if prev != Some(slot[v]) {
            leafvec |= 1u64 << v;
            push(slot[v]);
            prev = Some(slot[v]);
        }
    }
    if let Some(last) = prev {
        (0..pad).for_each(|_| push(last));
    }
    leafvec
}

/// Encodes the subtree of one direct-pointing slot from `prefixes` (all longer than `dp_bits`,
/// in trie order) into `nodes` (top node at 0) and `leaves` (`pad` cells after each node's:
/// see `leaves`); `Some(leaf)` when it is one leaf (no node needed).
pub(super) fn encode_slot<K: Bits>(
    nodes: &mut Vec<Node>,
    (leaves, pad): (&mut Vec<u32>, u32),
    prefixes: &[(K, u8, u32)],
    dp_bits: u32,
    default: u32,
) -> Option<u32> {
    nodes.clear();
    leaves.clear();
    if prefixes.is_empty() {
        return Some(default);
    }
    nodes.push(Node::default());
    encode_node(nodes, (leaves, pad), prefixes, dp_bits, default, 0);
    let top = nodes[0];
    (top.vector == 0 && top.leafvec.count_ones() == 1).then(|| leaves[0])
}

impl<K: Bits> Scratch<K> {
    /// [`encode_slot`] of `self.prefixes`.
    fn encode(&mut self, dp_bits: u32, default: u32, pad: u32) -> Option<u32> {
        encode_slot(
            &mut self.nodes,
            (&mut self.leaves, pad),
            &self.prefixes,
            dp_bits,
            default,
        )
    }
}

/// The root bits for a table of `all` (in trie order, as [`Poptrie::encode_all`] lists them),
/// from [`FibFamily::MIN_ROOT_BITS`] to [`FibFamily::MAX_ROOT_BITS`].
///
/// The root is held twice (the writer's and the current version's; up to `REUSED_BUFFERS`
/// spares to publish the next versions in are kept besides) and each chunk once; a chunk is
/// stored where a prefix longer than the root's step lies. The size that takes the
/// least memory is chosen first, then raised while the root's two copies stay within 4 bytes a
/// prefix: a change copies the chunk it writes, and a larger root has smaller chunks. The
/// IPv6 full view's prefixes lie under 59 root entries of 16 bits (10 of 12): its least memory
/// is at 13 bits (168 KiB against 571 at 16), and it gets 16, chunks of 1 KiB. A small table
/// gets 12 (a root of 16 KiB): at 16 every IPv6 table, local and policy tables among them,
/// would take 512 KiB. Updates keep the size until a table has the prefixes that raise it a
/// bit further (`4 << r`: `Poptrie::update` then builds afresh).
pub(super) fn root_bits<A: FibFamily>(all: &[(A::Bits, u8, u32)]) -> u32 {
    let (min, max, s) = (A::MIN_ROOT_BITS, A::MAX_ROOT_BITS, A::DP_BITS);
    if min == max {
        return min;
    }
    let cost = |r: u32| {
        // Chunks stored: root entries under a prefix longer than `r` (grouped: trie order).
        let mut last = None;
        let chunks = all
            .iter()
            .filter(|p| u32::from(p.1) > r)
            .filter(|p| last.replace(top(p.0, r)) != Some(top(p.0, r)))
            .count();
        (2usize << r) + (chunks << (s - r))
    };
    let least = (min..=max)
        .rev()
        .min_by_key(|&r| cost(r))
        .expect("a range of at least one");
    let within = (usize::BITS - (all.len() / 2).leading_zeros()).saturating_sub(1);
    least.max(within.min(max))
}

/// The parts of a fresh encoding.
pub(super) struct Encoded {
    root: Vec<u32>,
    nodes: Vec<Node>,
    leaves: Vec<u32>,
    pub(super) chunks: Vec<u32>,
    /// The largest id stored ([`NO_ROUTE`] for none): what the leaf cells must hold. Every id,
    /// not only those in leaves now: an update may push one from a chunk entry into a leaf.
    max_id: u32,
}

impl<A: FibFamily> Poptrie<A> {
    pub(super) fn slot_prefix(slot: u32) -> Prefix<A> {
        let key = A::Bits::from_u64(slot as u64) << (A::WIDTH as u32 - Self::S);
        Prefix::new(A::from_bits(key), Self::S as u8)
    }

    /// Encodes every route from scratch. Work is in proportion to the root, the chunks that
    /// hold a prefix longer than the root step, and the prefixes: a small table costs little.
    /// `floor`: an id the leaf cells must hold besides the routes' ([`NO_ROUTE`]: none), and
    /// `root_bits` the root's size (`None`: [`root_bits`] chooses), for a build in another
    /// generation's form ([`LpmAlgorithm::rebuilt_like`]).
    pub(super) fn encode_all(
        routes: &PrefixSet<A>,
        scratch: &mut Scratch<A::Bits>,
        floor: u32,
        root_bits: Option<u32>,
    ) -> Encoded {
        let s = Self::S;
        // Trie order: a prefix before those it covers, so painting in order leaves each cell
        // with its longest match; the prefixes longer than the root step come grouped by chunk.
        let all: Vec<(A::Bits, u8, u32)> = routes
            .iter()
            .map(|(p, &id)| (p.bits(), p.len(), stored(id)))
            .collect();
        let r = root_bits.unwrap_or_else(|| self::root_bits::<A>(&all));
        assert!(
            (A::MIN_ROOT_BITS..=A::MAX_ROOT_BITS).contains(&r),
            "a root of {r} bits"
        );
        let mut out = Encoded {
            root: vec![NO_ROUTE; 1 << r],
            nodes: Vec::new(),
            leaves: Vec::new(),
            chunks: Vec::new(),
            max_id: NO_ROUTE,
        };
        out.max_id = all
            .iter()
            .map(|p| p.2)
            .chain(std::iter::once(floor))
            .filter(|&id| id != NO_ROUTE)
            .max()
            .unwrap_or(NO_ROUTE);
        // The width `install` gives the leaf arena (`Leaves::reserving` of the same id).
        let width = Leaves::width_for(out.max_id);
        let pad = Leaves::pad_for(width);
        for &(key, len, id) in all.iter().filter(|p| p.1 as u32 <= r) {
            let first = top(key, r);
            out.root[first..first + (1 << (r - len as u32))].fill(id);
        }
        let mut chunk = vec![NO_ROUTE; 1 << (s - r)];
        let mut rest = &all[..];
        while let Some(start) = rest.iter().position(|p| p.1 as u32 > r) {
            let ri = top(rest[start].0, r);
            let end = rest[start..]
                .iter()
                .position(|p| p.1 as u32 <= r || top(p.0, r) != ri)
                .map_or(rest.len(), |e| start + e);
            let group = &rest[start..end];
            rest = &rest[end..];
            chunk.fill(out.root[ri]);
            for &(key, len, id) in group.iter().filter(|p| p.1 as u32 <= s) {
                let first = bits(key, r, s) as usize;
                chunk[first..first + (1 << (s - len as u32))].fill(id);
            }
            let mut long = group.iter().filter(|p| p.1 as u32 > s).peekable();
            while let Some(&(key, _, _)) = long.peek() {
                let ci = bits(*key, r, s) as usize;
                scratch.prefixes.clear();
                while let Some(p) = long.next_if(|p| bits(p.0, r, s) as usize == ci) {
                    scratch.prefixes.push(*p);
                }
                let encoded = scratch.encode(s, chunk[ci], pad);
                let top = scratch.nodes.first().copied().unwrap_or_default();
                chunk[ci] = match encoded {
                    Some(leaf) => leaf,
                    None if top.vector == 0 && flat_pays(width, top.leafvec.count_ones()) => {
                        // The top's leaves are the scratch's first (`encode_node`'s order).
                        let ids = expand_runs(top.leafvec, |k| scratch.leaves[k as usize]);
                        let first = out.leaves.len() as u32;
                        out.leaves.extend_from_slice(&ids);
                        out.leaves
                            .extend(std::iter::repeat_n(ids[63], pad as usize));
                        INDEX | FLAT | first
                    }
                    None => {
                        let (node_off, leaf_off) =
                            (out.nodes.len() as u32, out.leaves.len() as u32);
                        out.nodes.extend(scratch.nodes.iter().map(|n| Node {
                            base0: n.base0 + leaf_off,
                            base1: n.base1 + node_off,
                            ..*n
                        }));
                        out.leaves.extend_from_slice(&scratch.leaves);
                        top_entry(node_off, &scratch.nodes[0])
                    }
                };
            }
            if chunk[0] & INDEX != 0 || chunk.iter().any(|&e| e != chunk[0]) {
                out.root[ri] = INDEX | out.chunks.len() as u32;
                out.chunks.extend_from_slice(&chunk);
            } else {
                out.root[ri] = chunk[0];
            }
        }
        out
    }

    /// Fresh arenas holding `enc`, with room to spare ([`Spare`]) backed by memory, and
    /// [`RESERVE`] times that in address space to grow into. Also returns the spare room of each
    /// arena in cells (nodes, leaves, chunks): what [`Poptrie::keep_room`] keeps backed past
    /// the bump pointers.
    pub(super) fn install(
        enc: Encoded,
        spare: Spare,
    ) -> (Arc<Arenas>, [BlockAlloc; 3], Vec<u32>, [usize; 3]) {
        let (nodes, leaves) = (enc.nodes.len(), enc.leaves.len());
        // Chunk entries keep three tag bits above a node's or a leaf's cell (`top_entry`,
        // `FLAT`): 2^29 nodes are 12 GiB, more than any table this builds from reaches.
        assert!(
            nodes.max(leaves) < MAX_CELLS,
            "{nodes} nodes, {leaves} leaves: more than a chunk entry names"
        );
        let room = [
            nodes * spare.nodes_per_8 / 8 + 4096,
            leaves * spare.leaves_per_8 / 8 + 4096,
            spare.chunk_cells,
        ];
        let cells = [nodes, leaves, enc.chunks.len()];
        let arena = |i: usize| (cells[i] + room[i], RESERVE * (cells[i] + room[i]));
        let arenas = Arenas {
            nodes: RawArena::reserving(arena(0).0, arena(0).1),
            leaves: Leaves::reserving(enc.max_id, arena(1).0, arena(1).1),
            chunks: RawArena::reserving(arena(2).0, arena(2).1),
        };
        // SAFETY: the arenas are new: no version has been published from them yet.
        unsafe {
            for (i, n) in enc.nodes.iter().enumerate() {
                arenas.nodes.set(i as u32, *n);
            }
            arenas.leaves.set_all(0, &enc.leaves);
            for (i, c) in enc.chunks.iter().enumerate() {
                arenas.chunks.set(i as u32, *c);
            }
        }
        let allocs = [
            BlockAlloc::new(nodes as u32, arenas.nodes.cap().min(MAX_CELLS)),
            BlockAlloc::new(leaves as u32, arenas.leaves.cap().min(MAX_CELLS)),
            // Chunk cells too stay below `MAX_CELLS`: IPv4's AVX-512 kernel reads them with
            // 32-bit gather indexes (`simd4`).
            BlockAlloc::new(enc.chunks.len() as u32, arenas.chunks.cap().min(MAX_CELLS)),
        ];
        (Arc::new(arenas), allocs, enc.root, room)
    }

    /// Keeps each arena backed by memory its spare room past its bump pointer, once updates
    /// have used some of it: the blocks of the next updates then take no page fault. Without
    /// the reservation, an arena this full was re-encoded whole into larger ones (a rebuild of
    /// 30 ms for the IPv6 full view and 70 ms for IPv4, about once per 100,000 changes of the
    /// update bench, when a reader holding old versions kept hundreds of chunks retired).
    pub(super) fn keep_room(&self) {
        let a = &self.arenas;
        let past = |alloc: &BlockAlloc| alloc.top() as usize;
        // SAFETY: the cells from a bump pointer on are free: never handed out since they were
        // last merged back into it, so no version reaches them and the writer uses none.
        unsafe {
            a.nodes
                .touch_past(past(&self.nodes), past(&self.nodes) + self.room[0]);
            a.leaves
                .touch_past(past(&self.leaves), past(&self.leaves) + self.room[1]);
            a.chunks
                .touch_past(past(&self.chunks), past(&self.chunks) + self.room[2]);
        }
    }

    /// Re-encodes everything into fresh arenas and publishes it. `arena_full`: an arena ran
    /// out of room, and a large table's spare room then doubles ([`Spare::grown`]).
    pub(super) fn rebuild(&mut self, routes: &PrefixSet<A>, arena_full: bool) {
        let enc = Self::encode_all(routes, &mut self.scratch, NO_ROUTE, None);
        self.generation += 1;
        self.rebuilds += 1;
        if arena_full && routes.len() >= LARGE_TABLE {
            self.spare = self.spare.grown();
        }
        let (arenas, [nodes, leaves, chunks], root, room) = Self::install(enc, self.spare);
        self.arenas = arenas;
        self.room = room;
        self.nodes = nodes;
        self.leaves = leaves;
        self.chunks = chunks;
        self.root = root;
        // The old arenas go with the last version that uses them.
        self.publish(Vec::new(), false);
    }
}
