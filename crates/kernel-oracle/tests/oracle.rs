//! Kernel-backed tests: they build small routing setups in a private namespace and check that the
//! oracle reports what the kernel decided. They skip (loudly) where namespaces cannot be created,
//! unless FIBRE_KERNEL_TESTS=required.

use std::net::IpAddr;
use std::path::Path;
use std::time::Instant;

use kernel_oracle::{skip_or_fail, Answer, KernelRoute, Netns, Oracle, Probe};

const ENETUNREACH: i32 = 101;
const EINVAL: i32 = 22;
const ENODEV: i32 = 19;
const RTN_UNICAST: u8 = 1;
const RTN_LOCAL: u8 = 2;
const RT_TABLE_MAIN: u32 = 254;
const RT_TABLE_LOCAL: u32 = 255;
const RTM_F_CLONED: u32 = 0x200;

fn addr(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn probe(dst: &str) -> Probe {
    Probe::to(addr(dst))
}

fn fib(dst: &str) -> Probe {
    Probe {
        fibmatch: true,
        ..probe(dst)
    }
}

fn route(answer: &Answer) -> &KernelRoute {
    match answer {
        Answer::Route(r) => r,
        Answer::Error(e) => panic!("expected a route, got errno {e}"),
    }
}

/// The setup shared by the tests: a veth pair with addresses, a handful of routes of different
/// kinds, a second table and a rule steering one source into it.
struct Lab {
    ns: Netns,
    veth0: u32,
    veth1: u32,
}

fn lab(tag: &str) -> Lab {
    let ns = Netns::create(tag).expect("create namespace");
    let links = ns.ip_batch_str(
        &[],
        "link add veth0 type veth peer name veth1\n\
         link set veth0 up\n\
         link set veth1 up\n\
         address add 10.0.0.1/24 dev veth0\n\
         address add 2001:db8::1/64 dev veth0 nodad\n",
    );
    let links = links.expect("run link batch");
    assert!(links.success, "link batch failed: {}", links.stderr);

    let script = std::env::temp_dir().join(format!("{}-routes.batch", ns.name()));
    std::fs::write(
        &script,
        "route add 198.51.100.0/24 via 10.0.0.2\n\
         route add blackhole 203.0.113.0/24\n\
         route add 192.0.2.0/24 nexthop via 10.0.0.2 weight 1 nexthop via 10.0.0.3 weight 3\n\
         route add 2001:db8:1::/48 via 2001:db8::2\n\
         route add 2001:db8:5::/48 from 2001:db8:100::/56 via 2001:db8::3\n\
         route add 192.0.2.0/25 via 10.0.0.4 table 100\n\
         rule add from 192.0.2.77 lookup 100 pref 100\n",
    )
    .unwrap();
    let routes = ns.ip_batch(&[], &script).expect("run route batch");
    std::fs::remove_file(&script).unwrap();
    assert!(
        routes.success,
        "route batch failed: {}{}",
        routes.stdout, routes.stderr
    );

    let veth0 = ns.ifindex("veth0").unwrap();
    let veth1 = ns.ifindex("veth1").unwrap();
    Lab { ns, veth0, veth1 }
}

#[test]
fn answers_match_the_configured_routes() {
    if skip_or_fail("answers_match_the_configured_routes") {
        return;
    }
    let lab = lab("routes");
    let mut oracle = Oracle::open(&lab.ns).unwrap();
    let probes = vec![
        /* 0 */ fib("198.51.100.9"),
        /* 1 */ probe("198.51.100.9"),
        /* 2 */ fib("203.0.113.1"),
        /* 3 */ fib("100.64.0.1"),
        /* 4 */ fib("192.0.2.200"),
        /* 5 */ fib("2001:db8:1::42"),
        /* 6 */ fib("2001:db8:5::1"),
        /* 7 */
        Probe {
            src: Some(addr("2001:db8:100::1")),
            ..fib("2001:db8:5::1")
        },
        /* 8: the rule needs an input lookup: output lookups insist the source is local */
        Probe {
            src: Some(addr("192.0.2.77")),
            iif: Some(lab.veth1),
            ..fib("192.0.2.5")
        },
        /* 9: same source, destination outside table 100 falls through to main */
        Probe {
            src: Some(addr("192.0.2.77")),
            iif: Some(lab.veth1),
            ..fib("198.51.100.1")
        },
        /* 10 */ fib("10.0.0.1"),
        /* 11 */
        Probe {
            iif: Some(9999),
            src: Some(addr("10.0.0.9")),
            ..fib("198.51.100.1")
        },
        /* 12: a connected route */ fib("10.0.0.77"),
        /* 13: an output lookup from a source that is not local is refused, with the same errno
         * as a missing route even though table 100 would match */
        Probe {
            src: Some(addr("192.0.2.77")),
            ..fib("192.0.2.5")
        },
    ];
    let answers = oracle.query(&probes).unwrap();
    assert_eq!(answers.len(), probes.len());

    let r = route(&answers[0]);
    assert_eq!(r.table, RT_TABLE_MAIN);
    assert_eq!(r.kind, RTN_UNICAST);
    assert_eq!((r.dst, r.dst_len), (addr("198.51.100.0"), 24));
    assert_eq!(r.gateway, Some(addr("10.0.0.2")));
    assert_eq!(r.oif, Some(lab.veth0));
    assert!(r.nexthops.is_empty());
    // The request flags are not echoed; a FIB entry is simply not marked as a clone.
    assert_eq!(r.flags & RTM_F_CLONED, 0);
    assert_eq!(r.protocol, 3, "proto boot, as `ip route add` defaults to");

    // Without fibmatch the kernel answers with the resolved destination: a host route.
    let r = route(&answers[1]);
    assert_eq!((r.dst, r.dst_len), (addr("198.51.100.9"), 32));
    assert_eq!(r.gateway, Some(addr("10.0.0.2")));
    assert_eq!(r.oif, Some(lab.veth0));
    assert_eq!(r.prefsrc, Some(addr("10.0.0.1")));
    assert_eq!(r.table, RT_TABLE_MAIN);
    assert_eq!(r.flags & RTM_F_CLONED, RTM_F_CLONED);

    assert_eq!(answers[2], Answer::Error(EINVAL), "blackhole");
    assert_eq!(answers[3], Answer::Error(ENETUNREACH), "no route");

    let r = route(&answers[4]);
    assert_eq!((r.dst, r.dst_len), (addr("192.0.2.0"), 24));
    assert_eq!(r.gateway, None);
    let hops: Vec<_> = r
        .nexthops
        .iter()
        .map(|h| (h.gateway, h.oif, h.weight))
        .collect();
    assert_eq!(
        hops,
        vec![
            (Some(addr("10.0.0.2")), lab.veth0, 1),
            (Some(addr("10.0.0.3")), lab.veth0, 3)
        ]
    );

    let r = route(&answers[5]);
    assert_eq!((r.dst, r.dst_len), (addr("2001:db8:1::"), 48));
    assert_eq!(r.gateway, Some(addr("2001:db8::2")));
    assert_eq!(r.oif, Some(lab.veth0));
    assert_eq!(r.table, RT_TABLE_MAIN);
    assert_eq!(r.metric, Some(1024));
    assert_eq!(r.pref, Some(0), "medium router preference");

    // The source-specific route exists only for its sources.
    assert_eq!(answers[6], Answer::Error(ENETUNREACH));
    let r = route(&answers[7]);
    assert_eq!((r.dst, r.dst_len), (addr("2001:db8:5::"), 48));
    assert_eq!((r.src, r.src_len), (Some(addr("2001:db8:100::")), 56));
    assert_eq!(r.gateway, Some(addr("2001:db8::3")));

    let r = route(&answers[8]);
    assert_eq!(r.table, 100);
    assert_eq!((r.dst, r.dst_len), (addr("192.0.2.0"), 25));
    assert_eq!(r.gateway, Some(addr("10.0.0.4")));
    let r = route(&answers[9]);
    assert_eq!(r.table, RT_TABLE_MAIN);
    assert_eq!(r.gateway, Some(addr("10.0.0.2")));

    let r = route(&answers[10]);
    assert_eq!(r.table, RT_TABLE_LOCAL);
    assert_eq!(r.kind, RTN_LOCAL);
    assert_eq!((r.dst, r.dst_len), (addr("10.0.0.1"), 32));

    assert_eq!(answers[11], Answer::Error(ENODEV), "unknown iif");

    let r = route(&answers[12]);
    assert_eq!((r.dst, r.dst_len), (addr("10.0.0.0"), 24));
    assert_eq!(r.gateway, None);
    assert_eq!(r.oif, Some(lab.veth0));
    assert_eq!(r.scope, 253, "link scope");
    assert_eq!(r.protocol, 2, "proto kernel");

    assert_eq!(answers[13], Answer::Error(ENETUNREACH), "non-local source");
}

#[test]
fn probes_from_many_batches_come_back_in_order() {
    if skip_or_fail("probes_from_many_batches_come_back_in_order") {
        return;
    }
    let lab = lab("order");
    let mut oracle = Oracle::open(&lab.ns).unwrap();

    let same = vec![fib("192.0.2.1"); 20_000];
    let start = Instant::now();
    let answers = oracle.query(&same).unwrap();
    let elapsed = start.elapsed();
    eprintln!(
        "20000 identical fibmatch probes in {elapsed:?}: {:.0} probes/s",
        same.len() as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(answers.len(), same.len());
    assert!(answers.iter().all(|a| *a == answers[0]));
    assert_eq!(route(&answers[0]).nexthops.len(), 2);

    // Distinct destinations are echoed back in RTA_DST, which proves the ordering; mixing in
    // failures checks that errors keep their place too.
    let mixed: Vec<Probe> = (0..100_000u32)
        .map(|i| {
            let host = i % 250 + 1;
            match i % 4 {
                0 => probe(&format!("198.51.100.{host}")),
                1 => probe(&format!("203.0.113.{host}")),
                2 => probe(&format!("2001:db8:1::{:x}:{:x}", i >> 16, i & 0xffff)),
                _ => probe(&format!("100.64.{}.{host}", i % 200)),
            }
        })
        .collect();
    let start = Instant::now();
    let answers = oracle.query(&mixed).unwrap();
    let elapsed = start.elapsed();
    let rate = mixed.len() as f64 / elapsed.as_secs_f64();
    eprintln!("100000 mixed probes in {elapsed:?}: {rate:.0} probes/s");
    assert_eq!(answers.len(), mixed.len());
    for (i, (p, a)) in mixed.iter().zip(&answers).enumerate() {
        match i % 4 {
            0 | 2 => assert_eq!(route(a).dst, p.dst, "probe #{i}"),
            1 => assert_eq!(*a, Answer::Error(EINVAL), "probe #{i}"),
            _ => assert_eq!(*a, Answer::Error(ENETUNREACH), "probe #{i}"),
        }
    }
    // Nothing may be left over to confuse the next call.
    let again = oracle.query(&[fib("198.51.100.1")]).unwrap();
    assert_eq!(route(&again[0]).dst_len, 24);
    assert!(oracle.query(&[]).unwrap().is_empty());
}

#[test]
fn selectors_reach_the_kernel() {
    if skip_or_fail("selectors_reach_the_kernel") {
        return;
    }
    let lab = lab("selectors");
    let batch = lab
        .ns
        .ip_batch_str(
            &[],
            "route add 198.18.0.0/15 via 10.0.0.5 table 200\n\
             route add 198.18.0.0/15 via 10.0.0.6 table 201\n\
             route add 198.18.0.0/15 via 10.0.0.7 table 202\n\
             route add 198.18.0.0/15 via 10.0.0.8 table 203\n\
             route add 198.18.0.0/15 via 10.0.0.9 table 204\n\
             rule add fwmark 0x2a lookup 200 pref 200\n\
             rule add ipproto tcp dport 443 lookup 201 pref 201\n\
             rule add uidrange 1000-1000 lookup 202 pref 202\n\
             rule add tos 0x10 lookup 203 pref 203\n\
             rule add sport 5353 lookup 204 pref 204\n",
        )
        .unwrap();
    assert!(batch.success, "{}", batch.stderr);
    let mut oracle = Oracle::open(&lab.ns).unwrap();
    let base = fib("198.18.1.1");
    let probes = vec![
        base.clone(),
        Probe {
            mark: Some(0x2a),
            ..base.clone()
        },
        Probe {
            ipproto: Some(6),
            dport: Some(443),
            ..base.clone()
        },
        Probe {
            ipproto: Some(6),
            dport: Some(80),
            ..base.clone()
        },
        Probe {
            uid: Some(1000),
            ..base.clone()
        },
        Probe {
            tos: 0x10,
            ..base.clone()
        },
        Probe {
            ipproto: Some(17),
            sport: Some(5353),
            ..base.clone()
        },
        Probe {
            oif: Some(lab.veth0),
            ..fib("198.51.100.1")
        },
    ];
    let answers = oracle.query(&probes).unwrap();
    let tables: Vec<_> = answers[..7]
        .iter()
        .map(|a| match a {
            Answer::Route(r) => Ok(r.table),
            Answer::Error(e) => Err(*e),
        })
        .collect();
    assert_eq!(
        tables,
        vec![
            Err(ENETUNREACH),
            Ok(200),
            Ok(201),
            Err(ENETUNREACH),
            Ok(202),
            Ok(203),
            Ok(204)
        ]
    );
    assert_eq!(route(&answers[7]).oif, Some(lab.veth0));
}

#[test]
fn bad_probes_are_errors_not_panics() {
    if skip_or_fail("bad_probes_are_errors_not_panics") {
        return;
    }
    let ns = Netns::create("bad").unwrap();
    let mut oracle = Oracle::open(&ns).unwrap();
    let probes = vec![
        fib("127.0.0.1"),
        Probe {
            src: Some(addr("2001:db8::1")),
            ..probe("192.0.2.1")
        },
    ];
    let err = oracle.query(&probes).unwrap_err();
    assert!(err.to_string().contains("probe #1"), "{err}");
    // The oracle stays usable after a rejected call.
    let answers = oracle.query(&probes[..1]).unwrap();
    assert_eq!(route(&answers[0]).kind, RTN_LOCAL);
}

#[test]
fn namespace_is_configured_and_removed_on_drop() {
    if skip_or_fail("namespace_is_configured_and_removed_on_drop") {
        return;
    }
    let ns = Netns::create("drop/me please").unwrap();
    let name = ns.name().to_string();
    assert!(name.starts_with(&format!("fibre-drop_me_please-{}-", std::process::id())));
    let path = Path::new("/run/netns").join(&name);
    assert!(path.exists());

    let links = ns.links().unwrap();
    assert_eq!(links, vec![("lo".to_string(), 1)]);
    assert!(ns.ip(&["link", "show", "lo"]).unwrap().contains("UP"));
    let sysctl = |key: &str| {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &name, "sysctl", "-n", key])
            .output()
            .unwrap();
        assert!(out.status.success(), "sysctl {key}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    assert_eq!(sysctl("net.ipv4.ip_forward"), "1");
    assert_eq!(sysctl("net.ipv6.conf.all.forwarding"), "1");
    assert_eq!(sysctl("net.ipv4.conf.all.rp_filter"), "0");
    assert_eq!(sysctl("net.ipv4.conf.default.rp_filter"), "0");
    assert_eq!(sysctl("net.ipv6.conf.default.addr_gen_mode"), "1");
    assert_eq!(sysctl("net.ipv6.conf.default.accept_dad"), "0");

    let err = ns.ip(&["route", "add", "not-an-address", "dev", "lo"]);
    assert!(err.is_err());
    let failing = ns
        .ip_batch_str(&[], "route add 192.0.2.0/24 dev lo\nroute add bogus\n")
        .unwrap();
    assert!(!failing.success);
    assert!(!failing.stderr.is_empty());
    assert!(ns.ip(&["route", "show"]).unwrap().contains("192.0.2.0/24"));

    let oracle = Oracle::open(&ns).unwrap();
    drop(ns);
    assert!(!path.exists(), "{} still exists", path.display());
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
    drop(oracle);
}
