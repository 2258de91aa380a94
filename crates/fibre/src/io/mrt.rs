//! MRT routing dumps (RFC 6396), read with `bgpkit-parser`: the prefixes a RIB dump holds,
//! and the routes a router takes from it.
//!
//! TABLE_DUMP (v1, such as RIPE RIS bviews of 2000) and TABLE_DUMP_V2 RIB dumps list each
//! prefix once per peer; BGP4MP update files announce and withdraw. [`rib_prefixes`] keeps
//! every announced prefix once, in first-seen order, which is what a benchmark table or an
//! analyst's prefix list needs; [`rib_routes`] keeps each prefix's first entry with its next
//! hop, and [`route_changes`] turns those into the changes that install them.
use crate::addr::{Address, Family};
use crate::link::IfIndex;
use crate::nexthop::NextHop;
use crate::prefix::Prefix;
use crate::rib::InsertMode;
use crate::route::{Protocol, RouteSpec, TABLE_MAIN};
use crate::router::{Change, FamilyChange, Router};
use crate::with_family;
use bgpkit_parser::models::ElemType;
use bgpkit_parser::BgpkitParser;
use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;

/// `RTPROT_BGP`: what a BGP daemon installs its routes as (`proto bgp`).
pub const PROTO_BGP: Protocol = 186;

/// A prefix of a RIB dump, with the next hop of its first entry that names one of the
/// prefix's family (peers come in the dump's order; a daemon's own routes, listed first by
/// BIRD, have none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RibRoute {
    /// The prefix's address, host bits masked.
    pub addr: IpAddr,
    /// Its length.
    pub len: u8,
    /// The BGP next hop, of the prefix's family (for IPv6, the global one of MP_REACH_NLRI).
    pub next_hop: Option<IpAddr>,
}

/// Each announced prefix of an (uncompressed) MRT stream once, in first-seen order, with the
/// next hop of its first entry that names one of its family.
///
/// A record that cannot be parsed ends the read with an error naming the record's position;
/// nothing is returned half-read.
pub fn rib_routes<R: Read>(input: R) -> Result<Vec<RibRoute>, String> {
    let mut seen: HashMap<(IpAddr, u8), usize> = HashMap::new();
    let mut out: Vec<RibRoute> = Vec::new();
    for (n, elem) in BgpkitParser::from_reader(input)
        .into_fallible_elem_iter()
        .enumerate()
    {
        let elem = elem.map_err(|e| format!("element {}: {e}", n + 1))?;
        if elem.elem_type != ElemType::ANNOUNCE {
            continue;
        }
        let net = elem.prefix.prefix.trunc();
        let (addr, len) = (net.addr(), net.prefix_len());
        let next_hop = elem.next_hop.filter(|h| h.is_ipv4() == addr.is_ipv4());
        match seen.get(&(addr, len)) {
            Some(&i) => {
                let first = &mut out[i];
                first.next_hop = first.next_hop.or(next_hop);
            }
            None => {
                seen.insert((addr, len), out.len());
                out.push(RibRoute {
                    addr,
                    len,
                    next_hop,
                });
            }
        }
    }
    Ok(out)
}

/// One element of an MRT stream, in file order: a prefix announced (with its next hop of the
/// prefix's family, where the element names one) or withdrawn. BGP4MP update files are read so;
/// a RIB dump's entries read as announcements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpdateEvent {
    /// Announced (else withdrawn).
    pub announce: bool,
    /// The prefix's address, host bits masked.
    pub addr: IpAddr,
    /// Its length.
    pub len: u8,
    /// The BGP next hop of an announcement, of the prefix's family.
    pub next_hop: Option<IpAddr>,
}

/// Every announcement and withdrawal of an (uncompressed) MRT stream, in file order. A record
/// that cannot be parsed ends the read with an error naming the element's position; nothing is
/// returned half-read.
pub fn update_events<R: Read>(input: R) -> Result<Vec<UpdateEvent>, String> {
    let mut out = Vec::new();
    for (n, elem) in BgpkitParser::from_reader(input)
        .into_fallible_elem_iter()
        .enumerate()
    {
        let elem = elem.map_err(|e| format!("element {}: {e}", n + 1))?;
        let net = elem.prefix.prefix.trunc();
        let addr = net.addr();
        out.push(UpdateEvent {
            announce: elem.elem_type == ElemType::ANNOUNCE,
            addr,
            len: net.prefix_len(),
            next_hop: elem.next_hop.filter(|h| h.is_ipv4() == addr.is_ipv4()),
        });
    }
    Ok(out)
}

