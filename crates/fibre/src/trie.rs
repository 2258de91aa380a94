//! A path-compressed binary trie (Patricia / radix tree) over [`Prefix`] keys.
//!
//! Each node carries a prefix; a child's prefix always extends its parent's, and the child side is
//! the bit of the child's prefix right after the parent's length. Nodes without a value ("glue")
//! exist only where two branches meet, so the tree has at most `2n - 1` nodes for `n` prefixes and
//! a path is at most `width + 1` nodes long.
//!
//! ```text
//!              10.0.0.0/7 (glue)
//!             /                 \
//!      10.0.0.0/8            11.0.0.0/8
//!       /      \
//!  10.0.0.0/16  10.128.0.0/9
//! ```
//!
//! Nodes live in one arena (pages of 4,096 entries) and refer to each other by `u32` index,
//! which keeps them small and lets removal recycle them through a free list. Values live in a
//! second arena of slots: a node holds its slot's index, so a walk reads nodes of 20 bytes
//! (IPv4) or 48 (IPv6) rather than nodes with room for a value, and glue nodes (0.8 per prefix
//! of a real table) carry none. A slot's index stays its prefix's while the prefix is stored.
//! A pre-order walk (node, then child 0, then child 1) visits prefixes in [`Prefix`] order: by
//! address, shorter first.
use crate::addr::Address;
use crate::prefix::Prefix;

const NIL: u32 = u32::MAX;

/// What a descent toward a prefix found.
#[derive(Clone, Copy)]
enum Located {
    Found(Descent),
    /// `p` would go below `parent` on `side`, where `at` (possibly `NIL`) is now.
    Missing {
        parent: u32,
        side: usize,
        at: u32,
    },
}

/// Where a descent to a prefix ended: its node, its parent and grandparent, and the sides
/// taken from them (what removing the node needs to splice the trie).
#[derive(Clone, Copy)]
struct Descent {
    gp: u32,
    gside: usize,
    parent: u32,
    side: usize,
    node: u32,
}

/// A trie node: its prefix, its children, and where its value is (`NIL` for glue). Values live
/// apart from the nodes (in [`PrefixTrie::slots`]) so a walk reads small nodes, several to a
/// cache line, and a glue node carries no room for a value.
#[derive(Clone, Debug)]
struct Node<A: Address> {
    prefix: Prefix<A>,
    child: [u32; 2],
    slot: u32,
}

/// A stored value and its prefix: a slot's index names the prefix without a walk. A vacant
/// slot holds `V::default()`; which slots hold values is a bitmap apart ([`PrefixTrie::live`]),
/// so a slot needs no `Option` tag (8 bytes of each, 16 for IPv6's entries).
#[derive(Clone, Debug)]
struct Slot<A: Address, V> {
    prefix: Prefix<A>,
    value: V,
}

/// Entries per page of a [`Paged`] arena.
const PAGE: usize = 4096;

/// An arena of fixed-size pages: it grows a page at a time, so a large trie never holds twice
/// its size while a `Vec` doubles, and never copies its entries to grow (a full table's nodes and
/// slots are 30-90 MB: a doubling `Vec` copied that much inside one insert).
#[derive(Clone, Debug)]
struct Paged<T> {
    pages: Vec<Vec<T>>,
    len: usize,
}

impl<T> Paged<T> {
    fn new() -> Self {
        Paged {
            pages: Vec::new(),
            len: 0,
        }
    }
    fn len(&self) -> usize {
        self.len
    }
    /// Appends `v`; returns its index.
    fn push(&mut self, v: T) -> u32 {
        match self.pages.last_mut() {
            Some(page) if page.len() < PAGE => page.push(v),
            _ => {
                let mut page = Vec::with_capacity(PAGE);
                page.push(v);
                self.pages.push(page);
            }
        }
        self.len += 1;
        (self.len - 1) as u32
    }
    #[inline]
    fn get(&self, i: usize) -> Option<&T> {
        self.pages.get(i / PAGE)?.get(i % PAGE)
    }
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.pages.iter_mut().flatten()
    }
}

impl<T> std::ops::Index<usize> for Paged<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.pages[i / PAGE][i % PAGE]
    }
}

impl<T> std::ops::IndexMut<usize> for Paged<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.pages[i / PAGE][i % PAGE]
    }
}

