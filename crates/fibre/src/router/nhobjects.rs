//! Next-hop objects in the router (`ip nexthop`, net/ipv4/nexthop.c): their checks, in the
//! kernel's order; routes through them (`nhid`); and what deleting, replacing or losing a
//! device does to the routes and groups that use them.
use super::{FamilyState, Router, RouterFamily};
use crate::addr::Family;
use crate::error::{ChangeError, Errno};
use crate::link::IfIndex;
use crate::nexthop::{NextHop, NhObject, NhObjectKind, NhObjectRef};
use crate::rib::RouteSelector;
use crate::route::*;
use std::collections::BTreeSet;
use std::sync::Arc;

fn invalid(message: &'static str) -> ChangeError {
    ChangeError::with(Errno::EINVAL, message)
}

/// What fibre does not model, said as such.
fn not_modelled(what: &str) -> ChangeError {
    ChangeError::with(
        Errno::EOPNOTSUPP,
        format!("{what} are not modelled by fibre"),
    )
}

/// The next hops a route through `obj` takes, and whether they discard (a blackhole object,
/// or a group whose one member is one).
pub(super) fn object_hops<A: RouterFamily>(
    st: &FamilyState<A>,
    obj: &NhObject<A>,
) -> (Vec<NextHop<A>>, bool) {
    let lo = NextHop::dev(LOOPBACK_IFINDEX);
    match &obj.kind {
        NhObjectKind::Hop { hop, .. } => (vec![*hop], false),
        NhObjectKind::Blackhole => (vec![lo], true),
        NhObjectKind::Group(members) => {
            let mut hops = Vec::new();
            let mut blackhole = false;
            for m in members {
                match st.objects.get(&m.id).map(|o| &o.kind) {
                    Some(NhObjectKind::Hop { hop, .. }) => hops.push(NextHop {
                        weight: m.weight,
                        ..*hop
                    }),
                    Some(NhObjectKind::Blackhole) => {
                        hops.push(lo);
                        blackhole = true;
                    }
                    _ => {}
                }
            }
            (hops, blackhole)
        }
    }
}

/// The single next hop that decides a route's checks: the object's, or a group's first
/// member's ("all nexthops in a group have the same scope").
pub(super) fn deciding_hop<'a, A: RouterFamily>(
    st: &'a FamilyState<A>,
    obj: &'a NhObject<A>,
) -> Option<&'a NextHop<A>> {
    let first = match &obj.kind {
        NhObjectKind::Group(m) => st.objects.get(&m.first()?.id)?,
        _ => obj,
    };
    match &first.kind {
        NhObjectKind::Hop { hop, .. } => Some(hop),
        _ => None,
    }
}

impl<A: RouterFamily> FamilyState<A> {
    /// Routes through the objects `ids` take their objects' next hops again (after a replace or
    /// a group that shrank), in place.
    pub(super) fn refresh_routes_through(&mut self, ids: &BTreeSet<u32>) {
        let resolved: Vec<(u32, Vec<NextHop<A>>, bool)> = ids
            .iter()
            .filter_map(|id| self.objects.get(id))
            .map(|o| {
                let (hops, blackhole) = object_hops(self, o);
                (o.id, hops, blackhole)
            })
            .collect();
        let FamilyState {
            tables,
            nhs,
            journal,
            ..
        } = self;
        let mut released = Vec::new();
        for (table, rib) in tables.iter_mut() {
            let mut saved = Vec::new();
            rib.modify_where(
                |r| r.nhid.is_some_and(|n| ids.contains(&n.id)),
                |r| {
                    let id = r.nhid.map_or(0, |n| n.id);
                    let Some((_, hops, blackhole)) = resolved.iter().find(|x| x.0 == id) else {
                        return;
                    };
                    released.push(r.hops);
                    r.hops = nhs.intern(hops);
                    r.kind = if *blackhole {
                        RouteType::Blackhole
                    } else {
                        RouteType::Unicast
                    };
                },
                &mut saved,
            );
            journal.extend(*table, saved);
        }
        for id in released {
            nhs.release(id);
        }
    }

    /// Deletes object `id` (`remove_nexthop`): the routes through it go; each group holding it
    /// shrinks, and a group it leaves empty is deleted in turn.
    pub(super) fn remove_object(&mut self, id: u32) {
        let Some(obj) = Arc::make_mut(&mut self.objects).remove(&id) else {
            return;
        };
        self.remove_where(|r, _| r.nhid.is_some_and(|n| n.id == id));
        if obj.is_group() {
            return;
        }
        let mut shrunk = BTreeSet::new();
        let mut emptied = Vec::new();
        for g in Arc::make_mut(&mut self.objects).values_mut() {
            if let NhObjectKind::Group(members) = &mut g.kind {
                if members.iter().any(|m| m.id == id) {
                    members.retain(|m| m.id != id);
                    if members.is_empty() {
                        emptied.push(g.id);
                    } else {
                        shrunk.insert(g.id);
                    }
                }
            }
        }
        for g in emptied {
            self.remove_object(g);
        }
        self.refresh_routes_through(&shrunk);
    }
}

