//! The FIB: a compiled, read-optimised longest-prefix-match structure, built from a RIB and
//! patched as it changes.
//!
//! The split follows DPDK's rib/fib and the Poptrie paper: the [`crate::rib::Rib`] keeps every
//! route with every attribute and the kernel's ordering; a FIB maps an address to a small id (the
//! caller decides what an id stands for: the router uses one per destination that answers, the
//! bench a next-hop index) and knows nothing else.
//!
//! - [`LpmAlgorithm`] is the pluggable part: an encoding that builds from a set of
//!   `(prefix, id)`, re-encodes what a change touches, and publishes versions readers look up in.
//!   [`for_each_algorithm`] is its one registration point: the tests and the bench iterate it.
//!   [`Reference`] answers by the definition of longest-prefix match: the oracle of the tests
//!   and the bench.
//! - [`Fib`] wraps an algorithm with the set it encodes: stage changes with [`Fib::set`], make
//!   them visible at once with [`Fib::publish`].
//! - Readers ([`Reader`]) load the current version lock-free (`arc-swap`) and keep it as long as
//!   they like: a loaded version never changes, and its memory is reclaimed once no reader holds
//!   it (RCU-style). Lookups neither allocate nor lock.
use crate::addr::Address;
use crate::prefix::Prefix;
use arc_swap::ArcSwap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

mod arena;
mod block_alloc;
mod path;
pub mod poptrie;
pub mod reference;
mod set;

pub use crate::packed::{PackedPrefix, PackedV6};
pub use arena::mapped_bytes;
pub use path::LookupPath;
pub use poptrie::{Poptrie, PoptrieView};
pub use reference::{Reference, ReferenceView};
pub use set::PrefixSet;

/// The answer where no prefix matches.
pub const NO_ROUTE: u32 = 0x7FFF_FFFF;
/// The largest id a FIB stores (ids share 31 bits with the encodings' tags).
pub const MAX_ID: u32 = NO_ROUTE - 1;

/// An id above [`MAX_ID`], refused where it enters a FIB (nothing was changed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdOutOfRange {
    /// The prefix the id was given for, as text.
    pub prefix: String,
    /// The id refused.
    pub id: u32,
}

impl std::fmt::Display for IdOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FIB id {} of {} is above the largest id, {MAX_ID}",
            self.id, self.prefix
        )
    }
}
impl std::error::Error for IdOutOfRange {}

/// Asks the caches for the line at `p` (a hint: it never faults, whatever the address).
#[inline(always)]
pub(crate) fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The first `(prefix, id)` whose id a FIB cannot store.
pub(crate) fn check_ids<A: Address>(
    mut pairs: impl Iterator<Item = (Prefix<A>, u32)>,
) -> Result<(), IdOutOfRange> {
    match pairs.find(|&(_, id)| id > MAX_ID) {
        Some((p, id)) => Err(IdOutOfRange {
            prefix: p.to_string(),
            id,
        }),
        None => Ok(()),
    }
}

/// [`check_ids`] over the ids stored at the `changed` prefixes of `routes`: what an update
/// refuses before it changes anything.
pub(crate) fn check_changed<A: FibFamily>(
    routes: &PrefixSet<A>,
    changed: &[Prefix<A>],
) -> Result<(), IdOutOfRange> {
    check_ids(
        changed
            .iter()
            .filter_map(|p| routes.get(p).map(|&id| (*p, id))),
    )
}

