//! One family's state: its tables, next-hop groups, rules and addresses, with the edits a
//! change set makes to them and the rule walk of a lookup.
use super::fibs::Fibs;
use super::gateways::GatewayMemo;
use super::journal::{count_by_table, EditCounts, Journal};
use super::set_snapshot::FamilySnapshot;
use super::{Matched, RouterFamily};
use crate::error::{ChangeError, Errno};
use crate::fib::FibFamily;
use crate::flow::Flow;
use crate::link::{IfAddr, Links};
use crate::nexthop::{NextHop, NhObject, NhTable};
use crate::prefix::Prefix;
use crate::rib::{
    InsertMode, KernelSemantics, LinkState, Rib, RouteSelector, SavedList, TableLookup,
};
use crate::route::*;
use crate::rules::{RuleAction, RuleSet};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A route the kernel derives from addresses and link state. `owner`: the address an IPv6
/// prefix route is for, which does not take the route back with it (see
/// `router::ipv6::prefix_route`): such a route is told apart by its address, comes with it,
/// and is let go, not deleted, without it. `None` for the rest, which come and go with what
/// derives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Derived<A: crate::addr::Address> {
    pub(super) spec: RouteSpec<A>,
    pub(super) owner: Option<A>,
}

/// Fewest list edits in a change set after which its tables' indexes are packed.
pub(super) const PACK_EDITS: usize = 4096;

/// Everything one family keeps. Outside the router it is a read-only view
/// ([`Router::family`](super::Router::family)): every change goes through a change set.
#[derive(Clone, Debug)]
pub struct FamilyState<A: KernelSemantics + FibFamily> {
    pub(super) tables: BTreeMap<TableId, Rib<A>>,
    pub(super) nhs: NhTable<A>,
    // The small parts below sit behind `Arc`s: a change set's snapshot shares them, and the
    // first change to one copies it (`Arc::make_mut`), so a route change copies none of them.
    pub(super) rules: Arc<RuleSet<A>>,
    pub(super) addrs: Arc<Vec<IfAddr<A>>>,
    /// Routes currently derived from addresses and link state (proto kernel).
    pub(super) derived: Arc<Vec<Derived<A>>>,
    /// IPv4: a user added a `local` route (the kernel then checks sources the slow way).
    pub(super) custom_local_routes: bool,
    pub(super) journal: Journal<A>,
    /// Room for the lists one RIB edit saves, on their way to the journal (kept between
    /// changes, empty: a route change allocates no list of its own).
    pub(super) saved: Vec<SavedList<A>>,
    /// Room for a route change's next hops, filled in by its checks (kept between changes,
    /// empty, as `saved`).
    pub(super) spare_hops: Vec<NextHop<A>>,
    /// Tables made in the open change set (a rollback drops them).
    pub(super) created_tables: Vec<TableId>,
    /// The family's next-hop objects (`ip nexthop`), by id (ids are shared with the other
    /// family: one id is in one family's map at most).
    pub(super) objects: Arc<BTreeMap<u32, NhObject<A>>>,
    /// The compiled FIBs of the tables, following the RIB at each commit.
    pub(super) fibs: Fibs<A>,
    /// Gateway checks remembered between route changes.
    pub(super) gateways: GatewayMemo<A>,
}

impl<A: KernelSemantics + FibFamily> Default for FamilyState<A> {
    fn default() -> Self {
        let mut tables = BTreeMap::new();
        tables.insert(TABLE_LOCAL, Rib::new(TABLE_LOCAL));
        tables.insert(TABLE_MAIN, Rib::new(TABLE_MAIN));
        FamilyState {
            tables,
            nhs: NhTable::new(),
            rules: Arc::default(),
            addrs: Arc::default(),
            derived: Arc::default(),
            custom_local_routes: false,
            journal: Journal::default(),
            saved: Vec::new(),
            spare_hops: Vec::new(),
            created_tables: Vec::new(),
            objects: Arc::default(),
            fibs: Fibs {
                links_changed: true,
                ..Fibs::default()
            },
            gateways: GatewayMemo::default(),
        }
    }
}

impl<A: RouterFamily> FamilyState<A> {
    /// Table `id`, if the family has it.
    pub fn table(&self, id: TableId) -> Option<&Rib<A>> {
        self.tables.get(&id)
    }
    /// The family's tables, by id.
    pub fn tables(&self) -> impl Iterator<Item = &Rib<A>> {
        self.tables.values()
    }
    /// Route count over all tables.
    pub fn route_count(&self) -> usize {
        self.tables.values().map(|t| t.len()).sum()
    }
    /// The policy rules, in priority order.
    pub fn rules(&self) -> &RuleSet<A> {
        &self.rules
    }
    /// The addresses on the family's devices, in the order they were added.
    pub fn addrs(&self) -> &[IfAddr<A>] {
        &self.addrs
    }
    /// The next-hop objects (`ip nexthop`), by id.
    pub fn objects(&self) -> &BTreeMap<u32, NhObject<A>> {
        &self.objects
    }
    /// The shared next-hop groups the routes refer to.
    pub fn nexthops(&self) -> &NhTable<A> {
        &self.nhs
    }
    pub(super) fn table_mut(&mut self, id: TableId) -> &mut Rib<A> {
        let created = &mut self.created_tables;
        self.tables.entry(id).or_insert_with(|| {
            created.push(id);
            Rib::new(id)
        })
    }

