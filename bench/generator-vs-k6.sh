#!/usr/bin/env bash
# Open model side by side in one run: ceiling load vs k6 (constant-arrival-rate executor) at the
# same fixed rate against one local nginx worker on core 0, each generator alone on core 1.
# CPU per request = the tool's user+sys CPU / requests nginx counted, as in generator-vs-wrk.sh.
# A third row runs ceiling's ticked engine (TICK, default 2ms; its default I/O back end, io_uring
# where the kernel has it). Usage: bench/generator-vs-k6.sh [rate] [seconds] [conns]
# (k6: scripts/setup.sh bench)
set -euo pipefail
rate=${1:-10000}; secs=${2:-30}; conns=${3:-64}
. "$(dirname "$0")/lib.sh"
k6=${K6_BIN:-$(command -v k6 || echo "$HOME/go/bin/k6")}
require nginx taskset curl "$bin" "$k6"
start_nginx "${PORT:-18297}"
cat >"$tmp/k6.js" <<JS
import http from 'k6/http';
export const options = {
  scenarios: { fixed: { executor: 'constant-arrival-rate', rate: $rate, timeUnit: '1s',
    duration: '${secs}s', preAllocatedVUs: $conns, maxVUs: $conns } },
  summaryTrendStats: ['avg', 'med', 'p(99)', 'max'],
};
export default function () { http.get('http://127.0.0.1:$port/'); }
JS
echo "# generator-vs-k6: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), nginx $(nginx -v 2>&1 | cut -d/ -f2), $("$k6" version 2>/dev/null | head -1 | cut -d' ' -f1-2), rate $rate/s for ${secs}s, $conns connections"
read -r _ kcpu kreq krss < <(measure k6 "$k6" run --no-usage-report --quiet --summary-export "$tmp/k6.json" "$tmp/k6.js")
read -r _ ccpu creq crss < <(measure ceiling_open "$bin" load --url "http://127.0.0.1:$port/" --rate "$rate" --duration "${secs}s" --max-connections "$conns" --json -q)
tick=${TICK:-2ms}
read -r _ tcpu treq trss < <(measure ceiling_tick "$bin" load --url "http://127.0.0.1:$port/" --rate "$rate" --duration "${secs}s" --max-connections "$conns" --tick "$tick" --json -q)
python3 - "$rate" "$secs" "$kcpu" "$kreq" "$krss" "$ccpu" "$creq" "$crss" "$tmp/k6.json" "$tmp/ceiling_open.out" "$tick" "$tcpu" "$treq" "$trss" "$tmp/ceiling_tick.out" <<'PY'
import json, sys
rate, secs = int(sys.argv[1]), float(sys.argv[2])
kcpu, kreq, krss, ccpu, creq, crss = map(float, sys.argv[3:9])
k = json.load(open(sys.argv[9]))["metrics"]
o = json.load(open(sys.argv[10]))
us = lambda c, n: c / n * 1e6 if n else float("nan")
kd = k["http_req_duration"]
dropped = k.get("dropped_iterations", {}).get("count", 0)
print("| tool | offered | served (nginx count) | CPU µs/request | max RSS MB | latency p99 ms (as the tool reports it) | not sent on time |")
print("|---|---|---|---|---|---|---|")
print(f"| k6 constant-arrival-rate | {rate*secs:,.0f} | {kreq:,.0f} | {us(kcpu,kreq):.1f} | {krss/1024:.0f} | {kd['p(99)']:.2f} (from actual send) | {dropped:,.0f} dropped iterations |")
print(f"| ceiling load --rate {rate} | {o['offered']:,} | {creq:,.0f} | {us(ccpu,creq):.1f} | {crss/1024:.0f} | {o['latency']['p99_ms']:.2f} (from intended send) | lag p99 {o['schedule_lag']['p99_ms']:.3f} ms, overflow {o.get('overflow', 0)} |")
tick, (tcpu, treq, trss) = sys.argv[11], map(float, sys.argv[12:15])
t = json.load(open(sys.argv[15]))
print(f"| ceiling load --rate {rate} --tick {tick} ({t.get('engine', '')}) | {t['offered']:,} | {treq:,.0f} | {us(tcpu,treq):.1f} | {trss/1024:.0f} | {t['latency']['p99_ms']:.2f} (from intended send, the tick's) | lag p99 {t['schedule_lag']['p99_ms']:.3f} ms, overflow {t.get('overflow', 0)} |")
print()
print(f"CPU per request, ceiling / k6 = {us(ccpu,creq)/us(kcpu,kreq):.3f}; ticked / k6 = {us(tcpu,treq)/us(kcpu,kreq):.3f}")
PY
