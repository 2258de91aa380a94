//! Change sets are all or nothing: a failure anywhere leaves links, addresses, routes, rules and
//! the interned next hops exactly as they were.
use fibre::fib::NO_ROUTE;
use fibre::io::iproute2::{parse_line, Batch, BatchMode, Command};
use fibre::route::TABLE_MAIN;
use fibre::{Change, Errno, Router};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn router() -> Router {
    let mut b = Batch::new(Router::new());
    let out = b.run_text(
        "link set lo up\nlink add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\n\
         addr add 10.0.0.1/24 dev veth0\naddr add 2001:db8::1/64 dev veth0\n\
         route add 198.51.100.0/24 via 10.0.0.2\nroute add 2001:db8:1::/48 via 2001:db8::2\nrule add from 10.9.0.0/16 lookup 7 pref 5\n",
    );
    assert!(out.success(), "{}", out.stderr);
    b.router
}

/// Everything observable, for before/after comparisons.
fn state(r: &Router) -> String {
    let mut b = Batch::new(r.clone());
    b.run_text("route show table all\n-6 route show table all\nrule show\n-6 rule show\nlink show\naddr show\n").stdout
        + &format!("groups {} {}", r.family::<Ipv4Addr>().nexthops().len(),
            r.family::<Ipv6Addr>().nexthops().len())
        // Empty tables do not show in `route show`: a table a rolled-back set made must go too.
        + &format!("\ntables {:?} {:?}",
            r.family::<Ipv4Addr>().tables().map(|t| t.id).collect::<Vec<_>>(),
            r.family::<Ipv6Addr>().tables().map(|t| t.id).collect::<Vec<_>>())
}

fn changes(r: &Router, lines: &str) -> Vec<Change> {
    lines
        .lines()
        .map(|l| match parse_line(l, None, r).expect("parses") {
            Command::Apply(c) => c,
            other => panic!("not a change: {other:?}"),
        })
        .collect()
}

#[test]
fn a_failing_change_rolls_back_the_whole_set() {
    let mut r = router();
    let before = state(&r);
    let set = changes(
        &r,
        "route add 203.0.113.0/24 via 10.0.0.3\nroute replace 198.51.100.0/24 via 10.0.0.4\nroute del 2001:db8:1::/48\nrule add from 10.8.0.0/16 lookup 8 pref 6\naddr del 10.0.0.1/24 dev veth0\nroute add 198.51.100.0/24 via 10.0.0.9",
    );
    // The last change fails: the address it needs for its gateway was removed by the one before.
    let (i, e) = r.apply(&set).unwrap_err();
    assert_eq!(i, 5);
    assert_eq!(e.errno, Errno::EINVAL);
    assert_eq!(state(&r), before);
    // Without the failing change the same set lands.
    r.apply(&set[..5]).unwrap();
    assert_ne!(state(&r), before);
}