/// Per-family shape of the compiled structures.
pub trait FibFamily: Address {
    /// Bits resolved by direct pointing (Poptrie's first step).
    const DP_BITS: u32;
    /// Of those, the fewest bits resolved by the root of the direct-pointing array (the rest
    /// by chunks); each build sizes its root between this and [`FibFamily::MAX_ROOT_BITS`]
    /// from the table it encodes (`poptrie`'s `root_bits`). A change copies the chunk it
    /// writes; the root entries it changes are written into a spare root (`poptrie`'s
    /// `RootLog`), so a wider root costs a change only the memory of the roots readers hold,
    /// and a whole copy (or a new root) where no spare root is free or the log cannot bring one
    /// up to date. Until issue 15's sixteenth round each version copied the whole root, and
    /// root and chunk were kept the same size (9 and 10 bits): 10 and 12 then cut a router
    /// change by 116 (IPv4) and 258 (IPv6) instructions (callgrind), with IPv4 lookups level
    /// (`fib_profile`, three pairs in turn).
    const MIN_ROOT_BITS: u32;
    /// The most root bits a build gives its root.
    const MAX_ROOT_BITS: u32;
    /// Node levels the scalar bulk path takes stage by stage, every lane's read prefetched,
    /// before the lanes still walking go on one at a time (measured per family; see
    /// `poptrie::lookup`). The key's bits past direct pointing and these levels are never all
    /// gone: `DP_BITS + 6 * BULK_NODE_STAGES` is below the width.
    const BULK_NODE_STAGES: u32;
    /// The AVX-512 and scalar bulk paths finish a group one key at a time, without their
    /// further stages, where at most this many keys in 64 go past the root (0: never; the
    /// scalar path's groups of 16 take a quarter). Measured per family on the AVX-512 path:
    /// IPv6 keys at random in 2000::/3 (W2) end at the root 94.5% of the time (with 20 bits of
    /// direct pointing and a root of 10 bits; not measured again since), and such
    /// groups took 1.3-1.5 ns a key in the vector stages against 0.87-0.90 one key at a time;
    /// IPv4 keys rarely end there, and with the check its W1 and W2 bulk lookups measured
    /// 2-4% slower in three of four rounds of pairs (level in the fourth).
    const FEW_PAST_ROOT: u32;
    /// Whether the vector bulk paths (AVX2, and IPv4's AVX-512 kernel, which requires it: the
    /// shared AVX-512 kernel serves IPv6 only, without the skip) read the chunk entries'
    /// `LEAVES_ONLY` tag and skip gathering the top nodes' child vectors for a vector of lanes
    /// all at nodes without a child. Measured per family on the AVX-512 path (`fib_profile`, pairs in
    /// turn): IPv4 W1 bulk 3.70-3.80 -> 3.37-3.48 ns, W2 3.08-3.16 -> 2.82-2.92 (a full view's
    /// /24s end at top nodes, and few /18 slots hold a longer prefix); IPv6's top nodes nearly
    /// all have children, and with the check its W1 bulk measured 4-6% slower in six pairs.
    /// (Measured before flat blocks: with one-byte leaves every such top node is flat now,
    /// since issue 15's twenty-ninth round, and the tag serves wider ids' FIBs, the router's.)
    const LEAVES_ONLY_TOPS: bool;
    /// Keys per call of the AVX-512 bulk kernel where a batch has that many: 64 or 128; a
    /// batch's last keys go in a call of 64 where they are that few.
    /// Measured per family on an Intel Xeon (Emerald Rapids; `fib_profile 4|6 1000000 time`,
    /// one batch of a million keys, the binaries before and after in turn, which first
    /// alternating, six pairs): IPv4's W1 bulk lookups took 0.87 of the time with 128 (median
    /// of the pairs' ratios, 0.81-1.06), W2 0.84 (0.74-1.05); 256 keys were between 64 and 128.
    /// IPv6's W1 took 1.01-1.10 of the time with 128 in four noisier pairs (its keys' two
    /// halves fill twice the registers). On Zen 4, 128 was last measured in issue 15's ninth
    /// round, no faster than 64, before later changes to the kernel; not measured since.
    /// Batches of 64 (the bench's bursts) are not changed by it. Measured again for IPv4's
    /// kernel in 16 lanes of 32 bits (issue 15's thirty-fourth round, 18 interleaved rounds):
    /// 128 keeps W2 bulk 8-12% faster and leaves W1 2-5% slower, which its misses bound.
    const AVX512_GROUP: usize;
    /// A prefix longer than [`FibFamily::DP_BITS`] packed as a key in [`Prefix`] order among
    /// the prefixes of its slot (the slot's bits left out): what the FIB's set keeps per
    /// slot.
    type SlotKey: Ord + Copy + Send + Sync + std::fmt::Debug + 'static;
    /// `p` (longer than the direct-pointing step) as a key within its slot.
    fn slot_key(p: Prefix<Self>) -> Self::SlotKey;
    /// The prefix of slot `slot` packed in `k`. A key [`FibFamily::slot_key`] did not make
    /// gives some prefix (lengths past the width are cut to it), never a panic.
    fn from_slot_key(slot: u32, k: Self::SlotKey) -> Prefix<Self>;
}

