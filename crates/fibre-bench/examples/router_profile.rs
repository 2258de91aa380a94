//! The router's own paths, for instruction-level profilers (callgrind: this VM exposes no
//! hardware counters):
//!
//! ```sh
//! cargo build --release -p fibre-bench --example router_profile
//! valgrind --tool=callgrind --callgrind-out-file=target/router.callgrind \
//!     target/release/examples/router_profile 4 100000
//! callgrind_annotate --inclusive=yes target/router.callgrind | grep router_profile::
//! ```
//!
//! Loads the full view (the shared real table when present, else synthetic) of family 4 or 6
//! into a router as one change set (`load`), then does N `route_get`s of W1 addresses
//! (`gets`) and N/10 deletes then N/10 inserts of the same routes, one change set each
//! (`updates`: `deletes`, then `inserts`), in functions of their own: their instruction counts
//! divided by N (or N/10 changes each) are per operation. Then N/10 other routes deleted and
//! inserted, each change timed (their median and p99.9; see `timed_updates` for a list of the
//! slowest), and 64 routes' changes over and over (`warm`: their cache lines in the caches).
//! Without valgrind it prints the wall-clock time of each, how many route classes the FIB
//! ids name, and the bytes of the FIB's structure.
//!
//! `FIBRE_PROFILE_BEST_OF=K` times each of those other routes' changes K times in a row instead
//! and keeps each change's fastest: the tail of the changes' own cost, apart from the machine's
//! stalls (see `best_of`).
//!
//! `FIBRE_PROFILE_REPEAT=PREFIX` (as printed, `2001:7c0::/32`) loads the view, then deletes and
//! adds back that one route 51 times and prints the median of each, the first pair untimed: the
//! cost of one prefix's change, say one covering many others, with the previous change's blocks
//! given back in it (callgrind: `--toggle-collect='router_profile::repeat_*'`, 102 changes).
use fibre::fib::FibFamily;
use fibre::{RouteQuery, Router};
use fibre_bench::scenario::{with_next_hops, workspace_views, BenchRoute, StudyFamily};
use fibre_bench::updates::{add, del, loaded_router, spec};
use fibre_bench::workload;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

#[inline(never)]
fn load<A: StudyFamily>(routes: &[BenchRoute<A::K>]) -> (Router, u32, f64) {
    loaded_router::<A>(routes).expect("router loads")
}

#[inline(never)]
fn gets<A: StudyFamily>(router: &Router, queries: &[RouteQuery<A>]) -> usize {
    queries
        .iter()
        .filter(|q| router.route_get(black_box(q)).is_ok())
        .count()
}

#[inline(never)]
fn updates<A: StudyFamily>(router: &mut Router, routes: &[&BenchRoute<A::K>], dev: u32) {
    deletes::<A>(router, routes, dev);
    inserts::<A>(router, routes, dev);
}

/// One route deleted, as a change set of its own.
#[inline(always)]
fn delete_one<A: StudyFamily>(router: &mut Router, r: &BenchRoute<A::K>, dev: u32) {
    router.change(&del(&spec::<A>(r, dev))).expect("delete");
}

/// One route added back, as a change set of its own.
#[inline(always)]
fn insert_one<A: StudyFamily>(router: &mut Router, r: &BenchRoute<A::K>, dev: u32) {
    router.change(&add(spec::<A>(r, dev))).expect("insert");
}

/// The changes of `updates`, on routes whose cache lines are in the caches (callgrind:
/// `--toggle-collect='router_profile::warm*'`).
#[inline(never)]
fn warm<A: StudyFamily>(router: &mut Router, routes: &[&BenchRoute<A::K>], dev: u32) {
    // Loops of its own, so that `deletes` and `inserts` count cold changes only.
    routes.iter().for_each(|r| delete_one::<A>(router, r, dev));
    routes.iter().for_each(|r| insert_one::<A>(router, r, dev));
}

// `FIBRE_PROFILE_REPEAT`'s changes, in functions of their own for callgrind's toggle.
#[inline(never)]
fn repeat_del<A: StudyFamily>(router: &mut Router, r: &BenchRoute<A::K>, dev: u32) {
    delete_one::<A>(router, r, dev);
}

#[inline(never)]
fn repeat_add<A: StudyFamily>(router: &mut Router, r: &BenchRoute<A::K>, dev: u32) {
    insert_one::<A>(router, r, dev);
}

/// The value at quantile `q` of `sorted` by nearest rank (0 when empty).
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = (sorted.len() as f64 * q).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied().unwrap_or(0.0)
}