/// Distinct announced prefixes of an (uncompressed) MRT stream, host bits masked, in
/// first-seen order.
pub fn rib_prefixes<R: Read>(input: R) -> Result<Vec<(IpAddr, u8)>, String> {
    Ok(rib_routes(input)?
        .into_iter()
        .map(|r| (r.addr, r.len))
        .collect())
}

/// What a RIB dump changes in a router: see [`route_changes`].
#[derive(Debug, Default)]
pub struct MrtChanges {
    /// The changes, one per route installed, to apply as one change set.
    pub changes: Vec<Change>,
    /// The route each change installs, in the same order (to name one that fails).
    pub routes: Vec<RibRoute>,
    /// Routes left out: no next hop, one of the other family, or a prefix too long.
    pub left_out: usize,
}

/// The changes that install `routes` in table main as a BGP daemon would: `proto bgp`, each
/// via its next hop on `dev` with `onlink` (a dump's next hops are its peers' addresses, not
/// on the router's own subnets), metric as `ip` gives (0 for IPv4, 1024 for IPv6). A route
/// without a next hop, with one of the other family, or with a prefix longer than its family
/// allows is left out, and counted.
pub fn route_changes(routes: &[RibRoute], dev: IfIndex) -> MrtChanges {
    let mut out = MrtChanges {
        changes: Vec::with_capacity(routes.len()),
        routes: Vec::with_capacity(routes.len()),
        left_out: 0,
    };
    for r in routes {
        let family = Family::of(&r.addr);
        let Some(gateway) = r.next_hop.filter(|g| Family::of(g) == family) else {
            out.left_out += 1;
            continue;
        };
        with_family!(family, A => {
            let (Some(addr), Some(gateway)) = (A::from_ip(r.addr), A::from_ip(gateway)) else {
                unreachable!("the families were checked");
            };
            let Some(dst) = Prefix::from_bits(addr.to_bits(), r.len) else {
                out.left_out += 1;
                continue;
            };
            let mut hop = NextHop::via(gateway, dev);
            hop.onlink = true;
            let mut route = RouteSpec::new(dst, vec![hop]);
            route.protocol = PROTO_BGP;
            route.metric = metric_of(family);
            out.changes.push(FamilyChange::Route(route, InsertMode::Add).into());
            out.routes.push(*r);
        });
    }
    out
}

/// What [`install`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Installed {
    /// Routes installed.
    pub routes: usize,
    /// Routes left out for want of a next hop of their family (see [`route_changes`]).
    pub left_out: usize,
    /// Prefixes table main already routed at the metric the dump's route would have: left
    /// alone, as `ip route add` would refuse them (a default route or a connected subnet of
    /// the router's own).
    pub already_routed: usize,
}

/// The metric `ip route add` gives a route of `family`.
fn metric_of(family: Family) -> u32 {
    if family == Family::Inet6 {
        1024
    } else {
        0
    }
}

/// Installs `routes` via `dev` as one change set, all or none (see [`route_changes`]), leaving
/// alone the prefixes the router already routes; an error names the route the router refused.
pub fn install(
    router: &mut Router,
    routes: &[RibRoute],
    dev: IfIndex,
) -> Result<Installed, String> {
    let routed = |r: &RibRoute| {
        with_family!(Family::of(&r.addr), A => {
            let (Some(addr), metric) = (A::from_ip(r.addr), metric_of(A::FAMILY)) else {
                return false;
            };
            Prefix::from_bits(addr.to_bits(), r.len).is_some_and(|dst| {
                router.family::<A>().table(TABLE_MAIN).is_some_and(|t| {
                    t.get(&dst, &Prefix::any())
                        .iter()
                        .any(|x| x.metric == metric && x.tos == 0)
                })
            })
        })
    };
    let fresh: Vec<RibRoute> = routes.iter().filter(|r| !routed(r)).copied().collect();
    let load = route_changes(&fresh, dev);
    router.apply(&load.changes).map_err(|(i, e)| {
        let r = &load.routes[i];
        let via = r.next_hop.map(|h| format!(" via {h}")).unwrap_or_default();
        format!("route {}/{}{via}: {e}", r.addr, r.len)
    })?;
    Ok(Installed {
        routes: load.changes.len(),
        left_out: load.left_out,
        already_routed: routes.len() - fresh.len(),
    })
}

