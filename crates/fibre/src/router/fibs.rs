//! The router's compiled FIBs: one per table, and for IPv4 one for local+main merged (the
//! kernel's trie while no rule was changed; IPv4 local and main get FIBs of their own only once
//! rules are customised, since nothing reads them before).
//!
//! The FIB maps each destination prefix of the RIB whose route list answers a *plain* flow
//! (no output device, no TOS where TOS routes exist, IPv4 scope universe, IPv6 no source where
//! source routes exist and no preferred device) to an id: the list's selection is the same for
//! every such flow, so the FIB can skip the longest-prefix walk and the router only resolves
//! the id. An id is one of:
//!
//! - **a route class** (`router::route_classes`), where the list is one route (most of a BGP
//!   view): that route as stored and its table, shared by every destination with the same
//!   route; resolving it reads no entry;
//! - **the destination's place**, for lists of several routes (and past the cap of classes):
//!   the covered table's position and the index of its entry in that table's RIB
//!   ([`crate::rib::Rib::entry_index`]), so resolving it reads the entry and nothing else. An
//!   entry's index is stable while its destination is stored; a destination that moves
//!   (removed, or put back by a rollback) is journaled, and its id is derived again at commit
//!   or after the rollback;
//! - [`ASK_RIB`].
//!
//! A prefix whose list answers nothing (every route dead or TOS-only) is left out, as the
//! kernel's walk passes over it. IPv6 destinations with a source subtree map to [`ASK_RIB`]: the
//! walk there depends on the source; the RIB answers.
//!
//! FIBs follow the RIB at commit: the journal names every edited destination; a link change
//! (next hops die or come back) re-encodes all of them. While a change set is open, lookups use
//! the RIB (the FIBs show the last committed state, as readers on other threads see it).
use super::journal::{count_by_table, EditCounts};
use super::plain::{PlainAnswers, Probe};
use super::route_classes::RouteClasses;
use super::{FamilyState, RouterFamily};
use crate::fib::FibFamily;
use crate::fib::{Fib, PoptrieView, Reader, MAX_ID, NO_ROUTE};
use crate::flow::Flow;
use crate::prefix::Prefix;
use crate::rib::{KernelSemantics, StoredRoute};
use crate::rib::{LinkState, TableLookup, Verdict};
use crate::route::{TableId, TABLE_LOCAL, TABLE_MAIN};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// The id of a destination the FIB cannot decide alone.
pub const ASK_RIB: u32 = MAX_ID;

/// Bits of an id that hold the entry index; above them, the table's position in
/// [`TableFib::tables`] (at most two tables: IPv4's local and main).
const INDEX_BITS: u32 = 29;

/// The id of the entry at `index` of the table at `pos`.
fn id_of(pos: usize, index: u32) -> u32 {
    assert!(
        pos < 2 && index < 1 << INDEX_BITS,
        "FIB ids hold two tables of 2^29 entries"
    );
    (pos as u32) << INDEX_BITS | index
}

/// One compiled FIB and what its ids stand for.
#[derive(Debug)]
pub struct TableFib<A: KernelSemantics + FibFamily> {
    /// The tables it covers, in the order their lists compete at equal prefixes.
    tables: Vec<TableId>,
    fib: Fib<A>,
    /// The route classes its ids name.
    classes: RouteClasses,
    /// Their answers to plain queries (`router::plain`), by the class's place; only where
    /// plain queries probe this FIB (`TableFib::prepares`).
    plain: PlainAnswers<A>,
    /// A covered table ever held a TOS route (IPv4) or a source route (IPv6): flows that carry
    /// TOS or a source go to the RIB. Sticky until the next full build.
    pub tos_or_source_routes: bool,
}

impl<A: KernelSemantics + FibFamily> Clone for TableFib<A> {
    fn clone(&self) -> Self {
        TableFib {
            tables: self.tables.clone(),
            fib: self.fib.duplicate(),
            classes: self.classes.clone(),
            plain: self.plain.clone(),
            tos_or_source_routes: self.tos_or_source_routes,
        }
    }
}

