//! The prefix routes addrconf gives IPv6 addresses. An address adds its subnet's route through
//! its device (`addrconf_prefix_route`: metric 256 unless the address has its own), as the
//! derived routes do. But the kernel does not tie that route to the address: an address that
//! goes takes back one route to its subnet on its device, the first it finds, and only when no
//! other address of the device is in that subnet (`check_cleanup_prefix_route`,
//! `cleanup_prefix_route`). Two addresses of one subnet with different metrics leave a route
//! behind when one goes; the route taken back may be one a user added. So a derived prefix
//! route that no address wants any more is not deleted with the derived routes
//! (`FamilyState::sync_derived` lets it go as a route of its own), and the functions here
//! take back what the kernel takes back.
use super::*;

/// The metric of `a`'s prefix route: its own, else `IP6_RT_PRIO_ADDRCONF` (a metric of 0 too).
fn prefix_metric(a: &IfAddr<Ipv6Addr>) -> u32 {
    a.metric.filter(|m| *m != 0).unwrap_or(256)
}

/// The prefix route `a` adds now (`inet6_addr_add`, and `fixup_permanent_addr` when its device
/// comes up): every address has one while its device is up, on lo too, but for `::1` (from
/// `init_loopback`, which adds none) and addresses with `noprefixroute`.
pub(super) fn of(links: &Links, a: &IfAddr<Ipv6Addr>) -> Option<RouteSpec<Ipv6Addr>> {
    let wanted = links.is_up(a.dev) && !a.addr.is_loopback() && !a.noprefixroute;
    wanted.then(|| {
        kernel_route(
            TABLE_MAIN,
            a.subnet(),
            RouteType::Unicast,
            a.dev,
            prefix_metric(a),
        )
    })
}

/// The route `addrconf_get_prefix_route` finds for `a`'s subnet: the first (in the kernel's
/// order) of the main table's routes to the subnet without a source prefix (`fib6_locate`'s
/// exact node), whose next hop is on `a`'s device, without a gateway and not an object's.
fn first_prefix_route(
    st: &FamilyState<Ipv6Addr>,
    a: &IfAddr<Ipv6Addr>,
) -> Option<RouteSpec<Ipv6Addr>> {
    let rib = st.table(TABLE_MAIN)?;
    rib.get(&a.subnet(), &Prefix::any())
        .into_iter()
        .find_map(|r| {
            let hops = st.nhs.get(r.hops);
            let on_dev = matches!(hops, [h] if h.dev == Some(a.dev) && h.gateway.is_none());
            (on_dev && r.nhid.is_none()).then(|| r.with_hops(hops.to_vec()))
        })
}

/// `ipv6_del_addr`'s cleanup, for `gone` (no longer in `st.addrs`) if it had a prefix route.
pub(super) fn deleted(st: &mut FamilyState<Ipv6Addr>, gone: &IfAddr<Ipv6Addr>) {
    if !gone.noprefixroute {
        take_back(st, gone);
    }
}

/// `check_cleanup_prefix_route` and `cleanup_prefix_route`, for an address gone or now with
/// `noprefixroute`: unless another address of the device is in the same subnet, the first
/// route to the subnet on the device goes. (The kernel lets the route expire instead where
/// the other addresses all have finite lifetimes; fibre keeps every lifetime as forever.)
fn take_back(st: &mut FamilyState<Ipv6Addr>, gone: &IfAddr<Ipv6Addr>) {
    let shared = st.addrs.iter().any(|o| {
        o.dev == gone.dev && o.len == gone.len && o.subnet() == gone.subnet() && o.addr != gone.addr
    });
    if shared {
        return;
    }
    if let Some(first) = first_prefix_route(st, gone) {
        let _ = st.delete(TABLE_MAIN, &RouteSelector::exact(&first));
    }
}

/// `inet6_addr_modify`'s prefix route, for the address `now` that was `before` (its flags and
/// metric already changed in `st.addrs`). With a prefix route before and after
/// (`modify_prefix_route`): unless the first route to the subnet on the device has the
/// address's metric, it goes and the address's own is added, even where the address's entry
/// among the derived routes did not change. Without one after: [`take_back`]. Without one
/// before, the derived routes add the address's (its entry is new).
pub(super) fn modified(
    st: &mut FamilyState<Ipv6Addr>,
    before: &IfAddr<Ipv6Addr>,
    now: &IfAddr<Ipv6Addr>,
    links: &Links,
) {
    if before.noprefixroute {
        return;
    }
    if now.noprefixroute {
        take_back(st, now);
        return;
    }
    let first = first_prefix_route(st, now);
    if first
        .as_ref()
        .is_some_and(|f| f.metric == prefix_metric(now))
    {
        return;
    }
    if let Some(first) = first {
        let _ = st.delete(TABLE_MAIN, &RouteSelector::exact(&first));
    }
    if let Some(own) = of(links, now) {
        let _ = st.insert(&own, InsertMode::Append);
    }
}