/// Installs the routes of the MRT RIB dump at `path` (plain or gzip) via device `dev`, in one
/// change set (all or none); with `family`, only that family's. Errors name the file, and the
/// record or route at fault.
pub fn install_file(
    router: &mut Router,
    path: &std::path::Path,
    dev: IfIndex,
    family: Option<Family>,
) -> Result<Installed, String> {
    use std::io::BufRead;
    let name = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read MRT file \"{name}\": {e}"))?;
    let mut reader = std::io::BufReader::new(file);
    let gzip = reader
        .fill_buf()
        .map_err(|e| format!("cannot read MRT file \"{name}\": {e}"))?
        .starts_with(&[0x1f, 0x8b]);
    let input: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    let mut routes = rib_routes(input).map_err(|e| format!("{name}: {e}"))?;
    routes.retain(|r| family.is_none_or(|f| Family::of(&r.addr) == f));
    install(router, &routes, dev).map_err(|e| format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn shared(name: &str) -> Option<std::fs::File> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mrt")
            .join(name);
        match std::fs::File::open(&path) {
            Ok(f) => Some(f),
            Err(e) => {
                // A user's fresh clone has no shared data; CI has it and sets this.
                assert!(
                    std::env::var_os("FIBRE_DATA_REQUIRED").is_none(),
                    "FIBRE_DATA_REQUIRED is set but {} cannot be read: {e}",
                    path.display()
                );
                eprintln!(
                    "skipped: {} absent (shared data not beside the repo)",
                    path.display()
                );
                None
            }
        }
    }

    #[test]
    fn reads_the_2000_ris_bview_in_table_dump_v1() {
        let Some(f) = shared("ripe-rrc00-bview.20000111.0032.gz") else {
            return;
        };
        let prefixes = rib_prefixes(flate2::read::GzDecoder::new(f)).unwrap();
        // A year-2000 view: tens of thousands of IPv4 prefixes.
        assert!(prefixes.len() > 50_000, "{}", prefixes.len());
        assert!(prefixes.iter().all(|(a, _)| a.is_ipv4()));
        assert!(prefixes.contains(&("3.0.0.0".parse().unwrap(), 8)));
    }

    /// The RIPE updates file (BGP4MP): announcements and withdrawals in file order, each
    /// announcement's next hop of its prefix's family, and the same prefixes the RIB reader
    /// sees announced.
    #[test]
    fn reads_bgp4mp_updates_in_order() {
        let Some(f) = shared("ripe-rrc03-updates.20100227.1600.first-796-records.gz") else {
            return;
        };
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(f)
            .read_to_end(&mut bytes)
            .unwrap();
        let events = update_events(&bytes[..]).unwrap();
        let announced = events.iter().filter(|e| e.announce).count();
        assert!(announced > 100, "{announced}");
        assert!(events.iter().any(|e| !e.announce), "withdrawals too");
        assert!(events
            .iter()
            .filter_map(|e| e.next_hop.map(|h| (h, e.addr)))
            .all(|(h, a)| h.is_ipv4() == a.is_ipv4()));
        let mut first_seen: Vec<(IpAddr, u8)> = Vec::new();
        for e in events.iter().filter(|e| e.announce) {
            if !first_seen.contains(&(e.addr, e.len)) {
                first_seen.push((e.addr, e.len));
            }
        }
        assert_eq!(first_seen, rib_prefixes(&bytes[..]).unwrap());
    }

    #[test]
    fn truncated_input_is_an_error_not_a_short_table() {
        let Some(f) = shared("ripe-rrc00-bview.20000111.0032.gz") else {
            return;
        };
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(f)
            .take(100_000)
            .read_to_end(&mut bytes)
            .unwrap();
        bytes.truncate(99_990);
        assert!(rib_prefixes(&bytes[..]).is_err());
    }
}
