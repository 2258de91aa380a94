//! The RIB: the authoritative, ordered set of routes of one table and one family.
//!
//! Structure (generic over the family): a [`PrefixMap`] keyed by destination prefix; each
//! destination holds its routes without a source in an ordered list and, for IPv6 source-specific
//! routes, a source subtree (another [`PrefixMap`], keyed by source prefix) of ordered lists.
//! A destination's entry sits in the map's slot for it, apart from the map's index, and a list
//! of one route (most of a full table) sits in the entry: a search reads small keys, and a
//! destination reached by its index (as a compiled FIB reaches it) is one cache line away.
//! Lists hold routes in their stored form ([`StoredRoute`], 16 bytes: the attributes routes
//! share are interned per table, as the kernel shares `fib_info`s); every method here hands
//! routes out spelled out ([`Route`], by value), and every edit spells the list out, lets the
//! family's semantics work on it, and stores it again.
//!
//! Semantics (per family, in [`ipv4`] and [`ipv6`]): how a list is ordered on insert, what `add`,
//! `append`, `prepend`, `replace`, `change` and `del` do to it, and which route of a list a lookup
//! takes. They follow net/ipv4/fib_trie.c and net/ipv6/ip6_fib.c + route.c; see
//! `docs/semantics.md`.
//!
//! Invariants, kept by every method here: no empty list is stored; a list is in the order its
//! family's insert rules produce; every route's `nh` holds one reference in the [`NhTable`];
//! every stored route holds one reference to its attributes in the table's [`AttrTable`].
pub mod ipv4;
pub mod ipv6;
mod stored;

use crate::addr::Address;
use crate::error::{ChangeError, Errno};
use crate::flow::Flow;
use crate::link::IfIndex;
use crate::nexthop::NhId;
use crate::nexthop::{NextHop, NhTable};
use crate::prefix::Prefix;
pub use crate::prefix_map::PrefixMap;
use crate::route::{Protocol, Route, RouteType, Scope, TableId};
use smallvec::SmallVec;
pub use stored::{AttrTable, ListView, RouteAttrs, RouteVec, StoredList, StoredRoute};

/// How an insert treats routes of the same key, named after `ip route` verbs (and netlink flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertMode {
    /// `add` (NLM_F_CREATE | NLM_F_EXCL): fails with EEXIST if the key exists.
    Add,
    /// `append` (NLM_F_CREATE | NLM_F_APPEND): after routes of the same key.
    Append,
    /// `prepend` (NLM_F_CREATE): before routes of the same key (IPv4).
    Prepend,
    /// `replace` (NLM_F_CREATE | NLM_F_REPLACE): replaces the first route of the key, or adds.
    Replace,
    /// `change` (NLM_F_REPLACE): replaces, ENOENT if there is nothing to replace.
    Change,
}

/// What `route del` names; `None` fields match anything (as the kernel treats absent attributes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteSelector<A: Address> {
    /// The destination prefix: always given.
    pub dst: Prefix<A>,
    /// IPv6 source prefix (`from`); the whole address space for none.
    pub src: Prefix<A>,
    /// IPv4 `tos`: compared exactly.
    pub tos: u8,
    /// `metric`.
    pub metric: Option<u32>,
    /// Route type (compared by IPv4 only).
    pub kind: Option<RouteType>,
    /// `proto`.
    pub protocol: Option<Protocol>,
    /// `scope` (compared by IPv4 only).
    pub scope: Option<Scope>,
    /// `src` (`RTA_PREFSRC`; compared by IPv4 only).
    pub prefsrc: Option<A>,
    /// Next hops named: each given gateway/device must match; empty matches any.
    pub hops: Vec<NextHop<A>>,
    /// Whether a device was named (`dev X`) on a single-hop selector.
    pub dev: Option<IfIndex>,
    /// The gateway named (`via GW`) on a single-hop selector.
    pub gateway: Option<A>,
    /// `nhid ID`: only routes through that next-hop object (their next hops are then not
    /// compared, as `fib_nh_match` compares the id alone).
    pub nhid: Option<u32>,
    /// IPv6: one leg of a multipath delete, which removes that route alone, never its siblings.
    pub leg: bool,
}

