//! Random router configurations, as iproute2 batch files that both `ip -batch` and fibre read.
//!
//! Protocols are given by name only: iproute2 6.1's name cache (`rtnl_rtprot_a2n`) answers a
//! stale number for a cached name once a numeric protocol was parsed in the same batch.
//!
//! Everything is drawn from a seeded RNG so that a failing configuration can be replayed by seed.
//! Gateways lie in connected subnets (as a real router's do), route prefixes cluster in a few
//! regions so that they nest and collide, and every attribute the kernel decides on is varied.
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What to emphasise in one configuration.
#[derive(Clone, Copy, Debug)]
pub struct Profile {
    pub seed: u64,
    pub routes_v4: usize,
    pub routes_v6: usize,
    /// Policy rules per family (0: the kernel's fast path with default rules only).
    pub rules: usize,
    /// Share of IPv4 routes with a TOS selector.
    pub tos_share: f64,
    /// Share of multipath routes.
    pub ecmp_share: f64,
    /// Share of IPv6 routes with a source prefix.
    pub source_share: f64,
    /// Share of lines that are del / replace / change.
    pub churn_share: f64,
    /// User-added `local` routes (these switch the kernel's source validation to its slow path).
    pub local_routes: bool,
    /// Next-hop objects per family (0: none, and no `nhid` routes).
    pub nexthops: usize,
    /// Share of unicast routes that go through an object (`nhid`).
    pub nhid_share: f64,
}

pub const DEVS: [&str; 6] = ["veth0", "veth1", "veth2", "veth3", "veth4", "veth5"];
/// Devices that go down and up (veth6) or away (veth8) after the routes are in: routes use
/// them now and then, single-path and as legs of multipath routes, and probes never name them.
pub const CHURNED: [usize; 2] = [6, 8];

/// Device `i` (0..6 the probed ones, 6 and 8 the churned ones, 7 and 9 their peers).
pub fn dev(i: usize) -> String {
    format!("veth{i}")
}

/// The device of a next hop: mostly a probed one, sometimes a churned one.
fn route_dev(rng: &mut SmallRng) -> usize {
    if rng.gen_ratio(1, 12) {
        *pick(rng, &CHURNED)
    } else {
        rng.gen_range(0..DEVS.len())
    }
}

/// The device setup shared by both families, and the addresses it configures.
pub struct Setup {
    pub text: String,
    pub local_v4: Vec<Ipv4Addr>,
    pub local_v6: Vec<Ipv6Addr>,
}

pub fn setup() -> Setup {
    let mut t = String::from("link set lo up\n");
    for i in (0..10).step_by(2) {
        let _ = writeln!(t, "link add {} type veth peer name {}", dev(i), dev(i + 1));
    }
    for i in 0..10 {
        let _ = writeln!(t, "link set {} up", dev(i));
    }
    for i in CHURNED {
        let _ = writeln!(t, "addr add 10.0.{i}.1/24 dev {}", dev(i));
        let _ = writeln!(t, "addr add 2001:db8:{i}::1/64 dev {} nodad", dev(i));
    }
    let mut local_v4 = vec![Ipv4Addr::LOCALHOST];
    let mut local_v6 = vec![Ipv6Addr::LOCALHOST];
    for (i, d) in DEVS.iter().enumerate() {
        let _ = writeln!(t, "addr add 10.0.{i}.1/24 dev {d}");
        local_v4.push(Ipv4Addr::new(10, 0, i as u8, 1));
        let _ = writeln!(t, "addr add 2001:db8:{i}::1/64 dev {d} nodad");
        local_v6.push(format!("2001:db8:{i}::1").parse().unwrap());
    }
    // A secondary address, a /30, a /16, a /32, and an address without prefix route.
    for (a, d) in [
        ("10.0.4.2/24", "veth4"),
        ("192.168.100.1/30", "veth5"),
        ("172.16.0.1/16", "veth2"),
        ("198.18.7.7/32", "veth3"),
        ("100.127.0.1/24 noprefixroute", "veth1"),
    ] {
        let _ = writeln!(t, "addr add {a} dev {d}");
        local_v4.push(a.split('/').next().unwrap().parse().unwrap());
    }
    // Addresses of link and host scope, which the kernel lists first on their devices (the
    // sources of routes on the link, and of host-scope ones), and a global address on lo (the
    // source of routes through devices that lost theirs).
    for (a, d) in [
        ("169.254.4.1/16 scope link", "veth4"),
        ("10.250.5.1/24 scope host", "veth5"),
        ("10.255.0.1/32", "lo"),
    ] {
        let _ = writeln!(t, "addr add {a} dev {d}");
        local_v4.push(a.split('/').next().unwrap().parse().unwrap());
    }
    for (a, d) in [("fd00::1/48", "veth2"), ("2001:db8:ff::1/128", "veth3")] {
        let _ = writeln!(t, "addr add {a} dev {d} nodad");
        local_v6.push(a.split('/').next().unwrap().parse().unwrap());
    }
    Setup {
        text: t,
        local_v4,
        local_v6,
    }
}

