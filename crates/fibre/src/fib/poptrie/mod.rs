//! Poptrie (Asai & Ohara, SIGCOMM 2015), written from the paper, generic over the key width.
//!
//! Encoding, top down:
//! - **Direct pointing** on the top `S` bits ([`FibFamily::DP_BITS`]: 18 for IPv4, 24 for IPv6).
//!   The 2^S entries are cut into chunks of 2^(S-R) entries under a root of 2^R, R chosen at
//!   each build within the family's bounds (`root_bits`); a chunk whose entries are all one
//!   leaf is not stored, its root entry holds the leaf. Chunking is what makes an update cheap
//!   to publish: a new version copies the chunks it changes (256 bytes for IPv4, 1 KiB for
//!   the IPv6 full view) and writes the root entries it changes into a spare root
//!   (`RootLog`), never the whole 2^S array.
//! - An entry is a leaf id, or ([`INDEX`] bit set) the index of a subtree's top node, tagged
//!   `LEAVES_ONLY` where that node has no child (the vector lookups skip a gather there), or
//!   (`FLAT`) the first of 64 leaves, one per slot of the next 6 bits: a top node without a
//!   child is stored so where that pays (`flat_pays`: at one byte a leaf always, wider leaves
//!   from enough runs), and a key there reads its leaf straight after the chunk entry.
//! - A **node** covers the next 6 bits: `vector` marks the 64 slots that continue in a child
//!   node, `leafvec` marks the slots where a new run of equal leaves starts (leaf compression: the
//!   runs skip child slots). Children of a node are contiguous from `base1`, its leaves from
//!   `base0`; a slot finds its child or leaf by counting set bits below it (`popcnt`).
//! - Leaves are 1, 2 or 4 bytes, the narrowest that holds the ids stored (see `leaves`): a FIB
//!   of next-hop indexes fits the last-level cache share a process gets, the router's wide ids
//!   take four bytes.
//! - The last level of a key narrower than a multiple of 6 is padded with zero bits; a prefix
//!   there covers the padded slots its bits allow, and lookups only reach the all-zero one.
//!
//! Updates copy on write, into blocks of arenas that never move: a change of a prefix longer than
//! the direct-pointing step re-encodes only the node at the prefix's level (the slots the prefix
//! covers afresh, the other slots' children moved by their 24-byte cells, nothing below them
//! touched), then copies the children blocks of its ancestors up to the direct-pointing entry
//! (path copying). A change of a shorter prefix re-encodes each direct-pointing slot it covers
//! (leaf pushing put its id in all of them). Below a changed prefix, only the nodes its id
//! shows in are encoded again (`repaint`). A batch publishes one new root; the blocks a version
//! stopped using are reused once every reader that could see them has let go (see
//! `Pending`).
//!
//! The parts: `lookup` (what readers run), `build` (a full encoding), `patch` (updates
//! by path copying), `repaint` (a covering prefix's change), `leaves` (the leaf cells'
//! widths), `audit` (the walk behind stats, images and the memory audit), `tests`; here the
//! structure's types and the publication and reclamation of versions.
use super::arena::RawArena;
use super::block_alloc::BlockAlloc;
use super::PrefixSet;
use super::{
    check_ids, FibFamily, FibStats, IdOutOfRange, LpmAlgorithm, LpmView, Reader, MAX_ID, NO_ROUTE,
};
use crate::addr::Bits;
use crate::prefix::Prefix;
use arc_swap::ArcSwap;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Weak};

mod audit;
mod build;
mod leaves;
mod lookup;
mod patch;
mod repaint;
mod simd;
mod simd4;
mod simd_tables;

