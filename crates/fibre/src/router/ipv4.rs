//! IPv4 parts of the router: derived routes (`fib_add_ifaddr`), the merged fast path
//! (`fib_lookup` without custom rules), `ip_route_output_key_hash` / `ip_route_input_slow`, and the
//! next-hop checks of `fib_create_info`.
use super::*;
use crate::rib::AllUp;

/// IPv4 route queries without `ipproto` are asked as UDP (`inet_rtm_getroute` builds a UDP
/// packet); IPv6 ones carry protocol 0.
const UDP: u8 = 17;

fn zeronet(a: Ipv4Addr) -> bool {
    a.octets()[0] == 0
}

fn kernel_route(
    table: TableId,
    dst: Prefix<Ipv4Addr>,
    kind: RouteType,
    scope: Scope,
    prefsrc: Ipv4Addr,
    dev: IfIndex,
    metric: u32,
) -> RouteSpec<Ipv4Addr> {
    RouteSpec {
        table,
        kind,
        scope,
        prefsrc: Some(prefsrc),
        metric,
        protocol: PROTO_KERNEL,
        ..RouteSpec::new(dst, vec![NextHop::dev(dev)])
    }
}

impl RouterFamily for Ipv4Addr {
    fn state(r: &Router) -> &FamilyState<Self> {
        &r.v4
    }
    fn state_mut(r: &mut Router) -> &mut FamilyState<Self> {
        &mut r.v4
    }

