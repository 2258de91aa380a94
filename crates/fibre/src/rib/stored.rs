//! How a table stores its routes: 16 bytes a route, its attributes shared.
//!
//! The kernel splits a route in two: a `fib_alias` per route in the prefix's leaf (TOS, type,
//! a pointer) and a `fib_info` shared by every route with the same attributes and next hops
//! (protocol, scope, preferred source, metrics, next hops). A full BGP view has a million
//! routes and a handful of `fib_info`s. fibre does the same:
//!
//! - [`StoredRoute`] is what a list holds: what differs from route to route (TOS, type,
//!   metric, router preference), the next-hop group's id ([`NhId`], shared through the
//!   family's [`crate::nexthop::NhTable`]) and the id of its [`RouteAttrs`], 16 bytes. Its
//!   destination and source are the list's (the table's index keeps them), its table the
//!   table's.
//! - [`AttrTable`] interns the attributes, per table, counted by the stored routes that
//!   refer to them: an entry goes when its last route does.
//!
//! A [`Route`] is spelled out from a stored one when asked for ([`AttrTable::route`]); every
//! list edit spells the list out, runs the family's semantics on it, and stores it again
//! (`Rib::edit`). Before this (issue 15, fifth round) a list held whole `Route`s: 56 bytes for
//! IPv4 and 128 for IPv6, the destination, source and table repeated in each.
use crate::addr::Address;
use crate::nexthop::{NhId, NhObjectRef};
use crate::prefix::Prefix;
use crate::route::{Protocol, Route, RouteType, RouterPref, Scope, TableId};
use smallvec::SmallVec;
use std::collections::HashMap;

/// What routes share (the kernel's `fib_info` without the next hops and the metric).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RouteAttrs<A: Address> {
    /// `proto`.
    pub protocol: Protocol,
    /// `scope`.
    pub scope: Scope,
    /// Preferred source (`src`).
    pub prefsrc: Option<A>,
    /// `mtu`.
    pub mtu: Option<u32>,
    /// `nhid`.
    pub nhid: Option<NhObjectRef>,
}

impl<A: Address> RouteAttrs<A> {
    fn of<H>(r: &Route<A, H>) -> Self {
        RouteAttrs {
            protocol: r.protocol,
            scope: r.scope,
            prefsrc: r.prefsrc,
            mtu: r.mtu,
            nhid: r.nhid,
        }
    }
}

/// A route as its list stores it (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredRoute {
    /// The next-hop group.
    pub hops: NhId,
    /// The attributes' id in the table's [`AttrTable`].
    pub attrs: u32,
    /// `metric`.
    pub metric: u32,
    /// IPv4 TOS selector.
    pub tos: u8,
    /// The route type.
    pub kind: RouteType,
    /// IPv6 router preference.
    pub pref: RouterPref,
    /// The destination's length: what a caller that reached the list by its slot (a compiled
    /// FIB) and holds an address inside the destination spells the destination from.
    pub dst_len: u8,
}

/// One stored list: a route inline (most destinations have one), more on the heap.
pub type StoredList = SmallVec<[StoredRoute; 1]>;

/// A list spelled out, what the family's semantics work on.
pub type RouteVec<A> = SmallVec<[Route<A>; 1]>;

/// `list` copied (for a rollback): the same routes in the same order, as `clone` gives.
pub(super) fn copy_of<A: Address>(list: &RouteVec<A>) -> RouteVec<A> {
    // Pushed, not cloned: `SmallVec`'s `clone` collects through `extend` (27 instructions a
    // route on the load of the IPv4 view, where each new destination saves its empty list,
    // and 13 a route change; callgrind, docs/fib.md's thirty-first round).
    let mut copy = RouteVec::new();
    for route in list {
        copy.push(route.clone());
    }
    copy
}

/// A stored list as a lookup reads it: each route spelled out when asked for, nothing
/// copied or allocated up front.
#[derive(Clone, Copy, Debug)]
pub struct ListView<'a, A: Address> {
    attrs: &'a AttrTable<A>,
    table: TableId,
    dst: Prefix<A>,
    src: Prefix<A>,
    routes: &'a [StoredRoute],
}