use build::{
    block_end, children, encode_node, encode_own, encode_slot, leaf_runs, span_edges, Scratch,
};
use leaves::{with_leaves, Cell, Leaves};
use lookup::{bits, stride, top};

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
/// Chunk-entry tag beside [`INDEX`]: the subtree's top node has no child (`vector` 0), so every
/// key there ends at one of its leaves. The vector lookups then skip gathering `vector` for a
/// vector of lanes that all start at such nodes, one gather of the five an IPv4 key takes
/// (where a full view's /24s end: few /18 slots hold anything longer). Written by
/// [`top_entry`], read through [`node_cell`]; root entries never carry it.
const LEAVES_ONLY: u32 = 1 << 30;
/// Chunk-entry tag beside [`INDEX`]: the slot's subtree is a *flat* block, not a node: the
/// leaves of its 64 slots one by one (then the pad cells, see `leaves`), from the leaf cell the
/// entry holds. A key there reads its leaf at that cell plus its next 6 bits: two dependent
/// reads after the root (chunk entry, leaf) where a node takes three (chunk entry, node,
/// leaf). A top node without a child is stored so where [`flat_pays`] says (see
/// `Poptrie::entry_for`); root entries never carry it.
const FLAT: u32 = 1 << 29;
/// Node and leaf cells stay below [`FLAT`], so a chunk entry holds its tags and the cell.
const MAX_CELLS: usize = FLAT as usize;

/// Whether a top node without a child and with `runs` runs of leaves of `width` bytes is stored
/// flat: where its 64 leaves take at most twice the node's cell and runs, or at most a cache
/// line more. One-byte leaves are always flat (their block is 64 bytes and 3 pad cells),
/// two-byte ones from 20 runs, four-byte ones from 26. A key there then reads no node: one
/// dependent read and, in the vector kernels, one to three gathers fewer. The bench's FIB of
/// next-hop indexes (one byte) has every such slot of the IPv4 view flat; the router's
/// four-byte ids few. (Until issue 15's twenty-ninth round one-byte leaves were flat from 8
/// runs. Four times the node's bytes at every width was tried then: four-byte leaves flat from
/// 10 runs made the router's IPv4 FIB 39% larger for changes 6% faster; see docs/fib.md.)
#[inline]
fn flat_pays(width: usize, runs: u32) -> bool {
    let (block, node) = (
        64 * width,
        std::mem::size_of::<Node>() + runs as usize * width,
    );
    block <= 2 * node || block <= node + 64
}

/// The chunk entry naming top node `node`, at `cell`: tagged [`LEAVES_ONLY`] where it has no
/// child.
#[inline]
fn top_entry(cell: u32, node: &Node) -> u32 {
    debug_assert!((cell as usize) < MAX_CELLS);
    INDEX | cell | if node.vector == 0 { LEAVES_ONLY } else { 0 }
}

/// The cell a chunk entry holds ([`INDEX`] set), its tags cleared: a node's, or a flat block's
/// first leaf ([`FLAT`]).
#[inline(always)]
fn node_cell(entry: u32) -> u32 {
    entry & !(INDEX | LEAVES_ONLY | FLAT)
}

/// The runs of equal ids in a flat block's 64 leaves.
fn runs_of(ids: &[u32; 64]) -> u32 {
    // Pairs zipped, not `windows`: the compiler makes vector compares of it.
    1 + ids[..63]
        .iter()
        .zip(&ids[1..])
        .map(|(a, b)| u32::from(a != b))
        .sum::<u32>()
}

/// The 64 leaves a node without a child answers, from its runs (`run(k)`: the `k`th).
fn expand_runs(leafvec: u64, mut run: impl FnMut(u32) -> u32) -> [u32; 64] {
    let mut out = [NO_ROUTE; 64];
    let (mut k, mut id) = (0, NO_ROUTE);
    for (v, x) in out.iter_mut().enumerate() {
        if leafvec & (1 << v) != 0 {
            id = run(k);
            k += 1;
        }
        *x = id;
    }
    out
}
/// A direct-pointing change of more slots than this rebuilds the whole structure (a short
/// prefix such as a default route touches every slot).
const FULL_REBUILD_SLOTS: usize = 1 << 12;
/// Prefixes from which a table counts as large for its spare room ([`Spare`]).
const LARGE_TABLE: usize = 10_000;

