//! Every registered algorithm against the reference (a fresh build of it over the model's
//! routes), against a fresh build of itself, and under concurrent readers. The reference itself
//! is checked against the definition in its own module.
use super::*;
use crate::addr::Bits;
use crate::prefix_map::PrefixMap;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// The oracle: the reference built afresh over `routes`.
fn oracle<A: FibFamily>(routes: &[(Prefix<A>, u32)]) -> Fib<A, Reference<A>> {
    Fib::from_routes(routes.iter().copied()).expect("test ids are below MAX_ID")
}

/// Addresses worth probing for a table: each prefix's first and last address and their
/// neighbours (where answers change), plus `extra`.
fn probes<A: FibFamily>(routes: &[(Prefix<A>, u32)], extra: &[A::Bits]) -> Vec<A::Bits> {
    let mut out = extra.to_vec();
    for (p, _) in routes {
        let (first, last) = (p.bits(), p.last().to_bits());
        out.extend([first, last, last.wrapping_add_one()]);
        if first != A::Bits::ZERO {
            out.push(!(!first).wrapping_add_one()); // first - 1
        }
    }
    out
}

/// Checks single and bulk lookups of `fib` against the model over `keys`.
fn check<A: FibFamily, L: LpmAlgorithm<A>>(
    fib: &Fib<A, L>,
    model: &[(Prefix<A>, u32)],
    keys: &[A::Bits],
) -> Result<(), TestCaseError> {
    let view = fib.reader().snapshot();
    let oracle = oracle(model);
    let want: Vec<u32> = keys.iter().map(|k| oracle.view().lookup(*k)).collect();
    for (k, w) in keys.iter().zip(&want) {
        prop_assert_eq!(view.lookup(*k), *w, "{} {:?}", L::NAME, A::from_bits(*k));
    }
    // Every bulk path this CPU has, forced; batches of odd sizes leave partial groups: 7 a
    // group of 64, 100 one of IPv4's 128 on the AVX-512 path; 64 takes whole groups of 64
    // there, and the whole batch whole groups of 128 once it has that many keys.
    for path in LookupPath::available() {
        for batch in [keys.len().max(1), 7, 64, 100] {
            let mut bulk = vec![0; keys.len()];
            for (k, o) in keys.chunks(batch).zip(bulk.chunks_mut(batch)) {
                view.lookup_bulk_on(path, k, o);
            }
            for ((k, b), w) in keys.iter().zip(&bulk).zip(&want) {
                prop_assert_eq!(*b, *w, "bulk {} {} {:?}", L::NAME, path, A::from_bits(*k));
            }
        }
    }
    Ok(())
}

/// A prefix drawn so that tables nest and collide: a few base addresses, any length.
fn prefix_strategy<A: FibFamily>(bases: Vec<A::Bits>) -> impl Strategy<Value = Prefix<A>> + Clone {
    // Lengths: any, and three times as often longer than the direct-pointing step, where
    // updates are patched node by node (a short prefix re-encodes whole slots or everything).
    let len = prop_oneof![
        1 => 0..=A::WIDTH,
        3 => (A::DP_BITS as u8 + 1)..=A::WIDTH,
    ];
    (0..bases.len(), len, any::<u64>()).prop_map(move |(b, len, noise)| {
        // Noise in the low bits of the base, so prefixes differ below the shared part.
        let key = bases[b] ^ A::Bits::from_u64(noise) & !A::Bits::mask(A::WIDTH.saturating_sub(12));
        // Half the time, noise in the middle too: prefixes then spread over direct-pointing
        // slots; otherwise they share a slot, and its nodes come and go as they change.
        let middle = if noise & (1 << 40) != 0 {
            noise >> 52
        } else {
            0
        };
        let key = key ^ (A::Bits::from_u64(middle) << (A::WIDTH as u32 / 2));
        Prefix::new(A::from_bits(key), len)
    })
}

fn bases<A: FibFamily>() -> Vec<A::Bits> {
    let w = A::WIDTH as u32;
    vec![
        A::Bits::ZERO,
        A::Bits::from_u64(0x0a00_0000) << (w - 32),
        A::Bits::from_u64(0x0a01_0200) << (w - 32),
        A::Bits::from_u64(0xc633_6400) << (w - 32),
        A::Bits::ONES,
    ]
}

#[derive(Clone, Debug)]
enum Op<A: Address> {
    Set(Prefix<A>, u32),
    Del(Prefix<A>),
    /// Publish what is staged (the ops between two publishes are one batch).
    Publish,
}

