//! IPv6 parts of the router: derived routes (addrconf), lookups (`ip6_route_output_flags`,
//! `ip6_route_input_lookup` through `fib6_rule_lookup`) and gateway checks (`ip6_validate_gw`).
use super::*;
use plain::Probe;
mod prefix_route;
mod source;
use source::{sole_source, source_toward};

/// What the kernel says to an IPv6 multipath route with a leg without a gateway.
pub(crate) const DEVICE_ONLY_LEG: &str =
    "Device only routes can not be added for IPv6 using the multipath API";

fn is_link_local(a: &Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// `ip6_route_info_create`'s check of the preferred source, after the next hop's:
/// `ipv6_chk_addr` with the next hop's device `dev`, where a link-local or loopback address
/// counts only on that device (a global one on any; `None`: on any).
fn check_prefsrc(
    r: &Router,
    prefsrc: Option<Ipv6Addr>,
    dev: Option<IfIndex>,
) -> Result<(), ChangeError> {
    let Some(p) = prefsrc else {
        return Ok(());
    };
    let narrow = is_link_local(&p) || p.is_loopback();
    let on = |a: &IfAddr<Ipv6Addr>| a.addr == p && (!narrow || dev.is_none_or(|d| a.dev == d));
    if r.v6.addrs.iter().any(on) {
        Ok(())
    } else {
        Err(ChangeError::with(Errno::EINVAL, "Invalid source address"))
    }
}

/// `rt6_need_strict`: such destinations must be reached by a route on the given device.
fn need_strict(a: &Ipv6Addr) -> bool {
    is_link_local(a) || a.is_multicast() || a.is_loopback()
}

/// `ip6_validate_gw`, in its order: a gateway is not one of this host's addresses (a
/// link-local one: of the hop's device; checked first where the hop names its device, else
/// once the lookup found one); unless link-local it is unicast and, unless `onlink`, resolves,
/// in `table` first (none for `TABLE_UNSPEC`) and then by a full lookup, to a route without
/// gateway on the hop's device, which is returned; the device is not `lo`.
fn check_gateway(
    r: &Router,
    gw: Ipv6Addr,
    hop: &NextHop<Ipv6Addr>,
    table: TableId,
) -> Result<Option<IfIndex>, ChangeError> {
    let link_local = is_link_local(&gw);
    // `ipv6_chk_addr_and_flags`, which skips the device unless the address is link-local.
    let local_on = |dev: IfIndex| {
        r.v6.addrs
            .iter()
            .any(|a| a.addr == gw && (!link_local || a.dev == dev))
    };
    let local = || ChangeError::with(Errno::EINVAL, "Gateway can not be a local address");
    if hop.dev.is_some_and(local_on) {
        return Err(local());
    }
    let resolved = if link_local {
        None
    } else if gw.is_unspecified() || gw.is_multicast() {
        // `ipv6_addr_type`: neither unicast nor IPv4-mapped.
        return Err(ChangeError::with(Errno::EINVAL, "Invalid gateway address"));
    } else if hop.onlink {
        None
    } else {
        Some(resolve_gateway(r, gw, hop, table)?)
    };
    match resolved.or(hop.dev) {
        // The caller says "Egress device not specified".
        None => {}
        Some(LOOPBACK_IFINDEX) => {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "Egress device can not be loopback device for this route",
            ))
        }
        Some(dev) if hop.dev.is_none() && local_on(dev) => return Err(local()),
        Some(_) => {}
    }
    Ok(resolved)
}

