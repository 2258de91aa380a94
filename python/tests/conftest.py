"""Shared fixtures: the shared full table, the peers (pytricia, py-radix) as oracles, and how
a test that cannot run says so (a skip on a user's machine, a failure in CI)."""

from __future__ import annotations

import gzip
import os
import pathlib

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def unavailable(reason: str, required_by: str) -> None:
    """Skips with `reason`, or fails when the environment variable `required_by` is set (CI
    sets FIBRE_DATA_REQUIRED and FIBRE_KERNEL_TESTS=required: a skip there is a failure)."""
    if os.environ.get(required_by):
        pytest.fail(f"{reason} (and {required_by} is set: CI requires this test to run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def full_table() -> list[str]:
    """The shared full table's prefixes as text (about 902k IPv4, 160k IPv6)."""
    path = DATA / "full-table-2024.txt.gz"
    if not path.exists():
        unavailable(f"{path} is absent (the shared data folder)", "FIBRE_DATA_REQUIRED")
    with gzip.open(path, "rt") as f:
        return f.read().split()


def random_v4(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)


def random_v6(rng: np.random.Generator, n: int, table: list[str] | None = None) -> np.ndarray:
    """`n` IPv6 addresses as `(n, 16)` bytes: half anywhere in 2000::/4 (where routes are),
    half inside prefixes of `table` (random host bits), so that both hits and misses of every
    length are asked."""
    import ipaddress

    rows = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    rows[:, 0] = 0x20 | (rows[:, 0] & 0x0F)
    if table:
        v6 = [p for p in table if ":" in p]
        for i in range(0, n, 2):
            net = ipaddress.ip_network(v6[int(rng.integers(len(v6)))])
            host = int(net.network_address) | (int.from_bytes(rows[i].tobytes(), "big") & int(net.hostmask))
            rows[i] = np.frombuffer(host.to_bytes(16, "big"), dtype=np.uint8)
    return rows
