"""PrefixTable against a naive model (a dict of `ipaddress` networks, answers by definition)
over random sequences of inserts, deletes and lookups, single and batch, with pickling and
freezing on the way."""

from __future__ import annotations

import ipaddress
import pickle

import numpy as np
import pyarrow as pa
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import fibre

# A small space so that prefixes nest and collide: 10.0.0.0/26 and 2001:db8::/122 (plus the
# default routes, and the IPv4-mapped block, which batch lookups take as IPv4).
V4_BASE = int(ipaddress.IPv4Address("10.0.0.0"))
V6_BASE = int(ipaddress.IPv6Address("2001:db8::"))


@st.composite
def v4_prefixes(draw):
    length = draw(st.one_of(st.just(0), st.integers(26, 32)))
    host = V4_BASE + draw(st.integers(0, 63))
    return ipaddress.ip_network((host, length), strict=False)


@st.composite
def v6_prefixes(draw):
    length = draw(st.one_of(st.just(0), st.integers(122, 128)))
    host = V6_BASE + draw(st.integers(0, 63))
    return ipaddress.ip_network((host, length), strict=False)


prefixes = st.one_of(v4_prefixes(), v6_prefixes())
v4_addresses = st.integers(0, 63).map(lambda i: ipaddress.IPv4Address(V4_BASE + i))
v6_addresses = st.integers(0, 63).map(lambda i: ipaddress.IPv6Address(V6_BASE + i))
addresses = st.one_of(v4_addresses, v6_addresses)


def key_forms(net):
    """The ways a key can be given, all naming `net`."""
    return [str(net), net, (str(net.network_address), net.prefixlen), (net.network_address.packed, net.prefixlen)]


class Model(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.t = fibre.PrefixTable()
        self.m: dict = {}

    def longest(self, addr):
        found = [n for n in self.m if n.version == addr.version and addr in n]
        return max(found, key=lambda n: n.prefixlen, default=None)

    @rule(net=prefixes, value=st.integers(), form=st.integers(0, 3))
    def insert(self, net, value, form):
        self.t[key_forms(net)[form]] = value
        self.m[net] = value

    @rule(net=prefixes, value=st.text(max_size=3))
    def insert_pytricia_form(self, net, value):
        self.t.insert(str(net.network_address), net.prefixlen, value)
        self.m[net] = value

    @rule(net=prefixes, form=st.integers(0, 3))
    def delete(self, net, form):
        if net in self.m:
            del self.t[key_forms(net)[form]]
            del self.m[net]
        else:
            try:
                self.t.delete(str(net))
            except KeyError:
                pass
            else:
                raise AssertionError(f"deleting {net}, not stored, did not raise KeyError")

    @rule(addr=addresses)
    def lookup(self, addr):
        best = self.longest(addr)
        assert self.t.get_key(str(addr)) == (None if best is None else str(best))
        assert self.t.get(addr, "missing") == ("missing" if best is None else self.m[best])
        assert (addr in self.t) == (best is not None)
        node = self.t.search_best(str(addr))
        assert (node and node.prefix) == (best and str(best))

    @rule(net=prefixes)
    def exact_parent_children(self, net):
        assert self.t.has_key(str(net)) == (net in self.m)
        if net not in self.m:
            return
        above = [n for n in self.m if n.version == net.version and n != net and net.subnet_of(n)]
        parent = max(above, key=lambda n: n.prefixlen, default=None)
        assert self.t.parent(str(net)) == (None if parent is None else str(parent))
        below = sorted(
            (n for n in self.m if n.version == net.version and n != net and n.subnet_of(net)),
            key=lambda n: (int(n.network_address), n.prefixlen),
        )
        assert self.t.children(str(net)) == [str(n) for n in below]
        covering = sorted(above + [net], key=lambda n: -n.prefixlen)
        assert [n.prefix for n in self.t.search_covering(str(net))] == [str(n) for n in covering]

    @rule(batch=st.lists(addresses, max_size=40))
    def lookup_batch(self, batch):
        want = [self.longest(a) for a in batch]
        keys = [None if w is None else str(w) for w in want]
        values = [None if w is None else self.m[w] for w in want]
        prefixes, vals = self.t.lookup_batch([str(a) for a in batch])
        assert list(prefixes) == keys and list(vals) == values
        v4 = [a for a in batch if a.version == 4]
        got, _ = self.t.lookup_batch(np.array([int(a) for a in v4], dtype=np.uint32))
        assert list(got) == [k for a, k in zip(batch, keys) if a.version == 4]
        rows = np.array([list(a.packed) for a in batch if a.version == 6], dtype=np.uint8).reshape(-1, 16)
        got, _ = self.t.lookup_batch(rows)
        assert list(got) == [k for a, k in zip(batch, keys) if a.version == 6]
        got, _ = self.t.lookup_batch(pa.array([str(a) for a in batch], pa.string()))
        assert got.to_pylist() == keys

    @rule()
    def pickle_round_trip(self):
        back = pickle.loads(pickle.dumps(self.t))
        assert back.items() == self.t.items()
        self.t = back

    @rule()
    def freeze_and_thaw(self):
        self.t.freeze()
        try:
            self.t["10.0.0.0/26"] = 1
        except ValueError:
            pass
        else:
            raise AssertionError("a frozen table took a change")
        self.t.thaw()

    @invariant()
    def same_content(self):
        order = sorted(self.m, key=lambda n: (n.version, int(n.network_address), n.prefixlen))
        assert self.t.keys() == [str(n) for n in order]
        assert self.t.values() == [self.m[n] for n in order]
        assert len(self.t) == len(self.m)


TestModel = Model.TestCase
TestModel.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
