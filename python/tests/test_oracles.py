"""fibre against the peers it replaces, on the shared full table: pytricia (longest matches,
single and batch, every input layout) and py-radix (best, worst, covering, covered)."""

from __future__ import annotations

import ipaddress

import numpy as np
import pyarrow as pa
import pytest

import fibre
from conftest import random_v4, random_v6

N = 100_000


@pytest.fixture(scope="module")
def tables(full_table):
    import pytricia
    import radix

    t = fibre.PrefixTable()
    pt4, pt6 = pytricia.PyTricia(32), pytricia.PyTricia(128)
    rt = radix.Radix()
    for i, p in enumerate(full_table):
        t[p] = i
        (pt6 if ":" in p else pt4)[p] = i
        rt.add(p).data["i"] = i
    return t, pt4, pt6, rt


@pytest.fixture(scope="module")
def addresses(full_table):
    """10^5 IPv4 addresses (half anywhere, half inside table prefixes) and 10^5 IPv6."""
    rng = np.random.default_rng(20261124)
    v4 = random_v4(rng, N)
    v4_prefixes = [p for p in full_table if ":" not in p]
    for i in range(0, N, 2):
        net = ipaddress.ip_network(v4_prefixes[int(rng.integers(len(v4_prefixes)))])
        v4[i] = int(net.network_address) | (int(v4[i]) & int(net.hostmask))
    v6 = random_v6(rng, N, full_table)
    text4 = [str(ipaddress.IPv4Address(int(a))) for a in v4]
    text6 = [str(ipaddress.IPv6Address(r.tobytes())) for r in v6]
    return v4, v6, text4, text6


def expected(pt, texts):
    return [pt.get_key(a) for a in texts], [pt.get(a) for a in texts]


def test_single_lookups_equal_pytricia(tables, addresses):
    t, pt4, pt6, _ = tables
    _, _, text4, text6 = addresses
    for pt, texts in ((pt4, text4), (pt6, text6)):
        keys, values = expected(pt, texts)
        assert [t.get_key(a) for a in texts] == keys
        assert [t.get(a) for a in texts] == values
        assert [a in t for a in texts] == [k is not None for k in keys]
    hits = sum(k is not None for k in expected(pt4, text4)[0])
    assert N // 2 <= hits < N, "the sample asks both hits and misses"


def test_batch_lookups_equal_pytricia_in_every_layout(tables, addresses):
    t, pt4, pt6, _ = tables
    v4, v6, text4, text6 = addresses
    keys4, values4 = expected(pt4, text4)
    keys6, values6 = expected(pt6, text6)

    def check(answer, keys, values):
        prefixes, vals = answer
        if isinstance(prefixes, pa.Array):
            prefixes, vals = prefixes.to_pylist(), vals.to_pylist()
        assert list(prefixes) == keys
        assert list(vals) == values

    check(t.lookup_batch(v4), keys4, values4)
    check(t.lookup_batch(text4), keys4, values4)
    check(t.lookup_batch(v4.astype(np.int64)), keys4, values4)
    check(t.lookup_batch(pa.array(v4)), keys4, values4)
    check(t.lookup_batch(v4, output="arrow"), keys4, values4)
    check(t.lookup_batch(v6), keys6, values6)
    check(t.lookup_batch(text6), keys6, values6)
    words = v6.view(">u8").astype(np.uint64)
    check(t.lookup_batch(words), keys6, values6)
    check(t.lookup_batch(pa.array(list(v6.tobytes()[i * 16 : i * 16 + 16] for i in range(N)), pa.binary(16))), keys6, values6)
    # polars-iptools' IPAddress layout: 16-byte large_binary, IPv4 as ::ffff:a.b.c.d, both
    # families in one column.
    mapped = np.zeros((N, 16), dtype=np.uint8)
    mapped[:, 10:12] = 0xFF
    mapped[:, 12:] = v4.astype(">u4").view(np.uint8).reshape(N, 4)
    both = np.empty((2 * N, 16), dtype=np.uint8)
    both[0::2], both[1::2] = mapped, v6
    column = pa.array([r.tobytes() for r in both], pa.large_binary())
    inter = lambda a, b: [x for pair in zip(a, b) for x in pair]  # noqa: E731
    check(t.lookup_batch(column), inter(keys4, keys6), inter(values4, values6))
    check(t.lookup_batch(both), inter(keys4, keys6), inter(values4, values6))
    check(t.lookup_batch(pa.array(inter(text4, text6))), inter(keys4, keys6), inter(values4, values6))


def test_radix_searches_equal_py_radix(tables, addresses, full_table):
    t, _, _, rt = tables
    _, _, text4, text6 = addresses
    for a in text4[:20_000] + text6[:20_000]:
        best, worst = rt.search_best(a), rt.search_worst(a)
        assert getattr(t.search_best(a), "prefix", None) == getattr(best, "prefix", None)
        assert getattr(t.search_worst(a), "prefix", None) == getattr(worst, "prefix", None)
    rng = np.random.default_rng(7)
    stored = [full_table[int(i)] for i in rng.integers(len(full_table), size=2000)]
    shorter = []
    for a in text4[:1000]:
        shorter.append(str(ipaddress.ip_network(f"{a}/{int(rng.integers(8, 17))}", strict=False)))
    for a in text6[:1000]:
        shorter.append(str(ipaddress.ip_network(f"{a}/{int(rng.integers(16, 33))}", strict=False)))
    for p in stored + shorter:
        assert [n.prefix for n in t.search_covering(p)] == [n.prefix for n in rt.search_covering(p)], p
        assert [n.prefix for n in t.search_covered(p)] == [n.prefix for n in rt.search_covered(p)], p
    for p in stored[:200]:
        assert t.search_exact(p).data == rt.search_exact(p).data["i"]
    assert [n.prefix for n in t.nodes()] == [n.prefix for n in rt.nodes()]


def test_parent_and_children_equal_pytricia(tables, full_table):
    """`parent` is the table's covering query (a predecessor walk of its ordered set, at its
    slowest among dense /24s), `children` its covered range: both against pytricia, for
    prefixes drawn from the real table."""
    t, pt4, pt6, _ = tables
    rng = np.random.default_rng(11)
    for i in rng.integers(len(full_table), size=3000):
        p = full_table[int(i)]
        pt = pt6 if ":" in p else pt4
        assert t.parent(p) == pt.parent(p), p
        assert sorted(t.children(p)) == sorted(pt.children(p)), p
