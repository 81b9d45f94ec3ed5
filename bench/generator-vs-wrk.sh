#!/usr/bin/env bash
# Generator efficiency, side by side in one run: ceiling load vs wrk against one local nginx worker
# serving a static JSON body. nginx gets core 0, each generator core 1 (taskset), one at a time.
# CPU per request = the generator's user+sys CPU seconds / requests nginx counted (stub_status),
# so both tools are judged by the same counter. A fourth row runs the open model on the ticked
# engine (TICK, default 2ms in ms; its default I/O back end; TICK=0 leaves the row out), with
# twice rate × tick connections (it carries one request per connection a tick); a fifth runs the
# closed model on the ticked engine (each connection sends on as its response is read, one wake-up
# per batch of responses), against issue 36's target: ≤ 0.8× wrk's CPU per request at ≥ 1.0× RPS.
# Usage: bench/generator-vs-wrk.sh [seconds] [conns]
set -euo pipefail
secs=${1:-10}; conns=${2:-64}; tick=${TICK:-2ms}
. "$(dirname "$0")/lib.sh"
require nginx wrk taskset curl "$bin"
start_nginx "${PORT:-18299}"
echo "# generator-vs-wrk: $(date -u +%FT%TZ), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), nginx $(nginx -v 2>&1 | cut -d/ -f2), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
read -r _ wcpu wreq wrss < <(measure wrk wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:$port/")
read -r _ ccpu creq crss < <(measure ceiling_closed "$bin" load --url "http://127.0.0.1:$port/" --connections "$conns" --duration "${secs}s" -q)
rate=$(awk -v r="$wreq" -v s="$secs" 'BEGIN{printf "%d", r/s/2}')
read -r _ ocpu oreq orss < <(measure ceiling_open "$bin" load --url "http://127.0.0.1:$port/" --rate "$rate" --duration "${secs}s" --max-connections "$conns" --json -q)
tcpu=0 treq=0 trss=0 kcpu=0 kreq=0 krss=0
if [ "$tick" != 0 ]; then
  read -r _ kcpu kreq krss < <(measure ceiling_tick_closed "$bin" load --url "http://127.0.0.1:$port/" --connections "$conns" --duration "${secs}s" --tick "$tick" -q)
  # one request per connection a tick is what the ticked engine carries (it refuses less):
  # twice rate × tick connections, at least CONNS
  tconns=$(awk -v r="$rate" -v t="${tick%ms}" -v c="$conns" 'BEGIN{n=int(2*r*t/1000)+1; print (n>c?n:c)}')
  read -r _ tcpu treq trss < <(measure ceiling_tick "$bin" load --url "http://127.0.0.1:$port/" --rate "$rate" --duration "${secs}s" --max-connections "$tconns" --tick "$tick" --json -q)
fi
python3 - "$secs" "$conns" "$rate" "$wcpu" "$wreq" "$wrss" "$ccpu" "$creq" "$crss" "$ocpu" "$oreq" "$orss" "$tmp/ceiling_open.out" "$tick" "$tcpu" "$treq" "$trss" "$tmp/ceiling_tick.out" "${tconns:-0}" "$kcpu" "$kreq" "$krss" <<'PY'
import json, sys
secs, conns, rate = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
wcpu, wreq, wrss, ccpu, creq, crss, ocpu, oreq, orss = map(float, sys.argv[4:13])
o = json.load(open(sys.argv[13]))
tick, (tcpu, treq, trss), tconns = sys.argv[14], map(float, sys.argv[15:18]), sys.argv[19]
kcpu, kreq, krss = map(float, sys.argv[20:23])
us = lambda c, n: c / n * 1e6 if n else float("nan")
w, c, op = us(wcpu, wreq), us(ccpu, creq), us(ocpu, oreq)
print(f"| run | requests/s | CPU µs/request | max RSS MB | ratio to wrk |")
print(f"|---|---|---|---|---|")
print(f"| wrk -t1 -c{conns} {secs:.0f}s | {wreq/secs:,.0f} | {w:.2f} | {wrss/1024:.1f} | 1.00 |")
print(f"| ceiling load -c {conns} {secs:.0f}s (closed) | {creq/secs:,.0f} | {c:.2f} | {crss/1024:.1f} | CPU {c/w:.2f}, RPS {creq/wreq:.2f} |")
print(f"| ceiling load --rate {rate} (open, ½ wrk max) | {oreq/secs:,.0f} | {op:.2f} | {orss/1024:.1f} | CPU {op/w:.2f} |")
t = None
if tick != "0":
    t = json.load(open(sys.argv[18]))
    tp = us(tcpu, treq)
    print(f"| ceiling load --rate {rate} --tick {tick} --max-connections {tconns} (open, ticked engine) | {treq/secs:,.0f} | {tp:.2f} | {trss/1024:.1f} | CPU {tp/w:.2f} |")
    kp = us(kcpu, kreq)
    print(f"| ceiling load -c {conns} --tick {tick} {secs:.0f}s (closed, ticked engine) | {kreq/secs:,.0f} | {kp:.2f} | {krss/1024:.1f} | CPU {kp/w:.2f}, RPS {kreq/wreq:.2f} |")
ach = o["completed"] / o["offered"] if o["offered"] else 0
print()
print(f"open model: offered {o['offered']}, completed {o['completed']} ({ach*100:.2f}%), schedule lag p50 {o['schedule_lag']['p50_ms']:.3f} ms, "
      f"p99 {o['schedule_lag']['p99_ms']:.3f} ms, latency p99 {o['latency']['p99_ms']:.3f} ms; verdict: {o['generator_verdict']}")
ok = [c <= w, creq >= 0.9 * wreq, ach >= 0.99, o['schedule_lag']['p99_ms'] < 1.0, op <= 1.5 * w]
names = ["closed CPU/req ≤ wrk", "closed RPS ≥ 90% wrk", "open achieved ≥ 99%", "open lag p99 < 1 ms", "open CPU/req ≤ 1.5× wrk"]
if t is not None:
    tach = t["completed"] / t["offered"] if t["offered"] else 0
    print(f"ticked: offered {t['offered']}, completed {t['completed']} ({tach*100:.2f}%), schedule lag p99 {t['schedule_lag']['p99_ms']:.3f} ms, "
          f"latency p99 {t['latency']['p99_ms']:.3f} ms; {t.get('engine') or ''}; verdict: {t['generator_verdict']}")
    ok += [tach >= 0.99, t['latency']['p99_ms'] < 10.0, tp <= w, kp <= 0.8 * w and kreq >= wreq]
    names += ["ticked achieved ≥ 99%", "ticked latency p99 < 10 ms", "ticked CPU/req ≤ wrk (issue 36)",
              "ticked closed CPU/req ≤ 0.8× wrk at ≥ 1.0× RPS (issue 36)"]
print("targets: " + ", ".join(f"{n}: {'PASS' if k else 'FAIL'}" for n, k in zip(names, ok)))
PY