    /// Its part of opening a change set (see `Router::open`): the snapshot to put back.
    pub(super) fn open(&mut self, may_edit: bool) -> FamilySnapshot<A> {
        self.nhs.begin();
        self.created_tables.clear();
        FamilySnapshot::take(self, may_edit)
    }

    /// Its part of a change set's commit (see `Router::commit`): the FIBs follow the edits,
    /// and the set's bookkeeping empties.
    pub(super) fn commit(&mut self, snap: FamilySnapshot<A>, links: &Links) {
        snap.check_small_parts(self);
        // A load leaves its tables' indexes half full, or some of its destinations in a run
        // (see `PrefixMap::pack`); packed first, the FIBs' build reads them in order. Slots,
        // and so FIB ids, do not move.
        let counts = self.pack_after();
        self.follow_commit(links, &counts);
        self.gateways.follow(&self.journal);
        self.gateways.journal_cleared();
        self.journal.clear();
        self.nhs.commit();
        self.created_tables.clear();
    }

    /// At a commit, packs the index of each table the change set may have loaded: at least
    /// [`PACK_EDITS`] edits of it, and at least half as many as it has destinations (see
    /// [`crate::prefix_map::PrefixMap::pack`]). A set of a few changes never packs: a table
    /// grown one change at a time would otherwise pay for a rebuild of its whole index inside
    /// one ordinary change, each time it doubled. Every other table the set edited is settled
    /// (see [`crate::prefix_map::PrefixMap::settle`]): the set may have left destinations in a
    /// run (routes added in prefix order), and none outlives it. Tables the set did not edit
    /// have no run (a rollback settles what it edits, see [`FamilySnapshot::restore`]).
    ///
    /// Gives the counts of edits by table, which the FIBs follow with (one pass over the
    /// journal for both).
    pub(super) fn pack_after(&mut self) -> EditCounts {
        let counts = count_by_table(self.journal.destinations_from(0));
        for &(t, edits) in &counts {
            let Some(rib) = self.tables.get_mut(&t) else {
                continue;
            };
            if edits >= PACK_EDITS && 2 * edits >= rib.prefixes() {
                rib.pack_index();
            } else {
                rib.settle_index();
            }
        }
        counts
    }

    /// The first edit of a change set (a route change's only one) has the FIBs that follow
    /// `table` prefetch what `dst`'s update will read, so that those misses overlap the
    /// RIB's own (two runs of `change_misses 4 20000`: a cold delete's median was 300-600 ns
    /// lower with the set and the encoding's path read first, `FIBRE_PROFILE_WARM=set,trie`).
    /// Not where the FIBs are built anew at commit (`fibs_current` is false: links changed,
    /// FIBs disabled), nor for later edits, whose lines would be pushed out again by the
    /// edits between them and the commit.
    fn prefetch_fibs(&self, table: TableId, dst: &Prefix<A>) {
        if self.fibs_current() {
            self.fibs.prefetch_update(self, table, dst);
        }
    }

    /// Interns, inserts, and releases what the insert displaced.
    pub(super) fn insert(
        &mut self,
        spec: &RouteSpec<A>,
        mode: InsertMode,
    ) -> Result<(), ChangeError> {
        self.prefetch_fibs(spec.table, &spec.dst);
        let nh = self.nhs.intern(&spec.hops);
        let route = spec.with_hops(nh);
        let mut saved = std::mem::take(&mut self.saved);
        let created = &mut self.created_tables;
        let r = self
            .tables
            .entry(spec.table)
            .or_insert_with(|| {
                created.push(spec.table);
                Rib::new(spec.table)
            })
            .insert(route, mode, &mut self.nhs, &mut saved);
        self.journal.extend(spec.table, saved.drain(..));
        self.saved = saved;
        match r {
            Ok(displaced) => {
                for d in displaced {
                    self.nhs.release(d.hops);
                }
                Ok(())
            }
            Err(e) => {
                self.nhs.release(nh);
                Err(e)
            }
        }
    }

    pub(super) fn delete(&mut self, table: TableId, sel: &RouteSelector<A>) -> Result<(), Errno> {
        self.prefetch_fibs(table, &sel.dst);
        let Some(rib) = self.tables.get_mut(&table) else {
            return Err(Errno::ESRCH);
        };
        let mut saved = std::mem::take(&mut self.saved);
        let r = rib.delete(sel, &self.nhs, &mut saved);
        self.journal.extend(table, saved.drain(..));
        self.saved = saved;
        for gone in r? {
            self.nhs.release(gone.hops);
        }
        Ok(())
    }

