//! Property tests of the RIB against a naive model: a flat list of routes, scanned linearly,
//! ordered by the documented rule (IPv4: TOS descending, metric ascending, insertion order;
//! IPv6: metric ascending, insertion order) and selected by the documented rules.
use super::*;
use crate::nexthop::NextHop;
use crate::route::{RouteSpec, RouterPref, PROTO_BOOT, PROTO_STATIC, TABLE_MAIN};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Links 2..=5 exist; 5 is down.
struct Links;
impl LinkState for Links {
    fn is_up(&self, dev: IfIndex) -> bool {
        dev != 5
    }
}

const KINDS: [RouteType; 6] = [
    RouteType::Unicast,
    RouteType::Unicast,
    RouteType::Unicast,
    RouteType::Blackhole,
    RouteType::Unreachable,
    RouteType::Throw,
];

/// A route request: few distinct values so that keys collide and prefixes nest.
fn arb_spec4() -> impl Strategy<Value = RouteSpec<Ipv4Addr>> {
    (
        0u32..8,
        prop::sample::select(vec![0u8, 8, 16, 17, 24, 32]),
        prop::sample::select(vec![0u8, 0, 4, 16]),
        0u32..3,
        0usize..KINDS.len(),
        prop::collection::vec((2u32..6, any::<bool>()), 1..3),
        0u8..12,
    )
        .prop_map(|(hi, len, tos, metric, k, hops, attrs)| {
            let dst = Prefix::new(Ipv4Addr::from((hi << 29) | (hi << 16) | 0x0101), len);
            let kind = KINDS[k];
            let hops = if kind.is_reject() {
                vec![]
            } else {
                hops.into_iter()
                    .map(|(dev, gw)| NextHop {
                        gateway: gw.then(|| Ipv4Addr::new(10, 0, dev as u8, 9)),
                        dev: Some(dev),
                        weight: 1,
                        onlink: false,
                    })
                    .collect()
            };
            RouteSpec {
                tos,
                metric: metric * 10,
                kind,
                ..with_attrs(RouteSpec::new(dst, hops), attrs, Ipv4Addr::new(10, 9, 9, 9))
            }
        })
}

/// `r` with the shared attributes picked by `c` (0..12): one of three protocols, with or
/// without an MTU, with or without a preferred source, so that a table's routes hold several
/// attribute sets (see `rib::stored`).
fn with_attrs<A: Address>(r: RouteSpec<A>, c: u8, prefsrc: A) -> RouteSpec<A> {
    RouteSpec {
        protocol: [PROTO_BOOT, PROTO_STATIC, 186][usize::from(c % 3)],
        mtu: (c / 3 % 2 == 1).then_some(1400),
        prefsrc: (c / 6 == 1).then_some(prefsrc),
        ..r
    }
}

fn arb_spec6() -> impl Strategy<Value = RouteSpec<Ipv6Addr>> {
    (
        0u128..8,
        prop::sample::select(vec![0u8, 16, 32, 48, 64, 128]),
        0u32..3,
        0usize..KINDS.len(),
        2u32..6,
        any::<bool>(),
        prop::sample::select(vec![
            RouterPref::Low,
            RouterPref::Medium,
            RouterPref::Medium,
            RouterPref::High,
        ]),
        0u8..12,
    )
        .prop_map(|(hi, len, metric, k, dev, gw, pref, attrs)| {
            let dst = Prefix::new(Ipv6Addr::from((hi << 125) | (hi << 80) | 1), len);
            let kind = KINDS[k];
            let hops = if kind.is_reject() {
                vec![]
            } else {
                vec![NextHop {
                    gateway: gw.then(|| Ipv6Addr::new(0x2001, 0xdb8, dev as u16, 0, 0, 0, 0, 9)),
                    dev: Some(dev),
                    weight: 1,
                    onlink: false,
                }]
            };
            RouteSpec {
                metric: 1024 + metric,
                kind,
                pref,
                ..with_attrs(
                    RouteSpec::new(dst, hops),
                    attrs,
                    Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, 9),
                )
            }
        })
}

