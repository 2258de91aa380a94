//! The kernel's notifications as changes to a mirrored router: decoded once, applied to each
//! copy of the router the mirror keeps (the same events give the same state).
use super::decode;
use super::socket::Notification;
use crate::addr::Family;
use crate::link::{IfAddr, IfIndex, Link};
use crate::nexthop::{NhObject, NhObjectKind};
use crate::rib::InsertMode;
use crate::route::RouteSpec;
use crate::router::{mirror_mode, Router};
use crate::rules::Rule;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
pub(super) const RTM_NEWROUTE: u16 = 24;
pub(super) const RTM_DELROUTE: u16 = 25;
const RTM_NEWRULE: u16 = 32;
const RTM_DELRULE: u16 = 33;
const RTM_NEWNEXTHOP: u16 = 104;
const RTM_DELNEXTHOP: u16 = 105;
const AF_INET: u8 = libc::AF_INET as u8;
const AF_INET6: u8 = libc::AF_INET6 as u8;

/// One notification, as a change.
#[derive(Clone, Debug)]
pub(crate) enum Event {
    Link(Link),
    LinkGone(IfIndex),
    Addr4(IfAddr<Ipv4Addr>, bool),
    Addr6(IfAddr<Ipv6Addr>, bool),
    /// A route added where the mode says, or (`None`) deleted.
    Route4(RouteSpec<Ipv4Addr>, Option<InsertMode>),
    Route6(RouteSpec<Ipv6Addr>, Option<InsertMode>),
    Rule4(Rule<Ipv4Addr>, bool),
    Rule6(Rule<Ipv6Addr>, bool),
    Object4(NhObject<Ipv4Addr>),
    Object6(NhObject<Ipv6Addr>),
    ObjectGone(u32),
}

/// What the decoder remembers between notifications: each next-hop object's family (a
/// group's message names none: its members' decides), `None` for one the model leaves out (a
/// route through it is left out too).
#[derive(Default)]
pub(crate) struct Objects {
    families: HashMap<u32, Option<Family>>,
}

impl Objects {
    /// The objects of a freshly synced router, and those its sync left out.
    pub(crate) fn of(router: &Router, left_out: &[u32]) -> Objects {
        let mut families = HashMap::new();
        for id in router.family::<Ipv4Addr>().objects().keys() {
            families.insert(*id, Some(Family::Inet));
        }
        for id in router.family::<Ipv6Addr>().objects().keys() {
            families.insert(*id, Some(Family::Inet6));
        }
        families.extend(left_out.iter().map(|id| (*id, None)));
        Objects { families }
    }

    /// Whether a route through `id` is one the model holds.
    fn holds(&self, id: u32, family: Family) -> bool {
        self.families.get(&id) == Some(&Some(family))
    }
}

