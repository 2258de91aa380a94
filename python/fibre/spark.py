"""Enrichment on Spark: a column of addresses gains the matched prefix and value.

The table is saved once to a file that `SparkContext.addFile` ships to every executor, where
each Python worker process loads it once (workers are reused between tasks) and looks up whole
Arrow record batches through `DataFrame.mapInArrow`: no per-row Python, no join.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from typing import Any

from ._table import PrefixTable, check_columns

# Tables loaded in this process (an executor's Python worker), by shipped file name, and how
# many times each was loaded (once, while Spark reuses the worker).
_LOADED: dict[str, PrefixTable] = {}
_LOADS: dict[str, int] = {}


# Tables a worker keeps: one per `enrich` call, so a worker that served earlier calls drops
# their tables (the least recently loaded first).
_KEPT = 2


def _executor_table(name: str) -> PrefixTable:
    table = _LOADED.get(name)
    if table is None:
        from pyspark import SparkFiles

        while len(_LOADED) >= _KEPT:
            del _LOADED[next(iter(_LOADED))]
        table = _LOADED[name] = PrefixTable.load(SparkFiles.get(name))
        _LOADS[name] = _LOADS.get(name, 0) + 1
    return table


# The driver's copies of shipped tables: executors fetch them while jobs run, so they are
# removed when the driver's interpreter exits.
_SHIPPED: list[str] = []


@atexit.register
def _remove_shipped() -> None:
    for d in _SHIPPED:
        shutil.rmtree(d, ignore_errors=True)


def _spark_type(table: PrefixTable, value_type: Any) -> Any:
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import DataType, _parse_datatype_string

    if isinstance(value_type, DataType):
        return value_type
    if isinstance(value_type, str):
        return _parse_datatype_string(value_type)
    from ._arrow import _dictionaries

    _, values = _dictionaries(table)
    if not hasattr(values, "type"):
        raise TypeError(
            "the table's values are not one Arrow type: give value_type (a Spark type) and "
            "values of that type"
        )
    import pyarrow as pa

    t = values.type
    if pa.types.is_null(t):
        from pyspark.sql.types import StringType

        return StringType()
    return from_arrow_type(t)


def enrich(
    df: Any,
    column: str,
    table: PrefixTable,
    *,
    prefix_column: str = "prefix",
    value_column: str = "value",
    value_type: Any = None,
) -> Any:
    """`df` with two more columns: the longest stored prefix containing `column`'s address
    (text) and its value (null where nothing matches).

    `column` holds text (`"192.0.2.1"`, `"2001:db8::1"`), IPv4 integers, or 4- or 16-byte
    binary. The values' Spark type is the one Arrow infers from the table's values, or
    `value_type` (a `DataType` or a DDL string such as `"bigint"`).
    """
    import pyarrow as pa
    from pyspark.sql.types import StringType, StructField, StructType

    check_columns(list(df.columns), column, prefix_column, value_column)
    spark_type = _spark_type(table, value_type)
    schema = StructType(
        df.schema.fields
        + [StructField(prefix_column, StringType(), True), StructField(value_column, spark_type, True)]
    )
    from pyspark.sql.pandas.types import to_arrow_type

    arrow_type = to_arrow_type(spark_type)
    sc = df.sparkSession.sparkContext
    name = f"fibre-table-{uuid.uuid4().hex}.fibre"
    folder = tempfile.mkdtemp(prefix="fibre-spark-")
    _SHIPPED.append(folder)
    path = os.path.join(folder, name)
    table.save(path)
    sc.addFile(path)

    def enrich_batches(batches: Any) -> Any:
        t = _executor_table(name)
        for batch in batches:
            prefixes, values = t.lookup_batch(batch.column(column), output="arrow")
            prefixes = prefixes.dictionary_decode()
            if isinstance(values, pa.DictionaryArray):
                values = values.dictionary_decode()
            else:
                values = pa.array(list(values), type=arrow_type)
            if values.type != arrow_type:
                values = values.cast(arrow_type)
            yield pa.RecordBatch.from_arrays(
                batch.columns + [prefixes, values], names=batch.schema.names + [prefix_column, value_column]
            )

    return df.mapInArrow(enrich_batches, schema)
