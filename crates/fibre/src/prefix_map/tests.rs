//! The prefix map against a model (a `BTreeMap` scanned linearly), ordered loads among churn
//! included.
use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

fn p4(s: &str) -> Prefix<Ipv4Addr> {
    s.parse().unwrap()
}

#[test]
fn insert_lookup_remove() {
    let mut t = PrefixMap::new();
    for (i, s) in [
        "10.0.0.0/8",
        "10.0.0.0/16",
        "10.128.0.0/9",
        "11.0.0.0/8",
        "0.0.0.0/0",
    ]
    .iter()
    .enumerate()
    {
        assert!(t.insert(p4(s), i).is_none());
    }
    assert_eq!(t.len(), 5);
    assert_eq!(
        t.longest_match(Ipv4Addr::new(10, 0, 1, 1)).unwrap().0,
        p4("10.0.0.0/16")
    );
    assert_eq!(
        t.longest_match(Ipv4Addr::new(10, 200, 1, 1)).unwrap().0,
        p4("10.128.0.0/9")
    );
    assert_eq!(
        t.longest_match(Ipv4Addr::new(12, 0, 0, 1)).unwrap().0,
        p4("0.0.0.0/0")
    );
    let order: Vec<_> = t.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(
        order,
        [
            "0.0.0.0/0",
            "10.0.0.0/8",
            "10.0.0.0/16",
            "10.128.0.0/9",
            "11.0.0.0/8"
        ]
    );
    assert_eq!(t.remove(&p4("10.0.0.0/8")), Some(0));
    assert_eq!(t.remove(&p4("10.0.0.0/8")), None);
    assert_eq!(
        t.longest_match(Ipv4Addr::new(10, 1, 1, 1)).unwrap().0,
        p4("0.0.0.0/0")
    );
    for s in ["10.0.0.0/16", "10.128.0.0/9", "11.0.0.0/8", "0.0.0.0/0"] {
        t.remove(&p4(s)).unwrap();
    }
    assert!(t.is_empty());
}

/// Packing the index after a load keeps every prefix, its value and its slot, and the map
/// goes on working (against the model) through churn after it.
#[test]
fn pack_keeps_entries_and_slots() {
    let mut t = PrefixMap::new();
    let mut model = BTreeMap::new();
    // A load in order, of more slots than a page: /24s and the /16s above some of them.
    for i in 0..6000u32 {
        let p = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24);
        t.insert(p, i);
        model.insert(p, i);
        if i % 256 == 0 {
            let q = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 16);
            t.insert(q, i + 100_000);
            model.insert(q, i + 100_000);
        }
    }
    let slots: Vec<_> = model.keys().map(|p| t.index_of(p)).collect();
    t.pack();
    let after: Vec<_> = model.keys().map(|p| t.index_of(p)).collect();
    assert_eq!(slots, after, "every prefix keeps its slot");
    let probes: Vec<Ipv4Addr> = (0..64u32)
        .map(|i| Ipv4Addr::from(0x0a00_0000 + i * 0x5_8123))
        .collect();
    check_against_model(&t, &model, &probes);
    for i in (0..6000u32).step_by(7) {
        let p = Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24);
        assert_eq!(t.remove(&p), model.remove(&p));
        let q = Prefix::new(Ipv4Addr::from(0x0b00_0000 + (i << 8)), 23);
        assert_eq!(t.insert(q, i), model.insert(q, i));
    }
    check_against_model(&t, &model, &probes);
    t.pack();
    check_against_model(&t, &model, &probes);
}

