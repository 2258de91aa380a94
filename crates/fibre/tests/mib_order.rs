//! inetCidrRouteTable's GET and GETNEXT against a naive model: every row of every shown table
//! listed, encoded by this file's own reading of RFC 4292, and sorted; GETNEXT at any OID
//! (a row's, one between rows, one cut short, one with sub-identifiers out of range, before and
//! past the table) must be the first listed OID past it, and GET must find exactly the listed
//! ones. Routers are random: both families, several tables, ECMP, reject types, TOS, metrics,
//! IPv6 source routes. Then the whole subtree (the two counts, ipCidrRouteTable,
//! inetCidrRouteTable, the discards) walked by GETNEXT from its start must be the model's, in
//! order.
use fibre::io::agentx::inet_cidr::{get, get_next, INET_CIDR_ROUTE_ENTRY};
use fibre::io::agentx::mib::{
    Mib, MibValue, Tables, INET_CIDR_ROUTE_DISCARDS, INET_CIDR_ROUTE_NUMBER, IP_CIDR_ROUTE_NUMBER,
};
use fibre::io::iproute2::{Batch, BatchMode};
use fibre::{RouteSpec, Router};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const SETUP: &str = "\
link add va type veth peer name vb
link set va up
link set vb up
addr add 192.0.2.1/24 dev va
addr add 2001:db8::1/64 dev va
";

fn bytes(a: IpAddr) -> Vec<u32> {
    match a {
        IpAddr::V4(v) => v.octets().iter().map(|&b| b.into()).collect(),
        IpAddr::V6(v) => v.octets().iter().map(|&b| b.into()).collect(),
    }
}

/// The rows of a spelled-out route, as (index, IfIndex, Type, Metric1).
fn model_rows(r: &RouteSpec<impl fibre::Address>) -> Vec<(Vec<u32>, u32, i32, i32)> {
    let dst: IpAddr = r.dst.addr().into();
    let kind_type = if dst.is_ipv4() { 1 } else { 2 };
    let mut head = vec![kind_type];
    head.push(bytes(dst).len() as u32);
    head.extend(bytes(dst));
    head.push(r.dst.len().into());
    let policy = |dev: u32| {
        let mut p = vec![r.table, r.tos.into(), r.metric, dev];
        if !r.src.is_default() {
            p.push(r.src.len().into());
            p.extend(bytes(r.src.addr().into()));
        }
        [vec![p.len() as u32], p].concat()
    };
    let kind = |gateway: bool| match r.kind {
        fibre::RouteType::Unicast if gateway => 4,
        fibre::RouteType::Unicast | fibre::RouteType::Local => 3,
        fibre::RouteType::Unreachable | fibre::RouteType::Prohibit => 2,
        fibre::RouteType::Blackhole => 5,
        _ => 1,
    };
    let metric = i32::try_from(r.metric).unwrap_or(i32::MAX);
    if r.hops.is_empty() {
        // IPv6 reject routes are on lo (index 1), as the kernel shows them.
        let dev = if dst.is_ipv6() { 1 } else { 0 };
        let mut index = head.clone();
        index.extend(policy(dev));
        index.extend([0, 0]);
        return vec![(index, dev, kind(false), metric)];
    }
    r.hops
        .iter()
        .map(|h| {
            let mut index = head.clone();
            index.extend(policy(h.dev.unwrap_or(0)));
            match h.gateway {
                Some(g) => {
                    let g: IpAddr = g.into();
                    index.push(kind_type);
                    index.push(bytes(g).len() as u32);
                    index.extend(bytes(g));
                }
                None => index.extend([0, 0]),
            }
            (index, h.dev.unwrap_or(0), kind(h.gateway.is_some()), metric)
        })
        .collect()
}