impl Router {
    /// Which family holds object `id`, if any.
    pub fn object_family(&self, id: u32) -> Option<Family> {
        if self.v4.objects.contains_key(&id) {
            Some(Family::Inet)
        } else if self.v6.objects.contains_key(&id) {
            Some(Family::Inet6)
        } else {
            None
        }
    }

    /// `nexthop add` / `nexthop replace` (`rtm_new_nexthop`), its checks in the kernel's order:
    /// the request's form, then its members and device, then its gateway, and whether the id is
    /// taken last of all.
    pub(super) fn nexthop_add<A: RouterFamily>(
        &mut self,
        mut obj: NhObject<A>,
        replace: bool,
    ) -> Result<(), ChangeError> {
        match &obj.kind {
            NhObjectKind::Hop { hop, .. } => {
                if hop.dev.is_none() {
                    return Err(invalid(
                        "Device attribute required for non-blackhole and non-fdb nexthops",
                    ));
                }
                if hop.onlink && hop.gateway.is_none() {
                    return Err(invalid(
                        "ONLINK flag can not be set for nexthop without a gateway",
                    ));
                }
            }
            NhObjectKind::Group(members) => {
                let mut seen = BTreeSet::new();
                if members.iter().any(|m| !seen.insert(m.id)) {
                    return Err(invalid("Nexthop id can not be used twice in a group"));
                }
            }
            NhObjectKind::Blackhole => {}
        }
        if replace && obj.id == 0 {
            return Err(invalid("Replace requires nexthop id"));
        }
        let st = A::state(self);
        match &mut obj.kind {
            NhObjectKind::Group(members) => {
                for m in members.iter() {
                    let Some(member) = st.objects.get(&m.id) else {
                        if self.object_family(m.id).is_some() {
                            return Err(not_modelled("Groups mixing IPv4 and IPv6 next hops"));
                        }
                        return Err(invalid("Invalid nexthop id"));
                    };
                    match member.kind {
                        NhObjectKind::Group(_) => {
                            return Err(invalid(
                                "Hash-threshold group can not be a nexthop within a group",
                            ))
                        }
                        NhObjectKind::Blackhole if members.len() > 1 => return Err(invalid(
                            "Blackhole nexthop can not be used in a group with more than 1 path",
                        )),
                        _ => {}
                    }
                }
            }
            NhObjectKind::Hop { hop, scope } => {
                let dev = hop.dev.expect("checked above");
                let link = self.links.by_index(dev).ok_or(Errno::ENODEV)?;
                if !link.up {
                    return Err(ChangeError::with(
                        Errno::ENETDOWN,
                        "Nexthop device is not up",
                    ));
                }
                if !self.links.is_ready(dev) {
                    return Err(ChangeError::with(
                        Errno::ENETDOWN,
                        "Carrier for nexthop device is down",
                    ));
                }
                *scope = A::check_object_hop(self, hop)?;
            }
            NhObjectKind::Blackhole => {
                // A blackhole sits on `lo`, which must be up.
                if !self.links.is_up(LOOPBACK_IFINDEX) {
                    return Err(ChangeError::with(Errno::ENETDOWN, A::BLACKHOLE_LO_DOWN));
                }
            }
        }
        if obj.id == 0 {
            obj.id = self.unused_object_id()?;
        }
        let id = obj.id;
        match self.object_family(id) {
            None => {
                Arc::make_mut(&mut A::state_mut(self).objects).insert(id, obj);
                Ok(())
            }
            Some(_) if !replace => Err(Errno::EEXIST.into()),
            Some(f) if f != A::FAMILY => Err(not_modelled(
                "Replacements of a next-hop object by one of the other family",
            )),
            Some(_) => self.replace_object(obj),
        }
    }

    /// `nh_find_unused_id`: counts on from the last id it gave, skipping ids in use; once
    /// round all of them, there is none.
    fn unused_object_id(&mut self) -> Result<u32, ChangeError> {
        let start = self.last_nhid;
        loop {
            self.last_nhid = self.last_nhid.wrapping_add(1);
            if self.last_nhid == start {
                return Err(invalid("No unused id"));
            }
            if self.last_nhid != 0 && self.object_family(self.last_nhid).is_none() {
                return Ok(self.last_nhid);
            }
        }
    }

