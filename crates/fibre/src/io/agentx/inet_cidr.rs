//! IP-FORWARD-MIB's `inetCidrRouteTable` (RFC 4292) read from a router: one row per next hop
//! of each route, IPv4 before IPv6, and GET/GETNEXT answered by seeking in the tables' tries,
//! never by listing the table (docs/snmp.md).
//!
//! A row's index is DestType, Dest (length-prefixed), PfxLen, Policy (a length-prefixed OID),
//! NextHopType, NextHop (length-prefixed). Routes of several tables, TOS values or metrics, and
//! on-link routes through several devices (`fe80::/64` on every interface), may share a
//! destination and a next hop; the policy keeps their rows apart: `{table, tos, metric,
//! ifIndex}`, followed for an IPv6 source-specific route by its source prefix's length and
//! bytes. A route without a gateway has next hop unknown(0) with an empty address, as the RFC
//! asks.
use super::mib::{routes_by_dest, seek, table_next, MibValue, TableRow, Tables};
use crate::addr::Family;
use crate::link::LOOPBACK_IFINDEX;
use crate::nexthop::NextHop;
use crate::prefix::Prefix;
use crate::route::{Route, RouteType};
use crate::router::{Router, RouterFamily};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `inetCidrRouteEntry`: 1.3.6.1.2.1.4.24.7.1.
pub const INET_CIDR_ROUTE_ENTRY: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 7, 1];
/// The readable columns of `inetCidrRouteEntry`: IfIndex (7) to Status (17).
pub const COLUMNS: std::ops::RangeInclusive<u32> = 7..=17;

/// One row: a next hop of a route, with its index (the OID suffix after the column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// DestType, Dest, PfxLen, Policy, NextHopType, NextHop, as sub-identifiers.
    pub index: Vec<u32>,
    /// inetCidrRouteIfIndex (0: none).
    pub if_index: u32,
    /// inetCidrRouteType: other(1), reject(2), local(3), remote(4), blackhole(5).
    pub kind: i32,
    /// inetCidrRouteProto (IANAipRouteProtocol).
    pub proto: i32,
    /// inetCidrRouteMetric1: the route's metric.
    pub metric: i32,
}

impl TableRow for Row {
    fn index(&self) -> &[u32] {
        &self.index
    }

    fn value(&self, column: u32) -> Option<MibValue> {
        self.value(column)
    }
}

impl Row {
    /// The value of column `column` (7 to 17).
    pub fn value(&self, column: u32) -> Option<MibValue> {
        Some(match column {
            7 => MibValue::Integer(self.if_index as i32),
            8 => MibValue::Integer(self.kind),
            9 => MibValue::Integer(self.proto),
            // Age: how long ago the route was updated is not kept.
            10 => MibValue::Gauge32(0),
            // NextHopAS: unknown.
            11 => MibValue::Gauge32(0),
            12 => MibValue::Integer(self.metric),
            // Metric2-5: unused.
            13..=16 => MibValue::Integer(-1),
            // Status: active.
            17 => MibValue::Integer(1),
            _ => return None,
        })
    }
}

/// The address as sub-identifiers, one per byte.
pub(super) fn octets(a: IpAddr) -> Vec<u32> {
    match a {
        IpAddr::V4(v) => v.octets().iter().map(|b| u32::from(*b)).collect(),
        IpAddr::V6(v) => v.octets().iter().map(|b| u32::from(*b)).collect(),
    }
}

/// InetAddressType of a family: ipv4(1), ipv6(2).
pub(super) fn address_type(family: Family) -> u32 {
    match family {
        Family::Inet => 1,
        Family::Inet6 => 2,
    }
}

/// IANAipRouteProtocol of a kernel protocol (`rtm_protocol`).
pub fn proto_of(protocol: u8) -> i32 {
    match protocol {
        // redirect
        1 => 4,
        // kernel, boot
        2 | 3 => 2,
        // ra (IPv6 router advertisements): icmp
        9 => 4,
        // dhcp
        16 => 19,
        // eigrp: ciscoEigrp
        192 => 16,
        // static
        4 => 3,
        // rip
        189 => 8,
        // isis
        187 => 9,
        // ospf
        188 => 13,
        // bgp
        186 => 14,
        _ => 1,
    }
}