/// The oracle: a sorted map scanned linearly.
fn check_against_model<A: Address>(
    trie: &PrefixMap<A, u32>,
    model: &BTreeMap<Prefix<A>, u32>,
    probes: &[A],
) {
    assert_eq!(trie.len(), model.len());
    let all: Vec<_> = trie.iter().map(|(p, v)| (p, *v)).collect();
    let want: Vec<_> = model.iter().map(|(p, v)| (*p, *v)).collect();
    assert_eq!(all, want, "ordered iteration is sorted and complete");
    for &a in probes {
        let best = model
            .iter()
            .filter(|(p, _)| p.contains(a))
            .max_by_key(|(p, _)| p.len());
        assert_eq!(
            trie.longest_match(a).map(|(p, v)| (p, *v)),
            best.map(|(p, v)| (*p, *v))
        );
        let matches: Vec<_> = trie.matches(a).map(|(p, v)| (p, *v)).collect();
        let mut want: Vec<_> = model
            .iter()
            .filter(|(p, _)| p.contains(a))
            .map(|(p, v)| (*p, *v))
            .collect();
        want.reverse();
        assert_eq!(matches, want, "every match, longest first");
        for len in [0, A::WIDTH / 4, A::WIDTH / 2, A::WIDTH - 3] {
            let q = Prefix::new(a, len);
            let covering: Vec<_> = trie.covering(&q).into_iter().map(|(p, _)| p).collect();
            let want: Vec<_> = model.keys().filter(|p| p.covers(&q)).copied().collect();
            assert_eq!(covering, want);
            let covered: Vec<_> = trie.covered(&q).map(|(p, _)| p).collect();
            let want: Vec<_> = model.keys().filter(|p| q.covers(p)).copied().collect();
            assert_eq!(covered, want);
            let from: Vec<_> = trie.range_from(&q).map(|(p, _)| p).collect();
            let want: Vec<_> = model.keys().filter(|p| **p >= q).copied().collect();
            assert_eq!(from, want);
        }
    }
}

/// One operation on the trie and on the model: 0 insert, 1 remove, 2 `update` (which,
/// by `v`, takes the value out, puts one in, or changes one in place).
fn apply_op<A: Address>(
    t: &mut PrefixMap<A, u32>,
    m: &mut BTreeMap<Prefix<A>, u32>,
    op: u8,
    p: Prefix<A>,
    v: u32,
) {
    match op {
        0 => assert_eq!(t.insert(p, v), m.insert(p, v)),
        1 => assert_eq!(t.remove(&p), m.remove(&p)),
        _ => {
            let edit = |slot: &mut Option<u32>| {
                let was = *slot;
                match v % 3 {
                    0 => *slot = None,
                    1 => *slot = Some(v),
                    _ => {
                        if let Some(x) = slot.as_mut() {
                            *x = x.wrapping_add(1);
                        }
                    }
                }
                was
            };
            let mut model_slot = m.get(&p).copied();
            let want = edit(&mut model_slot);
            match model_slot {
                Some(x) => m.insert(p, x),
                None => m.remove(&p),
            };
            assert_eq!(t.update(p, edit), want);
        }
    }
}

/// [`apply_op`], checking that every prefix stored before and after the operation kept
/// its index ([`PrefixMap::index_of`]), and that each index gives back its value
/// ([`PrefixMap::at`]).
fn apply_op_keeping_indexes<A: Address>(
    t: &mut PrefixMap<A, u32>,
    m: &mut BTreeMap<Prefix<A>, u32>,
    op: u8,
    p: Prefix<A>,
    v: u32,
) {
    let before: BTreeMap<Prefix<A>, u32> = m
        .keys()
        .map(|q| (*q, t.index_of(q).expect("stored prefixes have an index")))
        .collect();
    apply_op(t, m, op, p, v);
    for (q, value) in m.iter() {
        let i = t.index_of(q).expect("stored prefixes have an index");
        assert_eq!(t.at(i), Some(value), "the index gives the prefix's value");
        if let Some(&was) = before.get(q) {
            assert_eq!(i, was, "{q:?} kept its index");
        }
    }
    for (q, &was) in &before {
        if !m.contains_key(q) {
            // Free, or reused by a prefix stored since.
            assert!(
                t.at(was).is_none() || m.keys().any(|k| t.index_of(k) == Some(was)),
                "a removed prefix's index holds no value of its own"
            );
        }
    }
    let indexes: std::collections::BTreeSet<u32> = m.keys().filter_map(|q| t.index_of(q)).collect();
    assert_eq!(indexes.len(), m.len(), "indexes are distinct");
}