/// A gateway on device `i` (never one of our own addresses).
fn gw4(rng: &mut SmallRng, i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, i as u8, rng.gen_range(2..250))
}
fn gw6(rng: &mut SmallRng, i: usize) -> Ipv6Addr {
    let host: u16 = rng.gen_range(2..0xfff0);
    format!("2001:db8:{i}::{host:x}").parse().unwrap()
}

/// Prefix regions: most routes fall inside a few, so that they nest.
const V4_REGIONS: [(u32, u8); 6] = [
    (0x1400_0000, 8),  // 20.0.0.0/8
    (0x1e00_0000, 8),  // 30.0.0.0/8
    (0x6440_0000, 10), // 100.64.0.0/10
    (0xc633_6400, 24), // 198.51.100.0/24
    (0x0a00_0000, 16), // 10.0.0.0/16, around the connected subnets
    (0x0000_0000, 0),  // anywhere
];

pub fn random_v4_prefix(rng: &mut SmallRng) -> (Ipv4Addr, u8) {
    let (base, blen) = V4_REGIONS[rng.gen_range(0..V4_REGIONS.len())];
    let len = match rng.gen_range(0..10) {
        0 => blen.max(rng.gen_range(0..=8)),
        1..=3 => rng.gen_range(blen.max(16)..=24),
        4..=7 => rng.gen_range(blen.max(20)..=28).max(blen),
        _ => rng.gen_range(blen.max(24)..=32),
    }
    .max(blen);
    let host: u32 = rng.gen::<u32>() & !mask32(blen);
    let a = (base | host) & mask32(len);
    (Ipv4Addr::from(a), len)
}

fn mask32(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}
fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    }
}

const V6_REGIONS: [(u128, u8); 5] = [
    (0x2001_0db8_0100_0000_0000_0000_0000_0000, 40),
    (0x2400_0000_0000_0000_0000_0000_0000_0000, 12),
    (0x2a00_0000_0000_0000_0000_0000_0000_0000, 12),
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 44), // around the connected /64s
    (0x2000_0000_0000_0000_0000_0000_0000_0000, 3),
];

pub fn random_v6_prefix(rng: &mut SmallRng) -> (Ipv6Addr, u8) {
    let (base, blen) = V6_REGIONS[rng.gen_range(0..V6_REGIONS.len())];
    let len = match rng.gen_range(0..10) {
        0 => rng.gen_range(blen..=blen + 16),
        1..=4 => rng.gen_range(32..=48),
        5..=7 => rng.gen_range(48..=64),
        8 => rng.gen_range(64..=127),
        _ => 128,
    }
    .max(blen);
    let host: u128 = rng.gen::<u128>() & !mask128(blen);
    (Ipv6Addr::from((base | host) & mask128(len)), len)
}

/// Source prefixes for IPv6 `from` routes, inside 2001:db8:f000::/36.
pub fn random_v6_source(rng: &mut SmallRng) -> (Ipv6Addr, u8) {
    let len = rng.gen_range(36..=64);
    let base = 0x2001_0db8_f000_0000_0000_0000_0000_0000u128;
    let host = rng.gen::<u128>() & !mask128(36) & mask128(len);
    (Ipv6Addr::from(base | host), len)
}

/// Removes `KEY VALUE` from a route line's words (a `del` naming fewer attributes).
fn drop_attr(words: &mut Vec<&str>, key: &str) {
    if let Some(i) = words.iter().position(|w| *w == key) {
        words.drain(i..(i + 2).min(words.len()));
    }
}

const V4_TABLES: [&str; 6] = ["main", "main", "main", "100", "101", "200"];

fn pick<'a, T>(rng: &mut SmallRng, xs: &'a [T]) -> &'a T {
    &xs[rng.gen_range(0..xs.len())]
}

/// One configuration: the two route files and the prefixes in them (probes aim there).
pub struct Config {
    /// Next-hop objects of both families, before the routes (no -4/-6: ip sends a group's
    /// family as given, and the kernel takes groups only without one).
    pub nh: String,
    pub v4: String,
    pub v6: String,
    /// Objects replaced and deleted after the routes are in.
    pub nh_churn: String,
    pub prefixes_v4: Vec<(Ipv4Addr, u8)>,
    pub prefixes_v6: Vec<(Ipv6Addr, u8)>,
    pub sources_v6: Vec<(Ipv6Addr, u8)>,
}

