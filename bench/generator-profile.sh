#!/usr/bin/env bash
# Where the generator's CPU goes, at the rates the lab uses (issue 36 item 1): `ceiling load`
# with plan 000's mix (its four requests, a synthetic status_ids.csv) against one local nginx
# worker on core 0, the generator alone on core 1, under `perf stat`. Per request (requests as
# nginx counted them): CPU µs, context switches (≈ wake-ups), system calls; and the fixed cost per
# second from a run at 10 RPS. With LONG=S each row runs again for S seconds and a last column
# gives the steady cost per request: (CPU of the long run − CPU of the short one) / (requests of
# the long run − requests of the short one), so the process's start-up (plan, data file, threads,
# first connections) cancels and what is left is what a shelf minutes long pays per request at
# that rate, its per-tick and per-second costs included.
# Each open-model rate runs on the tokio engine and on the ticked
# engine (--tick, default 1ms; TICK=2ms to change) with each of its I/O back ends (--io epoll,
# --io io_uring; IO="epoll" or IO="io_uring" for one only). RATES="1000 1500" to choose the rates,
# CLOSED=0 to leave the closed-model rows out. With PROFILE=1 also `perf record` at PROFILE_RATE
# (default 10,000 RPS) with PROFILE_ARGS (e.g. "--tick 2ms --io io_uring"): the share of CPU in the
# kernel, in ceiling and in libc, and the top symbols. Usage: [LONG=30] bench/generator-profile.sh [seconds]
set -euo pipefail
secs=${1:-10}
long=${LONG:-}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl perf "$bin"
start_nginx "${PORT:-18301}"
seq 1 100000 | awk 'BEGIN{print "id"}{printf "%08d-0000-4000-8000-%012d\n", $1, $1}' >"$tmp/status_ids.csv"
echo "# generator-profile: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), plan 000's mix, ${secs}s each${long:+, and ${long}s for the steady column}"
if [ -n "$long" ]; then
  echo "| load | requests | CPU µs/request | context switches/request | syscalls/request | steady CPU µs/request (${long}s − ${secs}s) |"
  echo "|---|---|---|---|---|---|"
else
  echo "| load | requests | CPU µs/request | context switches/request | syscalls/request |"
  echo "|---|---|---|---|---|"
fi
# one run of `ceiling load` on core 1 for $1 seconds under perf stat; sets cpu_ms, cs, sc, n
one() {
  local d=$1; shift
  local a b
  a=$(count)
  taskset -c 1 perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -o "$tmp/stat" \
    "$bin" load plans/000-status-mixed.toml --url "http://127.0.0.1:$port" --data-dir "$tmp" -q --json "$@" --duration "${d}s" >"$tmp/out.json" 2>"$tmp/err" || true
  b=$(count)
  n=$((b - a - 1))
  read -r cpu_ms cs sc < <(awk -F, '$3=="task-clock"{c=$1} $3=="context-switches"{x=$1} $3=="raw_syscalls:sys_enter"{y=$1} END{print c+0, x+0, y+0}' "$tmp/stat")
}
row() {
  local label=$1; shift
  one "$secs" "$@"
  local c1=$cpu_ms n1=$n line
  if [ "$n1" -gt 0 ]; then
    line=$(awk -v c="$cpu_ms" -v x="$cs" -v y="$sc" -v n="$n1" -v l="$label" 'BEGIN{printf "| %s | %d | %.1f | %.2f | %.2f |", l, n, c*1000/n, x/n, y/n}')
  else
    line="| $label | 0 | – | – | – |"
  fi
  # the CPU ms of the whole run, for the fixed cost
  echo "$c1" >"$tmp/cpu.$label"
  if [ -n "$long" ]; then
    one "$long" "$@"
    line="$line $(awk -v c1="$c1" -v n1="$n1" -v c2="$cpu_ms" -v n2="$n" 'BEGIN{ if (n2>n1) printf "%.1f |", (c2-c1)*1000/(n2-n1); else printf "– |" }')"
  fi
  echo "$line"
}
row "open 10 RPS" --rate 10
for r in ${RATES:-1000 1500 3000 10000}; do
  row "open $r RPS" --rate "$r" --max-connections 2000
  # the ticked engine (issue 36), the same load, beside it, on each I/O back end
  for io in ${IO:-epoll io_uring}; do
    row "open $r RPS, --tick ${TICK:-1ms} --io $io" --rate "$r" --max-connections 2000 --tick "${TICK:-1ms}" --io "$io"
  done
done
if [ "${CLOSED:-1}" = 1 ]; then
  row "closed 64 conns" --connections 64
  row "closed 1000 conns" --connections 1000
fi
fixed=$(awk -v s="$secs" '{printf "%.1f", $1/s}' "$tmp/cpu.open 10 RPS")
echo
echo "fixed cost (10 RPS run, whole process including start-up): ${fixed} ms of CPU per second"
if [ "${PROFILE:-0}" = 1 ]; then
  prate=${PROFILE_RATE:-10000}
  # shellcheck disable=SC2086
  taskset -c 1 perf record -q -g -o "$tmp/perf.data" "$bin" load plans/000-status-mixed.toml \
    --url "http://127.0.0.1:$port" --data-dir "$tmp" -q --json --rate "$prate" --max-connections 2000 \
    ${PROFILE_ARGS:-} --duration "${secs}s" >/dev/null 2>&1 || true
  echo
  echo "perf record at $prate RPS ${PROFILE_ARGS:-(the tokio engine)}, share of samples by object:"
  perf report -i "$tmp/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
  echo
  echo "top symbols:"
  perf report -i "$tmp/perf.data" --no-children --sort sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -25
fi
