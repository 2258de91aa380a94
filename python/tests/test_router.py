"""fibre.Router against the live kernel: the example edge router set up in a network
namespace and in fibre (from batch text, from a snapshot, and dumped from the kernel over
netlink), asked the same `route get`s; and its errors, as exceptions with the errno name."""

from __future__ import annotations

import errno
import json
import os
import pathlib
import pickle
import shlex
import subprocess

import pytest

import fibre
from conftest import DATA, unavailable

ROOT = pathlib.Path(__file__).resolve().parents[2]
SETUP = [
    line
    for line in (ROOT / "examples" / "edge-router.batch").read_text().splitlines()
    if line.strip() and not line.startswith("#") and not line.startswith("route get")
]
SYSCTLS = [
    "net.ipv4.ip_forward=1",
    "net.ipv6.conf.all.forwarding=1",
    "net.ipv6.conf.default.forwarding=1",
    "net.ipv4.conf.all.rp_filter=0",
    "net.ipv4.conf.default.rp_filter=0",
    "net.ipv6.conf.default.addr_gen_mode=1",
    "net.ipv6.conf.default.accept_dad=0",
]
# Questions whose answers do not depend on the kernel's multipath hash: no ECMP route is
# resolved without `fibmatch`.
QUESTIONS = [
    ("8.8.8.8", {"fibmatch": True}),
    ("100.100.1.1", {}),
    ("10.1.2.3", {}),
    ("100.64.1.1", {}),
    ("192.0.2.7", {}),
    ("192.168.10.20", {}),
    ("192.168.10.20", {"src": "198.51.100.5", "iif": "dmz0", "fibmatch": True}),
    ("8.8.8.8", {"src": "198.51.100.5", "iif": "dmz0"}),
    ("8.8.8.8", {"src": "198.51.100.1"}),
    ("198.51.100.3", {"mark": 7}),
    ("203.0.113.2", {}),
    ("2001:4860::8888", {}),
    ("2001:4860::8888", {"src": "2001:db8:20::1"}),
    ("2001:db8:10::5", {"oif": "lan0"}),
    ("fd00::1", {}),
    ("2001:4860::8888", {"fibmatch": True}),
]


def ip_words(dst, kw):
    words = ["route", "get", dst]
    for k, v in kw.items():
        if k == "fibmatch":
            words.append("fibmatch")
        else:
            words += ["from" if k == "src" else k, str(v)]
    return words


@pytest.fixture(scope="module")
def kernel():
    """A namespace with the edge router set up: its name."""
    if os.geteuid() != 0:
        unavailable("the kernel tests need root (network namespaces)", "FIBRE_KERNEL_TESTS")
    ns = f"fibre-py-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
        unavailable("cannot create a network namespace (ip netns add)", "FIBRE_KERNEL_TESTS")
    try:
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", *SYSCTLS], check=True)
        subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(SETUP) + "\n", text=True, check=True)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def kernel_answer(ns, dst, kw):
    r = subprocess.run(["ip", "-n", ns, "-j", *ip_words(dst, kw)], capture_output=True, text=True)
    if r.returncode != 0:
        return ("error", r.stderr.strip())
    return json.loads(r.stdout)[0]


def fibre_answer(router, dst, kw):
    try:
        return router.route_get(dst, **kw)
    except fibre.RouteError as e:
        return ("error", e.strerror)


@pytest.mark.parametrize("source", ["batch", "snapshot", "kernel dump"])
def test_route_get_equals_the_kernel(kernel, source, tmp_path):
    if source == "kernel dump":
        router = fibre.Router.from_kernel(kernel)
    else:
        router = fibre.Router.from_batch("\n".join(SETUP))
        if source == "snapshot":
            router.save(tmp_path / "edge.snap")
            router = pickle.loads(pickle.dumps(fibre.Router.load(tmp_path / "edge.snap")))
    for dst, kw in QUESTIONS:
        assert fibre_answer(router, dst, kw) == kernel_answer(kernel, dst, kw), shlex.join(ip_words(dst, kw))


def test_errors_carry_the_errno_name():
    router = fibre.Router.from_batch("\n".join(SETUP))
    cases = [("100.64.1.1", "EHOSTUNREACH"), ("192.0.2.7", "EACCES"), ("10.1.2.3", "EINVAL")]
    for dst, name in cases:
        with pytest.raises(fibre.RouteError) as e:
            router.route_get(dst)
        assert e.value.errno_name == name and errno.errorcode[e.value.errno] == name
        assert isinstance(e.value, OSError)
    empty = fibre.Router()
    with pytest.raises(fibre.RouteError) as e:
        empty.route_get("192.0.2.1")
    assert e.value.errno_name == "ENETUNREACH"


def test_a_failing_batch_changes_nothing_and_names_its_line():
    router = fibre.Router.from_batch("\n".join(SETUP))
    before = router.query("route show table all")
    with pytest.raises(fibre.RouteError) as e:
        router.batch("route add 1.0.0.0/8 via 203.0.113.1\nroute add 2.0.0.0/8 via 9.9.9.9\n")
    assert "line 2" in e.value.strerror and "invalid gateway" in e.value.strerror
    assert e.value.errno_name == "EINVAL"
    assert e.value.command == "route add 2.0.0.0/8 via 9.9.9.9"
    assert router.query("route show table all") == before


@pytest.mark.parametrize(
    "kw, error",
    [
        ({"dst": "not an address"}, ValueError),
        ({"dst": 1.5}, TypeError),
        ({"dst": "8.8.8.8", "iif": "dmz0 oif lan0"}, ValueError),
        ({"dst": "8.8.8.8", "mark": -1}, ValueError),
        ({"dst": "8.8.8.8", "sport": 70000}, ValueError),
        ({"dst": "8.8.8.8", "oif": "nosuchdev"}, fibre.RouteError),
    ],
)
def test_bad_questions_raise_clear_errors(kw, error):
    router = fibre.Router.from_batch("\n".join(SETUP))
    with pytest.raises(error):
        router.route_get(**kw)


def test_snapshot_bytes_refused_when_damaged(tmp_path):
    data = fibre.Router.from_batch("\n".join(SETUP)).to_bytes()
    for bad in (b"", data[:-1], b"x" + data[1:]):
        with pytest.raises(ValueError):
            fibre.Router.from_bytes(bad)


def test_mrt_dump_loads_all_or_nothing():
    path = DATA / "mrt" / "ripe-rrc00-bview.20000111.0032.gz"
    if not path.exists():
        unavailable(f"{path} is absent (the shared data folder)", "FIBRE_DATA_REQUIRED")
    router = fibre.Router.from_batch("link add eth0 type veth peer name eth1\nlink set eth0 up\nlink set eth1 up\naddr add 192.0.2.1/24 dev eth0\n")
    with pytest.raises(ValueError, match="Cannot find device"):
        router.load_mrt(path, "nosuchdev")
    counts = router.load_mrt(path, "eth0", family="inet")
    assert counts["routes"] > 10_000
    shown = router.query("route show")
    assert len(shown) == counts["routes"] + 1  # and the connected subnet
    with pytest.raises(ValueError):
        router.load_mrt(ROOT / "README.md", "eth0")
    assert len(router.query("route show")) == len(shown)
