//! The router's state as data (what a snapshot file holds) and back.
//!
//! An image keeps what cannot be derived: devices, addresses, rules, next-hop objects and every
//! route of every table in list order (the order decides lookups, and the history that made it
//! is gone). What can be derived is rebuilt on the way in: the interned next-hop groups, the
//! routes the kernel derives from addresses (to know which they are), the compiled FIBs.
//!
//! An image comes from outside (a file): everything in it is checked before it becomes a
//! router. The routes go back into their lists as they were (replaces can leave lists that no
//! sequence of appends would build), and each list must be in its family's order; a device,
//! member or object a route names must exist.
use super::{FamilyState, Router, RouterFamily};
use crate::link::{IfAddr, Links};
use crate::nexthop::{NextHop, NhId, NhObject, NhObjectKind, NhObjectRef};
use crate::rib::Rib;
use crate::route::*;
use crate::rules::RuleSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// One family's part of an image.
#[derive(Serialize, Deserialize)]
#[serde(bound(
    serialize = "A: Serialize + RouterFamily",
    deserialize = "A: Deserialize<'de> + RouterFamily"
))]
pub(crate) struct FamilyImage<A: RouterFamily> {
    /// The next-hop groups the routes use, each once.
    groups: Vec<Vec<NextHop<A>>>,
    /// Each table's routes in iteration order; a route's hops are an index into `groups`.
    tables: Vec<(TableId, Vec<Route<A, u32>>)>,
    rules: RuleSet<A>,
    addrs: Vec<IfAddr<A>>,
    objects: Vec<NhObject<A>>,
    custom_local_routes: bool,
}

/// A router as data.
#[derive(Serialize, Deserialize)]
pub(crate) struct RouterImage {
    links: Links,
    last_nhid: u32,
    mirrored: bool,
    v4: FamilyImage<Ipv4Addr>,
    v6: FamilyImage<Ipv6Addr>,
}

/// A kernel's state, per family, as a mirror reads it (routes in its dump order).
#[cfg(feature = "netlink")]
pub(crate) struct FamilyParts<A: RouterFamily> {
    pub(crate) routes: Vec<RouteSpec<A>>,
    pub(crate) rules: Vec<crate::rules::Rule<A>>,
    pub(crate) addrs: Vec<IfAddr<A>>,
    pub(crate) objects: Vec<NhObject<A>>,
}

#[cfg(feature = "netlink")]
fn family_of_parts<A: RouterFamily>(p: FamilyParts<A>) -> FamilyImage<A> {
    let mut tables: std::collections::BTreeMap<TableId, Vec<RouteSpec<A>>> = Default::default();
    // A user's `local` route makes the kernel check sources the slow way; the kernel's own
    // local routes are proto kernel.
    let custom_local_routes = p
        .routes
        .iter()
        .any(|r| r.kind == RouteType::Local && r.protocol != PROTO_KERNEL);
    for r in p.routes {
        tables.entry(r.table).or_default().push(r);
    }
    let mut groups: Vec<Vec<NextHop<A>>> = Vec::new();
    let mut index: HashMap<Vec<NextHop<A>>, u32> = HashMap::new();
    let tables = tables
        .into_iter()
        .map(|(id, mut routes)| {
            // Iteration order; a stable sort keeps each list in the kernel's order.
            routes.sort_by_key(|r| (r.dst, r.src));
            let routes = routes
                .into_iter()
                .map(|r| {
                    let i = *index.entry(r.hops.clone()).or_insert_with(|| {
                        groups.push(r.hops.clone());
                        groups.len() as u32 - 1
                    });
                    r.with_hops(i)
                })
                .collect();
            (id, routes)
        })
        .collect();
    FamilyImage {
        groups,
        tables,
        rules: RuleSet::mirrored(p.rules),
        addrs: p.addrs,
        objects: p.objects,
        custom_local_routes,
    }
}