/// A starting table and the updates applied to it.
type Case<A> = (Vec<(Prefix<A>, u32)>, Vec<Op<A>>);

/// Ids: mostly a few small ones (leaves repeat), some about the largest each leaf width holds
/// (1, 2, 4 bytes), so tables and updates cross from one width to another.
fn ids() -> impl Strategy<Value = u32> + Clone {
    prop_oneof![
        12 => 0..40u32,
        1 => 250..260u32,
        1 => 65_530..65_540u32,
        1 => (MAX_ID - 3)..=MAX_ID,
    ]
}

fn ops<A: FibFamily>() -> impl Strategy<Value = Case<A>> {
    let p = prefix_strategy::<A>(bases::<A>());
    let table = prop::collection::vec((p.clone(), ids()), 0..60);
    let op = prop_oneof![
        4 => (p.clone(), ids()).prop_map(|(p, id)| Op::Set(p, id)),
        3 => p.prop_map(Op::Del),
        2 => Just(Op::Publish),
    ];
    (table, prop::collection::vec(op, 0..40))
}

/// One property, per algorithm: random table, random updates in random batches; after every
/// publish, lookups equal the model; at the end, the patched encoding equals a fresh one.
fn fib_equals_model<A: FibFamily, L: LpmAlgorithm<A>>(
    table: Vec<(Prefix<A>, u32)>,
    ops: Vec<Op<A>>,
) -> Result<(), TestCaseError> {
    let mut model: Vec<(Prefix<A>, u32)> = Vec::new();
    let set = |model: &mut Vec<(Prefix<A>, u32)>, p: Prefix<A>, id: Option<u32>| {
        model.retain(|(q, _)| *q != p);
        if let Some(id) = id {
            model.push((p, id));
        }
    };
    for (p, id) in &table {
        set(&mut model, *p, Some(*id));
    }
    let mut fib =
        Fib::<A, L>::from_routes(table.iter().copied()).expect("test ids are below MAX_ID");
    let extra = [A::Bits::ZERO, A::Bits::ONES];
    check(&fib, &model, &probes(&model, &extra))?;
    let mut published = model.clone();
    for op in ops {
        // The router prefetches for a change before it (`Fib::prefetch_update`, a hint): it
        // must leave what the FIB holds and answers alone, as the checks below see.
        if let Op::Set(p, _) | Op::Del(p) = op {
            fib.prefetch_update(&p);
        }
        match op {
            Op::Set(p, id) => {
                fib.set(p, Some(id)).expect("test ids are below MAX_ID");
                set(&mut model, p, Some(id));
            }
            Op::Del(p) => {
                fib.set(p, None).expect("test ids are below MAX_ID");
                set(&mut model, p, None);
            }
            Op::Publish => {
                // Before publishing, readers still see the last published table.
                check(&fib, &published, &probes(&model, &extra))?;
                fib.publish();
                published = model.clone();
                check(&fib, &model, &probes(&model, &extra))?;
            }
        }
    }
    fib.publish();
    check(&fib, &model, &probes(&model, &extra))?;
    // The FIB's set is the model's, and a fresh encoding of it in the patched generation's form
    // (leaf cells as wide: an update widens them, only a full build narrows them, and Poptrie's
    // flat blocks depend on the width) equals the patched one.
    prop_assert_eq!(fib.entries().len(), model.len());
    for (p, id) in &model {
        prop_assert_eq!(fib.entries().get(p), Some(id));
    }
    let (image, b) = fib.fresh_like();
    prop_assert!(fib.image() == image, "patched != fresh ({})", L::NAME);
    let a = fib.stats();
    prop_assert_eq!(
        (a.max_depth, a.nodes, a.leaves),
        (b.max_depth, b.nodes, b.leaves)
    );
    // No reader holds an old version now: every retired cell is back, none reachable is.
    let audit = fib.audit();
    prop_assert!(audit.is_ok(), "{} {:?}", L::NAME, audit);
    Ok(())
}

/// Tables dense in two direct-pointing slots: most prefixes end in the first node level (up
/// to 6 bits past the slot), where a slot without a longer prefix is stored flat where its
/// runs pay (Poptrie's `FLAT`, `flat_pays`), and one in eight is longer, so slots go from flat
/// to a node and back as they change. A case's 12 ids start at 0, 300 or 70,000, so its
/// leaves are one, two or four bytes wide: one-byte leaves are always flat, two- and
/// four-byte ones from 20 and 26 runs, which changes may cross.
fn dense_ops<A: FibFamily>() -> impl Strategy<Value = Case<A>> {
    prop_oneof![Just(0u32), Just(300), Just(70_000)].prop_flat_map(dense_ops_from::<A>)
}

