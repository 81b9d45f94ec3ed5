#!/usr/bin/env bash
# Why does the generator fall behind beside ktor-jdbc on the 2-core box? (issue 35: in §46's
# search its schedule lag p99 was 17–302 ms with the generator at 6–12% of a core, so ktor's
# ceiling stayed a lower bound.) §47 refuted the autogroup lead with busy loops for a stack; this
# runs the real one. The stack as the stand runs it (`ceiling up STACK`: PostgreSQL, the seed
# data, the stack's limits), then the same open-model load at RATE with plan 000's mix, A D A D …:
#   A  as ceiling runs today (CFS; the generator's worker threads at nice -10);
#   D  the generator under SCHED_FIFO priority 1 (`chrt -f 1`): its threads run as soon as they
#      are runnable, ahead of every CFS thread of the stack and PostgreSQL.
# If D's lag falls to an idle box's (< 1 ms) while A's stays high, the lag is CPU scheduling
# (the stack's runnable threads crowd the generator's wake-ups); if D lags as well, it is
# something else (the kernel's softirq work for loopback, memory, the clock).
# Prints, per load: the schedule lag, the latency, the generator's CPU, and the stack's and
# PostgreSQL's runnable threads sampled from /proc while it runs.
# Needs root for chrt -f. Usage: [STACK=ktor-jdbc] [RATE=6000] [SECS=30] [ROUNDS=3] [TICK=2ms]
#   bench/generator-starvation.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
require chrt "$bin"
stack=${STACK:-ktor-jdbc}
rate=${RATE:-6000}
secs=${SECS:-30}
rounds=${ROUNDS:-3}
tick=${TICK:-2ms}
"$bin" up "$stack" --for $((rounds * 2 * (secs + 10) / 60 + 5))m >"$tmp/up.out" 2>"$tmp/up.err" &
up=$!
trap 'kill -INT $up 2>/dev/null; wait $up 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 1 600); do
  grep -q " is up at " "$tmp/up.out" 2>/dev/null && break
  kill -0 "$up" 2>/dev/null || { cat "$tmp/up.err" >&2; exit 1; }
  sleep 0.5
done
url=$(sed -n "s/^$stack is up at \(http[^ ]*\).*/\1/p" "$tmp/up.out")
data=$(sed -n 's/^  ids for requests: \(.*\) (status_ids.*/\1/p' "$tmp/up.out")
[ -n "$url" ] && [ -n "$data" ] || { cat "$tmp/up.out" "$tmp/up.err" >&2; exit 1; }
echo "# generator-starvation: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $stack at $url, plan 000's mix at ${rate} RPS for ${secs}s, --tick $tick"
echo "| round | how | lag p50 ms | lag p99 ms | latency p99 ms | achieved RPS | generator CPU % | runnable threads (mean) |"
echo "|---|---|---|---|---|---|---|---|"
load=("$bin" load plans/000-status-mixed.toml --url "$url" --data-dir "$data" --rate "$rate"
  --duration "${secs}s" --tick "$tick" -q --json)
# runnable threads on the box, every 100 ms, while a load runs: R states in /proc/*/task/*/stat
runnable() {
  local out=$1 n=0 sum=0
  while [ -e "$tmp/running" ]; do
    # (threads come and go while it reads: a vanished file is no error)
    sum=$((sum + $({ cat /proc/[0-9]*/task/[0-9]*/stat 2>/dev/null || true; } | awk '$3=="R"' | wc -l)))
    n=$((n + 1))
    sleep 0.1
  done
  awk -v s="$sum" -v n="$n" 'BEGIN{printf "%.1f", n ? s / n : 0}' >"$out"
}
one() {
  local r=$1 how=$2; shift 2
  touch "$tmp/running"
  runnable "$tmp/runq" &
  local sampler=$!
  "$@" "${load[@]}" >"$tmp/out.json" 2>/dev/null || true
  rm -f "$tmp/running"
  wait "$sampler" || true
  python3 - "$r" "$how" "$tmp/out.json" "$(cat "$tmp/runq")" <<'EOF'
import json, sys
r, how, path, runq = sys.argv[1:5]
try:
    j = json.load(open(path))
    print(f"| {r} | {how} | {j['schedule_lag']['p50_ms']:.2f} | {j['schedule_lag']['p99_ms']:.2f} "
          f"| {j['latency']['p99_ms']:.1f} | {j['achieved_rps']:.0f} | {j['generator_cpu_mean_pct']:.0f} | {runq} |")
except Exception as e:
    print(f"| {r} | {how} | – | – | – | – | – | {runq} ({e}) |")
EOF
}
for r in $(seq 1 "$rounds"); do
  one "$r" "A: as today (CFS)" env
  one "$r" "D: SCHED_FIFO 1" chrt -f 1
done
