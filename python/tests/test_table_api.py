"""PrefixTable's interface in detail: key forms, pytricia's and py-radix's error behaviour,
bad input (a clear exception, never a crash), pickling and files, and batch lookups from
threads while the GIL is released. The oracle is Python's own `ipaddress` and the peers'
documented behaviour."""

from __future__ import annotations

import ipaddress
import pickle
import socket
import threading

import numpy as np
import pyarrow as pa
import pytest

import fibre


def sample():
    t = fibre.PrefixTable()
    t["10.0.0.0/8"] = "ten"
    t["10.1.0.0/16"] = "ten-one"
    t["0.0.0.0/0"] = "default"
    t["2001:db8::/32"] = "doc"
    t["2001:db8:1::/48"] = {"asn": 64500}
    return t


def test_every_key_form_names_the_same_prefix():
    t = sample()
    forms = [
        "10.1.0.0/16",
        "10.1.255.255/16",  # host bits are masked, as pytricia masks them
        ipaddress.ip_network("10.1.0.0/16"),
        ipaddress.ip_interface("10.1.2.3/16"),
        ("10.1.0.0", 16),
        (bytes([10, 1, 0, 0]), 16),
        (0x0A010000, 16),
    ]
    for k in forms:
        assert t.has_key(k) and t.get_key(k) == "10.1.0.0/16" and t[k] == "ten-one", k
    for addr in ["10.1.2.3", 0x0A010203, bytes([10, 1, 2, 3]), ipaddress.ip_address("10.1.2.3")]:
        assert t[addr] == "ten-one" and t.get_key(addr) == "10.1.0.0/16", addr
    six = ipaddress.ip_address("2001:db8:1::9")
    assert t[six.packed] == t[six] == t[str(six)] == {"asn": 64500}


def test_pytricia_behaviour():
    t = sample()
    assert len(t) == 5 and "10.200.0.1" in t and "192.0.2.1" in t  # the default covers all
    del t["0.0.0.0/0"]
    assert "192.0.2.1" not in t and t.get("192.0.2.1") is None and t.get("192.0.2.1", 7) == 7
    with pytest.raises(KeyError, match="Prefix not found"):
        t["192.0.2.1"]
    with pytest.raises(KeyError, match="doesn't exist"):
        del t["10.2.0.0/16"]
    with pytest.raises(KeyError):
        t.parent("10.2.0.0/16")
    assert t.parent("10.1.0.0/16") == "10.0.0.0/8" and t.parent("10.0.0.0/8") is None
    assert t.children("10.0.0.0/8") == ["10.1.0.0/16"] and t.children("10.1.0.0/16") == []
    assert list(t) == t.keys() == ["10.0.0.0/8", "10.1.0.0/16", "2001:db8::/32", "2001:db8:1::/48"]
    t.insert("192.0.2.0", 24, "three-arg")
    t.insert("198.51.100.0/24", "two-arg")
    assert t["192.0.2.9"] == "three-arg" and t["198.51.100.9"] == "two-arg"
    assert t.pop("198.51.100.0/24") == "two-arg" and t.pop("198.51.100.0/24", None) is None
    t.freeze()
    with pytest.raises(ValueError, match="frozen"):
        t["1.0.0.0/8"] = 1
    with pytest.raises(ValueError, match="frozen"):
        del t["10.0.0.0/8"]
    assert t.frozen and t["10.9.9.9"] == "ten"
    t.thaw()
    t["1.0.0.0/8"] = 1
    assert t["1.2.3.4"] == 1


def test_py_radix_behaviour():
    t = fibre.PrefixTable()
    node = t.add("10.0.0.0/8")
    node.data["asn"] = 1  # a py-radix user's way: the node's dict is the stored value
    assert t["10.1.1.1"] == {"asn": 1} and t.add("10.0.0.0", 8).data == {"asn": 1}
    t.add(network="10.1.0.0", masklen=16)
    t.add(packed=bytes([10, 1, 2, 0]), masklen=24)
    t.add("2001:db8::/32")
    n = t.search_best("10.1.2.3")
    assert (n.prefix, n.network, n.prefixlen, n.family, n.packed) == (
        "10.1.2.0/24", "10.1.2.0", 24, socket.AF_INET, bytes([10, 1, 2, 0]))
    assert t.search_worst("10.1.2.3").prefix == "10.0.0.0/8"
    assert t.search_exact("10.1.2.3") is None and t.search_exact("10.1.0.0", 16).prefix == "10.1.0.0/16"
    assert [x.prefix for x in t.search_covering("10.1.2.0/24")] == ["10.1.2.0/24", "10.1.0.0/16", "10.0.0.0/8"]
    assert [x.prefix for x in t.search_covered("10.0.0.0/8")] == ["10.1.2.0/24", "10.1.0.0/16", "10.0.0.0/8"]
    assert t.prefixes() == ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "2001:db8::/32"]
    assert t.search_best(packed=ipaddress.ip_address("2001:db8::1").packed).family == socket.AF_INET6
    t.delete("10.1.0.0", 16)
    with pytest.raises(KeyError):
        t.delete(network="10.1.0.0", masklen=16)