/// [`dense_ops`] with ids `first..first + 12`.
fn dense_ops_from<A: FibFamily>(first: u32) -> impl Strategy<Value = Case<A>> {
    let s = A::DP_BITS as u8;
    let len = prop_oneof![7 => (s + 1)..=(s + 6), 1 => (s + 7)..=(s + 12)];
    let base = A::Bits::from_u64(0x0a00_0000) << (A::WIDTH as u32 - 32);
    let p = (any::<bool>(), len, any::<u64>()).prop_map(move |(second, len, noise)| {
        // The bits below the slot at random; the slot, one of two neighbours.
        let rest = A::WIDTH as u32 - s as u32;
        let below = if rest <= 64 {
            A::Bits::from_u64(noise >> (64 - rest))
        } else {
            A::Bits::from_u64(noise) << (rest - 64)
        };
        let slot = A::Bits::from_u64(u64::from(second)) << (A::WIDTH as u32 - s as u32);
        Prefix::new(A::from_bits(base ^ slot ^ below), len)
    });
    let id = first..first + 12;
    let table = prop::collection::vec((p.clone(), id.clone()), 0..100);
    let op = prop_oneof![
        4 => (p.clone(), id).prop_map(|(p, id)| Op::Set(p, id)),
        3 => p.prop_map(Op::Del),
        2 => Just(Op::Publish),
    ];
    (table, prop::collection::vec(op, 0..40))
}

struct PropertyRun<A> {
    cases: u32,
    /// Tables from [`dense_ops`], else [`ops`].
    dense: bool,
    _a: std::marker::PhantomData<A>,
}

impl<A: FibFamily> AlgorithmVisitor<A> for PropertyRun<A> {
    fn visit<L: LpmAlgorithm<A>>(&mut self) {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: self.cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        let property = |(t, o)| fib_equals_model::<A, L>(t, o);
        let result = match self.dense {
            true => runner.run(&dense_ops::<A>(), property),
            false => runner.run(&ops::<A>(), property),
        };
        if let Err(e) = result {
            let tables = if self.dense { ", dense slots" } else { "" };
            panic!("{} ({}){tables}: {e}", L::NAME, A::FAMILY.name());
        }
    }
}

/// Tables dense in two slots ([`dense_ops`]), per family and algorithm.
#[test]
fn fib_equals_the_reference_in_dense_slots() {
    for_each_algorithm::<Ipv4Addr>(&mut PropertyRun {
        cases: 2_000,
        dense: true,
        _a: Default::default(),
    });
    for_each_algorithm::<Ipv6Addr>(&mut PropertyRun {
        cases: 2_000,
        dense: true,
        _a: Default::default(),
    });
}

/// 10^4 random tables and update sequences per family and algorithm (the bar).
#[test]
fn fib_equals_the_reference_v4() {
    for_each_algorithm::<Ipv4Addr>(&mut PropertyRun {
        cases: 10_000,
        dense: false,
        _a: Default::default(),
    });
}

#[test]
fn fib_equals_the_reference_v6() {
    for_each_algorithm::<Ipv6Addr>(&mut PropertyRun {
        cases: 10_000,
        dense: false,
        _a: Default::default(),
    });
}

