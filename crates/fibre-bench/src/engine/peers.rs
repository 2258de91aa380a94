//! Rust peer crates: `prefix-trie` (a path-compressed binary trie) and `poptrie` (the Poptrie
//! algorithm of Asai & Ohara). Both map a prefix to the next-hop index.
use super::{Engine, MISS};
use crate::key::PeerKey;
use crate::scenario::{BenchRoute, StudyFamily};
use std::marker::PhantomData;

pub struct PrefixTrieEngine<A: StudyFamily> {
    map: prefix_trie::PrefixMap<(A::K, u8), u8>,
    _family: PhantomData<A>,
}

impl<A: StudyFamily> PrefixTrieEngine<A>
where
    A::K: PeerKey,
{
    pub fn new() -> Self {
        PrefixTrieEngine {
            map: prefix_trie::PrefixMap::new(),
            _family: PhantomData,
        }
    }
}

impl<A: StudyFamily> Default for PrefixTrieEngine<A>
where
    A::K: PeerKey,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<A: StudyFamily> Engine<A> for PrefixTrieEngine<A>
where
    A::K: PeerKey,
{
    fn name(&self) -> &'static str {
        "prefix-trie"
    }
    fn note(&self) -> &'static str {
        "prefix-trie 0.10 PrefixMap::get_lpm"
    }
    fn build(&mut self, routes: &[BenchRoute<A::K>]) {
        for r in routes {
            self.map.insert((r.addr, r.len), r.nh);
        }
    }
    #[inline]
    fn lookup(&self, addr: A::K) -> u32 {
        self.map
            .get_lpm(&(addr, A::WIDTH))
            .map_or(MISS, |(_, nh)| *nh as u32)
    }
}

pub struct PoptrieEngine<A: StudyFamily> {
    trie: poptrie::Poptrie<(A::K, u8), u8>,
    _family: PhantomData<A>,
}

impl<A: StudyFamily> PoptrieEngine<A>
where
    A::K: PeerKey,
{
    pub fn new() -> Self {
        PoptrieEngine {
            trie: poptrie::Poptrie::new(),
            _family: PhantomData,
        }
    }
}

impl<A: StudyFamily> Default for PoptrieEngine<A>
where
    A::K: PeerKey,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<A: StudyFamily> Engine<A> for PoptrieEngine<A>
where
    A::K: PeerKey,
{
    fn name(&self) -> &'static str {
        "poptrie"
    }
    fn note(&self) -> &'static str {
        "poptrie 0.2 Poptrie::lookup"
    }
    fn build(&mut self, routes: &[BenchRoute<A::K>]) {
        for r in routes {
            self.trie.insert((r.addr, r.len), r.nh);
        }
    }
    #[inline]
    fn lookup(&self, addr: A::K) -> u32 {
        self.trie.lookup(addr).map_or(MISS, |nh| *nh as u32)
    }
}
