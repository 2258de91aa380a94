//! Routes and their attributes, numbered as in `<linux/rtnetlink.h>`.
use crate::addr::Address;
use crate::error::Errno;
use crate::nexthop::NhId;
use crate::prefix::Prefix;

/// Routing table id. Any `u32`; the kernel names three.
pub type TableId = u32;
pub const TABLE_UNSPEC: TableId = 0;
pub const TABLE_DEFAULT: TableId = 253;
pub const TABLE_MAIN: TableId = 254;
pub const TABLE_LOCAL: TableId = 255;

pub use crate::link::{IfIndex, LOOPBACK_IFINDEX};

/// What a route does with a packet it matches (`rtm_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum RouteType {
    Unicast = 1,
    Local = 2,
    Broadcast = 3,
    Anycast = 4,
    Multicast = 5,
    Blackhole = 6,
    Unreachable = 7,
    Prohibit = 8,
    Throw = 9,
    Nat = 10,
}

impl RouteType {
    pub const ALL: [RouteType; 10] = [
        RouteType::Unicast,
        RouteType::Local,
        RouteType::Broadcast,
        RouteType::Anycast,
        RouteType::Multicast,
        RouteType::Blackhole,
        RouteType::Unreachable,
        RouteType::Prohibit,
        RouteType::Throw,
        RouteType::Nat,
    ];
    pub fn name(self) -> &'static str {
        match self {
            RouteType::Unicast => "unicast",
            RouteType::Local => "local",
            RouteType::Broadcast => "broadcast",
            RouteType::Anycast => "anycast",
            RouteType::Multicast => "multicast",
            RouteType::Blackhole => "blackhole",
            RouteType::Unreachable => "unreachable",
            RouteType::Prohibit => "prohibit",
            RouteType::Throw => "throw",
            RouteType::Nat => "nat",
        }
    }
    pub fn from_name(s: &str) -> Option<RouteType> {
        RouteType::ALL.into_iter().find(|t| t.name() == s)
    }
    /// The error a lookup returns on matching this type without looking at next hops
    /// (`fib_props[type].error` in net/ipv4/fib_semantics.c). `Throw` answers `EAGAIN`: "try the
    /// next rule".
    pub fn reject_error(self) -> Option<Errno> {
        match self {
            RouteType::Blackhole | RouteType::Nat => Some(Errno::EINVAL),
            RouteType::Unreachable => Some(Errno::EHOSTUNREACH),
            RouteType::Prohibit => Some(Errno::EACCES),
            RouteType::Throw => Some(Errno::EAGAIN),
            _ => None,
        }
    }
    /// Types that carry no next hop (a device or gateway on them is refused).
    pub fn is_reject(self) -> bool {
        self.reject_error().is_some()
    }
}

/// Route scope (`rtm_scope`): how far the destination is.
pub type Scope = u8;
pub const SCOPE_UNIVERSE: Scope = 0;
pub const SCOPE_SITE: Scope = 200;
pub const SCOPE_LINK: Scope = 253;
pub const SCOPE_HOST: Scope = 254;
pub const SCOPE_NOWHERE: Scope = 255;

pub fn scope_name(s: Scope) -> String {
    match s {
        SCOPE_UNIVERSE => "global".into(),
        SCOPE_SITE => "site".into(),
        SCOPE_LINK => "link".into(),
        SCOPE_HOST => "host".into(),
        SCOPE_NOWHERE => "nowhere".into(),
        n => n.to_string(),
    }
}
pub fn scope_from_name(s: &str) -> Option<Scope> {
    Some(match s {
        "global" | "universe" => SCOPE_UNIVERSE,
        "site" => SCOPE_SITE,
        "link" => SCOPE_LINK,
        "host" => SCOPE_HOST,
        "nowhere" => SCOPE_NOWHERE,
        n => parse_u8(n)?,
    })
}

/// Who installed the route (`rtm_protocol`), named as in iproute2's `rt_protos`.
pub type Protocol = u8;
pub const PROTO_UNSPEC: Protocol = 0;
pub const PROTO_REDIRECT: Protocol = 1;
pub const PROTO_KERNEL: Protocol = 2;
pub const PROTO_BOOT: Protocol = 3;
pub const PROTO_STATIC: Protocol = 4;

const PROTOCOL_NAMES: &[(Protocol, &str)] = &[
    (0, "unspec"),
    (1, "redirect"),
    (2, "kernel"),
    (3, "boot"),
    (4, "static"),
    (8, "gated"),
    (9, "ra"),
    (10, "mrt"),
    (11, "zebra"),
    (12, "bird"),
    (13, "dnrouted"),
    (14, "xorp"),
    (15, "ntk"),
    (16, "dhcp"),
    (17, "keepalived"),
    (42, "babel"),
    (99, "openr"),
    (186, "bgp"),
    (187, "isis"),
    (188, "ospf"),
    (189, "rip"),
    (192, "eigrp"),
];
pub fn protocol_name(p: Protocol) -> String {
    PROTOCOL_NAMES
        .iter()
        .find(|(n, _)| *n == p)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| p.to_string())
}
pub fn protocol_from_name(s: &str) -> Option<Protocol> {
    PROTOCOL_NAMES
        .iter()
        .find(|(_, n)| *n == s)
        .map(|(p, _)| *p)
        .or_else(|| parse_u8(s))
}

