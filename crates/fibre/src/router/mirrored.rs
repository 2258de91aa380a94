//! A mirrored kernel's notifications, applied to the router (inside a change set the mirror
//! opens).
//!
//! A notification says what the kernel did, not what a user asked: it is applied without the
//! checks a request takes (the kernel made them), and it is applied as state, so that one
//! applied twice changes nothing (a resync replays the notifications that came during its
//! dump): a route, rule or address already there is not added again, one already gone is not
//! an error. What the kernel does without telling is done here, as the kernel does it:
//!
//! - a device going down takes the IPv4 routes through it (`fib_sync_down_dev`, no
//!   `RTM_DELROUTE`); IPv6 says what it removes (`skip_notify_on_dev_down` is off by default);
//! - a device going down, losing its carrier or going away takes its next-hop objects and the
//!   routes through them (`nexthop_flush_dev` tells nobody);
//! - an address going away takes the IPv4 routes with it as preferred source, and clears it
//!   from IPv6 routes (`fib_sync_down_addr`, `rt6_remove_prefsrc`);
//! - a deleted or replaced object takes or changes the routes through it.
use super::{Router, RouterFamily};
use crate::addr::Family;
use crate::link::{IfAddr, IfIndex, Link};
use crate::nexthop::{NhObject, NhObjectKind, NhObjectRef};
use crate::rib::{InsertMode, RouteSelector};
use crate::route::*;
use crate::rules::Rule;
use crate::Prefix;
use std::sync::Arc;

/// A route as the model holds it: IPv6 multipath as one route per leg.
fn legs<A: RouterFamily>(spec: &RouteSpec<A>) -> Vec<RouteSpec<A>> {
    if A::FAMILY == Family::Inet6 && spec.hops.len() > 1 && spec.nhid.is_none() {
        spec.hops
            .iter()
            .map(|h| RouteSpec {
                hops: vec![*h],
                ..spec.clone()
            })
            .collect()
    } else {
        vec![spec.clone()]
    }
}

impl Router {
    /// `RTM_NEWLINK`: a new device, or a device's new state.
    pub(crate) fn mirror_link(&mut self, link: Link) {
        let dev = link.index;
        // What the device was, asked of the links themselves (no second copy of "ready").
        let (was_up, was_ready) = (self.links.is_up(dev), self.links.is_ready(dev));
        Arc::make_mut(&mut self.links).mirror_upsert(link);
        self.v4.fibs.links_changed = true;
        self.v6.fibs.links_changed = true;
        if was_ready && !self.links.is_ready(dev) {
            self.flush_objects_on(dev);
        }
        if was_up && !self.links.is_up(dev) {
            self.flush_dev_v4(dev, false);
        }
    }

    /// `RTM_DELLINK`: the device and everything on it go.
    pub(crate) fn mirror_link_gone(&mut self, dev: IfIndex) {
        if self.links.by_index(dev).is_none() {
            return;
        }
        self.v4.fibs.links_changed = true;
        self.v6.fibs.links_changed = true;
        let (v4_before, v6_before) = (self.v4.addrs.clone(), self.v6.addrs.clone());
        self.flush_objects_on(dev);
        Arc::make_mut(&mut self.v4.addrs).retain(|a| a.dev != dev);
        Arc::make_mut(&mut self.v6.addrs).retain(|a| a.dev != dev);
        self.flush_dev(dev, true);
        Arc::make_mut(&mut self.links).remove(dev);
        <std::net::Ipv4Addr as super::family::Kernel>::addresses_gone(self, &v4_before);
        <std::net::Ipv6Addr as super::family::Kernel>::addresses_gone(self, &v6_before);
    }

    /// `RTM_NEWADDR` (`present`) or `RTM_DELADDR`.
    pub(crate) fn mirror_addr<A: RouterFamily>(&mut self, a: IfAddr<A>, present: bool) {
        let st = A::state_mut(self);
        // IPv4 tells addresses apart by length too; IPv6 by the address alone.
        let same = |o: &IfAddr<A>| {
            o.addr == a.addr && o.dev == a.dev && (A::FAMILY == Family::Inet6 || o.len == a.len)
        };
        let at = st.addrs.iter().position(same);
        match (at, present) {
            (Some(i), true) => Arc::make_mut(&mut st.addrs)[i] = a,
            (None, true) if A::FAMILY == Family::Inet6 => {
                let at = crate::link::ipv6_list_position(&st.addrs, &a);
                Arc::make_mut(&mut st.addrs).insert(at, a);
            }
            (None, true) => Arc::make_mut(&mut st.addrs).push(a),
            (Some(i), false) => {
                let before = st.addrs.clone();
                let gone = Arc::make_mut(&mut st.addrs).remove(i);
                let dev = gone.dev;
                if A::FAMILY == Family::Inet {
                    self.mirror_own_local_route_gone(&gone, &before);
                }
                A::addresses_gone(self, &before);
                if A::FAMILY == Family::Inet {
                    self.last_v4_address_gone(dev);
                }
            }
            (None, false) => {}
        }
    }

