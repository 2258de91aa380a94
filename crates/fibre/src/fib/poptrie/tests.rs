//! The encoding's own tests (the FIB's property tests run over every algorithm: `fib/tests.rs`).
use super::build::{block_end, children};
use super::lookup::at_node;
use super::{
    reclaim_budget, LpmAlgorithm, Poptrie, PrefixSet, RootLog, Spare, FLAT, INDEX, LANES, NO_ROUTE,
    RECLAIM_BUDGET, RECLAIM_SHARE,
};
use crate::prefix::Prefix;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Leaf cells take the narrowest width that holds the ids: an update with a wider id widens
/// them (and answers it), a full build after the wide ids went narrows them again.
#[test]
fn leaf_cells_are_as_narrow_as_the_ids() {
    // /26s, so every id sits in a node's leaves rather than in a chunk entry.
    let p = |i: u32| Prefix::new(Ipv4Addr::from(0x0A00_0000 + (i << 6)), 26);
    let mut set: PrefixSet<Ipv4Addr> = (0..2000).map(|i| (p(i), i % 200)).collect();
    let mut fib = Poptrie::<Ipv4Addr>::build(&set).unwrap();
    let width = |f: &Poptrie<Ipv4Addr>| f.arenas.leaves.width();
    assert_eq!(width(&fib), 1);
    for (id, cells) in [(300, 2), (70_000, 4), (7, 4)] {
        set.insert(p(5), id);
        fib.update(&set, &[p(5)]).unwrap();
        assert_eq!(width(&fib), cells, "after id {id}");
        assert_eq!(fib.view().lookup(p(5).bits()), id);
        assert_eq!(fib.view().lookup(p(6).bits()), 6);
        assert_eq!(fib.view().lookup(p(2000).bits()), NO_ROUTE);
    }
    set.insert(p(7), 254);
    let fib = Poptrie::<Ipv4Addr>::build(&set).unwrap();
    assert_eq!(width(&fib), 1);
    assert_eq!(fib.view().lookup(p(7).bits()), 254);
}

/// 2001:db8::/32 and a set of 300 /48s spread under it: a change of the /32 re-encodes
/// what is below it.
fn covering_32() -> (
    u128,
    Prefix<std::net::Ipv6Addr>,
    PrefixSet<std::net::Ipv6Addr>,
) {
    covering_32_of(300, 211, 48)
}

/// 2001:db8::/32 and `n` prefixes `len` long under it, `step` apart (`n * step` below
/// 2^(len - 32)).
fn covering_32_of(
    n: u128,
    step: u128,
    len: u8,
) -> (
    u128,
    Prefix<std::net::Ipv6Addr>,
    PrefixSet<std::net::Ipv6Addr>,
) {
    assert!(
        n * step <= 1 << (len - 32),
        "the prefixes stay under the /32"
    );
    let base = u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0));
    let set = (0..n)
        .map(|i| {
            let at = Ipv6Addr::from(base | (i * step) << (128 - len));
            (Prefix::new(at, len), 1)
        })
        .collect();
    (base, Prefix::new(Ipv6Addr::from(base), 32), set)
}

/// A subtree encoded afresh goes back as a few joined blocks when a later change retires
/// it, not node by node (see `retire_joined`).
#[test]
fn a_fresh_subtree_is_retired_in_a_few_blocks() {
    let (base, cover, mut set) = covering_32();
    let mut fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    for id in [2, 3] {
        set.insert(cover, id);
        fib.update(&set, &[cover]).unwrap();
    }
    // The second change retired what the first placed, joined (a block of nodes and one
    // of leaves), with the changed node's own two blocks, the path above it and the chunk:
    // 7 in all.
    let retired = &fib.pending.back().expect("a publication").blocks;
    assert!(retired.len() <= 8, "{} blocks", retired.len());
    assert!(
        retired.iter().map(|b| b.len).sum::<u32>() > 300,
        "the subtree's cells are among them"
    );
    // 2001:db8:1::, under the /32 and none of the /48s.
    assert_eq!(fib.view().lookup(base | 1 << 80), 3);
    fib.check_accounts().unwrap();
}

/// A covering prefix's change encodes again only the nodes its id shows in: a node under a
/// more specific prefix is kept, with its leaves and children where they were (see
/// `repaint.rs`).
#[test]
fn a_covering_change_keeps_what_longer_prefixes_answer() {
    use super::lookup::{bits, stride, top};
    use super::{node_cell, Node, INDEX};
    type Fib6 = Poptrie<Ipv6Addr>;
    // The nodes a lookup of `key` passes, from the slot's top node down.
    fn path(fib: &Fib6, key: u128) -> Vec<Node> {
        let (r, s) = (fib.root.len().trailing_zeros(), Fib6::S);
        let chunk = fib.root[top(key, r)] & !INDEX;
        let entry = fib.arenas.chunks.get(chunk + bits(key, r, s));
        let mut node = fib.arenas.nodes.get(node_cell(entry));
        let (mut nodes, mut off) = (vec![node], s);
        while node.has_child(stride(key, off)) {
            node = fib.arenas.nodes.get(node.child(stride(key, off)));
            nodes.push(node);
            off += 6;
        }
        nodes
    }
    let base = u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0));
    let hextet3 = |h: u128| base | h << 80;
    let at = |bits: u128, len| Prefix::new(Ipv6Addr::from(bits), len);
    // 2001:db8:100::/40 holding twenty /48s, and 2001:db8:200::/48 alone.
    let mut set: PrefixSet<Ipv6Addr> = (0..20u128)
        .map(|i| (at(hextet3(0x100 + 3 * i), 48), 10 + i as u32))
        .chain([(at(hextet3(0x100), 40), 7), (at(hextet3(0x200), 48), 8)])
        .collect();
    let mut fib = Fib6::build(&set).unwrap();
    // Under the /40, in no /48: 2001:db8:101::1.
    let inside = hextet3(0x101) | 1;
    let before = path(&fib, inside);
    // Nodes of 6 bits from the slot's end on: the /40's node, and the one under it, which
    // holds the /48s (with 20 bits of direct pointing: 20-26, 26-32, 32-38, 38-44 the /40's,
    // 44-50 under it).
    let s = <Ipv6Addr as crate::fib::FibFamily>::DP_BITS as usize;
    let (forty, under) = ((40 - s - 1) / 6, (48 - s - 1) / 6);
    assert_eq!(before.len(), under + 1);
    let cover = at(base, 32);
    for id in [2, 3] {
        set.insert(cover, id);
        fib.update(&set, &[cover]).unwrap();
        let after = path(&fib, inside);
        assert_eq!(
            after[under], before[under],
            "the node under the /40's slot is kept"
        );
        assert_ne!(
            after[forty].base0, before[forty].base0,
            "the /40's node is encoded again"
        );
        assert_eq!(fib.view().lookup(inside), 7);
        assert_eq!(fib.view().lookup(hextet3(0x103)), 11);
        assert_eq!(fib.view().lookup(hextet3(0x300)), id);
        assert_eq!(fib.view().lookup(hextet3(0x200)), 8);
        fib.check_accounts().unwrap();
    }
    let fresh = Fib6::build(&set).unwrap();
    assert!(fib.words() == fresh.words(), "patched == fresh");
}

