//! The journal of an open change set: every route-list edit, for a rollback to undo and for
//! the FIBs and the gateway checks to follow.
//!
//! An edit names its table and destination; the list it saved is kept apart, and only when
//! there is something to keep: a source prefix or routes. A load's edits each make a new
//! destination, whose source-less list held nothing, so a load journals 16 bytes an edit
//! (IPv4; 48 for IPv6) where a `(TableId, SavedList)` took 48 (IPv4; 112; more since a saved list
//! keeps one route inline): 14 MB of fresh pages for the IPv4 full view instead of 43, which the
//! load faulted in at about 10% of its time.
use crate::addr::Address;
use crate::prefix::Prefix;
use crate::rib::{RouteVec, SavedList};
use crate::route::TableId;
use smallvec::SmallVec;

/// Edits a table had in a change set, by table id ascending (see [`count_by_table`]).
pub type EditCounts = SmallVec<[(TableId, usize); 2]>;

/// Edits each table had in `edits` (table, destination), by table id ascending.
///
/// Counted a run of one table at a time (a change set edits a table or two, in long runs),
/// the runs then sorted and added up: no allocation for a set of one or two runs, which every
/// route change is (a `BTreeMap` here cost a route change about 900 instructions).
pub fn count_by_table<A: Address>(edits: impl Iterator<Item = (TableId, Prefix<A>)>) -> EditCounts {
    let mut runs = EditCounts::new();
    for (t, _) in edits {
        match runs.last_mut() {
            Some((r, n)) if *r == t => *n += 1,
            _ => runs.push((t, 1)),
        }
    }
    if runs.len() <= 1 {
        // One table (every route change): the run is the count.
        return runs;
    }
    runs.sort_unstable_by_key(|&(t, _)| t);
    let mut counts = EditCounts::new();
    for (t, n) in runs {
        match counts.last_mut() {
            Some((c, m)) if *c == t => *m += n,
            _ => counts.push((t, n)),
        }
    }
    counts
}

/// An edit's `list` when its saved list is the source-less one and held no route.
const EMPTY: u32 = u32::MAX;

/// A journal of at least this many edits gives its room back when cleared (a load's).
const KEEP_ROOM: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Edit<A: Address> {
    table: TableId,
    dst: Prefix<A>,
    /// Where its saved list is in [`Journal::lists`], or [`EMPTY`].
    list: u32,
}

/// The edits of a change set, in order (see the module docs).
#[derive(Clone, Debug)]
pub struct Journal<A: Address> {
    edits: Vec<Edit<A>>,
    /// Saved lists that had a source prefix or routes: (source, routes).
    lists: Vec<(Prefix<A>, RouteVec<A>)>,
}

impl<A: Address> Default for Journal<A> {
    fn default() -> Self {
        Journal {
            edits: Vec::new(),
            lists: Vec::new(),
        }
    }
}

impl<A: Address> Journal<A> {
    /// Records an edit of `table` that saved `saved`.
    pub fn push(&mut self, table: TableId, saved: SavedList<A>) {
        let SavedList { dst, src, routes } = saved;
        let list = if src.is_default() && routes.is_empty() {
            EMPTY
        } else {
            self.lists.push((src, routes));
            u32::try_from(self.lists.len() - 1).expect("fewer than 2^32 saved lists")
        };
        self.edits.push(Edit { table, dst, list });
    }
    /// Records edits of `table`.
    pub fn extend(&mut self, table: TableId, saved: impl IntoIterator<Item = SavedList<A>>) {
        for s in saved {
            self.push(table, s);
        }
    }
    /// Edits recorded.
    pub fn len(&self) -> usize {
        self.edits.len()
    }
    /// Whether no edit is recorded.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }
    /// Forgets every edit (a commit). A large journal's room goes too.
    pub fn clear(&mut self) {
        if self.edits.capacity() >= KEEP_ROOM {
            *self = Journal::default();
        } else {
            self.edits.clear();
            self.lists.clear();
        }
    }
    /// The (table, destination) of each edit from the `from`th on, in order (a destination may
    /// repeat).
    pub fn destinations_from(
        &self,
        from: usize,
    ) -> impl Iterator<Item = (TableId, Prefix<A>)> + Clone + '_ {
        self.edits[from.min(self.edits.len())..]
            .iter()
            .map(|e| (e.table, e.dst))
    }
    /// Every edit's saved list, the last edit first: the order a rollback puts them back in.
    pub fn into_undo_order(self) -> impl Iterator<Item = (TableId, SavedList<A>)> {
        let Journal { edits, mut lists } = self;
        edits.into_iter().rev().map(move |e| {
            let (src, routes) = match e.list {
                EMPTY => (Prefix::any(), RouteVec::new()),
                i => {
                    let (src, routes) = &mut lists[i as usize];
                    (*src, std::mem::take(routes))
                }
            };
            let saved = SavedList {
                dst: e.dst,
                src,
                routes,
            };
            (e.table, saved)
        })
    }
}