    /// A route through an object takes the object's next hops (and a blackhole's type).
    fn mirror_resolve<A: RouterFamily>(&self, spec: &mut RouteSpec<A>) -> Result<(), String> {
        let Some(r) = spec.nhid else { return Ok(()) };
        let st = A::state(self);
        let obj = st
            .objects
            .get(&r.id)
            .ok_or_else(|| format!("a route through object {}, which is not there", r.id))?;
        let (hops, blackhole) = super::nhobjects::object_hops(st, obj);
        spec.hops = hops;
        spec.nhid = Some(NhObjectRef {
            id: r.id,
            group: obj.is_group(),
        });
        spec.kind = if blackhole {
            RouteType::Blackhole
        } else {
            RouteType::Unicast
        };
        Ok(())
    }

    /// Whether the table holds a route equal to `spec` (one leg of it, for IPv6 multipath).
    fn mirror_has<A: RouterFamily>(&self, spec: &RouteSpec<A>) -> bool {
        self.mirror_find(spec, false).is_some()
    }

    /// The route the table holds that is `spec`; with `any_weight`, whatever its next hop's
    /// weight (IPv6 tells of one leg leaving a multipath route without its weight).
    fn mirror_find<A: RouterFamily>(
        &self,
        spec: &RouteSpec<A>,
        any_weight: bool,
    ) -> Option<RouteSpec<A>> {
        let st = A::state(self);
        let unweighted = |r: &RouteSpec<A>| {
            let mut r = r.clone();
            r.hops.iter_mut().for_each(|h| h.weight = 1);
            r
        };
        let want = if any_weight {
            unweighted(spec)
        } else {
            spec.clone()
        };
        st.table(spec.table)?
            .get(&spec.dst, &spec.src)
            .iter()
            .map(|r| r.with_hops(st.nhs.get(r.hops).to_vec()))
            .find(|r| *r == want || (any_weight && unweighted(r) == want))
    }

    /// `RTM_NEWROUTE`, placed as its flags say (see [`mirror_mode`]). A route already there
    /// is left alone: the kernel never holds one twice, so it is a replay, or (a replaced
    /// object) the kernel telling of a route whose next hops followed the object here too. But
    /// an IPv6 replace by a route already there is applied: it takes that route's siblings.
    pub(crate) fn mirror_route<A: RouterFamily>(
        &mut self,
        mut spec: RouteSpec<A>,
        mode: InsertMode,
    ) -> Result<(), String> {
        self.mirror_resolve(&mut spec)?;
        let legs = legs(&spec);
        let new: Vec<_> = legs.iter().filter(|l| !self.mirror_has(l)).collect();
        // An IPv6 replace by a route already there still takes its siblings away; one through
        // an object is the kernel telling that the object changed.
        let v6_replace = A::FAMILY == Family::Inet6 && mode == InsertMode::Replace;
        if new.is_empty() && !(v6_replace && spec.nhid.is_none()) {
            return Ok(());
        }
        if !new.is_empty() && new.len() < legs.len() && mode != InsertMode::Replace {
            // IPv6 tells of a leg joining siblings with the whole group: the new legs join.
            for leg in new {
                let leg = leg.clone();
                A::state_mut(self)
                    .insert(&leg, InsertMode::Append)
                    .map_err(|e| format!("route {}: {e}", leg.dst))?;
            }
            return Ok(());
        }
        if A::FAMILY == Family::Inet
            && spec.kind == RouteType::Local
            && spec.protocol != PROTO_KERNEL
        {
            A::state_mut(self).custom_local_routes = true;
        }
        A::state_mut(self)
            .insert(&spec, mode)
            .map_err(|e| format!("route {}: {e}", spec.dst))
    }

    /// `fib_del_ifaddr` deletes an IPv4 address's own local route (unless another address of
    /// the device has the same local) before it asks whether the address is still local, but
    /// the kernel tells of that deletion only after `RTM_DELADDR` (`__inet_del_ifa`: "send
    /// message first, then call notifier"). The mirror takes the route now, so that
    /// [`family::Kernel::addresses_gone`] asks the question in the kernel's state; the
    /// `RTM_DELROUTE` that follows finds it gone.
    /// (`before`: the addresses with `gone`, whose order makes it primary or secondary, and
    /// so its local route's source.)
    fn mirror_own_local_route_gone<A: RouterFamily>(
        &mut self,
        gone: &IfAddr<A>,
        before: &[IfAddr<A>],
    ) {
        let st = A::state(self);
        if st
            .addrs
            .iter()
            .any(|o| o.dev == gone.dev && o.addr == gone.addr)
        {
            return;
        }
        let host = Prefix::new(gone.addr, A::WIDTH);
        let own = A::derive(&self.links, before).into_iter().find(|s| {
            s.kind == RouteType::Local
                && s.dst == host
                && s.hops.iter().any(|h| h.dev == Some(gone.dev))
        });
        if let Some(spec) = own {
            let _ = A::state_mut(self).delete(spec.table, &RouteSelector::exact(&spec));
        }
    }