pub fn config(p: &Profile) -> Config {
    let mut rng = SmallRng::seed_from_u64(p.seed);
    let mut c = Config {
        nh: String::new(),
        v4: String::new(),
        v6: String::new(),
        nh_churn: String::new(),
        prefixes_v4: vec![],
        prefixes_v6: vec![],
        sources_v6: vec![],
    };
    // IPv6 objects some route already goes through (see `nhid`).
    let mut used6 = BTreeSet::new();
    let mut lines_v4: Vec<String> = Vec::new();
    for _ in 0..p.routes_v4 {
        let churn = rng.gen_bool(p.churn_share) && !lines_v4.is_empty();
        if churn && rng.gen_bool(0.5) {
            // Delete a route given earlier, naming a random subset of its attributes.
            let old = pick(&mut rng, &lines_v4).clone();
            let mut words: Vec<&str> = old.split_whitespace().skip(2).collect();
            if rng.gen_bool(0.5) {
                drop_attr(&mut words, "metric");
            }
            if rng.gen_bool(0.3) {
                drop_attr(&mut words, "via");
            }
            let _ = writeln!(c.v4, "route del {}", words.join(" "));
            continue;
        }
        let verb = if churn {
            *pick(
                &mut rng,
                &["replace", "replace", "change", "append", "prepend"],
            )
        } else {
            *pick(
                &mut rng,
                &[
                    "add", "add", "add", "add", "add", "add", "append", "prepend",
                ],
            )
        };
        let (a, len) = random_v4_prefix(&mut rng);
        c.prefixes_v4.push((a, len));
        let mut l = String::new();
        let kind = match rng.gen_range(0..100) {
            0..=64 => "",
            65..=72 => "blackhole ",
            73..=78 => "unreachable ",
            79..=83 => "prohibit ",
            84..=91 => "throw ",
            92..=94 if p.local_routes => "local ",
            95 => "broadcast ",
            96 => "multicast ",
            _ => "",
        };
        let _ = write!(
            l,
            "{kind}{}",
            if len == 0 {
                "default".to_string()
            } else {
                format!("{a}/{len}")
            }
        );
        if rng.gen_bool(p.tos_share) {
            let _ = write!(
                l,
                " tos {}",
                pick(&mut rng, &["0x04", "0x08", "0x10", "0x1c", "0x20", "0x0c"])
            );
        }
        let table = *pick(&mut rng, &V4_TABLES);
        let table = if rng.gen_ratio(1, 50) {
            "default"
        } else {
            table
        };
        if table != "main" {
            let _ = write!(l, " table {table}");
        }
        let metric = *pick(&mut rng, &[0u32, 0, 0, 5, 10, 100, 1000]);
        if metric != 0 || rng.gen_bool(0.1) {
            let _ = write!(l, " metric {metric}");
        }
        match kind {
            "" if rng.gen_bool(p.ecmp_share) => {
                for _ in 0..rng.gen_range(2..=4) {
                    let d = route_dev(&mut rng);
                    let _ = write!(
                        l,
                        " nexthop via {} weight {}",
                        gw4(&mut rng, d),
                        rng.gen_range(1..=4)
                    );
                    if rng.gen_bool(0.3) {
                        let _ = write!(l, " dev {}", dev(d));
                    }
                }
            }
            "" if p.nhid_share > 0.0 && rng.gen_bool(p.nhid_share) => {
                let _ = write!(l, " nhid {}", nhid(&mut rng, p, false, &mut used6));
                if rng.gen_bool(0.1) {
                    let _ = write!(l, " scope {}", pick(&mut rng, &["link", "host"]));
                }
            }
            "" => {
                let d = route_dev(&mut rng);
                match rng.gen_range(0..10) {
                    0..=6 => {
                        let _ = write!(l, " via {}", gw4(&mut rng, d));
                        if rng.gen_bool(0.5) {
                            let _ = write!(l, " dev {}", dev(d));
                        }
                    }
                    7 => {
                        // A gateway on the wrong device: the kernel refuses it.
                        let _ = write!(
                            l,
                            " via {} dev {}",
                            gw4(&mut rng, d),
                            dev((d + 1) % DEVS.len())
                        );
                    }
                    _ => {
                        let _ = write!(l, " dev {}", dev(d));
                    }
                }
                if rng.gen_bool(0.1) {
                    let _ = write!(l, " src 10.0.{d}.1");
                }
                if rng.gen_bool(0.05) {
                    let _ = write!(
                        l,
                        " proto {}",
                        pick(&mut rng, &["static", "bird", "bgp", "babel"])
                    );
                }
            }
            "local " | "broadcast " | "multicast " => {
                let _ = write!(l, " dev {}", dev(route_dev(&mut rng)));
            }
            _ => {}
        }
        let _ = writeln!(c.v4, "route {verb} {l}");
        lines_v4.push(format!("route {verb} {l}"));
    }
    if p.rules > 0 {
        c.v4.push_str(&rules(&mut rng, p.rules, false));
    }

    let mut lines_v6: Vec<String> = Vec::new();
    for _ in 0..p.routes_v6 {
        let churn = rng.gen_bool(p.churn_share) && !lines_v6.is_empty();
        if churn && rng.gen_bool(0.5) {
            let old = pick(&mut rng, &lines_v6).clone();
            let mut words: Vec<&str> = old.split_whitespace().skip(2).collect();
            if rng.gen_bool(0.3) {
                drop_attr(&mut words, "via");
            }
            let _ = writeln!(c.v6, "route del {}", words.join(" "));
            continue;
        }
        let verb = if churn {
            *pick(
                &mut rng,
                &["replace", "replace", "change", "append", "prepend"],
            )
        } else {
            *pick(
                &mut rng,
                &["add", "add", "add", "add", "append", "append", "prepend"],
            )
        };
        // Re-use an earlier destination now and then, so that same-metric ECMP siblings form;
        // now and then the default route, the root of the kernel's tree.
        let (a, len) = if rng.gen_ratio(1, 100) {
            (Ipv6Addr::UNSPECIFIED, 0)
        } else if !c.prefixes_v6.is_empty() && rng.gen_bool(0.2) {
            *pick(&mut rng, &c.prefixes_v6)
        } else {
            random_v6_prefix(&mut rng)
        };
        c.prefixes_v6.push((a, len));
        let mut l = String::new();
        let kind = match rng.gen_range(0..100) {
            0..=69 => "",
            70..=77 => "blackhole ",
            78..=83 => "unreachable ",
            84..=88 => "prohibit ",
            89..=95 => "throw ",
            _ => "",
        };
        let _ = write!(
            l,
            "{kind}{}",
            if len == 0 {
                "default".to_string()
            } else {
                format!("{a}/{len}")
            }
        );
        // Not for `change`: a failed `change` of a source route can leave the kernel's source
        // subtree unreachable to lookups (a kernel bug, docs/semantics.md).
        let sourced = verb != "change" && rng.gen_bool(p.source_share);
        // Removing source routes with their device shows a kernel bug (its answers then depend
        // on history, docs/semantics.md): source routes keep to devices that stay.
        let pick_dev = |rng: &mut SmallRng| {
            if sourced {
                rng.gen_range(0..DEVS.len())
            } else {
                route_dev(rng)
            }
        };
        if sourced {
            let s = if !c.sources_v6.is_empty() && rng.gen_bool(0.4) {
                *pick(&mut rng, &c.sources_v6)
            } else {
                random_v6_source(&mut rng)
            };
            c.sources_v6.push(s);
            let _ = write!(l, " from {}/{}", s.0, s.1);
        }
        let table = *pick(&mut rng, &V4_TABLES);
        if table != "main" {
            let _ = write!(l, " table {table}");
        }
        if let Some(m) = *pick(
            &mut rng,
            &[None, None, Some(1024u32), Some(256), Some(100), Some(2048)],
        ) {
            let _ = write!(l, " metric {m}");
        }
        if kind.is_empty() && p.nhid_share > 0.0 && rng.gen_bool(p.nhid_share) {
            let _ = write!(l, " nhid {}", nhid(&mut rng, p, true, &mut used6));
        } else if kind.is_empty() {
            if rng.gen_bool(p.ecmp_share) {
                for _ in 0..rng.gen_range(2..=3) {
                    let d = pick_dev(&mut rng);
                    let _ = write!(
                        l,
                        " nexthop via {} dev {} weight {}",
                        gw6(&mut rng, d),
                        dev(d),
                        rng.gen_range(1..=4)
                    );
                }
            } else {
                let d = pick_dev(&mut rng);
                if rng.gen_bool(0.8) {
                    let _ = write!(l, " via {}", gw6(&mut rng, d));
                    if rng.gen_bool(0.6) {
                        let _ = write!(l, " dev {}", dev(d));
                    }
                } else {
                    let _ = write!(l, " dev {}", dev(d));
                }
                if rng.gen_bool(0.1) {
                    let _ = write!(l, " pref {}", pick(&mut rng, &["high", "low", "medium"]));
                }
            }
        }
        let _ = writeln!(c.v6, "route {verb} {l}");
        lines_v6.push(format!("route {verb} {l}"));
    }
    if p.rules > 0 {
        c.v6.push_str(&rules(&mut rng, p.rules, true));
    }
    if p.nexthops > 0 {
        nexthops(&mut rng, p, &mut c);
    }
    c
}

