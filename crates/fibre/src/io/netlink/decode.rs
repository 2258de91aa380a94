//! rtnetlink messages as fibre's model: devices, addresses, routes, rules, next-hop objects.
//!
//! Route attributes are read one by one (as the kernel oracle does): an attribute fibre does
//! not keep, or that this crate version parses badly, cannot make a route unreadable. What the
//! model cannot hold (a cloned route, an unknown type) is `None`: counted, never misread.
use crate::addr::Address;
use crate::link::{IfAddr, Link, LinkKind, LOOPBACK_IFINDEX};
use crate::nexthop::{GroupMember, NextHop, NhObject, NhObjectKind, NhObjectRef};
use crate::prefix::Prefix;
use crate::route::*;
use crate::rules::{Rule, RuleAction, RuleAddr};
use netlink_packet_core::{NlaBuffer, NlasIterator, Parseable, ParseableParametrized};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteLwEnCapType, RouteMetric, RouteNextHopFlags,
};
use netlink_packet_route::rule::{
    RuleAction as NlRuleAction, RuleAttribute, RuleFlags, RuleMessage,
};
use std::net::IpAddr;

/// `sizeof(struct rtmsg)`, `sizeof(struct nhmsg)`.
const RTMSG_LEN: usize = 12;
const NHMSG_LEN: usize = 8;
/// `RTM_F_CLONED`: a cache entry, not a route.
const RTM_F_CLONED: u32 = 0x200;
/// `RTNH_F_ONLINK` in `rtm_flags` or a next hop's flags.
const RTNH_F_ONLINK: u32 = 4;

