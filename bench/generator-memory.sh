#!/usr/bin/env bash
# Generator memory over a long open-model run at a high rate: ceiling load against one local nginx
# worker, the generator's RSS (/proc/PID/status VmRSS) and its open connections (from the run's own
# per-second CSV) sampled every 30 s. The connection cap is fixed, so RSS must stay flat: anything
# that grows with requests (per-request storage) would show. Without a cap the generator opens a
# connection for each request that finds all busy (latency blips), and RSS then follows the number
# of connections (~30 KiB each), not the number of requests.
# Usage: bench/generator-memory.sh [rate] [duration] [max-connections]
set -euo pipefail
rate=${1:-30000}; dur=${2:-10m}; conns=${3:-64}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl "$bin"
start_nginx "${PORT:-18298}"
taskset -c 1 "$bin" load --url "http://127.0.0.1:$port/" --rate "$rate" --duration "$dur" --max-connections "$conns" --out "$tmp/out" --json -q > "$tmp/summary.json" &
gen=$!
echo "# generator-memory: $(date -u +%FT%TZ), ceiling load --rate $rate --duration $dur --max-connections $conns (open model, --out: hlog + CSV written every second)"
echo "| elapsed s | generator RSS MiB | open connections | requests completed so far |"
echo "|---|---|---|---|"
t=0
while kill -0 $gen 2>/dev/null; do
  rss=$(awk '/VmRSS/{print $2}' /proc/$gen/status 2>/dev/null || true)
  read -r c n < <(awk -F, 'NR==1{for(i=1;i<=NF;i++){if($i=="connections")ci=i; if($i=="ok")oi=i}} NR>1{c=$ci; n+=$oi} END{print c+0, n+0}' "$tmp/out/timeseries.csv" 2>/dev/null || echo "0 0")
  [ -n "$rss" ] && echo "| $t | $(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}') | $c | $n |"
  sleep 30; t=$((t + 30))
done
wait $gen || true
python3 -c "import json,sys; o=json.load(open('$tmp/summary.json')); print(f\"completed {o['completed']} of {o['offered']} offered, latency p99 {o['latency']['p99_ms']:.2f} ms, lag p99 {o['schedule_lag']['p99_ms']:.2f} ms, backlog overflow {o.get('overflow', 0)}; {o['generator_verdict']}\")"
