"""`PrefixTable`: the Rust table with py-radix's names, pyarrow input and pickling on top."""

from __future__ import annotations

import ipaddress
import os
import pickle
import socket
from typing import Any

from ._fibre import PrefixTable as _RustTable

# What `save` writes first: a table file is this line, then the table pickled.
_FILE_MAGIC = b"fibre-prefix-table-file/1\n"


def _radix_key(network: Any, masklen: int | None, packed: Any) -> Any:
    """A key as py-radix's methods take one: `network` text (with `/len` or `masklen`), or
    `packed` bytes with `masklen`."""
    if network is not None and packed is not None:
        raise ValueError("give a network or packed bytes, not both")
    if packed is not None:
        packed = bytes(packed)
        if masklen is None:
            masklen = 8 * len(packed)
        return (packed, masklen)
    if network is None:
        raise TypeError(
            "a key is a str, an int (IPv4), bytes, (address, length), an ipaddress object or "
            "packed= bytes, not NoneType"
        )
    if masklen is None:
        return network
    if isinstance(network, str) and "/" in network:
        network = network.split("/", 1)[0]
    return (network, masklen)


def check_columns(columns: list[str], column: str, prefix_column: str, value_column: str) -> None:
    """What an enrichment refuses before it starts (Spark's and Dask's alike): an address
    column that is not there, or an answer column that would overwrite one."""
    for name in (prefix_column, value_column):
        if name in columns:
            raise ValueError(f"column {name!r} is already in the DataFrame: choose another name")
    if prefix_column == value_column:
        raise ValueError(f"the prefix and value columns are both named {prefix_column!r}")
    if column not in columns:
        raise ValueError(f"no column {column!r} in the DataFrame (it has {columns})")


class Node:
    """A stored prefix as py-radix's `RadixNode` shows one: `prefix`, `network`,
    `prefixlen`, `family` (`socket.AF_INET` or `AF_INET6`), `packed`, and `data`: the value
    stored (a dict for prefixes made by `add`, which callers fill as py-radix's)."""

    __slots__ = ("prefix", "data")

    def __init__(self, prefix: str, data: Any) -> None:
        self.prefix = prefix
        self.data = data

    @property
    def value(self) -> Any:
        """The value stored (the same object as `data`)."""
        return self.data

    @property
    def network(self) -> str:
        return self.prefix.split("/", 1)[0]

    @property
    def prefixlen(self) -> int:
        return int(self.prefix.split("/", 1)[1])

    @property
    def family(self) -> int:
        return socket.AF_INET6 if ":" in self.prefix else socket.AF_INET

    @property
    def packed(self) -> bytes:
        return ipaddress.ip_address(self.network).packed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and (self.prefix, self.data) == (other.prefix, other.data)

    def __hash__(self) -> int:
        return hash(self.prefix)

    def __repr__(self) -> str:
        return f"<fibre.Node {self.prefix}>"


def _node(pair: tuple[str, Any] | None) -> Node | None:
    return None if pair is None else Node(*pair)


