//! What a commit leaves of a load's run in the RIB's index (see [`crate::prefix_map`]).
use super::*;
use crate::prefix::Prefix;
use crate::route::{RouteSpec, RouteType, TABLE_MAIN};
use std::net::Ipv4Addr;

/// A blackhole route to the `i`th /24 of 10.0.0.0/8, in prefix order.
fn add(i: u32) -> Change {
    let dst = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24);
    let mut spec = RouteSpec::new(dst, Vec::new());
    spec.kind = RouteType::Blackhole;
    FamilyChange::Route(spec, InsertMode::Add).into()
}

fn run_len(r: &Router) -> usize {
    r.v4.tables[&TABLE_MAIN].run_len()
}

/// Routes added in prefix order inside one change set make a run; the commit settles it. Added
/// one change set each, they never make one: a run kept across commits would grow a key a
/// commit, and a later single change would merge all of it.
#[test]
fn no_run_outlives_its_change_set() {
    let mut r = Router::new();
    r.begin();
    for i in 0..40 {
        r.change(&add(i)).unwrap();
    }
    assert_eq!(run_len(&r), 40 - 16, "a load in order makes a run");
    r.commit();
    assert_eq!(run_len(&r), 0, "the commit settles it");
    for i in 40..100 {
        r.change(&add(i)).unwrap();
        assert_eq!(run_len(&r), 0, "change {i}, a set of its own");
    }
    assert_eq!(r.v4.tables[&TABLE_MAIN].prefixes(), 100);
}
