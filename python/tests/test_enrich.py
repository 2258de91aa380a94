"""Enrichment at scale on real local clusters: Spark on `local[2]` and a dask.distributed
`LocalCluster` of two worker processes. 10^5 rows each, compared with the per-row reference
(`PrefixTable.get_key` and `get`, one address at a time)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import sys

import numpy as np
import pytest

import fibre
from conftest import random_v4, unavailable

ROWS = 100_000


@pytest.fixture(scope="module")
def table():
    """About 20k prefixes of both families, each mapped to an int."""
    rng = np.random.default_rng(11)
    t = fibre.PrefixTable()
    for i, (a, n) in enumerate(zip(rng.integers(0, 2**32, 16_000), rng.integers(8, 25, 16_000))):
        t[ipaddress.ip_network((int(a), int(n)), strict=False)] = i
    for i, (a, n) in enumerate(zip(rng.integers(0, 2**16, 4000), rng.integers(16, 49, 4000))):
        t[ipaddress.ip_network(((0x2000 | int(a) & 0xFFF) << 112, int(n)), strict=False)] = 100_000 + i
    return t


@pytest.fixture(scope="module")
def rows():
    """10^5 addresses as text: 80% IPv4, 20% IPv6 (inside 2000::/4)."""
    rng = np.random.default_rng(12)
    v4 = [str(ipaddress.IPv4Address(int(a))) for a in random_v4(rng, ROWS * 4 // 5)]
    hi = rng.integers(0, 2**63, ROWS // 5, dtype=np.uint64)
    v6 = [str(ipaddress.IPv6Address(((0x2000 | int(h) & 0xFFF) << 112) | (int(h) << 40))) for h in hi]
    both = v4 + v6
    rng.shuffle(both)
    return both


def reference(table, rows):
    return [(table.get_key(a), table.get(a)) for a in rows]


def test_spark_enrich_equals_the_per_row_reference(table, rows, tmp_path):
    if shutil.which("java") is None:
        unavailable("Spark needs Java (make deps installs openjdk-17-jre-headless)", "FIBRE_KERNEL_TESTS")
    from pyspark.sql import SparkSession

    import fibre.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("fibre-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
        .config("spark.local.dir", str(tmp_path))
        .getOrCreate()
    )
    try:
        df = spark.createDataFrame([(i, a) for i, a in enumerate(rows)], "id long, addr string").repartition(8)
        out = fibre.spark.enrich(df, "addr", table).orderBy("id").collect()
        # Each worker process loaded the shipped table once, whatever the batches it enriched.
        import pyarrow as pa

        def loads(batches):
            import fibre.spark as fs

            for _ in batches:
                yield pa.RecordBatch.from_pydict({"pid": [os.getpid()], "loads": [max(fs._LOADS.values(), default=0)]})

        seen = df.mapInArrow(loads, "pid long, loads long").collect()
        assert seen and all(r["loads"] <= 1 for r in seen), seen
        assert [(r["prefix"], r["value"]) for r in out] == reference(table, rows)
        assert [r["addr"] for r in out] == rows
        hits = sum(r["prefix"] is not None for r in out)
        assert 0 < hits < ROWS, "both hits and misses were asked"
        # IPv4 as integers, the values typed as asked.
        ints = spark.createDataFrame([(int(ipaddress.IPv4Address(a)),) for a in rows if ":" not in a][:5000], "ip long")
        got = fibre.spark.enrich(ints, "ip", table, value_type="string", prefix_column="p", value_column="v").collect()
        want = [(table.get_key(r["ip"]), None if table.get(r["ip"]) is None else str(table.get(r["ip"]))) for r in got]
        assert [(r["p"], r["v"]) for r in got] == want
        with pytest.raises(ValueError, match="already in the DataFrame"):
            fibre.spark.enrich(df, "addr", table, prefix_column="id")
    finally:
        spark.stop()


def test_dask_enrich_equals_the_per_row_reference(table, rows):
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    import fibre.dask

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster, Client(cluster):
        pdf = pd.DataFrame({"id": np.arange(ROWS), "addr": rows})
        ddf = dd.from_pandas(pdf, npartitions=8)
        out = fibre.dask.enrich(ddf, "addr", table).compute().sort_values("id")
        got = [(p, None if pd.isna(v) else int(v)) for p, v in zip(out["prefix"].tolist(), out["value"].tolist())]
        assert [(None if pd.isna(p) else p, v) for p, v in got] == reference(table, rows)
        ints = dd.from_pandas(pd.DataFrame({"ip": [int(ipaddress.IPv4Address(a)) for a in rows[:20000] if ":" not in a]}),
                              npartitions=3)
        out = fibre.dask.enrich(ints, "ip", table).compute()
        nullable = dd.from_pandas(pd.DataFrame({"ip": pd.array([0x0A000001, None, 7], dtype="Int64")}), npartitions=1)
        got = fibre.dask.enrich(nullable, "ip", table).compute()
        assert [None if pd.isna(p) else p for p in got["prefix"]] == [table.get_key(0x0A000001), None, table.get_key(7)]
        with pytest.raises(ValueError, match="no column 'addr'"):
            fibre.dask.enrich(ints, "addr", table)
        with pytest.raises(ValueError, match="both named"):
            fibre.dask.enrich(ints, "ip", table, prefix_column="x", value_column="x")
        assert [None if pd.isna(p) else p for p in out["prefix"]] == [table.get_key(int(x)) for x in out["ip"]]
