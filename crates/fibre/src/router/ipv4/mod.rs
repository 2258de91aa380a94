//! IPv4 parts of the router: derived routes (`fib_add_ifaddr`), the merged fast path
//! (`fib_lookup` without custom rules), and the checks of `fib_create_info`. `route get`'s
//! paths (`ip_route_output_key_hash` / `ip_route_input_slow`) are in [`output`], what the
//! kernel calls local (addresses' types, preferred sources) in [`local`].
mod local;
mod output;

use super::*;
use crate::rib::AllUp;
use gateways::GatewayKey;
use local::{address_type, check_prefsrc, select_addr};
use output::{
    leaves_by_lo_only, output_answer, output_source, route_input, route_output, type_flags,
};
use plain::Probe;

/// IPv4 route queries without `ipproto` are asked as UDP (`inet_rtm_getroute` builds a UDP
/// packet); IPv6 ones carry protocol 0.
const UDP: u8 = 17;

/// `ipv4_is_zeronet`: since Linux 6.x only 0.0.0.0 itself (the rest of 0/8 is unicast).
fn zeronet(a: Ipv4Addr) -> bool {
    a.is_unspecified()
}

/// 224.0.0.0/24, link-local multicast.
fn local_multicast(a: Ipv4Addr) -> bool {
    a.octets()[..3] == [224, 0, 0]
}

/// Groups every up device has joined: only all-hosts (`ip_mc_up` joins 224.0.0.1).
fn joined(a: Ipv4Addr) -> bool {
    a == Ipv4Addr::new(224, 0, 0, 1)
}

/// IPv4's derived routes also carry a scope and a preferred source.
fn kernel_route_v4(
    table: TableId,
    dst: Prefix<Ipv4Addr>,
    kind: RouteType,
    scope: Scope,
    prefsrc: Ipv4Addr,
    dev: IfIndex,
    metric: u32,
) -> RouteSpec<Ipv4Addr> {
    RouteSpec {
        scope,
        prefsrc: Some(prefsrc),
        ..kernel_route(table, dst, kind, dev, metric)
    }
}

/// `fib_check_nh_v4_gw`: the route that makes `gw` reachable for a route of `scope` in
/// `table`: one of at least link scope, in that table first, then by a full lookup; link state
/// does not count (FIB_LOOKUP_IGNORE_LINKSTATE). It must be unicast or local.
fn gateway_route(
    r: &Router,
    gw: Ipv4Addr,
    dev: Option<IfIndex>,
    scope: Scope,
    table: TableId,
) -> Result<Matched<Ipv4Addr>, ChangeError> {
    let st = &r.v4;
    let flow = Flow {
        oif: dev,
        iif: Some(LOOPBACK_IFINDEX),
        scope: (scope + 1).max(SCOPE_LINK),
        ..Flow::to(gw)
    };
    let in_table = (table != TABLE_MAIN)
        .then(|| st.tables.get(&table))
        .flatten()
        .and_then(|t| match t.lookup(&flow, &st.nhs, &AllUp) {
            TableLookup::Match {
                route,
                hop,
                siblings,
            } => Some(Matched {
                table,
                route,
                hop,
                siblings,
            }),
            _ => None,
        });
    let (names_iif, names_oif) = r.names(flow.iif, flow.oif);
    let invalid = || ChangeError::with(Errno::EINVAL, "Nexthop has invalid gateway");
    let found = match in_table {
        Some(m) => m,
        None => Ipv4Addr::policy_lookup(st, &flow, names_iif, names_oif, &AllUp)
            .map_err(|_| invalid())?,
    };
    if !matches!(found.route.kind, RouteType::Unicast | RouteType::Local) {
        return Err(invalid());
    }
    Ok(found)
}

