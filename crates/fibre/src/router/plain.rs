//! `route get`'s fast path: the answers of route classes, prepared when a class is made.
//!
//! A *plain* query (no input or output device, no source, for IPv4 no TOS, a unicast
//! destination, and the default rules) that the FIB answers with a route class gets the same
//! answer for every destination of the class, but for three parts the destination decides:
//! the destination itself, the route's prefix (the destination cut to the class's length) and
//! the preferred source (IPv6 chooses it toward the destination). So the rest is built once,
//! by the full path's own code ([`Kernel::plain_answer`]), and a query copies it and fills those
//! three in: no walk of the rules, no selection over the route list, no spelling out of next
//! hops (IPv4 `route get` 1,015 -> 281 instructions, IPv6 1,624 -> 497, callgrind, issue 15). Only the FIBs that plain queries probe prepare answers: IPv4's
//! merged local+main, IPv6's local and main.
//!
//! **Why a prepared answer does not go stale.**
//! - It depends on the class's route: its next-hop group, whose id is not reused before the
//!   FIBs follow a commit (releases wait for it), and its attribute set, whose id can be let go
//!   and taken by other attributes inside one change set. So a class keeps the attributes it
//!   was prepared with, and a destination that holds it again at commit with others behind the
//!   id prepares it again (every destination whose route changed is journaled, and the FIB
//!   refreshes it).
//! - On which devices are up: a link change rebuilds every FIB, and its classes with it.
//! - On the host's addresses, for the source: the source's rule ([`SourceRule`]) is kept with
//!   the address list it was made with (a shared list is never edited: every edit copies it),
//!   a query whose family has another list makes the rule again, and a commit makes every
//!   class's again after an address change.
//! - The rules are checked at query time. A class's place is reused once it goes, and its
//!   answer is prepared again then.
//!
//! What the fast path leaves to the full one: multipath routes (the leg depends on the flow's
//! hash), destinations that fall through (`throw`, or nothing in the FIB), slot ids, and every
//! query that is not plain.
use super::fibs::TableFib;
use super::*;
use crate::rib::{RouteAttrs, StoredRoute};

/// What a plain query through a route class answers (see the module docs).
#[derive(Clone, Debug)]
pub struct Prepared<A: Address> {
    /// The answer, with the destination's own parts still to fill in; or the route's error
    /// (`unreachable`, `blackhole`, `prohibit`).
    answer: Result<RouteAnswer<A>, Errno>,
    /// The next hop the answer reports, toward which the source is chosen.
    hop: Option<NextHop<A>>,
    /// How its source follows ([`Kernel::plain_source`]) with the host's addresses `addrs`.
    source: SourceRule<A>,
    /// The host's addresses when `source` was made. An address list is shared, never edited
    /// (every edit copies a list that is shared: `Arc::make_mut`), and this one is held: while
    /// the family's list is still this one, `source` holds.
    addrs: Arc<Vec<IfAddr<A>>>,
}

impl<A: RouterFamily> Prepared<A> {
    /// The answer to `dst` in `st`, with the flow's `mark`. Built field by field: a derived
    /// clone of the answer and its moves cost more than the rest of the fast path (callgrind).
    #[inline]
    pub(super) fn answer_to(
        &self,
        st: &FamilyState<A>,
        dst: A,
        mark: u32,
    ) -> Result<RouteAnswer<A>, Errno> {
        let t = self.answer.as_ref().map_err(|e| *e)?;
        let route = t.route.as_ref().map(|r| Route {
            dst: Prefix::new(dst, r.dst.len()),
            ..r.with_hops(AnswerHops::from_slice(&r.hops))
        });
        let prefsrc = if Arc::ptr_eq(&self.addrs, &st.addrs) {
            st.source_to(&self.source, dst)
        } else {
            let rule = route
                .as_ref()
                .map(|r| A::plain_source(st, r, self.hop.as_ref()));
            rule.and_then(|rule| st.source_to(&rule, dst))
        };
        A::check_source(prefsrc, t.dev)?;
        Ok(RouteAnswer {
            prefsrc,
            route,
            kind: t.kind,
            cache: t.cache,
            mark,
            dst,
            src: None,
            gateway: t.gateway,
            dev: t.dev,
            iif: None,
        })
    }
}

/// What a class's place holds: the attribute set its route had when its answer was prepared,
/// and the answer, if it has one.
#[derive(Clone, Debug)]
pub(super) struct Plain<A: Address> {
    /// A class names its route's attribute set by id, and an id let go inside a change set can
    /// be taken again by other attributes before the FIBs follow: a class held again with other
    /// attributes behind its id is prepared again (`TableFib::assign_own`).
    attrs: RouteAttrs<A>,
    prepared: Option<Prepared<A>>,
}

/// The prepared answers of a FIB's route classes, by the class's place.
#[derive(Clone, Debug)]
pub(super) struct PlainAnswers<A: Address> {
    places: Vec<Option<Plain<A>>>,
    /// The address list the answers' sources were last brought to (`follow_addresses`).
    addrs: Option<Arc<Vec<IfAddr<A>>>>,
}

