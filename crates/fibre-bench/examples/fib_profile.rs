//! The FIB's lookup hot path, for instruction-level profilers (this VM exposes no hardware
//! counters to `perf stat`, so instruction counts come from callgrind):
//!
//! ```sh
//! cargo build --release -p fibre-bench --example fib_profile
//! valgrind --tool=callgrind --callgrind-out-file=target/fib.callgrind \
//!     target/release/examples/fib_profile 4 1000000
//! callgrind_annotate --inclusive=yes target/fib.callgrind | grep fib_profile::
//! ```
//!
//! Builds the FIB of the full view (the shared real table when present, else synthetic) of
//! family 4 or 6, then does N single and N bulk lookups of W1 addresses (inside random prefixes)
//! in functions of their own, so their instruction counts divided by N are per lookup. A third
//! argument `time` also prints wall-clock ns per lookup (single, bulk, dependent latency), and
//! bulk lookups on every path the CPU has (`LookupPath`) over W1, W2 (uniform addresses) and
//! W1 sorted (the same keys in order: the path's cost with its reads mostly in the caches).
use fibre::addr::Bits;
use fibre::fib::{Fib, LookupPath, PoptrieView};
use fibre::Prefix;
use fibre_bench::scenario::{with_next_hops, workspace_views, BenchRoute, StudyFamily};
use fibre_bench::workload;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};

#[inline(never)]
fn single<A: StudyFamily>(view: &PoptrieView<A>, keys: &[A::K]) -> u32 {
    let mut acc = 0u32;
    for &k in keys {
        acc = acc.wrapping_add(view.lookup(k));
    }
    acc
}

#[inline(never)]
fn bulk<A: StudyFamily>(view: &PoptrieView<A>, keys: &[A::K], out: &mut [u32]) -> u32 {
    view.lookup_bulk(keys, out);
    out.iter().fold(0u32, |a, &x| a.wrapping_add(x))
}

/// Wall-clock ns per lookup, the median of 9 rounds of each kind (`time` mode: the quick loop
/// for work on the encoding; `fibre bench` gives the figures beside the peers).
fn time_lookups<A: StudyFamily>(fib: &Fib<A>, keys: &[A::K], out: &mut [u32]) {
    let view = fib.view();
    let ns = |f: &mut dyn FnMut() -> u32| {
        let mut t: Vec<f64> = (0..9)
            .map(|_| {
                let s = std::time::Instant::now();
                black_box(f());
                s.elapsed().as_nanos() as f64 / keys.len() as f64
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[4]
    };
    let single_ns = ns(&mut || single::<A>(view, black_box(keys)));
    let bulk_ns = ns(&mut || bulk::<A>(view, black_box(keys), out));
    // Every bulk path the CPU has, on W1 and on W2 (uniform addresses), side by side.
    let w2 = workload::uniform::<A>(keys.len(), 7);
    // W1's keys in order, so that neighbours share their cache lines (and the lanes' branches
    // and masks repeat): a path's cost with its reads mostly in the caches, near the floor its
    // instructions set. Not measured as such: this VM shows no cache counters.
    let mut sorted = keys.to_vec();
    sorted.sort();
    for path in LookupPath::available() {
        let on = |ks: &[A::K], out: &mut [u32]| {
            view.lookup_bulk_on(path, ks, out);
            out.iter().fold(0u32, |a, &x| a.wrapping_add(x))
        };
        let w1_ns = ns(&mut || on(black_box(keys), out));
        let w2_ns = ns(&mut || on(black_box(&w2), out));
        let sorted_ns = ns(&mut || on(black_box(&sorted), out));
        println!("bulk on {path}: W1 {w1_ns:.2} ns, W2 {w2_ns:.2} ns, W1 sorted {sorted_ns:.2} ns");
    }
    // Each key depends on the previous answer through an opaque zero, as `fibre bench` chains
    // them: a dependence the compiler cannot fold into a branch the CPU would predict (`prev >>
    // 24` here measured 20 ns against the chain's 75-87, the walks overlapping). Into the top
    // bits, as the bench does (for IPv4 the shift is 0): mixed into an IPv6 key's low bits,
    // the walk down to a /48 could start before the previous answer came (28.8-30.3 ns there,
    // 44-50 in the top bits over the same session, the bench 43-54).
    let zero: A::K = black_box(A::K::from_u64(0));
    let shift = A::WIDTH as u32 - 32;
    let latency_ns = ns(&mut || {
        let mut prev = 0u32;
        for &k in keys {
            prev = view.lookup(k ^ ((A::K::from_u64(prev as u64) & zero) << shift));
        }
        prev
    });
    let huge = fibre_bench::host::huge_page_bytes(&fib.regions())
        .map_or("unknown".into(), |(h, t)| format!("{h} of {t} bytes"));
    println!("on huge pages: {huge}; {:?}", fib.stats());
    println!("ns per lookup: single {single_ns:.2}, bulk {bulk_ns:.2}, latency {latency_ns:.2}");
}

fn run<A: StudyFamily>(prefixes: &[(A::K, u8)], n: usize, timing: bool) {
    let routes: Vec<BenchRoute<A::K>> = with_next_hops(prefixes);
    let fib: Fib<A> = Fib::from_routes(
        routes
            .iter()
            .map(|r| (Prefix::new(A::from_bits(r.addr), r.len), r.nh as u32)),
    )
    .expect("next-hop indexes are small");
    let keys = workload::inside_prefixes::<A>(&routes, n, 7);
    let view = fib.view();
    let mut out = vec![0u32; keys.len()];
    let a = single::<A>(view, black_box(&keys));
    let b = bulk::<A>(view, black_box(&keys), &mut out);
    assert_eq!(a, b, "single and bulk lookups agree");
    if timing {
        time_lookups::<A>(&fib, &keys, &mut out);
    }
    println!(
        "{}: {} routes, {} lookups of each kind, checksum {a}",
        A::LABEL,
        routes.len(),
        keys.len()
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let family = args.next().unwrap_or_else(|| "4".into());
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let timing = args.next().as_deref() == Some("time");
    let views = workspace_views();
    match family.as_str() {
        "4" => run::<Ipv4Addr>(&views.v4.prefixes, n, timing),
        "6" => run::<Ipv6Addr>(&views.v6.prefixes, n, timing),
        f => panic!("family 4 or 6, not {f}"),
    }
}
