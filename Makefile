# fibre: the two set-up commands are `make run` (the main job on the built-in example) and
# `make test` (everything CI checks). Nothing here installs silently: `make deps` says what it
# installs and is the only target that does.

CARGO ?= cargo
EXAMPLE ?= examples/edge-router.batch

.PHONY: run test lint unit kernel-tests deps fuzz clean

## The main job: build fibre and run the example router's batch (its routes, then its answers).
## Some answers are errors by design (blackholed, unreachable, prohibited destinations): fibre
## exits 1 when a line failed, which here is the expected outcome; 2 and more are real failures.
run:
	$(CARGO) run --release -q -p fibre-cli -- -force -batch $(EXAMPLE) || [ $$? -eq 1 ]

## All tests: format and lints, unit and property tests, kernel differential and scenario
## tests (these need root and `ip netns`; they skip with a message without, and fail instead when
## FIBRE_KERNEL_TESTS=required, as .ci/run sets it).
test: deps lint
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## What a fresh machine needs: iproute2 (ip, ip netns) for the kernel tests.
deps:
	@command -v ip >/dev/null 2>&1 || { echo "make deps: installing iproute2 (apt-get)"; apt-get update -qq && apt-get install -y -qq iproute2; }
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || { echo "make deps: adding rustup components clippy, rustfmt"; rustup component add clippy rustfmt; }

## Fuzz the parsers for a minute each (needs cargo-fuzz and a nightly toolchain).
fuzz:
	cd fuzz && for t in prefix batch_line; do mkdir -p corpus/$$t && $(CARGO) +nightly fuzz run $$t corpus/$$t seeds/$$t -- -max_total_time=60 || exit 1; done

clean:
	$(CARGO) clean
