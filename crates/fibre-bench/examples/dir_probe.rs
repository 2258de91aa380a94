//! How fast a lookup could be with one dependent read after an L2-sized direct table: the bound
//! of the record holders issue 15 names (DXR's D16R reads its direct table then at least one
//! line of a range chunk; SAIL's level 16 then its level 24 chunk), against the Poptrie FIB, on
//! the IPv4 full view's W1 addresses, in one process, round after round:
//!
//! ```sh
//! cargo build --release -p fibre-bench --example dir_probe
//! target/release/examples/dir_probe 16   # or 18: the direct table as wide as Poptrie's slots
//! ```
//!
//! The probe's table is DIR-D-(24-D): a direct table of 2^D four-byte entries, each either a
//! leaf or the index of a block of 2^(24-D) one-byte leaves, one per /24 (the bench's ids are
//! below 16). A /D holding a prefix longer than /24 is left to the Poptrie FIB (the probe
//! prints how many keys fall there). It is built once and never changed: updates, snapshots
//! for readers and wider ids are what it leaves out, and why it is not a registered algorithm
//! (docs/fib.md, issue 15's twentieth round).
use fibre::fib::{Fib, PoptrieView, NO_ROUTE};
use fibre::Prefix;
use fibre_bench::scenario::{with_next_hops, workspace_views, BenchRoute};
use fibre_bench::workload;
use std::hint::black_box;
use std::net::Ipv4Addr;

/// A direct entry: a leaf (the id in the low byte, 0xFF for none), a block's index, or the
/// Poptrie FIB's.
const LEAF: u32 = 1 << 31;
const TO_POPTRIE: u32 = LEAF - 1;
const NO_LEAF: u8 = 0xFF;

/// Zeroed memory advised `MADV_HUGEPAGE` before its first touch, as the FIB's arenas are, so
/// that both structures pay the same TLB misses.
struct HugeBuf<T: Copy> {
    ptr: *mut T,
    len: usize,
}

impl<T: Copy> HugeBuf<T> {
    /// `len` zero cells; `T` must be a type for which all-zero bytes are a value (integers).
    fn zeroed(len: usize) -> Self {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        // SAFETY: a fresh private anonymous mapping, checked; the advice only changes how it
        // is backed.
        let ptr = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert!(p != libc::MAP_FAILED, "mmap of {bytes} bytes");
            libc::madvise(p, bytes, libc::MADV_HUGEPAGE);
            p as *mut T
        };
        HugeBuf { ptr, len }
    }
}