/// The model: every route in insertion order, with its sequence number.
struct Model<A: Address> {
    routes: Vec<(u64, RouteSpec<A>)>,
    seq: u64,
}

impl<A: Address> Model<A> {
    fn new() -> Self {
        Model {
            routes: Vec::new(),
            seq: 0,
        }
    }
    fn list(&self, dst: &Prefix<A>) -> Vec<&RouteSpec<A>> {
        let mut l: Vec<&(u64, RouteSpec<A>)> =
            self.routes.iter().filter(|(_, r)| r.dst == *dst).collect();
        if A::FAMILY == crate::addr::Family::Inet {
            l.sort_by(|(s1, a), (s2, b)| {
                b.tos
                    .cmp(&a.tos)
                    .then(a.metric.cmp(&b.metric))
                    .then(s1.cmp(s2))
            });
        } else {
            l.sort_by(|(s1, a), (s2, b)| a.metric.cmp(&b.metric).then(s1.cmp(s2)));
        }
        l.into_iter().map(|(_, r)| r).collect()
    }
    /// `add` (IPv4: EEXIST on the same TOS and metric; IPv6: on the same metric).
    fn add(&mut self, r: RouteSpec<A>) -> Result<(), Errno> {
        if self
            .routes
            .iter()
            .any(|(_, o)| o.dst == r.dst && o.tos == r.tos && o.metric == r.metric)
        {
            return Err(Errno::EEXIST);
        }
        self.seq += 1;
        self.routes.push((self.seq, r));
        Ok(())
    }
    fn remove(&mut self, r: &RouteSpec<A>) {
        let i = self
            .routes
            .iter()
            .position(|(_, o)| o == r)
            .expect("present");
        self.routes.remove(i);
    }
    /// All dsts containing `addr`, longest first.
    fn dsts(&self, addr: A) -> Vec<Prefix<A>> {
        let mut d: Vec<Prefix<A>> = self
            .routes
            .iter()
            .map(|(_, r)| r.dst)
            .filter(|p| p.contains(addr))
            .collect();
        d.sort_by_key(|p| std::cmp::Reverse(p.len()));
        d.dedup();
        d
    }
}

/// IPv4 selection, as docs/semantics.md states it.
fn model_lookup4(
    m: &Model<Ipv4Addr>,
    addr: Ipv4Addr,
    tos: u8,
    oif: Option<u32>,
) -> Option<(&RouteSpec<Ipv4Addr>, Option<Errno>)> {
    for d in m.dsts(addr) {
        for r in m.list(&d) {
            if r.tos != 0 && r.tos != tos & 0x1c {
                continue;
            }
            if let Some(e) = r.kind.reject_error() {
                return Some((r, Some(e)));
            }
            if r.hops.iter().any(|h| {
                h.dev
                    .is_some_and(|d| Links.is_up(d) && oif.is_none_or(|o| o == d))
            }) {
                return Some((r, None));
            }
        }
    }
    None
}

/// IPv6 selection: the best metric's routes by score (device match, preference), else all others
/// by score; ties to the earlier route.
fn model_lookup6(
    m: &Model<Ipv6Addr>,
    addr: Ipv6Addr,
    oif: Option<u32>,
    strict: bool,
) -> Option<(&RouteSpec<Ipv6Addr>, Option<Errno>)> {
    let score = |r: &RouteSpec<Ipv6Addr>| -> Option<i32> {
        let dev = r.hops.first().and_then(|h| h.dev).unwrap_or(1);
        if !Links.is_up(dev) {
            return None;
        }
        let m = if oif.is_none_or(|o| o == dev) { 2 } else { 0 };
        if m == 0 && strict {
            return None;
        }
        Some(m | (r.pref.score() << 2))
    };
    for d in m.dsts(addr) {
        let list = m.list(&d);
        let first_metric = list[0].metric;
        let (head, tail): (Vec<_>, Vec<_>) =
            list.into_iter().partition(|r| r.metric == first_metric);
        for group in [head, tail] {
            let mut best: Option<(&RouteSpec<Ipv6Addr>, i32)> = None;
            for r in group {
                if let Some(s) = score(r) {
                    if best.is_none_or(|(_, b)| s > b) {
                        best = Some((r, s));
                    }
                }
            }
            if let Some((r, _)) = best {
                return Some((r, r.kind.reject_error()));
            }
        }
    }
    None
}