/// Object ids: IPv4 singles from 1, IPv4 groups from 501, IPv6 singles from 1001, IPv6 groups
/// from 1501, IPv6 device-only and blackhole objects (added under -6) from 2001.
const V4_GROUPS: u32 = 500;
const V6_SINGLES: u32 = 1000;
const V6_GROUPS: u32 = 1500;
const V6_OTHERS: u32 = 2000;
// (IPv6 singles run to 1000 + 4n + 3: `nexthops` below keeps n under 100.)

/// The id a route names: mostly an object of its family, a group a third of the time; now and
/// then one that does not exist, and for IPv6 now and then an IPv4 one (refused).
///
/// An IPv6 object serves one route at most (`used`): the kernel keeps its per-CPU route cache
/// in the object's next hop, and a `fibmatch` through an object that another route filled the
/// cache of reports that other route (docs/semantics.md). IPv4 objects are shared freely.
fn nhid(rng: &mut SmallRng, p: &Profile, v6: bool, used: &mut BTreeSet<u32>) -> u32 {
    let n = p.nexthops as u32;
    let groups = n / 3 + 1;
    if !v6 {
        return match rng.gen_range(0..30) {
            0 => 4000 + rng.gen_range(0..10),
            1..=10 => V4_GROUPS + rng.gen_range(1..=groups),
            _ => rng.gen_range(1..=n),
        };
    }
    let candidate = match rng.gen_range(0..30) {
        0 => return 4000 + rng.gen_range(0..10),
        1 => return rng.gen_range(1..=n),
        2 | 3 => V6_OTHERS + rng.gen_range(1..=4),
        4..=13 => V6_GROUPS + rng.gen_range(1..=groups),
        _ => V6_SINGLES + rng.gen_range(1..=3 * n),
    };
    if used.insert(candidate) {
        candidate
    } else {
        // Taken: an id that does not exist (the route is refused).
        4000 + rng.gen_range(0..10)
    }
}

