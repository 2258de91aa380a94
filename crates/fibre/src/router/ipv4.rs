//! IPv4 parts of the router: derived routes (`fib_add_ifaddr`), the merged fast path
//! (`fib_lookup` without custom rules), `ip_route_output_key_hash` / `ip_route_input_slow`, and the
//! next-hop checks of `fib_create_info`.
use super::*;
use crate::rib::AllUp;
use gateways::GatewayKey;
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

/// `inet_addr_type_dev_table`: what the local table makes of `a` (unicast when nothing there
/// claims it).
fn address_type(r: &Router, a: Ipv4Addr) -> RouteType {
    address_type_in(r, TABLE_LOCAL, a)
}

/// `inet_addr_type_table`: what table `table` makes of `a` (unicast when nothing there claims
/// it, broadcast when there is no such table: never a route's own, made before its checks).
fn address_type_in(r: &Router, table: TableId, a: Ipv4Addr) -> RouteType {
    if a.is_multicast() {
        return RouteType::Multicast;
    }
    if zeronet(a) || a.is_broadcast() {
        return RouteType::Broadcast;
    }
    let found = if table == TABLE_LOCAL {
        local_table_lookup(r, a)
    } else {
        match r.v4.tables.get(&table) {
            Some(t) => t.lookup(&Flow::to(a), &r.v4.nhs, &AllUp),
            None => return RouteType::Broadcast,
        }
    };
    match found {
        TableLookup::Match { route, .. } => route.kind,
        _ => RouteType::Unicast,
    }
}

/// `fib_valid_prefsrc`: a route's preferred source is local in the route's table (main's: the
/// local table) or else in the local table, unless the route is a local one to that address.
/// So an address of lo's 127/8 qualifies, and one whose local route was deleted does not.
fn valid_prefsrc(r: &Router, spec: &RouteSpec<Ipv4Addr>, p: Ipv4Addr) -> bool {
    let dst = spec.dst.addr();
    if spec.kind == RouteType::Local && !dst.is_unspecified() && dst == p {
        return true;
    }
    let table = if spec.table == TABLE_MAIN {
        TABLE_LOCAL
    } else {
        spec.table
    };
    address_type_in(r, table, p) == RouteType::Local
        || (table != TABLE_LOCAL && address_type_in(r, TABLE_LOCAL, p) == RouteType::Local)
}

/// `fib_create_info`'s check of the preferred source, after the next hops' (a route of a
/// reject type is never checked; one through a blackhole object is).
fn check_prefsrc(r: &Router, spec: &RouteSpec<Ipv4Addr>) -> Result<(), ChangeError> {
    match spec.prefsrc {
        Some(p) if !valid_prefsrc(r, spec, p) => {
            Err(ChangeError::with(Errno::EINVAL, "Invalid prefsrc address"))
        }
        _ => Ok(()),
    }
}

/// `fib_find_info_nh`: a route through a next-hop object whose table, protocol, scope,
/// preferred source, metric and type match a route already there (and that sets no metrics)
/// shares that route's `fib_info`, which `fib_create_info` then takes without a check: a
/// source that is no longer local passes. Asked only once the check failed (a walk of the
/// table).
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