/// A route change outside a change set is a set of its own whose snapshot shares none of the
/// small parts (links, addresses, rules, next-hop objects: a route change edits none of them):
/// one that fails leaves everything as it was, and one that lands leaves what the same change
/// in an explicit set leaves.
#[test]
fn a_route_change_alone_is_all_or_nothing() {
    let failing = [
        // No route to the gateway; a route that is there already; nothing to delete (in a
        // table that does not exist either); a source route whose gateway has no route; a
        // second hop without a route to its gateway.
        "route add 203.0.113.0/24 via 10.7.0.3",
        "route add 198.51.100.0/24 via 10.0.0.2",
        "route del 192.0.2.0/24",
        "route del 2001:db8:9::/48 table 9",
        "route add 2001:db8:7::/48 from 2001:db8:99::/64 via 2001:db8:5::1",
        "route append 198.51.100.0/24 nexthop via 10.0.0.6 nexthop via 10.7.0.7",
    ];
    // After each: no set is left open (a set of each family's lone change and an explicit one
    // land), and the FIBs answer as the RIB's walk does.
    let probes = [
        "198.51.100.9",
        "203.0.113.9",
        "192.0.2.9",
        "10.0.0.7",
        "2001:db8:1::9",
        "2001:db8:7::1",
    ];
    let go_on = |r: &mut Router, line: &str| {
        for more in [
            "route add 192.0.2.128/25 via 10.0.0.2",
            "route add 2001:db8:2::/48 via 2001:db8::2",
        ] {
            let c = changes(r, more).remove(0);
            r.change(&c)
                .unwrap_or_else(|e| panic!("{line}, then {more}: {e:?}"));
        }
        // Each family's FIB took its lone change (a FIB left behind would not hold it).
        let v4 = r
            .family::<Ipv4Addr>()
            .merged_fib()
            .expect("IPv4's merged FIB");
        assert_ne!(
            v4.fib().lookup("192.0.2.129".parse().unwrap()),
            NO_ROUTE,
            "{line}"
        );
        let v6 = r
            .family::<Ipv6Addr>()
            .table_fib(TABLE_MAIN)
            .expect("IPv6 main's FIB");
        assert_ne!(
            v6.fib().lookup("2001:db8:2::1".parse().unwrap()),
            NO_ROUTE,
            "{line}"
        );
        let (fib, rib) = answers_both_ways(r, &probes);
        assert_eq!(fib, rib, "{line}: the FIBs follow");
        r.begin();
        r.commit();
    };
    for line in failing {
        let mut r = router();
        let before = state(&r);
        let c = changes(&r, line).remove(0);
        assert!(r.change(&c).is_err(), "{line}: should fail");
        assert_eq!(state(&r), before, "{line}");
        go_on(&mut r, line);
    }
    let landing = [
        "route add 203.0.113.0/24 via 10.0.0.3",
        "route add local 192.0.2.9/32 dev veth0 table 9",
        "route prepend 198.51.100.0/24 nexthop via 10.0.0.6 weight 2 nexthop via 10.0.0.7",
        "route del 198.51.100.0/24",
        "route replace 2001:db8:1::/48 via 2001:db8::3",
        "route add 2001:db8:1::/48 from 2001:db8:99::/64 via 2001:db8::5",
    ];
    for line in landing {
        let (mut alone, mut in_set) = (router(), router());
        let c = changes(&alone, line).remove(0);
        alone.change(&c).unwrap();
        in_set.apply(std::slice::from_ref(&c)).unwrap();
        assert_eq!(state(&alone), state(&in_set), "{line}");
        assert_ne!(state(&alone), state(&router()), "{line}");
        go_on(&mut alone, line);
    }
}

#[test]
fn atomic_batches_keep_nothing_of_a_failed_batch() {
    let r = router();
    let before = state(&r);
    let mut b = Batch::new(r);
    b.mode = BatchMode::Atomic;
    let out = b.run_text("route add 203.0.113.0/24 via 10.0.0.3\nlink add veth2 type veth peer name veth3\nroute add 192.0.2.0/24 dev nosuch\n");
    assert_eq!(out.failed, vec![3]);
    assert!(out.rolled_back);
    assert_eq!(state(&b.router), before);
    // ip's own mode keeps what came before the failing line.
    b.mode = BatchMode::StopOnError;
    let out = b.run_text("route add 203.0.113.0/24 via 10.0.0.3\nroute add 192.0.2.0/24 dev nosuch\nroute add 192.0.3.0/24 via 10.0.0.3\n");
    assert_eq!(out.failed, vec![2]);
    let shown = b.run_text("route show\n").stdout;
    assert!(
        shown.contains("203.0.113.0/24") && !shown.contains("192.0.3.0/24"),
        "{shown}"
    );
}

