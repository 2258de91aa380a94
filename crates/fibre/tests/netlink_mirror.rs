//! The netlink mirror against the live kernel: a namespace set up with `ip -batch` (devices,
//! addresses, rules, next-hop objects, routes of every kind in several tables), then a
//! `Mirror` syncs from it; what the mirror's router prints (`-j`) must be what `ip -j` prints,
//! and its `route get ... fibmatch` answers must be the kernel's, as must one `route get` of a
//! forwarded packet to an IPv6 group (which depends on the kernel's build).
//!
//! Needs root and `ip netns`; skips with a message elsewhere, fails when FIBRE_KERNEL_TESTS=required.
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::io::netlink::Mirror;
use fibre::Router;
use kernel_oracle::skip_or_fail;
use serde_json::Value;
use std::time::Duration;

#[path = "support/listings.rs"]
mod listings;
#[path = "support/veths.rs"]
mod veths;

/// The shared devices, and what this test adds to them.
fn setup() -> String {
    format!("{}addr add 198.51.100.9/24 dev wa\n", veths::THREE_VETHS)
}

const CONFIG: &str = "\
nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 via 198.51.100.2 dev wa proto static
nexthop add id 3 blackhole
nexthop add id 4 group 1/2,3
nexthop add id 6 via 2001:db8:1::2 dev va
nexthop add id 7 via 2001:db8:2::2 dev wa
nexthop add id 8 group 6,2/7
route add default via 192.0.2.254
route add 10.0.0.0/8 nhid 4
route add 10.1.0.0/16 nhid 1 metric 10 table 100
route add 10.2.0.0/16 nhid 3
route add 10.3.0.0/16 nexthop via 192.0.2.2 weight 2 nexthop via 198.51.100.2
route add 10.3.0.0/16 tos 0x10 via 198.51.100.3 metric 5
route append 10.3.0.0/16 via 198.51.100.4
route add blackhole 10.4.0.0/16
route add unreachable 10.5.0.0/16 table 100
route add prohibit 10.6.0.0/16 metric 7
route add throw 10.7.0.0/16 table 100
route add 10.8.0.0/16 dev xa src 203.0.113.1 proto bird
route add 10.9.0.0/16 via 192.0.2.3 mtu 1400
route add local 10.10.10.10 dev va table 200
route add 2001:db8:10::/48 nhid 8
route add 2001:db8:11::/48 nexthop via 2001:db8:1::3 nexthop via 2001:db8:2::3 weight 3
route add 2001:db8:12::/48 from 2001:db8:99::/48 via 2001:db8:1::4
route add 2001:db8:13::/48 via 2001:db8:2::4 pref high metric 100
route add blackhole 2001:db8:14::/48
route add 2001:db8:15::/48 dev wa table 100
rule add from 10.1.0.0/16 lookup 100 pref 1000
rule add to 10.7.0.0/16 fwmark 0x10/0xff iif va lookup 200 pref 1001
rule add not from 192.0.2.0/24 ipproto tcp dport 80 goto 1003 pref 1002
rule add uidrange 100-200 sport 1000-2000 prohibit pref 1003
rule add from all lookup main suppress_prefixlength 0 pref 1004
rule add -6 from 2001:db8:99::/48 lookup 100 pref 1000
";

fn documents(text: &str) -> Vec<Value> {
    listings::documents_with(text, |_| {})
}

