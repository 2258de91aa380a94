# fibre: the two set-up commands are `make demo` (the main job: the quick route-lookup study on
# the built-in default) and `make test` (everything CI checks). Each installs what it lacks,
# and only that, saying so: `make test` through `make deps`, `make demo` through
# bench/harness/ensure-deps.sh (the peer harnesses' packages and Go).

CARGO ?= cargo
EXAMPLE ?= examples/edge-router.batch

HARNESS_OUT := $(CURDIR)/target/harness
HARNESSES := kernel-xdp dpdk bart
BENCH_ARGS ?=

.PHONY: demo bench-full harnesses harness-deps bench-deps run test lint unit kernel-tests deps fuzz clean

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
test: deps lint
	$(CARGO) test --workspace --all-targets --no-fail-fast
	$(CARGO) test --workspace --doc --no-fail-fast

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --lib

## What a fresh machine needs: iproute2 (ip, ip netns) for the kernel tests; net-snmp's snmpd
## and tools, which the SNMP tests start and query on their own socket and port.
deps:
	@command -v ip >/dev/null 2>&1 || { echo "make deps: installing iproute2 (apt-get)"; apt-get update -qq && apt-get install -y -qq iproute2; }
	@{ command -v snmpd && command -v snmpbulkwalk; } >/dev/null 2>&1 || { echo "make deps: installing snmpd and snmp (apt-get)"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq snmpd snmp; }
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || { echo "make deps: adding rustup components clippy, rustfmt"; rustup component add clippy rustfmt; }

## Fuzz the parsers for a minute each (needs cargo-fuzz and a nightly toolchain).
fuzz:
	cd fuzz && for t in prefix batch_line fib_api agentx_pdu; do mkdir -p corpus/$$t && $(CARGO) +nightly fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=60 || exit 1; done

clean:
	$(CARGO) clean