/// Room the arenas keep beyond what a build fills, for the blocks updates allocate while the
/// blocks they replaced wait for the readers of older versions.
///
/// Why it matters: every change copies the chunk it writes and up to 64 node cells a level of
/// its path, and the copies a version stopped using come back only when the last reader of
/// that version lets go; a reader descheduled for a while holds back all of it. When an arena
/// runs full the FIB is rebuilt (a compaction): in the update bench, with an eighth of room,
/// that happened every few ten thousand changes and stalled one change for 15 ms (IPv6) to
/// 66 ms (IPv4 router). A large table therefore starts with half again its nodes, an eighth of
/// its leaves and a MiB of chunks (the share of live chunks is no guide, the IPv6 view has only
/// a few; a MiB keeps the arena mapped, see `RawArena::reserving`), and doubles all of it after
/// each compaction, up to 8 times. A small table rebuilds fast and keeps 128 KiB of chunks.
/// (Chunk room is counted in entries: 512 chunks until the chunks shrank to 256 entries, in
/// issue 15's sixteenth round.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Spare {
    /// Spare node cells, in eighths of the live ones.
    pub(super) nodes_per_8: usize,
    /// Spare leaf cells, in eighths of the live ones.
    pub(super) leaves_per_8: usize,
    /// Spare chunk entries.
    pub(super) chunk_cells: usize,
}

impl Spare {
    fn first(prefixes: usize) -> Self {
        Spare {
            nodes_per_8: 4,
            leaves_per_8: 1,
            chunk_cells: if prefixes >= LARGE_TABLE {
                1 << 18
            } else {
                1 << 15
            },
        }
    }
    /// Twice the room, up to eight times the first.
    pub(super) fn grown(self) -> Self {
        if self.leaves_per_8 >= 8 {
            return self;
        }
        Spare {
            nodes_per_8: 2 * self.nodes_per_8,
            leaves_per_8: 2 * self.leaves_per_8,
            chunk_cells: 2 * self.chunk_cells,
        }
    }
}

/// Address space an arena reserves, in multiples of what it is built with (live cells and
/// spare room): room to grow into without a rebuild, which costs no memory until used.
const RESERVE: usize = 4;

