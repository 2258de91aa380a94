//! Routes and their attributes, numbered as in `<linux/rtnetlink.h>`.
use crate::addr::Address;
use crate::error::Errno;
use crate::nexthop::{NextHop, NhId, NhObjectRef};
use crate::prefix::Prefix;

/// Routing table id. Any `u32`; the kernel names three.
pub type TableId = u32;
/// `RT_TABLE_UNSPEC`: no table given.
pub const TABLE_UNSPEC: TableId = 0;
/// `RT_TABLE_DEFAULT` (`default`): empty, consulted last by the IPv4 default rules.
pub const TABLE_DEFAULT: TableId = 253;
/// `RT_TABLE_MAIN` (`main`): where `ip route add` puts routes unless told otherwise.
pub const TABLE_MAIN: TableId = 254;
/// `RT_TABLE_LOCAL` (`local`): the kernel's `local`, `broadcast` and `anycast` routes for the
/// host's own addresses, consulted first.
pub const TABLE_LOCAL: TableId = 255;

pub use crate::link::{IfIndex, LOOPBACK_IFINDEX};

/// What a route does with a packet it matches (`rtm_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub enum RouteType {
    /// `RTN_UNICAST`: the packet goes out through the route's next hops.
    Unicast = 1,
    /// `RTN_LOCAL`: the destination is an address of this host; the packet is delivered
    /// locally, through `lo`.
    Local = 2,
    /// `RTN_BROADCAST`: a broadcast address (IPv4); delivered locally and sent as link-layer
    /// broadcast, never through a gateway.
    Broadcast = 3,
    /// `RTN_ANYCAST`: an anycast address of this host (IPv6 adds the subnet-router anycast
    /// address of each prefix to table local).
    Anycast = 4,
    /// `RTN_MULTICAST`: multicast destinations (IPv6 adds `ff00::/8` per device to table local).
    Multicast = 5,
    /// `RTN_BLACKHOLE`: the packet is silently discarded; a lookup answers `EINVAL`.
    Blackhole = 6,
    /// `RTN_UNREACHABLE`: a lookup answers `EHOSTUNREACH`.
    Unreachable = 7,
    /// `RTN_PROHIBIT`: a lookup answers `EACCES`.
    Prohibit = 8,
    /// `RTN_THROW`: the lookup in this table fails with `EAGAIN` and the rule walk goes on with
    /// the next rule (`ENETUNREACH` if none finds a route).
    Throw = 9,
    /// `RTN_NAT`: obsolete in the kernel, which refuses lookups on it with `EINVAL`.
    Nat = 10,
}

impl RouteType {
    /// Every type, in `rtm_type` order.
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
    /// The iproute2 spelling (`unicast`, `blackhole`, ...).
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
    /// The type spelled `s` as iproute2 spells it; exact match only.
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
/// `RT_SCOPE_UNIVERSE` (`global`): the destination may be anywhere, as through a gateway.
pub const SCOPE_UNIVERSE: Scope = 0;
/// `RT_SCOPE_SITE` (`site`): within the site.
pub const SCOPE_SITE: Scope = 200;
/// `RT_SCOPE_LINK` (`link`): directly on an attached link.
pub const SCOPE_LINK: Scope = 253;
/// `RT_SCOPE_HOST` (`host`): this host itself, as for `local` routes.
pub const SCOPE_HOST: Scope = 254;
/// `RT_SCOPE_NOWHERE` (`nowhere`): no destination.
pub const SCOPE_NOWHERE: Scope = 255;

/// Who installed the route (`rtm_protocol`), named as in iproute2's `rt_protos`.
pub type Protocol = u8;
/// `RTPROT_UNSPEC` (`unspec`).
pub const PROTO_UNSPEC: Protocol = 0;
/// `RTPROT_REDIRECT` (`redirect`): installed by an ICMP redirect.
pub const PROTO_REDIRECT: Protocol = 1;
/// `RTPROT_KERNEL` (`kernel`): derived by the kernel from an address or device.
pub const PROTO_KERNEL: Protocol = 2;
/// `RTPROT_BOOT` (`boot`): the default for `ip route add`.
pub const PROTO_BOOT: Protocol = 3;
/// `RTPROT_STATIC` (`static`): installed by the administrator.
pub const PROTO_STATIC: Protocol = 4;

/// IPv6 router preference (RFC 4191), which breaks ties between routes of equal metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub enum RouterPref {
    /// `pref low`.
    Low,
    /// `pref medium`, the default.
    #[default]
    Medium,
    /// `pref high`.
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
    /// The iproute2 spelling: `low`, `medium`, `high`.
    pub fn name(self) -> &'static str {
        match self {
            RouterPref::Low => "low",
            RouterPref::Medium => "medium",
            RouterPref::High => "high",
        }
    }
    /// The preference spelled `s`; `None` for anything else.
    pub fn from_name(s: &str) -> Option<RouterPref> {
        match s {
            "low" => Some(RouterPref::Low),
            "medium" => Some(RouterPref::Medium),
            "high" => Some(RouterPref::High),
            _ => None,
        }
    }
}

