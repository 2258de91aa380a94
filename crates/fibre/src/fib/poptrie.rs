//! Poptrie (Asai & Ohara, SIGCOMM 2015), written from the paper, generic over the key width.
//!
//! Encoding, top down:
//! - **Direct pointing** on the top `S` bits ([`FibFamily::DP_BITS`]: 18 for IPv4, 20 for IPv6).
//!   The 2^S entries are cut into chunks of 2^(S-R) entries under a root of 2^R
//!   ([`FibFamily::ROOT_BITS`]); a chunk whose entries are all one leaf is not stored, its root
//!   entry holds the leaf. Chunking is what makes an update cheap to publish: a new version copies
//!   the root (2-4 KiB) and the chunks it changes, never the whole 2^S array.
//! - An entry is a leaf id, or ([`INDEX`] bit set) the index of a subtree's top node.
//! - A **node** covers the next 6 bits: `vector` marks the 64 slots that continue in a child
//!   node, `leafvec` marks the slots where a new run of equal leaves starts (leaf compression: the
//!   runs skip child slots). Children of a node are contiguous from `base1`, its leaves from
//!   `base0`; a slot finds its child or leaf by counting set bits below it (`popcnt`).
//! - The last level of a key narrower than a multiple of 6 is padded with zero bits; a prefix
//!   there covers the padded slots its bits allow, and lookups only reach the all-zero one.
//!
//! Updates rebuild the subtree of each direct-pointing slot a change touches (the paper's unit),
//! into blocks of arenas that never move, then publish a new version of the root; the blocks a
//! version stopped using are reused once every reader that could see them has let go
//! (see [`PoptrieView`]'s `Drop`).
use super::arena::{BlockAlloc, RawArena};
use super::{FibFamily, FibStats, LpmAlgorithm, LpmView, Reader, NO_ROUTE};
use crate::addr::Bits;
use crate::prefix::Prefix;
use crate::rib::PrefixTrie;
use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// Entry tag: the rest is an index (of a chunk in the root, of a node in a chunk).
pub const INDEX: u32 = 1 << 31;
/// A direct-pointing change of more slots than this rebuilds the whole structure (a short
/// prefix such as a default route touches every slot).
const FULL_REBUILD_SLOTS: usize = 1 << 12;
/// Lookups in flight at once in [`PoptrieView::lookup_bulk`].
const LANES: usize = 16;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
struct Node {
    vector: u64,
    leafvec: u64,
    base0: u32,
    base1: u32,
}

/// The arrays of one generation (one full build and the updates after it).
struct Arenas {
    nodes: RawArena<Node>,
    leaves: RawArena<u32>,
    chunks: RawArena<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Node,
    Leaf,
    Chunk,
}

/// A block of one arena.
#[derive(Clone, Copy, Debug)]
struct Block {
    kind: Kind,
    off: u32,
    len: u32,
}

/// Blocks a version stopped using, sent back to the writer when no reader can see them.
type Retired = (u64, Vec<Block>);

/// One published version: what readers load and look up in.
///
/// Reclamation: when version `V + 1` is published, `V` records the blocks that only versions up
/// to `V` use (`retired`) and holds `V + 1` (`next`). So `V` is dropped only after every older
/// version is, and its drop hands its retired blocks back to the writer: a block returns to use
/// once no reader holds any version that reaches it, as RCU's grace period.
pub struct PoptrieView<A: FibFamily> {
    root: Box<[u32]>,
    arenas: Arc<Arenas>,
    generation: u64,
    version: u64,
    retired: OnceLock<Vec<Block>>,
    next: OnceLock<Arc<PoptrieView<A>>>,
    reclaim: Sender<Retired>,
    _family: PhantomData<A>,
}

