#!/usr/bin/env bash
# Generator memory over a long open-model run at a high rate: ceiling load against one local nginx
# worker, the generator's RSS (/proc/PID/status VmRSS) sampled every 30 s. Flat RSS = no
# per-request storage. Usage: bench/generator-memory.sh [rate] [duration]
set -euo pipefail
rate=${1:-30000}; dur=${2:-10m}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl "$bin"
start_nginx "${PORT:-18298}"
taskset -c 1 "$bin" load --url "http://127.0.0.1:$port/" --rate "$rate" --duration "$dur" --out "$tmp/out" --json -q > "$tmp/summary.json" &
gen=$!
echo "# generator-memory: $(date -u +%FT%TZ), ceiling load --rate $rate --duration $dur (open model, --out: hlog + CSV written every second)"
echo "| elapsed s | generator RSS MiB |"
echo "|---|---|"
t=0
while kill -0 $gen 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' /proc/$gen/status 2>/dev/null || true)
  [ -n "$rss" ] && echo "| $t | $(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}') |"
  sleep 30; t=$((t + 30))
done
wait $gen || true
python3 -c "import json,sys; o=json.load(open('$tmp/summary.json')); print(f\"completed {o['completed']} of {o['offered']} offered, latency p99 {o['latency']['p99_ms']:.2f} ms, lag p99 {o['schedule_lag']['p99_ms']:.2f} ms; {o['generator_verdict']}\")"