/// Lookups in flight at once in [`PoptrieView::lookup_bulk`].
const LANES: usize = 16;
// A group's lanes fit a `u32` mask (the early finish in `lookup_group`).
const _: () = assert!(LANES <= 32);

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
///
/// Aligned to 128 bytes (a line and the line the L2 fetches with it): inside an `Arc` the
/// fields are then on lines of their own, apart from the counts ([`PoptrieView`]'s are too,
/// by padding: it is allocated at every publication). Every lookup reads the fields, and
/// every publication changes the counts (this `Arc` cloned for the new version, and dropped
/// with each version dropped; the version's own `Arc` downgraded and dropped): on a shared
/// line each of those locked operations waited for the line to come back from a reader's
/// core, and made that reader miss it again. A router change with the bench's reader was
/// 5-10% faster in `change_misses` (docs/fib.md, thirty-second round).
#[repr(align(128))]
struct Arenas {
    nodes: RawArena<Node>,
    /// Cells as narrow as the generation's ids ([`Leaves`]).
    leaves: Leaves,
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

/// Roots and block lists the writer keeps for reuse (more come back only when readers lag).
/// (A root is 16-256 KiB, too large for the allocator's per-thread cache: allocating one per
/// publication and freeing it later cost a thousand instructions a change.) Four roots of the
/// IPv6 full view's 256 KiB are 6.5 bytes a prefix. With one kept, a publication behind a
/// reader often found none free and made a root (256 KiB allocated and copied): the bare
/// FIB's IPv6 change median took 4.0-6.3 µs against 2.4-4.4 with four, and 2.1-2.7 with 20
/// bits of direct pointing (`fibre bench --family 6 --engines fibre-fib-poptrie --updates
/// 20000`, three runs of each in turn).
const REUSED_BUFFERS: usize = 4;

/// The most root entries [`RootLog`] keeps (16 KiB), whatever the root's size.
const ROOT_LOG_MOST: usize = 1024;

/// The root entries patched publications changed, by version: a spare root (a version's,
/// dropped) is brought up to date by the entries changed since its version, not by a copy of
/// the whole root. A change writes one or two root entries, where the root was 512 (IPv4) or
/// 1,024 (IPv6) of them: the copy was 410 of a router change's 16,200 instructions (IPv6,
/// callgrind), and 4 KiB of stores. Since, the roots grew (see [`FibFamily::MIN_ROOT_BITS`]).
struct RootLog {
    /// (version, root index), versions ascending.
    entries: Vec<(u64, u32)>,
    /// Every root entry changed by a version from this one on is in `entries`: a full build
    /// replaces the root whole and the log starts again after it, and a trim starts it later.
    from: u64,
}

impl RootLog {
    /// The changes after version `v`, if the log has them all.
    fn since(&self, v: u64) -> Option<&[(u64, u32)]> {
        if v + 1 < self.from {
            return None;
        }
        Some(&self.entries[self.entries.partition_point(|e| e.0 <= v)..])
    }
    /// Records the root entries version `v` changed (`None`: all of them), keeping at most
    /// `most` entries (past that, the older half goes, whole versions at a time).
    fn record(&mut self, v: u64, changed: Option<&[usize]>, most: usize) {
        let Some(changed) = changed else {
            self.entries.clear();
            self.from = v + 1;
            return;
        };
        self.entries
            .extend(changed.iter().map(|&ri| (v, ri as u32)));
        if self.entries.len() > most {
            let last_dropped = self.entries[self.entries.len() / 2].0;
            self.entries.retain(|e| e.0 > last_dropped);
            self.from = last_dropped + 1;
        }
    }
}

/// Retired blocks an update takes back, unless a [`RECLAIM_SHARE`]th of those waiting is more
/// (see [`Poptrie::reclaim_for_update`]): the rest wait for the next updates. An ordinary
/// change retires a few blocks; a covering prefix's can retire thousands (2409:8000::/20 in
/// the IPv6 view, before its change kept what longer prefixes answer: 2,500 blocks, 17,500
/// cells), and taking them all back at once, each merged with its neighbours, cost the next
/// change 80-130 µs.
const RECLAIM_BUDGET: usize = 64;

/// An update takes back at least this share of the blocks waiting (a sixteenth): when every
/// change retires thousands (a covering prefix flapping), the backlog stays within sixteen
/// changes' worth, and so does the memory it holds, instead of growing into the arenas'
/// reserve.
const RECLAIM_SHARE: usize = 16;

/// The blocks an update takes back (see [`Poptrie::reclaim_for_update`]), of `waiting`.
fn reclaim_budget(waiting: usize, short_of_room: bool) -> usize {
    if short_of_room {
        usize::MAX
    } else {
        RECLAIM_BUDGET.max(waiting / RECLAIM_SHARE)
    }
}

/// One published version: what readers load and look up in. It never changes. Its fields are
/// kept apart from its `Arc`'s counts (see `Arenas`).
#[repr(C)]
pub struct PoptrieView<A: FibFamily> {
    /// Puts the fields 128 bytes past the `Arc`'s counts (which come first, 16 bytes): on
    /// other lines, and in another pair of lines, wherever the allocator put the version.
    /// Padding rather than `align(128)`: an aligned allocation at every publication (glibc's
    /// `memalign`, past its per-thread cache) cost a router change 650 instructions.
    _apart: [u8; 112],
    root: Arc<[u32]>,
    /// `S - R`: the bits of a slot its chunk resolves (the root is 2^R entries long).
    chunk_bits: u32,
    arenas: Arc<Arenas>,
    version: u64,
    _family: PhantomData<A>,
}

impl<A: FibFamily> PoptrieView<A> {
    fn new(root: Arc<[u32]>, arenas: Arc<Arenas>, version: u64) -> Self {
        // Lookups read the chunk's width from this (a constant where the family's roots are
        // all one size), and the chunks were sized by the same root.
        let bits = root.len().trailing_zeros();
        assert!(
            root.len().is_power_of_two() && (A::MIN_ROOT_BITS..=A::MAX_ROOT_BITS).contains(&bits),
            "a root of {} entries",
            root.len()
        );
        PoptrieView {
            _apart: [0; 112],
            chunk_bits: A::DP_BITS - bits,
            root,
            arenas,
            version,
            _family: PhantomData,
        }
    }
}

/// Blocks a publication retired, waiting for the version before it (and so every older one)
/// to be dropped: until then a reader may still reach them.
///
/// Reclamation (RCU's grace period): when version `V + 1` is published, the blocks only
/// versions up to `V` use wait here with a weak reference to `V`, oldest first. The writer
/// takes them back from the front while the front's version is gone: the ones before it went
/// earlier, so no version that reaches the blocks is left. A reader that keeps an old version
/// holds back what that version and the later ones retired. Until issue 15's tenth round each
/// version held the next, and its drop sent its blocks back over a channel: two `OnceLock`s
/// and a send and a receive per publication, 700 instructions of a router change (IPv4).
struct Pending<A: FibFamily> {
    view: Weak<PoptrieView<A>>,
    /// The arenas the blocks are in (a rebuild replaces them, and its blocks are not ours).
    generation: u64,
    /// Taken back in order, a bounded number per update ([`RECLAIM_BUDGET`]).
    blocks: Vec<Block>,
    /// How many of `blocks` are back.
    back: usize,
}

/// What covers a region and is shorter than it: that prefix's length and stored id, or none.
type Cover = Option<(u8, u32)>;

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
    /// Retired blocks by publication, oldest first (see [`Pending`]).
    pending: VecDeque<Pending<A>>,
    /// Blocks in `pending` not taken back yet.
    waiting: usize,
    /// Roots of dropped versions, with their versions, to publish the next ones in.
    spare_roots: Vec<(Arc<[u32]>, u64)>,
    /// Roots of the versions before the current one that may still be held, with their
    /// versions (see [`Poptrie::take_back_roots`]).
    roots_out: Vec<(Arc<[u32]>, u64)>,
    /// What brings a spare root up to date.
    root_log: RootLog,
    /// Emptied block lists, to retire the next changes' blocks in.
    spare_lists: Vec<Vec<Block>>,
    /// The chunks a batch made (see `Poptrie::chunk_for_write`), kept for the next batch.
    fresh: Vec<usize>,
    scratch: Scratch<A::Bits>,
    /// The last cover a patch searched for: a region, and the length and stored id of the
    /// longest prefix covering it and shorter than it (see `Poptrie::cover_of`). Cleared
    /// where the patch of a changed prefix starts (`patch_long`, `reencode_span`): the set
    /// may have changed since.
    cover_memo: Option<(Prefix<A>, Cover)>,
    /// Full rebuilds after the first build (short-prefix changes, full arenas).
    pub rebuilds: u64,
    /// Room the next arenas keep beyond what a build fills.
    spare: Spare,
    /// The spare room of the current arenas in cells (nodes, leaves, chunks), kept backed by
    /// memory past their bump pointers ([`Poptrie::keep_room`]).
    room: [usize; 3],
}