/// `FIBRE_PROFILE_REPEAT`'s changes of one route (see the module docs).
fn repeat<A: StudyFamily>(router: &mut Router, routes: &[BenchRoute<A::K>], dev: u32, which: &str) {
    let shown = |r: &BenchRoute<A::K>| format!("{:?}/{}", A::from_bits(r.addr), r.len);
    let Some(r) = routes.iter().find(|r| shown(r) == which) else {
        eprintln!("{which}: not a route of the view");
        std::process::exit(2);
    };
    // The first changes after the load do one-off work (a delete of 2001:7c0::/32 took about a
    // millisecond more): not timed.
    repeat_del::<A>(router, r, dev);
    repeat_add::<A>(router, r, dev);
    let (mut del_ns, mut add_ns) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        let t = Instant::now();
        repeat_del::<A>(router, r, dev);
        del_ns.push(t.elapsed().as_nanos() as f64);
        let t = Instant::now();
        repeat_add::<A>(router, r, dev);
        add_ns.push(t.elapsed().as_nanos() as f64);
    }
    del_ns.sort_by(f64::total_cmp);
    add_ns.sort_by(f64::total_cmp);
    println!(
        "{which}: delete {:.0} ns, add {:.0} ns (medians of 50)",
        nearest_rank(&del_ns, 0.5),
        nearest_rank(&add_ns, 0.5)
    );
}

/// `FIBRE_PROFILE_BEST_OF=K`: the timed routes' changes (see `timed_updates`), each route
/// deleted and added back K times in a row, and each change's fastest time kept. A stall of the
/// machine rarely hits all K, so the tail left is the changes' own cost (a lower bound: the
/// repeats find the route's cache lines warm). Prints the median, p99, p99.9 and slowest of
/// those times, then the 20 routes whose delete and add took longest.
fn best_of<A: StudyFamily>(router: &mut Router, routes: &[&BenchRoute<A::K>], dev: u32, k: usize) {
    let mut per_route: Vec<(f64, f64, &BenchRoute<A::K>)> = Vec::with_capacity(routes.len());
    for &r in routes {
        let (mut del_ns, mut add_ns) = (f64::MAX, f64::MAX);
        for _ in 0..k {
            let t = Instant::now();
            delete_one::<A>(router, r, dev);
            del_ns = del_ns.min(t.elapsed().as_nanos() as f64);
            let t = Instant::now();
            insert_one::<A>(router, r, dev);
            add_ns = add_ns.min(t.elapsed().as_nanos() as f64);
        }
        per_route.push((del_ns, add_ns, r));
    }
    let mut all: Vec<f64> = per_route.iter().flat_map(|&(d, a, _)| [d, a]).collect();
    all.sort_by(f64::total_cmp);
    println!(
        "{}: {} changes, each the fastest of {k}: median {:.0} ns, p99 {:.0}, p99.9 {:.0}, \
         slowest {:.0}",
        A::LABEL,
        all.len(),
        nearest_rank(&all, 0.5),
        nearest_rank(&all, 0.99),
        nearest_rank(&all, 0.999),
        all.last().copied().unwrap_or(0.0),
    );
    per_route.sort_by(|x, y| (y.0 + y.1).total_cmp(&(x.0 + x.1)));
    for (del_ns, add_ns, r) in per_route.iter().take(20) {
        let p = format!("{:?}/{}", A::from_bits(r.addr), r.len);
        println!("{del_ns:>9.0} ns delete {add_ns:>9.0} ns add {p}");
    }
}

#[inline(never)]
fn deletes<A: StudyFamily>(router: &mut Router, routes: &[&BenchRoute<A::K>], dev: u32) {
    routes.iter().for_each(|r| delete_one::<A>(router, r, dev));
}

#[inline(never)]
fn inserts<A: StudyFamily>(router: &mut Router, routes: &[&BenchRoute<A::K>], dev: u32) {
    routes.iter().for_each(|r| insert_one::<A>(router, r, dev));
}

