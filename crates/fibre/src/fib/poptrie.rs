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
//! Updates copy on write, into blocks of arenas that never move: a change of a prefix longer than
//! the direct-pointing step re-encodes only the node at the prefix's level (the slots the prefix
//! covers afresh, the other slots' children moved by their 24-byte cells, nothing below them
//! touched), then copies the children blocks of its ancestors up to the direct-pointing entry
//! (path copying). A change of a shorter prefix re-encodes each direct-pointing slot it covers
//! (leaf pushing put its id in all of them). A batch publishes one new root; the blocks a version
//! stopped using are reused once every reader that could see them has let go (see
//! [`PoptrieView`]'s `Drop`).
use super::arena::{BlockAlloc, RawArena};
use super::{
    check_ids, FibFamily, FibStats, IdOutOfRange, LpmAlgorithm, LpmView, Reader, MAX_ID, NO_ROUTE,
};
use crate::addr::Bits;
use crate::prefix::Prefix;
use crate::trie::PrefixTrie;
use arc_swap::ArcSwap;
use std::marker::PhantomData;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// An id as the encoding stores it. [`LpmAlgorithm::build`] and [`LpmAlgorithm::update`] refuse
/// ids above [`MAX_ID`]; this keeps the encoding sound even for a caller that changed the set
/// without naming the change (such an id then reads as no route, never as a cell index).
#[inline]
fn stored(id: u32) -> u32 {
    if id <= MAX_ID {
        id
    } else {
        NO_ROUTE
    }
}

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