impl<A: FibFamily> Poptrie<A> {
    const S: u32 = A::DP_BITS;

    /// Entries in a chunk of the current root.
    fn chunk_len(&self) -> usize {
        1 << (Self::S - self.root.len().trailing_zeros())
    }

    /// Publishes the current encoding. `patched`: the root entries changed since the last
    /// publication are those of `fresh` (else the root is new).
    fn publish(&mut self, retired: Vec<Block>, patched: bool) {
        let version = self.current.version + 1;
        let root_len = self.root.len();
        let changed = patched.then_some(self.fresh.as_slice());
        self.root_log
            .record(version, changed, ROOT_LOG_MOST.min(root_len / 4));
        self.take_back_roots();
        // A spare root nothing else holds, as long as the current one (a build may have
        // sized the root anew).
        let spare = self
            .spare_roots
            .iter_mut()
            .position(|(r, _)| r.len() == root_len && Arc::get_mut(r).is_some());
        let root = match spare.map(|i| self.spare_roots.swap_remove(i)) {
            Some((mut root, v)) => {
                let r = Arc::get_mut(&mut root).expect("no other holder: checked just now");
                // Entry by entry while that is the smaller write.
                match self.root_log.since(v).filter(|n| n.len() < root_len / 8) {
                    Some(newer) => {
                        for &(_, ri) in newer {
                            r[ri as usize] = self.root[ri as usize];
                        }
                    }
                    None => r.copy_from_slice(&self.root),
                }
                debug_assert!(r[..] == self.root[..], "a spare root brought up to date");
                root
            }
            None => Arc::from(self.root.as_slice()),
        };
        let view = Arc::new(PoptrieView::new(root, self.arenas.clone(), version));
        let old = std::mem::replace(&mut self.current, view.clone());
        self.waiting += retired.len();
        self.pending.push_back(Pending {
            view: Arc::downgrade(&old),
            generation: self.generation,
            blocks: retired,
            back: 0,
        });
        self.roots_out.push((old.root.clone(), old.version));
        self.cell.store(view);
    }