/// inetCidrRouteType of a route through `hop`.
pub(super) fn kind_of(kind: RouteType, gateway: bool) -> i32 {
    match kind {
        RouteType::Unicast if gateway => 4,
        RouteType::Unicast | RouteType::Local => 3,
        RouteType::Unreachable | RouteType::Prohibit => 2,
        RouteType::Blackhole => 5,
        _ => 1,
    }
}

/// The rows of one route, in index order.
fn rows_of<A: RouterFamily>(route: &Route<A>, hops: &[NextHop<A>]) -> Vec<Row> {
    let family = A::FAMILY;
    let mut head = vec![address_type(family)];
    let dest = octets(route.dst.addr().into());
    head.push(dest.len() as u32);
    head.extend(dest);
    head.push(u32::from(route.dst.len()));
    // The kernel puts IPv6 reject routes (unreachable, prohibit, blackhole) on lo, as `ip`
    // shows them; IPv4 ones have no device.
    let no_hop_dev = match family {
        Family::Inet6 => LOOPBACK_IFINDEX,
        Family::Inet => 0,
    };
    let row = |hop: Option<&NextHop<A>>| {
        let if_index = hop.map_or(no_hop_dev, |h| h.dev.unwrap_or(0));
        let mut policy = vec![route.table, u32::from(route.tos), route.metric, if_index];
        if !route.src.is_default() {
            policy.push(u32::from(route.src.len()));
            policy.extend(octets(route.src.addr().into()));
        }
        let mut index = head.clone();
        index.push(policy.len() as u32);
        index.extend(policy);
        match hop.and_then(|h| h.gateway) {
            Some(g) => {
                let g = octets(g.into());
                index.push(address_type(family));
                index.push(g.len() as u32);
                index.extend(g);
            }
            None => index.extend([0, 0]),
        }
        Row {
            index,
            if_index,
            kind: kind_of(route.kind, hop.is_some_and(|h| h.gateway.is_some())),
            proto: proto_of(route.protocol),
            metric: i32::try_from(route.metric).unwrap_or(i32::MAX),
        }
    };
    let mut rows: Vec<Row> = if hops.is_empty() {
        vec![row(None)]
    } else {
        hops.iter().map(|h| row(Some(h))).collect()
    };
    rows.sort_by(|a, b| a.index.cmp(&b.index));
    rows
}

/// Every row of one family whose (destination, prefix length) is `start` or later, in index
/// order: the shown tables' tries are sought at `start` and merged destination by
/// destination, each destination's rows sorted.
fn rows_from<'r, A: RouterFamily>(
    router: &'r Router,
    tables: Tables,
    start: Prefix<A>,
) -> impl Iterator<Item = Row> + 'r {
    let nhs = router.family::<A>().nexthops();
    routes_by_dest::<A>(router, tables, start).flat_map(move |routes| {
        let mut rows: Vec<Row> = routes
            .into_iter()
            .flat_map(|r| rows_of(&r, nhs.get(r.hops)))
            .collect();
        rows.sort_by(|a, b| a.index.cmp(&b.index));
        // Rows whose index collides (routes appended twice to one destination, table, TOS
        // and metric, through one gateway and device or none) are one row: the first.
        rows.dedup_by(|b, a| a.index == b.index);
        rows
    })
}

/// The rows of the table: what inetCidrRouteNumber says.
pub fn count(router: &Router, tables: Tables) -> usize {
    count_in::<Ipv4Addr>(router, tables) + count_in::<Ipv6Addr>(router, tables)
}