@pytest.mark.parametrize(
    "key, error, words",
    [
        ("10.0.0.0/33", ValueError, "invalid prefix length"),
        ("2001:db8::/129", ValueError, "invalid prefix length"),
        ("10.0.0.0/+8", ValueError, "invalid prefix length"),
        ("10.0.0.0/x", ValueError, "invalid prefix length"),
        ("10.0.0", ValueError, "not a valid address"),
        ("", ValueError, "not a valid address"),
        ("fe80::1%eth0", ValueError, "not a valid address"),
        (2**32, ValueError, "IPv4 address"),
        (-1, ValueError, "IPv4 address"),
        (b"\x01\x02\x03", ValueError, "4 (IPv4) or 16 (IPv6) bytes"),
        (("10.0.0.0",), ValueError, "(address, length)"),
        (("10.0.0.0", 300), ValueError, "prefix length"),
        (1.5, TypeError, "not float"),
        (None, TypeError, "not NoneType"),
        (True, TypeError, "not bool"),
    ],
)
def test_bad_keys_raise_clear_errors(key, error, words):
    t = sample()
    for op in (lambda: t.__setitem__(key, 1), lambda: t.get(key), lambda: t.has_key(key), lambda: t.delete(key)):
        with pytest.raises(error) as e:
            op()
        assert words in str(e.value)
    assert len(t) == 5  # nothing changed


@pytest.mark.parametrize(
    "addrs, error, words",
    [
        (np.zeros((3, 15), dtype=np.uint8), ValueError, "16 columns"),
        (np.zeros((3, 3), dtype=np.uint64), ValueError, "2 columns"),
        (np.array([1.5, 2.5]), ValueError, "uint32"),
        (np.array([1, -1], dtype=np.int64), ValueError, "addrs[1]"),
        (["10.0.0.1", "nonsense"], ValueError, "addrs[1]"),
        (["10.0.0.1", 1.5], TypeError, "addrs[1]"),
        ([b"\x01"], ValueError, "addrs[0]"),
        (pa.array([1.5]), TypeError, "double"),
        (pa.array(["10.0.0.1", None, "nonsense"]), ValueError, 'addrs[2]: "nonsense"'),
        (pa.array(["10.0.0.1", "10.0.0.1/8"], pa.large_string()), ValueError, "addrs[1]"),
        (5, TypeError, "not iterable"),
    ],
)
def test_bad_batches_raise_clear_errors(addrs, error, words):
    with pytest.raises(error) as e:
        sample().lookup_batch(addrs)
    assert words in str(e.value)


def test_arrow_batches_with_nulls_chunks_and_views():
    t = sample()
    col = pa.chunked_array([pa.array(["10.1.2.3", None]), pa.array(["2001:db8:1::1", "192.0.2.1"])])
    prefixes, values = t.lookup_batch(col)
    assert isinstance(prefixes, pa.DictionaryArray)
    assert prefixes.to_pylist() == ["10.1.0.0/16", None, "2001:db8:1::/48", "0.0.0.0/0"]
    ints = pa.array([0x0A010203, None, 0xC0000201], pa.uint32()).slice(1)
    assert t.lookup_batch(ints)[0].to_pylist() == [None, "0.0.0.0/0"]
    packed = pa.array([bytes(4), None, bytes([10, 1, 0, 1])], pa.binary()).slice(1)
    assert t.lookup_batch(packed)[0].to_pylist() == [None, "10.1.0.0/16"]
    # Values Arrow cannot hold as one type come back as numpy objects.
    assert list(t.lookup_batch(pa.array(["2001:db8:1::1", "10.0.0.1"]))[1]) == [{"asn": 64500}, "ten"]
    numbers = fibre.PrefixTable()
    numbers["10.0.0.0/8"] = 7
    p, v = numbers.lookup_batch(pa.array(["10.0.0.1", "11.0.0.1"]))
    assert v.type.value_type == pa.int64() and v.to_pylist() == [7, None]
    numbers["11.0.0.0/8"] = 8  # a change: the cached dictionaries are made again
    assert numbers.lookup_batch(pa.array(["11.0.0.1"]))[1].to_pylist() == [8]