/// What a destination's own lists answer a plain flow.
enum Own {
    /// The table whose list answers, where the entry is in its RIB, and the list's route
    /// when it is the only one (the id is then its class's).
    Answer(TableId, u32, Option<StoredRoute>),
    AskRib,
    Nothing,
}

impl<A: RouterFamily> TableFib<A> {
    fn build(st: &FamilyState<A>, tables: Vec<TableId>, links: &dyn LinkState) -> Self {
        let mut tf = TableFib {
            tables,
            fib: Fib::new(),
            classes: RouteClasses::default(),
            plain: PlainAnswers::default(),
            tos_or_source_routes: false,
        };
        // Every destination's entries in prefix order and, at equal prefixes, in the tables'
        // order: one pass over each table's index, merged as it goes (no list of every entry
        // to sort: a full view's would be 20 MB of fresh pages).
        let mut runs: Vec<_> = tf
            .tables
            .iter()
            .filter_map(|t| st.tables.get(t))
            .map(|rib| (rib.id, rib.prefixes(), rib.entries().peekable()))
            .collect();
        let mut pairs = Vec::with_capacity(runs.iter().map(|r| r.1).sum());
        let mut group = Vec::with_capacity(runs.len());
        while let Some(dst) = runs
            .iter_mut()
            .filter_map(|r| r.2.peek().map(|e| e.1))
            .min()
        {
            group.clear();
            for (t, _, run) in runs.iter_mut() {
                if let Some(&(i, _, _)) = run.peek().filter(|e| e.1 == dst) {
                    group.push((*t, i));
                    run.next();
                }
            }
            let own = Self::own_of(
                &mut tf.tos_or_source_routes,
                st,
                dst,
                links,
                group.iter().copied(),
            );
            if let Some(id) = tf.assign_own(st, dst, links, own, false) {
                pairs.push((dst, id));
            }
        }
        tf.fib = Fib::from_routes(pairs)
            .expect("router ids are slot indexes and classes, far below MAX_ID");
        tf
    }

    fn own(&mut self, st: &FamilyState<A>, dst: Prefix<A>, links: &dyn LinkState) -> Own {
        let found = self.tables.iter().filter_map(|t| {
            let rib = st.tables.get(t)?;
            rib.entry_index(&dst).map(|i| (*t, i))
        });
        Self::own_of(&mut self.tos_or_source_routes, st, dst, links, found)
    }

    /// [`TableFib::own`] from `dst`'s entries already found: (table, entry index), in the
    /// order the tables compete.
    fn own_of(
        tos_or_source_routes: &mut bool,
        st: &FamilyState<A>,
        dst: Prefix<A>,
        links: &dyn LinkState,
        found: impl Iterator<Item = (TableId, u32)>,
    ) -> Own {
        let flow = Flow::to(dst.addr());
        for (t, index) in found {
            let rib = &st.tables[&t];
            let Some(entry) = rib.entry_by_index(index) else {
                continue;
            };
            if entry.routes.iter().any(|r| r.tos != 0) {
                *tos_or_source_routes = true;
            }
            if entry.sources.is_some() {
                *tos_or_source_routes = true;
                return Own::AskRib;
            }
            match A::verdict(rib.routes_of(dst, entry), &flow, &st.nhs, links) {
                Verdict::None => {}
                // What comes after a next-hop object's miss is the RIB walk's to decide.
                Verdict::Miss => return Own::AskRib,
                Verdict::Taken => {
                    let single = (entry.routes.len() == 1).then(|| entry.routes[0]);
                    return Own::Answer(t, index, single);
                }
            }
        }
        Own::Nothing
    }

    /// The id `dst` should have now, or `None`.
    fn assign(
        &mut self,
        st: &FamilyState<A>,
        dst: Prefix<A>,
        links: &dyn LinkState,
    ) -> Option<u32> {
        let own = self.own(st, dst, links);
        self.assign_own(st, dst, links, own, true)
    }