/// `ip6_route_check_nh`: the device of the route without gateway that `gw` resolves to, in
/// `table` first (none for `TABLE_UNSPEC`) and then by a full lookup; the hop's, if it names
/// one.
fn resolve_gateway(
    r: &Router,
    gw: Ipv6Addr,
    hop: &NextHop<Ipv6Addr>,
    table: TableId,
) -> Result<IfIndex, ChangeError> {
    let st = &r.v6;
    let flow = Flow {
        oif: hop.dev,
        iif: Some(LOOPBACK_IFINDEX),
        strict_oif: true,
        ..Flow::to(gw)
    };
    let direct = |m: &Matched<Ipv6Addr>| {
        let h = st.nhs.get(m.route.hops).first().copied();
        (!m.route.kind.is_reject() && h.is_some_and(|h| h.gateway.is_none()))
            .then(|| h.and_then(|h| h.dev))
            .flatten()
    };
    let in_table = (table != TABLE_UNSPEC)
        .then(|| st.tables.get(&table))
        .flatten()
        .and_then(|t| match t.lookup(&flow, &st.nhs, &*r.links) {
            TableLookup::Match {
                route,
                hop,
                siblings,
            } => direct(&Matched {
                table,
                route,
                hop,
                siblings,
            }),
            _ => None,
        });
    let dev = match in_table {
        Some(d) => d,
        None => {
            let (i, o) = r.names(flow.iif, flow.oif);
            let m = Ipv6Addr::policy_lookup(st, &flow, i, o, &*r.links)
                .map_err(|_| Errno::EHOSTUNREACH)?;
            direct(&m).ok_or(Errno::EHOSTUNREACH)?
        }
    };
    if hop.dev.is_some_and(|d| d != dev) {
        return Err(Errno::EHOSTUNREACH.into());
    }
    Ok(dev)
}

impl family::Kernel for Ipv6Addr {
    const ICMP: u8 = 58;
    const BLACKHOLE_LO_DOWN: &'static str = "Nexthop device is not up";
    const FOREIGN_OBJECT: Option<&'static str> = Some("IPv6 routes can not use an IPv4 nexthop");

    fn check_object_hop(r: &Router, hop: &mut NextHop<Self>) -> Result<Scope, ChangeError> {
        if let Some(gw) = hop.gateway {
            // A next hop outside a VRF has no table (`l3mdev_fib_table`): straight to the
            // lookup through the rules.
            check_gateway(r, gw, hop, TABLE_UNSPEC)?;
        }
        Ok(SCOPE_LINK)
    }

    fn check_route_through(
        _scope: Scope,
        _obj: &NhObject<Self>,
        _first: Option<&NextHop<Self>>,
    ) -> Result<(), ChangeError> {
        // IPv6 has no scope to check against the object's.
        Ok(())
    }
    fn state(r: &Router) -> &FamilyState<Self> {
        &r.v6
    }
    fn state_mut(r: &mut Router) -> &mut FamilyState<Self> {
        &mut r.v6
    }
    fn wrap(c: FamilyChange<Self>) -> Change {
        Change::Inet6(c)
    }