/// Prefixes under the /32 of [`covering_32`] deep enough below the slot for
/// [`scattered_then_covered`] to retire more blocks than a few updates' budgets: /48s with
/// IPv6's 20 bits of direct pointing, longer with more bits (28 past the slot either way).
/// (With 24 bits, /48s retired 86 blocks, too few; see docs/fib.md, twentieth round.)
fn many_under_32() -> (
    u128,
    Prefix<std::net::Ipv6Addr>,
    PrefixSet<std::net::Ipv6Addr>,
) {
    let len = 48 + <Ipv6Addr as crate::fib::FibFamily>::DP_BITS as u8 - 20;
    covering_32_of(300, 211, len)
}

/// A set of [`covering_32_of`] with the prefixes under its /32 each changed on their own, which
/// scatters the /32's subtree over many blocks, then the /32 added: the list of blocks its
/// change retired.
fn scattered_then_covered(fib: &mut Poptrie<Ipv6Addr>, set: &mut PrefixSet<Ipv6Addr>) -> usize {
    let (_, cover, _) = covering_32();
    let under: Vec<_> = set.covered(&cover).map(|(p, _)| p).collect();
    for p in under {
        set.insert(p, 4);
        fib.update(set, &[p]).unwrap();
    }
    set.insert(cover, 2);
    fib.update(set, &[cover]).unwrap();
    fib.pending.back().expect("a publication").blocks.len()
}

/// Blocks retired and not taken back yet.
fn waiting(fib: &Poptrie<Ipv6Addr>) -> usize {
    fib.pending.iter().map(|p| p.blocks.len() - p.back).sum()
}

/// Whether every arena's headroom is at least its spare room (`reclaim_for_update`).
fn roomy(fib: &Poptrie<Ipv6Addr>) -> bool {
    let allocs = [&fib.nodes, &fib.leaves, &fib.chunks];
    allocs
        .iter()
        .zip(fib.room)
        .all(|(a, room)| a.headroom() >= room)
}

/// In arenas with room, as a full view's are, an update takes back `RECLAIM_BUDGET` retired
/// blocks (or a `RECLAIM_SHARE`th of those waiting): the hundreds a covering change retires
/// come back over the next updates, not all in the first.
#[test]
fn retired_blocks_come_back_a_budget_at_a_time() {
    let (base, _, mut set) = many_under_32();
    // 80,000 /48s elsewhere with ids of four bytes: arenas of a megabyte or more (the
    // leaves' too), mapped with four times their size reserved.
    for i in 0..80_000u128 {
        let at = Ipv6Addr::from(0x2400u128 << 112 | (i * 131) << 80);
        set.insert(Prefix::new(at, 48), 70_000 + (i % 500) as u32);
    }
    let mut fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    assert!(roomy(&fib), "mapped arenas, with room");
    let retired = scattered_then_covered(&mut fib, &mut set);
    assert!(retired > 3 * RECLAIM_BUDGET, "{retired} blocks");
    // Changes elsewhere (2001:db9::/48), no reader holding an older version.
    let other = Prefix::new(Ipv6Addr::from(base + (1 << 96)), 48);
    let mut left = waiting(&fib);
    for id in 10.. {
        assert!(roomy(&fib), "after id {id}");
        set.insert(other, id);
        fib.update(&set, &[other]).unwrap();
        let own = fib.pending.back().expect("a publication").blocks.len();
        assert_eq!(fib.waiting, waiting(&fib), "the count of blocks waiting");
        let now = waiting(&fib) - own;
        let budget = RECLAIM_BUDGET.max(left / RECLAIM_SHARE);
        assert_eq!(now, left.saturating_sub(budget), "after id {id}");
        assert_eq!(fib.view().lookup(base | 1 << 80), 2);
        assert_eq!(fib.view().lookup(other.bits()), id);
        if now == 0 {
            break;
        }
        left = now + own;
    }
    fib.check_accounts().unwrap();
}

/// The budget: `RECLAIM_BUDGET` blocks, a `RECLAIM_SHARE`th of those waiting when more (a
/// backlog of big changes drains at the pace it grows), everything when short of room.
#[test]
fn the_reclaim_budget_grows_with_the_backlog() {
    assert_eq!(reclaim_budget(10, false), RECLAIM_BUDGET);
    assert_eq!(reclaim_budget(16 * RECLAIM_BUDGET, false), RECLAIM_BUDGET);
    assert_eq!(reclaim_budget(100_000, false), 100_000 / RECLAIM_SHARE);
    assert_eq!(reclaim_budget(10, true), usize::MAX);
}