    /// The id of `dst`, whose lists answer `own`, or `None`; a class's is held once more (the
    /// leaf that gets it uses it), and a class made now gets its plain answer. `after_edits`:
    /// the tables were edited since the classes were made (a refresh, not a build), so a class
    /// held again may have other attributes behind its attribute set's id (see
    /// `router::plain`).
    fn assign_own(
        &mut self,
        st: &FamilyState<A>,
        dst: Prefix<A>,
        links: &dyn LinkState,
        own: Own,
        after_edits: bool,
    ) -> Option<u32> {
        match own {
            Own::Nothing => None,
            Own::AskRib => Some(ASK_RIB),
            Own::Answer(t, index, single) => {
                let pos = self.tables.iter().position(|&x| x == t);
                let pos = pos.expect("a covered table");
                let Some(route) = single else {
                    return Some(id_of(pos, index));
                };
                let Some((id, made)) = self.classes.hold(pos as u8, route) else {
                    return Some(id_of(pos, index));
                };
                if self.prepares() {
                    let place = RouteClasses::place(id);
                    let stale = || {
                        let attrs = st.tables[&t].route_at(&route, dst.addr()).attrs_of(&route);
                        !self.plain.made_with(place, attrs)
                    };
                    if made || (after_edits && stale()) {
                        let plain = st.prepare_plain(self.reported(), t, &route, dst.addr(), links);
                        self.plain.set(place, plain);
                    }
                }
                Some(id)
            }
        }
    }

    /// Whether `route get`'s fast path probes it, and so its classes prepare answers: IPv4's
    /// merged local+main, IPv6's local and main (the default rules' tables).
    fn prepares(&self) -> bool {
        if A::FAMILY == crate::addr::Family::Inet {
            self.tables.len() == 2
        } else {
            self.tables == [TABLE_LOCAL] || self.tables == [TABLE_MAIN]
        }
    }

    /// The table its answers report: IPv4's merged local+main is main.
    fn reported(&self) -> TableId {
        if self.tables.len() > 1 {
            TABLE_MAIN
        } else {
            self.tables[0]
        }
    }

    /// What it makes of `dst` for a plain query (see `router::plain`).
    #[inline]
    pub(super) fn probe_plain(&self, dst: A) -> Probe<'_, A> {
        match self.fib.lookup(dst) {
            NO_ROUTE => Probe::NoRoute,
            id if RouteClasses::is_class(id) => self
                .plain
                .get(RouteClasses::place(id))
                .map_or(Probe::Full, Probe::Prepared),
            _ => Probe::Full,
        }
    }

    /// Re-derives the entries of `dsts` and publishes once (an unchanged answer is the same id:
    /// the FIB sees no change there).
    fn refresh(&mut self, st: &FamilyState<A>, dsts: &[Prefix<A>], links: &dyn LinkState) {
        for &dst in dsts {
            let id = self.assign(st, dst, links);
            let before = self
                .fib
                .set(dst, id)
                .expect("router ids are slot indexes and classes, far below MAX_ID");
            // Released after the new id's hold: a class that stays is not freed and made again.
            if let Some(before) = before.filter(|&b| self.classes.release(b)) {
                self.plain.set(RouteClasses::place(before), None);
            }
        }
        self.fib.publish();
    }

    /// The probe: what the covered tables answer a plain flow (`None`: ask the RIB).
    fn lookup(
        &self,
        st: &FamilyState<A>,
        flow: &Flow<A>,
        links: &dyn LinkState,
    ) -> Option<TableLookup<A>> {
        match self.fib.lookup(flow.dst) {
            NO_ROUTE => Some(TableLookup::None),
            ASK_RIB => None,
            id => {
                let list = if RouteClasses::is_class(id) {
                    let (pos, route) = self.classes.get(id);
                    st.tables[&self.tables[pos]].route_at(route, flow.dst)
                } else {
                    let table = self.tables[(id >> INDEX_BITS) as usize];
                    st.tables[&table].routes_at(id & ((1 << INDEX_BITS) - 1), flow.dst)
                };
                match A::select(list, flow, &st.nhs, links) {
                    TableLookup::Miss => None,
                    answer => Some(answer),
                }
            }
        }
    }

    /// A handle for lock-free readers of this FIB on other threads.
    pub fn reader(&self) -> Reader<PoptrieView<A>> {
        self.fib.reader()
    }
    /// The compiled FIB: destination prefix -> id (a route class, an entry's place, or
    /// [`ASK_RIB`]: see the module docs).
    pub fn fib(&self) -> &Fib<A> {
        &self.fib
    }

    /// How many route classes its ids name (see `router::route_classes`).
    pub fn route_classes(&self) -> usize {
        self.classes.len()
    }

    /// How many of its route classes have an answer prepared for plain `route get`s (see
    /// `router::plain`).
    pub fn plain_answers(&self) -> usize {
        self.plain.len()
    }

    /// Panics unless the classes are counted by exactly the FIB's leaves, and their prepared
    /// answers' sources were made with `st`'s addresses: for tests.
    #[cfg(test)]
    pub(crate) fn check_classes(&self, st: &FamilyState<A>) {
        assert!(self.plain.follow(st), "sources follow the addresses");
        self.classes.check(self.fib.routes().map(|(_, id)| id));
    }
}

