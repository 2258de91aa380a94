//! The engines the study compares.
//!
//! Two kinds: [`Engine`]s linked into this process (fibre's own structures and Rust peer
//! crates), registered in [`in_process`]; and peer harnesses, separate programs that follow
//! `bench/harness/PROTOCOL.md` ([`harness`]). Both answer with next-hop indexes, [`MISS`] when no
//! route matches.
use crate::scenario::{BenchRoute, StudyFamily};
use std::hint::black_box;
use std::time::Instant;

pub mod fibre_fib;
pub mod fibre_rib;
pub mod harness;
pub mod peers;

/// The answer for "no route".
pub const MISS: u32 = u32::MAX;

/// Depth and size of a tree-shaped engine, as the study reports them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub depth_max: f64,
    pub depth_mean: f64,
    pub nodes: f64,
}

/// A longest-prefix-match engine linked into the bench.
///
/// The timing loops are default methods so that each engine gets its own monomorphised copy in
/// which `lookup` is a static, inlinable call: only one virtual call per timed loop.
pub trait Engine<A: StudyFamily>: Send {
    fn name(&self) -> &'static str;
    /// Inserts every route into the (empty) engine.
    fn build(&mut self, routes: &[BenchRoute<A::K>]);
    /// The next-hop index for `addr`, or [`MISS`].
    fn lookup(&self, addr: A::K) -> u32;
    /// Whether [`Engine::lookup_bulk`] is the engine's own batch API rather than the loop below.
    fn has_bulk(&self) -> bool {
        false
    }
    fn lookup_bulk(&self, addrs: &[A::K], out: &mut [u32]) {
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.lookup(*a);
        }
    }
    fn shape(&self) -> Option<Shape> {
        None
    }
    /// Bytes of the structure lookups read, when the engine can tell them apart from the rest
    /// of what its build allocated (a FIB's copy of its route set, spare arena room).
    fn structure_bytes(&self) -> Option<usize> {
        None
    }
    /// The address ranges (start, bytes) of the large arrays lookups read, to tell which pages
    /// back them.
    fn regions(&self) -> Vec<(usize, usize)> {
        Vec::new()
    }
    /// A note for the report (what the engine is, which API is timed).
    fn note(&self) -> &'static str {
        ""
    }

    /// ns per lookup: independent single lookups over `addrs`.
    fn time_lookup(&self, addrs: &[A::K]) -> f64 {
        let start = Instant::now();
        let mut sink = 0u32;
        for &a in addrs {
            sink = sink.wrapping_add(self.lookup(black_box(a)));
        }
        black_box(sink);
        start.elapsed().as_nanos() as f64 / addrs.len().max(1) as f64
    }
    /// ns per lookup through the bulk API, in batches of `bulk`.
    fn time_lookup_bulk(&self, addrs: &[A::K], bulk: usize) -> f64 {
        let mut out = vec![0u32; bulk];
        let start = Instant::now();
        let mut sink = 0u32;
        for chunk in addrs.chunks(bulk) {
            self.lookup_bulk(black_box(chunk), &mut out[..chunk.len()]);
            sink = sink.wrapping_add(out[0]);
        }
        black_box(sink);
        start.elapsed().as_nanos() as f64 / addrs.len().max(1) as f64
    }
    /// ns per lookup of a dependent chain: each address waits for the previous answer
    /// (`addr ^ ((nh & zero) << (width - 32))` with an opaque zero), which exposes latency
    /// instead of throughput. The answer goes into the top bits, which every lookup reads first:
    /// mixed into the low half of an IPv6 key, a /48 lookup could start before it arrived.
    fn time_latency(&self, addrs: &[A::K]) -> f64 {
        let zero: A::K = black_box(A::K::from_u64(0));
        let shift = A::WIDTH as u32 - 32;
        let start = Instant::now();
        let mut nh = 0u32;
        for &a in addrs {
            nh = self.lookup(a ^ ((A::K::from_u64(nh as u64) & zero) << shift));
        }
        black_box(nh);
        start.elapsed().as_nanos() as f64 / addrs.len().max(1) as f64
    }
}

use fibre::addr::Bits;

/// Every in-process engine, in report order. The one registration point: the study, the
/// agreement check and the tests iterate over this list.
pub fn in_process<A: StudyFamily>() -> Vec<Box<dyn Engine<A>>> {
    struct Fibs<A: StudyFamily>(Vec<Box<dyn Engine<A>>>);
    impl<A: StudyFamily> fibre::fib::AlgorithmVisitor<A> for Fibs<A> {
        fn visit<L: fibre::fib::LpmAlgorithm<A>>(&mut self) {
            self.0.push(Box::new(fibre_fib::FibreFib::<A, L>::new()));
        }
    }
    let mut engines: Vec<Box<dyn Engine<A>>> = vec![Box::new(fibre_rib::FibreRib::<A>::new())];
    // Every FIB algorithm fibre registers.
    let mut fibs = Fibs(Vec::new());
    fibre::fib::for_each_algorithm::<A>(&mut fibs);
    engines.extend(fibs.0);
    engines.push(Box::new(peers::PrefixTrieEngine::<A>::new()));
    engines.push(Box::new(peers::PoptrieEngine::<A>::new()));
    engines
}

/// The engine every other is checked against: fibre's reference FIB algorithm, longest-prefix
/// match by its definition ([`fibre::fib::Reference`]).
pub const REFERENCE: &str = "fibre-fib-reference";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{generate, synthetic_view, FullViews, ScenarioKind};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn agree<A: StudyFamily + crate::scenario::PickView>(views: &FullViews) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
        for kind in [
            ScenarioKind::FullView,
            ScenarioKind::Spread { density: 0.5 },
            ScenarioKind::Random128,
        ] {
            let Some((routes, range)) = generate::<A>(&kind, 2000, views, 5) else {
                continue;
            };
            let mut reference = fibre_fib::FibreFib::<A, fibre::fib::Reference<A>>::new();
            assert_eq!(reference.name(), REFERENCE);
            reference.build(&routes);
            for mut e in in_process::<A>() {
                e.build(&routes);
                let mut probes: Vec<A::K> = (0..2000)
                    .map(|_| A::K::random_in(&mut rng, range.0, range.1))
                    .collect();
                // addresses inside routes, so hits are probed too
                probes.extend(
                    routes
                        .iter()
                        .take(500)
                        .map(|r| r.addr | (A::K::from_u64(rng.gen::<u64>()) & !A::K::mask(r.len))),
                );
                let mut bulk = vec![0; probes.len()];
                e.lookup_bulk(&probes, &mut bulk);
                for (i, &p) in probes.iter().enumerate() {
                    let want = reference.lookup(p);
                    assert_eq!(e.lookup(p), want, "{} {kind:?} {p:?}", e.name());
                    assert_eq!(bulk[i], want, "{} bulk", e.name());
                }
            }
        }
    }

    use crate::key::Key;

    #[test]
    fn every_engine_agrees_with_the_reference() {
        let views = FullViews {
            v4: synthetic_view::<Ipv4Addr>(5000, 1),
            v6: synthetic_view::<Ipv6Addr>(5000, 1),
        };
        agree::<Ipv4Addr>(&views);
        agree::<Ipv6Addr>(&views);
    }
}
