"""fibre bench python: the Python package beside the peers its users have today, in one run.

- Lookups of 10^6 random IPv4 and IPv6 addresses of the full table: fibre's `lookup_batch`
  (numpy in, object arrays out; Arrow in, dictionary arrays out), `lookup_slots`, and a
  per-address loop of fibre, pytricia and py-radix; polars-iptools' `is_in` (membership only,
  not a longest match) over the same addresses as text.
- Building the table from the full view: time, and the memory the process grows by (each
  engine built in a fresh interpreter).
- Enrichment: rows per second on Spark `local[2]` and a two-worker Dask `LocalCluster`.

Writes JSON records as `fibre bench` does (`python.json` in `--out`: engine, family, scenario,
size, metric, value, unit, runs, spread = median absolute deviation) and prints a summary with
the ratios against pytricia measured in this run.
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / ".." / "shared" / "data" / "full-table-2024.txt.gz"


def log(msg: str) -> None:
    print(f"bench python: {msg}", file=sys.stderr, flush=True)


class Results:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def add(self, engine, family, scenario, size, metric, samples, unit):
        samples = list(samples)
        med = statistics.median(samples)
        mad = statistics.median(abs(x - med) for x in samples)
        self.records.append(dict(engine=engine, family=family, scenario=scenario, size=size, metric=metric,
                                 value=med, unit=unit, runs=len(samples), spread=mad))
        return med

    def get(self, engine, family, metric):
        for r in self.records:
            if (r["engine"], r["family"], r["metric"]) == (engine, family, metric):
                return r["value"]
        return None


def timed(fn, runs, first=None):
    """Seconds of each of `runs` calls, after one warm-up (timed into `first`, if given)."""
    t0 = time.perf_counter()
    fn()
    if first is not None:
        first.append(time.perf_counter() - t0)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def read_table(path):
    with gzip.open(path, "rt") as f:
        return f.read().split()


def addresses(prefixes, n, rng):
    """`n` IPv4 addresses (uint32) and `n` IPv6 ((n, 16) bytes): half uniformly random (IPv6
    in 2000::/4), half inside random prefixes of the table."""
    v4p = [p for p in prefixes if ":" not in p]
    v6p = [p for p in prefixes if ":" in p]
    v4 = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    v6 = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    v6[:, 0] = 0x20 | (v6[:, 0] & 0x0F)
    for i in range(0, n, 2):
        net = ipaddress.ip_network(v4p[int(rng.integers(len(v4p)))])
        v4[i] = int(net.network_address) | (int(v4[i]) & int(net.hostmask))
        net = ipaddress.ip_network(v6p[int(rng.integers(len(v6p)))])
        host = int(net.network_address) | (int.from_bytes(v6[i].tobytes(), "big") & int(net.hostmask))
        v6[i] = np.frombuffer(host.to_bytes(16, "big"), dtype=np.uint8)
    return v4, v6


def bench_lookups(res, prefixes, args):
    import pyarrow as pa
    import pytricia
    import radix

    import fibre

    rng = np.random.default_rng(args.seed)
    n = args.addresses
    log(f"building the tables ({len(prefixes)} prefixes) and {n} addresses per family")
    t = fibre.PrefixTable()
    pt = {4: pytricia.PyTricia(32), 6: pytricia.PyTricia(128)}
    rt = radix.Radix()
    for i, p in enumerate(prefixes):
        t[p] = i
        pt[6 if ":" in p else 4][p] = i
        rt.add(p).data["i"] = i
    v4, v6 = addresses(prefixes, n, rng)
    loop_n = min(n, args.loop_addresses)
    for fam, arr in ((4, v4), (6, v6)):
        family = f"ipv{fam}"
        scenario = f"full-view-{n}"
        if fam == 4:
            texts = [str(ipaddress.IPv4Address(int(a))) for a in arr]
        else:
            texts = [str(ipaddress.IPv6Address(r.tobytes())) for r in arr]
        arrow = pa.array(arr) if fam == 4 else pa.array([r.tobytes() for r in arr], pa.binary(16))
        # The answers agree before anything is timed.
        got = t.lookup_batch(arr)[0]
        tree = pt[fam]
        want = [tree.get_key(a) for a in texts[:loop_n]]
        if list(got[:loop_n]) != want:
            raise SystemExit(f"{family}: fibre's answers differ from pytricia's")
        per = lambda secs, k: [s / k * 1e9 for s in secs]  # noqa: E731
        engines = {
            "fibre-lookup_batch-numpy": (lambda: t.lookup_batch(arr), n),
            "fibre-lookup_batch-arrow": (lambda: t.lookup_batch(arrow), n),
            "fibre-lookup_slots": (lambda: t.lookup_slots(arr), n),
            "fibre-get-loop": (lambda: [t.get(a) for a in texts[:loop_n]], loop_n),
            "pytricia-get-loop": (lambda: [tree.get(a) for a in texts[:loop_n]], loop_n),
            "py-radix-search_best-loop": (lambda: [rt.search_best(a) for a in texts[:loop_n]], loop_n),
        }
        arrow_text = pa.array(texts)
        engines["fibre-lookup_batch-text-list"] = (lambda: t.lookup_batch(texts[:loop_n]), loop_n)
        engines["fibre-lookup_batch-text-arrow"] = (lambda: t.lookup_batch(arrow_text), n)
        for engine, (fn, k) in engines.items():
            log(f"{family} {engine}")
            res.add(engine, family, scenario, len(prefixes), "lookup_time", per(timed(fn, args.runs), k), "ns")
        try:
            import polars as pl
            import polars_iptools as ip

            nets = [p for p in prefixes if (":" in p) == (fam == 6)]
            df = pl.DataFrame({"a": texts[: args.polars_addresses]})
            log(f"{family} polars-iptools-is_in")
            secs = timed(lambda: df.with_columns(x=ip.is_in(pl.col("a"), nets)), max(1, args.runs // 2))
            res.add("polars-iptools-is_in", family, scenario, len(prefixes), "lookup_time",
                    per(secs, len(df)), "ns")
        except ImportError as e:
            log(f"polars-iptools left out: {e}")


BUILD = """
import gzip, os, sys, time, resource
engine, path = sys.argv[1], sys.argv[2]
prefixes = gzip.open(path, "rt").read().split()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
import fibre, pytricia, radix  # imported before the first reading: the tables alone are measured
before = rss()
t0 = time.perf_counter()
if engine == "fibre":
    import fibre
    t = fibre.PrefixTable()
    for i, p in enumerate(prefixes):
        t[p] = i
    t.freeze()  # compiled, as batch lookups use it