/// A family's FIBs.
#[derive(Clone, Debug)]
pub struct Fibs<A: KernelSemantics + FibFamily> {
    /// The FIB of each table that has one, by table id.
    pub tables: BTreeMap<TableId, TableFib<A>>,
    /// IPv4 local+main as one trie, local's lists first at equal prefixes. Boxed: a commit
    /// takes the FIBs out of the state and puts them back, and inline this one made them 1.3 KB
    /// to copy twice.
    pub merged: Option<Box<TableFib<A>>>,
    /// Links changed since the FIBs were built (or nothing was built yet): they are rebuilt at
    /// the next commit, and the RIB answers until then. (A lone route change's set of the other
    /// family takes this one in for it: see `router::set_snapshot`.)
    pub links_changed: bool,
    /// Off: every lookup walks the RIB (the reference the FIB path is tested against).
    pub disabled: bool,
    /// How many tables the family had, and whether its rules were customised, when the FIBs
    /// last matched its tables ([`Fibs::match_tables`]). Tables come only with the change set
    /// that makes them and go only with its rollback, so while both are the same the tables
    /// are too, and a route change skips the match (see `Fibs::follow_one`).
    pub(super) tables_matched_at: Option<(usize, bool)>,
}

impl<A: KernelSemantics + FibFamily> Default for Fibs<A> {
    fn default() -> Self {
        Fibs {
            tables: BTreeMap::new(),
            merged: None,
            links_changed: false,
            disabled: false,
            tables_matched_at: None,
        }
    }
}

impl<A: RouterFamily> Fibs<A> {
    /// Whether table `t` gets a FIB of its own: IPv4 local and main are looked up through the
    /// merged FIB while rules are the default ones (as the kernel's merged trie), so theirs are
    /// built only once rules are customised.
    fn own_fib(st: &FamilyState<A>, t: TableId) -> bool {
        A::FAMILY != crate::addr::Family::Inet
            || st.rules.customised
            || (t != TABLE_LOCAL && t != TABLE_MAIN)
    }

    /// Builds every FIB from scratch.
    pub fn rebuild(st: &FamilyState<A>, links: &dyn LinkState) -> Self {
        let tables = st
            .tables
            .keys()
            .filter(|&&t| Self::own_fib(st, t))
            .map(|&t| (t, TableFib::build(st, vec![t], links)))
            .collect();
        let merged = (A::FAMILY == crate::addr::Family::Inet)
            .then(|| Box::new(TableFib::build(st, vec![TABLE_LOCAL, TABLE_MAIN], links)));
        Fibs {
            tables,
            merged,
            links_changed: false,
            disabled: false,
            tables_matched_at: None,
        }
    }

