//! `route get`'s fast path: the answers of route classes, prepared when a class is made.
//!
//! A *plain* query (no input or output device, no source, no TOS, a unicast destination, and
//! the default rules) that the FIB answers with a route class gets the same answer for every
//! destination of the class, but for three parts the destination decides: the destination
//! itself, the route's prefix (the destination cut to the class's length) and the preferred
//! source (chosen toward the destination where the route has no gateway). So the rest is
//! built once, by the full path's own code ([`Kernel::plain_answer`]), and a query copies it
//! and fills those three in: no walk of the rules, no selection over the route list, no
//! spelling out of next hops (IPv4 `route get` 1,015 -> 444 instructions, IPv6 1,624 -> 686,
//! callgrind, issue 15). The source's rule is kept with the host's addresses it was made
//! with ([`SourceRule`]): while they are the family's, a route through a gateway has its source
//! without a search of them.
//!
//! **Why a prepared answer cannot go stale.** It depends on the class's route (its next-hop
//! group and attribute set, which are interned by content and never edited in place), on
//! which devices are up (a link change rebuilds every FIB, and its classes with it) and on
//! the host's addresses (the source's rule is made again when they are not those it was made
//! with). The rules are checked at query
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