/// A small table's arenas, on the heap, have no reserve to grow into: once short of room,
/// an update takes back every block it can before it allocates.
#[test]
fn a_short_arena_takes_every_block_back() {
    let (base, _, mut set) = many_under_32();
    let mut fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    let retired = scattered_then_covered(&mut fib, &mut set);
    assert!(retired > 3 * RECLAIM_BUDGET, "{retired} blocks");
    assert!(!roomy(&fib));
    let other = Prefix::new(Ipv6Addr::from(base + (1 << 96)), 48);
    set.insert(other, 9);
    fib.update(&set, &[other]).unwrap();
    let own = fib.pending.back().expect("a publication").blocks.len();
    assert_eq!(waiting(&fib), own, "only the last update's blocks wait");
    assert_eq!(fib.waiting, own);
    fib.check_accounts().unwrap();
}

/// `block_end` finds where a slot's prefixes end, for blocks of one prefix to hundreds (the
/// gallop's probes and its binary search), and `children` hands each block over whole.
#[test]
fn a_childs_prefixes_end_where_its_slot_does() {
    // A node covering bits 20..26 of IPv6 keys; slot `v`'s block is `sizes[i]` /48s.
    let sizes = [1usize, 2, 3, 4, 5, 7, 8, 9, 31, 64, 65, 300];
    let slots = [0u32, 1, 5, 6, 7, 20, 21, 30, 31, 40, 62, 63];
    let mut prefixes = Vec::new();
    for (&v, &n) in slots.iter().zip(&sizes) {
        for k in 0..n as u128 {
            prefixes.push((0x2000u128 << 112 | (v as u128) << 102 | k << 80, 48u8, 1u32));
        }
    }
    let mut start = 0;
    for (&v, &n) in slots.iter().zip(&sizes) {
        assert_eq!(block_end(&prefixes, start, 20, v), start + n, "slot {v}");
        start += n;
    }
    let blocks: Vec<(usize, u32, usize)> = children(&prefixes, 20, 7)
        .map(|(child, v, below)| (child, v, below.len()))
        .collect();
    let expected: Vec<(usize, u32, usize)> = (7..)
        .zip(slots.iter().zip(&sizes))
        .map(|(child, (&v, &n))| (child, v, n))
        .collect();
    assert_eq!(blocks, expected);
}

/// A large table starts with more spare chunk entries than a small one (a MiB, which keeps its
/// arena mapped), and its room doubles after each compaction up to eight times the first.
#[test]
fn spare_room_grows_to_eight_times_the_first() {
    assert_eq!(Spare::first(100).chunk_cells, 1 << 15);
    let first = Spare::first(1_000_000);
    assert_eq!(first.chunk_cells * 4, 1 << 20);
    let mut s = first;
    for _ in 0..10 {
        s = s.grown();
    }
    assert_eq!(s.chunk_cells, 8 * first.chunk_cells);
    assert_eq!(s.nodes_per_8, 8 * first.nodes_per_8);
    assert_eq!(s.leaves_per_8, 8 * first.leaves_per_8);
}

/// Groups of 64 keys with k of them past the root, k on both sides of the AVX-512 path's
/// threshold ([`FibFamily::FEW_PAST_ROOT`]) and, as the keys are spread, of the scalar path's
/// (a quarter of it per 16: at k = 7 its groups have 2, 2, 2 and 1, at k = 8 the first has 3):
/// every bulk path gives the longest match (a naive search of the prefixes), whether a group
/// goes on one key at a time or in its stages.
#[test]
fn groups_with_few_keys_past_the_root_answer_the_longest_match() {
    use crate::fib::{FibFamily, LookupPath};
    let routes: Vec<(Prefix<Ipv6Addr>, u32)> = [
        ("3000::/4", 1),
        ("2001:db8::/32", 2),
        ("2001:db8:1::/48", 3),
        ("2001:db8:1:2::/64", 4),
        ("2001:db8:ff00::/40", 5),
        ("2001:db8:1:2:3::/80", 6),
    ]
    .iter()
    .map(|(p, id)| (Prefix::parse_strict(p).unwrap(), *id))
    .collect();
    let longest = |k: u128| {
        let a = Ipv6Addr::from(k);
        routes
            .iter()
            .filter(|(p, _)| p.contains(a))
            .max_by_key(|(p, _)| p.len())
            .map_or(NO_ROUTE, |&(_, id)| id)
    };
    let set: PrefixSet<Ipv6Addr> = routes.iter().copied().collect();
    let fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    let view = fib.view();
    // Past the root: node walks of every depth, no route in a node, no route in a chunk
    // entry (2002::/20 holds no prefix).
    let past: [u128; 7] = [
        0x2001_0db8_0001_0002_0003_0000_0000_0001,
        0x2001_0db8_0001_0002_ffff_0000_0000_0000,
        0x2001_0db8_0001_7777_0000_0000_0000_0000,
        0x2001_0db8_ff12_0000_0000_0000_0000_0000,
        0x2001_0db8_4444_0000_0000_0000_0000_0000,
        0x2001_0dea_0000_0000_0000_0000_0000_0000,
        0x2002_0000_0000_0000_0000_0000_0000_0001,
    ];
    let few = Ipv6Addr::FEW_PAST_ROOT as usize;
    for k in [0, 1, few.saturating_sub(1), few, few + 1, 63, 64] {
        // Lane i goes past the root where its rank 7i mod 64 is below k: exactly k lanes,
        // spread out, the first of them taking every key of `past` in turn.
        let keys: Vec<u128> = (0..64u128)
            .map(|i| match ((7 * i % 64) as usize) < k {
                true => past[(7 * i % 64) as usize % past.len()],
                // In 3000::/4 (a root leaf) or in 4000::/2 (no route), both ending at the root.
                false => (3 + i % 2) << 124 | i,
            })
            .collect();
        let want: Vec<u32> = keys.iter().map(|&k| longest(k)).collect();
        assert!(
            want.contains(&6) || k == 0,
            "some keys reach the deepest node"
        );
        for path in LookupPath::available() {
            let mut out = [0u32; 64];
            view.lookup_bulk_on(path, &keys, &mut out);
            assert_eq!(out.to_vec(), want, "{k} keys past the root, {path}");
        }
    }
}