impl<A: Address> RouteSelector<A> {
    /// Names exactly this route (every attribute and every next hop): `del` of one given route.
    /// A multipath route is named by all its legs (a first-leg match could pick another route);
    /// an IPv6 reject route, which IPv6 deletes tell apart by device only, by `lo`.
    pub fn exact(spec: &crate::route::RouteSpec<A>) -> Self {
        let single = (spec.hops.len() == 1).then(|| &spec.hops[0]);
        let reject_dev = (A::FAMILY == crate::addr::Family::Inet6 && spec.hops.is_empty())
            .then_some(crate::route::LOOPBACK_IFINDEX);
        RouteSelector {
            dst: spec.dst,
            src: spec.src,
            tos: spec.tos,
            metric: Some(spec.metric),
            kind: Some(spec.kind),
            protocol: Some(spec.protocol),
            scope: Some(spec.scope),
            prefsrc: spec.prefsrc,
            hops: if spec.hops.len() > 1 {
                spec.hops.clone()
            } else {
                Vec::new()
            },
            dev: single.and_then(|h| h.dev).or(reject_dev),
            gateway: single.and_then(|h| h.gateway),
            nhid: spec.nhid.map(|n| n.id),
            leg: false,
        }
    }

    /// A selector giving only the destination (`ip route del DST`): every other field matches
    /// anything.
    pub fn prefix(dst: Prefix<A>) -> Self {
        RouteSelector {
            dst,
            src: Prefix::any(),
            tos: 0,
            metric: None,
            kind: None,
            protocol: None,
            scope: None,
            prefsrc: None,
            hops: Vec::new(),
            dev: None,
            gateway: None,
            nhid: None,
            leg: false,
        }
    }
}

/// What a lookup in one table concluded: the routes spelled out (a table stores them
/// compactly, see [`StoredRoute`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableLookup<A: Address> {
    /// A route matched; `hop` is the next hop the kernel would consider first.
    Match {
        /// The route taken.
        route: Route<A>,
        /// Index of the next hop in the route's group.
        hop: usize,
        /// IPv6: the route's ECMP siblings (see [`Siblings`]), found in its list by the
        /// lookup (no second walk to find them).
        siblings: Siblings,
    },
    /// A reject route matched (or, IPv4, `throw` as `EAGAIN`).
    Reject {
        /// The reject route.
        route: Route<A>,
        /// The error the lookup answers.
        errno: Errno,
    },
    /// Nothing in this table.
    None,
    /// IPv4: a route through a next-hop object none of whose next hops fits the flow. The
    /// kernel then gives up on every prefix with this one's address (its trie leaf holds them
    /// all) and goes on with shorter addresses (`fib_table_lookup`'s `goto miss`). Only a
    /// family's `select` says this; a table lookup never does.
    Miss,
}

/// IPv6: the next-hop groups of a matched route's ECMP siblings, the route's own first, then
/// the siblings after it in its list, then those before it; inline up to four (a route get
/// does not allocate). Empty where the route has none (IPv4 keeps a multipath route whole).
pub type Siblings = SmallVec<[NhId; 4]>;

/// The facts about the world a lookup needs besides the table: which devices are up.
pub trait LinkState {
    /// Whether `dev` is up.
    fn is_up(&self, dev: IfIndex) -> bool;
}
/// Every device up: for tables looked at without a router around them.
pub struct AllUp;
impl LinkState for AllUp {
    fn is_up(&self, _: IfIndex) -> bool {
        true
    }
}