/// `fib_find_info_nh`: a route through a next-hop object whose table, protocol, scope,
/// preferred source, metric and type match a route already there (and that sets no metrics)
/// shares that route's `fib_info`, which `fib_create_info` then takes without a check: a
/// source that is no longer local passes. Asked only once the check failed (a walk of the
/// table). The kernel also compares the route's flags (`onlink`, which fibre refuses beside
/// `nhid` in any case).
fn shares_object_info(r: &Router, spec: &RouteSpec<Ipv4Addr>) -> bool {
    let id = spec.nhid.map(|n| n.id);
    spec.mtu.is_none()
        && r.v4.tables.get(&spec.table).is_some_and(|t| {
            t.iter().any(|x| {
                x.nhid.map(|n| n.id) == id
                    && x.protocol == spec.protocol
                    && x.scope == spec.scope
                    && x.prefsrc == spec.prefsrc
                    && x.metric == spec.metric
                    && x.kind == spec.kind
                    && x.mtu.is_none()
            })
        })
}

impl family::Kernel for Ipv4Addr {
    const ICMP: u8 = 1;
    const BLACKHOLE_LO_DOWN: &'static str = "Device for nexthop is not up";
    const FOREIGN_OBJECT: Option<&'static str> = None;

    fn check_object_hop(r: &Router, hop: &mut NextHop<Self>) -> Result<Scope, ChangeError> {
        let Some(gw) = hop.gateway else {
            return Ok(SCOPE_HOST);
        };
        if hop.onlink {
            if address_type(r, gw) != RouteType::Unicast {
                return Err(ChangeError::with(
                    Errno::EINVAL,
                    "Nexthop has invalid gateway",
                ));
            }
            return Ok(SCOPE_LINK);
        }
        Ok(gateway_route(r, gw, hop.dev, SCOPE_UNIVERSE, TABLE_MAIN)?
            .route
            .scope)
    }