/// A group over members drawn from `lo..=hi`: 1 to 4, now and then a duplicate or one that
/// does not exist.
fn group(rng: &mut SmallRng, lo: u32, hi: u32) -> String {
    let k = rng.gen_range(1..=4);
    let mut members: Vec<u32> = Vec::new();
    while members.len() < k {
        let m = rng.gen_range(lo..=hi);
        if !members.contains(&m) || rng.gen_ratio(1, 20) {
            members.push(m);
        }
    }
    if rng.gen_ratio(1, 20) {
        members.push(3999);
    }
    members
        .iter()
        .map(|m| {
            if rng.gen_bool(0.4) {
                format!("{m},{}", rng.gen_range(1..=4))
            } else {
                m.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// One single next-hop object's attributes: mostly a gateway on a connected subnet, some
/// device-only, blackhole or onlink ones, and some the kernel refuses.
fn single(rng: &mut SmallRng, v6: bool) -> String {
    let d = route_dev(rng);
    let gw = |rng: &mut SmallRng, d: usize| -> String {
        if v6 {
            gw6(rng, d).to_string()
        } else {
            gw4(rng, d).to_string()
        }
    };
    let mut l = match rng.gen_range(0..20) {
        0..=13 => format!("via {} dev {}", gw(rng, d), dev(d)),
        14 if !v6 => format!("dev {}", dev(d)),
        15 if !v6 => "blackhole".to_string(),
        16 if v6 => format!("via fe80::{:x} dev {}", rng.gen_range(2..0xfff0u16), dev(d)),
        16 => format!(
            "via 192.0.2.{} dev {} onlink",
            rng.gen_range(1..250),
            dev(d)
        ),
        17 => format!("via {} dev {}", gw(rng, d), dev((d + 1) % DEVS.len())),
        18 => format!("via {}", gw(rng, d)),
        _ if v6 => format!("via 2001:db8:{d}::1 dev {}", dev(d)),
        _ => format!("via 10.0.{d}.255 dev {} onlink", dev(d)),
    };
    if rng.gen_ratio(1, 10) {
        let _ = write!(l, " proto {}", pick(rng, &["static", "bgp", "zebra"]));
    }
    l
}

/// The objects before the routes, and the replacements and deletions after them.
fn nexthops(rng: &mut SmallRng, p: &Profile, c: &mut Config) {
    assert!(p.nexthops < 100, "the IPv6 ids stay below the groups'");
    let n = p.nexthops as u32;
    let groups = n / 3 + 1;
    for id in 1..=n {
        let verb = if rng.gen_ratio(1, 10) {
            "replace"
        } else {
            "add"
        };
        let _ = writeln!(c.nh, "nexthop {verb} id {id} {}", single(rng, false));
    }
    // IPv6: 3n singles for routes, then three members of its own for each group (see `nhid`).
    for id in 1..=3 * n + 3 * groups {
        let _ = writeln!(
            c.nh,
            "nexthop add id {} {}",
            V6_SINGLES + id,
            single(rng, true)
        );
    }
    for g in 1..=groups {
        let _ = writeln!(
            c.nh,
            "nexthop add id {} group {}",
            V4_GROUPS + g,
            group(rng, 1, n)
        );
        let first = V6_SINGLES + 3 * n + 3 * (g - 1) + 1;
        let members = group(rng, first, first + 2);
        let _ = writeln!(c.nh, "nexthop add id {} group {members}", V6_GROUPS + g);
    }
    // Under -6: device-only and blackhole IPv6 objects, and a group (refused: a family given).
    let mut v6 = String::new();
    for k in 1..=4 {
        let what = if k % 2 == 0 {
            "blackhole".to_string()
        } else {
            format!("dev {}", dev(rng.gen_range(0..DEVS.len())))
        };
        let _ = writeln!(v6, "nexthop add id {} {what}", V6_OTHERS + k);
    }
    let _ = writeln!(
        v6,
        "nexthop add id {} group {}",
        V6_OTHERS + 9,
        V6_SINGLES + 1
    );
    c.v6 = v6 + &c.v6;
    for _ in 0..n / 2 {
        let line = match rng.gen_range(0..10) {
            0..=3 => format!(
                "nexthop replace id {} {}",
                rng.gen_range(1..=n),
                single(rng, false)
            ),
            4..=5 => format!(
                "nexthop replace id {} {}",
                V6_SINGLES + rng.gen_range(1..=n),
                single(rng, true)
            ),
            6 => format!(
                "nexthop replace id {} group {}",
                V4_GROUPS + rng.gen_range(1..=groups),
                group(rng, 1, n)
            ),
            7 => format!(
                "nexthop replace id {} group {}",
                rng.gen_range(1..=n),
                group(rng, 1, n)
            ),
            8 => format!("nexthop del id {}", rng.gen_range(1..=n)),
            _ => format!(
                "nexthop del id {}",
                *pick(rng, &[V4_GROUPS, V6_SINGLES, V6_GROUPS]) + rng.gen_range(1..=groups)
            ),
        };
        let _ = writeln!(c.nh_churn, "{line}");
    }
}

/// Policy rules with every selector this kernel supports (no l3mdev: no VRF devices here).
fn rules(rng: &mut SmallRng, n: usize, v6: bool) -> String {
    let mut out = String::new();
    let mut prefs: Vec<u32> = (0..n).map(|_| rng.gen_range(1..32000)).collect();
    prefs.sort_unstable();
    for (k, &pref) in prefs.iter().enumerate() {
        let mut l = format!("rule add pref {pref}");
        if rng.gen_bool(0.1) {
            l.push_str(" not");
        }
        if rng.gen_bool(0.3) {
            if v6 {
                let (a, len) = if rng.gen_bool(0.5) {
                    random_v6_source(rng)
                } else {
                    random_v6_prefix(rng)
                };
                let _ = write!(l, " from {a}/{}", len.min(64));
            } else {
                let (a, len) = random_v4_prefix(rng);
                let len = len.min(24);
                let _ = write!(
                    l,
                    " from {}/{len}",
                    Ipv4Addr::from(u32::from(a) & mask32(len))
                );
            }
        }
        if rng.gen_bool(0.3) {
            if v6 {
                let (a, len) = random_v6_prefix(rng);
                let len = len.min(48);
                let _ = write!(
                    l,
                    " to {}/{len}",
                    Ipv6Addr::from(u128::from(a) & mask128(len))
                );
            } else {
                let (a, len) = random_v4_prefix(rng);
                let len = len.min(16);
                let _ = write!(
                    l,
                    " to {}/{len}",
                    Ipv4Addr::from(u32::from(a) & mask32(len))
                );
            }
        }
        if rng.gen_bool(0.15) {
            let _ = write!(
                l,
                " fwmark {}",
                pick(rng, &["0x1", "0x10/0xf0", "0x11", "7/0x7"])
            );
        }
        if rng.gen_bool(0.15) {
            let _ = write!(
                l,
                " iif {}",
                pick(rng, &["lo", "veth0", "veth1", "veth3", "nosuchdev"])
            );
        }
        if rng.gen_bool(0.1) {
            let _ = write!(l, " oif {}", pick(rng, &["veth0", "veth2"]));
        }
        if rng.gen_bool(0.1) {
            let _ = write!(l, " tos {}", pick(rng, &["0x04", "0x08", "0x10"]));
        }
        if rng.gen_bool(0.1) {
            let _ = write!(l, " ipproto {}", pick(rng, &["tcp", "udp", "icmp"]));
        }
        if rng.gen_bool(0.1) {
            let _ = write!(l, " sport {}", pick(rng, &["1000", "1000-2000", "53"]));
        }
        if rng.gen_bool(0.1) {
            let _ = write!(l, " dport {}", pick(rng, &["80", "443", "1-1024"]));
        }
        if rng.gen_bool(0.1) {
            let _ = write!(
                l,
                " uidrange {}",
                pick(rng, &["0-0", "1000-2000", "1-65535"])
            );
        }
        match rng.gen_range(0..20) {
            0 if k + 1 < prefs.len() => {
                let _ = write!(l, " goto {}", prefs[rng.gen_range(k + 1..prefs.len())]);
            }
            1 => l.push_str(" nop"),
            2 => l.push_str(" blackhole"),
            3 => l.push_str(" unreachable"),
            4 => l.push_str(" prohibit"),
            5 => l.push_str(" lookup main suppress_prefixlength 0"),
            6 => l.push_str(" lookup 250"), // a table that does not exist
            _ => {
                let _ = write!(
                    l,
                    " lookup {}",
                    pick(rng, &["100", "101", "200", "main", "local", "default"])
                );
                if rng.gen_bool(0.1) {
                    let _ = write!(l, " suppress_prefixlength {}", rng.gen_range(0..=24));
                }
            }
        }
        out.push_str(&l);
        out.push('\n');
    }
    if rng.gen_bool(0.5) {
        // Deleting a rule also leaves the IPv4 fast path for good.
        let _ = writeln!(out, "rule del pref {}", prefs[0]);
    }
    out
}

/// A random address inside a prefix.
pub fn inside_v4(rng: &mut SmallRng, (a, len): (Ipv4Addr, u8)) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(a) | (rng.gen::<u32>() & !mask32(len)))
}
pub fn inside_v6(rng: &mut SmallRng, (a, len): (Ipv6Addr, u8)) -> Ipv6Addr {
    Ipv6Addr::from(u128::from(a) | (rng.gen::<u128>() & !mask128(len)))
}

/// A destination worth asking about: inside configured prefixes, next to them, or anywhere
/// unicast. Martian and multicast destinations are left out (the kernel answers those before
/// any table lookup).
pub fn probe_dst(rng: &mut SmallRng, c: &Config, v6: bool) -> IpAddr {
    if v6 {
        loop {
            let a = match rng.gen_range(0..10) {
                0..=5 if !c.prefixes_v6.is_empty() => {
                    let q = *pick(rng, &c.prefixes_v6);
                    inside_v6(rng, q)
                }
                6 => {
                    let net: Ipv6Addr = format!("2001:db8:{}::", rng.gen_range(0..6))
                        .parse()
                        .unwrap();
                    inside_v6(rng, (net, 64))
                }
                _ => {
                    let (a, l) = random_v6_prefix(rng);
                    inside_v6(rng, (a, l))
                }
            };
            // Multicast and link-local destinations take other paths in the kernel.
            let top = a.segments()[0];
            if top & 0xff00 != 0xff00
                && top & 0xffc0 != 0xfe80
                && !a.is_unspecified()
                && !a.is_loopback()
            {
                return IpAddr::V6(a);
            }
        }
    } else {
        loop {
            let a = match rng.gen_range(0..10) {
                0..=5 if !c.prefixes_v4.is_empty() => {
                    let q = *pick(rng, &c.prefixes_v4);
                    inside_v4(rng, q)
                }
                6 => Ipv4Addr::new(10, 0, rng.gen_range(0..6), rng.gen()),
                _ => Ipv4Addr::from(rng.gen::<u32>()),
            };
            let o = a.octets();
            if o[0] != 0 && o[0] != 127 && o[0] < 224 {
                return IpAddr::V4(a);
            }
        }
    }
}

/// After the routes: a churned device goes down (and, in half the configurations, up again),
/// the other is deleted. IPv4 multipath routes with a leg on the deleted device go whole,
/// IPv6 ones lose the leg; legs on a down device are dead until it is up.
pub fn link_changes(seed: u64) -> String {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x11ed);
    let mut t = format!("link set {} down\n", dev(6));
    if rng.gen_bool(0.5) {
        let _ = writeln!(t, "link set {} up", dev(6));
    }
    let _ = writeln!(t, "link del {}", dev(8));
    t
}

/// Addresses changed after the routes, in the probed devices' subnets (which one probe in ten
/// asks about): more addresses of a subnet, with metrics of their own, some taken away again
/// (an IPv6 address takes back the first route of its subnet, and only as the last address of
/// the subnet on its device), replaced (a new metric, `noprefixroute`) or deprecated
/// (`preferred_lft 0`: IPv6 sources avoid it). The setup's own addresses (`::1`, `.1`) are
/// replaced now and then, and an IPv6 one taken away. (An address added and taken away in
/// the one batch may leave the kernel without its subnet's anycast route, a race with its DAD
/// work (docs/semantics.md); no probe asks for a subnet-router anycast address, so the
/// comparison does not see it.)
pub fn address_changes(seed: u64) -> String {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xadd);
    let mut t = String::new();
    // Three devices, so that the changes meet in their subnets.
    for _ in 0..24 {
        let g = rng.gen_range(0..3);
        let d = dev(g);
        let x = rng.gen_range(1..5);
        let metric = pick(&mut rng, &["", " metric 0", " metric 5", " metric 300"]);
        let flags = pick(&mut rng, &["", " preferred_lft 0", " noprefixroute"]);
        let line = match rng.gen_range(0..10) {
            0..=3 => format!("addr add 2001:db8:{g}::{x}/64 dev {d} nodad{metric}{flags}"),
            4 | 5 => format!("addr replace 2001:db8:{g}::{x}/64 dev {d} nodad{metric}{flags}"),
            6 if x > 1 || rng.gen_ratio(1, 4) => format!("addr del 2001:db8:{g}::{x}/64 dev {d}"),
            7 => format!("addr replace 10.0.{g}.1/24 dev {d}{metric}"),
            8 => format!("addr add 10.0.{g}.{}/24 dev {d}{metric}", x + 1),
            _ => format!("addr del 2001:db8:{g}::{}/64 dev {d}", x.max(2)),
        };
        let _ = writeln!(t, "{line}");
    }
    t
}