fn answer<A: Address>(
    t: TableLookup<A>,
    nhs: &NhTable<A>,
) -> Option<(RouteSpec<A>, Option<Errno>)> {
    match t {
        TableLookup::None | TableLookup::Miss => None,
        TableLookup::Match { route, .. } => {
            Some((route.with_hops(nhs.get(route.hops).to_vec()), None))
        }
        TableLookup::Reject { route, errno } => {
            Some((route.with_hops(nhs.get(route.hops).to_vec()), Some(errno)))
        }
    }
}

fn dump<A: KernelSemantics>(rib: &Rib<A>, nhs: &NhTable<A>) -> Vec<RouteSpec<A>> {
    rib.iter()
        .map(|r| r.with_hops(nhs.get(r.hops).to_vec()))
        .collect()
}

fn insert<A: KernelSemantics>(
    rib: &mut Rib<A>,
    nhs: &mut NhTable<A>,
    spec: &RouteSpec<A>,
    mode: InsertMode,
) -> Result<(), ChangeError> {
    let nh = nhs.intern(&spec.hops);
    match rib.insert(spec.with_hops(nh), mode, nhs, &mut Vec::new()) {
        Ok(displaced) => {
            for d in displaced {
                nhs.release(d.hops);
            }
            Ok(())
        }
        Err(e) => {
            nhs.release(nh);
            Err(e)
        }
    }
}

/// Builds both from the same `add`s; they must agree on which fail.
fn build<A: KernelSemantics>(specs: &[RouteSpec<A>]) -> (Rib<A>, NhTable<A>, Model<A>) {
    let mut rib = Rib::new(TABLE_MAIN);
    let mut nhs = NhTable::new();
    let mut model = Model::new();
    for s in specs {
        let r = insert(&mut rib, &mut nhs, s, InsertMode::Add).map_err(|e| e.errno);
        assert_eq!(r, model.add(s.clone()), "add {s:?}");
    }
    (rib, nhs, model)
}

/// Iteration is sorted by destination and, inside one, in the model's order; it is complete.
fn check_order<A: KernelSemantics>(rib: &Rib<A>, nhs: &NhTable<A>, model: &Model<A>) {
    let got = dump(rib, nhs);
    let mut dsts: Vec<Prefix<A>> = model.routes.iter().map(|(_, r)| r.dst).collect();
    dsts.sort();
    dsts.dedup();
    let want: Vec<RouteSpec<A>> = dsts
        .iter()
        .flat_map(|d| model.list(d).into_iter().cloned())
        .collect();
    assert_eq!(got, want);
    assert_eq!(rib.len(), model.routes.len());
    assert_eq!(
        nhs.len(),
        {
            let mut groups: Vec<&Vec<NextHop<A>>> = model
                .routes
                .iter()
                .map(|(_, r)| &r.hops)
                .filter(|h| !h.is_empty())
                .collect();
            groups.sort();
            groups.dedup();
            groups.len()
        },
        "one interned group per distinct next-hop set"
    );
    let mut attrs: Vec<_> = model
        .routes
        .iter()
        .map(|(_, r)| (r.protocol, r.scope, r.prefsrc, r.mtu, r.nhid))
        .collect();
    attrs.sort();
    attrs.dedup();
    assert_eq!(
        rib.attr_sets(),
        attrs.len(),
        "one interned attribute set per distinct set of the routes held"
    );
}

