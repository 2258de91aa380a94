//! Route classes in a router: after commits, rollbacks and link changes, every class is
//! counted by exactly the FIB leaves that name it, and the FIBs answer as the RIB's walk.
use crate::io::iproute2::{parse_line, Batch, Command};
use crate::router::{Change, Router};
use crate::RouteQuery;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn router(rules: bool) -> Router {
    let mut b = Batch::new(Router::new());
    let mut text = String::from(
        "link set lo up\nlink add veth0 type veth peer name veth1\nlink set veth0 up\n\
         link set veth1 up\naddr add 10.0.0.1/24 dev veth0\naddr add 10.1.0.1/24 dev veth1\n\
         addr add 10.9.0.1/16 dev veth1\naddr add 2001:db8::1/64 dev veth0\n",
    );
    if rules {
        text.push_str("rule add from 10.9.0.0/16 lookup 7 pref 5\n");
    }
    let out = b.run_text(&text);
    assert!(out.success(), "{}", out.stderr);
    b.router
}

/// Routes of a few next hops, so that destinations share classes, and lists of two routes
/// (slot ids), replaced, moved between next hops, and links that go down and up; and for the
/// prepared answers of plain queries: multipath, reject and `throw` routes, a preferred source,
/// a direct route whose source an address added later decides, next-hop objects replaced (and
/// veth1's first address removed, which gives routes through 10.1.0.2 another source: the
/// router's setup gives veth1 a second one).
const LINES: [&str; 37] = [
    "route add 198.18.0.0/24 via 10.0.0.2",
    "route add 198.18.1.0/24 via 10.0.0.2",
    "route add 198.18.2.0/24 via 10.1.0.2",
    "route del 198.18.1.0/24",
    "route replace 198.18.0.0/24 via 10.1.0.2",
    "route replace 198.18.1.0/24 via 10.0.0.2 metric 7",
    "route append 198.18.2.0/24 via 10.0.0.2 metric 9",
    "route del 198.18.2.0/24 metric 9",
    "route add 198.18.0.0/16 via 10.0.0.2",
    "route del 198.18.0.0/16",
    "route add blackhole 198.18.3.0/24",
    "route add 198.18.3.0/24 tos 0x10 via 10.0.0.2",
    "link set veth1 down",
    "link set veth1 up",
    "route add 2001:db8:1::/48 via 2001:db8::2",
    "route add 2001:db8:2::/48 via 2001:db8::2",
    "route del 2001:db8:1::/48",
    "route add 2001:db8:2::/48 from 2001:db8:9::/48 via 2001:db8::3",
    "addr del 10.1.0.1/24 dev veth1",
    "route add 198.18.4.0/24 via 10.0.0.99 dev veth0 onlink",
    "route add 198.18.5.0/24 nexthop via 10.0.0.2 nexthop via 10.1.0.2",
    "route add unreachable 198.18.6.0/24",
    "route add throw 198.18.7.0/24",
    "route add 198.18.9.0/24 via 10.0.0.2 src 10.0.0.1",
    "route add 198.18.10.128/25 dev veth0",
    "addr add 198.18.10.9/24 dev veth0",
    "nexthop add id 5 via 10.0.0.2 dev veth0",
    "route add 198.18.11.0/24 nhid 5",
    "nexthop replace id 5 via 10.1.0.2 dev veth1",
    "route add local 198.18.12.0/24 dev lo",
    "route add 2001:db8:3::/48 dev veth0",
    "route add unreachable 2001:db8:4::/48",
    "route add 2001:db8:5::/48 nexthop via 2001:db8::2 nexthop via 2001:db8::3",
    "route add 198.18.13.0/24 via 10.0.0.2 mtu 1400",
    "route del 198.18.13.0/24",
    "route add 198.18.13.0/24 via 10.0.0.2 mtu 1500",
    "route add default via 10.0.0.2",
];