fn arb_prefix4() -> impl Strategy<Value = Prefix<Ipv4Addr>> {
    // Few distinct high bits so that prefixes nest and collide often.
    (0u32..16, 0u8..=32)
        .prop_map(|(hi, len)| Prefix::new(Ipv4Addr::from(hi.rotate_right(4) | (hi << 8)), len))
}
fn arb_prefix6() -> impl Strategy<Value = Prefix<Ipv6Addr>> {
    (0u128..16, 0u8..=128)
        .prop_map(|(hi, len)| Prefix::new(Ipv6Addr::from(hi.rotate_right(4) | (hi << 60)), len))
}

/// A load in prefix order goes to a run once 16 new keys came in order; the run grows past a
/// few indexed keys in its way and stops before more; a key landing inside the run's span
/// merges it into the index (in bulk when the run is long, key by key when it is short), a
/// key below it does not; a commit's settle merges what is left.
#[test]
fn ordered_load_goes_to_a_run() {
    let mut t = PrefixMap::new();
    let p24 = |a: u32| Prefix::new(Ipv4Addr::from(a), 24);
    let pack = |s: &str| u64::pack(p4(s));
    t.insert(p4("10.1.0.0/16"), 7);
    for i in 0..9u32 {
        t.insert(Prefix::new(Ipv4Addr::from(0x0a02_0000 + (i << 4)), 28), i);
    }
    for i in 0..256u32 {
        t.insert(p24(0x0a00_0000 + (i << 8)), i);
    }
    // 10.0.0.0/24 .. 10.0.255.0/24, below the indexed 10.1.0.0/16, where the run stops.
    assert_eq!(t.run.len(), 256 - 16, "the run starts after a streak of 16");
    assert_eq!(t.run_limit, Some(pack("10.1.0.0/16")));
    // One indexed key in the way: the run takes it and goes on, up to the nine /28s.
    for i in 256..512u32 {
        t.insert(p24(0x0a00_0000 + (i << 8)), i);
    }
    assert_eq!((t.index.len(), t.run.len()), (9 + 16, 240 + 1 + 256));
    assert_eq!(t.run_limit, Some(pack("10.2.0.0/28")));
    // Nine in the way: a new run, the first merged in bulk.
    for i in 513..1000u32 {
        t.insert(p24(0x0a00_0000 + (i << 8)), i);
    }
    assert_eq!((t.index.len(), t.run.len()), (9 + 16 + 497, 1000 - 513));
    assert_eq!(t.get(&p4("10.1.0.0/16")), Some(&7));
    // Below the run: into the index, the run stays.
    t.insert(p4("9.0.0.0/8"), 5000);
    assert_eq!((t.index.len(), t.run.len()), (523, 487));
    // Inside the run's span: the run moves into the index first.
    t.insert(p4("10.2.100.128/25"), 5001);
    assert_eq!((t.index.len(), t.run.len()), (1011, 0));
    // A run much shorter than the index moves key by key when a removal needs it.
    for i in 0..40u32 {
        t.insert(p24(0x0b00_0000 + (i << 8)), i);
    }
    assert_eq!((t.index.len(), t.run.len()), (1011 + 14, 26));
    assert_eq!(t.remove(&p4("11.0.20.0/24")), Some(20));
    assert_eq!((t.index.len(), t.run.len()), (1050, 0));
    assert_eq!(t.get(&p4("11.0.39.0/24")), Some(&39));
    assert_eq!(t.get(&p4("10.0.200.0/24")), Some(&200));
    // Keys in order but far apart, a stored key between each two (changes stepping through
    // a table): a run of one starts after each streak and ends at the next key.
    let mut u = PrefixMap::new();
    for i in 0..100u32 {
        u.insert(p24(0x1400_0000 + (i << 8)), i);
    }
    u.pack();
    for i in 0..100u32 {
        u.insert(Prefix::new(Ipv4Addr::from(0x1400_0080 + (i << 8)), 25), i);
        assert!(u.run.len() <= 1, "no run grows through stored keys");
    }
    assert_eq!(u.len(), 200);
    // What a commit does with a run left over.
    for i in 0..40u32 {
        t.insert(p24(0x0c00_0000 + (i << 8)), i);
    }
    assert_eq!(t.run.len(), 40, "the streak goes on from the 11.0.x.0s");
    t.settle();
    assert_eq!((t.index.len(), t.run.len()), (1050 + 40, 0));
    // The streak starts over: the next keys in order go into the index until it is long again.
    for i in 40..50u32 {
        t.insert(p24(0x0c00_0000 + (i << 8)), i);
    }
    assert_eq!(t.run.len(), 0, "a settled map counts its streak afresh");
}