/// Lines the kernel refuses or treats specially, of both families: table 0, scopes, uid
/// ranges, special and duplicate addresses, MTU clamps. Run without -4/-6 (each line's
/// addresses decide its family).
pub fn odd_lines(seed: u64, rules: bool) -> String {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x0dd);
    let mut t = String::new();
    for i in 0..24 {
        let d = dev(rng.gen_range(0..DEVS.len()));
        let g = rng.gen_range(0..DEVS.len());
        let line = match rng.gen_range(0..12) {
            0 => format!("route add 10.{}.{i}.0/24 dev {d} table 0", 200 + g),
            1 => format!("route add 2001:db8:a{g}:{i}::/64 dev {d} table 0"),
            2 => format!(
                "route add {}10.{}.{i}.0/24 dev {d} scope {}",
                pick(&mut rng, &["", "local ", "broadcast "]),
                210 + g,
                pick(&mut rng, &[0u8, 200, 253, 254, 255])
            ),
            3 => format!(
                "route add 10.{}.{i}.0/24 via {} scope {}",
                220 + g,
                gw4(&mut rng, g),
                pick(&mut rng, &[0u8, 200, 253, 254, 255])
            ),
            4 => format!(
                "route add 10.{}.{i}.0/24 dev {d} mtu {}",
                230 + g,
                pick(&mut rng, &[0u32, 68, 1500, 65520, 65521, 70000, u32::MAX])
            ),
            5 => format!(
                "route add 2001:db8:b{g}:{i}::/64 dev {d} mtu {} scope {}",
                pick(&mut rng, &[0u32, 1280, 65520, 70000, u32::MAX]),
                pick(&mut rng, &[0u8, 200, 255])
            ),
            // Only invalid ranges where rules must stay untouched (the fast-path profiles).
            6 => {
                let (a, b) = (rng.gen_range(0..2000u32), rng.gen_range(0..2000u32));
                let (a, b) = if rules {
                    (a.min(b), a.max(b))
                } else {
                    (a.max(b) + 1, a.min(b))
                };
                format!("rule add uidrange {a}-{b} lookup 100 pref {}", 20000 + i)
            }
            7 => format!(
                "addr add {} dev {d}",
                pick(
                    &mut rng,
                    &["::1/128", "ff02::5/128", "ff0e::1/64", "::/0", "::/128"]
                )
            ),
            8 => format!(
                "addr add {} dev {d}",
                pick(&mut rng, &["0.0.0.0/0", "0.0.0.0/8", "0.0.0.0/32"])
            ),
            9 => format!("addr add 10.0.{g}.1/24 dev {}", dev(g)),
            10 => format!(
                "addr add 2001:db8:{g}::1/{} dev {} nodad",
                pick(&mut rng, &[48u8, 64, 128]),
                dev(g)
            ),
            _ => format!("addr del 0.0.0.0/0 dev {d}"),
        };
        let _ = writeln!(t, "{line}");
    }
    t
}