#[cfg(feature = "netlink")]
impl RouterImage {
    /// The image of a kernel's state, which a mirror read from its dumps.
    pub(crate) fn mirrored(
        links: Vec<crate::link::Link>,
        v4: FamilyParts<Ipv4Addr>,
        v6: FamilyParts<Ipv6Addr>,
    ) -> RouterImage {
        RouterImage {
            links: Links::mirrored(links),
            last_nhid: 0,
            mirrored: true,
            v4: family_of_parts(v4),
            v6: family_of_parts(v6),
        }
    }
}

fn image_of<A: RouterFamily>(st: &FamilyState<A>) -> FamilyImage<A> {
    let mut groups = Vec::new();
    let mut index: HashMap<NhId, u32> = HashMap::new();
    let tables = st
        .tables
        .iter()
        .map(|(id, rib)| {
            let routes = rib
                .iter()
                .map(|r| {
                    let i = *index.entry(r.hops).or_insert_with(|| {
                        groups.push(st.nhs.get(r.hops).to_vec());
                        groups.len() as u32 - 1
                    });
                    r.with_hops(i)
                })
                .collect();
            (*id, routes)
        })
        .collect();
    FamilyImage {
        groups,
        tables,
        rules: (*st.rules).clone(),
        addrs: (*st.addrs).clone(),
        objects: st.objects.values().cloned().collect(),
        custom_local_routes: st.custom_local_routes,
    }
}

/// Fills a fresh family from its image, checking it.
fn fill<A: RouterFamily>(
    st: &mut FamilyState<A>,
    img: FamilyImage<A>,
    links: &Links,
    mirrored: bool,
) -> Result<(), String> {
    let name = A::FAMILY.name();
    let known = |dev: Option<IfIndex>| dev.is_none_or(|d| links.by_index(d).is_some());
    if let Some(a) = img
        .addrs
        .iter()
        .find(|a| !known(Some(a.dev)) || a.len > A::WIDTH)
    {
        return Err(format!("{name} address {}/{} does not fit", a.addr, a.len));
    }
    img.rules.check().map_err(|e| format!("{name}: {e}"))?;
    for o in &img.objects {
        let bad = match &o.kind {
            NhObjectKind::Hop { hop, .. } => {
                hop.dev.is_none() || !known(hop.dev) || hop.weight != 1
            }
            NhObjectKind::Blackhole => false,
            NhObjectKind::Group(m) => {
                let mut seen = BTreeSet::new();
                m.is_empty()
                    || m.iter().any(|g| {
                        !seen.insert(g.id)
                            || !(1..=256).contains(&g.weight)
                            || !img.objects.iter().any(|x| x.id == g.id && !x.is_group())
                    })
            }
        };
        if o.id == 0
            || bad
            || Arc::make_mut(&mut st.objects)
                .insert(o.id, o.clone())
                .is_some()
        {
            return Err(format!(
                "{name} next-hop object {} does not hang together",
                o.id
            ));
        }
    }
    if let Some(g) = img.groups.iter().find(|g| {
        !g.iter()
            .all(|h| known(h.dev) && (1..=256).contains(&h.weight))
    }) {
        return Err(format!("{name} next hops {g:?} do not fit"));
    }
    // Each group is interned once; every further route through it takes a reference.
    let mut interned: Vec<Option<NhId>> = vec![None; img.groups.len()];
    if img.tables.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(format!("{name} tables out of order"));
    }
    for (id, routes) in img.tables {
        // Iteration order: by destination, source-less routes before each source prefix.
        if routes
            .windows(2)
            .any(|w| (w[0].dst, w[0].src) > (w[1].dst, w[1].src))
        {
            return Err(format!("{name} table {id}: routes out of order"));
        }
        for r in routes {
            let Some(group) = img.groups.get(r.hops as usize) else {
                return Err(format!("{name} route {} has no next hops", r.dst));
            };
            if r.table != id {
                return Err(format!("{name} route {} in table {id} is misplaced", r.dst));
            }
            let mut r = r;
            // A mirror's dump spells an object's next hops out as ip prints them (a group of
            // one without its weight, none at all with `nexthop_compat_mode` off): there the
            // object's are the truth. A snapshot must agree with its objects.
            let mut own = None;
            if let Some(n) = r.nhid {
                let Some(o) = st.objects.get(&n.id) else {
                    return Err(format!("{name} route {} names a missing object", r.dst));
                };
                let (hops, blackhole) = super::nhobjects::object_hops(st, o);
                let kind = if blackhole {
                    RouteType::Blackhole
                } else {
                    RouteType::Unicast
                };
                if mirrored {
                    r.kind = kind;
                    r.nhid = Some(NhObjectRef {
                        id: n.id,
                        group: o.is_group(),
                    });
                    own = Some(hops);
                } else if &hops != group || o.is_group() != n.group || r.kind != kind {
                    return Err(format!(
                        "{name} route {} names object {} wrongly",
                        r.dst, n.id
                    ));
                }
            }
            let nh = match (own, interned[r.hops as usize]) {
                (Some(hops), _) => st.nhs.intern(&hops),
                (None, Some(nh)) => {
                    st.nhs.retain(nh);
                    nh
                }
                (None, None) => {
                    let nh = st.nhs.intern(group);
                    interned[r.hops as usize] = Some(nh);
                    nh
                }
            };
            st.table_mut(id).push_back(r.with_hops(nh));
        }
        st.table_mut(id);
        if !st.tables[&id].lists_ordered(&st.nhs) {
            return Err(format!(
                "{name} table {id}: a list out of the kernel's order"
            ));
        }
    }
    st.journal.clear();
    // Loaded in order, whole: the tables' indexes are packed as after a load by change set,
    // and no change set is open to drop the tables made here.
    st.created_tables.clear();
    st.tables.values_mut().for_each(Rib::pack_index);
    st.rules = Arc::new(img.rules);
    st.addrs = Arc::new(img.addrs);
    st.custom_local_routes = img.custom_local_routes;
    Ok(())
}

