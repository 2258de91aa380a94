//! A `route get`'s answer from the route a lookup matched: the route spelled out, the chosen
//! next hop, and the preferred source. Both the full path and the prepared answers of route
//! classes (`router::plain`) build it here, so that they cannot drift apart.
use super::*;

/// How an answer's preferred source follows from its route, its next hop and the host's
/// addresses (`FamilyState::source_rule`): what the destination adds is kept apart, so that a
/// prepared answer (`router::plain`) can keep the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceRule<A> {
    /// This source (or none), whatever the destination.
    Known(Option<A>),
    /// Chosen among the host's addresses toward the destination, for a route that leaves by
    /// this device (IPv6's `ipv6_dev_get_saddr`).
    Toward(Option<IfIndex>),
    /// The destination itself (IPv4's local routes without a source of their own).
    Destination,
}

impl<A: RouterFamily> FamilyState<A> {
    /// How the source an answer reports for `route` through `hop` follows: the route's own;
    /// none for reject routes; else one of the host's addresses, as the family chooses
    /// ([`Kernel::hop_source`]).
    pub(super) fn source_rule<H>(
        &self,
        route: &Route<A, H>,
        hop: Option<&NextHop<A>>,
    ) -> SourceRule<A> {
        if route.prefsrc.is_some() || route.kind.is_reject() {
            return SourceRule::Known(route.prefsrc);
        }
        A::hop_source(
            self,
            hop.and_then(|h| h.dev),
            hop.and_then(|h| h.gateway),
            route.scope,
        )
    }

    /// The source `rule` gives toward `dst`.
    #[inline]
    pub(super) fn source_to(&self, rule: &SourceRule<A>, dst: A) -> Option<A> {
        match *rule {
            SourceRule::Known(a) => a,
            SourceRule::Toward(dev) => A::source_toward(self, dev, dst),
            SourceRule::Destination => Some(dst),
        }
    }

    /// The source an answer reports for `route` through `hop` to `dst` (see
    /// [`FamilyState::source_rule`]).
    pub(super) fn route_source<H>(
        &self,
        route: &Route<A, H>,
        hop: Option<&NextHop<A>>,
        dst: A,
    ) -> Option<A> {
        self.source_to(&self.source_rule(route, hop), dst)
    }

    /// The next hop an answer reports for `m` among `hops` (what [`Kernel::matched_hops`]
    /// gives): IPv4's chosen leg; IPv6's matched sibling, which comes first.
    pub(super) fn answer_hop(m: &Matched<A>, hops: &[NextHop<A>]) -> Option<NextHop<A>> {
        hops.get(if A::FAMILY == Family::Inet6 { 0 } else { m.hop })
            .copied()
    }

    /// The answer for a matched route: spelled-out route (with IPv6 siblings) and the path.
    pub(super) fn answer(
        &self,
        m: &Matched<A>,
        dst: A,
        src: Option<A>,
        iif: Option<IfIndex>,
    ) -> RouteAnswer<A> {
        let hops = A::matched_hops(self, m);
        let hop = Self::answer_hop(m, &hops);
        // The table a lookup reports is the one it searched: IPv4's merged local+main is main.
        let spec = Route {
            table: m.table,
            ..m.route.with_hops(hops)
        };
        RouteAnswer {
            kind: m.route.kind,
            cache: CacheFlags::default(),
            mark: 0,
            prefsrc: self.route_source(&m.route, hop.as_ref(), dst),
            route: Some(spec),
            dst,
            src,
            gateway: hop.and_then(|h| h.gateway),
            dev: hop.and_then(|h| h.dev),
            iif,
        }
    }
}