fn ip(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(a) => Some(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

/// A device.
pub(crate) fn link(payload: &[u8]) -> Result<Link, String> {
    let m = LinkMessage::parse(payload).map_err(|e| e.to_string())?;
    let name = m
        .attributes
        .iter()
        .find_map(|a| match a {
            LinkAttribute::IfName(n) => Some(n.clone()),
            _ => None,
        })
        .ok_or("a device without a name")?;
    let flags = m.header.flags;
    let kind = if m.header.index == LOOPBACK_IFINDEX {
        LinkKind::Loopback
    } else {
        LinkKind::Device {
            carrier: flags.contains(LinkFlags::LowerUp),
        }
    };
    Ok(Link {
        index: m.header.index,
        name,
        up: flags.contains(LinkFlags::Up),
        kind,
        v6_configured: false,
    })
}

/// An address of family `A`.
pub(crate) fn addr<A: Address>(payload: &[u8]) -> Result<Option<IfAddr<A>>, String> {
    let m = AddressMessage::parse(payload).map_err(|e| e.to_string())?;
    let (mut address, mut local, mut broadcast, mut metric) = (None, None, None, None);
    let mut flags = AddressFlags::empty();
    for a in &m.attributes {
        match a {
            AddressAttribute::Address(x) => address = A::from_ip(*x),
            AddressAttribute::Local(x) => local = A::from_ip(*x),
            AddressAttribute::Broadcast(x) => broadcast = A::from_ip(IpAddr::V4(*x)),
            AddressAttribute::Flags(f) => flags = *f,
            AddressAttribute::RoutePriority(p) => metric = Some(*p),
            _ => {}
        }
    }
    // IPv4 puts the address in IFA_LOCAL (IFA_ADDRESS is the peer's); IPv6 in IFA_ADDRESS.
    let Some(addr) = local.or(address) else {
        return Ok(None);
    };
    if m.header.prefix_len > A::WIDTH {
        return Err(format!("address {addr}/{}", m.header.prefix_len));
    }
    Ok(Some(IfAddr {
        addr,
        len: m.header.prefix_len,
        dev: m.header.index,
        broadcast,
        noprefixroute: flags.contains(AddressFlags::Noprefixroute),
        metric,
        scope: m.header.scope.into(),
        deprecated: flags.contains(AddressFlags::Deprecated),
    }))
}

/// A route of family `A` as the model holds it: IPv6 multipath as one route per leg. `None`
/// for what is not a route of the model (a cloned entry, an unknown type).
pub(crate) fn route<A: Address>(
    payload: &[u8],
    is_group: impl Fn(u32) -> bool,
) -> Result<Option<Vec<RouteSpec<A>>>, String> {
    let h = RouteHeader::parse(payload).map_err(|e| e.to_string())?;
    if h.flags.bits() & RTM_F_CLONED != 0 {
        return Ok(None);
    }
    let code: u8 = h.kind.into();
    let Some(kind) = RouteType::ALL.get((code as usize).wrapping_sub(1)).copied() else {
        return Ok(None);
    };
    let mut r = RouteSpec::new(Prefix::any(), Vec::new());
    r.table = u32::from(h.table);
    r.tos = h.tos;
    r.kind = kind;
    r.protocol = h.protocol.into();
    r.scope = h.scope.into();
    r.metric = 0;
    let (mut dst, mut src) = (None, None);
    let (mut gateway, mut oif) = (None, None);
    let mut multipath = None;
    let attrs = payload.get(RTMSG_LEN..).ok_or("short route message")?;
    for nla in NlasIterator::new(attrs) {
        let nla: NlaBuffer<&[u8]> = nla.map_err(|e| e.to_string())?;
        // RTA_ENCAP_TYPE, RTA_ENCAP, RTA_VIA (an IPv4 route through an IPv6 gateway): not
        // modelled, so the route is not read.
        if matches!(nla.kind(), 18 | 21 | 22) {
            return Ok(None);
        }
        let Ok(a) = RouteAttribute::parse_with_param(
            &nla,
            (h.address_family, h.kind, RouteLwEnCapType::None),
        ) else {
            continue;
        };
        match a {
            RouteAttribute::Destination(a) => dst = ip(&a).and_then(A::from_ip),
            RouteAttribute::Source(a) => src = ip(&a).and_then(A::from_ip),
            RouteAttribute::Table(t) => r.table = t,
            RouteAttribute::Priority(m) => r.metric = m,
            RouteAttribute::PrefSource(a) => r.prefsrc = ip(&a).and_then(A::from_ip),
            RouteAttribute::Gateway(a) => gateway = ip(&a).and_then(A::from_ip),
            RouteAttribute::Oif(i) => oif = Some(i),
            RouteAttribute::Preference(p) => {
                r.pref = match u8::from(p) {
                    1 => RouterPref::High,
                    3 => RouterPref::Low,
                    _ => RouterPref::Medium,
                }
            }
            RouteAttribute::Metrics(ms) => {
                for m in ms {
                    if let RouteMetric::Mtu(v) = m {
                        r.mtu = Some(v);
                    }
                }
            }
            RouteAttribute::NhId(id) => {
                r.nhid = Some(NhObjectRef {
                    id,
                    group: is_group(id),
                })
            }
            RouteAttribute::MultiPath(hops) => multipath = Some(hops),
            _ => {}
        }
    }
    let prefix = |a: Option<A>, len: u8| -> Result<Prefix<A>, String> {
        Prefix::new_strict(a.unwrap_or_else(A::unspecified), len)
            .ok_or_else(|| format!("prefix of length {len}"))
    };
    // A leg through a gateway of the other family (`RTA_VIA`: an IPv4 route's leg via an IPv6
    // gateway) or with an encapsulation is not modelled either: read without it, the leg
    // would be one without a gateway.
    let unmodelled_leg = |a: &RouteAttribute| {
        matches!(
            a,
            RouteAttribute::Via(_) | RouteAttribute::Encap(_) | RouteAttribute::EncapType(_)
        )
    };
    if multipath
        .iter()
        .flatten()
        .any(|h| h.attributes.iter().any(unmodelled_leg))
    {
        return Ok(None);
    }
    r.dst = prefix(dst, h.destination_prefix_length)?;
    r.src = prefix(src, h.source_prefix_length)?;
    // Reject routes have no next hop in the model (the kernel shows them on lo), but for a
    // route through a blackhole object, which holds the object's `lo`.
    if !kind.is_reject() || r.nhid.is_some() {
        r.hops = match multipath {
            Some(hops) => hops
                .iter()
                .map(|h| NextHop {
                    gateway: h.attributes.iter().find_map(|a| match a {
                        RouteAttribute::Gateway(g) => ip(g).and_then(A::from_ip),
                        _ => None,
                    }),
                    dev: Some(h.interface_index),
                    weight: u16::from(h.hops) + 1,
                    onlink: h.flags.contains(RouteNextHopFlags::Onlink),
                })
                .collect(),
            None if gateway.is_some() || oif.is_some() => vec![NextHop {
                gateway,
                dev: oif,
                weight: 1,
                onlink: h.flags.bits() & RTNH_F_ONLINK != 0,
            }],
            None => Vec::new(),
        };
    }
    if A::FAMILY == crate::addr::Family::Inet6 && r.hops.len() > 1 && r.nhid.is_none() {
        // ECMP siblings: one route per leg, in the dump's order.
        return Ok(Some(
            r.hops
                .iter()
                .map(|h| RouteSpec {
                    hops: vec![*h],
                    ..r.clone()
                })
                .collect(),
        ));
    }
    Ok(Some(vec![r]))
}

/// The destination and source of an IPv6 route message, and how many kernel routes it stands
/// for (one a leg, one through an object); `None` for a cloned route or a message that says
/// no prefix. For routes the model does not read (see [`route`]), which a sync counts beside
/// those it reads, and for any route a notification names (`hidden`).
pub(crate) fn route6_key(payload: &[u8]) -> Option<(super::hidden::Key, usize)> {
    let h = RouteHeader::parse(payload).ok()?;
    if h.flags.bits() & RTM_F_CLONED != 0 {
        return None;
    }
    let (mut dst, mut src) = (None, None);
    let (mut legs, mut object) = (1, false);
    for nla in NlasIterator::new(payload.get(RTMSG_LEN..)?) {
        let nla: NlaBuffer<&[u8]> = nla.ok()?;
        let addr = || {
            <[u8; 16]>::try_from(nla.value())
                .ok()
                .map(std::net::Ipv6Addr::from)
        };
        // Read raw, as `route`'s unmodelled kinds are: the library parses `RTA_MULTIPATH`
        // with an encapsulation it must be told, and these routes are the ones `route` left.
        const RTA_DST: u16 = 1;
        const RTA_SRC: u16 = 2;
        const RTA_MULTIPATH: u16 = 9;
        const RTA_NH_ID: u16 = 30;
        match nla.kind() {
            RTA_DST => dst = addr(),
            RTA_SRC => src = addr(),
            // One rtnexthop of at least 8 bytes a leg.
            RTA_MULTIPATH => legs = rtnexthops(nla.value()).unwrap_or(1),
            RTA_NH_ID => object = true,
            _ => {}
        }
    }
    let prefix = |a: Option<std::net::Ipv6Addr>, len| {
        Prefix::new_strict(a.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED), len)
    };
    let key = (
        prefix(dst, h.destination_prefix_length)?,
        prefix(src, h.source_prefix_length)?,
    );
    Some((key, if object { 1 } else { legs }))
}

/// The legs of an `RTA_MULTIPATH` value: `struct rtnexthop`s, each `rtnh_len` long (aligned).
fn rtnexthops(mut value: &[u8]) -> Option<usize> {
    let mut n = 0;
    while value.len() >= 8 {
        let len = usize::from(u16::from_ne_bytes([value[0], value[1]]));
        if len < 8 {
            return None;
        }
        n += 1;
        value = value.get((len + 3) & !3..).unwrap_or(&[]);
    }
    Some(n.max(1))
}

/// A policy rule of family `A`.
pub(crate) fn rule<A: Address>(payload: &[u8]) -> Result<Rule<A>, String> {
    let m = RuleMessage::parse(payload).map_err(|e| e.to_string())?;
    let h = &m.header;
    let mut r = Rule::lookup(0, u32::from(h.table));
    r.invert = h.flags.contains(RuleFlags::Invert);
    r.tos = h.tos;
    let (mut table, mut goto, mut mark, mut mask) = (u32::from(h.table), 0, None, None);
    let side = |a: &IpAddr, len: u8| A::from_ip(*a).map(|addr| RuleAddr { addr, len });
    for a in &m.attributes {
        match a {
            RuleAttribute::Priority(p) => r.priority = *p,
            RuleAttribute::Table(t) => table = *t,
            RuleAttribute::Source(x) => r.src = side(x, h.src_len),
            RuleAttribute::Destination(x) => r.dst = side(x, h.dst_len),
            RuleAttribute::Iifname(n) => r.iif = Some(n.clone()),
            RuleAttribute::Oifname(n) => r.oif = Some(n.clone()),
            RuleAttribute::FwMark(v) => mark = Some(*v),
            RuleAttribute::FwMask(v) => mask = Some(*v),
            RuleAttribute::IpProtocol(p) => r.ipproto = Some(i32::from(*p) as u8),
            RuleAttribute::SourcePortRange(p) => r.sport = Some((p.start, p.end)),
            RuleAttribute::DestinationPortRange(p) => r.dport = Some((p.start, p.end)),
            RuleAttribute::UidRange(u) => r.uidrange = Some((u.start, u.end)),
            RuleAttribute::Goto(t) => goto = *t,
            // The kernel's int, -1 for none (it sends one always).
            RuleAttribute::SuppressPrefixLen(n) if *n != u32::MAX => {
                r.suppress_prefixlength = Some(*n as i32)
            }
            RuleAttribute::Protocol(p) => r.protocol = u8::from(*p),
            _ => {}
        }
    }
    r.fwmark = mark.map(|m| (m, mask.unwrap_or(u32::MAX)));
    r.action = match h.action {
        NlRuleAction::ToTable => RuleAction::Lookup(table),
        NlRuleAction::Goto => RuleAction::Goto(goto),
        NlRuleAction::Nop => RuleAction::Nop,
        NlRuleAction::Blackhole => RuleAction::Blackhole,
        NlRuleAction::Unreachable => RuleAction::Unreachable,
        NlRuleAction::Prohibit => RuleAction::Prohibit,
        other => return Err(format!("rule action {other:?}")),
    };
    Ok(r)
}

/// A next-hop object (`struct nhmsg` and `NHA_*`, which this crate version does not parse):
/// its family byte, and the object in family `A` (a group's family is decided by the caller,
/// from its members). `None` for what the model does not hold: resilient groups, `fdb` and
/// encapsulating next hops.
pub(crate) fn nexthop<A: Address>(payload: &[u8]) -> Result<Option<(u8, NhObject<A>)>, String> {
    const NHA_GROUP_TYPE: u16 = 3;
    const NHA_ENCAP_TYPE: u16 = 7;
    const NHA_ENCAP: u16 = 8;
    const NHA_FDB: u16 = 11;
    const NHA_ID: u16 = 1;
    const NHA_GROUP: u16 = 2;
    const NHA_BLACKHOLE: u16 = 4;
    const NHA_OIF: u16 = 5;
    const NHA_GATEWAY: u16 = 6;
    let head = payload.get(..NHMSG_LEN).ok_or("short nexthop message")?;
    let (family, scope, protocol) = (head[0], head[1], head[2]);
    let flags = u32::from_ne_bytes(head[4..8].try_into().expect("4 bytes"));
    let (mut id, mut group, mut blackhole, mut oif, mut gateway) = (0, None, false, None, None);
    for nla in NlasIterator::new(&payload[NHMSG_LEN..]) {
        let nla = nla.map_err(|e| e.to_string())?;
        let v = nla.value();
        let u32_of = |v: &[u8]| {
            v.get(..4)
                .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
        };
        match nla.kind() {
            // Not mpath (0): resilient.
            NHA_GROUP_TYPE if v.iter().any(|b| *b != 0) => return Ok(None),
            NHA_FDB | NHA_ENCAP | NHA_ENCAP_TYPE => return Ok(None),
            NHA_ID => id = u32_of(v).ok_or("short NHA_ID")?,
            NHA_BLACKHOLE => blackhole = true,
            NHA_OIF => oif = u32_of(v),
            NHA_GATEWAY => {
                gateway = match v.len() {
                    4 => A::from_ip(IpAddr::from(<[u8; 4]>::try_from(v).unwrap())),
                    16 => A::from_ip(IpAddr::from(<[u8; 16]>::try_from(v).unwrap())),
                    _ => None,
                }
            }
            NHA_GROUP => {
                group = Some(
                    v.chunks_exact(8)
                        .map(|e| {
                            // `weight` and (6.12 on) `weight_high` hold the weight less one.
                            let w = u32::from(e[4]) + (u32::from(e[5]) << 8) + 1;
                            Ok(GroupMember {
                                id: u32::from_ne_bytes(e[..4].try_into().unwrap()),
                                weight: u16::try_from(w)
                                    .ok()
                                    .filter(|w| *w <= 256)
                                    .ok_or(format!("group weight {w} (fibre models 1..=256)"))?,
                            })
                        })
                        .collect::<Result<_, String>>()?,
                )
            }
            _ => {}
        }
    }
    let kind = match (group, blackhole) {
        (Some(members), _) => NhObjectKind::Group(members),
        (None, true) => NhObjectKind::Blackhole,
        (None, false) => NhObjectKind::Hop {
            hop: NextHop {
                gateway,
                dev: oif,
                weight: 1,
                onlink: flags & RTNH_F_ONLINK != 0,
            },
            scope,
        },
    };
    Ok(Some((family, NhObject { id, protocol, kind })))
}