impl FibFamily for Ipv4Addr {
    /// 2^18 slots: /24s, most of the table, end in the first node level (18 + 6).
    const DP_BITS: u32 = 18;
    /// A root of 16 KiB and chunks of 256 bytes, the chunk a change copies (see
    /// [`FibFamily::MIN_ROOT_BITS`]), whatever the table. With a reader busy on another core,
    /// the lines a change writes are lines that reader holds: each costs the writer a
    /// transfer. Chunks of 1 KiB (a root of 10 bits) made a router change with the bench's
    /// reader 6-8% slower (`change_misses 4 20000` with `FIBRE_PROFILE_READER=1`, three
    /// rounds of the builds in turn: medians 2,083-2,164 ns against 1,935-2,037), lookups
    /// level (docs/fib.md, thirty-second round). 14 bits (chunks of one line) gained little
    /// more, and the 64 KiB root left L1 (dependent latency 28-29 ns against 26-27).
    const MIN_ROOT_BITS: u32 = 12;
    const MAX_ROOT_BITS: u32 = 12;
    /// One: most keys end in the first node level (a /24); a second stage was no faster.
    const BULK_NODE_STAGES: u32 = 1;
    const FEW_PAST_ROOT: u32 = 0;
    const LEAVES_ONLY_TOPS: bool = true;
    const AVX512_GROUP: usize = 128;
    /// The 14 address bits past the slot above the length: 4 bytes, where a whole packed
    /// prefix takes 8 and pads its id to 16.
    type SlotKey = u32;
    #[inline]
    fn slot_key(p: Prefix<Self>) -> u32 {
        ((p.bits() & ((1 << (32 - Self::DP_BITS)) - 1)) << 8) | u32::from(p.len())
    }
    #[inline]
    fn from_slot_key(slot: u32, k: u32) -> Prefix<Self> {
        let bits = (slot << (32 - Self::DP_BITS)) | ((k >> 8) & ((1 << (32 - Self::DP_BITS)) - 1));
        Prefix::new(Ipv4Addr::from_bits(bits), (k as u8).min(32))
    }
}

