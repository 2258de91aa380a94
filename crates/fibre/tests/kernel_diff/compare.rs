//! The comparison of a probe's two answers: each side's answer reduced to what decides and
//! reports a match (`Norm`), and the S-class differences the comparison allows (see
//! docs/semantics.md): the IPv6 ECMP leg's router preference, the source check of a forwarded
//! packet against the leg the hash picked, and an IPv4 route's type as the kernel's per-CPU
//! cache of resolved output routes holds it (`GroupCaches`).
use fibre::{Errno, Family, RouteAnswer, RouteSpec, Router};
use kernel_oracle::{Answer, KernelRoute, Probe};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The `rtm_type` the comparison names.
const RTN_MULTICAST: u8 = 5;

/// A next hop as both sides report it: gateway, device name, weight.
type Hop = (Option<IpAddr>, Option<String>, u16);

/// The group every IPv4 device that is up joins (`router/ipv4/mod.rs`, `joined`): its lookups neither fill nor read
/// the cache of resolved routes (`do_cache` is false for a joined group).
const ALL_HOSTS: IpAddr = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 1));

/// A route reduced to what decides and reports a match, comparable across both sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Norm {
    Error(i32),
    Route {
        table: u32,
        kind: u8,
        dst: String,
        src: Option<String>,
        tos: u8,
        protocol: u8,
        scope: u8,
        metric: Option<u32>,
        prefsrc: Option<IpAddr>,
        pref: Option<u8>,
        nhid: Option<u32>,
        hops: Vec<Hop>,
    },
}

pub fn norm_kernel(a: &Answer, names: &BTreeMap<u32, String>) -> Norm {
    let r: &KernelRoute = match a {
        Answer::Error(e) => return Norm::Error(*e),
        Answer::Route(r) => r,
    };
    let name = |i: u32| Some(names.get(&i).cloned().unwrap_or_else(|| format!("if{i}")));
    let mut hops: Vec<_> = if r.nexthops.is_empty() {
        if r.gateway.is_some() || r.oif.is_some() {
            vec![(r.gateway, r.oif.and_then(name), 1)]
        } else {
            vec![]
        }
    } else {
        r.nexthops
            .iter()
            .map(|h| (h.gateway, name(h.oif), h.weight))
            .collect()
    };
    let v6 = r.dst.is_ipv6();
    if v6 {
        hops.sort();
    }
    Norm::Route {
        table: r.table,
        kind: r.kind,
        dst: format!("{}/{}", r.dst, r.dst_len),
        src: (r.src_len > 0).then(|| {
            format!(
                "{}/{}",
                r.src.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
                r.src_len
            )
        }),
        tos: r.tos,
        protocol: r.protocol,
        scope: r.scope,
        metric: r.metric,
        prefsrc: r.prefsrc,
        // RTA_PREF: 0 medium, 1 high, 3 low.
        pref: r.pref,
        nhid: r.nhid,
        hops,
    }
}

fn norm_spec<A: fibre::Address>(spec: &RouteSpec<A>, router: &Router) -> Norm {
    let v6 = A::FAMILY == Family::Inet6;
    let name = |d: Option<u32>| {
        d.map(|d| {
            router
                .links()
                .name_of(d)
                .map(str::to_string)
                .unwrap_or_else(|| format!("if{d}"))
        })
    };
    let mut hops: Vec<_> = spec
        .hops
        .iter()
        .map(|h| {
            (
                h.gateway.map(Into::into),
                name(h.dev),
                // Weights are reported for multipath: several hops, or IPv6 through a group.
                if spec.hops.len() > 1 || (v6 && spec.nhid.is_some_and(|n| n.group)) {
                    h.weight
                } else {
                    1
                },
            )
        })
        .collect();
    if v6 {
        if spec.kind.is_reject() && hops.is_empty() {
            hops.push((None, Some("lo".into()), 1));
        }
        hops.sort();
    }
    Norm::Route {
        table: spec.table,
        kind: spec.kind as u8,
        dst: format!("{}/{}", spec.dst.addr(), spec.dst.len()),
        src: (!spec.src.is_default()).then(|| format!("{}/{}", spec.src.addr(), spec.src.len())),
        tos: spec.tos,
        protocol: spec.protocol,
        scope: spec.scope,
        metric: if v6 || spec.metric != 0 {
            Some(spec.metric)
        } else {
            None
        },
        prefsrc: spec.prefsrc.map(Into::into),
        pref: v6.then_some(match spec.pref {
            fibre::route::RouterPref::Medium => 0,
            fibre::route::RouterPref::High => 1,
            fibre::route::RouterPref::Low => 3,
        }),
        nhid: spec.nhid.map(|n| n.id),
        hops,
    }
}