impl<A: FibFamily> Drop for PoptrieView<A> {
    fn drop(&mut self) {
        if let Some(blocks) = self.retired.take() {
            // The writer may be gone; then so are the arenas' bookkeeping, and nothing leaks.
            let _ = self.reclaim.send((self.generation, blocks));
        }
        // Unlink the chain iteratively: a reader that held an old version through a million
        // updates would otherwise drop a million versions recursively.
        let mut next = self.next.take();
        while let Some(v) = next {
            match Arc::try_unwrap(v) {
                Ok(mut v) => next = v.next.take(),
                Err(_) => break,
            }
        }
    }
}

/// The 6 bits of `key` from bit `off` on (most significant first), zero-padded past the end.
#[inline(always)]
fn stride<K: Bits>(key: K, off: u32) -> u32 {
    ((key << off) >> (K::WIDTH as u32 - 6)).low_u64() as u32
}

/// The top `n` bits of `key` (0 < n < width).
#[inline(always)]
fn top<K: Bits>(key: K, n: u32) -> usize {
    (key >> (K::WIDTH as u32 - n)).low_u64() as usize
}

/// Bits `from..to` of `key`.
#[inline(always)]
fn bits<K: Bits>(key: K, from: u32, to: u32) -> u32 {
    ((key << from) >> (K::WIDTH as u32 - (to - from))).low_u64() as u32
}

