"""fibre: the Linux routing table in userspace.

- `PrefixTable`: IPv4 and IPv6 prefixes mapped to any Python object; a drop-in for
  pytricia's and py-radix's interfaces, with batch lookups (`lookup_batch`) over numpy and
  Arrow arrays on a compiled FIB, the GIL released.
- `Router`: a whole routing state (links, addresses, tables, rules) loaded from `ip -batch`
  text, an MRT RIB dump, a snapshot or the live kernel, answering `route_get` as
  `ip -j route get` does; `RouteError` carries the kernel's errno.
- `fibre.spark.enrich` and `fibre.dask.enrich`: a column of addresses enriched with the
  matched prefix and value, at scale.
"""

from ._fibre import RouteError, Router
from ._table import Node, PrefixTable

__all__ = ["Node", "PrefixTable", "RouteError", "Router"]
__version__ = "0.1.0"