impl<'a, A: Address> ListView<'a, A> {
    /// Table `table`'s list `routes` of (`dst`, `src`), read through `attrs`.
    pub fn new(
        attrs: &'a AttrTable<A>,
        table: TableId,
        dst: Prefix<A>,
        src: Prefix<A>,
        routes: &'a [StoredRoute],
    ) -> Self {
        ListView {
            attrs,
            table,
            dst,
            src,
            routes,
        }
    }
    /// The routes as stored.
    pub fn stored(&self) -> &'a [StoredRoute] {
        self.routes
    }
    /// The routes in order, spelled out one at a time.
    pub fn iter(&self) -> impl Iterator<Item = Route<A>> + 'a {
        let ListView {
            attrs,
            table,
            dst,
            src,
            routes,
        } = *self;
        routes.iter().map(move |s| attrs.route(table, dst, src, s))
    }
    /// The attributes of `s`, a route of this list.
    #[inline]
    pub fn attrs_of(&self, s: &StoredRoute) -> &'a RouteAttrs<A> {
        &self.attrs.entries[s.attrs as usize].0
    }
    /// Route `i` spelled out.
    #[inline]
    pub fn route(&self, i: usize) -> Route<A> {
        self.attrs
            .route(self.table, self.dst, self.src, &self.routes[i])
    }
    /// The whole list spelled out.
    pub fn to_vec(&self) -> RouteVec<A> {
        // Pushed, not collected: `SmallVec`'s `extend` cost 100 instructions a route on the
        // load of a full view (callgrind).
        let mut out = RouteVec::new();
        for s in self.routes {
            out.push(self.attrs.route(self.table, self.dst, self.src, s));
        }
        out
    }
}

/// The attributes of one table's routes, interned and counted (see the module docs).
#[derive(Clone, Debug)]
pub struct AttrTable<A: Address> {
    entries: Vec<(RouteAttrs<A>, u32)>,
    index: HashMap<RouteAttrs<A>, u32, foldhash::fast::RandomState>,
    free: Vec<u32>,
    /// The set stored last and its id: a load stores a million routes with a handful of sets,
    /// most in runs of one, and a comparison costs less than the hash (dropped with the set).
    last: Option<(RouteAttrs<A>, u32)>,
}

impl<A: Address> Default for AttrTable<A> {
    fn default() -> Self {
        AttrTable {
            entries: Vec::new(),
            index: HashMap::default(),
            free: Vec::new(),
            last: None,
        }
    }
}

impl<A: Address> AttrTable<A> {
    /// `r` as a list stores it; its attributes gain a reference.
    pub fn store(&mut self, r: &Route<A>) -> StoredRoute {
        let a = RouteAttrs::of(r);
        let found = match self.last {
            Some((l, id)) if l == a => Some(id),
            _ => self.index.get(&a).copied(),
        };
        let id = match found {
            Some(id) => {
                self.entries[id as usize].1 += 1;
                id
            }
            None => {
                let id = match self.free.pop() {
                    Some(id) => {
                        self.entries[id as usize] = (a, 1);
                        id
                    }
                    None => {
                        self.entries.push((a, 1));
                        (self.entries.len() - 1) as u32
                    }
                };
                self.index.insert(a, id);
                id
            }
        };
        self.last = Some((a, id));
        StoredRoute {
            hops: r.hops,
            attrs: id,
            metric: r.metric,
            tos: r.tos,
            kind: r.kind,
            pref: r.pref,
            dst_len: r.dst.len(),
        }
    }

    /// A stored route is gone: its attributes lose a reference (and go with the last).
    pub fn release(&mut self, s: &StoredRoute) {
        let e = &mut self.entries[s.attrs as usize];
        e.1 -= 1;
        if e.1 == 0 {
            self.index.remove(&e.0);
            self.free.push(s.attrs);
            if self.last.is_some_and(|(_, id)| id == s.attrs) {
                self.last = None;
            }
        }
    }

    /// The route `s` of table `table`'s list of (`dst`, `src`), spelled out.
    #[inline]
    pub fn route(
        &self,
        table: TableId,
        dst: Prefix<A>,
        src: Prefix<A>,
        s: &StoredRoute,
    ) -> Route<A> {
        let a = &self.entries[s.attrs as usize].0;
        Route {
            table,
            dst,
            src,
            tos: s.tos,
            metric: s.metric,
            kind: s.kind,
            protocol: a.protocol,
            scope: a.scope,
            prefsrc: a.prefsrc,
            pref: s.pref,
            mtu: a.mtu,
            nhid: a.nhid,
            hops: s.hops,
        }
    }

    /// A list stored: its attributes each gain a reference.
    pub fn store_list(&mut self, l: &[Route<A>]) -> StoredList {
        let mut out = StoredList::new();
        for r in l {
            out.push(self.store(r));
        }
        out
    }

    /// Attribute sets held (for tests: every one is referred to).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no attribute set is held.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}
