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
//! here without its reader thread (`FIBRE_PROFILE_READER=1` starts one, doing bulk lookups on
//! the other CPU as the bench's does). A delete finds its route cold; the add that follows
//! finds what the delete brought into the caches.
//!
//! `FIBRE_PROFILE_WARM` names what is read before each delete, untimed: `rib` (the route's
//! destination in table main's RIB: its index search and entry), `set` (its prefix in the FIB's
//! own set) and `trie` (a FIB lookup of its address: the encoding's path). What a delete then
//! saves is what those misses cost it.
use fibre::route::TABLE_MAIN;
use fibre::{Prefix, Router};
use fibre_bench::scenario::{with_next_hops, workspace_views, BenchRoute, StudyFamily};
use fibre_bench::updates::{add, del, loaded_router, spec};
use fibre_bench::workload;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Reads what `warm` names of route `r`'s structures (see the module docs).
fn warm_up<A: StudyFamily>(router: &Router, r: &BenchRoute<A::K>, warm: &str) {
    let st = router.family::<A>();
    let p = Prefix::new(A::from_bits(r.addr), r.len);
    let fib = st
        .merged_fib()
        .or_else(|| st.table_fib(TABLE_MAIN))
        .expect("table main has a FIB")
        .fib();
    if warm.contains("index") {
        black_box(st.table(TABLE_MAIN).expect("table main").entry_index(&p));
    }
    if warm.contains("rib") {
        let main = st.table(TABLE_MAIN).expect("table main");
        black_box(main.entry(&p).map(|e| main.routes_of(p, e).iter().count()));
    }
    if warm.contains("set") {
        black_box(fib.get(&p));
    }
    if warm.contains("trie") {
        black_box(fib.lookup(A::from_bits(r.addr)));
    }
}

/// The values at quantiles `qs` of `v` (sorted here), by nearest rank.
fn quantiles(v: &mut [f64], qs: &[f64]) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    qs.iter()
        .map(|q| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1])
        .collect()
}

fn run<A: StudyFamily>(prefixes: &[(A::K, u8)], n: usize) {
    let warm = std::env::var("FIBRE_PROFILE_WARM").unwrap_or_default();
    let with_reader = std::env::var("FIBRE_PROFILE_READER").is_ok_and(|v| v == "1");
    let routes: Vec<BenchRoute<A::K>> = with_next_hops(prefixes);
    let (mut router, dev, _) = loaded_router::<A>(&routes).expect("router loads");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = with_reader.then(|| {
        let st = router.family::<A>();
        let fib = st.merged_fib_reader().or_else(|| st.fib_reader(TABLE_MAIN));
        let fib = fib.expect("table main has a FIB");
        let keys = workload::inside_prefixes::<A>(&routes, 1 << 16, 7);
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = fibre_bench::host::pin_thread(1);
            let mut out = [0u32; 64];
            let mut sum = 0u32;
            'run: loop {
                for chunk in keys.chunks_exact(64) {
                    if stop.load(Ordering::Relaxed) {
                        break 'run;
                    }
                    fib.load().lookup_bulk(chunk, &mut out);
                    sum = sum.wrapping_add(out[0]);
                }
            }
            black_box(sum);
        })
    });
    let _ = fibre_bench::host::pin_thread(0);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let chosen: Vec<&BenchRoute<A::K>> = routes.choose_multiple(&mut rng, n).collect();
    let (mut deletes, mut adds) = (Vec::new(), Vec::new());
    for r in chosen {
        let s = spec::<A>(r, dev);
        let (d, a) = (del(&s), add(s));
        warm_up::<A>(&router, r, &warm);
        let t = Instant::now();
        router.change(&d).expect("delete");
        deletes.push(t.elapsed().as_nanos() as f64);
        let t = Instant::now();
        router.change(&a).expect("add");
        adds.push(t.elapsed().as_nanos() as f64);
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = reader {
        h.join().expect("reader");
    }
    let mut all: Vec<f64> = deletes.iter().chain(&adds).copied().collect();
    let qs = [0.1, 0.5, 0.9];
    let show = |v: &mut Vec<f64>| {
        let q = quantiles(v, &qs);
        format!("{:.0} / {:.0} / {:.0}", q[0], q[1], q[2])
    };
    println!(
        "{} (warm: {}; reader: {with_reader}), ns, p10 / median / p90: deletes {}; adds {}; \
         all {}",
        A::LABEL,
        if warm.is_empty() { "nothing" } else { &warm },
        show(&mut deletes),
        show(&mut adds),
        show(&mut all),
    );
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