/// Gateway checks are remembered between route changes (`router::gateways`): whatever changes
/// a gateway's answer (a delete, a more specific route, a rollback, a rule) must make the next
/// route through that gateway be checked again, inside a change set and across them.
#[test]
fn remembered_gateway_checks_follow_what_decides_them() {
    let run = |r: &mut Router, line: &str| {
        let c = changes(r, line).remove(0);
        r.change(&c).map_err(|e| e.errno)
    };
    let shown = |r: &Router| {
        let mut b = Batch::new(r.clone());
        b.run_text("route show 203.0.114.0/24\n").stdout
    };
    // A route through the gateway, then what takes the gateway's route away, then another
    // route through it: that one fails with `errno`, in one change set and across them.
    let taken_away = |[link, via, again]: [&str; 3], takers: [&str; 2], errno: Errno| {
        for takes_it_away in takers {
            let mut r = router();
            let text = format!("{link}\n{via}\n{takes_it_away}\n{again}");
            let (i, e) = r.apply(&changes(&r, &text)).expect_err(takes_it_away);
            assert_eq!((i, e.errno), (3, errno), "{takes_it_away}");
            let mut r = router();
            for line in [link, via, takes_it_away] {
                run(&mut r, line).unwrap();
            }
            assert_eq!(run(&mut r, again), Err(errno), "{takes_it_away}");
        }
    };
    let link = "route add 192.0.2.0/24 dev veth0";
    let via = "route add 203.0.113.0/24 via 192.0.2.7";
    let again = "route add 203.0.114.0/24 via 192.0.2.7";
    taken_away(
        [link, via, again],
        [
            "route del 192.0.2.0/24",
            "route add blackhole 192.0.2.7/32 scope link",
        ],
        Errno::EINVAL,
    );
    // A more specific route to the gateway lends its device; one beside it changes nothing.
    for (beside, dev) in [
        ("route add 192.0.2.0/28 dev veth1", "veth1"),
        ("route add 192.0.2.8/29 dev veth1", "veth0"),
    ] {
        let mut r = router();
        run(&mut r, "link set veth1 up").unwrap();
        for line in [link, via, beside, again] {
            run(&mut r, line).unwrap();
        }
        assert!(
            shown(&r).contains(&format!("dev {dev}")),
            "{beside}: {}",
            shown(&r)
        );
    }
    // A change set that made the gateway reachable, checked through it, then failed.
    let mut r = router();
    let set = changes(&r, &format!("{link}\n{via}\n{via}"));
    assert_eq!(r.apply(&set).unwrap_err().0, 2);
    assert_eq!(run(&mut r, again), Err(Errno::EINVAL));
    // A rule that forbids the gateway.
    let mut r = router();
    for line in [link, via, "rule add to 192.0.2.7 prohibit pref 1"] {
        run(&mut r, line).unwrap();
    }
    assert_eq!(run(&mut r, again), Err(Errno::EINVAL));
    // IPv6 remembers its checks too: what takes the gateway's route away, in one change set
    // and across them, makes the next route through it fail (as the kernel, EHOSTUNREACH).
    taken_away(
        [
            "route add 2001:db8:2::/64 dev veth0",
            "route add 2001:db8:10::/48 via 2001:db8:2::7",
            "route add 2001:db8:11::/48 via 2001:db8:2::7",
        ],
        [
            "route del 2001:db8:2::/64",
            "route add blackhole 2001:db8:2::7/128",
        ],
        Errno::EHOSTUNREACH,
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Random change sets ending in a change that must fail: nothing of them stays. Among the
    /// picks: IPv6 source routes (their saved lists keep the source), a load of 24 routes
    /// in prefix order (the RIB puts them in a run, see `prefix_map`), and IPv6 address
    /// changes, whose prefix routes the router keeps with the address they are for
    /// (`state::Derived`): what that bookkeeping holds does not show, so the same lines are
    /// then run on the rolled-back router and on the one before, and must leave both alike.
    #[test]
    fn rollback_restores_everything(picks in prop::collection::vec(0usize..20, 0..12)) {
        let ordered_load: String = (0..24)
            .map(|i| format!("route add 10.20.{i}.0/24 via 10.0.0.3\n"))
            .collect();
        let lines: [&str; 20] = [
            "route add 203.0.113.0/24 via 10.0.0.3",
            "route append 198.51.100.0/24 via 10.0.0.5",
            "route prepend 198.51.100.0/24 nexthop via 10.0.0.6 weight 2 nexthop via 10.0.0.7",
            "route del 198.51.100.0/24",
            "route replace 2001:db8:1::/48 via 2001:db8::3",
            "route append 2001:db8:1::/48 via 2001:db8::4",
            "route del 2001:db8:1::/48",
            "rule add from 10.8.0.0/16 lookup 8 pref 6",
            "rule del pref 5",
            "addr add 10.0.1.1/24 dev veth1",
            "link set veth1 down",
            "route add blackhole 2001:db8:5::/48 table 9",
            "route add 2001:db8:1::/48 from 2001:db8:99::/64 via 2001:db8::5",
            "route del 2001:db8:1::/48 from 2001:db8:99::/64",
            &ordered_load,
            "addr add 2001:db8::5/64 dev veth0 metric 7",
            "addr del 2001:db8::1/64 dev veth0",
            "addr replace 2001:db8::1/64 dev veth0 metric 300 preferred_lft 0",
            "addr change 2001:db8::1/64 dev veth0 noprefixroute",
            "addr add 2001:db8:7::1/64 dev lo",
        ];
        let mut r = router();
        let before = state(&r);
        let mut set = Vec::new();
        for p in picks {
            // Some picks fail on their own in a given state; keep those that apply, in order.
            let mut attempt = set.clone();
            attempt.extend(changes(&r, lines[p]));
            if r.clone().apply(&attempt).is_ok() {
                set = attempt;
            }
        }
        let untouched = r.clone();
        set.push(Change::LinkDel { dev: 999 });
        prop_assert!(r.apply(&set).is_err());
        prop_assert_eq!(state(&r), before);
        // What the derived routes decide: an address the set had added, added again, gets
        // its routes; the last address of a subnet deleted takes back the subnet's first
        // route, a replacement moves it, a device down and up again brings back each
        // address's own.
        let then = "addr add 10.0.1.1/24 dev veth1\naddr add 2001:db8:7::1/64 dev lo\n\
            addr add 2001:db8::5/64 dev veth0 metric 7\n\
            addr add 2001:db8::9/64 dev veth0 metric 9\n\
            addr replace 2001:db8::1/64 dev veth0 metric 11\n\
            addr del 2001:db8::5/64 dev veth0\n\
            addr del 2001:db8::1/64 dev veth0\n\
            link set veth0 down\nlink set veth0 up\n\
            addr del 2001:db8::9/64 dev veth0\naddr del 2001:db8:7::1/64 dev lo\n";
        let after = |r: Router| {
            let mut b = Batch::new(r);
            b.mode = BatchMode::Force;
            b.run_text(then);
            state(&b.router)
        };
        prop_assert_eq!(after(r), after(untouched));
    }
}

/// Every answer `route get` gives for `probes`, as text: through the FIBs (`r` as it is) and
/// through the RIB's walk (a copy with its FIBs off).
fn answers_both_ways(r: &Router, probes: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut rib = r.clone();
    rib.set_fibs_enabled(false);
    let ask = |r: &Router| -> Vec<String> {
        probes
            .iter()
            .map(|p| {
                let dst: std::net::IpAddr = p.parse().unwrap();
                let q = fibre::RouteQuery::to(dst);
                match dst {
                    std::net::IpAddr::V4(_) => {
                        format!("{:?}", r.route_get(&q.narrow::<Ipv4Addr>().unwrap()))
                    }
                    std::net::IpAddr::V6(_) => {
                        format!("{:?}", r.route_get(&q.narrow::<Ipv6Addr>().unwrap()))
                    }
                }
            })
            .collect()
    };
    (ask(r), ask(&rib))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Change sets that commit or roll back (a set with a change that fails), over nested
    /// prefixes: after each, the FIBs answer every probe as the RIB's walk does. FIB ids name
    /// where a destination's entry is; a rollback puts destinations back, maybe elsewhere.
    #[test]
    fn lookups_after_commits_and_rollbacks_match_the_rib(
        sets in prop::collection::vec(prop::collection::vec(0usize..14, 1..6), 1..6)
    ) {
        const LINES: [&str; 14] = [
            "route add 198.18.0.0/15 via 10.0.0.3",
            "route del 198.18.0.0/15",
            "route add 198.18.1.0/24 via 10.0.0.4",
            "route del 198.18.1.0/24",
            "route add 198.18.1.128/25 via 10.0.0.5",
            "route del 198.18.1.128/25",
            "route add 198.18.2.0/24 via 10.0.0.3",
            "route del 198.18.2.0/24",
            "route append 198.18.1.0/24 via 10.0.0.6 metric 5",
            "route add default via 10.0.0.7",
            "route del default",
            "route add 2001:db8:1:8000::/49 via 2001:db8::3",
            "route del 2001:db8:1:8000::/49",
            "route del 2001:db8:1::/48",
        ];
        const PROBES: [&str; 8] = [
            "198.18.1.5", "198.18.1.200", "198.18.2.9", "198.19.0.1", "203.0.113.9",
            "2001:db8:1:8000::1", "2001:db8:1::1", "2001:db8:2::1",
        ];
        let mut r = router();
        for picks in sets {
            let lines: Vec<&str> = picks.iter().map(|&p| LINES[p]).collect();
            let set: Vec<Change> = lines.iter().flat_map(|l| changes(&r, l)).collect();
            let _ = r.apply(&set);
            let (fib, rib) = answers_both_ways(&r, &PROBES);
            prop_assert_eq!(fib, rib, "after {:?}", lines);
        }
    }
}

/// Input that fails with an I/O error after `ok` bytes.
struct FailingAfter<'a> {
    data: &'a [u8],
    ok: usize,
}