/// A lookup of `a` in what `fib_get_table(net, RT_TABLE_LOCAL)` gives `__ip_dev_find` and
/// `inet_addr_type`: while no rule was ever changed, the local table is an alias of main's trie
/// (`fib_new_table`), so a longer route of main hides a local one (a unicast 127.1.0.0/16 makes
/// 127.1.2.3 no address of lo's), local's routes first at equal prefixes; after the first rule
/// change (`fib_unmerge`), the local table alone.
fn local_table_lookup(r: &Router, a: Ipv4Addr) -> TableLookup<Ipv4Addr> {
    let st = &r.v4;
    let flow = Flow::to(a);
    match (st.tables.get(&TABLE_LOCAL), st.tables.get(&TABLE_MAIN)) {
        (Some(local), Some(main)) if !st.rules.customised => {
            Rib::lookup_merged(local, main, &flow, &st.nhs, &AllUp)
        }
        (Some(local), _) => local.lookup(&flow, &st.nhs, &AllUp),
        (None, _) => TableLookup::None,
    }
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
                            0,
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

    fn prepare(
        r: &Router,
        gateways: &mut GatewayMemo<Self>,
        spec: &mut RouteSpec<Self>,
    ) -> Result<(), ChangeError> {
        // fib_create_info: a scope above host, or below what the type needs (`fib_props`).
        let least = match spec.kind {
            RouteType::Local => SCOPE_HOST,
            RouteType::Broadcast | RouteType::Anycast => SCOPE_LINK,
            _ => SCOPE_UNIVERSE,
        };
        if spec.scope > SCOPE_HOST || spec.scope < least {
            return Err(ChangeError::with(Errno::EINVAL, "Invalid scope"));
        }
        clamp_mtu(spec);
        if spec.tos & 0x03 != 0 {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "Invalid dsfield (tos): ECN bits must be 0",
            ));
        }
        if !spec.src.is_default() {
            return Err(ChangeError::with(
                Errno::EINVAL,
                "source prefixes are not supported for IPv4 routes",
            ));
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
            return Err(ChangeError::with(Errno::EINVAL, "Nexthop device required"));
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
            let dev = hop
                .dev
                .ok_or_else(|| ChangeError::with(Errno::EINVAL, "Nexthop device required"))?;
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
            r.check_hop_device(hop, "Nexthop device required")?;
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
        Ok(st.delete(table, sel)?)
    }

    /// `fib_empty_table`: the lowest unused table id.
    fn unspecified_table(st: &FamilyState<Self>) -> Result<TableId, ChangeError> {
        Ok((1..)
            .find(|id| !st.tables.contains_key(id))
            .expect("fewer tables than ids"))
    }

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

/// `fib_validate_source` with rp_filter off: a packet from one of our own addresses, or whose
/// source routes back to a non-unicast route, is a martian (EINVAL). `Ok(true)` where the
/// source is directly connected to the device the packet leaves by (the kernel's return of 1,
/// which makes a packet sent back out of its input device a redirect).
fn validate_source(r: &Router, flow: &Flow<Ipv4Addr>, out_dev: IfIndex) -> Result<bool, Errno> {
    let st = &r.v4;
    let s = flow.src.unwrap_or(Ipv4Addr::UNSPECIFIED);
    let in_dev = flow.iif.unwrap_or(LOOPBACK_IFINDEX);
    // Packets leaving by the device they came in on take the full check (send_redirects is on).
    if in_dev != out_dev && !st.rules.customised && !st.custom_local_routes {
        return if r.is_local_address(s) {
            Err(Errno::EINVAL)
        } else {
            Ok(false)
        };
    }
    let needs_ports = st
        .rules
        .iter()
        .any(|r| r.ipproto.is_some() || r.sport.is_some() || r.dport.is_some());
    let reverse = Flow {
        src: Some(flow.dst),
        iif: Some(if out_dev != 0 {
            out_dev
        } else {
            LOOPBACK_IFINDEX
        }),
        tos: flow.tos,
        ipproto: if needs_ports { flow.ipproto } else { 0 },
        sport: if needs_ports { flow.dport } else { 0 },
        dport: if needs_ports { flow.sport } else { 0 },
        ..Flow::to(s)
    };
    // The chosen leg of a unicast route, and whether it reaches `in_dev` without a gateway.
    let direct_on = |m: &Matched<Ipv4Addr>| {
        let hops = st.nhs.get(m.route.hops);
        let uses_dev = hops.iter().any(|h| h.dev == Some(in_dev));
        (
            uses_dev,
            hops.get(m.hop).is_some_and(|h| h.gateway.is_none()),
        )
    };
    let (iif_name, _) = r.names(reverse.iif, None);
    match Ipv4Addr::policy_lookup(st, &reverse, iif_name, None, &*r.links) {
        Ok(m) if m.route.kind != RouteType::Unicast => Err(Errno::EINVAL),
        Ok(m) => {
            let (uses_dev, direct) = direct_on(&m);
            if uses_dev {
                return Ok(direct);
            }
            // Again, restricted to the input device.
            let on_dev = Flow {
                oif: Some(in_dev),
                ..reverse
            };
            let (i, o) = r.names(on_dev.iif, on_dev.oif);
            Ok(match Ipv4Addr::policy_lookup(st, &on_dev, i, o, &AllUp) {
                Ok(m) if m.route.kind == RouteType::Unicast => direct_on(&m).1,
                _ => false,
            })
        }
        Err(_) => Ok(false),
    }
}