impl<A: Address> Default for PlainAnswers<A> {
    fn default() -> Self {
        PlainAnswers {
            places: Vec::new(),
            addrs: None,
        }
    }
}

impl<A: RouterFamily> PlainAnswers<A> {
    /// Sets what the class at place `at` holds (`None`: the class went).
    pub(super) fn set(&mut self, at: usize, plain: Option<Plain<A>>) {
        if self.places.len() <= at {
            if plain.is_none() {
                return;
            }
            self.places.resize_with(at + 1, || None);
        }
        self.places[at] = plain;
    }

    /// The answer of the class at place `at`, if it has one.
    #[inline]
    pub(super) fn get(&self, at: usize) -> Option<&Prepared<A>> {
        self.places.get(at)?.as_ref()?.prepared.as_ref()
    }

    /// Whether the class at place `at` was prepared with the attributes `attrs`.
    pub(super) fn made_with(&self, at: usize, attrs: &RouteAttrs<A>) -> bool {
        self.places
            .get(at)
            .and_then(|p| p.as_ref())
            .is_some_and(|p| p.attrs == *attrs)
    }

    /// Whether every answer's source was made with the family's addresses: for tests.
    #[cfg(test)]
    pub(super) fn follow(&self, st: &FamilyState<A>) -> bool {
        let mut prepared = self.places.iter().flatten();
        prepared.all(|p| {
            p.prepared
                .as_ref()
                .is_none_or(|p| Arc::ptr_eq(&p.addrs, &st.addrs))
        })
    }

    /// How many classes have an answer.
    pub(super) fn len(&self) -> usize {
        self.places
            .iter()
            .flatten()
            .filter(|p| p.prepared.is_some())
            .count()
    }

    /// Whether the sources' rules were last brought to the address list `addrs`.
    #[inline]
    pub(super) fn follows(&self, addrs: &Arc<Vec<IfAddr<A>>>) -> bool {
        self.addrs.as_ref().is_some_and(|a| Arc::ptr_eq(a, addrs))
    }

    /// Makes the sources' rules again with the family's addresses, where they were made with
    /// others (after an address change: until then, each query makes its own).
    pub(super) fn follow_addresses(&mut self, st: &FamilyState<A>) {
        if self.follows(&st.addrs) {
            return;
        }
        self.addrs = Some(st.addrs.clone());
        let prepared = self.places.iter_mut().flatten();
        for p in prepared.filter_map(|p| p.prepared.as_mut()) {
            if Arc::ptr_eq(&p.addrs, &st.addrs) {
                continue;
            }
            if let Ok(Some(route)) = p.answer.as_ref().map(|a| a.route.as_ref()) {
                p.source = A::plain_source(st, route, p.hop.as_ref());
            }
            p.addrs = st.addrs.clone();
        }
    }
}

/// What a FIB makes of a plain query's destination.
pub(super) enum Probe<'a, A: Address> {
    /// No route: the next table is asked.
    NoRoute,
    /// A route class with a prepared answer.
    Prepared(&'a Prepared<A>),
    /// Anything else: the full path answers.
    Full,
}

impl<A: RouterFamily> FamilyState<A> {
    /// What a plain query gets through `route` (a class of table `table`, reported as
    /// `reported`), found at `dst`: an answer, or `None` where the full path must answer (see
    /// the module docs).
    pub(super) fn prepare_plain(
        &self,
        reported: TableId,
        table: TableId,
        route: &StoredRoute,
        dst: A,
        links: &dyn LinkState,
    ) -> Option<Plain<A>> {
        let list = self.tables.get(&table)?.route_at(route, dst);
        let flow = Flow {
            iif: Some(LOOPBACK_IFINDEX),
            ..Flow::to(dst)
        };
        let prepared = match A::select(list, &flow, &self.nhs, links) {
            TableLookup::Match {
                route,
                hop,
                siblings,
            } if siblings.is_empty() && self.nhs.get(route.hops).len() <= 1 => {
                let m = Matched {
                    table: reported,
                    route,
                    hop,
                    siblings,
                };
                let hop = Self::answer_hop(&m, self.nhs.get(m.route.hops));
                Some(Prepared {
                    answer: Ok(A::plain_answer(self, &m, dst)),
                    source: A::plain_source(self, &m.route, hop.as_ref()),
                    hop,
                    addrs: self.addrs.clone(),
                })
            }
            TableLookup::Reject { errno, .. } if errno != Errno::EAGAIN => Some(Prepared {
                answer: Err(errno),
                hop: None,
                source: SourceRule::Known(None),
                addrs: self.addrs.clone(),
            }),
            _ => None,
        };
        Some(Plain {
            attrs: *list.attrs_of(route),
            prepared,
        })
    }

    /// What FIB `tf` makes of `dst` for a plain query; the full path answers while the FIBs
    /// are not current (inside a change set, or links changed).
    #[inline]
    pub(super) fn probe_plain<'s>(&'s self, tf: &'s TableFib<A>, dst: A) -> Probe<'s, A> {
        if !self.fibs_current() {
            return Probe::Full;
        }
        tf.probe_plain(dst)
    }
}