def test_mapped_addresses_follow_ipv4_unless_asked_not_to():
    t = sample()
    t["::ffff:0:0/96"] = "mapped"
    rows = np.frombuffer(ipaddress.ip_address("::ffff:10.1.2.3").packed, dtype=np.uint8).reshape(1, 16)
    assert list(t.lookup_batch(rows)[0]) == ["10.1.0.0/16"]
    assert list(t.lookup_batch(rows, mapped_v4=False)[0]) == ["::ffff:0.0.0.0/96"]


def test_pickle_save_and_load(tmp_path):
    t = sample()
    t.freeze()
    back = pickle.loads(pickle.dumps(t))
    assert back.items() == t.items() and back.frozen and type(back) is fibre.PrefixTable
    back.thaw()
    path = tmp_path / "t.fibre"
    back.save(path)
    again = fibre.PrefixTable.load(path)
    assert again.items() == t.items() and not again.frozen
    (tmp_path / "junk").write_bytes(b"not a table")
    with pytest.raises(ValueError, match="not a fibre PrefixTable file"):
        fibre.PrefixTable.load(tmp_path / "junk")
    with pytest.raises(ValueError, match="not a fibre PrefixTable state"):
        fibre.PrefixTable()._set_state(b"fibre-prefix-table/1\0" + bytes(9) + b"\x07", [1])


def test_threads_look_up_at_once():
    """Threads asking different families of a table not compiled yet: none is refused, and
    each gets what a lookup alone gets."""
    rng = np.random.default_rng(3)
    t = fibre.PrefixTable()
    for i, (a, n) in enumerate(zip(rng.integers(0, 2**32, 5000), rng.integers(8, 25, 5000))):
        t[ipaddress.ip_network((int(a), int(n)), strict=False)] = i
    for i, (a, n) in enumerate(zip(rng.integers(0, 2**16, 2000), rng.integers(16, 49, 2000))):
        t[ipaddress.ip_network((0x2000 << 112 | int(a) << 96, int(n)), strict=False)] = -i
    v4 = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
    v6 = np.zeros((300_000, 16), dtype=np.uint8)
    v6[:, 0], v6[:, 1:4] = 0x20, rng.integers(0, 256, (300_000, 3), dtype=np.uint8)
    work = [v4, v6, v4, v6, v4, v6]
    got: list = [None] * len(work)
    errors: list = []

    def run(i):
        try:
            got[i] = t.lookup_slots(work[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for i in range(len(work)):
        assert np.array_equal(got[i], t.lookup_slots(work[i]))
    texts = [str(ipaddress.IPv4Address(int(a))) for a in v4[:2000]]
    assert [t.get_key(a) for a in texts] == [None if s < 0 else t.slot_prefixes()[s] for s in got[0][:2000]]
    hits6 = (got[1] >= 0).sum()
    assert 0 < hits6 < len(v6)


def test_values_come_back_as_they_are_and_as_they_are_now():
    t = fibre.PrefixTable()
    t["10.0.0.0/8"] = 1
    t["11.0.0.0/8"] = 1.5
    assert t.lookup_batch(pa.array(["10.0.0.1", "11.0.0.1"]))[1].tolist() == [1, 1.5]  # not 1.0
    node = t.add("12.0.0.0/8")
    node.data["asn"] = 1
    first = t.lookup_batch(pa.array(["12.0.0.1"]))[1]
    node.data["asn"] = 2  # py-radix's way of changing a value: in place
    assert t.lookup_batch(pa.array(["12.0.0.1"]))[1].tolist() == [{"asn": 2}] and first[0] is node.data
    t["12.0.0.0/8"] = "replaced"  # the same prefix keeps its slot; the value changes
    assert t.lookup_batch(pa.array(["12.0.0.1"]))[1].tolist() == ["replaced"]
    assert len(t) == 3 and t["12.1.1.1"] == "replaced"


def test_odd_but_valid_inputs():
    t = sample()
    assert t[np.uint32(0x0A010203)] == "ten-one"
    assert list(t.lookup_batch([np.uint32(0x0A010203), np.int64(0x0A000001)])[1]) == ["ten-one", "ten"]
    assert t.lookup_batch(pa.array([None, None]))[0].to_pylist() == [None, None]
    assert t.lookup_batch(pa.array([" 10.1.0.1 "]))[0].to_pylist() == t.lookup_batch([" 10.1.0.1 "])[0].tolist()


# -- no input reaches a Rust panic -------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

anything = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40),
              st.binary(max_size=20), st.text(alphabet="0123456789abcdef.:/", max_size=45)),
    lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=4),
    max_leaves=4,
)
EXPECTED = (ValueError, TypeError, KeyError)