    /// Takes the roots of the versions gone (as many as [`REUSED_BUFFERS`] to reuse, the rest
    /// freed), out of order: a root belongs to its version only, where a retired block may be
    /// reached by any older version, so a reader holding an old version holds back its own
    /// root and no other. (Until issue 15's twenty-first round roots came back with the blocks,
    /// in order: a stalled reader held back a root a change, 16 KiB for IPv6.) The list holds
    /// the versions still held and the last one: a few entries.
    fn take_back_roots(&mut self) {
        let root_len = self.root.len();
        let Poptrie {
            roots_out,
            spare_roots,
            ..
        } = self;
        roots_out.retain_mut(|(root, v)| {
            // Unique: its version is gone, and the release of its last holder (a reader
            // dropping the version) comes before this (`Arc::get_mut`'s acquire).
            if Arc::get_mut(root).is_none() {
                return true;
            }
            if root.len() == root_len && spare_roots.len() < REUSED_BUFFERS {
                spare_roots.push((root.clone(), *v));
            }
            false
        });
        spare_roots.retain(|(r, _)| r.len() == root_len);
    }

    /// Takes back every block no reader can reach any more, and buffers to reuse.
    fn reclaim(&mut self) {
        self.reclaim_up_to(usize::MAX);
    }

    /// Before an update: takes back [`RECLAIM_BUDGET`] blocks or a [`RECLAIM_SHARE`]th of
    /// those waiting, whichever is more; or all of them once an arena's headroom is under its
    /// spare room (blocks left waiting could then leave a change without room, and a full
    /// arena rebuilds everything). An arena of a megabyte or more reserves four times its
    /// size and stays far from that; a smaller one, on the heap, is there as soon as it grows,
    /// and its few blocks all come back at once, as before the budget.
    fn reclaim_for_update(&mut self) {
        let allocs = [&self.nodes, &self.leaves, &self.chunks];
        let short = allocs
            .iter()
            .zip(self.room)
            .any(|(alloc, room)| alloc.headroom() < room.max(1));
        self.reclaim_up_to(reclaim_budget(self.waiting, short));
    }