impl Node {
    /// Whether slot `v` (0..64) holds a child node; if not, a leaf answers it.
    #[inline(always)]
    fn has_child(&self, v: u32) -> bool {
        self.vector & (1u64 << v) != 0
    }
    /// The cell of slot `v`'s child node: `base1` plus the children of the slots before it.
    #[inline(always)]
    fn child(&self, v: u32) -> u32 {
        self.base1 + (self.vector & (u64::MAX >> (63 - v))).count_ones() - 1
    }
    /// The cell of the leaf answering slot `v`: `base0` plus the runs of leaves before it.
    #[inline(always)]
    fn leaf(&self, v: u32) -> u32 {
        self.base0 + (self.leafvec & (u64::MAX >> (63 - v))).count_ones() - 1
    }
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

impl Block {
    fn new(kind: Kind, off: u32, len: u32) -> Self {
        Block { kind, off, len }
    }
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
        let mut rest = key << Self::S;
        loop {
            let v = Self::next6(rest);
            // Written out rather than through `Node::child` / `Node::leaf`: with the helpers the
            // compiler lays this loop out differently, 7% slower on IPv6 W1 single lookups
            // (fibre bench, same run, old and new binaries in turn).
            let below = u64::MAX >> (63 - v);
            if node.vector & (1u64 << v) != 0 {
                node = ar
                    .nodes
                    .get(node.base1 + (node.vector & below).count_ones() - 1);
                rest = rest << 6;
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

    /// One group of at most [`LANES`] lookups in lock step. Lanes still walking are kept packed
    /// at the front of the state arrays (a finished lane takes the last one's place), so a step
    /// touches only live lanes, without an index array.
    #[inline(always)]
    fn lookup_group(&self, keys: &[A::Bits], out: &mut [u32]) {
        /// A lane's next cell is a leaf (not a node).
        const LEAF: u32 = 1 << 31;
        /// Lane indexes are masked with this: always in bounds, so the compiler drops the
        /// bounds checks it cannot otherwise prove (lanes <= LANES, a power of two).
        const M: usize = LANES - 1;
        const _: () = assert!(LANES.is_power_of_two() && LANES <= 256);
        let ar = &*self.arenas;
        let mut cell = [0u32; LANES];
        let mut rest = [A::Bits::ZERO; LANES];
        let mut slot = [0u8; LANES];
        // Direct pointing: the root (small, cached), then each lane's chunk entry, prefetched.
        let mut lanes = 0;
        for (i, &k) in keys.iter().enumerate() {
            let r = self.root[top(k, Self::R)];
            if r & INDEX == 0 {
                out[i] = r;
            } else {
                let c = (r & !INDEX) + bits(k, Self::R, Self::S);
                prefetch(ar.chunks.addr(c));
                cell[lanes & M] = c;
                rest[lanes & M] = k << Self::S;
                slot[lanes & M] = i as u8;
                lanes += 1;
            }
        }
        let mut j = 0;
        while j < lanes {
            let e = ar.chunks.get(cell[j & M]);
            if e & INDEX == 0 {
                out[slot[j & M] as usize] = e;
                lanes -= 1;
                cell[j & M] = cell[lanes & M];
                rest[j & M] = rest[lanes & M];
                slot[j & M] = slot[lanes & M];
            } else {
                cell[j & M] = e & !INDEX;
                prefetch(ar.nodes.addr(e & !INDEX));
                j += 1;
            }
        }
        // Node levels: each step reads the cell prefetched by the step before.
        while lanes > 0 {
            let mut j = 0;
            while j < lanes {
                let c = cell[j & M];
                if c & LEAF != 0 {
                    out[slot[j & M] as usize] = ar.leaves.get(c & !LEAF);
                    lanes -= 1;
                    cell[j & M] = cell[lanes & M];
                    rest[j & M] = rest[lanes & M];
                    slot[j & M] = slot[lanes & M];
                    continue;
                }
                let node = ar.nodes.get(c);
                let r = rest[j & M];
                let v = Self::next6(r);
                if node.has_child(v) {
                    let next = node.child(v);
                    prefetch(ar.nodes.addr(next));
                    cell[j & M] = next;
                    rest[j & M] = r << 6;
                } else {
                    let leaf = node.leaf(v);
                    prefetch(ar.leaves.addr(leaf));
                    cell[j & M] = leaf | LEAF;
                }
                j += 1;
            }
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
    /// The prefixes below one slot, while `prefixes` holds a region's.
    sub: Vec<(K, u8, u32)>,
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

/// Encodes the subtree of one direct-pointing slot from `prefixes` (all longer than `dp_bits`,
/// in trie order) into `nodes` (top node at 0) and `leaves`; `Some(leaf)` when it is one leaf
/// (no node needed).
fn encode_slot<K: Bits>(
    nodes: &mut Vec<Node>,
    leaves: &mut Vec<u32>,
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
    encode_node(nodes, leaves, prefixes, dp_bits, default, 0);
    let top = nodes[0];
    (top.vector == 0 && top.leafvec.count_ones() == 1).then(|| leaves[0])
}

impl<K: Bits> Scratch<K> {
    /// [`encode_slot`] of `self.prefixes`.
    fn encode(&mut self, dp_bits: u32, default: u32) -> Option<u32> {
        encode_slot(
            &mut self.nodes,
            &mut self.leaves,
            &self.prefixes,
            dp_bits,
            default,
        )
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
        };
        // Trie order: a prefix before those it covers, so painting in order leaves each cell
        // with its longest match; the prefixes longer than the root step come grouped by chunk.
        let all: Vec<(A::Bits, u8, u32)> = routes
            .iter()
            .map(|(p, &id)| (p.bits(), p.len(), stored(id)))
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
        let (arenas, [nodes, leaves, chunks], root) = Self::install(enc);
        self.arenas = arenas;
        self.nodes = nodes;
        self.leaves = leaves;
        self.chunks = chunks;
        self.root = root;
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
        debug_assert!(
            fresh.last().is_none_or(|&l| l < ri),
            "chunks are written in ascending order"
        );
        let len = Self::CHUNK as u32;
        let off = self.chunks.alloc(len)?;
        let ar = &self.arenas.chunks;
        if e & INDEX == 0 {
            ar.fill(off, len, e);
        } else {
            let old = e & !INDEX;
            ar.copy(old, off, len);
            retired.push(Block::new(Kind::Chunk, old, len));
        }
        self.root[ri] = INDEX | off;
        fresh.push(ri);
        Some(off)
    }

    /// The direct-pointing entry of `slot` (as edited so far in this batch).
    fn entry(&self, slot: usize) -> u32 {
        let r = self.root[slot / Self::CHUNK];
        if r & INDEX == 0 {
            return r;
        }
        self.arenas
            .chunks
            .get((r & !INDEX) + (slot % Self::CHUNK) as u32)
    }

    /// Sets the direct-pointing entry of `slot`, copying its chunk first if this batch has not.
    fn set_entry(
        &mut self,
        slot: usize,
        entry: u32,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<()> {
        let chunk = self.chunk_for_write(slot / Self::CHUNK, fresh, retired)?;
        self.arenas
            .chunks
            .set(chunk + (slot % Self::CHUNK) as u32, entry);
        Some(())
    }

    /// Retires node `n`'s own blocks: its leaves and its children's cells.
    fn retire_own(n: Node, retired: &mut Vec<Block>) {
        let leaves = n.leafvec.count_ones();
        if leaves > 0 {
            retired.push(Block::new(Kind::Leaf, n.base0, leaves));
        }
        let kids = n.vector.count_ones();
        if kids > 0 {
            retired.push(Block::new(Kind::Node, n.base1, kids));
        }
    }

    /// Retires a slot's subtree: its top node's cell `cell` and every block below it.
    fn retire_subtree(ar: &Arenas, cell: u32, retired: &mut Vec<Block>) {
        retired.push(Block::new(Kind::Node, cell, 1));
        Self::retire_below(ar, ar.nodes.get(cell), retired);
    }

    /// Retires every block below node `n`: its leaves, its children, theirs (not `n`'s cell).
    fn retire_below(ar: &Arenas, n: Node, retired: &mut Vec<Block>) {
        Self::retire_own(n, retired);
        for k in 0..n.vector.count_ones() {
            Self::retire_below(ar, ar.nodes.get(n.base1 + k), retired);
        }
    }

    /// Copies the subtree in `scratch` (top node at 0) into fresh blocks: the top's cell too when
    /// `with_top` (then it is the first cell of the block returned), else only what is below it.
    /// Returns the top node relocated and the first cell. `None`: an arena is full.
    fn place(
        nodes: &mut BlockAlloc,
        leaves: &mut BlockAlloc,
        ar: &Arenas,
        scratch: &Scratch<A::Bits>,
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
        for (i, n) in scratch.nodes.iter().enumerate().skip(skip as usize) {
            ar.nodes.set(node_off + i as u32 - skip, reloc(n));
        }
        for (i, &x) in scratch.leaves.iter().enumerate() {
            ar.leaves.set(leaf_off + i as u32, x);
        }
        Some((reloc(&scratch.nodes[0]), node_off))
    }

    /// Re-encodes every direct-pointing slot under `p` (at most the direct-pointing step long)
    /// from `routes`, in one pass over the prefixes `p` covers: leaf pushing put `p`'s id (or
    /// what covered it) in all of them.
    fn reencode_span(
        &mut self,
        routes: &PrefixTrie<A, u32>,
        p: Prefix<A>,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<()> {
        let s = Self::S;
        let first = top(p.bits(), s);
        let n = 1usize << (s - p.len() as u32);
        let default = routes
            .find_map_matches(p.addr(), |q, v| (q.len() < p.len()).then_some(stored(*v)))
            .unwrap_or(NO_ROUTE);
        self.scratch.prefixes.clear();
        self.scratch.prefixes.extend(
            routes
                .covered(&p)
                .map(|(q, &id)| (q.bits(), q.len(), stored(id))),
        );
        // What each slot holds above its subtree (trie order: covering prefixes paint first).
        let mut fill = vec![default; n];
        for &(key, len, id) in self.scratch.prefixes.iter().filter(|q| q.1 as u32 <= s) {
            let f = top(key, s) - first;
            fill[f..f + (1 << (s - len as u32))].fill(id);
        }
        let mut long = 0;
        for (i, &fill) in fill.iter().enumerate() {
            let slot = first + i;
            let old = self.entry(slot);
            let Scratch {
                nodes,
                leaves,
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
            if old & INDEX != 0 {
                Self::retire_subtree(&self.arenas, old & !INDEX, retired);
            }
            let entry = match encode_slot(nodes, leaves, sub, s, fill) {
                Some(leaf) => leaf,
                None => {
                    let (_, cell) = Self::place(
                        &mut self.nodes,
                        &mut self.leaves,
                        &self.arenas,
                        &self.scratch,
                        true,
                    )?;
                    INDEX | cell
                }
            };
            self.set_entry(slot, entry, fresh, retired)?;
        }
        Some(())
    }

    /// Re-encodes node `old`, which covers bits `off..off + 6` of the keys under the first `off`
    /// bits of `region`, after a change inside `region` (`off < region.len() <= off + 6`): the slots
    /// `region` covers are encoded afresh from `routes`; the other slots keep their leaves, and
    /// their children move by their cells (nothing below them is touched). The new node is not
    /// placed: its cell is the caller's.
    fn reencode_node(
        &mut self,
        routes: &PrefixTrie<A, u32>,
        old: Node,
        off: u32,
        region: Prefix<A>,
        retired: &mut Vec<Block>,
    ) -> Option<Outcome> {
        let span = Prefix::new(region.addr(), off as u8);
        let top_level = off == Self::S;
        let ar = self.arenas.clone();
        let mut leaf = [NO_ROUTE; 64];
        let mut child = [Node::default(); 64];
        for v in 0..64u32 {
            if old.has_child(v) {
                child[v as usize] = ar.nodes.get(old.child(v));
            } else {
                leaf[v as usize] = ar.leaves.get(old.leaf(v));
            }
        }
        // The region's slots, from scratch: what covers the region, then what it covers.
        let first = stride(region.bits(), off) as usize;
        let width = 1usize << (off + 6 - region.len() as u32);
        let region_mask = (u64::MAX >> (64 - width)) << first;
        let default = routes
            .find_map_matches(region.addr(), |q, v| {
                (q.len() < region.len()).then_some(stored(*v))
            })
            .unwrap_or(NO_ROUTE);
        leaf[first..first + width].fill(default);
        self.scratch.prefixes.clear();
        self.scratch.prefixes.extend(
            routes
                .covered(&region)
                .map(|(p, &id)| (p.bits(), p.len(), stored(id))),
        );
        let mut fresh_children = 0u64;
        for &(key, len, id) in &self.scratch.prefixes {
            let v = stride(key, off) as usize;
            let len = len as u32;
            if len <= off + 6 {
                // Trie order: a more specific prefix is painted after the ones covering it.
                leaf[v..v + (1 << (off + 6 - len))].fill(id);
            } else {
                fresh_children |= 1 << v;
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
        // The region's children, encoded afresh (their subtrees into fresh blocks).
        let mut rest = fresh_children;
        while rest != 0 {
            let v = rest.trailing_zeros();
            rest &= rest - 1;
            let Scratch {
                nodes,
                leaves,
                prefixes,
                sub,
            } = &mut self.scratch;
            sub.clear();
            sub.extend(
                prefixes
                    .iter()
                    .filter(|p| p.1 as u32 > off + 6 && stride(p.0, off) == v),
            );
            nodes.clear();
            leaves.clear();
            nodes.push(Node::default());
            encode_node(nodes, leaves, sub, off + 6, leaf[v as usize], 0);
            let (top, _) =
                Self::place(&mut self.nodes, &mut self.leaves, &ar, &self.scratch, false)?;
            child[v as usize] = top;
        }
        // The node: leaves in runs over the slots without a child, children in slot order.
        let mut leafvec = 0u64;
        let mut runs = [0u32; 64];
        let mut n_runs = 0;
        let mut prev = None;
        for (v, &x) in leaf.iter().enumerate() {
            if vector & (1 << v) == 0 && prev != Some(x) {
                leafvec |= 1 << v;
                runs[n_runs] = x;
                n_runs += 1;
                prev = Some(x);
            }
        }
        let kids = vector.count_ones();
        let base0 = if n_runs > 0 {
            self.leaves.alloc(n_runs as u32)?
        } else {
            0
        };
        let base1 = if kids > 0 { self.nodes.alloc(kids)? } else { 0 };
        for (i, &x) in runs[..n_runs].iter().enumerate() {
            ar.leaves.set(base0 + i as u32, x);
        }
        let mut at = base1;
        let mut set = vector;
        while set != 0 {
            let v = set.trailing_zeros();
            set &= set - 1;
            ar.nodes.set(at, child[v as usize]);
            at += 1;
        }
        // What the old node reached and the new one does not.
        Self::retire_own(old, retired);
        let mut replaced = old.vector & region_mask;
        while replaced != 0 {
            let v = replaced.trailing_zeros();
            replaced &= replaced - 1;
            Self::retire_below(&ar, ar.nodes.get(old.child(v)), retired);
        }
        Some(Outcome::Node(Node {
            vector,
            leafvec,
            base0,
            base1,
        }))
    }

    /// Follows a change of `p` (longer than the direct-pointing step): re-encodes the node at
    /// `p`'s level (or the deepest existing node on its path), going up while nodes vanish, then
    /// copies the ancestors' children blocks up to the direct-pointing entry.
    fn patch_long(
        &mut self,
        routes: &PrefixTrie<A, u32>,
        p: Prefix<A>,
        fresh: &mut Vec<usize>,
        retired: &mut Vec<Block>,
    ) -> Option<()> {
        let s = Self::S;
        let slot = top(p.bits(), s);
        let entry = self.entry(slot);
        if entry & INDEX == 0 {
            // No subtree yet: it is at most `p` and what shares its slot.
            return self.reencode_span(routes, Self::slot_prefix(slot as u32), fresh, retired);
        }
        let top_cell = entry & !INDEX;
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
            match self.reencode_node(routes, node, off, region, retired)? {
                Outcome::Gone => {
                    region = span;
                    depth -= 1;
                    off -= 6;
                }
                Outcome::Leaf(id) => {
                    // The top node folded into a leaf: its cell and everything below it go
                    // (no child of it survives: a leaf top has none).
                    Self::retire_subtree(&self.arenas, top_cell, retired);
                    return self.set_entry(slot, id, fresh, retired);
                }
                Outcome::Node(mut new) => {
                    // Path copying: each ancestor's children block, with the new child in.
                    for j in (0..depth).rev() {
                        let (parent, _) = path[j];
                        let kids = parent.vector.count_ones();
                        let block = self.nodes.alloc(kids)?;
                        self.arenas.nodes.copy(parent.base1, block, kids);
                        self.arenas
                            .nodes
                            .set(block + (path[j + 1].1 - parent.base1), new);
                        retired.push(Block::new(Kind::Node, parent.base1, kids));
                        new = Node {
                            base1: block,
                            ..parent
                        };
                    }
                    let cell = self.nodes.alloc(1)?;
                    self.arenas.nodes.set(cell, new);
                    retired.push(Block::new(Kind::Node, top_cell, 1));
                    return self.set_entry(slot, INDEX | cell, fresh, retired);
                }
            }
        }
    }

    /// Follows the changes at `changed` (in trie order), then publishes once: a prefix at most
    /// the direct-pointing step long re-encodes the slots it covers (and the changes under it
    /// come with them), a longer one its node's path. Slots are visited in ascending order, so
    /// each chunk is copied once. `None`: an arena ran out of room (nothing was published; the
    /// caller rebuilds).
    fn patch(&mut self, routes: &PrefixTrie<A, u32>, changed: &[Prefix<A>]) -> Option<()> {
        let mut retired = Vec::new();
        let mut fresh = Vec::new();
        let mut done: Option<Prefix<A>> = None;
        for &p in changed {
            if done.is_some_and(|d| d.covers(&p)) {
                continue;
            }
            if p.len() as u32 <= Self::S {
                self.reencode_span(routes, p, &mut fresh, &mut retired)?;
                done = Some(p);
            } else {
                self.patch_long(routes, p, &mut fresh, &mut retired)?;
            }
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
    fn walk(&self, mut f: impl FnMut(Cell, usize)) {
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
        for &r in &self.root {
            if r & INDEX == 0 {
                f(Cell::Answer(r), 0);
                continue;
            }
            f(Cell::Chunk, 0);
            for i in 0..Self::CHUNK as u32 {
                let e = ar.chunks.get((r & !INDEX) + i);
                if e & INDEX == 0 {
                    f(Cell::Answer(e), 0);
                } else {
                    f(Cell::Subtree, 0);
                    node(ar, e & !INDEX, 1, &mut f);
                }
            }
        }
    }
}

/// What re-encoding a node gave.
enum Outcome {
    /// The new node (not placed yet).
    Node(Node),
    /// A slot's top node became one leaf.
    Leaf(u32),
    /// The node is no longer needed: its parent's slot is a leaf now.
    Gone,
}

/// What [`Poptrie::walk`] reports, in key order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    /// A root or chunk entry that answers itself (an id or no route).
    Answer(u32),
    /// A root entry pointing to a chunk (its entries follow).
    Chunk,
    /// A chunk entry pointing to a subtree (its nodes follow).
    Subtree,
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
            Cell::Answer(id) | Cell::Leaf(id) => id as u64,
            Cell::Chunk => u64::MAX,
            Cell::Subtree => u64::MAX - 1,
            Cell::Node(w) => w,
        }
    }
}

impl<A: FibFamily> LpmAlgorithm<A> for Poptrie<A> {
    const NAME: &'static str = "poptrie";
    type View = PoptrieView<A>;

    fn build(routes: &PrefixTrie<A, u32>) -> Result<Self, IdOutOfRange> {
        check_ids(routes.iter().map(|(p, &id)| (p, id)))?;
        let mut scratch = Scratch::default();
        let enc = Self::encode_all(routes, &mut scratch);
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
        Ok(Poptrie {
            cell: Arc::new(ArcSwap::new(view.clone())),
            current: view,
            root,
            arenas,
            generation: 0,
            nodes,
            leaves,
            chunks,
            reclaim,
            returned: Mutex::new(returned),
            scratch,
            rebuilds: 0,
        })
    }

    fn update(
        &mut self,
        routes: &PrefixTrie<A, u32>,
        changed: &[Prefix<A>],
    ) -> Result<(), IdOutOfRange> {
        check_ids(
            changed
                .iter()
                .filter_map(|p| routes.get(p).map(|&id| (*p, id))),
        )?;
        if changed.is_empty() {
            return Ok(());
        }
        self.reclaim();
        // A change covering more slots than this is cheaper as a full build.
        let s = Self::S;
        if changed
            .iter()
            .any(|p| s.saturating_sub(p.len() as u32) > FULL_REBUILD_SLOTS.trailing_zeros())
        {
            self.rebuild(routes);
            return Ok(());
        }
        let mut changed = changed.to_vec();
        changed.sort_unstable();
        changed.dedup();
        if self.patch(routes, &changed).is_none() {
            self.rebuild(routes);
        }
        Ok(())
    }

    fn reader(&self) -> Reader<PoptrieView<A>> {
        Reader::new(self.cell.clone())
    }

    fn stats(&self) -> FibStats {
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
                Cell::Answer(_) => answers += 1,
                Cell::Chunk | Cell::Subtree => {}
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
        self.walk(|cell, _| out.push(cell.word()));
        out
    }

    fn view(&self) -> &PoptrieView<A> {
        &self.current
    }

    fn audit(&mut self) -> Result<(), String> {
        // Blocks retired by versions nobody holds are back; what remains handed out must be
        // exactly what the current version reaches (the nodes and leaves `stats` walks, and a
        // whole chunk per root entry that points to one).
        self.reclaim();
        let reached = self.stats();
        let chunks = self.root.iter().filter(|&&r| r & INDEX != 0).count() * Self::CHUNK;
        let (nodes, leaves) = (reached.nodes, reached.leaves);
        let live = (self.chunks.live(), self.nodes.live(), self.leaves.live());
        if live != (chunks, nodes, leaves) {
            return Err(format!(
                "cells handed out (chunks, nodes, leaves) {live:?}, reachable {:?}",
                (chunks, nodes, leaves)
            ));
        }
        Ok(())
    }
}