impl<T: Copy> std::ops::Deref for HugeBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` cells mapped by `zeroed`, zero bytes being a value of the integer
        // types used here, and owned by `self` until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for HugeBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: Copy> Drop for HugeBuf<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made by `zeroed`, unmapped once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len * size_of::<T>()) };
    }
}

struct DirTable {
    bits: u32,
    direct: HugeBuf<u32>,
    blocks: HugeBuf<u8>,
}

impl DirTable {
    fn build(routes: &[BenchRoute<u32>], bits: u32) -> DirTable {
        let block_bits = 24 - bits;
        // Every /24's id, painted shortest first.
        let mut by_len: Vec<&BenchRoute<u32>> = routes.iter().collect();
        by_len.sort_by_key(|r| r.len);
        let mut per24 = vec![NO_LEAF; 1 << 24];
        let mut past24 = vec![false; 1 << bits];
        for r in by_len {
            if r.len > 24 {
                past24[(r.addr >> (32 - bits)) as usize] = true;
                continue;
            }
            let first = (r.addr >> 8) as usize;
            per24[first..first + (1 << (24 - r.len))].fill(r.nh);
        }
        let span = |c: usize| &per24[c << block_bits..(c + 1) << block_bits];
        let mut direct = HugeBuf::<u32>::zeroed(1 << bits);
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
            if e & LEAF == 0 && e != TO_POPTRIE {
                let at = (e as usize) << block_bits;
                blocks[at..at + (1 << block_bits)].copy_from_slice(span(c));
            }
        }
        DirTable {
            bits,
            direct,
            blocks,
        }
    }

    #[inline(always)]
    fn leaf(id: u8) -> u32 {
        if id == NO_LEAF {
            NO_ROUTE
        } else {
            u32::from(id)
        }
    }

    #[inline(always)]
    fn lookup(&self, k: u32, poptrie: &PoptrieView<Ipv4Addr>) -> u32 {
        let e = self.direct[(k >> (32 - self.bits)) as usize];
        if e == TO_POPTRIE {
            poptrie.lookup(k)
        } else if e & LEAF != 0 {
            Self::leaf(e as u8)
        } else {
            let block_bits = 24 - self.bits;
            let at = ((e as usize) << block_bits) | ((k >> 8) as usize & ((1 << block_bits) - 1));
            Self::leaf(self.blocks[at])
        }
    }

    /// Groups of 16: every key's direct entry, its leaf's line prefetched, then the leaves.
    fn lookup_bulk(&self, keys: &[u32], out: &mut [u32], poptrie: &PoptrieView<Ipv4Addr>) {
        for (ks, os) in keys.chunks(16).zip(out.chunks_mut(16)) {
            for &k in ks {
                let e = self.direct[(k >> (32 - self.bits)) as usize];
                if e & LEAF == 0 {
                    let block_bits = 24 - self.bits;
                    let at = ((e as usize) << block_bits)
                        | ((k >> 8) as usize & ((1 << block_bits) - 1));
                    if let Some(b) = self.blocks.get(at) {
                        prefetch(b);
                    }
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
}

fn main() {
    let bits: u32 = std::env::args()
        .nth(1)
        .map_or(16, |s| s.parse().expect("direct bits: 16 or 18"));
    assert!((8..=24).contains(&bits), "direct bits between 8 and 24");
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
    let dir = DirTable::build(&routes, bits);
    let keys = workload::inside_prefixes::<Ipv4Addr>(&routes, 1_000_000, 7);
    let wrong = keys
        .iter()
        .filter(|&&k| dir.lookup(k, poptrie) != poptrie.lookup(k))
        .count();
    assert_eq!(wrong, 0, "the probe's table answers as the FIB");
    let passed_on = keys
        .iter()
        .filter(|&&k| dir.direct[(k >> (32 - bits)) as usize] == TO_POPTRIE)
        .count();
    println!(
        "DIR-{bits}-{}: {} bytes (direct {}, blocks {}), Poptrie {} bytes; {passed_on} of {} \
         keys left to Poptrie",
        24 - bits,
        dir.direct.len() * 4 + dir.blocks.len(),
        dir.direct.len() * 4,
        dir.blocks.len(),
        fib.stats().bytes,
        keys.len()
    );
    let ns = |f: &mut dyn FnMut() -> u32| {
        let s = std::time::Instant::now();
        black_box(f());
        s.elapsed().as_nanos() as f64 / keys.len() as f64
    };
    // Each key depends on the previous answer through an opaque zero, as in `fib_profile`.
    let zero: u32 = black_box(0);
    let mut out = vec![0u32; keys.len()];
    println!("ns a lookup, Poptrie / DIR: dependent, single, bulk");
    for round in 0..5 {
        let chain = |f: &dyn Fn(u32) -> u32| {
            ns(&mut || keys.iter().fold(0, |prev, &k| f(k ^ (prev & zero))))
        };
        let pd = chain(&|k| poptrie.lookup(k));
        let dd = chain(&|k| dir.lookup(k, poptrie));
        let sum = |f: &dyn Fn(u32) -> u32| {
            ns(&mut || keys.iter().fold(0u32, |a, &k| a.wrapping_add(f(k))))
        };
        let ps = sum(&|k| poptrie.lookup(k));
        let ds = sum(&|k| dir.lookup(k, poptrie));
        let pb = ns(&mut || {
            poptrie.lookup_bulk(&keys, &mut out);
            out[keys.len() / 2]
        });
        let db = ns(&mut || {
            dir.lookup_bulk(&keys, &mut out, poptrie);
            out[keys.len() / 2]
        });
        println!(
            "round {round}: {pd:.1} / {dd:.1}, {ps:.1} / {ds:.1}, {pb:.1} / {db:.1} \
             (ratios {:.2}, {:.2}, {:.2})",
            dd / pd,
            ds / ps,
            db / pb
        );
    }
}