impl FibFamily for Ipv6Addr {
    /// 2^24 slots, a wider step than IPv4's: routes cluster in 2000::/3 (the root's chunks for
    /// the rest are single leaves), and a /48 ends in the fourth node level. With 20 bits (until
    /// issue 15's twenty-first round) it ended in the fifth, and the full view's answers lay
    /// 3.97 node levels deep on average against 2.84 now (see docs/fib.md).
    const DP_BITS: u32 = 24;
    /// A root of 16 KiB to 256 KiB: chunks of 16 KiB to 1 KiB. The full view's root takes 16
    /// bits, so a change copies a chunk of 1 KiB: with 12 bits it copied 16 KiB, and a router
    /// change took 28,528 instructions against 11,931 (callgrind, `router_profile 6 20000`).
    /// A small table's takes 12: every IPv6 table has a FIB, and a root of 16 bits would cost
    /// each 512 KiB (it is held twice). (With 20 bits of direct pointing, a root of 4 KiB and
    /// chunks of 4 KiB made W2 bulk lookups 0.95-0.98 ns against 0.74-0.76 with 16 KiB and
    /// 1 KiB: keys at random in 2000::/3 end at a root entry more often, where the chunk is one
    /// leaf.)
    const MIN_ROOT_BITS: u32 = 12;
    const MAX_ROOT_BITS: u32 = 16;
    /// Three, measured with 20 bits of direct pointing, when W1 keys walked four node levels
    /// on average (not measured again with 24).
    const BULK_NODE_STAGES: u32 = 3;
    const FEW_PAST_ROOT: u32 = 8;
    const LEAVES_ONLY_TOPS: bool = false;
    const AVX512_GROUP: usize = 64;
    type SlotKey = SlotKey6;
    #[inline]
    fn slot_key(p: Prefix<Self>) -> SlotKey6 {
        let key = ((p.bits() & SlotKey6::PAST_SLOT) << 8) | u128::from(p.len());
        SlotKey6 {
            hi: (key >> 64) as u64,
            lo: key as u64,
        }
    }
    #[inline]
    fn from_slot_key(slot: u32, k: SlotKey6) -> Prefix<Self> {
        let key = (u128::from(k.hi) << 64) | u128::from(k.lo);
        let bits = (u128::from(slot) << (128 - Self::DP_BITS)) | ((key >> 8) & SlotKey6::PAST_SLOT);
        Prefix::new(Ipv6Addr::from_bits(bits), (key as u8).min(128))
    }
}

/// An IPv6 prefix in its slot: the 104 bits past the slot (128 less `DP_BITS`), then the
/// length, as one number split in two words (16 bytes, aligned to 8). Ordered as the number, which is [`Prefix`]'s
/// order within a slot. A crowded slot's B-tree compares it as two `u64`s; the whole prefix
/// packed (`packed::PackedV6`, 17 bytes loaded and byte-swapped as two words per comparison)
/// cost the FIB set's searches more (see docs/fib.md, issue 15's seventeenth round).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct SlotKey6 {
    hi: u64,
    lo: u64,
}

impl SlotKey6 {
    /// The address bits past a slot.
    const PAST_SLOT: u128 = (1 << (128 - <Ipv6Addr as FibFamily>::DP_BITS)) - 1;
}

/// A published version of a compiled structure.
pub trait LpmView<A: Address>: Send + Sync + 'static {
    /// Publications before this one (0: the first build).
    fn version(&self) -> u64;
    /// The id of the longest prefix containing `key`, or [`NO_ROUTE`].
    fn lookup(&self, key: A::Bits) -> u32;
    /// Lookups of `keys` into `out` (same length), overlapping their memory accesses where the
    /// algorithm can.
    fn lookup_bulk(&self, keys: &[A::Bits], out: &mut [u32]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        for (k, o) in keys.iter().zip(out.iter_mut()) {
            *o = self.lookup(*k);
        }
    }
    /// [`LpmView::lookup_bulk`] on a given [`LookupPath`] (the tests force each one the CPU
    /// has). An algorithm with one path, or a path the CPU lacks, runs the default.
    fn lookup_bulk_on(&self, path: LookupPath, keys: &[A::Bits], out: &mut [u32]) {
        let _ = path;
        self.lookup_bulk(keys, out)
    }
}

/// Sizes of a compiled structure.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FibStats {
    /// Bytes of the structure readers use (blocks awaiting reclamation included).
    pub bytes: usize,
    /// Internal nodes of the current version.
    pub nodes: usize,
    /// Leaves of the current version: stored answers.
    pub leaves: usize,
    /// Node levels below direct pointing.
    pub max_depth: usize,
    /// Node levels below direct pointing, mean over the stored answers (leaves and entries).
    pub mean_depth: f64,
    /// Full re-encodings since the first build.
    pub rebuilds: u64,
}

