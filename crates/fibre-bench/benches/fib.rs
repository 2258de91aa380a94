//! Criterion benchmarks of the compiled FIB on the full view: single, bulk and dependent-chain
//! lookups, and one change (delete or insert, one publication) without concurrent readers.
//! `fibre bench` measures the same beside the peers and the kernel; this is the quick loop for
//! working on the encoding (`cargo bench -p fibre-bench --bench fib`, or under `perf record`).
//!
//! The table is the shared real one when `../shared/data` is there, else a synthetic view with
//! its per-length counts. Under `cargo test` (no `--bench`) a 20,000-route synthetic view keeps
//! the run short.
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use fibre::addr::Bits;
use fibre::fib::Fib;
use fibre::Prefix;
use fibre_bench::scenario::{
    load_table, synthetic_view, with_next_hops, BenchRoute, FullView, StudyFamily,
};
use fibre_bench::updates::{add, del, loaded_router, spec};
use fibre_bench::workload;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

fn view<A: StudyFamily>(
    pick: fn(&fibre_bench::scenario::FullViews) -> FullView<A::K>,
) -> Vec<BenchRoute<A::K>> {
    let benching = std::env::args().any(|a| a == "--bench");
    let table = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../")
        .join(fibre_bench::study::SHARED_TABLE);
    let v = match (benching, table.exists()) {
        (true, true) => pick(&load_table(&table).expect("shared table")),
        (true, false) => synthetic_view::<A>(1_000_000, 1),
        (false, _) => synthetic_view::<A>(20_000, 1),
    };
    with_next_hops(&v.prefixes)
}

fn bench_family<A: StudyFamily>(c: &mut Criterion, routes: &[BenchRoute<A::K>]) {
    let prefix = |r: &BenchRoute<A::K>| Prefix::new(A::from_bits(r.addr), r.len);
    let mut fib: Fib<A> = Fib::from_routes(routes.iter().map(|r| (prefix(r), r.nh as u32)))
        .expect("next-hop indexes are small");
    let keys = workload::inside_prefixes::<A>(routes, 1 << 16, 7);
    let mut g = c.benchmark_group(format!("fib-{}", A::LABEL));
    g.throughput(Throughput::Elements(keys.len() as u64));
    let view = fib.view();
    g.bench_function("w1-single", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &k in &keys {
                acc = acc.wrapping_add(view.lookup(k));
            }
            acc
        })
    });
    let mut out = vec![0u32; keys.len()];
    g.bench_function("w1-bulk", |b| {
        b.iter(|| view.lookup_bulk(black_box(&keys), &mut out))
    });
    // W2: uniform addresses, most ending at the root or a chunk entry.
    let w2 = workload::uniform::<A>(keys.len(), 7);
    g.bench_function("w2-bulk", |b| {
        b.iter(|| view.lookup_bulk(black_box(&w2), &mut out))
    });
    g.bench_function("w1-latency", |b| {
        b.iter(|| {
            // Each address depends on the previous answer (ids are below 2^24, so the address is
            // unchanged; a miss's NO_ROUTE flips low bits only): one lookup at a time.
            let mut prev = 0u32;
            for &k in &keys {
                prev = view.lookup(k ^ A::K::from_u64((prev >> 24) as u64));
            }
            prev
        })
    });
    // Two changes, two publications per iteration.
    g.throughput(Throughput::Elements(2));
    let mut i = 0usize;
    g.bench_function("delete-insert", |b| {
        b.iter_batched(
            || {
                i = (i * 7919 + 13) % routes.len();
                routes[i]
            },
            |r| {
                fib.set(prefix(&r), None)
                    .expect("next-hop indexes are small");
                fib.publish();
                fib.set(prefix(&r), Some(r.nh as u32))
                    .expect("next-hop indexes are small");
                fib.publish();
            },
            BatchSize::SmallInput,
        )
    });
    drop(fib);
    // The same through the router: RIB with the kernel's semantics, then the FIBs following.
    let (mut router, dev, _) = loaded_router::<A>(routes).expect("router loads");
    g.bench_function("router-delete-insert", |b| {
        b.iter_batched(
            || {
                i = (i * 7919 + 13) % routes.len();
                spec::<A>(&routes[i], dev)
            },
            |s| {
                router.change(&del(&s)).expect("delete");
                router.change(&add(s)).expect("insert");
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let v4 = view::<Ipv4Addr>(|v| v.v4.clone());
    bench_family::<Ipv4Addr>(c, &v4);
    let v6 = view::<Ipv6Addr>(|v| v.v6.clone());
    bench_family::<Ipv6Addr>(c, &v6);
}

criterion_group!(fib, benches);
criterion_main!(fib);