/// `__ip_dev_find`: the device that owns `a`, an address of a device or covered by a `local`
/// route of table local (127.1.2.3 is lo's; see [`local_table_lookup`]).
fn local_dev(r: &Router, a: Ipv4Addr) -> Option<IfIndex> {
    if let Some(x) = r.v4.addrs.iter().find(|x| x.addr == a) {
        return Some(x.dev);
    }
    match local_table_lookup(r, a) {
        TableLookup::Match { route, hop, .. } if route.kind == RouteType::Local => {
            r.v4.nhs.get(route.hops).get(hop).and_then(|h| h.dev)
        }
        _ => None,
    }
}

/// An answer built without a FIB entry.
fn no_fib(
    dst: Ipv4Addr,
    src: Option<Ipv4Addr>,
    kind: RouteType,
    dev: IfIndex,
    prefsrc: Option<Ipv4Addr>,
    iif: Option<IfIndex>,
) -> RouteAnswer<Ipv4Addr> {
    RouteAnswer {
        route: None,
        kind,
        cache: CacheFlags::default(),
        mark: 0,
        dst,
        src,
        gateway: None,
        dev: Some(dev),
        prefsrc,
        iif,
    }
}

/// `ip_route_output_key_hash_rcu` and `__mkroute_output`, in the kernel's order of checks.
fn route_output(
    r: &Router,
    q: &RouteQuery<Ipv4Addr>,
    dst: Ipv4Addr,
    src: Option<Ipv4Addr>,
) -> Result<RouteAnswer<Ipv4Addr>, Errno> {
    let st = &r.v4;
    let mc_or_lbcast = dst.is_multicast() || dst.is_broadcast();
    let mut shortcut = None;
    // Step 1: the source must be ours; to a group or the limited broadcast without an output
    // device, the packet leaves by the source's device, without a FIB lookup.
    if let Some(s) = src {
        if s.is_multicast() || s.is_broadcast() {
            return Err(Errno::EINVAL);
        }
        let owner = local_dev(r, s).ok_or(Errno::ENETUNREACH)?;
        if q.oif.is_none() && mc_or_lbcast {
            shortcut = Some(no_fib(dst, src, RouteType::Unicast, owner, None, None));
        }
    }
    // Step 2: an output device must be up; to link-local groups and the limited broadcast it is
    // the answer.
    if let Some(oif) = q.oif {
        let link = r.links.by_index(oif).ok_or(Errno::ENODEV)?;
        if !link.up {
            return Err(Errno::ENETUNREACH);
        }
        if local_multicast(dst) || dst.is_broadcast() {
            let prefsrc = src.or_else(|| r.select_source(Some(oif), dst));
            shortcut = Some(no_fib(dst, src, RouteType::Unicast, oif, prefsrc, None));
        }
    }
    // Step 3: 0.0.0.0 is this host.
    if shortcut.is_none() && dst.is_unspecified() {
        let prefsrc = src.or_else(|| {
            q.oif
                .and_then(|o| r.select_source_on(o))
                .or(Some(Ipv4Addr::LOCALHOST))
        });
        shortcut = Some(no_fib(
            dst,
            src,
            RouteType::Local,
            LOOPBACK_IFINDEX,
            prefsrc,
            None,
        ));
    }
    let mut a = match shortcut {
        Some(a) => a,
        // Step 4: the FIB, through the rules.
        None => {
            let flow = Flow {
                src,
                iif: Some(LOOPBACK_IFINDEX),
                oif: q.oif,
                mark: q.mark,
                tos: q.tos,
                ipproto: q.ipproto.unwrap_or(UDP),
                sport: q.sport.unwrap_or(0),
                dport: q.dport.unwrap_or(0),
                uid: q.uid.unwrap_or(0),
                ..Flow::to(dst)
            };
            let (iif_name, oif_name) = r.names(flow.iif, flow.oif);
            match Ipv4Addr::policy_lookup(st, &flow, iif_name, oif_name, &*r.links) {
                Ok(m) => {
                    let mut a = output_answer(st, &m, dst, src);
                    if dst.is_multicast() && m.route.dst.len() < 4 {
                        // A group reached through the default route goes on-link.
                        a.gateway = None;
                    }
                    a
                }
                // With an output device the kernel assumes the destination on that link.
                Err(_) if q.oif.is_some() => {
                    let oif = q.oif.expect("checked");
                    let prefsrc = src.or_else(|| r.select_source(Some(oif), dst));
                    no_fib(dst, src, RouteType::Unicast, oif, prefsrc, None)
                }
                Err(e) => return Err(e),
            }
        }
    };
    // Step 6 (`__mkroute_output`): a loopback source leaves by lo only; the destination's class
    // decides the type; the flags follow.
    if src.is_some_and(|s| s.is_loopback()) && a.dev != Some(LOOPBACK_IFINDEX) {
        return Err(Errno::EINVAL);
    }
    output_flags(&mut a, dst);
    Ok(a)
}