/// A compiled longest-prefix-match encoding: the pluggable part of the FIB.
pub trait LpmAlgorithm<A: FibFamily>: Send + Sync + Sized + 'static {
    /// A short name for the algorithm, used in test and bench output.
    const NAME: &'static str;
    /// A published version, as readers see it.
    type View: LpmView<A>;
    /// Encodes `routes` (prefix -> id) and publishes it; refuses an id above [`MAX_ID`].
    fn build(routes: &PrefixSet<A>) -> Result<Self, IdOutOfRange>;
    /// `routes` changed at `changed` (already applied): re-encodes what that touches and
    /// publishes once. An id above [`MAX_ID`] at a changed prefix is refused before anything
    /// changes. A change not named in `changed` leaves lookups unspecified (never unsound).
    fn update(&mut self, routes: &PrefixSet<A>, changed: &[Prefix<A>]) -> Result<(), IdOutOfRange>;
    /// Asks the caches for what an update of `prefix` will read first, ahead of it (a hint: no
    /// effect on answers). The router calls it before the RIB's edit, so that the misses of
    /// both overlap.
    fn prefetch_update(&self, _prefix: &Prefix<A>) {}
    /// A handle readers on any thread load versions from.
    fn reader(&self) -> Reader<Self::View>;
    /// The version last published, as the writer holds it (no load through the shared cell).
    fn view(&self) -> &Self::View;
    /// Sizes of the current version.
    fn stats(&self) -> FibStats;
    /// The encoding's content without arena offsets, in key order: equal images are equal
    /// structures bit for bit (what an incrementally patched FIB is checked against).
    fn image(&self) -> Vec<u64>;
    /// A fresh encoding of `routes` in the form of this one's generation, what an incrementally
    /// patched encoding must equal: by default [`LpmAlgorithm::build`]. (Poptrie's form
    /// depends on its leaf cells' width, which an update widens but only a full build narrows.)
    fn rebuilt_like(&self, routes: &PrefixSet<A>) -> Result<Self, IdOutOfRange>
    where
        Self: Sized,
    {
        Self::build(routes)
    }
    /// Checks the writer's bookkeeping once no reader holds an older version: the memory it
    /// accounts as used is exactly what the current version reaches (no leak, no double free).
    fn audit(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Full re-encodings since the first build (cheap: a counter, where [`LpmAlgorithm::stats`]
    /// walks the structure).
    fn rebuilds(&self) -> u64 {
        0
    }
    /// The address ranges (start, bytes) of the large arrays lookups read, for diagnostics
    /// (which pages back them); empty where the algorithm keeps none.
    fn regions(&self) -> Vec<(usize, usize)> {
        Vec::new()
    }
}

/// Something done once per registered algorithm (a test, a bench engine).
pub trait AlgorithmVisitor<A: FibFamily> {
    /// Called once for each registered algorithm `L`.
    fn visit<L: LpmAlgorithm<A>>(&mut self);
}

/// The one registration point of FIB algorithms: the reference (the oracle, see
/// [`reference`](mod@reference)) first, then the encodings for speed.
pub fn for_each_algorithm<A: FibFamily>(v: &mut impl AlgorithmVisitor<A>) {
    v.visit::<Reference<A>>();
    v.visit::<Poptrie<A>>();
}

/// Where readers load published versions. Cloned freely, one per reader thread.
pub struct Reader<V> {
    cell: Arc<ArcSwap<V>>,
}

impl<V> Clone for Reader<V> {
    fn clone(&self) -> Self {
        Reader {
            cell: self.cell.clone(),
        }
    }
}

impl<V> Reader<V> {
    pub(crate) fn new(cell: Arc<ArcSwap<V>>) -> Self {
        Reader { cell }
    }
    /// The current version, for a short while (no reference count touched).
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<V>> {
        self.cell.load()
    }
    /// The current version, to keep: later publications do not change it.
    pub fn snapshot(&self) -> Arc<V> {
        self.cell.load_full()
    }
}

/// A FIB: the `(prefix, id)` set and its compiled encoding.
pub struct Fib<A: FibFamily, L: LpmAlgorithm<A> = Poptrie<A>> {
    routes: PrefixSet<A>,
    lpm: L,
    reader: Reader<L::View>,
    /// Each change staged since the last publication: the prefix, its id before that change
    /// (what readers still see, for the first change of a prefix) and after it (the set's, for
    /// the last change).
    staged: Vec<(Prefix<A>, Option<u32>, Option<u32>)>,
    /// Room for a publication's changed prefixes (kept, empty, between publications).
    changed: Vec<Prefix<A>>,
}

impl<A: FibFamily, L: LpmAlgorithm<A>> Default for Fib<A, L> {
    fn default() -> Self {
        Self::from_routes(std::iter::empty()).expect("an empty set has no ids")
    }
}

impl<A: FibFamily, L: LpmAlgorithm<A>> std::fmt::Debug for Fib<A, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fib")
            .field("algorithm", &L::NAME)
            .field("prefixes", &self.routes.len())
            .field("staged", &self.staged.len())
            .finish()
    }
}