/// Whether bit `i` of `bits` is set (bits past the end are not).
#[inline]
fn is_set(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

/// A map from prefixes to values, kept as a path-compressed binary trie (see the module docs).
#[derive(Clone, Debug)]
pub struct PrefixTrie<A: Address, V> {
    nodes: Paged<Node<A>>,
    free: Vec<u32>,
    /// The values, by slot index; a vacant slot is on `free_slots`.
    slots: Paged<Slot<A, V>>,
    free_slots: Vec<u32>,
    /// Bit `i` is set while slot `i` holds a value.
    live: Vec<u64>,
    root: u32,
    len: usize,
}

/// Shape of a trie: what the route-lookup study reports as tree depth.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TrieStats {
    /// Prefixes stored.
    pub prefixes: usize,
    /// Nodes allocated, glue included.
    pub nodes: usize,
    /// Longest root-to-prefix path, in nodes visited (the root counts 1).
    pub max_depth: usize,
    /// Mean path length to a stored prefix, in nodes visited.
    pub mean_depth: f64,
}

impl<A: Address, V: Default> Default for PrefixTrie<A, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Address, V: Default> PrefixTrie<A, V> {
    /// An empty trie.
    pub fn new() -> Self {
        PrefixTrie {
            nodes: Paged::new(),
            free: Vec::new(),
            slots: Paged::new(),
            free_slots: Vec::new(),
            live: Vec::new(),
            root: NIL,
            len: 0,
        }
    }
    /// Number of prefixes holding a value.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether no prefix holds a value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn alloc(&mut self, prefix: Prefix<A>) -> u32 {
        let node = Node {
            prefix,
            child: [NIL, NIL],
            slot: NIL,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node)
        }
    }
    fn release(&mut self, i: u32) {
        let n = &mut self.nodes[i as usize];
        debug_assert_eq!(n.slot, NIL, "a released node holds no value");
        n.child = [NIL, NIL];
        self.free.push(i);
    }
    fn set_link(&mut self, parent: u32, side: usize, to: u32) {
        if parent == NIL {
            self.root = to;
        } else {
            self.nodes[parent as usize].child[side] = to;
        }
    }

    /// The value of node `n`, if it holds one.
    #[inline]
    fn value(&self, n: u32) -> Option<&V> {
        let s = self.nodes[n as usize].slot;
        (s != NIL).then(|| &self.slots[s as usize].value)
    }
    #[inline]
    fn value_mut(&mut self, n: u32) -> Option<&mut V> {
        let s = self.nodes[n as usize].slot;
        (s != NIL).then(|| &mut self.slots[s as usize].value)
    }
    #[inline]
    fn is_live(&self, s: u32) -> bool {
        is_set(&self.live, s as usize)
    }
    fn set_live(&mut self, s: u32, on: bool) {
        let w = s as usize / 64;
        if self.live.len() <= w {
            self.live.resize(w + 1, 0);
        }
        if on {
            self.live[w] |= 1 << (s % 64);
        } else {
            self.live[w] &= !(1 << (s % 64));
        }
    }
    fn holds_value(&self, n: u32) -> bool {
        self.nodes[n as usize].slot != NIL
    }
    /// Stores `value` at node `n` (in its slot, or a new one); returns the value it replaces.
    fn put_value(&mut self, n: u32, value: V) -> Option<V> {
        let s = self.nodes[n as usize].slot;
        if s != NIL {
            return Some(std::mem::replace(&mut self.slots[s as usize].value, value));
        }
        let slot = Slot {
            prefix: self.nodes[n as usize].prefix,
            value,
        };
        let s = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => self.slots.push(slot),
        };
        self.nodes[n as usize].slot = s;
        self.set_live(s, true);
        self.len += 1;
        None
    }
    /// Takes node `n`'s value out and frees its slot.
    fn take_value(&mut self, n: u32) -> Option<V> {
        let s = self.nodes[n as usize].slot;
        if s == NIL {
            return None;
        }
        self.nodes[n as usize].slot = NIL;
        self.free_slots.push(s);
        self.set_live(s, false);
        self.len -= 1;
        Some(std::mem::take(&mut self.slots[s as usize].value))
    }

    fn find(&self, p: &Prefix<A>) -> Option<u32> {
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if !node.prefix.covers(p) {
                return None;
            }
            if node.prefix.len() == p.len() {
                return Some(n);
            }
            n = node.child[p.bit(node.prefix.len()) as usize];
        }
        None
    }

    /// The value stored at exactly `p`.
    pub fn get(&self, p: &Prefix<A>) -> Option<&V> {
        self.find(p).and_then(|i| self.value(i))
    }
    /// The value stored at exactly `p`, mutably.
    pub fn get_mut(&mut self, p: &Prefix<A>) -> Option<&mut V> {
        self.find(p).and_then(|i| self.value_mut(i))
    }
    /// The index of `p`'s value while it holds one. It stays `p`'s while `p` is stored (other
    /// inserts and removals, and edits of `p`'s value, do not move it): a compiled FIB keeps it
    /// to reach the value without a walk, and checks it with [`PrefixTrie::at`].
    pub fn index_of(&self, p: &Prefix<A>) -> Option<u32> {
        self.find(p)
            .map(|i| self.nodes[i as usize].slot)
            .filter(|&s| s != NIL)
    }
    /// The prefix and value at an index from [`PrefixTrie::index_of`], if it holds a value.
    #[inline]
    pub fn at(&self, i: u32) -> Option<(&Prefix<A>, &V)> {
        if !self.is_live(i) {
            return None;
        }
        let s = self.slots.get(i as usize)?;
        Some((&s.prefix, &s.value))
    }
    /// Whether a value is stored at exactly `p`.
    pub fn contains_key(&self, p: &Prefix<A>) -> bool {
        self.get(p).is_some()
    }

    /// Finds or creates the node of `p` (without a value if new).
    fn node_for(&mut self, p: Prefix<A>) -> u32 {
        match self.locate(&p) {
            Located::Found(d) => d.node,
            Located::Missing { parent, side, at } => self.place(p, parent, side, at),
        }
    }

    /// One descent toward `p`: its node (with its two nearest ancestors), or where a node for
    /// it would go.
    fn locate(&self, p: &Prefix<A>) -> Located {
        let (mut gp, mut gside) = (NIL, 0usize);
        let (mut parent, mut side, mut n) = (NIL, 0usize, self.root);
        while n != NIL {
            let q = self.nodes[n as usize].prefix;
            if q == *p {
                return Located::Found(Descent {
                    gp,
                    gside,
                    parent,
                    side,
                    node: n,
                });
            }
            if !q.covers(p) {
                break;
            }
            gp = parent;
            gside = side;
            parent = n;
            side = p.bit(q.len()) as usize;
            n = self.nodes[n as usize].child[side];
        }
        Located::Missing {
            parent,
            side,
            at: n,
        }
    }

    /// Creates the node of `p` where [`PrefixTrie::locate`] found it missing: below `parent`
    /// on `side`, in place of `at` (empty, covered by `p`, or beside `p` under a new glue
    /// node at their common prefix).
    fn place(&mut self, p: Prefix<A>, parent: u32, side: usize, at: u32) -> u32 {
        let new = self.alloc(p);
        if at == NIL {
            self.set_link(parent, side, new);
            return new;
        }
        let q = self.nodes[at as usize].prefix;
        if p.covers(&q) {
            // The new prefix sits between parent and `at`.
            self.nodes[new as usize].child[q.bit(p.len()) as usize] = at;
            self.set_link(parent, side, new);
            return new;
        }
        // Neither covers the other: a glue node at their common prefix joins them.
        let c = q.common(&p);
        let glue = self.alloc(c);
        self.nodes[glue as usize].child[q.bit(c.len()) as usize] = at;
        self.nodes[glue as usize].child[p.bit(c.len()) as usize] = new;
        self.set_link(parent, side, glue);
        new
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, p: Prefix<A>, value: V) -> Option<V> {
        let i = self.node_for(p);
        self.put_value(i, value)
    }

    /// The value at `p`, created with `make` if absent.
    pub fn get_or_insert_with(&mut self, p: Prefix<A>, make: impl FnOnce() -> V) -> &mut V {
        let i = self.node_for(p);
        if !self.holds_value(i) {
            self.put_value(i, make());
        }
        self.value_mut(i).expect("just set")
    }

    /// Runs `f` on the value slot of `p` (`None` if absent) in one descent: a value it puts in
    /// an absent slot is inserted where the descent stopped, and a value it takes out is
    /// removed with the nodes that no longer branch. A value it leaves in place keeps its
    /// index.
    pub fn update<R>(&mut self, p: Prefix<A>, f: impl FnOnce(&mut Option<V>) -> R) -> R {
        let located = self.locate(&p);
        let (path, s) = match located {
            Located::Found(d) if self.holds_value(d.node) => (d, self.nodes[d.node as usize].slot),
            _ => {
                // No value at `p` (no node, or a glue node): one goes in only if `f` puts one.
                let mut slot = None;
                let r = f(&mut slot);
                if let Some(v) = slot {
                    let n = match located {
                        Located::Found(d) => d.node,
                        Located::Missing { parent, side, at } => self.place(p, parent, side, at),
                    };
                    self.put_value(n, v);
                }
                return r;
            }
        };
        let n = path.node;
        let mut value = Some(std::mem::take(&mut self.slots[s as usize].value));
        let r = f(&mut value);
        match value {
            Some(v) => self.slots[s as usize].value = v,
            None => {
                self.take_value(n);
                self.prune(path);
            }
        }
        r
    }

    /// Removes the value at `p`, and the nodes that no longer branch.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<V> {
        let Located::Found(path) = self.locate(p) else {
            return None;
        };
        let old = self.take_value(path.node)?;
        self.prune(path);
        Some(old)
    }

    /// Takes out the node of `at`, which has just lost its value, if it no longer branches
    /// (and its glue parent, if that no longer branches either).
    fn prune(&mut self, at: Descent) {
        let Descent {
            gp,
            gside,
            parent,
            side,
            node: n,
        } = at;
        let [c0, c1] = self.nodes[n as usize].child;
        match (c0 != NIL, c1 != NIL) {
            (true, true) => {} // still a branch point: stays as glue
            (true, false) | (false, true) => {
                let only = if c0 != NIL { c0 } else { c1 };
                self.set_link(parent, side, only);
                self.release(n);
            }
            (false, false) => {
                self.set_link(parent, side, NIL);
                self.release(n);
                // A glue parent left with one child no longer branches: splice it out.
                if parent != NIL && !self.holds_value(parent) {
                    let sibling = self.nodes[parent as usize].child[1 - side];
                    self.set_link(gp, gside, sibling);
                    self.release(parent);
                }
            }
        }
    }

    /// Calls `f` on every stored prefix containing `addr`, longest first, until it returns `Some`.
    ///
    /// This is the shape of every kernel lookup: find the longest match, and if its routes do not
    /// qualify, fall back to shorter prefixes.
    #[inline]
    pub fn find_map_matches<'s, R>(
        &'s self,
        addr: A,
        mut f: impl FnMut(&'s Prefix<A>, &'s V) -> Option<R>,
    ) -> Option<R> {
        // Step 1: descend, remembering the slots of the nodes whose prefix matches and holds a
        // value.
        let mut path = [NIL; 129];
        let mut depth = 0;
        let key = Prefix::host(addr);
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if !node.prefix.covers(&key) {
                break;
            }
            if node.slot != NIL {
                path[depth] = node.slot;
                depth += 1;
            }
            if node.prefix.len() == A::WIDTH {
                break;
            }
            n = node.child[key.bit(node.prefix.len()) as usize];
        }
        // Step 2: backtrack from the longest match.
        for &s in path[..depth].iter().rev() {
            let slot = &self.slots[s as usize];
            if let Some(r) = f(&slot.prefix, &slot.value) {
                return Some(r);
            }
        }
        None
    }

    /// The longest stored prefix containing `addr`.
    pub fn longest_match(&self, addr: A) -> Option<(Prefix<A>, &V)> {
        self.find_map_matches(addr, |p, v| Some((*p, v)))
    }

    /// Stored prefixes covering `p` (its supernets and `p` itself), shortest first.
    pub fn covering(&self, p: &Prefix<A>) -> Vec<(Prefix<A>, &V)> {
        let mut out = Vec::new();
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            if !node.prefix.covers(p) {
                break;
            }
            if let Some(v) = self.value(n) {
                out.push((node.prefix, v));
            }
            if node.prefix.len() == p.len() {
                break;
            }
            n = node.child[p.bit(node.prefix.len()) as usize];
        }
        out
    }

    /// Stored prefixes covered by `p` (its subnets and `p` itself), in order.
    pub fn covered(&self, p: &Prefix<A>) -> Iter<'_, A, V> {
        let mut n = self.root;
        while n != NIL {
            let q = self.nodes[n as usize].prefix;
            if p.covers(&q) {
                break;
            }
            if !q.covers(p) {
                n = NIL;
                break;
            }
            n = self.nodes[n as usize].child[p.bit(q.len()) as usize];
        }
        Iter {
            trie: self,
            stack: if n == NIL { vec![] } else { vec![n] },
        }
    }

    /// All stored prefixes in order.
    pub fn iter(&self) -> Iter<'_, A, V> {
        Iter {
            trie: self,
            stack: if self.root == NIL {
                vec![]
            } else {
                vec![self.root]
            },
        }
    }

    /// Stored prefixes from the first one `>= start` on, in order: SNMP GETNEXT is `range_from`
    /// then skip `start` itself.
    pub fn range_from(&self, start: &Prefix<A>) -> Iter<'_, A, V> {
        let mut stack = Vec::new();
        let mut n = self.root;
        while n != NIL {
            let node = &self.nodes[n as usize];
            let q = node.prefix;
            if q >= *start {
                // q is the smallest prefix of its subtree, so the whole subtree qualifies.
                stack.push(n);
                break;
            }
            if !q.covers(start) {
                // Disjoint and smaller: so is everything below it.
                break;
            }
            if q.len() == start.len() {
                unreachable!("q covers start with equal length means q == start");
            }
            if start.bit(q.len()) {
                n = node.child[1]; // child 0 holds only smaller addresses
            } else {
                if node.child[1] != NIL {
                    stack.push(node.child[1]); // all larger than start; visited after child 0
                }
                n = node.child[0];
            }
        }
        Iter { trie: self, stack }
    }

    /// Depth and node counts.
    pub fn stats(&self) -> TrieStats {
        let mut s = TrieStats {
            prefixes: self.len,
            nodes: self.nodes.len() - self.free.len(),
            ..Default::default()
        };
        let mut total = 0usize;
        let mut stack = Vec::new();
        if self.root != NIL {
            stack.push((self.root, 1usize));
        }
        while let Some((n, d)) = stack.pop() {
            let node = &self.nodes[n as usize];
            if node.slot != NIL {
                total += d;
                s.max_depth = s.max_depth.max(d);
            }
            for c in node.child {
                if c != NIL {
                    stack.push((c, d + 1));
                }
            }
        }
        if self.len > 0 {
            s.mean_depth = total as f64 / self.len as f64;
        }
        s
    }

    /// Keeps only the values for which `f` returns true; `f` may also edit them.
    pub fn retain(&mut self, mut f: impl FnMut(&Prefix<A>, &mut V) -> bool) {
        let mut doomed = Vec::new();
        let live = &self.live;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if is_set(live, i) && !f(&slot.prefix, &mut slot.value) {
                doomed.push(slot.prefix);
            }
        }
        for p in doomed {
            self.remove(&p);
        }
    }

    /// Visits every value mutably, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = (&Prefix<A>, &mut V)> {
        let live = &self.live;
        self.slots
            .iter_mut()
            .enumerate()
            .filter(|&(i, _)| is_set(live, i))
            .map(|(_, s)| (&s.prefix, &mut s.value))
    }
}