type Ops<A> = Vec<(u8, Prefix<A>, u32)>;

/// See `ordered_loads_among_churn_v4`. A load's operations are inserts (op 0) and `update`s
/// (op 2, any outcome), in prefix order.
fn loads_among_churn<A: Address>(
    before: Ops<A>,
    first: Ops<A>,
    pack: bool,
    second: Ops<A>,
    after: Ops<A>,
    probes: &[A],
) {
    let mut t = PrefixMap::new();
    let mut m = BTreeMap::new();
    let sorted = |mut ops: Ops<A>| {
        ops.sort_by_key(|o| o.1);
        ops.dedup_by_key(|o| o.1);
        ops.into_iter()
            .map(|(op, p, v)| (if op == 1 { 0 } else { op }, p, v))
    };
    for (op, p, v) in before {
        apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
    }
    for (op, p, v) in sorted(first) {
        apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
    }
    check_against_model(&t, &m, probes);
    if pack {
        t.pack();
    }
    for (op, p, v) in sorted(second) {
        apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
    }
    check_against_model(&t, &m, probes);
    for (op, p, v) in after {
        apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
    }
    check_against_model(&t, &m, probes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]
    #[test]
    fn map_matches_model_v4(ops in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..40),
                             probes in prop::collection::vec(any::<u32>(), 1..8)) {
        let mut t = PrefixMap::new();
        let mut m = BTreeMap::new();
        for (op, p, v) in ops {
            apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
        }
        let probes: Vec<Ipv4Addr> = probes.into_iter().map(|x| Ipv4Addr::from(x & 0xf0f0_0fff)).collect();
        check_against_model(&t, &m, &probes);
    }

    #[test]
    fn map_matches_model_v6(ops in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..40),
                             probes in prop::collection::vec(any::<u128>(), 1..8)) {
        let mut t = PrefixMap::new();
        let mut m = BTreeMap::new();
        for (op, p, v) in ops {
            apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
        }
        let probes: Vec<Ipv6Addr> = probes.into_iter().map(|x| Ipv6Addr::from(x & !(0x0fffu128 << 100))).collect();
        check_against_model(&t, &m, &probes);
    }

    /// Random churn, then two loads in prefix order (runs, among the keys already there),
    /// packed or not between them, then churn: every answer as the model's after each part.
    #[test]
    fn ordered_loads_among_churn_v4(before in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..12),
                                    first in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..80),
                                    pack in any::<bool>(),
                                    second in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..80),
                                    after in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..20),
                                    probes in prop::collection::vec(any::<u32>(), 1..8)) {
        let probes: Vec<Ipv4Addr> = probes.into_iter().map(|x| Ipv4Addr::from(x & 0xf0f0_0fff)).collect();
        loads_among_churn(before, first, pack, second, after, &probes);
    }

    #[test]
    fn ordered_loads_among_churn_v6(before in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..12),
                                    first in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..80),
                                    pack in any::<bool>(),
                                    second in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..80),
                                    after in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..20),
                                    probes in prop::collection::vec(any::<u128>(), 1..8)) {
        let probes: Vec<Ipv6Addr> = probes.into_iter().map(|x| Ipv6Addr::from(x & !(0x0fffu128 << 100))).collect();
        loads_among_churn(before, first, pack, second, after, &probes);
    }
}