/// Every length on one address, for both families: added shortest first, then removed longest
/// first, one publication each, so every level of the encoding (direct pointing, each node level,
/// IPv4's padded last level, IPv6's /128) comes into being and goes again. After each step:
/// lookups equal the model, the encoding equals a fresh build, and the memory accounts balance.
#[test]
fn edges_of_the_encoding() {
    fn step<A: FibFamily, L: LpmAlgorithm<A>>(
        fib: &mut Fib<A, L>,
        routes: &[(Prefix<A>, u32)],
        at: A,
    ) {
        check(fib, routes, &probes(routes, &[at.to_bits()])).unwrap();
        let fresh =
            Fib::<A, L>::from_routes(routes.iter().copied()).expect("test ids are below MAX_ID");
        assert!(fib.image() == fresh.image(), "{} patched != fresh", L::NAME);
        fib.audit().unwrap();
    }
    fn edges<A: FibFamily, L: LpmAlgorithm<A>>(at: A) {
        let all: Vec<(Prefix<A>, u32)> = (0..=A::WIDTH)
            .map(|len| (Prefix::new(at, len), len as u32))
            .collect();
        let mut fib = Fib::<A, L>::new();
        let mut routes = Vec::new();
        for &(p, id) in &all {
            fib.set(p, Some(id)).expect("test ids are below MAX_ID");
            fib.publish();
            routes.push((p, id));
            step(&mut fib, &routes, at);
        }
        while let Some((p, _)) = routes.pop() {
            fib.set(p, None).expect("test ids are below MAX_ID");
            fib.publish();
            step(&mut fib, &routes, at);
        }
        assert_eq!(fib.lookup(at), NO_ROUTE);
    }
    struct Edges;
    impl AlgorithmVisitor<Ipv4Addr> for Edges {
        fn visit<L: LpmAlgorithm<Ipv4Addr>>(&mut self) {
            edges::<Ipv4Addr, L>("10.1.2.3".parse().unwrap());
        }
    }
    impl AlgorithmVisitor<Ipv6Addr> for Edges {
        fn visit<L: LpmAlgorithm<Ipv6Addr>>(&mut self) {
            edges::<Ipv6Addr, L>("2001:db8:1234:5678:9abc:def0:1234:5679".parse().unwrap());
        }
    }
    for_each_algorithm::<Ipv4Addr>(&mut Edges);
    for_each_algorithm::<Ipv6Addr>(&mut Edges);
}

/// A batch whose changes cancel out (a prefix set then unset, an id changed and changed back)
/// publishes nothing; a batch with one lasting change among cancelled ones publishes just it.
#[test]
fn a_batch_that_cancels_out_publishes_nothing() {
    fn run<L: LpmAlgorithm<Ipv4Addr>>() {
        let p = |s: &str| s.parse::<Prefix<Ipv4Addr>>().unwrap();
        let mut fib = Fib::<Ipv4Addr, L>::from_routes([(p("10.0.0.0/8"), 1)]).unwrap();
        let reader = fib.reader();
        let v0 = reader.load().version();
        fib.set(p("10.1.0.0/16"), Some(2)).unwrap();
        fib.set(p("10.1.0.0/16"), None).unwrap();
        fib.set(p("10.0.0.0/8"), Some(3)).unwrap();
        fib.set(p("10.0.0.0/8"), Some(1)).unwrap();
        fib.set(p("10.2.0.0/16"), None).unwrap(); // not stored: no change at all
        assert_eq!(fib.staged(), 4, "{}", L::NAME);
        fib.publish();
        assert_eq!(fib.staged(), 0);
        assert_eq!(
            reader.load().version(),
            v0,
            "{}: nothing to publish",
            L::NAME
        );
        fib.set(p("10.1.0.0/16"), Some(2)).unwrap();
        fib.set(p("10.3.0.0/16"), Some(4)).unwrap();
        fib.set(p("10.1.0.0/16"), None).unwrap();
        fib.publish();
        let view = reader.load();
        assert_eq!(view.version(), v0 + 1, "{}", L::NAME);
        let at = |s: &str| s.parse::<Ipv4Addr>().unwrap().to_bits();
        assert_eq!(view.lookup(at("10.1.2.3")), 1);
        assert_eq!(view.lookup(at("10.3.2.3")), 4);
        drop(view);
        fib.audit().unwrap();
    }
    struct Cancel;
    impl AlgorithmVisitor<Ipv4Addr> for Cancel {
        fn visit<L: LpmAlgorithm<Ipv4Addr>>(&mut self) {
            run::<L>();
        }
    }
    for_each_algorithm::<Ipv4Addr>(&mut Cancel);
}

/// Readers look up while a writer applies 10^6 random updates. Every answer is checked against
/// the table of the version it was read in, replayed from the writer's log afterwards.
#[test]
fn readers_see_a_possible_table_while_a_writer_updates() {
    struct Concurrent;
    impl AlgorithmVisitor<Ipv4Addr> for Concurrent {
        fn visit<L: LpmAlgorithm<Ipv4Addr>>(&mut self) {
            concurrent::<L>(1_000_000);
        }
    }
    for_each_algorithm::<Ipv4Addr>(&mut Concurrent);
}