/// The rows of family `A`, without building them where a destination has one route (most
/// of a full table): its legs, less those sharing a gateway and a device.
fn count_in<A: RouterFamily>(router: &Router, tables: Tables) -> usize {
    let nhs = router.family::<A>().nexthops();
    routes_by_dest::<A>(router, tables, Prefix::any())
        .map(|routes| match routes.as_slice() {
            [r] => match nhs.get(r.hops) {
                [] | [_] => 1,
                hops => {
                    let mut legs: Vec<_> = hops.iter().map(|h| (h.gateway, h.dev)).collect();
                    legs.sort_unstable();
                    legs.dedup();
                    legs.len()
                }
            },
            _ => {
                let mut rows: Vec<Row> = routes
                    .iter()
                    .flat_map(|r| rows_of(r, nhs.get(r.hops)))
                    .collect();
                rows.sort_by(|a, b| a.index.cmp(&b.index));
                rows.dedup_by(|b, a| a.index == b.index);
                rows.len()
            }
        })
        .sum()
}

/// Where to seek for rows of family `A` after `after`, an index of that family and width,
/// perhaps cut short or out of range (rows before the first one past it are skipped by the
/// caller, so the seek only has to be early enough).
fn seek_point<A: RouterFamily>(after: &[u32]) -> Prefix<A> {
    let width = usize::from(A::WIDTH / 8);
    let dest = after.get(2..).unwrap_or_default();
    let dest = &dest[..dest.len().min(width)];
    let len = after.get(2 + width).copied().unwrap_or(0);
    seek::<A>(dest, len)
}

/// The first row of family `A` whose index is past `after` (`None`: from the family's start).
fn next_in<A: RouterFamily>(router: &Router, tables: Tables, after: Option<&[u32]>) -> Option<Row> {
    let family = address_type(A::FAMILY);
    let width = u32::from(A::WIDTH / 8);
    let start = match after {
        None => None,
        Some(a) if a.first().is_some_and(|t| *t > family) => return None,
        Some(a) if a.first() == Some(&family) && a.get(1).is_some_and(|l| *l > width) => {
            return None
        }
        // An index of a lower family, or of this one with a shorter address: every row of
        // this family is past it.
        Some(a) if a.first() < Some(&family) || a.get(1).is_none_or(|l| *l < width) => None,
        Some(a) => Some(seek_point::<A>(a)),
    };
    let start = start.unwrap_or_else(Prefix::any);
    rows_from::<A>(router, tables, start).find(|r| after.is_none_or(|a| r.index.as_slice() > a))
}

/// The first row past index `after` (`None`: the table's first row), IPv4 then IPv6.
pub fn next_row(router: &Router, tables: Tables, after: Option<&[u32]>) -> Option<Row> {
    next_in::<Ipv4Addr>(router, tables, after)
        .or_else(|| next_in::<Ipv6Addr>(router, tables, after))
}

/// The row whose index is `index`, if there is one.
pub fn row(router: &Router, tables: Tables, index: &[u32]) -> Option<Row> {
    match index.first() {
        Some(1) => row_in::<Ipv4Addr>(router, tables, index),
        Some(2) => row_in::<Ipv6Addr>(router, tables, index),
        _ => None,
    }
}

/// The row of family `A` at `index` (whose DestType is the family's).
fn row_in<A: RouterFamily>(router: &Router, tables: Tables, index: &[u32]) -> Option<Row> {
    // The row at `index` is the first one not before it: seeking from `index` itself and
    // comparing finds it without a predecessor.
    if index.get(1) != Some(&u32::from(A::WIDTH / 8)) {
        return None;
    }
    rows_from::<A>(router, tables, seek_point::<A>(index))
        .find(|r| r.index.as_slice() >= index)
        .filter(|r| r.index == index)
}

/// GET: the value at `oid`, if the table has it.
pub fn get(router: &Router, tables: Tables, oid: &[u32]) -> Option<MibValue> {
    let rest = oid.strip_prefix(&INET_CIDR_ROUTE_ENTRY[..])?;
    let (&column, index) = rest.split_first()?;
    if !COLUMNS.contains(&column) {
        return None;
    }
    row(router, tables, index)?.value(column)
}

/// GETNEXT: the first OID of the table past `oid`, with its value; `None` past the table's
/// last.
pub fn get_next(router: &Router, tables: Tables, oid: &[u32]) -> Option<(Vec<u32>, MibValue)> {
    table_next(&INET_CIDR_ROUTE_ENTRY, COLUMNS, oid, |after| {
        next_row(router, tables, after)
    })
}
