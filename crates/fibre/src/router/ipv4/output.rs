//! IPv4 `route get`: the output path (`ip_route_output_key_hash_rcu`, `__mkroute_output`), the
//! input path (`ip_route_input_slow`) and the source check between them (`fib_validate_source`).
use super::*;
use local::local_dev;

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
pub(super) fn route_output(
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
    // the answer. To another group the source is chosen on it now, before the FIB lookup, so
    // that the rules see it (`inet_select_addr(dev_out, 0, RT_SCOPE_UNIVERSE)`), and it is the
    // answer's source whatever route is found.
    let mut chosen = None;
    if let Some(oif) = q.oif {
        let link = r.links.by_index(oif).ok_or(Errno::ENODEV)?;
        if !link.up {
            return Err(Errno::ENETUNREACH);
        }
        if local_multicast(dst) || dst.is_broadcast() {
            let prefsrc = src.or_else(|| select_addr(&st.addrs, Some(oif), None, SCOPE_LINK));
            shortcut = Some(no_fib(dst, src, RouteType::Unicast, oif, prefsrc, None));
        } else if src.is_none() && dst.is_multicast() {
            chosen = select_addr(&st.addrs, Some(oif), None, SCOPE_UNIVERSE);
        }
    }
    // Step 3: 0.0.0.0 is this host.
    if shortcut.is_none() && dst.is_unspecified() {
        let prefsrc = src.or_else(|| {
            q.oif
                .and_then(|o| select_addr(&st.addrs, Some(o), None, SCOPE_HOST))
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
                src: src.or(chosen),
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
                    if chosen.is_some() {
                        a.prefsrc = chosen;
                    }
                    a
                }
                // With an output device the kernel assumes the destination on that link.
                Err(_) if q.oif.is_some() => {
                    let oif = q.oif.expect("checked");
                    let prefsrc = src
                        .or(chosen)
                        .or_else(|| select_addr(&st.addrs, Some(oif), None, SCOPE_LINK));
                    no_fib(dst, src, RouteType::Unicast, oif, prefsrc, None)
                }
                Err(e) => return Err(e),
            }
        }
    };
    // Step 6 (`__mkroute_output`): a loopback source leaves by lo only; the destination's class
    // decides the type; the flags follow.
    leaves_by_lo_only(src.or(a.prefsrc), a.dev)?;
    output_flags(&mut a, dst);
    Ok(a)
}

/// The first check of `__mkroute_output`: a packet from a loopback address, given or chosen (a
/// route's own, or an address of lo chosen for a host-scope route), leaves by lo only.
pub(super) fn leaves_by_lo_only(
    source: Option<Ipv4Addr>,
    dev: Option<IfIndex>,
) -> Result<(), Errno> {
    if source.is_some_and(|s| s.is_loopback()) && dev != Some(LOOPBACK_IFINDEX) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Step 5 of `route_output` on a matched route's answer: a local route's packets are delivered
/// through lo, from the route's source or to the destination itself.
pub(super) fn output_answer(
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
pub(super) fn output_source<H>(
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
pub(super) fn type_flags(a: &mut RouteAnswer<Ipv4Addr>, joined: bool) {
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
pub(super) fn route_input(
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