class PrefixTable(_RustTable):
    """IPv4 and IPv6 prefixes, each mapped to any Python object.

    pytricia's interface: ``t["10.0.0.0/8"] = v``; ``t[addr]``, ``get``, ``get_key`` and
    ``in`` are longest-prefix matches; ``has_key``, ``del`` and ``delete`` are exact;
    ``parent``, ``children``, ``keys``, ``values``, ``items``, ``len``, ``freeze``, ``thaw``.
    py-radix's: ``add``, ``search_exact``, ``search_best``, ``search_worst``,
    ``search_covering``, ``search_covered``, ``nodes``, ``prefixes`` (giving `Node`s).
    Batch lookups: ``lookup_batch`` over numpy arrays, pyarrow arrays and sequences.

    Keys are ``str`` (``"10.0.0.0/8"``, ``"2001:db8::1"``), ``int`` (IPv4), 4 or 16 packed
    ``bytes``, ``(address, length)`` tuples or ``ipaddress`` objects; host bits are masked.
    """

    # -- batch lookups ------------------------------------------------------------------
    def lookup_batch(self, addrs: Any, *, mapped_v4: bool = True, output: str | None = None) -> tuple[Any, Any]:
        """Longest-prefix matches of many addresses: ``(prefixes, values)``, on the compiled
        FIB with the GIL released.

        ``addrs``: a numpy ``uint32`` array (IPv4), an ``int64``/``uint64`` array of IPv4
        integers, an ``(n, 16)`` ``uint8`` array (packed addresses), an ``(n, 2)`` ``uint64``
        array (IPv6 as high and low words), a pyarrow array or a polars Series (``uint32`` or ``int64`` IPv4,
        ``binary``/``large_binary``/``fixed_size_binary`` of 4 or 16 bytes, text; a null is a
        miss) or any sequence of addresses (``None`` is a miss). With ``mapped_v4``,
        ``::ffff:a.b.c.d`` is looked up as IPv4, as the kernel routes it.

        ``output``: ``"numpy"`` (the default for numpy and sequence input) gives two numpy
        object arrays, ``None`` where nothing matches; ``"arrow"`` (the default for Arrow
        input) gives two ``pyarrow.DictionaryArray`` (int32 indices into the table's prefixes
        and values, null where nothing matches: no Python object per address, the fastest
        form). Values Arrow cannot hold come back as a numpy object array.
        """
        # pyarrow is imported only for Arrow input or output (an import of `fibre` stays light).
        module = type(addrs).__module__.partition(".")[0]
        if module == "polars":
            addrs = addrs.to_arrow()  # a polars Series: its Arrow array, without a copy
            module = "pyarrow"
        arrow_in = module == "pyarrow"
        if arrow_in or output == "arrow":
            from . import _arrow
        if output is None:
            output = "arrow" if arrow_in else "numpy"
        if output not in ("numpy", "arrow"):
            raise ValueError(f'output "{output}": "numpy" or "arrow"')
        if output == "arrow":
            return _arrow.arrow_lookup(self, addrs, mapped_v4)
        if not arrow_in:
            return super().lookup_batch(addrs, mapped_v4=mapped_v4)
        return self.gather_slots(_arrow.slots(self, addrs, mapped_v4))

    # -- py-radix -----------------------------------------------------------------------
    def add(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> Node:
        """Stores the prefix with an empty dict as its value, unless it is stored already;
        returns its node (py-radix's ``add``)."""
        key = _radix_key(network, masklen, packed)
        found = self._exact(key)
        if found is None:
            self[key] = {}
            found = self._exact(key)
        return Node(*found)

    def delete(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> None:
        """Removes exactly this prefix (pytricia's ``delete(key)`` and py-radix's
        ``delete(network, masklen, packed)``); ``KeyError`` if it is not stored."""
        super().delete(_radix_key(network, masklen, packed))

    def search_exact(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> Node | None:
        """The node of exactly this prefix, or ``None``."""
        return _node(self._exact(_radix_key(network, masklen, packed)))

    def search_best(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> Node | None:
        """The node of the most specific stored prefix covering the key, or ``None``."""
        return _node(self._best(_radix_key(network, masklen, packed)))

    def search_worst(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> Node | None:
        """The node of the least specific stored prefix covering the key, or ``None``."""
        covering = self._covering(_radix_key(network, masklen, packed))
        return Node(*covering[-1]) if covering else None

    def search_covering(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> list[Node]:
        """Nodes of the stored prefixes covering the key (itself included), most specific
        first."""
        return [Node(*p) for p in self._covering(_radix_key(network, masklen, packed))]

    def search_covered(self, network: Any = None, masklen: int | None = None, packed: Any = None) -> list[Node]:
        """Nodes of the stored prefixes the key covers (itself included), in py-radix's
        order: each prefix after its more specific ones."""
        return [Node(*p) for p in self._covered_postorder(_radix_key(network, masklen, packed))]

    def nodes(self) -> list[Node]:
        """Every stored prefix's node: IPv4 in order, then IPv6."""
        return [Node(p, v) for p, v in self.items()]

    def prefixes(self) -> list[str]:
        """Every stored prefix as text: IPv4 in order, then IPv6."""
        return self.keys()

    # -- pickling and files -------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        blob, values = self._state()
        return (_restore, (type(self), blob, values))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the table to a file (its prefixes compactly, its values pickled); written
        to a temporary name and renamed, so readers never see half a file."""
        tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                f.write(_FILE_MAGIC)
                pickle.dump(self, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PrefixTable:
        """Reads a file `save` wrote. Its values are unpickled: load only files you trust, as
        with any pickle."""
        with open(path, "rb") as f:
            if f.read(len(_FILE_MAGIC)) != _FILE_MAGIC:
                raise ValueError(f"{os.fspath(path)}: not a fibre PrefixTable file")
            table = pickle.load(f)
        if not isinstance(table, PrefixTable):
            raise ValueError(f"{os.fspath(path)}: not a fibre PrefixTable file")
        if cls is not PrefixTable and not isinstance(table, cls):
            raise ValueError(f"{os.fspath(path)}: a {type(table).__name__}, not a {cls.__name__}")
        return table


def _restore(cls: type, blob: bytes, values: list) -> PrefixTable:
    table = cls()
    table._set_state(blob, values)
    return table


PrefixTable.__module__ = "fibre"
Node.__module__ = "fibre"
