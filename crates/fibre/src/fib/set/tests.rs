//! The set against a model: a sorted map scanned in full.
use super::*;
use crate::addr::Bits;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The model: every prefix covering `p`, checked one by one.
fn model_covering<A: FibFamily>(
    model: &BTreeMap<Prefix<A>, u32>,
    p: &Prefix<A>,
    strictly: bool,
) -> Option<(Prefix<A>, u32)> {
    model
        .iter()
        .filter(|(q, _)| q.covers(p) && (!strictly || q.len() < p.len()))
        .max_by_key(|(q, _)| q.len())
        .map(|(q, &id)| (*q, id))
}

/// Prefixes within a few bits of each other (so that covering, covered and neighbours
/// happen often), at any length.
fn near<A: FibFamily>(top: u64, len: u8) -> Prefix<A> {
    let width = A::WIDTH as u32;
    // The low six bits again past the middle: long IPv6 prefixes differ in the low word.
    let bits = (A::Bits::from_u64(top) << (width - 12))
        | (A::Bits::from_u64(top & 0x3f) << (width / 2 - 6));
    Prefix::from_bits(bits, len.min(A::WIDTH)).expect("length clipped")
}

/// Prefixes in a few direct-pointing slots, many to a slot: siblings, and covers at
/// every depth below the slot (what `covering_shorter` searches by walking and by length).
fn dense<A: FibFamily>(top: u64, len: u8) -> Prefix<A> {
    let width = A::WIDTH as u32;
    let low = (width - A::DP_BITS).min(20);
    let slot = A::Bits::from_u64(top >> 20) << (width - A::DP_BITS);
    let inside = top & ((1 << low) - 1);
    let bits = slot | (A::Bits::from_u64(inside) << (width - A::DP_BITS - low));
    // Lengths cluster past the slot, where the low bits differ.
    let len = (A::DP_BITS as u8 - 2 + len % (low as u8 + 4)).min(A::WIDTH);
    Prefix::from_bits(bits, len).expect("length clipped")
}

fn check<A: FibFamily>(ops: &[(bool, u64, u8, u32)], probes: &[(u64, u8)]) {
    check_with(ops, probes, near::<A>)
}

fn check_with<A: FibFamily>(
    ops: &[(bool, u64, u8, u32)],
    probes: &[(u64, u8)],
    near: fn(u64, u8) -> Prefix<A>,
) {
    let mut set = PrefixSet::<A>::new();
    let mut model = BTreeMap::new();
    for &(add, top, len, id) in ops {
        let p = near(top, len);
        if add {
            assert_eq!(set.insert(p, id), model.insert(p, id));
        } else {
            assert_eq!(set.remove(&p), model.remove(&p));
        }
    }
    assert_eq!(set.len(), model.len());
    set.audit();
    let all: Vec<(Prefix<A>, u32)> = set.iter().map(|(p, &id)| (p, id)).collect();
    let want: Vec<(Prefix<A>, u32)> = model.iter().map(|(p, &id)| (*p, id)).collect();
    assert_eq!(all, want, "in prefix order");
    for &(top, len) in probes {
        let p = near(top, len);
        assert_eq!(set.get(&p), model.get(&p));
        let got = set.covering_shorter(&p).map(|(q, &id)| (q, id));
        assert_eq!(
            got,
            model_covering(&model, &p, true),
            "covering {p} strictly"
        );
        let got = set.longest_covering(&p).map(|(q, &id)| (q, id));
        assert_eq!(got, model_covering(&model, &p, false), "covering {p}");
        let got: Vec<(Prefix<A>, u32)> = set.covering(&p).map(|(q, &id)| (q, id)).collect();
        let want: Vec<(Prefix<A>, u32)> = model
            .iter()
            .rev()
            .filter(|(q, _)| q.covers(&p))
            .map(|(q, &id)| (*q, id))
            .collect();
        assert_eq!(got, want, "covering {p}, longest first");
        let got: Vec<(Prefix<A>, u32)> = set.covered(&p).map(|(q, &id)| (q, id)).collect();
        let want: Vec<(Prefix<A>, u32)> = model
            .iter()
            .filter(|(q, _)| p.covers(q))
            .map(|(q, &id)| (*q, id))
            .collect();
        assert_eq!(got, want, "covered by {p}");
    }
    // From pairs out of order, each prefix first with another id: the later pair wins.
    let stale = want.iter().map(|&(p, id)| (p, id.wrapping_add(1)));
    let rebuilt: PrefixSet<A> = stale.chain(want.iter().rev().copied()).collect();
    rebuilt.audit();
    let all: Vec<(Prefix<A>, u32)> = rebuilt.iter().map(|(p, &id)| (p, id)).collect();
    assert_eq!(
        all, want,
        "built from pairs in any order, the later winning"
    );
    for &(top, len) in probes {
        let p = near(top, len);
        let got = rebuilt.covering_shorter(&p).map(|(q, &id)| (q, id));
        assert_eq!(got, model_covering(&model, &p, true), "covering {p}, built");
    }
}

fn ops(width: u8) -> impl Strategy<Value = Vec<(bool, u64, u8, u32)>> {
    prop::collection::vec(
        (prop::bool::weighted(0.8), 0u64..4096, 0..=width, 0u32..1000),
        0..120,
    )
}

/// Three slots, 2^20 addresses under each (fewer for IPv4: 14 bits past its slot).
fn dense_ops() -> impl Strategy<Value = Vec<(bool, u64, u8, u32)>> {
    prop::collection::vec(
        (
            prop::bool::weighted(0.8),
            0u64..(3 << 20),
            0u8..40,
            0u32..1000,
        ),
        0..200,
    )
}

fn dense_probes() -> impl Strategy<Value = Vec<(u64, u8)>> {
    prop::collection::vec((0u64..(3 << 20), 0u8..40), 1..40)
}