    /// `RTM_DELROUTE`: the route (each leg, for IPv6 multipath), if still there.
    pub(crate) fn mirror_route_gone<A: RouterFamily>(&mut self, mut spec: RouteSpec<A>) {
        if spec.nhid.is_some() && self.mirror_resolve(&mut spec).is_err() {
            // The object went first, and its routes with it.
            return;
        }
        let legs = legs(&spec);
        for leg in legs {
            let any_weight = A::FAMILY == Family::Inet6 && leg.nhid.is_none();
            if let Some(leg) = self.mirror_find(&leg, any_weight) {
                let mut sel = RouteSelector::exact(&leg);
                sel.leg = A::FAMILY == Family::Inet6;
                let _ = A::state_mut(self).delete(leg.table, &sel);
            }
        }
    }

    /// `RTM_NEWRULE` (`present`) or `RTM_DELRULE`.
    pub(crate) fn mirror_rule<A: RouterFamily>(&mut self, rule: Rule<A>, present: bool) {
        let st = A::state_mut(self);
        if present {
            if let crate::rules::RuleAction::Lookup(t) = rule.action {
                st.table_mut(t);
            }
            Arc::make_mut(&mut st.rules).mirror_add(rule);
        } else {
            Arc::make_mut(&mut st.rules).mirror_remove(&rule);
        }
    }

    /// `RTM_NEWNEXTHOP`: a new object, or a new version of one (the routes through it, and
    /// through groups holding it, follow).
    pub(crate) fn mirror_object<A: RouterFamily>(
        &mut self,
        obj: NhObject<A>,
    ) -> Result<(), String> {
        let id = obj.id;
        match self.object_family(id) {
            Some(f) if f != A::FAMILY => {
                return Err(format!("object {id} changed family"));
            }
            Some(_) => {
                let st = A::state_mut(self);
                if st.objects.get(&id) == Some(&obj) {
                    return Ok(());
                }
                let mut affected = std::collections::BTreeSet::from([id]);
                for g in st.objects.values() {
                    if let NhObjectKind::Group(members) = &g.kind {
                        if members.iter().any(|m| m.id == id) {
                            affected.insert(g.id);
                        }
                    }
                }
                Arc::make_mut(&mut st.objects).insert(id, obj);
                st.refresh_routes_through(&affected);
            }
            None => {
                Arc::make_mut(&mut A::state_mut(self).objects).insert(id, obj);
            }
        }
        Ok(())
    }

    /// A resync cannot see whether rules were ever changed (the kernel's
    /// `fib_has_custom_rules`, which never goes back): a router that had seen them changed
    /// passes that on to the one that replaces it.
    pub(crate) fn mirror_inherit_rules_customised(&mut self, from: &Router) {
        if from.v4.rules.customised && !self.v4.rules.customised {
            Arc::make_mut(&mut self.v4.rules).customised = true;
            // IPv4 local and main get FIBs of their own.
            let disabled = self.v4.fibs.disabled;
            self.v4.fibs = super::fibs::Fibs::rebuild(&self.v4, &*self.links);
            self.v4.fibs.disabled = disabled;
        }
        if from.v6.rules.customised {
            Arc::make_mut(&mut self.v6.rules).customised = true;
        }
    }

    /// `RTM_DELNEXTHOP`: the object, with what deleting it takes along.
    pub(crate) fn mirror_object_gone(&mut self, id: u32) {
        self.v4.remove_object(id);
        self.v6.remove_object(id);
    }
}

/// Where a route a notification tells of goes, from its flags: the kernel marks a replace
/// `NLM_F_REPLACE`, an append `NLM_F_APPEND`, a route of a new key `NLM_F_EXCL` (IPv4
/// `fib_table_insert`, IPv6 `fib6_add_rt2node`), and one put before others of its key none.
pub(crate) fn mirror_mode(flags: u16) -> InsertMode {
    const NLM_F_REPLACE: u16 = 0x100;
    const NLM_F_EXCL: u16 = 0x200;
    const NLM_F_APPEND: u16 = 0x800;
    if flags & NLM_F_REPLACE != 0 {
        InsertMode::Replace
    } else if flags & NLM_F_APPEND != 0 {
        InsertMode::Append
    } else if flags & NLM_F_EXCL != 0 {
        InsertMode::Add
    } else {
        InsertMode::Prepend
    }
}