/// The thread's minor page faults so far.
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` writes the struct it is given, which is zeroed and ours.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    u.ru_minflt
}

/// What the timed changes took.
struct Timed {
    median_ns: f64,
    p999_ns: f64,
    /// The share of the total taken by prefixes at most [`FibFamily::DP_BITS`] long.
    short_share: f64,
}

/// Deletes then inserts `routes`, each change timed. With `FIBRE_PROFILE_SLOW_US=N` in the
/// environment, lists the changes slower than N µs on stderr, slowest first, with the time
/// into the run modulo `FIBRE_PROFILE_PERIOD_US` (4,000 if unset: the machine of issue 15's
/// eleventh round stalled every 4 ms, whatever ran, and the changes it slowed shared a phase),
/// the change before (a change that retires many blocks leaves their reclamation to the
/// next) and the page faults the change took (a fault in memory advised huge pages zeroes
/// 2 MiB: tens of µs).
fn timed_updates<A: StudyFamily>(
    router: &mut Router,
    routes: &[&BenchRoute<A::K>],
    dev: u32,
) -> Timed {
    let slow_ns = std::env::var("FIBRE_PROFILE_SLOW_US")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map(|us| us * 1e3);
    let period_us = std::env::var("FIBRE_PROFILE_PERIOD_US")
        .ok()
        .and_then(|v| v.parse::<u128>().ok())
        .filter(|&p| p > 0)
        .unwrap_or(4000);
    let mut times = Vec::with_capacity(2 * routes.len());
    let (mut short, mut total) = (0.0, 0.0);
    let mut slow: Vec<(f64, String)> = Vec::new();
    let start = Instant::now();
    for delete in [true, false] {
        for r in routes {
            let s = spec::<A>(r, dev);
            let c = if delete { del(&s) } else { add(s) };
            let faults_before = slow_ns.map(|_| minor_faults());
            let t = Instant::now();
            router.change(&c).expect("change");
            let ns = t.elapsed().as_nanos() as f64;
            let faults = faults_before.map_or(0, |f| minor_faults() - f);
            if slow_ns.is_some_and(|limit| ns > limit) {
                let before = times.last().copied().unwrap_or(0.0);
                let phase = t.duration_since(start).as_micros() % period_us;
                let (what, addr) = (if delete { "del" } else { "add" }, A::from_bits(r.addr));
                let line = format!(
                    "{what} {addr:?}/{} at {phase} µs of {period_us}, {before:.0} ns before, \
                     {faults} page faults",
                    r.len
                );
                slow.push((ns, line));
            }
            times.push(ns);
            total += ns;
            if u32::from(r.len) <= <A as FibFamily>::DP_BITS {
                short += ns;
            }
        }
    }
    slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ns, line) in &slow {
        eprintln!("{ns:>9.0} ns {line}");
    }
    times.sort_by(f64::total_cmp);
    // With under 1,000 changes, p99.9 is the slowest.
    Timed {
        median_ns: nearest_rank(&times, 0.5),
        p999_ns: nearest_rank(&times, 0.999),
        short_share: short / total.max(1.0),
    }
}

fn run<A: StudyFamily>(prefixes: &[(A::K, u8)], n: usize) {
    let routes: Vec<BenchRoute<A::K>> = with_next_hops(prefixes);
    // The load's own time: one change set of every route (as `fibre bench` reports it).
    let (mut router, dev, load_s) = load::<A>(&routes);
    if let Ok(which) = std::env::var("FIBRE_PROFILE_REPEAT") {
        return repeat::<A>(&mut router, &routes, dev, &which);
    }
    let keys = workload::inside_prefixes::<A>(&routes, n, 7);
    let queries: Vec<RouteQuery<A>> = keys
        .iter()
        .map(|&k| RouteQuery::to(A::from_bits(k)))
        .collect();
    let t = Instant::now();
    let ok = gets::<A>(&router, &queries);
    let get_ns = t.elapsed().as_nanos() as f64 / queries.len().max(1) as f64;
    let step = (routes.len() / (n / 10).max(1)).max(1);
    let chosen: Vec<&BenchRoute<A::K>> = routes.iter().step_by(step).take(n / 10).collect();
    let t = Instant::now();
    updates::<A>(&mut router, &chosen, dev);
    let change_ns = t.elapsed().as_nanos() as f64 / (2 * chosen.len()).max(1) as f64;
    // Other routes, each change timed: the median, and the share of the time the changes of
    // prefixes at most the FIB's direct-pointing step long take (few and costly).
    let others: Vec<&BenchRoute<A::K>> = routes
        .iter()
        .skip(step / 2)
        .step_by(step)
        .take(n / 10)
        .collect();
    if let Some(k) = std::env::var("FIBRE_PROFILE_BEST_OF")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&k| k > 0)
    {
        return best_of::<A>(&mut router, &others, dev, k);
    }
    let timed = timed_updates::<A>(&mut router, &others, dev);
    // The same changes on 64 of those routes, over and over: what a change costs once its
    // cache lines are in the caches (the gap to `change_ns` is the misses of a cold route).
    let few = &chosen[..chosen.len().min(64)];
    warm::<A>(&mut router, few, dev);
    let t = Instant::now();
    for _ in 0..50 {
        warm::<A>(&mut router, few, dev);
    }
    let warm_ns = t.elapsed().as_nanos() as f64 / (100 * few.len()).max(1) as f64;
    let st = router.family::<A>();
    let main = st
        .merged_fib()
        .or_else(|| st.table_fib(fibre::route::TABLE_MAIN));
    let classes = main.map_or(0, |f| f.route_classes());
    // The encoding lookups read (four-byte ids: the router's), as the bench's `memory_structure`.
    let fib_bytes = main.map_or(0, |f| f.fib().stats().bytes);
    println!(
        "{}: {} routes loaded in {load_s:.3} s; {} route gets ({ok} answered), {get_ns:.0} ns \
         each; {} changes, {change_ns:.0} ns each ({warm_ns:.0} warm); other routes' changes \
         timed one by one: median {:.0}, p99.9 {:.0}, {:.0}% of the time in prefixes at most the \
         direct-pointing step; {classes} route classes; its FIB's structure {fib_bytes} bytes",
        A::LABEL,
        routes.len(),
        queries.len(),
        2 * chosen.len(),
        timed.median_ns,
        timed.p999_ns,
        timed.short_share * 100.0,
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let family = args.next().unwrap_or_else(|| "4".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let views = workspace_views();
    match family.as_str() {
        "6" => run::<Ipv6Addr>(&views.v6.prefixes, n),
        _ => run::<Ipv4Addr>(&views.v4.prefixes, n),
    }
}
