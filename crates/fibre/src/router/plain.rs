//! `route get`'s fast path: the answers of route classes, prepared when a class is made.
//!
//! A *plain* query (no input or output device, no source, no TOS, a unicast destination, and
//! the default rules) that the FIB answers with a route class gets the same answer for every
//! destination of the class, but for three parts the destination decides: the destination
//! itself, the route's prefix (the destination cut to the class's length) and the preferred
//! source (chosen toward the destination where the route has no gateway). So the rest is
//! built once, by the full path's own code ([`Kernel::plain_answer`]), and a query copies it
//! and fills those three in: no walk of the rules, no selection over the route list, no
//! spelling out of next hops (`route get` 1,022 -> about 200 instructions, issue 15).
//!
//! **Why a prepared answer cannot go stale.** It depends on the class's route (its next-hop
//! group and attribute set, which are interned by content and never edited in place), on
//! which devices are up (a link change rebuilds every FIB, and its classes with it) and on
//! the host's addresses (read at query time, for the source). The rules are checked at query
//! time. A class's place is reused once it goes, and its answer is prepared again then.
//!
//! What the fast path leaves to the full one: multipath routes (the leg depends on the flow's
//! hash), destinations that fall through (`throw`, or nothing in the FIB), slot ids, and every
//! query that is not plain.
use super::fibs::TableFib;
use super::*;
use crate::rib::StoredRoute;

/// What a plain query through a route class answers (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Prepared<A: Address> {
    /// The answer, with the destination's own parts still to fill in; or the route's error
    /// (`unreachable`, `blackhole`, `prohibit`).
    answer: Result<RouteAnswer<A>, Errno>,
    /// The next hop the answer reports, toward which the source is chosen.
    hop: Option<NextHop<A>>,
}

impl<A: RouterFamily> Prepared<A> {
    /// The answer to `dst`, with the flow's `mark`; `source` gives the preferred source from
    /// the route and the hop. Built field by field: a derived clone of the answer and its
    /// moves cost more than the rest of the fast path (callgrind).
    #[inline]
    pub(super) fn answer_to(
        &self,
        dst: A,
        mark: u32,
        source: impl FnOnce(&Route<A, AnswerHops<A>>, Option<&NextHop<A>>) -> Option<A>,
    ) -> Result<RouteAnswer<A>, Errno> {
        let t = self.answer.as_ref().map_err(|e| *e)?;
        let route = t.route.as_ref().map(|r| Route {
            dst: Prefix::new(dst, r.dst.len()),
            ..r.with_hops(AnswerHops::from_slice(&r.hops))
        });
        Ok(RouteAnswer {
            prefsrc: route.as_ref().and_then(|r| source(r, self.hop.as_ref())),
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

/// The prepared answers of a FIB's route classes, by the class's place.
#[derive(Clone, Debug)]
pub(super) struct PlainAnswers<A: Address>(Vec<Option<Prepared<A>>>);

impl<A: Address> Default for PlainAnswers<A> {
    fn default() -> Self {
        PlainAnswers(Vec::new())
    }
}

impl<A: Address> PlainAnswers<A> {
    /// Sets the answer of the class at place `at` (`None`: the full path answers).
    pub(super) fn set(&mut self, at: usize, answer: Option<Prepared<A>>) {
        if self.0.len() <= at {
            self.0.resize_with(at + 1, || None);
        }
        self.0[at] = answer;
    }

    /// The answer of the class at place `at`, if it has one.
    #[inline]
    pub(super) fn get(&self, at: usize) -> Option<&Prepared<A>> {
        self.0.get(at)?.as_ref()
    }

    /// How many classes have an answer.
    pub(super) fn len(&self) -> usize {
        self.0.iter().flatten().count()
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
    /// The answer a plain query gets through `route` (a class of table `table`, reported as
    /// `reported`), found at `dst`; `None` where the full path must answer (see the module
    /// docs).
    pub(super) fn prepare_plain(
        &self,
        reported: TableId,
        table: TableId,
        route: &StoredRoute,
        dst: A,
        links: &dyn LinkState,
    ) -> Option<Prepared<A>> {
        let rib = self.tables.get(&table)?;
        let flow = Flow {
            iif: Some(LOOPBACK_IFINDEX),
            ..Flow::to(dst)
        };
        match A::select(rib.route_at(route, dst), &flow, &self.nhs, links) {
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
                    hop,
                })
            }
            TableLookup::Reject { errno, .. } if errno != Errno::EAGAIN => Some(Prepared {
                answer: Err(errno),
                hop: None,
            }),
            _ => None,
        }
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
