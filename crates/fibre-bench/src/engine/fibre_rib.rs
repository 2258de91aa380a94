//! fibre's RIB as a lookup engine: the authoritative table with the kernel's semantics.
//!
//! The reference beside the compiled FIB (`fibre-fib-poptrie`, and the router); timing it
//! shows what the full-semantics path costs: route lists, selection, next-hop resolution.
use super::{Engine, MISS};
use crate::scenario::{route_prefix, BenchRoute, StudyFamily, NEXT_HOPS};
use fibre::nexthop::{NextHop, NhTable};
use fibre::rib::{AllUp, InsertMode, TableLookup};
use fibre::route::TABLE_MAIN;
use fibre::{Flow, Rib, RouteSpec};

pub const NAME: &str = "fibre-rib";

/// Interface index the bench's next hops point at (any index: every link is up).
const DEV: u32 = 2;

pub struct FibreRib<A: StudyFamily> {
    rib: Rib<A>,
    nhs: NhTable<A>,
    /// Bench next-hop index by `NhId`.
    nh_index: Vec<u32>,
    hops: Vec<Vec<NextHop<A>>>,
}

impl<A: StudyFamily> FibreRib<A> {
    pub fn new() -> Self {
        // The kernel harness's gateways (PROTOCOL.md), so the tables are the same.
        let hops = (0..NEXT_HOPS)
            .map(|k| {
                let gw = if A::WIDTH == 32 {
                    format!("198.18.0.{}", 10 + k)
                } else {
                    format!("fd00:fb::{:x}", 10 + k)
                };
                let gw: A = gw.parse().ok().expect("gateway literal");
                vec![NextHop::via(gw, DEV)]
            })
            .collect();
        FibreRib {
            rib: Rib::new(TABLE_MAIN),
            nhs: NhTable::new(),
            nh_index: Vec::new(),
            hops,
        }
    }
}

impl<A: StudyFamily> Default for FibreRib<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: StudyFamily> Engine<A> for FibreRib<A> {
    fn name(&self) -> &'static str {
        NAME
    }
    fn note(&self) -> &'static str {
        "fibre::Rib::lookup, table main, full kernel selection"
    }

    fn build(&mut self, routes: &[BenchRoute<A::K>]) {
        let mut saved = Vec::new();
        for r in routes {
            let spec = RouteSpec::new(route_prefix::<A>(r), self.hops[r.nh as usize].clone());
            let id = self.nhs.intern(&spec.hops);
            let slot = id.0 as usize;
            if self.nh_index.len() <= slot {
                self.nh_index.resize(slot + 1, MISS);
            }
            self.nh_index[slot] = r.nh as u32;
            // Generated tables hold each prefix once: an insert cannot fail.
            let displaced = self
                .rib
                .insert(
                    spec.with_hops(id),
                    InsertMode::Add,
                    &mut self.nhs,
                    &mut saved,
                )
                .expect("bench routes are unique");
            debug_assert!(displaced.is_empty());
            // The journal is for rolling back change sets; the bench never rolls back.
            saved.clear();
        }
        // As a router's commit does after a load.
        self.rib.pack_index();
    }

    #[inline]
    fn lookup(&self, addr: A::K) -> u32 {
        match self
            .rib
            .lookup(&Flow::to(A::from_bits(addr)), &self.nhs, &AllUp)
        {
            TableLookup::Match { route, .. } => self.nh_index[route.hops.0 as usize],
            _ => MISS,
        }
    }

    // No `shape`: the RIB's destinations are a B-tree of packed prefixes, not a tree whose
    // depth the study's trie figures describe (the FIB's Poptrie reports one).
}
