//! The fuzz target `fib_api`'s property on stable Rust: arbitrary prefixes and ids through the
//! public `PrefixSet`/`Fib`/`Poptrie` API never panic, ids above `MAX_ID` are refused, and
//! what was accepted answers as a linear scan does.
use proptest::prelude::*;

#[path = "support/fib_ops.rs"]
mod fib_ops;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn fib_api_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        fib_ops::run_both(&data);
    }
}

/// The case of the report: an id with bit 31 set went into the encoding as a cell index.
#[test]
fn an_id_above_max_is_refused_not_encoded() {
    use fibre::fib::PrefixSet;
    use fibre::fib::{Fib, LpmAlgorithm, Poptrie, MAX_ID, NO_ROUTE};
    use fibre::Prefix;
    use std::net::Ipv4Addr;
    let p: Prefix<Ipv4Addr> = "10.0.0.0/8".parse().unwrap();
    let mut t = PrefixSet::new();
    t.insert(p, u32::MAX);
    let e = Poptrie::build(&t).err().expect("refused");
    assert_eq!(e.id, u32::MAX);
    assert!(e.to_string().contains("10.0.0.0/8"), "{e}");
    t.insert(p, MAX_ID);
    let pt = Poptrie::build(&t).expect("MAX_ID is storable");
    assert_eq!(pt.view().lookup(0x0a01_0101), MAX_ID);
    // update refuses a named bad id before changing anything.
    let mut pt = pt;
    t.insert(p, MAX_ID + 1);
    assert!(pt.update(&t, &[p]).is_err());
    assert_eq!(pt.view().lookup(0x0a01_0101), MAX_ID);
    // Not named: the encoding stores no route rather than an index.
    let q: Prefix<Ipv4Addr> = "10.1.0.0/16".parse().unwrap();
    t.insert(q, u32::MAX);
    pt.update(&t, &[]).unwrap();
    pt.update(&t, &["10.0.0.0/9".parse().unwrap()]).unwrap();
    assert_eq!(pt.view().lookup(0x0a01_0101), NO_ROUTE);
    let mut fib: Fib<Ipv4Addr> = Fib::new();
    assert!(fib.set(p, Some(u32::MAX)).is_err());
    assert!(Fib::<Ipv4Addr>::from_routes([(p, MAX_ID + 1)]).is_err());
    assert_eq!(fib.lookup(Ipv4Addr::new(10, 1, 1, 1)), NO_ROUTE);
    // A set that once held an id above MAX_ID builds again once none is left.
    t.remove(&q);
    t.insert(p, MAX_ID);
    assert!(Poptrie::build(&t).is_ok());
}

/// The case CI found: after a wide id came and went, a patched FIB keeps its four-byte cells,
/// so a slot of two runs stays a node where a fresh build (one-byte cells) makes it flat
/// (`flat_pays`). It equals a fresh build in its own form (`Fib::fresh_like`), and answers as
/// the fresh build does.
#[test]
fn a_patched_fib_keeps_its_cells_width_and_its_form() {
    use fibre::fib::Fib;
    use fibre::Prefix;
    use std::net::Ipv4Addr;
    let p = |s: &str| -> Prefix<Ipv4Addr> { s.parse().unwrap() };
    let mut fib: Fib<Ipv4Addr> = Fib::new();
    fib.set(p("0.0.0.0/19"), Some(1)).unwrap();
    fib.set(p("44.0.0.0/6"), Some(1 << 24)).unwrap();
    fib.publish();
    fib.set(p("44.0.0.0/6"), Some(0)).unwrap();
    fib.set(p("0.0.0.0/6"), Some(2)).unwrap();
    fib.publish();
    let fresh = Fib::<Ipv4Addr>::from_routes(fib.routes()).unwrap();
    assert!(
        fib.image() != fresh.image(),
        "a node here, flat in the fresh build"
    );
    assert!(fib.image() == fib.fresh_like().0);
    for key in ["0.0.0.1", "0.0.32.1", "0.1.0.0", "44.0.0.1", "9.9.9.9"] {
        let key: Ipv4Addr = key.parse().unwrap();
        assert_eq!(fib.lookup(key), fresh.lookup(key), "{key}");
    }
}
