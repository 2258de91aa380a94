//! fibre's compiled FIB as a lookup engine: one per registered algorithm
//! ([`fibre::fib::for_each_algorithm`]), the bench's next-hop indexes as the FIB's ids.
use super::{Engine, Shape, MISS};
use crate::scenario::{route_prefix, BenchRoute, StudyFamily};
use fibre::fib::{Fib, LpmAlgorithm, LpmView, NO_ROUTE};
use std::sync::Mutex;

pub struct FibreFib<A: StudyFamily, L: LpmAlgorithm<A>> {
    name: &'static str,
    /// Lookups read the version its writer holds (as a data-plane thread holds one between
    /// quiescent points): no load through the shared cell.
    fib: Fib<A, L>,
}

/// `fibre-fib-<algorithm>`, made once per algorithm (the study's engine names are static, and
/// engines are made anew at every point).
pub(crate) fn engine_name(algorithm: &'static str) -> &'static str {
    static NAMES: Mutex<Vec<(&str, &str)>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().expect("no panic while held");
    if let Some(&(_, name)) = names.iter().find(|(a, _)| *a == algorithm) {
        return name;
    }
    let name: &'static str = Box::leak(format!("fibre-fib-{algorithm}").into_boxed_str());
    names.push((algorithm, name));
    name
}

impl<A: StudyFamily, L: LpmAlgorithm<A>> FibreFib<A, L> {
    pub fn new() -> Self {
        FibreFib {
            name: engine_name(L::NAME),
            fib: Fib::new(),
        }
    }
}

impl<A: StudyFamily, L: LpmAlgorithm<A>> Default for FibreFib<A, L> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn answer(id: u32) -> u32 {
    if id == NO_ROUTE {
        MISS
    } else {
        id
    }
}

impl<A: StudyFamily, L: LpmAlgorithm<A>> Engine<A> for FibreFib<A, L> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn note(&self) -> &'static str {
        "fibre::fib compiled FIB (next-hop index as id); bulk = lookup_bulk on the path chosen for the family and CPU (meta: fibre lookup path)"
    }
    fn build(&mut self, routes: &[BenchRoute<A::K>]) {
        self.fib = Fib::from_routes(routes.iter().map(|r| (route_prefix::<A>(r), r.nh as u32)))
            .expect("next-hop indexes are small");
    }
    #[inline(always)]
    fn lookup(&self, addr: A::K) -> u32 {
        answer(self.fib.view().lookup(addr))
    }
    fn has_bulk(&self) -> bool {
        true
    }
    fn lookup_bulk(&self, addrs: &[A::K], out: &mut [u32]) {
        self.fib.view().lookup_bulk(addrs, out);
        for o in out.iter_mut() {
            *o = answer(*o);
        }
    }
    fn shape(&self) -> Option<Shape> {
        let s = self.fib.stats();
        Some(Shape {
            // Direct pointing (root and chunk) counts as one level, then the nodes.
            depth_max: s.max_depth as f64 + 1.0,
            depth_mean: s.mean_depth + 1.0,
            nodes: s.nodes as f64,
        })
    }
    fn regions(&self) -> Vec<(usize, usize)> {
        self.fib.regions()
    }
    fn structure_bytes(&self) -> Option<usize> {
        Some(self.fib.stats().bytes)
    }
}
