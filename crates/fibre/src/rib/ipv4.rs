//! IPv4 semantics of a route list (net/ipv4/fib_trie.c: `fib_table_insert`, `fib_table_delete`,
//! `fib_table_lookup`).
//!
//! A list holds the routes ("aliases") of one prefix, ordered by TOS descending, then metric
//! ascending, then insertion order. Routes with equal (TOS, metric) form a group: `add` refuses to
//! join one, `append` goes after it, `prepend` before it, `replace` swaps its first member.
use super::{
    InsertMode, KernelSemantics, LinkState, ListView, RouteSelector, RouteVec, Siblings,
    TableLookup, Verdict,
};
use crate::error::{ChangeError, Errno};
use crate::flow::Flow;
use crate::nexthop::{NextHop, NhTable};
use crate::route::{Route, RouteType, SCOPE_HOST};
use smallvec::smallvec;
use std::net::Ipv4Addr;

/// The bits of the DS field that IPv4 route TOS selectors compare (`IPTOS_TOS_MASK` without the
/// obsolete lowest bit: `INET_DSCP_LEGACY_TOS_MASK`).
pub const ROUTE_TOS_MASK: u8 = 0x1c;

/// Same `fib_info` (next hops and attributes) and same type: `append` of it is a duplicate.
fn same_alias(a: &Route<Ipv4Addr>, b: &Route<Ipv4Addr>) -> bool {
    a.kind == b.kind
        && a.protocol == b.protocol
        && a.scope == b.scope
        && a.prefsrc == b.prefsrc
        && a.mtu == b.mtu
        && a.hops == b.hops
        && a.nhid.map(|n| n.id) == b.nhid.map(|n| n.id)
}

/// `fib_find_alias`: the first route at or after the (tos, metric) key's place in the order.
fn find_alias(list: &[Route<Ipv4Addr>], tos: u8, metric: u32) -> usize {
    list.iter()
        .position(|r| r.tos < tos || (r.tos == tos && r.metric >= metric))
        .unwrap_or(list.len())
}

impl KernelSemantics for Ipv4Addr {
    fn insert(
        list: &mut RouteVec<Self>,
        route: Route<Self>,
        mode: InsertMode,
        _nhs: &mut NhTable<Self>,
    ) -> Result<Vec<Route<Self>>, ChangeError> {
        let first = find_alias(list, route.tos, route.metric);
        let same_key = |r: &Route<Self>| r.tos == route.tos && r.metric == route.metric;
        if first < list.len() && same_key(&list[first]) {
            if mode == InsertMode::Add {
                return Err(Errno::EEXIST.into());
            }
            let end = first + list[first..].iter().take_while(|r| same_key(r)).count();
            let duplicate = list[first..end].iter().position(|r| same_alias(r, &route));
            match mode {
                InsertMode::Replace | InsertMode::Change => {
                    // An identical route already there: success if it is the one that would be
                    // replaced (nothing to do), EEXIST if it sits further down the group.
                    return match duplicate {
                        Some(0) => Ok(vec![route]),
                        Some(_) => Err(Errno::EEXIST.into()),
                        None => Ok(vec![std::mem::replace(&mut list[first], route)]),
                    };
                }
                InsertMode::Append | InsertMode::Prepend if duplicate.is_some() => {
                    return Err(Errno::EEXIST.into())
                }
                InsertMode::Append => list.insert(end, route),
                _ => list.insert(first, route),
            }
            return Ok(vec![]);
        }
        if mode == InsertMode::Change {
            return Err(Errno::ENOENT.into());
        }
        list.insert(first, route);
        Ok(vec![])
    }