    fn check_route_through(
        scope: Scope,
        obj: &NhObject<Self>,
        first: Option<&NextHop<Self>>,
    ) -> Result<(), ChangeError> {
        // fib_check_nexthop / nexthop_check_scope.
        if obj.is_group() && scope == SCOPE_HOST {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "Route with host scope can not have multiple nexthops",
            ));
        }
        if let Some(h) = first {
            if scope == SCOPE_HOST && h.gateway.is_some() {
                return Err(ChangeError::with(
                    Errno::EINVAL,
                    "Route with host scope can not have a gateway",
                ));
            }
            if h.onlink && scope >= SCOPE_LINK {
                return Err(ChangeError::with(
                    Errno::EINVAL,
                    "Scope mismatch with nexthop",
                ));
            }
        }
        Ok(())
    }
    fn state(r: &Router) -> &FamilyState<Self> {
        &r.v4
    }
    fn state_mut(r: &mut Router) -> &mut FamilyState<Self> {
        &mut r.v4
    }
    fn wrap(c: FamilyChange<Self>) -> Change {
        Change::Inet(c)
    }

    fn derive(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<RouteSpec<Self>> {
        let mut out: Vec<RouteSpec<Self>> = Vec::new();
        for (i, a) in addrs.iter().enumerate() {
            let Some(link) = links.by_index(a.dev) else {
                continue;
            };
            let subnet = a.subnet();
            // An address in a subnet that an earlier address of the device already has is
            // secondary: it gets its local route (with the primary as source) and nothing else.
            let primary = addrs[..i]
                .iter()
                .find(|o| o.dev == a.dev && o.len == a.len && o.subnet() == subnet);
            let prim = primary.map_or(a.addr, |p| p.addr);
            // The local route lives as long as the address, whatever the link does.
            out.push(kernel_route_v4(
                TABLE_LOCAL,
                Prefix::host(a.addr),
                RouteType::Local,
                SCOPE_HOST,
                prim,
                a.dev,
                0,
            ));
            if !link.up {
                continue;
            }
            if let Some(b) = a.broadcast.filter(|b| !b.is_broadcast()) {
                out.push(kernel_route_v4(
                    TABLE_LOCAL,
                    Prefix::host(b),
                    RouteType::Broadcast,
                    SCOPE_LINK,
                    prim,
                    a.dev,
                    0,
                ));
            }
            if primary.is_none()
                && !zeronet(subnet.addr())
                && (subnet.addr() != a.addr || a.len < 32)
            {
                if !a.noprefixroute {
                    let spec = if link.kind == LinkKind::Loopback {
                        kernel_route_v4(
                            TABLE_LOCAL,
                            subnet,
                            RouteType::Local,
                            SCOPE_HOST,
                            a.addr,
                            a.dev,
                            a.metric.unwrap_or(0),
                        )
                    } else {
                        kernel_route_v4(
                            TABLE_MAIN,
                            subnet,
                            RouteType::Unicast,
                            SCOPE_LINK,
                            a.addr,
                            a.dev,
                            a.metric.unwrap_or(0),
                        )
                    };
                    out.push(spec);
                }
                if a.len < 31 {
                    out.push(kernel_route_v4(
                        TABLE_LOCAL,
                        Prefix::host(subnet.last()),
                        RouteType::Broadcast,
                        SCOPE_LINK,
                        a.addr,
                        a.dev,
                        0,
                    ));
                }
            }
        }
        out
    }

    fn policy_lookup(
        st: &FamilyState<Self>,
        flow: &Flow<Self>,
        iif: Option<&str>,
        oif: Option<&str>,
        links: &dyn LinkState,
    ) -> Result<Matched<Self>, Errno> {
        if st.rules.customised {
            return st.walk_rules(flow, &FlowNames { iif, oif }, links);
        }
        // Fast path: local and main are one trie, reported as table main; then, if main has
        // nothing (or throws), the default table, if it exists.
        // The tables are searched for only when the FIB cannot answer alone (three searches
        // of the tables' map were a tenth of a `route get`).
        let merged = st.fib_lookup_merged(flow, links).unwrap_or_else(|| {
            let (local, main) = (&st.tables[&TABLE_LOCAL], &st.tables[&TABLE_MAIN]);
            Rib::lookup_merged(local, main, flow, &st.nhs, links)
        });
        let fall_through = matches!(
            merged,
            TableLookup::None
                | TableLookup::Reject {
                    errno: Errno::EAGAIN,
                    ..
                }
        );
        let default = fall_through
            .then(|| st.tables.get(&TABLE_DEFAULT))
            .flatten();
        let (table, result) = match default {
            Some(default) => (TABLE_DEFAULT, default.lookup(flow, &st.nhs, links)),
            None => (TABLE_MAIN, merged),
        };
        match result {
            TableLookup::Match {
                route,
                hop,
                siblings,
            } => Ok(Matched {
                table,
                route,
                hop,
                siblings,
            }),
            TableLookup::Reject { errno, .. } if errno != Errno::EAGAIN => Err(errno),
            _ => Err(Errno::ENETUNREACH),
        }
    }

    fn check_address(_: &IfAddr<Self>, _: Option<&LinkKind>) -> Result<(), ChangeError> {
        Ok(())
    }

    fn route_get(r: &Router, q: &RouteQuery<Self>) -> Result<RouteAnswer<Self>, Errno> {
        if let Some(p) = Self::prepared_answer(r, q) {
            // Built in place: a prepared answer handed back through an `Option` was copied
            // once more (callgrind).
            return p.answer_to(&r.v4, q.dst, q.mark);
        }
        let dst = q.dst;
        // A source of 0.0.0.0 is no source (the kernel reads 0 as "unset").
        let src = q.src.filter(|s| !s.is_unspecified());
        let mut a = match q.iif {
            Some(iif) => route_input(r, q, dst, src, iif)?,
            None => route_output(r, q, dst, src)?,
        };
        a.mark = q.mark;
        // `inet_rtm_getroute`: a resolved route without a FIB entry has nothing to show.
        if q.fibmatch && a.route.is_none() {
            return Err(Errno::EHOSTUNREACH);
        }
        Ok(a)
    }

    /// The merged FIB answers with a prepared answer (no TOS, a unicast destination).
    #[inline]
    fn prepared_answer<'r>(r: &'r Router, q: &RouteQuery<Self>) -> Option<&'r Prepared<Self>> {
        let (st, dst) = (&r.v4, q.dst);
        let unicast = !(dst.is_multicast() || dst.is_broadcast() || dst.is_unspecified());
        if !q.names_no_device_nor_source() || q.tos != 0 || !unicast || st.rules.customised {
            return None;
        }
        match st.probe_plain(st.fibs.merged.as_deref()?, dst) {
            Probe::Prepared(p) => Some(p),
            Probe::NoRoute | Probe::Full => None,
        }
    }

    fn plain_answer(st: &FamilyState<Self>, m: &Matched<Self>, dst: Self) -> RouteAnswer<Self> {
        let mut a = output_answer(st, m, dst, None);
        // A plain destination is unicast: the type is the route's, and no group is joined.
        type_flags(&mut a, false);
        a
    }

    fn plain_source<H>(
        st: &FamilyState<Self>,
        route: &Route<Self, H>,
        hop: Option<&NextHop<Self>>,
    ) -> SourceRule<Self> {
        output_source(st, route, hop)
    }

    fn hop_source(
        st: &FamilyState<Self>,
        dev: Option<IfIndex>,
        gateway: Option<Self>,
        scope: Scope,
    ) -> SourceRule<Self> {
        // `fib_info_update_nhc_saddr`: toward the gateway (or none), in the route's scope;
        // whatever the destination.
        SourceRule::Known(select_addr(&st.addrs, dev, gateway, scope))
    }

    fn check_source(source: Option<Self>, dev: Option<IfIndex>) -> Result<(), Errno> {
        leaves_by_lo_only(source, dev)
    }

    fn source_toward(st: &FamilyState<Self>, dev: Option<IfIndex>, dst: Self) -> Option<Self> {
        // Not asked: IPv4's sources do not follow the destination (`hop_source`).
        select_addr(&st.addrs, dev, Some(dst), SCOPE_LINK)
    }

    fn prepare(
        r: &Router,
        gateways: &mut GatewayMemo<Self>,
        spec: &mut RouteSpec<Self>,
    ) -> Result<(), ChangeError> {
        // `rtm_to_fib_config`, before `fib_create_info`.
        if spec.tos & 0x03 != 0 {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "Invalid dsfield (tos): ECN bits must be 0",
            ));
        }
        // fib_create_info: a scope below what the type needs (`fib_props`: nat's is nowhere,
        // so the kernel refuses nat routes but at scope nowhere), then, but for the reject
        // types (which it links before that check), one above host.
        let least = match spec.kind {
            RouteType::Local => SCOPE_HOST,
            RouteType::Broadcast | RouteType::Anycast => SCOPE_LINK,
            RouteType::Nat => SCOPE_NOWHERE,
            _ => SCOPE_UNIVERSE,
        };
        if spec.scope < least || (spec.scope > SCOPE_HOST && !spec.kind.is_reject()) {
            return Err(ChangeError::with(Errno::EINVAL, "Invalid scope"));
        }
        clamp_mtu(spec);
        // The kernel reads no RTA_SRC for IPv4 (`rtm_to_fib_config`): a `from` is dropped.
        spec.src = Prefix::new(Ipv4Addr::UNSPECIFIED, 0);
        // A gateway of 0.0.0.0 is none (`fc_gw_family` is set only for another), in a leg too.
        for hop in &mut spec.hops {
            hop.gateway = hop.gateway.filter(|g| !g.is_unspecified());
        }
        r.resolve_nhid(spec)?;
        if spec.nhid.is_some() {
            return check_prefsrc(r, spec).or_else(|e| {
                if shares_object_info(r, spec) {
                    Ok(())
                } else {
                    Err(e)
                }
            });
        }
        if spec.kind.is_reject() {
            if !spec.hops.is_empty() {
                return Err(ChangeError::with(
                    Errno::EINVAL,
                    "Gateway, device and multipath can not be specified for this route type",
                ));
            }
            return Ok(());
        }
        if spec.hops.is_empty() {
            // No device, no gateway: `fib_check_nh_nongw` finds no device, and says nothing.
            return Err(Errno::ENODEV.into());
        }
        if spec.scope == SCOPE_HOST {
            // A host-scope route names its device only: no gateway, no check that it is up.
            let [hop] = spec.hops.as_slice() else {
                return Err(ChangeError::with(
                    Errno::EINVAL,
                    "Route with host scope can not have multiple nexthops",
                ));
            };
            if hop.gateway.is_some() {
                return Err(ChangeError::with(
                    Errno::EINVAL,
                    "Route with host scope can not have a gateway",
                ));
            }
            let dev = hop.dev.ok_or(Errno::ENODEV)?;
            r.links.by_index(dev).ok_or(Errno::ENODEV)?;
            return check_prefsrc(r, spec);
        }
        for hop in spec.hops.iter_mut() {
            if let Some(gw) = hop.gateway {
                if hop.onlink {
                    if spec.scope >= SCOPE_LINK {
                        return Err(ChangeError::with(
                            Errno::EINVAL,
                            "Nexthop has invalid scope",
                        ));
                    }
                    if hop.dev.is_none() {
                        return Err(ChangeError::with(
                            Errno::ENODEV,
                            "Nexthop device required for onlink",
                        ));
                    }
                    r.check_hop_device(hop, "Nexthop device required for onlink")?;
                    // `inet_addr_type_dev_table` asks with no device (the device only picks an
                    // l3mdev's table): our own address, a broadcast or a loopback address is
                    // refused on any device.
                    if address_type(r, gw) != RouteType::Unicast {
                        return Err(ChangeError::with(
                            Errno::EINVAL,
                            "Nexthop has invalid gateway",
                        ));
                    }
                } else {
                    let key = GatewayKey {
                        gw,
                        dev: hop.dev,
                        scope: spec.scope,
                        table: spec.table,
                    };
                    let dev = gateways.get_or_check(key, || {
                        let found = gateway_route(r, gw, hop.dev, spec.scope, spec.table)?;
                        let hops = r.v4.nhs.get(found.route.hops);
                        Ok::<_, ChangeError>(hops.get(found.hop).and_then(|h| h.dev))
                    })?;
                    hop.dev = hop.dev.or(dev);
                }
            }
            if hop.gateway.is_some() {
                r.check_hop_device(hop, "Nexthop device required")?;
            } else {
                // `fib_check_nh_nongw`: `onlink` without a gateway first, no device is ENODEV,
                // unexplained, and a device down has words of its own (a gateway's says
                // "Nexthop device is not up").
                if hop.onlink {
                    return Err(ChangeError::with(
                        Errno::EINVAL,
                        "Invalid flags for nexthop - PERVASIVE and ONLINK can not be set",
                    ));
                }
                let link = hop.dev.and_then(|d| r.links.by_index(d));
                if !link.ok_or(Errno::ENODEV)?.up {
                    let words = "Device for nexthop is not up";
                    return Err(ChangeError::with(Errno::ENETDOWN, words));
                }
            }
        }
        check_prefsrc(r, spec)
    }

    fn matched_hops(st: &FamilyState<Self>, m: &Matched<Self>) -> AnswerHops<Self> {
        AnswerHops::from_slice(st.nhs.get(m.route.hops))
    }

    fn route_del(
        st: &mut FamilyState<Self>,
        table: TableId,
        sel: &RouteSelector<Self>,
    ) -> Result<(), ChangeError> {
        // A single-path delete's gateway of 0.0.0.0 is none (`rtm_to_fib_config`), compared
        // with nothing; a leg's is compared as given (`fib_nh_match` wants an IPv4 gateway).
        if sel.hops.len() <= 1 && sel.gateway.is_some_and(|g| g.is_unspecified()) {
            let mut sel = sel.clone();
            sel.gateway = None;
            for hop in &mut sel.hops {
                hop.gateway = None;
            }
            return Ok(st.delete(table, &sel)?);
        }
        Ok(st.delete(table, sel)?)
    }

    /// `fib_empty_table`: the lowest unused table id.
    fn unspecified_table(st: &FamilyState<Self>) -> Result<TableId, ChangeError> {
        Ok((1..)
            .find(|id| !st.tables.contains_key(id))
            .expect("fewer tables than ids"))
    }

    fn address_deleted(_: &mut FamilyState<Self>, _: &IfAddr<Self>) {
        // `fib_del_ifaddr`'s routes are the derived ones.
    }

    /// `inet_rtm_newaddr` on an address that is there: its metric (0 when none is given: the
    /// prefix route moves with the derived routes, as `fib_modify_prefix_metric` moves it) and
    /// its lifetimes; not its scope, broadcast or flags.
    fn replace_address(st: &mut FamilyState<Self>, at: usize, new: &IfAddr<Self>) -> IfAddr<Self> {
        let a = &mut Arc::make_mut(&mut st.addrs)[at];
        let before = a.clone();
        a.metric = new.metric;
        a.deprecated = new.deprecated;
        before
    }

    /// `fib_modify_prefix_metric` adds a prefix route at an address's new metric before it
    /// deletes at the old one.
    const DERIVED_ADDS_FIRST: bool = true;

    /// The metric `fib_magic` deletes at, `None` for any (it is given 0, and `fib_nh_match`
    /// checks no metric of 0):
    ///
    /// - the route's link went down or away: the kernel deletes nothing beyond what its flush
    ///   took, which fibre's flush took too, so the route's own metric (a multipath route
    ///   kept by a leg still up stays);
    /// - it is the prefix route of an address still there at another metric: the old one
    ///   (`fib_modify_prefix_metric`). So when the prefix route of metric 0 was replaced by
    ///   another route, the one just added goes, and the address keeps none (found by the
    ///   differential test, seed 1693: `addr replace 10.0.2.1/24 dev veth2 metric 300` after
    ///   `route replace 10.0.2.0/24 dev veth6`);
    /// - else the address that made it went, on a link that stays up: 0 (`fib_del_ifaddr`,
    ///   whatever the address's metric). An address of the same IP that stays (another
    ///   length, a secondary's primary) does not keep the route's metric.
    fn derived_delete_metric(
        st: &FamilyState<Self>,
        spec: &RouteSpec<Self>,
        links: &Links,
    ) -> Option<u32> {
        let dev = spec.hops.first().and_then(|h| h.dev);
        if !dev.is_some_and(|x| links.is_up(x)) {
            return Some(spec.metric);
        }
        let moved = st.addrs.iter().any(|a| {
            Some(a.dev) == dev
                && spec.prefsrc == Some(a.addr)
                && a.len < 32
                && spec.dst == a.subnet()
                && a.metric.unwrap_or(0) != spec.metric
        });
        (moved && spec.metric != 0).then_some(spec.metric)
    }

    fn address_replaced(_: &mut FamilyState<Self>, _: &IfAddr<Self>, _: usize, _: &Links) {}

    /// `fib_del_ifaddr`: an address gone takes with it the routes of main that name it as
    /// preferred source (`fib_sync_down_addr`) once the local table no longer calls it local.
    /// Its own local route went with it, but another device's, or any local route covering it
    /// (in main too while the local table is main's), keeps them.
    fn addresses_gone(r: &mut Router, before: &[IfAddr<Self>]) {
        let gone: Vec<Ipv4Addr> = before
            .iter()
            .filter(|a| !r.v4.addrs.contains(a))
            .map(|a| a.addr)
            .filter(|&a| address_type(r, a) != RouteType::Local)
            .collect();
        if !gone.is_empty() {
            r.v4.remove_where(|r, _| {
                r.table == TABLE_MAIN && r.prefsrc.is_some_and(|p| gone.contains(&p))
            });
        }
    }
}
