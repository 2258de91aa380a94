//! A mirror following a churning kernel: a seeded generator applies over 10^5 changes of every
//! kind to a namespace (routes of both families in several tables, added, replaced, appended,
//! prepended and deleted, with ECMP and next-hop objects; objects added, replaced and deleted;
//! devices taken down, brought up, added and deleted; addresses added and deleted; rules of
//! both families added and deleted), in chunks, while a mirror follows. After each chunk (a
//! quiescent point) the mirror's listings must equal `ip -j`'s and `route get ... fibmatch`
//! probes must get the kernel's answers.
//!
//! Run twice: with a roomy notification buffer every notification applies and no resync is
//! needed; with a 4 KiB one the buffer overruns (asserted) and resyncs mend what was lost.
//! `FIBRE_CHURN_SEED=N` runs both with seed N (a sweep by hand); `FIBRE_CHURN_DUMP=DIR` writes
//! each chunk as `ip -batch` ran it, to replay a failure into a namespace.
//!
//! Needs root and `ip netns`; skips with a message elsewhere, fails when FIBRE_KERNEL_TESTS=required.
use fibre::io::iproute2::names::scope_name;
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::io::netlink::{FollowReport, Mirror};
use fibre::Router;
use kernel_oracle::{skip_or_fail, Netns};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

#[path = "support/listings.rs"]
mod listings;
#[path = "support/veths.rs"]
mod veths;

/// The shared devices, and what this test adds to them.
fn setup() -> String {
    format!(
        "{}link set xb up\naddr add 2001:db8:3::1/64 dev xa nodad\n",
        veths::THREE_VETHS
    )
}
use std::time::{Duration, Instant};

/// Changes that succeed, at least (failed lines do not count).
const CHANGES: usize = 100_000;
/// Lines per chunk, and the most chunks (the loop's bound whatever fails).
const CHUNK: usize = 10_000;
const MAX_CHUNKS: usize = 26;
/// `route get` probes per quiescent point (half each family): over 10^5 in all, as about half
/// of a chunk's lines succeed (deletes of what is not there, adds of what is).
const PROBES: usize = 5_000;

fn v4_dst(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..3) {
        0 => format!("10.{}.0.0/16", rng.gen_range(0..16)),
        _ => format!("10.{}.{}.0/24", rng.gen_range(0..16), rng.gen_range(0..16)),
    }
}

fn v6_dst(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..3) {
        0 => format!("2001:db8:{:x}::/48", 0x100 + rng.gen_range(0..16)),
        _ => format!(
            "2001:db8:{:x}:{:x}::/64",
            0x100 + rng.gen_range(0..16),
            rng.gen_range(0..16)
        ),
    }
}

fn v4_via(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..3) {
        0 => format!("192.0.2.{}", rng.gen_range(2..10)),
        1 => format!("198.51.100.{}", rng.gen_range(2..10)),
        _ => format!("203.0.113.{}", rng.gen_range(2..10)),
    }
}

fn v6_via(rng: &mut SmallRng) -> String {
    format!(
        "2001:db8:{}::{:x}",
        rng.gen_range(1..4),
        rng.gen_range(2..10)
    )
}

