//! FIB ids that carry their answer: a destination whose list is one route (most of a BGP view)
//! gets the id of that route's *class*, the route as its table stores it ([`StoredRoute`]:
//! next hops, attributes, metric, type, TOS, router preference, destination length) and the
//! table's position in the FIB. A `route get` through such an id reads the class, which is
//! shared by every destination with the same route and stays in cache, instead of the
//! destination's slot in the RIB, one among a million that no cache holds (last-level misses a
//! `route get` 2.8 -> 1.3, callgrind, issue 15's seventh round).
//!
//! A class holds ids only (next-hop group, attribute set), spelled out through the table as a
//! slot's route is; the ids of a freed group or set can be reused, but every destination whose
//! route changed is journaled, so the FIB's leaves name current classes once it follows a
//! commit (and lookups go to the RIB until then).
//!
//! Classes are counted by the FIB leaves that use them and go with the last one. At most
//! [`MAX_CLASSES`] exist at once (routes of a million different metrics would make a million
//! classes); past that, destinations keep their slot's id. A class id is valid for its FIB
//! only, and a freed one is reused.
use crate::rib::StoredRoute;
use std::collections::HashMap;

/// The first class id: slot ids are below it (see `fibs::id_of`), the FIB's marks above the
/// last.
pub const FIRST_CLASS: u32 = 1 << 30;

/// How many classes a FIB holds at most: 64 Ki of 24 bytes, plus the index.
pub const MAX_CLASSES: usize = 1 << 16;

/// A FIB's classes (see the module docs).
#[derive(Clone, Default)]
pub struct RouteClasses {
    index: HashMap<(u64, u64), u32, foldhash::fast::RandomState>,
    classes: Vec<Class>,
    free: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Class {
    route: StoredRoute,
    /// The covered table's position in the FIB's tables.
    pos: u8,
    /// The FIB leaves (destinations) that use it.
    uses: u32,
}

/// A class's key, packed into two words: one hash of two `u64`s (the derived hash of a
/// stored route hashes seven fields; a hold took 109 instructions in a load, callgrind). The
/// table's position is below 16 (a FIB covers one or two tables), the preference's score
/// below 4.
fn key(pos: u8, r: &StoredRoute) -> (u64, u64) {
    debug_assert!(pos < 16);
    let low = u64::from(r.hops.0) | u64::from(r.attrs) << 32;
    let high = u64::from(r.metric)
        | u64::from(r.tos) << 32
        | u64::from(r.kind as u8) << 40
        | (r.pref.score() as u64) << 48
        | u64::from(pos) << 52
        | u64::from(r.dst_len) << 56;
    (low, high)
}

/// The classes in use, not each of them (a router's `Debug` would print thousands).
impl std::fmt::Debug for RouteClasses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteClasses")
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
thread_local! {
    /// A smaller cap for this test thread, so that a router test reaches it.
    pub static TEST_CAP: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_CLASSES) };
}

/// How many classes a FIB holds at most ([`MAX_CLASSES`]; tests may lower it).
#[inline]
fn cap() -> usize {
    #[cfg(test)]
    return TEST_CAP.with(|c| c.get());
    #[cfg(not(test))]
    MAX_CLASSES
}

impl RouteClasses {
    /// Whether `id` names a class (the FIB's marks, `ASK_RIB` and `NO_ROUTE`, lie above).
    #[inline]
    pub fn is_class(id: u32) -> bool {
        id.wrapping_sub(FIRST_CLASS) < MAX_CLASSES as u32
    }

    /// The id of the class of `route` in the table at `pos`, held once more, and whether the
    /// class was made now (its id may be a gone class's); `None` when [`MAX_CLASSES`] are in
    /// use.
    pub fn hold(&mut self, pos: u8, route: StoredRoute) -> Option<(u32, bool)> {
        let key = key(pos, &route);
        let (at, made) = match self.index.get(&key) {
            Some(&at) => (at, false),
            None => {
                let class = Class {
                    route,
                    pos,
                    uses: 0,
                };
                let at = match self.free.pop() {
                    Some(at) => {
                        self.classes[at as usize] = class;
                        at
                    }
                    None if self.classes.len() < cap() => {
                        self.classes.push(class);
                        (self.classes.len() - 1) as u32
                    }
                    None => return None,
                };
                self.index.insert(key, at);
                (at, true)
            }
        };
        self.classes[at as usize].uses += 1;
        Some((FIRST_CLASS | at, made))
    }

    /// The place of class `id` among the classes (what a FIB's side tables index by).
    #[inline]
    pub fn place(id: u32) -> usize {
        (id & !FIRST_CLASS) as usize
    }

    /// Lets go of one use of `id` (nothing for an id that is not a class's); whether its class
    /// went with it.
    pub fn release(&mut self, id: u32) -> bool {
        if !Self::is_class(id) {
            return false;
        }
        let at = id & !FIRST_CLASS;
        let c = &mut self.classes[at as usize];
        c.uses -= 1;
        if c.uses == 0 {
            self.index.remove(&key(c.pos, &c.route));
            self.free.push(at);
            return true;
        }
        false
    }

