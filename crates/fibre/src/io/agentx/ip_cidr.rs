//! The deprecated `ipCidrRouteTable` (RFC 2096, kept in RFC 4292), which many management
//! systems still poll: IPv4 only, indexed by Dest, Mask, Tos and NextHop (all 0.0.0.0 where a
//! route has no gateway), one row per next hop. Its index cannot tell tables or metrics apart:
//! where two shown routes give the same index, the row is the one the kernel prefers (lowest
//! metric, then table main, then the lowest table id).
use super::inet_cidr::{kind_of, proto_of};
use super::mib::{routes_by_dest, seek, table_next, MibValue, TableRow, Tables};
use crate::route::{Route, RouteType, TABLE_MAIN};
use crate::router::Router;
use std::net::Ipv4Addr;

/// `ipCidrRouteEntry`: 1.3.6.1.2.1.4.24.4.1.
pub const IP_CIDR_ROUTE_ENTRY: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 4, 1];
/// The readable columns: Dest (1) to Status (16).
pub const COLUMNS: std::ops::RangeInclusive<u32> = 1..=16;

/// One row: Dest, Mask, Tos, NextHop (the index) and the values.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    index: [u32; 13],
    if_index: u32,
    kind: i32,
    proto: i32,
    metric: i32,
}

fn quad(b: [u8; 4]) -> [u32; 4] {
    b.map(u32::from)
}

fn bytes(sub: &[u32]) -> [u8; 4] {
    let mut b = [0u8; 4];
    for (o, s) in b.iter_mut().zip(sub) {
        *o = *s as u8;
    }
    b
}

impl TableRow for Row {
    fn index(&self) -> &[u32] {
        &self.index
    }

    fn value(&self, column: u32) -> Option<MibValue> {
        Some(match column {
            1 => MibValue::IpAddress(bytes(&self.index[0..4])),
            2 => MibValue::IpAddress(bytes(&self.index[4..8])),
            3 => MibValue::Integer(self.index[8] as i32),
            4 => MibValue::IpAddress(bytes(&self.index[9..13])),
            5 => MibValue::Integer(self.if_index as i32),
            6 => MibValue::Integer(self.kind),
            7 => MibValue::Integer(self.proto),
            // Age: not kept.
            8 => MibValue::Integer(0),
            // Info: no routing-protocol MIB to point at.
            9 => MibValue::Oid(vec![0, 0]),
            // NextHopAS: unknown.
            10 => MibValue::Integer(0),
            11 => MibValue::Integer(self.metric),
            12..=15 => MibValue::Integer(-1),
            // Status: active.
            16 => MibValue::Integer(1),
            _ => return None,
        })
    }
}

/// ipCidrRouteType: other(1), reject(2), local(3), remote(4); the table has no blackhole, so
/// a blackhole route is reject, as it discards traffic.
fn ip_cidr_kind(kind: RouteType, gateway: bool) -> i32 {
    match kind_of(kind, gateway) {
        5 => 2,
        k => k,
    }
}

/// The rows of one destination's routes, in index order, one per index.
fn rows_of(routes: &[Route<Ipv4Addr>], router: &Router) -> Vec<Row> {
    let nhs = router.family::<Ipv4Addr>().nexthops();
    // (row, the kernel's preference among routes giving the same index)
    let mut rows: Vec<(Row, (u32, bool, u32))> = Vec::new();
    for r in routes {
        let dest = quad(r.dst.addr().octets());
        let mask = quad(
            Ipv4Addr::from(
                u32::MAX
                    .checked_shl(32 - u32::from(r.dst.len()))
                    .unwrap_or(0),
            )
            .octets(),
        );
        let hops = nhs.get(r.hops);
        let legs: Vec<_> = if hops.is_empty() {
            vec![None]
        } else {
            hops.iter().map(Some).collect()
        };
        for hop in legs {
            let gateway = hop.and_then(|h| h.gateway);
            let mut index = [0u32; 13];
            index[0..4].copy_from_slice(&dest);
            index[4..8].copy_from_slice(&mask);
            index[8] = u32::from(r.tos);
            index[9..13].copy_from_slice(&quad(gateway.unwrap_or(Ipv4Addr::UNSPECIFIED).octets()));
            let row = Row {
                index,
                if_index: hop.and_then(|h| h.dev).unwrap_or(0),
                kind: ip_cidr_kind(r.kind, gateway.is_some()),
                proto: proto_of(r.protocol),
                metric: i32::try_from(r.metric).unwrap_or(i32::MAX),
            };
            rows.push((row, (r.metric, r.table != TABLE_MAIN, r.table)));
        }
    }
    rows.sort_by(|a, b| a.0.index.cmp(&b.0.index).then(a.1.cmp(&b.1)));
    rows.dedup_by(|b, a| a.0.index == b.0.index);
    rows.into_iter().map(|(row, _)| row).collect()
}

/// Every row from destination `start` on, in index order.
fn rows_from<'r>(
    router: &'r Router,
    tables: Tables,
    start: crate::prefix::Prefix<Ipv4Addr>,
) -> impl Iterator<Item = Row> + 'r {
    routes_by_dest::<Ipv4Addr>(router, tables, start)
        .flat_map(move |routes| rows_of(&routes, router))
}

/// Where to seek for rows past `after` (Dest, Mask, ... perhaps cut short or out of range):
/// the destination, at the length of the mask's leading ones (no contiguous mask past the
/// index's is shorter).
fn seek_point(after: &[u32]) -> crate::prefix::Prefix<Ipv4Addr> {
    let dest = &after[..after.len().min(4)];
    let mask = after.get(4..8).map(|m| {
        let b = m.iter().map(|s| (*s).min(255) as u8).collect::<Vec<_>>();
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]).leading_ones()
    });
    seek::<Ipv4Addr>(dest, mask.unwrap_or(0))
}

/// The rows of the table: what ipCidrRouteNumber says; without building them where a
/// destination has one route (most of a full table): its distinct gateways.
pub fn count(router: &Router, tables: Tables) -> usize {
    let nhs = router.family::<Ipv4Addr>().nexthops();
    routes_by_dest::<Ipv4Addr>(router, tables, crate::prefix::Prefix::any())
        .map(|routes| match routes.as_slice() {
            [r] => match nhs.get(r.hops) {
                [] | [_] => 1,
                hops => {
                    let mut gateways: Vec<_> = hops.iter().map(|h| h.gateway).collect();
                    gateways.sort_unstable();
                    gateways.dedup();
                    gateways.len()
                }
            },
            _ => rows_of(&routes, router).len(),
        })
        .sum()
}

/// GET within ipCidrRouteEntry.
pub fn get(router: &Router, tables: Tables, oid: &[u32]) -> Option<MibValue> {
    let rest = oid.strip_prefix(&IP_CIDR_ROUTE_ENTRY[..])?;
    let (&column, index) = rest.split_first()?;
    if !COLUMNS.contains(&column) || index.len() != 13 {
        return None;
    }
    rows_from(router, tables, seek_point(index))
        .find(|r| r.index.as_slice() >= index)
        .filter(|r| r.index.as_slice() == index)?
        .value(column)
}

/// GETNEXT from `oid` within ipCidrRouteEntry: `None` when no row of the table is past it.
pub fn get_next(router: &Router, tables: Tables, oid: &[u32]) -> Option<(Vec<u32>, MibValue)> {
    table_next(&IP_CIDR_ROUTE_ENTRY, COLUMNS, oid, |after| {
        let start = after.map_or_else(crate::prefix::Prefix::any, seek_point);
        rows_from(router, tables, start).find(|r| after.is_none_or(|a| r.index.as_slice() > a))
    })
}