impl<A: FibFamily, L: LpmAlgorithm<A>> Fib<A, L> {
    /// An empty FIB: every lookup answers [`NO_ROUTE`].
    pub fn new() -> Self {
        Self::default()
    }
    /// Builds from `(prefix, id)` pairs (a later pair for the same prefix wins); refuses an id
    /// above [`MAX_ID`].
    pub fn from_routes(
        routes: impl IntoIterator<Item = (Prefix<A>, u32)>,
    ) -> Result<Self, IdOutOfRange> {
        // The build checks the ids (a second walk here was 65 million instructions of the
        // IPv4 view's load), and the set takes the pairs without a copy in between.
        Self::from_set(routes.into_iter().collect())
    }
    /// Builds from a `(prefix, id)` set the caller already holds, taking it over
    /// (no copy); refuses an id above [`MAX_ID`].
    pub fn from_set(set: PrefixSet<A>) -> Result<Self, IdOutOfRange> {
        let lpm = L::build(&set)?;
        Ok(Fib {
            reader: lpm.reader(),
            lpm,
            routes: set,
            staged: Vec::new(),
            changed: Vec::new(),
        })
    }
    /// The `(prefix, id)` set, staged changes included (exact, longest, covering and covered
    /// queries without a copy).
    pub fn entries(&self) -> &PrefixSet<A> {
        &self.routes
    }
    /// Gives the `(prefix, id)` set back, dropping the encoding (what a caller that is about to
    /// change most of the set rebuilds from).
    pub fn into_entries(self) -> PrefixSet<A> {
        self.routes
    }
    /// Changes staged since the last [`Fib::publish`].
    pub fn staged(&self) -> usize {
        self.staged.len()
    }
    /// A FIB with the same routes, staged ones included, and a reader cell of its own (a copy
    /// whose changes this one's readers never see): the route set is copied whole and the
    /// encoding built from it.
    pub fn duplicate(&self) -> Self {
        let routes = self.routes.clone();
        let lpm = L::build(&routes).expect("the ids stored were checked when set");
        Fib {
            reader: lpm.reader(),
            lpm,
            routes,
            staged: Vec::new(),
            changed: Vec::new(),
        }
    }
    /// Stages `prefix -> id` (`None`: no entry); readers see it after [`Fib::publish`]. An id
    /// above [`MAX_ID`] is refused and nothing is staged. Gives the id `prefix` had.
    pub fn set(&mut self, prefix: Prefix<A>, id: Option<u32>) -> Result<Option<u32>, IdOutOfRange> {
        let before = match id {
            Some(id) => {
                check_ids(std::iter::once((prefix, id)))?;
                self.routes.insert(prefix, id)
            }
            None => self.routes.remove(&prefix),
        };
        if before != id {
            self.staged.push((prefix, before, id));
        }
        Ok(before)
    }
    /// Re-encodes what the staged changes touch and publishes it as one version. Prefixes whose
    /// id is back to what readers see (set, then unset, in one batch) are not changes: a batch
    /// that leaves every id as it was publishes nothing.
    pub fn publish(&mut self) {
        if self.staged.is_empty() {
            return;
        }
        // The first change of each prefix holds what readers see and the last what the set
        // holds; the sort is stable, so they stay first and last.
        self.staged.sort_by_key(|&(p, _, _)| p);
        let mut changed = std::mem::take(&mut self.changed);
        for run in self.staged.chunk_by(|a, b| a.0 == b.0) {
            let (p, published, _) = run[0];
            if run[run.len() - 1].2 != published {
                changed.push(p);
            }
        }
        self.staged.clear();
        if !changed.is_empty() {
            self.lpm
                .update(&self.routes, &changed)
                .expect("Fib::set admits only storable ids");
        }
        changed.clear();
        self.changed = changed;
    }
    /// Asks the caches for what a [`Fib::set`] of `prefix` and the [`Fib::publish`] after it
    /// read first: a hint, ahead of the work (see [`LpmAlgorithm::prefetch_update`]).
    pub fn prefetch_update(&self, prefix: &Prefix<A>) {
        self.routes.prefetch(prefix);
        self.lpm.prefetch_update(prefix);
    }
    /// The id stored for exactly `prefix`.
    pub fn get(&self, prefix: &Prefix<A>) -> Option<u32> {
        self.routes.get(prefix).copied()
    }
    /// Prefixes stored.
    pub fn len(&self) -> usize {
        self.routes.len()
    }
    /// Whether no prefix is stored.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
    /// A handle for readers on other threads.
    pub fn reader(&self) -> Reader<L::View> {
        self.reader.clone()
    }
    /// A lookup in the version last published, on the writer's side (the owner of the `Fib`
    /// holds that version: no load through the shared cell). Other threads use a [`Reader`].
    #[inline]
    pub fn lookup(&self, addr: A) -> u32 {
        self.lpm.view().lookup(addr.to_bits())
    }
    /// The version last published, as the writer holds it (what [`Fib::lookup`] reads).
    #[inline]
    pub fn view(&self) -> &L::View {
        self.lpm.view()
    }
    /// [`LpmAlgorithm::stats`].
    pub fn stats(&self) -> FibStats {
        self.lpm.stats()
    }
    /// [`LpmAlgorithm::image`].
    pub fn image(&self) -> Vec<u64> {
        self.lpm.image()
    }
    /// The image and stats of a fresh encoding of the routes in this FIB's form
    /// ([`LpmAlgorithm::rebuilt_like`]): what a patched FIB must equal, and what the tests and
    /// the fuzz target compare it with. A fresh build of the same routes may differ where the
    /// form does: Poptrie's leaf cells stay as wide as the widest id this generation held, and
    /// whether a slot is flat depends on their width (`flat_pays`).
    pub fn fresh_like(&self) -> (Vec<u64>, FibStats) {
        let fresh = self
            .lpm
            .rebuilt_like(&self.routes)
            .expect("every id in the routes was checked against MAX_ID when it was set");
        (fresh.image(), fresh.stats())
    }
    /// [`LpmAlgorithm::audit`]: call with no older version held by any reader.
    pub fn audit(&mut self) -> Result<(), String> {
        self.lpm.audit()
    }
    /// [`LpmAlgorithm::rebuilds`].
    pub fn rebuilds(&self) -> u64 {
        self.lpm.rebuilds()
    }
    /// [`LpmAlgorithm::regions`].
    pub fn regions(&self) -> Vec<(usize, usize)> {
        self.lpm.regions()
    }
    /// The `(prefix, id)` set, in order.
    pub fn routes(&self) -> impl Iterator<Item = (Prefix<A>, u32)> + '_ {
        self.routes.iter().map(|(p, &id)| (p, id))
    }
}

#[cfg(test)]
mod tests;
