//! What the cache misses of a cold route change cost, structure by structure (callgrind
//! counts instructions, not the wait for memory; this VM exposes no hardware counters):
//!
//! ```sh
//! cargo build --release -p fibre-bench --example change_misses
//! target/release/examples/change_misses 4 20000
//! FIBRE_PROFILE_WARM=rib,set,trie target/release/examples/change_misses 4 20000
//! ```
//!
//! Loads the full view (the shared real table when present, else synthetic) of family 4 or 6
//! into a router, then deletes N random routes and puts each back at once, one change set
//! each, every change timed: the update bench's router figures (`fibre bench --updates N`),
//! here without its reader thread (`FIBRE_PROFILE_READER=1` starts the bench's, doing bulk
//! lookups on the first CPU while the changes run on the last). A delete finds its route
//! cold; the add that follows finds what the delete brought into the caches.
//!
//! Other values of `FIBRE_PROFILE_READER` put another thread of this process on the first CPU
//! instead, to tell apart what a reader costs the changes: `spin` (a loop that reads nothing),
//! `mem64` (random reads over 64 MiB of its own; any size in MiB), `load` (takes the FIB's
//! version and lets it go once a batch, a batch padded with a spin: about 0.2 µs here, where
//! the bench's reader takes one every 64 lookups, 0.4 µs) and `single` (the same, with one
//! lookup in each version taken). Each prints its ns a batch. With `FIBRE_PROFILE_APART=1`
//! that thread reads a second router's FIB, loaded with the same routes, so that it shares no
//! line of the FIB with the changes (and that FIB's version never changes: no version is
//! swapped or dropped under the thread).
//!
//! `FIBRE_PROFILE_WARM` lists (comma-separated) what is read before each delete, untimed:
//! `index` (the route's destination searched in table main's RIB index), `rib` (that search,
//! then the destination's entry and its stored routes), `set` (its prefix in the FIB's own set)
//! and `trie` (a FIB lookup of its address: the encoding's path). What a delete then saves is
//! what those misses cost it.
use fibre::route::TABLE_MAIN;
use fibre::router::fibs::TableFib;
use fibre::{Prefix, Router};
use fibre_bench::host::{online_cpus, pin_thread};
use fibre_bench::scenario::{with_next_hops, workspace_views, BenchRoute, StudyFamily};
use fibre_bench::stats::quantile;
use fibre_bench::updates::{add, del, loaded_router, reader, spec};
use fibre_bench::workload;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What `FIBRE_PROFILE_WARM` names (see the module docs).
#[derive(Default)]
struct Warm {
    index: bool,
    rib: bool,
    set: bool,
    trie: bool,
}

impl Warm {
    fn from_env() -> Warm {
        let mut warm = Warm::default();
        let list = std::env::var("FIBRE_PROFILE_WARM").unwrap_or_default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "index" => warm.index = true,
                "rib" => warm.rib = true,
                "set" => warm.set = true,
                "trie" => warm.trie = true,
                other => {
                    eprintln!("FIBRE_PROFILE_WARM: {other:?} is none of index, rib, set, trie");
                    std::process::exit(2);
                }
            }
        }
        warm
    }
    fn describe(&self) -> String {
        let names = [
            (self.index, "index"),
            (self.rib, "rib"),
            (self.set, "set"),
            (self.trie, "trie"),
        ];
        let on: Vec<&str> = names.iter().filter(|n| n.0).map(|n| n.1).collect();
        if on.is_empty() {
            "nothing".into()
        } else {
            on.join(",")
        }
    }
}

/// The FIB that answers table main's plain flows: local and main merged, or main's own.
fn main_fib<A: StudyFamily>(router: &Router) -> &TableFib<A> {
    let state = router.family::<A>();
    state
        .merged_fib()
        .or_else(|| state.table_fib(TABLE_MAIN))
        .expect("table main has a FIB")
}

/// The keys a thread beside the changes looks up: W1 addresses, as the bench's reader's.
fn reader_keys<A: StudyFamily>(routes: &[BenchRoute<A::K>]) -> Vec<A::K> {
    workload::inside_prefixes::<A>(routes, 1 << 16, 7)
}

/// Reads what `warm` names of `route`'s state (see the module docs).
fn warm_up<A: StudyFamily>(router: &Router, route: &BenchRoute<A::K>, warm: &Warm) {
    let state = router.family::<A>();
    let dst = Prefix::new(A::from_bits(route.addr), route.len);
    let main = state.table(TABLE_MAIN).expect("table main");
    let fib = main_fib::<A>(router).fib();
    if warm.index {
        black_box(main.entry_index(&dst));
    }
    if warm.rib {
        if let Some(entry) = main.entry(&dst) {
            for stored in main.routes_of(dst, entry).iter() {
                black_box(stored);
            }
        }
    }
    if warm.set {
        black_box(fib.get(&dst));
    }
    if warm.trie {
        black_box(fib.lookup(A::from_bits(route.addr)));
    }
}