    /// Follows the committed edits `touched` (table, destination; a destination may repeat),
    /// `counts` of them by table (`journal::count_by_table`).
    ///
    /// A table whose FIB is built anew (a load: see `Fibs::wholesale`) needs only its count
    /// of edits; the destinations of the others are collected, sorted and patched. Why not a
    /// sorted list of every edit first, as before: a load of the full view made two of 14 and
    /// 7 MB, in fresh pages, only to count them. One edit (a route change, or a rollback of
    /// one) takes `Fibs::follow_one`.
    pub fn follow(
        &mut self,
        st: &FamilyState<A>,
        mut touched: impl Iterator<Item = (TableId, Prefix<A>)>,
        counts: &EditCounts,
        links: &dyn LinkState,
    ) {
        if let [(t, 1)] = counts[..] {
            if let Some((table, dst)) = touched.next() {
                debug_assert_eq!(table, t, "counts are of the edits given");
                return self.follow_one(st, t, dst, links);
            }
        }
        // Which FIBs are patched (the others are built anew), then their destinations, in one
        // pass over the edits.
        let merged_edits: usize = [TABLE_LOCAL, TABLE_MAIN]
            .iter()
            .filter_map(|t| counts.iter().find(|c| c.0 == *t).map(|c| c.1))
            .sum();
        let patch_merged = self
            .merged
            .as_ref()
            .is_some_and(|m| merged_edits > 0 && !Self::wholesale(merged_edits, m));
        let patched: SmallVec<[TableId; 2]> = counts
            .iter()
            .filter(|&&(t, edits)| {
                Self::own_fib(st, t)
                    && self
                        .tables
                        .get(&t)
                        .is_some_and(|tf| !Self::wholesale(edits, tf))
            })
            .map(|&(t, _)| t)
            .collect();
        let in_merged = |t: TableId| patch_merged && (t == TABLE_LOCAL || t == TABLE_MAIN);
        // On the stack for a few (a route change has one: a heap list cost it 150 instructions).
        let mut dsts: SmallVec<[(TableId, Prefix<A>); 4]> = touched
            .filter(|&(t, _)| patched.binary_search(&t).is_ok() || in_merged(t))
            .collect();
        dsts.sort();
        dsts.dedup();
        for &(t, _) in counts {
            if !Self::own_fib(st, t) {
                continue;
            }
            if patched.binary_search(&t).is_ok() {
                let mine = dsts.partition_point(|d| d.0 < t)..dsts.partition_point(|d| d.0 <= t);
                let mine: SmallVec<[Prefix<A>; 4]> =
                    dsts[mine].iter().map(|&(_, dst)| dst).collect();
                if let Some(tf) = self.tables.get_mut(&t) {
                    tf.refresh(st, &mine, links);
                }
            } else {
                self.tables.insert(t, TableFib::build(st, vec![t], links));
            }
        }
        self.match_tables(st, links);
        if let Some(m) = self.merged.as_mut().filter(|_| merged_edits > 0) {
            if patch_merged {
                // Local's and main's destinations, each run sorted: one merge of two runs.
                let mut mine: SmallVec<[Prefix<A>; 4]> = dsts
                    .into_iter()
                    .filter(|d| d.0 == TABLE_LOCAL || d.0 == TABLE_MAIN)
                    .map(|(_, dst)| dst)
                    .collect();
                mine.sort();
                mine.dedup();
                m.refresh(st, &mine, links);
            } else {
                **m = TableFib::build(st, vec![TABLE_LOCAL, TABLE_MAIN], links);
            }
        }
    }

