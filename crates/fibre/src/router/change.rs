//! The changes a router applies, in change sets.
use super::RouterFamily;
use crate::addr::{Address, Family};
use crate::link::IfAddr;
use crate::nexthop::NhObject;
use crate::rib::{InsertMode, RouteSelector};
use crate::route::*;
use crate::rules::{Rule, RuleSelector};
use std::net::{Ipv4Addr, Ipv6Addr};

/// A change the router applies: to links, or to the state of one family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// `link add NAME type veth peer name PEER`
    LinkAddVeth {
        /// The new device's name.
        name: String,
        /// The peer's name.
        peer: String,
    },
    /// `link set NAME up|down`
    LinkSet {
        /// The device.
        dev: IfIndex,
        /// `up` (true) or `down` (false).
        up: bool,
    },
    /// `link del NAME`
    LinkDel {
        /// The device (its veth peer goes with it).
        dev: IfIndex,
    },
    /// A change to IPv4 addresses, routes or rules.
    Inet(FamilyChange<Ipv4Addr>),
    /// A change to IPv6 addresses, routes or rules.
    Inet6(FamilyChange<Ipv6Addr>),
}

impl Change {
    /// The family of a route change (an add or a delete); `None` for any other change. A route
    /// change edits only its family's route lists: its own set shares nothing else (see
    /// `router::set_snapshot`), and it leaves the gateway checks remembered.
    pub(super) fn route_family(&self) -> Option<Family> {
        use FamilyChange::{Route, RouteDel};
        match self {
            Change::Inet(Route(..) | RouteDel(..)) => Some(Family::Inet),
            Change::Inet6(Route(..) | RouteDel(..)) => Some(Family::Inet6),
            _ => None,
        }
    }
}

/// A change to one family's addresses, routes or rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FamilyChange<A: Address> {
    /// `addr add`
    AddrAdd(IfAddr<A>),
    /// `addr replace` or `addr change`: an address that is there takes what the kernel lets a
    /// replacement change (its lifetimes; IPv4 its metric; IPv6 its metric where one is given,
    /// and `noprefixroute`); one that is not is added.
    AddrReplace(IfAddr<A>),
    /// `addr del`
    AddrDel(IfAddr<A>),
    /// `route add|replace|append|prepend|change`, as the mode says.
    Route(RouteSpec<A>, InsertMode),
    /// `route del`: the routes of a table that the selector selects.
    RouteDel(TableId, RouteSelector<A>),
    /// `rule add`
    RuleAdd(Rule<A>),
    /// `rule del`
    RuleDel(RuleSelector<A>),
    /// `nexthop add` (false) or `nexthop replace` (true); id 0 asks for a free id.
    NexthopAdd(NhObject<A>, bool),
    /// `nexthop del id ID`.
    NexthopDel(u32),
}

impl<A: RouterFamily> From<FamilyChange<A>> for Change {
    fn from(c: FamilyChange<A>) -> Change {
        A::wrap(c)
    }
}