@settings(max_examples=2000, deadline=None)
@given(key=anything, value=anything)
def test_any_key_answers_or_raises_a_clear_error(key, value):
    t = sample()
    for op in (lambda: t.__setitem__(key, value), lambda: t[key], lambda: t.get_key(key), lambda: key in t,
               lambda: t.parent(key), lambda: t.children(key), lambda: t.delete(key), lambda: t.search_covered(key),
               lambda: t.lookup_batch([key]), lambda: t.insert(key, value, value)):
        try:
            op()
        except EXPECTED:
            pass


@settings(max_examples=1000, deadline=None)
@given(blob=st.binary(max_size=80), n=st.integers(0, 5))
def test_any_state_bytes_load_or_raise_value_error(blob, n):
    t = fibre.PrefixTable()
    state = b"fibre-prefix-table/1\0" + n.to_bytes(8, "little") + blob
    for data in (blob, state):
        try:
            t._set_state(data, list(range(n)))
        except ValueError:
            assert len(t) == 0
        else:
            assert len(t) <= n
            t = fibre.PrefixTable()


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_any_router_bytes_load_or_raise_value_error(data):
    try:
        fibre.Router.from_bytes(data)
    except ValueError:
        pass


def test_polars_iptools_columns_are_looked_up_as_they_are():
    import polars as pl
    import polars_iptools as ip

    t = sample()
    texts = ["10.1.2.3", "2001:db8:1::7", "192.0.2.1", "::ffff:10.0.0.1"]
    want = [t.get_key(a) for a in texts]
    df = pl.DataFrame({"a": texts})
    addresses = df.select(ip.to_address(pl.col("a"))).to_series()  # 16-byte, IPv4 mapped
    assert t.lookup_batch(addresses)[0].to_pylist() == ["10.1.0.0/16", "2001:db8:1::/48", "0.0.0.0/0", "10.0.0.0/8"]
    assert t.lookup_batch(addresses.to_arrow())[0].to_pylist() == [t.get_key(a.replace("::ffff:", "")) for a in texts]
    v4 = pl.DataFrame({"a": ["10.1.2.3", "192.0.2.1"]}).select(ip.to_ipv4(pl.col("a"))).to_series()  # uint32
    assert t.lookup_batch(v4)[0].to_pylist() == want[0:1] + want[2:3]
    # Single lookups read ::ffff:a.b.c.d as IPv6 (as pytricia); batches map it unless told not to.
    assert t.lookup_batch(df["a"], mapped_v4=False)[0].to_pylist() == want
    assert t.lookup_batch(df["a"])[0].to_pylist() == want[:3] + ["10.0.0.0/8"]


def test_changes_after_compiling_are_patched_or_rebuilt_and_answer_as_pytricia():
    import pytricia

    rng = np.random.default_rng(5)
    t, pt = fibre.PrefixTable(), pytricia.PyTricia(32)
    nets = [str(ipaddress.ip_network((int(a), int(n)), strict=False))
            for a, n in zip(rng.integers(0, 2**32, 9000), rng.integers(8, 29, 9000))]
    addrs = rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32)
    texts = [str(ipaddress.IPv4Address(int(a))) for a in addrs]

    def check():
        assert list(t.lookup_batch(addrs)[0]) == [pt.get_key(a) for a in texts]
        assert [t.get_key(a) for a in texts[:3000]] == [pt.get_key(a) for a in texts[:3000]]

    for i, p in enumerate(nets[:5000]):
        t[p] = pt[p] = i
    check()  # compiled
    for p in nets[5000:5020]:
        t[p] = pt[p] = 0
    del t[nets[0]], pt[nets[0]]
    check()  # a few changes: patched
    for p in nets[5020:]:
        t[p] = pt[p] = 1
    for p in nets[1:600]:
        if pt.has_key(p):
            del t[p], pt[p]
    check()  # more than a quarter changed: rebuilt from the trie