/// The vector paths read a leaf as the four bytes from its first: after a build and after
/// updates, each node's leaves are followed by cells of its own, 3 for one-byte leaves, 1 for
/// two-byte ones, none for four-byte ones, which no other node's leaves or pad cells overlap.
#[test]
fn a_nodes_leaves_are_followed_by_pad_cells_of_its_own() {
    for (id_base, width, pad) in [(0, 1, 3), (300, 2, 1), (70_000, 4, 0)] {
        // /26s and /30s: leaves in nodes at two levels, ids varied so runs are many.
        let p = |i: u32, len: u8| Prefix::new(Ipv4Addr::from(0x0A00_0000 + (i << 6)), len);
        let mut set: PrefixSet<Ipv4Addr> = (0..3000)
            .map(|i| (p(i, if i % 3 == 0 { 30 } else { 26 }), id_base + i % 50))
            .collect();
        let mut fib = Poptrie::<Ipv4Addr>::build(&set).unwrap();
        assert_eq!(fib.arenas.leaves.width(), width);
        for i in (0..3000).step_by(7) {
            set.remove(&p(i, if i % 3 == 0 { 30 } else { 26 }));
            set.insert(p(i + 1, 28), id_base + 7);
            fib.update(
                &set,
                &[p(i, if i % 3 == 0 { 30 } else { 26 }), p(i + 1, 28)],
            )
            .unwrap();
        }
        // A fresh child (a /31 under a /26: `place`), covering changes over nodes that are
        // kept or painted again (a /24 and a /20: `Repaint`), a change at most the
        // direct-pointing step long (a /16: `reencode_span`).
        let more = [
            p(9, 31),
            Prefix::new(Ipv4Addr::new(10, 0, 4, 0), 24),
            Prefix::new(Ipv4Addr::new(10, 0, 16, 0), 20),
            Prefix::new(Ipv4Addr::new(10, 0, 0, 0), 16),
        ];
        for q in more {
            for id in [Some(id_base + 9), None, Some(id_base + 11)] {
                match id {
                    Some(id) => set.insert(q, id),
                    None => set.remove(&q),
                };
                fib.update(&set, &[q]).unwrap();
                fib.audit().unwrap();
            }
        }
        let mut blocks = fib.leaf_blocks();
        blocks.sort_unstable();
        assert!(blocks.len() > 100, "{} nodes with leaves", blocks.len());
        for w in blocks.windows(2) {
            assert!(
                w[0].0 + w[0].1 + pad <= w[1].0,
                "{width}-byte leaves: {w:?}"
            );
        }
        fib.audit().unwrap();
    }
}

/// A slot's top node without a child is a flat block ([`FLAT`]) where that pays
/// (`flat_pays`: one-byte leaves always, wider ones from enough runs) and a node tagged
/// `LEAVES_ONLY` where not; with a child it is a plain node. The
/// form follows the slot through a build, a longer prefix's change (`patch_long`), a covering
/// change over the slot (`reencode_span` with `Repaint`) and a rebuild, and every lookup path
/// answers the longer prefix while it is there.
#[test]
fn a_top_nodes_form_follows_its_children() {
    use super::{FLAT, INDEX, LEAVES_ONLY};
    use crate::fib::LookupPath;
    #[derive(Debug, PartialEq)]
    enum Form {
        Flat,
        LeavesOnly,
        Node,
    }
    let v4 = |a: u8, b: u8, c: u8, len: u8| Prefix::new(Ipv4Addr::new(10, a, b, c), len);
    let slot = (0x0A00_0000u32 >> (32 - Poptrie::<Ipv4Addr>::S)) as usize;
    let form = |f: &Poptrie<Ipv4Addr>| {
        let e = f.entry(slot);
        assert_ne!(e & INDEX, 0, "the slot has a subtree");
        match (e & FLAT != 0, e & LEAVES_ONLY != 0) {
            (true, false) => Form::Flat,
            (false, true) => Form::LeavesOnly,
            (false, false) => Form::Node,
            (true, true) => panic!("{e:#x}: flat and LEAVES_ONLY"),
        }
    };
    let keys = [
        u32::from(Ipv4Addr::new(10, 0, 5, 200)),
        u32::from(Ipv4Addr::new(10, 0, 5, 1)),
        u32::from(Ipv4Addr::new(10, 0, 63, 1)),
    ];
    let answers = |f: &Poptrie<Ipv4Addr>, want: [u32; 3]| {
        // Keys repeated into a whole vector group and more, every path the CPU has.
        let many: Vec<u32> = keys.iter().copied().cycle().take(3 * 64).collect();
        for path in LookupPath::available() {
            let mut out = vec![0; many.len()];
            f.view().lookup_bulk_on(path, &many, &mut out);
            for got in out.chunks(3) {
                assert_eq!(got, want, "{path:?}");
            }
        }
        let single: Vec<u32> = keys.iter().map(|&k| f.view().lookup(k)).collect();
        assert_eq!(single, want, "single lookups");
    };
    // One direct-pointing slot (10.0.0.0/18) of /24s: one-byte ids that change at every /24
    // (64 runs: flat), or two-byte ids 300 and 301 that change at the 32nd /24 (2 runs: a node,
    // as two-byte leaves are flat from 20 runs).
    // The ids of the /24s, by their place.
    type Ids = fn(u8) -> u32;
    let forms: [(u32, Ids, Form); 2] = [
        (64, |i| u32::from(i % 5), Form::Flat),
        (2, |i| 300 + u32::from(i / 32), Form::LeavesOnly),
    ];
    for (runs, id, flat) in forms {
        let mut set: PrefixSet<Ipv4Addr> = (0..64).map(|i| (v4(0, i, 0, 24), id(i))).collect();
        let base = [id(5), id(5), id(63)];
        let mut fib = Poptrie::<Ipv4Addr>::build(&set).unwrap();
        assert_eq!(form(&fib), flat, "{runs} runs, built");
        answers(&fib, base);
        let long = v4(0, 5, 128, 25);
        set.insert(long, 9);
        fib.update(&set, &[long]).unwrap();
        assert_eq!(
            form(&fib),
            Form::Node,
            "{runs} runs, a /25 under the top node"
        );
        answers(&fib, [9, base[1], base[2]]);
        // A covering change paints the node again, and keeps its child.
        let cover = v4(0, 0, 0, 16);
        set.insert(cover, 7);
        fib.update(&set, &[cover]).unwrap();
        assert_eq!(
            form(&fib),
            Form::Node,
            "{runs} runs, the /25 is still there"
        );
        answers(&fib, [9, base[1], base[2]]);
        assert_eq!(form(&Poptrie::<Ipv4Addr>::build(&set).unwrap()), Form::Node);
        set.remove(&long);
        fib.update(&set, &[long]).unwrap();
        assert_eq!(form(&fib), flat, "{runs} runs, the /25 went");
        answers(&fib, base);
        // A /24 changed in place: the slot keeps its form.
        set.insert(v4(0, 63, 0, 24), 1);
        fib.update(&set, &[v4(0, 63, 0, 24)]).unwrap();
        assert_eq!(form(&fib), flat, "{runs} runs, a /24 changed");
        answers(&fib, [base[0], base[1], 1]);
        fib.audit().unwrap();
        assert!(fib.image() == Poptrie::<Ipv4Addr>::build(&set).unwrap().image());
    }
}