/// What one notification says: `Ok(None)` for what the model does not hold (counted as
/// skipped) or does not listen to.
pub(crate) fn decode(n: &Notification, objects: &mut Objects) -> Result<Option<Event>, String> {
    let p = &n.payload;
    let family = p.first().copied();
    let e = match n.kind {
        RTM_NEWLINK => Event::Link(decode::link(p)?),
        RTM_DELLINK => Event::LinkGone(decode::link(p)?.index),
        RTM_NEWADDR | RTM_DELADDR => {
            let present = n.kind == RTM_NEWADDR;
            match family {
                Some(AF_INET) => match decode::addr(p)? {
                    Some(a) => Event::Addr4(a, present),
                    None => return Ok(None),
                },
                Some(AF_INET6) => match decode::addr(p)? {
                    Some(a) => Event::Addr6(a, present),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        RTM_NEWROUTE | RTM_DELROUTE => {
            let mode = (n.kind == RTM_NEWROUTE).then(|| mirror_mode(n.flags));
            match family {
                Some(AF_INET) => match route::<Ipv4Addr>(p, objects)? {
                    Some(r) => Event::Route4(r, mode),
                    None => return Ok(None),
                },
                Some(AF_INET6) => match route::<Ipv6Addr>(p, objects)? {
                    Some(r) => Event::Route6(r, mode),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        RTM_NEWRULE | RTM_DELRULE => {
            let present = n.kind == RTM_NEWRULE;
            match family {
                Some(AF_INET) => Event::Rule4(decode::rule(p)?, present),
                Some(AF_INET6) => Event::Rule6(decode::rule(p)?, present),
                _ => return Ok(None),
            }
        }
        RTM_NEWNEXTHOP => return object(p, objects),
        RTM_DELNEXTHOP => {
            let Some((_, o)) = decode::nexthop::<Ipv4Addr>(p)? else {
                return Ok(None);
            };
            objects.families.remove(&o.id);
            Event::ObjectGone(o.id)
        }
        _ => return Ok(None),
    };
    Ok(Some(e))
}

/// A route of family `A` whole (IPv6 multipath as one route of several legs); `None` if the
/// model does not hold it, or it goes through an object the model left out.
fn route<A: crate::router::RouterFamily>(
    p: &[u8],
    objects: &Objects,
) -> Result<Option<RouteSpec<A>>, String> {
    let Some(legs) = decode::route::<A>(p, |_| false)? else {
        return Ok(None);
    };
    let Some(first) = legs.first() else {
        return Ok(None);
    };
    if first.nhid.is_some_and(|n| !objects.holds(n.id, A::FAMILY)) {
        return Ok(None);
    }
    let mut r = first.clone();
    r.hops = legs.into_iter().flat_map(|l| l.hops).collect();
    Ok(Some(r))
}

/// A next-hop object in its family: a group's is its members'.
fn object(p: &[u8], objects: &mut Objects) -> Result<Option<Event>, String> {
    let Some((family, o4)) = decode::nexthop::<Ipv4Addr>(p)? else {
        if let Some(id) = object_id(p) {
            objects.families.insert(id, None);
        }
        return Ok(None);
    };
    let id = o4.id;
    let family = match family {
        AF_INET => Some(Family::Inet),
        AF_INET6 => Some(Family::Inet6),
        _ => match &o4.kind {
            NhObjectKind::Group(members) => {
                let of = |f| members.iter().all(|m| objects.holds(m.id, f));
                [Family::Inet, Family::Inet6].into_iter().find(|f| of(*f))
            }
            _ => None,
        },
    };
    objects.families.insert(id, family);
    Ok(match family {
        Some(Family::Inet) => Some(Event::Object4(o4)),
        Some(Family::Inet6) => decode::nexthop::<Ipv6Addr>(p)?.map(|(_, o)| Event::Object6(o)),
        None => None,
    })
}

/// The `NHA_ID` of a next-hop message, however much of the rest the model holds.
pub(crate) fn object_id(p: &[u8]) -> Option<u32> {
    use netlink_packet_core::NlasIterator;
    NlasIterator::new(p.get(8..)?)
        .filter_map(Result::ok)
        .find(|nla| nla.kind() == 1)
        .and_then(|nla| {
            nla.value()
                .get(..4)
                .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
        })
}

/// Applies one event (inside the change set the caller opened). An error means the mirror and
/// the kernel differ: the caller resyncs.
pub(crate) fn apply(router: &mut Router, e: &Event) -> Result<(), String> {
    match e {
        Event::Link(l) => router.mirror_link(l.clone()),
        Event::LinkGone(i) => router.mirror_link_gone(*i),
        Event::Addr4(a, present) => router.mirror_addr(a.clone(), *present),
        Event::Addr6(a, present) => router.mirror_addr(a.clone(), *present),
        Event::Route4(r, Some(mode)) => router.mirror_route(r.clone(), *mode)?,
        Event::Route6(r, Some(mode)) => router.mirror_route(r.clone(), *mode)?,
        Event::Route4(r, None) => router.mirror_route_gone(r.clone()),
        Event::Route6(r, None) => router.mirror_route_gone(r.clone()),
        Event::Rule4(r, present) => router.mirror_rule(r.clone(), *present),
        Event::Rule6(r, present) => router.mirror_rule(r.clone(), *present),
        Event::Object4(o) => router.mirror_object(o.clone())?,
        Event::Object6(o) => router.mirror_object(o.clone())?,
        Event::ObjectGone(id) => router.mirror_object_gone(*id),
    }
    Ok(())
}

/// Applies events as one change set: all of them, or (on an error) none.
pub(crate) fn apply_all(router: &mut Router, events: &[Event]) -> Result<(), String> {
    router.begin();
    for e in events {
        if let Err(err) = apply(router, e) {
            router.rollback();
            return Err(format!("{err} (applying {e:?})"));
        }
    }
    router.commit();
    Ok(())
}