    fn derive(links: &Links, addrs: &[IfAddr<Self>]) -> Vec<RouteSpec<Self>> {
        let mut out: Vec<RouteSpec<Self>> = Vec::new();
        let mut push = |s: RouteSpec<Self>| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
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
            push(kernel_route(
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
                push(kernel_route(
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
                        kernel_route(
                            TABLE_LOCAL,
                            subnet,
                            RouteType::Local,
                            SCOPE_HOST,
                            a.addr,
                            a.dev,
                            0,
                        )
                    } else {
                        kernel_route(
                            TABLE_MAIN,
                            subnet,
                            RouteType::Unicast,
                            SCOPE_LINK,
                            a.addr,
                            a.dev,
                            a.metric.unwrap_or(0),
                        )
                    };
                    push(spec);
                }
                if a.len < 31 {
                    push(kernel_route(
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

    fn policy_lookup<'a>(
        st: &'a FamilyState<Self>,
        flow: &Flow<Self>,
        iif: Option<&str>,
        oif: Option<&str>,
        links: &dyn LinkState,
    ) -> Result<Matched<'a, Self>, Errno> {
        if st.rules.customised {
            return st.walk_rules(flow, &FlowNames { iif, oif }, links);
        }
        // Fast path: local and main are one trie, reported as table main; then, if main has
        // nothing (or throws), the default table, if it exists.
        let (local, main) = (&st.tables[&TABLE_LOCAL], &st.tables[&TABLE_MAIN]);
        let default = st.tables.get(&TABLE_DEFAULT);
        let merged = st
            .fib_lookup_merged(flow, links)
            .unwrap_or_else(|| Rib::lookup_merged(local, main, flow, &st.nhs, links));
        let (table, result) = match merged {
            TableLookup::None
            | TableLookup::Reject {
                errno: Errno::EAGAIN,
                ..
            } if default.is_some() => (
                TABLE_DEFAULT,
                default.expect("guarded").lookup(flow, &st.nhs, links),
            ),
            other => (TABLE_MAIN, other),
        };
        match result {
            TableLookup::Match { route, hop, list } => Ok(Matched {
                table,
                route,
                hop,
                list,
            }),
            TableLookup::Reject { errno, .. } if errno != Errno::EAGAIN => Err(errno),
            _ => Err(Errno::ENETUNREACH),
        }
    }

    fn route_get(
        r: &Router,
        q: &RouteQuery,
        dst: Self,
        src: Option<Self>,
    ) -> Result<RouteAnswer<Self>, Errno> {
        let st = &r.v4;
        let dissect_ports = |p: Option<u8>| matches!(p, Some(6) | Some(17));
        if let Some(iif) = q.iif {
            // ip_route_input_slow.
            r.links.by_index(iif).ok_or(Errno::ENODEV)?;
            let s = src.unwrap_or(Ipv4Addr::UNSPECIFIED);
            if s.is_multicast() || s.is_broadcast() {
                return Err(Errno::EINVAL);
            }
            if dst.is_broadcast() || (s.is_unspecified() && dst.is_unspecified()) {
                return Err(Errno::EHOSTUNREACH);
            }
            if zeronet(s) || zeronet(dst) || dst.is_loopback() || s.is_loopback() {
                return Err(Errno::EINVAL);
            }
            let ports = dissect_ports(Some(q.ipproto.unwrap_or(UDP)));
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
            let (iif_name, _) = r.names(Some(iif), None);
            let m = Self::policy_lookup(st, &flow, iif_name, None, &r.links)?;
            match m.route.kind {
                // Broadcast input checks the source as if toward 0.0.0.0 (`brd_input`).
                RouteType::Broadcast => validate_source(
                    r,
                    &Flow {
                        dst: Ipv4Addr::UNSPECIFIED,
                        ..flow
                    },
                    0,
                )?,
                RouteType::Local => validate_source(r, &flow, 0)?,
                RouteType::Unicast => {
                    // The check depends on the leg the flow hash picks (S-class): fibre accepts
                    // the packet if some usable leg passes.
                    let legs = st
                        .nhs
                        .get(m.route.nh)
                        .iter()
                        .filter_map(|h| h.dev)
                        .filter(|d| r.links.is_up(*d));
                    if !legs
                        .into_iter()
                        .any(|d| validate_source(r, &flow, d).is_ok())
                    {
                        return Err(Errno::EINVAL);
                    }
                }
                _ => return Err(Errno::EINVAL),
            }
            return Ok(r.answer(&m, dst, Some(s), Some(iif)));
        }
        // ip_route_output_key_hash_rcu.
        if let Some(s) = src {
            if s.is_multicast() || s.is_broadcast() || zeronet(s) {
                return Err(Errno::EINVAL);
            }
            if !r.is_local_address(s) {
                return Err(Errno::ENETUNREACH);
            }
        }
        let on_link = |oif: IfIndex| RouteAnswer {
            route: None,
            dst,
            src,
            gateway: None,
            dev: Some(oif),
            prefsrc: src.or_else(|| r.select_source(Some(oif), dst)),
            iif: None,
        };
        if let Some(oif) = q.oif {
            let link = r.links.by_index(oif).ok_or(Errno::ENODEV)?;
            if !link.up {
                return Err(Errno::ENETUNREACH);
            }
            let local_multicast = dst.octets()[..3] == [224, 0, 0];
            if local_multicast || dst.is_broadcast() {
                return if q.fibmatch {
                    Err(Errno::EHOSTUNREACH)
                } else {
                    Ok(on_link(oif))
                };
            }
        }
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
        // A loopback source may only leave through lo (__mkroute_output).
        let loopback_src = src.is_some_and(|s| s.is_loopback());
        match Self::policy_lookup(st, &flow, iif_name, oif_name, &r.links) {
            Ok(m) => {
                let a = r.answer(&m, dst, src, None);
                if loopback_src
                    && m.route.kind != RouteType::Local
                    && a.dev != Some(LOOPBACK_IFINDEX)
                {
                    return Err(Errno::EINVAL);
                }
                Ok(a)
            }
            Err(_) if q.oif.is_some() && loopback_src => Err(Errno::EINVAL),
            // With an output device the kernel assumes the destination is on that link: a
            // resolved route without a FIB entry, which `fibmatch` cannot show.
            Err(_) if q.oif.is_some() => {
                if q.fibmatch {
                    Err(Errno::EHOSTUNREACH)
                } else {
                    Ok(on_link(q.oif.expect("checked")))
                }
            }
            Err(e) => Err(e),
        }
    }

    fn prepare(r: &Router, spec: &mut RouteSpec<Self>) -> Result<(), ChangeError> {
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
        if let Some(p) = spec.prefsrc {
            let own = spec.kind == RouteType::Local && spec.dst == Prefix::host(p);
            if !own && !r.is_local_address(p) {
                return Err(ChangeError::with(Errno::EINVAL, "Invalid prefsrc address"));
            }
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
        let st = &r.v4;
        for hop in spec.hops.iter_mut() {
            if let Some(gw) = hop.gateway {
                if spec.scope >= SCOPE_LINK {
                    return Err(ChangeError::with(
                        Errno::EINVAL,
                        "Nexthop has invalid scope",
                    ));
                }
                if hop.onlink {
                    let dev = hop.dev.ok_or_else(|| {
                        ChangeError::with(Errno::EINVAL, "Nexthop device required for onlink")
                    })?;
                    r.links.by_index(dev).ok_or(Errno::ENODEV)?;
                } else {
                    // fib_check_nh_v4_gw: the gateway must be reachable by a route of at least
                    // link scope: in the route's table first, then by a full lookup; link state
                    // does not count (FIB_LOOKUP_IGNORE_LINKSTATE).
                    let flow = Flow {
                        oif: hop.dev,
                        iif: Some(LOOPBACK_IFINDEX),
                        scope: (spec.scope + 1).max(SCOPE_LINK),
                        ..Flow::to(gw)
                    };
                    let in_table = (spec.table != TABLE_MAIN)
                        .then(|| st.tables.get(&spec.table))
                        .flatten()
                        .and_then(|t| match t.lookup(&flow, &st.nhs, &AllUp) {
                            TableLookup::Match { route, hop, list } => Some(Matched {
                                table: spec.table,
                                route,
                                hop,
                                list,
                            }),
                            _ => None,
                        });
                    let (names_iif, names_oif) = r.names(flow.iif, flow.oif);
                    let found = match in_table {
                        Some(m) => m,
                        None => Self::policy_lookup(st, &flow, names_iif, names_oif, &AllUp)
                            .map_err(|_| {
                                ChangeError::with(Errno::EINVAL, "Nexthop has invalid gateway")
                            })?,
                    };
                    if !matches!(found.route.kind, RouteType::Unicast | RouteType::Local) {
                        return Err(ChangeError::with(
                            Errno::EINVAL,
                            "Nexthop has invalid gateway",
                        ));
                    }
                    let dev = st
                        .nhs
                        .get(found.route.nh)
                        .get(found.hop)
                        .and_then(|h| h.dev);
                    hop.dev = hop.dev.or(dev);
                }
            }
            let dev = hop
                .dev
                .ok_or_else(|| ChangeError::with(Errno::EINVAL, "Nexthop device required"))?;
            let link = r.links.by_index(dev).ok_or(Errno::ENODEV)?;
            if !link.up {
                return Err(ChangeError::with(
                    Errno::ENETDOWN,
                    "Nexthop device is not up",
                ));
            }
        }
        Ok(())
    }

    fn matched_hops(st: &FamilyState<Self>, m: &Matched<'_, Self>) -> Vec<NextHop<Self>> {
        st.nhs.get(m.route.nh).to_vec()
    }
}

/// `fib_validate_source` with rp_filter off: a packet from one of our own addresses, or whose
/// source routes back to a non-unicast route, is a martian (EINVAL).
fn validate_source(r: &Router, flow: &Flow<Ipv4Addr>, out_dev: IfIndex) -> Result<(), Errno> {
    let st = &r.v4;
    let s = flow.src.unwrap_or(Ipv4Addr::UNSPECIFIED);
    // Packets leaving by the device they came in on take the full check (send_redirects is on).
    if flow.iif != Some(out_dev) && !st.rules.customised && !st.custom_local_routes {
        return if r.is_local_address(s) {
            Err(Errno::EINVAL)
        } else {
            Ok(())
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
    let (iif_name, _) = r.names(reverse.iif, None);
    match Ipv4Addr::policy_lookup(st, &reverse, iif_name, None, &r.links) {
        Ok(m) if m.route.kind != RouteType::Unicast => Err(Errno::EINVAL),
        _ => Ok(()),
    }
}