    /// [`Fibs::follow`] for one edit, of destination `dst` in table `t` (a route change, or a
    /// rollback of one): the same steps, without the lists of one collected, sorted and merged
    /// (about 300 instructions of a route change, callgrind). One edit never has a FIB rebuilt
    /// wholesale ([`Fibs::wholesale`]); a table without a FIB of its own yet gets one built, as
    /// in `follow`.
    fn follow_one(
        &mut self,
        st: &FamilyState<A>,
        t: TableId,
        dst: Prefix<A>,
        links: &dyn LinkState,
    ) {
        let mut matched = self.tables_matched_at == Some((st.tables.len(), st.rules.customised));
        if Self::own_fib(st, t) {
            match self.tables.get_mut(&t) {
                Some(tf) => tf.refresh(st, &[dst], links),
                // A table new in the set gets its FIB; one gone with a rollback, none.
                None => {
                    if st.tables.contains_key(&t) {
                        self.tables.insert(t, TableFib::build(st, vec![t], links));
                    }
                    matched = false;
                }
            }
        }
        if matched {
            debug_assert!(self.tables_match(st), "the FIBs follow the tables");
        } else {
            self.match_tables(st, links);
        }
        if t == TABLE_LOCAL || t == TABLE_MAIN {
            if let Some(m) = self.merged.as_mut() {
                m.refresh(st, &[dst], links);
            }
        }
    }

    /// Asks the caches for what the FIBs that follow table `t` read first when `dst` changes
    /// there (see [`Fib::prefetch_update`]): called before the RIB's edit of a route change,
    /// whose misses then overlap the FIBs'.
    pub(super) fn prefetch_update(&self, st: &FamilyState<A>, t: TableId, dst: &Prefix<A>) {
        if Self::own_fib(st, t) {
            if let Some(tf) = self.tables.get(&t) {
                tf.fib.prefetch_update(dst);
            }
        }
        if t == TABLE_LOCAL || t == TABLE_MAIN {
            if let Some(m) = self.merged.as_ref() {
                m.fib.prefetch_update(dst);
            }
        }
    }

    /// The FIBs of tables gone go; a table that should have a FIB of its own and has none (rules
    /// customised in this change set) gets one.
    fn match_tables(&mut self, st: &FamilyState<A>, links: &dyn LinkState) {
        self.tables.retain(|t, _| st.tables.contains_key(t));
        for &t in st.tables.keys() {
            if Self::own_fib(st, t) && !self.tables.contains_key(&t) {
                self.tables.insert(t, TableFib::build(st, vec![t], links));
            }
        }
        self.tables_matched_at = Some((st.tables.len(), st.rules.customised));
    }

    /// Whether the FIBs are those [`Fibs::match_tables`] would leave (debug checks).
    fn tables_match(&self, st: &FamilyState<A>) -> bool {
        let want = st.tables.keys().filter(|&&t| Self::own_fib(st, t));
        self.tables.keys().eq(want)
    }

    /// A change set that touches a good part of a FIB (a table load) builds it anew: one pass
    /// instead of a patch per destination.
    fn wholesale(touched: usize, tf: &TableFib<A>) -> bool {
        touched > 4096 && touched * 4 > tf.fib.len()
    }

    /// Whether a FIB answers `flow` as the RIB would.
    fn plain(tf: &TableFib<A>, flow: &Flow<A>) -> bool {
        let tos_or_src = if A::FAMILY == crate::addr::Family::Inet {
            flow.tos & crate::rib::ipv4::ROUTE_TOS_MASK != 0
        } else {
            flow.src.is_some()
        };
        flow.oif.is_none()
            && !flow.strict_oif
            && flow.scope == 0
            // IPv6 forwarded packets prefer routes on their input device: the RIB answers.
            && flow.iif.is_none_or(|i| {
                A::FAMILY == crate::addr::Family::Inet
                    || (i == crate::route::LOOPBACK_IFINDEX && !flow.input)
            })
            && !(tos_or_src && tf.tos_or_source_routes)
    }
}

impl<A: RouterFamily> FamilyState<A> {
    /// FIBs hold the committed state; inside a change set the RIB answers.
    pub(super) fn fibs_current(&self) -> bool {
        self.journal.is_empty() && !self.fibs.links_changed && !self.fibs.disabled
    }