#[test]
fn a_synced_mirror_prints_and_answers_as_the_kernel() {
    if skip_or_fail("a_synced_mirror_prints_and_answers_as_the_kernel") {
        return;
    }
    let ns = veths::namespace("mirror", &setup());
    // `rule add -6` is not ip's: the IPv6 rule goes alone.
    let (v6rule, config): (Vec<&str>, Vec<&str>) = CONFIG.lines().partition(|l| l.contains(" -6 "));
    let k = ns.ip_batch_str(&[], &config.join("\n")).expect("ip -batch");
    assert!(k.success, "{}", k.stderr);
    let k6 = ns
        .ip_batch_str(&["-6"], &v6rule[0].replace(" -6", ""))
        .expect("ip -6 -batch");
    assert!(k6.success, "{}", k6.stderr);

    let (mut mirror, report) = Mirror::open(Some(ns.name())).expect("mirror syncs");
    assert!(report.routes[0] > 20 && report.routes[1] > 10, "{report:?}");
    assert_eq!(report.drift, 0, "a first sync mends nothing");
    assert_eq!(report.objects, 7, "{report:?}");

    let mut show = [
        "route show table all",
        "-6 route show table all",
        "rule show",
        "-6 rule show",
        "nexthop show",
        // A forwarded packet to a group: EMSGSIZE or the route, as the kernel was built.
        "-6 route get ff02::1 from 2001:db8:1::9 iif va",
    ]
    .join("\n");
    let mut probes = String::new();
    for a in [
        "10.0.0.1",
        "10.1.2.3 from 10.1.0.1",
        "10.2.0.1",
        "10.3.0.1",
        "10.3.0.1 tos 0x10",
        "10.4.0.1",
        "10.5.0.1 from 10.1.0.1",
        "10.6.0.1",
        "10.8.0.1",
        "10.9.0.1",
        "10.1.2.3 oif wa",
        "192.0.2.77",
        "198.51.100.9",
        "2001:db8:10::1",
        "2001:db8:11::1",
        "2001:db8:12::1 from 2001:db8:99::1",
        "2001:db8:13::1",
        "2001:db8:14::1",
        "2001:db8:15::1 from 2001:db8:99::5",
        "2001:db8:1::77",
    ] {
        probes += &format!("route get {a} fibmatch\n");
    }
    show.push('\n');
    show += &probes;
    // ip takes -6 per invocation, not per line: the IPv6 listings run apart.
    let mut kernel = String::new();
    let mut mine = String::new();
    let mut batch = Batch::new(Router::clone(&mirror.router()));
    batch.json = true;
    batch.mode = BatchMode::Force;
    for line in show.lines() {
        let (args, cmd) = match line.strip_prefix("-6 ") {
            Some(rest) => (vec!["-j", "-6"], rest),
            None => (vec!["-j"], line),
        };
        let k = ns.ip_batch_str(&args, cmd).expect("ip -j");
        kernel += &k.stdout;
        if !k.success {
            kernel += &format!("{{\"failed\":\"{cmd}\"}}\n");
        }
        let f = batch.run_text(line);
        mine += &f
            .stdout
            .lines()
            .filter(|l| !l.starts_with("{\"error\""))
            .collect::<Vec<_>>()
            .join("\n");
        mine.push('\n');
        if !f.success() {
            mine += &format!("{{\"failed\":\"{cmd}\"}}\n");
        }
    }
    let (k, f) = (documents(&kernel), documents(&mine));
    assert_eq!(k.len(), f.len(), "kernel:\n{kernel}\nmirror:\n{mine}");
    for (a, b) in k.iter().zip(&f) {
        assert_eq!(a, b, "\nkernel: {a}\nmirror: {b}");
    }

    // A resync reports what it found changed: nothing, then two routes added, one gone and a
    // rule added behind its back.
    assert_eq!(mirror.sync().expect("resync").drift, 0);
    let change = "route add 10.20.0.0/16 via 192.0.2.5
                  route add 10.21.0.0/16 nhid 1
                  route del 10.9.0.0/16
                  rule add from 10.20.0.0/16 lookup 100 pref 2000
";
    let k = ns.ip_batch_str(&[], change).expect("ip -batch");
    assert!(k.success, "{}", k.stderr);
    assert_eq!(mirror.sync().expect("resync").drift, 4);
}

/// What the model does not hold (resilient groups, `fdb` next hops, groups mixing families,
/// IPv4 routes through IPv6 gateways or objects, a leg of one through an IPv6 gateway, routes
/// through any of those) is left out and counted; the rest syncs.
#[test]
fn a_sync_leaves_out_and_counts_what_is_not_modelled() {
    if skip_or_fail("a_sync_leaves_out_and_counts_what_is_not_modelled") {
        return;
    }
    let ns = veths::namespace("mirror-odd", &setup());
    let odd = "\
nexthop add id 1 via 192.0.2.2 dev va
nexthop add id 2 group 1 type resilient buckets 8
nexthop add id 3 via 192.0.2.5 fdb
nexthop add id 6 via 2001:db8:1::2 dev va
nexthop add id 7 group 1/6
route add 10.0.0.0/8 nhid 2
route add 10.1.0.0/16 via inet6 2001:db8:1::2 dev va
route add 10.2.0.0/16 nhid 7
route add 10.3.0.0/16 nhid 6
route add 10.4.0.0/16 nhid 1
route add 10.5.0.0/16 nexthop via 192.0.2.2 dev va nexthop via inet6 2001:db8:1::2 dev va
";
    let k = ns.ip_batch_str(&[], odd).expect("ip -batch");
    assert!(k.success, "{}", k.stderr);
    let (mirror, report) = Mirror::open(Some(ns.name())).expect("mirror syncs");
    // Objects 2, 3 and 7; routes 10.0/8, 10.1/16, 10.2/16, 10.3/16, 10.5/16.
    assert_eq!(report.skipped, 8, "{report:?}");
    assert_eq!(report.objects, 2, "{report:?}");
    let mut b = Batch::new(Router::clone(&mirror.router()));
    let out = b.run_text("route show 10.4.0.0/16\nnexthop show");
    assert_eq!(
        out.stdout,
        "10.4.0.0/16 nhid 1 via 192.0.2.2 dev va \n\
         id 1 via 192.0.2.2 dev va scope link \n\
         id 6 via 2001:db8:1::2 dev va scope link \n"
    );
}

