//! IPv6 semantics of a route list (net/ipv6/ip6_fib.c `fib6_add_rt2node`, route.c `ip6_route_del`,
//! `rt6_select` / `find_rr_leaf` / `rt6_score_route`).
//!
//! A list holds the routes of one (destination, source) pair sorted by metric; a new route goes
//! after every route of its metric (`append` and `prepend` alike). Each route has exactly one next
//! hop: a multipath route is stored as one route per leg, and the legs with a gateway and equal
//! metric are ECMP *siblings*, derived here from the list rather than linked.
use super::{
    InsertMode, KernelSemantics, LinkState, ListView, RouteSelector, RouteVec, Siblings,
    TableLookup,
};
use crate::error::{ChangeError, Errno};
use crate::flow::Flow;
use crate::nexthop::{NextHop, NhTable};
use crate::route::{Route, LOOPBACK_IFINDEX};
use smallvec::{smallvec, SmallVec};
use std::net::Ipv6Addr;

/// The only next hop of an IPv6 route (reject routes have none; the kernel gives them `lo`).
fn hop(r: &Route<Ipv6Addr>, nhs: &NhTable<Ipv6Addr>) -> NextHop<Ipv6Addr> {
    nhs.get(r.hops).first().copied().unwrap_or(NextHop {
        gateway: None,
        dev: Some(LOOPBACK_IFINDEX),
        weight: 1,
        onlink: false,
    })
}

/// `rt6_qualify_for_ecmp`: routes through a gateway may become siblings; a route through a
/// next-hop object never does (its multipath is the object's).
pub fn qualifies_for_ecmp(r: &Route<Ipv6Addr>, nhs: &NhTable<Ipv6Addr>) -> bool {
    r.nhid.is_none() && hop(r, nhs).gateway.is_some()
}

/// `rt6_duplicate_nexthop`: the same next hop, or the same next-hop object.
fn same_next_hop(a: &Route<Ipv6Addr>, b: &Route<Ipv6Addr>, nhs: &NhTable<Ipv6Addr>) -> bool {
    if a.nhid.is_some() || b.nhid.is_some() {
        return a.nhid.map(|n| n.id) == b.nhid.map(|n| n.id);
    }
    let (x, y) = (hop(a, nhs), hop(b, nhs));
    x.dev == y.dev && x.gateway == y.gateway
}

/// The ECMP siblings of `list[i]` (itself included), in list order; inline up to four (a
/// route get asks for them and does not allocate).
pub fn siblings<'a>(
    list: &'a [Route<Ipv6Addr>],
    i: usize,
    nhs: &NhTable<Ipv6Addr>,
) -> SmallVec<[&'a Route<Ipv6Addr>; 4]> {
    let r = &list[i];
    if !qualifies_for_ecmp(r, nhs) {
        return smallvec![r];
    }
    list.iter()
        .filter(|o| o.metric == r.metric && qualifies_for_ecmp(o, nhs))
        .collect()
}

fn insert_leg(
    list: &mut RouteVec<Ipv6Addr>,
    route: Route<Ipv6Addr>,
    mode: InsertMode,
    nhs: &NhTable<Ipv6Addr>,
) -> Result<Vec<Route<Ipv6Addr>>, ChangeError> {
    let replace = matches!(mode, InsertMode::Replace | InsertMode::Change);
    let new_ecmp = qualifies_for_ecmp(&route, nhs);
    let mut ins = list.len();
    let mut found = None;
    let mut fallback = None;
    for (i, it) in list.iter().enumerate() {
        if it.metric == route.metric {
            if mode == InsertMode::Add {
                return Err(Errno::EEXIST.into());
            }
            if replace {
                if new_ecmp == qualifies_for_ecmp(it, nhs) {
                    found = Some(i);
                    break;
                }
                fallback.get_or_insert(i);
                continue;
            }
            if same_next_hop(it, &route, nhs) {
                return Err(Errno::EEXIST.into());
            }
        }
        if it.metric > route.metric {
            ins = i;
            break;
        }
    }
    if !replace {
        list.insert(ins, route);
        return Ok(vec![]);
    }
    let Some(at) = found.or(fallback) else {
        if mode == InsertMode::Change {
            return Err(ChangeError::with(Errno::ENOENT, "Route does not exist"));
        }
        list.insert(ins, route);
        return Ok(vec![]);
    };
    let metric = route.metric;
    let old = std::mem::replace(&mut list[at], route);
    let mut displaced = Vec::new();
    if qualifies_for_ecmp(&old, nhs) {
        // Replacing an ECMP route removes its other siblings (they all follow it).
        let mut i = at + 1;
        while i < list.len() && list[i].metric <= metric {
            if list[i].metric == metric && qualifies_for_ecmp(&list[i], nhs) {
                displaced.push(list.remove(i));
            } else {
                i += 1;
            }
        }
    }
    displaced.insert(0, old);
    Ok(displaced)
}