    fn derive(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<RouteSpec<Self>> {
        let mut out: Vec<RouteSpec<Self>> = Vec::new();
        for a in addrs {
            if links.by_index(a.dev).is_none() {
                continue;
            }
            out.push(kernel_route(
                TABLE_LOCAL,
                Prefix::host(a.addr),
                RouteType::Local,
                a.dev,
                0,
            ));
            if a.len < 127 {
                // Subnet-router anycast (the router forwards).
                out.push(kernel_route(
                    TABLE_LOCAL,
                    Prefix::host(a.subnet().addr()),
                    RouteType::Anycast,
                    a.dev,
                    0,
                ));
            }
        }
        for link in links
            .iter()
            .filter(|l| l.v6_configured && l.kind != LinkKind::Loopback)
        {
            let ff00 = Prefix::new(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8);
            out.push(kernel_route(
                TABLE_LOCAL,
                ff00,
                RouteType::Multicast,
                link.index,
                256,
            ));
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
        // IPv6's fast path (local, then main) answers exactly as the default rules do.
        st.walk_rules(flow, &FlowNames { iif, oif }, links)
    }

    /// `inet6_addr_add` and `ipv6_add_addr`: no unspecified, multicast (without
    /// `IFA_F_MCAUTOJOIN`, which fibre does not take) or loopback address but on `lo`.
    fn check_address(a: &IfAddr<Self>, kind: Option<&LinkKind>) -> Result<(), ChangeError> {
        if a.addr.is_multicast() {
            return Err(ChangeError::with(
                Errno::EADDRNOTAVAIL,
                "ipv6: Cannot assign multicast address without \"IFA_F_MCAUTOJOIN\" flag",
            ));
        }
        if a.addr.is_unspecified() {
            return Err(ChangeError::with(
                Errno::EADDRNOTAVAIL,
                "ipv6: Invalid address",
            ));
        }
        if a.addr.is_loopback() && kind != Some(&LinkKind::Loopback) {
            return Err(ChangeError::with(
                Errno::EADDRNOTAVAIL,
                "ipv6: Cannot assign loopback address on this device",
            ));
        }
        Ok(())
    }

    fn route_get(r: &Router, q: &RouteQuery<Self>) -> Result<RouteAnswer<Self>, Errno> {
        if let Some(p) = Self::prepared_answer(r, q) {
            // Built in place (see IPv4's).
            return p.answer_to(&r.v6, q.dst, 0);
        }
        let dst = q.dst;
        let src = q.src.filter(|s| !s.is_unspecified());
        let strict_dst = need_strict(&dst);
        let flow = if let Some(iif) = q.iif {
            r.links.by_index(iif).ok_or(Errno::ENODEV)?;
            Flow {
                src,
                iif: Some(iif),
                mark: q.mark,
                tos: q.tos,
                ipproto: q.ipproto.unwrap_or(0),
                sport: q.sport.unwrap_or(0),
                dport: q.dport.unwrap_or(0),
                // Forwarded packets belong to nobody (INVALID_UID) unless the query names one.
                uid: q.uid.unwrap_or(u32::MAX),
                strict_oif: strict_dst,
                input: true,
                ..Flow::to(dst)
            }
        } else {
            Flow {
                src,
                iif: Some(LOOPBACK_IFINDEX),
                oif: q.oif,
                mark: q.mark,
                tos: q.tos,
                ipproto: q.ipproto.unwrap_or(0),
                sport: q.sport.unwrap_or(0),
                dport: q.dport.unwrap_or(0),
                uid: q.uid.unwrap_or(0),
                strict_oif: strict_dst || (q.oif.is_some() && src.is_none()),
                ..Flow::to(dst)
            }
        };
        let (iif_name, oif_name) = r.names(flow.iif, flow.oif);
        let m = Self::policy_lookup(&r.v6, &flow, iif_name, oif_name, &*r.links)?;
        if q.iif.is_some() && m.route.dst.addr().is_multicast() && !r.without_ipv6_mroute {
            // `rt6_fill_node` asks multicast routing (`ip6mr_get_route`) for a forwarded
            // packet to a group; without a multicast route the reply cannot be built:
            // EMSGSIZE. A kernel built without multicast routing skips that and answers.
            return Err(Errno::EMSGSIZE);
        }
        let mut a = r.v6.answer(&m, dst, src, q.iif);
        if q.iif.is_some() {
            // `rt6_fill_node`: a forwarded packet's answer shows the route's own source only.
            a.prefsrc = m.route.prefsrc;
        }
        Ok(a)
    }

    /// Local's FIB leaves the destination to main's, and main's answers with a prepared
    /// answer (a destination without `rt6_need_strict`: IPv6 ignores TOS but in rules).
    #[inline]
    fn prepared_answer<'r>(r: &'r Router, q: &RouteQuery<Self>) -> Option<&'r Prepared<Self>> {
        let st = &r.v6;
        // `::` chooses its source among the route's device's addresses only (`source::sole_source`).
        if !q.names_no_device_nor_source()
            || need_strict(&q.dst)
            || q.dst.is_unspecified()
            || st.rules.customised
        {
            return None;
        }
        // The default rules: local, then main.
        for table in [TABLE_LOCAL, TABLE_MAIN] {
            match st.probe_plain(st.fibs.tables.get(&table)?, q.dst) {
                Probe::NoRoute => continue,
                Probe::Prepared(p) => return Some(p),
                Probe::Full => return None,
            }
        }
        None
    }

    fn plain_answer(st: &FamilyState<Self>, m: &Matched<Self>, dst: Self) -> RouteAnswer<Self> {
        st.answer(m, dst, None, None)
    }

    fn plain_source<H>(
        st: &FamilyState<Self>,
        route: &Route<Self, H>,
        hop: Option<&NextHop<Self>>,
    ) -> SourceRule<Self> {
        match st.source_rule(route, hop) {
            SourceRule::Toward(dev) => match sole_source(&st.addrs) {
                Some(known) => SourceRule::Known(known),
                None => SourceRule::Toward(dev),
            },
            rule => rule,
        }
    }