/// Main's routes, local's (addresses, broadcasts, loopback) and IPv6 local's; and destinations
/// a plain query never takes the fast path to (the limited broadcast, a group, 0.0.0.0, IPv6
/// multicast and link-local).
const PROBES: [&str; 31] = [
    "10.0.0.1",
    "10.0.0.255",
    "10.1.0.1",
    "127.0.0.1",
    "2001:db8::1",
    "198.18.0.5",
    "198.18.1.5",
    "198.18.2.5",
    "198.18.3.5",
    "198.18.4.5",
    "198.18.5.5",
    "198.18.6.5",
    "198.18.7.5",
    "198.18.9.1",
    "198.18.9.5",
    "198.18.10.200",
    "198.18.11.5",
    "198.18.12.5",
    "2001:db8:1::1",
    "2001:db8:2::1",
    "2001:db8:3::1",
    "2001:db8:4::1",
    "2001:db8:5::1",
    "2001:db8:5::2",
    "203.0.113.1",
    "198.18.13.5",
    "255.255.255.255",
    "224.0.0.1",
    "0.0.0.0",
    "ff02::1",
    "fe80::1",
];

fn changes(r: &Router, lines: &[&str]) -> Vec<Change> {
    lines
        .iter()
        .map(|l| match parse_line(l, None, r).expect("parses") {
            Command::Apply(c) => c,
            other => panic!("not a change: {other:?}"),
        })
        .collect()
}

fn check(r: &Router) {
    let v4 = r.family::<Ipv4Addr>();
    let v6 = r.family::<Ipv6Addr>();
    v4.merged_fib()
        .into_iter()
        .for_each(|f| f.check_classes(v4));
    for t in v4.tables() {
        v4.table_fib(t.id)
            .into_iter()
            .for_each(|f| f.check_classes(v4));
    }
    for t in v6.tables() {
        v6.table_fib(t.id)
            .into_iter()
            .for_each(|f| f.check_classes(v6));
    }
}

