"""Batch lookups over pyarrow arrays: addresses in the layouts Arrow users keep them in
(polars-iptools' ``uint32`` IPv4 and 16-byte binary, text, 4-byte binary), read without a
copy where the layout allows, answered as Arrow arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # pyarrow is optional: only Arrow input needs it.
    import pyarrow as pa
except ImportError:  # pragma: no cover - exercised where pyarrow is absent
    pa = None


def is_arrow(x: Any) -> bool:
    return pa is not None and isinstance(x, (pa.Array, pa.ChunkedArray))


def _addresses(arr: "pa.Array") -> Any:
    """What the Rust lookup takes for `arr`'s layout (nulls read as anything: masked after)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_null(t):
        return np.zeros(n, dtype=np.uint32)  # every address null: masked after
    if pa.types.is_integer(t):
        if arr.null_count:
            arr = arr.fill_null(0)
        values = arr.to_numpy(zero_copy_only=False)
        if values.dtype == np.uint32:
            return values
        # Wider or signed integers: Rust checks each fits in 32 bits.
        return values.astype(np.int64, copy=False) if values.dtype.kind == "i" else values.astype(np.uint64, copy=False)
    if pa.types.is_fixed_size_binary(t) and t.byte_width in (4, 16):
        data = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        w = t.byte_width
        rows = data[arr.offset * w : (arr.offset + n) * w].reshape(n, w)
        return rows if w == 16 else rows.view(">u4").reshape(n).astype(np.uint32)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        off_type = np.int64 if pa.types.is_large_binary(t) else np.int32
        offsets = np.frombuffer(arr.buffers()[1], dtype=off_type)[arr.offset : arr.offset + n + 1]
        data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
        lengths = np.diff(offsets)
        valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool) if arr.null_count else None
        sizes = lengths if valid is None else lengths[valid]
        if len(sizes) == 0:
            return np.zeros(n, dtype=np.uint32)  # every address null
        for w in (16, 4):
            if np.all(sizes == w):
                if valid is None:
                    # Every row w bytes: the data buffer is the rows, back to back.
                    rows = data[offsets[0] : offsets[0] + n * w].reshape(n, w)
                else:
                    # Nulls take no bytes: gather the rows that have them.
                    rows = np.zeros((n, w), dtype=np.uint8)
                    rows[valid] = data[offsets[:-1][valid][:, None] + np.arange(w)]
                return rows if w == 16 else rows.view(">u4").reshape(n).astype(np.uint32)
        # Mixed widths: one packed address at a time.
        return arr.to_pylist()
    if pa.types.is_string_view(t):
        return arr.to_pylist()
    raise TypeError(
        f"an Arrow array of addresses is uint32 or int64 (IPv4), binary of 4 or 16 bytes, or "
        f"text, not {t}"
    )


# Value types an Arrow dictionary holds exactly; other values come back as Python objects.
_SCALARS = {int, float, str, bytes, bool}


def _dictionaries(table: Any) -> tuple["pa.Array", Any]:
    """Each slot's prefix and value as Arrow arrays, made once per table version."""
    cache = table.__dict__.get("_arrow_dictionaries")
    if cache is not None and cache[0] == table.version:
        return cache[1], cache[2]
    prefixes = pa.array(table.slot_prefixes(), type=pa.string())
    raw = table.slot_values()
    kinds = {type(v) for v in raw if v is not None}
    values: Any = None
    if len(kinds) == 1 and kinds <= _SCALARS:
        # One immutable scalar type: Arrow holds the values as they are (mixed types would be
        # converted, 1 and 1.5 into doubles; mutable values would go stale in the cache).
        try:
            values = pa.array(raw)
        except (pa.ArrowException, OverflowError):
            values = None  # ints past 64 bits
    if values is None:
        values = np.array(raw + [None], dtype=object)
    table.__dict__["_arrow_dictionaries"] = (table.version, prefixes, values)
    return prefixes, values


def _is_text(t: Any) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _text_slots(table: Any, arr: Any, mapped_v4: bool) -> Any:
    """Slots of a string array, read from its buffers by the extension (nulls are misses)."""
    n = len(arr)
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=off_type)[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    valid = None
    if arr.null_count:
        valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return table._text_slots(offsets.astype(np.int64, copy=False), data, valid, mapped_v4=mapped_v4)


def slots(table: Any, addrs: Any, mapped_v4: bool) -> Any:
    """Each Arrow address's slot (`-1`: none, or a null address)."""
    if isinstance(addrs, pa.ChunkedArray):
        addrs = addrs.combine_chunks()
    if pa.types.is_dictionary(addrs.type):
        addrs = addrs.dictionary_decode()
    if _is_text(addrs.type):
        return _text_slots(table, addrs, mapped_v4)
    found = table.lookup_slots(_addresses(addrs), mapped_v4=mapped_v4)
    if addrs.null_count:
        nulls = np.asarray(addrs.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        found[nulls] = -1
    return found


def arrow_lookup(table: Any, addrs: Any, mapped_v4: bool) -> tuple[Any, Any]:
    """`lookup_batch(..., output="arrow")`: the slots come from Rust as the buffers of an
    Arrow int32 array (no pass over them here), the dictionaries are cached per version."""
    if pa is None:
        raise ImportError('output="arrow" needs pyarrow')
    if is_arrow(addrs):
        if isinstance(addrs, pa.ChunkedArray):
            addrs = addrs.combine_chunks()
        if addrs.null_count or _is_text(addrs.type) or pa.types.is_dictionary(addrs.type):
            return dictionary_arrays(table, slots(table, addrs, mapped_v4))
        addrs = _addresses(addrs)
    values, bitmap, nulls = table._lookup_arrow_parts(addrs, mapped_v4=mapped_v4)
    validity = pa.py_buffer(bitmap) if nulls else None
    indices = pa.Array.from_buffers(pa.int32(), len(values), [validity, pa.py_buffer(values)], nulls)
    return _with_dictionaries(table, indices, values, nulls)


def _with_dictionaries(table: Any, indices: Any, found: Any, nulls: int) -> tuple[Any, Any]:
    prefixes, values = _dictionaries(table)
    # The indices are slots of this table: in range by construction, no check needed.
    as_prefixes = pa.DictionaryArray.from_arrays(indices, prefixes, safe=False)
    if isinstance(values, np.ndarray):
        missing = np.asarray(indices.is_null().to_numpy(zero_copy_only=False), dtype=bool) if nulls else False
        return as_prefixes, values[np.where(missing, len(values) - 1, found)]
    return as_prefixes, pa.DictionaryArray.from_arrays(indices, values, safe=False)


def dictionary_arrays(table: Any, found: Any) -> tuple[Any, Any]:
    """Slots (`-1`: none) as two `pyarrow.DictionaryArray` over the table's prefixes and
    values (the values as a numpy object array where Arrow cannot hold them)."""
    missing = found < 0
    indices = pa.array(np.where(missing, 0, found).astype(np.int32), mask=missing)
    return _with_dictionaries(table, indices, np.where(missing, 0, found), int(missing.sum()))