fn probes(width: u8) -> impl Strategy<Value = Vec<(u64, u8)>> {
    prop::collection::vec((0u64..4096, 0..=width), 1..40)
}

proptest! {
    #[test]
    fn agrees_with_a_model_v4(ops in ops(32), probes in probes(32)) {
        check::<Ipv4Addr>(&ops, &probes);
    }
    #[test]
    fn agrees_with_a_model_v6(ops in ops(128), probes in probes(128)) {
        check::<Ipv6Addr>(&ops, &probes);
    }
    #[test]
    fn agrees_with_a_model_in_crowded_slots_v4(ops in dense_ops(), probes in dense_probes()) {
        check_with::<Ipv4Addr>(&ops, &probes, dense::<Ipv4Addr>);
    }
    #[test]
    fn agrees_with_a_model_in_crowded_slots_v6(ops in dense_ops(), probes in dense_probes()) {
        check_with::<Ipv6Addr>(&ops, &probes, dense::<Ipv6Addr>);
    }
}

#[test]
fn a_later_pair_wins() {
    let p: Prefix<Ipv4Addr> = "10.0.0.0/8".parse().unwrap();
    let set: PrefixSet<Ipv4Addr> = [(p, 1), (p, 2)].into_iter().collect();
    assert_eq!(set.get(&p), Some(&2));
    assert_eq!(set.len(), 1);
}

/// A slot past `MANY` prefixes goes to a B-tree, and back to an array below `FEW`: both
/// answer as the model, in the crowded slot and beside it.
#[test]
fn a_crowded_slot_answers_as_an_array_and_as_a_b_tree() {
    fn run<A: FibFamily>() {
        // 3,000 draws (some the same prefix) in slot 0 of `dense`, lengths from two short of
        // the slot's to 20 bits past it, then one in another slot.
        let adds: Vec<(bool, u64, u8, u32)> = (0..3000u64)
            .map(|i| (true, (i * 7919) % (1 << 20), (i * 7 % 40) as u8, i as u32))
            .chain(std::iter::once((true, 5 << 20, 30, 7)))
            .collect();
        let probes: Vec<(u64, u8)> = (0..300u64)
            .map(|i| ((i * 104_729) % (1 << 20), (i % 44) as u8))
            .chain([(5 << 20, 39), (3 << 20, 39)])
            .collect();
        let built = |ops: &[(bool, u64, u8, u32)]| {
            let mut set = PrefixSet::<A>::new();
            for &(add, top, len, id) in ops {
                let p = dense::<A>(top, len);
                if add {
                    set.insert(p, id);
                } else {
                    set.remove(&p);
                }
            }
            set.b_tree_slots()
        };
        assert_eq!(built(&adds), 1, "the crowded slot is a B-tree");
        check_with(&adds, &probes, dense::<A>);
        // Then most of them go again.
        let removes = adds[..2950]
            .iter()
            .map(|&(_, top, len, id)| (false, top, len, id));
        let ops: Vec<_> = adds.iter().copied().chain(removes).collect();
        assert_eq!(built(&ops), 0, "and an array again");
        check_with(&ops, &probes, dense::<A>);
    }
    run::<Ipv4Addr>();
    run::<Ipv6Addr>();
}

/// IPv6's direct-pointing bits, for the strategies below.
const DP6: u8 = Ipv6Addr::DP_BITS as u8;

proptest! {
    /// A long prefix's slot key gives the prefix back; any other key gives some prefix.
    #[test]
    fn slot_keys_round_trip_and_any_key_unpacks(bits in any::<u32>(), len in 19u8..=32, k in any::<u32>(), slot in any::<u32>()) {
        let p = Prefix::new(Ipv4Addr::from_bits(bits), len);
        let slot_of_p = bits >> (32 - Ipv4Addr::DP_BITS);
        prop_assert_eq!(Ipv4Addr::from_slot_key(slot_of_p, Ipv4Addr::slot_key(p)), p);
        let q = Ipv4Addr::from_slot_key(slot, k);
        prop_assert!(q.len() <= 32);
        let v6 = Prefix::new(Ipv6Addr::from_bits(u128::from(bits) << 96), len + 8);
        let v6_slot = bits >> (32 - Ipv6Addr::DP_BITS);
        prop_assert_eq!(Ipv6Addr::from_slot_key(v6_slot, Ipv6Addr::slot_key(v6)), v6);
        let any = crate::fib::SlotKey6 { hi: u64::from(k) << 32 | u64::from(bits), lo: u64::from(bits) << 32 | u64::from(k) };
        prop_assert!(Ipv6Addr::from_slot_key(slot, any).len() <= 128);
    }

    /// IPv6 slot keys give the prefix back at every length past the slot, and order as the
    /// prefixes do within a slot.
    #[test]
    fn ipv6_slot_keys_round_trip_and_order(a in any::<u128>(), b in any::<u128>(), la in (DP6 + 1)..=128, lb in (DP6 + 1)..=128) {
        let p = Prefix::new(Ipv6Addr::from_bits(a), la);
        // `b` in `p`'s slot.
        let dp = u32::from(DP6);
        let q = Prefix::new(Ipv6Addr::from_bits((a & !(u128::MAX >> dp)) | (b >> dp)), lb);
        let slot = (a >> (128 - dp)) as u32;
        prop_assert_eq!(Ipv6Addr::from_slot_key(slot, Ipv6Addr::slot_key(p)), p);
        prop_assert_eq!(Ipv6Addr::from_slot_key(slot, Ipv6Addr::slot_key(q)), q);
        prop_assert_eq!(Ipv6Addr::slot_key(p).cmp(&Ipv6Addr::slot_key(q)), p.cmp(&q));
    }
}
