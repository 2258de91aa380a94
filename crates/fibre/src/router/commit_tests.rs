//! What a commit leaves of a load's run in the RIB's index (see [`crate::prefix_map`]).
use super::*;
use crate::prefix::Prefix;
use crate::route::{RouteSpec, RouteType, TABLE_MAIN};
use std::net::Ipv4Addr;

/// A blackhole route to the `i`th /24 of 10.0.0.0/8, in prefix order.
fn spec(i: u32) -> RouteSpec<Ipv4Addr> {
    let dst = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24);
    let mut spec = RouteSpec::new(dst, Vec::new());
    spec.kind = RouteType::Blackhole;
    spec
}

fn add(i: u32) -> Change {
    FamilyChange::Route(spec(i), InsertMode::Add).into()
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

/// A rollback of deletions puts the destinations back in reverse order, in prefix order when
/// they were deleted last first: a load, whose run the rollback settles too.
#[test]
fn a_rollback_leaves_no_run() {
    let mut r = Router::new();
    let adds: Vec<Change> = (0..40).map(add).collect();
    r.apply(&adds).unwrap();
    let table = |r: &Router| r.v4.tables[&TABLE_MAIN].prefixes();
    r.begin();
    for i in (0..40).rev() {
        let sel = crate::rib::RouteSelector::exact(&spec(i));
        r.change(&FamilyChange::RouteDel(TABLE_MAIN, sel).into())
            .unwrap();
    }
    assert_eq!(table(&r), 0);
    r.rollback();
    assert_eq!(table(&r), 40);
    assert_eq!(run_len(&r), 0, "the rollback settles what it put back");
}

/// A lone route change's set shares neither the links nor the small parts (see
/// `router::set_snapshot`); debug builds catch a set of that kind that came to edit one, at
/// commit as at rollback, where a release build could not put it back.
#[test]
#[cfg(debug_assertions)]
fn a_lone_route_change_set_that_edits_a_small_part_is_caught() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    type Edit = fn(&mut Router);
    let edits: [(&str, Edit); 5] = [
        ("rules", |r| {
            Arc::make_mut(&mut r.v4.rules).customised = true
        }),
        ("addresses", |r| Arc::make_mut(&mut r.v4.addrs).clear()),
        ("derived routes", |r| {
            Arc::make_mut(&mut r.v4.derived).clear()
        }),
        ("next-hop objects", |r| {
            Arc::make_mut(&mut r.v4.objects).clear()
        }),
        ("links", |r| {
            Arc::make_mut(&mut r.links);
        }),
    ];
    for (what, edit) in edits {
        for commit in [true, false] {
            let mut r = Router::new();
            r.change(&add(1)).unwrap();
            r.open(Some(Family::Inet));
            edit(&mut r);
            let end = catch_unwind(AssertUnwindSafe(|| {
                if commit {
                    r.commit()
                } else {
                    r.rollback()
                }
            }));
            let said = end
                .err()
                .and_then(|e| e.downcast_ref::<&str>().map(|s| s.to_string()));
            let caught = said.is_some_and(|s| s.starts_with("a lone route change's set changed"));
            assert!(caught, "{what}, commit {commit}: not caught");
            // The same edit in a set that shares them is fine.
            let mut r = Router::new();
            r.begin();
            edit(&mut r);
            if commit {
                r.commit()
            } else {
                r.rollback()
            }
        }
    }
}

/// A new router's FIBs wait for a rebuild (`links_changed`), which every commit did for both
/// families: a lone route change of one takes the other in for it, so neither is left answering
/// through the RIB. A failed link change, which flags both before it fails, leaves neither
/// waiting: the rollback puts the links back as the FIBs know them.
#[test]
fn no_familys_fibs_are_left_waiting() {
    let mut r = Router::new();
    assert!(r.v4.fibs.links_changed && r.v6.fibs.links_changed);
    r.change(&add(1)).unwrap();
    assert!(r.v4.fibs_current() && r.v6.fibs_current(), "both built");
    let mut v6 = RouteSpec::<std::net::Ipv6Addr>::new("2001:db8::/32".parse().unwrap(), vec![]);
    v6.kind = RouteType::Blackhole;
    r.change(&FamilyChange::Route(v6, InsertMode::Add).into())
        .unwrap();
    // A rebuild makes the merged FIB anew: its box moves (the old one is freed after).
    let rebuilds = |r: &Router| r.v4.fibs.merged.as_deref().map(|m| m as *const _ as usize);
    let before = rebuilds(&r);
    assert!(r.change(&Change::LinkDel { dev: 999 }).is_err());
    assert!(
        r.v4.fibs_current() && r.v6.fibs_current(),
        "none left waiting"
    );
    r.change(&add(2)).unwrap();
    assert_eq!(rebuilds(&r), before, "no rebuild for links put back");
}