/// One IPv4 route command.
fn v4_route(rng: &mut SmallRng) -> String {
    let verb = ["add", "replace", "append", "prepend", "del", "del"][rng.gen_range(0..6)];
    let table = ["", " table 100", " table 200"][rng.gen_range(0..3)];
    let metric = ["", " metric 10", " metric 20"][rng.gen_range(0..3)];
    let tos = if rng.gen_ratio(1, 8) { " tos 0x10" } else { "" };
    let dst = v4_dst(rng);
    if verb == "del" {
        return format!("route del {dst}{tos}{table}{metric}");
    }
    let how = match rng.gen_range(0..10) {
        // A quarter name one of xa's churned addresses as source: its removal takes main's
        // routes that name it (`fib_del_ifaddr`), which the kernel does not announce.
        0..=3 if rng.gen_ratio(1, 4) => {
            format!("via {} src 203.0.113.{}", v4_via(rng), rng.gen_range(2..4))
        }
        0..=3 => format!("via {}", v4_via(rng)),
        4 | 5 => format!(
            "nexthop via {} weight {} nexthop via {}",
            v4_via(rng),
            rng.gen_range(1..4),
            v4_via(rng)
        ),
        6 | 7 => format!("nhid {}", rng.gen_range(1..11)),
        8 => "dev xa".to_string(),
        _ => ["blackhole", "unreachable", "prohibit"][rng.gen_range(0..3)].to_string(),
    };
    let (kind, how) = match how.as_str() {
        "blackhole" | "unreachable" | "prohibit" => (format!("{how} "), String::new()),
        _ => (String::new(), format!(" {how}")),
    };
    format!("route {verb} {kind}{dst}{tos}{table}{metric}{how}")
}

/// One IPv6 route command.
fn v6_route(rng: &mut SmallRng) -> String {
    let verb = ["add", "replace", "append", "prepend", "del", "del"][rng.gen_range(0..6)];
    let table = ["", " table 100"][rng.gen_range(0..2)];
    let metric = ["", " metric 100"][rng.gen_range(0..2)];
    let dst = v6_dst(rng);
    if verb == "del" {
        let via = if rng.gen_ratio(1, 3) {
            format!(" via {}", v6_via(rng))
        } else {
            String::new()
        };
        return format!("route del {dst}{via}{table}{metric}");
    }
    let how = match rng.gen_range(0..8) {
        0..=3 => format!(" via {}", v6_via(rng)),
        4 | 5 => format!(
            " nexthop via {} nexthop via {} weight {}",
            v6_via(rng),
            v6_via(rng),
            rng.gen_range(1..4)
        ),
        6 => format!(" nhid {}", rng.gen_range(11..16)),
        _ => return format!("route {verb} blackhole {dst}{table}{metric}"),
    };
    format!("route {verb} {dst}{table}{metric}{how}")
}

/// One next-hop object command: IPv4 ids 1-8 and groups 9-10, IPv6 ids 11-14 and group 15.
fn object(rng: &mut SmallRng) -> String {
    let verb = ["add", "replace", "replace", "del"][rng.gen_range(0..4)];
    let id = rng.gen_range(1..16);
    if verb == "del" {
        return format!("nexthop del id {id}");
    }
    match id {
        1..=8 => format!("nexthop {verb} id {id} via {}", v4_via(rng)),
        9 | 10 => format!(
            "nexthop {verb} id {id} group {}/{},{}",
            rng.gen_range(1..5),
            rng.gen_range(5..9),
            rng.gen_range(1..4)
        ),
        11..=14 => format!("nexthop {verb} id {id} via {}", v6_via(rng)),
        _ => format!(
            "nexthop {verb} id {id} group 11/12,2/{}",
            rng.gen_range(13..15)
        ),
    }
}

/// One device, address or IPv4 rule command.
fn other(rng: &mut SmallRng) -> String {
    let pair = rng.gen_range(0..4);
    let dev = ["vb", "wb", "xa", "xb"][rng.gen_range(0..4)];
    match rng.gen_range(0..10) {
        0 => format!("link set {dev} down"),
        1 | 2 => format!("link set {dev} up"),
        3 => format!("link add p{pair} type veth peer name q{pair}"),
        4 => format!("link del p{pair}"),
        5 => format!("link set p{pair} up\nlink set q{pair} up"),
        // A subnet for each scope (a secondary must have its primary's scope).
        6 => {
            let s = rng.gen_range(0..3);
            format!(
                "addr {} 10.20{s}.{pair}.{}/24 dev p{pair}{}",
                ["add", "del"][rng.gen_range(0..2)],
                rng.gen_range(1..4),
                ["", " scope link", " scope host"][s]
            )
        }
        // `change` updates an address in place (deprecated or not again), or adds it.
        7 => format!(
            "addr {} 2001:db8:20{pair}::{}/64 dev p{pair} nodad{}",
            ["add", "del", "change"][rng.gen_range(0..3)],
            rng.gen_range(1..4),
            ["", " preferred_lft 0"][rng.gen_range(0..2)]
        ),
        // xa keeps 203.0.113.1: a device losing its last IPv4 address leaves the legs of
        // multipath routes through it `dead` until one comes back, history the model does not
        // keep (docs/semantics.md).
        8 => format!(
            "addr {} 203.0.113.{}/24 dev xa",
            ["add", "del"][rng.gen_range(0..2)],
            rng.gen_range(2..4)
        ),
        _ => format!(
            "rule {} from 10.{}.0.0/16 lookup {} pref {}",
            ["add", "del"][rng.gen_range(0..2)],
            rng.gen_range(0..16),
            [100, 200][rng.gen_range(0..2)],
            1000 + rng.gen_range(0..8)
        ),
    }
}

