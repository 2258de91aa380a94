//! Next hops, and the interning table that shares them between routes.
//!
//! A route refers to its next hops through an [`NhId`]: a small index into the family's
//! [`NhTable`], where identical next-hop groups are stored once and reference-counted, as the
//! kernel shares `fib_info` objects. A compiled FIB stores these small ids, never route structs.
//!
//! Next-hop *objects* (`ip nexthop`, [`NhObject`]) are another thing: next hops that userspace
//! names with an id, which routes refer to with `nhid`.
use crate::addr::Address;
use crate::link::IfIndex;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

mod object;
pub use object::{GroupMember, NhObject, NhObjectKind, NhObjectRef};

/// One way out: a gateway, a device, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "snapshot", derive(serde::Serialize, serde::Deserialize))]
pub struct NextHop<A: Address> {
    /// Gateway address (`via`); `None` for a destination directly on the device's link.
    pub gateway: Option<A>,
    /// Output device; `None` only for reject routes (the kernel then uses `lo`).
    pub dev: Option<IfIndex>,
    /// ECMP weight, 1..=256 (`rtnh_hops + 1`).
    pub weight: u16,
    /// `onlink` (`RTNH_F_ONLINK`): the gateway is taken to be on the device's link without a
    /// route to it.
    pub onlink: bool,
}

/// Every field, in at most two writes: the device (+1, so that `None` and `Some(0)` differ; at
/// most 2^32, bits 0..=32), the weight (bits 33..=48), `onlink` (49) and whether there is a
/// gateway (50) packed into one word, no field overlapping another, then the gateway's bits.
/// Equal hops hash equal, as `Eq` needs. (Derived, it took six writes a hop: interning a
/// route's group on the load of the IPv4 view took 198 instructions a route, 157 now;
/// callgrind, docs/fib.md's thirty-first round.)
impl<A: Address> Hash for NextHop<A> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let dev = self.dev.map_or(0, |d| u64::from(d) + 1);
        let flags = u64::from(self.weight) << 33
            | u64::from(self.onlink) << 49
            | u64::from(self.gateway.is_some()) << 50;
        state.write_u64(dev | flags);
        if let Some(gateway) = self.gateway {
            gateway.to_bits().hash(state);
        }
    }
}

impl<A: Address> NextHop<A> {
    /// A direct hop out of `dev` (`dev DEV`), weight 1.
    pub fn dev(dev: IfIndex) -> Self {
        NextHop {
            gateway: None,
            dev: Some(dev),
            weight: 1,
            onlink: false,
        }
    }
    /// A hop through `gateway` on `dev` (`via GW dev DEV`), weight 1.
    pub fn via(gateway: A, dev: IfIndex) -> Self {
        NextHop {
            gateway: Some(gateway),
            dev: Some(dev),
            weight: 1,
            onlink: false,
        }
    }
}

/// Index of an interned next-hop group. `NhId::NONE` is the empty group of reject routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NhId(pub u32);

impl NhId {
    /// The empty group (slot 0), used by routes without next hops.
    pub const NONE: NhId = NhId(0);
}

/// Interned next-hop groups with reference counts. Slot 0 is the empty group, never freed.
#[derive(Clone, Debug)]
pub struct NhTable<A: Address> {
    groups: Vec<Vec<NextHop<A>>>,
    refs: Vec<u32>,
    /// Hashed with foldhash: every route insert interns its group, and SipHash cost more than
    /// the rest of the intern.
    index: HashMap<Vec<NextHop<A>>, NhId, foldhash::fast::RandomState>,
    free: Vec<u32>,
    /// While a change set is open (`in_txn`): references taken (dropped on rollback) and
    /// releases put off until commit, so that a rolled-back route never points at a freed or
    /// reused slot. The lists keep their room from one change set to the next (a route change
    /// is a change set of its own, and allocating them again cost it 250 instructions).
    in_txn: bool,
    acquired: Vec<NhId>,
    deferred: Vec<NhId>,
}

impl<A: Address> Default for NhTable<A> {
    fn default() -> Self {
        NhTable {
            groups: vec![Vec::new()],
            refs: vec![u32::MAX],
            index: HashMap::default(),
            free: Vec::new(),
            in_txn: false,
            acquired: Vec::new(),
            deferred: Vec::new(),
        }
    }
}

