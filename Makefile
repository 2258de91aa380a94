# fibre: the two set-up commands are `make demo` (the main job: the quick route-lookup study on
# the built-in default) and `make test` (everything CI checks). Each installs what it lacks,
# and only that, saying so: `make test` through `make deps`, `make demo` through
# bench/harness/ensure-deps.sh (the peer harnesses' packages and Go).

CARGO ?= cargo
EXAMPLE ?= examples/edge-router.batch

HARNESS_OUT := $(CURDIR)/target/harness
HARNESSES := kernel-xdp dpdk bart
BENCH_ARGS ?=

.PHONY: demo bench-full harnesses harness-deps bench-deps run test lint unit kernel-tests deps python-deps python python-test bench-python fuzz clean

# The Python package's virtual environment (made by `make python-deps`) and its interpreter.
PYENV := $(CURDIR)/target/pyenv
PY := $(PYENV)/bin/python

## The main job: the quick study (both families, the study's scenarios at 10^3..10^5 routes,
## fibre beside the kernel and the peers that are built here), printing the summary table and
## the path of the HTML report (target/bench-report/report.html).
demo: harnesses
	$(CARGO) build --release -p fibre-cli
	./target/release/fibre bench $(BENCH_ARGS)

## The full study: sizes 100..2,000,000, every density, W1/W2 of 10^6 addresses, 11 runs.
bench-full: harnesses
	$(CARGO) build --release -p fibre-cli
	./target/release/fibre bench --full --out target/bench-report-full $(BENCH_ARGS)

## Builds each peer harness whose toolchain is present; one that cannot be built is reported and
## the study skips its engines with a note.
harnesses: harness-deps
	@mkdir -p $(HARNESS_OUT)
	@for h in $(HARNESSES); do \
	  if $(MAKE) -s -C bench/harness/$$h OUT=$(HARNESS_OUT) >$(HARNESS_OUT)/$$h.log 2>&1; then \
	    echo "harness $$h: built"; \
	  else \
	    echo "harness $$h: not built, its engines will be skipped (log: target/harness/$$h.log; \`make bench-deps\` installs what it needs)"; \
	  fi; \
	done

## What the peers need, where it is missing: clang, llvm, bpftool, libbpf-dev (kernel XDP
## harness), libdpdk-dev (DPDK), and a Go toolchain for bart (fetched from the Go module proxy
## into target/go when `go` is missing or older than bench/harness/bart/go.mod asks).
harness-deps bench-deps:
	@bench/harness/ensure-deps.sh

## The example router's batch (its routes, then its answers).
## Some answers are errors by design (blackholed, unreachable, prohibited destinations): fibre
## exits 1 when a line failed, which here is the expected outcome; 2 and more are real failures.
run:
	$(CARGO) build --release -p fibre-cli
	./target/release/fibre -force -batch $(EXAMPLE) || [ $$? -eq 1 ]

## All tests: format and lints, unit and property tests, kernel differential and scenario
## tests (these need root and `ip netns`; they skip with a message without, and fail instead when
## FIBRE_KERNEL_TESTS=required, as .ci/run sets it).
## Every suite runs even when an earlier one fails (one failure shows them all); the exit status
## says whether any failed.
test: deps lint
	@status=0; \
	$(CARGO) test --workspace --all-targets --no-fail-fast || status=1; \
	$(CARGO) test --workspace --doc --no-fail-fast || status=1; \
	$(MAKE) --no-print-directory python-test || status=1; \
	exit $$status

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --lib
	$(CARGO) fmt --manifest-path python/Cargo.toml --check
	CARGO_TARGET_DIR=$(CURDIR)/target/python $(CARGO) clippy --manifest-path python/Cargo.toml --all-targets -- -D warnings

## The Python package (python/): its wheel built by maturin and installed into target/pyenv.
python: python-deps
	cd python && CARGO_TARGET_DIR=$(CURDIR)/target/python $(PYENV)/bin/maturin build --release -q -o $(CURDIR)/target/wheels
	$(PYENV)/bin/pip install -q --force-reinstall --no-deps $(CURDIR)/target/wheels/fibre-*.whl

## The Python package's tests: the peers (pytricia, py-radix) as oracles, hypothesis against a
## model, Spark on local[2] and a two-worker Dask cluster, the kernel in a namespace.
python-test: python
	cd python/tests && $(PY) -m pytest -q -p no:cacheprovider

## The Python benchmark: lookup_batch against pytricia, py-radix and polars-iptools, table
## build and memory, enrichment on Spark and Dask (JSON records and a summary).
bench-python: python
	$(PY) python/bench/bench_python.py $(BENCH_ARGS)

## What a fresh machine needs: iproute2 (ip, ip netns) for the kernel tests; net-snmp's snmpd
## and tools, which the SNMP tests start and query on their own socket and port.
deps: python-deps
	@command -v ip >/dev/null 2>&1 || { echo "make deps: installing iproute2 (apt-get)"; apt-get update -qq && apt-get install -y -qq iproute2; }
	@{ command -v snmpd && command -v snmpbulkwalk; } >/dev/null 2>&1 || { echo "make deps: installing snmpd and snmp (apt-get)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq snmpd snmp; }
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || { echo "make deps: adding rustup components clippy, rustfmt"; rustup component add clippy rustfmt; }

## What the Python package needs: a Python 3.11+ with venv (Debian's python3-venv when
## missing), Java 17 for Spark (Debian's openjdk-17-jre-headless), and the packages of
## python/requirements-test.txt in target/pyenv (pytricia and pyspark build from source).
python-deps: $(PYENV)/.installed

$(PYENV)/.installed: python/requirements-test.txt
	@command -v java >/dev/null 2>&1 || { echo "make python-deps: installing openjdk-17-jre-headless (apt-get), for Spark"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && python3 -c 'import ensurepip, venv' 2>/dev/null && python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' || { echo "make python-deps: installing python3, python3-venv, python3-dev (apt-get): a Python 3.11+ with venv and headers (pytricia builds from source)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-dev; }
	@echo "make python-deps: installing python/requirements-test.txt into target/pyenv (pip)"
	python3 -m venv $(PYENV)
	$(PYENV)/bin/pip install -q --upgrade pip
	$(PYENV)/bin/pip install -q -r python/requirements-test.txt
	@touch $@

## Fuzz the parsers for a minute each (needs cargo-fuzz and a nightly toolchain).
fuzz:
	cd fuzz && for t in prefix batch_line fib_api agentx_pdu; do mkdir -p corpus/$$t && $(CARGO) +nightly fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=60 || exit 1; done

clean:
	$(CARGO) clean