    /// The table position and route of class `id`.
    #[inline]
    pub fn get(&self, id: u32) -> (usize, &StoredRoute) {
        let c = &self.classes[(id & !FIRST_CLASS) as usize];
        (c.pos as usize, &c.route)
    }

    /// Classes in use.
    pub fn len(&self) -> usize {
        self.classes.len() - self.free.len()
    }

    /// Panics unless each class in use is counted once per id in `ids` (a FIB's leaves), and
    /// only those are indexed: for tests.
    #[cfg(test)]
    pub fn check(&self, ids: impl Iterator<Item = u32>) {
        let mut uses = vec![0u32; self.classes.len()];
        for id in ids.filter(|&id| Self::is_class(id)) {
            uses[(id & !FIRST_CLASS) as usize] += 1;
        }
        for (at, c) in self.classes.iter().enumerate() {
            let free = self.free.contains(&(at as u32));
            if free {
                assert_eq!(uses[at], 0, "a freed class is used");
            } else {
                assert_eq!(c.uses, uses[at], "class {at}: {c:?}");
                assert_eq!(self.index.get(&key(c.pos, &c.route)), Some(&(at as u32)));
            }
        }
        assert_eq!(self.index.len(), self.len());
    }
}

#[cfg(test)]
mod router_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexthop::NhId;
    use crate::route::{RouteType, RouterPref};

    fn route(hops: u32, dst_len: u8) -> StoredRoute {
        StoredRoute {
            hops: NhId(hops),
            attrs: 0,
            metric: 0,
            tos: 0,
            kind: RouteType::Unicast,
            pref: RouterPref::default(),
            dst_len,
        }
    }

    #[test]
    fn a_class_is_shared_and_goes_with_its_last_use() {
        let mut c = RouteClasses::default();
        let (a, made) = c.hold(0, route(1, 24)).unwrap();
        assert!(made, "a new class");
        assert_eq!(c.hold(0, route(1, 24)), Some((a, false)), "the same class");
        assert!(RouteClasses::is_class(a));
        // Another table position, another length, other hops: other classes.
        let b = c.hold(1, route(1, 24)).unwrap().0;
        let d = c.hold(0, route(1, 23)).unwrap().0;
        let e = c.hold(0, route(2, 24)).unwrap().0;
        assert_eq!(
            [a, b, d, e]
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            4
        );
        assert_eq!(c.get(b), (1, &route(1, 24)));
        assert_eq!(c.len(), 4);
        assert!(!c.release(a), "one use left");
        assert_eq!(c.len(), 4);
        assert!(c.release(a), "the last use");
        assert_eq!(c.len(), 3);
        // Its place is reused, for what is held now.
        let (f, made) = c.hold(0, route(3, 8)).unwrap();
        assert_eq!((f, made), (a, true), "made anew in a gone class's place");
        assert_eq!(c.get(f), (0, &route(3, 8)));
        assert_eq!(c.hold(0, route(1, 24)).map(|x| x.0 == a), Some(false));
        assert_eq!(c.len(), 5);
        // A slot's id is left alone.
        assert!(!c.release(5));
        assert_eq!(c.len(), 5);
    }

    /// Routes that differ in any one field are classes apart (the packed key loses nothing).
    #[test]
    fn every_field_is_in_the_key() {
        let base = route(1, 24);
        let variants = [
            base,
            StoredRoute { attrs: 1, ..base },
            StoredRoute { metric: 1, ..base },
            StoredRoute { tos: 0x10, ..base },
            StoredRoute {
                kind: RouteType::Blackhole,
                ..base
            },
            StoredRoute {
                pref: RouterPref::High,
                ..base
            },
            StoredRoute {
                hops: NhId(u32::MAX),
                attrs: u32::MAX,
                metric: u32::MAX,
                tos: u8::MAX,
                dst_len: 128,
                ..base
            },
        ];
        let mut c = RouteClasses::default();
        let mut ids: Vec<u32> = variants.iter().map(|r| c.hold(0, *r).unwrap().0).collect();
        ids.push(c.hold(1, base).unwrap().0);
        for (i, r) in variants.iter().enumerate() {
            assert_eq!(c.get(ids[i]), (0, r));
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), variants.len() + 1);
    }

    #[test]
    fn past_the_cap_no_class() {
        let mut c = RouteClasses::default();
        for i in 0..MAX_CLASSES as u32 {
            assert!(c.hold(0, route(i, 24)).is_some());
        }
        assert_eq!(c.hold(0, route(u32::MAX, 24)), None);
        // A held one is still found, and a freed place is taken again.
        let first = c.hold(0, route(0, 24)).unwrap().0;
        c.release(first);
        c.release(first);
        assert!(c.hold(0, route(u32::MAX, 24)).is_some());
    }
}