/// A chunk: lines for `ip -batch`, and IPv6 rule lines for `ip -6 -batch` (ip takes the
/// family per invocation for rules).
fn chunk(rng: &mut SmallRng) -> (String, String) {
    let (mut lines, mut v6_rules) = (String::new(), String::new());
    for _ in 0..CHUNK {
        let line = match rng.gen_range(0..20) {
            0..=7 => v4_route(rng),
            8..=13 => v6_route(rng),
            14 | 15 => object(rng),
            16 => {
                v6_rules += &format!(
                    "rule {} from 2001:db8:{:x}::/48 lookup 100 pref {}\n",
                    ["add", "del"][rng.gen_range(0..2)],
                    0x100 + rng.gen_range(0..16),
                    2000 + rng.gen_range(0..8)
                );
                continue;
            }
            _ => other(rng),
        };
        lines += &line;
        lines.push('\n');
    }
    (lines, v6_rules)
}

/// Lines that succeeded: all but those ip says failed. ip ends a batch at a line it cannot
/// parse, `-force` or not: the generator writes none.
fn succeeded(lines: &str, stderr: &str) -> usize {
    assert!(
        !stderr.contains("expected"),
        "ip could not parse a line: {stderr}"
    );
    lines.lines().count() - stderr.matches("Command failed").count()
}

fn json_lines(text: &str) -> Vec<Value> {
    listings::documents_with(text, forget_multipath_linkdown)
}

/// The `linkdown` flag of an IPv4 multipath route as a whole is history: the kernel sets it
/// when one device event leaves every leg down or on that device, or when the route is made
/// with every leg down, and clears it when a leg comes back; legs that lost their carrier one
/// device at a time leave it unset (S-class, docs/semantics.md). The legs' own flags are
/// compared.
///
/// So is `dead` on a leg of an IPv6 multipath route whose device is up again: the kernel
/// clears it once the device is ready (up with carrier), not when it comes up. `dead` is
/// compared where the device is down (its single-path routes, which carry the flag, go).
fn forget_multipath_linkdown(v: &mut Value) {
    for r in v.as_array_mut().into_iter().flatten() {
        if r.get("nexthops").is_none() {
            continue;
        }
        if let Some(flags) = r.get_mut("flags").and_then(Value::as_array_mut) {
            flags.retain(|f| f != "linkdown");
        }
        for h in r["nexthops"].as_array_mut().into_iter().flatten() {
            if let Some(flags) = h.get_mut("flags").and_then(Value::as_array_mut) {
                flags.retain(|f| f != "dead");
            }
        }
    }
}

/// A listing's entries, as a sorted multiset.
fn items(docs: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = docs
        .iter()
        .flat_map(|d| d.as_array().cloned().unwrap_or_default())
        .map(|x| x.to_string())
        .collect();
    v.sort();
    v
}