impl std::io::Read for FailingAfter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ok == 0 {
            return Err(std::io::Error::other("disk gone"));
        }
        let n = buf.len().min(self.ok).min(self.data.len());
        if n == 0 {
            return Ok(0);
        }
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.ok -= n;
        Ok(n)
    }
}

#[test]
fn an_atomic_batch_cut_by_an_io_error_keeps_nothing_and_the_router_stays_usable() {
    let r = router();
    let before = state(&r);
    let mut b = Batch::new(r);
    b.mode = BatchMode::Atomic;
    let text = b"route add 203.0.113.0/24 via 10.0.0.3\nrule add from 10.8.0.0/16 lookup 8\nroute add 192.0.2.0/24 via 10.0.0.3\n";
    let input = std::io::BufReader::new(FailingAfter { data: text, ok: 60 });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let e = b.run(input, &mut out, &mut err).unwrap_err();
    assert!(
        e.to_string().contains("-:2"),
        "the error names the line: {e}"
    );
    assert_eq!(state(&b.router), before);
    // No change set was left open: the next batch applies.
    let out = b.run_text("route add 192.0.2.0/24 via 10.0.0.3\n");
    assert!(out.success(), "{}", out.stderr);
}

#[test]
fn non_utf8_bytes_fail_their_line_only_and_continuations_join() {
    let mut b = Batch::new(router());
    b.mode = BatchMode::Force;
    // A Latin-1 comment, a continued command, a command with a Latin-1 device name.
    let text = b"# r\xe9seau\nroute add 203.0.113.0/24 \\\n  via 10.0.0.3\nroute add 192.0.2.0/24 dev v\xe9th0\nroute show 203.0.113.0/24\n";
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let s = b.run(&text[..], &mut out, &mut err).unwrap();
    assert_eq!(s.failed, vec![4], "{}", String::from_utf8_lossy(&err));
    // A continuation at the end of the input: ip says so, and the joined command is not run.
    let (mut out2, mut err2) = (Vec::new(), Vec::new());
    b.run(&b"route add 198.18.0.0/16 \\\n"[..], &mut out2, &mut err2)
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&err2),
        "Missing continuation line\n"
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "203.0.113.0/24 via 10.0.0.3 dev veth0 \n"
    );
}