/// A slot of two-byte leaves turns flat when a change brings its runs to 20 (`flat_pays`), and
/// back to a node when a change takes them below: both ways by a change in the slot, every
/// lookup path answering as before, the patched FIB equal to a fresh build.
#[test]
fn a_slot_turns_flat_where_its_runs_reach_the_threshold() {
    use crate::fib::LookupPath;
    let v4 = |b: u8| Prefix::new(Ipv4Addr::new(10, 0, b, 0), 24);
    let slot = (0x0A00_0000u32 >> (32 - Poptrie::<Ipv4Addr>::S)) as usize;
    let flat = |f: &Poptrie<Ipv4Addr>| f.entry(slot) & FLAT != 0;
    // Ids 300..318 for the first 18 /24s, 318 for the rest: 19 runs.
    let mut set: PrefixSet<Ipv4Addr> = (0..64u8)
        .map(|i| (v4(i), 300 + u32::from(i.min(18))))
        .collect();
    let mut fib = Poptrie::<Ipv4Addr>::build(&set).unwrap();
    assert_eq!(fib.arenas.leaves.width(), 2);
    assert!(!flat(&fib), "19 runs: a node");
    let keys: Vec<u32> = (0..64u32).map(|i| 0x0A00_0001 | i << 8).collect();
    let answers = |f: &mut Poptrie<Ipv4Addr>, set: &PrefixSet<Ipv4Addr>| {
        let want: Vec<u32> = (0..64u8)
            .map(|i| set.get(&v4(i)).copied().unwrap())
            .collect();
        for path in LookupPath::available() {
            let mut out = vec![0; keys.len()];
            f.view().lookup_bulk_on(path, &keys, &mut out);
            assert_eq!(out, want, "{path:?}");
        }
        let single: Vec<u32> = keys.iter().map(|&k| f.view().lookup(k)).collect();
        assert_eq!(single, want, "single lookups");
        f.audit().unwrap();
        assert!(f.image() == Poptrie::<Ipv4Addr>::build(set).unwrap().image());
    };
    answers(&mut fib, &set);
    // 10.0.63.0/24, the slot's last, to id 1: 20 runs.
    set.insert(v4(63), 1);
    fib.update(&set, &[v4(63)]).unwrap();
    assert!(flat(&fib), "20 runs: flat");
    answers(&mut fib, &set);
    // Back to 318: 19 runs again.
    set.insert(v4(63), 318);
    fib.update(&set, &[v4(63)]).unwrap();
    assert!(!flat(&fib), "19 runs: a node again");
    answers(&mut fib, &set);
}

/// A slot's form depends on the leaf width (`flat_pays`), which an update widens but only a
/// full build narrows: after the one wide id goes, the patched FIB keeps two-byte cells and a
/// node where a fresh build makes one-byte cells and a flat block. It equals a fresh build in
/// its own form (`rebuilt_like`, what the property tests compare with).
#[test]
fn a_patched_generation_keeps_its_form_until_a_full_build() {
    let v4 = |a: u8, b: u8, len: u8| Prefix::new(Ipv4Addr::new(10, a, b, 0), len);
    // One /24 in 10.0.0.0/18, two runs (flat at one byte a leaf, not at two), and one wide id.
    let mut set: PrefixSet<Ipv4Addr> = [(v4(0, 0, 24), 0)].into_iter().collect();
    set.insert(v4(1, 0, 16), 300);
    let mut fib = Poptrie::<Ipv4Addr>::build(&set).unwrap();
    assert_eq!(fib.arenas.leaves.width(), 2);
    set.remove(&v4(1, 0, 16));
    fib.update(&set, &[v4(1, 0, 16)]).unwrap();
    assert_eq!(
        fib.arenas.leaves.width(),
        2,
        "only a full build narrows the cells"
    );
    let fresh = Poptrie::<Ipv4Addr>::build(&set).unwrap();
    assert_eq!(fresh.arenas.leaves.width(), 1);
    assert!(
        fib.image() != fresh.image(),
        "a node at two bytes, flat at one"
    );
    assert!(fib.image() == fib.rebuilt_like(&set).unwrap().image());
    fib.audit().unwrap();
}