/// fibre's answer, and the type of the route it matched (0 for none). For IPv4 the answer
/// reports, as the kernel's fibmatch does, the type of the route resolved (broadcast to
/// 255.255.255.255, multicast to groups, whatever route carried them); the comparison also
/// needs the route's own ([`GroupCaches`]).
pub fn fibre_answer<A: fibre::Address>(
    r: &Result<RouteAnswer<A>, Errno>,
    router: &Router,
) -> (Norm, u8) {
    let a = match r {
        Err(e) => return (Norm::Error(e.code()), 0),
        Ok(a) => a,
    };
    let Some(mut spec) = a.route_spec() else {
        return (Norm::Error(-1), 0);
    };
    let route_kind = spec.kind as u8;
    if A::FAMILY == Family::Inet {
        spec.kind = a.kind;
    }
    (norm_spec(&spec, router), route_kind)
}

/// The prefix length of the route an answer matched.
fn matched_len(n: &Norm) -> Option<u8> {
    match n {
        Norm::Route { dst, .. } => dst.rsplit('/').next()?.parse().ok(),
        Norm::Error(_) => None,
    }
}

/// Where the kernel caches the resolved IPv4 output routes of a route, as far as its answer
/// shows it. A classic route's cache lies in its `fib_info`'s next hops, which every route of
/// the same table, type (the route's own), next hops, metric, protocol, scope and preferred
/// source shares
/// (`fib_find_info`, which compares the table since Linux 6.2; the destination and TOS are not
/// part of it, and the metrics and next-hop flags, which the answers do not show, only split
/// `fib_info`s further). A route through a next-hop object uses the object's next hop (a
/// group's: its members'), whatever the route's own attributes; two objects with the same
/// gateway and device are taken as one here, which only allows more.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RouteCache {
    FibInfo {
        table: u32,
        kind: u8,
        protocol: u8,
        scope: u8,
        metric: Option<u32>,
        prefsrc: Option<IpAddr>,
        hops: Vec<Hop>,
    },
    ObjectHop {
        gateway: Option<IpAddr>,
        dev: Option<String>,
    },
}

/// The caches the lookups through a route of type `route_kind` may fill or read.
fn caches_of(n: &Norm, route_kind: u8) -> Vec<RouteCache> {
    match n {
        Norm::Error(_) => Vec::new(),
        Norm::Route {
            nhid: Some(_),
            hops,
            ..
        } => hops
            .iter()
            .map(|(gateway, dev, _)| RouteCache::ObjectHop {
                gateway: *gateway,
                dev: dev.clone(),
            })
            .collect(),
        Norm::Route {
            table,
            protocol,
            scope,
            metric,
            prefsrc,
            hops,
            ..
        } => vec![RouteCache::FibInfo {
            table: *table,
            kind: route_kind,
            protocol: *protocol,
            scope: *scope,
            metric: *metric,
            prefsrc: *prefsrc,
            hops: hops.clone(),
        }],
    }
}

/// The IPv4 route caches that a probe to a multicast group has filled so far in a run, in the
/// order the kernel was asked (one socket, one request at a time). The kernel caches resolved
/// output routes per CPU in the next hop (`nhc_pcpu_rth_output`): a group's lookup through a
/// route of prefix length 4 or more, of any type that reaches `__mkroute_output` (unicast,
/// broadcast, local...), leaves there a route of type multicast (the group not joined), and a
/// later output lookup of a unicast address through a route sharing that cache, on the same
/// CPU, gets it back with its type (soak seeds 447, 1081 and 1240: broadcast routes reported
/// as multicast). Which CPU each probe ran on is not known, so the comparison allows the type
/// wherever a group went before.
#[derive(Default)]
pub struct GroupCaches(BTreeSet<RouteCache>);