/// A family's kernel semantics: ordering and selection inside one route list.
pub trait KernelSemantics: Address {
    /// Inserts `route` into `list` per `mode`. Returns the routes it displaced (the caller releases
    /// their next-hop references). On error `list` is unchanged.
    fn insert(
        list: &mut RouteVec<Self>,
        route: Route<Self>,
        mode: InsertMode,
        nhs: &mut NhTable<Self>,
    ) -> Result<Vec<Route<Self>>, ChangeError>;
    /// Removes what `route del` with `sel` removes. On error `list` is unchanged.
    fn delete(
        list: &mut RouteVec<Self>,
        sel: &RouteSelector<Self>,
        nhs: &NhTable<Self>,
    ) -> Result<RouteVec<Self>, Errno>;
    /// Whether `list` is in the order this family's inserts keep (IPv4: TOS falling, then
    /// metric rising; IPv6: metric rising, one next hop per route but through an object).
    fn ordered(list: &[Route<Self>], nhs: &NhTable<Self>) -> bool;
    /// The route of `list` a lookup for `flow` takes, if any.
    fn select(
        list: ListView<'_, Self>,
        flow: &Flow<Self>,
        nhs: &NhTable<Self>,
        links: &dyn LinkState,
    ) -> TableLookup<Self>;
    /// What [`KernelSemantics::select`] answers, without the route it takes: what a FIB's
    /// build asks of every destination. A family may answer it without spelling the route
    /// out (IPv4: 90 million instructions of the full view's load, callgrind).
    fn verdict(
        list: ListView<'_, Self>,
        flow: &Flow<Self>,
        nhs: &NhTable<Self>,
        links: &dyn LinkState,
    ) -> Verdict {
        Verdict::of(&Self::select(list, flow, nhs, links))
    }
}

/// [`KernelSemantics::verdict`]: a [`TableLookup`] without its route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A route is taken, matched or rejecting.
    Taken,
    /// [`TableLookup::None`].
    None,
    /// [`TableLookup::Miss`].
    Miss,
}

impl Verdict {
    /// The kind of `t`.
    pub fn of<A: Address>(t: &TableLookup<A>) -> Self {
        match t {
            TableLookup::Match { .. } | TableLookup::Reject { .. } => Verdict::Taken,
            TableLookup::None => Verdict::None,
            TableLookup::Miss => Verdict::Miss,
        }
    }
}

/// The routes of one destination prefix, stored (see [`StoredRoute`]). Most destinations have
/// one route: it is kept inline (in the table's slot for the destination), without an
/// allocation of its own or a pointer to follow; a second route moves the list to the heap.
#[derive(Clone, Debug)]
pub struct DstEntry<A: Address> {
    /// Routes without a source prefix, in kernel order.
    pub routes: StoredList,
    /// IPv6 source-specific routes: source prefix -> routes, in kernel order.
    pub sources: Option<Box<PrefixMap<A, StoredList>>>,
}

impl<A: Address> Default for DstEntry<A> {
    fn default() -> Self {
        DstEntry {
            routes: StoredList::new(),
            sources: None,
        }
    }
}

impl<A: Address> DstEntry<A> {
    fn is_empty(&self) -> bool {
        self.routes.is_empty() && self.sources.as_ref().is_none_or(|s| s.is_empty())
    }
    /// Every route list of the destination with its source prefix: the source-less one (the
    /// whole address space), then one per source prefix.
    pub fn lists(&self) -> impl Iterator<Item = (Prefix<A>, &[StoredRoute])> + '_ {
        std::iter::once((Prefix::any(), self.routes.as_slice())).chain(
            self.sources
                .iter()
                .flat_map(|s| s.iter().map(|(p, l)| (p, l.as_slice()))),
        )
    }
    /// Runs `f` on the list of `src` (made if missing), and drops a source list it leaves
    /// empty (the source-less list stays, empty, for the caller to judge the entry).
    fn edit_list<R>(&mut self, src: Prefix<A>, f: impl FnOnce(&mut StoredList) -> R) -> R {
        if src.is_default() {
            return f(&mut self.routes);
        }
        let sources = self.sources.get_or_insert_with(Default::default);
        let r = sources.update(src, |slot| {
            let list = slot.get_or_insert_with(StoredList::new);
            let r = f(list);
            if list.is_empty() {
                *slot = None;
            }
            r
        });
        if sources.is_empty() {
            self.sources = None;
        }
        r
    }
    fn list(&self, src: &Prefix<A>) -> Option<&StoredList> {
        if src.is_default() {
            Some(&self.routes)
        } else {
            self.sources.as_ref()?.get(src)
        }
    }
}