/// Two listings as multisets; on a difference, says what only one side has.
fn same_listing(kernel: &[Value], mirror: &[Value], what: &str) {
    let (k, m) = (items(kernel), items(mirror));
    if k != m {
        let only = |a: &[String], b: &[String]| -> Vec<String> {
            let mut b = b.to_vec();
            a.iter()
                .filter(|x| match b.iter().position(|y| y == *x) {
                    Some(i) => {
                        b.remove(i);
                        false
                    }
                    None => true,
                })
                .take(8)
                .cloned()
                .collect()
        };
        panic!(
            "{what}: {} kernel, {} mirror entries\nonly the kernel's:\n{}\nonly the mirror's:\n{}",
            k.len(),
            m.len(),
            only(&k, &m).join("\n"),
            only(&m, &k).join("\n")
        );
    }
}

/// Devices as (index, name, up, carrier) and addresses as (family, address/length, device),
/// from `ip -j link show` / `ip -j addr show`: the fields the model holds.
fn kernel_devices(ns: &Netns) -> (Vec<String>, Vec<String>) {
    let links: Value = serde_json::from_str(&ns.ip(&["-j", "link", "show"]).expect("ip")).unwrap();
    let addrs: Value = serde_json::from_str(&ns.ip(&["-j", "addr", "show"]).expect("ip")).unwrap();
    let flag = |l: &Value, f: &str| l["flags"].as_array().unwrap().iter().any(|x| x == f);
    let mut l: Vec<String> = links
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            format!(
                "{} {} up={} carrier={}",
                l["ifindex"],
                l["ifname"].as_str().unwrap(),
                flag(l, "UP"),
                flag(l, "LOWER_UP")
            )
        })
        .collect();
    let mut a = Vec::new();
    for dev in addrs.as_array().unwrap() {
        for i in dev["addr_info"].as_array().unwrap() {
            a.push(format!(
                "{} {}/{} {} scope {} deprecated={}",
                i["family"].as_str().unwrap(),
                i["local"].as_str().unwrap(),
                i["prefixlen"],
                dev["ifname"].as_str().unwrap(),
                i["scope"].as_str().unwrap(),
                i["deprecated"].as_bool().unwrap_or(false)
            ));
        }
    }
    l.sort();
    a.sort();
    (l, a)
}

fn mirror_devices(r: &Router) -> (Vec<String>, Vec<String>) {
    let links = r.links();
    let mut l: Vec<String> = links
        .iter()
        .map(|l| {
            format!(
                "{} {} up={} carrier={}",
                l.index,
                l.name,
                l.up,
                links.is_ready(l.index)
            )
        })
        .collect();
    let name = |d| links.name_of(d).unwrap_or("?").to_string();
    let mut a: Vec<String> = r
        .family::<std::net::Ipv4Addr>()
        .addrs()
        .iter()
        .map(|x| {
            format!(
                "inet {}/{} {} scope {} deprecated={}",
                x.addr,
                x.len,
                name(x.dev),
                scope_name(x.scope),
                x.deprecated
            )
        })
        .chain(r.family::<std::net::Ipv6Addr>().addrs().iter().map(|x| {
            format!(
                "inet6 {}/{} {} scope {} deprecated={}",
                x.addr,
                x.len,
                name(x.dev),
                scope_name(x.scope),
                x.deprecated
            )
        }))
        .collect();
    l.sort();
    a.sort();
    (l, a)
}

/// `route get ... fibmatch` lines for destinations in and around what the generator uses.
fn probes(rng: &mut SmallRng) -> (String, String) {
    let (mut v4, mut v6) = (String::new(), String::new());
    for _ in 0..PROBES / 2 {
        let a = match rng.gen_range(0..4) {
            0 => format!("192.0.2.{}", rng.gen_range(0..256)),
            1 => format!("10.200.{}.{}", rng.gen_range(0..4), rng.gen_range(0..256)),
            _ => format!(
                "10.{}.{}.{}",
                rng.gen_range(0..17),
                rng.gen_range(0..17),
                rng.gen_range(0..256)
            ),
        };
        let tos = if rng.gen_ratio(1, 8) { " tos 0x10" } else { "" };
        v4 += &format!("route get {a}{tos} fibmatch\n");
        let b = match rng.gen_range(0..4) {
            0 => format!(
                "2001:db8:{}::{:x}",
                rng.gen_range(1..4),
                rng.gen_range(0..16)
            ),
            _ => format!(
                "2001:db8:{:x}:{:x}::{:x}",
                0x100 + rng.gen_range(0..17),
                rng.gen_range(0..17),
                rng.gen_range(1..99)
            ),
        };
        v6 += &format!("route get {b} fibmatch\n");
    }
    (v4, v6)
}