/// The device routes score a bonus for: the output device, or for a forwarded packet its input
/// device (`ip6_pol_route_input` passes `flowi6_iif` where output lookups pass `flowi6_oif`).
fn preferred_dev(flow: &Flow<Ipv6Addr>) -> Option<u32> {
    if flow.input {
        flow.iif
    } else {
        flow.oif
    }
}

/// `rt6_score_route` + `find_match`: `None` is unusable, higher is better.
fn score(
    r: &Route<Ipv6Addr>,
    flow: &Flow<Ipv6Addr>,
    nhs: &NhTable<Ipv6Addr>,
    links: &dyn LinkState,
) -> Option<i32> {
    // A route through a next-hop object is scored on the device of each of its next hops
    // (`rt6_nh_find_match`): the first that is up.
    let dev = if r.nhid.is_some() {
        let want = preferred_dev(flow);
        let devs = nhs.get(r.hops).iter().filter_map(|h| h.dev);
        let up: Vec<u32> = devs.filter(|&d| links.is_up(d)).collect();
        match up.iter().find(|&&d| want == Some(d)).or(up.first()) {
            Some(&d) => d,
            None => return None,
        }
    } else {
        hop(r, nhs).dev.unwrap_or(LOOPBACK_IFINDEX)
    };
    // A reject route sits on `lo` whatever lo's state: lo going down deletes the ones there
    // (`fib6_ifdown`), and one added while lo is down is taken and marked nothing, so the
    // kernel answers with it (`find_match` asks the hop's dead flag, not the device).
    let reject = r.nhid.is_none() && r.kind.is_reject();
    if !reject && !links.is_up(dev) {
        return None;
    }
    let mut m = if preferred_dev(flow).is_none_or(|o| o == dev) {
        2
    } else {
        0
    };
    if m == 0 && flow.strict_oif {
        return None;
    }
    m |= r.pref.score() << 2;
    Some(m)
}

/// The best-scoring of `routes` (with their places in the list), as `find_rr_leaf` picks.
fn best(
    routes: impl Iterator<Item = (usize, Route<Ipv6Addr>)>,
    flow: &Flow<Ipv6Addr>,
    nhs: &NhTable<Ipv6Addr>,
    links: &dyn LinkState,
) -> Option<(usize, Route<Ipv6Addr>)> {
    let mut best: Option<((usize, Route<Ipv6Addr>), i32)> = None;
    for (i, r) in routes {
        // `__find_rr_leaf`: a route through a blackhole object ends the scan as the answer,
        // whatever the flow's device and whatever scored before it.
        if r.nhid.is_some() && r.kind == crate::route::RouteType::Blackhole {
            return Some((i, r));
        }
        if let Some(s) = score(&r, flow, nhs, links) {
            if best.as_ref().is_none_or(|(_, b)| s > *b) {
                best = Some(((i, r), s));
            }
        }
    }
    best.map(|(r, _)| r)
}

/// The next-hop groups of `list[i]`'s ECMP siblings, `list[i]`'s first, then the siblings
/// after it, then those before it (see [`Siblings`]); empty if it has none.
fn sibling_hops(
    list: ListView<'_, Ipv6Addr>,
    route: &Route<Ipv6Addr>,
    i: usize,
    nhs: &NhTable<Ipv6Addr>,
) -> Siblings {
    // A route alone has no siblings: the list is not spelled out again (most destinations).
    if list.stored().len() <= 1 || !qualifies_for_ecmp(route, nhs) {
        return Siblings::new();
    }
    let metric = route.metric;
    let mut ids = Siblings::new();
    let mut at = 0;
    for (j, o) in list.iter().enumerate() {
        if o.metric == metric && qualifies_for_ecmp(&o, nhs) {
            if j == i {
                at = ids.len();
            }
            ids.push(o.hops);
        }
    }
    if ids.len() <= 1 {
        return Siblings::new();
    }
    ids.rotate_left(at);
    ids
}