/// One route, with every attribute that decides or reports a lookup, and its next hops `H`.
///
/// Routes of a table (`H` = [`NhId`], the default) do not hold their next hops but an index
/// into the family's [`crate::nexthop::NhTable`], shared by every route with the same next hops
/// (the kernel's `fib_info` sharing). A [`RouteSpec`] spells them out. A table keeps its routes
/// smaller still ([`crate::rib::StoredRoute`]) and hands them out as `Route`s.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct Route<A: Address, H = NhId> {
    /// The table the route is in (`table`, `RTA_TABLE`).
    pub table: TableId,
    /// The destination prefix.
    pub dst: Prefix<A>,
    /// IPv6 source prefix (`from`); `::/0` for ordinary routes and always `0.0.0.0/0` for IPv4.
    pub src: Prefix<A>,
    /// IPv4 TOS selector (`tos`); 0 matches every flow.
    pub tos: u8,
    /// `metric` / `priority`: lower wins.
    pub metric: u32,
    /// The route type (`rtm_type`).
    pub kind: RouteType,
    /// Who installed the route (`proto`, `rtm_protocol`).
    pub protocol: Protocol,
    /// The route's scope (`scope`, `rtm_scope`).
    pub scope: Scope,
    /// Preferred source address for packets this host sends along the route (`src`,
    /// `RTA_PREFSRC`).
    pub prefsrc: Option<A>,
    /// IPv6 router preference (`pref`).
    pub pref: RouterPref,
    /// Route metrics (`mtu`, `advmss`, ...): reported, never deciding.
    pub mtu: Option<u32>,
    /// `nhid`: the next-hop object the route goes through; `hops` are then the object's.
    pub nhid: Option<NhObjectRef>,
    /// The next hops: the interned group's id for a stored route; for a [`RouteSpec`], one
    /// for a plain route, several for multipath (`nexthop ...`), none for reject types.
    pub hops: H,
}

/// A route as requested (`ip route add ...`), its next hops spelled out before they are
/// interned. Also how routes are handed out to callers that do not hold the
/// [`crate::nexthop::NhTable`].
pub type RouteSpec<A> = Route<A, Vec<NextHop<A>>>;

impl<A: Address, H> Route<A, H> {
    /// The same route with other next hops: a spec's interned (`with_hops(id)`), or a stored
    /// route's spelled out (`with_hops(list)`).
    pub fn with_hops<G>(&self, hops: G) -> Route<A, G> {
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
            nhid: self.nhid,
            hops,
        }
    }
}

impl<A: Address> RouteSpec<A> {
    /// A unicast route in table main, `proto boot`, metric 0, scope universe, no source prefix.
    /// iproute2 picks some of these per route (`scope link` for an IPv4 route without gateway,
    /// metric 1024 for IPv6); its parser here does the same, and callers building routes by
    /// hand set what they need.
    pub fn new(dst: Prefix<A>, hops: Vec<NextHop<A>>) -> Self {
        Route {
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
            nhid: None,
            hops,
        }
    }
}