/// The listings `compare` checks first: routes, rules and next hops of both families.
const LISTINGS: [(&[&str], &str); 5] = [
    (&["-j"], "route show table all"),
    (&["-j", "-6"], "route show table all"),
    (&["-j"], "rule show"),
    (&["-j", "-6"], "rule show"),
    (&["-j"], "nexthop show"),
];

/// Each of [`LISTINGS`] as fibre's batch line, with the kernel's and the mirror's documents.
fn listings(ns: &Netns, router: &Router) -> Vec<(String, Vec<Value>, Vec<Value>)> {
    let mut b = Batch::new(router.clone());
    b.json = true;
    b.mode = BatchMode::Force;
    LISTINGS
        .iter()
        .map(|(args, cmd)| {
            let k = ns.ip_batch_str(args, cmd).expect("ip -j");
            let line = if args.contains(&"-6") {
                format!("-6 {cmd}")
            } else {
                cmd.to_string()
            };
            let f = b.run_text(&line);
            (line, json_lines(&k.stdout), json_lines(&f.stdout))
        })
        .collect()
}

/// Whether the mirror's listings and devices are the kernel's (`compare` says how not).
fn listings_agree(ns: &Netns, router: &Router) -> bool {
    listings(ns, router)
        .iter()
        .all(|(_, k, f)| items(k) == items(f))
        && kernel_devices(ns) == mirror_devices(router)
}

/// The mirror's router against the kernel: listings and probes. Returns the probes run.
fn compare(ns: &Netns, router: &Router, rng: &mut SmallRng, at: &str) -> usize {
    for (line, k, f) in listings(ns, router) {
        same_listing(&k, &f, &format!("{at}: {line}"));
    }
    let mut b = Batch::new(router.clone());
    b.json = true;
    b.mode = BatchMode::Force;
    assert_eq!(kernel_devices(ns), mirror_devices(router), "{at}: devices");
    let (v4, v6) = probes(rng);
    for (args, lines) in [(vec!["-j"], v4), (vec!["-j", "-6"], v6)] {
        let k = ns.ip_batch_str(&args, &lines).expect("ip");
        b.family = args.contains(&"-6").then_some(fibre::Family::Inet6);
        let f = b.run_text(&lines);
        let (k, f) = (json_lines(&k.stdout), json_lines(&f.stdout));
        // Failures print no JSON on ip's side; fibre's `-j` prints an error object.
        let f: Vec<Value> = f.into_iter().filter(|v| v.get("error").is_none()).collect();
        assert_eq!(k.len(), f.len(), "{at}: probes answered");
        for (i, (a, b)) in k.iter().zip(&f).enumerate() {
            assert_eq!(a, b, "{at}: probe {i}");
        }
    }
    b.family = None;
    PROBES
}

