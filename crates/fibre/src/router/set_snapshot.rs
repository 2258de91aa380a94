//! What a change set's rollback puts back besides the route lists (the journal keeps those).
//!
//! A set's snapshot shares the links and each family's small parts (rules, addresses, derived
//! routes, next-hop objects) through `Arc`s: the first change to one copies it
//! (`Arc::make_mut`), and a rollback puts the shared one back.
//!
//! A set of one route change (`Router::change` outside a set: the update bench's changes, a
//! routing daemon's) edits none of them. In release builds its snapshot does not share them,
//! which saves 18 atomic counts a change taken and given back. Debug builds share them all the
//! same, so that an edit would copy one and the check at commit and rollback (`Arc::ptr_eq`)
//! would catch it. Such a set also takes in the route's own family only, unless the other
//! family's FIBs wait for a rebuild (`Fibs::links_changed`: a new router's, or a loaded
//! image's), which every commit did: the other family's open and commit ran about 100
//! instructions a change, in code of their own (the routines are generic over the family).
//!
//! A rollback puts back whether the FIBs waited for a rebuild: a link change flags it before it
//! can fail, and a failed one left both families' FIBs to be rebuilt whole at the next commit
//! (tens of milliseconds on a full view) for links put back as they were.
use super::state::FamilyState;
use super::{Router, RouterFamily};
use crate::addr::Family;
use crate::link::{IfAddr, Links};
use crate::nexthop::NhObject;
use crate::prefix::Prefix;
use crate::route::TableId;
use crate::rules::RuleSet;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// A change set's snapshot (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Snapshot {
    /// Whether the set may edit the links and the small parts: any set but a lone route
    /// change's.
    may_edit: bool,
    /// The links: to put back where `may_edit`, to check in debug builds.
    links: Option<Arc<Links>>,
    pub(super) last_nhid: u32,
    /// `None`: the family takes no part in the set (a lone route change of the other family).
    pub(super) v4: Option<FamilySnapshot<Ipv4Addr>>,
    pub(super) v6: Option<FamilySnapshot<Ipv6Addr>>,
}

impl Snapshot {
    /// `route_of`: `None` for any set; a lone route change's family (see the module docs).
    pub(super) fn take(r: &mut Router, route_of: Option<Family>) -> Self {
        let may_edit = route_of.is_none();
        let part = |f: Family, rebuild: bool| rebuild || route_of.is_none_or(|r| r == f);
        Snapshot {
            may_edit,
            links: kept(may_edit).then(|| r.links.clone()),
            last_nhid: r.last_nhid,
            v4: part(Family::Inet, r.v4.fibs.links_changed).then(|| r.v4.open(may_edit)),
            v6: part(Family::Inet6, r.v6.fibs.links_changed).then(|| r.v6.open(may_edit)),
        }
    }

    /// The links to put back at a rollback, where the set may have changed them.
    pub(super) fn links_to_restore(&self, now: &Arc<Links>) -> Option<Arc<Links>> {
        self.check_links(now);
        self.links.clone().filter(|_| self.may_edit)
    }

    /// Panics where a set that did not share the links changed them (debug builds).
    pub(super) fn check_links(&self, now: &Arc<Links>) {
        let same = self.may_edit || self.links.as_ref().is_none_or(|l| Arc::ptr_eq(l, now));
        assert!(same, "a lone route change's set changed the links");
    }
}

/// Whether a snapshot keeps the links and small parts: to put them back where the set may edit
/// them, and in debug builds to check that a set that may not left them alone.
fn kept(may_edit: bool) -> bool {
    may_edit || cfg!(debug_assertions)
}

/// The small parts of a family, shared with a change set's snapshot.
#[derive(Clone, Debug)]
struct SmallParts<A: RouterFamily> {
    rules: Arc<RuleSet<A>>,
    addrs: Arc<Vec<IfAddr<A>>>,
    derived: Arc<Vec<super::state::Derived<A>>>,
    objects: Arc<BTreeMap<u32, NhObject<A>>>,
}

/// What a change set's rollback puts back of a family besides its route lists.
#[derive(Clone, Debug)]
pub(super) struct FamilySnapshot<A: RouterFamily> {
    /// Whether the set may edit the small parts (see [`Snapshot::may_edit`]).
    may_edit: bool,
    /// The small parts: to put back where `may_edit`, to check in debug builds.
    small: Option<SmallParts<A>>,
    custom_local_routes: bool,
    /// Whether the FIBs waited for a rebuild: a link change flags them before it can fail, and
    /// a rollback puts the links back as the FIBs know them.
    links_changed: bool,
}

impl<A: RouterFamily> FamilySnapshot<A> {
    pub(super) fn take(s: &FamilyState<A>, may_edit: bool) -> Self {
        FamilySnapshot {
            may_edit,
            small: kept(may_edit).then(|| SmallParts {
                rules: s.rules.clone(),
                addrs: s.addrs.clone(),
                derived: s.derived.clone(),
                objects: s.objects.clone(),
            }),
            custom_local_routes: s.custom_local_routes,
            links_changed: s.fibs.links_changed,
        }
    }

    /// Panics where a set that did not share the small parts changed one (debug builds).
    pub(super) fn check_small_parts(&self, s: &FamilyState<A>) {
        let same = |m: &SmallParts<A>| {
            Arc::ptr_eq(&m.rules, &s.rules)
                && Arc::ptr_eq(&m.addrs, &s.addrs)
                && Arc::ptr_eq(&m.derived, &s.derived)
                && Arc::ptr_eq(&m.objects, &s.objects)
        };
        let unchanged = self.may_edit || self.small.as_ref().is_none_or(same);
        assert!(
            unchanged,
            "a lone route change's set changed a family's small parts"
        );
    }

    /// Undoes the journal (route lists), then puts the small parts back. Returns the
    /// destinations put back (table, prefix): their entries may sit at other indexes now.
    pub(super) fn restore(self, s: &mut FamilyState<A>) -> Vec<(TableId, Prefix<A>)> {
        let journal = std::mem::take(&mut s.journal);
        let touched: Vec<_> = journal.destinations_from(0).collect();
        for (table, saved) in journal.into_undo_order() {
            s.table_mut(table).restore(saved);
        }
        // Put back in order, deleted destinations may make a run: none outlives the set.
        for (t, _) in super::journal::count_by_table(touched.iter().copied()) {
            if let Some(rib) = s.tables.get_mut(&t) {
                rib.settle_index();
            }
        }
        for id in s.created_tables.drain(..) {
            s.tables.remove(&id);
        }
        s.nhs.rollback();
        self.check_small_parts(s);
        if let Some(small) = self.small.filter(|_| self.may_edit) {
            s.rules = small.rules;
            s.addrs = small.addrs;
            s.derived = small.derived;
            s.objects = small.objects;
        }
        s.custom_local_routes = self.custom_local_routes;
        s.fibs.links_changed = self.links_changed;
        touched
    }
}