#[inline(always)]
fn prefetch<T>(p: *const T) {
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

    /// The id of the longest prefix containing `key`, or [`NO_ROUTE`].
    #[inline(always)]
    pub fn lookup(&self, key: A::Bits) -> u32 {
        let r = self.root[top(key, Self::R)];
        if r & INDEX == 0 {
            return r;
        }
        let ar = &*self.arenas;
        let e = ar.chunks.get((r & !INDEX) + bits(key, Self::R, Self::S));
        if e & INDEX == 0 {
            return e;
        }
        let mut node = ar.nodes.get(e & !INDEX);
        let mut off = Self::S;
        loop {
            let v = stride(key, off);
            let below = u64::MAX >> (63 - v);
            if node.vector & (1u64 << v) != 0 {
                node = ar
                    .nodes
                    .get(node.base1 + (node.vector & below).count_ones() - 1);
                off += 6;
            } else {
                return ar
                    .leaves
                    .get(node.base0 + (node.leafvec & below).count_ones() - 1);
            }
        }
    }

    /// Lookups of `keys` into `out`, [`LANES`] at a time: each step of every lane issues a
    /// prefetch for its next cell before any lane reads it, so the cache misses of one group
    /// overlap instead of queueing. No allocation, no lock.
    pub fn lookup_bulk(&self, keys: &[A::Bits], out: &mut [u32]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        for (k, o) in keys.chunks(LANES).zip(out.chunks_mut(LANES)) {
            self.lookup_group(k, o);
        }
    }

    #[inline(always)]
    fn lookup_group(&self, keys: &[A::Bits], out: &mut [u32]) {
        /// A lane's next cell is a leaf (not a node).
        const LEAF: u32 = 1 << 31;
        let ar = &*self.arenas;
        let n = keys.len();
        let mut cell = [0u32; LANES];
        let mut off = [0u32; LANES];
        let mut live = [0u8; LANES];
        let mut m = 0;
        for i in 0..n {
            let r = self.root[top(keys[i], Self::R)];
            if r & INDEX == 0 {
                out[i] = r;
            } else {
                cell[i] = (r & !INDEX) + bits(keys[i], Self::R, Self::S);
                prefetch(ar.chunks.addr(cell[i]));
                live[m] = i as u8;
                m += 1;
            }
        }
        let mut lanes = m;
        m = 0;
        for j in 0..lanes {
            let i = live[j] as usize;
            let e = ar.chunks.get(cell[i]);
            if e & INDEX == 0 {
                out[i] = e;
            } else {
                cell[i] = e & !INDEX;
                off[i] = Self::S;
                prefetch(ar.nodes.addr(cell[i]));
                live[m] = i as u8;
                m += 1;
            }
        }
        lanes = m;
        while lanes > 0 {
            m = 0;
            for j in 0..lanes {
                let i = live[j] as usize;
                if cell[i] & LEAF != 0 {
                    out[i] = ar.leaves.get(cell[i] & !LEAF);
                    continue;
                }
                let node = ar.nodes.get(cell[i]);
                let v = stride(keys[i], off[i]);
                let below = u64::MAX >> (63 - v);
                if node.vector & (1u64 << v) != 0 {
                    cell[i] = node.base1 + (node.vector & below).count_ones() - 1;
                    off[i] += 6;
                    prefetch(ar.nodes.addr(cell[i]));
                } else {
                    let leaf = node.base0 + (node.leafvec & below).count_ones() - 1;
                    prefetch(ar.leaves.addr(leaf));
                    cell[i] = leaf | LEAF;
                }
                live[m] = i as u8;
                m += 1;
            }
            lanes = m;
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
}

/// Nodes and leaves of one subtree under construction, indexes relative to the subtree.
#[derive(Default)]
struct Scratch<K> {
    nodes: Vec<Node>,
    leaves: Vec<u32>,
    prefixes: Vec<(K, u8, u32)>,
}

/// Encodes the node at `at` covering bits `off..off + 6` of `prefixes` (in trie order: a prefix
/// before the prefixes it covers), every one longer than `off`; `default` answers where none
/// does. Its leaves go in one block, its children in one block, then each child recursively.
fn encode_node<K: Bits>(
    nodes: &mut Vec<Node>,
    leaves: &mut Vec<u32>,
    prefixes: &[(K, u8, u32)],
    off: u32,
    default: u32,
    at: usize,
) {
    let mut slot = [default; 64];
    let mut vector = 0u64;
    for &(key, len, id) in prefixes {
        let first = stride(key, off) as usize;
        let len = len as u32;
        if len <= off + 6 {
            // Trie order: a more specific prefix is painted after the ones covering it.
            let span = 1usize << (off + 6 - len);
            slot[first..first + span].fill(id);
        } else {
            vector |= 1u64 << first;
        }
    }
    let base0 = leaves.len() as u32;
    let mut leafvec = 0u64;
    let mut prev = None;
    for (v, &id) in slot.iter().enumerate() {
        if vector & (1u64 << v) == 0 && prev != Some(id) {
            leafvec |= 1u64 << v;
            leaves.push(id);
            prev = Some(id);
        }
    }
    let base1 = nodes.len() as u32;
    nodes.resize(nodes.len() + vector.count_ones() as usize, Node::default());
    nodes[at] = Node {
        vector,
        leafvec,
        base0,
        base1,
    };
    // The prefixes below one slot are contiguous in trie order, slots ascending.
    let mut child = base1 as usize;
    let mut rest = prefixes;
    while let Some(start) = rest.iter().position(|p| p.1 as u32 > off + 6) {
        let v = stride(rest[start].0, off);
        let end = rest[start..]
            .iter()
            .position(|p| stride(p.0, off) != v)
            .map_or(rest.len(), |e| start + e);
        encode_node(
            nodes,
            leaves,
            &rest[start..end],
            off + 6,
            slot[v as usize],
            child,
        );
        child += 1;
        rest = &rest[end..];
    }
}

impl<K: Bits> Scratch<K> {
    /// Encodes the subtree of one direct-pointing slot from `self.prefixes`; `Some(leaf)` when
    /// it is one leaf (no node needed).
    fn encode(&mut self, dp_bits: u32, default: u32) -> Option<u32> {
        self.nodes.clear();
        self.leaves.clear();
        if self.prefixes.is_empty() {
            return Some(default);
        }
        self.nodes.push(Node::default());
        encode_node(
            &mut self.nodes,
            &mut self.leaves,
            &self.prefixes,
            dp_bits,
            default,
            0,
        );
        let top = self.nodes[0];
        (top.vector == 0 && top.leafvec.count_ones() == 1).then(|| self.leaves[0])
    }
}

/// The writer's side: the current encoding, its arenas' bookkeeping, and the publication cell.
pub struct Poptrie<A: FibFamily> {
    cell: Arc<ArcSwap<PoptrieView<A>>>,
    current: Arc<PoptrieView<A>>,
    /// The root being edited; copied into each published version.
    root: Vec<u32>,
    arenas: Arc<Arenas>,
    generation: u64,
    nodes: BlockAlloc,
    leaves: BlockAlloc,
    chunks: BlockAlloc,
    /// Slot -> (node block, leaf block) of its subtree.
    regions: HashMap<u32, (Block, Block)>,
    reclaim: Sender<Retired>,
    /// Only the writer receives; the lock is never contended (it makes the writer `Sync`).
    returned: Mutex<Receiver<Retired>>,
    scratch: Scratch<A::Bits>,
    /// Full rebuilds after the first build (short-prefix changes, full arenas).
    pub rebuilds: u64,
}

/// The parts of a fresh encoding.
struct Encoded {
    root: Vec<u32>,
    nodes: Vec<Node>,
    leaves: Vec<u32>,
    chunks: Vec<u32>,
    regions: HashMap<u32, (Block, Block)>,
}

impl<A: FibFamily> Poptrie<A> {
    const S: u32 = A::DP_BITS;
    const R: u32 = A::ROOT_BITS;
    const CHUNK: usize = 1 << (A::DP_BITS - A::ROOT_BITS);

    fn slot_prefix(slot: u32) -> Prefix<A> {
        let key = A::Bits::from_u64(slot as u64) << (A::WIDTH as u32 - Self::S);
        Prefix::new(A::from_bits(key), Self::S as u8)
    }

    /// Encodes every route from scratch. Work is in proportion to the root, the chunks that
    /// hold a prefix longer than the root step, and the prefixes: a small table costs little.
    fn encode_all(routes: &PrefixTrie<A, u32>, scratch: &mut Scratch<A::Bits>) -> Encoded {
        let (r, s) = (Self::R, Self::S);
        let mut out = Encoded {
            root: vec![NO_ROUTE; 1 << r],
            nodes: Vec::new(),
            leaves: Vec::new(),
            chunks: Vec::new(),
            regions: HashMap::new(),
        };
        // Trie order: a prefix before those it covers, so painting in order leaves each cell
        // with its longest match; the prefixes longer than the root step come grouped by chunk.
        let all: Vec<(A::Bits, u8, u32)> = routes
            .iter()
            .map(|(p, &id)| (p.bits(), p.len(), id))
            .collect();
        for &(key, len, id) in all.iter().filter(|p| p.1 as u32 <= r) {
            let first = top(key, r);
            out.root[first..first + (1 << (r - len as u32))].fill(id);
        }
        let mut chunk = vec![NO_ROUTE; Self::CHUNK];
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
                let slot = (ri * Self::CHUNK + ci) as u32;
                chunk[ci] = match scratch.encode(s, chunk[ci]) {
                    Some(leaf) => leaf,
                    None => {
                        let (node_off, leaf_off) =
                            (out.nodes.len() as u32, out.leaves.len() as u32);
                        out.nodes.extend(scratch.nodes.iter().map(|n| Node {
                            base0: n.base0 + leaf_off,
                            base1: n.base1 + node_off,
                            ..*n
                        }));
                        out.leaves.extend_from_slice(&scratch.leaves);
                        out.regions
                            .insert(slot, Self::blocks(scratch, node_off, leaf_off));
                        INDEX | node_off
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

    fn blocks(scratch: &Scratch<A::Bits>, node_off: u32, leaf_off: u32) -> (Block, Block) {
        (
            Block {
                kind: Kind::Node,
                off: node_off,
                len: scratch.nodes.len() as u32,
            },
            Block {
                kind: Kind::Leaf,
                off: leaf_off,
                len: scratch.leaves.len() as u32,
            },
        )
    }

    /// Fresh arenas holding `enc`, with room to grow by an eighth before the next compaction.
    fn install(enc: Encoded) -> (Arc<Arenas>, [BlockAlloc; 3], Vec<u32>) {
        fn room(n: usize) -> usize {
            n + n / 8 + 4096
        }
        let arenas = Arenas {
            nodes: RawArena::new(room(enc.nodes.len())),
            leaves: RawArena::new(room(enc.leaves.len())),
            chunks: RawArena::new(room(enc.chunks.len()).max(Self::CHUNK * 64)),
        };
        for (i, n) in enc.nodes.iter().enumerate() {
            arenas.nodes.set(i as u32, *n);
        }
        for (i, l) in enc.leaves.iter().enumerate() {
            arenas.leaves.set(i as u32, *l);
        }
        for (i, c) in enc.chunks.iter().enumerate() {
            arenas.chunks.set(i as u32, *c);
        }
        let allocs = [
            BlockAlloc::new(enc.nodes.len() as u32, arenas.nodes.cap()),
            BlockAlloc::new(enc.leaves.len() as u32, arenas.leaves.cap()),
            BlockAlloc::new(enc.chunks.len() as u32, arenas.chunks.cap()),
        ];
        (Arc::new(arenas), allocs, enc.root)
    }

    /// Re-encodes everything into fresh arenas and publishes it.
    fn rebuild(&mut self, routes: &PrefixTrie<A, u32>) {
        let enc = Self::encode_all(routes, &mut self.scratch);
        self.generation += 1;
        self.rebuilds += 1;
        let regions = enc.regions.clone();
        let (arenas, [nodes, leaves, chunks], root) = Self::install(enc);
        self.arenas = arenas;
        self.nodes = nodes;
        self.leaves = leaves;
        self.chunks = chunks;
        self.root = root;
        self.regions = regions;
        // The old arenas go with the last version that uses them.
        self.publish(Vec::new());
    }

    fn publish(&mut self, retired: Vec<Block>) {
        let view = Arc::new(PoptrieView {
            root: self.root.clone().into_boxed_slice(),
            arenas: self.arenas.clone(),
            generation: self.generation,
            version: self.current.version + 1,
            retired: OnceLock::new(),
            next: OnceLock::new(),
            reclaim: self.reclaim.clone(),
            _family: PhantomData,
        });
        let _ = self.current.retired.set(retired);
        let _ = self.current.next.set(view.clone());
        self.cell.store(view.clone());
        self.current = view;
    }

    /// Takes back the blocks no reader can reach any more.
    fn reclaim(&mut self) {
        let returned = self.returned.lock().expect("only the writer locks");
        while let Ok((generation, blocks)) = returned.try_recv() {
            if generation != self.generation {
                continue; // its arenas are gone or going
            }
            for b in blocks {
                match b.kind {
                    Kind::Node => self.nodes.free(b.off, b.len),
                    Kind::Leaf => self.leaves.free(b.off, b.len),
                    Kind::Chunk => self.chunks.free(b.off, b.len),
                }
            }
        }
    }

    /// The chunk of root entry `ri`, copied (or made from a uniform entry) the first time this
    /// batch writes it. `fresh` lists the chunks made in this batch, ascending.
    fn chunk_for_write(
        &mut self,
        ri: usize,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<u32> {
        let e = self.root[ri];
        if fresh.last() == Some(&ri) {
            return Some(e & !INDEX);
        }
        let len = Self::CHUNK as u32;
        let off = self.chunks.alloc(len)?;
        let ar = &self.arenas.chunks;
        if e & INDEX == 0 {
            (0..len).for_each(|i| ar.set(off + i, e));
        } else {
            let old = e & !INDEX;
            (0..len).for_each(|i| ar.set(off + i, ar.get(old + i)));
            retired.push(Block {
                kind: Kind::Chunk,
                off: old,
                len,
            });
        }
        self.root[ri] = INDEX | off;
        fresh.push(ri);
        Some(off)
    }

    /// Re-encodes the slots in `dirty` (ascending) and publishes once; `None` if the arenas ran
    /// out of room (nothing was published; the caller rebuilds).
    fn patch(&mut self, routes: &PrefixTrie<A, u32>, dirty: &[u32]) -> Option<()> {
        let s = Self::S;
        let mut retired = Vec::new();
        let mut fresh = Vec::new();
        for &slot in dirty {
            let sp = Self::slot_prefix(slot);
            let default = routes
                .find_map_matches(sp.addr(), |p, v| (p.len() as u32 <= s).then_some(*v))
                .unwrap_or(NO_ROUTE);
            self.scratch.prefixes.clear();
            // (A slot can hold prefixes without a subtree: one that encodes as a single leaf.)
            self.scratch.prefixes.extend(
                routes
                    .covered(&sp)
                    .filter(|(p, _)| p.len() as u32 > s)
                    .map(|(p, &id)| (p.bits(), p.len(), id)),
            );
            let entry = match self.scratch.encode(s, default) {
                Some(leaf) => {
                    if let Some((n, l)) = self.regions.remove(&slot) {
                        retired.extend([n, l]);
                    }
                    leaf
                }
                None => {
                    let node_off = self.nodes.alloc(self.scratch.nodes.len() as u32)?;
                    let leaf_off = self.leaves.alloc(self.scratch.leaves.len() as u32)?;
                    let ar = &self.arenas;
                    for (i, n) in self.scratch.nodes.iter().enumerate() {
                        let n = Node {
                            base0: n.base0 + leaf_off,
                            base1: n.base1 + node_off,
                            ..*n
                        };
                        ar.nodes.set(node_off + i as u32, n);
                    }
                    for (i, &l) in self.scratch.leaves.iter().enumerate() {
                        ar.leaves.set(leaf_off + i as u32, l);
                    }
                    let blocks = Self::blocks(&self.scratch, node_off, leaf_off);
                    if let Some((n, l)) = self.regions.insert(slot, blocks) {
                        retired.extend([n, l]);
                    }
                    INDEX | node_off
                }
            };
            let ri = slot as usize / Self::CHUNK;
            let chunk = self.chunk_for_write(ri, &mut fresh, &mut retired)?;
            self.arenas
                .chunks
                .set(chunk + (slot as usize % Self::CHUNK) as u32, entry);
        }
        // A chunk that became one leaf goes back into its root entry; it was never published.
        for ri in fresh {
            let off = self.root[ri] & !INDEX;
            let ar = &self.arenas.chunks;
            let first = ar.get(off);
            if first & INDEX == 0 && (1..Self::CHUNK as u32).all(|i| ar.get(off + i) == first) {
                self.root[ri] = first;
                self.chunks.free(off, Self::CHUNK as u32);
            }
        }
        self.publish(retired);
        Some(())
    }

    /// Walks the structure in key order; `f` gets each cell's content in a canonical form
    /// (no arena offsets), what it is, and its node depth.
    fn walk(&self, mut f: impl FnMut(Cell, u64, usize)) {
        let ar = &*self.arenas;
        fn node<F: FnMut(Cell, u64, usize)>(ar: &Arenas, i: u32, depth: usize, f: &mut F) {
            let n = ar.nodes.get(i);
            f(Cell::Node, n.vector, depth);
            f(Cell::Node, n.leafvec, depth);
            for k in 0..n.leafvec.count_ones() {
                f(Cell::Leaf, ar.leaves.get(n.base0 + k) as u64, depth);
            }
            for k in 0..n.vector.count_ones() {
                node(ar, n.base1 + k, depth + 1, f);
            }
        }
        for &r in &self.root {
            if r & INDEX == 0 {
                f(Cell::Entry, r as u64, 0);
                continue;
            }
            f(Cell::Entry, u64::MAX, 0);
            for i in 0..Self::CHUNK as u32 {
                let e = ar.chunks.get((r & !INDEX) + i);
                if e & INDEX == 0 {
                    f(Cell::Entry, e as u64, 0);
                } else {
                    f(Cell::Entry, u64::MAX - 1, 0);
                    node(ar, e & !INDEX, 1, &mut f);
                }
            }
        }
    }
}

/// What [`Poptrie::walk`] reports a value of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Entry,
    Node,
    Leaf,
}

impl<A: FibFamily> LpmAlgorithm<A> for Poptrie<A> {
    const NAME: &'static str = "poptrie";
    type View = PoptrieView<A>;

    fn build(routes: &PrefixTrie<A, u32>) -> Self {
        let mut scratch = Scratch::default();
        let enc = Self::encode_all(routes, &mut scratch);
        let regions = enc.regions.clone();
        let (arenas, [nodes, leaves, chunks], root) = Self::install(enc);
        let (reclaim, returned) = channel();
        let view = Arc::new(PoptrieView {
            root: root.clone().into_boxed_slice(),
            arenas: arenas.clone(),
            generation: 0,
            version: 0,
            retired: OnceLock::new(),
            next: OnceLock::new(),
            reclaim: reclaim.clone(),
            _family: PhantomData,
        });
        Poptrie {
            cell: Arc::new(ArcSwap::new(view.clone())),
            current: view,
            root,
            arenas,
            generation: 0,
            nodes,
            leaves,
            chunks,
            regions,
            reclaim,
            returned: Mutex::new(returned),
            scratch,
            rebuilds: 0,
        }
    }

    fn update(&mut self, routes: &PrefixTrie<A, u32>, changed: &[Prefix<A>]) {
        if changed.is_empty() {
            return;
        }
        self.reclaim();
        let s = Self::S;
        let mut dirty = Vec::new();
        for p in changed {
            let first = top(p.bits(), s) as u32;
            let span = 1usize << s.saturating_sub(p.len() as u32);
            if p.len() as u32 > s {
                dirty.push(first);
            } else if dirty.len() + span > FULL_REBUILD_SLOTS {
                return self.rebuild(routes);
            } else {
                dirty.extend(first..first + span as u32);
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        if self.patch(routes, &dirty).is_none() {
            self.rebuild(routes);
        }
    }

    fn reader(&self) -> Reader<PoptrieView<A>> {
        Reader::new(self.cell.clone())
    }

    fn stats(&self) -> FibStats {
        // Depth and counts from what a version reaches; bytes from the arenas (blocks waiting
        // for their last reader included).
        let (mut max_depth, mut nodes, mut leaves, mut depths, mut answers) = (0, 0, 0, 0, 0);
        self.walk(|cell, v, d| {
            max_depth = max_depth.max(d);
            match cell {
                Cell::Node => nodes += 1,
                Cell::Leaf => {
                    leaves += 1;
                    answers += 1;
                    depths += d;
                }
                Cell::Entry if v < u64::MAX - 1 => answers += 1,
                Cell::Entry => {}
            }
        });
        FibStats {
            bytes: self.root.len() * 4
                + self.chunks.live() * 4
                + self.nodes.live() * std::mem::size_of::<Node>()
                + self.leaves.live() * 4,
            nodes: nodes / 2, // two words a node
            leaves,
            max_depth,
            mean_depth: depths as f64 / answers.max(1) as f64,
            rebuilds: self.rebuilds,
        }
    }

    fn image(&self) -> Vec<u64> {
        let mut out = Vec::new();
        self.walk(|_, v, _| out.push(v));
        out
    }
}
