# ceiling — the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
BIN := target/release/ceiling

.PHONY: all setup build demo test test-rust test-stacks bench clean

all: build

setup:
	@scripts/setup.sh core

build: setup
	$(CARGO) build --release --locked -p ceiling-cli

# The main job on the embedded default: source 000's plan, scaled to ~3 minutes, on the Go stack
# with an embedded PostgreSQL; prints source 000's table and writes results/<run-id>/.
demo: build
	$(BIN) run plans/demo.toml

# Every test: the Rust workspace (engine, plan, analysis, stand, verify — the integration tests
# start PostgreSQL and the Go stack), and the stacks' own unit tests.
test: setup test-rust test-stacks

test-rust:
	$(CARGO) build --release --locked -p ceiling-cli
	$(CARGO) test --release --locked --workspace

test-stacks:
	cd stacks/go-pgx && go vet ./... && go test ./...

# Generator efficiency against wrk on a local nginx (results go to docs/benchmarks.md by hand).
bench: build
	@scripts/setup.sh bench
	bench/generator-vs-wrk.sh

clean:
	$(CARGO) clean