#[test]
fn a_syntax_error_ends_even_a_forced_batch() {
    let mut b = Batch::new(router());
    b.mode = BatchMode::Force;
    let out = b.run_text(
        "route add 192.0.2.0/24 dev nosuch\nroute add 10.0.0.0/33 dev veth0\nroute add 203.0.113.0/24 via 10.0.0.3\n",
    );
    // An unknown device fails its line only (ip's `nodev`); a bad prefix ends ip (`get_prefix`).
    assert_eq!(out.failed, vec![1, 2]);
    assert!(!b.run_text("route show\n").stdout.contains("203.0.113.0/24"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Any atomic batch that fails, for any reason (a refused change, a syntax error, bytes that
    /// are not UTF-8, an I/O error mid-file), keeps nothing and leaves the router usable.
    #[test]
    fn a_failed_atomic_batch_keeps_nothing(
        picks in prop::collection::vec(0usize..16, 1..14),
        cut in prop::option::of(0usize..400),
    ) {
        const LINES: [&[u8]; 16] = [
            b"route add 203.0.113.0/24 via 10.0.0.3",
            b"route append 198.51.100.0/24 via 10.0.0.5",
            b"route prepend 198.51.100.0/24 nexthop via 10.0.0.6 weight 2 nexthop via 10.0.0.7",
            b"route del 198.51.100.0/24",
            b"route replace 2001:db8:1::/48 via 2001:db8::3",
            b"route append 2001:db8:1::/48 via 2001:db8::4",
            b"route del 2001:db8:1::/48",
            b"rule add from 10.8.0.0/16 lookup 8 pref 6",
            b"rule del pref 5",
            b"addr add 10.0.1.1/24 dev veth1",
            b"link set veth1 down",
            b"link del veth0",
            b"route add blackhole 2001:db8:5::/48 table 9",
            b"route add 192.0.2.0/24 dev nosuch",
            b"route add 10.0.0.0/33 dev veth0",
            b"route add 192.0.2.0/24 dev v\xe9th0 # r\xe9seau",
        ];
        let r = router();
        let before = state(&r);
        let mut text = Vec::new();
        for p in picks {
            text.extend_from_slice(LINES[p]);
            text.push(b'\n');
        }
        let mut b = Batch::new(r);
        b.mode = BatchMode::Atomic;
        let ok = cut.unwrap_or(usize::MAX);
        let input = std::io::BufReader::new(FailingAfter { data: &text, ok: ok.max(1) });
        let (mut out, mut err) = (Vec::new(), Vec::new());
        match b.run(input, &mut out, &mut err) {
            Ok(s) if s.success() => prop_assert!(!s.rolled_back),
            Ok(s) => {
                prop_assert!(s.rolled_back);
                prop_assert_eq!(state(&b.router), before.clone());
            }
            Err(_) => prop_assert_eq!(state(&b.router), before.clone()),
        }
        // Usable: a change set opens and closes again.
        b.mode = BatchMode::StopOnError;
        let out = b.run_text("rule add from 10.7.0.0/16 lookup 7 pref 4\n");
        prop_assert!(out.success(), "{}", out.stderr);
    }
}

/// Records the largest single write: a listing that streams never writes the whole of it at once.
struct LargestWrite {
    largest: usize,
    total: usize,
}

impl std::io::Write for LargestWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.largest = self.largest.max(buf.len());
        self.total += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_json_listing_is_written_route_by_route() {
    let mut text = String::from("link add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\naddr add 10.0.0.1/24 dev veth0\n");
    for i in 0..2000 {
        text += &format!(
            "route add 10.{}.{}.0/24 via 10.0.0.2\n",
            1 + i / 256,
            i % 256
        );
    }
    text += "route show\n";
    let mut b = Batch::new(Router::new());
    b.json = true;
    let mut out = LargestWrite {
        largest: 0,
        total: 0,
    };
    let s = b
        .run(text.as_bytes(), &mut out, &mut std::io::sink())
        .unwrap();
    assert!(s.success());
    // Some 60 bytes a route: the listing is 100 kB, no write more than one route's worth.
    assert!(out.total > 100_000, "{}", out.total);
    assert!(out.largest < 200, "a write of {} bytes", out.largest);
}
