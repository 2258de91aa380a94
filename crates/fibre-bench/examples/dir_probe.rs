//! How fast an IPv4 lookup could be with a single read after a direct table small enough for
//! the L2. That bounds the record holders issue 15 names: DXR's D16R reads its direct table,
//! then at least one line of a chunk of ranges; SAIL reads its level 16, then a chunk of its
//! level 24. The probe times such a table against the Poptrie FIB on the full view's W1
//! addresses, in one process, round after round, the order alternating:
//!
//! ```sh
//! cargo build --release -p fibre-bench --example dir_probe
//! target/release/examples/dir_probe 16   # or 18: the direct table as wide as Poptrie's slots
//! ```
//!
//! The table is DIR-D-(24-D): a direct table of 2^D four-byte entries, each a leaf or the
//! index of a block of 2^(24-D) one-byte leaves, one per /24 (the bench's ids are below 16). A
//! /D holding a prefix longer than /24 is left to the Poptrie FIB; the probe prints how many
//! there are and how many keys fall there. It is built once and never changed: updates,
//! snapshots for readers and wider ids are what it leaves out, and why it is not a registered
//! algorithm (docs/fib.md, issue 15's twentieth round).
use fibre::fib::{Fib, PoptrieView, NO_ROUTE};
use fibre::Prefix;
use fibre_bench::host::huge_page_bytes;
use fibre_bench::scenario::{with_next_hops, workspace_views, BenchRoute};
use fibre_bench::workload;
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

// A direct entry is one of three things.
/// The entry is a leaf: its id in the low byte ([`NO_LEAF`] for none).
const LEAF: u32 = 1 << 31;
/// The /D is left to the Poptrie FIB (the value is NO_ROUTE's, by chance: entries are not ids).
const TO_POPTRIE: u32 = LEAF - 1;
// Anything else is a block's index.
/// A one-byte leaf that names no route.
const NO_LEAF: u8 = 0xFF;

/// The cell types a [`HugeBuf`] holds: integers, whose all-zero bytes are a value.
trait Zeroable: Copy {}
impl Zeroable for u8 {}
impl Zeroable for u32 {}

/// Zeroed cells on their own mapping, aligned to 2 MiB and advised `MADV_HUGEPAGE` before
/// their first touch, as the FIB's arenas of a megabyte or more are.
struct HugeBuf<T: Zeroable> {
    /// The mapping, as made: what `drop` unmaps.
    base: *mut libc::c_void,
    mapped: usize,
    cells: *mut T,
    len: usize,
}

impl<T: Zeroable> HugeBuf<T> {
    const HUGE_PAGE: usize = 2 << 20;

    fn zeroed(len: usize) -> Self {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("the cells' size fits a usize");
        let mapped = bytes
            .checked_add(Self::HUGE_PAGE)
            .expect("the mapping's size fits a usize");
        // SAFETY: a fresh private anonymous mapping of `mapped` bytes, checked. The cells start
        // at its first 2 MiB boundary, and `bytes` from there lie inside it (it has 2 MiB more).
        // The advice only changes how those pages are backed.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert!(base != libc::MAP_FAILED, "mmap of {mapped} bytes");
            let cells = base
                .cast::<u8>()
                .add(base.align_offset(Self::HUGE_PAGE))
                .cast::<T>();
            if bytes > 0 {
                libc::madvise(cells.cast(), bytes, libc::MADV_HUGEPAGE);
            }
            HugeBuf {
                base,
                mapped,
                cells,
                len,
            }
        }
    }

    /// Where the cells are, for `huge_page_bytes`.
    fn region(&self) -> (usize, usize) {
        (self.cells as usize, self.len * std::mem::size_of::<T>())
    }
}