impl<A: Address> NhTable<A> {
    /// A table holding only the empty group.
    pub fn new() -> Self {
        Self::default()
    }
    /// Opens a change set: see the `in_txn` field.
    pub fn begin(&mut self) {
        debug_assert!(!self.in_txn, "nested change sets");
        self.in_txn = true;
    }
    /// Closes a change set, carrying out the releases it put off.
    pub fn commit(&mut self) {
        self.close(false);
    }
    /// Closes a change set, dropping the references it took; its releases never happen.
    pub fn rollback(&mut self) {
        self.close(true);
    }
    /// Closes a change set: releases the references it took (`undo`) or the ones it put off.
    /// Both lists are emptied and keep their room, unless a load made them large.
    fn close(&mut self, undo: bool) {
        if !std::mem::take(&mut self.in_txn) {
            return;
        }
        let list = if undo {
            &mut self.acquired
        } else {
            &mut self.deferred
        };
        let mut releases = std::mem::take(list);
        for &id in &releases {
            self.release(id);
        }
        releases.clear();
        self.acquired.clear();
        self.deferred.clear();
        if undo {
            self.acquired = releases;
        } else {
            self.deferred = releases;
        }
        const KEEP_ROOM: usize = 4096;
        for list in [&mut self.acquired, &mut self.deferred] {
            if list.capacity() > KEEP_ROOM {
                *list = Vec::new();
            }
        }
    }
    /// Returns the id of this group, storing it if new, and takes a reference.
    pub fn intern(&mut self, hops: &[NextHop<A>]) -> NhId {
        if hops.is_empty() {
            return NhId::NONE;
        }
        if let Some(&id) = self.index.get(hops) {
            self.refs[id.0 as usize] += 1;
            self.note_acquired(id);
            return id;
        }
        let id = match self.free.pop() {
            Some(i) => {
                self.groups[i as usize] = hops.to_vec();
                self.refs[i as usize] = 1;
                NhId(i)
            }
            None => {
                self.groups.push(hops.to_vec());
                self.refs.push(1);
                NhId((self.groups.len() - 1) as u32)
            }
        };
        self.index.insert(hops.to_vec(), id);
        self.note_acquired(id);
        id
    }
    fn note_acquired(&mut self, id: NhId) {
        if self.in_txn {
            self.acquired.push(id);
        }
    }
    /// Takes one more reference to an id already held.
    pub fn retain(&mut self, id: NhId) {
        if id != NhId::NONE {
            self.refs[id.0 as usize] += 1;
            self.note_acquired(id);
        }
    }
    /// Drops a reference; the group is freed with its last one.
    pub fn release(&mut self, id: NhId) {
        if id == NhId::NONE {
            return;
        }
        if self.in_txn {
            self.deferred.push(id);
            return;
        }
        let r = &mut self.refs[id.0 as usize];
        debug_assert!(*r > 0, "release of a free next-hop group");
        *r -= 1;
        if *r == 0 {
            let hops = std::mem::take(&mut self.groups[id.0 as usize]);
            self.index.remove(&hops);
            self.free.push(id.0);
        }
    }
    /// The next hops of group `id`.
    #[inline]
    pub fn get(&self, id: NhId) -> &[NextHop<A>] {
        &self.groups[id.0 as usize]
    }
    /// Groups currently stored (the empty group not counted).
    pub fn len(&self) -> usize {
        self.index.len()
    }
    /// Whether no group other than the empty one is stored.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn identical_groups_share_one_id_until_released() {
        let mut t = NhTable::<Ipv4Addr>::new();
        let a = [NextHop::via(Ipv4Addr::new(10, 0, 0, 1), 2)];
        let b = [NextHop::via(Ipv4Addr::new(10, 0, 0, 2), 2)];
        let ia = t.intern(&a);
        assert_eq!(t.intern(&a), ia);
        let ib = t.intern(&b);
        assert_ne!(ia, ib);
        assert_eq!(t.len(), 2);
        t.release(ia);
        assert_eq!(t.get(ia), &a);
        t.release(ia);
        assert_eq!(t.len(), 1);
        let ic = t.intern(&a);
        assert_eq!(ic, ia, "the freed slot is reused");
        assert_eq!(t.intern(&[]), NhId::NONE);
    }

    /// Every field goes into a hop's hash (hops that differ in one field hash apart), equal
    /// hops hash equal (their groups intern to one id), and each differing hop is a group
    /// of its own.
    #[test]
    fn a_hops_hash_takes_every_field() {
        use std::net::Ipv6Addr;
        fn check<A: Address>(gateways: [A; 2]) {
            let base = NextHop::via(gateways[0], 2);
            let variants = [
                base,
                NextHop {
                    gateway: Some(gateways[1]),
                    ..base
                },
                NextHop {
                    gateway: Some(A::unspecified()),
                    ..base
                },
                NextHop {
                    gateway: None,
                    ..base
                },
                NextHop { dev: None, ..base },
                NextHop {
                    dev: Some(0),
                    ..base
                },
                NextHop {
                    dev: Some(IfIndex::MAX),
                    ..base
                },
                NextHop {
                    weight: 256,
                    ..base
                },
                NextHop {
                    onlink: true,
                    ..base
                },
            ];
            let hash = |h: &NextHop<A>| {
                // SipHash with fixed keys: a collision, however unlikely, reproduces rather than
                // flakes.
                let mut s = std::collections::hash_map::DefaultHasher::new();
                h.hash(&mut s);
                s.finish()
            };
            let mut hashes: Vec<u64> = variants.iter().map(hash).collect();
            hashes.sort_unstable();
            hashes.dedup();
            assert_eq!(hashes.len(), variants.len(), "{}", A::WIDTH);
            let mut t = NhTable::<A>::new();
            let ids: Vec<NhId> = variants.iter().map(|h| t.intern(&[*h])).collect();
            let copies: Vec<NhId> = variants.iter().map(|h| t.intern(&[*h])).collect();
            assert_eq!(ids, copies, "equal hops, one group");
            assert_eq!(t.len(), variants.len(), "a group each");
        }
        check([Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)]);
        check([
            "2001:db8::1".parse::<Ipv6Addr>().unwrap(),
            "fe80::1".parse().unwrap(),
        ]);
    }

    #[test]
    fn rollback_keeps_released_groups_alive() {
        let mut t = NhTable::<Ipv4Addr>::new();
        let a = [NextHop::via(Ipv4Addr::new(10, 0, 0, 1), 2)];
        let ia = t.intern(&a);
        t.begin();
        t.release(ia);
        let ib = t.intern(&[NextHop::dev(3)]);
        assert_ne!(ia, ib, "a released slot is not reused inside a change set");
        t.rollback();
        assert_eq!(t.get(ia), &a);
        assert_eq!(
            t.len(),
            1,
            "the group taken inside the rolled-back set is gone"
        );
        t.begin();
        t.release(ia);
        t.commit();
        assert!(t.is_empty());
    }
}