/// Table names as iproute2 prints them (`rt_tables`).
pub fn table_name(t: TableId) -> String {
    match t {
        TABLE_LOCAL => "local".into(),
        TABLE_MAIN => "main".into(),
        TABLE_DEFAULT => "default".into(),
        TABLE_UNSPEC => "unspec".into(),
        n => n.to_string(),
    }
}
pub fn table_from_name(s: &str) -> Option<TableId> {
    match s {
        "local" => Some(TABLE_LOCAL),
        "main" => Some(TABLE_MAIN),
        "default" => Some(TABLE_DEFAULT),
        "unspec" => Some(TABLE_UNSPEC),
        n => parse_u32(n),
    }
}

/// IPv6 router preference (RFC 4191), which breaks ties between routes of equal metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum RouterPref {
    Low,
    #[default]
    Medium,
    High,
}
impl RouterPref {
    /// `IPV6_DECODE_PREF`: the value the kernel's route score is built from.
    pub fn score(self) -> i32 {
        match self {
            RouterPref::Low => 1,
            RouterPref::Medium => 2,
            RouterPref::High => 3,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RouterPref::Low => "low",
            RouterPref::Medium => "medium",
            RouterPref::High => "high",
        }
    }
    pub fn from_name(s: &str) -> Option<RouterPref> {
        match s {
            "low" => Some(RouterPref::Low),
            "medium" => Some(RouterPref::Medium),
            "high" => Some(RouterPref::High),
            _ => None,
        }
    }
}

/// One route, with every attribute that decides or reports a lookup.
///
/// The next hops are not stored here but interned in the family's [`crate::nexthop::NhTable`];
/// `nh` is an index into it, shared by every route with the same next hops (the kernel's
/// `fib_info` sharing).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Route<A: Address> {
    pub table: TableId,
    pub dst: Prefix<A>,
    /// IPv6 source prefix (`from`); `::/0` for ordinary routes and always `0.0.0.0/0` for IPv4.
    pub src: Prefix<A>,
    /// IPv4 TOS selector (`tos`); 0 matches every flow.
    pub tos: u8,
    /// `metric` / `priority`: lower wins.
    pub metric: u32,
    pub kind: RouteType,
    pub protocol: Protocol,
    pub scope: Scope,
    pub prefsrc: Option<A>,
    pub pref: RouterPref,
    /// Route metrics (`mtu`, `advmss`, ...): reported, never deciding.
    pub mtu: Option<u32>,
    pub nh: NhId,
}

pub(crate) fn parse_u8(s: &str) -> Option<u8> {
    parse_u32(s).and_then(|v| u8::try_from(v).ok())
}

/// Numbers as iproute2's `get_unsigned` reads them: decimal, `0x` hex or leading-zero octal.
pub(crate) fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || s.starts_with('+') || s.starts_with('-') {
        return None;
    }
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_round_trip() {
        for t in RouteType::ALL {
            assert_eq!(RouteType::from_name(t.name()), Some(t));
        }
        assert_eq!(protocol_from_name("bird"), Some(12));
        assert_eq!(protocol_name(186), "bgp");
        assert_eq!(table_from_name("main"), Some(254));
        assert_eq!(table_name(100), "100");
        assert_eq!(parse_u32("0x10"), Some(16));
        assert_eq!(parse_u32("010"), Some(8));
        assert_eq!(parse_u32("-1"), None);
        assert_eq!(scope_from_name("link"), Some(253));
    }
}

/// A route as requested (`ip route add ...`): attributes plus next hops spelled out, before they
/// are interned. Also how routes are handed out to callers that do not hold the [`crate::nexthop::NhTable`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteSpec<A: Address> {
    pub table: TableId,
    pub dst: Prefix<A>,
    pub src: Prefix<A>,
    pub tos: u8,
    pub metric: u32,
    pub kind: RouteType,
    pub protocol: Protocol,
    pub scope: Scope,
    pub prefsrc: Option<A>,
    pub pref: RouterPref,
    pub mtu: Option<u32>,
    pub hops: Vec<crate::nexthop::NextHop<A>>,
}

impl<A: Address> RouteSpec<A> {
    /// A unicast route in the main table with defaults as iproute2 fills them in.
    pub fn new(dst: Prefix<A>, hops: Vec<crate::nexthop::NextHop<A>>) -> Self {
        RouteSpec {
            table: TABLE_MAIN,
            dst,
            src: Prefix::any(),
            tos: 0,
            metric: 0,
            kind: RouteType::Unicast,
            protocol: PROTO_BOOT,
            scope: SCOPE_UNIVERSE,
            prefsrc: None,
            pref: RouterPref::Medium,
            mtu: None,
            hops,
        }
    }
    /// The stored form, with next hops interned as `nh`.
    pub fn with_nh(&self, nh: NhId) -> Route<A> {
        Route {
            table: self.table,
            dst: self.dst,
            src: self.src,
            tos: self.tos,
            metric: self.metric,
            kind: self.kind,
            protocol: self.protocol,
            scope: self.scope,
            prefsrc: self.prefsrc,
            pref: self.pref,
            mtu: self.mtu,
            nh,
        }
    }
    /// The spelled-out form of a stored route.
    pub fn of(r: &Route<A>, hops: &[crate::nexthop::NextHop<A>]) -> Self {
        RouteSpec {
            table: r.table,
            dst: r.dst,
            src: r.src,
            tos: r.tos,
            metric: r.metric,
            kind: r.kind,
            protocol: r.protocol,
            scope: r.scope,
            prefsrc: r.prefsrc,
            pref: r.pref,
            mtu: r.mtu,
            hops: hops.to_vec(),
        }
    }
}
