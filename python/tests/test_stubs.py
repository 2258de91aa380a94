"""The type stubs against the extension they describe: mypy's stubtest compares every name,
signature and class property of `fibre/_fibre.pyi` with the compiled module."""

from __future__ import annotations

import subprocess
import sys


def test_stubs_match_the_extension():
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "fibre._fibre"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