    fn hop_source(
        _st: &FamilyState<Self>,
        dev: Option<IfIndex>,
        _gateway: Option<Self>,
        _scope: Scope,
    ) -> SourceRule<Self> {
        // `ip6_route_get_saddr`: toward the destination, whatever the gateway.
        SourceRule::Toward(dev)
    }

    fn check_source(_source: Option<Self>, _dev: Option<IfIndex>) -> Result<(), Errno> {
        Ok(())
    }

    fn source_toward(st: &FamilyState<Self>, dev: Option<IfIndex>, dst: Self) -> Option<Self> {
        source_toward(&st.addrs, dev, dst)
    }

    fn prepare(
        r: &Router,
        gateways: &mut GatewayMemo<Self>,
        spec: &mut RouteSpec<Self>,
    ) -> Result<(), ChangeError> {
        // IPv6 routes have no scope: whatever was given is dropped.
        spec.scope = SCOPE_UNIVERSE;
        clamp_mtu(spec);
        if spec.tos != 0 {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "Invalid dsfield (tos): option not available for IPv6",
            ));
        }
        // Every leg of a multipath route needs a gateway, whatever the route's type, before
        // any leg is made (the kernel checks the request's legs first: 6.18 refuses one
        // without a gateway even after a leg whose gateway is unreachable). A multipath route
        // of one leg looks like a plain route here: the parser refuses that one.
        if spec.nhid.is_none()
            && spec.hops.len() > 1
            && spec.hops.iter().any(|h| h.gateway.is_none())
        {
            return Err(ChangeError::with(Errno::EINVAL, DEVICE_ONLY_LEG));
        }
        r.resolve_nhid(spec)?;
        if spec.nhid.is_some() {
            return check_prefsrc(r, spec.prefsrc, None);
        }
        if spec.kind.is_reject() {
            // `fib6_nh_init` puts a reject route on lo whatever its gateway and device said
            // (and checks neither); each leg of a multipath one is such a route, so the second
            // is the first's copy, and none stays (`ip6_route_multipath_add`).
            if spec.hops.len() > 1 {
                return Err(Errno::EEXIST.into());
            }
            spec.hops.clear();
            // A reject route's next hop is lo (`fib6_nh_init`).
            return check_prefsrc(r, spec.prefsrc, Some(LOOPBACK_IFINDEX));
        }
        if spec.hops.is_empty() {
            // No device, no gateway: `fib6_nh_init` finds no device, and says nothing.
            return Err(Errno::ENODEV.into());
        }
        for hop in spec.hops.iter_mut() {
            if let Some(gw) = hop.gateway {
                // A check that walks the RIB is remembered (`gateways`: what can change its
                // answer forgets it), as IPv4's; link-local and onlink gateways walk nothing.
                // It was a tenth of an IPv6 route change (callgrind).
                let dev = if is_link_local(&gw) || hop.onlink {
                    check_gateway(r, gw, hop, spec.table)?
                } else {
                    let key = gateways::GatewayKey {
                        gw,
                        dev: hop.dev,
                        scope: SCOPE_UNIVERSE,
                        table: spec.table,
                    };
                    gateways.get_or_check(key, || check_gateway(r, gw, hop, spec.table))?
                };
                hop.dev = dev.or(hop.dev);
            }
            r.check_hop_device(hop, "Egress device not specified")?;
            // Each leg is made, its source checked, before the next (`ip6_route_multipath_add`).
            check_prefsrc(r, spec.prefsrc, hop.dev)?;
        }
        Ok(())
    }

    fn matched_hops(st: &FamilyState<Self>, m: &Matched<Self>) -> AnswerHops<Self> {
        // The siblings the lookup found in the route's list (no walk to find them again).
        if m.siblings.is_empty() {
            return AnswerHops::from_slice(st.nhs.get(m.route.hops));
        }
        m.siblings
            .iter()
            .flat_map(|&id| st.nhs.get(id).iter().copied())
            .collect()
    }

    /// `ip6_route_multipath_del`: every leg is deleted like a single route of that gateway and
    /// device; the last failure is reported, and the legs deleted before it stay deleted.
    fn route_del(
        st: &mut FamilyState<Self>,
        table: TableId,
        sel: &RouteSelector<Self>,
    ) -> Result<(), ChangeError> {
        if sel.hops.is_empty() {
            return Ok(st.delete(table, sel)?);
        }
        let mut last = None;
        let mut any = false;
        for h in &sel.hops {
            let leg = RouteSelector {
                hops: vec![],
                dev: h.dev,
                gateway: h.gateway,
                leg: true,
                ..sel.clone()
            };
            match st.delete(table, &leg) {
                Ok(()) => any = true,
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => Err(ChangeError {
                partial: any,
                ..ChangeError::new(e)
            }),
            None => Ok(()),
        }
    }

    fn unspecified_table(_: &FamilyState<Self>) -> Result<TableId, ChangeError> {
        Err(ChangeError::with(Errno::EINVAL, "Invalid table"))
    }

    fn owned_routes(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<(Self, RouteSpec<Self>)> {
        addrs
            .iter()
            .filter_map(|a| Some((a.addr, prefix_route::of(links, a)?)))
            .collect()
    }

    fn address_deleted(st: &mut FamilyState<Self>, gone: &IfAddr<Self>) {
        prefix_route::deleted(st, gone);
    }

    /// `inet6_addr_modify`: the lifetimes and flags (`noprefixroute`) are the new ones, and the
    /// metric where one other than 0 is given.
    fn replace_address(st: &mut FamilyState<Self>, at: usize, new: &IfAddr<Self>) -> IfAddr<Self> {
        let a = &mut Arc::make_mut(&mut st.addrs)[at];
        let before = a.clone();
        a.deprecated = new.deprecated;
        a.noprefixroute = new.noprefixroute;
        if new.metric.is_some_and(|m| m != 0) {
            a.metric = new.metric;
        }
        before
    }

    /// The kernel deletes a derived IPv6 route by the route itself, once it is gone.
    const DERIVED_ADDS_FIRST: bool = false;
    fn derived_delete_metric(
        _: &FamilyState<Self>,
        spec: &RouteSpec<Self>,
        _: &Links,
    ) -> Option<u32> {
        Some(spec.metric)
    }

    fn address_replaced(
        st: &mut FamilyState<Self>,
        before: &IfAddr<Self>,
        at: usize,
        links: &Links,
    ) {
        let now = st.addrs[at].clone();
        prefix_route::modified(st, before, &now, links);
    }

    /// `rt6_remove_prefsrc`: routes through a device forget a source address the device lost.
    fn addresses_gone(r: &mut Router, before: &[IfAddr<Self>]) {
        let st = &mut r.v6;
        for a in before.iter().filter(|a| !st.addrs.contains(a)) {
            let nhs = &st.nhs;
            for (id, rib) in st.tables.iter_mut() {
                let mut saved = Vec::new();
                rib.modify_where(
                    |r| {
                        r.prefsrc == Some(a.addr)
                            && nhs.get(r.hops).iter().any(|h| h.dev == Some(a.dev))
                    },
                    |r| r.prefsrc = None,
                    &mut saved,
                );
                st.journal.extend(*id, saved);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::io::iproute2::Batch;
    use crate::Router;

    /// A forwarded packet to a group: EMSGSIZE from a kernel built with IPv6 multicast routing
    /// (the default model), the multicast route from one built without it (the kernel
    /// differential tests check each against the kernel they run on).
    #[test]
    fn a_group_with_iif_answers_as_the_kernel_build_does() {
        let setup = "link set lo up\nlink add va type veth peer name vb\nlink set va up\n\
                     link set vb up\naddr add 2001:db8:1::1/64 dev va nodad\n";
        let query = "route get ff02::1 from 2001:db8:1::9 iif va\n";
        for built_in in [true, false] {
            let mut router = Router::new();
            router.set_ipv6_multicast_routing(built_in);
            let mut b = Batch::new(router);
            assert!(b.run_text(setup).success());
            let out = b.run_text(query);
            if built_in {
                assert!(!out.success(), "{}", out.stdout);
                assert!(out.stderr.contains("Message too long"), "{}", out.stderr);
            } else {
                assert!(out.success(), "{}", out.stderr);
                assert!(
                    out.stdout
                        .starts_with("multicast ff02::1 from 2001:db8:1::9 dev va table local"),
                    "{}",
                    out.stdout
                );
            }
        }
    }
}
