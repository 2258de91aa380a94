//! The reference algorithm: longest-prefix match by its definition, the oracle that the other
//! algorithms, the FIB tests and the bench are checked against (as DPDK keeps a dummy FIB
//! beside its real ones).
//!
//! A key's answer is the id of the longest stored prefix that contains it. The reference asks
//! exactly that, one prefix length at a time, longest first: does the set hold the key masked to
//! this length? One exact-match table per length makes that a hash probe instead of a scan of
//! every route, so the reference can answer for a full table (10^6 routes) in the bench; it
//! shares no code with the trie or the compiled encodings.
//!
//! Not built for speed: an update copies the tables of the lengths it changes (readers keep the
//! version they loaded).
use super::PrefixSet;
use super::{check_changed, FibStats, IdOutOfRange, LpmAlgorithm, LpmView, Reader, NO_ROUTE};
use crate::addr::{Address, Bits};
use crate::prefix::Prefix;
use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// The reference (see the module's documentation).
pub struct Reference<A: Address> {
    cell: Arc<ArcSwap<ReferenceView<A>>>,
    current: Arc<ReferenceView<A>>,
}

/// One version: per prefix length present, longest first, the masked keys and their ids (shared
/// with the versions before while unchanged).
pub struct ReferenceView<A: Address> {
    lengths: Vec<(u8, Arc<ExactTable<A>>)>,
    version: u64,
}

impl<A: Address> Clone for ReferenceView<A> {
    fn clone(&self) -> Self {
        ReferenceView {
            lengths: self.lengths.clone(),
            version: self.version,
        }
    }
}

impl<A: Address> ReferenceView<A> {
    fn set(&mut self, p: Prefix<A>, id: Option<u32>) {
        let at = self.lengths.iter().position(|(len, _)| *len <= p.len());
        match (at, id) {
            (Some(i), _) if self.lengths[i].0 == p.len() => {
                let table = Arc::make_mut(&mut self.lengths[i].1);
                match id {
                    Some(id) => table.insert(p.bits(), id),
                    None => table.remove(&p.bits()),
                };
                if table.is_empty() {
                    self.lengths.remove(i);
                }
            }
            (_, None) => {}
            (at, Some(id)) => {
                let table = Arc::new(HashMap::from_iter([(p.bits(), id)]));
                self.lengths
                    .insert(at.unwrap_or(self.lengths.len()), (p.len(), table));
            }
        }
    }
}

impl<A: Address> LpmView<A> for ReferenceView<A> {
    fn version(&self) -> u64 {
        self.version
    }
    fn lookup(&self, key: A::Bits) -> u32 {
        self.lengths
            .iter()
            .find_map(|(len, table)| table.get(&(key & A::Bits::mask(*len))))
            .copied()
            .unwrap_or(NO_ROUTE)
    }
}

impl<A: super::FibFamily> LpmAlgorithm<A> for Reference<A> {
    const NAME: &'static str = "reference";
    type View = ReferenceView<A>;

    fn build(routes: &PrefixSet<A>) -> Result<Self, IdOutOfRange> {
        routes.check_ids()?;
        let mut view = ReferenceView {
            lengths: Vec::new(),
            version: 0,
        };
        for (p, &id) in routes.iter() {
            view.set(p, Some(id));
        }
        let current = Arc::new(view);
        Ok(Reference {
            cell: Arc::new(ArcSwap::new(current.clone())),
            current,
        })
    }

    fn update(&mut self, routes: &PrefixSet<A>, changed: &[Prefix<A>]) -> Result<(), IdOutOfRange> {
        check_changed(routes, changed)?;
        let mut next = (*self.current).clone();
        next.version += 1;
        for p in changed {
            next.set(*p, routes.get(p).copied());
        }
        self.current = Arc::new(next);
        self.cell.store(self.current.clone());
        Ok(())
    }

    fn reader(&self) -> Reader<Self::View> {
        Reader::new(self.cell.clone())
    }

    fn view(&self) -> &Self::View {
        &self.current
    }

    fn stats(&self) -> FibStats {
        let entries: usize = self.current.lengths.iter().map(|(_, t)| t.len()).sum();
        FibStats {
            bytes: entries * (std::mem::size_of::<A::Bits>() + 4) * 2,
            leaves: entries,
            ..FibStats::default()
        }
    }

    /// The stored `(prefix, id)` pairs in key order, each as its key's low 64 bits, its length
    /// and its id.
    fn image(&self) -> Vec<u64> {
        let mut pairs: Vec<(A::Bits, u8, u32)> = self
            .current
            .lengths
            .iter()
            .flat_map(|(len, t)| t.iter().map(move |(k, id)| (*k, *len, *id)))
            .collect();
        pairs.sort_unstable();
        pairs
            .into_iter()
            .flat_map(|(k, len, id)| [k.low_u64(), u64::from(len) << 32 | u64::from(id)])
            .collect()
    }
}

/// Keys are masked addresses, already well spread in their high bits: a multiply and a fold
/// hash them (the standard SipHash costs more than the probe).
#[derive(Default)]
struct KeyHasher(u64);

type KeyHash = BuildHasherDefault<KeyHasher>;

/// The prefixes of one length: masked key -> id.
type ExactTable<A> = HashMap<<A as Address>::Bits, u32, KeyHash>;

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::Fib;
    use rand::{Rng, SeedableRng};
    use std::net::Ipv4Addr;

    /// The definition, word for word: the longest prefix containing the key, over every route.
    /// (Only here: everything else is checked against the reference.)
    fn scan(routes: &[(Prefix<Ipv4Addr>, u32)], key: Ipv4Addr) -> u32 {
        routes
            .iter()
            .filter(|(p, _)| p.contains(key))
            .max_by_key(|(p, _)| p.len())
            .map_or(NO_ROUTE, |(_, id)| *id)
    }

    /// Random small tables on a few shared bases, changed a route at a time: the reference
    /// answers as the definition does, after every publication.
    #[test]
    fn answers_as_the_definition() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for _ in 0..200 {
            let mut model: Vec<(Prefix<Ipv4Addr>, u32)> = Vec::new();
            let mut fib: Fib<Ipv4Addr, Reference<Ipv4Addr>> = Fib::new();
            for _ in 0..40 {
                let base = [0u32, 0x0a00_0000, 0x0a01_0200, u32::MAX][rng.gen_range(0..4)];
                let p = Prefix::new(
                    Ipv4Addr::from(base ^ rng.gen_range(0..256)),
                    rng.gen_range(0..=32),
                );
                let id = rng.gen_bool(0.7).then(|| rng.gen_range(0..5));
                model.retain(|(q, _)| *q != p);
                model.extend(id.map(|id| (p, id)));
                fib.set(p, id).unwrap();
                fib.publish();
                for _ in 0..20 {
                    let probe = [0u32, 0x0a00_0000, 0x0a01_0200, u32::MAX][rng.gen_range(0..4)]
                        ^ rng.gen_range(0..1024);
                    let key = Ipv4Addr::from(probe);
                    assert_eq!(fib.lookup(key), scan(&model, key), "{key} in {model:?}");
                }
            }
        }
    }
}
