#!/usr/bin/env bash
# The floor under the generator's cost per request (issue 36): at the lab's open-model rates,
# how much CPU per request does the least possible sender spend on this machine (bench/floor.c:
# wake once per tick, one write(2) per request, drain responses with epoll, nothing else), and
# how much does `ceiling load` spend above it? One local nginx worker on core 0, each sender
# alone on core 1 under `perf stat`, requests as nginx counted them, every sender the same plain
# GET over the same number of keep-alive connections, the senders interleaved (A B C A B C …)
# so the machine's drift falls on all. What the floor spends is the kernel's — the loopback
# delivery into nginx runs in the sender's context — so a bar below it cannot be met by any
# generator on this machine; what ceiling spends above it is ceiling's to remove.
# Usage: [RATES="1500 10000"] [PASSES=2] [TICK_US=2000] [CONNS=64] bench/sender-floor.sh [seconds]
set -euo pipefail
secs=${1:-30}
. "$(dirname "$0")/lib.sh"
require nginx taskset curl perf cc "$bin"
start_nginx "${PORT:-18302}"
cc -O2 -o "$tmp/floor" "$(dirname "$0")/floor.c"
tick_us=${TICK_US:-2000}
conns=${CONNS:-64}
echo "# sender-floor: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), ${secs}s each, ${conns} connections, tick ${tick_us} µs, plain GET"
echo "| sender | rate | pass | requests | CPU µs/request | context switches/request | syscalls/request |"
echo "|---|---|---|---|---|---|---|"
# one NAME RATE PASS CMD...: CMD on core 1 under perf stat, one table row
one() {
  local name=$1 rate=$2 pass=$3; shift 3
  local a b n cpu_ms cs sc
  a=$(count)
  taskset -c 1 perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter -o "$tmp/stat" \
    "$@" >"$tmp/out" 2>"$tmp/err" || { echo "$name failed:"; tail -5 "$tmp/err"; }
  b=$(count)
  n=$((b - a - 1))
  read -r cpu_ms cs sc < <(awk -F, '$3=="task-clock"{c=$1} $3=="context-switches"{x=$1} $3=="raw_syscalls:sys_enter"{y=$1} END{print c+0, x+0, y+0}' "$tmp/stat")
  if [ "$n" -gt 0 ]; then
    awk -v c="$cpu_ms" -v x="$cs" -v y="$sc" -v n="$n" -v l="$name" -v r="$rate" -v p="$pass" \
      'BEGIN{printf "| %s | %d | %d | %d | %.1f | %.2f | %.2f |\n", l, r, p, n, c*1000/n, x/n, y/n}'
  else
    echo "| $name | $rate | $pass | 0 | – | – | – |"
  fi
}
url="http://127.0.0.1:$port/"
for rate in ${RATES:-1500 10000}; do
  for pass in $(seq 1 "${PASSES:-2}"); do
    one "floor (C, tick ${tick_us} µs)" "$rate" "$pass" "$tmp/floor" "$port" "$rate" "$secs" "$conns" "$tick_us"
    one "ceiling --tick, io_uring" "$rate" "$pass" "$bin" load --url "$url" --rate "$rate" --duration "${secs}s" \
      --tick "$((tick_us / 1000))ms" --io io_uring -q --json
    one "ceiling --tick, epoll" "$rate" "$pass" "$bin" load --url "$url" --rate "$rate" --duration "${secs}s" \
      --tick "$((tick_us / 1000))ms" --io epoll -q --json
    one "ceiling (tokio)" "$rate" "$pass" "$bin" load --url "$url" --rate "$rate" --duration "${secs}s" -q --json
  done
done