fn run<A: StudyFamily>(prefixes: &[(A::K, u8)], n: usize) {
    let warm = Warm::from_env();
    let reader_mode = std::env::var("FIBRE_PROFILE_READER").unwrap_or_default();
    let with_reader = reader_mode == "1";
    let other_mode = OtherMode::parse(&reader_mode);
    let routes: Vec<BenchRoute<A::K>> = with_next_hops(prefixes);
    let (mut router, dev, _) = loaded_router::<A>(&routes).expect("router loads");
    // As the update bench: the writer on the last CPU, the reader on the first.
    let cpus = online_cpus();
    let _ = pin_thread(cpus - 1);
    let stop = Arc::new(AtomicBool::new(false));
    let reader_thread = with_reader.then(|| {
        reader::<A, _>(
            main_fib::<A>(&router).reader(),
            Arc::new(reader_keys::<A>(&routes)),
            stop.clone(),
            (cpus > 1).then_some(0),
            Arc::new(AtomicU64::new(0)),
        )
    });
    let apart = std::env::var("FIBRE_PROFILE_APART").is_ok_and(|v| v == "1");
    // Only where such a thread reads it.
    let twin = (apart && other_mode.is_some())
        .then(|| loaded_router::<A>(&routes).expect("router loads").0);
    let other = other_mode
        .map(|m| other_thread::<A>(m, twin.as_ref().unwrap_or(&router), &routes, stop.clone()));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let chosen: Vec<&BenchRoute<A::K>> = routes.choose_multiple(&mut rng, n).collect();
    let (mut deletes, mut adds) = (Vec::new(), Vec::new());
    for route in chosen {
        let s = spec::<A>(route, dev);
        let (delete, put_back) = (del(&s), add(s));
        warm_up::<A>(&router, route, &warm);
        let t = Instant::now();
        router.change(&delete).expect("delete");
        deletes.push(t.elapsed().as_nanos() as f64);
        let t = Instant::now();
        router.change(&put_back).expect("add");
        adds.push(t.elapsed().as_nanos() as f64);
    }
    stop.store(true, Ordering::Relaxed);
    let reader = reader_thread.map(|h| h.join().expect("reader"));
    let batch_ns = other.map(|h| h.join().expect("other thread").1);
    let all: Vec<f64> = deletes.iter().chain(&adds).copied().collect();
    let show = |v: &[f64]| {
        let q = |x| quantile(v, x);
        format!("{:.0} / {:.0} / {:.0}", q(0.1), q(0.5), q(0.9))
    };
    println!(
        "{} (read first: {}; reader: {}), ns, p10 / median / p90: deletes {}; adds {}; all {}",
        A::LABEL,
        warm.describe(),
        match (reader, batch_ns) {
            (Some(r), _) => format!("{:.1} ns a lookup on {}", r.ns, r.on),
            (_, Some(ns)) => format!(
                "none; {reader_mode} on cpu 0{}, {ns:.0} ns a batch",
                if twin.is_some() {
                    " in another router's FIB"
                } else {
                    ""
                },
            ),
            _ => "none".into(),
        },
        show(&deletes),
        show(&adds),
        show(&all),
    );
}

/// What the thread beside the changes does, for `FIBRE_PROFILE_READER` other than `1` (see
/// the module docs).
#[derive(Clone, Copy)]
enum OtherMode {
    Spin,
    /// Random reads over this many MiB of its own.
    Memory(usize),
    /// A version taken and let go a batch; with `true`, one lookup in it.
    Load(bool),
}

impl OtherMode {
    /// `None` for no such thread (unset, empty, `0`, or `1`: the bench's reader); exits on a
    /// name it does not know, before the router's load.
    fn parse(mode: &str) -> Option<OtherMode> {
        let memory = mode
            .strip_prefix("mem")
            .and_then(|m| m.parse::<usize>().ok());
        match mode {
            "" | "0" | "1" => None,
            "spin" => Some(OtherMode::Spin),
            "load" => Some(OtherMode::Load(false)),
            "single" => Some(OtherMode::Load(true)),
            _ if memory.is_some_and(|m| m > 0) => memory.map(OtherMode::Memory),
            other => {
                eprintln!(
                    "FIBRE_PROFILE_READER: {other:?} is none of 1, spin, mem<MiB>, load, single"
                );
                std::process::exit(2);
            }
        }
    }
}

/// The thread of `mode` on the first CPU, until `stop`, started once it is ready (its memory
/// filled). It returns its result (so that its work is not optimised away) and its ns a
/// batch: 64 random reads in `Memory`, else a version's load (and lookup) and a spin of 600
/// additions (about 0.2 µs here).
fn other_thread<A: StudyFamily>(
    mode: OtherMode,
    router: &Router,
    routes: &[BenchRoute<A::K>],
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(u64, f64)> {
    let fib = main_fib::<A>(router).reader();
    let keys = reader_keys::<A>(routes);
    let ready = Arc::new(AtomicBool::new(false));
    let started = ready.clone();
    let thread = std::thread::spawn(move || {
        let _ = pin_thread(0);
        let words = match mode {
            OtherMode::Memory(mib) => mib.checked_mul(1 << 17).expect("mem<MiB>: too large"),
            _ => 0,
        };
        let memory: Vec<u64> = (0..words as u64).collect();
        started.store(true, Ordering::Release);
        let (mut x, mut i, mut batches) = (0u64, 1u64, 0u64);
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            for chunk in keys.chunks_exact(64) {
                batches += 1;
                match mode {
                    OtherMode::Memory(_) => {
                        for _ in 0..64 {
                            i = i
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            x = x.wrapping_add(memory[(i >> 20) as usize % words]);
                        }
                        continue;
                    }
                    OtherMode::Load(lookup) => {
                        let version = fib.load();
                        if lookup {
                            x = x.wrapping_add(version.lookup(chunk[0]) as u64);
                        }
                    }
                    OtherMode::Spin => {}
                }
                for _ in 0..600 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
        }
        (x, start.elapsed().as_nanos() as f64 / batches.max(1) as f64)
    });
    while !ready.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
    thread
}

fn main() {
    let mut args = std::env::args().skip(1);
    let family = args.next().unwrap_or_else(|| "4".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let views = workspace_views();
    match family.as_str() {
        "6" => run::<Ipv6Addr>(&views.v6.prefixes, n),
        _ => run::<Ipv4Addr>(&views.v4.prefixes, n),
    }
}
