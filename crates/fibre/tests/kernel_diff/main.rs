//! Differential tests: random router configurations loaded into the live kernel (in a network
//! namespace created here) with `ip -force -batch` and into fibre from the very same files; then
//! 10^5 `route get ... fibmatch` probes per configuration asked of both, compared field by field.
//!
//! Compared (E-class, must agree): which lines of the batch failed; for every probe the error
//! number, or the matched route's table, type, destination and source prefix, TOS, protocol,
//! scope, metric, preferred source, router preference and next hops (gateway, device, weight);
//! without `fibmatch`, the verdict and, for packets of this host through a classic route of one
//! next hop, the source the kernel chose (`inet_select_addr`, `ipv6_dev_get_saddr`); and
//! `route show table all` of each family, the routes in the kernel's dump order (table,
//! destination, source, type, metric and TOS of each, in turn).
//! IPv6 ECMP next hops are compared as a set: the kernel lists them starting from the leg its
//! flow hash picked; the other differences allowed are in `compare` (S-class, see
//! docs/semantics.md).
//!
//! Needs root and `ip netns`; skips with a message elsewhere, fails instead when
//! FIBRE_KERNEL_TESTS=required (as in CI).
mod compare;
mod gen;
#[path = "../support/kernel_build.rs"]
mod kernel_build;
use kernel_build::router_like_the_kernel;

use compare::{fibre_answer, norm_kernel, same_route, GroupCaches, Norm};
use fibre::io::iproute2::{Batch, BatchMode, Query};
use fibre::router::RouterFamily;
use fibre::{Errno, Family, RouteAnswer, RouteQuery, Router};
use gen::Profile;
use kernel_oracle::{skip_or_fail, Netns, Oracle, Probe};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Line numbers and messages of the lines `ip -batch` reported as failed.
fn ip_failures(stderr: &str) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    let mut msg = String::new();
    for l in stderr.lines() {
        if let Some(rest) = l.strip_prefix("Command failed ") {
            let n = rest
                .rsplit(':')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("line number");
            out.insert(n, std::mem::take(&mut msg));
        } else {
            msg = l.to_string();
        }
    }
    out
}

struct Outcome {
    probes: usize,
    disagreements: Vec<String>,
    line_disagreements: Vec<String>,
    failed_lines: usize,
}

/// What tells a listed route from another (table, destination, source, type, metric, TOS), in
/// the order of an `ip -j route show` listing. Anycast routes are left out (the generator adds
/// none: they are the kernel's subnet-router anycast routes): an address added and deleted in
/// one batch before the kernel's DAD work has run for it may take its subnet's anycast route
/// with it (docs/semantics.md; `gen::address_changes`). Seed 1572 lacked `anycast
/// 2001:db8:1::` in one run of three.
fn listed_keys(json: &str) -> Vec<String> {
    let routes: serde_json::Value = serde_json::from_str(json.trim()).expect("a JSON listing");
    let keys = ["table", "dst", "from", "type", "metric", "tos"];
    routes
        .as_array()
        .expect("an array of routes")
        .iter()
        .filter(|r| r.get("type").and_then(|t| t.as_str()) != Some("anycast"))
        .map(|r| {
            let field = |k: &str| r.get(k).map_or(String::new(), |v| v.to_string());
            keys.map(field).join(" ")
        })
        .collect()
}

fn pick<'a, T>(rng: &mut SmallRng, xs: &'a [T]) -> &'a T {
    &xs[rng.gen_range(0..xs.len())]
}

