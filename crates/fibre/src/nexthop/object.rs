//! Next-hop objects (`ip nexthop`, net/ipv4/nexthop.c): next hops with an id of their own, which
//! routes name with `nhid` instead of spelling out `via`/`dev`. Routing daemons (FRR 8 and later)
//! install routes this way, so that a change of path is one replaced object rather than a
//! replaced route per prefix.
//!
//! The kernel's rules that shape this model:
//! - ids are one space for both families; a group's members are objects too, and groups do not
//!   nest;
//! - an object lives as long as its device is up with carrier: going down deletes it (and the
//!   routes through it), shrinks the groups holding it, and deletes the groups it empties;
//! - replacing an object changes every route through it, in place.
//!
//! Not modelled (refused with an error that says so): resilient groups, `fdb` next hops, groups
//! that mix IPv4 and IPv6 members, and IPv4 routes through IPv6 next hops.
use super::NextHop;
use crate::addr::Address;

/// A member of a group: an object id and its weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupMember {
    /// The member object's id (a single next hop or a blackhole, never a group).
    pub id: u32,
    /// ECMP weight, 1..=256 as ip takes it (`ID,WEIGHT`).
    pub weight: u16,
}

/// What an object is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub enum NhObjectKind<A: Address> {
    /// One way out: `via GW dev DEV [onlink]` or `dev DEV`.
    Hop {
        /// The next hop (weight 1; groups give weights).
        hop: NextHop<A>,
        /// The next hop's scope (`rtm_scope` numbers, as `route::Scope`), decided when the
        /// object is created: IPv4 `link` through a gateway on a connected subnet, `host` for
        /// a device alone or a gateway that is one of this host's addresses; IPv6 always
        /// `link`. (A plain `u8` here: routes name next hops, not the other way round.)
        scope: u8,
    },
    /// `blackhole`: routes through it discard what they match (they report type blackhole).
    Blackhole,
    /// `group ID[,WEIGHT]/...` (`type mpath`): multipath over other objects, in this order.
    Group(Vec<GroupMember>),
}

/// A next-hop object of family `A` (a group's family is its members').
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct NhObject<A: Address> {
    /// Its id: any `u32` but 0. A request with id 0 asks the kernel to pick one.
    pub id: u32,
    /// `proto`: who installed it (`rtm_protocol` numbers, as `route::Protocol`), kept as
    /// given (`unspec`, 0, when not given).
    pub protocol: u8,
    /// What it is.
    pub kind: NhObjectKind<A>,
}

impl<A: Address> NhObject<A> {
    /// Whether the object is a group.
    pub fn is_group(&self) -> bool {
        matches!(self.kind, NhObjectKind::Group(_))
    }
}

/// A route's next-hop object (`nhid ID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct NhObjectRef {
    /// The object's id.
    pub id: u32,
    /// The object is a group: IPv6 prints a route through a group as multipath even when the
    /// group has one member. (Set by the router; an object never changes between single and
    /// group, so it stays true.)
    pub group: bool,
}