/// Each probe asked plainly (the prepared answers' fast path) and in one of six other shapes
/// (a mark, a protocol and port, a TOS, a source, an output device, an input device), which the
/// full path answers.
fn answers(r: &Router) -> Vec<String> {
    fn ask<A: crate::router::RouterFamily>(r: &Router, dst: A, shape: usize, src: A) -> String {
        let plain = RouteQuery::to(dst);
        let shaped = match shape {
            0 => RouteQuery { mark: 7, ..plain },
            1 => RouteQuery {
                ipproto: Some(6),
                dport: Some(80),
                ..plain
            },
            2 => RouteQuery { tos: 0x10, ..plain },
            3 => RouteQuery {
                src: Some(src),
                ..plain
            },
            4 => RouteQuery {
                oif: Some(2),
                ..plain
            },
            _ => RouteQuery {
                iif: Some(3),
                src: Some(src),
                ..plain
            },
        };
        format!("{:?} {:?}", r.route_get(&plain), r.route_get(&shaped))
    }
    PROBES
        .iter()
        .enumerate()
        .map(|(i, p)| match p.parse::<IpAddr>().unwrap() {
            IpAddr::V4(a) => ask(r, a, i % 6, Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V6(a) => ask(r, a, i % 6, "2001:db8::1".parse().unwrap()),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Change sets that commit, or fail and roll back (a deletion of a route that is not there
    /// ends each set whose last pick is odd): after each, the classes are counted by the
    /// leaves, and the FIBs answer as the RIB's walk does, in the router and in a copy of it.
    #[test]
    fn classes_follow_commits_and_rollbacks(
        rules in any::<bool>(),
        sets in prop::collection::vec(prop::collection::vec(0usize..LINES.len(), 1..5), 1..8),
    ) {
        let mut r = router(rules);
        for picks in sets {
            let lines: Vec<&str> = picks.iter().map(|&p| LINES[p]).collect();
            let mut set = changes(&r, &lines);
            if picks[picks.len() - 1] % 2 == 1 {
                // A route's failure: a link's (the change sets the links' mark first) would
                // leave the FIBs to the next rebuild, and the RIB would answer for them.
                set.extend(changes(&r, &["route del 192.0.2.0/24"]));
            }
            let _ = r.apply(&set);
            check(&r);
            let v4 = r.family::<Ipv4Addr>();
            prop_assert!(
                rules || v4.merged_fib().is_some_and(|f| f.plain_answers() > 0),
                "plain queries take the fast path"
            );
            let copy = r.clone();
            check(&copy);
            let mut rib = r.clone();
            rib.set_fibs_enabled(false);
            let fib = answers(&r);
            prop_assert_eq!(&fib, &answers(&rib), "after {:?}", lines);
            prop_assert_eq!(&fib, &answers(&copy), "a copy, after {:?}", lines);
        }
    }
}

/// Destinations with one route each share their route's class: a /24 and a /25 of each of two
/// next hops make four classes for any number of destinations, and they go with their routes.
#[test]
fn destinations_share_classes() {
    let mut r = router(false);
    let mut lines = Vec::new();
    for (net, len) in [(18, 24), (19, 25)] {
        for i in 0..64 {
            let gw = if i % 2 == 0 { "10.0.0.2" } else { "10.1.0.2" };
            lines.push(format!("route add 198.{net}.{i}.0/{len} via {gw}"));
        }
    }
    let refs: Vec<&str> = lines.iter().map(|l| l.as_str()).collect();
    r.apply(&changes(&r, &refs)).unwrap();
    check(&r);
    let classes = |r: &Router| r.family::<Ipv4Addr>().merged_fib().unwrap().route_classes();
    // The local table's routes (addresses, broadcasts) and the subnets are classes too.
    let base = classes(&router(false));
    assert_eq!(classes(&r), base + 4);
    let dels: Vec<String> = lines[..64]
        .iter()
        .map(|l| l.replace("add", "del"))
        .collect();
    let refs: Vec<&str> = dels.iter().map(|l| l.as_str()).collect();
    r.apply(&changes(&r, &refs)).unwrap();
    check(&r);
    assert_eq!(
        classes(&r),
        base + 2,
        "the /24s' two classes went with them"
    );
}

/// Lowers this thread's cap of classes until dropped.
struct Cap;
impl Cap {
    fn lower(to: usize) -> Cap {
        super::TEST_CAP.with(|c| c.set(to));
        Cap
    }
}
impl Drop for Cap {
    fn drop(&mut self) {
        super::TEST_CAP.with(|c| c.set(super::MAX_CLASSES));
    }
}

/// Past the cap, destinations keep their slots' ids and answer as before; the places of classes
/// that went are taken again.
#[test]
fn past_the_cap_slots_answer() {
    let mut r = router(false);
    let classes = |r: &Router| r.family::<Ipv4Addr>().merged_fib().unwrap().route_classes();
    let base = classes(&r);
    let _cap = Cap::lower(base + 2);
    // Eight metrics: eight routes that could be classes; two are.
    let adds: Vec<String> = (0..8)
        .map(|i| format!("route add 198.18.{i}.0/24 via 10.0.0.2 metric {i}"))
        .collect();
    let dels: Vec<String> = adds.iter().map(|l| l.replace("add", "del")).collect();
    let apply = |r: &mut Router, lines: &[String]| {
        let refs: Vec<&str> = lines.iter().map(|l| l.as_str()).collect();
        let set = changes(r, &refs);
        r.apply(&set).unwrap();
        check(r);
    };
    let ask = |r: &Router| -> Vec<String> {
        (0..8)
            .map(|i| Ipv4Addr::new(198, 18, i, 1))
            .map(|a| format!("{:?}", r.route_get(&RouteQuery::to(a))))
            .collect()
    };
    let through_rib = |r: &Router| {
        let mut rib = r.clone();
        rib.set_fibs_enabled(false);
        ask(&rib)
    };
    apply(&mut r, &adds);
    assert_eq!(classes(&r), base + 2);
    assert!(ask(&r).iter().all(|a| a.starts_with("Ok")), "{:?}", ask(&r));
    assert_eq!(ask(&r), through_rib(&r));
    apply(&mut r, &dels);
    assert_eq!(classes(&r), base);
    apply(&mut r, &adds);
    assert_eq!(classes(&r), base + 2);
    assert_eq!(ask(&r), through_rib(&r));
}

/// Whether `route get` answers `q` from a prepared answer.
fn prepared<A: crate::router::RouterFamily>(r: &Router, q: &RouteQuery<A>) -> bool {
    <A as crate::router::family::Kernel>::prepared_answer(r, q).is_some()
}

/// Plain queries take the fast path, and the rest the full one, each answering as the RIB's
/// walk: every query field and destination that the fast path must leave alone does.
#[test]
fn plain_queries_take_the_fast_path() {
    let mut r = router(false);
    let lines = [
        "route add 198.18.0.0/24 via 10.0.0.2",
        "route add default via 10.0.0.2",
        "route add 2001:db8:1::/48 via 2001:db8::2",
        "route add ::/0 via 2001:db8::2",
    ];
    r.apply(&changes(&r, &lines)).unwrap();
    let mut rib = r.clone();
    rib.set_fibs_enabled(false);
    let v4 = |d: [u8; 4]| RouteQuery::to(Ipv4Addr::from(d));
    let fast4 = [
        v4([198, 18, 0, 5]),
        v4([203, 0, 113, 1]),
        v4([10, 0, 0, 1]),
        RouteQuery {
            mark: 7,
            ipproto: Some(6),
            dport: Some(80),
            uid: Some(5),
            fibmatch: true,
            ..v4([198, 18, 0, 5])
        },
        RouteQuery {
            src: Some(Ipv4Addr::UNSPECIFIED),
            ..v4([198, 18, 0, 5])
        },
    ];
    let full4 = [
        v4([255, 255, 255, 255]),
        v4([224, 0, 0, 1]),
        v4([0, 0, 0, 0]),
        RouteQuery {
            tos: 0x10,
            ..v4([198, 18, 0, 5])
        },
        RouteQuery {
            src: Some(Ipv4Addr::new(10, 0, 0, 1)),
            ..v4([198, 18, 0, 5])
        },
        RouteQuery {
            oif: Some(2),
            ..v4([198, 18, 0, 5])
        },
        RouteQuery {
            iif: Some(3),
            ..v4([198, 18, 0, 5])
        },
    ];
    let v6 = |s: &str| RouteQuery::to(s.parse::<Ipv6Addr>().unwrap());
    let fast6 = [v6("2001:db8:1::1"), v6("2001:db8::1"), v6("2001:db8:7::1")];
    let full6 = [
        v6("ff02::1"),
        v6("fe80::1"),
        v6("::1"),
        RouteQuery {
            src: Some("2001:db8::1".parse().unwrap()),
            ..v6("2001:db8:1::1")
        },
        RouteQuery {
            oif: Some(2),
            ..v6("2001:db8:1::1")
        },
    ];
    for (qs, fast) in [(&fast4[..], true), (&full4[..], false)] {
        for q in qs {
            assert_eq!(prepared(&r, q), fast, "{q:?}");
            assert_eq!(r.route_get(q), rib.route_get(q), "{q:?}");
        }
    }
    for (qs, fast) in [(&fast6[..], true), (&full6[..], false)] {
        for q in qs {
            assert_eq!(prepared(&r, q), fast, "{q:?}");
            assert_eq!(r.route_get(q), rib.route_get(q), "{q:?}");
        }
    }
    // A custom rule sends every IPv4 query the full way; IPv6's keep theirs.
    r.apply(&changes(&r, &["rule add from 10.9.0.0/16 lookup 7 pref 5"]))
        .unwrap();
    assert!(!prepared(&r, &fast4[0]));
    assert!(prepared(&r, &fast6[0]));
}

/// An attribute set's id let go and taken by other attributes inside one change set: the class
/// that names the id (same next hops, metric and length) is held again at commit, and its
/// answer is prepared again.
#[test]
fn attribute_sets_taken_again_in_a_change_set() {
    let mut r = router(false);
    let q = RouteQuery::to(Ipv4Addr::new(198, 18, 0, 5));
    let mtu = |r: &Router| r.route_get(&q).unwrap().route.unwrap().mtu;
    r.apply(&changes(
        &r,
        &["route add 198.18.0.0/24 via 10.0.0.2 mtu 1400"],
    ))
    .unwrap();
    assert_eq!(mtu(&r), Some(1400));
    let set = [
        "route del 198.18.0.0/24",
        "route add 198.18.0.0/24 via 10.0.0.2 mtu 1500",
    ];
    r.apply(&changes(&r, &set)).unwrap();
    assert!(prepared(&r, &q));
    assert_eq!(mtu(&r), Some(1500));
    let mut rib = r.clone();
    rib.set_fibs_enabled(false);
    assert_eq!(r.route_get(&q), rib.route_get(&q));
}
