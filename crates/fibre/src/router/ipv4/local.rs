//! What IPv4 calls local: the local table's types of addresses (`inet_addr_type`), the check of
//! a route's preferred source (`fib_valid_prefsrc`), the device that owns an address
//! (`__ip_dev_find`) and the source chosen among the addresses (`inet_select_addr`).
use super::*;

/// `inet_addr_type_dev_table`: what the local table makes of `a` (unicast when nothing there
/// claims it).
pub(super) fn address_type(r: &Router, a: Ipv4Addr) -> RouteType {
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
pub(super) fn check_prefsrc(r: &Router, spec: &RouteSpec<Ipv4Addr>) -> Result<(), ChangeError> {
    match spec.prefsrc {
        Some(p) if !valid_prefsrc(r, spec, p) => {
            Err(ChangeError::with(Errno::EINVAL, "Invalid prefsrc address"))
        }
        _ => Ok(()),
    }
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

/// `__ip_dev_find`: the device that owns `a`, an address of a device or covered by a `local`
/// route of table local (127.1.2.3 is lo's; see [`local_table_lookup`]).
pub(super) fn local_dev(r: &Router, a: Ipv4Addr) -> Option<IfIndex> {
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

/// `inet_select_addr(dev, toward, scope)`: the source the kernel picks on `dev` for routes of
/// `scope`. Among the device's primary addresses (secondaries never), in the kernel's order of
/// its list (`__inet_insert_ifa` keeps primaries sorted by scope, host before link before
/// global, in the order added), of a scope no wider than `scope`: the first whose subnet holds
/// `toward`, else the first. Failing those (or without `dev`), the devices in order (lo first):
/// the first primary address of neither link scope nor a scope wider than `scope`.
///
/// One pass each, without allocating (route gets and every route class's prepared answer call
/// it): the least place among the candidates is always a primary address, as a secondary comes
/// after its primary, on its device, with its subnet and its scope (`Router::addr_add`).
pub(super) fn select_addr(
    addrs: &[IfAddr<Ipv4Addr>],
    dev: Option<IfIndex>,
    toward: Option<Ipv4Addr>,
    scope: Scope,
) -> Option<Ipv4Addr> {
    // Place in the kernel's list of a device: wider scopes (smaller numbers) later.
    let place = |(i, a): &(usize, &IfAddr<Ipv4Addr>)| (std::cmp::Reverse(a.scope), *i);
    if let Some(dev) = dev {
        // route_localnet off: a scope above host counts as host.
        let usable = addrs
            .iter()
            .enumerate()
            .filter(|(_, a)| a.dev == dev && a.scope.min(SCOPE_HOST) <= scope);
        let toward_it = usable
            .clone()
            .filter(|(_, a)| toward.is_some_and(|t| a.subnet().contains(t)))
            .min_by_key(place);
        if let Some((_, a)) = toward_it.or_else(|| usable.min_by_key(place)) {
            return Some(a.addr);
        }
    }
    addrs
        .iter()
        .enumerate()
        .filter(|(_, a)| a.scope != SCOPE_LINK && a.scope <= scope)
        .min_by_key(|c| (c.1.dev, place(c)))
        .map(|(_, a)| a.addr)
}
