#!/bin/sh
# Installs what the peer harnesses need, only what is missing here, and says what it installs:
# clang and llvm (the BPF target), bpftool and libbpf-dev (kernel XDP harness), libdpdk-dev and
# pkg-config (DPDK harness), Debian packages through apt-get; a Go toolchain for bart through
# bart/ensure-go.sh. Without root or apt-get it installs nothing and says which engines will be
# skipped. `make demo` runs it before building the harnesses; `make bench-deps` too.
set -u
here=$(cd "$(dirname "$0")" && pwd)
missing=""
need() { missing="$missing $1"; }
command -v clang >/dev/null 2>&1 || need clang
command -v llc >/dev/null 2>&1 || command -v llvm-strip >/dev/null 2>&1 || need llvm
command -v bpftool >/dev/null 2>&1 || [ -x /usr/sbin/bpftool ] || [ -x /sbin/bpftool ] || need bpftool
[ -e /usr/include/bpf/libbpf.h ] || need libbpf-dev
command -v pkg-config >/dev/null 2>&1 || need pkg-config
pkg-config --exists libdpdk 2>/dev/null || need libdpdk-dev
command -v curl >/dev/null 2>&1 || need curl
command -v unzip >/dev/null 2>&1 || need unzip
if [ -z "$missing" ]; then
	echo "harness deps: clang, llvm, bpftool, libbpf-dev, libdpdk-dev, pkg-config are here"
elif [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "harness deps: missing:$missing; not installing them (needs root and apt-get):" \
		"the kernel and DPDK engines whose harness cannot be built will be skipped"
else
	echo "harness deps: installing$missing (apt-get), for the kernel XDP and DPDK harnesses"
	apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
		echo "harness deps: apt-get failed; engines whose harness cannot be built will be skipped"
fi
"$here/bart/ensure-go.sh" || echo "harness deps: no Go toolchain; the bart engines will be skipped"