impl<T: Zeroable> std::ops::Deref for HugeBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` cells inside the mapping, aligned for `T`, zeroed or written since
        // (all-zero bytes being a `Zeroable`'s value), owned by `self` until drop.
        unsafe { std::slice::from_raw_parts(self.cells, self.len) }
    }
}

impl<T: Zeroable> std::ops::DerefMut for HugeBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.cells, self.len) }
    }
}

impl<T: Zeroable> Drop for HugeBuf<T> {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made by `zeroed`, unmapped once; no cell is borrowed past
        // `self`.
        unsafe { libc::munmap(self.base, self.mapped) };
    }
}

struct DirTable {
    direct_bits: u32,
    direct: HugeBuf<u32>,
    blocks: HugeBuf<u8>,
    /// The /D left to the Poptrie FIB.
    left_to_poptrie: usize,
}

impl DirTable {
    fn build(routes: &[BenchRoute<u32>], direct_bits: u32) -> DirTable {
        let block_bits = 24 - direct_bits;
        // Every /24's id, painted shortest first.
        let mut by_len: Vec<&BenchRoute<u32>> = routes.iter().collect();
        by_len.sort_by_key(|r| r.len);
        let mut per24 = vec![NO_LEAF; 1 << 24];
        let mut past24 = vec![false; 1 << direct_bits];
        for r in by_len {
            if r.len > 24 {
                past24[(r.addr >> (32 - direct_bits)) as usize] = true;
                continue;
            }
            let first = (r.addr >> 8) as usize;
            per24[first..first + (1 << (24 - r.len))].fill(r.nh);
        }
        let span = |c: usize| &per24[c << block_bits..(c + 1) << block_bits];
        let mut direct = HugeBuf::<u32>::zeroed(1 << direct_bits);
        let mut count = 0u32;
        for (c, e) in direct.iter_mut().enumerate() {
            let s = span(c);
            *e = if past24[c] {
                TO_POPTRIE
            } else if s.iter().all(|&x| x == s[0]) {
                LEAF | u32::from(s[0])
            } else {
                count += 1;
                count - 1
            };
        }
        let mut blocks = HugeBuf::<u8>::zeroed((count as usize) << block_bits);
        for (c, &e) in direct.iter().enumerate() {
            if Self::is_block(e) {
                let at = (e as usize) << block_bits;
                blocks[at..at + (1 << block_bits)].copy_from_slice(span(c));
            }
        }
        DirTable {
            direct_bits,
            direct,
            blocks,
            left_to_poptrie: past24.iter().filter(|&&p| p).count(),
        }
    }

    #[inline(always)]
    fn is_block(e: u32) -> bool {
        e & LEAF == 0 && e != TO_POPTRIE
    }

    #[inline(always)]
    fn entry(&self, k: u32) -> u32 {
        self.direct[(k >> (32 - self.direct_bits)) as usize]
    }

    /// Where key `k`'s leaf is in the blocks, for its block entry `e`.
    #[inline(always)]
    fn leaf_at(&self, e: u32, k: u32) -> usize {
        let block_bits = 24 - self.direct_bits;
        ((e as usize) << block_bits) | ((k >> 8) as usize & ((1 << block_bits) - 1))
    }

    #[inline(always)]
    fn answer(id: u8) -> u32 {
        if id == NO_LEAF {
            NO_ROUTE
        } else {
            u32::from(id)
        }
    }

    #[inline(always)]
    fn lookup(&self, k: u32, poptrie: &PoptrieView<Ipv4Addr>) -> u32 {
        let e = self.entry(k);
        if e == TO_POPTRIE {
            poptrie.lookup(k)
        } else if e & LEAF != 0 {
            Self::answer(e as u8)
        } else {
            Self::answer(self.blocks[self.leaf_at(e, k)])
        }
    }

    /// Groups of 16: every key's direct entry, its leaf's line prefetched, then the leaves.
    fn lookup_bulk(&self, keys: &[u32], out: &mut [u32], poptrie: &PoptrieView<Ipv4Addr>) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        for (ks, os) in keys.chunks(16).zip(out.chunks_mut(16)) {
            for &k in ks {
                let e = self.entry(k);
                if Self::is_block(e) {
                    prefetch(&self.blocks[self.leaf_at(e, k)]);
                }
            }
            for (o, &k) in os.iter_mut().zip(ks) {
                *o = self.lookup(k, poptrie);
            }
        }
    }
}

#[inline(always)]
fn prefetch(b: &u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch of a valid address; it reads nothing the program sees.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(b as *const u8 as *const i8, _MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// ns a lookup of `keys`: each depending on the last answer (through an opaque zero, as in
/// `fib_profile`), single, and in bulk.
fn times(
    keys: &[u32],
    out: &mut [u32],
    lookup: impl Fn(u32) -> u32,
    mut bulk: impl FnMut(&[u32], &mut [u32]),
) -> [f64; 3] {
    let per_key = |t: Instant| t.elapsed().as_nanos() as f64 / keys.len() as f64;
    let zero: u32 = black_box(0);
    let t = Instant::now();
    black_box(keys.iter().fold(0, |prev, &k| lookup(k ^ (prev & zero))));
    let dependent = per_key(t);
    let t = Instant::now();
    black_box(keys.iter().fold(0u32, |a, &k| a.wrapping_add(lookup(k))));
    let single = per_key(t);
    let t = Instant::now();
    bulk(keys, out);
    black_box(&out);
    [dependent, single, per_key(t)]
}

fn main() {
    let direct_bits: u32 = std::env::args()
        .nth(1)
        .map_or(16, |s| s.parse().expect("direct bits: a number, 16 or 18"));
    assert!(
        (8..=24).contains(&direct_bits),
        "direct bits between 8 and 24"
    );
    let views = workspace_views();
    let routes: Vec<BenchRoute<u32>> = with_next_hops(&views.v4.prefixes);
    let fib: Fib<Ipv4Addr> = Fib::from_routes(routes.iter().map(|r| {
        (
            Prefix::new(Ipv4Addr::from_bits(r.addr), r.len),
            u32::from(r.nh),
        )
    }))
    .expect("next-hop indexes are small");
    let poptrie = fib.view();
    let dir = DirTable::build(&routes, direct_bits);
    let keys = workload::inside_prefixes::<Ipv4Addr>(&routes, 1_000_000, 7);
    let wrong = keys
        .iter()
        .filter(|&&k| dir.lookup(k, poptrie) != poptrie.lookup(k))
        .count();
    assert_eq!(wrong, 0, "the probe's table answers as the FIB");
    let (mut expected, mut out) = (vec![0u32; keys.len()], vec![0u32; keys.len()]);
    poptrie.lookup_bulk(&keys, &mut expected);
    dir.lookup_bulk(&keys, &mut out, poptrie);
    assert!(
        out == expected,
        "the probe's bulk lookups answer as the FIB's"
    );
    let keys_left = keys.iter().filter(|&&k| dir.entry(k) == TO_POPTRIE).count();
    let huge = |regions: &[(usize, usize)]| {
        huge_page_bytes(regions).map_or("unknown".into(), |(h, t)| format!("{h} of {t}"))
    };
    println!(
        "DIR-{direct_bits}-{}: {} bytes (direct {}, blocks {}; on huge pages: {}), and {} /{} \
         left to Poptrie ({keys_left} of {} keys); Poptrie: {} bytes (on huge pages: {})",
        24 - direct_bits,
        dir.direct.len() * 4 + dir.blocks.len(),
        dir.direct.len() * 4,
        dir.blocks.len(),
        huge(&[dir.direct.region(), dir.blocks.region()]),
        dir.left_to_poptrie,
        direct_bits,
        keys.len(),
        fib.stats().bytes,
        huge(&fib.regions()),
    );
    println!("ns a lookup, Poptrie / DIR: dependent, single, bulk (the first of each round first)");
    for round in 0..6 {
        let mut time_poptrie = || {
            times(
                &keys,
                &mut out,
                |k| poptrie.lookup(k),
                |ks, os| poptrie.lookup_bulk(ks, os),
            )
        };
        let mut time_dir = || {
            times(
                &keys,
                &mut expected,
                |k| dir.lookup(k, poptrie),
                |ks, os| dir.lookup_bulk(ks, os, poptrie),
            )
        };
        let (p, d) = if round % 2 == 0 {
            let p = time_poptrie();
            (p, time_dir())
        } else {
            let d = time_dir();
            (time_poptrie(), d)
        };
        println!(
            "round {round} ({} first): {:.1} / {:.1}, {:.1} / {:.1}, {:.1} / {:.1} \
             (ratios {:.2}, {:.2}, {:.2})",
            if round % 2 == 0 { "Poptrie" } else { "DIR" },
            p[0],
            d[0],
            p[1],
            d[1],
            p[2],
            d[2],
            d[0] / p[0],
            d[1] / p[1],
            d[2] / p[2]
        );
    }
}