/// Churn behind a mirror with a tiny notification buffer: the buffer overruns, the mirror
/// resyncs, and what it holds then is the kernel's, listing for listing.
#[test]
fn a_following_mirror_overruns_resyncs_and_ends_equal() {
    if skip_or_fail("a_following_mirror_overruns_resyncs_and_ends_equal") {
        return;
    }
    let ns = veths::namespace("mirror-churn", &setup());
    let (mut mirror, _) = Mirror::open_with(Some(ns.name()), Some(4096)).expect("mirror syncs");
    // 3,000 changes of every kind, bounded, in one batch the mirror does not read during.
    let mut churn = String::from(
        "nexthop add id 1 via 192.0.2.2 dev va\nnexthop add id 2 via 198.51.100.2 dev wa\n\
         nexthop add id 3 group 1/2\nnexthop add id 6 via 2001:db8:1::2 dev va\n",
    );
    for i in 0..600u32 {
        let (a, b) = (i / 200, i % 200);
        churn += &format!("route add 10.{a}.{b}.0/24 via 192.0.2.{}\n", 2 + i % 50);
        churn += &format!("route add 10.50.{a}.{b}/32 nhid {}\n", 1 + i % 3);
        churn += &format!(
            "route add 2001:db8:{a:x}:{b:x}::/64 via 2001:db8:2::{:x}\n",
            2 + i
        );
        churn += &format!("route add 2001:db8:99:{i:x}::/64 nhid 6\n");
        if i % 3 == 0 {
            churn += &format!("route del 10.{a}.{b}.0/24\n");
        }
        if i % 100 == 0 {
            churn += &format!(
                "rule add from 10.{a}.{b}.0/24 lookup 100 pref {}\n",
                100 + i
            );
            churn += "nexthop replace id 1 via 192.0.2.3 dev va\n";
        }
    }
    churn += "link set xb down\nnexthop del id 2\n";
    let k = ns.ip_batch_str(&["-force"], &churn).expect("ip -batch");
    assert!(k.success, "{}", k.stderr);

    let mut total = totals::Total::default();
    for _ in 0..10 {
        let r = mirror
            .follow(
                std::time::Duration::from_secs(5),
                std::time::Duration::from_millis(300),
            )
            .expect("follow");
        total.add(&r);
        if r.events == 0 && r.overruns == 0 {
            break;
        }
    }
    eprintln!("following: {total:?}");
    assert!(total.overruns >= 1, "a 4 KiB buffer overran: {total:?}");
    assert!(total.resyncs >= 1 && total.drift > 1000, "{total:?}");

    for (args, cmd) in [
        (vec!["-j"], "route show table all"),
        (vec!["-j", "-6"], "route show table all"),
        (vec!["-j"], "rule show"),
        (vec!["-j"], "nexthop show"),
    ] {
        let k = ns.ip_batch_str(&args, cmd).expect("ip -j");
        let mut b = Batch::new(Router::clone(&mirror.router()));
        b.json = true;
        let line = if args.contains(&"-6") {
            format!("-6 {cmd}")
        } else {
            cmd.to_string()
        };
        let f = b.run_text(&line);
        assert_eq!(documents(&k.stdout), documents(&f.stdout), "{cmd}");
    }
}