/// The root log brings the root of any older version up to date, or says it cannot: against
/// a naive model keeping every version's root, through patched versions, full builds and
/// trims of the log.
#[test]
fn the_root_log_brings_older_roots_up_to_date() {
    use rand::{Rng, SeedableRng};
    let len = 64usize;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut log = RootLog {
        entries: Vec::new(),
        from: 1,
    };
    // roots[v]: the root version v published.
    let mut roots: Vec<Vec<u32>> = vec![vec![0; len]];
    let (mut deltas, mut refusals) = (0, 0);
    for v in 1..400u64 {
        let mut root = roots.last().expect("version 0").clone();
        let full_build = rng.gen_ratio(1, 60);
        if full_build {
            root.iter_mut().for_each(|x| *x = rng.gen());
            log.record(v, None, len / 4);
        } else {
            let mut changed: Vec<usize> = (0..rng.gen_range(0..4))
                .map(|_| rng.gen_range(0..len))
                .collect();
            changed.sort_unstable();
            changed.dedup();
            changed.iter().for_each(|&ri| root[ri] = rng.gen());
            log.record(v, Some(&changed), len / 4);
        }
        roots.push(root);
        for old in 0..v {
            let Some(newer) = log.since(old) else {
                refusals += 1;
                continue;
            };
            deltas += 1;
            let mut r = roots[old as usize].clone();
            for &(_, ri) in newer {
                r[ri as usize] = roots[v as usize][ri as usize];
            }
            assert_eq!(r, roots[v as usize], "version {old}'s root brought to {v}");
        }
        assert!(log.entries.len() <= len / 4 + 3, "the log stays bounded");
        assert_eq!(
            log.since(v - 1).is_some(),
            !full_build,
            "the last version's root gets a delta unless a full build replaced the root"
        );
    }
    assert!(
        deltas > 1000 && refusals > 1000,
        "{deltas} deltas, {refusals} refusals"
    );
}

/// The root a build sizes (`root_bits`): the least memory, raised while its two copies stay
/// within 4 bytes a prefix. Against the sizes worked out by hand for each table.
#[test]
fn a_root_is_sized_by_its_table() {
    use super::build::root_bits;
    let v6 = |a: u128, len: u8| (a, len, 1u32);
    // Empty, or only prefixes the root resolves: no chunk, the smallest root.
    assert_eq!(root_bits::<Ipv6Addr>(&[]), 12);
    assert_eq!(root_bits::<Ipv6Addr>(&[v6(0, 0), v6(0x2000 << 112, 3)]), 12);
    // Prefixes under one /16: one chunk at any size; 2 * 2^12 + 2^12 entries is the least.
    let one_region: Vec<_> = (0..1000u128)
        .map(|i| v6(0x2001_0db8 << 96 | i << 80, 48))
        .collect();
    assert_eq!(root_bits::<Ipv6Addr>(&one_region), 12);
    // 5,000 /48s spread over the space: 3,835 chunks of 16 KiB at 12 bits, about 5,000 of
    // 1 KiB at 16.
    let spread: Vec<_> = (0..5000u128)
        .map(|i| v6(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) << 64, 48))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(root_bits::<Ipv6Addr>(&spread), 16);
    // 2^17 prefixes under one /16: the least memory at 12, raised to 16 (2 * 2^16 entries
    // of 4 bytes are 4 bytes a prefix); one prefix fewer, to 15.
    let many: Vec<_> = (0..1u128 << 17)
        .map(|i| v6(0x2001_0db8 << 96 | i << 64, 64))
        .collect();
    assert_eq!(root_bits::<Ipv6Addr>(&many), 16);
    assert_eq!(root_bits::<Ipv6Addr>(&many[1..]), 15);
    // IPv4's roots are all one size.
    let v4: Vec<_> = (0..5000u32)
        .map(|i| (i.wrapping_mul(0x9e37_79b9), 32, 1))
        .collect();
    assert_eq!(root_bits::<Ipv4Addr>(&v4), 12);
}