/// In-order iterator; see [`PrefixTrie::iter`].
pub struct Iter<'a, A: Address, V> {
    trie: &'a PrefixTrie<A, V>,
    stack: Vec<u32>,
}

impl<'a, A: Address, V> Iter<'a, A, V> {
    /// The next stored prefix with its value's index ([`PrefixTrie::index_of`]).
    pub fn next_indexed(&mut self) -> Option<(u32, Prefix<A>, &'a V)> {
        while let Some(n) = self.stack.pop() {
            let node = &self.trie.nodes[n as usize];
            if node.child[1] != NIL {
                self.stack.push(node.child[1]);
            }
            if node.child[0] != NIL {
                self.stack.push(node.child[0]);
            }
            if node.slot != NIL {
                let v = &self.trie.slots[node.slot as usize].value;
                return Some((node.slot, node.prefix, v));
            }
        }
        None
    }
}

impl<'a, A: Address, V> Iterator for Iter<'a, A, V> {
    type Item = (Prefix<A>, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        self.next_indexed().map(|(_, p, v)| (p, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn p4(s: &str) -> Prefix<Ipv4Addr> {
        s.parse().unwrap()
    }

    #[test]
    fn insert_lookup_remove() {
        let mut t = PrefixTrie::new();
        for (i, s) in [
            "10.0.0.0/8",
            "10.0.0.0/16",
            "10.128.0.0/9",
            "11.0.0.0/8",
            "0.0.0.0/0",
        ]
        .iter()
        .enumerate()
        {
            assert!(t.insert(p4(s), i).is_none());
        }
        assert_eq!(t.len(), 5);
        assert_eq!(
            t.longest_match(Ipv4Addr::new(10, 0, 1, 1)).unwrap().0,
            p4("10.0.0.0/16")
        );
        assert_eq!(
            t.longest_match(Ipv4Addr::new(10, 200, 1, 1)).unwrap().0,
            p4("10.128.0.0/9")
        );
        assert_eq!(
            t.longest_match(Ipv4Addr::new(12, 0, 0, 1)).unwrap().0,
            p4("0.0.0.0/0")
        );
        let order: Vec<_> = t.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(
            order,
            [
                "0.0.0.0/0",
                "10.0.0.0/8",
                "10.0.0.0/16",
                "10.128.0.0/9",
                "11.0.0.0/8"
            ]
        );
        assert_eq!(t.remove(&p4("10.0.0.0/8")), Some(0));
        assert_eq!(t.remove(&p4("10.0.0.0/8")), None);
        assert_eq!(
            t.longest_match(Ipv4Addr::new(10, 1, 1, 1)).unwrap().0,
            p4("0.0.0.0/0")
        );
        for s in ["10.0.0.0/16", "10.128.0.0/9", "11.0.0.0/8", "0.0.0.0/0"] {
            t.remove(&p4(s)).unwrap();
        }
        assert!(t.is_empty());
        assert_eq!(t.stats().nodes, 0, "all glue is released");
    }

    /// The oracle: a sorted map scanned linearly.
    fn check_against_model<A: Address>(
        trie: &PrefixTrie<A, u32>,
        model: &BTreeMap<Prefix<A>, u32>,
        probes: &[A],
    ) {
        assert_eq!(trie.len(), model.len());
        let all: Vec<_> = trie.iter().map(|(p, v)| (p, *v)).collect();
        let want: Vec<_> = model.iter().map(|(p, v)| (*p, *v)).collect();
        assert_eq!(all, want, "ordered iteration is sorted and complete");
        for &a in probes {
            let best = model
                .iter()
                .filter(|(p, _)| p.contains(a))
                .max_by_key(|(p, _)| p.len());
            assert_eq!(
                trie.longest_match(a).map(|(p, v)| (p, *v)),
                best.map(|(p, v)| (*p, *v))
            );
            let host = Prefix::host(a);
            for len in [0, A::WIDTH / 4, A::WIDTH / 2, A::WIDTH - 3] {
                let q = Prefix::new(a, len);
                let covering: Vec<_> = trie.covering(&q).into_iter().map(|(p, _)| p).collect();
                let want: Vec<_> = model.keys().filter(|p| p.covers(&q)).copied().collect();
                assert_eq!(covering, want);
                let covered: Vec<_> = trie.covered(&q).map(|(p, _)| p).collect();
                let want: Vec<_> = model.keys().filter(|p| q.covers(p)).copied().collect();
                assert_eq!(covered, want);
                let from: Vec<_> = trie.range_from(&q).map(|(p, _)| p).collect();
                let want: Vec<_> = model.keys().filter(|p| **p >= q).copied().collect();
                assert_eq!(from, want);
            }
            let _ = host;
        }
    }

    /// One operation on the trie and on the model: 0 insert, 1 remove, 2 `update` (which,
    /// by `v`, takes the value out, puts one in, or changes one in place).
    fn apply_op<A: Address>(
        t: &mut PrefixTrie<A, u32>,
        m: &mut BTreeMap<Prefix<A>, u32>,
        op: u8,
        p: Prefix<A>,
        v: u32,
    ) {
        match op {
            0 => assert_eq!(t.insert(p, v), m.insert(p, v)),
            1 => assert_eq!(t.remove(&p), m.remove(&p)),
            _ => {
                let edit = |slot: &mut Option<u32>| {
                    let was = *slot;
                    match v % 3 {
                        0 => *slot = None,
                        1 => *slot = Some(v),
                        _ => {
                            if let Some(x) = slot.as_mut() {
                                *x = x.wrapping_add(1);
                            }
                        }
                    }
                    was
                };
                let mut model_slot = m.get(&p).copied();
                let want = edit(&mut model_slot);
                match model_slot {
                    Some(x) => m.insert(p, x),
                    None => m.remove(&p),
                };
                assert_eq!(t.update(p, edit), want);
            }
        }
    }

    /// [`apply_op`], checking that every prefix stored before and after the operation kept
    /// its index ([`PrefixTrie::index_of`]), and that each index gives back its prefix and value
    /// ([`PrefixTrie::at`]).
    fn apply_op_keeping_indexes<A: Address>(
        t: &mut PrefixTrie<A, u32>,
        m: &mut BTreeMap<Prefix<A>, u32>,
        op: u8,
        p: Prefix<A>,
        v: u32,
    ) {
        let before: BTreeMap<Prefix<A>, u32> = m
            .keys()
            .map(|q| (*q, t.index_of(q).expect("stored prefixes have an index")))
            .collect();
        apply_op(t, m, op, p, v);
        for (q, value) in m.iter() {
            let i = t.index_of(q).expect("stored prefixes have an index");
            assert_eq!(
                t.at(i),
                Some((q, value)),
                "the index names its prefix and value"
            );
            if let Some(&was) = before.get(q) {
                assert_eq!(i, was, "{q:?} kept its index");
            }
        }
        for (q, &was) in &before {
            if !m.contains_key(q) {
                assert_ne!(
                    t.at(was).map(|(p, _)| *p),
                    Some(*q),
                    "a removed prefix's index no longer names it"
                );
            }
        }
        let indexes: std::collections::BTreeSet<u32> =
            m.keys().filter_map(|q| t.index_of(q)).collect();
        assert_eq!(indexes.len(), m.len(), "indexes are distinct");
    }

    fn arb_prefix4() -> impl Strategy<Value = Prefix<Ipv4Addr>> {
        // Few distinct high bits so that prefixes nest and collide often.
        (0u32..16, 0u8..=32)
            .prop_map(|(hi, len)| Prefix::new(Ipv4Addr::from(hi.rotate_right(4) | (hi << 8)), len))
    }
    fn arb_prefix6() -> impl Strategy<Value = Prefix<Ipv6Addr>> {
        (0u128..16, 0u8..=128)
            .prop_map(|(hi, len)| Prefix::new(Ipv6Addr::from(hi.rotate_right(4) | (hi << 60)), len))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]
        #[test]
        fn trie_matches_model_v4(ops in prop::collection::vec((0u8..3, arb_prefix4(), any::<u32>()), 0..40),
                                 probes in prop::collection::vec(any::<u32>(), 1..8)) {
            let mut t = PrefixTrie::new();
            let mut m = BTreeMap::new();
            for (op, p, v) in ops {
                apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
            }
            let probes: Vec<Ipv4Addr> = probes.into_iter().map(|x| Ipv4Addr::from(x & 0xf0f0_0fff)).collect();
            check_against_model(&t, &m, &probes);
            prop_assert!(t.stats().nodes <= 2 * t.len().max(1));
        }

        #[test]
        fn trie_matches_model_v6(ops in prop::collection::vec((0u8..3, arb_prefix6(), any::<u32>()), 0..40),
                                 probes in prop::collection::vec(any::<u128>(), 1..8)) {
            let mut t = PrefixTrie::new();
            let mut m = BTreeMap::new();
            for (op, p, v) in ops {
                apply_op_keeping_indexes(&mut t, &mut m, op, p, v);
            }
            let probes: Vec<Ipv6Addr> = probes.into_iter().map(|x| Ipv6Addr::from(x & !(0x0fffu128 << 100))).collect();
            check_against_model(&t, &m, &probes);
            prop_assert!(t.stats().nodes <= 2 * t.len().max(1));
        }

        #[test]
        fn insert_order_does_not_matter(mut ps in prop::collection::vec(arb_prefix4(), 0..40), seed in any::<u64>()) {
            let a: PrefixTrie<_, ()> = ps.iter().map(|p| (*p, ())).fold(PrefixTrie::new(), |mut t, (p, v)| { t.insert(p, v); t });
            // A deterministic shuffle of the same prefixes.
            let n = ps.len();
            for i in 0..n { let j = (seed as usize).wrapping_mul(i + 7) % n; ps.swap(i, j); }
            let b: PrefixTrie<_, ()> = ps.iter().map(|p| (*p, ())).fold(PrefixTrie::new(), |mut t, (p, v)| { t.insert(p, v); t });
            prop_assert_eq!(a.iter().map(|x| x.0).collect::<Vec<_>>(), b.iter().map(|x| x.0).collect::<Vec<_>>());
            prop_assert_eq!(a.stats().nodes, b.stats().nodes, "the shape is canonical");
        }
    }
}