elif engine == "pytricia":
    import pytricia
    t4, t6 = pytricia.PyTricia(32), pytricia.PyTricia(128)
    for i, p in enumerate(prefixes):
        (t6 if ":" in p else t4)[p] = i
else:
    import radix
    t = radix.Radix()
    for i, p in enumerate(prefixes):
        t.add(p).data["i"] = i
secs = time.perf_counter() - t0
print(secs, rss() - before)
"""


def bench_build(res, args):
    for engine in ("fibre", "pytricia", "py-radix"):
        secs, mem = [], []
        for _ in range(args.build_runs):
            out = subprocess.run([sys.executable, "-c", BUILD, engine, str(args.table)], capture_output=True,
                                 text=True, check=True).stdout.split()
            secs.append(float(out[0]))
            mem.append(float(out[1]))
        log(f"build {engine}: {statistics.median(secs):.2f} s, {statistics.median(mem) / 2**20:.0f} MiB")
        res.add(engine, "both", "full-view-build", 0, "build_time", secs, "s")
        res.add(engine, "both", "full-view-build", 0, "memory", mem, "B")


def bench_spark(res, table, args, tmp):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import fibre.spark

    spark = (SparkSession.builder.master("local[2]").appName("fibre-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.local.dir", tmp)
             .config("spark.driver.memory", "4g").getOrCreate())
    try:
        n = args.spark_rows
        # IPv4 addresses as integers, spread over the space by a multiplicative hash of the id.
        df = spark.range(n, numPartitions=8).select(((F.col("id") * 2654435761) % (2**32)).alias("ip"))
        enriched = fibre.spark.enrich(df, "ip", table)
        cold = []
        secs = timed(lambda: enriched.where(F.col("prefix").isNotNull()).count(), args.cluster_runs, cold)
        scenario = f"spark-local2-{n}"
        res.add("fibre-spark-enrich", "ipv4", scenario, n, "rows_per_second_first", [n / s for s in cold], "rows/s")
        rate = res.add("fibre-spark-enrich", "ipv4", scenario, n, "rows_per_second", [n / s for s in secs], "rows/s")
        log(f"spark: {rate:,.0f} rows/s ({n / cold[0]:,.0f} the first time: the table shipped and loaded)")
    finally:
        spark.stop()


def bench_dask(res, table, args):
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    import fibre.dask

    n, parts = args.dask_rows, 10

    def part(i, run):
        ids = np.arange(i * (n // parts), (i + 1) * (n // parts), dtype=np.uint64) + np.uint64(run)
        return pd.DataFrame({"ip": ((ids * np.uint64(2654435761)) % np.uint64(2**32)).astype(np.uint32)})

    runs = iter(range(10**6))

    def job():
        # A new graph each time (other rows, the table scattered again): Dask would otherwise
        # answer a repeated graph from what its workers still hold.
        run = next(runs)
        ddf = dd.from_map(part, range(parts), [run] * parts, meta=part(0, 0).iloc[:0])
        return fibre.dask.enrich(ddf, "ip", table)["prefix"].count().compute()

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster, Client(cluster):
        cold = []
        secs = timed(job, args.cluster_runs, cold)
        scenario = f"dask-2workers-{n}"
        res.add("fibre-dask-enrich", "ipv4", scenario, n, "rows_per_second_first", [n / s for s in cold], "rows/s")
        rate = res.add("fibre-dask-enrich", "ipv4", scenario, n, "rows_per_second", [n / s for s in secs], "rows/s")
        log(f"dask: {rate:,.0f} rows/s ({n / cold[0]:,.0f} the first time: the table shipped and loaded)")


def summary(res):
    lines = ["| family | engine | ns per address | pytricia's loop / this |", "|---|---|---|---|"]
    for fam in ("ipv4", "ipv6"):
        base = res.get("pytricia-get-loop", fam, "lookup_time")
        for r in res.records:
            if r["family"] == fam and r["metric"] == "lookup_time":
                ratio = f"{base / r['value']:.1f}x" if base else "-"
                lines.append(f"| {fam} | {r['engine']} | {r['value']:.1f} | {ratio} |")
    lines += ["", "| engine | build (s) | memory (MiB) |", "|---|---|---|"]
    for e in ("fibre", "pytricia", "py-radix"):
        b, m = res.get(e, "both", "build_time"), res.get(e, "both", "memory")
        if b is not None:
            lines.append(f"| {e} | {b:.2f} | {m / 2**20:.0f} |")
    for e in ("fibre-spark-enrich", "fibre-dask-enrich"):
        v, first = res.get(e, "ipv4", "rows_per_second"), res.get(e, "ipv4", "rows_per_second_first")
        if v is not None:
            lines.append(f"\n{e}: {v:,.0f} rows/s ({first:,.0f} in the first run)")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="fibre bench python", description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=pathlib.Path, default=TABLE, help="prefixes, one per line (gzip)")
    ap.add_argument("--addresses", type=int, default=1_000_000, help="addresses per family (batch lookups)")
    ap.add_argument("--loop-addresses", type=int, default=200_000, help="addresses of the per-address loops")
    ap.add_argument("--polars-addresses", type=int, default=100_000, help="addresses for polars-iptools' is_in")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build-runs", type=int, default=3)
    ap.add_argument("--spark-rows", type=int, default=10_000_000)
    ap.add_argument("--dask-rows", type=int, default=10_000_000)
    ap.add_argument("--cluster-runs", type=int, default=5)
    ap.add_argument("--only", default="lookups,build,spark,dask", help="parts to run, comma-separated")
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "target" / "bench-report")
    args = ap.parse_args(argv)
    if not args.table.exists():
        raise SystemExit(f"{args.table}: no such table (the shared data folder, or --table)")
    only = set(args.only.split(","))
    res = Results()
    prefixes = read_table(args.table)
    if "lookups" in only:
        bench_lookups(res, prefixes, args)
    if "build" in only:
        bench_build(res, args)
    if only & {"spark", "dask"}:
        import tempfile

        import fibre

        table = fibre.PrefixTable()
        for i, p in enumerate(prefixes):
            table[p] = i
        with tempfile.TemporaryDirectory(prefix="fibre-bench-") as tmp:
            if "spark" in only:
                bench_spark(res, table, args, tmp)
            if "dask" in only:
                bench_dask(res, table, args)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"table": str(args.table), "host": f"{platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores, {platform.system()} {platform.release()}",
            "python": sys.version.split()[0]}
    path = args.out / "python.json"
    path.write_text(json.dumps({"meta": meta, "notes": [], "records": res.records}, indent=2))
    print(summary(res))
    print(f"\nrecords: {path}")


if __name__ == "__main__":
    main()