/// A saved route list, to put back if a change set fails (see [`Rib::restore`]).
#[derive(Clone, Debug)]
pub struct SavedList<A: Address> {
    /// The destination prefix of the list.
    pub dst: Prefix<A>,
    /// The source prefix of the list (the whole address space for the source-less list).
    pub src: Prefix<A>,
    /// The routes as they were (inline when one: a route change's list, whose copy then
    /// allocates nothing).
    pub routes: RouteVec<A>,
}

/// One table of one family.
#[derive(Clone, Debug)]
pub struct Rib<A: KernelSemantics> {
    /// The table id.
    pub id: TableId,
    dsts: PrefixMap<A, DstEntry<A>>,
    /// The attributes the stored routes share.
    attrs: AttrTable<A>,
    routes: usize,
    /// The destination the last edit changed, and its entry's index after it (`None`: gone):
    /// the FIBs ask for that index right after a route change, and a second search of a
    /// full table's index was 430 of a router change's 9,500 instructions (IPv4, callgrind).
    /// An index stays its destination's while that is stored, so only a destination stored
    /// or removed elsewhere than through `edit_found` could make it stale: `push_back`, the
    /// one such place, clears it (packing the index moves no index).
    last_edit: Option<(Prefix<A>, Option<u32>)>,
}

