"""Enrichment on Dask: a column of addresses gains the matched prefix and value.

The table is sent to each worker once (scattered where a dask.distributed client runs, else
one delayed object in the graph), and each partition is looked up in one batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._table import PrefixTable, check_columns


def _addresses(series: Any) -> Any:
    """A pandas Series of addresses as `lookup_batch` takes it: numpy integers as they are,
    anything else through Arrow (text, bytes, nullable integers: a missing value is a miss)."""
    import pandas as pd
    import pyarrow as pa

    if pd.api.types.is_integer_dtype(series.dtype) and isinstance(series.dtype, np.dtype):
        return series.to_numpy()
    return pa.array(series, from_pandas=True)


def _column(answers: Any, index: Any) -> Any:
    """Answers as a pandas column: numpy objects as they are, Arrow arrays with their Arrow
    type (nullable, the same dtype in every partition)."""
    import pandas as pd

    if isinstance(answers, np.ndarray):
        return pd.Series(answers, index=index, dtype=object)
    return pd.Series(pd.arrays.ArrowExtensionArray(answers.dictionary_decode()), index=index)


def _enrich_partition(pdf: Any, column: str, table: PrefixTable, prefix_column: str, value_column: str) -> Any:
    prefixes, values = table.lookup_batch(_addresses(pdf[column]), output="arrow")
    return pdf.assign(**{prefix_column: _column(prefixes, pdf.index), value_column: _column(values, pdf.index)})


def _ship(table: PrefixTable) -> Any:
    """The table as the graph refers to it: scattered to every worker once when a
    dask.distributed client is running (the graph then holds a key, not the table), a delayed
    object otherwise (in the graph once, not once per partition)."""
    import dask

    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(table, pure=True)
    return client.scatter(table, broadcast=True, hash=False)


def enrich(
    ddf: Any,
    column: str,
    table: PrefixTable,
    *,
    prefix_column: str = "prefix",
    value_column: str = "value",
) -> Any:
    """`ddf` with two more columns: the longest stored prefix containing `column`'s address
    (text) and its value (null where nothing matches). `column` holds text, IPv4 integers
    (nullable too), or packed bytes (with `dataframe.convert-string` off: Dask otherwise turns
    bytes into text)."""
    import dask

    check_columns(list(ddf.columns), column, prefix_column, value_column)
    meta = _enrich_partition(ddf._meta, column, table, prefix_column, value_column)
    shipped = _ship(table)
    return ddf.map_partitions(
        _enrich_partition, column, shipped, prefix_column, value_column, meta=meta, align_dataframes=False
    )