    /// Brings the FIBs to the state about to be committed (the journal names what changed,
    /// `counts` how much of each table: see [`FamilyState::pack_after`]).
    pub(super) fn follow_commit(&mut self, links: &dyn LinkState, counts: &EditCounts) {
        if self.fibs.links_changed {
            let disabled = self.fibs.disabled;
            self.fibs = Fibs::rebuild(self, links);
            self.fibs.disabled = disabled;
        } else if !self.journal.is_empty() {
            let mut fibs = std::mem::take(&mut self.fibs);
            let touched = self.journal.destinations_from(0);
            fibs.follow(self, touched, counts, links);
            self.fibs = fibs;
        }
        // After an address change, the prepared answers' sources (see `router::plain`). Asked
        // first: taking the FIBs out of the state and back costs two copies of them, a tenth
        // of a route change's instructions (callgrind).
        let fibs = &self.fibs;
        let probed = || {
            fibs.merged
                .as_deref()
                .into_iter()
                .chain(fibs.tables.values())
        };
        if probed().any(|tf| tf.prepares() && !tf.plain.follows(&self.addrs)) {
            let mut fibs = std::mem::take(&mut self.fibs);
            let probed = fibs
                .merged
                .as_deref_mut()
                .into_iter()
                .chain(fibs.tables.values_mut());
            for tf in probed.filter(|tf| tf.prepares()) {
                tf.plain.follow_addresses(self);
            }
            self.fibs = fibs;
        }
    }

    /// Brings the FIBs in step with the RIB where `touched` changed (the destinations a rollback
    /// put back, maybe at other indexes). FIBs waiting for a rebuild (links changed) are left
    /// to it.
    pub(super) fn follow_touched(
        &mut self,
        touched: Vec<(TableId, Prefix<A>)>,
        links: &dyn LinkState,
    ) {
        if touched.is_empty() || self.fibs.links_changed {
            return;
        }
        let mut fibs = std::mem::take(&mut self.fibs);
        let counts = count_by_table(touched.iter().copied());
        fibs.follow(self, touched.iter().copied(), &counts, links);
        self.fibs = fibs;
    }

    /// One table's answer through its FIB, when the FIB can decide; `None`: ask the RIB.
    pub(super) fn fib_lookup_table(
        &self,
        id: TableId,
        flow: &Flow<A>,
        links: &dyn LinkState,
    ) -> Option<TableLookup<A>> {
        let tf = self.fibs.tables.get(&id)?;
        if !self.fibs_current() || !Fibs::plain(tf, flow) {
            return None;
        }
        tf.lookup(self, flow, links)
    }

    /// IPv4's merged local+main answer through its FIB, when it can decide.
    pub(super) fn fib_lookup_merged(
        &self,
        flow: &Flow<A>,
        links: &dyn LinkState,
    ) -> Option<TableLookup<A>> {
        let tf = self.fibs.merged.as_deref()?;
        if !self.fibs_current() || !Fibs::plain(tf, flow) {
            return None;
        }
        tf.lookup(self, flow, links)
    }

    /// A reader of table `id`'s FIB, for lookups on other threads. Its ids are the FIB's own
    /// (see the module docs: a route class of this FIB, whose id is reused once the class
    /// goes, or an entry's place), resolved on the router's side.
    pub fn fib_reader(&self, id: TableId) -> Option<Reader<PoptrieView<A>>> {
        self.fibs.tables.get(&id).map(|tf| tf.reader())
    }

    /// A reader of IPv4's merged local+main FIB (what plain lookups with default rules probe).
    pub fn merged_fib_reader(&self) -> Option<Reader<PoptrieView<A>>> {
        self.fibs.merged.as_deref().map(|tf| tf.reader())
    }

    /// IPv4's merged local+main FIB.
    pub fn merged_fib(&self) -> Option<&TableFib<A>> {
        self.fibs.merged.as_deref()
    }

    /// The compiled FIB of table `id` (IPv4 local and main have one only once rules are
    /// customised; until then [`FamilyState::merged_fib`] answers for them).
    pub fn table_fib(&self, id: TableId) -> Option<&TableFib<A>> {
        self.fibs.tables.get(&id)
    }
}