    /// Takes back up to `budget` blocks no reader can reach any more (the rest wait at the
    /// front of the queue), and the buffers of the versions gone.
    fn reclaim_up_to(&mut self, mut budget: usize) {
        let Poptrie {
            pending,
            waiting,
            nodes,
            leaves,
            chunks,
            spare_lists,
            generation,
            ..
        } = self;
        while let Some(front) = pending.front_mut() {
            if front.view.strong_count() != 0 {
                break;
            }
            // The last reader's release (its drop of the version) before the blocks' reuse.
            fence(Ordering::Acquire);
            // Blocks of older arenas are not ours any more: those arenas are gone or going.
            if front.generation == *generation {
                let end = front.blocks.len().min(front.back.saturating_add(budget));
                for b in &front.blocks[front.back..end] {
                    match b.kind {
                        Kind::Node => nodes.free(b.off, b.len),
                        Kind::Leaf => leaves.free(b.off, b.len),
                        Kind::Chunk => chunks.free(b.off, b.len),
                    }
                }
                budget -= end - front.back;
                *waiting -= end - front.back;
                front.back = end;
                if end < front.blocks.len() {
                    return;
                }
            }
            let gone = pending.pop_front().expect("front exists");
            // Blocks of older arenas are dropped, not taken back.
            *waiting -= gone.blocks.len() - gone.back;
            let mut blocks = gone.blocks;
            if spare_lists.len() < REUSED_BUFFERS {
                blocks.clear();
                spare_lists.push(blocks);
            }
        }
    }

    /// An empty list to retire a publication's blocks in.
    fn retired_list(&mut self) -> Vec<Block> {
        self.spare_lists.pop().unwrap_or_default()
    }
}

impl<A: FibFamily> Poptrie<A> {
    /// [`LpmAlgorithm::build`] with leaf cells that hold `floor` too ([`NO_ROUTE`]: only the
    /// routes' ids), and a root of `root_bits` (`None`: as [`build::root_bits`] chooses).
    fn build_holding(
        routes: &PrefixSet<A>,
        floor: u32,
        root_bits: Option<u32>,
    ) -> Result<Self, IdOutOfRange> {
        routes.check_ids()?;
        let mut scratch = Scratch::default();
        let enc = Self::encode_all(routes, &mut scratch, floor, root_bits);
        let spare = Spare::first(routes.len());
        let (arenas, [nodes, leaves, chunks], root, room) = Self::install(enc, spare);
        let view = Arc::new(PoptrieView::new(
            Arc::from(root.as_slice()),
            arenas.clone(),
            0,
        ));
        Ok(Poptrie {
            cell: Arc::new(ArcSwap::new(view.clone())),
            current: view,
            root,
            arenas,
            generation: 0,
            nodes,
            leaves,
            chunks,
            pending: VecDeque::new(),
            waiting: 0,
            spare_roots: Vec::new(),
            roots_out: Vec::new(),
            root_log: RootLog {
                entries: Vec::new(),
                from: 1,
            },
            spare_lists: Vec::new(),
            fresh: Vec::new(),
            scratch,
            cover_memo: None,
            room,
            rebuilds: 0,
            spare,
        })
    }
}

impl<A: FibFamily> LpmAlgorithm<A> for Poptrie<A> {
    const NAME: &'static str = "poptrie";
    type View = PoptrieView<A>;

    fn build(routes: &PrefixSet<A>) -> Result<Self, IdOutOfRange> {
        Self::build_holding(routes, NO_ROUTE, None)
    }