fn concurrent<L: LpmAlgorithm<Ipv4Addr>>(updates: usize) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(4);
    // A pool of nested prefixes in 10.0.0.0/8, lengths 8..=32, and probes inside them.
    let pool: Vec<Prefix<Ipv4Addr>> = (0..4000)
        .map(|_| {
            let len: u8 = [8, 12, 16, 18, 19, 20, 22, 24, 24, 24, 25, 28, 32][rng.gen_range(0..13)];
            let key = 0x0a00_0000 | (rng.gen::<u32>() & 0x00ff_ffff & !0x00f0_f0f0);
            Prefix::new(Ipv4Addr::from_bits(key), len)
        })
        .collect();
    let keys: Vec<u32> = (0..512)
        .map(|_| 0x0a00_0000 | (rng.gen::<u32>() & 0x00ff_ffff & !0x00f0_f0f0))
        .collect();
    // The writer's log: (prefix, id) per update, `None` a delete; a publish after each, but
    // every 100th update starts a batch of 10 published at once.
    let log: Vec<(Prefix<Ipv4Addr>, Option<u32>)> = (0..updates)
        .map(|_| {
            let p = pool[rng.gen_range(0..pool.len())];
            (p, rng.gen_bool(0.5).then(|| rng.gen_range(0..1000)))
        })
        .collect();
    let batch_end = |i: usize| i % 100 < 90 || i % 100 == 99;
    // Fib::publish makes a version when something changed since the last one.
    let mut changed = false;

    let mut fib = Fib::<Ipv4Addr, L>::new();
    let stop = AtomicBool::new(false);
    // (version, key index, answer), sampled by readers.
    let samples: Vec<Vec<(u64, u16, u32)>> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let reader = fib.reader();
                let (keys, stop) = (&keys, &stop);
                let paths = LookupPath::available();
                s.spawn(move || {
                    let mut seen = Vec::new();
                    let mut out = vec![0u32; keys.len()];
                    let mut round = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let view = reader.load();
                        if round % 2 == r {
                            // Each bulk path the CPU has, in turn.
                            let path = paths[(round / 2) as usize % paths.len()];
                            view.lookup_bulk_on(path, keys, &mut out);
                        } else {
                            for (k, o) in keys.iter().zip(out.iter_mut()) {
                                *o = view.lookup(*k);
                            }
                        }
                        let v = view.version();
                        // Every answer is a plausible id; a sample is checked exactly below
                        // (every key now and then, a few keys often).
                        assert!(out.iter().all(|&a| a < 1000 || a == NO_ROUTE));
                        let step = match round % 1024 {
                            0 => 1,
                            r if r % 8 == 0 => 61,
                            _ => 0,
                        };
                        if step > 0 {
                            for i in (round as usize % step..keys.len()).step_by(step) {
                                seen.push((v, i as u16, out[i]));
                            }
                        }
                        round += 1;
                    }
                    seen
                })
            })
            .collect();
        for (i, (p, id)) in log.iter().enumerate() {
            fib.set(*p, *id).expect("test ids are below MAX_ID");
            if batch_end(i) {
                fib.publish();
            }
        }
        fib.publish();
        stop.store(true, Ordering::Relaxed);
        readers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // The readers are gone with every version they held: all retired memory is back.
    if let Err(e) = fib.audit() {
        panic!("{}: {e}", L::NAME);
    }
    let mut samples: Vec<(u64, u16, u32)> = samples.into_iter().flatten().collect();
    assert!(
        samples.len() > 10_000,
        "readers ran: {} samples",
        samples.len()
    );
    samples.sort_unstable();
    // Replay: the table of version v is the log up to its v-th publish.
    let mut table = PrefixMap::<Ipv4Addr, u32>::new();
    let mut version = 0u64;
    let mut next = 0;
    let mut versions_seen = 0;
    let mut check_up_to = |table: &PrefixMap<Ipv4Addr, u32>, version: u64, next: &mut usize| {
        if *next < samples.len() && samples[*next].0 == version {
            versions_seen += 1;
        }
        while *next < samples.len() && samples[*next].0 == version {
            let (_, k, got) = samples[*next];
            let key = Ipv4Addr::from_bits(keys[k as usize]);
            let want = table.longest_match(key).map_or(NO_ROUTE, |(_, id)| *id);
            assert_eq!(got, want, "{} version {version} key {key}", L::NAME);
            *next += 1;
        }
    };
    check_up_to(&table, version, &mut next);
    for (i, (p, id)) in log.iter().enumerate() {
        changed |= match id {
            Some(id) => table.insert(*p, *id) != Some(*id),
            None => table.remove(p).is_some(),
        };
        if batch_end(i) && std::mem::take(&mut changed) {
            version += 1;
            check_up_to(&table, version, &mut next);
        }
    }
    assert_eq!(
        next,
        samples.len(),
        "every sample was from a published version"
    );
    assert!(versions_seen > 10, "readers saw {versions_seen} versions");
}