    /// `replace_nexthop`: the kind stays (single or group); every route through the object, or
    /// through a group holding it, must accept the new one; then they all follow it.
    fn replace_object<A: RouterFamily>(&mut self, new: NhObject<A>) -> Result<(), ChangeError> {
        let st = A::state_mut(self);
        let old = st
            .objects
            .get(&new.id)
            .expect("replace of an existing object");
        match (old.is_group(), new.is_group()) {
            (true, false) => {
                return Err(invalid("Can not replace a nexthop group with a nexthop."))
            }
            (false, true) => {
                return Err(invalid("Can not replace a nexthop with a nexthop group."))
            }
            _ => {}
        }
        let id = new.id;
        let blackhole = matches!(new.kind, NhObjectKind::Blackhole);
        let mut affected = BTreeSet::from([id]);
        for g in st.objects.values() {
            if let NhObjectKind::Group(members) = &g.kind {
                if members.iter().any(|m| m.id == id) {
                    if blackhole && members.len() > 1 {
                        return Err(invalid(
                            "Blackhole nexthop can not be a member of a group with more than one path",
                        ));
                    }
                    affected.insert(g.id);
                }
            }
        }
        // The routes are checked against the new object in place; a refusal puts the old one
        // back, so that a failed replace changes nothing even inside a change set.
        let old = Arc::make_mut(&mut st.objects)
            .insert(id, new)
            .expect("replace of an existing object");
        let st = A::state(self);
        let refused = st.tables().flat_map(|rib| rib.iter()).find_map(|r| {
            let n = r.nhid.filter(|n| affected.contains(&n.id))?;
            let obj = &st.objects[&n.id];
            A::check_route_through(r.scope, obj, deciding_hop(st, obj)).err()
        });
        let st = A::state_mut(self);
        if let Some(e) = refused {
            Arc::make_mut(&mut st.objects).insert(id, old);
            return Err(e);
        }
        st.refresh_routes_through(&affected);
        Ok(())
    }

    /// `nexthop del id ID`.
    pub(super) fn nexthop_del<A: RouterFamily>(&mut self, id: u32) -> Result<(), ChangeError> {
        if id == 0 {
            return Err(invalid("Invalid nexthop id"));
        }
        let st = A::state_mut(self);
        if !st.objects.contains_key(&id) {
            return Err(Errno::ENOENT.into());
        }
        st.remove_object(id);
        Ok(())
    }

    /// A device went down, lost its carrier or went away (`nexthop_flush_dev`): the objects on
    /// it are deleted, with what that takes along. Blackholes (on `lo`) stay.
    pub(super) fn flush_objects_on(&mut self, dev: IfIndex) {
        fn on<A: RouterFamily>(st: &mut FamilyState<A>, dev: IfIndex) {
            let ids: Vec<u32> = st
                .objects
                .values()
                .filter(|o| matches!(o.kind, NhObjectKind::Hop { hop, .. } if hop.dev == Some(dev)))
                .map(|o| o.id)
                .collect();
            for id in ids {
                st.remove_object(id);
            }
        }
        on(&mut self.v4, dev);
        on(&mut self.v6, dev);
    }

    /// A route through an object (`nhid`): checks it as `fib_create_info` /
    /// `ip6_route_info_create` do and gives it the object's next hops.
    pub(super) fn resolve_nhid<A: RouterFamily>(
        &self,
        spec: &mut RouteSpec<A>,
    ) -> Result<(), ChangeError> {
        let Some(r) = spec.nhid else {
            return Ok(());
        };
        if !spec.hops.is_empty() {
            return Err(invalid(
                "Nexthop specification and nexthop id are mutually exclusive",
            ));
        }
        if !spec.src.is_default() {
            // (IPv4 routes never have one: they are refused before.)
            return Err(invalid("Nexthops can not be used with source routing"));
        }
        let st = A::state(self);
        let Some(obj) = st.objects.get(&r.id) else {
            return Err(match self.object_family(r.id) {
                Some(_) => A::FOREIGN_OBJECT.map_or_else(
                    || not_modelled("IPv4 routes through IPv6 next hops"),
                    invalid,
                ),
                None => invalid("Nexthop id does not exist"),
            });
        };
        if spec.kind != RouteType::Unicast {
            return Err(not_modelled(
                "Routes of a type other than unicast with nhid",
            ));
        }
        A::check_route_through(spec.scope, obj, deciding_hop(st, obj))?;
        let (hops, blackhole) = object_hops(st, obj);
        spec.hops = hops;
        spec.nhid = Some(NhObjectRef {
            id: r.id,
            group: obj.is_group(),
        });
        if blackhole {
            spec.kind = RouteType::Blackhole;
        }
        Ok(())
    }
}

impl Router {
    /// `route del ... nhid ID` names an object that must exist.
    pub(super) fn check_nhid_selector<A: RouterFamily>(
        &self,
        sel: &RouteSelector<A>,
    ) -> Result<(), ChangeError> {
        let Some(id) = sel.nhid else {
            return Ok(());
        };
        // The request's own check first (`rtm_to_fib_config`, `rtm_to_fib6_config`), for a
        // delete as for an add. ip's flush sends a route through an object back as listed,
        // with the object's device and gateway (the kernel's compatibility mode lists them):
        // the kernel refuses it so.
        if sel.dev.is_some() || sel.gateway.is_some() || !sel.hops.is_empty() {
            return Err(invalid(
                "Nexthop specification and nexthop id are mutually exclusive",
            ));
        }
        if !A::state(self).objects.contains_key(&id) {
            return Err(invalid("Nexthop id does not exist"));
        }
        Ok(())
    }
}