/// Every root size a build may choose answers as the longest match on every lookup path, after
/// a build and after updates, and the updates give what a fresh build of that size gives.
#[test]
fn every_root_size_answers_the_longest_match() {
    use crate::fib::{FibFamily, LookupPath};
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(21);
    // Prefixes in two regions and (`regions` 3) scattered, of lengths around the chunk and slot edges.
    let random_prefix = |rng: &mut rand::rngs::SmallRng, regions: u32| {
        let base: u128 = match rng.gen_range(0..regions) {
            0 => 0x2001_0db8 << 96,
            1 => 0x2a00_0000 << 96,
            _ => rng.gen(),
        };
        let len = [8, 12, 13, 16, 23, 24, 25, 30, 32, 48, 64, 128][rng.gen_range(0..12)];
        Prefix::new(Ipv6Addr::from(base ^ (rng.gen::<u128>() >> 20)), len)
    };
    for bits in Ipv6Addr::MIN_ROOT_BITS..=Ipv6Addr::MAX_ROOT_BITS {
        let mut set: PrefixSet<Ipv6Addr> =
            (0..300).map(|i| (random_prefix(&mut rng, 3), i)).collect();
        let mut fib = Poptrie::build_holding(&set, NO_ROUTE, Some(bits)).unwrap();
        for round in 0..4 {
            if round > 0 {
                // In the two regions (a batch writing more chunks than the arena's spare room
                // is a full build), none so short that the update is one: a full build sizes
                // the root anew.
                let changed: Vec<_> = (0..40)
                    .map(|_| random_prefix(&mut rng, 2))
                    .filter(|p| p.len() >= 12)
                    .collect();
                for (i, p) in changed.iter().enumerate() {
                    if set.get(p).is_some() {
                        set.remove(p);
                    } else {
                        set.insert(*p, 1000 + i as u32);
                    }
                }
                fib.update(&set, &changed).unwrap();
            }
            assert_eq!(fib.rebuilds, 0, "patched, not built again");
            assert_eq!(fib.root.len(), 1 << bits, "updates keep the root's size");
            let keys: Vec<u128> = set
                .iter()
                .flat_map(|(p, _)| [p.bits(), p.bits() | u128::MAX >> p.len().min(127)])
                .chain((0..64).map(|_| rng.gen()))
                .collect();
            let want: Vec<u32> = keys
                .iter()
                .map(|&k| {
                    let a = Ipv6Addr::from(k);
                    set.iter()
                        .filter(|(p, _)| p.contains(a))
                        .max_by_key(|(p, _)| p.len())
                        .map_or(NO_ROUTE, |(_, &id)| id)
                })
                .collect();
            let view = fib.view();
            let one: Vec<u32> = keys.iter().map(|&k| view.lookup(k)).collect();
            assert_eq!(
                one, want,
                "root of {bits} bits, round {round}, one at a time"
            );
            for path in LookupPath::available() {
                let mut out = vec![0u32; keys.len()];
                view.lookup_bulk_on(path, &keys, &mut out);
                assert_eq!(out, want, "root of {bits} bits, round {round}, {path}");
            }
            assert!(fib.image() == fib.rebuilt_like(&set).unwrap().image());
            // A fresh build sizes its root for this set, 14 or 15 bits here: the image is the
            // same at any size.
            assert!(fib.image() == Poptrie::build(&set).unwrap().image());
            fib.audit().unwrap();
        }
    }
}

/// A table loaded by updates gets a larger root once it has the prefixes that raise its root
/// a bit further (`4 << r`): the update that reaches them is a full build, and the others patch.
#[test]
fn a_root_grows_with_its_table() {
    // /64s under one /32: one chunk at any size, so the size goes by the count only
    // (`root_bits` raises it to 13 at 2^14 prefixes).
    let p = |i: u128| Prefix::new(Ipv6Addr::from(0x2001_0db8 << 96 | i << 64), 64);
    let mut set: PrefixSet<Ipv6Addr> = (0..16_000).map(|i| (p(i), 1)).collect();
    let mut fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    assert_eq!(fib.root.len(), 1 << 12);
    for i in 16_000..16_600 {
        set.insert(p(i), 2);
        fib.update(&set, &[p(i)]).unwrap();
        let grown = set.len() >= 4 << 12;
        assert_eq!(fib.rebuilds, u64::from(grown), "{} prefixes", set.len());
        assert_eq!(fib.root.len(), 1 << (12 + u32::from(grown)));
    }
    assert_eq!(fib.view().lookup(0x2001_0db8 << 96 | 16_500 << 64 | 1), 2);
    fib.check_accounts().unwrap();
}

/// A table loaded by updates scattered over the space ends with the root a fresh build of it
/// takes (the size of least memory), not the 12 bits of its first, empty build: 2,000 /48s,
/// one to a root entry of 12 bits, would hold 2,000 chunks of 16 KiB. No rule of `update`
/// watches for this: its chunks fill the chunk arena's spare room (128 KiB in a small table,
/// eight such chunks), and the full build that follows sizes the root anew.
#[test]
fn a_scattered_table_regrows_its_root() {
    let key = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) >> 48 << 80;
    let p = |i: u128| Prefix::new(Ipv6Addr::from(key(i)), 48);
    let mut set: PrefixSet<Ipv6Addr> = PrefixSet::default();
    let mut fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    assert_eq!(fib.root.len(), 1 << 12);
    let cells = |f: &Poptrie<Ipv6Addr>| {
        let chunks = f.root.iter().filter(|&&r| r & super::INDEX != 0).count();
        2 * f.root.len() + chunks * f.chunk_len()
    };
    let mut most = 0;
    for i in 0..2_000u128 {
        set.insert(p(i), (i % 7) as u32 + 1);
        fib.update(&set, &[p(i)]).unwrap();
        most = most.max(cells(&fib));
    }
    fib.check_accounts().unwrap();
    let fresh = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    assert!(
        fresh.root.len() > 1 << 12,
        "the fresh build's root is larger"
    );
    assert!(
        fib.root.len() >= fresh.root.len() / 2,
        "root of {} entries after updates, {} built afresh",
        fib.root.len(),
        fresh.root.len()
    );
    assert!(
        most <= 2 * cells(&fresh),
        "root and chunks took up to {most} cells, {} built afresh",
        cells(&fresh)
    );
    // A build each time the spare room runs out (14 here): not one an update.
    assert!(fib.rebuilds < 32, "{} rebuilds", fib.rebuilds);
    for i in (0..2_000u128).step_by(7) {
        assert_eq!(fib.view().lookup(key(i) | 1), (i % 7) as u32 + 1);
        // Beside it: the /48 that differs in its last bit, held or not (nothing is shorter).
        let beside = Prefix::new(Ipv6Addr::from(key(i) ^ 1 << 80), 48);
        let want = set.get(&beside).copied().unwrap_or(NO_ROUTE);
        assert_eq!(fib.view().lookup(key(i) ^ 1 << 80 | 1), want, "{beside:?}");
    }
}