/// Probes of every kind: plain, with a local source, with marks/TOS/ports/uid, with an output
/// device, and forwarded (input device and a foreign source).
fn probes(
    rng: &mut SmallRng,
    c: &gen::Config,
    s: &gen::Setup,
    ifindex: &BTreeMap<String, u32>,
    n: usize,
    v6: bool,
) -> Vec<Probe> {
    let mut out = Vec::with_capacity(n);
    let veths: Vec<u32> = gen::DEVS.iter().map(|d| ifindex[*d]).collect();
    for _ in 0..n {
        // One probe in eight asks about an address the kernel treats specially.
        let special = rng.gen_ratio(1, 8);
        let dst = if special {
            gen::special_addr(rng, s, v6, true)
        } else {
            gen::probe_dst(rng, c, v6)
        };
        let mut p = Probe {
            fibmatch: rng.gen_ratio(9, 10),
            ..Probe::to(dst)
        };
        let mode = rng.gen_range(0..100);
        let extras = |p: &mut Probe, rng: &mut SmallRng| {
            if rng.gen_bool(0.4) {
                p.mark = Some({
                    let r = rng.gen();
                    *pick(rng, &[0u32, 1, 0x10, 0x11, 0x17, 7, r])
                });
            }
            if rng.gen_bool(0.3) {
                p.tos = *pick(rng, &[0u8, 0x04, 0x08, 0x10, 0x14, 0x1c, 0x20, 0x30]);
            }
            if rng.gen_bool(0.3) {
                p.ipproto = Some(if rng.gen_bool(0.1) {
                    47
                } else {
                    *pick(rng, &[6u8, 17, if v6 { 58 } else { 1 }])
                });
                if rng.gen_bool(0.7) {
                    p.sport = Some({
                        let r = rng.gen();
                        *pick(rng, &[53u16, 1000, 1500, 2001, r])
                    });
                    p.dport = Some({
                        let r = rng.gen();
                        *pick(rng, &[80u16, 443, 1024, 8080, r])
                    });
                }
            }
            if rng.gen_bool(0.2) {
                p.uid = Some(*pick(rng, &[0u32, 1000, 1500, 65534]));
            }
        };
        match mode {
            0..=24 => {}
            25..=39 => {
                p.src = Some(if v6 {
                    match rng.gen_range(0..3) {
                        0 if !c.sources_v6.is_empty() => IpAddr::V6({
                            let q = *pick(rng, &c.sources_v6);
                            gen::inside_v6(rng, q)
                        }),
                        _ => IpAddr::V6(*pick(rng, &s.local_v6)),
                    }
                } else {
                    IpAddr::V4(*pick(rng, &s.local_v4))
                });
                extras(&mut p, rng);
            }
            40..=59 => extras(&mut p, rng),
            60..=69 => {
                p.oif = Some(*pick(rng, &veths));
                if rng.gen_bool(0.3) {
                    p.src = Some(if v6 {
                        IpAddr::V6(*pick(rng, &s.local_v6))
                    } else {
                        IpAddr::V4(*pick(rng, &s.local_v4))
                    });
                }
                extras(&mut p, rng);
            }
            _ => {
                p.iif = Some(*pick(rng, &veths));
                p.src = Some(if v6 {
                    match rng.gen_range(0..3) {
                        0 if !c.sources_v6.is_empty() => IpAddr::V6({
                            let q = *pick(rng, &c.sources_v6);
                            gen::inside_v6(rng, q)
                        }),
                        _ => gen::probe_dst(rng, c, true),
                    }
                } else {
                    loop {
                        let a = gen::probe_dst(rng, c, false);
                        if !s.local_v4.contains(&match a {
                            IpAddr::V4(a) => a,
                            _ => unreachable!(),
                        }) || rng.gen_ratio(1, 20)
                        {
                            break a;
                        }
                    }
                });
                extras(&mut p, rng);
            }
        }
        if special && rng.gen_bool(0.5) {
            p.src = Some(gen::special_addr(rng, s, v6, false));
        }
        // IPv6 output to a group without a device: the kernel takes the first ff00::/8 route of
        // its list, whose order follows when devices were set up (S-class); name a device.
        if matches!(p.dst, IpAddr::V6(a) if a.is_multicast()) && p.iif.is_none() && p.oif.is_none()
        {
            p.oif = Some(*pick(rng, &veths));
        }
        out.push(p);
    }
    out
}

fn query_of(p: &Probe) -> RouteQuery<IpAddr> {
    RouteQuery {
        src: p.src,
        iif: p.iif,
        oif: p.oif,
        mark: p.mark.unwrap_or(0),
        tos: p.tos,
        ipproto: p.ipproto,
        sport: p.sport,
        dport: p.dport,
        uid: p.uid,
        fibmatch: p.fibmatch,
        ..RouteQuery::to(p.dst)
    }
}

