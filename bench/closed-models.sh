#!/usr/bin/env bash
# The closed model's CPU per request, every engine against wrk in turn (issue 36, engine.md §75):
# wrk, ceiling's tokio engine, the ticked engine on io_uring and on epoll, each at 64 connections
# for SECS seconds, nginx on core 0 and each tool alone on core 1, requests counted by nginx's
# stub_status (bench/lib.sh's `measure`), ROUNDS line-ups so the box's drift falls on all alike.
# Usage: bench/closed-models.sh [secs] [rounds] [conns]
set -euo pipefail
secs=${1:-10}; rounds=${2:-2}; conns=${3:-64}
. "$(dirname "$0")/lib.sh"
require nginx wrk taskset curl "$bin"
start_nginx "${PORT:-18297}"
url="http://127.0.0.1:$port/"
echo "# closed-models: $(date -u +%FT%TZ), $(nproc) cores, ${conns} connections, ${secs}s each"
for ((i = 1; i <= rounds; i++)); do
  line="line-up $i:"
  for spec in "wrk:wrk -t1 -c$conns -d${secs}s $url" \
              "tokio:$bin load --url $url --connections $conns --duration ${secs}s -q" \
              "tick_uring:$bin load --url $url --connections $conns --duration ${secs}s --tick 2ms --io io_uring -q" \
              "tick_epoll:$bin load --url $url --connections $conns --duration ${secs}s --tick 2ms --io epoll -q"; do
    name=${spec%%:*}; cmd=${spec#*:}
    # shellcheck disable=SC2086  # the command line is split on purpose
    read -r _ c r _ < <(measure "$name" $cmd)
    line+=$(awk -v n="$name" -v c="$c" -v r="$r" -v s="$secs" 'BEGIN{printf "  %s %.2f µs (%.0f/s)", n, c/r*1e6, r/s}')
  done
  echo "$line"
done