    pub(super) fn remove_where(
        &mut self,
        mut doomed: impl FnMut(&Route<A>, &[NextHop<A>]) -> bool,
    ) {
        let nhs = &self.nhs;
        let mut removed = Vec::new();
        for (id, rib) in self.tables.iter_mut() {
            let mut saved = Vec::new();
            removed.extend(rib.remove_where(|r| doomed(r, nhs.get(r.hops)), &mut saved));
            self.journal.extend(*id, saved);
        }
        for r in removed {
            self.nhs.release(r.hops);
        }
    }

    /// Brings the proto-kernel routes in line with addresses and link state: adds the new
    /// derived routes (after existing equal routes, as the kernel's `fib_magic` appends; an
    /// identical existing route is left alone) and removes those that no longer follow, in the
    /// family's order and at its metric (`DERIVED_ADDS_FIRST`, `derived_delete_metric`).
    pub(super) fn sync_derived(&mut self, links: &Links) {
        let want = self.derived_routes(links);
        let old = std::mem::take(&mut self.derived);
        let gone: Vec<&Derived<A>> = old.iter().filter(|d| !want.contains(d)).collect();
        let new: Vec<&Derived<A>> = want.iter().filter(|d| !old.contains(d)).collect();
        if A::DERIVED_ADDS_FIRST {
            self.add_derived(&new);
        }
        for d in gone {
            if d.owner.is_some() {
                // An IPv6 prefix route stays as a route of its own: the kernel takes back one
                // route of the subnet, by its own rule (`router::ipv6::prefix_route`). Link
                // changes flush the routes on the device anyway.
                continue;
            }
            let mut sel = RouteSelector::exact(&d.spec);
            sel.metric = A::derived_delete_metric(self, &d.spec, links);
            let _ = self.delete(d.spec.table, &sel);
        }
        if !A::DERIVED_ADDS_FIRST {
            self.add_derived(&new);
        }
        self.derived = Arc::new(want);
    }

    fn add_derived(&mut self, new: &[&Derived<A>]) {
        for d in new {
            let _ = self.insert(&d.spec, InsertMode::Append);
        }
    }

    /// The routes the kernel derives from the addresses and link state now. Two addresses may
    /// derive the same route: it is kept once, in its first place (an IPv6 prefix route once
    /// per address).
    pub(super) fn derived_routes(&self, links: &Links) -> Vec<Derived<A>> {
        let mut want = Vec::new();
        let owned = A::owned_routes(links, &self.addrs).into_iter();
        let derived = A::derive(links, &self.addrs)
            .into_iter()
            .map(|spec| Derived { spec, owner: None });
        for d in derived.chain(owned.map(|(owner, spec)| Derived {
            spec,
            owner: Some(owner),
        })) {
            if !want.contains(&d) {
                want.push(d);
            }
        }
        want
    }

    /// One table's answer, for the rule walk.
    pub(super) fn lookup_table(
        &self,
        id: TableId,
        flow: &Flow<A>,
        links: &dyn LinkState,
    ) -> TableLookup<A> {
        if let Some(answer) = self.fib_lookup_table(id, flow, links) {
            return answer;
        }
        self.tables
            .get(&id)
            .map_or(TableLookup::None, |t| t.lookup(flow, &self.nhs, links))
    }

    /// `fib_rules_lookup`: the first rule that matches and decides.
    pub(super) fn walk_rules(
        &self,
        flow: &Flow<A>,
        names: &FlowNames<'_>,
        links: &dyn LinkState,
    ) -> Result<Matched<A>, Errno> {
        let rules = self.rules.as_slice();
        let mut i = 0;
        while i < rules.len() {
            let rule = &rules[i];
            if !rule.matches(flow, names.iif, names.oif, flow.src.is_some()) {
                i += 1;
                continue;
            }
            match rule.action {
                RuleAction::Goto(target) => match self.rules.goto_target(target) {
                    Some(j) if j > i => i = j,
                    _ => i += 1, // an unresolved goto is passed over
                },
                RuleAction::Nop => i += 1,
                RuleAction::Lookup(table) => match self.lookup_table(table, flow, links) {
                    TableLookup::Match {
                        route,
                        hop,
                        siblings,
                    } => {
                        if rule
                            .suppress_prefixlength
                            .is_some_and(|n| i32::from(route.dst.len()) <= n)
                        {
                            i += 1;
                        } else {
                            return Ok(Matched {
                                table,
                                route,
                                hop,
                                siblings,
                            });
                        }
                    }
                    TableLookup::Reject {
                        errno: Errno::EAGAIN,
                        ..
                    }
                    | TableLookup::None
                    | TableLookup::Miss => i += 1,
                    TableLookup::Reject { errno, .. } => return Err(errno),
                },
                reject => return Err(reject.reject_error().expect("reject action")),
            }
        }
        Err(Errno::ENETUNREACH)
    }
}

/// Device names of a flow, for rules (which name devices that may not exist).
pub(super) struct FlowNames<'a> {
    pub(super) iif: Option<&'a str>,
    pub(super) oif: Option<&'a str>,
}