/// `route get` of a probe, in family `A`.
fn ask<A: RouterFamily>(router: &Router, q: &RouteQuery<IpAddr>) -> Result<RouteAnswer<A>, Errno> {
    router.route_get(
        &q.narrow::<A>()
            .expect("a probe's addresses are of one family"),
    )
}

fn describe(p: &Probe) -> String {
    let mut s = format!("route get {}", p.dst);
    if let Some(x) = p.src {
        s += &format!(" from {x}");
    }
    if let Some(x) = p.iif {
        s += &format!(" iif #{x}");
    }
    if let Some(x) = p.oif {
        s += &format!(" oif #{x}");
    }
    if let Some(x) = p.mark {
        s += &format!(" mark {x:#x}");
    }
    if p.tos != 0 {
        s += &format!(" tos {:#x}", p.tos);
    }
    if let Some(x) = p.ipproto {
        s += &format!(" ipproto {x}");
    }
    if let Some(x) = p.sport {
        s += &format!(" sport {x}");
    }
    if let Some(x) = p.dport {
        s += &format!(" dport {x}");
    }
    if let Some(x) = p.uid {
        s += &format!(" uid {x}");
    }
    if p.fibmatch {
        s += " fibmatch";
    }
    s
}

fn run(p: &Profile, probes_per_family: usize) -> Outcome {
    let ns = Netns::create("diff").expect("create namespace");
    let setup = gen::setup();
    let cfg = gen::config(p);
    let odd = gen::odd_lines(p.seed, p.rules > 0);
    let addrs = gen::address_changes(p.seed);
    let links = gen::link_changes(p.seed);
    if let Ok(dir) = std::env::var("FIBRE_DIFF_DUMP") {
        // Keep the batch files for replay: `ip -force -batch` / `fibre -force -batch`.
        for (name, text) in [
            ("setup", &setup.text),
            ("nh", &cfg.nh),
            ("v4", &cfg.v4),
            ("v6", &cfg.v6),
            ("nh_churn", &cfg.nh_churn),
            ("odd", &odd),
            ("addrs", &addrs),
            ("links", &links),
        ] {
            let _ = std::fs::write(format!("{dir}/seed{}-{name}.batch", p.seed), text);
        }
    }

    let k = ns.ip_batch_str(&[], &setup.text).expect("ip -batch");
    assert!(k.success, "the kernel refused the setup: {}", k.stderr);
    let k_nh = ns.ip_batch_str(&[], &cfg.nh).expect("ip -batch nexthops");
    let k4 = ns.ip_batch_str(&[], &cfg.v4).expect("ip -batch v4");
    let k6 = ns.ip_batch_str(&["-6"], &cfg.v6).expect("ip -6 -batch v6");
    let k_churn = ns
        .ip_batch_str(&[], &cfg.nh_churn)
        .expect("ip -batch nexthop churn");
    let k_odd = ns.ip_batch_str(&[], &odd).expect("ip -batch odd lines");
    let k_addrs = ns
        .ip_batch_str(&[], &addrs)
        .expect("ip -batch address changes");
    // One change at a time: carrier and IPv6 address changes complete asynchronously, and a
    // device brought up before its down was processed may keep dead legs.
    let mut k_links = String::new();
    for (i, line) in links.lines().enumerate() {
        let r = ns.ip_batch_str(&[], line).expect("ip -batch link change");
        if !r.success {
            k_links += &format!("{}\nCommand failed -:{}\n", r.stderr.trim(), i + 1);
        }
        std::thread::sleep(std::time::Duration::from_millis(1200));
    }
    let k_links = kernel_oracle::BatchOutcome {
        success: k_links.is_empty(),
        status: Some(i32::from(!k_links.is_empty())),
        stdout: String::new(),
        stderr: k_links,
    };

    let mut batch = Batch::new(router_like_the_kernel());
    batch.mode = BatchMode::Force;
    let f = batch.run_text(&setup.text);
    assert!(f.success(), "fibre refused the setup: {}", f.stderr);
    let f_nh = batch.run_text(&cfg.nh);
    let f4 = batch.run_text(&cfg.v4);
    batch.family = Some(Family::Inet6);
    let f6 = batch.run_text(&cfg.v6);
    batch.family = None;
    let f_churn = batch.run_text(&cfg.nh_churn);
    let f_odd = batch.run_text(&odd);
    let f_addrs = batch.run_text(&addrs);
    let f_links = batch.run_text(&links);
    let router = batch.router;
    // Route gets below go through the FIBs, most of whose ids are route classes (a
    // destination of one route), and plain ones through the classes' prepared answers: the
    // kernel's answers check those too.
    assert!(router
        .family::<Ipv4Addr>()
        .merged_fib()
        .is_some_and(|f| f.route_classes() > 0 && f.plain_answers() > 0));
    assert!(router
        .family::<Ipv6Addr>()
        .table_fib(254)
        .is_some_and(|f| f.route_classes() > 0 && f.plain_answers() > 0));

    let mut line_disagreements = Vec::new();
    let mut failed_lines = 0;
    for (name, text, kernel, fibre_out) in [
        ("nh", &cfg.nh, &k_nh, &f_nh),
        ("v4", &cfg.v4, &k4, &f4),
        ("v6", &cfg.v6, &k6, &f6),
        ("nh_churn", &cfg.nh_churn, &k_churn, &f_churn),
        ("odd", &odd, &k_odd, &f_odd),
        ("addrs", &addrs, &k_addrs, &f_addrs),
        ("links", &links, &k_links, &f_links),
    ] {
        let kf = ip_failures(&kernel.stderr);
        let ff: BTreeMap<usize, String> = {
            let msgs: Vec<&str> = fibre_out
                .stderr
                .lines()
                .filter(|l| !l.starts_with("Command failed"))
                .collect();
            fibre_out
                .failed
                .iter()
                .copied()
                .zip(msgs.into_iter().map(str::to_string))
                .collect()
        };
        failed_lines += kf.len();
        let all: BTreeSet<usize> = kf.keys().chain(ff.keys()).copied().collect();
        for n in all {
            if kf.contains_key(&n) != ff.contains_key(&n) {
                let line = text.lines().nth(n - 1).unwrap_or("");
                line_disagreements.push(format!(
                    "seed {} {name} line {n}: `{line}`: kernel {:?}, fibre {:?}",
                    p.seed,
                    kf.get(&n).map(String::as_str).unwrap_or("ok"),
                    ff.get(&n).map(String::as_str).unwrap_or("ok")
                ));
            }
        }
    }

    // Listings: the same routes in the same order (the kernel's dump order).
    for fam in ["-4", "-6"] {
        let kernel = ns
            .ip(&["-j", fam, "route", "show", "table", "all"])
            .expect("ip route show");
        let ours = Query::new(&router, true).answer(&format!("{fam} route show table all"));
        let (k, o) = (listed_keys(&kernel), listed_keys(&ours));
        if k != o {
            let at = k.iter().zip(&o).take_while(|(a, b)| a == b).count();
            line_disagreements.push(format!(
                "seed {} {fam} route show table all: {} routes listed by the kernel, {} by fibre; \
                 first difference at {at}: kernel {:?}, fibre {:?}",
                p.seed,
                k.len(),
                o.len(),
                k.get(at),
                o.get(at)
            ));
        }
    }

    let links = ns.links().expect("links");
    let ifindex: BTreeMap<String, u32> = links.iter().cloned().collect();
    let names: BTreeMap<u32, String> = links.iter().map(|(n, i)| (*i, n.clone())).collect();
    for (n, i) in &ifindex {
        assert_eq!(
            router.links().by_name(n).map(|l| l.index),
            Some(*i),
            "fibre numbers devices as the kernel does ({n})"
        );
    }

    let mut oracle = Oracle::open(&ns).expect("netlink socket");
    let mut rng = SmallRng::seed_from_u64(p.seed ^ 0x5eed);
    let mut disagreements = Vec::new();
    let mut total = 0;
    for v6 in [false, true] {
        let ps = probes(&mut rng, &cfg, &setup, &ifindex, probes_per_family, v6);
        let answers = oracle.query(&ps).expect("kernel answers");
        let mut groups = GroupCaches::default();
        for (probe, kernel) in ps.iter().zip(&answers) {
            let q = query_of(probe);
            let ((ours, route_kind), chosen) = if v6 {
                let a = ask::<Ipv6Addr>(&router, &q);
                let chosen = a.as_ref().ok().map(|a| a.prefsrc.map(IpAddr::V6));
                (fibre_answer(&a, &router), chosen)
            } else {
                let a = ask::<Ipv4Addr>(&router, &q);
                let chosen = a.as_ref().ok().map(|a| a.prefsrc.map(IpAddr::V4));
                (fibre_answer(&a, &router), chosen)
            };
            let theirs = norm_kernel(kernel, &names);
            let cached_group = !v6 && groups.may_hold_a_group(probe, &ours, route_kind);
            if !v6 {
                groups.note(probe, &ours, route_kind);
            }
            // Without fibmatch the kernel answers a resolved (cloned) route: compare the verdict
            // and, for a packet of this host through a route of one next hop (no leg chosen by
            // hash) or through none (to a group, the broadcast or 0.0.0.0), the source chosen:
            // IPv6's whatever the query's source; IPv4's when the query names none (it then
            // shows none) and the route is a classic one (an object's next hop caches the
            // source its first route's scope chose, docs/semantics.md).
            let same = if probe.fibmatch {
                same_route(&ours, &theirs, probe, v6, route_kind, cached_group)
            } else {
                match (&ours, &theirs) {
                    (Norm::Error(a), Norm::Error(b)) => a == b,
                    (Norm::Route { hops, nhid, .. }, Norm::Route { prefsrc, .. })
                        if hops.len() == 1
                            && probe.iif.is_none()
                            && (v6 || (probe.src.is_none() && nhid.is_none())) =>
                    {
                        chosen == Some(*prefsrc)
                    }
                    (Norm::Error(-1), Norm::Route { prefsrc, .. })
                        if probe.iif.is_none() && (v6 || probe.src.is_none()) =>
                    {
                        chosen == Some(*prefsrc)
                    }
                    (Norm::Route { .. } | Norm::Error(-1), Norm::Route { .. }) => true,
                    _ => same_route(&ours, &theirs, probe, v6, route_kind, cached_group),
                }
            };
            if !same {
                disagreements.push(format!(
                    "seed {} {}:\n    kernel {theirs:?}\n    fibre  {ours:?} (source {chosen:?})",
                    p.seed,
                    describe(probe)
                ));
            }
        }
        total += ps.len();
    }
    Outcome {
        probes: total,
        disagreements,
        line_disagreements,
        failed_lines,
    }
}