/// Applies chunks while the mirror follows; compares at each quiescent point.
fn churn(tag: &str, rcvbuf: Option<usize>, seed: u64) -> (usize, usize, FollowReport) {
    let ns = veths::namespace(tag, &setup());
    let (mut mirror, _) = Mirror::open_with(Some(ns.name()), rcvbuf).expect("mirror syncs");
    // Another seed, for a sweep by hand (each test keeps its own by default).
    let seed = std::env::var("FIBRE_CHURN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut probe_rng = SmallRng::seed_from_u64(seed + 1);
    let (mut changes, mut probed) = (0, 0);
    let started = Instant::now();
    for i in 0..MAX_CHUNKS {
        if changes >= CHANGES {
            break;
        }
        let (lines, v6_rules) = chunk(&mut rng);
        if let Ok(dir) = std::env::var("FIBRE_CHURN_DUMP") {
            // For replaying a failure by hand: the chunk as ip ran it.
            let _ = std::fs::write(format!("{dir}/{tag}-{i}.batch"), &lines);
            let _ = std::fs::write(format!("{dir}/{tag}-{i}-v6rules.batch"), &v6_rules);
        }
        changes += std::thread::scope(|scope| {
            let generator = scope.spawn(|| {
                let a = ns.ip_batch_str(&[], &lines).expect("ip -batch");
                let b = ns.ip_batch_str(&["-6"], &v6_rules).expect("ip -6 -batch");
                succeeded(&lines, &a.stderr) + succeeded(&v6_rules, &b.stderr)
            });
            while !generator.is_finished() {
                mirror
                    .follow(Duration::from_millis(200), Duration::from_millis(50))
                    .expect("follow");
            }
            generator.join().expect("generator")
        });
        // Quiescent: the kernel is done; the mirror reads what is left. The kernel tells of
        // carrier changes from its linkwatch work, up to a second after the change and later
        // on a busy machine (a CI run beside two profilers missed them once): the mirror
        // follows again while the listings differ, at most four times more.
        for _ in 0..5 {
            mirror
                .follow(Duration::from_secs(2), Duration::from_millis(300))
                .expect("follow");
            if listings_agree(&ns, &mirror.router()) {
                break;
            }
        }
        probed += compare(
            &ns,
            &mirror.router(),
            &mut probe_rng,
            &format!("{tag} chunk {i}"),
        );
        assert!(
            started.elapsed() < Duration::from_secs(900),
            "bounded in time"
        );
    }
    assert!(
        changes >= CHANGES,
        "{changes} changes in {MAX_CHUNKS} chunks"
    );
    assert!(probed >= 100_000, "{probed} probes");
    (changes, probed, mirror.totals().clone())
}

#[test]
fn a_mirror_follows_churn_notification_by_notification() {
    if skip_or_fail("a_mirror_follows_churn_notification_by_notification") {
        return;
    }
    // 64 MiB: room for every notification of a chunk (about 6,000) even if the mirror read
    // none of them until the chunk ended, so the assertion below does not hang on timing.
    let (changes, probed, t) = churn("churn-roomy", Some(64 << 20), 11);
    eprintln!("roomy buffer: {changes} changes, {probed} probes, {t:?}");
    // A recheck (a notification came in during a sync's dumps: at the open's, the kernel may
    // still be announcing the veth's carrier; or a route deleted where the open's dump hid
    // one) is a resync of its own; nothing else may be.
    assert_eq!(
        (t.overruns, t.failed, t.resyncs),
        (0, 0, t.rechecks),
        "{t:?}"
    );
    assert!(t.applied >= changes, "{t:?}");
}

#[test]
fn a_mirror_with_a_small_buffer_overruns_and_resyncs_to_equal() {
    if skip_or_fail("a_mirror_with_a_small_buffer_overruns_and_resyncs_to_equal") {
        return;
    }
    let (changes, probed, t) = churn("churn-small", Some(4096), 12);
    eprintln!("4 KiB buffer: {changes} changes, {probed} probes, {t:?}");
    assert!(t.overruns >= 1 && t.resyncs >= t.overruns, "{t:?}");
    // Resyncs whose dumps ran while the kernel changed, or whose IPv6 dump hid routes that a
    // later change may have brought into view, are done again once it is quiet (`t.rechecks`,
    // printed above; how many depends on timing, so it is not asserted). Without the second
    // kind, `blackhole 2001:db8:10e:2::/64 table 100` went missing now and then: hidden
    // between ECMP legs at the last resync, shown once a `route del` took the legs
    // (`Mirror::sync`), and the listings compared with the kernel's above differed.
}
