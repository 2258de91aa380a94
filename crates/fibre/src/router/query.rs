//! What `ip route get` asks and answers.
use crate::addr::Address;
use crate::nexthop::NextHop;
use crate::rib::Siblings;
use crate::route::*;
use smallvec::SmallVec;
use std::net::IpAddr;

/// The next hops an answer spells out: inline up to two (a route get answers without
/// allocating unless the route has more).
pub type AnswerHops<A> = SmallVec<[NextHop<A>; 2]>;

/// A route that a lookup chose, and where.
#[derive(Clone, Debug)]
pub struct Matched<A: Address> {
    /// The table the lookup reports (IPv4's merged local+main reports main).
    pub table: TableId,
    /// The route chosen.
    pub route: Route<A>,
    /// Index of the chosen next hop in the route's group.
    pub hop: usize,
    /// IPv6: the route's ECMP siblings' next hops (see [`Siblings`]).
    pub siblings: Siblings,
}

/// What `ip route get` asks: a destination of family `A` and what else the query names.
///
/// `RouteQuery<IpAddr>` is a query whose family is not chosen yet (as text gives it);
/// [`RouteQuery::narrow`] makes it one of a family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteQuery<A> {
    /// The destination.
    pub dst: A,
    /// `from`: the source address (of the packet, for `iif`; the socket's, otherwise).
    pub src: Option<A>,
    /// `iif`: the packet arrives on this device (the input path) instead of being sent from
    /// this host (the output path).
    pub iif: Option<IfIndex>,
    /// `oif`: the socket is bound to this device.
    pub oif: Option<IfIndex>,
    /// `mark`: the firewall mark, for rules.
    pub mark: u32,
    /// `tos` (`dsfield`).
    pub tos: u8,
    /// `ipproto`; `None` asks as the kernel does without it (IPv4 as UDP, IPv6 as 0).
    pub ipproto: Option<u8>,
    /// `sport`.
    pub sport: Option<u16>,
    /// `dport`.
    pub dport: Option<u16>,
    /// `uid`: the socket's owner, for `uidrange` rules.
    pub uid: Option<u32>,
    /// `fibmatch`: answer with the matched route instead of the resolved path.
    pub fibmatch: bool,
}

impl<A> RouteQuery<A> {
    /// A query for `dst` that names nothing else.
    pub fn to(dst: A) -> Self {
        RouteQuery {
            dst,
            src: None,
            iif: None,
            oif: None,
            mark: 0,
            tos: 0,
            ipproto: None,
            sport: None,
            dport: None,
            uid: None,
            fibmatch: false,
        }
    }

    /// A locally sent packet's query with no device and no source (0.0.0.0 and :: read as
    /// none): the first test of `route get`'s fast path (`router::plain`).
    pub(super) fn names_no_device_nor_source(&self) -> bool
    where
        A: crate::addr::Address,
    {
        self.iif.is_none() && self.oif.is_none() && self.src.is_none_or(|s| s == A::unspecified())
    }

    /// The same query for another destination and source (of another type: a query parsed
    /// before its family is known is a `RouteQuery<()>` until its addresses are).
    pub fn with<B>(self, dst: B, src: Option<B>) -> RouteQuery<B> {
        RouteQuery {
            dst,
            src,
            iif: self.iif,
            oif: self.oif,
            mark: self.mark,
            tos: self.tos,
            ipproto: self.ipproto,
            sport: self.sport,
            dport: self.dport,
            uid: self.uid,
            fibmatch: self.fibmatch,
        }
    }
}

impl RouteQuery<IpAddr> {
    /// The query as one of family `A`: `None` where its destination or source is of the
    /// other family.
    pub fn narrow<A: Address>(&self) -> Option<RouteQuery<A>> {
        let src = match self.src {
            None => None,
            Some(s) => Some(A::from_ip(s)?),
        };
        Some(self.clone().with(A::from_ip(self.dst)?, src))
    }
}

/// The flags of a resolved IPv4 route (`RTCF_*`), as `ip route get` prints them after `cache`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheFlags {
    /// Delivered here (`RTCF_LOCAL`).
    pub local: bool,
    /// `RTCF_MULTICAST`.
    pub multicast: bool,
    /// `RTCF_BROADCAST`.
    pub broadcast: bool,
    /// Forwarded back out of its input device to a source on that link (`RTCF_DOREDIRECT`).
    pub redirect: bool,
}

impl CacheFlags {
    /// The names ip prints, in ip's order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.local, "local"),
            (self.multicast, "mc"),
            (self.broadcast, "brd"),
            (self.redirect, "redirect"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// The answer to `route get`: the matched route (`fibmatch`) and how it resolves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteAnswer<A: Address> {
    /// The route that matched, with its next hops spelled out; for IPv6 ECMP the siblings' next
    /// hops, the chosen one first. `None` where the kernel answers without a FIB entry (it
    /// assumes the destination on-link, or multicast, broadcast and 0.0.0.0 shortcuts): then
    /// `fibmatch` fails with EHOSTUNREACH.
    pub route: Option<Route<A, AnswerHops<A>>>,
    /// The type of the resolved route: the matched route's, except that IPv4 answers to
    /// 255.255.255.255 are broadcast and to 224/4 multicast whatever route carried them.
    pub kind: RouteType,
    /// IPv4: the resolved route's flags.
    pub cache: CacheFlags,
    /// The flow's firewall mark (IPv4 answers print it).
    pub mark: u32,
    /// The queried destination and the resolved path.
    pub dst: A,
    /// The source address the query gave (`from`).
    pub src: Option<A>,
    /// The gateway of the chosen next hop (`via`); `None` for a directly reachable destination.
    pub gateway: Option<A>,
    /// The output device (`dev`).
    pub dev: Option<IfIndex>,
    /// The source address reported (`src` in `ip route get` output): the route's `prefsrc`, or
    /// one selected from the host's addresses.
    pub prefsrc: Option<A>,
    /// The input device, for input-path queries (`iif`).
    pub iif: Option<IfIndex>,
}

impl<A: Address> RouteAnswer<A> {
    /// The matched route as a [`RouteSpec`] (its next hops in a `Vec`), as formatters and
    /// callers that edit it take it.
    pub fn route_spec(&self) -> Option<RouteSpec<A>> {
        self.route.as_ref().map(|r| r.with_hops(r.hops.to_vec()))
    }
}