    fn delete(
        list: &mut RouteVec<Self>,
        sel: &RouteSelector<Self>,
        nhs: &NhTable<Self>,
    ) -> Result<RouteVec<Self>, Errno> {
        let start = find_alias(list, sel.tos, sel.metric.unwrap_or(0));
        for i in start..list.len() {
            let r = &list[i];
            if r.tos != sel.tos {
                break;
            }
            // Reject routes have one empty next hop in the kernel.
            let null = [NextHop {
                gateway: None,
                dev: None,
                weight: 1,
                onlink: false,
            }];
            let hops = match nhs.get(r.hops) {
                [] => &null[..],
                h => h,
            };
            let first = hops.first();
            let nh_ok = if let Some(id) = sel.nhid {
                r.nhid.is_some_and(|n| n.id == id)
            } else if r.nhid.is_some() {
                // `fib_nh_match`: a route through an object matches no named next hop.
                sel.dev.is_none() && sel.gateway.is_none() && sel.hops.is_empty()
            } else if sel.dev.is_some() || sel.gateway.is_some() {
                // `fib_nh_match`: a single-hop request compares with the first next hop.
                sel.dev.is_none_or(|d| first.and_then(|h| h.dev) == Some(d))
                    && sel
                        .gateway
                        .is_none_or(|g| first.and_then(|h| h.gateway) == Some(g))
            } else if !sel.hops.is_empty() {
                // A multipath request matches a route whose every leg matches the request's leg
                // in the same place; extra legs in the request are not looked at.
                sel.hops.len() >= hops.len()
                    && sel.hops.iter().zip(hops).all(|(want, have)| {
                        want.dev.is_none_or(|d| have.dev == Some(d))
                            && want.gateway.is_none_or(|g| have.gateway == Some(g))
                    })
            } else {
                true
            };
            // A route through a blackhole object holds type blackhole (what lookups and dumps
            // report), but the kernel keeps the unicast type it was added as (the only type
            // fibre takes with `nhid`), and deletes compare that.
            let stored_kind = if r.nhid.is_some() {
                RouteType::Unicast
            } else {
                r.kind
            };
            if sel.kind.is_none_or(|k| k == stored_kind)
                && sel.scope.is_none_or(|s| s == r.scope)
                && sel.prefsrc.is_none_or(|p| Some(p) == r.prefsrc)
                && sel.protocol.is_none_or(|p| p == r.protocol)
                && sel.metric.is_none_or(|m| m == r.metric)
                && nh_ok
            {
                return Ok(smallvec![list.remove(i)]);
            }
        }
        Err(Errno::ESRCH)
    }

    fn ordered(list: &[Route<Self>], _: &NhTable<Self>) -> bool {
        list.windows(2)
            .all(|w| w[0].tos > w[1].tos || (w[0].tos == w[1].tos && w[0].metric <= w[1].metric))
    }

    fn select(
        list: ListView<'_, Self>,
        flow: &Flow<Self>,
        nhs: &NhTable<Self>,
        links: &dyn LinkState,
    ) -> TableLookup<Self> {
        match choose(list, flow, nhs, links) {
            Choice::Reject(i, errno) => TableLookup::Reject {
                route: list.route(i),
                errno,
            },
            Choice::Match(i, hop) => TableLookup::Match {
                route: list.route(i),
                hop,
                siblings: Siblings::new(),
            },
            Choice::Miss => TableLookup::Miss,
            Choice::None => TableLookup::None,
        }
    }

    fn verdict(
        list: ListView<'_, Self>,
        flow: &Flow<Self>,
        nhs: &NhTable<Self>,
        links: &dyn LinkState,
    ) -> Verdict {
        match choose(list, flow, nhs, links) {
            Choice::Reject(..) | Choice::Match(..) => Verdict::Taken,
            Choice::Miss => Verdict::Miss,
            Choice::None => Verdict::None,
        }
    }
}

/// What IPv4's lookup takes of a list: the route's place in it, not yet spelled out.
enum Choice {
    /// The reject route at this index, and its error.
    Reject(usize, Errno),
    /// The route at this index, through its next hop `hop`.
    Match(usize, usize),
    Miss,
    None,
}

/// IPv4's [`KernelSemantics::select`], by index.
#[inline(always)]
fn choose(
    list: ListView<'_, Ipv4Addr>,
    flow: &Flow<Ipv4Addr>,
    nhs: &NhTable<Ipv4Addr>,
    links: &dyn LinkState,
) -> Choice {
    let flow_tos = flow.tos & ROUTE_TOS_MASK;
    // Read as stored; only the route taken is spelled out, by the caller.
    for (i, s) in list.stored().iter().enumerate() {
        let attrs = list.attrs_of(s);
        if (s.tos != 0 && s.tos != flow_tos) || attrs.scope < flow.scope {
            continue;
        }
        // Reject types answer before next hops are looked at.
        if let Some(errno) = s.kind.reject_error() {
            return Choice::Reject(i, errno);
        }
        // A device going down kills the next hops through it (`fib_sync_down_dev`), but
        // those of host-scope routes (their next hop scope is `nowhere`, which it spares).
        let host = attrs.scope == SCOPE_HOST;
        for (hop, h) in nhs.get(s.hops).iter().enumerate() {
            let Some(dev) = h.dev else { continue };
            if !(host || links.is_up(dev)) || flow.oif.is_some_and(|o| o != dev) {
                continue;
            }
            return Choice::Match(i, hop);
        }
        // A route through a next-hop object none of whose next hops fits ends the
        // search of this address's prefixes (`fib_table_lookup`'s `goto miss`).
        if attrs.nhid.is_some() {
            return Choice::Miss;
        }
    }
    Choice::None
}