/// Every stored list of `specs` (some through a next-hop object: `nhid`, so that a list whose
/// next hops are all down is a miss) asked `verdict` and `select` for each of `flows`. Only
/// IPv4 answers `verdict` its own way; IPv6's default is `select`'s kind by definition.
fn verdicts_agree<A: KernelSemantics>(specs: &[(RouteSpec<A>, bool)], flows: &[(u8, Option<u32>)]) {
    let (mut rib, mut nhs) = (Rib::new(TABLE_MAIN), NhTable::new());
    for (s, object) in specs {
        let s = RouteSpec {
            nhid: object.then_some(crate::nexthop::NhObjectRef {
                id: 7,
                group: false,
            }),
            ..s.clone()
        };
        let _ = insert(&mut rib, &mut nhs, &s, InsertMode::Append);
    }
    for (_, dst, entry) in rib.entries() {
        for &(tos, oif) in flows {
            let flow = Flow {
                tos,
                oif,
                ..Flow::to(dst.addr())
            };
            let list = rib.routes_of(dst, entry);
            assert_eq!(
                A::verdict(list, &flow, &nhs, &Links),
                Verdict::of(&A::select(list, &flow, &nhs, &Links)),
                "{dst} tos {tos} oif {oif:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn ipv4_verdict_is_select_without_its_route(specs in prop::collection::vec((arb_spec4(), any::<bool>()), 0..30), flows in prop::collection::vec((prop::sample::select(vec![0u8, 4, 16]), prop::option::of(2u32..6)), 1..4)) {
        verdicts_agree(&specs, &flows);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn ipv4_lookups_agree_with_model(specs in prop::collection::vec(arb_spec4(), 0..30), probes in prop::collection::vec((0u32..8, any::<u32>(), prop::sample::select(vec![0u8, 4, 16, 0x13, 0x1c]), prop::option::of(2u32..6)), 1..10)) {
        let (rib, nhs, model) = build(&specs);
        check_order(&rib, &nhs, &model);
        for (hi, lo, tos, oif) in probes {
            let addr = Ipv4Addr::from((hi << 29) | (hi << 16) | (lo & 0x0000_ffff & if lo % 3 == 0 { 0xff } else { 0xffff }));
            let flow = Flow { tos, oif, ..Flow::to(addr) };
            let got = answer(rib.lookup(&flow, &nhs, &Links), &nhs);
            let want = model_lookup4(&model, addr, tos, oif).map(|(r, e)| (r.clone(), e));
            prop_assert_eq!(got, want, "lookup {} tos {} oif {:?}", addr, tos, oif);
        }
    }

    #[test]
    fn ipv6_lookups_agree_with_model(specs in prop::collection::vec(arb_spec6(), 0..30), probes in prop::collection::vec((0u128..8, any::<u64>(), prop::option::of(2u32..6), any::<bool>()), 1..10)) {
        let (rib, nhs, model) = build(&specs);
        check_order(&rib, &nhs, &model);
        for (hi, lo, oif, strict) in probes {
            let addr = Ipv6Addr::from((hi << 125) | (hi << 80) | (lo as u128 % 3));
            let flow = Flow { oif, strict_oif: strict && oif.is_some(), ..Flow::to(addr) };
            let got = answer(rib.lookup(&flow, &nhs, &Links), &nhs);
            let want = model_lookup6(&model, addr, oif, strict && oif.is_some()).map(|(r, e)| (r.clone(), e));
            prop_assert_eq!(got, want, "lookup {} oif {:?}", addr, oif);
        }
    }

    #[test]
    fn insert_order_does_not_matter(specs in prop::collection::vec(arb_spec4(), 0..30), seed in any::<u64>()) {
        // Distinct (dst, tos, metric) keys: then the result cannot depend on the order.
        let mut uniq: Vec<RouteSpec<Ipv4Addr>> = Vec::new();
        for s in specs {
            if !uniq.iter().any(|o| o.dst == s.dst && o.tos == s.tos && o.metric == s.metric) {
                uniq.push(s);
            }
        }
        let (a, na, _) = build(&uniq);
        let n = uniq.len();
        for i in 0..n {
            let j = (seed as usize ^ i.wrapping_mul(0x9e37)) % n;
            uniq.swap(i, j);
        }
        let (b, nb, _) = build(&uniq);
        prop_assert_eq!(dump(&a, &na), dump(&b, &nb));
    }

    #[test]
    fn delete_undoes_insert(specs in prop::collection::vec(arb_spec6(), 1..30), mut extra in arb_spec6()) {
        // An IPv6 delete names a route by metric, gateway and device only: a device route is
        // not told apart from a gateway route on the same device, so give it a gateway.
        for h in extra.hops.iter_mut() {
            h.gateway.get_or_insert(Ipv6Addr::new(0x2001, 0xdb8, 0xee, 0, 0, 0, 0, 1));
        }
        let (mut rib, mut nhs, model) = build(&specs);
        let before = dump(&rib, &nhs);
        let groups = nhs.len();
        let attr_sets = rib.attr_sets();
        if insert(&mut rib, &mut nhs, &extra, InsertMode::Append).is_ok() {
            prop_assert_eq!(rib.len(), model.routes.len() + 1);
            let removed = rib.delete(&RouteSelector { leg: true, ..RouteSelector::exact(&extra) }, &nhs, &mut Vec::new()).expect("present");
            prop_assert_eq!(removed.len(), 1);
            for r in removed {
                nhs.release(r.hops);
            }
        }
        prop_assert_eq!(dump(&rib, &nhs), before);
        prop_assert_eq!(nhs.len(), groups, "no next-hop group leaks");
        prop_assert_eq!(rib.attr_sets(), attr_sets, "no attribute set leaks");
    }

    #[test]
    fn delete_then_model_agree(specs in prop::collection::vec(arb_spec4(), 1..30), picks in prop::collection::vec(any::<prop::sample::Index>(), 1..10)) {
        let (mut rib, mut nhs, mut model) = build(&specs);
        for pick in picks {
            if model.routes.is_empty() {
                break;
            }
            let victim = model.routes[pick.index(model.routes.len())].1.clone();
            // The kernel deletes the first route of the list matching the selector; with every
            // attribute named, that is the first identical route.
            let removed = rib.delete(&RouteSelector::exact(&victim), &nhs, &mut Vec::new()).expect("present");
            prop_assert_eq!(removed.len(), 1);
            prop_assert_eq!(removed[0].with_hops(nhs.get(removed[0].hops).to_vec()), victim.clone());
            for r in removed {
                nhs.release(r.hops);
            }
            model.remove(&victim);
            check_order(&rib, &nhs, &model);
        }
    }

    #[test]
    fn covering_and_covered_are_exact(specs in prop::collection::vec(arb_spec4(), 0..30), hi in 0u32..8, len in 0u8..=32) {
        let (rib, nhs, model) = build(&specs);
        let q = Prefix::new(Ipv4Addr::from((hi << 29) | (hi << 16) | 0x0101), len);
        let covering: Vec<_> = rib.covering(&q).into_iter().map(|r| r.with_hops(nhs.get(r.hops).to_vec())).collect();
        let mut dsts: Vec<Prefix<Ipv4Addr>> = model.routes.iter().map(|(_, r)| r.dst).filter(|d| d.covers(&q)).collect();
        dsts.sort_by_key(|d| d.len());
        dsts.dedup();
        let want: Vec<_> = dsts.iter().flat_map(|d| model.list(d).into_iter().cloned()).collect();
        prop_assert_eq!(covering, want);
        let covered: Vec<_> = rib.covered(&q).map(|r| r.with_hops(nhs.get(r.hops).to_vec())).collect();
        let mut dsts: Vec<Prefix<Ipv4Addr>> = model.routes.iter().map(|(_, r)| r.dst).filter(|d| q.covers(d)).collect();
        dsts.sort();
        dsts.dedup();
        let want: Vec<_> = dsts.iter().flat_map(|d| model.list(d).into_iter().cloned()).collect();
        prop_assert_eq!(covered, want);
        let from: Vec<_> = rib.iter_from(&q).map(|r| r.dst).collect();
        let mut want: Vec<_> = model.routes.iter().map(|(_, r)| r.dst).filter(|d| *d >= q).collect();
        want.sort();
        prop_assert_eq!(from, want);
    }
}

#[test]
fn ipv4_ordering_and_errors_follow_the_kernel() {
    let mut rib = Rib::new(TABLE_MAIN);
    let mut nhs = NhTable::new();
    let p: Prefix<Ipv4Addr> = "10.0.0.0/8".parse().unwrap();
    let via = |g: u8| vec![NextHop::via(Ipv4Addr::new(192, 0, 2, g), 2)];
    let r = |g: u8, tos: u8, metric: u32| RouteSpec {
        tos,
        metric,
        ..RouteSpec::new(p, via(g))
    };
    insert(&mut rib, &mut nhs, &r(1, 0, 10), InsertMode::Add).unwrap();
    assert_eq!(
        insert(&mut rib, &mut nhs, &r(2, 0, 10), InsertMode::Add)
            .unwrap_err()
            .errno,
        Errno::EEXIST
    );
    insert(&mut rib, &mut nhs, &r(2, 0, 10), InsertMode::Append).unwrap();
    insert(&mut rib, &mut nhs, &r(3, 0, 10), InsertMode::Prepend).unwrap();
    insert(&mut rib, &mut nhs, &r(4, 0x10, 20), InsertMode::Add).unwrap();
    insert(&mut rib, &mut nhs, &r(5, 0, 5), InsertMode::Add).unwrap();
    assert_eq!(
        insert(&mut rib, &mut nhs, &r(2, 0, 10), InsertMode::Append)
            .unwrap_err()
            .errno,
        Errno::EEXIST,
        "identical route"
    );
    let order: Vec<(u8, u32, u8)> = rib
        .get(&p, &Prefix::any())
        .iter()
        .map(|x| {
            (
                x.tos,
                x.metric,
                nhs.get(x.hops)[0].gateway.unwrap().octets()[3],
            )
        })
        .collect();
    assert_eq!(
        order,
        [(0x10, 20, 4), (0, 5, 5), (0, 10, 3), (0, 10, 1), (0, 10, 2)]
    );
    // replace swaps the first of the group; an identical route further down is EEXIST.
    insert(&mut rib, &mut nhs, &r(9, 0, 10), InsertMode::Replace).unwrap();
    assert_eq!(
        insert(&mut rib, &mut nhs, &r(1, 0, 10), InsertMode::Replace)
            .unwrap_err()
            .errno,
        Errno::EEXIST
    );
    insert(&mut rib, &mut nhs, &r(9, 0, 10), InsertMode::Replace).unwrap();
    assert_eq!(
        insert(&mut rib, &mut nhs, &r(7, 0, 99), InsertMode::Change)
            .unwrap_err()
            .errno,
        Errno::ENOENT
    );
    let order: Vec<u8> = rib
        .get(&p, &Prefix::any())
        .iter()
        .map(|x| nhs.get(x.hops)[0].gateway.unwrap().octets()[3])
        .collect();
    assert_eq!(order, [4, 5, 9, 1, 2]);
    // TOS selection: a flow with TOS 0x10 takes the TOS route, others skip it.
    let flow = Flow {
        tos: 0x12,
        ..Flow::to(Ipv4Addr::new(10, 1, 1, 1))
    };
    assert!(
        matches!(rib.lookup(&flow, &nhs, &AllUp), TableLookup::Match { route, .. } if route.tos == 0x10)
    );
    let flow = Flow {
        tos: 0x08,
        ..Flow::to(Ipv4Addr::new(10, 1, 1, 1))
    };
    assert!(
        matches!(rib.lookup(&flow, &nhs, &AllUp), TableLookup::Match { route, .. } if route.metric == 5)
    );
}

#[test]
fn ipv6_ecmp_siblings_and_source_routes() {
    let mut rib = Rib::new(TABLE_MAIN);
    let mut nhs = NhTable::new();
    let p: Prefix<Ipv6Addr> = "2001:db8::/32".parse().unwrap();
    let gw = |g: u16| Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, g);
    let via = |g: u16, dev: u32| RouteSpec {
        metric: 1024,
        ..RouteSpec::new(p, vec![NextHop::via(gw(g), dev)])
    };
    insert(&mut rib, &mut nhs, &via(1, 2), InsertMode::Add).unwrap();
    assert_eq!(
        insert(&mut rib, &mut nhs, &via(2, 2), InsertMode::Add)
            .unwrap_err()
            .errno,
        Errno::EEXIST,
        "same metric"
    );
    insert(
        &mut rib,
        &mut nhs,
        &RouteSpec {
            metric: 1024,
            ..RouteSpec::new(p, vec![NextHop::dev(3)])
        },
        InsertMode::Append,
    )
    .unwrap();
    insert(&mut rib, &mut nhs, &via(2, 4), InsertMode::Prepend).unwrap();
    assert_eq!(
        insert(&mut rib, &mut nhs, &via(2, 4), InsertMode::Append)
            .unwrap_err()
            .errno,
        Errno::EEXIST,
        "duplicate next hop"
    );
    let list = rib.get(&p, &Prefix::any());
    assert_eq!(list.len(), 3, "prepend goes to the end too");
    assert_eq!(
        ipv6::siblings(&list, 0, &nhs).len(),
        2,
        "gateway routes of one metric are siblings; the device route is not"
    );
    // Deleting without a gateway removes every sibling.
    let gone = rib
        .delete(
            &RouteSelector {
                metric: Some(1024),
                dev: Some(2),
                ..RouteSelector::prefix(p)
            },
            &nhs,
            &mut Vec::new(),
        )
        .unwrap();
    assert_eq!(gone.len(), 2);
    // Source-specific: a lookup with a matching source takes the `from` route; without one, the
    // destination with a source subtree and no match is passed over.
    let sp: Prefix<Ipv6Addr> = "2001:db8:1::/48".parse().unwrap();
    let src: Prefix<Ipv6Addr> = "2001:db8:ff::/48".parse().unwrap();
    insert(
        &mut rib,
        &mut nhs,
        &RouteSpec {
            src,
            metric: 1024,
            ..RouteSpec::new(sp, vec![NextHop::dev(4)])
        },
        InsertMode::Add,
    )
    .unwrap();
    insert(
        &mut rib,
        &mut nhs,
        &RouteSpec {
            metric: 1024,
            kind: RouteType::Blackhole,
            ..RouteSpec::new(sp, vec![])
        },
        InsertMode::Add,
    )
    .unwrap();
    let to = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
    let with_src = Flow {
        src: Some(Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 7)),
        ..Flow::to(to)
    };
    assert!(
        matches!(rib.lookup(&with_src, &nhs, &AllUp), TableLookup::Match { route, .. } if route.src == src)
    );
    assert!(
        matches!(rib.lookup(&Flow::to(to), &nhs, &AllUp), TableLookup::Match { route, .. } if route.dst == p),
        "the /48's source-less blackhole is skipped"
    );
}