/// Step 5 of `route_output` on a matched route's answer: a local route's packets are delivered
/// through lo, from the route's source or to the destination itself.
fn output_answer(
    st: &FamilyState<Ipv4Addr>,
    m: &Matched<Ipv4Addr>,
    dst: Ipv4Addr,
    src: Option<Ipv4Addr>,
) -> RouteAnswer<Ipv4Addr> {
    let mut a = st.answer(m, dst, src, None);
    if m.route.kind == RouteType::Local {
        a.dev = Some(LOOPBACK_IFINDEX);
        a.gateway = None;
        a.prefsrc = st.source_to(&output_source(st, &m.route, None), dst);
    }
    a
}

/// How the source of an output answer follows from `route` and `hop` (see [`output_answer`]).
fn output_source<H>(
    st: &FamilyState<Ipv4Addr>,
    route: &Route<Ipv4Addr, H>,
    hop: Option<&NextHop<Ipv4Addr>>,
) -> SourceRule<Ipv4Addr> {
    match route.prefsrc {
        None if route.kind == RouteType::Local => SourceRule::Destination,
        Some(p) if route.kind == RouteType::Local => SourceRule::Known(Some(p)),
        _ => st.source_rule(route, hop),
    }
}

/// The rest of step 6 (`__mkroute_output`): the destination's class decides the type, and the
/// type the flags.
fn output_flags(a: &mut RouteAnswer<Ipv4Addr>, dst: Ipv4Addr) {
    if dst.is_broadcast() {
        a.kind = RouteType::Broadcast;
    } else if dst.is_multicast() {
        a.kind = RouteType::Multicast;
    }
    type_flags(a, joined(dst));
}

/// The flags of an output answer's type; `joined`: the destination is a group every device
/// joined.
fn type_flags(a: &mut RouteAnswer<Ipv4Addr>, joined: bool) {
    a.cache.local = a.dev == Some(LOOPBACK_IFINDEX);
    match a.kind {
        RouteType::Broadcast => {
            a.gateway = None;
            a.cache.local = true;
            a.cache.broadcast = true;
        }
        RouteType::Multicast => {
            a.cache.multicast = true;
            a.cache.local |= joined;
        }
        _ => {}
    }
}

