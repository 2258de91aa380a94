//! One family's `(prefix, slot)` set: a plain ordered set while it is being filled, compiled
//! into the FIB (Poptrie) at the first batch lookup and patched from then on.
use fibre::fib::{Fib, FibFamily, PoptrieView, PrefixSet, NO_ROUTE};
use fibre::prefix::Prefix;
use std::sync::Arc;

/// Compiled changes past this share of the set are rebuilt from the set rather than patched
/// (a table loaded after its first lookup).
const REBUILD_SHARE: usize = 4;

pub enum Store<A: FibFamily> {
    /// Not compiled: single lookups need only the set, and a table that is never batch-looked
    /// up never pays for the FIB.
    Plain(PrefixSet<A>),
    /// Compiled; the FIB keeps the set (`Fib::entries`), changes are staged in it.
    Compiled(Box<Fib<A>>),
}

impl<A: FibFamily> Default for Store<A> {
    fn default() -> Self {
        Store::Plain(PrefixSet::new())
    }
}

impl<A: FibFamily> Store<A> {
    /// The set, staged changes included.
    pub fn entries(&self) -> &PrefixSet<A> {
        match self {
            Store::Plain(t) => t,
            Store::Compiled(f) => f.entries(),
        }
    }

    /// Stores `p -> slot` (a prefix not stored yet: a stored one keeps its slot).
    pub fn insert(&mut self, p: Prefix<A>, slot: u32) {
        match self {
            Store::Plain(t) => {
                t.insert(p, slot);
            }
            Store::Compiled(f) => {
                f.set(p, Some(slot))
                    .expect("slots stay below the FIB's largest id");
            }
        }
    }

    /// Removes exactly `p`, giving back its slot.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<u32> {
        match self {
            Store::Plain(t) => t.remove(p),
            Store::Compiled(f) => f.set(*p, None).expect("removal stores no id"),
        }
    }

    /// The compiled version if every change is published (no `&mut` needed: what concurrent
    /// readers take).
    pub fn current(&self) -> Option<Arc<PoptrieView<A>>> {
        match self {
            Store::Compiled(f) if f.staged() == 0 => Some(f.reader().snapshot()),
            _ => None,
        }
    }

    /// The slot of the longest match of `addr` through the compiled FIB, when it is compiled
    /// with every change published (`None`: ask the set).
    pub fn lookup_compiled(&self, addr: A) -> Option<Option<u32>> {
        match self {
            Store::Compiled(f) if f.staged() == 0 => {
                let id = f.lookup(addr);
                Some((id != NO_ROUTE).then_some(id))
            }
            _ => None,
        }
    }

    /// The compiled version with every change published, for batch lookups.
    pub fn compiled(&mut self) -> Arc<PoptrieView<A>> {
        let rebuild = match self {
            Store::Plain(_) => true,
            Store::Compiled(f) => f.staged() > 1024 + f.len() / REBUILD_SHARE,
        };
        if rebuild {
            let set = match std::mem::take(self) {
                Store::Plain(t) => t,
                Store::Compiled(f) => (*f).into_entries(),
            };
            *self = Store::Compiled(Box::new(
                Fib::from_set(set).expect("slots stay below the FIB's largest id"),
            ));
        }
        let Store::Compiled(f) = self else {
            unreachable!("compiled above")
        };
        f.publish();
        f.reader().snapshot()
    }

    /// Bytes the compiled structure takes (0 before the first batch lookup).
    pub fn fib_bytes(&self) -> usize {
        match self {
            Store::Plain(_) => 0,
            Store::Compiled(f) => f.stats().bytes,
        }
    }
}