/// One family of a router being loaded: filled from its image and checked, then its FIBs
/// built.
fn load_family<A: RouterFamily>(
    st: &mut FamilyState<A>,
    img: FamilyImage<A>,
    links: &Links,
    mirrored: bool,
) -> Result<(), String> {
    fill(st, img, links, mirrored)?;
    // Which routes the kernel derived is known from the addresses, as it always is (the
    // tables already hold them, or what became of them).
    if !mirrored {
        st.derived = Arc::new(st.derived_routes(links));
    }
    let counts = super::journal::count_by_table(st.journal.destinations_from(0));
    st.follow_commit(links, &counts);
    Ok(())
}

impl Router {
    /// The router as data, for a snapshot.
    pub(crate) fn image(&self) -> RouterImage {
        RouterImage {
            links: (*self.links).clone(),
            last_nhid: self.last_nhid,
            mirrored: self.mirrored,
            v4: image_of(&self.v4),
            v6: image_of(&self.v6),
        }
    }

    /// A router from an image, or what is wrong with the image.
    pub(crate) fn from_image(img: RouterImage) -> Result<Router, String> {
        img.links.check()?;
        let mut r = Router {
            links: Arc::new(img.links),
            last_nhid: img.last_nhid,
            mirrored: img.mirrored,
            ..Router::default()
        };
        // The families are independent: each is filled, and its FIBs built, on a thread of
        // its own (a full table's load is mostly IPv4's, so IPv6's comes nearly free).
        let (links, mirrored) = (&r.links, r.mirrored);
        let (v4, v6) = std::thread::scope(|s| {
            let v6 = s.spawn(|| load_family(&mut r.v6, img.v6, links, mirrored));
            (load_family(&mut r.v4, img.v4, links, mirrored), v6.join())
        });
        v4?;
        v6.map_err(|_| "loading IPv6 panicked".to_string())??;
        if let Some(id) = r.v4.objects.keys().find(|id| r.v6.objects.contains_key(id)) {
            return Err(format!("next-hop object {id} is in both families"));
        }
        Ok(r)
    }
}