/// A route the kernel's IPv6 dump does not list: a blackhole appended between the legs of an
/// ECMP route (docs/semantics.md). A sync cannot read it but counts it; when the legs go, the
/// kernel lists it without telling (no notification names it), and the mirror, which knew it
/// had missed a route there, syncs again and holds it. The churn test with a 4 KiB buffer
/// lost such a route now and then before.
#[test]
fn a_route_the_dump_hid_is_held_once_it_comes_into_view() {
    if skip_or_fail("a_route_the_dump_hid_is_held_once_it_comes_into_view") {
        return;
    }
    hidden_route_comes_into_view("mirror-hidden", 0);
}

/// As above, with more IPv6 routes than a sync counts hidden ones among: any destination with
/// legs may hide one, and the mirror syncs again when the legs go.
#[test]
fn a_route_the_dump_hid_among_too_many_to_count_is_held_too() {
    if skip_or_fail("a_route_the_dump_hid_among_too_many_to_count_is_held_too") {
        return;
    }
    hidden_route_comes_into_view("mirror-hidden-many", 9000);
}

/// The hidden route's story, beside `filler` more IPv6 routes.
fn hidden_route_comes_into_view(tag: &str, filler: u32) {
    let ns = veths::namespace(tag, &setup());
    let mut lines = String::from(
        "route add 2001:db8:50::/64 via 2001:db8:1::2 metric 100\n\
         route append blackhole 2001:db8:50::/64 metric 100\n\
         route append 2001:db8:50::/64 via 2001:db8:2::2 metric 100\n\
         route add 2001:db8:51::/64 via 2001:db8:1::3\n",
    );
    for i in 0..filler {
        lines += &format!("route add 2001:db8:ff:{i:x}::/64 via 2001:db8:1::4\n");
    }
    let k = ns.ip_batch_str(&[], &lines).expect("ip -batch");
    assert!(k.success, "{}", k.stderr);
    let shown = || {
        ns.ip(&["-6", "route", "show", "2001:db8:50::/64"])
            .expect("ip")
    };
    let hides = !shown().contains("blackhole");
    if !hides {
        eprintln!("this kernel lists a route between ECMP legs: nothing is hidden");
    }
    let (mut mirror, report) = Mirror::open(Some(ns.name())).expect("mirror syncs");
    // A sync counts hidden routes among at most 8,192 IPv6 routes.
    let counted = filler < 8000;
    let expected = counted.then_some(usize::from(hides));
    assert_eq!(report.hidden, expected, "{report:?}");
    let same = |mirror: &Mirror, at: &str| {
        let k = ns
            .ip_batch_str(&["-j", "-6"], "route show table all")
            .expect("ip -j");
        let mut b = Batch::new(Router::clone(&mirror.router()));
        b.json = true;
        let f = b.run_text("-6 route show table all");
        assert_eq!(documents(&k.stdout), documents(&f.stdout), "{at}");
    };
    same(&mirror, "synced");
    // What the kernel may still say of the devices (carrier, addresses) is read first.
    mirror
        .follow(Duration::from_millis(500), Duration::from_millis(300))
        .expect("follow");
    // A change where nothing can hide makes the mirror sync nothing again.
    let k = ns
        .ip_batch_str(&[], "route del 2001:db8:51::/64\n")
        .expect("ip -batch");
    assert!(k.success, "{}", k.stderr);
    let r = mirror
        .follow(Duration::from_secs(5), Duration::from_millis(300))
        .expect("follow");
    assert!(r.events >= 1 && r.resyncs == 0, "{r:?}");
    // The legs go (the first route of metric 100, with its sibling): the blackhole shows.
    let k = ns
        .ip_batch_str(&[], "route del 2001:db8:50::/64 metric 100\n")
        .expect("ip -batch");
    assert!(k.success, "{}", k.stderr);
    assert!(shown().contains("blackhole"), "{}", shown());
    let r = mirror
        .follow(Duration::from_secs(5), Duration::from_millis(300))
        .expect("follow");
    // (At least: a late notification of the devices can make a recheck unsure again.)
    if hides || !counted {
        assert!(r.rechecks >= 1, "{r:?}");
    }
    same(&mirror, "after the legs went");
}

/// Sums of follow reports.
mod totals {
    use fibre::io::netlink::FollowReport;

    #[derive(Debug, Default)]
    pub struct Total {
        pub events: usize,
        pub overruns: usize,
        pub resyncs: usize,
        pub drift: usize,
    }

    impl Total {
        pub fn add(&mut self, r: &FollowReport) {
            self.events += r.events;
            self.overruns += r.overruns;
            self.resyncs += r.resyncs;
            self.drift += r.drift;
        }
    }
}