impl<A: KernelSemantics> Rib<A> {
    /// An empty table `id`.
    pub fn new(id: TableId) -> Self {
        Rib {
            id,
            dsts: PrefixMap::new(),
            attrs: AttrTable::default(),
            routes: 0,
            last_edit: None,
        }
    }
    /// Routes stored (IPv6 ECMP siblings count one each, as the kernel stores them).
    pub fn len(&self) -> usize {
        self.routes
    }
    /// Whether the table holds no route.
    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }
    /// Packs the destinations' index (see [`PrefixMap::pack`]): a router does it after a change
    /// set that loaded the table, a caller loading a table by hand once it is loaded.
    pub fn pack_index(&mut self) {
        self.dsts.pack();
    }
    /// Moves destinations a load left in a run into the index (see [`PrefixMap::settle`]).
    pub fn settle_index(&mut self) {
        self.dsts.settle();
    }
    /// Destinations in the index's run (see [`crate::prefix_map`]).
    #[cfg(test)]
    pub(crate) fn run_len(&self) -> usize {
        self.dsts.run_len()
    }
    /// Destination prefixes stored.
    pub fn prefixes(&self) -> usize {
        self.dsts.len()
    }

    /// Everything stored for destination `dst`.
    pub fn entry(&self, dst: &Prefix<A>) -> Option<&DstEntry<A>> {
        self.dsts.get(dst)
    }

    /// Every destination's entry in order, with its index (see [`Rib::entry_index`]).
    pub fn entries(&self) -> impl Iterator<Item = (u32, Prefix<A>, &DstEntry<A>)> + '_ {
        let mut it = self.dsts.iter();
        std::iter::from_fn(move || it.next_indexed())
    }

    /// Where `dst`'s entry is, for [`Rib::entry_by_index`]: stable while `dst` is stored.
    pub fn entry_index(&self, dst: &Prefix<A>) -> Option<u32> {
        match self.last_edit {
            Some((d, index)) if d == *dst => {
                debug_assert_eq!(index, self.dsts.index_of(dst), "the last edit's index");
                index
            }
            _ => self.dsts.index_of(dst),
        }
    }

    /// The entry at an index from [`Rib::entry_index`] (whichever destination holds it now:
    /// a caller keeping indexes follows the moves the journal names), without a walk.
    #[inline]
    pub fn entry_by_index(&self, index: u32) -> Option<&DstEntry<A>> {
        self.dsts.at(index)
    }

    /// The routes of exactly (`dst`, `src`), in kernel order.
    pub fn get(&self, dst: &Prefix<A>, src: &Prefix<A>) -> RouteVec<A> {
        self.dsts
            .get(dst)
            .and_then(|e| e.list(src))
            .map_or_else(RouteVec::new, |l| self.view(*dst, *src, l).to_vec())
    }

    /// The stored list `l` of (`dst`, `src`) in this table, to read.
    fn view<'s>(&'s self, dst: Prefix<A>, src: Prefix<A>, l: &'s [StoredRoute]) -> ListView<'s, A> {
        ListView::new(&self.attrs, self.id, dst, src, l)
    }

    /// The source-less routes of `dst`'s entry `e`.
    pub fn routes_of<'s>(&'s self, dst: Prefix<A>, e: &'s DstEntry<A>) -> ListView<'s, A> {
        self.view(dst, Prefix::any(), &e.routes)
    }

    /// The source-less routes at an index from [`Rib::entry_index`], for a caller that holds
    /// `addr`, an address inside the destination (a compiled FIB's lookup: the destination is
    /// `addr` cut to the stored length, no search).
    #[inline]
    pub fn routes_at(&self, index: u32, addr: A) -> ListView<'_, A> {
        let routes = self.dsts.at(index).map_or(&[][..], |e| e.routes.as_slice());
        let len = routes.first().map_or(0, |s| s.dst_len);
        self.view(Prefix::new(addr, len), Prefix::any(), routes)
    }

    /// `route`, one of this table's stored routes, as the list of the destination it gives
    /// `addr` (a compiled FIB's route class: the destination is `addr` cut to the route's
    /// length).
    #[inline]
    pub fn route_at<'s>(&'s self, route: &'s StoredRoute, addr: A) -> ListView<'s, A> {
        let dst = Prefix::new(addr, route.dst_len);
        self.view(dst, Prefix::any(), std::slice::from_ref(route))
    }

    /// Every route list of `dst`'s entry `e`, spelled out: the source-less one, then one per
    /// source prefix.
    pub fn lists_of<'s>(
        &'s self,
        dst: Prefix<A>,
        e: &'s DstEntry<A>,
    ) -> impl Iterator<Item = RouteVec<A>> + 's {
        e.lists()
            .map(move |(src, l)| self.view(dst, src, l).to_vec())
    }

    /// The attribute sets the table's routes share (each held by at least one route).
    pub fn attr_sets(&self) -> usize {
        self.attrs.len()
    }

    /// Runs `f` on the list of (`dst`, `src`), spelled out, creating it if needed and dropping
    /// it if left empty; `saved` receives the list as it was before, for [`Rib::restore`]. One
    /// search of the map. The list is stored again after `f` (its attributes interned before
    /// the old ones are let go, so those it keeps are never dropped on the way).
    fn edit<R>(
        &mut self,
        dst: Prefix<A>,
        src: Prefix<A>,
        saved: &mut Vec<SavedList<A>>,
        f: impl FnOnce(&mut RouteVec<A>) -> R,
    ) -> R {
        self.edit_found(dst, true, |_| Some(src), saved, f)
            .expect("an edit that creates its destination always has a list")
    }

    /// [`Rib::edit`] of the list of `dst` that `src_of` picks from its entry (`None`: none, and
    /// nothing is edited). Without `create`, a destination not stored is not edited either:
    /// `None` comes back, from the same one search.
    fn edit_found<R>(
        &mut self,
        dst: Prefix<A>,
        create: bool,
        src_of: impl FnOnce(&DstEntry<A>) -> Option<Prefix<A>>,
        saved: &mut Vec<SavedList<A>>,
        f: impl FnOnce(&mut RouteVec<A>) -> R,
    ) -> Option<R> {
        let (routes, attrs, table) = (&mut self.routes, &mut self.attrs, self.id);
        let (r, index) = self.dsts.update_indexed(dst, |slot| {
            if slot.is_none() && !create {
                return None;
            }
            let entry = slot.get_or_insert_with(DstEntry::default);
            let Some(src) = src_of(entry) else {
                if entry.is_empty() {
                    *slot = None;
                }
                return None;
            };
            let r = entry.edit_list(src, |stored| {
                let mut list = ListView::new(attrs, table, dst, src, stored).to_vec();
                let before = list.len();
                saved.push(SavedList {
                    dst,
                    src,
                    routes: stored::copy_of(&list),
                });
                let r = f(&mut list);
                // The list is stored under its key: `f` must not move a route elsewhere.
                debug_assert!(list
                    .iter()
                    .all(|r| r.dst == dst && r.src == src && r.table == table));
                *routes = *routes + list.len() - before;
                let new = attrs.store_list(&list);
                for old in stored.iter() {
                    attrs.release(old);
                }
                *stored = new;
                r
            });
            if entry.is_empty() {
                *slot = None;
            }
            Some(r)
        });
        self.last_edit = Some((dst, index));
        r
    }

    /// Puts a saved list back as it was (undo of a failed change set). The caller restores the
    /// next-hop references.
    pub fn restore(&mut self, saved: SavedList<A>) {
        let mut scratch = Vec::new();
        let SavedList { dst, src, routes } = saved;
        self.edit(dst, src, &mut scratch, move |l| *l = routes);
    }

    /// `ip route add|append|prepend|replace|change`. Returns displaced routes (to release).
    pub fn insert(
        &mut self,
        route: Route<A>,
        mode: InsertMode,
        nhs: &mut NhTable<A>,
        saved: &mut Vec<SavedList<A>>,
    ) -> Result<Vec<Route<A>>, ChangeError> {
        debug_assert_eq!(route.table, self.id);
        let (dst, src) = (route.dst, route.src);
        self.edit(dst, src, saved, |list| A::insert(list, route, mode, nhs))
    }

    /// `ip route del`. Returns the removed routes (to release).
    pub fn delete(
        &mut self,
        sel: &RouteSelector<A>,
        nhs: &NhTable<A>,
        saved: &mut Vec<SavedList<A>>,
    ) -> Result<RouteVec<A>, Errno> {
        // fib6_locate: a source prefix is looked for only where a source subtree exists; a
        // destination without one answers with its source-less routes.
        let src_of = |entry: &DstEntry<A>| {
            let src = if entry.sources.is_none() {
                Prefix::any()
            } else {
                sel.src
            };
            entry
                .list(&src)
                .is_some_and(|l| !l.is_empty())
                .then_some(src)
        };
        self.edit_found(sel.dst, false, src_of, saved, |list| {
            A::delete(list, sel, nhs)
        })
        .unwrap_or(Err(Errno::ESRCH))
    }

    /// Appends `route` to its list as it is, without the family's insert rules: a snapshot's
    /// lists come back in the order they were saved, which [`Rib::lists_ordered`] then checks.
    #[cfg(feature = "snapshot")]
    pub(crate) fn push_back(&mut self, route: Route<A>) {
        // Not through `edit`: a load has no change set to undo, so no list is copied first.
        self.last_edit = None;
        let stored = self.attrs.store(&route);
        let entry = self.dsts.get_or_insert_with(route.dst, DstEntry::default);
        let list = if route.src.is_default() {
            &mut entry.routes
        } else {
            entry
                .sources
                .get_or_insert_with(Default::default)
                .get_or_insert_with(route.src, StoredList::new)
        };
        list.push(stored);
        self.routes += 1;
    }

    /// Whether every list is in the family's order ([`KernelSemantics::ordered`]).
    #[cfg(feature = "snapshot")]
    pub(crate) fn lists_ordered(&self, nhs: &NhTable<A>) -> bool {
        self.dsts
            .iter()
            .all(|(dst, e)| self.lists_of(dst, e).all(|l| A::ordered(&l, nhs)))
    }

    /// Removes every route for which `doomed` is true, in all lists; returns them.
    pub fn remove_where(
        &mut self,
        mut doomed: impl FnMut(&Route<A>) -> bool,
        saved: &mut Vec<SavedList<A>>,
    ) -> Vec<Route<A>> {
        let mut keys = Vec::new();
        for r in self.iter() {
            if doomed(&r) && keys.last() != Some(&(r.dst, r.src)) {
                keys.push((r.dst, r.src));
            }
        }
        let mut out = Vec::new();
        for (dst, src) in keys {
            self.edit(dst, src, saved, |list| {
                let (gone, kept): (Vec<_>, Vec<_>) =
                    std::mem::take(list).into_iter().partition(|r| doomed(r));
                *list = kept.into_iter().collect();
                out.extend(gone);
            });
        }
        out
    }

    /// Changes in place every route that `select` picks; the lists edited are saved. `change`
    /// must leave a route's table, destination and source as they are (its list is stored under
    /// them).
    pub fn modify_where(
        &mut self,
        select: impl Fn(&Route<A>) -> bool,
        mut change: impl FnMut(&mut Route<A>),
        saved: &mut Vec<SavedList<A>>,
    ) {
        let mut keys = Vec::new();
        for r in self.iter() {
            if select(&r) && keys.last() != Some(&(r.dst, r.src)) {
                keys.push((r.dst, r.src));
            }
        }
        for (dst, src) in keys {
            self.edit(dst, src, saved, |list| {
                list.iter_mut().filter(|r| select(r)).for_each(&mut change)
            });
        }
    }

    /// The family's choice in the stored list of (`dst`, `src`), spelled out.
    fn select_in(
        &self,
        dst: Prefix<A>,
        src: Prefix<A>,
        stored: &[StoredRoute],
        flow: &Flow<A>,
        nhs: &NhTable<A>,
        links: &dyn LinkState,
    ) -> TableLookup<A> {
        A::select(self.view(dst, src, stored), flow, nhs, links)
    }

    /// Longest-prefix lookup with the kernel's selection and fallback to shorter prefixes.
    ///
    /// Step 1: destinations matching `flow.dst`, longest first. Step 2 (IPv6 `fib6_node_lookup`):
    /// the walk starts at the longest destination that can answer: one without source subtree
    /// that has routes, or one whose source subtree has a prefix matching `flow.src` (the
    /// unspecified address when the flow has none). A longer destination whose subtree has no
    /// match is passed over whole, its source-less routes included (but for the root, `::/0`,
    /// where such a walk ends). Step 3 (`rt6_select` and
    /// `fib6_backtrack`): from there, each destination offers its matching source prefixes,
    /// longest first, then its source-less routes; the family's selection picks a route of the
    /// list, or the walk goes on to shorter destinations.
    pub fn lookup(
        &self,
        flow: &Flow<A>,
        nhs: &NhTable<A>,
        links: &dyn LinkState,
    ) -> TableLookup<A> {
        let src = flow.src.unwrap_or_else(A::unspecified);
        // The address whose prefixes a `Miss` ended.
        let mut missed: Option<A> = None;
        let mut select = |dst: &Prefix<A>, from: Prefix<A>, list: &[StoredRoute]| {
            if missed == Some(dst.addr()) {
                return None;
            }
            match self.select_in(*dst, from, list, flow, nhs, links) {
                TableLookup::None => None,
                TableLookup::Miss => {
                    missed = Some(dst.addr());
                    None
                }
                found => Some(found),
            }
        };
        let mut started = false;
        self.dsts
            .find_map_matches(flow.dst, |dst, entry| {
                if let Some(sources) = &entry.sources {
                    let hit = sources.find_map_matches(src, |from, list| {
                        started = true;
                        select(&dst, from, list)
                    });
                    if hit.is_some() {
                        return hit;
                    }
                    // The root is the exception: a lookup that found nothing on the way up
                    // settles on it and takes its source-less routes.
                    if !started && !dst.is_default() {
                        return None;
                    }
                }
                started = true;
                select(&dst, Prefix::any(), &entry.routes)
            })
            .unwrap_or(TableLookup::None)
    }

    /// IPv4's merged local+main trie (the kernel's fast path while no rule was ever changed):
    /// one longest-prefix walk over both tables, where at equal prefixes the routes of `first`
    /// (local, the higher table id) come before those of `second`.
    pub fn lookup_merged(
        first: &Rib<A>,
        second: &Rib<A>,
        flow: &Flow<A>,
        nhs: &NhTable<A>,
        links: &dyn LinkState,
    ) -> TableLookup<A> {
        // The matches of each table, longest first, found as the merge asks for them (each
        // step back is a search: most lookups take the first).
        let mut a = first.dsts.matches(flow.dst).peekable();
        let mut b = second.dsts.matches(flow.dst).peekable();
        let mut missed: Option<A> = None;
        loop {
            // At equal lengths `first`'s match comes first.
            let take_first = match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(x), Some(y)) => x.0.len() >= y.0.len(),
            };
            let (rib, next) = if take_first {
                (first, a.next())
            } else {
                (second, b.next())
            };
            let (dst, entry) = next.expect("peeked");
            if missed == Some(dst.addr()) {
                continue;
            }
            match rib.select_in(dst, Prefix::any(), &entry.routes, flow, nhs, links) {
                TableLookup::None => {}
                TableLookup::Miss => missed = Some(dst.addr()),
                found => return found,
            }
        }
        TableLookup::None
    }

    /// Every route, in order: by destination, then source, then list order.
    pub fn iter(&self) -> impl Iterator<Item = Route<A>> + '_ {
        self.dsts
            .iter()
            .flat_map(move |(dst, e)| self.entry_routes(dst, e))
    }

    fn entry_routes<'s>(
        &'s self,
        dst: Prefix<A>,
        e: &'s DstEntry<A>,
    ) -> impl Iterator<Item = Route<A>> + 's {
        e.lists()
            .flat_map(move |(src, l)| self.view(dst, src, l).iter())
    }

    /// Routes from destination `start` on (GETNEXT-style walks: seek, then iterate).
    pub fn iter_from(&self, start: &Prefix<A>) -> impl Iterator<Item = Route<A>> + '_ {
        self.dsts
            .range_from(start)
            .flat_map(move |(dst, e)| self.entry_routes(dst, e))
    }

    /// Routes whose destination covers `p` (`ip route show match P`), shortest first.
    pub fn covering(&self, p: &Prefix<A>) -> Vec<Route<A>> {
        self.dsts
            .covering(p)
            .into_iter()
            .flat_map(|(dst, e)| self.entry_routes(dst, e))
            .collect()
    }

    /// Routes whose destination lies inside `p` (`ip route show root P`), in order.
    pub fn covered(&self, p: &Prefix<A>) -> impl Iterator<Item = Route<A>> + '_ {
        self.dsts
            .covered(p)
            .flat_map(move |(dst, e)| self.entry_routes(dst, e))
    }
}

#[cfg(test)]
mod tests;
