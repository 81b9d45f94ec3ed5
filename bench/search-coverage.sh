#!/usr/bin/env bash
# The search's coverage over real sockets on the wall clock (issue 35 item 7): the shipped
# `ceiling search --url` against a fixed-capacity FIFO service on loopback whose crossing for 2-s
# probes is known (400–408 RPS), TRIALS times (default 10, about a minute each). Prints each
# trial and the tally: how often the 95% interval reached the truth, how often it narrowed to
# ±5%, the median half-width, probes and time. Run nothing else meanwhile.
# Usage: [TRIALS=10] bench/search-coverage.sh
set -euo pipefail
cd "$(dirname "$0")/.."
echo "# search-coverage: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), commit $(git rev-parse --short HEAD)"
CEILING_COVERAGE_TRIALS=${TRIALS:-10} cargo test --profile ci --locked -p ceiling-cli --test search_url \
  -- --ignored --nocapture --test-threads 1 coverage_over_real_sockets 2>&1 |
  grep -E '^(trial|coverage|test result|thread)'
