#!/usr/bin/env bash
# Generator agents on one box (issue 15 item 5): the same closed-model load (64 connections,
# 10 s) against one local nginx worker (core 0) from one local `ceiling load`, then from 1, 2 and 4
# `ceiling agent` processes with a coordinator — every generator process on core 1, so the ratio
# shows what the agent machinery costs, not how it scales across hosts (one box cannot show that).
# Requests are nginx's own count (stub_status); the coordinator's CPU (/usr/bin/time) is the cost of
# the merge and the channel. Usage: bench/agents-scaling.sh [seconds] [conns]
set -euo pipefail
secs=${1:-10}; conns=${2:-64}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl "$bin"
start_nginx "${PORT:-18298}"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/token"
echo "# agents-scaling: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), ${secs}s, ${conns} connections"
url="http://127.0.0.1:$port/"
read -r _ lcpu lreq _ < <(measure local "$bin" load --url "$url" --connections "$conns" --duration "${secs}s" -q)
echo "| generators | requests/s | ratio to one local process | generator CPU µs/request | coordinator CPU µs/request |"
echo "|---|---|---|---|---|"
awk -v c="$lcpu" -v r="$lreq" -v s="$secs" 'BEGIN{printf "| 1 local process | %\047d | 1.00 | %.2f | – |\n", r/s, c/r*1e6}'
for n in 1 2 4; do
  pids=(); addrs=()
  for i in $(seq 1 "$n"); do
    taskset -c 1 "$bin" agent --listen 127.0.0.1:0 --once --token-file "$tmp/token" 2>"$tmp/agent$i.err" &
    pids+=($!)
  done
  for i in $(seq 1 "$n"); do
    for _ in $(seq 1 50); do grep -q "listening on" "$tmp/agent$i.err" 2>/dev/null && break; sleep 0.1; done
    addrs+=("$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/agent$i.err")")
  done
  list=$(IFS=,; echo "${addrs[*]}")
  read -r _ ccpu creq _ < <(measure "coord$n" "$bin" load --url "$url" --connections "$conns" --duration "${secs}s" --agents "$list" --agent-token-file "$tmp/token" --json -q)
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  gcpu=$(python3 -c "import json;print(json.load(open('$tmp/coord$n.out'))['generator_cpu_seconds'])")
  awk -v n="$n" -v g="$gcpu" -v c="$ccpu" -v r="$creq" -v lr="$lreq" -v s="$secs" \
    'BEGIN{printf "| %d agent%s + coordinator | %\047d | %.2f | %.2f | %.2f |\n", n, (n>1?"s":""), r/s, r/lr, g/r*1e6, c/r*1e6}'
done
