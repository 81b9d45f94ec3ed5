# ceiling — the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
BIN := target/release/ceiling
# `make test` builds with the `ci` profile (Cargo.toml: release optimisation, no LTO, no debug
# info) and checks the conformance suite with that binary; users' commands use the release one.
TEST_BIN := target/ci/ceiling

JVM_STACKS := spring-mvc-jdbc spring-webflux-r2dbc spring-mvc-r2dbc spring-webflux-jdbc ktor-jdbc helidon-nima \
  spring-mvc-jpa spring-webflux-jpa spring-mvc-data-jdbc spring-mvc-jdbi spring-webflux-data-r2dbc \
  spring-mvc-jdbc-threads200 spring-mvc-jdbc-jvm-defaults spring-mvc-jdbc-boot-defaults \
  spring-boot2-jdbc-as-published
# Source 004's stacks: Python, Node.js, the C++ server (its four endpoints) and the nginx
# static-JSON baseline (checked on /ping only).
SCRIPT_STACKS := fastapi-asyncpg fastify-pg cpp-epoll-libpq nginx-static go-mux-pq-as-published

.PHONY: all setup build build-test demo test test-rust lint-rust test-stacks test-jvm test-conformance bench clean

all: build

setup:
	@scripts/setup.sh core

build: setup
	$(CARGO) build --release --locked -p ceiling-cli

# The main job on the embedded default: source 000's plan, scaled to ~3 minutes, on the Go stack
# with an embedded PostgreSQL; prints source 000's table and writes results/<run-id>/. Then the
# answer the table cannot give: a short search of the same stack (10-s probes, a 5-minute budget,
# its 1-minute warm-up included)
# prints its ceiling, the 95% interval and the transition zone.
demo: build
	$(BIN) run plans/000-status-mixed.toml --quick --stacks go-pgx
	$(BIN) search plans/000-status-mixed.toml --stacks go-pgx --probe 10s --probe-trim 2s --confirm 0s --start-rate 1000 --max-time 5m

# Every test: the Rust workspace (engine, plan, analysis, stand, verify — the integration tests
# start PostgreSQL and the Go stack), the stacks' own unit tests, and every other stack built with
# its ecosystem's tool (Maven, pip, npm) and checked by the conformance suite (`ceiling verify`) on
# the embedded stand.
test: setup test-rust test-stacks test-conformance

# Lints first (seconds), then every Rust test. Formatting, clippy and rustdoc all deny warnings.
# scripts/test-rust.sh runs what `cargo test --workspace` runs, but the test binaries that measure
# nothing run side by side, then those that measure one at a time, each alone on the machine.
test-rust: lint-rust
	@CARGO="$(CARGO)" scripts/test-rust.sh --profile ci --locked

lint-rust:
	@t0=$$(date +%s); set -e; \
	  $(CARGO) fmt --all --check; \
	  $(CARGO) clippy --profile ci --locked --workspace --all-targets -- -D warnings; \
	  RUSTDOCFLAGS="-D warnings" $(CARGO) doc --profile ci --locked --no-deps --workspace; \
	  echo "== lint-rust: $$(( $$(date +%s) - t0 )) s"

test-stacks:
	cd stacks/go-pgx && go vet ./... && go test ./...
	cd stacks/go-mux-pq-as-published && go vet ./...

# `ceiling verify` on every stack but go-pgx (which test-rust verifies): N passed, M failed each.
test-conformance: build-test
	@t0=$$(date +%s); set -e; \
	  scripts/setup.sh jvm; scripts/setup.sh stacks; \
	  (cd stacks/fastapi-asyncpg && ./build.sh && .venv/bin/python -m unittest discover -s tests); \
	  $(MAKE) --no-print-directory verify-stacks BIN=$(TEST_BIN) STACKS="$(JVM_STACKS) $(SCRIPT_STACKS)"; \
	  echo "== test-conformance: $$(( $$(date +%s) - t0 )) s"

# The binary the tests use (already built by test-rust's `cargo test`; this only makes sure).
build-test: setup
	$(CARGO) build --profile ci --locked -p ceiling-cli

test-jvm: build
	@scripts/setup.sh jvm
	@$(MAKE) --no-print-directory verify-stacks STACKS="$(JVM_STACKS)"

verify-stacks:
	@mkdir -p .ceiling; set -e; for s in $(STACKS); do \
	  echo "== ceiling verify $$s"; \
	  t1=$$(date +%s); \
	  $(BIN) verify $$s > .ceiling/verify-$$s.txt 2>&1 || { tail -40 .ceiling/verify-$$s.txt; echo "verify $$s: FAILED"; exit 1; }; \
	  echo "$$(grep -E "^[0-9]+ passed, [0-9]+ failed" .ceiling/verify-$$s.txt | tail -1) ($$(( $$(date +%s) - t1 )) s, build included)"; \
	done

# Generator efficiency against wrk on a local nginx, over cleartext and TLS, and against h2load
# over HTTP/2 (results go to docs/benchmarks/engine.md by hand: §36, §37).
bench: build
	@scripts/setup.sh bench
	bench/generator-vs-wrk.sh
	bench/generator-tls-vs-wrk.sh
	bench/generator-h2-vs-h2load.sh
	bench/generator-vs-k6.sh 10000 30
	RATES="1500 10000" CLOSED=0 TICK=2ms LONG=30 bench/generator-profile.sh 10

clean:
	$(CARGO) clean
