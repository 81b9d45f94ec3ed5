#!/usr/bin/env bash
# What one tick of the ticked engine costs when it sends nothing, and where a tick's CPU goes at
# the lab's rates (issue 36 item 1: "the fixed cost per second apart from the cost per request").
#
# 1. `ceiling load --rate 1 --tick T` for S and for 3·S seconds on core 1 under `perf stat`
#    (one nginx worker on core 0): the difference over the 2·S seconds between them is what the
#    engine pays per second with (almost) nothing to send, start-up cancelled; divided by the
#    ticks in a second it is the cost of an empty tick (its wake-up, clock reads, the zero-timeout
#    epoll, the sweep over connections, the per-second rotation shared out).
# 2. `perf record -g` of the ticked engine at RATE (default 1,000 RPS, plan 000's mix) for S
#    seconds: the share of CPU by object (kernel, ceiling, libc) and the top symbols, so the
#    choice between fewer wake-ups and an io_uring back end rests on a profile, not a guess.
#
# Usage: [RATE=1000] [TICK=2ms] bench/tick-cost.sh [seconds, default 10]
set -eu  # no pipefail: `perf report | head` ends its writer early by design
secs=${1:-10}
rate=${RATE:-1000}
tick=${TICK:-2ms}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl perf "$bin"
start_nginx "${PORT:-18302}"
seq 1 100000 | awk 'BEGIN{print "id"}{printf "%08d-0000-4000-8000-%012d\n", $1, $1}' >"$tmp/status_ids.csv"
echo "# tick-cost: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"

# stat D ARGS...: CPU ms, context switches, syscalls of one `ceiling load` of D seconds on core 1
stat() {
  local d=$1; shift
  taskset -c 1 perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -o "$tmp/stat" \
    "$bin" load plans/000-status-mixed.toml --url "http://127.0.0.1:$port" --data-dir "$tmp" \
    -q --json "$@" --duration "${d}s" >/dev/null 2>"$tmp/err" || true
  awk -F, '$3=="task-clock"{c=$1} $3=="context-switches"{x=$1} $3=="raw_syscalls:sys_enter"{y=$1} END{print c+0, x+0, y+0}' "$tmp/stat"
}

echo
echo "| engine, 1 RPS | CPU ms/s (steady) | context switches/s | syscalls/s | ticks/s | CPU µs per empty tick |"
echo "|---|---:|---:|---:|---:|---:|"
long=$((3 * secs))
for t in 1ms 2ms 5ms; do
  read -r c1 x1 y1 < <(stat "$secs" --rate 1 --tick "$t")
  read -r c2 x2 y2 < <(stat "$long" --rate 1 --tick "$t")
  awk -v t="$t" -v c1="$c1" -v c2="$c2" -v x1="$x1" -v x2="$x2" -v y1="$y1" -v y2="$y2" -v d=$((long - secs)) 'BEGIN{
    ms = t + 0; per = 1000 / ms; cps = (c2 - c1) / d;
    printf "| ticked, tick %s | %.2f | %.0f | %.0f | %.0f | %.1f |\n", t, cps, (x2 - x1) / d, (y2 - y1) / d, per, cps * 1000 / per }'
done
read -r c1 x1 y1 < <(stat "$secs" --rate 1)
read -r c2 x2 y2 < <(stat "$long" --rate 1)
awk -v c1="$c1" -v c2="$c2" -v x1="$x1" -v x2="$x2" -v y1="$y1" -v y2="$y2" -v d=$((long - secs)) 'BEGIN{
  printf "| default (tokio) | %.2f | %.0f | %.0f | – | – |\n", (c2 - c1) / d, (x2 - x1) / d, (y2 - y1) / d }'

echo
taskset -c 1 perf record -q -g -F 4999 -o "$tmp/perf.data" "$bin" load plans/000-status-mixed.toml \
  --url "http://127.0.0.1:$port" --data-dir "$tmp" -q --json --rate "$rate" --tick "$tick" \
  --max-connections 2000 --duration "${secs}s" >/dev/null 2>&1 || true
echo "perf record, the ticked engine (tick $tick) at $rate RPS for ${secs}s — share of samples by object:"
echo '```text'
perf report -i "$tmp/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
echo '```'
echo "top symbols (self):"
echo '```text'
perf report -i "$tmp/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -30
echo '```'
echo "by the engine's own functions (children included):"
echo '```text'
perf report -i "$tmp/perf.data" --children --sort sym --stdio 2>/dev/null | grep -E '^ +[0-9]' \
  | grep -E 'tick::|engine::|clock|summary|metrics|Second|record|rotate|hdrhistogram' | head -25
echo '```'