impl GroupCaches {
    /// Notes a probe that fibre answered `ours`, through a route of type `route_kind`.
    pub fn note(&mut self, probe: &Probe, ours: &Norm, route_kind: u8) {
        if group_lookup_uses_cache(probe, ours) {
            self.0.extend(caches_of(ours, route_kind));
        }
    }

    /// Whether the kernel may have answered a probe (that fibre answered `ours`, through a
    /// route of type `route_kind`) from a cache a group's lookup filled.
    pub fn may_hold_a_group(&self, probe: &Probe, ours: &Norm, route_kind: u8) -> bool {
        probe.iif.is_none()
            && caches_of(ours, route_kind)
                .iter()
                .any(|c| self.0.contains(c))
    }
}

/// Whether the kernel's output lookup of a probe to a group (fibre answered `ours`) goes
/// through the cache: not for a forwarded probe (`iif`: the input path has its own cache, which
/// no group's lookup fills), not below prefix length 4 (the kernel drops the route's next hop
/// there), not for a joined group ([`ALL_HOSTS`]).
fn group_lookup_uses_cache(probe: &Probe, ours: &Norm) -> bool {
    probe.dst.is_multicast()
        && probe.dst != ALL_HOSTS
        && probe.iif.is_none()
        && matched_len(ours).is_some_and(|len| len >= 4)
}

/// Field-by-field equality, less the S-class parts: the router preference an IPv6 ECMP match
/// reports is that of the leg the flow hash picked; an IPv4 forwarded packet whose route has
/// several legs is source-checked against the leg the hash picked (fibre passes it if any leg
/// passes); an IPv4 route's type may be the one its per-CPU cache holds (for a group: the type
/// of the route matched, `route_kind`, which a unicast address's lookup leaves there; for a
/// unicast address multicast, only where `cached_group`: see [`GroupCaches`]).
pub fn same_route(
    ours: &Norm,
    theirs: &Norm,
    probe: &Probe,
    v6: bool,
    route_kind: u8,
    cached_group: bool,
) -> bool {
    let with_kind = |k: u8| {
        let mut a = ours.clone();
        if let Norm::Route { kind, .. } = &mut a {
            *kind = k;
        }
        a == *theirs
    };
    match (ours, theirs) {
        (
            Norm::Route {
                pref: p1, hops: h1, ..
            },
            Norm::Route {
                pref: p2, hops: h2, ..
            },
        ) if v6 && h1.len() > 1 && p1 != p2 => {
            let mut a = ours.clone();
            if let Norm::Route { pref, .. } = &mut a {
                *pref = *p2;
            }
            a == *theirs && h1 == h2
        }
        (Norm::Route { hops, .. }, Norm::Error(22))
            if !v6 && hops.len() > 1 && probe.iif.is_some() =>
        {
            // The source of a forwarded packet is checked against the leg the hash picked: the
            // reverse lookup comes in on that leg's device (rules naming `iif` see it), and a
            // leg back out of the input device takes the redirect path.
            true
        }
        (
            Norm::Route {
                kind: RTN_MULTICAST,
                ..
            },
            Norm::Route { kind, .. },
        ) if !v6 && *kind == route_kind && group_lookup_uses_cache(probe, ours) => {
            // A group not joined may get the route (of the matched route's type) that an
            // output lookup of a unicast address through a route sharing its cache left there
            // (S-class, docs/semantics.md). The rest must agree.
            with_kind(route_kind)
        }
        (
            Norm::Route { .. },
            Norm::Route {
                kind: RTN_MULTICAST,
                ..
            },
        ) if !v6 && !probe.dst.is_multicast() && cached_group => {
            // The other way round: a unicast address through a route whose cache a group's
            // lookup filled comes back as multicast (S-class, docs/semantics.md).
            with_kind(RTN_MULTICAST)
        }
        _ => ours == theirs,
    }
}