/// A reader holding an old version holds back that version's root and no other: the roots of
/// the versions after it come back as they are dropped, out of order (the retired blocks still
/// wait for it, in order). The held version answers as it did throughout, on every lookup
/// path, across the later versions' reuse of roots and a full build that sizes the root
/// anew.
#[test]
fn a_held_version_holds_back_its_own_root_only() {
    use crate::fib::LookupPath;
    let (base, cover, mut set) = covering_32();
    let mut fib = Poptrie::<Ipv6Addr>::build(&set).unwrap();
    assert_eq!(fib.root.len(), 1 << 12);
    let held = fib.reader().snapshot();
    // Keys under the /32 (in the /48s and between them), under what the later versions add
    // (the /64s, the scattered /48s, the /8) and elsewhere, with what they answer now.
    let scattered = |i: u128| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) << 64;
    let keys: Vec<u128> = (0..64u128)
        .map(|i| base | (i * 977) << 76 | i)
        .chain((0..20).map(|i| 0x2001_0db8_0123 << 80 | i << 64 | 1))
        .chain((0..20).map(|i| scattered(i * 250) | 1))
        .chain([0, u128::MAX, 0x2a00 << 112, 0x40 << 120 | 1])
        .collect();
    let answers: Vec<u32> = keys.iter().map(|&k| fib.view().lookup(k)).collect();
    let answers_the_same = |held: &super::PoptrieView<Ipv6Addr>| {
        let one: Vec<u32> = keys.iter().map(|&k| held.lookup(k)).collect();
        assert_eq!(one, answers, "the held version, one at a time");
        for path in LookupPath::available() {
            let mut out = vec![0u32; keys.len()];
            held.lookup_bulk_on(path, &keys, &mut out);
            assert_eq!(out, answers, "the held version, {path}");
        }
    };
    let p = |i: u128| Prefix::new(Ipv6Addr::from(0x2001_0db8_0123 << 80 | i << 64), 64);
    for i in 0..200u128 {
        set.insert(p(i), 5);
        fib.update(&set, &[p(i)]).unwrap();
        // The held version's root, and the one just replaced.
        assert!(
            fib.roots_out.len() <= 2,
            "{} roots out",
            fib.roots_out.len()
        );
    }
    assert!(
        fib.pending.len() > 100,
        "the blocks wait for the held version"
    );
    answers_the_same(&held);
    // 5,000 /48s scattered over the space and a /8, in one update: a full build, which gives
    // the root 16 bits (1 KiB chunks, see `a_root_is_sized_by_its_table`).
    let mut changed: Vec<_> = (0..5000u128)
        .map(|i| Prefix::new(Ipv6Addr::from(scattered(i)), 48))
        .chain([Prefix::new(Ipv6Addr::from(0x4000 << 112), 8)])
        .collect();
    changed.sort_unstable();
    changed.dedup();
    for &q in &changed {
        set.insert(q, 6);
    }
    fib.update(&set, &changed).unwrap();
    assert_eq!(fib.root.len(), 1 << 16);
    answers_the_same(&held);
    let now: Vec<u32> = keys.iter().map(|&k| fib.view().lookup(k)).collect();
    let differ = now.iter().zip(&answers).filter(|(a, b)| a != b).count();
    assert!(differ >= 40, "only {differ} keys answer otherwise now");
    // Five versions held at 16 bits, then let go at once: the next publication takes their
    // roots back, keeps four spares of 256 KiB (not five) and publishes in one.
    let mut versions = Vec::new();
    for i in 200..205u128 {
        versions.push(fib.reader().snapshot());
        set.insert(p(i), 5);
        fib.update(&set, &[p(i)]).unwrap();
    }
    drop(versions);
    set.insert(p(205), 5);
    fib.update(&set, &[p(205)]).unwrap();
    assert_eq!(
        fib.spare_roots.len(),
        super::REUSED_BUFFERS - 1,
        "spare roots"
    );
    drop(held);
    set.insert(cover, 9);
    fib.update(&set, &[cover]).unwrap();
    assert!(fib.roots_out.len() <= 1);
    // 2001:db8:1::, under the /32 and none of the /48s.
    assert_eq!(fib.view().lookup(base | 1 << 80), 9);
    fib.check_accounts().unwrap();
}

/// `at_node`, the bulk stages' mask of the lanes at a node, marks exactly the entries with
/// `INDEX` set and `FLAT` clear, whatever their other bits: random entries (each lane gets each
/// of the four tag pairs about 1,000 times), against a test of each lane. A lane read as its
/// neighbour, or a tag bit misread by the sign-bit trick, fails here.
#[test]
fn the_node_lane_mask_marks_exactly_the_node_entries() {
    // xorshift64: the same entries on every machine.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u32
    };
    for _ in 0..4096 {
        let entry: [u32; LANES] = std::array::from_fn(|_| next());
        let expect = (0..LANES).fold(0u32, |m, i| {
            m | (u32::from(entry[i] & (INDEX | FLAT) == INDEX) << i)
        });
        assert_eq!(at_node(&entry), expect, "entries {entry:08x?}");
    }
}

/// A version's fields and the arenas' sit 128 bytes past their `Arc`'s counts (16
/// bytes, first), which every publication changes while readers read the fields.
#[test]
fn versions_and_arenas_keep_their_fields_apart_from_their_counts() {
    use std::mem::{align_of, offset_of};
    type View = super::PoptrieView<Ipv4Addr>;
    let first = [
        offset_of!(View, root),
        offset_of!(View, chunk_bits),
        offset_of!(View, arenas),
        offset_of!(View, version),
    ];
    assert_eq!(
        first.iter().min(),
        Some(&112),
        "16 + 112: 128 past the counts"
    );
    assert!(
        align_of::<View>() <= 16,
        "no aligned allocation at each publication"
    );
    assert_eq!(align_of::<super::Arenas>(), 128);
}