/// Every (OID, value) of the table, sorted.
fn model(router: &Router, tables: Tables) -> Vec<(Vec<u32>, MibValue)> {
    let mut rows = Vec::new();
    let shown = |t: u32| tables == Tables::All || t == 254;
    rows.extend(
        router
            .routes::<Ipv4Addr>()
            .filter(|r| shown(r.table))
            .flat_map(|r| model_rows(&r)),
    );
    rows.extend(
        router
            .routes::<Ipv6Addr>()
            .filter(|r| shown(r.table))
            .flat_map(|r| model_rows(&r)),
    );
    let mut all = Vec::new();
    for column in 7..=17u32 {
        for (index, if_index, kind, metric) in &rows {
            let mut oid = INET_CIDR_ROUTE_ENTRY.to_vec();
            oid.push(column);
            oid.extend(index);
            let value = match column {
                7 => MibValue::Integer(*if_index as i32),
                8 => MibValue::Integer(*kind),
                9 => continue,
                10 | 11 => MibValue::Gauge32(0),
                12 => MibValue::Integer(*metric),
                13..=16 => MibValue::Integer(-1),
                _ => MibValue::Integer(1),
            };
            all.push((oid, value));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

fn route_line(i: usize, kind: u8, v6: bool, table: u8, metric: u8, legs: u8) -> String {
    let table = [254u32, 100, 200][table as usize % 3];
    let metric = u32::from(metric % 3) * 10;
    let dst = if v6 {
        format!("2001:db8:{:x}::/{}", i % 7, 40 + (i % 3) * 8)
    } else {
        format!("10.{}.0.0/{}", i % 7, 16 + (i % 3) * 4)
    };
    let via = |k: usize| {
        if v6 {
            format!("2001:db8::{:x}", k + 2)
        } else {
            format!("192.0.2.{}", k + 2)
        }
    };
    let head = match kind % 5 {
        0 => "blackhole ".to_string(),
        1 => "unreachable ".to_string(),
        _ => String::new(),
    };
    let hops = if !head.is_empty() {
        String::new()
    } else if legs.is_multiple_of(3) {
        " dev va".to_string()
    } else {
        (0..=(legs % 3) as usize)
            .map(|k| format!(" nexthop via {} dev va", via(k + i)))
            .collect()
    };
    // Some IPv4 routes select on TOS (ipCidrRouteTable's index has it).
    let tos = if !v6 && kind % 7 == 3 {
        " tos 0x10"
    } else {
        ""
    };
    format!("route append {head}{dst} table {table} metric {metric}{tos}{hops}\n")
}

fn router_of(lines: &[(u8, bool, u8, u8, u8)]) -> Router {
    let mut text = SETUP.to_string();
    for (i, (kind, v6, table, metric, legs)) in lines.iter().enumerate() {
        text += &route_line(i, *kind, *v6, *table, *metric, *legs);
    }
    let mut batch = Batch::new(Router::new());
    batch.mode = BatchMode::Force;
    batch.run_text(&text);
    batch.router
}

/// Probes around the model's OIDs: each OID, one just short of it, one cut, one with a
/// component past its range, plus the table's edges.
fn probes(all: &[(Vec<u32>, MibValue)], picks: &[(usize, u8)]) -> Vec<Vec<u32>> {
    let mut out = vec![
        vec![],
        vec![1, 3, 6, 1, 2, 1, 4, 24],
        INET_CIDR_ROUTE_ENTRY.to_vec(),
        [&INET_CIDR_ROUTE_ENTRY[..], &[3]].concat(),
        [&INET_CIDR_ROUTE_ENTRY[..], &[12, 2]].concat(),
        [&INET_CIDR_ROUTE_ENTRY[..], &[18]].concat(),
        vec![1, 3, 6, 1, 2, 1, 4, 25],
    ];
    for (i, how) in picks {
        let Some((oid, _)) = all.get(i % all.len().max(1)) else {
            continue;
        };
        let mut o = oid.clone();
        match how % 5 {
            0 => {}
            1 => {
                let last = o.len() - 1;
                o[last] = o[last].saturating_sub(1);
            }
            2 => o.truncate(11 + (*how as usize % (o.len() - 10))),
            3 => {
                let at = 12 + (*how as usize % (o.len() - 12));
                o[at] = 300 + u32::from(*how);
            }
            _ => o.push(u32::from(*how)),
        }
        out.push(o);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn get_next_and_get_follow_the_sorted_table(
        lines in prop::collection::vec((any::<u8>(), any::<bool>(), any::<u8>(), any::<u8>(), any::<u8>()), 0..30),
        picks in prop::collection::vec((any::<usize>(), any::<u8>()), 0..40),
        all_tables in any::<bool>(),
    ) {
        let router = router_of(&lines);
        let tables = if all_tables { Tables::All } else { Tables::Main };
        // Proto (column 9) is left out of the model's values and checked apart.
        let all = model(&router, tables);
        for oid in probes(&all, &picks) {
            let want = all.iter().find(|(o, _)| *o > oid).cloned();
            let mut got = get_next(&router, tables, &oid);
            // Past column 9's rows (a bounded walk: a GETNEXT that does not move would loop).
            for _ in 0..=all.len() {
                match &got {
                    Some((o, _)) if o[10] == 9 && *o > oid => got = get_next(&router, tables, o),
                    _ => break,
                }
            }
            prop_assert_eq!(got, want, "GETNEXT {:?}", oid);
            let exact = all.iter().find(|(o, _)| *o == oid).map(|(_, v)| v.clone());
            let got = get(&router, tables, &oid);
            if oid.get(10) != Some(&9) {
                prop_assert_eq!(got, exact, "GET {:?}", oid);
            }
        }
    }
}

const IP_CIDR_ROUTE_ENTRY: [u32; 10] = [1, 3, 6, 1, 2, 1, 4, 24, 4, 1];

/// ipCidrRouteTable's (OID, value) pairs, sorted: one row per (dest, mask, tos, next hop); of
/// routes giving the same index, the one with the lowest metric, then table main, then the
/// lowest table. Proto (column 7) is left out.
fn ip_cidr_model(router: &Router, tables: Tables) -> Vec<(Vec<u32>, MibValue)> {
    let shown = |t: u32| tables == Tables::All || t == 254;
    // (index, the kernel's preference, ifIndex, Type, Metric1)
    type IpCidrRow = (Vec<u32>, (u32, bool, u32), u32, i32, i32);
    let mut rows: Vec<IpCidrRow> = Vec::new();
    for r in router.routes::<Ipv4Addr>().filter(|r| shown(r.table)) {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(r.dst.len()))
            .unwrap_or(0);
        let mut head = bytes(IpAddr::V4(r.dst.addr()));
        head.extend(bytes(IpAddr::V4(Ipv4Addr::from(mask))));
        head.push(r.tos.into());
        let kind = |gw: bool| match r.kind {
            fibre::RouteType::Unicast if gw => 4,
            fibre::RouteType::Unicast | fibre::RouteType::Local => 3,
            fibre::RouteType::Unreachable
            | fibre::RouteType::Prohibit
            | fibre::RouteType::Blackhole => 2,
            _ => 1,
        };
        let pref = (r.metric, r.table != 254, r.table);
        let metric = i32::try_from(r.metric).unwrap_or(i32::MAX);
        let legs: Vec<(Option<Ipv4Addr>, u32)> = if r.hops.is_empty() {
            vec![(None, 0)]
        } else {
            r.hops
                .iter()
                .map(|h| (h.gateway, h.dev.unwrap_or(0)))
                .collect()
        };
        for (gw, dev) in legs {
            let mut index = head.clone();
            index.extend(bytes(IpAddr::V4(gw.unwrap_or(Ipv4Addr::UNSPECIFIED))));
            rows.push((index, pref, dev, kind(gw.is_some()), metric));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    rows.dedup_by(|b, a| a.0 == b.0);
    let ip = |s: &[u32]| MibValue::IpAddress([s[0] as u8, s[1] as u8, s[2] as u8, s[3] as u8]);
    let mut all = Vec::new();
    for column in 1..=16u32 {
        for (index, _, dev, kind, metric) in &rows {
            let value = match column {
                1 => ip(&index[0..4]),
                2 => ip(&index[4..8]),
                3 => MibValue::Integer(index[8] as i32),
                4 => ip(&index[9..13]),
                5 => MibValue::Integer(*dev as i32),
                6 => MibValue::Integer(*kind),
                7 => continue,
                8 | 10 => MibValue::Integer(0),
                9 => MibValue::Oid(vec![0, 0]),
                11 => MibValue::Integer(*metric),
                12..=15 => MibValue::Integer(-1),
                _ => MibValue::Integer(1),
            };
            let mut oid = IP_CIDR_ROUTE_ENTRY.to_vec();
            oid.push(column);
            oid.extend(index);
            all.push((oid, value));
        }
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn the_subtree_walks_as_the_model_lists_it(
        lines in prop::collection::vec((any::<u8>(), any::<bool>(), any::<u8>(), any::<u8>(), any::<u8>()), 0..30),
        all_tables in any::<bool>(),
    ) {
        let router = std::sync::Arc::new(router_of(&lines));
        let tables = if all_tables { Tables::All } else { Tables::Main };
        let ip = ip_cidr_model(&router, tables);
        // Rows whose index collides (two routes of one table, destination, TOS and metric
        // without a gateway, or through the same one) are one row: the first listed.
        let mut inet = model(&router, tables);
        inet.dedup_by(|b, a| a.0 == b.0);
        // Each table's rows: its OIDs in the first column listed.
        let rows_of = |l: &[(Vec<u32>, MibValue)], column: u32| l.iter().filter(|(o, _)| o[10] == column).count() as u32;
        let mut want = vec![(IP_CIDR_ROUTE_NUMBER.to_vec(), MibValue::Gauge32(rows_of(&ip, 1)))];
        want.extend(ip);
        want.push((INET_CIDR_ROUTE_NUMBER.to_vec(), MibValue::Gauge32(rows_of(&inet, 7))));
        want.extend(inet);
        want.push((INET_CIDR_ROUTE_DISCARDS.to_vec(), MibValue::Counter32(0)));
        let mut mib = Mib::new(tables);
        let mut got = Vec::new();
        let mut at: Vec<u32> = vec![1, 3, 6, 1, 2, 1, 4, 24];
        while let Some((oid, value)) = mib.get_next(&router, &at) {
            prop_assert!(oid > at, "GETNEXT went back: {:?} after {:?}", oid, at);
            prop_assert!(got.len() <= want.len() * 2, "the walk does not end");
            at.clone_from(&oid);
            // Proto is left out of the models.
            let proto = (oid.starts_with(&IP_CIDR_ROUTE_ENTRY) && oid[10] == 7)
                || (oid.starts_with(&INET_CIDR_ROUTE_ENTRY) && oid[10] == 9);
            if !proto {
                got.push((oid, value));
            }
        }
        prop_assert_eq!(&got, &want);
        for (oid, value) in &want {
            prop_assert_eq!(mib.get(&router, oid), fibre::io::agentx::mib::Found::Value(value.clone()));
        }
    }
}