impl KernelSemantics for Ipv6Addr {
    fn insert(
        list: &mut RouteVec<Self>,
        route: Route<Self>,
        mode: InsertMode,
        nhs: &mut NhTable<Self>,
    ) -> Result<Vec<Route<Self>>, ChangeError> {
        // Copied only for a multipath route (its legs are interned as it is read).
        if nhs.get(route.hops).len() <= 1 || route.nhid.is_some() {
            return insert_leg(list, route, mode, nhs);
        }
        let hops = nhs.get(route.hops).to_vec();
        // Multipath: one route per leg; the first leg takes the request's mode, the others join
        // it as siblings (ip6_route_multipath_add). The whole request fails if one leg does.
        let before = super::stored::copy_of(list);
        let mut displaced = Vec::new();
        let mut legs = Vec::new();
        for (i, h) in hops.iter().enumerate() {
            let leg = Route {
                hops: nhs.intern(std::slice::from_ref(h)),
                ..route.clone()
            };
            legs.push(leg.hops);
            let leg_mode = if i == 0 { mode } else { InsertMode::Append };
            match insert_leg(list, leg, leg_mode, nhs) {
                Ok(d) => displaced.extend(d),
                Err(e) => {
                    *list = before;
                    for id in legs {
                        nhs.release(id);
                    }
                    return Err(e);
                }
            }
        }
        // The multipath group itself is not stored: give its reference back via the caller.
        displaced.push(route);
        Ok(displaced)
    }

    fn delete(
        list: &mut RouteVec<Self>,
        sel: &RouteSelector<Self>,
        nhs: &NhTable<Self>,
    ) -> Result<RouteVec<Self>, Errno> {
        // The router splits multipath deletes into legs; a selector with hops reaching here would
        // otherwise match every sibling.
        if !sel.hops.is_empty() {
            return Err(Errno::EINVAL);
        }
        let Some(i) = list.iter().position(|r| {
            let h = hop(r, nhs);
            // `ip6_route_del`: a route through an object is named by its id, metric and
            // protocol (a device or gateway given is not compared); other routes never match
            // an id.
            if let Some(n) = r.nhid {
                return sel.nhid.is_none_or(|id| id == n.id)
                    && sel.metric.is_none_or(|m| m == r.metric)
                    && sel.protocol.is_none_or(|p| p == r.protocol);
            }
            if sel.nhid.is_some() {
                return false;
            }
            sel.metric.is_none_or(|m| m == r.metric)
                && sel.protocol.is_none_or(|p| p == r.protocol)
                && sel.dev.is_none_or(|d| h.dev == Some(d))
                && sel.gateway.is_none_or(|g| h.gateway == Some(g))
        }) else {
            return Err(Errno::ESRCH);
        };
        if sel.gateway.is_some() || sel.leg || !qualifies_for_ecmp(&list[i], nhs) {
            return Ok(smallvec![list.remove(i)]);
        }
        // Without a gateway the whole ECMP route goes, all siblings.
        let metric = list[i].metric;
        let (gone, kept) = std::mem::take(list)
            .into_iter()
            .partition(|r| r.metric == metric && qualifies_for_ecmp(r, nhs));
        *list = kept;
        Ok(gone)
    }

    fn ordered(list: &[Route<Self>], nhs: &NhTable<Self>) -> bool {
        list.windows(2).all(|w| w[0].metric <= w[1].metric)
            && list
                .iter()
                .all(|r| r.nhid.is_some() || nhs.get(r.hops).len() <= 1)
    }

    fn select(
        list: ListView<'_, Self>,
        flow: &Flow<Self>,
        nhs: &NhTable<Self>,
        links: &dyn LinkState,
    ) -> TableLookup<Self> {
        let Some(first) = list.stored().first() else {
            return TableLookup::None;
        };
        // Step 1: the routes of the best metric compete on score; step 2, if none is usable, all
        // the others do (find_rr_leaf's "cont" pass), still on score alone.
        let same = list
            .stored()
            .iter()
            .take_while(|r| r.metric == first.metric)
            .count();
        let chosen = best(list.iter().enumerate().take(same), flow, nhs, links)
            .or_else(|| best(list.iter().enumerate().skip(same), flow, nhs, links));
        match chosen {
            None => TableLookup::None,
            Some((i, route)) => match route.kind.reject_error() {
                Some(errno) => TableLookup::Reject { route, errno },
                None => TableLookup::Match {
                    siblings: sibling_hops(list, &route, i, nhs),
                    route,
                    hop: 0,
                },
            },
        }
    }
}