fn check(profiles: &[Profile], probes_per_family: usize) {
    let mut bad = Vec::new();
    let mut total = 0;
    for p in profiles {
        let o = run(p, probes_per_family);
        total += o.probes;
        eprintln!(
            "kernel differential: seed {:>3}: {} routes v4 + {} v6, {} rules/family, {} failed batch lines; {} probes, {} disagreements, {} batch-line disagreements",
            p.seed, p.routes_v4, p.routes_v6, p.rules, o.failed_lines, o.probes, o.disagreements.len(), o.line_disagreements.len()
        );
        bad.extend(o.line_disagreements.into_iter().take(15));
        // A few of each kind: grouped by the shape of the two answers.
        let mut seen = BTreeMap::new();
        for d in o.disagreements {
            let lines: Vec<&str> = d.lines().collect();
            let shape = format!(
                "{} / {}",
                &lines[1][..lines[1].len().min(30)],
                &lines[2][..lines[2].len().min(30)]
            );
            let n = seen.entry(shape).or_insert(0);
            *n += 1;
            if *n <= 3 {
                bad.push(d);
            }
        }
        for (shape, n) in &seen {
            eprintln!("  {n:>6} x {shape}");
        }
    }
    assert!(
        bad.is_empty(),
        "{} E-class disagreements over {total} probes, first ones:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

fn base(seed: u64) -> Profile {
    Profile {
        seed,
        routes_v4: 6000,
        routes_v6: 6000,
        rules: 0,
        tos_share: 0.05,
        ecmp_share: 0.1,
        source_share: 0.1,
        churn_share: 0.05,
        local_routes: false,
        nexthops: 0,
        nhid_share: 0.0,
    }
}

#[test]
fn default_rules_fast_path() {
    if skip_or_fail("default_rules_fast_path") {
        return;
    }
    check(
        &[Profile {
            routes_v4: 20000,
            routes_v6: 10000,
            ..base(1)
        }],
        50_000,
    );
}

#[test]
fn policy_rules_every_selector() {
    if skip_or_fail("policy_rules_every_selector") {
        return;
    }
    check(
        &[
            Profile {
                rules: 25,
                ..base(2)
            },
            Profile {
                rules: 40,
                local_routes: true,
                ..base(3)
            },
        ],
        50_000,
    );
}

#[test]
fn tos_metrics_and_churn() {
    if skip_or_fail("tos_metrics_and_churn") {
        return;
    }
    check(
        &[Profile {
            tos_share: 0.4,
            churn_share: 0.3,
            rules: 10,
            ..base(4)
        }],
        50_000,
    );
}

#[test]
fn ecmp_and_ipv6_source_routes() {
    if skip_or_fail("ecmp_and_ipv6_source_routes") {
        return;
    }
    check(
        &[Profile {
            ecmp_share: 0.5,
            source_share: 0.5,
            routes_v4: 5000,
            routes_v6: 15000,
            ..base(5)
        }],
        50_000,
    );
}

/// Routes through next-hop objects (`nhid`: singles, blackholes, groups of both families)
/// among classic ones, then objects replaced and deleted, then the link changes that delete
/// the objects on their devices.
#[test]
fn nexthop_objects_among_classic_routes() {
    if skip_or_fail("nexthop_objects_among_classic_routes") {
        return;
    }
    check(
        &[Profile {
            nexthops: 60,
            nhid_share: 0.4,
            ecmp_share: 0.2,
            churn_share: 0.15,
            rules: 10,
            tos_share: 0.1,
            ..base(7)
        }],
        50_000,
    );
}

#[test]
fn mixed_large() {
    if skip_or_fail("mixed_large") {
        return;
    }
    check(
        &[Profile {
            routes_v4: 20000,
            routes_v6: 20000,
            rules: 20,
            tos_share: 0.1,
            ecmp_share: 0.2,
            source_share: 0.2,
            churn_share: 0.1,
            local_routes: true,
            ..base(6)
        }],
        50_000,
    );
}

/// More configurations, for soak runs (not in `make test`):
/// `FIBRE_DIFF_SEEDS=100..130 cargo test --release -p fibre --test kernel_diff -- --ignored`.
/// `FIBRE_DIFF_NO_SOURCES=1` leaves IPv6 source routes out: churned among them, the kernel's
/// answers depend on its history (docs/semantics.md), about a fifth of the configurations
/// disagree for that alone, and what else disagrees stands out without them. (Its random draws
/// differ: a seed's configuration is the same only with the same setting.)
#[test]
#[ignore]
fn seed_sweep() {
    if skip_or_fail("seed_sweep") {
        return;
    }
    let range = std::env::var("FIBRE_DIFF_SEEDS").unwrap_or_else(|_| "100..110".into());
    let (a, b) = range.split_once("..").expect("FIBRE_DIFF_SEEDS=FROM..TO");
    let (a, b): (u64, u64) = (a.parse().expect("FROM"), b.parse().expect("TO"));
    let profiles: Vec<Profile> = (a..b)
        .map(|seed| {
            let k = seed % 4;
            Profile {
                rules: [0, 15, 30, 5][k as usize],
                tos_share: [0.05, 0.2, 0.1, 0.3][k as usize],
                ecmp_share: [0.1, 0.3, 0.5, 0.2][k as usize],
                source_share: match std::env::var("FIBRE_DIFF_NO_SOURCES").as_deref() {
                    Ok("1") => 0.0,
                    _ => [0.1, 0.3, 0.2, 0.5][k as usize],
                },
                churn_share: [0.05, 0.2, 0.1, 0.3][k as usize],
                local_routes: k % 2 == 1,
                ..base(seed)
            }
        })
        .collect();
    check(&profiles, 50_000);
}

/// The FIB path (the default) answers every probe as the RIB walk does: the same generated
/// configurations and probes as the kernel comparisons, no kernel needed; then again after
/// links go down and come back (next hops die, FIBs are rebuilt) and after more changes.
#[test]
fn fib_path_answers_as_the_rib() {
    let profiles = [
        Profile {
            routes_v4: 4000,
            routes_v6: 4000,
            ..base(11)
        },
        Profile {
            rules: 20,
            local_routes: true,
            tos_share: 0.3,
            ..base(12)
        },
        Profile {
            ecmp_share: 0.5,
            source_share: 0.5,
            churn_share: 0.3,
            ..base(13)
        },
    ];
    for p in &profiles {
        let setup = gen::setup();
        let cfg = gen::config(p);
        let mut batch = Batch::new(router_like_the_kernel());
        batch.mode = BatchMode::Force;
        assert!(batch.run_text(&setup.text).success());
        batch.run_text(&cfg.v4);
        batch.family = Some(Family::Inet6);
        batch.run_text(&cfg.v6);
        batch.family = None;
        let ifindex: BTreeMap<String, u32> = gen::DEVS
            .iter()
            .map(|d| {
                (
                    d.to_string(),
                    batch.router.links().by_name(d).unwrap().index,
                )
            })
            .collect();
        let mut rng = SmallRng::seed_from_u64(p.seed ^ 0xf1b);
        let mut compared = 0;
        for step in ["loaded", "veth0 down", "veth0 up again", "routes deleted"] {
            match step {
                "veth0 down" => assert!(batch.run_text("link set veth0 down\n").success()),
                "veth0 up again" => assert!(batch.run_text("link set veth0 up\n").success()),
                "routes deleted" => {
                    // Every fifth v4 line replayed as a delete (failures are fine: -force).
                    let dels: String = cfg
                        .v4
                        .lines()
                        .filter(|l| l.starts_with("route add"))
                        .step_by(5)
                        .map(|l| l.replacen("route add", "route del", 1) + "\n")
                        .collect();
                    batch.run_text(&dels);
                }
                _ => {}
            }
            let with_fib = &batch.router;
            let mut without = with_fib.clone();
            without.set_fibs_enabled(false);
            for v6 in [false, true] {
                for probe in probes(&mut rng, &cfg, &setup, &ifindex, 5000, v6) {
                    let q = query_of(&probe);
                    let (a, b) = if v6 {
                        (
                            format!("{:?}", ask::<Ipv6Addr>(with_fib, &q)),
                            format!("{:?}", ask::<Ipv6Addr>(&without, &q)),
                        )
                    } else {
                        (
                            format!("{:?}", ask::<Ipv4Addr>(with_fib, &q)),
                            format!("{:?}", ask::<Ipv4Addr>(&without, &q)),
                        )
                    };
                    assert_eq!(a, b, "seed {} after {step}: {}", p.seed, describe(&probe));
                    compared += 1;
                }
            }
        }
        // The FIB path was taken: IPv4's merged local+main and IPv6 main have FIBs with
        // entries, and IPv4 main its own once rules are customised. Most of their ids are
        // route classes (destinations of one route), so the kernel's answers check those.
        let v4 = batch.router.family::<Ipv4Addr>();
        assert!(v4.merged_fib().is_some_and(|t| t.route_classes() > 0));
        assert_eq!(v4.table_fib(254).is_some(), v4.rules().customised);
        assert!(batch
            .router
            .family::<Ipv6Addr>()
            .table_fib(254)
            .is_some_and(|t| !t.fib().is_empty()));
        eprintln!("FIB vs RIB: seed {}: {compared} probes agree", p.seed);
    }
}