/// An address of a class the kernel treats specially, as destination (`dst`) or source:
/// multicast (joined 224.0.0.1 and not), limited and directed broadcast, a network address,
/// 0.0.0.0 and the rest of 0/8, 127/8, 240/4, link-local, our own addresses; IPv6 ::1, ::,
/// groups of every scope, link-local, IPv4-mapped.
pub fn special_addr(rng: &mut SmallRng, s: &Setup, v6: bool, dst: bool) -> IpAddr {
    let i = rng.gen_range(0..DEVS.len()) as u8;
    if v6 {
        let fixed = [
            "::1",
            "::",
            "ff02::1",
            "ff02::fb",
            "ff05::2",
            "ff0e::101",
            "fe80::1",
            "fe80::a:b",
            "::ffff:10.0.0.1",
            "::ffff:192.0.2.7",
            "64:ff9b::c000:207",
            "2001:db8:ff::1",
        ];
        return match rng.gen_range(0..4) {
            0 => IpAddr::V6(*pick(rng, &s.local_v6)),
            // Groups as sources mean nothing to IPv6 route lookups; keep them mostly as dst.
            _ if !dst && rng.gen_bool(0.5) => IpAddr::V6(*pick(rng, &s.local_v6)),
            _ => IpAddr::V6(pick(rng, &fixed).parse().unwrap()),
        };
    }
    let r: u32 = rng.gen();
    let a = match rng.gen_range(0..14) {
        0 => Ipv4Addr::new(224, 0, 0, 1),
        1 => Ipv4Addr::new(224, 0, 0, *pick(rng, &[2u8, 5, 251])),
        2 => Ipv4Addr::from(0xef00_0000 | (r & 0x00ff_ffff)),
        3 => Ipv4Addr::BROADCAST,
        4 => Ipv4Addr::new(10, 0, i, 255),
        5 => Ipv4Addr::new(10, 0, i, 0),
        6 => Ipv4Addr::UNSPECIFIED,
        7 => Ipv4Addr::from(r & 0x00ff_ffff),
        8 => Ipv4Addr::from(0x7f00_0000 | (r & 0x00ff_ffff)),
        9 => Ipv4Addr::from(0xf000_0000 | (r & 0x0fff_ffff)),
        10 => Ipv4Addr::from(0xa9fe_0000 | (r & 0xffff)),
        11 => Ipv4Addr::new(172, 16, 255, 255),
        _ => *pick(rng, &s.local_v4),
    };
    IpAddr::V4(a)
}