/// `ip_route_input_rcu`: `ip_route_input_mc` for groups, else `ip_route_input_slow`. Since Linux
/// 6.13 every failure of the input path is EINVAL, but for a route's own error.
fn route_input(
    r: &Router,
    q: &RouteQuery<Ipv4Addr>,
    dst: Ipv4Addr,
    src: Option<Ipv4Addr>,
    iif: IfIndex,
) -> Result<RouteAnswer<Ipv4Addr>, Errno> {
    let st = &r.v4;
    r.links.by_index(iif).ok_or(Errno::ENODEV)?;
    let s = src.unwrap_or(Ipv4Addr::UNSPECIFIED);
    let ports = matches!(q.ipproto.unwrap_or(UDP), 6 | 17);
    let flow = Flow {
        src: Some(s),
        iif: Some(iif),
        mark: q.mark,
        tos: q.tos,
        ipproto: q.ipproto.unwrap_or(UDP),
        sport: if ports { q.sport.unwrap_or(0) } else { 0 },
        dport: if ports { q.dport.unwrap_or(0) } else { 0 },
        uid: 0,
        ..Flow::to(dst)
    };
    let delivered = |kind: RouteType| {
        let mut a = no_fib(dst, src, kind, LOOPBACK_IFINDEX, None, Some(iif));
        a.cache.local = true;
        a
    };
    // Groups: the input device must have joined it (`ip_check_mc_rcu`; no multicast routing).
    if dst.is_multicast() {
        if !joined(dst) || !r.links.is_up(iif) {
            return Err(Errno::EINVAL);
        }
        // `ip_mc_validate_source`.
        if s.is_multicast() || s.is_broadcast() || s.is_loopback() {
            return Err(Errno::EINVAL);
        }
        if s.is_unspecified() {
            if !local_multicast(dst) {
                return Err(Errno::EINVAL);
            }
        } else {
            validate_source(
                r,
                &Flow {
                    dst: Ipv4Addr::UNSPECIFIED,
                    ..flow
                },
                0,
            )?;
        }
        let mut a = delivered(RouteType::Multicast);
        a.cache.multicast = true;
        return Ok(a);
    }
    if s.is_multicast() || s.is_broadcast() {
        return Err(Errno::EINVAL);
    }
    let broadcast_in = |a: RouteAnswer<Ipv4Addr>| -> Result<RouteAnswer<Ipv4Addr>, Errno> {
        // `ip_route_input_slow`'s brd_input checks a source as if toward 0.0.0.0.
        if !s.is_unspecified() {
            validate_source(
                r,
                &Flow {
                    dst: Ipv4Addr::UNSPECIFIED,
                    ..flow
                },
                0,
            )?;
        }
        Ok(RouteAnswer {
            kind: RouteType::Broadcast,
            dev: Some(LOOPBACK_IFINDEX),
            gateway: None,
            prefsrc: None,
            cache: CacheFlags {
                local: true,
                broadcast: true,
                ..CacheFlags::default()
            },
            ..a
        })
    };
    if dst.is_broadcast() || (s.is_unspecified() && dst.is_unspecified()) {
        return broadcast_in(delivered(RouteType::Broadcast));
    }
    if s.is_unspecified() || dst.is_unspecified() || dst.is_loopback() || s.is_loopback() {
        return Err(Errno::EINVAL);
    }
    let (iif_name, _) = r.names(Some(iif), None);
    let m = Ipv4Addr::policy_lookup(st, &flow, iif_name, None, &*r.links)?;
    let mut a = st.answer(&m, dst, Some(s), Some(iif));
    a.prefsrc = None;
    match m.route.kind {
        RouteType::Broadcast => return broadcast_in(a),
        RouteType::Local => {
            validate_source(r, &flow, 0)?;
            a.dev = Some(LOOPBACK_IFINDEX);
            a.gateway = None;
            a.cache.local = true;
        }
        RouteType::Unicast => {
            // The check depends on the leg the flow hash picks (S-class): fibre accepts the
            // packet if some usable leg passes, and reports the leg it answers with.
            // A packet sent back out of its input device to a source on that link is redirected.
            let mut passed = false;
            for d in st.nhs.get(m.route.hops).iter().filter_map(|h| h.dev) {
                if !r.links.is_up(d) {
                    continue;
                }
                if let Ok(direct) = validate_source(r, &flow, d) {
                    passed = true;
                    if a.dev == Some(d) {
                        a.cache.redirect = d == iif && direct;
                    }
                }
            }
            if !passed {
                return Err(Errno::EINVAL);
            }
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(a)
}