    /// The chunk entry of the prefix's first slot, and the chunk's first line (the chunk is
    /// copied before its entry is set: `chunk_for_write`): what a long prefix's update reads
    /// first. The root entry is read here (IPv4's root is 16 KiB, its entries read on every
    /// change; IPv6's, up to 256 KiB, may miss). A short prefix's other slots, or a change
    /// that ends in a full build, make the hint a wasted one, not a wrong one.
    fn prefetch_update(&self, prefix: &Prefix<A>) {
        let slot = lookup::top(prefix.bits(), A::DP_BITS);
        let chunk = self.chunk_len();
        let Some(&e) = self.root.get(slot / chunk) else {
            return;
        };
        if e & INDEX != 0 {
            let (chunks, first) = (self.arenas.chunks.cells(), e & !INDEX);
            lookup::prefetch(chunks.addr(first));
            lookup::prefetch(chunks.addr(first + (slot % chunk) as u32));
        }
    }

    /// Leaf cells as wide as this generation's, which may be wider than the routes' ids need,
    /// and a root as large (chosen for the table this generation was built from).
    fn rebuilt_like(&self, routes: &PrefixSet<A>) -> Result<Self, IdOutOfRange> {
        let root_bits = self.root.len().trailing_zeros();
        Self::build_holding(routes, self.arenas.leaves.max_held(), Some(root_bits))
    }

    fn update(&mut self, routes: &PrefixSet<A>, changed: &[Prefix<A>]) -> Result<(), IdOutOfRange> {
        if changed.is_empty() {
            return Ok(());
        }
        // One search of the set per changed prefix, for both checks (`check_changed` and the
        // widths apart searched it twice: 4% of a router change, callgrind).
        // A change covering more slots than this is cheaper as a full build.
        let s = Self::S;
        // So is an id wider than this generation's leaf cells: the cells widen.
        let leaves = &self.arenas.leaves;
        let mut full_build = false;
        for p in changed {
            let id = routes.get(p).copied();
            if let Some(id) = id {
                check_ids(std::iter::once((*p, id)))?;
            }
            full_build |= s.saturating_sub(p.len() as u32) > FULL_REBUILD_SLOTS.trailing_zeros()
                || id.is_some_and(|id| !leaves.holds(stored(id)));
        }
        // And so is a table grown past its root: `4 << r` prefixes for a root of `r` bits, the
        // count `root_bits` raises a root to `r + 1` bits at (its two copies within 4 bytes a
        // prefix), so the full build sizes it larger. A table loaded by updates, as the router's are past its first
        // batch, would otherwise keep the root of its first build (at most four such builds,
        // 12 bits to 16; a table that shrinks keeps its root until a full build).
        let root_bits = self.root.len().trailing_zeros();
        full_build |= root_bits < A::MAX_ROOT_BITS && routes.len() >= 4 << root_bits;
        if full_build {
            // Into fresh arenas: what waits in the old ones is dropped with them.
            self.rebuild(routes, false);
            return Ok(());
        }
        self.reclaim_for_update();
        // `Fib` hands them over sorted and distinct; other callers may not.
        let sorted = if changed.windows(2).all(|w| w[0] < w[1]) {
            std::borrow::Cow::Borrowed(changed)
        } else {
            let mut changed = changed.to_vec();
            changed.sort_unstable();
            changed.dedup();
            std::borrow::Cow::Owned(changed)
        };
        if self.patch(routes, &sorted).is_none() {
            self.rebuild(routes, true);
        }
        self.keep_room();
        Ok(())
    }

    fn reader(&self) -> Reader<PoptrieView<A>> {
        Reader::new(self.cell.clone())
    }

    fn stats(&self) -> FibStats {
        self.shape()
    }

    fn image(&self) -> Vec<u64> {
        self.words()
    }

    fn view(&self) -> &PoptrieView<A> {
        &self.current
    }

    fn audit(&mut self) -> Result<(), String> {
        self.check_accounts()
    }

    fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    fn regions(&self) -> Vec<(usize, usize)> {
        let a = &self.arenas;
        vec![a.nodes.region(), a.leaves.region(), a.chunks.region()]
    }
}

#[cfg(test)]
mod tests;
